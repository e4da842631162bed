//! `FlussKvScanExec`: a primary-key table's current rows, each bucket's asked of its
//! tablet server (ScanKv: Fluss's `client.scanner.kv.batch-strategy = server-scan`)
//! instead of folding the changelog onto the lake snapshot.
//!
//! Used when a statement asks for it, and where the changelog no longer reaches back
//! to what the lake holds (log retention removed it), so a fold could not tell the
//! current rows. Each bucket is scanned at its own moment: the buckets are not one
//! atomic snapshot (Fluss says the same of `server-scan`), which EXPLAIN says.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};

use super::describe::describe_projection;
use super::view_types::answered_rows;
use crate::error::{Error, Result};
use crate::source::{BucketLocation, FlussSource, FlussTable};

/// Why a scan reads the tablet servers' current rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum KvScanReason {
    /// The statement asked for `server-scan`.
    Asked,
    /// The changelog of some bucket starts after what the lake holds of it.
    ChangelogExpired,
}

/// Reads buckets of a primary-key table by ScanKv.
#[derive(Debug)]
pub struct FlussKvScanExec {
    pub(super) source: Arc<dyn FlussSource>,
    pub(super) table: FlussTable,
    /// The buckets each output partition scans.
    pub(super) groups: Vec<Vec<BucketLocation>>,
    /// The table's columns as the provider shows them.
    pub(super) table_schema: SchemaRef,
    /// The scan's filters over `table_schema`.
    pub(super) predicate: Option<Arc<dyn PhysicalExpr>>,
    pub(super) projection: Vec<usize>,
    pub(super) filters: Vec<String>,
    pub(super) reason: KvScanReason,
    pub(super) schema: SchemaRef,
    pub(super) properties: Arc<PlanProperties>,
    pub(super) metrics: ExecutionPlanMetricsSet,
}

impl FlussKvScanExec {
    /// A scan of `buckets` of `table`, spread over at most `target_partitions`
    /// partitions, producing `table_schema` projected to `projection` after
    /// `predicate` holds; `filters` are shown by EXPLAIN.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        source: Arc<dyn FlussSource>,
        table: FlussTable,
        buckets: Vec<BucketLocation>,
        target_partitions: usize,
        table_schema: SchemaRef,
        predicate: Option<Arc<dyn PhysicalExpr>>,
        projection: Vec<usize>,
        filters: Vec<String>,
        reason: KvScanReason,
    ) -> Result<Self> {
        let schema = Arc::new(table_schema.project(&projection)?);
        let groups = super::describe::group_by_size(buckets, target_partitions, |_| 1);
        let properties = super::describe::leaf_properties(&schema, groups.len());
        Ok(Self {
            source,
            table,
            groups,
            table_schema,
            predicate,
            projection,
            filters,
            reason,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for FlussKvScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        super::describe::as_format(t, f, |f| {
            let buckets: usize = self.groups.iter().map(Vec::len).sum();
            let why = match self.reason {
                KvScanReason::Asked => "asked",
                KvScanReason::ChangelogExpired => "changelog expired before the lake's offsets",
            };
            write!(
                f,
                "FlussKvScanExec: table={}, buckets={buckets}, reads=current state (server-scan, \
                 {why}: each bucket scanned at its own moment, not one atomic snapshot across \
                 buckets), projection=[{}]",
                self.table.path,
                describe_projection(&self.schema),
            )?;
            if !self.filters.is_empty() {
                write!(f, ", filters=[{}]", self.filters.join(", "))?;
            }
            Ok(())
        })
    }
}

impl ExecutionPlan for FlussKvScanExec {
    fn name(&self) -> &str {
        "FlussKvScanExec"
    }

    super::describe::leaf_node_methods!();
    super::describe::no_expressions!();

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let schema = self.schema.clone();
        let Some(buckets) = self.groups.get(partition).cloned() else {
            return Ok(super::describe::empty_partition(schema));
        };
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let scanned = MetricBuilder::new(&self.metrics).counter("buckets_scanned", partition);
        let (source, table) = (self.source.clone(), self.table.clone());
        let (table_schema, predicate) = (self.table_schema.clone(), self.predicate.clone());
        let projection = self.projection.clone();
        let stream = futures::stream::iter(buckets)
            .then(move |bucket| {
                let (source, table) = (source.clone(), table.clone());
                let scanned = scanned.clone();
                async move {
                    scanned.add(1);
                    source.scan_kv(&table, &bucket).await
                }
            })
            .try_flatten()
            .map(move |batch| {
                let batch = batch?;
                let _timer = baseline.elapsed_compute().timer();
                let rows = answered_rows(batch, &table_schema, predicate.as_ref(), &projection)?;
                baseline.record_output(rows.num_rows());
                Ok::<_, Error>(rows)
            })
            .map(|r| r.map_err(DataFusionError::from));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        Ok(Arc::new(Statistics::new_unknown(&self.schema)))
    }
}
