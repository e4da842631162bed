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
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::lake_exec::merged_stream;
use crate::error::{Error, Result};
use crate::lake::{LakeTable, MergeTask};
use crate::log::LogReadOptions;
use crate::source::{FlussSource, FlussTable};
use crate::union::{BucketCut, ChangelogFold};

/// Metrics every DataFusion operator reports about its own output.
const BASELINE_METRICS: [&str; 6] = [
    "output_rows",
    "elapsed_compute",
    "output_bytes",
    "output_batches",
    "start_timestamp",
    "end_timestamp",
];

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
    /// The bucket's raw-convertible lake splits (one sorted run, unique keys, no
    /// deletes) as one DataFusion parquet scan.
    pub lake_parquet: Option<BucketParquetScan>,
    /// The bucket's log tail, if it exists in Fluss.
    pub tail: Option<BucketCut>,
}

/// The raw-convertible lake splits of one bucket, planned as a parquet scan with one
/// output partition. Their rows are the bucket's live lake rows as they are, so
/// DataFusion's parquet reader (footer cache, row-group and page pruning) reads them
/// instead of the lake format's merge reader.
#[derive(Debug, Clone)]
pub struct BucketParquetScan {
    /// A `DataSourceExec` with a single file group, producing `scan_schema`.
    pub plan: Arc<dyn ExecutionPlan>,
    /// Lake splits it reads.
    pub splits: usize,
    /// Rows in its files.
    pub rows: u64,
}

impl PrimaryKeyBucketTask {
    /// Rows the bucket may produce: lake rows plus tail offsets (updates and deletes
    /// make the true count smaller). Balances partitions and feeds statistics.
    pub fn estimated_rows(&self) -> u64 {
        let merged: i64 = self.lake_splits.iter().map(|t| t.rows).sum();
        let raw = self.lake_parquet.as_ref().map_or(0, |p| p.rows);
        merged.max(0) as u64 + raw + self.tail.as_ref().map_or(0, |c| c.range.offsets())
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
    /// Table columns read: the projection plus the key columns.
    pub scan_columns: Vec<usize>,
    /// The table schema projected to `scan_columns`.
    pub scan_schema: SchemaRef,
    /// Positions of the key columns in `scan_schema`.
    pub key_positions: Vec<usize>,
    /// Positions in `scan_schema` of the columns the scan outputs.
    pub output_positions: Vec<usize>,
}

/// The primary-key union scan.
#[derive(Debug)]
pub struct FlussPrimaryKeyScanExec {
    inputs: Arc<PrimaryKeyMergeInputs>,
    /// Buckets read by each output partition, one after another.
    groups: Vec<Vec<PrimaryKeyBucketTask>>,
    schema: SchemaRef,
    limit: Option<usize>,
    filters: Vec<String>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl FlussPrimaryKeyScanExec {
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
        })
    }
}

impl DisplayAs for FlussPrimaryKeyScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let tasks = self.groups.iter().flatten();
        let cuts: Vec<BucketCut> = tasks.clone().filter_map(|t| t.tail.clone()).collect();
        let splits: usize = tasks
            .clone()
            .map(PrimaryKeyBucketTask::lake_split_count)
            .sum();
        let raw: usize = tasks
            .filter_map(|t| t.lake_parquet.as_ref())
            .map(|p| p.splits)
            .sum();
        write!(
            f,
            "FlussPrimaryKeyScanExec: table={}, lake_snapshot={}, lake_splits={} ({raw} raw parquet), log_ranges=[{}], merge=changelog_fold_by_key, projection=[{}]",
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
        if let Some(limit) = self.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for FlussPrimaryKeyScanExec {
    fn name(&self) -> &str {
        "FlussPrimaryKeyScanExec"
    }

    super::describe::leaf_node_methods!();

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
            dropped: MetricBuilder::new(&self.metrics).counter("pk_merge_rows_dropped", partition),
            tail_live: MetricBuilder::new(&self.metrics).counter("tail_live_rows", partition),
            fold_time: MetricBuilder::new(&self.metrics).subset_time("tail_fold_time", partition),
            anti_join_time: MetricBuilder::new(&self.metrics)
                .subset_time("lake_anti_join_time", partition),
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
        for scan in self
            .groups
            .iter()
            .flatten()
            .filter_map(|t| t.lake_parquet.as_ref())
        {
            // Its baseline metrics (output rows, compute time) describe the lake read,
            // not this node's output: leave them out.
            let metrics = scan.plan.metrics();
            for metric in metrics.iter().flat_map(MetricsSet::iter) {
                if !BASELINE_METRICS.contains(&metric.value().name()) {
                    set.push(metric.clone());
                }
            }
        }
        Some(set)
    }

    /// Inexact row count ([`PrimaryKeyBucketTask::estimated_rows`]): enough for
    /// DataFusion to pick the PK table as a join's build side when it is the smaller
    /// input.
    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let rows = |t: &PrimaryKeyBucketTask| t.estimated_rows() as usize;
        let total: usize = match partition {
            Some(p) => self.groups.get(p).map_or(0, |g| g.iter().map(rows).sum()),
            None => self.groups.iter().flatten().map(rows).sum(),
        };
        let mut stats = Statistics::new_unknown(&self.schema);
        stats.num_rows = Precision::Inexact(match self.limit {
            Some(limit) => total.min(limit),
            None => total,
        });
        Ok(Arc::new(stats))
    }
}

/// What merging one bucket needs, shared by the buckets of an output partition.
struct BucketMerge {
    inputs: Arc<PrimaryKeyMergeInputs>,
    counters: crate::log::LogReadCounters,
    lake_rows: Count,
    dropped: Count,
    tail_live: Count,
    /// Reading, decoding and folding the tail.
    fold_time: Time,
    /// Probing lake rows against the fold and filtering them.
    anti_join_time: Time,
    /// Rows per batch of the tail's live rows (the session's `batch_size`).
    batch_size: usize,
    /// The query's task context, to execute the buckets' parquet scans.
    context: Arc<TaskContext>,
}

impl BucketMerge {
    /// Reads and folds the bucket's tail.
    async fn fold_tail(&self, task: &PrimaryKeyBucketTask) -> Result<ChangelogFold> {
        let inputs = &self.inputs;
        let _timer = self.fold_time.timer();
        let mut fold =
            ChangelogFold::new(inputs.scan_schema.clone(), inputs.key_positions.clone())?;
        let consumer = MemoryConsumer::new(format!(
            "FlussPrimaryKeyScanExec tail fold (table {}, bucket {})",
            inputs.table.path, task.bucket
        ));
        fold.track_memory(consumer.register(self.context.memory_pool()))?;
        if let Some(cut) = &task.tail {
            fold.reserve(cut.range.offsets().min(1 << 24) as usize)?;
            let options = LogReadOptions {
                projection: Some(inputs.scan_columns.clone()),
                predicate: None,
                verify_crc: true,
                counters: Some(self.counters.clone()),
            };
            let mut tail = inputs
                .source
                .read_log(&inputs.table, &cut.location, cut.range, options)
                .await?;
            while let Some(batch) = tail.try_next().await? {
                fold.apply(&batch.batch, &batch.change_types)?;
            }
        }
        Ok(fold)
    }

    /// Streams the bucket's lake rows whose key the tail did not touch, then the
    /// tail's live rows.
    fn merge(
        self: Arc<Self>,
        task: PrimaryKeyBucketTask,
        fold: ChangelogFold,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let inputs = &self.inputs;
        let fold = Arc::new(fold);
        // the bucket's lake rows: raw splits through DataFusion's parquet reader, the
        // rest through the lake format's merge reader (their key ranges do not overlap)
        let raw_stream = match &task.lake_parquet {
            Some(scan) => scan
                .plan
                .execute(0, self.context.clone())?
                .map(|batch| batch.map_err(Error::from))
                .boxed(),
            None => futures::stream::empty().boxed(),
        };
        let merged = match (&inputs.lake, task.lake_splits.is_empty()) {
            (Some((lake, snapshot_id)), false) => merged_stream(
                lake.clone(),
                *snapshot_id,
                task.lake_splits,
                inputs.scan_schema.clone(),
                inputs.table.path.to_string(),
            ),
            _ => futures::stream::empty().boxed(),
        };
        // lake rows not overridden by the tail
        let lake_stream = {
            let fold = fold.clone();
            let merge = self.clone();
            raw_stream.chain(merged).map(move |batch| {
                let batch = batch?;
                merge.lake_rows.add(batch.num_rows());
                let _timer = merge.anti_join_time.timer();
                let keep = fold.surviving(&batch, &merge.inputs.key_positions)?;
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
        let live = fold.live_rows(&inputs.output_positions, self.batch_size)?;
        self.tail_live
            .add(live.iter().map(RecordBatch::num_rows).sum::<usize>());
        let tail_stream = futures::stream::iter(live.into_iter().map(Ok));
        Ok(lake_stream.chain(tail_stream).boxed())
    }
}
