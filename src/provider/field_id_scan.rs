//! `FlussFieldIdScanExec`: marks a lake parquet scan whose columns match the table's
//! by Iceberg field id, so the match survives the scan being shipped.
//!
//! The parquet scan (DataFusion's `DataSourceExec`) matches columns through a
//! [`super::field_ids::FieldIdAdapterFactory`] in its file scan config. DataFusion's
//! plan serialization (datafusion-proto 55) drops that adapter, so a shipped scan
//! would read a renamed column as NULL. This node sits above the scan, passes
//! everything through, and carries the field ids; decoding it puts the adapter back
//! on every parquet scan below it ([`with_field_ids`]).

use std::fmt;
use std::sync::Arc;

use datafusion::common::Statistics;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};

use super::field_ids::FieldIdAdapterFactory;

/// Its input (a lake parquet scan), whose columns match by field id.
#[derive(Debug)]
pub struct FlussFieldIdScanExec {
    input: Arc<dyn ExecutionPlan>,
    /// The lake's current column names with their field ids.
    pub(super) columns: Vec<(String, i32)>,
}

impl FlussFieldIdScanExec {
    /// `input`, a parquet scan matching columns by `columns`' field ids.
    pub fn new(input: Arc<dyn ExecutionPlan>, columns: Vec<(String, i32)>) -> Self {
        Self { input, columns }
    }
}

/// `plan` with every parquet scan in it matching columns by `columns`' field ids
/// (a decoded scan has lost its adapter).
pub(super) fn with_field_ids(
    plan: Arc<dyn ExecutionPlan>,
    columns: &[(String, i32)],
) -> DfResult<Arc<dyn ExecutionPlan>> {
    plan.transform_down(|node| {
        let Some(config) = node
            .downcast_ref::<DataSourceExec>()
            .and_then(|e| e.data_source().downcast_ref::<FileScanConfig>())
        else {
            return Ok(Transformed::no(node));
        };
        let adapter = Arc::new(FieldIdAdapterFactory::new(columns))
            as Arc<dyn datafusion::physical_expr_adapter::PhysicalExprAdapterFactory>;
        let config = FileScanConfigBuilder::from(config.clone())
            .with_expr_adapter(Some(adapter))
            .build();
        Ok(Transformed::yes(DataSourceExec::from_data_source(config)))
    })
    .data()
}

impl DisplayAs for FlussFieldIdScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        super::describe::as_format(t, f, |f| {
            write!(f, "FlussFieldIdScanExec: columns_by=field_id")
        })
    }
}

impl ExecutionPlan for FlussFieldIdScanExec {
    fn name(&self) -> &str {
        "FlussFieldIdScanExec"
    }

    super::describe::pass_through_node_methods!();

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self::new(input, self.columns.clone()))),
            _ => Err(datafusion::error::DataFusionError::Internal(
                "FlussFieldIdScanExec has one child".to_string(),
            )),
        }
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }

    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(partition)]
    }

    /// Its input's.
    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        Ok(input_stats
            .first()
            .cloned()
            .unwrap_or_else(|| Arc::new(Statistics::new_unknown(&self.schema()))))
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        StatisticsContext::new().compute(self, &StatisticsArgs::new().with_partition(partition))
    }
}
