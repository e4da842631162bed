//! Time travel against an in-memory model of every statement's effect: a table
//! written in steps, tiered after some of them, read as of each step's commit time
//! (`TIMESTAMP AS OF`, `FOR SYSTEM_TIME AS OF`), as of each registered lake snapshot
//! (`VERSION AS OF` on the table and on `t$lake`), and between two steps
//! (`fluss_log_between`). The model knows what each step left; the reads must give
//! exactly that, on both lake formats, log and primary-key tables, through the
//! LocalStore and through a cluster.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Int32Type, Int64Type};
use fluss_datafusion::source::{FlussSource, LocalStore, LocalStoreOptions};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::mirror::MirroredSource;

/// One write of the scenario, and whether the table is tiered after it.
struct Step {
    sql: &'static str,
    tier: bool,
}

const STEPS: [Step; 6] = [
    Step {
        sql: "INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        tier: true,
    },
    Step {
        sql: "INSERT INTO db.t VALUES (2, 'b2'), (4, 'd')",
        tier: false,
    },
    Step {
        sql: "DELETE FROM db.t WHERE id = 1",
        tier: true,
    },
    Step {
        sql: "INSERT INTO db.t VALUES (5, 'e')",
        tier: false,
    },
    Step {
        sql: "INSERT INTO db.t VALUES (3, 'c3'), (6, 'f')",
        tier: true,
    },
    Step {
        sql: "INSERT INTO db.t VALUES (7, 'g')",
        tier: false,
    },
];

/// The rows each step leaves (`id -> names`, sorted): a primary-key table keeps the
/// last value of each key; a log table keeps every row appended (a DELETE on a log
/// table is refused, so its scenario skips that step).
fn model(primary_key: bool) -> Vec<Vec<(i32, String)>> {
    let mut state: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    let mut after = Vec::new();
    for step in &STEPS {
        if step.sql.starts_with("DELETE") {
            if primary_key {
                state.remove(&1);
            }
        } else {
            for (id, name) in values(step.sql) {
                let names = state.entry(id).or_default();
                if primary_key {
                    names.clear();
                }
                names.push(name);
            }
        }
        after.push(flatten(&state));
    }
    after
}

/// The rows a log window `(first, last]` of steps changed, as `fluss_log_between`
/// gives them: a log table's appended rows; a primary-key table's keys written in
/// the window with their value at its end (deleted keys drop out).
fn window(primary_key: bool, first: usize, last: usize) -> Vec<(i32, String)> {
    let states = model(primary_key);
    let mut touched: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for step in &STEPS[first + 1..=last] {
        if step.sql.starts_with("DELETE") {
            continue;
        }
        for (id, name) in values(step.sql) {
            touched.entry(id).or_default().push(name);
        }
    }
    if !primary_key {
        return flatten(&touched);
    }
    let end: BTreeMap<i32, String> = states[last].iter().cloned().collect();
    touched
        .keys()
        .filter_map(|id| end.get(id).map(|name| (*id, name.clone())))
        .collect()
}

fn flatten(state: &BTreeMap<i32, Vec<String>>) -> Vec<(i32, String)> {
    let mut rows: Vec<(i32, String)> = state
        .iter()
        .flat_map(|(id, names)| names.iter().map(|n| (*id, n.clone())))
        .collect();
    rows.sort();
    rows
}

/// The `(id, 'name')` tuples of an INSERT.
fn values(sql: &str) -> Vec<(i32, String)> {
    let list = sql.split_once("VALUES").expect("an INSERT").1;
    list.split("),")
        .map(|tuple| {
            let tuple = tuple.trim().trim_start_matches('(').trim_end_matches(')');
            let (id, name) = tuple.split_once(',').expect("two values");
            (
                id.trim().parse().expect("an id"),
                name.trim().trim_matches('\'').to_string(),
            )
        })
        .collect()
}

async fn rows(session: &FlussSession, sql: &str) -> Vec<(i32, String)> {
    let batches = session
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for batch in &batches {
        for row in 0..batch.num_rows() {
            let id = batch.column(0).as_primitive::<Int32Type>().value(row);
            out.push((id, string(batch, 1, row)));
        }
    }
    out.sort();
    out
}

fn string(batch: &RecordBatch, column: usize, row: usize) -> String {
    let array = batch.column(column);
    match array.data_type() {
        datafusion::arrow::datatypes::DataType::Utf8View => {
            array.as_string_view().value(row).to_string()
        }
        _ => array.as_string::<i32>().value(row).to_string(),
    }
}

async fn int64(session: &FlussSession, sql: &str) -> Vec<i64> {
    let batches = session.execute(sql).await.unwrap();
    let mut out = Vec::new();
    for batch in &batches {
        let column = batch.column(0).as_primitive::<Int64Type>();
        out.extend((0..column.len()).map(|i| column.value(i)));
    }
    out
}

/// Runs the scenario on one table and checks every time-travel read of it.
async fn scenario(format: &str, primary_key: bool, through_cluster: bool) {
    let dir = tempfile::tempdir().unwrap();
    let options = LocalStoreOptions {
        datalake_format: format.to_string(),
        ..Default::default()
    };
    let store = Arc::new(
        LocalStore::open_with_options(dir.path().to_str().unwrap(), options)
            .await
            .unwrap(),
    );
    let writer = FlussSession::new(store.clone()).await.unwrap();
    writer.execute("CREATE DATABASE db").await.unwrap();
    let key = if primary_key {
        ", PRIMARY KEY (id) NOT ENFORCED"
    } else {
        ""
    };
    writer
        .execute(&format!(
            "CREATE TABLE db.t (id INT NOT NULL, name STRING{key}) \
             WITH ('bucket.num' = '2', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true')"
        ))
        .await
        .unwrap();
    let label = format!(
        "{format}, {}, {}",
        if primary_key { "pk" } else { "log" },
        if through_cluster { "cluster" } else { "store" }
    );

    // each step's commit time: the newest batch's, once the step is written
    let mut commit_times = Vec::new();
    let mut snapshot_after = Vec::new();
    let mut steps_done = Vec::new();
    for (i, step) in STEPS.iter().enumerate() {
        if step.sql.starts_with("DELETE") && !primary_key {
            // a log table takes no DELETE: its state stays that of the step before
            commit_times.push(*commit_times.last().unwrap());
            snapshot_after.push(None);
            steps_done.push(i);
            continue;
        }
        // batches of different steps never share a millisecond
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        writer.execute(step.sql).await.unwrap();
        let newest = int64(
            &writer,
            "SELECT CAST(max(_commit_timestamp) AS BIGINT) FROM db.\"t$changelog\"",
        )
        .await;
        commit_times.push(newest[0]);
        snapshot_after.push(if step.tier {
            writer.execute("CALL fluss.tier('db.t')").await.unwrap();
            let ids = int64(
                &writer,
                "SELECT snapshot_id FROM db.\"t$lake$snapshots\" \
                 ORDER BY commit_time DESC, snapshot_id DESC LIMIT 1",
            )
            .await;
            Some(ids[0])
        } else {
            None
        });
        steps_done.push(i);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let states = model(primary_key);

    let source: Arc<dyn FlussSource> = if through_cluster {
        Arc::new(MirroredSource::start(store.clone()).await.unwrap())
    } else {
        store.clone()
    };
    let reader = FlussSession::new(source).await.unwrap();

    // before anything was written: nothing
    let before = rows(&reader, "SELECT * FROM db.t TIMESTAMP AS OF 0").await;
    assert_eq!(before, Vec::new(), "{label}: as of the epoch");

    for (i, &time) in commit_times.iter().enumerate() {
        let as_of = rows(
            &reader,
            &format!("SELECT * FROM db.t TIMESTAMP AS OF {time}"),
        )
        .await;
        assert_eq!(as_of, states[i], "{label}: as of step {i} ({time} ms)");
        let system_time = rows(
            &reader,
            &format!(
                "SELECT * FROM db.t FOR SYSTEM_TIME AS OF \
                 CAST(to_timestamp_millis({time}) AS TIMESTAMP)"
            ),
        )
        .await;
        assert_eq!(system_time, states[i], "{label}: FOR SYSTEM_TIME, step {i}");
    }

    for (i, snapshot) in snapshot_after.iter().enumerate() {
        let Some(snapshot) = snapshot else { continue };
        // the union at a snapshot is the table as that snapshot recorded it: the
        // state the tiering after step i saw, nothing of the log written later
        let union = rows(
            &reader,
            &format!("SELECT * FROM db.t VERSION AS OF {snapshot}"),
        )
        .await;
        assert_eq!(union, states[i], "{label}: union at {snapshot}");
        // ... and so is the lake alone at it
        let lake = rows(
            &reader,
            &format!("SELECT id, name FROM db.\"t$lake\" VERSION AS OF {snapshot}"),
        )
        .await;
        assert_eq!(lake, states[i], "{label}: lake snapshot {snapshot}");
    }

    // every window of whole steps
    for first in 0..STEPS.len() {
        for last in first + 1..STEPS.len() {
            let (start, end) = (commit_times[first] + 1, commit_times[last] + 1);
            if start >= end {
                continue;
            }
            let got = rows(
                &reader,
                &format!("SELECT * FROM fluss_log_between('db.t', {start}, {end})"),
            )
            .await;
            assert_eq!(
                got,
                window(primary_key, first, last),
                "{label}: log between steps {first} and {last}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_as_of_a_time_a_snapshot_and_between_times_match_the_model() {
    for format in ["paimon", "iceberg"] {
        for primary_key in [true, false] {
            for through_cluster in [false, true] {
                scenario(format, primary_key, through_cluster).await;
            }
        }
    }
}
