//! LocalStore end to end: metadata in Fluss's layout, log and PK writes, changelog
//! reads, tiering to Paimon with crash recovery.

use super::common;

use std::sync::Arc;

use datafusion::arrow::array::{BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::record::ChangeType;
use fluss_datafusion::ErrorKind;
use fluss_datafusion::lake::paimon::PaimonLake;
use fluss_datafusion::log::{LogRange, LogReadOptions};
use fluss_datafusion::source::{BucketLocation, FlussSource, LocalStore};
use fluss_datafusion::tier;
use futures::TryStreamExt;
use serde_json::json;

fn log_descriptor(buckets: i32, lake: bool) -> TableDescriptor {
    let schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("score", DataTypes::int())
        .build()
        .unwrap();
    let mut b = TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(buckets), vec!["id".to_string()]);
    if lake {
        b = b
            .property("table.datalake.enabled", "true")
            .property("table.datalake.format", "paimon");
    }
    b.build().unwrap()
}

fn pk_descriptor(buckets: i32) -> TableDescriptor {
    let schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("score", DataTypes::int())
        .primary_key(vec!["id"])
        .unwrap()
        .build()
        .unwrap();
    TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(buckets), vec![])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.format", "paimon")
        .build()
        .unwrap()
}

fn rows(ids: &[i64], names: &[&str], scores: &[i32]) -> RecordBatch {
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("score", DataType::Int32, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(StringArray::from(names.to_vec())),
            Arc::new(Int32Array::from(scores.to_vec())),
        ],
    )
    .unwrap()
}

async fn store() -> (tempfile::TempDir, LocalStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path().to_str().unwrap())
        .await
        .unwrap();
    store.create_database("db", None, false).await.unwrap();
    (dir, store)
}

async fn read_all_log(
    store: &LocalStore,
    path: &TablePath,
) -> Vec<(i64, ChangeType, serde_json::Value)> {
    let table = store.get_table(path).await.unwrap();
    let mut out = Vec::new();
    let buckets = store.buckets(&table).await.unwrap();
    let all_offsets = store.bucket_offsets(&table, &buckets).await.unwrap();
    for (bucket, offsets) in buckets.into_iter().zip(all_offsets) {
        let batches: Vec<_> = store
            .read_log(
                &table,
                &bucket,
                LogRange::new(offsets.earliest, offsets.high_watermark),
                LogReadOptions::verified(),
            )
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        for b in batches {
            let rendered = common::render_rows(std::slice::from_ref(&b.batch));
            for (i, row) in rendered.into_iter().enumerate() {
                out.push((b.first_offset + i as i64, b.change_types[i], row));
            }
        }
    }
    out
}

#[tokio::test]
async fn metadata_is_written_in_the_fluss_layout() {
    let (dir, store) = store().await;
    let path = TablePath::new("db", "events");
    let table = store
        .create_table(&path, &log_descriptor(3, true), false)
        .await
        .unwrap();
    assert_eq!(table.info.get_num_buckets(), 3);
    assert_eq!(table.info.get_schema_id(), 1);
    let root = dir.path();
    let reg: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("zk/metadata/databases/db/tables/events.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(reg["version"], 1);
    assert_eq!(reg["bucket_key"], json!(["id"]));
    assert_eq!(reg["bucket_count"], 3);
    assert_eq!(
        reg["properties"]["table.datalake.paimon.warehouse"],
        "lake/paimon"
    );
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("zk/metadata/databases/db/tables/events/schemas/1.json")).unwrap(),
    )
    .unwrap();
    // Java key order: version, columns, highest_field_id; INT is "INTEGER"
    let text = serde_json::to_string(&schema).unwrap();
    assert!(
        text.starts_with(
            r#"{"version":1,"columns":[{"name":"id","data_type":{"type":"BIGINT"},"id":0}"#
        ),
        "{text}"
    );
    assert!(text.contains(r#""type":"INTEGER""#));
    assert!(root.join("zk/metadata/databases/db.json").exists());
    // a second table gets the next id
    let t2 = store
        .create_table(
            &TablePath::new("db", "other"),
            &log_descriptor(1, false),
            false,
        )
        .await
        .unwrap();
    assert_eq!(t2.table_id(), table.table_id() + 1);
    let err = store
        .create_table(&path, &log_descriptor(1, false), false)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    let mut tables = store.list_tables("db").await.unwrap();
    tables.sort();
    assert_eq!(tables, vec!["events", "other"]);
    store
        .drop_table(&TablePath::new("db", "other"), false)
        .await
        .unwrap();
    assert_eq!(store.list_tables("db").await.unwrap(), vec!["events"]);
}

#[tokio::test]
async fn names_are_validated_and_unknown_tables_are_not_found() {
    let (_dir, store) = store().await;
    for bad in ["../x", "a/b", "x y", ".."] {
        let err = store
            .create_table(&TablePath::new("db", bad), &log_descriptor(1, false), false)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}");
        assert!(store.create_database(bad, None, false).await.is_err());
    }
    let err = store
        .get_table(&TablePath::new("db", "nope"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("db.nope"), "{err}");
}

#[tokio::test]
async fn log_appends_are_bucketed_and_read_back() {
    let (dir, store) = store().await;
    let path = TablePath::new("db", "events");
    store
        .create_table(&path, &log_descriptor(2, true), false)
        .await
        .unwrap();
    let r1 = store
        .append(
            &path,
            &rows(&[1, 2, 3, 4], &["a", "b", "c", "d"], &[1, 2, 3, 4]),
        )
        .await
        .unwrap();
    assert_eq!(r1.rows, 4);
    store
        .append(&path, &rows(&[5, 1], &["e", "a2"], &[5, 6]))
        .await
        .unwrap();
    let log = read_all_log(&store, &path).await;
    assert_eq!(log.len(), 6);
    assert!(log.iter().all(|(_, c, _)| *c == ChangeType::AppendOnly));
    // same id always lands in the same bucket
    let table = store.get_table(&path).await.unwrap();
    let id_dir = dir
        .path()
        .join(format!("data/db/events-{}", table.table_id()));
    assert!(id_dir.join("log-0/00000000000000000000.log").exists());
    assert!(id_dir.join("log-1/00000000000000000000.log").exists());
    // appending to a PK table is refused
    let pk = TablePath::new("db", "pk");
    store
        .create_table(&pk, &pk_descriptor(1), false)
        .await
        .unwrap();
    let err = store
        .append(&pk, &rows(&[1], &["a"], &[1]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn pk_writes_produce_the_fluss_changelog_across_reopen() {
    let (dir, store) = store().await;
    let path = TablePath::new("db", "pk");
    store
        .create_table(&path, &pk_descriptor(1), false)
        .await
        .unwrap();
    store
        .upsert(&path, &rows(&[1, 2], &["a", "b"], &[1, 2]))
        .await
        .unwrap();
    drop(store);
    // a new process replays the changelog to rebuild the key state
    let store = LocalStore::open(dir.path().to_str().unwrap())
        .await
        .unwrap();
    store
        .upsert(&path, &rows(&[2], &["b2"], &[20]))
        .await
        .unwrap();
    let deleted = store
        .delete(&path, &rows(&[1, 99], &["", ""], &[0, 0]))
        .await
        .unwrap();
    assert_eq!(deleted.records, 1);
    // deleting a missing key writes an empty batch that still takes an offset
    let none = store
        .delete(&path, &rows(&[42], &[""], &[0]))
        .await
        .unwrap();
    assert_eq!(none.records, 0);
    store
        .upsert(&path, &rows(&[3], &["c"], &[3]))
        .await
        .unwrap();
    let log = read_all_log(&store, &path).await;
    let changes: Vec<(i64, ChangeType, i64)> = log
        .iter()
        .map(|(o, c, r)| (*o, *c, r["id"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        changes,
        vec![
            (0, ChangeType::Insert, 1),
            (1, ChangeType::Insert, 2),
            (2, ChangeType::UpdateBefore, 2),
            (3, ChangeType::UpdateAfter, 2),
            (4, ChangeType::Delete, 1),
            // offset 5 is the empty batch
            (6, ChangeType::Insert, 3),
        ]
    );
    assert_eq!(log[2].2["name"], "b", "-U carries the previous image");
    assert_eq!(log[4].2["name"], "a", "-D carries the previous image");
    let table = store.get_table(&path).await.unwrap();
    let hw = store
        .bucket_offsets(
            &table,
            &[BucketLocation {
                partition: None,
                bucket: 0,
            }],
        )
        .await
        .unwrap()[0];
    assert_eq!(hw.high_watermark, 7);
}

#[tokio::test]
async fn one_kv_write_mixes_upserts_and_deletes_in_one_batch_per_bucket() {
    let (_dir, store) = store().await;
    let path = TablePath::new("db", "mixed");
    store
        .create_table(&path, &pk_descriptor(2), false)
        .await
        .unwrap();
    store
        .upsert(
            &path,
            &rows(&[1, 2, 3, 4], &["a", "b", "c", "d"], &[1, 2, 3, 4]),
        )
        .await
        .unwrap();
    // update 1, delete 2, insert 5, delete 5 again, delete a missing key, update 4
    let batch = rows(
        &[1, 2, 5, 5, 99, 4],
        &["a2", "", "e", "", "", "d2"],
        &[10, 0, 5, 0, 0, 40],
    );
    let deletes = BooleanArray::from(vec![false, true, false, true, true, false]);
    let written = store.write_changes(&path, &batch, &deletes).await.unwrap();
    assert_eq!(written.rows, 6);
    assert_eq!(written.batches, 2, "one changelog batch per bucket touched");
    // -U/+U for 1 and 4, -D for 2, +I and -D for 5, nothing for 99
    assert_eq!(written.records, 7);
    let mut live: Vec<(i64, String)> = Vec::new();
    let mut by_key = std::collections::BTreeMap::new();
    for (_, change, row) in read_all_log(&store, &path).await {
        let id = row["id"].as_i64().unwrap();
        match change {
            ChangeType::Delete | ChangeType::UpdateBefore => {
                by_key.remove(&id);
            }
            _ => {
                by_key.insert(id, row["name"].as_str().unwrap().to_string());
            }
        }
    }
    live.extend(by_key);
    assert_eq!(
        live,
        vec![(1, "a2".into()), (3, "c".into()), (4, "d2".into())]
    );
    let wrong = BooleanArray::from(vec![true]);
    let err = store
        .write_changes(&path, &batch, &wrong)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("1 delete flags for 6 rows"),
        "{err}"
    );
}

async fn lake_rows(dir: &tempfile::TempDir, table: &str) -> Vec<serde_json::Value> {
    let lake = PaimonLake::open(dir.path().join("lake/paimon").to_str().unwrap()).unwrap();
    let batches = lake.read_all("db", table, None).await.unwrap();
    common::sort_rows(common::render_rows(&batches))
}

#[tokio::test]
async fn tiering_writes_paimon_snapshots_with_offsets() {
    let (dir, store) = store().await;
    let path = TablePath::new("db", "events");
    store
        .create_table(&path, &log_descriptor(2, true), false)
        .await
        .unwrap();
    store
        .append(&path, &rows(&[1, 2, 3], &["a", "b", "c"], &[1, 2, 3]))
        .await
        .unwrap();
    let first = tier(&store, &path).await.unwrap();
    assert_eq!(first.records, 3);
    let s1 = first.snapshot_id.unwrap();
    assert_eq!(lake_rows(&dir, "events").await.len(), 3);
    store
        .append(&path, &rows(&[4], &["d"], &[4]))
        .await
        .unwrap();
    let second = tier(&store, &path).await.unwrap();
    assert_eq!(second.records, 1);
    assert!(second.snapshot_id.unwrap() > s1);
    // nothing new: no snapshot
    assert_eq!(tier(&store, &path).await.unwrap().snapshot_id, None);
    let rows = lake_rows(&dir, "events").await;
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3], json!({"id": 4, "name": "d", "score": 4}));
    // laketable + offsets file + snapshot property
    let table = store.get_table(&path).await.unwrap();
    let readable = store.readable_lake_snapshot(&table).await.unwrap().unwrap();
    assert_eq!(readable.snapshot_id, second.snapshot_id.unwrap());
    let mut total = 0;
    let buckets = store.buckets(&table).await.unwrap();
    let all_offsets = store.bucket_offsets(&table, &buckets).await.unwrap();
    for (bucket, offsets) in buckets.into_iter().zip(all_offsets) {
        let hw = offsets.high_watermark;
        assert_eq!(readable.offsets.get(None, bucket.bucket).unwrap_or(0), hw);
        total += hw;
    }
    assert_eq!(total, 4);
    let lake = PaimonLake::open(dir.path().join("lake/paimon").to_str().unwrap()).unwrap();
    let paimon_table = lake.table("db", "events").await.unwrap().unwrap();
    let snapshot = paimon_table
        .snapshot_manager()
        .get_latest_snapshot()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(snapshot.commit_user(), "__fluss_lake_tiering");
    let offsets_path = &snapshot.properties().unwrap()["fluss-offsets"];
    assert!(
        offsets_path.starts_with("remote/lake/db/events-"),
        "{offsets_path}"
    );
    assert!(dir.path().join(offsets_path).exists());
    assert!(
        !dir.path()
            .join(format!(
                "zk/tabletservers/tables/{}/lake_tiering_pending.json",
                table.table_id()
            ))
            .exists()
    );
}

#[tokio::test]
async fn tiering_pk_tables_applies_updates_and_deletes_in_the_lake() {
    let (dir, store) = store().await;
    let path = TablePath::new("db", "pk");
    store
        .create_table(&path, &pk_descriptor(2), false)
        .await
        .unwrap();
    store
        .upsert(&path, &rows(&[1, 2, 3], &["a", "b", "c"], &[1, 2, 3]))
        .await
        .unwrap();
    tier(&store, &path).await.unwrap();
    store
        .upsert(&path, &rows(&[2, 4], &["b2", "d"], &[20, 4]))
        .await
        .unwrap();
    store.delete(&path, &rows(&[3], &[""], &[0])).await.unwrap();
    tier(&store, &path).await.unwrap();
    assert_eq!(
        lake_rows(&dir, "pk").await,
        vec![
            json!({"id": 1, "name": "a", "score": 1}),
            json!({"id": 2, "name": "b2", "score": 20}),
            json!({"id": 4, "name": "d", "score": 4}),
        ]
    );
}

#[tokio::test]
async fn interrupted_tiering_is_recovered_without_tiering_twice() {
    let (dir, store) = store().await;
    let path = TablePath::new("db", "events");
    store
        .create_table(&path, &log_descriptor(1, true), false)
        .await
        .unwrap();
    store
        .append(&path, &rows(&[1, 2], &["a", "b"], &[1, 2]))
        .await
        .unwrap();
    let done = tier(&store, &path).await.unwrap();
    let table = store.get_table(&path).await.unwrap();
    let id = table.table_id();
    // Simulate a crash after the lake commit, before registration: unregister the
    // snapshot and leave the pending marker the run would have left.
    let lake_node = dir
        .path()
        .join(format!("zk/tabletservers/tables/{id}/laketable.json"));
    let lake_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&lake_node).unwrap()).unwrap();
    let offsets = lake_json["lake_snapshots"][0]["tiered_offsets"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(&lake_node).unwrap();
    let lake = PaimonLake::open(dir.path().join("lake/paimon").to_str().unwrap()).unwrap();
    let snapshot = lake
        .table("db", "events")
        .await
        .unwrap()
        .unwrap()
        .snapshot_manager()
        .get_latest_snapshot()
        .await
        .unwrap()
        .unwrap();
    std::fs::write(
        dir.path().join(format!(
            "zk/tabletservers/tables/{id}/lake_tiering_pending.json"
        )),
        serde_json::to_vec(
            &json!({"commit_identifier": snapshot.commit_identifier(), "offsets": offsets}),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        store
            .readable_lake_snapshot(&table)
            .await
            .unwrap()
            .is_none()
    );
    let recovered = tier(&store, &path).await.unwrap();
    assert!(recovered.recovered);
    assert_eq!(recovered.snapshot_id, done.snapshot_id);
    assert_eq!(
        recovered.records, 0,
        "the recovered offsets are not tiered again"
    );
    assert_eq!(lake_rows(&dir, "events").await.len(), 2);

    // A marker whose commit never happened is discarded with its offsets file.
    let orphan = format!("remote/lake/db/events-{id}/metadata/orphan.offsets");
    std::fs::write(
        dir.path().join(&orphan),
        br#"{"version":1,"table_id":0,"bucket_offsets":[99]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join(format!(
            "zk/tabletservers/tables/{id}/lake_tiering_pending.json"
        )),
        serde_json::to_vec(&json!({"commit_identifier": 1, "offsets": orphan})).unwrap(),
    )
    .unwrap();
    store
        .append(&path, &rows(&[3], &["c"], &[3]))
        .await
        .unwrap();
    let next = tier(&store, &path).await.unwrap();
    assert!(!next.recovered);
    assert_eq!(next.records, 1);
    assert!(!dir.path().join(&orphan).exists());
    assert_eq!(lake_rows(&dir, "events").await.len(), 3);
}

#[tokio::test]
async fn partitioned_tables_register_partitions_and_tier_them() {
    let (dir, store) = store().await;
    let schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("dt", DataTypes::string())
        .build()
        .unwrap();
    let descriptor = TableDescriptor::builder()
        .schema(schema)
        .partitioned_by(vec!["dt"])
        .distributed_by(Some(1), vec![])
        .property("table.datalake.enabled", "true")
        .build()
        .unwrap();
    let path = TablePath::new("db", "parts");
    let table = store.create_table(&path, &descriptor, false).await.unwrap();
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as _),
        (
            "dt",
            Arc::new(StringArray::from(vec![
                "2024-01-01",
                "2024-01-02",
                "2024-01-01",
            ])) as _,
        ),
    ])
    .unwrap();
    store.append(&path, &batch).await.unwrap();
    let partitions = store.list_partitions(&table).await.unwrap();
    assert_eq!(partitions.len(), 2);
    assert_eq!(partitions[0].get_partition_name(), "2024-01-01");
    let pid = partitions[0].get_partition_id();
    assert!(
        dir.path()
            .join(format!(
                "data/db/parts-{}/2024-01-01-p{pid}/log-0/00000000000000000000.log",
                table.table_id()
            ))
            .exists()
    );
    let result = tier(&store, &path).await.unwrap();
    assert_eq!(result.buckets, 2);
    assert_eq!(lake_rows(&dir, "parts").await.len(), 3);
    let readable = store.readable_lake_snapshot(&table).await.unwrap().unwrap();
    assert_eq!(
        readable.offsets.get(Some(pid), 0),
        Some(2),
        "two rows in 2024-01-01"
    );
}

/// Tiering creates the Paimon table Fluss 1.0 creates for a new table
/// (apache/fluss `PaimonConversions.toPaimonSchema`, `setPaimonDefaultProperties`,
/// `setFlussPropertyToPaimon`; `docs/reference/fluss-formats.md` §3.2): the table's
/// columns only (no `__bucket`, `__offset`, `__timestamp`), and exactly these options:
/// `partition.legacy-name=false` always; `bucket=-1` without a bucket key, else the
/// bucket count and `bucket-key`; `changelog-producer=input` with a primary key;
/// `paimon.X` as `X`; every other property but `table.datalake.paimon.*` as `fluss.*`.
#[tokio::test]
async fn tiering_creates_the_paimon_tables_fluss_1_0_creates() {
    use std::collections::BTreeMap;
    let (dir, store, _session) = fluss_test_support::local_store::store_from_sql(&[
        "CREATE DATABASE db",
        "CREATE TABLE db.nokey (id BIGINT, v STRING) PARTITIONED BY (v) \
         WITH ('bucket.num' = '3', 'table.datalake.enabled' = 'true', \
         'paimon.file.compression' = 'zstd')",
        "INSERT INTO db.nokey VALUES (1, 'a')",
        "CALL fluss.tier('db.nokey')",
        "CREATE TABLE db.keyed (id BIGINT, v STRING) \
         WITH ('bucket.num' = '2', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true')",
        "INSERT INTO db.keyed VALUES (1, 'a')",
        "CALL fluss.tier('db.keyed')",
        "CREATE TABLE db.pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '4', 'table.datalake.enabled' = 'true')",
        "INSERT INTO db.pk VALUES (1, 'a')",
        "CALL fluss.tier('db.pk')",
    ])
    .await;
    let lake = PaimonLake::open(&dir.path().join("lake/paimon").to_string_lossy()).unwrap();
    for (name, expected) in [
        (
            "nokey",
            vec![
                ("bucket", "-1"),
                ("file.compression", "zstd"),
                ("partition.legacy-name", "false"),
            ],
        ),
        (
            "keyed",
            vec![
                ("bucket", "2"),
                ("bucket-key", "id"),
                ("partition.legacy-name", "false"),
            ],
        ),
        (
            "pk",
            vec![
                ("bucket", "4"),
                ("bucket-key", "id"),
                ("changelog-producer", "input"),
                ("partition.legacy-name", "false"),
            ],
        ),
    ] {
        let table = lake.table("db", name).await.unwrap().expect("tiered");
        let schema = table.schema();
        let columns: Vec<&str> = schema.fields().iter().map(|f| f.name()).collect();
        assert_eq!(columns, ["id", "v"], "{name}: a clean table");
        let fluss_table = store.get_table(&TablePath::new("db", name)).await.unwrap();
        let mut want: BTreeMap<String, String> = expected
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let info = &fluss_table.info;
        for (key, value) in info
            .get_properties()
            .iter()
            .chain(info.get_custom_properties())
        {
            if !key.starts_with("paimon.") && !key.starts_with("table.datalake.paimon.") {
                want.insert(format!("fluss.{key}"), value.clone());
            }
        }
        let got: BTreeMap<String, String> = schema
            .options()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

/// Tiering creates the Iceberg table Fluss 1.0 creates for a new table (FIP-27,
/// apache/fluss #4019; `docs/reference/fluss-formats.md` §3.3): the table's columns
/// only, `identity(<partition keys>)` then `bucket(<bucket key>, N)` and no bucket field
/// without a bucket key, unsorted, and the table's properties as `fluss.*` (plus the
/// merge-on-read modes for primary keys).
#[tokio::test]
async fn tiering_creates_the_iceberg_tables_fluss_1_0_creates() {
    use fluss_datafusion::lake::iceberg::IcebergLakeTable;
    let (_dir, store, _session) = fluss_test_support::local_store::store_from_sql(&[
        "CREATE DATABASE db",
        "CREATE TABLE db.nokey (id BIGINT, v STRING) PARTITIONED BY (v) \
         WITH ('bucket.num' = '3', 'table.datalake.enabled' = 'true', \
         'table.datalake.format' = 'iceberg')",
        "INSERT INTO db.nokey VALUES (1, 'a')",
        "CALL fluss.tier('db.nokey')",
        "CREATE TABLE db.pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '4', 'table.datalake.enabled' = 'true', \
         'table.datalake.format' = 'iceberg')",
        "INSERT INTO db.pk VALUES (1, 'a')",
        "CALL fluss.tier('db.pk')",
    ])
    .await;
    for (name, spec, merge_on_read) in [
        ("nokey", vec!["identity(v)"], false),
        ("pk", vec!["bucket[4](id)"], true),
    ] {
        let table = store.get_table(&TablePath::new("db", name)).await.unwrap();
        let location = store.lake_location(&table).await.unwrap();
        let lake = IcebergLakeTable::open(&location, &table)
            .await
            .unwrap()
            .expect("tiered");
        let metadata = lake.table().metadata();
        let columns: Vec<String> = metadata
            .current_schema()
            .as_struct()
            .fields()
            .iter()
            .map(|f| f.name.clone())
            .collect();
        assert_eq!(columns, ["id", "v"], "{name}: a clean table");
        let schema = metadata.current_schema();
        let fields: Vec<String> = metadata
            .default_partition_spec()
            .fields()
            .iter()
            .map(|f| {
                let source = schema.field_by_id(f.source_id).expect("source column");
                format!("{}({})", f.transform, source.name)
            })
            .collect();
        assert_eq!(fields, spec, "{name}");
        assert!(
            metadata.default_sort_order().is_unsorted(),
            "{name}: unsorted"
        );
        let properties = metadata.properties();
        for (key, value) in table.info.get_properties() {
            if key.starts_with("table.datalake.iceberg.") {
                // the lake catalog's own options stay out (they may hold credentials)
                assert!(
                    !properties.contains_key(&format!("fluss.{key}")),
                    "{name}: {key}"
                );
                continue;
            }
            assert_eq!(
                properties.get(&format!("fluss.{key}")),
                Some(value),
                "{name}: fluss.{key}"
            );
        }
        for mode in ["write.delete.mode", "write.update.mode", "write.merge.mode"] {
            assert_eq!(
                properties.get(mode).map(String::as_str),
                merge_on_read.then_some("merge-on-read"),
                "{name}: {mode}"
            );
        }
    }
}
