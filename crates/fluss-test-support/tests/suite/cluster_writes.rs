//! The library's cluster writes (fluss-rs's `AppendWriter`, driven by a DataFusion
//! INSERT through the cluster source) against the RPC test server taking writes
//! (`fluss_test_support::writes::WritableCluster`), with the faults a real cluster
//! cannot be made to show on demand: a lost answer (the batches were appended), a
//! bucket that refuses for a while, a bucket that refuses for good. Every row is
//! written exactly once or named in the error; what the error says was acknowledged
//! is what a read finds.

use crate::common;

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

/// `db.users`: a primary-key table of three buckets.
const USERS: &str = "CREATE TABLE db.users (id BIGINT, name STRING, score INT, \
                     PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket.num' = '3')";

/// A server taking writes into an empty `db.events`, with the faults `faults` makes
/// from the table's id, and a session on it through the cluster source.
async fn cluster(
    faults: impl FnOnce(i64) -> Faults,
) -> (tempfile::TempDir, TestServer, FlussSession, i64) {
    cluster_of("events", EVENTS, faults).await
}

/// A server taking writes into an empty table `name` that `ddl` creates.
async fn cluster_of(
    name: &str,
    ddl: &str,
    faults: impl FnOnce(i64) -> Faults,
) -> (tempfile::TempDir, TestServer, FlussSession, i64) {
    let (dir, store) = common::sql_store(&["CREATE DATABASE db", ddl]).await;
    let model = load_local_store(&store).await.expect("the store loads");
    let table_id = model.table("db", name).expect("table").table_id;
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

/// The statements of a primary-key table's life, and what the table holds after them.
const USERS_WRITES: [&str; 5] = [
    "INSERT INTO db.users VALUES (1, 'ann', 10), (2, 'bob', 20), (3, 'cy', 30), (4, 'dee', 40), (5, 'ed', 50)",
    "INSERT INTO db.users (id, score) VALUES (1, 11), (6, 60)",
    "UPDATE db.users SET name = 'bobby' WHERE id IN (SELECT id FROM db.users WHERE score = 20)",
    "DELETE FROM db.users WHERE id = 3 OR id = 99",
    "MERGE INTO db.users u USING (SELECT 4 AS id, 44 AS score UNION ALL SELECT 7, 70) s \
     ON u.id = s.id WHEN MATCHED THEN UPDATE SET score = s.score \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'new', s.score)",
];
const USERS_AFTER: &str = "| 1 | ann | 11 |\n| 2 | bobby | 20 |\n| 4 | dee | 44 |\n\
                           | 5 | ed | 50 |\n| 6 | NULL | 60 |\n| 7 | new | 70 |\n";

/// Upserts, a partial-update INSERT, an UPDATE with a subquery, a DELETE (of a key
/// and of a missing one) and a MERGE go through fluss-rs's `UpsertWriter` as PutKv;
/// the server's changelog holds what a tablet server's would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_key_writes_apply_as_a_tablet_server_applies_them() {
    let (_dir, server, session, _) = cluster_of("users", USERS, |_| Faults::default()).await;
    for sql in USERS_WRITES {
        run(&session, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let all = "SELECT id, name, score FROM db.users ORDER BY id";
    assert_eq!(run(&session, all).await.unwrap(), USERS_AFTER);
    assert!(server.received_api_keys().contains(&api_key::PUT_KV));
    // 5 inserts; 1 update and 1 insert; 1 update; 1 delete; 1 update and 1 insert
    let changes = "SELECT _change_type, count(*) AS n FROM db.\"users$changelog\" \
                   GROUP BY _change_type ORDER BY _change_type";
    assert_eq!(
        run(&session, changes).await.unwrap(),
        "| delete | 1 |\n| insert | 7 |\n| update_after | 3 |\n| update_before | 3 |\n"
    );
}

/// The first PutKv's answer is lost: the retry is answered as the first was, and the
/// changelog holds each change once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_put_answer_is_retried_and_applied_once() {
    let (_dir, _server, session, _) =
        cluster_of("users", USERS, |_| Faults::default().close_after_produce(1)).await;
    run(&session, USERS_WRITES[0]).await.unwrap();
    let changelog = "SELECT count(*) FROM db.\"users$changelog\"";
    assert_eq!(run(&session, changelog).await.unwrap(), "| 5 |\n");
}

/// A bucket refusing upserts for good: the statement names the rows not acknowledged,
/// and a read finds exactly the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_refusing_upserts_names_their_rows() {
    let (_dir, _server, session, _) = cluster_of("users", USERS, |id| {
        Faults::default().produce_error(BucketRef::new(id, None, 0), 13, "too large", None)
    })
    .await;
    let rows: Vec<String> = (0..30).map(|i| format!("({i}, 'n{i}', {i})")).collect();
    let sql = format!("INSERT INTO db.users VALUES {}", rows.join(", "));
    let e = run(&session, &sql).await.unwrap_err().to_string();
    let text = run(&session, "SELECT id FROM db.users").await.unwrap();
    let written = text.lines().count();
    assert!(written > 0 && written < 30, "{text}");
    let acknowledged = format!("the {written} row(s) acknowledged stay written");
    assert!(e.contains(&acknowledged), "{e}\nread back: {text}");
    assert!(
        e.contains(&format!("{} row(s) written to 'db.users'", 30 - written)),
        "{e}"
    );
}
