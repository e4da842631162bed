//! `FlussPrimaryKeyScanExec`: the primary-key union read. Each (partition, bucket) is
//! merged on its own; buckets are spread over at most `target_partitions` output
//! partitions.
//!
//! Per bucket: fold the changelog tail `[tiered offset, high watermark)` by key
//! ([`ChangelogFold`], last change wins), stream the bucket's merged lake rows
//! dropping those whose key the tail touched, then emit the tail's live rows. Memory
//! is bounded by the tail; the lake is streamed.
//!
//! ```text
//!  lake bucket b (merged)  --anti-join keys-->  surviving lake rows --+--> output
//!  log  bucket b [o_b, hw) --fold by key----->  live tail rows ------+
//! ```

use std::fmt;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, BooleanBufferBuilder, RecordBatch, Scalar, UInt32Array,
};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::kernels::cmp::eq;
use datafusion::arrow::compute::{filter_record_batch, take, take_record_batch};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::lake_exec::{BucketScanSpec, merged_stream, push_filters_by_name, scan_rows_of_file};
use super::lookup_exec::KeyLookupPlan;
use super::partition_pruner::PartitionsRead;
use super::statistics::ColumnEstimates;
use crate::cast::batch_of;
use crate::error::{Error, Result};
use crate::lake::{LakeTable, MergeTask};
use crate::log::LogReadOptions;
use crate::source::{FlussSource, FlussTable};
use crate::union::lake_keys::{FileKeys, LakeFileId};
use crate::union::tail_cache::TailKey;
use crate::union::{BucketCut, ChangelogFold, LakeKeyCache, RunKeys, TailCache};

/// Metrics every DataFusion operator reports about its own output.
const BASELINE_METRICS: [&str; 6] = [
    "output_rows",
    "elapsed_compute",
    "output_bytes",
    "output_batches",
    "start_timestamp",
    "end_timestamp",
];

/// Up to this many looked-up keys are found in a file's keys by comparing each
/// (one vectorized pass per key); more are hashed once and every row probed.
const COMPARED_LOOKUP_KEYS: usize = 16;

/// What one output partition reads.
#[derive(Debug, Clone)]
pub struct PrimaryKeyBucketTask {
    /// Partition name, for display.
    pub partition_name: Option<String>,
    /// Bucket id.
    pub bucket: i32,
    /// Lake splits of this bucket that need merging (LSM levels that overlap, delete
    /// rows, deletion vectors), read by the lake format's reader.
    pub lake_splits: Vec<MergeTask>,
    /// The bucket's lake rows that hold one version per key as they are: its
    /// raw-convertible splits (one sorted run, unique keys, no deletes) and the base
    /// runs of its keyed-run splits, as one DataFusion parquet scan.
    pub lake_parquet: Option<BucketParquetScan>,
    /// The newer files of its keyed-run splits, oldest first: each row is kept when
    /// no newer file and no tail change holds its key.
    pub lake_newer_runs: Vec<NewerRunScan>,
    /// The bucket's log tail, if it exists in Fluss.
    pub tail: Option<BucketCut>,
}

/// The lake files of one bucket that hold one row per key (raw-convertible splits,
/// base runs), planned as a parquet scan with one output partition per file, so
/// DataFusion's parquet reader (footer cache, row-group and page pruning) reads them
/// instead of the lake format's merge reader.
#[derive(Debug, Clone)]
pub struct BucketParquetScan {
    /// A `DataSourceExec` whose partition `i` reads file `i`, producing the columns of
    /// `scan_schema` that are not key columns (all of them when the bucket does not
    /// merge by key), then the row-kind column when [`Self::drops_deletes`], then each
    /// row's number in its file when [`Self::keys`] is not empty.
    pub plan: Arc<dyn ExecutionPlan>,
    /// What `plan` was planned from (it is planned again from it where the plan is
    /// shipped).
    pub spec: BucketScanSpec,
    /// When the scan merges by key: a scan of each file's key columns, by file. The
    /// keys are read once per file and kept ([`crate::union::LakeKeyCache`]); each
    /// row's key is then found by its row number.
    pub keys: Vec<FileKeyScan>,
    /// Lake splits it reads.
    pub splits: usize,
    /// How many of them are keyed-run splits (the rest are raw convertible).
    pub run_splits: usize,
    /// Rows in its files.
    pub rows: u64,
    /// Whether rows whose kind is a delete (`-U`, `-D`) are dropped: the key has no
    /// version in the lake then.
    pub drops_deletes: bool,
}

/// A scan of one lake file's key columns: all of its rows, in file order, then their
/// row numbers (which prove the order), with no predicate.
#[derive(Debug, Clone)]
pub struct FileKeyScan {
    /// The file, as its keys are cached.
    pub(crate) file: LakeFileId,
    /// A `DataSourceExec` of one partition.
    pub plan: Arc<dyn ExecutionPlan>,
    /// What `plan` was planned from.
    pub spec: BucketScanSpec,
}

/// One newer file of a bucket's keyed-run splits, as a parquet scan with one output
/// partition of `scan_schema` then the row-kind column. Never filtered: every key it
/// holds hides the older runs' versions, a delete's too.
#[derive(Debug, Clone)]
pub struct NewerRunScan {
    /// The scan columns and the row kind.
    pub rows: Arc<dyn ExecutionPlan>,
    /// What `rows` was planned from.
    pub spec: BucketScanSpec,
    /// Rows in the file.
    pub row_count: u64,
    /// A read of the file's keys, when the scan looks keys up: the file's kept keys
    /// then say which rows hold a looked-up key, and only those are read.
    pub keys: Option<FileKeyScan>,
}

/// Whether a Paimon row kind (`RowKind.toByteValue`: 0 `+I`, 1 `-U`, 2 `+U`, 3 `-D`)
/// keeps its row; an unknown kind is `None`.
fn row_kind_is_live(kind: i8) -> Option<bool> {
    match kind {
        0 | 2 => Some(true),
        1 | 3 => Some(false),
        _ => None,
    }
}

impl PrimaryKeyBucketTask {
    /// Rows the bucket may produce: lake rows plus tail offsets (updates and deletes
    /// make the true count smaller). Balances partitions and feeds statistics.
    pub fn estimated_rows(&self) -> u64 {
        let merged: i64 = self.lake_splits.iter().map(|t| t.rows).sum();
        let raw = self.lake_parquet.as_ref().map_or(0, |p| p.rows);
        let newer: u64 = self.lake_newer_runs.iter().map(|r| r.row_count).sum();
        merged.max(0) as u64 + raw + newer + self.tail.as_ref().map_or(0, |c| c.range.offsets())
    }

    /// Lake splits of the bucket, merged or raw.
    pub fn lake_split_count(&self) -> usize {
        self.lake_splits.len() + self.lake_parquet.as_ref().map_or(0, |p| p.splits)
    }
}

/// What every bucket of a primary-key scan reads and how it merges.
#[derive(Debug)]
pub struct PrimaryKeyMergeInputs {
    /// Where the log tail comes from.
    pub source: Arc<dyn FlussSource>,
    /// The Fluss table.
    pub table: FlussTable,
    /// The lake table and pinned snapshot id, if anything was tiered.
    pub lake: Option<(Arc<dyn LakeTable>, i64)>,
    /// Table columns read: the projection, plus the key columns when merging by key.
    pub scan_columns: Vec<usize>,
    /// The table schema projected to `scan_columns`.
    pub scan_schema: SchemaRef,
    /// Positions of the key columns in `scan_schema`; empty when no bucket merges by
    /// key (no tail, no newer sorted runs), so keys the query does not ask for are
    /// not read.
    pub key_positions: Vec<usize>,
    /// Positions in `scan_schema` of the columns the scan outputs.
    pub output_positions: Vec<usize>,
    /// Column estimates of the table, for the statistics.
    pub estimates: ColumnEstimates,
    /// Where folded tails are kept between queries, if anywhere.
    pub tail_cache: Option<Arc<TailCache>>,
    /// Where lake files' keys are kept between queries, if anywhere.
    pub lake_keys: Option<Arc<LakeKeyCache>>,
    /// The primary keys the query's filters fix (one array per key column of
    /// `scan_schema`'s key types), if they fix the whole key: the tail then outputs
    /// only those keys' live rows, found in its key index.
    pub key_lookup: Option<Vec<ArrayRef>>,
}

impl PrimaryKeyMergeInputs {
    /// The primary key's column types, in key order.
    pub(crate) fn key_types(&self) -> Vec<DataType> {
        self.key_positions
            .iter()
            .map(|&p| self.scan_schema.field(p).data_type().clone())
            .collect()
    }

    /// Positions in `scan_schema` of the columns a bucket's base lake scan reads: all
    /// but the key columns, whose values come from the files' cached keys.
    pub(crate) fn base_positions(&self) -> Vec<usize> {
        (0..self.scan_columns.len())
            .filter(|p| !self.key_positions.contains(p))
            .collect()
    }

    /// Where each output column is in a base lake batch.
    fn base_slots(&self) -> Vec<BaseSlot> {
        let base = self.base_positions();
        self.output_positions
            .iter()
            .map(|p| match self.key_positions.iter().position(|k| k == p) {
                Some(k) => BaseSlot::Key(k),
                None => BaseSlot::Column(base.iter().position(|b| b == p).unwrap_or_default()),
            })
            .collect()
    }
}

/// Where an output column of a base lake batch comes from.
#[derive(Debug, Clone, Copy)]
enum BaseSlot {
    /// The batch's column at this index.
    Column(usize),
    /// The file's cached key column at this index, by each row's number.
    Key(usize),
}

/// The primary-key union scan.
#[derive(Debug)]
pub struct FlussPrimaryKeyScanExec {
    pub(super) inputs: Arc<PrimaryKeyMergeInputs>,
    /// Buckets read by each output partition, one after another.
    pub(super) groups: Vec<Vec<PrimaryKeyBucketTask>>,
    pub(super) schema: SchemaRef,
    pub(super) limit: Option<usize>,
    pub(super) filters: Vec<String>,
    pub(super) properties: Arc<PlanProperties>,
    pub(super) metrics: ExecutionPlanMetricsSet,
    /// A lookup of this scan's rows by key, for a join that knows the keys it needs
    /// ([`super::lookup_join::LookupJoinRule`]).
    pub(super) join_lookup: Option<KeyLookupPlan>,
    /// How many partitions the scan reads and pruned (partitioned tables).
    pub(super) partitions: Option<PartitionsRead>,
    /// Files of the lake snapshot the plan never opens (a metric).
    pub(super) lake_files_pruned: usize,
}

impl FlussPrimaryKeyScanExec {
    /// The same scan, counting in its metrics (`lake_files_pruned`) the files of the
    /// lake snapshot its plan never opens.
    pub fn with_lake_files_pruned(mut self, files: usize) -> Self {
        super::describe::lake_files_pruned(&self.metrics, files);
        self.lake_files_pruned = files;
        self
    }

    /// The same scan, showing in EXPLAIN how many partitions it reads and pruned.
    pub fn with_partitions(mut self, partitions: Option<PartitionsRead>) -> Self {
        self.partitions = partitions;
        self
    }

    /// The same scan, which a join may replace by a lookup of its keys (`lookup`).
    pub fn with_join_lookup(mut self, lookup: KeyLookupPlan) -> Self {
        self.join_lookup = Some(lookup);
        self
    }

    /// What a lookup of this scan's keys would read, where the source serves them.
    pub fn join_lookup(&self) -> Option<&KeyLookupPlan> {
        self.join_lookup.as_ref()
    }

    /// A scan merging `tasks` (spread over at most `target_partitions` output
    /// partitions); `filters` are shown by EXPLAIN.
    pub fn new(
        inputs: PrimaryKeyMergeInputs,
        tasks: Vec<PrimaryKeyBucketTask>,
        target_partitions: usize,
        limit: Option<usize>,
        filters: Vec<String>,
    ) -> DfResult<Self> {
        let schema = Arc::new(inputs.scan_schema.project(&inputs.output_positions)?);
        let groups = super::describe::group_by_size(
            tasks,
            target_partitions,
            PrimaryKeyBucketTask::estimated_rows,
        );
        let properties = super::describe::leaf_properties(&schema, groups.len());
        Ok(Self {
            inputs: Arc::new(inputs),
            groups,
            schema,
            limit,
            filters,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
            join_lookup: None,
            partitions: None,
            lake_files_pruned: 0,
        })
    }
}

impl DisplayAs for FlussPrimaryKeyScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        super::describe::as_format(t, f, |f| {
            let tasks = self.groups.iter().flatten();
            let cuts: Vec<BucketCut> = tasks.clone().filter_map(|t| t.tail.clone()).collect();
            let splits: usize = tasks
                .clone()
                .map(PrimaryKeyBucketTask::lake_split_count)
                .sum();
            let parquet = tasks.filter_map(|t| t.lake_parquet.as_ref());
            let runs: usize = parquet.clone().map(|p| p.run_splits).sum();
            let raw: usize = parquet.map(|p| p.splits).sum::<usize>() - runs;
            write!(
                f,
                "FlussPrimaryKeyScanExec: table={}, lake_snapshot={}, lake_splits={} ({raw} raw parquet, {runs} keyed runs), log_ranges=[{}], merge=changelog_fold_by_key, projection=[{}]",
                self.inputs.table.path,
                self.inputs
                    .lake
                    .as_ref()
                    .map_or("none".to_string(), |(_, s)| s.to_string()),
                splits,
                super::describe::describe_buckets(&cuts),
                super::describe::describe_projection(&self.schema),
            )?;
            if !self.filters.is_empty() {
                write!(f, ", pushed_filters=[{}]", self.filters.join(", "))?;
            }
            if let Some(partitions) = &self.partitions {
                write!(f, ", {partitions}")?;
            }
            if let Some(keys) = &self.inputs.key_lookup {
                let keys = keys.first().map_or(0, |k| k.len());
                write!(f, ", tail_key_lookup={keys}")?;
            }
            if let Some(limit) = self.limit {
                write!(f, ", limit={limit}")?;
            }
            Ok(())
        })
    }
}

impl ExecutionPlan for FlussPrimaryKeyScanExec {
    fn name(&self) -> &str {
        "FlussPrimaryKeyScanExec"
    }

    super::describe::leaf_node_methods!();

    /// The expressions of the buckets' lake parquet scans (dynamic filters pushed
    /// into them among them), so the join filling one finds it.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        let plans = self
            .groups
            .iter()
            .flatten()
            .filter_map(|t| t.lake_parquet.as_ref());
        for parquet in plans {
            if parquet.plan.apply_expressions(f)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let batch_size = context.session_config().batch_size();
        let schema = self.schema.clone();
        let Some(tasks) = self.groups.get(partition).cloned() else {
            return Ok(super::describe::empty_partition(schema));
        };
        let merge = Arc::new(BucketMerge {
            inputs: self.inputs.clone(),
            batch_size,
            context,
            counters: super::describe::log_counters(&self.metrics, partition),
            lake_rows: MetricBuilder::new(&self.metrics).counter("lake_rows", partition),
            newer_run_rows: MetricBuilder::new(&self.metrics)
                .counter("lake_newer_run_rows", partition),
            dropped: MetricBuilder::new(&self.metrics).counter("pk_merge_rows_dropped", partition),
            tail_live: MetricBuilder::new(&self.metrics).counter("tail_live_rows", partition),
            tail_cache_hits: MetricBuilder::new(&self.metrics)
                .counter("tail_cache_hits", partition),
            fold_time: MetricBuilder::new(&self.metrics).subset_time("tail_fold_time", partition),
            anti_join_time: MetricBuilder::new(&self.metrics)
                .subset_time("lake_anti_join_time", partition),
            key_cache_hits: MetricBuilder::new(&self.metrics)
                .counter("lake_key_cache_hits", partition),
            key_reads: MetricBuilder::new(&self.metrics).counter("lake_key_file_reads", partition),
            key_read_time: MetricBuilder::new(&self.metrics)
                .subset_time("lake_key_read_time", partition),
            base_slots: self.inputs.base_slots(),
            base_columns: self.inputs.base_positions().len(),
            output_schema: self.schema.clone(),
        });
        // The group's buckets one after another; the next bucket's tail is folded on
        // its own task while this one's lake rows stream, so folding (CPU) overlaps
        // lake reads (I/O waits). At most two folds of a partition are alive at once
        // (starting all of them at once measured no faster).
        let stream = futures::stream::iter(tasks)
            .map(move |task| {
                let merge = merge.clone();
                // A bucket without a tail has nothing to fold: no task is spawned, so a
                // fully tiered table schedules nothing beyond its partitions.
                let has_tail = task.tail.as_ref().is_some_and(|cut| !cut.range.is_empty());
                let folding = has_tail.then(|| {
                    SpawnedTask::spawn({
                        let (merge, task) = (merge.clone(), task.clone());
                        async move { merge.fold_tail(&task).await }
                    })
                });
                async move {
                    let fold = match folding {
                        Some(folding) => folding.join().await.map_err(|e| {
                            Error::internal(format!("tail fold task failed: {e}"))
                        })??,
                        None => merge.fold_tail(&task).await?,
                    };
                    merge.merge(task, fold)
                }
            })
            .buffered(2)
            .try_flatten()
            .map(|r| r.map_err(DataFusionError::from))
            .boxed();
        let stream = super::describe::limit_stream(stream, self.limit);
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    /// Our merge metrics plus those of the buckets' parquet scans (row groups and pages
    /// pruned, bytes scanned), summed by name when shown.
    fn metrics(&self) -> Option<MetricsSet> {
        let mut set = self.metrics.clone_inner();
        let scans = self.groups.iter().flatten().flat_map(|t| {
            let base = t.lake_parquet.as_ref();
            let keys = base
                .into_iter()
                .flat_map(|p| p.keys.iter().map(|k| &k.plan));
            base.map(|p| &p.plan)
                .into_iter()
                .chain(keys)
                .chain(t.lake_newer_runs.iter().map(|r| &r.rows))
        });
        for plan in scans {
            // Its baseline metrics (output rows, compute time) describe the lake read,
            // not this node's output: leave them out.
            let metrics = plan.metrics();
            for metric in metrics.iter().flat_map(MetricsSet::iter) {
                if !BASELINE_METRICS.contains(&metric.value().name()) {
                    set.push(metric.clone());
                }
            }
        }
        Some(set)
    }

    /// Filters pushed at run time (hash-join and TopK dynamic filters, `Post` phase) go
    /// to the buckets' lake parquet scans, whose row groups and pages they then prune
    /// as the join's build side fills: any filter may drop a lake row, as each is kept
    /// only as its key's newest version, against keys read unfiltered (the tail's, the
    /// newer runs'). The tail is never filtered (a stale version would surface), so the
    /// parent keeps applying every filter.
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters: Vec<_> = child_pushdown_result
            .parent_filters
            .iter()
            .map(|f| f.filter.clone())
            .collect();
        let kept = FilterPushdownPropagation::with_parent_pushdown_result(vec![
            PushedDown::No;
            filters.len()
        ]);
        // `Pre` filters are the query's own, planned into the scans already.
        if phase != FilterPushdownPhase::Post || filters.is_empty() {
            return Ok(kept);
        }
        let mut groups = self.groups.clone();
        let mut changed = false;
        // Not into the newer runs: each of their keys must be seen to hide older
        // versions.
        let plans = groups
            .iter_mut()
            .flatten()
            .filter_map(|t| t.lake_parquet.as_mut().map(|p| &mut p.plan));
        for plan in plans {
            // This node's output columns are the table's, by name; the scan's table
            // schema holds every one of them (a key column too, though the scan
            // reads keys from the key cache), so a filter on a key still prunes.
            if let Some(updated) = push_filters_by_name(plan, &filters, config)? {
                *plan = updated;
                changed = true;
            }
        }
        if !changed {
            return Ok(kept);
        }
        let updated = Self {
            inputs: self.inputs.clone(),
            groups,
            schema: self.schema.clone(),
            limit: self.limit,
            filters: self.filters.clone(),
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
            join_lookup: self.join_lookup.clone(),
            partitions: self.partitions,
            lake_files_pruned: self.lake_files_pruned,
        };
        Ok(kept.with_updated_node(Arc::new(updated)))
    }

    /// Inexact: rows read ([`PrimaryKeyBucketTask::estimated_rows`]; updates and
    /// deletes make the merged count smaller; no more than the fixed keys), columns
    /// estimated from the lake's footers, so DataFusion orders joins as it would over
    /// the merged parquet.
    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let rows = |t: &PrimaryKeyBucketTask| t.estimated_rows() as usize;
        let total: usize = match partition {
            Some(p) => self.groups.get(p).map_or(0, |g| g.iter().map(rows).sum()),
            None => self.groups.iter().flatten().map(rows).sum(),
        };
        let rows = self.limit.map_or(total, |l| total.min(l));
        // a fixed key has at most one live row: a point lookup then reports a handful
        // of rows, and DataFusion spreads no round-robin repartition over it
        let keys = self.inputs.key_lookup.as_ref().and_then(|k| k.first());
        let rows = keys.map_or(rows, |k| rows.min(k.len()));
        let columns: Vec<usize> = self
            .inputs
            .output_positions
            .iter()
            .map(|&p| self.inputs.scan_columns[p])
            .collect();
        // The lake files bound the rows only when there is no tail to change them.
        let bounded = self.inputs.estimates.covers_lake()
            && self.groups.iter().flatten().all(|t| t.tail.is_none());
        Ok(Arc::new(self.inputs.estimates.for_rows(
            rows,
            Some(&columns),
            bounded,
        )))
    }
}

/// The row-kind column of a key-value batch: the column after its `columns` scan
/// columns.
fn row_kinds(
    batch: &RecordBatch,
    columns: usize,
) -> Result<&datafusion::arrow::array::PrimitiveArray<datafusion::arrow::datatypes::Int8Type>> {
    use datafusion::arrow::array::AsArray;
    let kinds = batch
        .columns()
        .get(columns)
        .ok_or_else(|| Error::internal("a key-value lake batch has no row-kind column"))?;
    if kinds.null_count() > 0 {
        return Err(Error::data_invalid("a lake row kind is null"));
    }
    kinds
        .as_primitive_opt()
        .ok_or_else(|| Error::internal("the lake row-kind column is not Int8"))
}

/// Which rows of a key-value batch its row kind keeps.
fn live_mask(batch: &RecordBatch, columns: usize) -> Result<BooleanBuffer> {
    let kinds = row_kinds(batch, columns)?.values();
    if let Some(bad) = kinds.iter().find(|k| row_kind_is_live(**k).is_none()) {
        return Err(Error::data_invalid(format!(
            "lake row kind {bad} is not a Paimon row kind"
        )));
    }
    Ok(BooleanBuffer::collect_bool(kinds.len(), |i| {
        row_kind_is_live(kinds[i]) == Some(true)
    }))
}

/// What merging one bucket needs, shared by the buckets of an output partition.
struct BucketMerge {
    inputs: Arc<PrimaryKeyMergeInputs>,
    counters: crate::log::LogReadCounters,
    lake_rows: Count,
    /// Rows of newer lake runs read.
    newer_run_rows: Count,
    dropped: Count,
    tail_live: Count,
    /// Buckets whose folded tail came from the [`TailCache`].
    tail_cache_hits: Count,
    /// Reading, decoding and folding the tail.
    fold_time: Time,
    /// Probing lake rows against the fold and filtering them.
    anti_join_time: Time,
    /// Rows per batch of the tail's live rows (the session's `batch_size`).
    batch_size: usize,
    /// The query's task context, to execute the buckets' parquet scans.
    context: Arc<TaskContext>,
    /// Lake files whose keys came from the [`LakeKeyCache`].
    key_cache_hits: Count,
    /// Lake files whose keys were read.
    key_reads: Count,
    /// Reading lake files' keys.
    key_read_time: Time,
    /// Where each output column is in a base lake batch.
    base_slots: Vec<BaseSlot>,
    /// Scan columns a base lake batch holds before its row kind and row number.
    base_columns: usize,
    /// The scan's output schema.
    output_schema: SchemaRef,
}

impl BucketMerge {
    /// The bucket's tail folded: from the [`TailCache`] when a fold of its range holds
    /// the columns the query outputs, else read and folded (and then kept there).
    async fn fold_tail(&self, task: &PrimaryKeyBucketTask) -> Result<FoldedTail> {
        let inputs = &self.inputs;
        let _timer = self.fold_time.timer();
        let cut = task.tail.as_ref().filter(|cut| !cut.range.is_empty());
        let key = cut.map(|cut| TailKey {
            table_id: inputs.table.table_id(),
            schema_id: inputs.table.info.get_schema_id(),
            partition_id: cut.location.partition_id(),
            bucket: cut.location.bucket,
            start: cut.range.start,
            stop: cut.range.stop,
        });
        let cache = inputs.tail_cache.as_ref().zip(key);
        if let Some((cache, key)) = &cache {
            let wanted: Vec<usize> = inputs
                .output_positions
                .iter()
                .map(|&p| inputs.scan_columns[p])
                .collect();
            if let Some(hit) = cache.get(key, &wanted)
                && let Some(output) = hit.positions(&wanted)
            {
                self.tail_cache_hits.add(1);
                return Ok(FoldedTail {
                    fold: hit.fold,
                    output,
                });
            }
        }
        let mut fold =
            ChangelogFold::new(inputs.scan_schema.clone(), inputs.key_positions.clone())?;
        let consumer = MemoryConsumer::new(format!(
            "FlussPrimaryKeyScanExec tail fold (table {}, bucket {})",
            inputs.table.path, task.bucket
        ));
        fold.track_memory(consumer.register(self.context.memory_pool()))?;
        if let Some(cut) = cut {
            fold.reserve(cut.range.offsets().min(1 << 24) as usize)?;
            let options = LogReadOptions {
                projection: Some(inputs.scan_columns.clone()),
                predicate: None,
                commit_time: None,
                verify_crc: true,
                counters: Some(self.counters.clone()),
            };
            let mut tail = inputs
                .source
                .read_log(&inputs.table, &cut.location, cut.range, options)
                .await?;
            while let Some(batch) = tail.try_next().await? {
                let rows = super::view_types::to_view_types(batch.batch, &inputs.scan_schema)?;
                fold.apply(&rows, &batch.change_types)?;
            }
        }
        let output = inputs.output_positions.clone();
        match cache {
            // the cache bounds a fold it keeps, not the query's pool
            Some((cache, key)) if fold.memory_size() <= cache.capacity() => {
                fold.release_memory();
                let fold = Arc::new(fold);
                cache.insert(key, inputs.scan_columns.clone(), fold.clone());
                Ok(FoldedTail { fold, output })
            }
            _ => Ok(FoldedTail {
                fold: Arc::new(fold),
                output,
            }),
        }
    }

    /// Streams the bucket's lake rows that are their key's newest lake version and
    /// whose key the tail did not touch, then the tail's live rows.
    ///
    /// The newer runs stream first, newest first, unfiltered: each row is its key's
    /// version when no run before it held the key, and its key (a delete's too) is
    /// recorded in the bucket's [`RunKeys`]. The base rows (raw splits, base runs, the
    /// lake format's merge reader, whose key ranges the other splits do not overlap)
    /// stream last and are kept when no newer run holds their key. Every lake file is
    /// read once; a base file's key columns are read once per file and then kept.
    fn merge(
        self: Arc<Self>,
        task: PrimaryKeyBucketTask,
        tail: FoldedTail,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let inputs = &self.inputs;
        let fold = tail.fold;
        let columns = inputs.scan_columns.len();
        let table = inputs.table.path.to_string();
        let mut runs = RunKeys::new(&inputs.key_types())?;
        if !task.lake_newer_runs.is_empty() {
            let consumer = MemoryConsumer::new(format!(
                "FlussPrimaryKeyScanExec lake run keys (table {}, bucket {})",
                inputs.table.path, task.bucket
            ));
            runs.track_memory(consumer.register(self.context.memory_pool()))?;
        }
        // Recorded by the newer runs' rows, then read by the base files' (which stream
        // after every newer run).
        let runs = Arc::new(Mutex::new(runs));
        let mut streams: Vec<BoxStream<'static, Result<(RecordBatch, LakeRun)>>> = Vec::new();
        let rows = |plan: &Arc<dyn ExecutionPlan>, partition: usize, run: LakeRun| {
            Ok::<_, Error>(
                plan.execute(partition, self.context.clone())?
                    .map(move |batch| Ok((batch.map_err(Error::from)?, run.clone())))
                    .boxed(),
            )
        };
        for run in task.lake_newer_runs.iter().rev() {
            match (&run.keys, &inputs.key_lookup) {
                (Some(keys), Some(_)) => streams.push(
                    self.clone()
                        .looked_up_newer_rows(run.rows.clone(), keys.clone()),
                ),
                _ => streams.push(rows(&run.rows, 0, LakeRun::Newer)?),
            }
        }
        if let Some(scan) = &task.lake_parquet {
            let kinds = scan.drops_deletes;
            if scan.keys.is_empty() {
                let files = scan.plan.properties().partitioning.partition_count();
                for file in 0..files {
                    streams.push(rows(&scan.plan, file, LakeRun::Base { kinds })?);
                }
            }
            for (file, keys) in scan.keys.iter().enumerate() {
                let base = KeyedBaseFile {
                    plan: scan.plan.clone(),
                    file,
                    keys: keys.clone(),
                    kinds,
                };
                streams.push(
                    self.clone()
                        .keyed_base_rows(base, fold.clone(), runs.clone()),
                );
            }
        }
        if let (Some((lake, snapshot_id)), false) = (&inputs.lake, task.lake_splits.is_empty()) {
            streams.push(
                merged_stream(
                    lake.clone(),
                    *snapshot_id,
                    task.lake_splits.clone(),
                    inputs.scan_schema.clone(),
                    table.clone(),
                )
                .map(|b| b.map(|b| (b, LakeRun::Base { kinds: false })))
                .boxed(),
            );
        }
        // lake rows that are their key's newest version, not overridden by the tail
        let lake_stream = {
            let fold = fold.clone();
            let merge = self.clone();
            futures::stream::iter(streams).flatten().map(move |item| {
                let (batch, run) = item?;
                let _timer = merge.anti_join_time.timer();
                let with_context = |e: Error| e.with_context("table", &table);
                if let LakeRun::KeyedBase { file, kinds } = &run {
                    return merge
                        .keyed_base_batch(&batch, file, *kinds)
                        .map_err(with_context);
                }
                let key_positions = &merge.inputs.key_positions;
                let keys: Vec<_> = key_positions
                    .iter()
                    .map(|&p| batch.column(p).clone())
                    .collect();
                let mut keep = fold.surviving(&batch, key_positions)?.values().clone();
                match run {
                    LakeRun::Newer => {
                        merge.newer_run_rows.add(batch.num_rows());
                        keep = &keep & &lock(&runs)?.first_seen(&keys)?;
                        keep = &keep & &live_mask(&batch, columns).map_err(with_context)?;
                    }
                    LakeRun::Base { kinds } => {
                        merge.lake_rows.add(batch.num_rows());
                        let runs = lock(&runs)?;
                        if !runs.is_empty() {
                            keep = &keep & &runs.unseen(&keys)?;
                        }
                        if kinds {
                            keep = &keep & &live_mask(&batch, columns).map_err(with_context)?;
                        }
                    }
                    LakeRun::KeyedBase { .. } => {}
                }
                let keep = BooleanArray::new(keep, None);
                // Project first: key columns the query did not ask for are not copied.
                let batch = batch.project(&merge.inputs.output_positions)?;
                let kept = if keep.true_count() == batch.num_rows() {
                    batch
                } else {
                    filter_record_batch(&batch, &keep)?
                };
                merge.dropped.add(keep.len() - kept.num_rows());
                Ok(kept)
            })
        };
        // then the tail's live rows
        let live = match &inputs.key_lookup {
            Some(keys) => fold.live_rows_of(keys, &tail.output, self.batch_size)?,
            None => fold.live_rows(&tail.output, self.batch_size)?,
        };
        self.tail_live
            .add(live.iter().map(RecordBatch::num_rows).sum::<usize>());
        let tail_stream = futures::stream::iter(live.into_iter().map(Ok));
        Ok(lake_stream.chain(tail_stream).boxed())
    }

    /// The rows of a newer run's file holding a looked-up key, found in the file's
    /// kept keys; a file holding none is not opened. Only a looked-up key's versions
    /// matter to a lookup, so the other rows need not hide anything.
    fn looked_up_newer_rows(
        self: Arc<Self>,
        rows: Arc<dyn ExecutionPlan>,
        keys: FileKeyScan,
    ) -> BoxStream<'static, Result<(RecordBatch, LakeRun)>> {
        futures::stream::once(async move {
            let lookup = self
                .inputs
                .key_lookup
                .as_ref()
                .ok_or_else(|| Error::internal("a newer run is looked up without keys"))?;
            let (file_keys, memory) = self.file_keys(&keys).await?;
            let holding = rows_holding(&file_keys, lookup)?;
            if holding.count_set_bits() == 0 {
                return Ok(futures::stream::empty().boxed());
            }
            let wanted = scan_rows_of_file(&rows, 0, &holding)
                .ok_or_else(|| Error::internal("a newer lake run's scan is not a file scan"))?;
            Ok::<_, Error>(
                wanted
                    .execute(0, self.context.clone())?
                    .map(move |batch| {
                        // the keys' memory is held while the file is read
                        let _held = &memory;
                        Ok((batch.map_err(Error::from)?, LakeRun::Newer))
                    })
                    .boxed(),
            )
        })
        .try_flatten()
        .boxed()
    }

    /// The rows of one base lake file, read without its key columns. Started once
    /// every newer run has streamed (streams are read in order): the file's keys
    /// (cached, or read now) then say which rows survive the tail and the newer runs.
    fn keyed_base_rows(
        self: Arc<Self>,
        base: KeyedBaseFile,
        fold: Arc<ChangelogFold>,
        runs: Arc<Mutex<RunKeys>>,
    ) -> BoxStream<'static, Result<(RecordBatch, LakeRun)>> {
        futures::stream::once(async move {
            let (keys, memory) = self.file_keys(&base.keys).await?;
            // A key lookup reads only the rows holding a looked-up key, found in the
            // file's keys: only those rows are checked against the tail and the newer
            // runs, the key columns are never decoded, and a file keeping none of them
            // is not opened.
            let (keep, lookup) = match &self.inputs.key_lookup {
                None => (surviving(&fold, &runs, keys.batch())?, None),
                Some(lookup) => {
                    let holding = rows_holding(&keys, lookup)?;
                    let at = UInt32Array::from_iter_values(holding.set_indices().map(|i| i as u32));
                    let kept = surviving(&fold, &runs, &take_record_batch(keys.batch(), &at)?)?;
                    // back to the file's row positions
                    let rows = keys.batch().num_rows();
                    let mut keep = BooleanBufferBuilder::new(rows);
                    keep.append_n(rows, false);
                    for (row, kept) in at.values().iter().zip(kept.iter()) {
                        keep.set_bit(*row as usize, kept);
                    }
                    let keep = keep.finish();
                    if keep.count_set_bits() == 0 {
                        return Ok(futures::stream::empty().boxed());
                    }
                    let rows = scan_rows_of_file(&base.plan, base.file, &keep)
                        .ok_or_else(|| Error::internal("a base lake scan is not a file scan"))?;
                    (keep, Some(rows))
                }
            };
            let file = Arc::new(SurvivingRows {
                keys,
                keep,
                path: base.keys.file.path.clone(),
                _memory: memory,
            });
            let kinds = base.kinds;
            let rows = match lookup {
                Some(rows) => rows.execute(0, self.context.clone())?,
                None => base.plan.execute(base.file, self.context.clone())?,
            };
            Ok::<_, Error>(
                rows.map(move |batch| {
                    let run = LakeRun::KeyedBase {
                        file: file.clone(),
                        kinds,
                    };
                    Ok((batch.map_err(Error::from)?, run))
                })
                .boxed(),
            )
        })
        .try_flatten()
        .boxed()
    }

    /// A lake file's keys: from the [`LakeKeyCache`], else read (and kept there when
    /// they fit; otherwise held in the query's memory pool while the file is read).
    async fn file_keys(
        &self,
        scan: &FileKeyScan,
    ) -> Result<(Arc<FileKeys>, Option<MemoryReservation>)> {
        let cache = self.inputs.lake_keys.as_ref();
        if let Some(hit) = cache.and_then(|c| c.get(&scan.file)) {
            self.key_cache_hits.add(1);
            return Ok((hit, None));
        }
        let timer = self.key_read_time.timer();
        let located = |e: Error| {
            e.with_context("table", self.inputs.table.path.to_string())
                .with_context("file", &scan.file.path)
        };
        let batches: Vec<RecordBatch> = scan
            .plan
            .execute(0, self.context.clone())?
            .try_collect()
            .await
            .map_err(|e| located(Error::from(e)))?;
        let keys = Arc::new(FileKeys::from_scan(&scan.plan.schema(), &batches).map_err(located)?);
        timer.done();
        self.key_reads.add(1);
        if cache.is_some_and(|c| c.insert(scan.file.clone(), keys.clone())) {
            return Ok((keys, None));
        }
        let memory = MemoryConsumer::new(format!(
            "FlussPrimaryKeyScanExec lake keys (table {})",
            self.inputs.table.path
        ))
        .register(self.context.memory_pool());
        memory.try_grow(keys.memory_size())?;
        Ok((keys, Some(memory)))
    }

    /// A base lake batch (its columns other than the key, its row kinds, its row
    /// numbers) as output rows: those the file's surviving rows keep and its row kind
    /// leaves live, with the key columns taken from the file's keys.
    fn keyed_base_batch(
        &self,
        batch: &RecordBatch,
        file: &SurvivingRows,
        kinds: bool,
    ) -> Result<RecordBatch> {
        use datafusion::arrow::array::AsArray;
        use datafusion::arrow::compute::filter;
        use datafusion::arrow::datatypes::Int64Type;
        let rows = batch.num_rows();
        self.lake_rows.add(rows);
        let numbers = batch
            .columns()
            .get(self.base_columns + usize::from(kinds))
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| Error::internal("a base lake batch has no row-number column"))?;
        let in_file = file.keys.rows() as i64;
        if numbers.null_count() > 0 || numbers.values().iter().any(|&n| n < 0 || n >= in_file) {
            return Err(Error::data_invalid(format!(
                "a lake row number is outside the file's {in_file} rows"
            ))
            .with_context("file", &file.path));
        }
        let numbers_of = numbers.values();
        let mut keep =
            BooleanBuffer::collect_bool(rows, |i| file.keep.value(numbers_of[i] as usize));
        if kinds {
            keep = &keep & &live_mask(batch, self.base_columns)?;
        }
        let keep = BooleanArray::new(keep, None);
        let kept = keep.true_count();
        let all = kept == rows;
        let numbers: ArrayRef = if all {
            Arc::new(numbers.clone())
        } else {
            filter(numbers, &keep)?
        };
        let numbers = numbers.as_primitive::<Int64Type>();
        let columns = self
            .base_slots
            .iter()
            .map(|slot| match *slot {
                BaseSlot::Column(c) if all => Ok(batch.column(c).clone()),
                BaseSlot::Column(c) => Ok(filter(batch.column(c), &keep)?),
                BaseSlot::Key(k) => Ok(take(file.keys.batch().column(k), numbers, None)?),
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        self.dropped.add(rows - kept);
        batch_of(&self.output_schema, columns, kept)
    }
}

/// One base lake file of a bucket that merges by key.
struct KeyedBaseFile {
    /// The bucket's base scan; partition `file` reads this file.
    plan: Arc<dyn ExecutionPlan>,
    file: usize,
    /// The scan of its keys.
    keys: FileKeyScan,
    /// Whether its rows carry a row kind.
    kinds: bool,
}

/// A base lake file's keys and which of its rows survive the tail and the newer runs.
struct SurvivingRows {
    keys: Arc<FileKeys>,
    /// By row number.
    keep: BooleanBuffer,
    /// The file, for errors.
    path: String,
    /// The keys' memory in the query's pool, when the cache does not hold them.
    _memory: Option<MemoryReservation>,
}

/// Which rows of `keys` (a file's key columns, in order) survive the tail's `fold`
/// and hold a key no newer run has.
fn surviving(
    fold: &ChangelogFold,
    runs: &Mutex<RunKeys>,
    keys: &RecordBatch,
) -> Result<BooleanBuffer> {
    let all: Vec<usize> = (0..keys.num_columns()).collect();
    let keep = fold.surviving(keys, &all)?.values().clone();
    let runs = lock(runs)?;
    if runs.is_empty() {
        return Ok(keep);
    }
    Ok(&keep & &runs.unseen(keys.columns())?)
}

/// Which rows of a file's keys hold one of the `lookup` keys (one array per key
/// column, one row per key): found by binary search in a file whose keys are in
/// order, else compared with every row.
fn rows_holding(file: &FileKeys, lookup: &[ArrayRef]) -> Result<BooleanBuffer> {
    if let Some(holding) = file.search(lookup)? {
        return Ok(holding);
    }
    let keys = file.batch().columns();
    let rows = keys.first().map_or(0, |k| k.len());
    let count = lookup.first().map_or(0, |k| k.len());
    let same_types = keys
        .iter()
        .zip(lookup)
        .all(|(k, l)| k.data_type() == l.data_type());
    if count > COMPARED_LOOKUP_KEYS || !same_types {
        let types: Vec<DataType> = keys.iter().map(|k| k.data_type().clone()).collect();
        let mut looked_up = RunKeys::new(&types)?;
        looked_up.first_seen(lookup)?;
        return Ok(!&looked_up.unseen(keys)?);
    }
    // a few keys: compared column by column, vectorized, instead of hashing every row
    let mut holding = BooleanBuffer::new_unset(rows);
    for key in 0..count {
        let mut equal = BooleanBuffer::new_set(rows);
        for (column, wanted) in keys.iter().zip(lookup) {
            let same = eq(column, &Scalar::new(wanted.slice(key, 1)))?;
            // a NULL is no key
            let same = match same.nulls() {
                Some(nulls) => same.values() & nulls.inner(),
                None => same.values().clone(),
            };
            equal = &equal & &same;
        }
        holding = &holding | &equal;
    }
    Ok(holding)
}

/// The lock of the bucket's run keys (a poisoned lock means a merge step panicked).
fn lock(runs: &Mutex<RunKeys>) -> Result<std::sync::MutexGuard<'_, RunKeys>> {
    runs.lock()
        .map_err(|_| Error::internal("a bucket merge's run keys are poisoned"))
}

/// A bucket's folded tail and where the query's output columns are in its rows.
struct FoldedTail {
    fold: Arc<ChangelogFold>,
    /// Positions in the fold's columns of the scan's output columns.
    output: Vec<usize>,
}

/// Which lake rows a batch holds, for the bucket merge.
#[derive(Clone)]
enum LakeRun {
    /// A newer sorted run's rows, with their row kinds: streamed newest run first.
    Newer,
    /// Rows that hold each key at most once, streamed after every newer run; `kinds`
    /// when a row-kind column follows the scan columns (its deletes are dropped).
    Base { kinds: bool },
    /// A base file's rows without their key columns, with row numbers in `file`.
    KeyedBase {
        file: Arc<SurvivingRows>,
        kinds: bool,
    },
}
