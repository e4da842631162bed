//! Tiered (remote) log segments through the library's cluster source: the test
//! server moves the first part of each bucket's log to remote segment files (Fluss's
//! `{remote.data.dir}/log/.../{bucket}/{segment id}/{offset:020}.log` layout, on the
//! local file system or the local S3 server) and answers fetches below its local log
//! with `PbRemoteLogFetchInfo`, as a tablet server does after remote log tiering. Reads
//! that start in remote segments answer as the LocalStore does; a missing segment is an
//! error naming the file.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::render;
use fluss_datafusion::LocalStore;
use fluss_datafusion::log::BatchIterator;
use fluss_datafusion::source::{ClusterOptions, ClusterSource};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::memory::MemoryCluster;
use fluss_test_support::model::{ClusterModel, ServedLog};
use fluss_test_support::s3::{self, S3Server};
use fluss_test_support::server::{ServerConfig, TestServer};
use object_store::ObjectStoreExt;

/// A log table and a primary-key table without a lake (read from the earliest
/// offset), written in many small batches.
async fn store() -> (tempfile::TempDir, Arc<LocalStore>, FlussSession) {
    let mut statements = vec![
        "CREATE DATABASE db".to_string(),
        "CREATE TABLE db.events (id BIGINT, kind STRING, n INT) WITH ('bucket.num' = '2')"
            .to_string(),
        "CREATE TABLE db.kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '2')"
            .to_string(),
    ];
    for round in 0..8 {
        let rows: Vec<String> = (0..5)
            .map(|i| {
                let id = round * 5 + i;
                format!("({id}, 'k{}', {})", id % 3, id * 10)
            })
            .collect();
        statements.push(format!("INSERT INTO db.events VALUES {}", rows.join(", ")));
        statements.push(format!(
            "INSERT INTO db.kv VALUES ({}, 'r{round}'), ({}, 'r{round}')",
            round % 4,
            round + 10
        ));
        if round % 3 == 2 {
            statements.push(format!("DELETE FROM db.kv WHERE id = {}", round % 4));
        }
    }
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    let (dir, store) = common::sql_store(&statements).await;
    let session = FlussSession::new(store.clone()).await.unwrap();
    (dir, store, session)
}

const QUERIES: [&str; 6] = [
    "SELECT * FROM db.events ORDER BY id",
    "SELECT kind, count(*), sum(n) FROM db.events GROUP BY kind ORDER BY kind",
    "SELECT id FROM db.events WHERE n > 200 ORDER BY id",
    "SELECT * FROM db.kv ORDER BY id",
    "SELECT v FROM db.kv WHERE id = 12",
    "SELECT count(*) FROM db.kv",
];

async fn answers(session: &FlussSession) -> Vec<String> {
    let mut out = Vec::new();
    for query in QUERIES {
        let batches = session
            .execute(query)
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        out.push(render(&batches));
    }
    out
}

/// The base offset of the batch in the middle of `log` (a batch boundary).
fn middle_boundary(log: &ServedLog) -> i64 {
    let offsets: Vec<i64> = BatchIterator::new(log.records().clone())
        .map(|b| b.unwrap().base_offset())
        .collect();
    assert!(offsets.len() >= 3, "the bucket needs batches to tier");
    offsets[offsets.len() / 2]
}

/// The store's cluster model with the first half of every bucket of both tables in
/// remote segments under `remote_dir` (a path or URL); returns the model and the
/// segment files to write (path under `remote_dir`, bytes).
async fn tiered_model(
    store: &LocalStore,
    remote_dir: &str,
) -> (MemoryCluster, Vec<(String, bytes::Bytes)>) {
    let mut model = load_local_store(store).await.unwrap();
    let mut files = Vec::new();
    for name in ["events", "kv"] {
        let table = model.table("db", name).unwrap();
        for bucket in 0..table.bucket_count {
            let log = model.log(table.table_id, None, bucket).unwrap();
            let tablet = format!("log/db/{name}-{}/{bucket}", table.table_id);
            let tiered = log
                .tier_to_remote(
                    middle_boundary(&log),
                    2,
                    &format!("{}/{tablet}", remote_dir.trim_end_matches('/')),
                )
                .unwrap();
            let remote = tiered.remote().unwrap();
            assert_eq!(remote.segments.len(), 2);
            for segment in &remote.segments {
                files.push((
                    format!("{tablet}/{}", segment.file_name()),
                    segment.bytes.clone(),
                ));
            }
            assert!(tiered.local_start_offset() > tiered.log_start_offset());
            model.add_log(table.table_id, None, bucket, tiered);
        }
    }
    (model, files)
}

fn write_files(root: &Path, files: &[(String, bytes::Bytes)]) {
    for (path, bytes) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }
}

async fn cluster_session(server: &TestServer, options: ClusterOptions) -> FlussSession {
    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: server.bootstrap_servers(),
        ..options
    })
    .await
    .unwrap();
    FlussSession::new(Arc::new(source)).await.unwrap()
}

#[tokio::test]
async fn reads_that_start_in_remote_segments_answer_as_the_store_does() {
    let (_dir, store, local) = store().await;
    let expected = answers(&local).await;
    let remote = tempfile::tempdir().unwrap();
    let (model, files) = tiered_model(&store, remote.path().to_str().unwrap()).await;
    write_files(remote.path(), &files);
    let server = TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .unwrap();
    // a small fetch size: several local fetches after the remote part, too
    let cluster = cluster_session(
        &server,
        ClusterOptions {
            max_fetch_bytes: Some(1024),
            ..ClusterOptions::default()
        },
    )
    .await;
    assert_eq!(answers(&cluster).await, expected);
    // the cluster reports the log start of the remote part as the earliest offset
    let table = cluster
        .source()
        .get_table(&fluss::metadata::TablePath::new("db", "events"))
        .await
        .unwrap();
    let buckets = cluster.source().buckets(&table).await.unwrap();
    let offsets = cluster
        .source()
        .bucket_offsets(&table, &buckets)
        .await
        .unwrap();
    assert!(offsets.iter().all(|o| o.earliest == 0), "{offsets:?}");
}

#[tokio::test]
async fn a_missing_remote_segment_is_an_error_naming_the_file() {
    let (_dir, store, _local) = store().await;
    let remote = tempfile::tempdir().unwrap();
    let (model, files) = tiered_model(&store, remote.path().to_str().unwrap()).await;
    // every file but the second segment of one bucket of `events`
    let missing = files
        .iter()
        .find(|(p, _)| p.starts_with("log/db/events") && p.contains("-000000000002/"))
        .map(|(p, _)| p.clone())
        .unwrap();
    let kept: Vec<_> = files.into_iter().filter(|(p, _)| *p != missing).collect();
    write_files(remote.path(), &kept);
    let server = TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .unwrap();
    let cluster = cluster_session(&server, ClusterOptions::default()).await;
    let error = match cluster.execute("SELECT * FROM db.events").await {
        Err(e) => e.to_string(),
        Ok(b) => panic!(
            "a read with a missing segment gave {} rows",
            render(&b).lines().count()
        ),
    };
    let file_name = Path::new(&missing).file_name().unwrap().to_str().unwrap();
    assert!(error.contains(file_name), "{error}");
    assert!(error.contains("db.events"), "{error}");
    assert!(error.contains("bucket"), "{error}");
    assert!(error.contains("server"), "{error}");
    // the other table still reads
    cluster.execute("SELECT * FROM db.kv").await.unwrap();
}

#[tokio::test]
async fn remote_segments_on_s3_are_read_with_the_storage_options() {
    let server = match S3Server::start() {
        Ok(s) => s,
        Err(why) => {
            if std::env::var("FLUSS_REQUIRE_PYTHON").is_ok_and(|v| v == "1") {
                panic!("{why}: run tests/python/setup_venv.sh");
            }
            eprintln!("skipping: {why}");
            return;
        }
    };
    let (_dir, store, local) = store().await;
    let expected = answers(&local).await;
    let prefix = format!("remote-{}", std::process::id());
    let root = format!("s3://{}/{prefix}", s3::BUCKET);
    let (model, files) = tiered_model(&store, &root).await;
    let bucket = server.bucket();
    for (path, bytes) in &files {
        bucket
            .put(
                &object_store::path::Path::from(format!("{prefix}/{path}")),
                bytes.clone().into(),
            )
            .await
            .unwrap();
    }
    let fluss = TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .unwrap();
    let cluster = cluster_session(
        &fluss,
        ClusterOptions {
            lake_options: server.options(),
            ..ClusterOptions::default()
        },
    )
    .await;
    assert_eq!(answers(&cluster).await, expected);
}
