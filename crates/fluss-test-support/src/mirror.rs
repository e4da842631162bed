//! A LocalStore served live over the RPC protocol, and a source that reads it
//! through the cluster source while writing into the store: the whole SQL suite (and
//! the differential test) then runs through the cluster path with tables built by SQL.
//!
//! ```text
//! FlussSession ── reads ──> ClusterSource ── RPC ──> TestServer ──> LiveCluster (snapshot)
//!              └─ writes ─> LocalStore ──(after each write: reload the snapshot)──┘
//! ```

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::execution::memory_pool::MemoryPool;
use fluss::metadata::{PartitionInfo, TableDescriptor, TableInfo, TablePath};
use fluss_datafusion::lake::LakeLocation;
use fluss_datafusion::lake::tiering::TieringResult;
use fluss_datafusion::log::{ChangelogBatch, LogRange, LogReadOptions};
use fluss_datafusion::source::{
    BucketLocation, BucketOffsets, ClusterOptions, ClusterSource, FlussSource, FlussTable,
    FlussWriter, LocalStore, LookedUp, NewColumn, ReadableSnapshot, WriteKind, WriteResult,
};
use fluss_datafusion::{Error, Result};
use futures::stream::BoxStream;

use crate::local_store::load_local_store;
use crate::memory::MemoryCluster;
use crate::model::{ClusterModel, ServedLakeSnapshot, ServedLog, ServedTable};
use crate::server::{ServerConfig, TestServer};

/// A cluster model whose snapshot of a store is replaced after each write.
#[derive(Debug, Default)]
pub struct LiveCluster {
    snapshot: RwLock<MemoryCluster>,
    /// Log retention to apply: the served log of `(table, bucket)` of a table that is
    /// not partitioned starts at the offset (its key-value state still holds all).
    retention: std::sync::Mutex<Vec<(TablePath, i32, i64)>>,
}

impl LiveCluster {
    /// Loads `store` again and serves that from now on.
    pub async fn reload(&self, store: &LocalStore) -> Result<()> {
        let mut fresh = load_local_store(store).await?;
        let retention = match self.retention.lock() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        for (path, bucket, before) in retention {
            let Some(table) = fresh.table(path.database(), path.table()) else {
                continue;
            };
            if let Some(log) = fresh.log(table.table_id, None, bucket) {
                let expired = log
                    .expired_before(before)
                    .map_err(|e| Error::invalid_input(e.to_string()))?;
                fresh.add_log(table.table_id, None, bucket, expired);
            }
        }
        match self.snapshot.write() {
            Ok(mut s) => *s = fresh,
            Err(poisoned) => *poisoned.into_inner() = fresh,
        }
        Ok(())
    }

    fn read<T>(&self, f: impl FnOnce(&MemoryCluster) -> T) -> T {
        match self.snapshot.read() {
            Ok(s) => f(&s),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }
}

impl ClusterModel for LiveCluster {
    fn databases(&self) -> Vec<String> {
        self.read(|c| c.databases())
    }

    fn tables(&self, database: &str) -> Option<Vec<String>> {
        self.read(|c| c.tables(database))
    }

    fn table(&self, database: &str, table: &str) -> Option<ServedTable> {
        self.read(|c| c.table(database, table))
    }

    fn table_by_id(&self, table_id: i64) -> Option<(String, String, ServedTable)> {
        self.read(|c| c.table_by_id(table_id))
    }

    fn lake_snapshots(&self, table_id: i64) -> Vec<ServedLakeSnapshot> {
        self.read(|c| c.lake_snapshots(table_id))
    }

    fn log(&self, table_id: i64, partition_id: Option<i64>, bucket: i32) -> Option<ServedLog> {
        self.read(|c| c.log(table_id, partition_id, bucket))
    }
}

/// Reads through a [`ClusterSource`] connected to a [`TestServer`] that serves
/// `store`; writes go into `store`, and the server's snapshot is reloaded after each.
pub struct MirroredSource {
    store: Arc<LocalStore>,
    live: Arc<LiveCluster>,
    cluster: ClusterSource,
    /// Kept alive as long as the source: dropping it stops the server.
    _server: TestServer,
}

impl std::fmt::Debug for MirroredSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MirroredSource")
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

impl MirroredSource {
    /// Serves `store` on 127.0.0.1 and connects a cluster source to it.
    pub async fn start(store: Arc<LocalStore>) -> Result<Self> {
        let live = Arc::new(LiveCluster::default());
        live.reload(&store).await?;
        let server = TestServer::start(live.clone(), ServerConfig::default())
            .await
            .map_err(|e| {
                Error::internal("cannot start the Fluss RPC test server").with_source(e)
            })?;
        let cluster = ClusterSource::connect(ClusterOptions {
            bootstrap_servers: server.bootstrap_servers(),
            ..Default::default()
        })
        .await?;
        Ok(Self {
            store,
            live,
            cluster,
            _server: server,
        })
    }

    /// Serves what the store holds now (after writes that did not go through this
    /// source, e.g. straight into the store).
    pub async fn reload(&self) -> Result<()> {
        self.live.reload(&self.store).await
    }

    /// Serves bucket `bucket` of `path` (a table that is not partitioned) as if log
    /// retention had deleted its batches below `before` (a batch boundary): FetchLog
    /// and ListOffsets see the log start there, while the bucket's key-value state
    /// (Lookup, ScanKv) still holds every key, as a tablet server's RocksDB does.
    pub async fn expire_log(&self, path: &TablePath, bucket: i32, before: i64) -> Result<()> {
        match self.live.retention.lock() {
            Ok(mut r) => r.push((path.clone(), bucket, before)),
            Err(poisoned) => poisoned.into_inner().push((path.clone(), bucket, before)),
        }
        self.reload().await
    }

    /// `result` of a write to the store, once the cluster serves what it wrote.
    async fn then_reload<T>(&self, result: Result<T>) -> Result<T> {
        self.reload().await?;
        result
    }
}

#[async_trait]
impl FlussSource for MirroredSource {
    fn name(&self) -> String {
        self.cluster.name()
    }

    async fn list_databases(&self) -> Result<Vec<String>> {
        self.cluster.list_databases().await
    }

    async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        self.cluster.list_tables(database).await
    }

    async fn get_table(&self, path: &TablePath) -> Result<FlussTable> {
        self.cluster.get_table(path).await
    }

    async fn list_partitions(&self, table: &FlussTable) -> Result<Vec<PartitionInfo>> {
        self.cluster.list_partitions(table).await
    }

    async fn readable_lake_snapshot(&self, table: &FlussTable) -> Result<Option<ReadableSnapshot>> {
        self.cluster.readable_lake_snapshot(table).await
    }

    async fn lake_snapshot(
        &self,
        table: &FlussTable,
        snapshot_id: i64,
    ) -> Result<Option<ReadableSnapshot>> {
        self.cluster.lake_snapshot(table, snapshot_id).await
    }

    async fn offsets_after(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
        offsets: &[BucketOffsets],
        timestamp_ms: i64,
    ) -> Result<Vec<i64>> {
        self.cluster
            .offsets_after(table, buckets, offsets, timestamp_ms)
            .await
    }

    async fn bucket_offsets(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<BucketOffsets>> {
        self.cluster.bucket_offsets(table, buckets).await
    }

    async fn read_log(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        range: LogRange,
        options: LogReadOptions,
    ) -> Result<BoxStream<'static, Result<ChangelogBatch>>> {
        self.cluster.read_log(table, bucket, range, options).await
    }

    async fn lake_location(&self, table: &FlussTable) -> Result<LakeLocation> {
        self.cluster.lake_location(table).await
    }

    async fn buckets(&self, table: &FlussTable) -> Result<Vec<BucketLocation>> {
        self.cluster.buckets(table).await
    }

    fn writer(&self) -> Option<&dyn FlussWriter> {
        Some(self)
    }

    fn serves_key_lookups(&self, table: &FlussTable) -> bool {
        self.cluster.serves_key_lookups(table)
    }

    async fn prefetch_tables(&self, paths: &[TablePath]) -> Result<HashMap<TablePath, TableInfo>> {
        self.cluster.prefetch_tables(paths).await
    }

    fn last_seen_tables(&self, paths: &[TablePath]) -> Option<HashMap<TablePath, TableInfo>> {
        self.cluster.last_seen_tables(paths)
    }

    fn last_seen_age(&self, paths: &[TablePath]) -> Option<std::time::Duration> {
        self.cluster.last_seen_age(paths)
    }

    async fn lookup_keys(&self, table: &FlussTable, keys: &RecordBatch) -> Result<LookedUp> {
        self.cluster.lookup_keys(table, keys).await
    }

    fn serves_kv_scans(&self, table: &FlussTable) -> bool {
        self.cluster.serves_kv_scans(table)
    }

    async fn scan_kv(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        self.cluster.scan_kv(table, bucket).await
    }
}

#[async_trait]
impl FlussWriter for MirroredSource {
    async fn create_database(
        &self,
        name: &str,
        comment: Option<&str>,
        if_not_exists: bool,
    ) -> Result<()> {
        self.then_reload(
            FlussWriter::create_database(&*self.store, name, comment, if_not_exists).await,
        )
        .await
    }

    async fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
        self.then_reload(FlussWriter::drop_database(&*self.store, name, if_exists, cascade).await)
            .await
    }

    async fn create_table(
        &self,
        path: &TablePath,
        descriptor: &TableDescriptor,
        if_not_exists: bool,
    ) -> Result<()> {
        self.then_reload(
            FlussWriter::create_table(&*self.store, path, descriptor, if_not_exists).await,
        )
        .await
    }

    async fn drop_table(&self, path: &TablePath, if_exists: bool) -> Result<()> {
        self.then_reload(FlussWriter::drop_table(&*self.store, path, if_exists).await)
            .await
    }

    async fn write(
        &self,
        path: &TablePath,
        kind: WriteKind,
        rows: BoxStream<'_, Result<RecordBatch>>,
        memory: Option<&Arc<dyn MemoryPool>>,
    ) -> Result<WriteResult> {
        self.then_reload(FlussWriter::write(&*self.store, path, kind, rows, memory).await)
            .await
    }

    async fn alter_table_options(
        &self,
        path: &TablePath,
        set: &[(String, String)],
        reset: &[String],
    ) -> Result<()> {
        self.then_reload(FlussWriter::alter_table_options(&*self.store, path, set, reset).await)
            .await
    }

    async fn add_columns(&self, path: &TablePath, columns: &[NewColumn]) -> Result<()> {
        self.then_reload(FlussWriter::add_columns(&*self.store, path, columns).await)
            .await
    }

    async fn tier(&self, path: &TablePath) -> Result<TieringResult> {
        self.then_reload(FlussWriter::tier(&*self.store, path).await)
            .await
    }

    async fn create_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_not_exists: bool,
    ) -> Result<()> {
        self.then_reload(
            FlussWriter::create_partition(&*self.store, path, spec, if_not_exists).await,
        )
        .await
    }

    async fn drop_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_exists: bool,
    ) -> Result<()> {
        self.then_reload(FlussWriter::drop_partition(&*self.store, path, spec, if_exists).await)
            .await
    }

    async fn write_changes(
        &self,
        path: &TablePath,
        rows: &RecordBatch,
        deletes: &datafusion::arrow::array::BooleanArray,
    ) -> Result<WriteResult> {
        self.then_reload(FlussWriter::write_changes(&*self.store, path, rows, deletes).await)
            .await
    }
}
