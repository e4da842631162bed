//! `FlussKeyLookupExec`: the current rows of the primary keys a filter fixes, read by
//! key from the source (a cluster's tablet servers, the Lookup RPC) instead of a scan
//! of lake and tail.
//!
//! A lookup reads the state when it runs, not the lake snapshot and offset cut a scan
//! reads: EXPLAIN says so (`reads=current state`).

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::stats::Precision;
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

use super::describe::describe_projection;
use super::view_types::to_view_types;
use crate::error::{Error, Result};
use crate::source::{FlussSource, FlussTable};

/// Reads the rows of a set of primary keys from the source by key.
#[derive(Debug)]
pub struct FlussKeyLookupExec {
    source: Arc<dyn FlussSource>,
    table: FlussTable,
    /// One row per key: the primary-key columns in the table's Fluss Arrow types.
    keys: RecordBatch,
    /// The table's whole row as the provider shows it (views for strings).
    table_schema: SchemaRef,
    /// The scan's filters over `table_schema`, applied to the looked-up rows.
    predicate: Option<Arc<dyn PhysicalExpr>>,
    projection: Vec<usize>,
    schema: SchemaRef,
    filters: Vec<String>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl FlussKeyLookupExec {
    /// A lookup of `keys` in `table`, producing `table_schema` projected to
    /// `projection` after `predicate` (the scan's filters) holds.
    pub fn new(
        source: Arc<dyn FlussSource>,
        table: FlussTable,
        keys: RecordBatch,
        table_schema: SchemaRef,
        predicate: Option<Arc<dyn PhysicalExpr>>,
        projection: Vec<usize>,
        filters: Vec<String>,
    ) -> Result<Self> {
        let schema = Arc::new(table_schema.project(&projection)?);
        let properties = super::describe::leaf_properties(&schema, 1);
        Ok(Self {
            source,
            table,
            keys,
            table_schema,
            predicate,
            projection,
            schema,
            filters,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The looked-up rows of `batch` (the source's answer, in Fluss types) that
    /// the filters keep, projected.
    fn finish(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let mut rows = to_view_types(batch, &self.table_schema)?;
        if let Some(predicate) = &self.predicate {
            let keep = predicate
                .evaluate(&rows)
                .and_then(|v| v.into_array(rows.num_rows()))
                .map_err(|e| Error::internal("cannot filter looked-up rows").with_source(e))?;
            let keep = keep
                .as_boolean_opt()
                .ok_or_else(|| Error::internal("a filter of looked-up rows is not a boolean"))?;
            rows = filter_record_batch(&rows, keep)?;
        }
        Ok(rows.project(&self.projection)?)
    }
}

impl DisplayAs for FlussKeyLookupExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "FlussKeyLookupExec: table={}, keys={}, reads=current state (key lookups, not \
             the snapshot cut), projection=[{}]",
            self.table.path,
            self.keys.num_rows(),
            describe_projection(&self.schema),
        )?;
        if !self.filters.is_empty() {
            write!(f, ", filters=[{}]", self.filters.join(", "))?;
        }
        Ok(())
    }
}

impl ExecutionPlan for FlussKeyLookupExec {
    fn name(&self) -> &str {
        "FlussKeyLookupExec"
    }

    super::describe::leaf_node_methods!();

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let schema = self.schema.clone();
        if partition != 0 {
            return Ok(super::describe::empty_partition(schema));
        }
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let keys_looked_up = MetricBuilder::new(&self.metrics).counter("keys_looked_up", 0);
        let this = Self {
            source: self.source.clone(),
            table: self.table.clone(),
            keys: self.keys.clone(),
            table_schema: self.table_schema.clone(),
            predicate: self.predicate.clone(),
            projection: self.projection.clone(),
            schema: self.schema.clone(),
            filters: Vec::new(),
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        };
        let stream = futures::stream::once(async move {
            keys_looked_up.add(this.keys.num_rows());
            let found = this.source.lookup_keys(&this.table, &this.keys).await?;
            let _timer = baseline.elapsed_compute().timer();
            let rows = this.finish(found)?;
            baseline.record_output(rows.num_rows());
            Ok::<_, Error>(rows)
        });
        let stream = futures::StreamExt::map(stream, |r| r.map_err(DataFusionError::from));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// At most one row per key.
    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let mut stats = Statistics::new_unknown(&self.schema);
        stats.num_rows = match partition {
            Some(p) if p > 0 => Precision::Exact(0),
            _ => Precision::Inexact(self.keys.num_rows()),
        };
        Ok(Arc::new(stats))
    }
}
