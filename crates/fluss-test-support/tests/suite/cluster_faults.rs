//! Fault cases of the library's cluster source (issue 13) against the RPC test server
//! with injected faults (`fluss_test_support::faults`): a dropped, cut or stalled
//! FetchLog, a bucket whose leader is elsewhere or gone, and damaged log batches. Each
//! is an error naming the server (`host:port`) or the table and bucket, and never a
//! partial result; none hangs.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fluss::rpc::FlussError;
use fluss_datafusion::LocalStore;
use fluss_datafusion::log::BatchIterator;
use fluss_datafusion::source::{ClusterOptions, ClusterSource};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::faults::{BucketRef, Faults, FetchMatch};
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::model::{ClusterModel, ServedLog};
use fluss_test_support::server::{ServerConfig, TestServer};

/// Longest any step of a test may take: past it the step hangs, which is a bug.
const STEP: Duration = Duration::from_secs(30);

const ALL_T: &str = "SELECT * FROM db.t";
const ALL_TWO: &str = "SELECT * FROM db.two";

/// `db.t`: one bucket, batches at offsets 0 (3 rows), 3 (2 rows) and 5 (2 rows);
/// `db.two`: two buckets with rows in both. No lakes: every row comes from FetchLog.
async fn store() -> (tempfile::TempDir, Arc<LocalStore>) {
    common::sql_store(&[
        "CREATE DATABASE db",
        "CREATE TABLE db.t (id BIGINT, name STRING, score INT) WITH ('bucket.num' = '1')",
        "INSERT INTO db.t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)",
        "INSERT INTO db.t VALUES (4, 'd', 40), (5, 'e', 50)",
        "INSERT INTO db.t VALUES (6, 'f', 60), (7, 'g', 70)",
        "CREATE TABLE db.two (id BIGINT, tag STRING) WITH ('bucket.num' = '2')",
        "INSERT INTO db.two VALUES (1, 'p'), (2, 'q'), (3, 'r')",
        "INSERT INTO db.two VALUES (4, 's'), (5, 't'), (6, 'u')",
        "INSERT INTO db.two VALUES (7, 'v'), (8, 'w')",
    ])
    .await
}

async fn serve_model(model: impl ClusterModel, faults: Faults) -> TestServer {
    let config = ServerConfig {
        faults,
        ..ServerConfig::default()
    };
    TestServer::start(Arc::new(model), config)
        .await
        .expect("server starts")
}

/// Serves `store` with the faults `faults` makes from the table ids of `db.t` and
/// `db.two`.
async fn serve(store: &LocalStore, faults: impl FnOnce(i64, i64) -> Faults) -> TestServer {
    let model = load_local_store(store).await.expect("the store loads");
    let id = |name| model.table("db", name).expect("table").table_id;
    for bucket in [0, 1] {
        let log = model
            .log(id("two"), None, bucket)
            .expect("a bucket of db.two");
        assert!(
            log.high_watermark() > 0,
            "bucket {bucket} of db.two is empty"
        );
    }
    let faults = faults(id("t"), id("two"));
    serve_model(model, faults).await
}

/// A session over the cluster source, each fetch asking for one byte so that every
/// FetchLog answer holds one batch (several round trips per bucket).
async fn session(served: &TestServer, request_timeout: Option<Duration>) -> FlussSession {
    let options = ClusterOptions {
        bootstrap_servers: served.bootstrap_servers(),
        max_fetch_bytes: Some(1),
        ..ClusterOptions::default()
    };
    let mut source = tokio::time::timeout(STEP, ClusterSource::connect(options))
        .await
        .expect("connecting hangs")
        .expect("connects");
    if let Some(t) = request_timeout {
        source = source.with_request_timeout(t);
    }
    tokio::time::timeout(STEP, FlussSession::new(Arc::new(source)))
        .await
        .expect("the session hangs")
        .expect("a session")
}

async fn row_count(session: &FlussSession, sql: &str) -> usize {
    match tokio::time::timeout(STEP, session.execute(sql)).await {
        Err(_) => panic!("{sql} hangs"),
        Ok(Err(e)) => panic!("{sql}: {e}"),
        Ok(Ok(batches)) => batches.iter().map(|b| b.num_rows()).sum(),
    }
}

/// The error of `sql`; a hang or any rows at all fail the test.
async fn query_error(session: &FlussSession, sql: &str) -> String {
    match tokio::time::timeout(STEP, session.execute(sql)).await {
        Err(_) => panic!("{sql} hangs"),
        Ok(Err(e)) => e.to_string(),
        Ok(Ok(batches)) => panic!(
            "{sql} gave {} rows instead of an error",
            batches.iter().map(|b| b.num_rows()).sum::<usize>()
        ),
    }
}

fn assert_names(error: &str, parts: &[&str]) {
    for part in parts {
        assert!(error.contains(part), "no `{part}` in: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_closed_instead_of_an_answer_fails_the_query_and_the_next_one_reconnects() {
    let (_dir, store) = store().await;
    // the first answer (offsets 0..3) arrives; the second FetchLog gets a closed socket
    let served = serve(&store, |_, _| {
        Faults::default().close_on_fetch(FetchMatch::Nth(2))
    })
    .await;
    let session = session(&served, None).await;
    let server = served.bootstrap_servers();
    let error = query_error(&session, ALL_T).await;
    assert_names(
        &error,
        &[&server, "table: db.t", "bucket: 0", "fetch_offset: 3"],
    );
    // the fault was a one-off: a dropped connection is not reused
    assert_eq!(row_count(&session, ALL_T).await, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_inside_its_frame_fails_the_query_and_the_next_one_reconnects() {
    let (_dir, store) = store().await;
    for bytes in [2, 9, 40] {
        // inside the length prefix, the header, the body
        let served = serve(&store, |_, _| {
            Faults::default().cut_fetch_answer(FetchMatch::Nth(2), bytes)
        })
        .await;
        let session = session(&served, None).await;
        let server = served.bootstrap_servers();
        let error = query_error(&session, ALL_T).await;
        assert_names(&error, &[&server, "table: db.t", "bucket: 0"]);
        assert_eq!(row_count(&session, ALL_T).await, 7, "cut at {bytes}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_whose_fetches_are_always_dropped_fails_the_query() {
    let (_dir, store) = store().await;
    let served = serve(&store, |_, two| {
        Faults::default().close_on_fetch(FetchMatch::Bucket(BucketRef::new(two, None, 1)))
    })
    .await;
    let session = session(&served, None).await;
    let server = served.bootstrap_servers();
    for _ in 0..2 {
        let error = query_error(&session, ALL_TWO).await;
        assert_names(&error, &[&server, "table: db.two"]);
    }
    // the other table on the same server still reads
    assert_eq!(row_count(&session, ALL_T).await, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_never_answered_times_out_naming_the_server() {
    let (_dir, store) = store().await;
    let served = serve(&store, |_, _| {
        Faults::default().stall_fetch(FetchMatch::Nth(2))
    })
    .await;
    let session = session(&served, Some(Duration::from_millis(500))).await;
    let server = served.bootstrap_servers();
    let error = query_error(&session, ALL_T).await;
    assert_names(
        &error,
        &[&server, "did not answer", "table: db.t", "bucket: 0"],
    );
    // the stalled connection is dropped, not waited on again
    assert_eq!(row_count(&session, ALL_T).await, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_leader_and_leader_not_available_answers_name_the_bucket() {
    let (_dir, store) = store().await;
    for error in [
        FlussError::NotLeaderOrFollower,
        FlussError::LeaderNotAvailableException,
    ] {
        let code = error.code();
        let served = serve(&store, |_, two| {
            Faults::default().fetch_error(
                BucketRef::new(two, None, 1),
                code,
                format!("{error:?} for bucket 1"),
            )
        })
        .await;
        let session = session(&served, None).await;
        let server = served.bootstrap_servers();
        let message = query_error(&session, ALL_TWO).await;
        assert_names(
            &message,
            &[
                &server,
                &format!("error_code: {code}"),
                "table: db.two",
                "bucket: 1",
                "leader",
            ],
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_without_a_leader_for_a_bucket_is_an_error_naming_it() {
    let (_dir, store) = store().await;
    // unset, Fluss's "no leader", a node no tablet server listed has
    for leader in [None, Some(-1), Some(7)] {
        let served = serve(&store, |_, two| {
            Faults::default().leader(BucketRef::new(two, None, 1), leader)
        })
        .await;
        let session = session(&served, None).await;
        let error = query_error(&session, ALL_TWO).await;
        assert_names(&error, &["table: db.two", "bucket: 1", "no leader"]);
        assert_eq!(row_count(&session, ALL_T).await, 7, "leader {leader:?}");
    }
}

/// The batches of a served log as (base offset, byte range).
fn batches(records: &Bytes) -> Vec<(i64, std::ops::Range<usize>)> {
    let mut at = 0;
    BatchIterator::new(records.clone())
        .map(|b| {
            let b = b.expect("a batch");
            let range = at..at + b.size_in_bytes();
            at = range.end;
            (b.base_offset(), range)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_in_a_served_batch_fails_its_crc_naming_table_bucket_and_offset() {
    let (_dir, store) = store().await;
    let mut model = load_local_store(&store).await.expect("the store loads");
    let t = model.table("db", "t").expect("db.t").table_id;
    let log = model.log(t, None, 0).expect("bucket 0");
    let layout = batches(log.records());
    assert_eq!(
        layout.iter().map(|(o, _)| *o).collect::<Vec<_>>(),
        [0, 3, 5]
    );
    let mut bytes = log.records().to_vec();
    bytes[layout[1].1.end - 3] ^= 0xff; // inside the second batch's Arrow body
    model.add_log(t, None, 0, ServedLog::new(bytes).expect("still framed"));
    let served = serve_model(model, Faults::default()).await;
    let session = session(&served, None).await;
    let server = served.bootstrap_servers();
    let error = query_error(&session, ALL_T).await;
    assert_names(
        &error,
        &[
            "CRC-32C mismatch",
            "table: db.t",
            "bucket: 0",
            "base_offset: 3",
            &server,
        ],
    );
    // one whole fetch of the bucket: no row of the bad batch's neighbours either
    let whole = ClusterOptions {
        bootstrap_servers: server.clone(),
        ..ClusterOptions::default()
    };
    let source = ClusterSource::connect(whole).await.expect("connects");
    let session = FlussSession::new(Arc::new(source)).await.expect("session");
    let error = query_error(&session, ALL_T).await;
    assert_names(&error, &["CRC-32C mismatch", "base_offset: 3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_length_past_the_end_of_the_answer_names_table_bucket_and_offset() {
    let (_dir, store) = store().await;
    for (offset, by) in [(3, 1 << 20), (5, 1 << 20), (0, 1 << 20)] {
        let served = serve(&store, |t, _| {
            Faults::default().stretch_batch(BucketRef::new(t, None, 0), offset, by)
        })
        .await;
        let session = session(&served, None).await;
        let server = served.bootstrap_servers();
        let error = query_error(&session, ALL_T).await;
        assert_names(
            &error,
            &[
                "past the end",
                "table: db.t",
                "bucket: 0",
                &format!("base_offset: {offset}"),
                &server,
            ],
        );
    }
    // a length that lands inside the next batch: that batch's bytes are not its own
    let served = serve(&store, |t, _| {
        Faults::default().stretch_batch(BucketRef::new(t, None, 0), 3, 8)
    })
    .await;
    let whole = ClusterOptions {
        bootstrap_servers: served.bootstrap_servers(),
        ..ClusterOptions::default()
    };
    let source = ClusterSource::connect(whole).await.expect("connects");
    let session = FlussSession::new(Arc::new(source)).await.expect("session");
    let error = query_error(&session, ALL_T).await;
    assert_names(&error, &["table: db.t", "bucket: 0", "base_offset: 3"]);
}

/// A catalog whose cluster became unreachable says so: `SHOW TABLES` and
/// `information_schema` fail naming the cluster, instead of answering as if the
/// catalog were empty (DataFusion's listings cannot fail; the session fails the
/// statement with the error the listing met).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_cluster_is_an_error_not_an_empty_catalog() {
    let (_dir, store) = store().await;
    let server = serve(&store, |_, _| Faults::default()).await;
    let bootstrap = server.bootstrap_servers();
    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: bootstrap.clone(),
        ..Default::default()
    })
    .await
    .expect("connects")
    .with_request_timeout(Duration::from_secs(5));
    let session = FlussSession::new(Arc::new(source)).await.expect("session");
    let tables = common::render(&session.execute("SHOW TABLES").await.expect("listed"));
    assert!(tables.contains("two"), "{tables}");

    drop(server);
    for sql in [
        "SHOW TABLES",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'db'",
    ] {
        let e = tokio::time::timeout(STEP, session.execute(sql))
            .await
            .expect("does not hang")
            .expect_err("the cluster is gone");
        let shown = e.to_string();
        assert!(shown.contains(&bootstrap), "{sql}: {shown}");
    }
}

/// A tablet server that restarted closed the connections the source keeps for it:
/// the next read does not fail on such an idle, closed connection but fetches again
/// on a new one (a FetchLog is a read, safe to send twice), and answers in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_is_read_through_a_new_connection() {
    let (_dir, store) = store().await;
    let server = serve(&store, |_, _| Faults::default()).await;
    let addr = server.addr();
    let session = session(&server, None).await;
    assert_eq!(row_count(&session, ALL_T).await, 7);
    assert_eq!(row_count(&session, ALL_TWO).await, 8);
    // closed for good before the new server binds its address (a drop closes the
    // listener later, and the bind then failed with "address in use" now and then)
    server.stop().await;
    let model = load_local_store(&store).await.expect("the store loads");
    let _restarted = TestServer::start_at(addr, Arc::new(model), ServerConfig::default())
        .await
        .expect("the server starts again at its address");
    assert_eq!(row_count(&session, ALL_T).await, 7);
    assert_eq!(row_count(&session, ALL_TWO).await, 8);
}

/// `db.kv`: a primary-key table of one bucket, for key lookups.
async fn kv_store() -> (tempfile::TempDir, Arc<LocalStore>) {
    common::sql_store(&[
        "CREATE DATABASE db",
        "CREATE TABLE db.kv (id BIGINT NOT NULL, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '1')",
        "INSERT INTO db.kv VALUES (1, 'a'), (2, 'b')",
    ])
    .await
}

/// Serves `db.kv` with its bucket answering Lookup with `code` the first `times`
/// times (`None`: always).
async fn serve_kv(store: &LocalStore, code: i32, times: Option<usize>) -> TestServer {
    let model = load_local_store(store).await.expect("the store loads");
    let id = model.table("db", "kv").expect("table").table_id;
    let faults =
        Faults::default().lookup_error(BucketRef::new(id, None, 0), code, "moved away", times);
    serve_model(model, faults).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_answered_not_leader_learns_the_leader_again_once() {
    let (_dir, store) = kv_store().await;
    let code = FlussError::NotLeaderOrFollower.code();
    const LOOKUP: &str = "SELECT v FROM db.kv WHERE id = 2";

    // once: the lookup is sent again after the table's buckets are learned again
    let served = serve_kv(&store, code, Some(1)).await;
    let once = session(&served, None).await;
    let plan = once.execute(&format!("EXPLAIN {LOOKUP}")).await.unwrap();
    let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan)
        .unwrap()
        .to_string();
    assert!(plan.contains("FlussKeyLookupExec"), "{plan}");
    assert_eq!(row_count(&once, LOOKUP).await, 1);

    // always: an error naming the table, the bucket and the server's code
    let served = serve_kv(&store, code, None).await;
    let always = session(&served, None).await;
    let error = query_error(&always, LOOKUP).await;
    assert_names(
        &error,
        &[
            "look up keys",
            "moved away",
            "table: db.kv",
            "bucket: 0",
            &format!("error_code: {code}"),
        ],
    );
}
