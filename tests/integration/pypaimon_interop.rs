//! Paimon interop against an independent implementation, pypaimon:
//! - tables pypaimon wrote (`tests/fixtures/paimon`, made by
//!   `tests/python/gen_paimon_fixtures.py`) read by this crate's Paimon side;
//! - tables this crate's tiering wrote, read by pypaimon (`tests/python/read_paimon.py`).

use super::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::lake::paimon::PaimonLake;
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::tier;
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/paimon")
}

fn expected(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join("expected").join(name)).unwrap()).unwrap()
}

#[tokio::test]
async fn pypaimon_written_tables_read_equal() {
    let lake = PaimonLake::open(fixtures().join("warehouse").to_str().unwrap()).unwrap();
    for table in ["pk_t", "log_t", "pk_del_t"] {
        let batches = lake.read_all("fluss", table, None).await.unwrap();
        let ours = common::sort_rows(common::render_rows(&batches));
        let theirs = common::sort_rows(
            expected(&format!("{table}.json"))
                .as_array()
                .unwrap()
                .clone(),
        );
        assert_eq!(ours, theirs, "table {table}");
        // snapshot metadata written by pypaimon, incl. the fluss-offsets property
        let t = lake.table("fluss", table).await.unwrap().unwrap();
        let snapshots = t.snapshot_manager().list_all().await.unwrap();
        let expected_snapshots = expected(&format!("{table}.snapshots.json"));
        assert_eq!(
            snapshots.len(),
            expected_snapshots.as_array().unwrap().len()
        );
        for (s, e) in snapshots.iter().zip(expected_snapshots.as_array().unwrap()) {
            assert_eq!(s.id(), e["id"].as_i64().unwrap());
            assert_eq!(s.commit_user(), e["commit_user"].as_str().unwrap());
            assert_eq!(
                s.properties().unwrap()["fluss-offsets"],
                e["properties"]["fluss-offsets"].as_str().unwrap()
            );
        }
    }
    // time travel to the first snapshot of the PK table: before the updates
    let first = lake.read_all("fluss", "pk_t", Some(1)).await.unwrap();
    let rows = common::render_rows(&first);
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().any(|r| r["id"] == 2 && r["name"] == "bob"));
}

fn typed_descriptor(pk: bool) -> TableDescriptor {
    let mut schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("score", DataTypes::int())
        .column("price", DataTypes::decimal(10, 2))
        .column("ts", DataTypes::timestamp_with_precision(3))
        .column("ltz", DataTypes::timestamp_ltz_with_precision(6))
        .column("day", DataTypes::date());
    if pk {
        schema = schema.primary_key(vec!["id"]).unwrap();
    }
    let mut d = TableDescriptor::builder()
        .schema(schema.build().unwrap())
        .property("table.datalake.enabled", "true")
        .property("table.datalake.format", "paimon");
    d = if pk {
        d.distributed_by(Some(3), vec![])
    } else {
        d.distributed_by(Some(2), vec!["id".to_string()])
    };
    d.build().unwrap()
}

fn typed_rows(ids: &[i64], name_suffix: &str) -> RecordBatch {
    let n = ids.len();
    RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(ids.to_vec())) as _),
        (
            "name",
            Arc::new(StringArray::from(
                ids.iter()
                    .map(|i| (i % 4 != 0).then(|| format!("n{i}{name_suffix}")))
                    .collect::<Vec<_>>(),
            )) as _,
        ),
        (
            "score",
            Arc::new(Int32Array::from(
                ids.iter().map(|i| (*i as i32) * 10).collect::<Vec<_>>(),
            )) as _,
        ),
        (
            "price",
            Arc::new(
                Decimal128Array::from(
                    ids.iter()
                        .map(|i| (i % 3 != 0).then_some(*i as i128 * 1234 - 500))
                        .collect::<Vec<_>>(),
                )
                .with_precision_and_scale(10, 2)
                .unwrap(),
            ) as _,
        ),
        (
            "ts",
            Arc::new(TimestampMillisecondArray::from(
                ids.iter()
                    .map(|i| 1_700_000_000_123 + i * 86_400_000)
                    .collect::<Vec<_>>(),
            )) as _,
        ),
        (
            "ltz",
            Arc::new(
                TimestampMicrosecondArray::from(vec![1_600_000_000_000_001i64; n])
                    .with_timezone("UTC"),
            ) as _,
        ),
        (
            "day",
            Arc::new(Date32Array::from(
                ids.iter().map(|i| 19_000 + *i as i32).collect::<Vec<_>>(),
            )) as _,
        ),
    ])
    .unwrap()
}

pub(super) fn pypaimon_read(python: &Path, warehouse: &Path, ident: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_paimon.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(warehouse)
        .arg(ident)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pypaimon failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn tiered_tables_are_read_by_pypaimon_with_equal_rows() {
    let Some(python) = common::venv_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path().to_str().unwrap())
        .await
        .unwrap();
    store.create_database("db", None, false).await.unwrap();

    // log table: two tierings
    let log = TablePath::new("db", "log_t");
    store
        .create_table(&log, &typed_descriptor(false), false)
        .await
        .unwrap();
    store
        .append(&log, &typed_rows(&[1, 2, 3, 4, 5], ""))
        .await
        .unwrap();
    tier(&store, &log).await.unwrap();
    store.append(&log, &typed_rows(&[6, 7], "")).await.unwrap();
    tier(&store, &log).await.unwrap();

    // PK table: inserts, then updates and deletes across a tiering
    let pk = TablePath::new("db", "pk_t");
    store
        .create_table(&pk, &typed_descriptor(true), false)
        .await
        .unwrap();
    store
        .upsert(&pk, &typed_rows(&[1, 2, 3, 4, 5, 6, 7, 8], ""))
        .await
        .unwrap();
    tier(&store, &pk).await.unwrap();
    store
        .upsert(&pk, &typed_rows(&[2, 5, 9], "-v2"))
        .await
        .unwrap();
    store.delete(&pk, &typed_rows(&[3, 8], "")).await.unwrap();
    tier(&store, &pk).await.unwrap();

    let warehouse = dir.path().join("lake/paimon");
    let lake = PaimonLake::open(warehouse.to_str().unwrap()).unwrap();
    for (ident, table, expected_count) in [("db.log_t", "log_t", 7), ("db.pk_t", "pk_t", 7)] {
        let theirs = pypaimon_read(&python, &warehouse, ident);
        let ours = common::sort_rows(common::render_rows(
            &lake.read_all("db", table, None).await.unwrap(),
        ));
        let their_rows = common::sort_rows(theirs["rows"].as_array().unwrap().clone());
        assert_eq!(their_rows.len(), expected_count, "{ident}");
        assert_eq!(ours, their_rows, "{ident}");
        let snapshot = &theirs["snapshot"];
        assert_eq!(snapshot["commit_user"], json!("__fluss_lake_tiering"));
        let offsets = snapshot["properties"]["fluss-offsets"].as_str().unwrap();
        assert!(dir.path().join(offsets).exists(), "{offsets}");
    }
    // the model: PK rows after the changes
    let theirs = pypaimon_read(&python, &warehouse, "db.pk_t");
    let ids: Vec<i64> = theirs["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![1, 2, 4, 5, 6, 7, 9]);
    let row2 = theirs["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == 2)
        .unwrap();
    assert_eq!(row2["name"], "n2-v2");
    assert_eq!(row2["price"], "19.68");
    assert_eq!(row2["ts"], "2023-11-16T22:13:20.123");
    assert_eq!(row2["ltz"], "2020-09-13T12:26:40.000Z");
}
