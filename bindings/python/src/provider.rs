//! The library's providers as datafusion-ffi hands them to datafusion-python, with
//! the two things the FFI does not do for them:
//! - `table()` and `scan()` (and the catalog's listings) run inside this library's
//!   runtime ([`InRuntime`]), not on datafusion-python's, where a cluster source's
//!   sockets and timers would have no reactor;
//! - scans plan against a session with this catalog's own `RuntimeEnv`, and their
//!   plans execute with it ([`FlussRuntimeEnvExec`]): the FFI's session and task
//!   context carry a default one, so the object stores a scan registers (an S3 lake)
//!   would be gone by the time its files are opened.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProvider, SchemaProvider, Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Constraints, Result, Statistics};
use datafusion::datasource::TableType;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::{
    SendableRecordBatchStream, SessionState, SessionStateBuilder, TaskContext,
};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, LogicalPlan, TableProviderFilterPushDown};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

use fluss_datafusion::FlussTableProvider;

use crate::runtime::{InRuntime, handle};

/// This library's `RuntimeEnv` (its object stores), and a session state on it with
/// DataFusion's default functions, built once: a scan plans on a copy of it with the
/// foreign session's configuration (building one per scan cost milliseconds a table).
#[derive(Debug, Clone)]
pub struct PlanningEnv {
    env: Arc<RuntimeEnv>,
    base: Arc<SessionState>,
}

impl PlanningEnv {
    /// Plans and executes with `env`.
    pub fn new(env: Arc<RuntimeEnv>) -> Self {
        let base = SessionStateBuilder::new()
            .with_runtime_env(env.clone())
            .with_default_features()
            .build();
        Self {
            env,
            base: Arc::new(base),
        }
    }

    /// The foreign session's configuration with this env.
    fn session(&self, session: &dyn Session) -> SessionState {
        SessionStateBuilder::new_from_existing(self.base.as_ref().clone())
            .with_config(session.config().clone())
            .build()
    }

    /// `plan`, executing with this env.
    fn executing(&self, plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        Arc::new(FlussRuntimeEnvExec::new(plan, self.env.clone()))
    }
}

/// A catalog whose schemas and tables run in this library's runtime and env.
#[derive(Debug)]
pub struct RuntimeCatalog {
    inner: Arc<dyn CatalogProvider>,
    env: PlanningEnv,
}

impl RuntimeCatalog {
    /// `inner`, planning and executing with `env`.
    pub fn new(inner: Arc<dyn CatalogProvider>, env: PlanningEnv) -> Self {
        Self { inner, env }
    }
}

impl CatalogProvider for RuntimeCatalog {
    fn schema_names(&self) -> Vec<String> {
        let _entered = handle().enter();
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let _entered = handle().enter();
        let schema = self.inner.schema(name)?;
        Some(Arc::new(RuntimeSchema {
            inner: schema,
            env: self.env.clone(),
        }))
    }
}

/// A schema whose tables run in this library's runtime and env.
#[derive(Debug)]
struct RuntimeSchema {
    inner: Arc<dyn SchemaProvider>,
    env: PlanningEnv,
}

#[async_trait]
impl SchemaProvider for RuntimeSchema {
    fn table_names(&self) -> Vec<String> {
        let _entered = handle().enter();
        self.inner.table_names()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let table = InRuntime::new(self.inner.table(name)).await?;
        Ok(table.map(|t| Arc::new(RuntimeTable::new(t, self.env.clone())) as _))
    }

    fn table_exist(&self, name: &str) -> bool {
        let _entered = handle().enter();
        self.inner.table_exist(name)
    }
}

/// A table whose scans run in this library's runtime and env.
#[derive(Debug)]
pub struct RuntimeTable {
    inner: Arc<dyn TableProvider>,
    env: PlanningEnv,
}

impl RuntimeTable {
    /// `inner`, planning and executing with `env`.
    pub fn new(inner: Arc<dyn TableProvider>, env: PlanningEnv) -> Self {
        Self { inner, env }
    }
}

#[async_trait]
impl TableProvider for RuntimeTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn get_table_definition(&self) -> Option<&str> {
        self.inner.get_table_definition()
    }

    fn get_logical_plan(&'_ self) -> Option<Cow<'_, LogicalPlan>> {
        self.inner.get_logical_plan()
    }

    async fn scan(
        &self,
        session: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let state = self.env.session(session);
        let plan = InRuntime::new(self.inner.scan(&state, projection, filters, limit)).await?;
        Ok(self.env.executing(plan))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }

    async fn insert_into(
        &self,
        session: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = match self.inner.downcast_ref::<FlussTableProvider>() {
            // datafusion-python has no FlussWriteRule: it hands over whole rows
            Some(table) => table.insert_whole_rows(input, insert_op)?,
            None => {
                let state = self.env.session(session);
                InRuntime::new(self.inner.insert_into(&state, input, insert_op)).await?
            }
        };
        Ok(self.env.executing(plan))
    }
}

/// Executes its input with a task context carrying `env` instead of the one it is
/// given (the FFI's, whose `RuntimeEnv` is a default one without our object stores).
///
/// A leaf to the host: its input is not shown as a child, so datafusion-python's
/// optimizer cannot put its own nodes inside the scan. Each one would cross the FFI
/// again, and every crossing hands the plan below a task context with a default
/// `RuntimeEnv` (an S3 lake's files then have no object store).
#[derive(Debug)]
pub struct FlussRuntimeEnvExec {
    input: Arc<dyn ExecutionPlan>,
    env: Arc<RuntimeEnv>,
}

impl FlussRuntimeEnvExec {
    fn new(input: Arc<dyn ExecutionPlan>, env: Arc<RuntimeEnv>) -> Self {
        Self { input, env }
    }
}

impl DisplayAs for FlussRuntimeEnvExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        // the hidden plan, on one line (the host shows leaves only by name)
        let inner = datafusion::physical_plan::displayable(self.input.as_ref()).one_line();
        write!(f, "FlussRuntimeEnvExec: {}", inner.to_string().trim_end())
    }
}

impl ExecutionPlan for FlussRuntimeEnvExec {
    fn name(&self) -> &str {
        "FlussRuntimeEnvExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    /// The scan's own: the host orders its joins by them (the FFI carries them).
    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        StatisticsContext::new().compute(self.input.as_ref(), args)
    }

    /// The scan's own, for the host's `EXPLAIN ANALYZE` (the FFI carries them).
    fn metrics(&self) -> Option<MetricsSet> {
        self.input.metrics()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(datafusion::error::DataFusionError::Internal(
                "FlussRuntimeEnvExec is a leaf".to_string(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let context = TaskContext::new(
            context.task_id(),
            context.session_id(),
            context.session_config().clone(),
            context.scalar_functions().clone(),
            context.higher_order_functions().clone(),
            context.aggregate_functions().clone(),
            context.window_functions().clone(),
            self.env.clone(),
        );
        self.input.execute(partition, Arc::new(context))
    }
}
