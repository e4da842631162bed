//! A crash at any durable step leaves a consistent store (SQLite's bar): for each
//! statement of a script, the test stops the statement at its 1st, 2nd, ... k-th
//! write, rename, fsync, truncate or delete (the fault-injecting storage fails that
//! step and every later one, as a killed process takes no further steps), reopens the
//! store, and checks it against a model of the tables: a statement that returned
//! success is complete; one that failed is either absent or, if it got past its
//! commit point, complete; an absent one, re-run, is then complete exactly once.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use fluss_datafusion::source::{LocalStore, LocalStoreOptions};
use fluss_datafusion::sql::FlussSession;
use fluss_datafusion::storage::FaultInjector;

/// Rows of a table as `(id, v)`, sorted.
type Rows = Vec<(i64, String)>;

/// The model: the rows of `logt` and `pk` after a statement, and `pk`'s columns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Model {
    logt: Option<Rows>,
    pk: Option<Rows>,
    pk_columns: Option<Vec<String>>,
}

fn rows(pairs: &[(i64, &str)]) -> Option<Rows> {
    let mut rows: Rows = pairs.iter().map(|(i, v)| (*i, v.to_string())).collect();
    rows.sort();
    Some(rows)
}

/// The script and the model after each statement.
fn script() -> Vec<(&'static str, Model)> {
    let log6 = [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e"), (6, "f")];
    let log9 = [log6.as_slice(), &[(7, "g"), (8, "h"), (9, "i")]].concat();
    let pk3 = [(1, "a"), (2, "b"), (3, "c")];
    let pk_upserted = [(1, "a"), (2, "b2"), (3, "c"), (4, "d")];
    let pk_deleted = [(2, "b2"), (3, "c"), (4, "d")];
    let pk_merged = [(2, "b"), (3, "c"), (4, "d"), (5, "e")];
    let pk_updated = [(2, "b"), (3, "c"), (4, "u"), (5, "u")];
    let pk_last = [(2, "b"), (4, "u"), (5, "u")];
    let model = |logt: Option<&[(i64, &str)]>, pk: Option<&[(i64, &str)]>| Model {
        logt: logt.and_then(rows),
        pk_columns: pk.map(|_| vec!["id".to_string(), "v".to_string()]),
        pk: pk.and_then(rows),
    };
    let with_note = |mut m: Model| {
        if let Some(columns) = m.pk_columns.as_mut() {
            columns.push("note".to_string());
        }
        m
    };
    vec![
        (
            "CREATE TABLE logt (id BIGINT, v STRING) \
             WITH ('bucket.num' = '3', 'table.datalake.enabled' = 'true')",
            model(Some(&[]), None),
        ),
        (
            "INSERT INTO logt VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(5,'e'),(6,'f')",
            model(Some(&log6), None),
        ),
        ("CALL fluss.tier('logt')", model(Some(&log6), None)),
        (
            "INSERT INTO logt VALUES (7,'g'),(8,'h'),(9,'i')",
            model(Some(&log9), None),
        ),
        (
            "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
            model(Some(&log9), Some(&[])),
        ),
        (
            "INSERT INTO pk VALUES (1,'a'),(2,'b'),(3,'c')",
            model(Some(&log9), Some(&pk3)),
        ),
        ("CALL fluss.tier('pk')", model(Some(&log9), Some(&pk3))),
        (
            "INSERT INTO pk VALUES (2,'b2'),(4,'d')",
            model(Some(&log9), Some(&pk_upserted)),
        ),
        (
            "DELETE FROM pk WHERE id = 1",
            model(Some(&log9), Some(&pk_deleted)),
        ),
        // upserts and deletes in one KV batch (FlussWriter::write_changes)
        (
            "MERGE INTO pk USING (SELECT id, v FROM logt WHERE id IN (2, 5)) AS s \
             ON pk.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v \
             WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
            model(Some(&log9), Some(&pk_merged)),
        ),
        (
            "UPDATE pk SET v = 'u' WHERE id IN (SELECT id FROM logt WHERE v > 'c')",
            model(Some(&log9), Some(&pk_updated)),
        ),
        (
            "DELETE FROM pk WHERE id IN (SELECT id FROM logt WHERE v = 'c')",
            model(Some(&log9), Some(&pk_last)),
        ),
        // a new schema version after the lake's first round: the lake table takes the
        // column first, then the store writes the schema; the next round tiers both
        (
            "ALTER TABLE pk ADD COLUMN note STRING",
            with_note(model(Some(&log9), Some(&pk_last))),
        ),
        (
            "CALL fluss.tier('pk')",
            with_note(model(Some(&log9), Some(&pk_last))),
        ),
        (
            "CALL fluss.tier('logt')",
            with_note(model(Some(&log9), Some(&pk_last))),
        ),
    ]
}

async fn session_on(store: LocalStore) -> FlussSession {
    FlussSession::new(Arc::new(store)).await.unwrap()
}

async fn open(root: &Path) -> FlussSession {
    session_on(LocalStore::open(root.to_str().unwrap()).await.unwrap()).await
}

async fn table_rows(session: &FlussSession, table: &str) -> Option<Rows> {
    let batches = session
        .execute(&format!("SELECT id, v FROM {table} ORDER BY id"))
        .await
        .ok()?;
    let mut out = Vec::new();
    for batch in &batches {
        let ids = batch.column(0).as_primitive::<Int64Type>();
        let vs = batch.column(1).as_string_view();
        for i in 0..batch.num_rows() {
            out.push((ids.value(i), vs.value(i).to_string()));
        }
    }
    Some(out)
}

async fn table_columns(session: &FlussSession, table: &str) -> Option<Vec<String>> {
    let batches = session
        .execute(&format!(
            "SELECT column_name FROM information_schema.columns \
             WHERE table_name = '{table}' ORDER BY ordinal_position"
        ))
        .await
        .ok()?;
    let mut names = Vec::new();
    for batch in &batches {
        let column = datafusion::arrow::compute::cast(
            batch.column(0),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .ok()?;
        names.extend(
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string),
        );
    }
    (!names.is_empty()).then_some(names)
}

/// The store as the model sees it; the lake side of a tiered table never holds a
/// row twice either.
async fn observe(root: &Path) -> Model {
    let session = open(root).await;
    let model = Model {
        logt: table_rows(&session, "logt").await,
        pk: table_rows(&session, "pk").await,
        pk_columns: table_columns(&session, "pk").await,
    };
    for (table, rows) in [("logt", &model.logt), ("pk", &model.pk)] {
        if rows.is_none() {
            continue;
        }
        if let Ok(lake) = session
            .execute(&format!(
                "SELECT count(*), count(DISTINCT id) FROM \"{table}$lake\""
            ))
            .await
        {
            let all = lake[0].column(0).as_primitive::<Int64Type>().value(0);
            let distinct = lake[0].column(1).as_primitive::<Int64Type>().value(0);
            assert_eq!(all, distinct, "{table}: a row is in the lake twice");
        }
    }
    model
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `sql` on a copy of `before` whose storage fails at step `fail_at` (0: never);
/// returns whether it succeeded and the steps it took.
async fn run_with_fault(before: &Path, at: &Path, sql: &str, fail_at: usize) -> (bool, usize) {
    copy_dir(before, at);
    let faults = Arc::new(FaultInjector::failing_at(fail_at));
    let store = LocalStore::open_with_faults(
        at.to_str().unwrap(),
        LocalStoreOptions::default(),
        faults.clone(),
    )
    .unwrap();
    let session = session_on(store).await;
    let ok = session.execute(sql).await.is_ok();
    (ok, faults.steps())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_at_any_step_leaves_every_statement_whole_or_absent() {
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("state");
    open(&state).await; // the default database
    let mut before = Model::default();
    let mut crashes = 0;
    let mut absent = 0;
    for (n, (sql, after)) in script().into_iter().enumerate() {
        // how many durable steps the statement takes
        let probe = work.path().join(format!("probe-{n}"));
        let (ok, steps) = run_with_fault(&state, &probe, sql, 0).await;
        assert!(ok, "{sql} fails without faults");
        assert_eq!(observe(&probe).await, after, "{sql} without faults");
        eprintln!("{steps:3} durable steps: {sql}");
        for k in 1..=steps {
            let at = work.path().join(format!("crash-{n}-{k}"));
            let (ok, _) = run_with_fault(&state, &at, sql, k).await;
            let seen = observe(&at).await;
            let context = format!("statement {n} `{sql}` stopped at step {k} of {steps}");
            if ok {
                assert_eq!(seen, after, "{context}: succeeded but is not complete");
            } else if seen == before {
                absent += 1;
                // absent: re-running it completes it exactly once
                let session = open(&at).await;
                session
                    .execute(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{context}: re-run failed: {e}"));
                drop(session);
                assert_eq!(observe(&at).await, after, "{context}: re-run");
            } else {
                assert_eq!(seen, after, "{context}: neither absent nor complete");
            }
            // the store stays writable
            let session = open(&at).await;
            if after.logt.is_some() {
                session
                    .execute("INSERT INTO logt VALUES (100, 'z')")
                    .await
                    .unwrap_or_else(|e| panic!("{context}: store not writable: {e}"));
            }
            drop(session);
            std::fs::remove_dir_all(&at).unwrap();
            crashes += 1;
        }
        std::fs::remove_dir_all(&state).unwrap();
        std::fs::rename(&probe, &state).unwrap();
        before = after;
    }
    eprintln!("{crashes} crash points, {absent} left the statement absent");
    assert!(crashes > 50, "only {crashes} crash points");
}
