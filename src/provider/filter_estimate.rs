//! The lake branch of a log table's union, reporting its statistics under the scan's
//! filters.
//!
//! DataFusion chooses a hash join's build side while the query's filter still sits
//! above our `UnionExec` (it is pushed into the branches later), and estimates it
//! from the union's min/max. A union of lake rows, which the footers bound, with tail
//! rows nobody has seen has no bounds, so the filter seemed to keep every lake row and
//! TPC-H Q14 built its join on the other side. This node passes its input through
//! untouched and reports the statistics a `FilterExec` with the filters would report
//! over it (the lake's rows as DataFusion estimates them filtered); the tail estimates
//! its rows the same way ([`super::statistics::ColumnEstimates::with_filter`]). Rows
//! are filtered where they always were: by DataFusion's filter, which the filter
//! pushdown passes through this node to the parquet scan, as it does dynamic filters.

use std::fmt;
use std::sync::Arc;

use datafusion::common::Statistics;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};

/// Its input, with the statistics of `predicate` applied to them.
#[derive(Debug)]
pub struct FilterEstimateExec {
    pub(super) input: Arc<dyn ExecutionPlan>,
    /// The filters DataFusion applies above the scan, over the input's columns.
    pub(super) predicate: Arc<dyn PhysicalExpr>,
}

impl FilterEstimateExec {
    /// `input` estimated under `predicate` (over `input`'s schema).
    pub fn new(input: Arc<dyn ExecutionPlan>, predicate: Arc<dyn PhysicalExpr>) -> Self {
        Self { input, predicate }
    }
}

impl DisplayAs for FilterEstimateExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        super::describe::as_format(t, f, |f| {
            write!(
                f,
                "FlussFilterEstimateExec: estimated_under={}",
                self.predicate
            )
        })
    }
}

impl ExecutionPlan for FilterEstimateExec {
    fn name(&self) -> &str {
        "FlussFilterEstimateExec"
    }

    super::describe::pass_through_node_methods!();

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self::new(input, self.predicate.clone()))),
            _ => Err(datafusion::error::DataFusionError::Internal(
                "FlussFilterEstimateExec has one child".to_string(),
            )),
        }
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        // the predicate is an estimate's, never evaluated here
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

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        FilterExec::try_new(self.predicate.clone(), self.input.clone())?
            .statistics_from_inputs(input_stats, args)
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        StatisticsContext::new().compute(self, &StatisticsArgs::new().with_partition(partition))
    }
}
