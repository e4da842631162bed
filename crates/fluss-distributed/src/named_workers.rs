//! Errors of a distributed query name its workers: a worker that dies mid-query
//! surfaces in DataFusion as a broken HTTP/2 stream ("h2 protocol error") or a
//! refused connection that says nothing of where it ran. A transport failure is
//! turned into an I/O error naming the worker that no longer answers.

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
use fluss_datafusion::{Error, ErrorKind};
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
        let workers = self.workers.clone();
        let stream = match self.input.execute(partition, context) {
            Ok(stream) => stream,
            // reported from the stream, where the workers can be asked
            Err(e) => futures::stream::once(async { Err(e) }).boxed(),
        };
        let stream = stream.then(move |batch| {
            let workers = workers.clone();
            async move {
                match batch {
                    Ok(batch) => Ok(batch),
                    Err(e) => Err(named(&workers, e).await),
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// The error a distributed query's `e` becomes: a transport failure, or any error
/// while a worker no longer accepts connections (a refused connect to a dead worker
/// arrives as plain text), is an I/O error naming the workers that are gone; any
/// other keeps the workers as its context.
async fn named(workers: &[Url], e: DataFusionError) -> DataFusionError {
    let down = unreachable_among(workers).await;
    if down.is_empty() && !transport_failure(&e) {
        return context_of(workers, e);
    }
    // the transport's own words ("h2 protocol error: ...", a connector's Debug dump)
    // say nothing of where: they go to the log (-v), not into the message
    tracing::info!(error = %e, "a distributed query failed with a worker gone");
    DataFusionError::External(Box::new(worker_failure(workers, &down)))
}

/// The workers that do not accept connections now, each with why.
async fn unreachable_among(workers: &[Url]) -> Vec<String> {
    let checks = workers.iter().map(|url| async move {
        crate::unreachable_reason(url)
            .await
            .map(|why| format!("{} ({why})", crate::worker_name(url)))
    });
    futures::future::join_all(checks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// `e` with the workers the query ran on as its context.
fn context_of(workers: &[Url], e: DataFusionError) -> DataFusionError {
    DataFusionError::Context(
        format!(
            "the query ran distributed over the workers {}",
            names(workers)
        ),
        Box::new(e),
    )
}

fn names(workers: &[Url]) -> String {
    workers
        .iter()
        .map(crate::worker_name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `e` is a failure of the connection to a worker rather than an error of
/// the query: a gRPC status that is not an encoded DataFusion error (those arrive
/// decoded).
fn transport_failure(e: &DataFusionError) -> bool {
    match e {
        DataFusionError::External(inner) => carries_status(inner.as_ref()),
        DataFusionError::ArrowError(arrow, _) => match arrow.as_ref() {
            datafusion::arrow::error::ArrowError::ExternalError(inner) => {
                carries_status(inner.as_ref())
            }
            _ => false,
        },
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            transport_failure(inner)
        }
        DataFusionError::Shared(inner) => transport_failure(inner),
        _ => false,
    }
}

/// Whether `e` or an error in its source chain is a gRPC status (arrow-flight's
/// `FlightError` holds one boxed).
fn carries_status(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source())
        .any(|e| e.is::<tonic::Status>() || e.is::<Box<tonic::Status>>())
}

/// The error of a query whose connection to a worker failed, `down` the workers
/// that no longer accept connections (none: a connection broke, every worker
/// answers now).
fn worker_failure(workers: &[Url], down: &[String]) -> Error {
    let message = match down {
        [] => format!(
            "a connection to a worker broke during the query; every worker answers now \
             (the query ran distributed over the workers {})",
            names(workers)
        ),
        [one] => format!(
            "the worker at {one} is unreachable: it stopped or died (the query ran \
             distributed over the workers {})",
            names(workers)
        ),
        _ => format!(
            "the workers at {} are unreachable: they stopped or died (the query ran \
             distributed over the workers {})",
            down.join(", "),
            names(workers)
        ),
    };
    Error::new(ErrorKind::Io, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A broken connection is told from a query's own error by its type, and the
    /// error names the worker that is gone, with an I/O kind.
    #[tokio::test]
    async fn a_broken_connection_names_the_worker_that_is_gone() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let alive = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let gone = {
            let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            Url::parse(&format!("http://{}", closed.local_addr().unwrap())).unwrap()
        };
        let broken = DataFusionError::External(Box::new(tonic::Status::unknown(
            "h2 protocol error: stream no longer needed",
        )));
        assert!(transport_failure(&broken));
        assert!(!transport_failure(&DataFusionError::Execution(
            "division by zero".into()
        )));
        let e = named(&[alive.clone(), gone.clone()], broken).await;
        let ours = Error::from(e);
        assert_eq!(ours.kind(), ErrorKind::Io);
        let message = ours.to_string();
        assert!(
            message.contains(&format!("the worker at {} (", crate::worker_name(&gone))),
            "{message}"
        );
        assert!(!message.contains("h2 protocol error"), "{message}");
        // with every worker up, a query's own error stays its own
        let own = named(
            std::slice::from_ref(&alive),
            DataFusionError::Plan("no field c".into()),
        )
        .await;
        assert!(
            matches!(&own, DataFusionError::Context(_, inner) if matches!(**inner, DataFusionError::Plan(_))),
            "{own}"
        );
        let broken = DataFusionError::External(Box::new(tonic::Status::unavailable("reset")));
        let e = Error::from(named(&[alive], broken).await);
        assert!(e.to_string().contains("every worker answers now"), "{e}");
        drop(listener);
    }
}
