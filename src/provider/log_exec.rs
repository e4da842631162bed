//! `FlussLogScanExec`: reads the log side of the cut; buckets are spread over at most
//! `target_partitions` output partitions.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_optimizer::pruning::PruningPredicate;
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
use super::statistics::ColumnEstimates;

/// Scans `[start, stop)` of each bucket of a log table.
#[derive(Debug)]
pub struct FlussLogScanExec {
    source: Arc<dyn FlussSource>,
    table: FlussTable,
    /// Buckets read by each output partition, one after another.
    groups: Vec<Vec<BucketCut>>,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    predicate: Option<Arc<PruningPredicate>>,
    filters: Vec<String>,
    snapshot_id: Option<i64>,
    limit: Option<usize>,
    estimates: ColumnEstimates,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
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
        predicate: Option<Arc<PruningPredicate>>,
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
            predicate,
            filters,
            snapshot_id,
            limit,
            estimates,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The buckets and ranges this scan reads.
    pub fn buckets(&self) -> impl Iterator<Item = &BucketCut> {
        self.groups.iter().flatten()
    }
}

impl DisplayAs for FlussLogScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
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
        if self.predicate.is_some() {
            write!(f, ", batch_skipping=v1_statistics")?;
        }
        if let Some(limit) = self.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for FlussLogScanExec {
    fn name(&self) -> &str {
        "FlussLogScanExec"
    }

    super::describe::leaf_node_methods!();

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
            predicate: self.predicate.clone(),
            verify_crc: true,
            counters: Some(counters),
        };
        let source = self.source.clone();
        let table = self.table.clone();
        let stream = futures::stream::iter(cuts)
            .map(move |cut| {
                let (source, table, options) = (source.clone(), table.clone(), options.clone());
                futures::stream::once(async move {
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

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let span = |b: &BucketCut| b.range.offsets() as usize;
        let rows: usize = match partition {
            Some(p) => self.groups.get(p).map_or(0, |g| g.iter().map(span).sum()),
            None => self.buckets().map(span).sum(),
        };
        // Inexact: offsets count batches nobody has read yet (empty batches take an
        // offset, and a damaged log must fail the read, not be answered from here);
        // the columns are estimated from the lake's.
        let rows = match self.limit {
            Some(l) => rows.min(l),
            None => rows,
        };
        Ok(Arc::new(self.estimates.for_rows(
            rows,
            self.projection.as_deref(),
            false,
        )))
    }
}
