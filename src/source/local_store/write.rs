//! Writes to the LocalStore's logs: appends to log tables, upserts and deletes on
//! primary-key tables (producing the changelog a tablet server writes).
//!
//! Every write is one statement: it holds the store's writer lock from start to end,
//! first rolls back a statement a crash interrupted on the same table, records its
//! [`WriteIntent`](super::intent) before touching a bucket, and commits by removing
//! the intent. Input of any size is written as batches of at most
//! [`LocalStoreOptions::writer_batch_bytes`](super::LocalStoreOptions) (Fluss's
//! `client.writer.batch-size`), so no batch outgrows the format's 2 GiB length field.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, BooleanArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::take_record_batch;
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use fluss::metadata::TablePath;
use fluss::record::ChangeType;
use futures::TryStreamExt;
use futures::stream::BoxStream;
use tokio::sync::MutexGuard;

use super::committed::{CommittedEnds, TableBucketKey};
use super::intent::{IntentBucket, WriteIntent};
use super::{LocalStore, now_millis};
use crate::error::{Error, Result};
use crate::log::reader::bucket_offsets;
use crate::log::segment::SegmentWriter;
use crate::log::statistics::{STATISTICS_COLUMNS_PROPERTY, statistics_column_mapping};
use crate::log::{
    ArrowCompression, BucketLogReader, LogBatch, LogBatchBuilder, LogRange, LogReadOptions,
};
use crate::source::bucketing::BucketAssigner;
use crate::source::conform::{conform_batch, conform_keys, partial_columns};
use crate::source::kv::KeyValueState;
use crate::source::partition_name::partition_name;
use crate::source::{BucketLocation, FlussSource, FlussTable, WriteKind, WriteResult};
use crate::storage::WriterLock;

type BucketKey = (i64, Option<i64>, i32);

/// Name of the delete-flag column a mixed write carries through the bucket split.
const DELETE_FLAG_COLUMN: &str = "__fluss_delete_flag";

/// How one batch of a statement is applied.
#[derive(Debug, Clone, Copy)]
enum RowsOp<'a> {
    Append,
    Upsert,
    Delete,
    /// Row `i` is a delete where the flag is set, an upsert otherwise.
    Mixed(&'a BooleanArray),
    /// Upserts writing only the columns set in the mask.
    Partial(&'a [bool]),
}

/// What the writer keeps between statements: open segments, key-value state, bucket
/// assigners. Dropped when another writer wrote since, or a statement failed.
#[derive(Debug, Default)]
pub(crate) struct WriterState {
    segments: HashMap<BucketKey, SegmentWriter>,
    kv: HashMap<BucketKey, KeyValueState>,
    assigners: HashMap<i64, BucketAssigner>,
    /// The store's commit record as this writer last wrote or read it.
    committed: Option<CommittedEnds>,
    /// The writer-lock generation our last statement left.
    generation: Option<u64>,
}

/// The writer lock held for one statement, with the writer's state.
pub(crate) struct WriteGuard<'a> {
    state: MutexGuard<'a, WriterState>,
    _lock: WriterLock,
}

impl WriteGuard<'_> {
    /// Forgets what is kept of a table (its files changed under us, or it is gone).
    pub(super) fn forget_table(&mut self, table_id: i64) {
        self.state.segments.retain(|k, _| k.0 != table_id);
        self.state.kv.retain(|k, _| k.0 != table_id);
        self.state.assigners.remove(&table_id);
        self.state.committed = None;
    }
}

/// One statement in progress on one table.
struct TableWrite {
    table: FlussTable,
    builder: LogBatchBuilder,
    intent: WriteIntent,
    result: WriteResult,
    /// The statement's memory (key-value state of the buckets it writes, the batch
    /// being split), accounted in the caller's memory pool.
    memory: Option<MemoryReservation>,
    /// Key-value state bytes of each bucket written so far.
    state_bytes: HashMap<BucketKey, usize>,
}

impl TableWrite {
    /// Accounts the state kept plus `transient` bytes; past the pool's limit the
    /// statement fails (and is rolled back) with a resources-exhausted error.
    fn account(&mut self, transient: usize) -> Result<()> {
        let Some(memory) = &mut self.memory else {
            return Ok(());
        };
        let kept: usize = self.state_bytes.values().sum();
        memory
            .try_resize(kept + transient)
            .map_err(|e| Error::from(e).with_context("table", self.table.path.to_string()))
    }
}

/// Row ranges of at most about `limit` bytes each (at least one row each; one empty
/// range for no rows, since an empty write still takes an offset). An update's `-U`
/// and `+U` stay in one batch.
fn chunks(
    batch: &RecordBatch,
    change_types: Option<&[ChangeType]>,
    limit: usize,
) -> Vec<(usize, usize)> {
    let rows = batch.num_rows();
    if rows == 0 {
        return vec![(0, 0)];
    }
    let per_row = (batch.get_array_memory_size() / rows).max(1);
    let step = (limit / per_row).max(1);
    let mut out = Vec::with_capacity(rows / step + 1);
    let mut start = 0;
    while start < rows {
        let mut end = (start + step).min(rows);
        if let Some(types) = change_types
            && end < rows
            && types[end - 1] == ChangeType::UpdateBefore
        {
            end += 1;
        }
        out.push((start, end));
        start = end;
    }
    out
}

impl LocalStore {
    /// Takes the writer lock for one statement. If another process wrote since this
    /// one's last statement, what was kept of the store is reloaded.
    pub(crate) async fn write_guard(&self) -> Result<WriteGuard<'_>> {
        let mut state = self.writer.lock().await;
        let lock = self.storage.lock_writer(self.options.lock_timeout).await?;
        if lock.previous_generation.is_none() || lock.previous_generation != state.generation {
            state.segments.clear();
            state.kv.clear();
            state.committed = None;
        }
        state.generation = Some(lock.generation);
        Ok(WriteGuard { state, _lock: lock })
    }

    /// Rolls back a statement a crash interrupted on `table`, if any.
    pub(crate) async fn recover_table(
        &self,
        guard: &mut WriteGuard<'_>,
        table: &FlussTable,
    ) -> Result<()> {
        if let Some(intent) = self.read_intent(table.table_id()).await? {
            guard.forget_table(table.table_id());
            self.roll_back(table.table_id(), &intent)
                .await
                .map_err(|e| e.with_context("table", table.path.to_string()))?;
        }
        Ok(())
    }

    async fn begin(
        &self,
        guard: &mut WriteGuard<'_>,
        path: &TablePath,
        kind: WriteKind,
    ) -> Result<TableWrite> {
        let table = self.get_table(path).await?;
        crate::source::writer::check_write_kind(&table, kind)?;
        self.recover_table(guard, &table).await?;
        self.adopt_unrecorded(guard, &table).await?;
        // auto-partitioning runs on every write, as Fluss's coordinator runs it on a
        // schedule: the write then sees the partitions retention keeps
        self.maintain_partitions(guard, &table).await?;
        let builder = self.batch_builder(&table, kind != WriteKind::Append)?;
        Ok(TableWrite {
            table,
            builder,
            intent: WriteIntent::default(),
            result: WriteResult::default(),
            memory: None,
            state_bytes: HashMap::new(),
        })
    }

    /// Commits the statement, or undoes it on error (if undoing fails too, the intent
    /// stays: readers ignore its batches and the next writer removes them). The
    /// commit records the new end of every bucket written in the commit record, then
    /// removes the intent (the commit point).
    async fn finish(
        &self,
        guard: &mut WriteGuard<'_>,
        txn: TableWrite,
        outcome: Result<()>,
    ) -> Result<WriteResult> {
        let outcome = match outcome {
            Ok(()) => match self.record_ends(guard, &txn).await {
                Ok(()) => self.commit_intent(&txn.table, &txn.intent).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => Ok(txn.result),
            Err(e) => {
                let id = txn.table.table_id();
                guard.forget_table(id);
                if !txn.intent.buckets.is_empty() {
                    let _ = self.roll_back(id, &txn.intent).await;
                }
                Err(e.with_context("table", txn.table.path.to_string()))
            }
        }
    }

    /// The commit record as the writer knows it (read once per writer generation).
    async fn committed<'g>(&self, guard: &'g mut WriteGuard<'_>) -> Result<&'g mut CommittedEnds> {
        if guard.state.committed.is_none() {
            guard.state.committed = Some(self.committed_ends().await?);
        }
        guard
            .state
            .committed
            .as_mut()
            .ok_or_else(|| Error::internal("commit record vanished"))
    }

    /// Records the end of every bucket the statement wrote in the commit record.
    async fn record_ends(&self, guard: &mut WriteGuard<'_>, txn: &TableWrite) -> Result<()> {
        if txn.intent.buckets.is_empty() {
            return Ok(());
        }
        let id = txn.table.table_id();
        let mut ends = Vec::with_capacity(txn.intent.buckets.len());
        for bucket in &txn.intent.buckets {
            let key = (id, bucket.partition_id, bucket.bucket);
            let writer = guard.state.segments.get(&key).ok_or_else(|| {
                Error::internal("a bucket the statement wrote has no segment writer")
            })?;
            ends.push((key, writer.next_offset()));
        }
        self.set_committed_ends(guard, ends).await
    }

    /// Sets `ends` in the commit record and writes it.
    async fn set_committed_ends(
        &self,
        guard: &mut WriteGuard<'_>,
        ends: Vec<(TableBucketKey, i64)>,
    ) -> Result<()> {
        let committed = self.committed(guard).await?;
        for (key, end) in ends {
            committed.set(key, end);
        }
        let record = committed.clone();
        self.store_committed_ends(&record).await
    }

    /// Records the end of every bucket of `table` the commit record does not list
    /// yet: a store written before the record (or by a tool that keeps none) is
    /// protected from the first write to each table on. The ends are what the
    /// segments hold then (a torn tail not counted), so damage from then on is caught.
    async fn adopt_unrecorded(&self, guard: &mut WriteGuard<'_>, table: &FlussTable) -> Result<()> {
        let id = table.table_id();
        let locations = FlussSource::buckets(self, table).await?;
        let committed = self.committed(guard).await?;
        let missing: Vec<BucketLocation> = locations
            .into_iter()
            .filter(|l| committed.get(id, l).is_none())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut ends = Vec::with_capacity(missing.len());
        for location in &missing {
            let dir = self.bucket_dir(table, location);
            let (_, end) = bucket_offsets(&self.storage, &dir)
                .await
                .map_err(|e| located(e, location).with_context("table", table.path.to_string()))?;
            ends.push(((id, location.partition_id(), location.bucket), end));
        }
        self.set_committed_ends(guard, ends).await
    }

    /// Takes a dropped table's (or partition's) buckets out of the commit record.
    pub(super) async fn forget_committed(
        &self,
        guard: &mut WriteGuard<'_>,
        table_id: i64,
        partition_id: Option<i64>,
    ) -> Result<()> {
        let committed = self.committed(guard).await?;
        let before = committed.clone();
        committed.forget(table_id, partition_id);
        if *committed == before {
            return Ok(());
        }
        let record = committed.clone();
        self.store_committed_ends(&record).await
    }

    /// Writes a stream of batches as one statement: every row or none. With a
    /// `memory` pool, what the statement holds is accounted there, so a write over
    /// the pool's limit fails instead of growing.
    pub async fn write_stream(
        &self,
        path: &TablePath,
        kind: WriteKind,
        mut rows: BoxStream<'_, Result<RecordBatch>>,
        memory: Option<&Arc<dyn MemoryPool>>,
    ) -> Result<WriteResult> {
        let mut guard = self.write_guard().await?;
        let mut txn = self.begin(&mut guard, path, kind).await?;
        txn.memory = memory
            .map(|pool| MemoryConsumer::new(format!("LocalStore write to {path}")).register(pool));
        let mut written: Option<Vec<bool>> = None;
        let outcome = async {
            while let Some(batch) = rows.try_next().await? {
                let op = match kind {
                    WriteKind::Append => RowsOp::Append,
                    WriteKind::Upsert => RowsOp::Upsert,
                    WriteKind::Delete => RowsOp::Delete,
                    WriteKind::PartialUpdate => {
                        if written.is_none() {
                            written = Some(partial_columns(&txn.table, &batch)?);
                        }
                        RowsOp::Partial(written.as_deref().unwrap_or_default())
                    }
                };
                self.write_rows(&mut guard, &mut txn, &batch, op).await?;
            }
            Ok(())
        }
        .await;
        self.finish(&mut guard, txn, outcome).await
    }

    async fn write_one(
        &self,
        path: &TablePath,
        kind: WriteKind,
        batch: &RecordBatch,
    ) -> Result<WriteResult> {
        let batch = Ok(batch.clone());
        self.write_stream(path, kind, Box::pin(futures::stream::iter([batch])), None)
            .await
    }

    /// Appends rows to a log table (as one statement).
    pub async fn append(&self, path: &TablePath, batch: &RecordBatch) -> Result<WriteResult> {
        self.write_one(path, WriteKind::Append, batch).await
    }

    /// Upserts full rows into a primary-key table.
    pub async fn upsert(&self, path: &TablePath, batch: &RecordBatch) -> Result<WriteResult> {
        self.write_one(path, WriteKind::Upsert, batch).await
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
        self.write_one(path, WriteKind::PartialUpdate, batch).await
    }

    /// Deletes rows by primary key (`keys` holds at least the key columns).
    pub async fn delete(&self, path: &TablePath, keys: &RecordBatch) -> Result<WriteResult> {
        self.write_one(path, WriteKind::Delete, keys).await
    }

    /// Writes one KV batch as a Fluss client sends it: full rows in order, each an
    /// upsert, or a delete by key where `deletes` is set (the other columns of a delete
    /// row are ignored but must still fit the schema). Every bucket touched gets one
    /// changelog batch (or more past the batch size), mixing `+I`, `-U`/`+U` and `-D`
    /// as a tablet writes them.
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
        let mut guard = self.write_guard().await?;
        let mut txn = self.begin(&mut guard, path, WriteKind::Upsert).await?;
        let outcome = self
            .write_rows(&mut guard, &mut txn, batch, RowsOp::Mixed(deletes))
            .await;
        self.finish(&mut guard, txn, outcome).await
    }

    /// Applies one batch of a statement.
    async fn write_rows(
        &self,
        guard: &mut WriteGuard<'_>,
        txn: &mut TableWrite,
        batch: &RecordBatch,
        op: RowsOp<'_>,
    ) -> Result<()> {
        let table = txn.table.clone();
        let latest = table.schemas.latest()?;
        let width = latest.arrow.fields().len();
        let conform = |b: &RecordBatch| {
            conform_batch(b, &latest).map_err(|e| e.with_context("table", table.path.to_string()))
        };
        let full = match op {
            RowsOp::Delete => conform_keys(
                batch,
                &latest,
                &table.info.get_schema().primary_key_indexes(),
            )?,
            RowsOp::Append | RowsOp::Upsert | RowsOp::Partial(_) => conform(batch)?,
            // The delete flags travel as a trailing column through the partition and
            // bucket split, and are taken off again per bucket.
            RowsOp::Mixed(deletes) => {
                let rows = conform(batch)?;
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
        txn.result.rows += full.num_rows();
        if full.num_rows() == 0 {
            return Ok(());
        }
        // the rows and their split copies by partition and bucket
        txn.account(2 * full.get_array_memory_size())?;
        for (partition, part) in self.split_by_partition(guard, &table, &full).await? {
            for (bucket, rows) in self.group_by_bucket(guard, &table, &part)? {
                let location = BucketLocation {
                    partition: partition.clone(),
                    bucket,
                };
                if let RowsOp::Append = op {
                    self.append_rows(guard, txn, &location, &rows, None).await?;
                    continue;
                }
                let key = (table.table_id(), location.partition_id(), bucket);
                if !guard.state.kv.contains_key(&key) {
                    let committed = self
                        .committed(guard)
                        .await?
                        .get(table.table_id(), &location);
                    let state = self.replay_state(&table, &location, committed).await?;
                    guard.state.kv.insert(key, state);
                }
                let kv = guard
                    .state
                    .kv
                    .get_mut(&key)
                    .ok_or_else(|| Error::internal("kv state vanished"))?;
                let changelog = match op {
                    RowsOp::Upsert => kv.upsert(&rows)?,
                    RowsOp::Partial(written) => kv.write_partial(&rows, written)?,
                    RowsOp::Delete => kv.delete(&rows)?,
                    RowsOp::Mixed(_) => {
                        let deletes = rows.column(width).as_boolean().clone();
                        kv.write(
                            &rows.project(&(0..width).collect::<Vec<_>>())?,
                            Some(&deletes),
                        )?
                    }
                    RowsOp::Append => {
                        return Err(Error::internal("an append reached the key-value path"));
                    }
                };
                txn.state_bytes.insert(key, kv.memory_size());
                txn.account(
                    2 * full.get_array_memory_size() + changelog.batch.get_array_memory_size(),
                )?;
                // A write that changes nothing still takes an offset (empty batch), as Fluss.
                self.append_rows(
                    guard,
                    txn,
                    &location,
                    &changelog.batch,
                    Some(&changelog.change_types),
                )
                .await?;
            }
        }
        Ok(())
    }

    /// Appends rows (and change types) to one bucket, in batches of bounded size,
    /// after recording the bucket in the statement's intent.
    async fn append_rows(
        &self,
        guard: &mut WriteGuard<'_>,
        txn: &mut TableWrite,
        location: &BucketLocation,
        rows: &RecordBatch,
        change_types: Option<&[ChangeType]>,
    ) -> Result<()> {
        let table = &txn.table;
        let writer = self.segment_writer(guard, table, location).await?;
        let entry = IntentBucket {
            partition_id: location.partition_id(),
            bucket: location.bucket,
            dir: writer.bucket_dir().to_string(),
            start_offset: writer.next_offset(),
            segment: writer.active().map(|(path, len)| (path.to_string(), len)),
        };
        self.record_intent(table, &mut txn.intent, entry).await?;
        for (start, end) in chunks(rows, change_types, self.options.writer_batch_bytes) {
            let writer = self.segment_writer(guard, table, location).await?;
            let chunk = rows.slice(start, end - start);
            let types = change_types.map(|t| &t[start..end]);
            let bytes = txn
                .builder
                .build(writer.next_offset(), now_millis(), &chunk, types)?;
            let encoded = LogBatch::parse(bytes)?;
            writer.append(&self.storage, &encoded).await?;
            txn.result.records += end - start;
            txn.result.batches += 1;
        }
        Ok(())
    }

    async fn split_by_partition(
        &self,
        guard: &WriteGuard<'_>,
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
            groups
                .entry(partition_name(&columns, row)?)
                .or_default()
                .push(row as u32);
        }
        let mut out = Vec::new();
        for (name, rows) in groups {
            let id = self.ensure_partition(guard, table, &name).await?;
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

    async fn segment_writer<'g>(
        &self,
        guard: &'g mut WriteGuard<'_>,
        table: &FlussTable,
        bucket: &BucketLocation,
    ) -> Result<&'g mut SegmentWriter> {
        let key = (table.table_id(), bucket.partition_id(), bucket.bucket);
        if !guard.state.segments.contains_key(&key) {
            let committed = self.committed(guard).await?.get(table.table_id(), bucket);
            let dir = self.bucket_dir(table, bucket);
            let roll = self.options.segment_roll_bytes;
            let writer = SegmentWriter::open(&self.storage, &dir, roll, committed)
                .await
                .map_err(|e| located(e, bucket))?;
            guard.state.segments.insert(key, writer);
        }
        guard
            .state
            .segments
            .get_mut(&key)
            .ok_or_else(|| Error::internal("segment writer vanished"))
    }

    fn group_by_bucket(
        &self,
        guard: &mut WriteGuard<'_>,
        table: &FlussTable,
        batch: &RecordBatch,
    ) -> Result<BTreeMap<i32, RecordBatch>> {
        let id = table.table_id();
        let assigners = &mut guard.state.assigners;
        if let std::collections::hash_map::Entry::Vacant(entry) = assigners.entry(id) {
            let assigner = BucketAssigner::new(
                table.info.get_row_type(),
                table.info.get_bucket_keys(),
                table.info.get_num_buckets(),
                table.configured_lake_format(),
            )?;
            entry.insert(assigner);
        }
        let assigner = assigners
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

    /// Rebuilds a bucket's key-value state by replaying its whole changelog, which
    /// must reach the bucket's `committed` end (a state folded from a cut log would
    /// write wrong previous images).
    async fn replay_state(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        committed: Option<i64>,
    ) -> Result<KeyValueState> {
        let latest = table.schemas.latest()?;
        let key_columns = table.info.get_schema().primary_key_indexes();
        let mut state = KeyValueState::new(latest.arrow.clone(), key_columns)?;
        let dir = self.bucket_dir(table, bucket);
        let (earliest, end) = bucket_offsets(&self.storage, &dir).await?;
        if let Some(c) = committed.filter(|c| *c > end) {
            return Err(self.lost_commits(table, bucket, end, c).await);
        }
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

/// `e` naming the bucket (and partition) it happened in.
fn located(e: Error, bucket: &BucketLocation) -> Error {
    let e = e.with_context("bucket", bucket.bucket);
    match &bucket.partition {
        Some((_, name)) => e.with_context("partition", name),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;

    #[test]
    fn chunks_bound_batch_size_and_keep_update_pairs() {
        let batch = RecordBatch::try_from_iter(vec![(
            "v",
            Arc::new(Int64Array::from_iter_values(0..10)) as _,
        )])
        .unwrap();
        let per_row = batch.get_array_memory_size() / 10;
        assert_eq!(chunks(&batch, None, usize::MAX), vec![(0, 10)]);
        assert_eq!(chunks(&batch, None, 1).len(), 10);
        let three = chunks(&batch, None, per_row * 3);
        assert_eq!(three.first(), Some(&(0, 3)));
        assert_eq!(three.last(), Some(&(9, 10)));
        let mut types = vec![ChangeType::Insert; 10];
        types[2] = ChangeType::UpdateBefore;
        types[3] = ChangeType::UpdateAfter;
        let pairs = chunks(&batch, Some(&types), per_row * 3);
        assert_eq!(pairs.first(), Some(&(0, 4)), "-U at 2 keeps its +U at 3");
        assert_eq!(chunks(&batch.slice(0, 0), None, 10), vec![(0, 0)]);
    }
}
