//! Iceberg lakes written by an independent implementation, pyiceberg
//! (`tests/python/gen_iceberg_fixtures.py`, run into a temporary directory because
//! Iceberg metadata holds absolute paths), read through the union table:
//! - a primary-key table whose snapshot has a position-delete and an equality-delete
//!   file (read by the `iceberg` reader), then a Fluss tail of upserts and deletes on
//!   top, checked against a model;
//! - a partitioned log table (`identity(dt)`, `identity(__bucket)`) with a
//!   copy-on-write delete, plus a tail.
//!
//! The lake snapshot is registered by hand (laketable.json and an offsets file), as
//! a Fluss coordinator would after tiering.

use super::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use fluss::metadata::TablePath;
use fluss_datafusion::source::{FlussSource, LocalStore, LocalStoreOptions};
use fluss_datafusion::sql::FlussSession;
use serde_json::{Value, json};

/// pyiceberg's tables, or `None` (test skipped) without the Python venv.
fn fixtures() -> Option<tempfile::TempDir> {
    fixtures_with(&[])
}

/// pyiceberg's tables, written with the generator's extra `args` (`--s3-endpoint`).
pub(super) fn fixtures_with(args: &[&str]) -> Option<tempfile::TempDir> {
    let python = common::venv_python()?;
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/gen_iceberg_fixtures.py");
    let status = std::process::Command::new(python)
        .arg(script)
        .arg(dir.path())
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "gen_iceberg_fixtures.py failed");
    Some(dir)
}

fn expected(fixtures: &Path, name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixtures.join("expected").join(name)).unwrap()).unwrap()
}

/// Expected rows of `table` with only `columns`, sorted.
pub(super) fn expected_rows(fixtures: &Path, table: &str, columns: &[&str]) -> Vec<Value> {
    let rows = expected(fixtures, &format!("{table}.json"));
    common::sort_rows(
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                Value::Object(
                    columns
                        .iter()
                        .map(|c| (c.to_string(), r[c].clone()))
                        .collect(),
                )
            })
            .collect(),
    )
}

fn latest_snapshot(fixtures: &Path, table: &str) -> i64 {
    let snapshots = expected(fixtures, &format!("{table}.snapshots.json"));
    snapshots.as_array().unwrap().last().unwrap()["snapshot_id"]
        .as_i64()
        .unwrap()
}

pub(super) struct Store {
    dir: tempfile::TempDir,
    store: Arc<LocalStore>,
    session: FlussSession,
}

impl Store {
    async fn new() -> Self {
        Self::with_options(LocalStoreOptions::default()).await
    }

    pub(super) async fn with_options(options: LocalStoreOptions) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            LocalStore::open_with_options(dir.path().to_str().unwrap(), options)
                .await
                .unwrap(),
        );
        let session = FlussSession::new(store.clone()).await.unwrap();
        Self {
            dir,
            store,
            session,
        }
    }

    pub(super) fn session(&self) -> &FlussSession {
        &self.session
    }

    pub(super) fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub(super) fn store(&self) -> &LocalStore {
        &self.store
    }

    pub(super) async fn sql(&self, sql: &str) -> Vec<RecordBatch> {
        self.session
            .execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    pub(super) async fn rows(&self, sql: &str) -> Vec<Value> {
        common::sort_rows(common::render_rows(&self.sql(sql).await))
    }

    /// Registers lake snapshot `snapshot_id` with every bucket tiered up to its
    /// current high watermark, as the coordinator does after a tiering round.
    async fn register_snapshot(&self, table: &str, snapshot_id: i64) {
        let path = TablePath::new("fluss", table);
        let info = self.store.get_table(&path).await.unwrap();
        let id = info.table_id();
        let buckets = self.store.buckets(&info).await.unwrap();
        let offsets = self.store.bucket_offsets(&info, &buckets).await.unwrap();
        let partitioned = buckets.iter().any(|b| b.partition.is_some());
        let body = if partitioned {
            let mut partitions: Vec<(i64, Vec<i64>)> = Vec::new();
            for (b, o) in buckets.iter().zip(&offsets) {
                let pid = b.partition_id().unwrap();
                if !partitions.iter().any(|(p, _)| *p == pid) {
                    partitions.push((pid, Vec::new()));
                }
                let entry = partitions.iter_mut().find(|(p, _)| *p == pid).unwrap();
                entry.1.push(o.high_watermark);
            }
            let partitions: Vec<Value> = partitions
                .into_iter()
                .map(|(p, o)| json!({"partition_id": p, "bucket_offsets": o}))
                .collect();
            json!({"version": 1, "table_id": id, "partition_offsets": partitions})
        } else {
            let o: Vec<i64> = offsets.iter().map(|o| o.high_watermark).collect();
            json!({"version": 1, "table_id": id, "bucket_offsets": o})
        };
        let offsets_file = format!("remote/lake/fluss/{table}-{id}/metadata/registered.offsets");
        let root = self.dir.path();
        write(&root.join(&offsets_file), &body);
        write(
            &root.join(format!("zk/tabletservers/tables/{id}/laketable.json")),
            &json!({"version": 2, "lake_snapshots": [{
                "snapshot_id": snapshot_id,
                "tiered_offsets": offsets_file,
                "readable_offsets": offsets_file,
            }]}),
        );
    }
}

fn write(path: &PathBuf, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec(value).unwrap()).unwrap();
}

fn warehouse(fixtures: &Path) -> String {
    fixtures.join("hadoop").to_str().unwrap().to_string()
}

#[tokio::test]
async fn a_pyiceberg_primary_key_table_with_delete_files_union_reads_with_its_tail() {
    let Some(fx) = fixtures() else { return };
    let fx = fx.path();
    let lake = format!("'table.datalake.iceberg.warehouse' = '{}'", warehouse(fx));
    pk_t_union_reads_with_its_tail(&Store::new().await, fx, &lake).await;
}

/// pyiceberg's `pk_t` (`fixtures`), found through the lake properties `lake`, read
/// alone and under a tail of upserts and deletes.
pub(super) async fn pk_t_union_reads_with_its_tail(s: &Store, fx: &Path, lake: &str) {
    s.sql(&format!(
        "CREATE TABLE fluss.pk_t (id BIGINT, name STRING, score INT, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', \
         'table.datalake.format' = 'iceberg', {lake})"
    ))
    .await;
    // The tablet's key state holds what was tiered (a delete of an unknown key writes
    // nothing, as in Fluss): the lake's live rows went through the log first.
    s.sql("INSERT INTO pk_t VALUES (1, 'alice', 10), (3, 'carol', NULL), (4, NULL, 40), (6, 'frank', 60)")
        .await;
    s.register_snapshot("pk_t", latest_snapshot(fx, "pk_t"))
        .await;

    // the lake alone: pyiceberg's rows after the position and equality deletes
    let lake = expected_rows(fx, "pk_t", &["id", "name", "score"]);
    assert_eq!(lake.len(), 4);
    assert_eq!(s.rows("SELECT id, name, score FROM pk_t").await, lake);
    assert_eq!(
        s.rows("SELECT id, name, score FROM \"pk_t$lake\"").await,
        lake
    );

    // a tail on top: an update of a lake key in each bucket, a delete, a new key.
    // Fluss buckets keys with Iceberg's bucket function, so each change lands in
    // the bucket that holds the key's lake row and the anti-join drops it.
    s.sql("INSERT INTO pk_t VALUES (1, 'alice2', 11), (6, 'frank2', 61), (7, 'gina', 70)")
        .await;
    s.sql("DELETE FROM pk_t WHERE id = 3").await;
    let mut model: Vec<Value> = lake
        .into_iter()
        .filter(|r| r["id"] != 1 && r["id"] != 6 && r["id"] != 3)
        .collect();
    model.push(json!({"id": 1, "name": "alice2", "score": 11}));
    model.push(json!({"id": 6, "name": "frank2", "score": 61}));
    model.push(json!({"id": 7, "name": "gina", "score": 70}));
    let model = common::sort_rows(model);
    assert_eq!(s.rows("SELECT id, name, score FROM pk_t").await, model);
    assert_eq!(
        s.rows("SELECT count(*) AS n FROM pk_t").await,
        vec![json!({"n": 4})]
    );
    // a key filter reads one bucket and still sees the tail's version
    assert_eq!(
        s.rows("SELECT name FROM pk_t WHERE id = 1").await,
        vec![json!({"name": "alice2"})]
    );

    // the lake's snapshots, with what pyiceberg recorded for Fluss
    let snapshots = s
        .rows("SELECT snapshot_id, commit_user, fluss_offsets FROM \"pk_t$lake$snapshots\"")
        .await;
    assert_eq!(snapshots.len(), 2, "{snapshots:?}");
    assert!(
        snapshots
            .iter()
            .all(|r| r["commit_user"] == "__fluss_lake_tiering"),
        "{snapshots:?}"
    );
    assert!(
        snapshots
            .iter()
            .any(|r| r["fluss_offsets"] == "fluss-offsets/pk_t/commit-2.offsets"),
        "{snapshots:?}"
    );
}

#[tokio::test]
async fn a_pyiceberg_partitioned_log_table_union_reads_with_its_tail() {
    let Some(fx) = fixtures() else { return };
    let fx = fx.path();
    let lake = format!("'table.datalake.iceberg.warehouse' = '{}'", warehouse(fx));
    log_t_union_reads_with_its_tail(&Store::new().await, fx, &lake).await;
}

/// pyiceberg's partitioned `log_t` (`fixtures`), found through the lake properties
/// `lake`, read alone, under a tail, and with pruning filters.
pub(super) async fn log_t_union_reads_with_its_tail(s: &Store, fx: &Path, lake: &str) {
    s.sql(&format!(
        "CREATE TABLE fluss.log_t (id BIGINT, name STRING, dt STRING) PARTITIONED BY (dt) \
         WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', \
         'table.datalake.format' = 'iceberg', {lake})"
    ))
    .await;
    // The partitions exist in Fluss; what their logs held up to now is in the lake.
    s.sql("INSERT INTO log_t VALUES (100, 'tiered', '2024-01-01'), (101, 'tiered', '2024-01-02')")
        .await;
    s.register_snapshot("log_t", latest_snapshot(fx, "log_t"))
        .await;

    let lake = expected_rows(fx, "log_t", &["id", "name", "dt"]);
    assert_eq!(lake.len(), 8, "the copy-on-write delete removed id 2");
    assert_eq!(
        s.rows("SELECT id, name, dt FROM \"log_t$lake\"").await,
        lake
    );
    assert_eq!(s.rows("SELECT id, name, dt FROM log_t").await, lake);

    s.sql("INSERT INTO log_t VALUES (10, 'tail', '2024-01-02')")
        .await;
    let mut union = lake.clone();
    union.push(json!({"id": 10, "name": "tail", "dt": "2024-01-02"}));
    assert_eq!(
        s.rows("SELECT id, name, dt FROM log_t").await,
        common::sort_rows(union)
    );
    // file pruning by the planner's metrics, then the filter re-applied on rows
    let above: Vec<Value> = common::sort_rows(
        lake.iter()
            .filter(|r| r["id"].as_i64().unwrap() > 5)
            .cloned()
            .chain([json!({"id": 10, "name": "tail", "dt": "2024-01-02"})])
            .collect(),
    );
    assert_eq!(
        s.rows("SELECT id, name, dt FROM log_t WHERE id > 5").await,
        above
    );
    let ids = s
        .sql("SELECT id FROM log_t WHERE id IN (3, 8) OR name = 'i' ORDER BY id")
        .await;
    assert_eq!(
        common::render_rows(&ids),
        vec![json!({"id": 3}), json!({"id": 8}), json!({"id": 9})]
    );
    // partition pruning keeps the other partition's lake files out
    let day1: Vec<Value> = lake
        .iter()
        .filter(|r| r["dt"] == "2024-01-01")
        .cloned()
        .collect();
    assert_eq!(
        s.rows("SELECT id, name, dt FROM log_t WHERE dt = '2024-01-01'")
            .await,
        day1
    );
}

/// The JSON a script of `tests/python` prints for a hadoop-layout table directory,
/// or `None` (test skipped) without the Python venv.
fn python_json(script: &str, table_dir: &Path) -> Option<Value> {
    let python = common::venv_python()?;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let out = std::process::Command::new(python)
        .arg(path)
        .arg(table_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// pyiceberg's reading of a hadoop-layout table directory.
pub(super) fn pyiceberg_read(table_dir: &Path) -> Option<Value> {
    python_json("read_iceberg.py", table_dir)
}

#[tokio::test]
async fn pyiceberg_reads_what_the_localstore_tiered() {
    if common::venv_python().is_none() {
        return;
    }
    let s = Store::new().await;
    s.sql(
        "CREATE TABLE fluss.visits (id BIGINT, page STRING, dt STRING) PARTITIONED BY (dt) \
         WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', \
         'table.datalake.format' = 'iceberg')",
    )
    .await;
    s.sql("INSERT INTO visits VALUES (1, 'a', '2026-01-01'), (2, NULL, '2026-01-01'), (3, 'c', '2026-01-02')")
        .await;
    s.sql("CALL fluss.tier('visits')").await;
    s.sql("INSERT INTO visits VALUES (4, 'd', '2026-01-02')")
        .await;
    s.sql("CALL fluss.tier('visits')").await;

    let table_dir = s.dir.path().join("lake/iceberg/fluss/visits");
    let theirs = pyiceberg_read(&table_dir).unwrap();
    // the rows as this crate's lake-only read shows them
    let ours = s.rows("SELECT id, page, dt FROM \"visits$lake\"").await;
    let their_rows: Vec<Value> = theirs["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!({"id": r["id"], "page": r["page"], "dt": r["dt"]}))
        .collect();
    assert_eq!(common::sort_rows(their_rows), ours);
    assert_eq!(ours.len(), 4);
    // Fluss 1.0's clean layout (FIP-27, apache/fluss #4019): the table holds the
    // user's columns only, no `__bucket`, `__offset` or `__timestamp`
    for r in theirs["rows"].as_array().unwrap() {
        let columns: Vec<&String> = r.as_object().unwrap().keys().collect();
        assert!(
            columns.iter().all(|c| !c.starts_with("__")),
            "system columns in a clean table: {r}"
        );
    }
    // two append snapshots with Fluss's summary entries, the offsets files registered
    let snapshots = theirs["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 2, "{snapshots:?}");
    for snapshot in snapshots {
        assert_eq!(snapshot["operation"], "append");
        assert_eq!(snapshot["summary"]["commit-user"], "__fluss_lake_tiering");
        let offsets = snapshot["summary"]["fluss-offsets"].as_str().unwrap();
        assert!(s.dir.path().join(offsets).exists(), "{offsets}");
    }
}

/// A crash after the Iceberg commit and before registration: the re-run registers
/// the committed snapshot (found by its `fluss-offsets` summary entry) instead of
/// tiering the same offsets twice; a marker whose commit never happened is dropped
/// with its orphan offsets file.
#[tokio::test]
async fn a_committed_but_unregistered_iceberg_snapshot_is_registered_not_tiered_again() {
    let s = Store::new().await;
    s.sql(
        "CREATE TABLE fluss.hits (id BIGINT, n INT) \
         WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', \
         'table.datalake.format' = 'iceberg')",
    )
    .await;
    s.sql("INSERT INTO hits VALUES (1, 10), (2, 20), (3, 30)")
        .await;
    s.sql("CALL fluss.tier('hits')").await;
    let info = s
        .store
        .get_table(&TablePath::new("fluss", "hits"))
        .await
        .unwrap();
    let id = info.table_id();
    let root = s.dir.path();
    let laketable = root.join(format!("zk/tabletservers/tables/{id}/laketable.json"));
    let registered: Value = serde_json::from_slice(&std::fs::read(&laketable).unwrap()).unwrap();
    let entry = registered["lake_snapshots"][0].clone();
    // undo the registration, leave the marker the crashed run would have left
    std::fs::remove_file(&laketable).unwrap();
    write(
        &root.join(format!(
            "zk/tabletservers/tables/{id}/lake_tiering_pending.json"
        )),
        &json!({"offsets": entry["tiered_offsets"]}),
    );
    assert_eq!(
        s.rows("SELECT count(*) AS n FROM hits").await,
        vec![json!({"n": 3})]
    );
    s.sql("CALL fluss.tier('hits')").await;
    let after: Value = serde_json::from_slice(&std::fs::read(&laketable).unwrap()).unwrap();
    assert_eq!(after["lake_snapshots"].as_array().unwrap().len(), 1);
    assert_eq!(
        after["lake_snapshots"][0]["snapshot_id"],
        entry["snapshot_id"]
    );
    assert_eq!(
        s.rows("SELECT count(*) AS n FROM \"hits$lake\"").await,
        vec![json!({"n": 3})]
    );
    assert_eq!(
        s.rows("SELECT count(*) AS n FROM \"hits$lake$snapshots\"")
            .await,
        vec![json!({"n": 1})]
    );

    // a marker of a commit that never happened: its offsets file is discarded
    let orphan = format!("remote/lake/fluss/hits-{id}/metadata/orphan.offsets");
    write(
        &root.join(&orphan),
        &json!({"version": 1, "table_id": id, "bucket_offsets": [9, 9]}),
    );
    write(
        &root.join(format!(
            "zk/tabletservers/tables/{id}/lake_tiering_pending.json"
        )),
        &json!({"offsets": orphan}),
    );
    s.sql("INSERT INTO hits VALUES (4, 40)").await;
    s.sql("CALL fluss.tier('hits')").await;
    assert!(!root.join(&orphan).exists());
    assert_eq!(
        s.rows("SELECT count(*) AS n FROM \"hits$lake\"").await,
        vec![json!({"n": 4})]
    );
}

/// The same pyiceberg tables through the sql (JDBC) catalog pyiceberg wrote them to:
/// `iceberg_tables` names the current metadata file.
#[tokio::test]
async fn the_sql_catalog_finds_pyiceberg_tables() {
    let Some(fx) = fixtures() else { return };
    let fx = fx.path();
    let s = Store::new().await;
    let warehouse = fx.join("warehouse");
    let catalog = |extra: &str| {
        format!(
            "'table.datalake.enabled' = 'true', 'table.datalake.format' = 'iceberg', \
             'table.datalake.iceberg.type' = 'sql', 'table.datalake.iceberg.name' = 'default', \
             'table.datalake.iceberg.uri' = 'jdbc:sqlite:{}', \
             'table.datalake.iceberg.warehouse' = '{}'{extra}",
            warehouse.join("catalog.db").display(),
            warehouse.display()
        )
    };
    s.sql(&format!(
        "CREATE TABLE fluss.pk_t (id BIGINT, name STRING, score INT, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '2', {})",
        catalog("")
    ))
    .await;
    s.register_snapshot("pk_t", latest_snapshot(fx, "pk_t"))
        .await;
    assert_eq!(
        s.rows("SELECT id, name, score FROM \"pk_t$lake\"").await,
        expected_rows(fx, "pk_t", &["id", "name", "score"])
    );
    // a table the catalog does not have has no lake yet: its log alone is read
    s.sql(&format!(
        "CREATE TABLE fluss.other (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '1', {})",
        catalog("")
    ))
    .await;
    s.sql("INSERT INTO other VALUES (1)").await;
    assert_eq!(s.rows("SELECT id FROM other").await, vec![json!({"id": 1})]);
}

/// pyiceberg's manifests of a table with equality deletes, applied by the script.
fn pyiceberg_row_deltas(table_dir: &Path) -> Option<Value> {
    python_json("read_iceberg_row_deltas.py", table_dir)
}

/// A primary-key table tiered to Iceberg by the LocalStore over several rounds of
/// upserts and deletes: each round is a row delta (data + equality deletes with the
/// round's sequence number). The lake read through the `iceberg` crate's reader and
/// pyiceberg's manifests (deletes applied by the script, by the spec's rule) both
/// equal the model as of the last tiering; the union read equals the model.
#[tokio::test]
async fn a_primary_key_table_tiered_to_iceberg_reads_back_through_pyiceberg_and_iceberg_rust() {
    let s = Store::new().await;
    s.sql(
        "CREATE TABLE fluss.kv (id BIGINT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '3', 'table.datalake.enabled' = 'true', \
         'table.datalake.format' = 'iceberg')",
    )
    .await;
    let mut model = std::collections::BTreeMap::<i64, (String, i64)>::new();
    let mut lake_model = model.clone();
    // rounds of (upserts, deletes); later rounds revisit earlier keys
    for round in 0..4i64 {
        for step in 0..3i64 {
            let values: Vec<String> = (0..6)
                .map(|i| {
                    let id = (round * 5 + step * 7 + i * 3) % 17;
                    let n = round * 100 + step * 10 + i;
                    model.insert(id, (format!("r{round}s{step}"), n));
                    format!("({id}, 'r{round}s{step}', {n})")
                })
                .collect();
            s.sql(&format!("INSERT INTO kv VALUES {}", values.join(", ")))
                .await;
            let gone = (round * 3 + step * 5) % 17;
            s.sql(&format!("DELETE FROM kv WHERE id = {gone}")).await;
            model.remove(&gone);
        }
        if round < 3 {
            s.sql("CALL fluss.tier('kv')").await;
            lake_model = model.clone();
        }
    }
    let render = |m: &std::collections::BTreeMap<i64, (String, i64)>| -> Vec<Value> {
        m.iter()
            .map(|(id, (v, n))| json!({"id": id, "v": v, "n": n}))
            .collect()
    };
    assert_eq!(s.rows("SELECT id, v, n FROM kv").await, render(&model));
    assert_eq!(
        s.rows("SELECT id, v, n FROM \"kv$lake\"").await,
        render(&lake_model)
    );

    let Some(theirs) = pyiceberg_row_deltas(&s.dir.path().join("lake/iceberg/fluss/kv")) else {
        return;
    };
    let their_rows: Vec<Value> = theirs["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!({"id": r["id"], "v": r["v"], "n": r["n"]}))
        .collect();
    assert_eq!(common::sort_rows(their_rows), render(&lake_model));
    // three row deltas, sequence numbers 1..=3, with Fluss's summary entries
    let snapshots = theirs["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 3, "{snapshots:?}");
    for (i, snapshot) in snapshots.iter().enumerate() {
        assert_eq!(snapshot["operation"], "overwrite");
        assert_eq!(snapshot["sequence_number"], i as i64 + 1);
        assert_eq!(snapshot["summary"]["commit-user"], "__fluss_lake_tiering");
        let offsets = snapshot["summary"]["fluss-offsets"].as_str().unwrap();
        assert!(s.dir.path().join(offsets).exists(), "{offsets}");
    }
    // equality deletes on the key's field id (1), in every round
    let files = theirs["files"].as_array().unwrap();
    let deletes: Vec<&Value> = files
        .iter()
        .filter(|f| f["content"] == "EQUALITY_DELETES")
        .collect();
    assert!(!deletes.is_empty(), "{files:?}");
    assert!(deletes.iter().all(|f| f["equality_ids"] == json!([1])));
    for seq in 1..=3 {
        assert!(
            deletes.iter().any(|f| f["sequence_number"] == seq),
            "{files:?}"
        );
    }
}

/// A partition expired from Fluss (its registration and log gone, as retention or
/// `DROP PARTITION` leave it) is still in the lake: the union read takes it from
/// there, for log and primary-key tables and both lake formats.
#[tokio::test]
async fn a_partition_only_in_the_lake_is_read_from_the_lake() {
    for (format, pk) in [
        ("iceberg", false),
        ("iceberg", true),
        ("paimon", false),
        ("paimon", true),
    ] {
        let s = Store::new().await;
        let key = if pk {
            ", PRIMARY KEY (dt, id) NOT ENFORCED"
        } else {
            ""
        };
        s.sql(&format!(
            "CREATE TABLE fluss.t (dt STRING, id BIGINT, v STRING{key}) PARTITIONED BY (dt) \
             WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', \
             'table.datalake.format' = '{format}')"
        ))
        .await;
        s.sql("INSERT INTO t VALUES ('d1', 1, 'a'), ('d1', 2, 'b'), ('d2', 3, 'c')")
            .await;
        s.sql("CALL fluss.tier('t')").await;
        s.sql("INSERT INTO t VALUES ('d2', 4, 'd')").await;
        // expire partition d1 from Fluss
        let table_dir = s.dir.path().join("zk/metadata/databases/fluss/tables/t");
        std::fs::remove_file(table_dir.join("partitions/d1.json")).unwrap();
        let data = s.dir.path().join("data/fluss");
        for entry in std::fs::read_dir(&data).unwrap() {
            for p in std::fs::read_dir(entry.unwrap().path()).unwrap() {
                let p = p.unwrap().path();
                if p.file_name().unwrap().to_string_lossy().starts_with("d1-") {
                    std::fs::remove_dir_all(p).unwrap();
                }
            }
        }
        let case = format!("{format} pk={pk}");
        assert_eq!(
            s.rows("SELECT dt, id, v FROM t").await,
            vec![
                json!({"dt": "d1", "id": 1, "v": "a"}),
                json!({"dt": "d1", "id": 2, "v": "b"}),
                json!({"dt": "d2", "id": 3, "v": "c"}),
                json!({"dt": "d2", "id": 4, "v": "d"}),
            ],
            "{case}"
        );
        assert_eq!(
            s.rows("SELECT id FROM t WHERE dt = 'd1'").await,
            vec![json!({"id": 1}), json!({"id": 2})],
            "{case}"
        );
    }
}

/// A REST catalog (`tests/python/rest_catalog_server.py`, the REST spec's read
/// endpoints over pyiceberg's hadoop-layout tables, on 127.0.0.1) with a bearer
/// token: the table loads through it, and a wrong token is a clear error that does
/// not show either token; EXPLAIN does not show it.
#[tokio::test]
async fn the_rest_catalog_loads_tables_with_a_token_it_never_shows() {
    let Some(fx) = fixtures() else { return };
    let fx = fx.path();
    let Some(python) = common::venv_python() else {
        return;
    };
    let token = "t0ken-s3cr3t-4242";
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/rest_catalog_server.py");
    let mut server = std::process::Command::new(python)
        .arg(script)
        .arg(fx.join("hadoop"))
        .arg(token)
        .args(["--ttl", "300"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let port = {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        line.trim()
            .parse::<u16>()
            .expect("the server prints its port")
    };
    let s = Store::new().await;
    let table = |name: &str, token: &str| {
        format!(
            "CREATE TABLE fluss.{name} (id BIGINT, name STRING, score INT, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', \
             'table.datalake.format' = 'iceberg', 'table.datalake.iceberg.type' = 'rest', \
             'table.datalake.iceberg.uri' = 'http://127.0.0.1:{port}', \
             'table.datalake.iceberg.token' = '{token}')"
        )
    };
    s.sql(&table("pk_t", token)).await;
    s.register_snapshot("pk_t", latest_snapshot(fx, "pk_t"))
        .await;
    assert_eq!(
        s.rows("SELECT id, name, score FROM \"pk_t$lake\"").await,
        expected_rows(fx, "pk_t", &["id", "name", "score"])
    );
    let explain = common::render_rows(&s.sql("EXPLAIN SELECT * FROM pk_t").await);
    assert!(!format!("{explain:?}").contains(token), "{explain:?}");

    // a wrong token: the catalog refuses, the error names the uri, no token shown
    let s2 = Store::new().await;
    let wrong = "wr0ng-t0ken-1313";
    s2.sql(&table("pk_t", wrong)).await;
    s2.register_snapshot("pk_t", latest_snapshot(fx, "pk_t"))
        .await;
    let error = match s2.session.execute("SELECT * FROM pk_t").await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a wrong token must fail"),
    };
    assert!(
        error.contains("rest catalog") && error.contains(&port.to_string()),
        "{error}"
    );
    assert!(!error.contains(wrong) && !error.contains(token), "{error}");
    drop(server.stdin.take());
    let _ = server.wait();
}

/// Damaged Iceberg lakes are errors naming the file, never fewer rows: metadata that
/// does not parse, a version hint past the last metadata file, a missing manifest,
/// a missing data file.
#[tokio::test]
async fn a_damaged_iceberg_lake_is_an_error_naming_the_file() {
    type Damage = fn(&Path) -> String;
    let cases: [(&str, Damage); 4] = [
        ("metadata that does not parse", |m| {
            let f = m.join("v3.metadata.json");
            std::fs::write(&f, "{not json").unwrap();
            f.display().to_string()
        }),
        ("a version hint past the last metadata file", |m| {
            std::fs::write(m.join("version-hint.text"), "9").unwrap();
            m.join("v9.metadata.json").display().to_string()
        }),
        ("a missing manifest", |m| {
            let manifest = std::fs::read_dir(m)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().ends_with("-m0.avro"))
                .unwrap();
            std::fs::remove_file(&manifest).unwrap();
            manifest.display().to_string()
        }),
        ("a missing data file", |m| {
            // The largest file is a data file: the directory also holds the first
            // round's equality deletes, which apply to no data file (a delete only
            // applies to older sequence numbers), so a read need not open them.
            let data = m.parent().unwrap().join("data/id_bucket=0");
            let file = std::fs::read_dir(&data)
                .unwrap()
                .map(|e| e.unwrap().path())
                .max_by_key(|p| std::fs::metadata(p).unwrap().len())
                .unwrap();
            std::fs::remove_file(&file).unwrap();
            file.file_name().unwrap().to_string_lossy().to_string()
        }),
    ];
    for (case, damage) in cases {
        let s = Store::new().await;
        s.sql(
            "CREATE TABLE fluss.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '1', 'table.datalake.enabled' = 'true', \
             'table.datalake.format' = 'iceberg')",
        )
        .await;
        s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')").await;
        s.sql("CALL fluss.tier('t')").await;
        s.sql("INSERT INTO t VALUES (2, 'c')").await;
        s.sql("CALL fluss.tier('t')").await;
        let named = damage(&s.dir.path().join("lake/iceberg/fluss/t/metadata"));
        for sql in ["SELECT * FROM t", "SELECT * FROM \"t$lake\""] {
            let error = match s.session.execute(sql).await {
                Err(e) => e.to_string(),
                Ok(b) => panic!(
                    "{case} ({named}): {sql} gave {} rows",
                    common::render_rows(&b).len()
                ),
            };
            assert!(error.contains(&named), "{case}: {error}");
        }
    }
}

/// pyiceberg tables whose equality-delete file is damaged (`gen_iceberg_fixtures.py`):
/// its manifest entry names a field id the table lacks, or its column carries another
/// field id than the one named. iceberg 0.10.1's reader would apply a delete that
/// matches nothing (the missing column read as nulls), bringing the deleted row
/// back; the read is an error naming the delete file, for the union table and
/// `t$lake`.
#[tokio::test]
async fn an_equality_delete_file_with_unknown_field_ids_is_an_error_naming_it() {
    let Some(fx) = fixtures() else { return };
    let fx = fx.path();
    for (table, says) in [
        ("pk_unknown_eq_ids", "names field id 99"),
        ("pk_eq_file_without_key", "has no column with field id 1"),
    ] {
        let s = Store::new().await;
        s.sql(&format!(
            "CREATE TABLE fluss.{table} (id BIGINT, name STRING, score INT, \
             PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', \
             'table.datalake.format' = 'iceberg', 'table.datalake.iceberg.warehouse' = '{}')",
            warehouse(fx)
        ))
        .await;
        s.register_snapshot(table, latest_snapshot(fx, table)).await;
        for sql in [
            format!("SELECT * FROM {table}"),
            format!("SELECT * FROM \"{table}$lake\""),
        ] {
            let error = match s.session.execute(&sql).await {
                Err(e) => e.to_string(),
                Ok(b) => panic!("{sql} gave {} rows", common::render_rows(&b).len()),
            };
            assert!(error.contains(says), "{sql}: {error}");
            assert!(error.contains("eq-deletes.parquet"), "{sql}: {error}");
            assert!(error.contains(&format!("fluss.{table}")), "{sql}: {error}");
        }
    }
}

/// A pyiceberg table whose columns `a` and `b` swapped names between two appends,
/// field ids kept (`gen_iceberg_fixtures.py`): the older file holds field 2 under
/// the name `a`, which is `b` now. Its rows read by field id, as pyiceberg reads
/// them, through DataFusion's parquet source (no merge-on-read), and filters on the
/// renamed columns select by field id too (matching by name would swap the values).
#[tokio::test]
async fn renamed_iceberg_columns_read_by_field_id_through_the_parquet_source() {
    let Some(fx) = fixtures() else { return };
    let fx = fx.path();
    let s = Store::new().await;
    s.sql(&format!(
        "CREATE TABLE fluss.swapped_t (id BIGINT, a STRING, b STRING) \
         WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', \
         'table.datalake.format' = 'iceberg', 'table.datalake.iceberg.warehouse' = '{}')",
        warehouse(fx)
    ))
    .await;
    s.register_snapshot("swapped_t", latest_snapshot(fx, "swapped_t"))
        .await;
    let lake = expected_rows(fx, "swapped_t", &["id", "a", "b"]);
    assert_eq!(lake.len(), 6);
    assert_eq!(lake[1], json!({"id": 1, "a": "b1", "b": "a1"}));
    assert_eq!(s.rows("SELECT id, a, b FROM swapped_t").await, lake);
    assert_eq!(
        s.rows("SELECT id, a, b FROM \"swapped_t$lake\"").await,
        lake
    );
    for (sql, id) in [
        ("SELECT id FROM swapped_t WHERE a = 'b1'", 1),
        ("SELECT id FROM swapped_t WHERE b = 'a1'", 1),
        ("SELECT id FROM swapped_t WHERE a = 'a4'", 4),
        ("SELECT id FROM \"swapped_t$lake\" WHERE b = 'b5'", 5),
    ] {
        assert_eq!(s.rows(sql).await, vec![json!({ "id": id })], "{sql}");
    }
    let plan = format!(
        "{:?}",
        common::render_rows(
            &s.sql("EXPLAIN SELECT * FROM swapped_t WHERE a = 'b1'")
                .await
        )
    );
    assert!(plan.contains("DataSourceExec"), "{plan}");
    assert!(!plan.contains("FlussLakeMergeExec"), "{plan}");
    // The same over two workers: the shipped parquet scan gets its field ids back
    // (DataFusion's plan serialization drops the adapter that matches by them).
    let distributed = super::distributed_workers::over_two_workers(s.store.clone()).await;
    let rows = |sql: &'static str| {
        let session = &distributed.session;
        async move { common::sort_rows(common::render_rows(&session.execute(sql).await.unwrap())) }
    };
    assert_eq!(rows("SELECT id, a, b FROM swapped_t").await, lake);
    assert_eq!(
        rows("SELECT id FROM swapped_t WHERE a = 'b1'").await,
        vec![json!({ "id": 1 })]
    );
    let explain = format!(
        "{:?}",
        common::render_rows(
            &distributed
                .session
                .execute("EXPLAIN SELECT id, a, b FROM swapped_t")
                .await
                .unwrap()
        )
    );
    assert!(explain.contains("FlussFieldIdScanExec"), "{explain}");
    assert!(explain.contains("tasks=2"), "{explain}");
}
