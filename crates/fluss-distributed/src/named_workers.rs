//! Errors of a distributed query name its workers: a worker that dies mid-query
//! surfaces in DataFusion as a broken HTTP/2 stream ("h2 protocol error") that says
//! nothing of where it ran.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_distributed::DistributedExec;
use futures::StreamExt;
use url::Url;

/// Plans as `inner` does, and puts a distributed plan under [`WorkersNamedExec`].
#[derive(Debug)]
pub(crate) struct NamingPlanner {
    pub(crate) inner: Arc<dyn QueryPlanner + Send + Sync>,
    pub(crate) workers: Vec<Url>,
}

#[async_trait]
impl QueryPlanner for NamingPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session_state: &dyn datafusion::catalog::Session,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = self
            .inner
            .create_physical_plan(logical_plan, session_state)
            .await?;
        Ok(match plan.is::<DistributedExec>() {
            true => Arc::new(WorkersNamedExec {
                input: plan,
                workers: self.workers.clone(),
            }),
            false => plan,
        })
    }
}

/// A distributed plan whose errors say which workers it ran on.
#[derive(Debug)]
pub struct WorkersNamedExec {
    input: Arc<dyn ExecutionPlan>,
    workers: Vec<Url>,
}

impl WorkersNamedExec {
    /// The distributed plan (datafusion-distributed's `DistributedExec`).
    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }
}

/// The distributed plan of `plan`: its `DistributedExec`, unwrapped.
pub fn distributed_plan(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    match plan.downcast_ref::<WorkersNamedExec>() {
        Some(named) => named.input.clone(),
        None => plan.clone(),
    }
}

impl DisplayAs for WorkersNamedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let workers: Vec<&str> = self.workers.iter().map(Url::as_str).collect();
        write!(f, "WorkersNamedExec: workers=[{}]", workers.join(", "))
    }
}

impl ExecutionPlan for WorkersNamedExec {
    fn name(&self) -> &str {
        "WorkersNamedExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self {
                input,
                workers: self.workers.clone(),
            })),
            _ => Err(DataFusionError::Internal(
                "WorkersNamedExec has one child".to_string(),
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
        let schema = self.input.schema();
        let workers: Vec<String> = self.workers.iter().map(Url::to_string).collect();
        let context_of = move |e: DataFusionError| {
            DataFusionError::Context(
                format!(
                    "the query ran distributed over the workers {}",
                    workers.join(", ")
                ),
                Box::new(e),
            )
        };
        let stream = match self.input.execute(partition, context) {
            Ok(stream) => stream,
            Err(e) => return Err(context_of(e)),
        };
        let stream = stream.map(move |batch| batch.map_err(&context_of));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}
