//! Union read through SQL: lake snapshot + log tail, log and primary-key tables.

use std::sync::Arc;

use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::provider::FlussCatalog;
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::tier;

fn rows(ids: &[i64], names: &[&str], scores: &[i32]) -> RecordBatch {
    RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(ids.to_vec())) as _),
        ("name", Arc::new(StringArray::from(names.to_vec())) as _),
        ("score", Arc::new(Int32Array::from(scores.to_vec())) as _),
    ])
    .unwrap()
}

fn descriptor(pk: bool, buckets: i32) -> TableDescriptor {
    let mut s = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("score", DataTypes::int());
    if pk {
        s = s.primary_key(vec!["id"]).unwrap();
    }
    TableDescriptor::builder()
        .schema(s.build().unwrap())
        .distributed_by(
            Some(buckets),
            if pk { vec![] } else { vec!["id".to_string()] },
        )
        .property("table.datalake.enabled", "true")
        .build()
        .unwrap()
}

async fn setup() -> (tempfile::TempDir, Arc<LocalStore>, SessionContext) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap(),
    );
    store.create_database("db", None, false).await.unwrap();
    let ctx = SessionContext::new();
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    (dir, store, ctx)
}

async fn physical_plan(
    ctx: &SessionContext,
    sql: &str,
) -> Arc<dyn datafusion::physical_plan::ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

async fn query(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

/// The line of an EXPLAIN output that shows `node`.
fn plan_line<'a>(explain: &'a str, node: &str) -> &'a str {
    explain
        .lines()
        .find(|l| l.contains(node))
        .unwrap_or_else(|| panic!("no {node} in {explain}"))
}

/// PK table `db.users` with `buckets` buckets holding ids `1..=rows_in_lake` (name `n<id>`,
/// score = id), tiered to the lake once.
async fn tiered_users(store: &LocalStore, buckets: i32, rows_in_lake: i64) -> TablePath {
    let path = TablePath::new("db", "users");
    store
        .create_table(&path, &descriptor(true, buckets), false)
        .await
        .unwrap();
    let ids: Vec<i64> = (1..=rows_in_lake).collect();
    let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let scores: Vec<i32> = ids.iter().map(|i| *i as i32).collect();
    store
        .upsert(&path, &rows(&ids, &names, &scores))
        .await
        .unwrap();
    tier(store, &path).await.unwrap();
    path
}

#[tokio::test]
async fn log_table_reads_lake_plus_tail() {
    let (_dir, store, ctx) = setup().await;
    let path = TablePath::new("db", "events");
    store
        .create_table(&path, &descriptor(false, 2), false)
        .await
        .unwrap();
    store
        .append(&path, &rows(&[1, 2, 3], &["a", "b", "c"], &[10, 20, 30]))
        .await
        .unwrap();
    tier(&store, &path).await.unwrap();
    store
        .append(&path, &rows(&[4, 5], &["d", "e"], &[40, 50]))
        .await
        .unwrap();
    let out = query(
        &ctx,
        "SELECT id, name, score FROM fluss.db.events ORDER BY id",
    )
    .await;
    assert_eq!(
        out,
        "+----+------+-------+\n| id | name | score |\n+----+------+-------+\n| 1  | a    | 10    |\n| 2  | b    | 20    |\n| 3  | c    | 30    |\n| 4  | d    | 40    |\n| 5  | e    | 50    |\n+----+------+-------+"
    );
    let out = query(
        &ctx,
        "SELECT count(*) AS n, sum(score) AS s FROM fluss.db.events WHERE score > 15",
    )
    .await;
    assert!(out.contains("| 4 | 140 |"), "{out}");
    let lake = query(&ctx, "SELECT count(*) AS n FROM fluss.db.\"events$lake\"").await;
    assert!(lake.contains("| 3 |"), "{lake}");
    let explain = query(
        &ctx,
        "EXPLAIN SELECT * FROM fluss.db.events WHERE score > 15",
    )
    .await;
    assert!(explain.contains("FlussLogScanExec"), "{explain}");
    assert!(explain.contains("lake_snapshot=1"), "{explain}");
    // the parquet lake scan prunes row groups with the filter (pushed once)
    let parquet = plan_line(&explain, "DataSourceExec");
    assert!(parquet.contains("predicate=score@2 > 15"), "{parquet}");
    assert!(
        !parquet.contains("score@2 > 15 AND score@2 > 15"),
        "{parquet}"
    );
}

#[tokio::test]
async fn pk_table_tail_overrides_the_lake() {
    let (_dir, store, ctx) = setup().await;
    let path = TablePath::new("db", "users");
    store
        .create_table(&path, &descriptor(true, 2), false)
        .await
        .unwrap();
    store
        .upsert(
            &path,
            &rows(&[1, 2, 3, 4], &["a", "b", "c", "d"], &[1, 2, 3, 4]),
        )
        .await
        .unwrap();
    tier(&store, &path).await.unwrap();
    store
        .upsert(&path, &rows(&[2, 5], &["b2", "e"], &[20, 5]))
        .await
        .unwrap();
    store.delete(&path, &rows(&[3], &[""], &[0])).await.unwrap();
    let out = query(
        &ctx,
        "SELECT id, name, score FROM fluss.db.users ORDER BY id",
    )
    .await;
    assert_eq!(
        out,
        "+----+------+-------+\n| id | name | score |\n+----+------+-------+\n| 1  | a    | 1     |\n| 2  | b2   | 20    |\n| 4  | d    | 4     |\n| 5  | e    | 5     |\n+----+------+-------+"
    );
    // a non-key filter must not resurrect the old version of id 2
    let out = query(
        &ctx,
        "SELECT id FROM fluss.db.users WHERE score < 10 ORDER BY id",
    )
    .await;
    assert!(!out.contains("| 2 "), "{out}");
    let out = query(&ctx, "SELECT count(*) AS n FROM fluss.db.users").await;
    assert!(out.contains("| 4 |"), "{out}");
    let lake = query(&ctx, "SELECT count(*) AS n FROM fluss.db.\"users$lake\"").await;
    assert!(lake.contains("| 4 |"), "{lake}");
}

#[tokio::test]
async fn virtual_tables_show_the_changelog_and_lake_snapshots() {
    let (_dir, store, ctx) = setup().await;
    let path = TablePath::new("db", "users");
    store
        .create_table(&path, &descriptor(true, 1), false)
        .await
        .unwrap();
    store
        .upsert(&path, &rows(&[1], &["a"], &[1]))
        .await
        .unwrap();
    tier(&store, &path).await.unwrap();
    store
        .upsert(&path, &rows(&[1], &["a2"], &[2]))
        .await
        .unwrap();
    store.delete(&path, &rows(&[1], &[""], &[0])).await.unwrap();
    let out = query(
        &ctx,
        "SELECT _change_type, _log_offset, id, name FROM fluss.db.\"users$changelog\" ORDER BY _log_offset",
    )
    .await;
    assert_eq!(
        out,
        "+---------------+-------------+----+------+\n| _change_type  | _log_offset | id | name |\n+---------------+-------------+----+------+\n| insert        | 0           | 1  | a    |\n| update_before | 1           | 1  | a    |\n| update_after  | 2           | 1  | a2   |\n| delete        | 3           | 1  | a2   |\n+---------------+-------------+----+------+"
    );
    let out = query(
        &ctx,
        "SELECT snapshot_id, commit_user, registered FROM fluss.db.\"users$lake$snapshots\"",
    )
    .await;
    assert!(
        out.contains("| 1           | __fluss_lake_tiering | yes        |"),
        "{out}"
    );
    let out = query(&ctx, "SELECT count(*) AS n FROM fluss.db.users").await;
    assert!(out.contains("| 0 |"), "{out}");
}

#[tokio::test]
async fn a_running_query_keeps_its_cut_across_appends_and_tiering() {
    let (_dir, store, ctx) = setup().await;
    let path = TablePath::new("db", "events");
    store
        .create_table(&path, &descriptor(false, 2), false)
        .await
        .unwrap();
    store
        .append(&path, &rows(&[1, 2, 3], &["a", "b", "c"], &[1, 2, 3]))
        .await
        .unwrap();
    tier(&store, &path).await.unwrap();
    store
        .append(&path, &rows(&[4], &["d"], &[4]))
        .await
        .unwrap();
    // plan (pins the cut), then change the table, then execute
    let df = ctx
        .sql("SELECT count(*) AS n, sum(score) AS s FROM fluss.db.events")
        .await
        .unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    store
        .append(&path, &rows(&[5, 6], &["e", "f"], &[5, 6]))
        .await
        .unwrap();
    tier(&store, &path).await.unwrap();
    store
        .append(&path, &rows(&[7], &["g"], &[7]))
        .await
        .unwrap();
    let batches = datafusion::physical_plan::collect(plan, ctx.task_ctx())
        .await
        .unwrap();
    let out = pretty_format_batches(&batches).unwrap().to_string();
    assert!(out.contains("| 4 | 10 |"), "{out}");
    // a new query sees everything
    let out = query(
        &ctx,
        "SELECT count(*) AS n, sum(score) AS s FROM fluss.db.events",
    )
    .await;
    assert!(out.contains("| 7 | 28 |"), "{out}");
}

#[tokio::test]
async fn object_store_roots_work_for_writes_and_reads() {
    // an in-memory object store: no append in place, every append rolls a segment
    let store = Arc::new(LocalStore::open("memory:///").await.unwrap());
    store.create_database("db", None, false).await.unwrap();
    let ctx = SessionContext::new();
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    let log = TablePath::new("db", "events");
    let mut d = descriptor(false, 2);
    d = d.with_properties(std::collections::HashMap::from([(
        "table.datalake.enabled",
        "false",
    )]));
    store.create_table(&log, &d, false).await.unwrap();
    store
        .append(&log, &rows(&[1, 2, 3], &["a", "b", "c"], &[1, 2, 3]))
        .await
        .unwrap();
    store.append(&log, &rows(&[4], &["d"], &[4])).await.unwrap();
    let pk = TablePath::new("db", "users");
    let mut d = descriptor(true, 2);
    d = d.with_properties(std::collections::HashMap::from([(
        "table.datalake.enabled",
        "false",
    )]));
    store.create_table(&pk, &d, false).await.unwrap();
    store
        .upsert(&pk, &rows(&[1, 2], &["a", "b"], &[1, 2]))
        .await
        .unwrap();
    store
        .upsert(&pk, &rows(&[2], &["b2"], &[20]))
        .await
        .unwrap();
    let out = query(
        &ctx,
        "SELECT count(*) AS n, sum(score) AS s FROM fluss.db.events",
    )
    .await;
    assert!(out.contains("| 4 | 10 |"), "{out}");
    let out = query(&ctx, "SELECT id, name FROM fluss.db.users ORDER BY id").await;
    assert!(out.contains("| 2  | b2   |"), "{out}");
}

#[tokio::test]
async fn point_lookups_by_bucket_key_read_one_bucket() {
    let (_dir, store, ctx) = setup().await;
    let path = tiered_users(&store, 4, 40).await;
    store
        .upsert(&path, &rows(&[7, 8], &["n7b", "n8b"], &[70, 80]))
        .await
        .unwrap();
    let out = query(&ctx, "SELECT id, name FROM fluss.db.users WHERE id = 7").await;
    assert!(out.contains("| 7  | n7b  |"), "{out}");
    assert_eq!(out.lines().count(), 5, "{out}");
    let explain = query(
        &ctx,
        "EXPLAIN SELECT id, name FROM fluss.db.users WHERE id = 7",
    )
    .await;
    let line = plan_line(&explain, "FlussPrimaryKeyScanExec");
    assert!(line.contains("lake_splits=1"), "{line}");
    let out = query(
        &ctx,
        "SELECT id, name FROM fluss.db.users WHERE id IN (7, 30) ORDER BY id",
    )
    .await;
    assert!(
        out.contains("| 7  | n7b  |") && out.contains("| 30 | n30  |"),
        "{out}"
    );
    // The lake reads only the rows holding a looked-up key that the tail does not
    // override: 30's row, not 7's (updated in the tail), nor the rest of its files.
    let (_, sums) = pk_scan_metrics(
        &ctx,
        "SELECT id, name FROM fluss.db.users WHERE id IN (7, 30)",
        &["lake_rows"],
    )
    .await;
    assert_eq!(sums[0], 1, "lake rows decoded: {sums:?}");
    // every id still found through its own bucket
    for id in [1, 8, 19, 40] {
        let out = query(
            &ctx,
            &format!("SELECT count(*) AS n FROM fluss.db.users WHERE id = {id}"),
        )
        .await;
        assert!(out.contains("| 1 |"), "id {id}: {out}");
    }
}

#[tokio::test]
async fn point_lookups_read_only_the_newer_runs_rows_holding_their_keys() {
    // A second tiering round writes a newer sorted run holding the changed keys; a
    // lookup finds its keys' rows in that file's kept keys, reads only them, and does
    // not open the file when it holds none.
    let (_dir, store, ctx) = setup().await;
    let path = tiered_users(&store, 1, 20).await;
    store
        .upsert(&path, &rows(&[3, 4], &["n3b", "n4b"], &[30, 40]))
        .await
        .unwrap();
    store
        .delete(&path, &rows(&[5], &["n5"], &[5]))
        .await
        .unwrap();
    tier(&store, &path).await.unwrap();
    // and a tail over both runs
    store
        .upsert(&path, &rows(&[4], &["n4c"], &[41]))
        .await
        .unwrap();
    let explain = query(&ctx, "EXPLAIN SELECT name FROM fluss.db.users WHERE id = 3").await;
    let line = plan_line(&explain, "FlussPrimaryKeyScanExec");
    assert!(line.contains("1 keyed runs"), "{line}");
    let metrics = ["lake_newer_run_rows", "lake_rows"];
    for (ids, answer, newer_rows) in [
        ("7", vec!["n7"], 0),
        ("3", vec!["n3b"], 1),
        ("5", vec![], 1),
        ("4", vec!["n4c"], 1),
        ("3, 5, 7, 11", vec!["n3b", "n7", "n11"], 2),
    ] {
        let sql = format!("SELECT name FROM fluss.db.users WHERE id IN ({ids}) ORDER BY id");
        let (out, sums) = pk_scan_metrics(&ctx, &sql, &metrics).await;
        let names: Vec<&str> = out
            .lines()
            .skip(3)
            .filter(|l| l.starts_with("| "))
            .map(|l| l.trim_matches(|c| c == '|' || c == ' '))
            .collect();
        assert_eq!(names, answer, "{sql}: {out}");
        assert_eq!(sums[0], newer_rows, "{sql}: newer run rows read");
    }
}

#[tokio::test]
async fn scans_use_at_most_target_partitions_and_answer_the_same() {
    // Buckets are grouped into target_partitions output partitions (read one after
    // another inside a partition); the answer does not depend on the grouping.
    let (_dir, store, _) = setup().await;
    for (name, pk) in [("users", true), ("events", false)] {
        let path = TablePath::new("db", name);
        store
            .create_table(&path, &descriptor(pk, 4), false)
            .await
            .unwrap();
        let ids: Vec<i64> = (1..=60).collect();
        let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let scores: Vec<i32> = ids.iter().map(|i| *i as i32).collect();
        let write = |batch: RecordBatch| {
            let (store, path) = (store.clone(), path.clone());
            async move {
                if pk {
                    store.upsert(&path, &batch).await.unwrap();
                } else {
                    store.append(&path, &batch).await.unwrap();
                }
            }
        };
        write(rows(&ids[..40], &names[..40], &scores[..40])).await;
        tier(&store, &path).await.unwrap();
        write(rows(&ids[30..], &names[30..], &scores[30..])).await;
    }
    let mut answers = Vec::new();
    for target in [1usize, 2, 8] {
        let config = datafusion::prelude::SessionConfig::new().with_target_partitions(target);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
        for (name, node) in [
            ("users", "FlussPrimaryKeyScanExec"),
            ("events", "FlussLogScanExec"),
        ] {
            let sql = format!("SELECT * FROM fluss.db.{name}");
            let plan = ctx
                .sql(&sql)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            let partitions = find_partitions(&plan, node).unwrap();
            assert_eq!(partitions, target.min(4), "{name} at target {target}");
            answers.push((
                name,
                query(
                    &ctx,
                    &format!("SELECT count(*) AS n, sum(score) AS s, count(DISTINCT id) AS k FROM fluss.db.{name}"),
                )
                .await,
            ));
        }
    }
    for (name, answer) in &answers {
        let first = &answers.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(answer, first, "{name}");
    }
    // users: 60 keys (30..40 updated in place); events: 40 lake + 30 tail rows.
    assert!(
        answers[0].1.contains("| 60 | 1830 | 60 |"),
        "{}",
        answers[0].1
    );
    assert!(answers[1].1.contains("| 70 | "), "{}", answers[1].1);
}

/// Output partitions of the first plan node named `node`.
fn find_partitions(
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    node: &str,
) -> Option<usize> {
    if plan.name() == node {
        return Some(plan.properties().output_partitioning().partition_count());
    }
    plan.children()
        .into_iter()
        .find_map(|child| find_partitions(child, node))
}

/// Lake splits tiered once are raw convertible (one file per bucket, unique keys):
/// they are read by DataFusion's parquet reader, filters prune their row groups, and
/// the tail still overrides them (a stale lake version that matches a filter is
/// dropped).
#[tokio::test]
async fn raw_lake_splits_are_read_as_parquet_and_still_overridden_by_the_tail() {
    let (_dir, store, ctx) = setup().await;
    let path = tiered_users(&store, 2, 100).await;
    store
        .upsert(&path, &rows(&[5, 200], &["n5b", "n200"], &[500, 2]))
        .await
        .unwrap();
    store
        .delete(&path, &rows(&[6], &["n6"], &[6]))
        .await
        .unwrap();

    let explain = query(&ctx, "EXPLAIN SELECT id FROM fluss.db.users").await;
    assert!(
        explain.contains("lake_splits=2 (2 raw parquet, 0 keyed runs)"),
        "{explain}"
    );
    let ids_of = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
            let mut ids: Vec<i64> = batches
                .iter()
                .flat_map(|b| {
                    b.column(0)
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .unwrap()
                        .values()
                        .to_vec()
                })
                .collect();
            ids.sort();
            ids
        }
    };
    let high: Vec<i64> = std::iter::once(5).chain(91..=100).collect();
    assert_eq!(
        ids_of("SELECT id FROM fluss.db.users WHERE score > 90").await,
        high
    );
    assert_eq!(
        ids_of("SELECT id FROM fluss.db.users WHERE score < 3").await,
        vec![1, 2, 200]
    );
    // the lake still holds (5, score 5) and (6, score 6): the tail overrides both
    assert!(
        ids_of("SELECT id FROM fluss.db.users WHERE score IN (5, 6)")
            .await
            .is_empty()
    );
    assert_eq!(ids_of("SELECT id FROM fluss.db.users").await.len(), 100);

    // a non-key filter no lake row group matches prunes them all by statistics
    // (key filters already prune whole files when the lake scan is planned)
    let analyzed = query(
        &ctx,
        "EXPLAIN ANALYZE SELECT id FROM fluss.db.users WHERE score > 100000",
    )
    .await;
    let line = plan_line(&analyzed, "FlussPrimaryKeyScanExec");
    assert!(line.contains("lake_rows=0"), "{line}");
    assert!(
        line.contains("row_groups_pruned_statistics=2 total → 0 matched"),
        "{line}"
    );
    // the parquet scans' own output counters are not shown as this node's
    assert!(!line.contains("output_rows="), "{line}");
}

/// The process-wide cache of lake plans serves a plan (and the lake table that made
/// it) only to a source with the same storage options: a lake opened with one
/// source's credentials is never handed to another source's query.
#[tokio::test]
async fn lake_plans_are_cached_per_storage_options() {
    use fluss_datafusion::lake::{LakeScanRequest, plan_snapshot};
    use fluss_datafusion::source::FlussSource;
    let (_dir, store, _session) = fluss_test_support::local_store::store_from_sql(
        fluss_test_support::local_store::TIERED_TABLES_SQL,
    )
    .await;
    let table = store.get_table(&TablePath::new("db", "kv")).await.unwrap();
    let snapshot = store
        .readable_lake_snapshot(&table)
        .await
        .unwrap()
        .expect("tiered");
    let request = LakeScanRequest {
        snapshot_id: snapshot.snapshot_id,
        filter: None,
        primary_key: true,
    };
    let fluss = table.schemas.latest().unwrap().arrow.clone();
    let mine = store.lake_location(&table).await.unwrap();
    let (first, _) = plan_snapshot(&mine, &table, &fluss, &request)
        .await
        .unwrap();
    let (again, _) = plan_snapshot(&mine, &table, &fluss, &request)
        .await
        .unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "the same source's plan is cached"
    );
    let mut theirs = mine.clone();
    theirs
        .options
        .insert("s3.secret-access-key".into(), "someone else's".into());
    let (other, _) = plan_snapshot(&theirs, &table, &fluss, &request)
        .await
        .unwrap();
    assert!(
        !Arc::ptr_eq(&first, &other),
        "a source with other credentials got the lake another source opened"
    );
}

/// The `tail_cache_hits` metric of the primary-key scan of `sql`, run to the end.
async fn tail_cache_hits(ctx: &SessionContext, sql: &str) -> (String, usize) {
    let (out, hits) = pk_scan_metrics(ctx, sql, &["tail_cache_hits"]).await;
    (out, hits[0])
}

/// The answer of `sql`, run to the end, and the named metrics of its primary-key
/// scans, summed.
async fn pk_scan_metrics(ctx: &SessionContext, sql: &str, names: &[&str]) -> (String, Vec<usize>) {
    let (out, sums, _) = scan_metrics(ctx, sql, "FlussPrimaryKeyScanExec:", names).await;
    (out, sums)
}

/// The answer of `sql`, run to the end, the named metrics summed over the plan's
/// nodes whose one-line description starts with `node`, and the plan.
async fn scan_metrics(
    ctx: &SessionContext,
    sql: &str,
    node: &str,
    names: &[&str],
) -> (
    String,
    Vec<usize>,
    Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) {
    let plan = physical_plan(ctx, sql).await;
    let batches = datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx())
        .await
        .unwrap();
    let mut sums = vec![0; names.len()];
    let mut stack = vec![plan.clone()];
    while let Some(scan) = stack.pop() {
        let line = datafusion::physical_plan::displayable(scan.as_ref())
            .one_line()
            .to_string();
        if line.starts_with(node) {
            let metrics = scan.metrics();
            for (sum, name) in sums.iter_mut().zip(names) {
                *sum += metrics
                    .as_ref()
                    .and_then(|m| m.sum_by_name(name))
                    .map_or(0, |v| v.as_usize());
            }
        }
        stack.extend(scan.children().into_iter().cloned());
    }
    (
        pretty_format_batches(&batches).unwrap().to_string(),
        sums,
        plan,
    )
}

#[tokio::test]
async fn lake_files_keys_are_read_once_and_rows_find_their_keys_by_row_number() {
    let (_dir, store, ctx) = setup().await;
    let path = tiered_users(&store, 2, 40).await;
    // the tail changes and deletes tiered keys, and adds one
    store
        .upsert(
            &path,
            &rows(&[3, 17, 41], &["n3b", "n17b", "n41"], &[30, 170, 410]),
        )
        .await
        .unwrap();
    store
        .delete(&path, &rows(&[5], &["n5"], &[5]))
        .await
        .unwrap();
    let metrics = ["lake_key_file_reads", "lake_key_cache_hits"];
    let sql = "SELECT id, name, score FROM fluss.db.users ORDER BY id";
    let (first, counts) = pk_scan_metrics(&ctx, sql, &metrics).await;
    assert!(counts[0] >= 1 && counts[1] == 0, "{counts:?}");
    let (again, counts) = pk_scan_metrics(&ctx, sql, &metrics).await;
    assert_eq!(again, first);
    assert!(counts[0] == 0 && counts[1] >= 1, "{counts:?}");
    // every row sits beside its own key: the lake's names are `n<id>`, the tail's
    // changed rows theirs, the deleted key is gone
    for id in 1..=41 {
        let name = match id {
            3 | 17 => format!("n{id}b"),
            _ => format!("n{id}"),
        };
        let line = format!("| {id} ");
        let row = first.lines().find(|l| l.starts_with(&line));
        match id {
            5 => assert!(row.is_none(), "{first}"),
            _ => assert!(
                row.is_some_and(|r| r.contains(&format!(" {name} "))),
                "{first}"
            ),
        }
    }
    // without the key in the projection, and with a filter on it (a key lookup)
    let (names, _) = pk_scan_metrics(
        &ctx,
        "SELECT count(*) AS n, count(DISTINCT name) AS names FROM fluss.db.users",
        &metrics,
    )
    .await;
    assert!(names.contains("| 40 | 40    |"), "{names}");
    let (one, _) = pk_scan_metrics(
        &ctx,
        "SELECT name FROM fluss.db.users WHERE id = 17",
        &metrics,
    )
    .await;
    assert!(one.contains("n17b") && !one.contains("| n17 "), "{one}");
    // a catalog keeping no keys reads them for every query, with the same answer,
    // also when files are read in batches of a few rows
    let uncached = SessionContext::new_with_config(
        datafusion::prelude::SessionConfig::new().with_batch_size(3),
    );
    uncached.register_catalog(
        "fluss",
        Arc::new(FlussCatalog::new(store.clone()).with_lake_key_cache_bytes(0)),
    );
    for _ in 0..2 {
        let (out, counts) = pk_scan_metrics(&uncached, sql, &metrics).await;
        assert_eq!(out, first);
        assert!(counts[0] >= 1 && counts[1] == 0, "{counts:?}");
    }
}

#[tokio::test]
async fn folded_tails_are_reused_until_the_tail_moves() {
    let (_dir, store, ctx) = setup().await;
    let path = tiered_users(&store, 2, 10).await;
    store
        .upsert(&path, &rows(&[3, 4], &["n3b", "n4b"], &[30, 40]))
        .await
        .unwrap();
    let sql = "SELECT id, name FROM fluss.db.users WHERE id IN (3, 4) ORDER BY id";
    let (first, hits) = tail_cache_hits(&ctx, sql).await;
    assert_eq!(hits, 0, "nothing folded yet");
    let (again, hits) = tail_cache_hits(&ctx, sql).await;
    assert_eq!(again, first);
    assert!(hits >= 1, "the second query reuses the folds");
    // fewer columns: served by the same folds; more: folded anew
    let (_, hits) = tail_cache_hits(&ctx, "SELECT name FROM fluss.db.users").await;
    assert!(hits >= 1);
    let (_, hits) = tail_cache_hits(&ctx, "SELECT name, score FROM fluss.db.users").await;
    assert_eq!(hits, 0);
    // a write moves the high watermark: the new range is folded, with the new row
    store
        .upsert(&path, &rows(&[3], &["n3c"], &[31]))
        .await
        .unwrap();
    let (out, _) = tail_cache_hits(&ctx, sql).await;
    assert!(out.contains("n3c") && !out.contains("n3b"), "{out}");
    // a catalog without a cache folds every time
    let uncached = SessionContext::new();
    uncached.register_catalog(
        "fluss",
        Arc::new(FlussCatalog::new(store.clone()).with_tail_cache_bytes(0)),
    );
    for _ in 0..2 {
        let (out, hits) = tail_cache_hits(&uncached, sql).await;
        assert_eq!(hits, 0);
        assert!(out.contains("n3c"), "{out}");
    }
}

#[tokio::test]
async fn join_dynamic_filters_skip_tail_batches_by_their_statistics() {
    // A hash join's dynamic filter (its build side's key bounds) reaches the log
    // tail's scan: batches whose V1 statistics lie outside it are never decoded.
    let (_dir, store, ctx) = setup().await;
    let events = TablePath::new("db", "events");
    let picks = TablePath::new("db", "picks");
    let with_statistics = TableDescriptor::builder()
        .schema(
            Schema::builder()
                .column("id", DataTypes::bigint())
                .column("name", DataTypes::string())
                .column("score", DataTypes::int())
                .build()
                .unwrap(),
        )
        .distributed_by(Some(1), vec![])
        .property("table.statistics.columns", "*")
        .build()
        .unwrap();
    store
        .create_table(&events, &with_statistics, false)
        .await
        .unwrap();
    store
        .create_table(&picks, &descriptor(false, 1), false)
        .await
        .unwrap();
    for (ids, names) in [
        ([1, 2], ["a", "b"]),
        ([11, 12], ["k", "l"]),
        ([21, 22], ["u", "v"]),
    ] {
        store
            .append(&events, &rows(&ids, &names, &[0, 0]))
            .await
            .unwrap();
    }
    store
        .append(&picks, &rows(&[12], &["p"], &[1]))
        .await
        .unwrap();
    let sql = "SELECT e.id, e.name FROM fluss.db.events e JOIN fluss.db.picks p ON e.id = p.id";
    let events_scan = "FlussLogScanExec: table=db.events";
    let (out, sums, plan) = scan_metrics(
        &ctx,
        sql,
        events_scan,
        &["log_batches_read", "log_batches_skipped"],
    )
    .await;
    assert!(out.contains("| 12 | l    |"), "{out}");
    assert_eq!(out.lines().count(), 5, "{out}");
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    let scan_line = shown.lines().find(|l| l.contains(events_scan));
    assert!(
        scan_line.is_some_and(|l| l.contains("dynamic_filters=[")),
        "{shown}"
    );
    assert_eq!(sums, [1, 2], "{shown}");
}

#[tokio::test]
async fn join_dynamic_filters_prune_primary_key_lake_files() {
    // The dynamic filter a hash join pushes into a primary-key scan reaches its
    // lake parquet scans: a base file whose key range misses the build side's keys
    // is pruned, none of its rows decoded.
    let (_dir, store, ctx) = setup().await;
    let path = tiered_users(&store, 1, 10).await;
    store
        .upsert(&path, &rows(&[11, 12], &["n11", "n12"], &[11, 12]))
        .await
        .unwrap();
    tier(&store, &path).await.unwrap();
    let picks = TablePath::new("db", "picks");
    store
        .create_table(&picks, &descriptor(false, 1), false)
        .await
        .unwrap();
    store
        .append(&picks, &rows(&[12], &["p"], &[1]))
        .await
        .unwrap();
    let sql = "SELECT u.id, u.name FROM fluss.db.users u JOIN fluss.db.picks p ON u.id = p.id";
    let (out, sums) = pk_scan_metrics(&ctx, sql, &["lake_rows"]).await;
    assert!(out.contains("| 12 | n12  |"), "{out}");
    assert_eq!(out.lines().count(), 5, "{out}");
    // only the second round's file (11, 12) is read
    assert_eq!(sums[0], 2, "lake rows decoded: {sums:?}");
    // without the dynamic filter, all 12 are
    query(
        &ctx,
        "SET datafusion.optimizer.enable_join_dynamic_filter_pushdown = false",
    )
    .await;
    let (again, sums) = pk_scan_metrics(&ctx, sql, &["lake_rows"]).await;
    assert_eq!((again, sums[0]), (out, 12));
}

#[tokio::test]
async fn a_filtered_log_table_with_a_tail_is_sized_as_its_filtered_lake_says() {
    // DataFusion picks a hash join's build side from row estimates made while the
    // filter is still above the union scan; the lake's bounds (and the tail's rows,
    // estimated alike) must keep the filtered log table the small side, as it is over
    // plain parquet (TPC-H Q14).
    let (_dir, store, ctx) = setup().await;
    let events = TablePath::new("db", "events");
    let picks = TablePath::new("db", "picks");
    store
        .create_table(&events, &descriptor(false, 1), false)
        .await
        .unwrap();
    store
        .create_table(&picks, &descriptor(false, 1), false)
        .await
        .unwrap();
    // score = id, so a filter on score (not the join key, which DataFusion would
    // copy to the other side) selects a tenth of a percent of the events
    let batch = |ids: std::ops::Range<i64>| {
        let ids: Vec<i64> = ids.collect();
        let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let scores: Vec<i32> = ids.iter().map(|&i| i as i32).collect();
        rows(&ids, &names, &scores)
    };
    store.append(&events, &batch(0..1000)).await.unwrap();
    tier(&store, &events).await.unwrap();
    store.append(&events, &batch(1000..1100)).await.unwrap();
    store.append(&picks, &batch(0..300)).await.unwrap();
    tier(&store, &picks).await.unwrap();
    let sql = "SELECT count(*) FROM fluss.db.events e JOIN fluss.db.picks p ON e.id = p.id \
               WHERE e.score >= 10 AND e.score < 20";
    assert!(query(&ctx, sql).await.contains("| 10       |"));
    let plan = physical_plan(&ctx, sql).await;
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    // the build side is the join's first child: the filtered events
    let join = shown
        .lines()
        .position(|l| l.contains("HashJoinExec"))
        .unwrap_or_else(|| panic!("{shown}"));
    let first_scan = shown
        .lines()
        .skip(join)
        .find(|l| l.contains("table=db.") || l.contains("DataSourceExec"))
        .unwrap_or_default();
    assert!(
        first_scan.contains("FilterEstimate")
            || first_scan.contains("db.events")
            || first_scan.contains("/events/"),
        "{shown}"
    );
}

/// `FlussSession::execute_statement_stream` (the shell's path) streams a query's
/// rows as `execute` collects them, with its notice, and runs everything else to its
/// end: DDL, writes, and a statement nested deep enough for a thread of its own.
#[tokio::test]
async fn a_statement_streams_a_query_and_finishes_the_rest() {
    use fluss_datafusion::sql::StatementOutput;
    use futures::TryStreamExt;

    let (_dir, _store, session) = fluss_test_support::local_store::store_from_sql(
        fluss_test_support::local_store::TIERED_TABLES_SQL,
    )
    .await;
    let sql = "SELECT /*+ BROADCAST(logs) */ * FROM db.logs ORDER BY id";
    let StatementOutput::Rows { stream, notice } =
        session.execute_statement_stream(sql).await.unwrap()
    else {
        panic!("a query streams");
    };
    assert!(
        notice.is_some_and(|n| n.contains("hints are not applied")),
        "the query's notice comes with its rows"
    );
    let streamed: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    assert_eq!(
        pretty_format_batches(&streamed).unwrap().to_string(),
        pretty_format_batches(&session.execute(sql).await.unwrap())
            .unwrap()
            .to_string()
    );
    for finished in [
        "CREATE TABLE db.streamed (id BIGINT) WITH ('bucket.num' = '1')",
        "INSERT INTO db.streamed VALUES (1), (2)",
        "SHOW DATABASES",
    ] {
        match session.execute_statement_stream(finished).await.unwrap() {
            StatementOutput::Done(_) => {}
            StatementOutput::Rows { .. } => panic!("{finished} streamed"),
        }
    }
    // a chain of 400 additions: past the depth planned on the caller's stack
    let deep = format!("SELECT {} AS v", vec!["1"; 400].join("+"));
    match session.execute_statement_stream(&deep).await.unwrap() {
        StatementOutput::Done(result) => assert_eq!(result.num_rows(), 1),
        StatementOutput::Rows { .. } => panic!("a deep statement is collected on its thread"),
    }
}

/// `FlussSession::query_stream` (what the Python package's `RecordBatchReader` pulls
/// from) answers a union read as `execute` does, hints included, and refuses a
/// statement that changes something.
#[tokio::test]
async fn a_query_streams_the_rows_execute_collects() {
    use fluss_datafusion::sql::FlussSession;
    use futures::TryStreamExt;

    let (_dir, _store, session) = fluss_test_support::local_store::store_from_sql(
        fluss_test_support::local_store::TIERED_TABLES_SQL,
    )
    .await;
    for sql in [
        "SELECT * FROM db.logs ORDER BY id",
        "SELECT id, v FROM db.kv WHERE n > 3 ORDER BY id",
    ] {
        let streamed: Vec<RecordBatch> = session
            .query_stream(sql)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let collected = session.execute(sql).await.unwrap();
        assert_eq!(
            pretty_format_batches(&streamed).unwrap().to_string(),
            pretty_format_batches(&collected).unwrap().to_string(),
            "{sql}"
        );
    }
    // hints apply to the streamed statement too (server-scan needs a cluster)
    let hinted =
        "SELECT /*+ OPTIONS('client.scanner.kv.batch-strategy' = 'server-scan') */ * FROM db.kv";
    let streamed = session
        .query_stream(hinted)
        .await
        .err()
        .expect("no tablet servers");
    let collected = session
        .execute(hinted)
        .await
        .expect_err("no tablet servers");
    assert_eq!(
        streamed.kind(),
        fluss_datafusion::ErrorKind::FeatureUnsupported
    );
    assert_eq!(streamed.to_string(), collected.to_string());
    let refused = FlussSession::query_stream(&session, "INSERT INTO db.logs VALUES (9, 'z', 9)")
        .await
        .err()
        .expect("a write does not stream");
    assert_eq!(refused.kind(), fluss_datafusion::ErrorKind::InvalidInput);
    let count = session
        .execute("SELECT count(*) FROM db.logs")
        .await
        .unwrap();
    assert!(
        pretty_format_batches(&count)
            .unwrap()
            .to_string()
            .contains("| 7 ")
    );
}
