//! A LocalStore written through the library (SQL, tiering) served by the test server and
//! read back with fluss-rs 1.0: everything the client sees must be what the store holds.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use fluss::client::{BoundedLogReadRange, EARLIEST_OFFSET, FlussConnection, RecordBatchLogReader};
use fluss::config::Config;
use fluss::metadata::{TableBucket, TableInfo, TablePath};
use fluss::record::ChangeType;
use fluss::row::DataGetters;
use fluss::rpc::FlussError;
use fluss::rpc::message::OffsetSpec;
use fluss_datafusion::source::{BucketLocation, FlussTable};
use fluss_datafusion::sql::FlussSession;
use fluss_datafusion::{FlussSource, LocalStore};
use fluss_test_support::local_store::{is_sensitive_property, load_local_store};
use fluss_test_support::model::ClusterModel;
use fluss_test_support::server::{ServerConfig, TestServer};

/// `db.logs` (log table, 2 buckets, lake): ids 1-4 tiered, 5-7 in the tail.
/// `db.kv` (PK table, 1 bucket): +I 1, +I 2, -U/+U 1, -D 2; secrets in its properties.
/// `db.events` (partitioned by dt, 2 buckets, lake): 2024-01-01 and 2024-01-02 tiered,
/// 2024-01-02 and 2024-01-03 in the tail. `empty_db` has no tables.
const SETUP: &str = "
CREATE DATABASE db;
CREATE DATABASE empty_db;
CREATE TABLE db.logs (id BIGINT, name STRING)
  WITH ('bucket.num' = '2', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true');
INSERT INTO db.logs VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd');
CALL fluss.tier('db.logs');
INSERT INTO db.logs VALUES (5, 'e'), (6, 'f');
INSERT INTO db.logs VALUES (7, 'g');
CREATE TABLE db.kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('bucket.num' = '1', 'table.datalake.paimon.s3.secret-key' = 'hunter2',
        'owner.password' = 'hunter2', 'owner' = 'me');
INSERT INTO db.kv VALUES (1, 'x'), (2, 'y');
INSERT INTO db.kv VALUES (1, 'z');
DELETE FROM db.kv WHERE id = 2;
CREATE TABLE db.events (id BIGINT, dt STRING) PARTITIONED BY (dt)
  WITH ('bucket.num' = '2', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true');
INSERT INTO db.events VALUES (1, '2024-01-01'), (2, '2024-01-01'), (3, '2024-01-02');
CALL fluss.tier('db.events');
INSERT INTO db.events VALUES (4, '2024-01-02'), (5, '2024-01-03'), (6, '2024-01-03');
";

struct Fixture {
    store: Arc<LocalStore>,
    _server: TestServer,
    conn: FlussConnection,
    dir: tempfile::TempDir,
}

async fn build_store(sql: &str) -> (tempfile::TempDir, Arc<LocalStore>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(
        LocalStore::open(dir.path().to_str().expect("utf-8 path"))
            .await
            .expect("store opens"),
    );
    let session = FlussSession::new(store.clone() as Arc<dyn FlussSource>)
        .await
        .expect("session");
    session.execute(sql).await.expect("setup SQL");
    (dir, store)
}

async fn serve(dir: tempfile::TempDir, store: Arc<LocalStore>) -> Fixture {
    let cluster = load_local_store(&store).await.expect("store loads");
    let server = TestServer::start(Arc::new(cluster), ServerConfig::default())
        .await
        .expect("server starts");
    let conn = FlussConnection::new(Config {
        bootstrap_servers: server.bootstrap_servers(),
        ..Default::default()
    })
    .await
    .expect("connects");
    Fixture {
        store,
        _server: server,
        conn,
        dir,
    }
}

async fn fixture() -> Fixture {
    let (dir, store) = build_store(SETUP).await;
    serve(dir, store).await
}

fn path(table: &str) -> TablePath {
    TablePath::new("db", table)
}

impl Fixture {
    async fn table(&self, name: &str) -> FlussTable {
        self.store
            .get_table(&path(name))
            .await
            .expect("store table")
    }

    async fn buckets(&self, table: &FlussTable) -> Vec<BucketLocation> {
        self.store.buckets(table).await.expect("buckets")
    }
}

/// `(id, name)` of batches with the columns `id` and `name`.
fn rows(batches: &[RecordBatch]) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for b in batches {
        let ids = b
            .column_by_name("id")
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let names = b
            .column_by_name("name")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        for i in 0..b.num_rows() {
            out.push((ids.value(i), names.value(i).to_string()));
        }
    }
    out.sort();
    out
}

fn ids(batches: &[RecordBatch]) -> Vec<i64> {
    let mut out: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            let a = b
                .column_by_name("id")
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .clone();
            (0..a.len()).map(move |i| a.value(i))
        })
        .collect();
    out.sort();
    out
}

async fn read_ranges(
    conn: &FlussConnection,
    table: &TablePath,
    ranges: Vec<BoundedLogReadRange>,
) -> Vec<RecordBatch> {
    let table = conn.get_table(table).await.expect("get_table");
    let scanner = table
        .new_scan()
        .create_record_batch_log_scanner()
        .expect("scanner");
    let mut reader = RecordBatchLogReader::new_from_ranges(scanner, ranges)
        .await
        .expect("reader");
    let mut batches = Vec::new();
    while let Some(batch) = tokio::time::timeout(Duration::from_secs(30), reader.next_batch())
        .await
        .expect("reads in time")
        .expect("reads")
    {
        batches.push(batch.into_batch());
    }
    batches
}

/// The properties a coordinator would serve for `table`: the store's, credentials left
/// out, the lake warehouse absolute.
async fn expected_properties(store: &LocalStore, table: &FlussTable) -> HashMap<String, String> {
    let mut properties: HashMap<String, String> = table
        .info
        .get_properties()
        .iter()
        .filter(|(k, _)| !is_sensitive_property(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if table.lake_format().is_some() {
        let location = store.lake_location(table).await.expect("lake location");
        assert!(
            std::path::Path::new(&location.warehouse).is_absolute(),
            "{}",
            location.warehouse
        );
        properties.insert(
            format!("table.datalake.{}.warehouse", location.format.name()),
            location.warehouse,
        );
    }
    properties
}

fn assert_same_table(served: &TableInfo, store: &FlussTable, properties: &HashMap<String, String>) {
    let want = &store.info;
    let name = &store.path;
    assert_eq!(served.get_table_path(), name);
    assert_eq!(served.get_table_id(), want.get_table_id(), "{name}");
    assert_eq!(served.get_schema_id(), want.get_schema_id(), "{name}");
    assert_eq!(served.get_schema(), want.get_schema(), "{name}");
    assert_eq!(served.get_num_buckets(), want.get_num_buckets(), "{name}");
    assert_eq!(served.get_bucket_keys(), want.get_bucket_keys(), "{name}");
    assert_eq!(
        served.get_partition_keys(),
        want.get_partition_keys(),
        "{name}"
    );
    assert_eq!(served.get_primary_keys(), want.get_primary_keys(), "{name}");
    assert_eq!(served.get_comment(), want.get_comment(), "{name}");
    assert_eq!(served.get_created_time(), want.get_created_time(), "{name}");
    assert_eq!(
        served.get_modified_time(),
        want.get_modified_time(),
        "{name}"
    );
    assert_eq!(served.get_properties(), properties, "{name}");
    let custom: HashMap<String, String> = want
        .get_custom_properties()
        .iter()
        .filter(|(k, _)| !is_sensitive_property(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(served.get_custom_properties(), &custom, "{name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_is_the_stores() {
    let f = fixture().await;
    let admin = f.conn.get_admin().unwrap();

    let mut want_dbs = f.store.list_databases().await.unwrap();
    want_dbs.sort();
    let mut dbs = admin.list_databases().await.unwrap();
    dbs.sort();
    assert_eq!(dbs, want_dbs);
    assert!(dbs.contains(&"empty_db".to_string()), "{dbs:?}");
    for db in &dbs {
        let mut want = f.store.list_tables(db).await.unwrap();
        want.sort();
        let mut got = admin.list_tables(db).await.unwrap();
        got.sort();
        assert_eq!(got, want, "tables of {db}");
    }
    assert_eq!(
        admin.list_tables("db").await.unwrap().len(),
        3,
        "logs, kv, events"
    );

    for name in ["logs", "kv", "events"] {
        let table = f.table(name).await;
        let properties = expected_properties(&f.store, &table).await;
        let served = admin.get_table_info(&path(name)).await.unwrap();
        assert_same_table(&served, &table, &properties);
        // the table a client opens for reading is the same
        let opened = f.conn.get_table(&path(name)).await.unwrap();
        assert_same_table(opened.get_table_info(), &table, &properties);
        // every schema version
        let schema = admin.get_table_schema(&path(name), Some(1)).await.unwrap();
        assert_eq!(schema.schema(), table.info.get_schema());
    }

    // no credential is served, but the rest of the properties are
    let kv = admin.get_table_info(&path("kv")).await.unwrap();
    let all: Vec<(&String, &String)> = kv
        .get_properties()
        .iter()
        .chain(kv.get_custom_properties())
        .collect();
    assert!(
        all.iter()
            .all(|(k, v)| !k.contains("secret") && !k.contains("password") && *v != "hunter2"),
        "{all:?}"
    );
    assert_eq!(
        kv.get_custom_properties().get("owner").map(String::as_str),
        Some("me")
    );
    let stored = f.table("kv").await;
    assert!(
        stored
            .info
            .get_custom_properties()
            .contains_key("owner.password"),
        "the store has the secret the server withholds"
    );

    // the lake warehouse is absolute, where the store keeps it relative
    let logs = f.table("logs").await;
    assert_eq!(
        logs.info
            .get_properties()
            .get("table.datalake.paimon.warehouse")
            .map(String::as_str),
        Some("lake/paimon")
    );
    let served = admin.get_table_info(&path("logs")).await.unwrap();
    let warehouse = &served.get_properties()["table.datalake.paimon.warehouse"];
    assert_eq!(
        std::path::PathBuf::from(warehouse),
        f.dir.path().join("lake/paimon")
    );

    // partitions as the store lists them
    let events = f.table("events").await;
    let want: Vec<(i64, String)> = f
        .store
        .list_partitions(&events)
        .await
        .unwrap()
        .iter()
        .map(|p| (p.get_partition_id(), p.get_partition_name()))
        .collect();
    assert_eq!(want.len(), 3, "{want:?}");
    let got: Vec<(i64, String)> = admin
        .list_partition_infos(&path("events"))
        .await
        .unwrap()
        .iter()
        .map(|p| (p.get_partition_id(), p.get_partition_name()))
        .collect();
    assert_eq!(got, want);
    let err = admin.list_partition_infos(&path("logs")).await.unwrap_err();
    assert_eq!(
        err.api_error(),
        Some(FlussError::TableNotPartitionedException)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_and_lake_snapshots_are_the_stores() {
    let f = fixture().await;
    let admin = f.conn.get_admin().unwrap();

    for name in ["logs", "kv", "events"] {
        let table = f.table(name).await;
        let buckets = f.buckets(&table).await;
        let offsets = f.store.bucket_offsets(&table, &buckets).await.unwrap();
        // every bucket of every partition, as the store reports it
        let mut by_partition: BTreeMap<Option<String>, Vec<(i32, i64, i64)>> = BTreeMap::new();
        for (b, o) in buckets.iter().zip(&offsets) {
            by_partition
                .entry(b.partition.as_ref().map(|(_, n)| n.clone()))
                .or_default()
                .push((b.bucket, o.earliest, o.high_watermark));
        }
        for (partition, want) in by_partition {
            let ids: Vec<i32> = want.iter().map(|w| w.0).collect();
            let list = async |spec| match &partition {
                None => admin.list_offsets(&path(name), &ids, spec).await.unwrap(),
                Some(p) => admin
                    .list_partition_offsets(&path(name), p, &ids, spec)
                    .await
                    .unwrap(),
            };
            let earliest = list(OffsetSpec::Earliest).await;
            let latest = list(OffsetSpec::Latest).await;
            for (bucket, start, end) in want {
                assert_eq!(earliest[&bucket], start, "{name} {partition:?} {bucket}");
                assert_eq!(latest[&bucket], end, "{name} {partition:?} {bucket}");
            }
        }
        let total: i64 = offsets.iter().map(|o| o.high_watermark - o.earliest).sum();
        let expected = match name {
            "logs" => 7,
            "kv" => 5, // +I +I -U +U -D
            _ => 6,
        };
        assert_eq!(total, expected, "records of {name}");

        // the readable lake snapshot and its offsets
        let readable = f.store.readable_lake_snapshot(&table).await.unwrap();
        let Some(readable) = readable else {
            assert_eq!(name, "kv", "only kv has no lake");
            let err = admin
                .get_latest_lake_snapshot(&path(name))
                .await
                .unwrap_err();
            assert_eq!(err.api_error(), Some(FlussError::LakeSnapshotNotExist));
            continue;
        };
        let mut want: HashMap<TableBucket, i64> = HashMap::new();
        for b in &buckets {
            if let Some(offset) = readable.offsets.get(b.partition_id(), b.bucket)
                && offset >= 0
            {
                want.insert(
                    TableBucket::new_with_partition(table.table_id(), b.partition_id(), b.bucket),
                    offset,
                );
            }
        }
        assert!(!want.is_empty());
        let got = admin
            .get_lake_snapshot(&path(name), None, Some(true))
            .await
            .unwrap();
        assert_eq!(got.table_id, table.table_id());
        assert_eq!(got.snapshot_id, readable.snapshot_id, "{name}");
        let got_offsets: HashMap<TableBucket, i64> = got
            .bucket_snapshots
            .iter()
            .map(|b| {
                (
                    TableBucket::new_with_partition(table.table_id(), b.partition_id, b.bucket_id),
                    b.log_offset.unwrap(),
                )
            })
            .collect();
        assert_eq!(got_offsets, want, "{name}");
        // partition names come with partitioned buckets
        for b in &got.bucket_snapshots {
            assert_eq!(b.partition_id.is_some(), b.partition_name.is_some());
        }
        let latest = admin.get_latest_lake_snapshot(&path(name)).await.unwrap();
        assert_eq!(latest.snapshot_id, readable.snapshot_id);
        assert_eq!(latest.table_buckets_offset, want);
        let by_id = admin
            .get_lake_snapshot(&path(name), Some(readable.snapshot_id), None)
            .await
            .unwrap();
        assert_eq!(by_id.snapshot_id, readable.snapshot_id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_tail_after_the_lake_snapshot() {
    let f = fixture().await;
    let logs = f.table("logs").await;
    let buckets = f.buckets(&logs).await;
    let offsets = f.store.bucket_offsets(&logs, &buckets).await.unwrap();
    let snapshot = f
        .store
        .readable_lake_snapshot(&logs)
        .await
        .unwrap()
        .expect("tiered");

    // [tiered offset, high watermark) of every bucket: the rows inserted after tiering
    let tail: Vec<BoundedLogReadRange> = buckets
        .iter()
        .zip(&offsets)
        .map(|(b, o)| BoundedLogReadRange {
            bucket: TableBucket::new(logs.table_id(), b.bucket),
            starting_offset: snapshot.offsets.get(None, b.bucket).unwrap(),
            stopping_offset: o.high_watermark,
        })
        .collect();
    assert!(
        tail.iter().all(|r| r.starting_offset > 0),
        "both buckets have tiered rows: {tail:?}"
    );
    let batches = read_ranges(&f.conn, &path("logs"), tail).await;
    assert_eq!(
        rows(&batches),
        vec![(5, "e".into()), (6, "f".into()), (7, "g".into())]
    );

    // the whole log
    let all: Vec<BoundedLogReadRange> = buckets
        .iter()
        .zip(&offsets)
        .map(|(b, o)| BoundedLogReadRange {
            bucket: TableBucket::new(logs.table_id(), b.bucket),
            starting_offset: EARLIEST_OFFSET,
            stopping_offset: o.high_watermark,
        })
        .collect();
    let batches = read_ranges(&f.conn, &path("logs"), all).await;
    assert_eq!(
        rows(&batches),
        vec![
            (1, "a".into()),
            (2, "b".into()),
            (3, "c".into()),
            (4, "d".into()),
            (5, "e".into()),
            (6, "f".into()),
            (7, "g".into())
        ]
    );

    // the served bytes are the segment files
    let cluster = load_local_store(&f.store).await.unwrap();
    for b in &buckets {
        let served = cluster.log(logs.table_id(), None, b.bucket).unwrap();
        let dir = f.dir.path().join(f.store.bucket_dir(&logs, b));
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        files.sort();
        let bytes: Vec<u8> = files
            .iter()
            .flat_map(|p| std::fs::read(p).unwrap())
            .collect();
        assert_eq!(served.records().as_ref(), bytes.as_slice());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_and_changelog() {
    let f = fixture().await;

    // a partitioned table: each partition's tail after the lake snapshot
    let events = f.table("events").await;
    let buckets = f.buckets(&events).await;
    let offsets = f.store.bucket_offsets(&events, &buckets).await.unwrap();
    let snapshot = f
        .store
        .readable_lake_snapshot(&events)
        .await
        .unwrap()
        .expect("tiered");
    let mut tail = Vec::new();
    let mut all = Vec::new();
    for (b, o) in buckets.iter().zip(&offsets) {
        let bucket = TableBucket::new_with_partition(events.table_id(), b.partition_id(), b.bucket);
        let tiered = snapshot
            .offsets
            .get(b.partition_id(), b.bucket)
            .filter(|o| *o >= 0)
            .unwrap_or(o.earliest);
        tail.push(BoundedLogReadRange {
            bucket: bucket.clone(),
            starting_offset: tiered,
            stopping_offset: o.high_watermark,
        });
        all.push(BoundedLogReadRange {
            bucket,
            starting_offset: o.earliest,
            stopping_offset: o.high_watermark,
        });
    }
    assert_eq!(
        ids(&read_ranges(&f.conn, &path("events"), tail).await),
        vec![4, 5, 6]
    );
    assert_eq!(
        ids(&read_ranges(&f.conn, &path("events"), all).await),
        vec![1, 2, 3, 4, 5, 6]
    );

    // a PK table's changelog, row by row
    let kv = f.conn.get_table(&path("kv")).await.unwrap();
    let scanner = kv.new_scan().create_log_scanner().unwrap();
    scanner.subscribe(0, EARLIEST_OFFSET).await.unwrap();
    let mut records = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while records.len() < 5 && std::time::Instant::now() < deadline {
        records.extend(scanner.poll(Duration::from_millis(200)).await.unwrap());
    }
    let changes: Vec<(ChangeType, i64, String)> = records
        .iter()
        .map(|r| {
            (
                *r.change_type(),
                r.row().get_long(0).unwrap(),
                r.row().get_string(1).unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        vec![
            (ChangeType::Insert, 1, "x".into()),
            (ChangeType::Insert, 2, "y".into()),
            (ChangeType::UpdateBefore, 1, "x".into()),
            (ChangeType::UpdateAfter, 1, "z".into()),
            (ChangeType::Delete, 2, "y".into()),
        ]
    );
    let offsets: Vec<i64> = records.iter().map(|r| r.offset()).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3, 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_tail_is_not_served() {
    let (dir, store) = build_store(
        "CREATE DATABASE db;
         CREATE TABLE db.logs (id BIGINT, name STRING) WITH ('bucket.num' = '1');
         INSERT INTO db.logs VALUES (1, 'a'), (2, 'b');
         INSERT INTO db.logs VALUES (3, 'c');",
    )
    .await;
    let logs = store.get_table(&path("logs")).await.unwrap();
    let bucket = BucketLocation {
        partition: None,
        bucket: 0,
    };
    let bucket_dir = dir.path().join(store.bucket_dir(&logs, &bucket));
    let mut segments: Vec<_> = std::fs::read_dir(&bucket_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segments.sort();
    let whole: Vec<u8> = segments
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    let last = segments.last().unwrap();
    // a crash mid-append: the first 40 bytes of the next batch (base offset 3) at the end
    // of the newest segment
    let mut next = whole[..40].to_vec();
    next[..8].copy_from_slice(&3i64.to_le_bytes());
    let mut torn = std::fs::read(last).unwrap();
    torn.extend_from_slice(&next);
    std::fs::write(last, &torn).unwrap();

    let offsets = store
        .bucket_offsets(&logs, std::slice::from_ref(&bucket))
        .await
        .unwrap();
    assert_eq!((offsets[0].earliest, offsets[0].high_watermark), (0, 3));
    let f = serve(dir, store).await;
    let admin = f.conn.get_admin().unwrap();
    let latest = admin
        .list_offsets(&path("logs"), &[0], OffsetSpec::Latest)
        .await
        .unwrap();
    assert_eq!(latest[&0], 3);
    let batches = read_ranges(
        &f.conn,
        &path("logs"),
        vec![BoundedLogReadRange {
            bucket: TableBucket::new(logs.table_id(), 0),
            starting_offset: 0,
            stopping_offset: 3,
        }],
    )
    .await;
    assert_eq!(
        rows(&batches),
        vec![(1, "a".into()), (2, "b".into()), (3, "c".into())]
    );
    let cluster = load_local_store(&f.store).await.unwrap();
    assert_eq!(
        cluster
            .log(logs.table_id(), None, 0)
            .unwrap()
            .records()
            .as_ref(),
        whole.as_slice(),
        "served without the torn bytes"
    );
}
