//! The library's cluster source (`ClusterSource`: fluss-rs for metadata, offsets and
//! lake snapshots, raw FetchLog decoded by the library's codec) against the RPC test
//! server serving a LocalStore: every query answers as the same SQL on the LocalStore
//! itself does, for log and primary-key tables, union reads and `t$lake`.

use crate::common;

use std::sync::Arc;

use common::render;
use fluss_datafusion::log::BatchIterator;
use fluss_datafusion::source::{ClusterOptions, ClusterSource, FlussSource};
use fluss_datafusion::sql::FlussSession;
use fluss_datafusion::{ErrorKind, LocalStore};
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::mirror::LiveCluster;
use fluss_test_support::model::{ClusterModel, ServedLog};
use fluss_test_support::server::{ServerConfig, TestServer};

/// A store with a tiered log table and a tiered primary-key table, each with a tail
/// not tiered yet, and a log table without a lake.
async fn store() -> (tempfile::TempDir, Arc<LocalStore>) {
    common::sql_store(fluss_test_support::local_store::TIERED_TABLES_SQL).await
}

async fn serve(store: &LocalStore, config: ServerConfig) -> TestServer {
    let model = load_local_store(store).await.unwrap();
    TestServer::start(Arc::new(model), config).await.unwrap()
}

/// `db.kv` dropped and created again, holding `(1, 'again')`.
const KV_CREATED_AGAIN: [&str; 3] = [
    "DROP TABLE db.kv",
    "CREATE TABLE db.kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
     WITH ('bucket.num' = '3')",
    "INSERT INTO db.kv VALUES (1, 'again')",
];

/// A test server serving `store` as it is when reloaded, and a session on the store
/// and one on the cluster.
async fn live_sessions(
    store: &Arc<LocalStore>,
) -> (Arc<LiveCluster>, TestServer, FlussSession, FlussSession) {
    let live = Arc::new(LiveCluster::default());
    live.reload(store).await.unwrap();
    let server = TestServer::start(live.clone(), ServerConfig::default())
        .await
        .unwrap();
    let source = Arc::new(ClusterSource::connect(options(&server)).await.unwrap());
    let local = FlussSession::new(store.clone()).await.unwrap();
    let remote = FlussSession::new(source).await.unwrap();
    (live, server, local, remote)
}

fn options(server: &TestServer) -> ClusterOptions {
    ClusterOptions {
        bootstrap_servers: server.bootstrap_servers(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_over_the_cluster_answer_as_on_the_store() {
    let (_dir, store) = store().await;
    let server = serve(&store, ServerConfig::default()).await;
    let source = Arc::new(ClusterSource::connect(options(&server)).await.unwrap());
    let local = FlussSession::new(store.clone()).await.unwrap();
    let remote = FlussSession::new(source.clone()).await.unwrap();

    assert_eq!(
        source.list_tables("db").await.unwrap().len(),
        3,
        "{:?}",
        source.list_tables("db").await
    );
    for sql in [
        "SELECT * FROM db.logs ORDER BY id",
        "SELECT name FROM db.logs WHERE score > 25 ORDER BY name",
        "SELECT count(*) AS n, sum(score) AS s FROM db.logs",
        "SELECT id, name FROM db.\"logs$lake\" ORDER BY id",
        "SELECT * FROM db.kv ORDER BY id",
        "SELECT v FROM db.kv WHERE id = 1",
        "SELECT count(*) AS n FROM db.kv",
        "SELECT * FROM db.\"kv$lake\" ORDER BY id",
        "SELECT * FROM db.plain ORDER BY id",
        "SELECT tag FROM db.plain WHERE id >= 3 ORDER BY tag",
    ] {
        let want = render(&local.execute(sql).await.unwrap());
        let got = match remote.execute(sql).await {
            Ok(b) => render(&b),
            Err(e) => panic!("{sql} over the cluster: {e}"),
        };
        assert_eq!(got, want, "{sql}");
    }
    // the reads went over the wire: lake snapshots, offsets, raw fetches
    let keys = server.received_api_keys();
    for (key, what) in [
        (1032, "GetLakeSnapshot"),
        (1021, "ListOffsets"),
        (1015, "FetchLog"),
    ] {
        assert!(keys.contains(&key), "no {what} request: {keys:?}");
    }
    // the rows themselves, not just agreement
    let kv = render(
        &remote
            .execute("SELECT id, v FROM db.kv ORDER BY id")
            .await
            .unwrap(),
    );
    assert_eq!(kv, "| 1 | x2 |\n| 3 | z |\n| 4 | w |\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_and_tiering_are_refused_on_a_cluster() {
    let (_dir, store) = store().await;
    let server = serve(&store, ServerConfig::default()).await;
    let source = Arc::new(ClusterSource::connect(options(&server)).await.unwrap());
    let remote = FlussSession::new(source).await.unwrap();
    for sql in [
        "INSERT INTO db.logs VALUES (9, 'z', 9)",
        "CALL fluss.tier('db.logs')",
        "CREATE TABLE db.t2 (id BIGINT)",
    ] {
        let e = remote.execute(sql).await.unwrap_err();
        assert_ne!(e.kind(), ErrorKind::Internal, "{sql}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_plain_authenticates_and_a_wrong_password_is_never_shown() {
    let (_dir, store) = store().await;
    let server = serve(&store, ServerConfig::with_sasl_plain("alice", "s3cret-pw")).await;
    let good = ClusterOptions {
        sasl_username: Some("alice".into()),
        sasl_password: Some("s3cret-pw".into()),
        ..options(&server)
    };
    let source = Arc::new(ClusterSource::connect(good).await.unwrap());
    let remote = FlussSession::new(source.clone()).await.unwrap();
    let rows = render(
        &remote
            .execute("SELECT count(*) AS n FROM db.logs")
            .await
            .unwrap(),
    );
    assert!(rows.contains("| 7 |"), "{rows}");
    assert!(!format!("{source:?}").contains("s3cret-pw"));

    let bad = ClusterOptions {
        sasl_username: Some("alice".into()),
        sasl_password: Some("wrong-pw".into()),
        ..options(&server)
    };
    let error = match ClusterSource::connect(bad).await {
        Err(e) => e.to_string(),
        Ok(source) => match FlussSession::new(Arc::new(source)).await {
            Err(e) => e.to_string(),
            Ok(session) => match session.execute("SELECT * FROM db.logs").await {
                Err(e) => e.to_string(),
                Ok(_) => panic!("a wrong password read the table"),
            },
        },
    };
    assert!(!error.contains("wrong-pw"), "{error}");
}

/// EXPLAIN on a cluster shows the cut it read from (snapshot, per-bucket ranges) and
/// no credentials; COPY backfills a union table to parquet as on a LocalStore.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_and_copy_work_on_a_cluster() {
    let (dir, store) = store().await;
    let server = serve(&store, ServerConfig::with_sasl_plain("alice", "pw-77")).await;
    let source = ClusterSource::connect(ClusterOptions {
        sasl_username: Some("alice".into()),
        sasl_password: Some("pw-77".into()),
        ..options(&server)
    })
    .await
    .unwrap();
    let remote = FlussSession::new(Arc::new(source)).await.unwrap();
    let plan = render(
        &remote
            .execute("EXPLAIN SELECT * FROM db.kv WHERE id >= 1")
            .await
            .unwrap(),
    );
    assert!(plan.contains("lake_snapshot"), "{plan}");
    assert!(!plan.contains("pw-77"), "{plan}");
    // the whole key fixed: the tablet server looks it up
    let plan = render(
        &remote
            .execute("EXPLAIN SELECT * FROM db.kv WHERE id = 1")
            .await
            .unwrap(),
    );
    assert!(plan.contains("FlussKeyLookupExec"), "{plan}");
    assert!(!plan.contains("pw-77"), "{plan}");
    let out = dir.path().join("kv.parquet");
    remote
        .execute(&format!(
            "COPY (SELECT * FROM db.kv) TO '{}' STORED AS PARQUET",
            out.display()
        ))
        .await
        .unwrap();
    let back = render(
        &remote
            .execute(&format!(
                "SELECT id, v FROM '{}' ORDER BY id",
                out.display()
            ))
            .await
            .unwrap(),
    );
    assert_eq!(back, "| 1 | x2 |\n| 3 | z |\n| 4 | w |\n");
}

/// Retention on the cluster removed log offsets the lake snapshot does not hold (the
/// log of bucket 0 now starts past its tiered offset): the union read is an error
/// naming the table, the bucket and the missing offsets, never fewer rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_that_no_longer_covers_the_tiered_offset_is_an_error() {
    let (_dir, store) = store().await;
    let mut model = load_local_store(&store).await.unwrap();
    let table = model.table("db", "logs").unwrap();
    let snapshot = model.lake_snapshots(table.table_id).pop().unwrap();
    let tiered = snapshot
        .buckets
        .iter()
        .find(|b| b.bucket == 0)
        .map(|b| b.log_offset)
        .unwrap();
    let log = model.log(table.table_id, None, 0).unwrap();
    assert!(log.high_watermark() > tiered, "bucket 0 needs a tail");
    // drop the first batch of the tail: the log now starts past the tiered offset
    let mut batches = BatchIterator::new(log.records().clone());
    let mut cut = 0;
    for batch in batches.by_ref() {
        let batch = batch.unwrap();
        cut += batch.size_in_bytes();
        if batch.next_offset() > tiered {
            break;
        }
    }
    let retained = if cut == log.records().len() {
        ServedLog::empty(log.high_watermark())
    } else {
        ServedLog::new(log.records().slice(cut..)).unwrap()
    };
    assert!(retained.log_start_offset() > tiered);
    model.add_log(table.table_id, None, 0, retained);
    let server = TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .unwrap();
    let source = ClusterSource::connect(options(&server)).await.unwrap();
    let remote = FlussSession::new(Arc::new(source)).await.unwrap();
    let error = match remote.execute("SELECT * FROM db.logs").await {
        Err(e) => e.to_string(),
        Ok(b) => panic!(
            "a read with missing offsets gave {} rows",
            render(&b).lines().count()
        ),
    };
    assert!(
        error.contains("neither in the lake snapshot nor in the log"),
        "{error}"
    );
    assert!(error.contains("bucket: 0"), "{error}");
    assert!(error.contains("db.logs"), "{error}");
}

/// A table whose batches carry statistics: the pushed filters go to the server with
/// each FetchLog (`filter_predicate`), which leaves out the batches that cannot
/// match; every answer is still the store's, with fewer bytes on the wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_go_to_the_server_which_leaves_out_batches_that_cannot_match() {
    let mut statements = vec![
        "CREATE DATABASE db".to_string(),
        "CREATE TABLE db.stats (id BIGINT, name STRING, n INT) \
         WITH ('bucket.num' = '1', 'table.statistics.columns' = '*')"
            .to_string(),
    ];
    // ten batches of disjoint id ranges
    for round in 0..10 {
        let rows: Vec<String> = (0..10)
            .map(|i| {
                let id = round * 10 + i;
                let n = if id % 7 == 0 {
                    "NULL".to_string()
                } else {
                    id.to_string()
                };
                format!("({id}, 'n{round}', {n})")
            })
            .collect();
        statements.push(format!("INSERT INTO db.stats VALUES {}", rows.join(", ")));
    }
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    let (_dir, store) = common::sql_store(&statements).await;
    let local = FlussSession::new(store.clone()).await.unwrap();
    let server = serve(&store, ServerConfig::default()).await;
    let remote = FlussSession::new(Arc::new(
        ClusterSource::connect(options(&server)).await.unwrap(),
    ))
    .await
    .unwrap();
    let sent = |sql: &'static str| {
        let (local, remote, server) = (&local, &remote, &server);
        async move {
            let before = server.record_bytes_sent();
            let got = render(&remote.execute(sql).await.unwrap());
            assert_eq!(got, render(&local.execute(sql).await.unwrap()), "{sql}");
            server.record_bytes_sent() - before
        }
    };
    let full = sent("SELECT * FROM db.stats ORDER BY id").await;
    for sql in [
        "SELECT * FROM db.stats WHERE id > 85 ORDER BY id",
        "SELECT * FROM db.stats WHERE id = 42",
        "SELECT id FROM db.stats WHERE name = 'n7' ORDER BY id",
        "SELECT id FROM db.stats WHERE id IN (3, 95) ORDER BY id",
        "SELECT id FROM db.stats WHERE id < 10 OR id > 90 ORDER BY id",
        "SELECT id FROM db.stats WHERE id >= 30 AND n < 35 ORDER BY id",
    ] {
        let filtered = sent(sql).await;
        assert!(
            filtered * 2 < full,
            "{sql}: {filtered} bytes sent, {full} for the whole table"
        );
    }
    // filters the statistics cannot decide send everything, and still answer right
    for sql in [
        "SELECT id FROM db.stats WHERE n IS NULL ORDER BY id",
        "SELECT id FROM db.stats WHERE id % 10 = 3 ORDER BY id",
    ] {
        sent(sql).await;
    }
}

/// Fluss's `MetaData` API key.
const METADATA: i16 = 1012;
/// Fluss's `Lookup` API key.
const LOOKUP: i16 = 1017;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_fetches_the_metadata_of_its_tables_in_one_request() {
    let (_dir, store) = store().await;
    let server = serve(&store, ServerConfig::default()).await;
    let source = Arc::new(ClusterSource::connect(options(&server)).await.unwrap());
    let local = FlussSession::new(store.clone()).await.unwrap();
    let remote = FlussSession::new(source).await.unwrap();
    let join = "SELECT l.id, l.name, k.v, p.tag FROM db.logs l \
                LEFT JOIN db.kv k ON l.id = k.id LEFT JOIN db.plain p ON p.id = l.id \
                ORDER BY l.id";
    let want = render(&local.execute(join).await.unwrap());
    assert_eq!(render(&remote.execute(join).await.unwrap()), want);
    // warm: the buckets' leaders are known, so the three tables cost one request
    server.clear_received_api_keys();
    assert_eq!(render(&remote.execute(join).await.unwrap()), want);
    let keys = server.received_api_keys();
    let requests = keys.iter().filter(|k| **k == METADATA).count();
    assert_eq!(requests, 1, "{keys:?}");
    // a name that is no Fluss table: the tables are fetched one by one, and the
    // statement fails naming it
    let error = remote
        .execute("SELECT count(*) FROM db.logs, db.nosuch")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("nosuch"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_planned_from_tables_last_seen_runs_again_when_they_changed() {
    let (_dir, store) = store().await;
    let (live, server, local, remote) = live_sessions(&store).await;
    let (scan, lookup) = (
        "SELECT * FROM db.plain ORDER BY id",
        "SELECT v FROM db.kv WHERE id = 1",
    );
    for sql in [scan, lookup] {
        let want = render(&local.execute(sql).await.unwrap());
        assert_eq!(render(&remote.execute(sql).await.unwrap()), want, "{sql}");
        // warm: one Metadata request, which confirms the tables as last seen
        server.clear_received_api_keys();
        assert_eq!(render(&remote.execute(sql).await.unwrap()), want, "{sql}");
        let keys = server.received_api_keys();
        let requests = keys.iter().filter(|k| **k == METADATA).count();
        assert_eq!(requests, 1, "{sql}: {keys:?}");
        if sql == lookup {
            // and besides it only the Lookup: no offsets, no lake snapshot, no fetch
            assert_eq!(keys.len(), 2, "{sql}: {keys:?}");
            assert!(keys.contains(&LOOKUP), "{sql}: {keys:?}");
        }
    }
    // Both tables dropped and created again with other columns and rows, behind the
    // session's back: the speculative run (old table ids, old schemas) is thrown away.
    let plain_again = [
        "DROP TABLE db.plain",
        "CREATE TABLE db.plain (id BIGINT, tag STRING, extra INT) WITH ('bucket.num' = '2')",
        "INSERT INTO db.plain VALUES (9, 'new', 1)",
    ];
    for sql in plain_again.into_iter().chain(KV_CREATED_AGAIN) {
        local.execute(sql).await.unwrap();
    }
    live.reload(&store).await.unwrap();
    for sql in [scan, lookup, "EXPLAIN SELECT * FROM db.plain"] {
        let want = render(&local.execute(sql).await.unwrap());
        let got = render(&remote.execute(sql).await.unwrap());
        if sql.starts_with("EXPLAIN") {
            assert!(got.contains("extra"), "{sql}: {got}");
        } else {
            assert_eq!(got, want, "{sql}");
        }
    }
    assert!(
        render(&remote.execute(lookup).await.unwrap()).contains("again"),
        "the lookup reads the new table"
    );
    // a table gone: the error names it
    local.execute("DROP TABLE db.plain").await.unwrap();
    live.reload(&store).await.unwrap();
    let error = remote.execute(scan).await.unwrap_err();
    assert!(error.to_string().contains("plain"), "{error}");
}

/// With `fluss.metadata_max_age_ms`, a statement on tables fetched within that time
/// sends no Metadata request (a point lookup: the Lookup alone), and sees a change
/// only once the age has passed; at 0 every statement confirms again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_younger_than_the_session_allows_is_not_confirmed() {
    let (_dir, store) = store().await;
    let (live, server, local, remote) = live_sessions(&store).await;
    let lookup = "SELECT v FROM db.kv WHERE id = 1";
    let want = render(&local.execute(lookup).await.unwrap());
    remote
        .execute("SET fluss.metadata_max_age_ms = 2000")
        .await
        .unwrap();
    assert_eq!(render(&remote.execute(lookup).await.unwrap()), want);
    server.clear_received_api_keys();
    assert_eq!(render(&remote.execute(lookup).await.unwrap()), want);
    assert_eq!(server.received_api_keys(), vec![LOOKUP], "the Lookup alone");
    // changed behind the session's back: seen once the age has passed
    for sql in KV_CREATED_AGAIN {
        local.execute(sql).await.unwrap();
    }
    live.reload(&store).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert!(
        render(&remote.execute(lookup).await.unwrap()).contains("again"),
        "the lookup reads the new table once the age has passed"
    );
    // at 0, every statement confirms its tables again
    remote
        .execute("SET fluss.metadata_max_age_ms = 0")
        .await
        .unwrap();
    server.clear_received_api_keys();
    remote.execute(lookup).await.unwrap();
    let keys = server.received_api_keys();
    assert_eq!(
        keys.iter().filter(|k| **k == METADATA).count(),
        1,
        "{keys:?}"
    );
}
