//! `--tpch-distributed N`: the TPC-H queries over `N` local `fluss-worker` processes
//! against the same queries in one process, on the same store, every answer
//! checked: the overhead of distribution (on one machine the workers share its
//! cores, so they cannot be faster) and the plan bytes shipped per task.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use datafusion_distributed::{DistributedMetricsFormat, explain_analyze};
use fluss_datafusion::FlussCatalog;
use fluss_datafusion::distributed::PlanSources;
use fluss_datafusion::source::{FlussSource, LocalStore};
use fluss_distributed::{LocalWorker, TaskSizing, coordinator};
use serde::Serialize;

use crate::generate::{BenchResult, Context, DATABASE, GenConfig, LakeFormat};
use crate::tpch::{answer, generate_tpch, queries, tpch_config, union_context};
use crate::{Engine, Timing, time_interleaved};

/// What `--tpch-distributed` runs.
pub struct DistributedArgs {
    /// Scale factor.
    pub sf: f64,
    /// Share of each table in the log tail.
    pub tail_share: f64,
    /// Lake format.
    pub lake: LakeFormat,
    /// Measured runs per query; 0 checks the answers and the plans' shape only.
    pub runs: usize,
    /// Warm-up runs per query.
    pub warmup: usize,
    /// Target partitions of both sessions and the workers' tasks.
    pub target_partitions: usize,
    /// Worker processes.
    pub workers: usize,
    /// Serve the workers in this process instead of `fluss-worker` processes (the
    /// test of the answers needs no release build beside it).
    pub in_process: bool,
    /// Where the store goes.
    pub data_dir: PathBuf,
    /// Only these queries (all when empty).
    pub queries: Vec<String>,
    /// Session options of the distributed side, `key=value` (e.g.
    /// `distributed.compression=none`).
    pub options: Vec<(String, String)>,
    /// Bytes a scan's task reads ([`TaskSizing::bytes_per_task`]).
    pub task_bytes: u64,
    /// Where each query's distributed `EXPLAIN ANALYZE` (per task) is written, as
    /// `<query>.txt`: where the time of a stage went.
    pub plans_dir: PathBuf,
}

/// One query, single process against distributed.
#[derive(Debug, Serialize)]
pub struct DistributedResult {
    /// `q1` .. `q22`.
    pub query: String,
    /// Result rows (equal on both sides).
    pub rows: usize,
    /// One process (none when only the answers were checked).
    pub single: Option<Timing>,
    /// Over the workers.
    pub distributed: Option<Timing>,
    /// Stages of the distributed plan.
    pub stages: usize,
    /// Tasks of all stages.
    pub tasks: usize,
    /// Plan bytes the coordinator sent, per task (datafusion-distributed's
    /// `plan_bytes_sent`, as it shows them).
    pub plan_bytes_sent: String,
}

/// A run of `--tpch-distributed`.
#[derive(Debug, Serialize)]
pub struct DistributedRun {
    /// Scale factor.
    pub scale_factor: f64,
    /// Tail share.
    pub tail_share: f64,
    /// Worker processes.
    pub workers: usize,
    /// Per query.
    pub results: Vec<DistributedResult>,
}

/// A `fluss-worker` process, killed on drop.
struct WorkerProcess {
    child: Child,
    url: url::Url,
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A worker: a `fluss-worker` process, or one served in this process.
enum Worker {
    Process(WorkerProcess),
    InProcess(LocalWorker),
}

impl Worker {
    fn url(&self) -> &url::Url {
        match self {
            Worker::Process(p) => &p.url,
            Worker::InProcess(w) => w.url(),
        }
    }
}

/// `fluss-worker`, built beside this benchmark.
fn fluss_worker() -> BenchResult<PathBuf> {
    let exe = std::env::current_exe().context(|| "locating the benchmark".into())?;
    exe.parent()
        .map(|d| d.join("fluss-worker"))
        .filter(|p| p.exists())
        .ok_or_else(|| {
            "fluss-worker is not built beside fluss-bench (cargo build --release -p fluss-distributed)"
                .into()
        })
}

fn start_worker(binary: &Path, store: &Path) -> BenchResult<WorkerProcess> {
    let mut child = Command::new(binary)
        .args(["--listen", "127.0.0.1:0", "--stop-with-stdin", "--store"])
        .arg(store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context(|| format!("starting {}", binary.display()))?;
    let stdout = child.stdout.take().ok_or("fluss-worker has no stdout")?;
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .context(|| "reading fluss-worker's address".into())?;
    let address = first
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("fluss-worker said {first:?}"))?;
    let url = url::Url::parse(&format!("http://{address}"))
        .context(|| format!("fluss-worker's address {address}"))?;
    Ok(WorkerProcess { child, url })
}

/// A session like [`union_context`]'s whose queries run over `workers`.
fn distributed_context(
    store: &Arc<LocalStore>,
    workers: &[Worker],
    target_partitions: usize,
    options: &[(String, String)],
    sizing: TaskSizing,
) -> BenchResult<SessionContext> {
    let source: Arc<dyn FlussSource> = store.clone();
    let sources = Arc::new(PlanSources::new([source]).context(|| "the plan sources".into())?);
    let urls = workers.iter().map(|w| w.url().clone()).collect();
    let hook = coordinator(urls, sources, sizing);
    let config = tpch_config(target_partitions).with_default_catalog_and_schema("fluss", DATABASE);
    let mut state = hook(
        SessionStateBuilder::new()
            .with_config(config)
            .with_default_features(),
    )
    .build();
    for (key, value) in options {
        state
            .config_mut()
            .options_mut()
            .set(key, value)
            .context(|| format!("setting {key}"))?;
    }
    let ctx = SessionContext::new_with_state(state);
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    Ok(ctx)
}

/// Stages, tasks and the plan bytes sent of `sql` run once over the workers, and
/// its `EXPLAIN ANALYZE` with metrics per task.
async fn shape(ctx: &SessionContext, sql: &str) -> BenchResult<(usize, usize, String, String)> {
    let plan = crate::executed_plan(ctx, sql).await?;
    let text = explain_analyze(
        fluss_distributed::distributed_plan(&plan),
        DistributedMetricsFormat::PerTask,
    )
    .await
    .context(|| format!("metrics of {sql}"))?;
    let mut stages = 0;
    let mut tasks = 0;
    for line in text.lines() {
        if let Some(rest) = line.split("── tasks=").nth(1) {
            stages += 1;
            tasks += rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0);
        }
    }
    let sent = text
        .split("plan_bytes_sent=")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .map(|s| format!("{s}}}"))
        .unwrap_or_else(|| "none (one process)".to_string());
    Ok((stages, tasks, sent, text))
}

/// Generates the store, starts the workers, checks and times every query.
pub async fn run(args: &DistributedArgs) -> BenchResult<DistributedRun> {
    let root = args.data_dir.join(format!(
        "tpch-distributed-{}-sf{}-tail{}",
        args.lake, args.sf, args.tail_share
    ));
    if root.exists() {
        std::fs::remove_dir_all(&root).context(|| format!("removing {}", root.display()))?;
    }
    let config = GenConfig {
        sf: args.sf,
        tail_share: args.tail_share,
        update_rate: 0.1,
        delete_rate: 0.02,
        seed: 42,
        lake: args.lake,
        compression: "ZSTD",
        lake_rounds: 2,
    };
    let start = Instant::now();
    let store_dir = root.join("store");
    let (store, _) = generate_tpch(&store_dir, &config).await?;
    eprintln!(
        "tpch-distributed: sf {} generated in {:.1} s",
        args.sf,
        start.elapsed().as_secs_f64()
    );
    std::fs::create_dir_all(&args.plans_dir)
        .context(|| format!("creating {}", args.plans_dir.display()))?;
    let mut workers = Vec::with_capacity(args.workers);
    if args.in_process {
        for _ in 0..args.workers {
            let source: Arc<dyn FlussSource> = store.clone();
            let worker = LocalWorker::start(source)
                .await
                .context(|| "starting a worker".into())?;
            workers.push(Worker::InProcess(worker));
        }
    } else {
        let binary = fluss_worker()?;
        for _ in 0..args.workers {
            workers.push(Worker::Process(start_worker(&binary, &store_dir)?));
        }
    }
    let single = union_context(&store, args.target_partitions);
    let sizing = TaskSizing {
        bytes_per_task: args.task_bytes,
        ..TaskSizing::default()
    };
    let distributed = distributed_context(
        &store,
        &workers,
        args.target_partitions,
        &args.options,
        sizing,
    )?;
    let mut results = Vec::new();
    for (name, sql) in queries() {
        if !args.queries.is_empty() && !args.queries.iter().any(|q| q == name) {
            continue;
        }
        let expected = answer(&single, sql).await?;
        let got = answer(&distributed, sql).await?;
        if got != expected {
            return Err(format!(
                "tpch {name}: distributed over {} workers answers {} rows, one process {}",
                args.workers,
                got.len(),
                expected.len()
            )
            .into());
        }
        let (stages, tasks, plan_bytes_sent, analyzed) = shape(&distributed, sql).await?;
        let plan_path = args.plans_dir.join(format!("{name}.txt"));
        std::fs::write(&plan_path, analyzed)
            .context(|| format!("writing {}", plan_path.display()))?;
        let (single_timing, distributed_timing) = if args.runs == 0 {
            eprintln!(
                "tpch-distributed: {name}: answers equal, {stages} stages, {tasks} tasks, \
                 plan bytes {plan_bytes_sent}"
            );
            (None, None)
        } else {
            let engines = [
                Engine::new("single", &single, sql.to_string(), args.target_partitions),
                Engine::new(
                    "distributed",
                    &distributed,
                    sql.to_string(),
                    args.target_partitions,
                ),
            ];
            let mut timings =
                time_interleaved(&engines, args.runs, args.warmup, Duration::ZERO).await;
            let distributed_timing = timings.pop().ok_or("no distributed timing")??;
            let single_timing = timings.pop().ok_or("no single timing")??;
            eprintln!(
                "tpch-distributed: {name}: one process {:.1} ms, {} workers {:.1} ms ({:.2}x), \
                 {stages} stages, {tasks} tasks, plan bytes {plan_bytes_sent}",
                single_timing.median_ms,
                args.workers,
                distributed_timing.median_ms,
                distributed_timing.median_ms / single_timing.median_ms
            );
            (Some(single_timing), Some(distributed_timing))
        };
        results.push(DistributedResult {
            query: name.to_string(),
            rows: expected.len(),
            single: single_timing,
            distributed: distributed_timing,
            stages,
            tasks,
            plan_bytes_sent,
        });
    }
    drop(workers);
    Ok(DistributedRun {
        scale_factor: args.sf,
        tail_share: args.tail_share,
        workers: args.workers,
        results,
    })
}

/// The run as markdown: per query the two medians and their ratio, then the
/// geometric mean of the ratios.
pub fn report(run: &DistributedRun, command: &str) -> String {
    let mut md = format!(
        "# TPC-H SF {} over {} local fluss-worker processes against one process\n\n\
         Tail share {}. Command: `{command}`. Ratio = distributed / one process (medians).\n\n",
        run.scale_factor, run.workers, run.tail_share
    );
    md.push_str(&crate::report::provenance(&crate::machine()));
    md.push_str(
        "| query | rows | one process ms | distributed ms | ratio | stages | tasks | plan bytes sent |\n\
         |---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let mut log_sum = 0.0;
    let mut timed = 0;
    // the queries planned over the workers (the rest ran in one process: every scan
    // of theirs under one task's bytes)
    let (mut spread_log_sum, mut spread) = (0.0, 0);
    for r in &run.results {
        let (single, distributed, ratio) = match (&r.single, &r.distributed) {
            (Some(single), Some(distributed)) => {
                let ratio = distributed.median_ms / single.median_ms;
                log_sum += ratio.ln();
                timed += 1;
                if r.stages > 0 {
                    spread_log_sum += ratio.ln();
                    spread += 1;
                }
                (
                    format!("{:.1}", single.median_ms),
                    format!("{:.1}", distributed.median_ms),
                    format!("{ratio:.2}"),
                )
            }
            _ => ("-".into(), "-".into(), "-".into()),
        };
        md.push_str(&format!(
            "| {} | {} | {single} | {distributed} | {ratio} | {} | {} | {} |\n",
            r.query, r.rows, r.stages, r.tasks, r.plan_bytes_sent
        ));
    }
    if timed > 0 {
        md.push_str(&format!(
            "\nGeometric mean of the ratios: {:.2}\n",
            (log_sum / timed as f64).exp()
        ));
    }
    if spread > 0 {
        md.push_str(&format!(
            "Over the {spread} queries planned over the workers (the others ran in one \
             process, every scan under one task's bytes): {:.2}\n",
            (spread_log_sum / spread as f64).exp()
        ));
    }
    md
}
