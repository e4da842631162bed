//! The library's cluster writes (fluss-rs's `AppendWriter`, driven by a DataFusion
//! INSERT through the cluster source) against the RPC test server taking writes
//! (`fluss_test_support::writes::WritableCluster`), with the faults a real cluster
//! cannot be made to show on demand: a lost answer (the batches were appended), a
//! bucket that refuses for a while, a bucket that refuses for good. Every row is
//! written exactly once or named in the error; what the error says was acknowledged
//! is what a read finds.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::render;
use fluss_datafusion::source::{ClusterOptions, ClusterSource, FlussSource};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::faults::{BucketRef, Faults};
use fluss_test_support::frame::api_key;
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::model::ClusterModel;
use fluss_test_support::server::{ServerConfig, TestServer};
use fluss_test_support::writes::WritableCluster;

/// Longest any statement may take: past it, it hangs, which is a bug.
const STEP: Duration = Duration::from_secs(60);

/// `db.events`: a log table of three buckets, rows spread by their `id`.
const EVENTS: &str = "CREATE TABLE db.events (id BIGINT, kind STRING) \
                      WITH ('bucket.num' = '3', 'bucket.key' = 'id')";

/// A server taking writes into an empty `db.events`, with the faults `faults` makes
/// from the table's id, and a session on it through the cluster source.
async fn cluster(
    faults: impl FnOnce(i64) -> Faults,
) -> (tempfile::TempDir, TestServer, FlussSession, i64) {
    let (dir, store) = common::sql_store(&["CREATE DATABASE db", EVENTS]).await;
    let model = load_local_store(&store).await.expect("the store loads");
    let table_id = model.table("db", "events").expect("table").table_id;
    let config = ServerConfig {
        faults: faults(table_id),
        ..ServerConfig::default()
    };
    let server = TestServer::start(Arc::new(WritableCluster::new(model)), config)
        .await
        .expect("server starts");
    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: server.bootstrap_servers(),
        ..Default::default()
    })
    .await
    .expect("the cluster source connects");
    let session = FlussSession::new(Arc::new(source)).await.expect("session");
    (dir, server, session, table_id)
}

/// `INSERT` of ids `0..n` (kind = `k<id>`).
fn insert(n: usize) -> String {
    let rows: Vec<String> = (0..n).map(|i| format!("({i}, 'k{i}')")).collect();
    format!("INSERT INTO db.events VALUES {}", rows.join(", "))
}

async fn run(session: &FlussSession, sql: &str) -> fluss_datafusion::Result<String> {
    tokio::time::timeout(STEP, session.execute(sql))
        .await
        .unwrap_or_else(|_| panic!("{sql} hangs"))
        .map(|batches| render(&batches))
}

/// The ids of `db.events`, sorted, as read back through the cluster.
async fn ids(session: &FlussSession) -> Vec<i64> {
    let text = run(session, "SELECT id FROM db.events ORDER BY id")
        .await
        .expect("read back");
    text.lines()
        .map(|l| l.trim_matches(|c| c == '|' || c == ' ').parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appended_rows_are_read_back_from_their_buckets() {
    let (_dir, server, session, table_id) = cluster(|_| Faults::default()).await;
    assert_eq!(run(&session, &insert(40)).await.unwrap(), "| 40 |\n");
    assert_eq!(ids(&session).await, (0..40).collect::<Vec<_>>());
    // through ProduceLog, as an idempotent writer, into every bucket
    let keys = server.received_api_keys();
    assert!(keys.contains(&api_key::INIT_WRITER), "{keys:?}");
    assert!(keys.contains(&api_key::PRODUCE_LOG), "{keys:?}");
    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: server.bootstrap_servers(),
        ..Default::default()
    })
    .await
    .unwrap();
    let table = source
        .get_table(&fluss::metadata::TablePath::new("db", "events"))
        .await
        .unwrap();
    assert_eq!(table.table_id(), table_id);
    let buckets = source.buckets(&table).await.unwrap();
    let offsets = source.bucket_offsets(&table, &buckets).await.unwrap();
    assert_eq!(offsets.iter().map(|o| o.high_watermark).sum::<i64>(), 40);
    assert!(offsets.iter().all(|o| o.high_watermark > 0), "{offsets:?}");
}

/// The server appends the first ProduceLog's batches, then drops the connection: the
/// client retries them, and the server answers the retry with the offset they got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_retried_and_the_rows_are_written_once() {
    let (_dir, server, session, _) = cluster(|_| Faults::default().close_after_produce(1)).await;
    assert_eq!(run(&session, &insert(30)).await.unwrap(), "| 30 |\n");
    assert_eq!(ids(&session).await, (0..30).collect::<Vec<_>>());
    // the lost answer's batches were sent again
    let produced = server
        .received_api_keys()
        .iter()
        .filter(|k| **k == api_key::PRODUCE_LOG)
        .count();
    assert!(produced >= 2, "{produced} ProduceLog requests");
}

/// A bucket whose leader moved answers NOT_LEADER_OR_FOLLOWER twice: the client learns
/// the leader again and retries, and every row is written once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_refusing_for_a_while_is_retried() {
    let (_dir, _server, session, _) = cluster(|id| {
        Faults::default().produce_error(
            BucketRef::new(id, None, 1),
            12,
            "Leader is not local",
            Some(2),
        )
    })
    .await;
    assert_eq!(run(&session, &insert(30)).await.unwrap(), "| 30 |\n");
    assert_eq!(ids(&session).await, (0..30).collect::<Vec<_>>());
}

/// A bucket refusing for good (RECORD_TOO_LARGE, not retriable): the statement fails
/// naming the rows not acknowledged, and a read finds exactly the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_refusing_for_good_fails_the_statement_naming_its_rows() {
    let (_dir, _server, session, _) = cluster(|id| {
        Faults::default().produce_error(
            BucketRef::new(id, None, 1),
            13,
            "The record is too large",
            None,
        )
    })
    .await;
    let e = run(&session, &insert(30)).await.unwrap_err().to_string();
    assert!(e.contains("were not acknowledged"), "{e}");
    assert!(e.contains("too large"), "{e}");
    let written = ids(&session).await;
    assert!(!written.is_empty() && written.len() < 30, "{written:?}");
    // the error counts what stayed written, and names every row that did not
    let acknowledged = format!("the {} row(s) acknowledged stay written", written.len());
    assert!(e.contains(&acknowledged), "{e}\nread back: {written:?}");
    let lost = format!("{} row(s) written to 'db.events'", 30 - written.len());
    assert!(e.contains(&lost), "{e}");
}
