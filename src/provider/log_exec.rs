//! `FlussLogScanExec`: reads the log side of the cut; buckets are spread over at most
//! `target_partitions` output partitions.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::utils::{conjunction, reassign_expr_columns};
use datafusion::physical_optimizer::pruning::PruningPredicate;
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};

use crate::log::LogReadOptions;
use crate::source::{FlussSource, FlussTable};
use crate::union::BucketCut;

use super::describe::{describe_buckets, describe_projection};
use super::partition_pruner::PartitionsRead;
use super::statistics::ColumnEstimates;

/// What a log scan skips batches by, from their V1 statistics: the query's own
/// filters, and the dynamic filters hash joins and TopK push at run time (taken as
/// they stand when each bucket's read starts, so a join's build side is complete).
/// Skipping never drops a row a filter keeps; the parents still filter rows.
#[derive(Debug, Clone)]
pub struct BatchSkipping {
    /// The table's schema, whose column names the batch statistics answer by.
    pub(super) table_schema: SchemaRef,
    /// The query's filters (a predicate statistics can prune by).
    pub(super) fixed: Option<Arc<dyn PhysicalExpr>>,
    /// Filters pushed at run time, over `table_schema`.
    pub(super) dynamic: Vec<Arc<dyn PhysicalExpr>>,
}

impl BatchSkipping {
    /// Skipping by `filter` (over `table_schema`), kept only when a pruning predicate
    /// can be made of it.
    pub fn new(table_schema: SchemaRef, filter: Option<Arc<dyn PhysicalExpr>>) -> Self {
        let fixed = filter.filter(|f| pruning(f.clone(), &table_schema).is_some());
        Self {
            table_schema,
            fixed,
            dynamic: Vec::new(),
        }
    }

    /// The predicate batches are skipped by now (dynamic filters at their current
    /// state); `None` when nothing can be skipped.
    fn predicate(&self) -> Option<Arc<PruningPredicate>> {
        let all: Vec<_> = self.fixed.iter().chain(&self.dynamic).cloned().collect();
        if all.is_empty() {
            return None;
        }
        pruning(conjunction(all), &self.table_schema)
    }
}

/// A pruning predicate of `filter`, unless none can be made of it.
fn pruning(filter: Arc<dyn PhysicalExpr>, schema: &SchemaRef) -> Option<Arc<PruningPredicate>> {
    #[allow(deprecated)]
    PruningPredicate::try_new(filter, schema.clone())
        .ok()
        .map(Arc::new)
}

/// Scans `[start, stop)` of each bucket of a log table.
#[derive(Debug)]
pub struct FlussLogScanExec {
    pub(super) source: Arc<dyn FlussSource>,
    pub(super) table: FlussTable,
    /// Buckets read by each output partition, one after another.
    pub(super) groups: Vec<Vec<BucketCut>>,
    pub(super) projection: Option<Vec<usize>>,
    pub(super) schema: SchemaRef,
    pub(super) skipping: BatchSkipping,
    pub(super) filters: Vec<String>,
    pub(super) snapshot_id: Option<i64>,
    pub(super) limit: Option<usize>,
    pub(super) estimates: ColumnEstimates,
    pub(super) properties: Arc<PlanProperties>,
    pub(super) metrics: ExecutionPlanMetricsSet,
    /// How many partitions the scan reads and pruned (partitioned tables).
    pub(super) partitions: Option<PartitionsRead>,
    /// Files of the lake snapshot the plan never opens (a metric).
    pub(super) lake_files_pruned: usize,
    /// Whether every offset of the ranges is known to hold one row (counted from
    /// validated batch headers), making the row count exact.
    pub(super) exact_rows: bool,
}

impl FlussLogScanExec {
    /// A scan of `buckets` producing `schema` (the table schema projected), in at most
    /// `target_partitions` output partitions.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        source: Arc<dyn FlussSource>,
        table: FlussTable,
        buckets: Vec<BucketCut>,
        target_partitions: usize,
        projection: Option<Vec<usize>>,
        schema: SchemaRef,
        skipping: BatchSkipping,
        filters: Vec<String>,
        snapshot_id: Option<i64>,
        limit: Option<usize>,
        estimates: ColumnEstimates,
    ) -> Self {
        let groups =
            super::describe::group_by_size(buckets, target_partitions, |b| b.range.offsets());
        let properties = super::describe::leaf_properties(&schema, groups.len());
        Self {
            source,
            table,
            groups,
            projection,
            schema,
            skipping,
            filters,
            snapshot_id,
            limit,
            estimates,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
            partitions: None,
            lake_files_pruned: 0,
            exact_rows: false,
        }
    }

    /// The same scan, counting in its metrics (`lake_files_pruned`) the files of the
    /// lake snapshot its plan never opens.
    pub fn with_lake_files_pruned(mut self, files: usize) -> Self {
        super::describe::lake_files_pruned(&self.metrics, files);
        self.lake_files_pruned = files;
        self
    }

    /// The same scan, its row count exact when `exact` (every offset of its ranges
    /// counted as one row from validated batch headers: `count(*)` is then answered
    /// from its statistics).
    pub fn with_exact_rows(mut self, exact: bool) -> Self {
        self.exact_rows = exact;
        self
    }

    /// The same scan, showing in EXPLAIN how many partitions it reads and pruned.
    pub fn with_partitions(mut self, partitions: Option<PartitionsRead>) -> Self {
        self.partitions = partitions;
        self
    }

    /// The buckets and ranges this scan reads.
    pub fn buckets(&self) -> impl Iterator<Item = &BucketCut> {
        self.groups.iter().flatten()
    }
}

impl DisplayAs for FlussLogScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        super::describe::as_format(t, f, |f| {
            write!(
                f,
                "FlussLogScanExec: table={}, lake_snapshot={}, log_ranges=[{}], projection=[{}]",
                self.table.path,
                self.snapshot_id
                    .map_or("none".to_string(), |s| s.to_string()),
                describe_buckets(&self.buckets().cloned().collect::<Vec<_>>()),
                describe_projection(&self.schema),
            )?;
            if !self.filters.is_empty() {
                write!(f, ", pushed_filters=[{}]", self.filters.join(", "))?;
            }
            if let Some(partitions) = &self.partitions {
                write!(f, ", {partitions}")?;
            }
            if self.skipping.fixed.is_some() {
                write!(f, ", batch_skipping=v1_statistics")?;
            }
            if !self.skipping.dynamic.is_empty() {
                let filters: Vec<String> = self
                    .skipping
                    .dynamic
                    .iter()
                    .map(|d| d.to_string())
                    .collect();
                write!(f, ", dynamic_filters=[{}]", filters.join(", "))?;
            }
            if let Some(limit) = self.limit {
                write!(f, ", limit={limit}")?;
            }
            Ok(())
        })
    }
}

impl ExecutionPlan for FlussLogScanExec {
    fn name(&self) -> &str {
        "FlussLogScanExec"
    }

    super::describe::leaf_node_methods!();

    /// The dynamic filters pushed here, so the join filling one finds it.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        datafusion::physical_plan::apply_expression_roots(self.skipping.dynamic.iter(), f)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let schema = self.schema.clone();
        let Some(cuts) = self.groups.get(partition).cloned() else {
            return Ok(super::describe::empty_partition(schema));
        };
        let counters = super::describe::log_counters(&self.metrics, partition);
        let options = LogReadOptions {
            projection: self.projection.clone(),
            predicate: None,
            commit_time: None,
            verify_crc: true,
            counters: Some(counters),
        };
        let source = self.source.clone();
        let table = self.table.clone();
        let skipping = self.skipping.clone();
        let stream = futures::stream::iter(cuts)
            .map(move |cut| {
                let (source, table) = (source.clone(), table.clone());
                let mut options = options.clone();
                let skipping = skipping.clone();
                futures::stream::once(async move {
                    // when the bucket's read starts: a join's build side is read
                    options.predicate = skipping.predicate();
                    source
                        .read_log(&table, &cut.location, cut.range, options)
                        .await
                })
                .try_flatten()
            })
            .flatten()
            .map({
                let schema = schema.clone();
                move |r| {
                    r.and_then(|b| super::view_types::to_view_types(b.batch, &schema))
                        .map_err(DataFusionError::from)
                }
            });
        let stream = super::describe::limit_stream(stream.boxed(), self.limit);
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// Filters pushed at run time (hash-join and TopK dynamic filters, `Post` phase)
    /// skip log batches by their statistics as the query's own filters do. Rows are
    /// not filtered here, so the parents keep every filter.
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters = &child_pushdown_result.parent_filters;
        let kept = FilterPushdownPropagation::with_parent_pushdown_result(vec![
            PushedDown::No;
            filters.len()
        ]);
        if phase != FilterPushdownPhase::Post {
            return Ok(kept);
        }
        // over the table's columns, by name, as the statistics answer
        let table_schema = &self.skipping.table_schema;
        let dynamic: Vec<_> = filters
            .iter()
            .filter_map(|f| reassign_expr_columns(f.filter.clone(), table_schema).ok())
            .collect();
        if dynamic.is_empty() {
            return Ok(kept);
        }
        let mut skipping = self.skipping.clone();
        skipping.dynamic.extend(dynamic);
        let updated = Self {
            source: self.source.clone(),
            table: self.table.clone(),
            groups: self.groups.clone(),
            projection: self.projection.clone(),
            schema: self.schema.clone(),
            skipping,
            filters: self.filters.clone(),
            snapshot_id: self.snapshot_id,
            limit: self.limit,
            estimates: self.estimates.clone(),
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
            partitions: self.partitions,
            lake_files_pruned: 0,
            exact_rows: self.exact_rows,
        }
        .with_lake_files_pruned(self.lake_files_pruned);
        Ok(kept.with_updated_node(Arc::new(updated)))
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let span = |b: &BucketCut| b.range.offsets() as usize;
        let rows: usize = match partition {
            Some(p) => self.groups.get(p).map_or(0, |g| g.iter().map(span).sum()),
            None => self.buckets().map(span).sum(),
        };
        // Inexact unless validated: offsets count batches nobody has read yet (empty
        // batches take an offset, and a damaged log must fail the read, not be
        // answered from here); the columns are estimated from the lake's.
        let rows = match self.limit {
            Some(l) => rows.min(l),
            None => rows,
        };
        let mut stats = self
            .estimates
            .for_rows(rows, self.projection.as_deref(), false);
        if self.exact_rows {
            stats.num_rows = Precision::Exact(rows);
        }
        Ok(Arc::new(stats))
    }
}
