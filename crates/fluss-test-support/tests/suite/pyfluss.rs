//! A second, independent client: the official Apache Fluss Python client (pyfluss 1.0,
//! installed into the repository's `.venv` by `tests/python/setup_venv.sh`) reads a served
//! LocalStore through `tests/python/pyfluss_read.py`.
//!
//! Skipped (with a message) when the venv or pyfluss is missing, unless
//! `FLUSS_REQUIRE_PYTHON=1`, which makes that a failure.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fluss_datafusion::sql::FlussSession;
use fluss_datafusion::{FlussSource, LocalStore};
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::server::{ServerConfig, TestServer};
use serde_json::{Value, json};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn skip_or_fail(why: &str) -> Option<PathBuf> {
    if std::env::var("FLUSS_REQUIRE_PYTHON").is_ok_and(|v| v == "1") {
        panic!("{why}: run tests/python/setup_venv.sh");
    }
    eprintln!("skipping: {why} (run tests/python/setup_venv.sh)");
    None
}

/// The venv's Python with pyfluss importable (`tests/integration/common.rs::venv_python` of
/// the root package, plus the pyfluss check).
fn venv_python() -> Option<PathBuf> {
    let python = repo_root().join(".venv/bin/python");
    if !python.exists() {
        return skip_or_fail("no Python venv");
    }
    let import = std::process::Command::new(&python)
        .args(["-c", "import fluss; fluss.FlussConnection"])
        .output()
        .expect("python runs");
    if !import.status.success() {
        return skip_or_fail(&format!(
            "pyfluss is not installed in the venv: {}",
            String::from_utf8_lossy(&import.stderr).trim()
        ));
    }
    Some(python)
}

async fn pyfluss_read(python: &Path, server: &TestServer, table: &str) -> Value {
    let script = repo_root().join("tests/python/pyfluss_read.py");
    let child = tokio::process::Command::new(python)
        // a crash of the native extension prints the Python stack
        .args(["-X", "faulthandler"])
        .arg(&script)
        .args(["--bootstrap-servers", &server.bootstrap_servers()])
        .args(["--table", table, "--timeout", "60"])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), child)
        .await
        .expect("pyfluss_read.py finishes in time")
        .expect("pyfluss_read.py runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pyfluss_read.py --table {table} failed ({}):\n{stderr}\nstdout: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn api_name(key: i16) -> String {
    match key {
        1000 => "ApiVersions".into(),
        1003 => "ListDatabases".into(),
        1004 => "DatabaseExists".into(),
        1007 => "GetTableInfo".into(),
        1008 => "ListTables".into(),
        1009 => "ListPartitionInfos".into(),
        1010 => "TableExists".into(),
        1011 => "GetTableSchema".into(),
        1012 => "MetaData".into(),
        1015 => "FetchLog".into(),
        1021 => "ListOffsets".into(),
        1032 => "GetLakeSnapshot".into(),
        1038 => "Authenticate".into(),
        other => other.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyfluss_reads_a_served_local_store() {
    let Some(python) = venv_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap(),
    );
    let session = FlussSession::new(store.clone() as Arc<dyn FlussSource>)
        .await
        .unwrap();
    session
        .execute(
            "CREATE DATABASE db;
             CREATE DATABASE other;
             CREATE TABLE db.logs (id BIGINT, name STRING, score INT)
               WITH ('bucket.num' = '2', 'bucket.key' = 'id');
             INSERT INTO db.logs VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', NULL);
             INSERT INTO db.logs VALUES (4, 'd', 40), (5, 'e', 50);
             CREATE TABLE db.kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)
               WITH ('bucket.num' = '1');
             INSERT INTO db.kv VALUES (1, 'x'), (2, 'y');
             INSERT INTO db.kv VALUES (1, 'z');
             DELETE FROM db.kv WHERE id = 2;
             CREATE TABLE other.t (a INT);",
        )
        .await
        .unwrap();
    let cluster = load_local_store(&store).await.unwrap();
    let server = TestServer::start(Arc::new(cluster), ServerConfig::default())
        .await
        .unwrap();

    let out = pyfluss_read(&python, &server, "db.logs").await;
    let keys = server.received_api_keys();
    server.clear_received_api_keys();
    println!(
        "pyfluss ({}) sent: {:?}",
        out["client"],
        keys.iter().map(|&k| api_name(k)).collect::<Vec<_>>()
    );
    eprintln!("{out:#}");

    // databases and tables, as the store lists them
    let mut databases = store.list_databases().await.unwrap();
    databases.sort();
    let mut got: Vec<String> = serde_json::from_value(out["databases"].clone()).unwrap();
    got.sort();
    assert_eq!(got, databases);
    for db in &databases {
        let mut want = store.list_tables(db).await.unwrap();
        want.sort();
        let mut got: Vec<String> = serde_json::from_value(out["tables"][db].clone())
            .unwrap_or_else(|e| panic!("tables of {db}: {e}"));
        got.sort();
        assert_eq!(got, want, "tables of {db}");
    }
    assert_eq!(out["tables"]["other"], json!(["t"]));

    // the table as the store describes it
    let logs = store
        .get_table(&fluss::metadata::TablePath::new("db", "logs"))
        .await
        .unwrap();
    assert_eq!(out["table"]["table_id"], json!(logs.table_id()));
    assert_eq!(out["table"]["num_buckets"], json!(2));
    assert_eq!(out["table"]["bucket_keys"], json!(["id"]));
    assert_eq!(out["table"]["primary_keys"], json!([]));
    let columns: Vec<String> = out["table"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(columns, vec!["id", "name", "score"]);

    // offsets as the store reports them
    let buckets = store.buckets(&logs).await.unwrap();
    let offsets = store.bucket_offsets(&logs, &buckets).await.unwrap();
    for (b, o) in buckets.iter().zip(&offsets) {
        assert_eq!(
            out["offsets"][b.bucket.to_string()],
            json!([o.earliest, o.high_watermark]),
            "bucket {}",
            b.bucket
        );
    }

    // every row, once, in offset order within its bucket, append-only
    let records = out["records"].as_array().unwrap();
    assert_eq!(records.len(), 5, "{records:?}");
    for r in records {
        assert_eq!(r["change_type"], "+A", "{r}");
    }
    for (b, o) in buckets.iter().zip(&offsets) {
        let got: Vec<i64> = records
            .iter()
            .filter(|r| r["bucket"] == json!(b.bucket))
            .map(|r| r["offset"].as_i64().unwrap())
            .collect();
        let want: Vec<i64> = (o.earliest..o.high_watermark).collect();
        assert_eq!(got, want, "offsets read from bucket {}", b.bucket);
    }
    let mut rows: Vec<Value> = records.iter().map(|r| r["row"].clone()).collect();
    rows.sort_by_key(|r| r["id"].as_i64());
    let want = json!([
        {"id": 1, "name": "a", "score": 10},
        {"id": 2, "name": "b", "score": 20},
        {"id": 3, "name": "c", "score": null},
        {"id": 4, "name": "d", "score": 40},
        {"id": 5, "name": "e", "score": 50},
    ]);
    assert_eq!(Value::Array(rows), want);
    let mut arrow_rows = out["arrow_rows"].as_array().unwrap().clone();
    arrow_rows.sort_by_key(|r| r["id"].as_i64());
    assert_eq!(Value::Array(arrow_rows), want);

    // a primary-key table's changelog
    let out = pyfluss_read(&python, &server, "db.kv").await;
    assert_eq!(out["table"]["primary_keys"], json!(["id"]));
    let changes: Vec<(String, Value)> = out["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["change_type"].as_str().unwrap().to_string(),
                r["row"].clone(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        vec![
            ("+I".into(), json!({"id": 1, "v": "x"})),
            ("+I".into(), json!({"id": 2, "v": "y"})),
            ("-U".into(), json!({"id": 1, "v": "x"})),
            ("+U".into(), json!({"id": 1, "v": "z"})),
            ("-D".into(), json!({"id": 2, "v": "y"})),
        ]
    );
}
