//! Several processes writing one store: the writer lock serializes their statements,
//! so no write is lost or torn, table ids stay unique, and tiering never runs twice
//! over the same offsets. The processes are this test binary started again with
//! `FLUSS_TEST_CHILD` naming what to do.

use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use fluss_datafusion::source::{LocalStore, LocalStoreOptions};
use fluss_datafusion::sql::FlussSession;

const CHILD: &str = "FLUSS_TEST_CHILD";

async fn session(root: &str) -> FlussSession {
    let store = LocalStore::open(root).await.unwrap();
    FlussSession::new(Arc::new(store)).await.unwrap()
}

fn count(batches: &[RecordBatch]) -> i64 {
    batches[0].column(0).as_primitive::<Int64Type>().value(0)
}

/// The child side: `<action> <root> <arg>`.
#[tokio::test]
async fn child() {
    let Ok(task) = std::env::var(CHILD) else {
        return;
    };
    let parts: Vec<&str> = task.splitn(3, ' ').collect();
    let session = session(parts[1]).await;
    match parts[0] {
        "insert" => {
            let tag: i64 = parts[2].parse().unwrap();
            for i in 0..25 {
                let id = tag * 1000 + i;
                session
                    .execute(&format!(
                        "INSERT INTO t VALUES ({id}, 'p{tag}'), ({}, 'p{tag}'), ({}, 'p{tag}')",
                        id + 100,
                        id + 200
                    ))
                    .await
                    .unwrap();
            }
        }
        "create" => {
            session
                .execute(&format!(
                    "CREATE TABLE {} (id BIGINT, who STRING) WITH ('bucket.num' = '2')",
                    parts[2]
                ))
                .await
                .unwrap();
            session
                .execute(&format!("INSERT INTO {0} VALUES (1, '{0}')", parts[2]))
                .await
                .unwrap();
        }
        "tier" => {
            session.execute("CALL fluss.tier('t')").await.unwrap();
        }
        other => panic!("unknown child task {other}"),
    }
}

fn spawn(task: String) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "concurrent_writers::child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, task)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_all(children: Vec<Child>) {
    for mut child in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a writer process failed: {status}");
    }
}

async fn new_store() -> (tempfile::TempDir, String, FlussSession) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    let session = session(&root).await;
    (dir, root, session)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_processes_inserting_into_one_table_lose_nothing() {
    let (_dir, root, session) = new_store().await;
    session
        .execute("CREATE TABLE t (id BIGINT, v STRING) WITH ('bucket.num' = '3')")
        .await
        .unwrap();
    let children = (1..=2)
        .map(|tag| spawn(format!("insert {root} {tag}")))
        .collect();
    wait_all(children);
    let fresh = self::session(&root).await;
    let rows = fresh.execute("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(count(&rows), 2 * 25 * 3);
    let distinct = fresh
        .execute("SELECT count(DISTINCT id) FROM t")
        .await
        .unwrap();
    assert_eq!(count(&distinct), 2 * 25 * 3);
    // and the log is still writable afterwards
    fresh
        .execute("INSERT INTO t VALUES (0, 'x')")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_create_table_hands_out_distinct_ids() {
    let (_dir, root, session) = new_store().await;
    let children = (0..8)
        .map(|i| spawn(format!("create {root} t{i}")))
        .collect();
    wait_all(children);
    let mut ids = Vec::new();
    for i in 0..8 {
        let rows = session
            .execute(&format!("SELECT who FROM t{i}"))
            .await
            .unwrap();
        let who = rows[0].column(0).as_string_view();
        assert_eq!(rows[0].num_rows(), 1, "t{i} holds exactly its own row");
        assert_eq!(who.value(0), format!("t{i}"));
        let json = std::fs::read_to_string(format!(
            "{root}/zk/metadata/databases/fluss/tables/t{i}.json"
        ))
        .unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        ids.push(value["table_id"].as_i64().unwrap());
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 8, "table ids: {ids:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_tiering_never_doubles_rows() {
    let (_dir, root, session) = new_store().await;
    session
        .execute(
            "CREATE TABLE t (id BIGINT, v STRING) \
             WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
        )
        .await
        .unwrap();
    session
        .execute("INSERT INTO t SELECT value, 'x' FROM generate_series(1, 500)")
        .await
        .unwrap();
    let children = (0..2).map(|_| spawn(format!("tier {root} -"))).collect();
    wait_all(children);
    let fresh = self::session(&root).await;
    let rows = fresh.execute("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(count(&rows), 500);
    let lake = fresh
        .execute("SELECT count(*) FROM \"t$lake\"")
        .await
        .unwrap();
    assert_eq!(count(&lake), 500);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_writer_that_cannot_get_the_lock_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let holder = Arc::new(LocalStore::open(root).await.unwrap());
    let session = FlussSession::new(holder.clone()).await.unwrap();
    session
        .execute("CREATE TABLE t (id BIGINT) WITH ('bucket.num' = '1')")
        .await
        .unwrap();
    let held = holder
        .storage()
        .lock_writer(Duration::from_secs(1))
        .await
        .unwrap();
    let options = LocalStoreOptions {
        lock_timeout: Duration::from_millis(200),
        ..Default::default()
    };
    let waiting = LocalStore::open_with_options(root, options).await.unwrap();
    let other = FlussSession::new(Arc::new(waiting)).await;
    let e = match other {
        Err(e) => e,
        Ok(other) => other.execute("INSERT INTO t VALUES (1)").await.unwrap_err(),
    };
    assert_eq!(e.kind(), fluss_datafusion::ErrorKind::Busy);
    assert!(
        e.to_string()
            .contains(&format!("store is locked by pid {}", std::process::id())),
        "{e}"
    );
    // readers never wait for the lock
    let rows = session.execute("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(count(&rows), 0);
    drop(held);
    let rows = session.execute("INSERT INTO t VALUES (1)").await.unwrap();
    assert_eq!(rows[0].num_rows(), 1);
}
