//! Union reads of Apache Fluss tables distributed on
//! [datafusion-distributed](https://github.com/datafusion-contrib/datafusion-distributed).
//!
//! The coordinator (a [`FlussSession`](fluss_datafusion::sql::FlussSession) given
//! [`coordinator`]'s state hook) plans a query once: the provider's `scan()` pins the
//! cut (lake snapshot and log offsets) there, and datafusion-distributed cuts the
//! physical plan into stages whose tasks run on workers. Each Fluss scan leaf is
//! sized from the rows and bytes it reads and split into one variant per task,
//! reading disjoint buckets or lake splits. A worker ([`worker`], or the
//! `fluss-worker` binary) decodes its tasks' plans with the same codec and reads
//! from the sources it was started with, with its own credentials.
//!
//! ```no_run
//! # async fn run() -> fluss_datafusion::Result<()> {
//! use std::sync::Arc;
//! use fluss_datafusion::LocalStore;
//! use fluss_datafusion::distributed::PlanSources;
//! use fluss_datafusion::sql::{FlussSession, SessionOptions};
//! use fluss_distributed::{TaskSizing, coordinator, parse_workers};
//!
//! let store = Arc::new(LocalStore::open("./fluss-data").await?);
//! let sources = Arc::new(PlanSources::new([store.clone() as _])?);
//! let workers = parse_workers("127.0.0.1:7001,127.0.0.1:7002")?;
//! let options = SessionOptions {
//!     state_hook: Some(coordinator(workers, sources, TaskSizing::default())),
//!     ..SessionOptions::default()
//! };
//! let session = FlussSession::with_options(store, options).await?;
//! session.execute("SELECT count(*) FROM orders").await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::SessionConfig;
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedExt, DistributedLeafExec,
    ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse, SessionStateBuilderExt, Worker,
    WorkerQueryContext, WorkerResolver,
};
use fluss_datafusion::distributed::{FlussPhysicalCodec, PlanSources, scan_size, split_scan};
use fluss_datafusion::sql::{ExplainRenderer, StateHook};
use fluss_datafusion::{Error, ErrorKind, Result};
use url::Url;

mod local_worker;
mod named_workers;

pub use datafusion_distributed::display_plan_ascii;
pub use local_worker::LocalWorker;
pub use named_workers::{WorkersNamedExec, distributed_plan};

/// The DataFusion option that lets a file scan's partitions take files from each
/// other: off on both sides, or a task could read another's files twice.
const WORK_STEALING: &str = "datafusion.execution.enable_file_stream_work_stealing";

/// The physical optimizer rule replacing joins with key lookups: key lookups do not
/// travel, so distributed plans are made without it.
const LOOKUP_JOIN_RULE: &str = "fluss_lookup_join";

/// How many tasks a scan is split over: one per `bytes_per_task` it reads, at most
/// one per bucket or split, at most `max_tasks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSizing {
    /// Bytes a task should read (estimated: lake files by size, log rows by the
    /// width of the columns read).
    pub bytes_per_task: u64,
    /// Most tasks per scan (`None`: as many as workers).
    pub max_tasks: Option<usize>,
}

impl Default for TaskSizing {
    /// 128 MiB per task.
    fn default() -> Self {
        Self {
            bytes_per_task: 128 << 20,
            max_tasks: None,
        }
    }
}

/// Workers at fixed addresses.
#[derive(Debug, Clone)]
pub struct StaticWorkers(pub Vec<Url>);

impl WorkerResolver for StaticWorkers {
    fn get_urls(&self) -> std::result::Result<Vec<Url>, DataFusionError> {
        Ok(self.0.clone())
    }
}

/// A `key=value` option as the shell, the worker and the benchmark take them on
/// their command lines (`--lake-option s3.endpoint=http://…`): the key trimmed, the
/// value as written.
pub fn parse_key_value(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!(
            "'{}' is not key=value",
            s.split('=').next().unwrap_or(s)
        )),
    }
}

/// A size in bytes as the shell, the worker and the benchmark take them on their
/// command lines (`--memory-limit`, `--worker-task-bytes`): plain bytes (`1048576`),
/// or a number with a binary unit, `k`, `m`, `g` or `t`, an optional `b` or `ib`
/// after it, in any case (`512m`, `1.5g`, `64MiB`).
pub fn parse_size(s: &str) -> std::result::Result<usize, String> {
    let lower = s.trim().to_ascii_lowercase();
    let number = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, shift) = match number.chars().last() {
        Some('k') => (&number[..number.len() - 1], 10),
        Some('m') => (&number[..number.len() - 1], 20),
        Some('g') => (&number[..number.len() - 1], 30),
        Some('t') => (&number[..number.len() - 1], 40),
        _ => (number, 0),
    };
    let value: f64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a size like 1048576, 512m, 1.5g or 2GiB"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0) {
        return Err(format!("'{s}' is not a positive size"));
    }
    if bytes > usize::MAX as f64 {
        return Err(format!("'{s}' is larger than this machine can address"));
    }
    Ok(bytes as usize)
}

/// Worker addresses from `host:port,host:port` (a scheme, `http://`, is optional).
pub fn parse_workers(list: &str) -> Result<Vec<Url>> {
    let urls = list
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(|w| {
            let url = if w.contains("://") {
                w.to_string()
            } else {
                format!("http://{w}")
            };
            Url::parse(&url).map_err(|e| {
                Error::invalid_input(format!("worker address '{w}' is not host:port"))
                    .with_source(e)
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if urls.is_empty() {
        return Err(Error::invalid_input("no worker address given"));
    }
    Ok(urls)
}

/// How long a worker may take to accept a connection before it counts as down.
const WORKER_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether a worker accepts connections at `url`: `None` when it does, else why not.
pub async fn unreachable_reason(url: &Url) -> Option<String> {
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return Some("the address names no host and port".to_string());
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let connect = tokio::net::TcpStream::connect((host, port));
    match tokio::time::timeout(WORKER_CONNECT_TIMEOUT, connect).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => Some(format!(
            "no answer within {}s",
            WORKER_CONNECT_TIMEOUT.as_secs()
        )),
    }
}

/// Checks that a worker answers at each of `workers` (all at once), failing with
/// an error that names the first that does not.
pub async fn check_workers(workers: &[Url]) -> Result<()> {
    let checks = workers
        .iter()
        .map(|url| async move { unreachable_reason(url).await.map(|why| (url, why)) });
    let down = futures::future::join_all(checks).await;
    match down.into_iter().flatten().next() {
        None => Ok(()),
        Some((url, why)) => {
            let name = worker_name(url);
            Err(Error::new(
                ErrorKind::Io,
                format!(
                    "no worker answers at {name} ({why}); start one there with \
                     fluss-worker --listen {name}, or leave it out of --workers"
                ),
            ))
        }
    }
}

/// A worker's address as the user wrote it: `host:port`.
pub(crate) fn worker_name(url: &Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        _ => url.to_string(),
    }
}

/// The number of tasks a Fluss scan leaf asks for.
fn desired_task_count(
    event: DesiredTaskCountEvent<'_>,
) -> Option<DfResult<DesiredTaskCountEventResponse>> {
    let size = scan_size(event.plan.as_ref())?;
    if size.units <= 1 {
        // its work is one unit (or in order on one task): never split
        return Some(Ok(DesiredTaskCountEventResponse::maximum(1)));
    }
    let sizing = event
        .session_config
        .get_extension::<TaskSizing>()
        .map(|s| *s)
        .unwrap_or_default();
    let by_bytes = size.bytes.div_ceil(sizing.bytes_per_task.max(1)) as usize;
    let most = sizing.max_tasks.unwrap_or(usize::MAX).min(size.units);
    Some(Ok(DesiredTaskCountEventResponse::desired(
        by_bytes.clamp(1, most.max(1)),
    )))
}

/// A Fluss scan leaf split over its stage's tasks.
fn scale_up_leaf(
    event: ScaleUpLeafNodeEvent<'_>,
) -> Option<DfResult<ScaleUpLeafNodeEventResponse>> {
    let variants = split_scan(event.plan, event.task_count)?;
    Some(
        variants
            .map_err(DataFusionError::from)
            .and_then(|variants| DistributedLeafExec::try_new(event.plan.clone(), variants))
            .map(|leaf| ScaleUpLeafNodeEventResponse::new(Arc::new(leaf))),
    )
}

/// Hash joins whose build side is estimated under this many bytes are planned
/// `CollectLeft` and broadcast to the probe side's tasks (DataFusion's default is
/// 1 MiB): the probe side then stays in its scan's stage, unshuffled, and the join's
/// dynamic filter reaches its scan, as in one process. Measured on TPC-H SF 1 over
/// two workers (docs/benchmarks/tpch-distributed): q5 2.05x to 1.19x of one process,
/// q3 1.89x to 1.40x.
const BROADCAST_BYTES: usize = 32 << 20;

/// The same bound in rows (DataFusion's default is 128 Ki rows).
const BROADCAST_ROWS: usize = 1 << 20;

/// Raises DataFusion's single-partition (collect-left) hash join thresholds to
/// [`BROADCAST_BYTES`] and [`BROADCAST_ROWS`]; a session that set higher keeps its own.
fn broadcast_small_build_sides(config: &mut SessionConfig) {
    let optimizer = &mut config.options_mut().optimizer;
    optimizer.hash_join_single_partition_threshold = optimizer
        .hash_join_single_partition_threshold
        .max(BROADCAST_BYTES);
    optimizer.hash_join_single_partition_threshold_rows = optimizer
        .hash_join_single_partition_threshold_rows
        .max(BROADCAST_ROWS);
}

/// `config` as both ends of a distributed query need it: no work stealing between
/// a scan's partitions.
fn without_work_stealing(config: &mut SessionConfig) -> DfResult<()> {
    config.options_mut().set(WORK_STEALING, "false")
}

/// The state hook of a coordinator: queries planned over `workers`, the Fluss scans
/// encoded by the codec and split by size as `sizing` says. The codec, the task
/// count and the split are registered together: a task count without its split
/// would read every row once per task. Key lookups are planned as scans (they do
/// not travel); join build sides estimated under 32 MiB are broadcast.
pub fn coordinator(workers: Vec<Url>, sources: Arc<PlanSources>, sizing: TaskSizing) -> StateHook {
    Arc::new(move |mut builder: SessionStateBuilder| {
        if let Some(rules) = builder.physical_optimizer_rules() {
            rules.retain(|rule| rule.name() != LOOKUP_JOIN_RULE);
        }
        let config = builder.config().get_or_insert_with(SessionConfig::new);
        // both options exist (DataFusion's, the library's): setting them cannot fail
        let _ = without_work_stealing(config);
        let _ = config.options_mut().set("fluss.key_lookups", "false");
        broadcast_small_build_sides(config);
        config.set_extension(Arc::new(sizing));
        let mut builder = builder
            .with_distributed_worker_resolver(StaticWorkers(workers.clone()))
            .with_distributed_planner()
            .with_distributed_user_codec(FlussPhysicalCodec::new(sources.clone()))
            .with_distributed_desired_task_count_handler(desired_task_count)
            .with_distributed_scale_up_leaf_node_handler(scale_up_leaf);
        // the lake's plain parquet scans split by the same size (the option takes any
        // positive size)
        let bytes = usize::try_from(sizing.bytes_per_task)
            .unwrap_or(usize::MAX)
            .max(1);
        let _ = builder.set_distributed_file_scan_config_bytes_per_partition(bytes);
        // a distributed plan's errors name its workers
        match builder.query_planner().take() {
            Some(inner) => builder.with_query_planner(Arc::new(named_workers::NamingPlanner {
                inner,
                workers: workers.clone(),
            })),
            None => builder,
        }
    })
}

/// How `EXPLAIN` shows a distributed plan: its stages, and each stage's tasks with
/// what each reads.
pub fn explain_renderer() -> ExplainRenderer {
    Arc::new(|plan| match plan.downcast_ref::<WorkersNamedExec>() {
        Some(named) => display_plan_ascii(named.input().as_ref(), false),
        None => display_plan_ascii(plan, false),
    })
}

/// A worker running the tasks of plans that read `sources`, with `env` (its object
/// stores, memory limit) for every task.
pub fn worker(sources: Arc<PlanSources>, env: Arc<RuntimeEnv>) -> Worker {
    Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let (sources, env) = (sources.clone(), env.clone());
        async move {
            let mut builder = ctx
                .builder
                .with_runtime_env(env)
                .with_distributed_user_codec(FlussPhysicalCodec::new(sources));
            if let Some(config) = builder.config() {
                without_work_stealing(config)?;
            }
            Ok(builder.build())
        }
    })
}

/// Serves `worker` on `listener` (gRPC) until `shutdown` completes.
pub async fn serve(
    worker: Worker,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tonic::transport::Server::builder()
        .add_service(worker.into_worker_server())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| Error::internal("the worker's server failed").with_source(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_one_way() {
        for (text, bytes) in [
            ("1048576", 1 << 20),
            ("1g", 1 << 30),
            ("1G", 1 << 30),
            ("512m", 512 << 20),
            ("512MB", 512 << 20),
            ("64MiB", 64 << 20),
            ("1.5g", 3 << 29),
            (" 4k ", 4096),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["", "g", "-1g", "0", "1x", "lots", "nan"] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
    }

    #[test]
    fn small_build_sides_are_broadcast_unless_the_session_allows_more() {
        let mut config = SessionConfig::new();
        broadcast_small_build_sides(&mut config);
        let optimizer = &config.options().optimizer;
        assert_eq!(
            optimizer.hash_join_single_partition_threshold,
            BROADCAST_BYTES
        );
        assert_eq!(
            optimizer.hash_join_single_partition_threshold_rows,
            BROADCAST_ROWS
        );
        let mut config = SessionConfig::new();
        config
            .options_mut()
            .optimizer
            .hash_join_single_partition_threshold = 1 << 30;
        broadcast_small_build_sides(&mut config);
        assert_eq!(
            config
                .options()
                .optimizer
                .hash_join_single_partition_threshold,
            1 << 30
        );
    }
}
