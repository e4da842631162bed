//! The LocalStore: an embedded Fluss "cluster" in a directory (or object-store prefix).
//!
//! It writes what Fluss writes — coordinator metadata as JSON znodes, tablet-server log
//! segments, PK changelogs with previous images — and reads any store laid out that
//! way, whoever wrote it.
//!
//! - [`catalog`]: databases, tables and partitions (the coordinator's znodes);
//! - [`write`]: appends and key-value writes, one statement at a time under the
//!   store's writer lock ([`crate::storage::WriterLock`]), all or nothing
//!   ([`intent`]);
//! - this module: the read side ([`FlussSource`]).
//!
//! Readers never lock: metadata files are replaced atomically, logs only grow, and a
//! statement in progress is hidden by its intent.

mod auto_partition;
pub use auto_partition::StoreClock;
mod catalog;
mod committed;
mod intent;
mod partitions;
pub(crate) mod tiering;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use fluss::metadata::{
    JsonSerde, PartitionInfo, ResolvedPartitionSpec, Schema, TableInfo, TablePath,
};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use tokio::sync::Mutex;

#[cfg(any(fuzzing, test))]
pub(crate) use self::committed::CommittedEnds;
#[cfg(any(fuzzing, test))]
pub(crate) use self::intent::WriteIntent;
pub(crate) use self::write::WriteGuard;
use self::write::WriterState;
use super::layout::{self, validate_name};
use super::metadata::{
    PartitionRegistration, RegisteredLakeSnapshots, TableBucketOffsets, TableRegistration,
};
use super::{
    BucketLocation, BucketOffsets, FlussSource, FlussTable, FlussWriter, ReadableSnapshot,
};
use super::{WriteKind, WriteResult};
use crate::error::{Error, ErrorKind, Result};
use crate::lake::LakeLocation;
use crate::lake::tiering::TieringResult;
use crate::log::reader::{bucket_offsets, count_log_rows};
use crate::log::schema::SchemaVersion;
use crate::log::segment::{list_segments, lost_commits};
use crate::log::{BucketLogReader, ChangelogBatch, LogRange, LogReadOptions, SchemaHistory};
#[cfg(any(test, feature = "test-support"))]
use crate::storage::FaultInjector;
use crate::storage::Storage;

/// Tuning of a LocalStore.
#[derive(Clone)]
pub struct LocalStoreOptions {
    /// Size at which a new log segment is started (Fluss default is 1 GiB).
    pub segment_roll_bytes: usize,
    /// Verify CRC-32C of every batch read.
    pub verify_crc: bool,
    /// Largest log batch a write builds, in bytes of Arrow data (Fluss's
    /// `client.writer.batch-size`, 2 MiB): larger inputs become several batches.
    pub writer_batch_bytes: usize,
    /// How long a write waits for another writer to release the store.
    pub lock_timeout: Duration,
    /// The lake format of a table that enables its lake without naming one
    /// (`table.datalake.format` unset): Fluss's cluster option `datalake.format`.
    pub datalake_format: String,
    /// Lake catalog and storage options for every table (`s3.endpoint`,
    /// `s3.access-key-id`, …), over the table's `table.datalake.<format>.*`
    /// properties. They may hold credentials: never shown.
    pub lake_options: HashMap<String, String>,
    /// The time auto-partitioning runs on (`table.auto-partition.*`: partitions
    /// created ahead and dropped after retention): the system clock, or one a test
    /// sets.
    pub clock: StoreClock,
}

impl std::fmt::Debug for LocalStoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut keys: Vec<&String> = self.lake_options.keys().collect();
        keys.sort();
        f.debug_struct("LocalStoreOptions")
            .field("segment_roll_bytes", &self.segment_roll_bytes)
            .field("verify_crc", &self.verify_crc)
            .field("writer_batch_bytes", &self.writer_batch_bytes)
            .field("lock_timeout", &self.lock_timeout)
            .field("datalake_format", &self.datalake_format)
            .field("lake_option_keys", &keys)
            .field("clock", &self.clock)
            .finish()
    }
}

impl Default for LocalStoreOptions {
    fn default() -> Self {
        Self {
            segment_roll_bytes: 64 * 1024 * 1024,
            verify_crc: true,
            writer_batch_bytes: 2 * 1024 * 1024,
            lock_timeout: Duration::from_secs(30),
            datalake_format: "paimon".to_string(),
            lake_options: HashMap::new(),
            clock: StoreClock::System,
        }
    }
}

/// The embedded store.
#[derive(Debug)]
pub struct LocalStore {
    storage: Storage,
    options: LocalStoreOptions,
    writer: Mutex<WriterState>,
    /// Tables as last loaded, by path: reused while their registration file and
    /// schema files are the same (see [`LoadedTable`]).
    tables: std::sync::Mutex<HashMap<TablePath, LoadedTable>>,
}

/// A table as loaded from its registration and schema files (each file's schema id,
/// name and bytes): the same bytes give the same table, and parsing them again (JSON, then the
/// Arrow schemas of every version) is what a statement's metadata read would
/// otherwise spend most on. Comparing the bytes, not trusting the names, keeps a
/// damaged file an error naming it.
#[derive(Debug)]
struct LoadedTable {
    registration: Bytes,
    schema_files: Vec<(i32, String, Bytes)>,
    table: FlussTable,
}

/// Wall-clock epoch milliseconds (registration times, commit identifiers).
pub(crate) use crate::table::now_millis;

fn to_btree(map: &HashMap<String, String>) -> BTreeMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn to_hash(map: &BTreeMap<String, String>) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Bucket offset lookups in flight while resolving a table's buckets.
const CONCURRENT_OFFSET_LOOKUPS: usize = 16;

impl LocalStore {
    /// Opens (creating if needed) a store at a local path or object-store URL.
    pub async fn open(location: &str) -> Result<Self> {
        Self::open_with_options(location, LocalStoreOptions::default()).await
    }

    /// Opens a store with explicit options.
    pub async fn open_with_options(location: &str, options: LocalStoreOptions) -> Result<Self> {
        Ok(Self::on_storage(Storage::open(location)?, options))
    }

    /// A store whose durable write steps pass `faults` first (crash tests;
    /// `test-support` feature: not public API).
    #[cfg(any(test, feature = "test-support"))]
    pub fn open_with_faults(
        location: &str,
        options: LocalStoreOptions,
        faults: Arc<FaultInjector>,
    ) -> Result<Self> {
        Ok(Self::on_storage(
            Storage::open(location)?.with_faults(faults),
            options,
        ))
    }

    fn on_storage(storage: Storage, options: LocalStoreOptions) -> Self {
        Self {
            storage,
            options,
            writer: Mutex::new(WriterState::default()),
            tables: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The storage root.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Store options.
    pub fn options(&self) -> &LocalStoreOptions {
        &self.options
    }

    async fn put_json(&self, path: &str, json: Vec<u8>) -> Result<()> {
        self.storage.put_atomic(path, Bytes::from(json)).await
    }

    /// Whether `location` holds a store (the metadata of at least one database),
    /// looked at without creating anything there: a folder that is not a store must
    /// not become one by being looked at.
    pub async fn is_store_at(location: &str) -> Result<bool> {
        Storage::has_entries_at(location, &layout::databases_dir()).await
    }

    /// Whether a database exists.
    pub async fn database_exists(&self, name: &str) -> Result<bool> {
        validate_name("database", name)?;
        Ok(self
            .storage
            .read_optional(&layout::database_node(name))
            .await?
            .is_some())
    }

    /// Table names of a database.
    pub async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        if !self.database_exists(database).await? {
            return Err(Error::not_found(format!(
                "database '{database}' does not exist"
            )));
        }
        let names = match self.storage.list_dir(&layout::tables_dir(database)).await {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(names
            .into_iter()
            .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
            .collect())
    }

    async fn load_table(&self, path: &TablePath) -> Result<FlussTable> {
        validate_name("database", path.database())?;
        validate_name("table", path.table())?;
        let node = layout::table_node(path);
        let bytes = self
            .storage
            .read_optional(&node)
            .await?
            .ok_or_else(|| Error::not_found(format!("table '{path}' does not exist")))?;
        if bytes.is_empty() {
            // The coordinator creates the znode empty, then fills it: half-created.
            return Err(Error::not_found(format!(
                "table '{path}' is still being created"
            )));
        }
        let schemas_dir = layout::schemas_dir(path);
        let mut names = self.storage.list_dir(&schemas_dir).await?;
        names.sort();
        let mut schema_files = Vec::with_capacity(names.len());
        for name in names {
            if let Some(id) = name
                .strip_suffix(".json")
                .and_then(|s| s.parse::<i32>().ok())
            {
                let bytes = self.storage.read(&format!("{schemas_dir}/{name}")).await?;
                schema_files.push((id, name, bytes));
            }
        }
        if let Some(loaded) = self.loaded_tables().get(path)
            && loaded.registration == bytes
            && loaded.schema_files == schema_files
        {
            return Ok(loaded.table.clone());
        }
        let reg: TableRegistration = serde_json::from_slice(&bytes)
            .map_err(|e| Error::from(e).with_context("file", &node))?;
        let mut history = SchemaHistory::default();
        for (id, name, bytes) in &schema_files {
            let file = format!("{schemas_dir}/{name}");
            let value: serde_json::Value = serde_json::from_slice(bytes)
                .map_err(|e| Error::from(e).with_context("file", &file))?;
            let schema = Schema::deserialize_json(&value).map_err(|e| {
                Error::data_invalid("schema JSON is not a valid Fluss schema")
                    .with_context("file", &file)
                    .with_source(e)
            })?;
            history.insert(
                SchemaVersion::new(*id, schema).map_err(|e| e.with_context("file", &file))?,
            );
        }
        let latest = history.latest().map_err(|e| {
            e.with_context("table", path.to_string())
                .with_context("dir", &schemas_dir)
        })?;
        let info = TableInfo::new(
            path.clone(),
            reg.table_id,
            latest.id,
            latest.schema.clone(),
            reg.bucket_key.clone(),
            reg.partition_key.clone().into(),
            reg.bucket_count,
            to_hash(&reg.properties),
            to_hash(&reg.custom_properties),
            reg.comment.clone(),
            reg.created_time,
            reg.modified_time,
        );
        let table = FlussTable {
            path: path.clone(),
            info,
            schemas: Arc::new(history),
        };
        table.validate().map_err(|e| {
            e.with_context("table", path.to_string())
                .with_context("file", &node)
        })?;
        self.loaded_tables().insert(
            path.clone(),
            LoadedTable {
                registration: bytes,
                schema_files,
                table: table.clone(),
            },
        );
        Ok(table)
    }

    /// The tables loaded so far (a poisoned lock only means a panic elsewhere while
    /// it was held: the map itself is always whole).
    fn loaded_tables(&self) -> std::sync::MutexGuard<'_, HashMap<TablePath, LoadedTable>> {
        self.tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Partitions of a table, by name.
    async fn load_partitions(&self, table: &FlussTable) -> Result<Vec<PartitionInfo>> {
        let dir = layout::partitions_dir(&table.path);
        let names = match self.storage.list_dir(&dir).await {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut partitions = Vec::new();
        for name in names {
            let Some(partition_name) = name.strip_suffix(".json") else {
                continue;
            };
            let file = format!("{dir}/{name}");
            let bytes = self.storage.read(&file).await?;
            let reg: PartitionRegistration = serde_json::from_slice(&bytes)
                .map_err(|e| Error::from(e).with_context("file", &file))?;
            partitions::check_bucket_count(table, partition_name, &reg, &file)?;
            let spec = ResolvedPartitionSpec::from_partition_name(
                table.info.get_partition_keys().clone(),
                partition_name,
            );
            partitions.push(PartitionInfo::new(reg.partition_id, spec));
        }
        partitions.sort_by_key(|p| p.get_partition_id());
        Ok(partitions)
    }

    /// The directory of a bucket's log.
    pub fn bucket_dir(&self, table: &FlussTable, bucket: &BucketLocation) -> String {
        layout::bucket_dir(
            &table.path,
            table.table_id(),
            bucket
                .partition
                .as_ref()
                .map(|(id, name)| (name.as_str(), *id)),
            bucket.bucket,
        )
    }

    /// The registered lake snapshots of a table (`laketable` znode).
    pub async fn lake_table(&self, table_id: i64) -> Result<RegisteredLakeSnapshots> {
        let node = layout::lake_table_node(table_id);
        match self.storage.read_optional(&node).await? {
            Some(bytes) => RegisteredLakeSnapshots::from_json(&bytes)
                .map_err(|e| e.with_context("file", &node)),
            None => Ok(RegisteredLakeSnapshots::default()),
        }
    }

    /// Reads an offsets file (relative to the root, or absolute).
    pub async fn read_offsets_file(&self, path: &str) -> Result<TableBucketOffsets> {
        let bytes = self.storage.read(path).await?;
        TableBucketOffsets::from_json(&bytes).map_err(|e| e.with_context("file", path))
    }

    /// The lake snapshot tiered most recently (readable or not) and its offsets.
    pub async fn latest_tiered_snapshot(
        &self,
        table: &FlussTable,
    ) -> Result<Option<ReadableSnapshot>> {
        let lake = self.lake_table(table.table_id()).await?;
        if let Some(entry) = lake.latest() {
            return self
                .snapshot_with_offsets(table, entry.snapshot_id, &entry.tiered_offsets)
                .await
                .map(Some);
        }
        Ok(legacy_snapshot(&lake, table.table_id()))
    }

    /// Snapshot `snapshot_id` of `table` with the offsets of the file at `path`,
    /// checked to be the table's.
    async fn snapshot_with_offsets(
        &self,
        table: &FlussTable,
        snapshot_id: i64,
        path: &str,
    ) -> Result<ReadableSnapshot> {
        let offsets = self.read_offsets_file(path).await?;
        offsets
            .check_table(table.table_id(), table.info.get_num_buckets())
            .map_err(|e| {
                e.with_context("table", table.path.to_string())
                    .with_context("file", path)
            })?;
        Ok(ReadableSnapshot {
            snapshot_id,
            offsets,
        })
    }

    /// Earliest offset and high watermark of each bucket, as readers may see them: a
    /// bucket written by a statement in progress (or interrupted) ends where that
    /// statement found it. A bucket that ends before its committed end has lost
    /// committed batches: an error naming the table, bucket, file and offsets.
    async fn visible_offsets(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<BucketOffsets>> {
        // Read before the ends: a commit in between only moves the ends further.
        let committed = self.committed_ends().await?;
        let ends = self.log_ends(table, buckets).await?;
        let lost = buckets
            .iter()
            .zip(&ends)
            .any(|(bucket, (_, end))| committed.get(table.table_id(), bucket) > Some(*end));
        let ends = if lost {
            // A crashed statement's rollback may have lowered the record and cut its
            // batches after the record was read: look again before calling it damage.
            let committed = self.committed_ends().await?;
            let ends = self.log_ends(table, buckets).await?;
            for (bucket, (_, end)) in buckets.iter().zip(&ends) {
                if let Some(c) = committed.get(table.table_id(), bucket).filter(|c| c > end) {
                    return Err(self.lost_commits(table, bucket, *end, c).await);
                }
            }
            ends
        } else {
            ends
        };
        // Read after the ends: a statement that starts in between is capped, and one
        // that committed in between is visible where its batches were seen.
        let intent = self.read_intent(table.table_id()).await?;
        Ok(buckets
            .iter()
            .zip(ends)
            .map(|(bucket, (earliest, end))| {
                let cap = intent.as_ref().and_then(|i| i.start_offset(bucket));
                BucketOffsets {
                    earliest,
                    high_watermark: cap.map_or(end, |c| end.min(c).max(earliest)),
                }
            })
            .collect())
    }
}

impl LocalStore {
    /// Earliest offset and log end of each bucket, as its segments hold them.
    async fn log_ends(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<(i64, i64)>> {
        let lookups: Vec<_> = buckets
            .iter()
            .map(|bucket| {
                let dir = self.bucket_dir(table, bucket);
                async move { bucket_offsets(&self.storage, &dir).await }
            })
            .collect();
        // Every bucket at once: each lookup is a listing and a size (a round trip on
        // object stores), and planning waits for all of them.
        futures::stream::iter(lookups)
            .buffered(CONCURRENT_OFFSET_LOOKUPS)
            .try_collect()
            .await
            .map_err(|e| e.with_context("table", table.path.to_string()))
    }

    /// The error for `bucket` of `table`, whose log ends at `end` though offsets up
    /// to `committed` were committed, naming the newest segment.
    pub(crate) async fn lost_commits(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        end: i64,
        committed: i64,
    ) -> Error {
        let dir = self.bucket_dir(table, bucket);
        let newest = list_segments(&self.storage, &dir)
            .await
            .ok()
            .and_then(|segments| segments.last().map(|s| s.path.clone()));
        let mut e = lost_commits(end, committed, &dir)
            .with_context("table", table.path.to_string())
            .with_context("bucket", bucket.bucket);
        if let Some((_, name)) = &bucket.partition {
            e = e.with_context("partition", name);
        }
        match newest {
            Some(file) => e.with_context("file", file),
            None => e.with_context("file", format!("{dir} (no segment)")),
        }
    }
}

fn legacy_snapshot(lake: &RegisteredLakeSnapshots, table_id: i64) -> Option<ReadableSnapshot> {
    lake.legacy.as_ref().map(|legacy| {
        let mut offsets = TableBucketOffsets::new(table_id);
        for (partition, bucket, offset) in &legacy.buckets {
            offsets.set(*partition, *bucket, *offset);
        }
        ReadableSnapshot {
            snapshot_id: legacy.snapshot_id,
            offsets,
        }
    })
}

#[async_trait]
impl FlussSource for LocalStore {
    fn name(&self) -> String {
        self.storage.display_root().to_string()
    }

    fn spec(&self) -> Option<super::SourceSpec> {
        Some(super::SourceSpec::LocalStore {
            root: self.storage.display_root().to_string(),
        })
    }

    async fn list_databases(&self) -> Result<Vec<String>> {
        let names = match self.storage.list_dir(&layout::databases_dir()).await {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(names
            .into_iter()
            .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
            .collect())
    }

    async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        LocalStore::list_tables(self, database).await
    }

    async fn get_table(&self, path: &TablePath) -> Result<FlussTable> {
        self.load_table(path).await
    }

    async fn list_partitions(&self, table: &FlussTable) -> Result<Vec<PartitionInfo>> {
        self.load_partitions(table).await
    }

    async fn readable_lake_snapshot(&self, table: &FlussTable) -> Result<Option<ReadableSnapshot>> {
        let lake = self.lake_table(table.table_id()).await?;
        if let Some(entry) = lake.latest_readable() {
            let path = entry
                .readable_offsets
                .as_deref()
                .unwrap_or(&entry.tiered_offsets);
            return self
                .snapshot_with_offsets(table, entry.snapshot_id, path)
                .await
                .map(Some);
        }
        Ok(legacy_snapshot(&lake, table.table_id()))
    }

    async fn bucket_offsets(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<BucketOffsets>> {
        self.visible_offsets(table, buckets).await
    }

    async fn lake_snapshot(
        &self,
        table: &FlussTable,
        snapshot_id: i64,
    ) -> Result<Option<ReadableSnapshot>> {
        let lake = self.lake_table(table.table_id()).await?;
        let entry = lake.snapshots.iter().find(|s| s.snapshot_id == snapshot_id);
        match entry {
            Some(entry) => match &entry.readable_offsets {
                Some(path) => self
                    .snapshot_with_offsets(table, snapshot_id, path)
                    .await
                    .map(Some),
                None => Ok(None),
            },
            None => {
                Ok(legacy_snapshot(&lake, table.table_id())
                    .filter(|s| s.snapshot_id == snapshot_id))
            }
        }
    }

    async fn lake_location(&self, table: &FlussTable) -> Result<LakeLocation> {
        LakeLocation::of_table(table, &self.options.lake_options, |w| {
            self.storage.absolute(w)
        })
    }

    async fn registered_lake_snapshots(&self, table: &FlussTable) -> Result<Option<Vec<i64>>> {
        let lake = self.lake_table(table.table_id()).await?;
        Ok(Some(lake.snapshots.iter().map(|s| s.snapshot_id).collect()))
    }

    fn writer(&self) -> Option<&dyn FlussWriter> {
        Some(self)
    }

    async fn read_log(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        range: LogRange,
        options: LogReadOptions,
    ) -> Result<BoxStream<'static, Result<ChangelogBatch>>> {
        let options = LogReadOptions {
            verify_crc: options.verify_crc || self.options.verify_crc,
            ..options
        };
        let reader = BucketLogReader::new(
            self.storage.clone(),
            self.bucket_dir(table, bucket),
            range,
            table.schemas.clone(),
            table.schemas.latest()?,
            options,
        )?;
        Ok(super::bucket_stream(reader, table, bucket.bucket))
    }

    async fn count_log_rows(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        range: LogRange,
    ) -> Result<Option<u64>> {
        if table.info.has_primary_key() {
            return Ok(None);
        }
        count_log_rows(&self.storage, &self.bucket_dir(table, bucket), range)
            .await
            .map_err(|e| {
                e.with_context("table", table.path.to_string())
                    .with_context("bucket", bucket.bucket)
            })
    }
}

#[async_trait]
impl FlussWriter for LocalStore {
    async fn create_database(
        &self,
        name: &str,
        comment: Option<&str>,
        if_not_exists: bool,
    ) -> Result<()> {
        LocalStore::create_database(self, name, comment, if_not_exists).await
    }

    async fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
        LocalStore::drop_database(self, name, if_exists, cascade).await
    }

    async fn create_table(
        &self,
        path: &TablePath,
        descriptor: &fluss::metadata::TableDescriptor,
        if_not_exists: bool,
    ) -> Result<()> {
        LocalStore::create_table(self, path, descriptor, if_not_exists)
            .await
            .map(|_| ())
    }

    async fn drop_table(&self, path: &TablePath, if_exists: bool) -> Result<()> {
        LocalStore::drop_table(self, path, if_exists).await
    }

    async fn write(
        &self,
        path: &TablePath,
        kind: WriteKind,
        rows: BoxStream<'_, Result<datafusion::arrow::array::RecordBatch>>,
        memory: Option<&Arc<dyn datafusion::execution::memory_pool::MemoryPool>>,
    ) -> Result<WriteResult> {
        self.write_stream(path, kind, rows, memory).await
    }

    async fn alter_table_options(
        &self,
        path: &TablePath,
        set: &[(String, String)],
        reset: &[String],
    ) -> Result<()> {
        LocalStore::alter_table_options(self, path, set, reset).await
    }

    async fn add_columns(&self, path: &TablePath, columns: &[super::NewColumn]) -> Result<()> {
        LocalStore::add_columns(self, path, columns).await
    }

    async fn tier(&self, path: &TablePath) -> Result<TieringResult> {
        tiering::tier(self, path).await
    }

    async fn create_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_not_exists: bool,
    ) -> Result<()> {
        LocalStore::create_partition(self, path, spec, if_not_exists).await
    }

    async fn drop_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_exists: bool,
    ) -> Result<()> {
        LocalStore::drop_partition(self, path, spec, if_exists).await
    }

    async fn write_changes(
        &self,
        path: &TablePath,
        rows: &datafusion::arrow::array::RecordBatch,
        deletes: &datafusion::arrow::array::BooleanArray,
    ) -> Result<WriteResult> {
        LocalStore::write_changes(self, path, rows, deletes).await
    }
}

#[async_trait]
impl super::BucketBatches for crate::log::BucketLogReader {
    async fn next_batch(&mut self) -> Result<Option<ChangelogBatch>> {
        crate::log::BucketLogReader::next_batch(self).await
    }
}
