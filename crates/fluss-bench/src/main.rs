//! `fluss-bench`: the benchmark suite of union read.
//!
//! Generates TPC-H-shaped Fluss tables in a LocalStore (log tables `lineitem`,
//! `orders`; primary-key tables `customer`, `part`) at chosen scale factors with a
//! chosen share of each table left in the log tail, once per lake format (Paimon,
//! Iceberg: same generator, same seed), runs the suite's queries through the union
//! read, the same union read through the cluster source (the Fluss RPC test server
//! serving the store on loopback), the lake-only read and the peers (DataFusion
//! ListingTable, DuckDB, pypaimon or pyiceberg, raw arrow-ipc decode) on the same
//! files, plans a 64-bucket table through both sources, and writes a report
//! (`report.md`, SVG charts, `results.json`) to `--out`.
//!
//! ```sh
//! cargo run --release --bin fluss-bench -- --out target/bench-results/suite
//! cargo run --bin fluss-bench -- --smoke --out /tmp/suite   # CI-sized, < 2 minutes
//! cargo run --release --bin fluss-bench -- --vs-flink --sf 1 --out /tmp/vs-flink  # [`flink`]
//! cargo run --release --bin fluss-bench -- --tpch --sf 1 --out /tmp/tpch  # [`tpch`]
//! cargo run --release --bin fluss-bench -- --key-lookups --out /tmp/lookups  # test server
//! ```
//!
//! Timings never fail the run; a query or a peer that cannot run does (exit code 1),
//! except Python peers when Python is unavailable or `--skip-python` is given, which
//! the report states.

mod cluster;
mod distributed;
mod fixed_costs;
mod flink;
mod generate;
mod peers;
mod queries;
mod report;
mod tpch;
mod tpch_flink;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};
use fluss_alloc::PeakTrackingAllocator;
use fluss_datafusion::provider::FlussCatalog;
use serde::Serialize;
use serde_json::{Value, json};

use generate::{BenchResult, Context, DATABASE, Dataset, GenConfig, LakeFormat, TableStats};
use peers::DecodeResult;
use queries::Query;

/// mimalloc (as datafusion-cli uses) with live and peak heap bytes counted (peak
/// memory of a query); every engine in the run shares it.
#[global_allocator]
static ALLOCATOR: PeakTrackingAllocator<mimalloc::MiMalloc> =
    PeakTrackingAllocator::new(mimalloc::MiMalloc);

/// The workspace root (the project's venv, its git checkout).
pub const WORKSPACE_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Command-line flags.
#[derive(Debug, Clone, Parser)]
#[command(about = "Union read benchmark suite: generator, peers, report")]
struct Args {
    /// TPC-H scale factors (comma separated). The first gets the full tail-share sweep.
    #[arg(long, value_delimiter = ',', default_values_t = vec![0.1, 1.0])]
    sf: Vec<f64>,
    /// Shares of each table left in the log tail, at the first scale factor.
    #[arg(long, value_delimiter = ',', default_values_t = vec![0.0, 0.01, 0.1, 0.5, 1.0])]
    tail_shares: Vec<f64>,
    /// Tail shares at the other scale factors.
    #[arg(long, value_delimiter = ',', default_values_t = vec![0.0, 0.1])]
    other_sf_tail_shares: Vec<f64>,
    /// Measured runs per query (after warm-up).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Warm-up runs per query.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Keep taking measured rounds past `--runs` until the query's rounds add up to
    /// this many milliseconds (at most 20 x `--runs` rounds): queries of a few
    /// milliseconds get enough samples for their median to beat the machine's noise.
    #[arg(long, default_value_t = 1000)]
    min_time_ms: u64,
    /// DataFusion target partitions to sweep; the largest is used for everything else.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 2])]
    target_partitions: Vec<usize>,
    /// Output folder (report.md, results.json, *.svg).
    #[arg(long, default_value = "target/bench-results/suite")]
    out: PathBuf,
    /// CI-sized run: tiny scale factors, one run, every query and peer; fails when a
    /// query or peer did not run or the report is missing (never on timings).
    #[arg(long)]
    smoke: bool,
    /// Do not run the Python peers (DuckDB, pypaimon, pyiceberg).
    #[arg(long)]
    skip_python: bool,
    /// Lake formats to tier into (comma separated); each dataset is generated and
    /// measured once per format.
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = LakeFormat::ALL.to_vec())]
    lake_formats: Vec<LakeFormat>,
    /// PK tail: updates of existing keys, as a share of the tail size.
    #[arg(long, default_value_t = 0.5)]
    update_rate: f64,
    /// PK tail: deletes of existing keys, as a share of the tail size.
    #[arg(long, default_value_t = 0.05)]
    delete_rate: f64,
    /// Seed of the PK tail.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Lineitem rows for the log decode benchmark (ZSTD and LZ4_FRAME tables).
    #[arg(long, default_value_t = 1_000_000)]
    decode_rows: usize,
    /// Where generated stores go (default: `<out>/data`); removed after use unless --keep-data.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Keep the generated stores.
    #[arg(long)]
    keep_data: bool,
    /// Only the head-to-head with Flink's union read on a real Fluss cluster
    /// (`tests/real-fluss/`; at the first `--sf`): `report.md` and `results.json` in
    /// `--out`.
    #[arg(long)]
    vs_flink: bool,
    /// Share of each table written into the log tail for `--vs-flink`.
    #[arg(long, default_value_t = 0.1)]
    flink_tail_share: f64,
    /// Only TPC-H's 22 queries on all 8 tables (at the first `--sf` and the first
    /// `--lake-formats`), union read against the same engine on the merged contents as
    /// parquet, every answer checked: `tpch.md` and `tpch.json` in `--out`.
    #[arg(long)]
    tpch: bool,
    /// Tail shares of `--tpch`, one dataset each.
    #[arg(long, value_delimiter = ',', default_value = "0,0.1,0.3")]
    tpch_tail_shares: Vec<f64>,
    /// Measured runs of `--tpch`'s fresh-process mode: every query in a new
    /// `fluss-sql -c` process, union and merged parquet alike, after one warm-up
    /// (0: warm sessions only).
    #[arg(long, default_value_t = 0)]
    tpch_fresh_runs: usize,
    /// Only the key-lookup benchmark on the RPC test server (point lookup and
    /// enrichment join, SQL against fluss-rs's `Lookuper`), printed as JSON.
    #[arg(long)]
    key_lookups: bool,
    /// `--tpch` with Flink's union read as a peer at `--flink-tail-share` (one of
    /// `--tpch-tail-shares`): the same tables written into a real Fluss cluster
    /// (`tests/real-fluss/`), the 22 queries run by Flink and by ours there.
    #[arg(long)]
    tpch_flink: bool,
    /// Measured Flink runs per query of `--tpch-flink`.
    #[arg(long, default_value_t = 1)]
    flink_runs: usize,
    /// Only TPC-H's queries at the first `--sf` (tail share: the first of
    /// `--tpch-tail-shares`) over this many local `fluss-worker` processes against one
    /// process, answers checked: `tpch-distributed.md` and `.json` in `--out`, each query's
    /// per-task `EXPLAIN ANALYZE` in `tpch-distributed-plans/`. Build
    /// the workers first: `cargo build --release -p fluss-distributed`.
    #[arg(long)]
    tpch_distributed: Option<usize>,
    /// A session option of `--tpch-distributed`'s distributed side, `key=value`
    /// (repeatable), e.g. `distributed.compression=none`.
    #[arg(long = "distributed-option", value_parser = fluss_distributed::parse_key_value)]
    distributed_option: Vec<(String, String)>,
    /// Only these `--tpch` queries (`q1,q6`; default all 22).
    #[arg(long, value_delimiter = ',')]
    tpch_queries: Vec<String>,
    /// Bytes a task of `--tpch-distributed` reads (the shell's `--worker-task-bytes`),
    /// e.g. 64m: one task per this many bytes of a scan, at most one per bucket or
    /// split.
    #[arg(long, value_parser = fluss_distributed::parse_size, default_value = "128m")]
    worker_task_bytes: usize,
    /// Serve `--tpch-distributed`'s workers in the benchmark's own process (no
    /// `fluss-worker` build needed; the rows still travel over loopback gRPC).
    #[arg(long)]
    in_process_workers: bool,
}

impl Args {
    fn apply_smoke(&mut self) {
        if self.smoke {
            self.sf = vec![0.001, 0.002];
            self.tail_shares = vec![0.0, 0.1, 1.0];
            self.other_sf_tail_shares = vec![0.0, 0.1];
            self.runs = 1;
            self.warmup = 0;
            self.min_time_ms = 0;
            self.decode_rows = 20_000;
        }
    }

    fn main_partitions(&self) -> usize {
        self.target_partitions.iter().copied().max().unwrap_or(2)
    }
}

/// Summary statistics of one timed query.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    /// Every measured sample (ms).
    pub samples_ms: Vec<f64>,
    /// Median (ms).
    pub median_ms: f64,
    /// Minimum (ms).
    pub min_ms: f64,
    /// Maximum (ms).
    pub max_ms: f64,
    /// 25th percentile (ms).
    pub p25_ms: f64,
    /// 75th percentile (ms).
    pub p75_ms: f64,
    /// Result rows.
    pub rows: usize,
}

impl Timing {
    /// Statistics of `samples_ms`.
    pub fn from_samples(samples_ms: Vec<f64>, rows: usize) -> Self {
        let mut sorted = samples_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| {
            if sorted.is_empty() {
                return f64::NAN;
            }
            let pos = q * (sorted.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        };
        Timing {
            median_ms: at(0.5),
            min_ms: sorted.first().copied().unwrap_or(f64::NAN),
            max_ms: sorted.last().copied().unwrap_or(f64::NAN),
            p25_ms: at(0.25),
            p75_ms: at(0.75),
            samples_ms,
            rows,
        }
    }
}

/// Which generated dataset a figure belongs to: the lake format it was tiered into,
/// its scale factor and its tail share.
#[derive(Debug, Clone, Copy)]
pub struct DatasetKey {
    /// Lake format.
    pub lake: LakeFormat,
    /// Scale factor.
    pub sf: f64,
    /// Tail share.
    pub tail_share: f64,
}

impl std::fmt::Display for DatasetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} sf {} tail {}", self.lake, self.sf, self.tail_share)
    }
}

/// One (dataset, query, engine, partitions) measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// Lake format of the dataset.
    pub lake: LakeFormat,
    /// Scale factor.
    pub sf: f64,
    /// Tail share.
    pub tail_share: f64,
    /// Query name.
    pub query: String,
    /// `union`, `lake_only`, `listing_table`, `duckdb`, `pypaimon`, `pyiceberg`.
    pub engine: String,
    /// Target partitions (threads for the Python peers).
    pub target_partitions: usize,
    /// The timing, when it ran.
    pub timing: Option<Timing>,
    /// Why it failed.
    pub error: Option<String>,
    /// Why the engine cannot run the query at all (a peer's known limitation, such as
    /// pyiceberg and equality deletes): neither a timing nor a problem of the run.
    pub not_supported: Option<String>,
}

/// Peak heap of a PK table scan.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryPoint {
    /// Lake format.
    pub lake: LakeFormat,
    /// Scale factor.
    pub sf: f64,
    /// Tail share.
    pub tail_share: f64,
    /// Table.
    pub table: String,
    /// Changelog rows in the tail.
    pub tail_rows: usize,
    /// Peak heap growth of the union read (bytes).
    pub union_peak_bytes: usize,
    /// Peak heap growth of the lake-only read (bytes).
    pub lake_only_peak_bytes: Option<usize>,
}

/// Which buckets a point lookup read rows from.
#[derive(Debug, Clone, Serialize)]
pub struct LookupFinding {
    /// Lake format.
    pub lake: LakeFormat,
    /// Scale factor.
    pub sf: f64,
    /// Tail share.
    pub tail_share: f64,
    /// The query.
    pub sql: String,
    /// Buckets of the table.
    pub buckets_total: usize,
    /// Buckets (scan partitions) with lake or log rows read.
    pub buckets_with_rows: usize,
    /// Rows read (lake + log) by the scan.
    pub rows_read: usize,
    /// EXPLAIN ANALYZE of the plan (with metrics).
    pub plan: String,
}

/// A generated dataset.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetInfo {
    /// Scale factor.
    pub sf: f64,
    /// Tail share.
    pub tail_share: f64,
    /// Lake format.
    pub lake: LakeFormat,
    /// Buckets per table.
    pub buckets: i32,
    /// Seconds to generate and load.
    pub load_seconds: f64,
    /// Per table.
    pub tables: Vec<TableStats>,
    /// Lake parquet files per table.
    pub lake_files: BTreeMap<String, usize>,
    /// Bytes on disk of the store.
    pub disk_bytes: u64,
}

/// Whether a peer ran.
#[derive(Debug, Clone, Serialize)]
pub struct PeerStatus {
    /// Peer name.
    pub name: String,
    /// The lake format whose files it read (`None`: it reads no lake, as arrow-ipc).
    pub lake: Option<LakeFormat>,
    /// Whether it ran.
    pub ran: bool,
    /// What it is, or why it did not run.
    pub note: String,
}

/// Everything the run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Suite {
    /// Machine description.
    pub machine: BTreeMap<String, String>,
    /// Flags of the run.
    pub config: Value,
    /// Queries.
    pub queries: Vec<Query>,
    /// Generated datasets.
    pub datasets: Vec<DatasetInfo>,
    /// Timings.
    pub measurements: Vec<Measurement>,
    /// PK memory.
    pub memory: Vec<MemoryPoint>,
    /// Point lookup bucket findings.
    pub lookups: Vec<LookupFinding>,
    /// Log decode.
    pub decode: Vec<DecodeResult>,
    /// Peers.
    pub peers: Vec<PeerStatus>,
    /// Failed correctness checks and errors (empty when all is well).
    pub problems: Vec<String>,
    /// Planning time of a 64-bucket table through both sources.
    pub planning: Option<cluster::PlanningResult>,
    /// Point lookups on a cluster: SQL against fluss-rs's `Lookuper`.
    pub key_lookup: Option<cluster::KeyLookupResult>,
    /// Targets (filled by the report).
    pub targets: Vec<report::Target>,
}

impl Suite {
    /// Records a timing, or a failure (which is a problem of the run).
    fn record(
        &mut self,
        ds: DatasetKey,
        query: &str,
        engine: &str,
        tp: usize,
        r: BenchResult<Timing>,
    ) {
        let (timing, error) = match r {
            Ok(t) => (Some(t), None),
            Err(e) => {
                self.problems
                    .push(format!("{ds}: {query} on {engine}: {e}"));
                (None, Some(e.to_string()))
            }
        };
        self.push(ds, query, engine, tp, timing, error, None);
    }

    /// Records that `engine` cannot run `query` (`why`): the report shows it as not
    /// supported, and it is no problem of the run.
    fn record_not_supported(
        &mut self,
        ds: DatasetKey,
        query: &str,
        engine: &str,
        tp: usize,
        why: String,
    ) {
        self.push(ds, query, engine, tp, None, None, Some(why));
    }

    /// Appends one measurement of `engine` running `query` on dataset `ds`.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        ds: DatasetKey,
        query: &str,
        engine: &str,
        tp: usize,
        timing: Option<Timing>,
        error: Option<String>,
        not_supported: Option<String>,
    ) {
        self.measurements.push(Measurement {
            lake: ds.lake,
            sf: ds.sf,
            tail_share: ds.tail_share,
            query: query.to_string(),
            engine: engine.to_string(),
            target_partitions: tp,
            timing,
            error,
            not_supported,
        });
    }
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// nproc, memory, CPU model, OS, rustc, git commit and dirty flag, date, profile.
fn machine() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert(
        "nproc".into(),
        std::thread::available_parallelism()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "unknown".into()),
    );
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    m.insert("cpu".into(), cpu);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| format!("{:.1} GiB", kb / 1048576.0))
        .unwrap_or_else(|| "unknown".into());
    m.insert("memory".into(), mem);
    m.insert("os".into(), command_output("uname", &["-sr"]));
    m.insert("rustc".into(), command_output("rustc", &["--version"]));
    let root = WORKSPACE_ROOT;
    m.insert(
        "git_commit".into(),
        command_output("git", &["-C", root, "rev-parse", "--short", "HEAD"]),
    );
    let dirty = command_output("git", &["-C", root, "status", "--porcelain"]);
    m.insert(
        "git_dirty".into(),
        (!dirty.is_empty() && dirty != "unknown").to_string(),
    );
    m.insert(
        "date".into(),
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
    );
    m.insert(
        "profile".into(),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
        .into(),
    );
    m
}

fn ctx_with(store: &Arc<fluss_datafusion::LocalStore>, tp: usize) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(tp));
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    ctx
}

fn union_name(table: &str) -> String {
    format!("fluss.{DATABASE}.{table}")
}

fn lake_name(table: &str) -> String {
    format!("fluss.{DATABASE}.\"{table}$lake\"")
}

fn listing_name(table: &str) -> String {
    format!("listing_{table}")
}

async fn run_sql(ctx: &SessionContext, sql: &str) -> BenchResult<usize> {
    let batches = collect_sql(ctx, sql).await?;
    Ok(batches.iter().map(|b| b.num_rows()).sum())
}

/// The batches of `sql`, its errors naming it.
async fn collect_sql(
    ctx: &SessionContext,
    sql: &str,
) -> BenchResult<Vec<datafusion::arrow::array::RecordBatch>> {
    ctx.sql(sql)
        .await
        .context(|| format!("planning {sql}"))?
        .collect()
        .await
        .context(|| format!("running {sql}"))
}

/// One engine's run of one query.
struct Engine<'a> {
    name: &'static str,
    ctx: &'a SessionContext,
    sql: String,
    target_partitions: usize,
}

impl<'a> Engine<'a> {
    fn new(name: &'static str, ctx: &'a SessionContext, sql: String, tp: usize) -> Self {
        Self {
            name,
            ctx,
            sql,
            target_partitions: tp,
        }
    }
}

/// Times every engine on its query: warm-ups first, then the measured runs taken in
/// turn (`a b c a b c ...`), so drift on a busy machine hits every engine alike and
/// the ratios between them stay fair. An engine that fails is dropped from the rest.
///
/// Rounds go on past `runs` while all rounds so far took less than `min_time`
/// (adaptive sampling as criterion does), capped at 20 x `runs` rounds.
async fn time_interleaved(
    engines: &[Engine<'_>],
    runs: usize,
    warmup: usize,
    min_time: std::time::Duration,
) -> Vec<BenchResult<Timing>> {
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); engines.len()];
    let mut rows = vec![0; engines.len()];
    let mut failed: Vec<Option<String>> = vec![None; engines.len()];
    for (i, engine) in engines.iter().enumerate() {
        for _ in 0..warmup {
            if let Err(e) = run_sql(engine.ctx, &engine.sql).await {
                failed[i] = Some(e.to_string());
                break;
            }
        }
    }
    let measuring = Instant::now();
    let mut round = 0;
    while round < runs.max(1) || (measuring.elapsed() < min_time && round < 20 * runs.max(1)) {
        round += 1;
        for (i, engine) in engines.iter().enumerate() {
            if failed[i].is_some() {
                continue;
            }
            let start = Instant::now();
            match run_sql(engine.ctx, &engine.sql).await {
                Ok(n) => {
                    samples[i].push(start.elapsed().as_secs_f64() * 1e3);
                    rows[i] = n;
                }
                Err(e) => failed[i] = Some(e.to_string()),
            }
        }
    }
    samples
        .into_iter()
        .zip(rows)
        .zip(failed)
        .map(|((samples, rows), failed)| match failed {
            Some(e) => Err(e.into()),
            None => Ok(Timing::from_samples(samples, rows)),
        })
        .collect()
}

/// Peak heap growth while running `sql` once.
async fn peak_heap(ctx: &SessionContext, sql: &str) -> BenchResult<usize> {
    let base = ALLOCATOR.reset_peak();
    run_sql(ctx, sql).await?;
    Ok(ALLOCATOR.peak().saturating_sub(base))
}

fn count_value(batches: &[datafusion::arrow::array::RecordBatch]) -> Option<i64> {
    use datafusion::arrow::array::{Array, Int64Array};
    let col = batches.first()?.column(0);
    let a = col.as_any().downcast_ref::<Int64Array>()?;
    (!a.is_empty()).then(|| a.value(0))
}

/// Sum of a counter per partition over the plan tree.
fn partition_counts(
    plan: &Arc<dyn ExecutionPlan>,
    names: &[&str],
    out: &mut BTreeMap<usize, usize>,
) {
    if let Some(metrics) = plan.metrics() {
        for m in metrics.iter() {
            if let MetricValue::Count { name, count } = m.value()
                && names.contains(&name.as_ref())
            {
                *out.entry(m.partition().unwrap_or(usize::MAX)).or_default() += count.value();
            }
        }
    }
    for child in plan.children() {
        partition_counts(child, names, out);
    }
}

/// The physical plan of `sql`, run once to its end (its metrics filled).
async fn executed_plan(
    ctx: &SessionContext,
    sql: &str,
) -> BenchResult<std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
    let plan = ctx
        .sql(sql)
        .await
        .context(|| format!("planning {sql}"))?
        .create_physical_plan()
        .await
        .context(|| format!("physical plan of {sql}"))?;
    collect(plan.clone(), ctx.task_ctx())
        .await
        .context(|| format!("running {sql}"))?;
    Ok(plan)
}

async fn point_lookup_finding(
    ctx: &SessionContext,
    sql: &str,
    ds: DatasetKey,
    buckets: i32,
) -> BenchResult<LookupFinding> {
    let plan = executed_plan(ctx, sql).await?;
    let mut per_partition = BTreeMap::new();
    partition_counts(&plan, &["lake_rows", "log_rows"], &mut per_partition);
    Ok(LookupFinding {
        lake: ds.lake,
        sf: ds.sf,
        tail_share: ds.tail_share,
        sql: sql.to_string(),
        buckets_total: buckets as usize,
        buckets_with_rows: per_partition.values().filter(|v| **v > 0).count(),
        rows_read: per_partition.values().sum(),
        plan: DisplayableExecutionPlan::with_metrics(plan.as_ref())
            .indent(true)
            .to_string(),
    })
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

/// Python peer availability, and which peers ran on which lake format.
struct PythonPeers {
    /// The venv's Python, or why there is none.
    python: Result<PathBuf, String>,
    /// (format, engine) of every Python peer run that succeeded.
    ran: BTreeSet<(LakeFormat, &'static str)>,
}

/// Runs everything on one generated dataset.
async fn bench_dataset(
    args: &Args,
    suite: &mut Suite,
    dataset: &Dataset,
    config: &GenConfig,
    py: &mut PythonPeers,
    work: &Path,
) -> BenchResult<()> {
    let ds = DatasetKey {
        lake: config.lake,
        sf: config.sf,
        tail_share: config.tail_share,
    };
    let main_tp = args.main_partitions();
    let queries = queries::all();
    let ctxs: BTreeMap<usize, SessionContext> = args
        .target_partitions
        .iter()
        .map(|tp| (*tp, ctx_with(&dataset.store, *tp)))
        .collect();
    let ctx = &ctxs[&main_tp];
    // the same store through the cluster source and the RPC test server on loopback
    let served = cluster::ServedStore::start(&dataset.store, main_tp).await?;

    // correctness: a union read sees every live row, through either source
    for t in &dataset.tables {
        let sql = format!("SELECT count(*) FROM {}", union_name(&t.table));
        for (source, ctx) in [("LocalStore", ctx), ("cluster", &served.ctx)] {
            let batches = ctx
                .sql(&sql)
                .await
                .context(|| sql.clone())?
                .collect()
                .await
                .context(|| sql.clone())?;
            let n = count_value(&batches);
            if n != Some(t.live_rows as i64) {
                suite.problems.push(format!(
                    "{ds}: {} union count through the {source} source {n:?} != {} live rows written",
                    t.table, t.live_rows
                ));
            }
        }
    }
    let all_tiered = |q: &Query| {
        q.tables
            .iter()
            .all(|(t, _)| dataset.table(t).is_some_and(|s| s.snapshot_id.is_some()))
    };

    // ListingTable peers over the same files, only meaningful when everything is in
    // the lake. They get their own context: DataFusion's footer cache is keyed by path,
    // and the two sides describe the same files with different modification times, so
    // sharing one cache would make each evict the other's footers on every run.
    let mut lake_files = BTreeMap::new();
    let listing_ctx = ctx_with(&dataset.store, main_tp);
    if config.tail_share == 0.0 {
        for table in queries::TABLES {
            let f = peers::lake_files(&dataset.store, table).await?;
            let schema = generate::table_schema(table)?;
            peers::register_listing(&listing_ctx, &listing_name(table), &f, schema)?;
            lake_files.insert(table, f);
        }
    }

    for q in &queries {
        eprintln!("  {ds}: {}", q.name);
        let mut engines: Vec<Engine> = ctxs
            .iter()
            .map(|(tp, c)| Engine::new("union", c, q.render(union_name), *tp))
            .collect();
        engines.push(Engine::new(
            "cluster",
            &served.ctx,
            q.render(union_name),
            main_tp,
        ));
        if all_tiered(q) {
            engines.push(Engine::new("lake_only", ctx, q.render(lake_name), main_tp));
        }
        if !lake_files.is_empty() {
            let sql = q.render(listing_name);
            engines.push(Engine::new("listing_table", &listing_ctx, sql, main_tp));
        }
        let timings = time_interleaved(
            &engines,
            args.runs,
            args.warmup,
            std::time::Duration::from_millis(args.min_time_ms),
        )
        .await;
        for (engine, r) in engines.iter().zip(timings) {
            suite.record(ds, q.name, engine.name, engine.target_partitions, r);
        }
    }

    // peak memory of PK table scans vs the tail
    for (table, query) in [("customer", "pk_scan_customer"), ("part", "pk_scan_part")] {
        let Some(q) = queries.iter().find(|q| q.name == query) else {
            continue;
        };
        let Some(stats) = dataset.table(table) else {
            continue;
        };
        let union_peak = peak_heap(ctx, &q.render(union_name)).await?;
        let lake_peak = if stats.snapshot_id.is_some() {
            Some(peak_heap(ctx, &q.render(lake_name)).await?)
        } else {
            None
        };
        suite.memory.push(MemoryPoint {
            lake: ds.lake,
            sf: ds.sf,
            tail_share: ds.tail_share,
            table: table.to_string(),
            tail_rows: stats.tail_rows,
            union_peak_bytes: union_peak,
            lake_only_peak_bytes: lake_peak,
        });
    }

    // point lookup: buckets with rows read
    if let Some(q) = queries.iter().find(|q| q.name == "point_lookup") {
        let finding =
            point_lookup_finding(ctx, &q.render(union_name), ds, config.buckets()).await?;
        suite.lookups.push(finding);
    }

    // Python peers on the same files (ListingTable ran with the queries above)
    if config.tail_share == 0.0
        && let Ok(python) = py.python.clone()
    {
        let specs = python_specs(args, dataset, config, &queries, &lake_files).await?;
        for (engine, spec) in specs {
            let script = format!("peer_{engine}.py");
            eprintln!("  {ds}: peer {engine}");
            match peers::run_python(&python, &script, &spec, work) {
                Ok(out) => {
                    py.ran.insert((ds.lake, engine));
                    for q in &queries {
                        let name = q.name;
                        match (
                            &out["queries"][name],
                            &out["not_supported"][name],
                            &out["errors"][name],
                        ) {
                            (Value::Object(o), _, _) => {
                                let samples: Vec<f64> = o["samples_ms"]
                                    .as_array()
                                    .map(|a| a.iter().filter_map(Value::as_f64).collect())
                                    .unwrap_or_default();
                                let rows = o["rows"].as_u64().unwrap_or(0) as usize;
                                let t = Timing::from_samples(samples, rows);
                                suite.record(ds, name, engine, main_tp, Ok(t));
                            }
                            (_, Value::String(why), _) => {
                                suite.record_not_supported(ds, name, engine, main_tp, why.clone())
                            }
                            (_, _, Value::String(e)) => {
                                suite.record(ds, name, engine, main_tp, Err(e.clone().into()))
                            }
                            _ => suite.record(ds, name, engine, main_tp, Err("no result".into())),
                        }
                    }
                }
                Err(e) => {
                    for q in &queries {
                        suite.record(ds, q.name, engine, main_tp, Err(e.to_string().into()));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The Python peers of a tail-0 dataset, each with its spec: DuckDB over the lake
/// files the ListingTable peer read, then the format's own Python reader
/// (`peer_<engine>.py`).
async fn python_specs(
    args: &Args,
    dataset: &Dataset,
    config: &GenConfig,
    queries: &[Query],
    lake_files: &BTreeMap<&str, Vec<String>>,
) -> BenchResult<Vec<(&'static str, Value)>> {
    let main_tp = args.main_partitions();
    let bare = |t: &str| t.to_string();
    let columns = |t: &str| -> BenchResult<Vec<String>> {
        Ok(generate::table_schema(t)?
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect())
    };
    let tables: serde_json::Map<String, Value> = lake_files
        .iter()
        .map(|(t, f)| -> BenchResult<(String, Value)> {
            Ok((
                t.to_string(),
                json!({"files": f, "pk": queries::is_pk_table(t), "columns": columns(t)?}),
            ))
        })
        .collect::<BenchResult<_>>()?;
    // The queries as the format readers' specs list them: SQL over bare table names,
    // with the columns each table is read with (the readers' projection).
    let reader_queries: Vec<Value> = queries
        .iter()
        .map(|q| {
            json!({
                "name": q.name, "sql": q.render(bare),
                "tables": q.tables.iter().map(|(t, c)| (t.to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
            })
        })
        .collect();
    let duck_spec = json!({
        "lake": config.lake.name(),
        "threads": main_tp, "runs": args.runs, "warmup": args.warmup,
        "tables": tables,
        "queries": queries.iter().map(|q| json!({"name": q.name, "sql": q.render(bare)})).collect::<Vec<_>>(),
    });
    let reader_spec = match config.lake {
        LakeFormat::Paimon => json!({
            "warehouse": dataset.root.join(config.lake.warehouse()), "database": DATABASE,
            "threads": main_tp, "runs": args.runs, "warmup": args.warmup,
            "queries": reader_queries,
        }),
        LakeFormat::Iceberg => {
            let mut tables = serde_json::Map::new();
            for table in queries::TABLES {
                if let Some((metadata, snapshot_id)) =
                    peers::iceberg_metadata(&dataset.store, table).await?
                {
                    tables.insert(
                        table.to_string(),
                        json!({"metadata": metadata, "snapshot_id": snapshot_id}),
                    );
                }
            }
            json!({
                "tables": tables,
                "threads": main_tp, "runs": args.runs, "warmup": args.warmup,
                "queries": reader_queries,
            })
        }
    };
    Ok(vec![
        ("duckdb", duck_spec),
        (config.lake.python_peer(), reader_spec),
    ])
}

/// Lets the machine settle after a dataset was written, before anything is timed: the
/// kernel writes the new files' dirty pages back 30 s after they were written (often
/// hundreds of MiB), and the allocator returns the generator's freed memory after its
/// purge delay; either would otherwise land in the middle of the timed runs.
async fn settle_after_load() {
    if let Err(e) = std::process::Command::new("sync").status() {
        eprintln!("  sync failed ({e}); timings may include disk write-back");
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
}

async fn run(args: &Args) -> BenchResult<Suite> {
    let data_root = args
        .data_dir
        .clone()
        .unwrap_or_else(|| args.out.join("data"));
    let py = if args.skip_python {
        Err("skipped (--skip-python)".to_string())
    } else {
        peers::python()
    };
    let mut py = PythonPeers {
        python: py,
        ran: BTreeSet::new(),
    };
    let mut suite = Suite {
        machine: machine(),
        config: json!({
            "sf": args.sf, "tail_shares": args.tail_shares,
            "other_sf_tail_shares": args.other_sf_tail_shares, "runs": args.runs,
            "min_time_ms": args.min_time_ms, "warmup": args.warmup, "target_partitions": args.target_partitions,
            "update_rate": args.update_rate, "delete_rate": args.delete_rate,
            "seed": args.seed, "decode_rows": args.decode_rows, "smoke": args.smoke,
            "skip_python": args.skip_python,
            "lake_formats": args.lake_formats.iter().map(|f| f.name()).collect::<Vec<_>>(),
        }),
        queries: queries::all(),
        datasets: Vec::new(),
        measurements: Vec::new(),
        memory: Vec::new(),
        lookups: Vec::new(),
        decode: Vec::new(),
        peers: Vec::new(),
        problems: Vec::new(),
        planning: None,
        key_lookup: None,
        targets: Vec::new(),
    };
    for (i, sf) in args.sf.iter().enumerate() {
        let shares = if i == 0 {
            &args.tail_shares
        } else {
            &args.other_sf_tail_shares
        };
        for share in shares {
            // The formats of one (sf, share) run back to back, so the machine's drift
            // between them (which the cross-format ratios compare) is the smallest.
            for lake in &args.lake_formats {
                let config = GenConfig {
                    sf: *sf,
                    tail_share: *share,
                    update_rate: args.update_rate,
                    delete_rate: args.delete_rate,
                    seed: args.seed,
                    lake: *lake,
                    compression: "ZSTD",
                    lake_rounds: 1,
                };
                let root = data_root.join(format!("{}-sf{sf}-tail{share}", lake.name()));
                if root.exists() {
                    std::fs::remove_dir_all(&root)
                        .context(|| format!("removing {}", root.display()))?;
                }
                eprintln!("generating {} (sf {sf}, tail {share})", root.display());
                let dataset = generate::generate(&root, &config).await?;
                eprintln!("  loaded in {:.1}s", dataset.seconds);
                settle_after_load().await;
                let mut lake_files = BTreeMap::new();
                for table in queries::TABLES {
                    lake_files.insert(
                        table.to_string(),
                        peers::lake_files(&dataset.store, table).await?.len(),
                    );
                }
                suite.datasets.push(DatasetInfo {
                    sf: *sf,
                    tail_share: *share,
                    lake: *lake,
                    buckets: config.buckets(),
                    load_seconds: dataset.seconds,
                    tables: dataset.tables.clone(),
                    lake_files,
                    disk_bytes: dir_size(&root),
                });
                let work = data_root.join("work");
                if let Err(e) =
                    bench_dataset(args, &mut suite, &dataset, &config, &mut py, &work).await
                {
                    suite
                        .problems
                        .push(format!("{lake} sf {sf} tail {share}: {e}"));
                }
                drop(dataset);
                if !args.keep_data {
                    let _ = std::fs::remove_dir_all(&root);
                }
            }
        }
    }

    // log tail decode: ZSTD and LZ4_FRAME tables with the same rows
    let decode_sf = args.sf.iter().copied().fold(0.0, f64::max);
    let root = data_root.join("decode");
    if root.exists() {
        std::fs::remove_dir_all(&root).context(|| format!("removing {}", root.display()))?;
    }
    eprintln!("log decode benchmark ({} rows)", args.decode_rows);
    let (store, _) = generate::generate_decode_tables(&root, decode_sf, args.decode_rows).await?;
    for (table, codec) in [("lineitem_zstd", "ZSTD"), ("lineitem_lz4", "LZ4_FRAME")] {
        match peers::decode_bench(&store, table, codec, args.runs.max(3), args.warmup.max(1)).await
        {
            Ok(r) => suite.decode.push(r),
            Err(e) => suite.problems.push(format!("log decode {table}: {e}")),
        }
    }
    drop(store);

    // planning a 64-bucket table: LocalStore vs cluster source
    let planning_root = data_root.join("planning");
    if planning_root.exists() {
        std::fs::remove_dir_all(&planning_root)
            .context(|| format!("removing {}", planning_root.display()))?;
    }
    eprintln!("planning benchmark ({} buckets)", cluster::PLANNING_BUCKETS);
    match cluster::planning_bench(&planning_root, args.runs.max(5), args.warmup.max(1)).await {
        Ok(p) => suite.planning = Some(p),
        Err(e) => suite.problems.push(format!("planning benchmark: {e}")),
    }
    if !args.keep_data {
        let _ = std::fs::remove_dir_all(&planning_root);
    }

    // point lookups on a cluster: SQL vs fluss-rs's Lookuper
    let lookup_root = data_root.join("key_lookup");
    if lookup_root.exists() {
        std::fs::remove_dir_all(&lookup_root)
            .context(|| format!("removing {}", lookup_root.display()))?;
    }
    let lookup_rows = if args.smoke {
        2_000
    } else {
        cluster::KEY_LOOKUP_ROWS
    };
    eprintln!("key lookup benchmark ({lookup_rows} rows)");
    match cluster::key_lookup_bench(
        &lookup_root,
        lookup_rows,
        args.runs.max(50),
        args.warmup.max(5),
    )
    .await
    {
        Ok(l) => suite.key_lookup = Some(l),
        Err(e) => suite.problems.push(format!("key lookup benchmark: {e}")),
    }
    if !args.keep_data {
        let _ = std::fs::remove_dir_all(&lookup_root);
    }
    if !args.keep_data {
        // only what this run created; the data directory itself only when empty
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(data_root.join("work"));
        let _ = std::fs::remove_dir(&data_root);
    }

    let ran = |lake: LakeFormat, engine: &str| {
        suite
            .measurements
            .iter()
            .any(|m| m.lake == lake && m.engine == engine && m.timing.is_some())
    };
    let mut peers = vec![PeerStatus {
        name: "arrow_ipc".into(),
        lake: None,
        ran: !suite.decode.is_empty(),
        note: "arrow-ipc read_record_batch on every log batch's Arrow message".into(),
    }];
    for lake in &args.lake_formats {
        let lake = *lake;
        peers.push(PeerStatus {
            name: "listing_table".into(),
            lake: Some(lake),
            ran: ran(lake, "listing_table"),
            note: format!(
                "DataFusion ListingTable over the {} snapshot's parquet data files (tail share 0)",
                lake.title()
            ),
        });
        let reader = match lake {
            LakeFormat::Paimon => {
                "pypaimon reads the lake tables (projection, merge-on-read) into Arrow; DuckDB runs the SQL"
            }
            LakeFormat::Iceberg => {
                "pyiceberg reads the snapshot (StaticTable.from_metadata, projected scan().to_arrow()) into Arrow; DuckDB runs the SQL. \
                 Tables with equality-delete files (the primary-key tables) are not supported by pyiceberg"
            }
        };
        for (name, note) in [
            (
                "duckdb",
                format!(
                    "DuckDB read_parquet over the same {} parquet files (Python duckdb)",
                    lake.title()
                ),
            ),
            (lake.python_peer(), reader.to_string()),
        ] {
            peers.push(PeerStatus {
                name: name.into(),
                lake: Some(lake),
                ran: py.ran.contains(&(lake, name)) && ran(lake, name),
                note: match &py.python {
                    Ok(_) => note,
                    Err(why) => format!("did not run: {why}"),
                },
            });
        }
    }
    suite.peers = peers;
    Ok(suite)
}

/// Checks a smoke run: for every lake format, every query ran on the union read and
/// on every peer that can run (a Python peer may instead report a query as not
/// supported, as pyiceberg does for equality deletes).
fn smoke_check(args: &Args, suite: &Suite, out: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    let names: HashSet<&str> = suite.queries.iter().map(|q| q.name).collect();
    for lake in &args.lake_formats {
        let lake = *lake;
        for engine in [
            "union",
            "lake_only",
            "listing_table",
            "duckdb",
            lake.python_peer(),
        ] {
            let python_peer = matches!(engine, "duckdb") || engine == lake.python_peer();
            if python_peer
                && suite.peers.iter().any(|p| {
                    p.lake == Some(lake) && p.name == engine && p.note.starts_with("did not run")
                })
            {
                continue;
            }
            for q in &names {
                let accounted = suite.measurements.iter().any(|m| {
                    m.lake == lake
                        && m.engine == engine
                        && m.query == *q
                        && (m.timing.is_some() || (python_peer && m.not_supported.is_some()))
                });
                if !accounted {
                    missing.push(format!("query {q} did not run on {engine} ({lake})"));
                }
            }
        }
    }
    if suite.decode.len() != 2 {
        missing.push("the log decode benchmark did not run for both codecs".into());
    }
    for f in ["report.md", "results.json"] {
        if !out.join(f).exists() {
            missing.push(format!("{f} was not written"));
        }
    }
    missing
}

/// `--tpch-distributed`: writes `tpch-distributed.md` and `tpch-distributed.json`.
async fn run_tpch_distributed(args: &Args, workers: usize) -> BenchResult<()> {
    std::fs::create_dir_all(&args.out).context(|| format!("creating {}", args.out.display()))?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| args.out.join("data"));
    let run_args = distributed::DistributedArgs {
        sf: *args.sf.first().ok_or("no --sf")?,
        tail_share: *args
            .tpch_tail_shares
            .first()
            .ok_or("no --tpch-tail-shares")?,
        lake: *args.lake_formats.first().ok_or("no --lake-formats")?,
        runs: args.runs,
        warmup: args.warmup,
        target_partitions: args.main_partitions(),
        workers,
        data_dir: data_dir.clone(),
        queries: args.tpch_queries.clone(),
        options: args.distributed_option.clone(),
        task_bytes: args.worker_task_bytes as u64,
        in_process: args.in_process_workers,
        plans_dir: args.out.join("tpch-distributed-plans"),
    };
    let result = distributed::run(&run_args).await;
    if !args.keep_data && data_dir.exists() {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    let run = result?;
    write_report(&args.out, "tpch-distributed", &run, distributed::report)
}

/// Writes `<name>.md` (by `report`, given the command that ran) and `<name>.json`
/// of `run` into `out`.
fn write_report<R: serde::Serialize>(
    out: &std::path::Path,
    name: &str,
    run: &R,
    report: impl Fn(&R, &str) -> String,
) -> BenchResult<()> {
    let command: Vec<String> = std::env::args().collect();
    let command = format!(
        "cargo run --release --bin fluss-bench -- {}",
        command.get(1..).unwrap_or_default().join(" ")
    );
    let md_path = out.join(format!("{name}.md"));
    std::fs::write(&md_path, report(run, &command))
        .context(|| format!("writing {}", md_path.display()))?;
    let json = serde_json::to_string_pretty(run).context(|| "serializing".into())?;
    let json_path = out.join(format!("{name}.json"));
    std::fs::write(&json_path, json).context(|| format!("writing {}", json_path.display()))?;
    eprintln!("report: {}", md_path.display());
    Ok(())
}

/// `--tpch`: generates, checks and times; writes `tpch.md` and `tpch.json`.
async fn run_tpch(args: &Args) -> BenchResult<()> {
    std::fs::create_dir_all(&args.out).context(|| format!("creating {}", args.out.display()))?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| args.out.join("data"));
    let sf = *args.sf.first().ok_or("no --sf")?;
    let lake = *args.lake_formats.first().ok_or("no --lake-formats")?;
    let tpch_args = tpch::TpchArgs {
        sf,
        tail_shares: &args.tpch_tail_shares,
        lake,
        runs: args.runs,
        warmup: args.warmup,
        target_partitions: args.main_partitions(),
        update_rate: args.update_rate,
        delete_rate: args.delete_rate,
        seed: args.seed,
        data_dir: data_dir.clone(),
        fresh_runs: args.tpch_fresh_runs,
        queries: args.tpch_queries.clone(),
        flink: args
            .tpch_flink
            .then_some((args.flink_tail_share, args.flink_runs)),
    };
    let result = tpch::run_tpch(&tpch_args).await;
    if !args.keep_data && data_dir.exists() {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    let run = result?;
    write_report(&args.out, "tpch", &run, tpch::report)
}

fn main() {
    fluss_alloc::delay_mimalloc_purge(std::time::Duration::from_secs(1));
    let mut args = Args::parse();
    args.apply_smoke();
    // one dataset per format: a format given twice would be measured twice
    args.lake_formats.sort();
    args.lake_formats.dedup();
    if args.sf.is_empty()
        || args.tail_shares.is_empty()
        || args.target_partitions.is_empty()
        || args.lake_formats.is_empty()
    {
        eprintln!(
            "fluss-bench: --sf, --tail-shares, --target-partitions and --lake-formats must not be empty"
        );
        std::process::exit(2);
    }
    let started = Instant::now();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fluss-bench: cannot start tokio: {e}");
            std::process::exit(1);
        }
    };
    if args.vs_flink {
        let sf = args.sf[0];
        match runtime.block_on(flink::run(
            sf,
            args.flink_tail_share,
            args.warmup,
            args.runs,
            &args.out,
        )) {
            Ok(_) => eprintln!("report: {}", args.out.join("report.md").display()),
            Err(e) => {
                eprintln!("fluss-bench: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    if args.key_lookups {
        let root = args.out.join("key_lookup");
        let _ = std::fs::remove_dir_all(&root);
        let bench = cluster::key_lookup_bench(
            &root,
            cluster::KEY_LOOKUP_ROWS,
            args.runs.max(50),
            args.warmup.max(5),
        );
        let result = runtime.block_on(bench);
        let _ = std::fs::remove_dir_all(&root);
        match result.map(|r| serde_json::to_string_pretty(&r)) {
            Ok(Ok(json)) => println!("{json}"),
            Ok(Err(e)) => eprintln!("fluss-bench: {e}"),
            Err(e) => {
                eprintln!("fluss-bench: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    if let Some(workers) = args.tpch_distributed {
        if let Err(e) = runtime.block_on(run_tpch_distributed(&args, workers)) {
            eprintln!("fluss-bench: {e}");
            std::process::exit(1);
        }
        return;
    }
    if args.tpch {
        if let Err(e) = runtime.block_on(run_tpch(&args)) {
            eprintln!("fluss-bench: {e}");
            std::process::exit(1);
        }
        return;
    }
    let result = runtime.block_on(run(&args));
    let mut suite = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fluss-bench: {e}");
            std::process::exit(1);
        }
    };
    suite.targets = report::evaluate(&suite);
    suite.machine.insert(
        "suite_seconds".into(),
        format!("{:.0}", started.elapsed().as_secs_f64()),
    );
    if let Err(e) = report::write(&suite, &args.out) {
        eprintln!("fluss-bench: writing the report: {e}");
        std::process::exit(1);
    }
    for t in &suite.targets {
        eprintln!(
            "target {:<50} {:>6}  {}",
            t.label(),
            match t.pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "n/a",
            },
            t.detail
        );
    }
    eprintln!("report: {}", args.out.join("report.md").display());
    let mut problems = suite.problems.clone();
    if args.smoke {
        problems.extend(smoke_check(&args, &suite, &args.out));
    }
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("fluss-bench: problem: {p}");
        }
        std::process::exit(1);
    }
}
