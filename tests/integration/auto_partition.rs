//! Auto-partitioning on a clock the LocalStore is given, as Fluss's coordinator does
//! it (`AutoPartitionManager`): partitions pre-created, a write refused for a
//! partition retention already dropped, expired partitions dropped from Fluss while
//! their tiered rows are still read from the lake, and a dropped partition created
//! again with a new id read from its own log only. Both lake formats, through the
//! LocalStore and through a cluster.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use fluss_datafusion::source::{FlussSource, LocalStore, LocalStoreOptions, StoreClock};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::mirror::MirroredSource;

/// 2025-05-08 10:30:00 UTC.
const MAY_8: i64 = 1_746_700_200_000;
const DAY: i64 = 86_400_000;

fn text(batches: &[RecordBatch]) -> Vec<String> {
    let options = FormatOptions::default();
    let mut rows = Vec::new();
    for batch in batches {
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .map(|f| f.value(row).to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
    }
    rows
}

async fn scenario(format: &str, through_cluster: bool) {
    let label = format!(
        "{format}, {}",
        if through_cluster { "cluster" } else { "store" }
    );
    let dir = tempfile::tempdir().unwrap();
    let clock = StoreClock::manual(MAY_8);
    let options = LocalStoreOptions {
        datalake_format: format.to_string(),
        clock: clock.clone(),
        ..Default::default()
    };
    let store = Arc::new(
        LocalStore::open_with_options(dir.path().to_str().unwrap(), options)
            .await
            .unwrap(),
    );
    let source: Arc<dyn FlussSource> = if through_cluster {
        Arc::new(MirroredSource::start(store.clone()).await.unwrap())
    } else {
        store.clone()
    };
    let session = FlussSession::new(source).await.unwrap();
    let run = |sql: &'static str| {
        let session = &session;
        async move {
            session
                .execute(sql)
                .await
                .map(|b| text(&b))
                .map_err(|e| e.to_string())
        }
    };
    run("CREATE DATABASE db").await.unwrap();
    run(
        "CREATE TABLE db.t (id INT, dt STRING) PARTITIONED BY (dt) WITH (\
         'bucket.num' = '1', 'table.datalake.enabled' = 'true', \
         'table.auto-partition.enabled' = 'true', 'table.auto-partition.time-unit' = 'DAY', \
         'table.auto-partition.num-retention' = '2')",
    )
    .await
    .unwrap();
    // CREATE TABLE pre-creates today and tomorrow (num-precreate defaults to 2)
    assert_eq!(
        run("SHOW PARTITIONS db.t").await.unwrap(),
        ["dt=20250508", "dt=20250509"],
        "{label}"
    );

    // a partition within retention is created by the write; one before it is refused
    run("INSERT INTO db.t VALUES (1, '20250507'), (2, '20250508')")
        .await
        .unwrap();
    let refused = run("INSERT INTO db.t VALUES (9, '20250505')")
        .await
        .unwrap_err();
    assert!(
        refused.contains(
            "Partition value '20250505' is out-of-date. The earliest retained partition is \
             '20250506'."
        ),
        "{label}: {refused}"
    );
    let refused = run("INSERT INTO db.t VALUES (9, '2025-05-08')")
        .await
        .unwrap_err();
    assert!(
        refused.contains("does not match the expected format 'yyyyMMdd'"),
        "{label}: {refused}"
    );
    run("CALL fluss.tier('db.t')").await.unwrap();
    // a tail in the partition that will expire
    run("INSERT INTO db.t VALUES (3, '20250507')")
        .await
        .unwrap();
    assert_eq!(
        run("SELECT * FROM db.t ORDER BY id").await.unwrap(),
        ["1,20250507", "2,20250508", "3,20250507"],
        "{label}"
    );

    // two days on, the next write drops 20250507 from Fluss (retention keeps from
    // 20250508) and pre-creates 20250510 and 20250511; its tiered row is still read
    // from the lake, its tail is gone with it (as in Fluss)
    clock.set(MAY_8 + 2 * DAY);
    run("INSERT INTO db.t VALUES (4, '20250510')")
        .await
        .unwrap();
    assert_eq!(
        run("SHOW PARTITIONS db.t").await.unwrap(),
        ["dt=20250508", "dt=20250509", "dt=20250510", "dt=20250511"],
        "{label}"
    );
    assert_eq!(
        run("SELECT * FROM db.t ORDER BY id").await.unwrap(),
        ["1,20250507", "2,20250508", "4,20250510"],
        "{label}: the expired partition's tiered row, from the lake"
    );
    assert_eq!(
        run("SELECT id FROM db.t WHERE dt = '20250507'")
            .await
            .unwrap(),
        ["1"],
        "{label}: a lake-only partition by its filter"
    );

    // dropped by hand and created again: a new id, read from its own log only (its
    // tiered rows of the old partition stay in the lake, as Fluss's union read has them)
    run("ALTER TABLE db.t DROP PARTITION (dt = '20250508')")
        .await
        .unwrap();
    run("ALTER TABLE db.t ADD PARTITION (dt = '20250508')")
        .await
        .unwrap();
    run("INSERT INTO db.t VALUES (5, '20250508')")
        .await
        .unwrap();
    assert_eq!(
        run("SELECT * FROM db.t ORDER BY id").await.unwrap(),
        ["1,20250507", "2,20250508", "4,20250510", "5,20250508"],
        "{label}"
    );
    run("CALL fluss.tier('db.t')").await.unwrap();
    assert_eq!(
        run("SELECT * FROM db.t ORDER BY id").await.unwrap(),
        ["1,20250507", "2,20250508", "4,20250510", "5,20250508"],
        "{label}: after tiering the new partition"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_are_created_expired_and_read_from_the_lake_after() {
    for format in ["paimon", "iceberg"] {
        for through_cluster in [false, true] {
            scenario(format, through_cluster).await;
        }
    }
}
