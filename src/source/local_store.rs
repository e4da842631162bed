//! The LocalStore: an embedded Fluss "cluster" in a directory (or object-store prefix).
//!
//! It writes what Fluss writes — coordinator metadata as JSON znodes, tablet-server log
//! segments, PK changelogs with previous images — and reads any store laid out that
//! way, whoever wrote it. One process writes at a time (writes are serialized by a
//! mutex); readers never lock: they see complete batches only.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{cast, take_record_batch};
use datafusion::arrow::datatypes::{
    DataType as ArrowType, Field, Schema as ArrowSchema, SchemaRef,
};
use fluss::metadata::{
    DataLakeFormat, JsonSerde, PartitionInfo, ResolvedPartitionSpec, Schema, TableDescriptor,
    TableInfo, TablePath,
};
use fluss::record::ChangeType;
use futures::stream::BoxStream;
use tokio::sync::Mutex;

use super::bucketing::BucketAssigner;
use super::kv::KeyValueState;
use super::layout::{self, validate_name, validate_partition_name};
use super::metadata::{
    DatabaseRegistration, LakeTable, PartitionRegistration, TableBucketOffsets, TableRegistration,
};
use super::{BucketLocation, BucketOffsets, FlussSource, FlussTable, ReadableSnapshot};
use crate::error::{Error, ErrorKind, Result};
use crate::log::reader::bucket_offsets;
use crate::log::schema::SchemaVersion;
use crate::log::segment::SegmentWriter;
use crate::log::statistics::{STATISTICS_COLUMNS_PROPERTY, statistics_column_mapping};
use crate::log::{
    ArrowCompression, BucketLogReader, ChangelogBatch, LogBatch, LogBatchBuilder, LogRange,
    LogReadOptions, SchemaHistory,
};
use crate::storage::Storage;

/// Tuning of a LocalStore.
#[derive(Debug, Clone)]
pub struct LocalStoreOptions {
    /// Size at which a new log segment is started (Fluss default is 1 GiB).
    pub segment_roll_bytes: usize,
    /// Verify CRC-32C of every batch read.
    pub verify_crc: bool,
}

impl Default for LocalStoreOptions {
    fn default() -> Self {
        Self {
            segment_roll_bytes: 64 * 1024 * 1024,
            verify_crc: true,
        }
    }
}

/// What a write did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteResult {
    /// Input rows accepted.
    pub rows: usize,
    /// Changelog records written (an update writes two).
    pub records: usize,
    /// Log batches appended.
    pub batches: usize,
}

type BucketKey = (i64, Option<i64>, i32);

/// What one KV write does with its rows.
#[derive(Debug, Clone, Copy)]
enum KvWrite<'a> {
    Upsert,
    Delete,
    /// Row `i` is a delete where the flag is set, an upsert otherwise.
    Mixed(&'a BooleanArray),
    /// Upserts writing only the columns set in the mask (Fluss partial update).
    Partial(&'a [bool]),
}

/// Name of the delete-flag column a mixed write carries through the bucket split.
const DELETE_FLAG_COLUMN: &str = "__fluss_delete_flag";

#[derive(Debug, Default)]
struct WriterState {
    segments: HashMap<BucketKey, SegmentWriter>,
    kv: HashMap<BucketKey, KeyValueState>,
    assigners: HashMap<i64, BucketAssigner>,
}

/// The embedded store.
#[derive(Debug)]
pub struct LocalStore {
    storage: Storage,
    options: LocalStoreOptions,
    writer: Mutex<WriterState>,
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

fn to_btree(map: &HashMap<String, String>) -> BTreeMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn to_hash(map: &BTreeMap<String, String>) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

impl LocalStore {
    /// Opens (creating if needed) a store at a local path or object-store URL.
    pub async fn open(location: &str) -> Result<Self> {
        Self::open_with_options(location, LocalStoreOptions::default()).await
    }

    /// Opens a store with explicit options.
    pub async fn open_with_options(location: &str, options: LocalStoreOptions) -> Result<Self> {
        let storage = Storage::open(location)?;
        Ok(Self {
            storage,
            options,
            writer: Mutex::new(WriterState::default()),
        })
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

    async fn next_id(&self, counter: &str) -> Result<i64> {
        let current = match self.storage.read_optional(counter).await? {
            Some(bytes) => serde_json::from_slice::<i64>(&bytes)
                .map_err(|e| Error::from(e).with_context("file", counter))?,
            None => 0,
        };
        self.put_json(counter, (current + 1).to_string().into_bytes())
            .await?;
        Ok(current)
    }

    // ---------------------------------------------------------------- databases

    /// Creates a database.
    pub async fn create_database(
        &self,
        name: &str,
        comment: Option<&str>,
        if_not_exists: bool,
    ) -> Result<()> {
        validate_name("database", name)?;
        let _guard = self.writer.lock().await;
        let node = layout::database_node(name);
        if self.storage.read_optional(&node).await?.is_some() {
            if if_not_exists {
                return Ok(());
            }
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("database '{name}' already exists"),
            ));
        }
        let now = now_millis();
        let reg = DatabaseRegistration {
            version: 1,
            comment: comment.map(str::to_string),
            custom_properties: BTreeMap::new(),
            created_time: now,
            modified_time: now,
        };
        self.put_json(&node, serde_json::to_vec(&reg)?).await
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

    /// Drops a database; with `cascade` its tables too.
    pub async fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
        if !self.database_exists(name).await? {
            if if_exists {
                return Ok(());
            }
            return Err(Error::not_found(format!(
                "database '{name}' does not exist"
            )));
        }
        let tables = self.list_tables(name).await?;
        if !tables.is_empty() && !cascade {
            return Err(Error::invalid_input(format!(
                "database '{name}' is not empty ({} tables); use CASCADE",
                tables.len()
            )));
        }
        for table in tables {
            self.drop_table(&TablePath::new(name, &table), true).await?;
        }
        let _guard = self.writer.lock().await;
        self.storage
            .delete_dir(&format!("zk/metadata/databases/{name}"))
            .await?;
        self.storage.delete(&layout::database_node(name)).await
    }

    // ---------------------------------------------------------------- tables

    /// Creates a table from a fluss-rs descriptor, as the coordinator does: schema id 1,
    /// a new table id, default bucket count 1, PK tables bucketed by the PK minus the
    /// partition keys, and (when the lake is enabled) the lake location in properties.
    pub async fn create_table(
        &self,
        path: &TablePath,
        descriptor: &TableDescriptor,
        if_not_exists: bool,
    ) -> Result<FlussTable> {
        validate_name("database", path.database())?;
        validate_name("table", path.table())?;
        if !self.database_exists(path.database()).await? {
            return Err(Error::not_found(format!(
                "database '{}' does not exist",
                path.database()
            )));
        }
        {
            let _guard = self.writer.lock().await;
            if self
                .storage
                .read_optional(&layout::table_node(path))
                .await?
                .is_some()
            {
                if !if_not_exists {
                    return Err(Error::new(
                        ErrorKind::AlreadyExists,
                        format!("table '{path}' already exists"),
                    ));
                }
            } else {
                self.register_table(path, descriptor).await?;
            }
        }
        self.get_table(path).await
    }

    async fn register_table(&self, path: &TablePath, descriptor: &TableDescriptor) -> Result<()> {
        let schema = descriptor.schema();
        for column in schema.columns() {
            if column.name().starts_with("__") {
                return Err(Error::invalid_input(format!(
                    "column name '{}' is reserved for system columns",
                    column.name()
                )));
            }
        }
        let mut properties = to_btree(descriptor.properties());
        let lake_enabled = properties
            .get("table.datalake.enabled")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if lake_enabled {
            let format = properties
                .entry("table.datalake.format".to_string())
                .or_insert_with(|| "paimon".to_string())
                .to_ascii_lowercase();
            match format.as_str() {
                "paimon" => {
                    properties
                        .entry("table.datalake.paimon.warehouse".to_string())
                        .or_insert_with(|| layout::DEFAULT_PAIMON_WAREHOUSE.to_string());
                    properties
                        .entry("table.datalake.paimon.metastore".to_string())
                        .or_insert_with(|| "filesystem".to_string());
                }
                other => {
                    return Err(Error::unsupported(format!(
                        "lake format '{other}' cannot be created by the LocalStore yet (paimon is supported)"
                    )));
                }
            }
        }
        if schema.primary_key().is_some() && properties.contains_key(STATISTICS_COLUMNS_PROPERTY) {
            return Err(Error::invalid_input(
                "Statistics columns are not supported for primary key tables",
            ));
        }
        // Validate the statistics and compression options up front.
        statistics_column_mapping(
            properties
                .get(STATISTICS_COLUMNS_PROPERTY)
                .map(String::as_str),
            schema.row_type(),
        )?;
        ArrowCompression::from_properties(&to_hash(&properties))?;
        let partition_keys: Vec<String> = descriptor.partition_keys().to_vec();
        let mut bucket_keys: Vec<String> = descriptor
            .bucket_keys()
            .into_iter()
            .map(str::to_string)
            .collect();
        if bucket_keys.is_empty()
            && let Some(pk) = schema.primary_key()
        {
            bucket_keys = pk
                .column_names()
                .iter()
                .filter(|c| !partition_keys.contains(c))
                .cloned()
                .collect();
        }
        let bucket_count = descriptor
            .table_distribution()
            .and_then(|d| d.bucket_count())
            .unwrap_or(1);
        if bucket_count <= 0 {
            return Err(Error::invalid_input(format!(
                "bucket count must be positive, got {bucket_count}"
            )));
        }
        let table_id = self.next_id(&layout::table_seqid_node()).await?;
        let now = now_millis();
        let registration = TableRegistration {
            version: 1,
            table_id,
            comment: descriptor.comment().map(str::to_string),
            partition_key: partition_keys,
            bucket_key: bucket_keys,
            bucket_count,
            properties,
            custom_properties: to_btree(descriptor.custom_properties()),
            remote_data_dir: None,
            created_time: now,
            modified_time: now,
        };
        // Schema first, then the table znode, as MetadataManager.createTable does.
        let schema_json = serde_json::to_vec(&schema.serialize_json()?)?;
        self.put_json(&layout::schema_node(path, 1), schema_json)
            .await?;
        self.put_json(
            &layout::table_node(path),
            serde_json::to_vec(&registration)?,
        )
        .await
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

    /// Drops a table: metadata, log and lake pointers (the lake table stays, as in Fluss).
    pub async fn drop_table(&self, path: &TablePath, if_exists: bool) -> Result<()> {
        let table = match self.get_table(path).await {
            Ok(t) => t,
            Err(e) if e.kind() == ErrorKind::NotFound && if_exists => return Ok(()),
            Err(e) => return Err(e),
        };
        let mut guard = self.writer.lock().await;
        let id = table.table_id();
        guard.segments.retain(|k, _| k.0 != id);
        guard.kv.retain(|k, _| k.0 != id);
        guard.assigners.remove(&id);
        self.storage.delete(&layout::table_node(path)).await?;
        self.storage.delete_dir(&layout::table_dir(path)).await?;
        self.storage
            .delete_dir(&layout::table_data_dir(path, id))
            .await?;
        self.storage
            .delete_dir(&format!("zk/tabletservers/tables/{id}"))
            .await
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
        let reg: TableRegistration = serde_json::from_slice(&bytes)
            .map_err(|e| Error::from(e).with_context("file", &node))?;
        let mut history = SchemaHistory::default();
        let schemas_dir = layout::schemas_dir(path);
        for name in self.storage.list_dir(&schemas_dir).await? {
            let Some(id) = name
                .strip_suffix(".json")
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let file = format!("{schemas_dir}/{name}");
            let bytes = self.storage.read(&file).await?;
            let value: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|e| Error::from(e).with_context("file", &file))?;
            let schema = Schema::deserialize_json(&value).map_err(|e| {
                Error::data_invalid("schema JSON is not a valid Fluss schema")
                    .with_context("file", &file)
                    .with_source(e)
            })?;
            history
                .insert(SchemaVersion::new(id, schema).map_err(|e| e.with_context("file", &file))?);
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
        Ok(table)
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
            let spec = ResolvedPartitionSpec::from_partition_name(
                table.info.get_partition_keys().clone(),
                partition_name,
            );
            partitions.push(PartitionInfo::new(reg.partition_id, spec));
        }
        partitions.sort_by_key(|p| p.get_partition_id());
        Ok(partitions)
    }

    async fn ensure_partition(&self, table: &FlussTable, name: &str) -> Result<i64> {
        validate_partition_name(name)?;
        let node = layout::partition_node(&table.path, name);
        if let Some(bytes) = self.storage.read_optional(&node).await? {
            let reg: PartitionRegistration = serde_json::from_slice(&bytes)
                .map_err(|e| Error::from(e).with_context("file", &node))?;
            return Ok(reg.partition_id);
        }
        let partition_id = self.next_id(&layout::partition_seqid_node()).await?;
        let reg = PartitionRegistration {
            version: 1,
            table_id: table.table_id(),
            partition_id,
            remote_data_dir: None,
        };
        self.put_json(&node, serde_json::to_vec(&reg)?).await?;
        Ok(partition_id)
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

    /// Every bucket of a table: per partition for partitioned tables.
    pub async fn buckets(&self, table: &FlussTable) -> Result<Vec<BucketLocation>> {
        let n = table.info.get_num_buckets();
        if !table.info.is_partitioned() {
            return Ok((0..n)
                .map(|bucket| BucketLocation {
                    partition: None,
                    bucket,
                })
                .collect());
        }
        let mut out = Vec::new();
        for p in self.load_partitions(table).await? {
            for bucket in 0..n {
                out.push(BucketLocation {
                    partition: Some((p.get_partition_id(), p.get_partition_name())),
                    bucket,
                });
            }
        }
        Ok(out)
    }

    // ---------------------------------------------------------------- lake pointers

    /// The registered lake snapshots of a table (`laketable` znode).
    pub async fn lake_table(&self, table_id: i64) -> Result<LakeTable> {
        let node = layout::lake_table_node(table_id);
        match self.storage.read_optional(&node).await? {
            Some(bytes) => LakeTable::from_json(&bytes).map_err(|e| e.with_context("file", &node)),
            None => Ok(LakeTable::default()),
        }
    }

    /// Registers a lake snapshot in the `laketable` znode (tiering's last step).
    pub async fn register_lake_snapshot(
        &self,
        table_id: i64,
        entry: super::metadata::LakeSnapshotEntry,
    ) -> Result<()> {
        let mut lake = self.lake_table(table_id).await?;
        if lake
            .snapshots
            .iter()
            .any(|s| s.snapshot_id == entry.snapshot_id)
        {
            return Ok(());
        }
        lake.snapshots.push(entry);
        self.put_json(&layout::lake_table_node(table_id), lake.to_json()?)
            .await
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
            let offsets = self.read_offsets_file(&entry.tiered_offsets).await?;
            return Ok(Some(ReadableSnapshot {
                snapshot_id: entry.snapshot_id,
                offsets,
            }));
        }
        Ok(legacy_snapshot(&lake, table.table_id()))
    }

    // ---------------------------------------------------------------- writes

    fn conform(&self, table: &FlussTable, batch: &RecordBatch) -> Result<RecordBatch> {
        let target = table.schemas.latest()?.arrow.clone();
        conform_batch(batch, &target).map_err(|e| e.with_context("table", table.path.to_string()))
    }

    async fn split_by_partition(
        &self,
        table: &FlussTable,
        batch: &RecordBatch,
    ) -> Result<Vec<(Option<(i64, String)>, RecordBatch)>> {
        if !table.info.is_partitioned() {
            return Ok(vec![(None, batch.clone())]);
        }
        let keys = table.info.get_partition_keys();
        let schema = batch.schema();
        let columns = keys
            .iter()
            .map(|k| {
                schema
                    .index_of(k)
                    .map(|i| batch.column(i).clone())
                    .map_err(|_| Error::invalid_input(format!("missing partition column '{k}'")))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut groups: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for row in 0..batch.num_rows() {
            let values = columns
                .iter()
                .map(|c| partition_value(c, row))
                .collect::<Result<Vec<_>>>()?;
            groups.entry(values.join("$")).or_default().push(row as u32);
        }
        let mut out = Vec::new();
        for (name, rows) in groups {
            let id = self.ensure_partition(table, &name).await?;
            let part = take_record_batch(batch, &UInt32Array::from(rows))?;
            out.push((Some((id, name)), part));
        }
        Ok(out)
    }

    fn batch_builder(&self, table: &FlussTable, changelog: bool) -> Result<LogBatchBuilder> {
        let latest = table.schemas.latest()?;
        let properties = table.info.get_properties();
        let compression = ArrowCompression::from_properties(properties)?;
        let mut builder = LogBatchBuilder::new(latest.id as i16, compression);
        if !changelog {
            let mapping = statistics_column_mapping(
                properties
                    .get(STATISTICS_COLUMNS_PROPERTY)
                    .map(String::as_str),
                latest.row_type(),
            )?;
            builder = builder.with_statistics(latest.row_type().clone(), mapping);
        }
        Ok(builder)
    }

    async fn segment_writer<'a>(
        &self,
        state: &'a mut WriterState,
        table: &FlussTable,
        bucket: &BucketLocation,
    ) -> Result<&'a mut SegmentWriter> {
        let key = (table.table_id(), bucket.partition_id(), bucket.bucket);
        if let std::collections::hash_map::Entry::Vacant(entry) = state.segments.entry(key) {
            let dir = self.bucket_dir(table, bucket);
            entry.insert(
                SegmentWriter::open(&self.storage, &dir, self.options.segment_roll_bytes).await?,
            );
        }
        state
            .segments
            .get_mut(&key)
            .ok_or_else(|| Error::internal("segment writer vanished"))
    }

    async fn append_batch(
        &self,
        state: &mut WriterState,
        table: &FlussTable,
        bucket: &BucketLocation,
        builder: &LogBatchBuilder,
        batch: &RecordBatch,
        change_types: Option<&[ChangeType]>,
    ) -> Result<()> {
        let writer = self.segment_writer(state, table, bucket).await?;
        let bytes = builder.build(writer.next_offset(), now_millis(), batch, change_types)?;
        let encoded = LogBatch::parse(bytes)?;
        writer.append(&self.storage, &encoded).await
    }

    fn group_by_bucket(
        &self,
        state: &mut WriterState,
        table: &FlussTable,
        batch: &RecordBatch,
    ) -> Result<BTreeMap<i32, RecordBatch>> {
        let id = table.table_id();
        if let std::collections::hash_map::Entry::Vacant(entry) = state.assigners.entry(id) {
            let assigner = BucketAssigner::new(
                table.info.get_row_type(),
                table.info.get_bucket_keys(),
                table.info.get_num_buckets(),
                table.configured_lake_format(),
            )?;
            entry.insert(assigner);
        }
        let assigner = state
            .assigners
            .get_mut(&id)
            .ok_or_else(|| Error::internal("bucket assigner vanished"))?;
        // the bucket key comes from the table's columns, not a mixed write's delete flags
        let buckets = match batch.schema().fields().last() {
            Some(last) if last.name() == DELETE_FLAG_COLUMN => {
                let columns: Vec<usize> = (0..batch.num_columns() - 1).collect();
                assigner.assign(&batch.project(&columns)?)?
            }
            _ => assigner.assign(batch)?,
        };
        let mut rows: BTreeMap<i32, Vec<u32>> = BTreeMap::new();
        for (row, bucket) in buckets.into_iter().enumerate() {
            rows.entry(bucket).or_default().push(row as u32);
        }
        rows.into_iter()
            .map(|(b, r)| Ok((b, take_record_batch(batch, &UInt32Array::from(r))?)))
            .collect()
    }

    /// Appends rows to a log table (one batch per bucket touched).
    pub async fn append(&self, path: &TablePath, batch: &RecordBatch) -> Result<WriteResult> {
        let table = self.get_table(path).await?;
        if table.info.has_primary_key() {
            return Err(Error::invalid_input(format!(
                "table '{path}' has a primary key: use upsert/delete instead of append"
            )));
        }
        let batch = self.conform(&table, batch)?;
        let builder = self.batch_builder(&table, false)?;
        let mut result = WriteResult {
            rows: batch.num_rows(),
            ..Default::default()
        };
        if batch.num_rows() == 0 {
            return Ok(result);
        }
        let mut state = self.writer.lock().await;
        for (partition, part) in self.split_by_partition(&table, &batch).await? {
            for (bucket, rows) in self.group_by_bucket(&mut state, &table, &part)? {
                let location = BucketLocation {
                    partition: partition.clone(),
                    bucket,
                };
                self.append_batch(&mut state, &table, &location, &builder, &rows, None)
                    .await
                    .map_err(|e| e.with_context("table", path.to_string()))?;
                result.records += rows.num_rows();
                result.batches += 1;
            }
        }
        Ok(result)
    }

    /// Upserts full rows into a primary-key table.
    pub async fn upsert(&self, path: &TablePath, batch: &RecordBatch) -> Result<WriteResult> {
        self.write_kv(path, batch, KvWrite::Upsert).await
    }

    /// Partial update of a primary-key table, as Fluss applies an upsert naming only
    /// some columns: `batch` holds the primary key and the columns to write (by name);
    /// every other column keeps its current value, or is null for a new key, so it
    /// must be nullable.
    pub async fn upsert_partial(
        &self,
        path: &TablePath,
        batch: &RecordBatch,
    ) -> Result<WriteResult> {
        let table = self.get_table(path).await?;
        let latest = table.schemas.latest()?;
        let names = batch.schema();
        let mut written = Vec::with_capacity(latest.arrow.fields().len());
        for (i, field) in latest.arrow.fields().iter().enumerate() {
            let listed = names.index_of(field.name()).is_ok();
            let is_key = table.info.get_schema().primary_key_indexes().contains(&i);
            if is_key && !listed {
                return Err(Error::invalid_input(format!(
                    "a partial update of '{path}' must write the primary key column '{}'",
                    field.name()
                )));
            }
            if !listed && !field.is_nullable() {
                return Err(Error::invalid_input(format!(
                    "a partial update of '{path}' must write the NOT NULL column '{}'",
                    field.name()
                )));
            }
            written.push(listed);
        }
        self.write_kv(path, batch, KvWrite::Partial(&written)).await
    }

    /// Deletes rows by primary key (`keys` holds at least the key columns).
    pub async fn delete(&self, path: &TablePath, keys: &RecordBatch) -> Result<WriteResult> {
        self.write_kv(path, keys, KvWrite::Delete).await
    }

    /// Writes one KV batch as a Fluss client sends it: full rows in order, each an
    /// upsert, or a delete by key where `deletes` is set (the other columns of a delete
    /// row are ignored but must still fit the schema). Every bucket touched gets one
    /// changelog batch, mixing `+I`, `-U`/`+U` and `-D` as a tablet writes them.
    pub async fn write_changes(
        &self,
        path: &TablePath,
        batch: &RecordBatch,
        deletes: &BooleanArray,
    ) -> Result<WriteResult> {
        if deletes.len() != batch.num_rows() {
            return Err(Error::invalid_input(format!(
                "writing to '{path}': {} delete flags for {} rows",
                deletes.len(),
                batch.num_rows()
            )));
        }
        self.write_kv(path, batch, KvWrite::Mixed(deletes)).await
    }

    async fn write_kv(
        &self,
        path: &TablePath,
        batch: &RecordBatch,
        kind: KvWrite<'_>,
    ) -> Result<WriteResult> {
        let table = self.get_table(path).await?;
        if !table.info.has_primary_key() {
            return Err(Error::invalid_input(format!(
                "table '{path}' has no primary key: upsert and delete need one (use append)"
            )));
        }
        let latest = table.schemas.latest()?;
        let width = latest.arrow.fields().len();
        let full = match kind {
            KvWrite::Delete => conform_keys(
                batch,
                &latest.arrow,
                &table.info.get_schema().primary_key_indexes(),
            )?,
            KvWrite::Upsert | KvWrite::Partial(_) => self.conform(&table, batch)?,
            // The delete flags travel as a trailing column through the partition and
            // bucket split, and are taken off again per bucket.
            KvWrite::Mixed(deletes) => {
                let rows = self.conform(&table, batch)?;
                let mut fields = rows.schema().fields().to_vec();
                fields.push(Arc::new(Field::new(
                    DELETE_FLAG_COLUMN,
                    ArrowType::Boolean,
                    true,
                )));
                let mut columns = rows.columns().to_vec();
                columns.push(Arc::new(deletes.clone()));
                RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns)?
            }
        };
        let builder = self.batch_builder(&table, true)?;
        let mut result = WriteResult {
            rows: full.num_rows(),
            ..Default::default()
        };
        if full.num_rows() == 0 {
            return Ok(result);
        }
        let mut state = self.writer.lock().await;
        for (partition, part) in self.split_by_partition(&table, &full).await? {
            for (bucket, rows) in self.group_by_bucket(&mut state, &table, &part)? {
                let location = BucketLocation {
                    partition: partition.clone(),
                    bucket,
                };
                let key = (table.table_id(), location.partition_id(), bucket);
                if let std::collections::hash_map::Entry::Vacant(entry) = state.kv.entry(key) {
                    entry.insert(self.replay_state(&table, &location).await?);
                }
                let kv = state
                    .kv
                    .get_mut(&key)
                    .ok_or_else(|| Error::internal("kv state vanished"))?;
                let changelog = match kind {
                    KvWrite::Upsert => kv.upsert(&rows)?,
                    KvWrite::Partial(written) => kv.write_partial(&rows, written)?,
                    KvWrite::Delete => kv.delete(&rows)?,
                    KvWrite::Mixed(_) => {
                        let deletes = rows.column(width).as_boolean().clone();
                        kv.write(
                            &rows.project(&(0..width).collect::<Vec<_>>())?,
                            Some(&deletes),
                        )?
                    }
                };
                // A write that changes nothing still takes an offset (empty batch), as Fluss.
                self.append_batch(
                    &mut state,
                    &table,
                    &location,
                    &builder,
                    &changelog.batch,
                    Some(&changelog.change_types),
                )
                .await
                .map_err(|e| e.with_context("table", path.to_string()))?;
                result.records += changelog.change_types.len();
                result.batches += 1;
            }
        }
        Ok(result)
    }

    /// Rebuilds a bucket's key-value state by replaying its whole changelog.
    async fn replay_state(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
    ) -> Result<KeyValueState> {
        let latest = table.schemas.latest()?;
        let key_columns = table.info.get_schema().primary_key_indexes();
        let mut state = KeyValueState::new(latest.arrow.clone(), key_columns)?;
        let dir = self.bucket_dir(table, bucket);
        let (earliest, end) = bucket_offsets(&self.storage, &dir).await?;
        let mut reader = BucketLogReader::new(
            self.storage.clone(),
            dir,
            LogRange::new(earliest, end),
            table.schemas.clone(),
            latest,
            LogReadOptions::verified(),
        )?;
        while let Some(batch) = reader.next_batch().await? {
            state.apply(&batch.batch, &batch.change_types)?;
        }
        Ok(state)
    }
}

fn legacy_snapshot(lake: &LakeTable, table_id: i64) -> Option<ReadableSnapshot> {
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

/// Renders one partition value as Fluss names partitions (`PartitionUtils`).
fn partition_value(column: &ArrayRef, row: usize) -> Result<String> {
    if column.is_null(row) {
        return Err(Error::invalid_input(
            "partition column values must not be null",
        ));
    }
    let value = match column.data_type() {
        ArrowType::Utf8
        | ArrowType::LargeUtf8
        | ArrowType::Utf8View
        | ArrowType::Boolean
        | ArrowType::Int8
        | ArrowType::Int16
        | ArrowType::Int32
        | ArrowType::Int64
        | ArrowType::Date32 => {
            let s = cast(&column.slice(row, 1), &ArrowType::Utf8)?;
            let s = s
                .as_any()
                .downcast_ref::<datafusion::arrow::array::StringArray>()
                .ok_or_else(|| Error::internal("cast to string failed"))?;
            s.value(0).to_string()
        }
        other => {
            return Err(Error::unsupported(format!(
                "partition columns of type {other} are not supported by the LocalStore writer"
            )));
        }
    };
    validate_partition_name(&value)?;
    Ok(value)
}

/// Makes `batch` match the table's Arrow schema: columns by name, cast where needed,
/// missing nullable columns filled with nulls, NOT NULL columns checked.
pub fn conform_batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut columns = Vec::with_capacity(target.fields().len());
    for field in target.fields() {
        let column = match schema.index_of(field.name()) {
            Ok(i) => {
                let c = batch.column(i);
                if c.data_type() == field.data_type() {
                    c.clone()
                } else {
                    cast(c, field.data_type()).map_err(|e| {
                        Error::invalid_input(format!(
                            "column '{}' of type {} cannot be written as {}",
                            field.name(),
                            c.data_type(),
                            field.data_type()
                        ))
                        .with_source(e)
                    })?
                }
            }
            Err(_) if field.is_nullable() => {
                datafusion::arrow::array::new_null_array(field.data_type(), batch.num_rows())
            }
            Err(_) => {
                return Err(Error::invalid_input(format!(
                    "missing value for NOT NULL column '{}'",
                    field.name()
                )));
            }
        };
        if !field.is_nullable() && column.null_count() > 0 {
            return Err(Error::invalid_input(format!(
                "NULL written to NOT NULL column '{}'",
                field.name()
            )));
        }
        columns.push(column);
    }
    for field in schema.fields() {
        if target.index_of(field.name()).is_err() {
            return Err(Error::invalid_input(format!(
                "unknown column '{}'",
                field.name()
            )));
        }
    }
    Ok(RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

/// A delete batch: key columns (cast), other columns null (only keys are used).
fn conform_keys(
    batch: &RecordBatch,
    target: &SchemaRef,
    key_columns: &[usize],
) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut columns = Vec::with_capacity(target.fields().len());
    for (i, field) in target.fields().iter().enumerate() {
        let column = if key_columns.contains(&i) {
            let c = schema
                .index_of(field.name())
                .map(|j| batch.column(j))
                .map_err(|_| {
                    Error::invalid_input(format!(
                        "delete needs the primary key column '{}'",
                        field.name()
                    ))
                })?;
            cast(c, field.data_type())?
        } else {
            match schema.index_of(field.name()) {
                Ok(j) => cast(batch.column(j), field.data_type())?,
                Err(_) => {
                    datafusion::arrow::array::new_null_array(field.data_type(), batch.num_rows())
                }
            }
        };
        columns.push(column);
    }
    // Not validated as NOT NULL: only key columns are read from a delete batch.
    let relaxed = Arc::new(datafusion::arrow::datatypes::Schema::new(
        target
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ));
    Ok(RecordBatch::try_new(relaxed, columns)?)
}

#[async_trait]
impl FlussSource for LocalStore {
    fn name(&self) -> String {
        self.storage.display_root().to_string()
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
            let offsets = self.read_offsets_file(path).await?;
            offsets
                .check_table(table.table_id(), table.info.get_num_buckets())
                .map_err(|e| {
                    e.with_context("table", table.path.to_string())
                        .with_context("file", path)
                })?;
            return Ok(Some(ReadableSnapshot {
                snapshot_id: entry.snapshot_id,
                offsets,
            }));
        }
        Ok(legacy_snapshot(&lake, table.table_id()))
    }

    async fn bucket_offsets(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
    ) -> Result<BucketOffsets> {
        let dir = self.bucket_dir(table, bucket);
        let (earliest, high_watermark) = bucket_offsets(&self.storage, &dir)
            .await
            .map_err(|e| e.with_context("table", table.path.to_string()))?;
        Ok(BucketOffsets {
            earliest,
            high_watermark,
        })
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
        let table_name = table.path.to_string();
        let bucket_id = bucket.bucket;
        let stream = futures::stream::try_unfold(reader, move |mut reader| {
            let table_name = table_name.clone();
            async move {
                let next = reader.next_batch().await.map_err(|e| {
                    e.with_context("table", table_name)
                        .with_context("bucket", bucket_id)
                })?;
                Ok(next.map(|b| (b, reader)))
            }
        });
        Ok(Box::pin(stream))
    }
}

/// Whether `format` is Paimon (helper for callers matching on lake formats).
pub fn is_paimon(format: Option<&DataLakeFormat>) -> bool {
    matches!(format, Some(DataLakeFormat::Paimon))
}
