//! The provider and catalog work through any [`FlussSource`]: here a read-only source
//! that is not a LocalStore (it forwards what a cluster source would answer) plans
//! and runs the same union reads, and statements that write are refused clearly.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use fluss::metadata::{PartitionInfo, TablePath};
use fluss_datafusion::lake::LakeLocation;
use fluss_datafusion::log::{ChangelogBatch, LogRange, LogReadOptions};
use fluss_datafusion::source::{
    BucketLocation, BucketOffsets, FlussSource, FlussTable, LocalStore, ReadableSnapshot,
};
use fluss_datafusion::sql::FlussSession;
use fluss_datafusion::{ErrorKind, FlussCatalog, Result};
use futures::stream::BoxStream;

/// A source that only reads, answering from a LocalStore it does not expose.
#[derive(Debug)]
struct ReadOnly(LocalStore);

#[async_trait]
impl FlussSource for ReadOnly {
    fn name(&self) -> String {
        format!("read-only view of {}", self.0.name())
    }

    async fn list_databases(&self) -> Result<Vec<String>> {
        self.0.list_databases().await
    }

    async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        FlussSource::list_tables(&self.0, database).await
    }

    async fn get_table(&self, path: &TablePath) -> Result<FlussTable> {
        self.0.get_table(path).await
    }

    async fn list_partitions(&self, table: &FlussTable) -> Result<Vec<PartitionInfo>> {
        self.0.list_partitions(table).await
    }

    async fn readable_lake_snapshot(&self, table: &FlussTable) -> Result<Option<ReadableSnapshot>> {
        self.0.readable_lake_snapshot(table).await
    }

    async fn lake_snapshot(
        &self,
        table: &FlussTable,
        snapshot_id: i64,
    ) -> Result<Option<ReadableSnapshot>> {
        self.0.lake_snapshot(table, snapshot_id).await
    }

    async fn offsets_after(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
        offsets: &[BucketOffsets],
        timestamp_ms: i64,
    ) -> Result<Vec<i64>> {
        self.0
            .offsets_after(table, buckets, offsets, timestamp_ms)
            .await
    }

    async fn bucket_offsets(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<BucketOffsets>> {
        self.0.bucket_offsets(table, buckets).await
    }

    async fn read_log(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        range: LogRange,
        options: LogReadOptions,
    ) -> Result<BoxStream<'static, Result<ChangelogBatch>>> {
        self.0.read_log(table, bucket, range, options).await
    }

    async fn lake_location(&self, table: &FlussTable) -> Result<LakeLocation> {
        self.0.lake_location(table).await
    }
}

async fn rows(ctx: &SessionContext, sql: &str) -> String {
    let batches: Vec<RecordBatch> = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test]
async fn a_source_that_is_not_a_local_store_runs_union_reads() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let writer = FlussSession::new(Arc::new(LocalStore::open(root).await.unwrap()))
        .await
        .unwrap();
    for sql in [
        "CREATE TABLE users (id BIGINT, name STRING, score INT, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
        "INSERT INTO users VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)",
        "CALL fluss.tier('users')",
        "INSERT INTO users VALUES (2, 'b2', 21), (4, 'd', 40)",
        "DELETE FROM users WHERE id = 3",
        "CREATE TABLE events (id BIGINT, kind STRING) \
         WITH ('bucket.num' = '2', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true')",
        "INSERT INTO events VALUES (1, 'x'), (2, 'y')",
        "CALL fluss.tier('events')",
        "INSERT INTO events VALUES (3, 'z')",
    ] {
        writer.execute(sql).await.unwrap();
    }
    let foreign = Arc::new(ReadOnly(LocalStore::open(root).await.unwrap()));
    let ctx = SessionContext::new();
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(foreign.clone())));
    let reference = SessionContext::new();
    reference.register_catalog(
        "fluss",
        Arc::new(FlussCatalog::new(Arc::new(
            LocalStore::open(root).await.unwrap(),
        ))),
    );
    for sql in [
        "SELECT * FROM fluss.fluss.users ORDER BY id",
        "SELECT * FROM fluss.fluss.events ORDER BY id",
        "SELECT count(*) FROM fluss.fluss.\"users$lake\"",
        "SELECT id, score FROM fluss.fluss.users WHERE score > 15 ORDER BY id",
        "SELECT snapshot_id, commit_user, fluss_offsets IS NOT NULL FROM fluss.fluss.\"events$lake$snapshots\"",
    ] {
        assert_eq!(rows(&ctx, sql).await, rows(&reference, sql).await, "{sql}");
    }
    let users = rows(&ctx, "SELECT * FROM fluss.fluss.users ORDER BY id").await;
    assert!(users.contains("| 2  | b2   | 21    |"), "{users}");
    assert!(!users.contains("| 3 "), "{users}");
    // the plan is a union read: lake snapshot and log ranges
    let plan = rows(&ctx, "EXPLAIN SELECT * FROM fluss.fluss.events").await;
    assert!(
        plan.contains("FlussLogScanExec") && plan.contains("lake_snapshot=1"),
        "{plan}"
    );

    // a read-only source refuses what writes, naming itself
    let session = FlussSession::new(foreign).await.unwrap();
    for sql in [
        "INSERT INTO events VALUES (9, 'w')",
        "CALL fluss.tier('events')",
        "CREATE TABLE t (id BIGINT)",
    ] {
        let e = session.execute(sql).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FeatureUnsupported, "{sql}: {e}");
        assert!(e.to_string().contains("read-only view of"), "{sql}: {e}");
    }
}
