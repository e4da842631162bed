//! The official Rust client, fluss-rs 1.0, against the test server.

use crate::common;

use std::time::Duration;

use arrow::array::{Array, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use common::*;
use fluss::client::{BoundedLogReadRange, EARLIEST_OFFSET, FlussConnection, RecordBatchLogReader};
use fluss::config::Config;
use fluss::metadata::{JsonSerde, Schema, TableBucket, TablePath};
use fluss::record::ChangeType;
use fluss::row::DataGetters;
use fluss::rpc::FlussError;
use fluss::rpc::message::OffsetSpec;
use fluss_test_support::server::{ServerConfig, TestServer};

async fn connect(server: &TestServer) -> FlussConnection {
    FlussConnection::new(Config {
        bootstrap_servers: server.bootstrap_servers(),
        ..Default::default()
    })
    .await
    .expect("connects")
}

fn logs() -> TablePath {
    TablePath::new("db", "logs")
}

fn kv() -> TablePath {
    TablePath::new("db", "kv")
}

fn fixture_schema(name: &str) -> Schema {
    let json: serde_json::Value = serde_json::from_slice(&fixture(name)).unwrap();
    Schema::deserialize_json(&json).expect("fixture schema parses")
}

/// `(id, name)` rows of record batches holding the columns `id` and `name` in some order.
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
    out
}

async fn read_range(
    conn: &FlussConnection,
    projection: Option<&[usize]>,
    start: i64,
    stop: i64,
) -> Vec<RecordBatch> {
    let table = conn.get_table(&logs()).await.expect("get_table");
    let mut scan = table.new_scan();
    if let Some(p) = projection {
        scan = scan.project(p).expect("project");
    }
    let scanner = scan.create_record_batch_log_scanner().expect("scanner");
    let mut reader = RecordBatchLogReader::new_from_ranges(
        scanner,
        vec![BoundedLogReadRange {
            bucket: TableBucket::new(LOGS_TABLE_ID, 0),
            starting_offset: start,
            stopping_offset: stop,
        }],
    )
    .await
    .expect("reader");
    let mut batches = Vec::new();
    while let Some(batch) = tokio::time::timeout(Duration::from_secs(20), reader.next_batch())
        .await
        .expect("reads in time")
        .expect("reads")
    {
        batches.push(batch.into_batch());
    }
    batches
}

#[tokio::test]
async fn databases_and_tables() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;
    let admin = conn.get_admin().unwrap();
    assert_eq!(
        admin.list_databases().await.unwrap(),
        vec!["db".to_string()]
    );
    assert_eq!(
        admin.list_tables("db").await.unwrap(),
        vec!["kv", "logs", "parted"]
    );
    assert!(admin.database_exists("db").await.unwrap());
    assert!(!admin.database_exists("nope").await.unwrap());
    assert!(admin.table_exists(&logs()).await.unwrap());
    assert!(
        !admin
            .table_exists(&TablePath::new("db", "nope"))
            .await
            .unwrap()
    );
    let err = admin.list_tables("nope").await.unwrap_err();
    assert_eq!(err.api_error(), Some(FlussError::DatabaseNotExist));
}

#[tokio::test]
async fn table_info_and_schema_match_the_fixture() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;
    let admin = conn.get_admin().unwrap();

    let info = admin.get_table_info(&logs()).await.unwrap();
    assert_eq!(info.get_table_id(), LOGS_TABLE_ID);
    assert_eq!(info.get_schema_id(), 1);
    assert_eq!(info.get_num_buckets(), 1);
    assert_eq!(info.get_created_time(), 1796152201851);
    assert_eq!(info.get_modified_time(), 1796152201851);
    assert!(!info.has_primary_key());
    assert_eq!(info.get_schema(), &fixture_schema("logs.schema.json"));

    let info = admin.get_table_info(&kv()).await.unwrap();
    assert_eq!(info.get_table_id(), KV_TABLE_ID);
    assert!(info.has_primary_key());
    assert_eq!(info.get_primary_keys(), &vec!["id".to_string()]);
    assert_eq!(info.get_bucket_keys(), &["id".to_string()]);
    assert_eq!(info.get_schema(), &fixture_schema("kv.schema.json"));

    for id in [Some(1), None] {
        let schema = admin.get_table_schema(&logs(), id).await.unwrap();
        assert_eq!(schema.schema_id(), 1);
        assert_eq!(schema.schema(), &fixture_schema("logs.schema.json"));
    }
    let err = admin.get_table_schema(&logs(), Some(5)).await.unwrap_err();
    assert_eq!(err.api_error(), Some(FlussError::SchemaNotExist));

    let err = admin
        .get_table_info(&TablePath::new("db", "nope"))
        .await
        .unwrap_err();
    assert_eq!(err.api_error(), Some(FlussError::TableNotExist));
    assert!(conn.get_table(&TablePath::new("db", "nope")).await.is_err());
}

#[tokio::test]
async fn partitions() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;
    let admin = conn.get_admin().unwrap();
    let parts = admin
        .list_partition_infos(&TablePath::new("db", "parted"))
        .await
        .unwrap();
    let ids: Vec<i64> = parts.iter().map(|p| p.get_partition_id()).collect();
    assert_eq!(ids, vec![10, 11]);
    assert_eq!(parts[0].get_partition_name(), "2024-01-01");
    let err = admin.list_partition_infos(&logs()).await.unwrap_err();
    assert_eq!(
        err.api_error(),
        Some(FlussError::TableNotPartitionedException)
    );
}

#[tokio::test]
async fn lake_snapshots() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;
    let admin = conn.get_admin().unwrap();

    let readable = admin
        .get_lake_snapshot(&logs(), None, Some(true))
        .await
        .unwrap();
    assert_eq!(readable.table_id, LOGS_TABLE_ID);
    assert_eq!(readable.snapshot_id, 7);
    assert_eq!(readable.bucket_snapshots.len(), 1);
    assert_eq!(readable.bucket_snapshots[0].bucket_id, 0);
    assert_eq!(readable.bucket_snapshots[0].log_offset, Some(2));

    let by_id = admin
        .get_lake_snapshot(&logs(), Some(8), None)
        .await
        .unwrap();
    assert_eq!(by_id.snapshot_id, 8);

    let latest = admin.get_latest_lake_snapshot(&logs()).await.unwrap();
    assert_eq!(latest.snapshot_id, 8);
    assert_eq!(
        latest
            .table_buckets_offset
            .get(&TableBucket::new(LOGS_TABLE_ID, 0)),
        Some(&3)
    );

    let err = admin.get_latest_lake_snapshot(&kv()).await.unwrap_err();
    assert_eq!(err.api_error(), Some(FlussError::LakeSnapshotNotExist));
}

#[tokio::test]
async fn list_offsets() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;
    let admin = conn.get_admin().unwrap();
    let earliest = admin
        .list_offsets(&logs(), &[0], OffsetSpec::Earliest)
        .await
        .unwrap();
    assert_eq!(earliest.get(&0), Some(&0));
    let latest = admin
        .list_offsets(&logs(), &[0], OffsetSpec::Latest)
        .await
        .unwrap();
    assert_eq!(latest.get(&0), Some(&3));
    let latest = admin
        .list_offsets(&kv(), &[0], OffsetSpec::Latest)
        .await
        .unwrap();
    assert_eq!(latest.get(&0), Some(&5));
    // the second batch of db.logs was committed at 1796152201867
    let ts = admin
        .list_offsets(&logs(), &[0], OffsetSpec::Timestamp(1796152201864))
        .await
        .unwrap();
    assert_eq!(ts.get(&0), Some(&2));
}

#[tokio::test]
async fn bounded_reads_of_the_log_table() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;

    let all = read_range(&conn, None, 0, 3).await;
    assert_eq!(
        rows(&all),
        vec![(1, "a".into()), (2, "b".into()), (3, "c".into())]
    );

    // offset 1 lies inside the first batch: the server sends the whole batch, the client
    // drops offset 0
    let tail = read_range(&conn, None, 1, 3).await;
    assert_eq!(rows(&tail), vec![(2, "b".into()), (3, "c".into())]);

    let head = read_range(&conn, None, 0, 1).await;
    assert_eq!(rows(&head), vec![(1, "a".into())]);
}

#[tokio::test]
async fn projection_is_pushed_down() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;

    let names = read_range(&conn, Some(&[1]), 0, 3).await;
    assert!(names.iter().all(|b| b.num_columns() == 1));
    let values: Vec<String> = names
        .iter()
        .flat_map(|b| {
            let a = b
                .column(0)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone();
            (0..a.len()).map(move |i| a.value(i).to_string())
        })
        .collect();
    assert_eq!(values, vec!["a", "b", "c"]);

    let ids = read_range(&conn, Some(&[0]), 1, 3).await;
    let values: Vec<i64> = ids
        .iter()
        .flat_map(|b| {
            let a = b
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .clone();
            (0..a.len()).map(move |i| a.value(i))
        })
        .collect();
    assert_eq!(values, vec![2, 3]);

    // reordered projection: the server sends [id, name], the client reorders
    let reordered = read_range(&conn, Some(&[1, 0]), 0, 3).await;
    assert_eq!(reordered[0].schema().field(0).name(), "name");
    assert_eq!(
        rows(&reordered),
        vec![(1, "a".into()), (2, "b".into()), (3, "c".into())]
    );
}

#[tokio::test]
async fn fetch_past_the_high_watermark_fails() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;
    let table = conn.get_table(&logs()).await.unwrap();

    // The row-mode scanner surfaces the server's LOG_OFFSET_OUT_OF_RANGE.
    let scanner = table.new_scan().create_log_scanner().unwrap();
    scanner.subscribe(0, 10).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let err = loop {
        match scanner.poll(Duration::from_millis(200)).await {
            Err(e) => break e,
            Ok(records) => assert!(records.is_empty(), "no data past the end"),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no out-of-range error"
        );
    };
    assert!(err.to_string().contains("out of range"), "{err}");

    // The Arrow scanner of fluss-rs 1.0 drops errors of empty fetches
    // (`collect_batches`: `if result.is_empty() && size_in_bytes == 0 { continue }`), so it
    // only ever returns nothing here.
    let scanner = table.new_scan().create_record_batch_log_scanner().unwrap();
    scanner.subscribe(0, 10).await.unwrap();
    for _ in 0..3 {
        assert!(
            scanner
                .poll(Duration::from_millis(200))
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn primary_key_changelog() {
    let server = start(ServerConfig::default()).await;
    let conn = connect(&server).await;
    let table = conn.get_table(&kv()).await.unwrap();
    let scanner = table.new_scan().create_log_scanner().unwrap();
    scanner.subscribe(0, EARLIEST_OFFSET).await.unwrap();
    let mut records = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while records.len() < 5 && std::time::Instant::now() < deadline {
        records.extend(scanner.poll(Duration::from_millis(200)).await.unwrap());
    }
    let change_types: Vec<ChangeType> = records.iter().map(|r| *r.change_type()).collect();
    assert_eq!(
        change_types,
        vec![
            ChangeType::Insert,
            ChangeType::Insert,
            ChangeType::UpdateBefore,
            ChangeType::UpdateAfter,
            ChangeType::Delete,
        ]
    );
    let offsets: Vec<i64> = records.iter().map(|r| r.offset()).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3, 4]);
    let rows: Vec<(i64, String)> = records
        .iter()
        .map(|r| {
            (
                r.row().get_long(0).unwrap(),
                r.row().get_string(1).unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (1, "x".into()),
            (2, "y".into()),
            (1, "x".into()),
            (1, "z".into()),
            (2, "y".into()),
        ]
    );
}

fn sasl_config(server: &TestServer, password: &str) -> Config {
    Config {
        bootstrap_servers: server.bootstrap_servers(),
        security_protocol: "sasl".into(),
        security_sasl_mechanism: "PLAIN".into(),
        security_sasl_username: "admin".into(),
        security_sasl_password: password.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn sasl_plain() {
    let server = start(ServerConfig::with_sasl_plain("admin", "secret")).await;

    let conn = FlussConnection::new(sasl_config(&server, "secret"))
        .await
        .expect("authenticates");
    let admin = conn.get_admin().unwrap();
    assert_eq!(
        admin.list_databases().await.unwrap(),
        vec!["db".to_string()]
    );
    let rows = rows(&read_range(&conn, None, 0, 3).await);
    assert_eq!(rows.len(), 3);

    let err = FlussConnection::new(sasl_config(&server, "wrong"))
        .await
        .err()
        .expect("rejected");
    assert_eq!(
        err.api_error(),
        Some(FlussError::AuthenticateException),
        "{err}"
    );

    // a client that does not authenticate is refused too
    let err = FlussConnection::new(Config {
        bootstrap_servers: server.bootstrap_servers(),
        ..Default::default()
    })
    .await
    .err()
    .expect("rejected");
    assert_eq!(
        err.api_error(),
        Some(FlussError::AuthenticateException),
        "{err}"
    );
}

/// Which RPCs fluss-rs sends for each operation (printed with `--nocapture`), and a few
/// facts the server relies on.
#[tokio::test]
async fn request_sequences() {
    let server = start(ServerConfig::default()).await;
    let name = |k: &i16| match *k {
        1000 => "ApiVersions",
        1003 => "ListDatabases",
        1007 => "GetTableInfo",
        1008 => "ListTables",
        1011 => "GetTableSchema",
        1012 => "MetaData",
        1015 => "FetchLog",
        1021 => "ListOffsets",
        1032 => "GetLakeSnapshot",
        _ => "other",
    };
    let take = || {
        let keys = server.received_api_keys();
        server.clear_received_api_keys();
        keys
    };
    let show = |op: &str, keys: &[i16]| {
        println!("{op}: {:?}", keys.iter().map(name).collect::<Vec<_>>());
    };

    let conn = connect(&server).await;
    let keys = take();
    show("connect", &keys);
    assert_eq!(keys, vec![1000, 1012], "ApiVersions then an empty MetaData");

    let admin = conn.get_admin().unwrap();
    admin.list_databases().await.unwrap();
    let keys = take();
    show("list_databases (first admin call)", &keys);
    assert_eq!(
        keys,
        vec![1000, 1003],
        "a new coordinator connection, then the call"
    );

    admin.get_table_info(&logs()).await.unwrap();
    let keys = take();
    show("get_table_info", &keys);
    assert_eq!(
        keys,
        vec![1007, 1000, 1012],
        "GetTableInfo, then MetaData on a tablet connection"
    );

    admin
        .list_offsets(&logs(), &[0], OffsetSpec::Latest)
        .await
        .unwrap();
    let keys = take();
    show("list_offsets", &keys);
    assert_eq!(keys, vec![1012, 1021]);

    admin.get_latest_lake_snapshot(&logs()).await.unwrap();
    show("get_latest_lake_snapshot", &take());

    let batches = read_range(&conn, None, 0, 3).await;
    assert_eq!(rows(&batches).len(), 3);
    show("get_table + bounded read [0,3)", &take());
}
