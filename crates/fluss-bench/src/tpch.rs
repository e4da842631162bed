//! TPC-H's 22 queries through union read (`fluss-bench --tpch`): all 8 tables in a
//! LocalStore as Fluss holds them, against the same engine on the merged contents as
//! plain parquet.
//!
//! | table | kind | key | tail |
//! |---|---|---|---|
//! | `lineitem` | log | bucket key `l_orderkey` | the last share of rows appended |
//! | `orders`, `customer`, `part`, `partsupp`, `supplier` | primary key | TPC-H key (`partsupp` bucketed by `ps_partkey`) | new keys, updates that change values, deletes of tiered keys |
//! | `nation`, `region` | primary key | TPC-H key | comment updates |
//!
//! Primary-key lakes are tiered in two rounds, so each bucket holds two sorted runs as
//! a table tiered over time does. The baseline is every table's union-read contents
//! written once as ZSTD parquet (the lake files' codec, the writer's default row
//! groups) and read through `ListingTable`: the ratio then measures union read, not
//! codecs. Every query's answer on the union is checked against the baseline's before
//! anything is timed, so a speed-up can never change a result. The lake-only read
//! (`t$lake`) is timed as a peer; its answers differ by the tail, so it is not checked.
//! DuckDB reads the same merged parquet files (`python/peer_duckdb.py`, when the venv
//! exists); its row counts are checked against ours.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::TableReference;
use datafusion::config::TableParquetOptions;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use fluss_datafusion::FlussCatalog;
use fluss_datafusion::source::LocalStore;
use serde::Serialize;

use crate::generate::{
    BenchResult, Context, DATABASE, GenConfig, LakeFormat, TableStats, load_log_table,
    load_pk_table, open_bench_store,
};
use crate::{Engine, Timing, time_interleaved};

/// A TPC-H table as the generator writes it.
pub(crate) struct TpchTable {
    pub(crate) name: &'static str,
    /// Primary key (PK tables) or bucket key (the log table).
    pub(crate) keys: &'static [&'static str],
    /// Bucket key of PK tables: the primary key, except `partsupp`'s, which is
    /// bucketed by `ps_partkey` alone (Fluss's Iceberg key encoder takes exactly one
    /// bucket key field: `IcebergKeyEncoder`).
    pub(crate) bucket_keys: &'static [&'static str],
    pub(crate) primary_key: bool,
    /// The decimal column a tail update changes, if the table has one.
    pub(crate) value: Option<&'static str>,
    /// The comment column a tail update marks.
    pub(crate) comment: &'static str,
}

pub(crate) const TABLES: [TpchTable; 8] = [
    TpchTable {
        name: "lineitem",
        keys: &["l_orderkey"],
        bucket_keys: &["l_orderkey"],
        primary_key: false,
        value: None,
        comment: "l_comment",
    },
    TpchTable {
        name: "orders",
        keys: &["o_orderkey"],
        bucket_keys: &["o_orderkey"],
        primary_key: true,
        value: Some("o_totalprice"),
        comment: "o_comment",
    },
    TpchTable {
        name: "customer",
        keys: &["c_custkey"],
        bucket_keys: &["c_custkey"],
        primary_key: true,
        value: Some("c_acctbal"),
        comment: "c_comment",
    },
    TpchTable {
        name: "part",
        keys: &["p_partkey"],
        bucket_keys: &["p_partkey"],
        primary_key: true,
        value: Some("p_retailprice"),
        comment: "p_comment",
    },
    TpchTable {
        name: "partsupp",
        keys: &["ps_partkey", "ps_suppkey"],
        bucket_keys: &["ps_partkey"],
        primary_key: true,
        value: Some("ps_supplycost"),
        comment: "ps_comment",
    },
    TpchTable {
        name: "supplier",
        keys: &["s_suppkey"],
        bucket_keys: &["s_suppkey"],
        primary_key: true,
        value: Some("s_acctbal"),
        comment: "s_comment",
    },
    TpchTable {
        name: "nation",
        keys: &["n_nationkey"],
        bucket_keys: &["n_nationkey"],
        primary_key: true,
        value: None,
        comment: "n_comment",
    },
    TpchTable {
        name: "region",
        keys: &["r_regionkey"],
        bucket_keys: &["r_regionkey"],
        primary_key: true,
        value: None,
        comment: "r_comment",
    },
];

/// Generates the 8 tables into a new LocalStore at `root`; returns the store.
pub async fn generate_tpch(
    root: &Path,
    config: &GenConfig,
) -> BenchResult<(Arc<LocalStore>, Vec<TableStats>)> {
    let store = open_bench_store(root).await?;
    // the fresh-process baseline's database: the shell only opens existing ones
    store
        .create_database(FRESH_BASELINE_DATABASE, None, true)
        .await
        .context(|| "creating the baseline's database".into())?;
    let mut stats = Vec::new();
    for (i, table) in TABLES.iter().enumerate() {
        let s = if table.primary_key {
            load_pk_table(
                &store,
                table.name,
                table.keys,
                table.bucket_keys,
                table.value,
                table.comment,
                config,
                config.seed ^ (i as u64 + 1),
            )
            .await?
        } else {
            load_log_table(&store, table.name, table.keys[0], config).await?
        };
        stats.push(s);
    }
    Ok((store, stats))
}

/// The configuration of every TPC-H session: `target_partitions`, and numeric
/// literals as exact decimals, as `FlussSession` (the cluster and fresh-process runs),
/// DuckDB and Flink read them, so every peer answers the same query.
pub(crate) fn tpch_config(target_partitions: usize) -> SessionConfig {
    let mut config = SessionConfig::new().with_target_partitions(target_partitions);
    config.options_mut().sql_parser.parse_float_as_decimal = true;
    config
}

/// A session whose bare table names are the store's union tables.
pub fn union_context(store: &Arc<LocalStore>, target_partitions: usize) -> SessionContext {
    let config = tpch_config(target_partitions).with_default_catalog_and_schema("fluss", DATABASE);
    let ctx = SessionContext::new_with_config(config);
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    ctx
}

/// A session whose bare table names are the store's lake-only tables (`t$lake`).
async fn lake_context(
    union: &SessionContext,
    target_partitions: usize,
) -> BenchResult<SessionContext> {
    let ctx = SessionContext::new_with_config(tpch_config(target_partitions));
    for table in &TABLES {
        let lake = format!("{}$lake", table.name);
        let provider = union
            .table_provider(TableReference::full("fluss", DATABASE, lake.as_str()))
            .await
            .context(|| format!("opening {lake}"))?;
        ctx.register_table(table.name, provider)
            .context(|| format!("registering {lake}"))?;
    }
    Ok(ctx)
}

/// Writes every table's union-read contents as ZSTD parquet under `dir/<table>/`
/// and returns a session reading them through `ListingTable`.
async fn parquet_baseline(
    union: &SessionContext,
    dir: &Path,
    target_partitions: usize,
) -> BenchResult<SessionContext> {
    let ctx = SessionContext::new_with_config(tpch_config(target_partitions));
    for table in &TABLES {
        let path = dir.join(table.name);
        let location = format!("{}/", path.display());
        let mut options = TableParquetOptions::default();
        // the lake files' codec (Paimon's `file.compression` default, our Iceberg writer)
        options.global.compression = Some("zstd(1)".to_string());
        union
            .table(table.name)
            .await
            .context(|| format!("reading {}", table.name))?
            .write_parquet(&location, DataFrameWriteOptions::new(), Some(options))
            .await
            .context(|| format!("writing {location}"))?;
        ctx.register_parquet(table.name, &location, ParquetReadOptions::default())
            .await
            .context(|| format!("registering {location}"))?;
    }
    Ok(ctx)
}

/// DuckDB's timings of every query over the merged parquet under `dir`, by query
/// name (run with the venv's `python`).
fn duckdb_timings(
    python: &Path,
    dir: &Path,
    args: &TpchArgs<'_>,
    work: &Path,
) -> BenchResult<std::collections::HashMap<String, Timing>> {
    let mut tables = serde_json::Map::new();
    for table in &TABLES {
        let mut files: Vec<String> = std::fs::read_dir(dir.join(table.name))
            .context(|| format!("listing {}", dir.join(table.name).display()))?
            .filter_map(|e| e.ok().map(|e| e.path().display().to_string()))
            .filter(|p| p.ends_with(".parquet"))
            .collect();
        files.sort();
        let columns: Vec<String> = crate::generate::table_schema(table.name)?
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        tables.insert(
            table.name.to_string(),
            serde_json::json!({"files": files, "pk": false, "columns": columns}),
        );
    }
    let spec = serde_json::json!({
        "lake": "parquet",
        "threads": args.target_partitions,
        "runs": args.runs.max(1),
        "warmup": args.warmup,
        "tables": tables,
        "queries": queries()
            .iter()
            .map(|(name, sql)| serde_json::json!({"name": name, "sql": sql}))
            .collect::<Vec<_>>(),
    });
    let out = crate::peers::run_python(python, "peer_duckdb.py", &spec, work)?;
    if let Some(errors) = out["errors"].as_object().filter(|e| !e.is_empty()) {
        return Err(format!("DuckDB failed on {errors:?}").into());
    }
    let mut timings = std::collections::HashMap::new();
    if let Some(queries) = out["queries"].as_object() {
        for (name, q) in queries {
            let samples: Vec<f64> = q["samples_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
                .unwrap_or_default();
            let rows = q["rows"].as_u64().unwrap_or(0) as usize;
            timings.insert(name.clone(), Timing::from_samples(samples, rows));
        }
    }
    Ok(timings)
}

/// A query's answer as sorted lines of text: the comparison never depends on the
/// order of ties or on batch boundaries.
pub(crate) async fn answer(ctx: &SessionContext, sql: &str) -> BenchResult<Vec<String>> {
    let batches = ctx
        .sql(sql)
        .await
        .context(|| format!("planning {sql}"))?
        .collect()
        .await
        .context(|| format!("running {sql}"))?;
    let mut lines: Vec<String> = format_rows(&batches)?
        .into_iter()
        .map(|row| row.join("|"))
        .collect();
    lines.sort();
    Ok(lines)
}

/// Rows as text cells, in order (NULL as `NULL`).
pub(crate) fn format_rows(batches: &[RecordBatch]) -> BenchResult<Vec<Vec<String>>> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .context(|| "formatting".into())?;
        for row in 0..batch.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .map(|f| f.value(row).to_string())
                    .collect(),
            );
        }
    }
    Ok(rows)
}

/// One query at one tail share.
#[derive(Debug, Serialize)]
pub struct TpchResult {
    /// `q1` … `q22`.
    pub query: String,
    /// Share of each table in the tail.
    pub tail_share: f64,
    /// Rows of the answer (the same on the union and the baseline).
    pub rows: usize,
    /// Union read, warm session.
    pub union: Timing,
    /// The same engine over the merged contents as parquet.
    pub parquet: Timing,
    /// Lake-only (`t$lake`; answers without the tail).
    pub lake_only: Option<Timing>,
    /// DuckDB over the same merged parquet files (`peer_duckdb.py`; `None` without
    /// the Python venv). Its row count is checked against ours.
    pub duckdb: Option<Timing>,
    /// Union read, a fresh `fluss-sql -c` process per run (`--tpch-fresh-runs`).
    pub union_fresh: Option<Timing>,
    /// The merged parquet, a fresh `fluss-sql -c` process per run (its 8 external
    /// tables registered first, as a `-c` user would).
    pub parquet_fresh: Option<Timing>,
}

impl TpchResult {
    /// Union / parquet (medians).
    pub fn ratio(&self) -> f64 {
        self.union.median_ms / self.parquet.median_ms
    }

    /// Union / parquet in fresh processes (medians).
    pub fn fresh_ratio(&self) -> Option<f64> {
        Some(self.union_fresh.as_ref()?.median_ms / self.parquet_fresh.as_ref()?.median_ms)
    }
}

/// What `--tpch` measured.
#[derive(Debug, Serialize)]
pub struct TpchRun {
    /// TPC-H scale factor.
    pub scale_factor: f64,
    /// Lake format.
    pub lake: LakeFormat,
    /// Target partitions of every session.
    pub target_partitions: usize,
    /// Rows per table and share.
    pub tables: Vec<(f64, Vec<TableStats>)>,
    /// Every query at every share.
    pub results: Vec<TpchResult>,
    /// Planning and point-lookup costs per share (with `--tpch-fresh-runs`).
    pub fixed_costs: Vec<crate::fixed_costs::FixedCosts>,
    /// Flink's union read on a real cluster (with `--tpch-flink`).
    pub flink: Option<crate::tpch_flink::FlinkPeer>,
}

/// Geometric mean.
fn geo_mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    if n == 0 {
        f64::NAN
    } else {
        (sum / n as f64).exp()
    }
}

/// Settings of one `--tpch` run.
pub struct TpchArgs<'a> {
    /// Scale factor.
    pub sf: f64,
    /// Tail shares, each one dataset.
    pub tail_shares: &'a [f64],
    /// Lake format.
    pub lake: LakeFormat,
    /// Measured runs and warm-ups per query.
    pub runs: usize,
    /// Warm-up runs per query.
    pub warmup: usize,
    /// Target partitions.
    pub target_partitions: usize,
    /// PK tail updates and deletes (shares of the tail).
    pub update_rate: f64,
    /// PK tail deletes.
    pub delete_rate: f64,
    /// Seed of the PK tails.
    pub seed: u64,
    /// Where the stores and the baseline go.
    pub data_dir: PathBuf,
    /// Measured fresh-process runs per query (0: none).
    pub fresh_runs: usize,
    /// Only these queries (all when empty).
    pub queries: Vec<String>,
    /// Flink's union read as a peer: at this tail share, with this many measured
    /// runs per query.
    pub flink: Option<(f64, usize)>,
}

/// The 8 tables' names.
pub(crate) fn table_names() -> Vec<&'static str> {
    TABLES.iter().map(|t| t.name).collect()
}

/// Database of the fresh-process baseline's external tables (a database of the
/// store, so the shell's bare names resolve to them).
const FRESH_BASELINE_DATABASE: &str = "tpch_parquet";

/// `fluss-sql`, built beside this benchmark.
fn fluss_sql() -> BenchResult<PathBuf> {
    let exe = std::env::current_exe().context(|| "locating the benchmark".into())?;
    let shell = exe
        .parent()
        .map(|d| d.join("fluss-sql"))
        .filter(|p| p.exists())
        .ok_or("fluss-sql is not built beside fluss-bench (cargo build --release -p fluss-sql)")?;
    Ok(shell)
}

/// Wall-clock milliseconds of `runs` runs (after one warm-up) of `fluss-sql` with
/// `args`, each a new process; a failing run fails the benchmark with its stderr.
pub(crate) fn fresh_process_timing(
    shell: &Path,
    args: &[String],
    runs: usize,
    rows: usize,
) -> BenchResult<Timing> {
    let mut samples = Vec::with_capacity(runs);
    for run in 0..=runs {
        let start = Instant::now();
        let out = std::process::Command::new(shell)
            .args(args)
            .output()
            .context(|| format!("starting {}", shell.display()))?;
        let elapsed = start.elapsed().as_secs_f64() * 1000.0;
        if !out.status.success() {
            return Err(format!(
                "fluss-sql {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        if run > 0 {
            samples.push(elapsed);
        }
    }
    Ok(Timing::from_samples(samples, rows))
}

/// The shell's arguments for one query: through the union (`union`), or over the
/// merged parquet under `parquet` registered as external tables first.
pub(crate) fn fresh_process_args(store: &Path, parquet: Option<&Path>, sql: &str) -> Vec<String> {
    let mut args = vec![
        "--store".to_string(),
        store.display().to_string(),
        "--quiet".to_string(),
        "--format".to_string(),
        "csv".to_string(),
        "--database".to_string(),
    ];
    match parquet {
        None => args.push(DATABASE.to_string()),
        Some(dir) => {
            args.push(FRESH_BASELINE_DATABASE.to_string());
            for table in &TABLES {
                args.push("-c".to_string());
                args.push(format!(
                    "CREATE EXTERNAL TABLE {0} STORED AS PARQUET LOCATION '{1}/{0}/'",
                    table.name,
                    dir.display()
                ));
            }
        }
    }
    args.push("-c".to_string());
    args.push(sql.to_string());
    args
}

/// Generates, checks and times every query at every share.
pub async fn run_tpch(args: &TpchArgs<'_>) -> BenchResult<TpchRun> {
    let mut run = TpchRun {
        scale_factor: args.sf,
        lake: args.lake,
        target_partitions: args.target_partitions,
        tables: Vec::new(),
        results: Vec::new(),
        fixed_costs: Vec::new(),
        flink: None,
    };
    for &share in args.tail_shares {
        let root = args
            .data_dir
            .join(format!("tpch-{}-sf{}-tail{share}", args.lake, args.sf));
        if root.exists() {
            std::fs::remove_dir_all(&root).context(|| format!("removing {}", root.display()))?;
        }
        let config = GenConfig {
            sf: args.sf,
            tail_share: share,
            update_rate: args.update_rate,
            delete_rate: args.delete_rate,
            seed: args.seed,
            lake: args.lake,
            compression: "ZSTD",
            lake_rounds: 2,
        };
        let start = Instant::now();
        let (store, stats) = generate_tpch(&root.join("store"), &config).await?;
        eprintln!(
            "tpch: sf {} tail {share}: generated in {:.1} s",
            args.sf,
            start.elapsed().as_secs_f64()
        );
        let union = union_context(&store, args.target_partitions);
        let parquet =
            parquet_baseline(&union, &root.join("parquet"), args.target_partitions).await?;
        let lake = lake_context(&union, args.target_partitions).await?;
        // Only a missing Python skips the peer (as in the suite); a DuckDB failure
        // fails the run.
        let duckdb = match crate::peers::python() {
            Ok(python) => {
                duckdb_timings(&python, &root.join("parquet"), args, &root.join("duckdb"))?
            }
            Err(e) => {
                eprintln!("tpch: no DuckDB peer: {e}");
                Default::default()
            }
        };
        let shell = if args.fresh_runs > 0 {
            Some(fluss_sql()?)
        } else {
            None
        };
        let selected: Vec<(&'static str, &'static str)> = queries()
            .into_iter()
            .filter(|(name, _)| args.queries.is_empty() || args.queries.iter().any(|q| q == name))
            .collect();
        let mut expected = std::collections::HashMap::new();
        for &(name, sql) in &selected {
            let ours = answer(&union, sql).await?;
            let theirs = answer(&parquet, sql).await?;
            expected.insert(name.to_string(), theirs.clone());
            if ours != theirs {
                let difference = ours.iter().zip(&theirs).find(|(a, b)| a != b);
                return Err(format!(
                    "tpch {name} at tail share {share}: the union read answers {} rows, the \
                     merged parquet {} rows; first difference: {:?} vs {:?}",
                    ours.len(),
                    theirs.len(),
                    difference.map(|(a, _)| a),
                    difference.map(|(_, b)| b),
                )
                .into());
            }
            let engines = [
                Engine::new("union", &union, sql.to_string(), args.target_partitions),
                Engine::new("parquet", &parquet, sql.to_string(), args.target_partitions),
                Engine::new("lake_only", &lake, sql.to_string(), args.target_partitions),
            ];
            let mut timings =
                time_interleaved(&engines, args.runs, args.warmup, Duration::ZERO).await;
            let lake_only = timings.pop().and_then(Result::ok);
            let parquet_timing = timings.pop().ok_or("no parquet timing")??;
            let union_timing = timings.pop().ok_or("no union timing")??;
            let duckdb = duckdb.get(name).cloned();
            if let Some(d) = &duckdb
                && d.rows != ours.len()
            {
                return Err(format!(
                    "tpch {name} at tail share {share}: DuckDB answers {} rows, we {}",
                    d.rows,
                    ours.len()
                )
                .into());
            }
            let (union_fresh, parquet_fresh) = match &shell {
                Some(shell) => {
                    let store = root.join("store");
                    let parquet = root.join("parquet");
                    (
                        Some(fresh_process_timing(
                            shell,
                            &fresh_process_args(&store, None, sql),
                            args.fresh_runs,
                            ours.len(),
                        )?),
                        Some(fresh_process_timing(
                            shell,
                            &fresh_process_args(&store, Some(&parquet), sql),
                            args.fresh_runs,
                            ours.len(),
                        )?),
                    )
                }
                None => (None, None),
            };
            let result = TpchResult {
                query: name.to_string(),
                tail_share: share,
                rows: ours.len(),
                union: union_timing,
                parquet: parquet_timing,
                lake_only,
                duckdb,
                union_fresh,
                parquet_fresh,
            };
            eprintln!(
                "tpch: {name} tail {share}: union {:.1} ms, parquet {:.1} ms ({:.2}x)",
                result.union.median_ms,
                result.parquet.median_ms,
                result.ratio()
            );
            run.results.push(result);
        }
        if let Some(shell) = &shell {
            let costs = crate::fixed_costs::measure(
                shell,
                &root,
                args.sf,
                share,
                args.fresh_runs,
                &union,
                &parquet,
            )
            .await?;
            eprintln!(
                "tpch: tail {share}: cold planning {:.2} ms per table ({:.2}x parquet), \
                 point lookup {:.2} ms ({:.2}x parquet)",
                costs.cold_planning_per_table_ms,
                costs.cold_planning_ratio(),
                costs.point_lookup.median_ms,
                costs.point_lookup_ratio()
            );
            run.fixed_costs.push(costs);
        }
        if let Some((flink_share, flink_runs)) = args.flink
            && flink_share == share
        {
            let peer = crate::tpch_flink::run(
                &crate::tpch_flink::FlinkArgs {
                    config: &config,
                    flink_runs,
                    warmup: args.warmup,
                    runs: args.runs,
                    target_partitions: args.target_partitions,
                },
                &selected,
                &expected,
            )
            .await?;
            run.flink = Some(peer);
        }
        run.tables.push((share, stats));
    }
    if let Some((share, _)) = args.flink
        && run.flink.is_none()
    {
        return Err(format!(
            "--tpch-flink at tail share {share}, which --tpch-tail-shares does not hold"
        )
        .into());
    }
    Ok(run)
}

/// The report of a run, in Markdown.
pub fn report(run: &TpchRun, command: &str) -> String {
    let mut md = String::new();
    md.push_str(&format!(
        "# TPC-H through union read\n\nSF {}, {} lake, {} target partitions, warm sessions \
         (median ms; `fresh`: wall time of a new `fluss-sql -c` process per run, the \
         parquet one registering its 8 external tables first). `parquet` is the same \
         engine over the merged contents as ZSTD parquet (`ListingTable`); every union \
         answer equals its answer. `duckdb` is \
         DuckDB on the same parquet files (its row counts checked). `lake` reads \
         `t$lake` (no tail, so not compared).\n\nCommand: `{command}`\n\n",
        run.scale_factor, run.lake, run.target_partitions
    ));
    md.push_str(&crate::report::provenance(&crate::machine()));
    let mut shares: Vec<f64> = run.results.iter().map(|r| r.tail_share).collect();
    shares.dedup();
    for share in shares {
        let results: Vec<&TpchResult> = run
            .results
            .iter()
            .filter(|r| r.tail_share == share)
            .collect();
        let fresh = geo_mean(results.iter().filter_map(|r| r.fresh_ratio()));
        md.push_str(&format!(
            "## Tail share {share}\n\nGeometric mean union / parquet: **{:.2}x** warm, \
             **{}** in fresh processes; union / DuckDB: **{:.2}x**; parquet / DuckDB: \
             **{:.2}x**\n\n\
             | query | rows | union | parquet | duckdb | lake | union / parquet | union fresh | parquet fresh | fresh ratio |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
            geo_mean(results.iter().map(|r| r.ratio())),
            if fresh.is_nan() {
                "-".to_string()
            } else {
                format!("{fresh:.2}x")
            },
            geo_mean(
                results
                    .iter()
                    .filter_map(|r| r.duckdb.as_ref().map(|d| r.union.median_ms / d.median_ms))
            ),
            geo_mean(
                results
                    .iter()
                    .filter_map(|r| r.duckdb.as_ref().map(|d| r.parquet.median_ms / d.median_ms))
            ),
        ));
        for r in results {
            let ms = |t: &Option<Timing>| {
                t.as_ref()
                    .map_or("-".to_string(), |t| format!("{:.1}", t.median_ms))
            };
            md.push_str(&format!(
                "| {} | {} | {:.1} | {:.1} | {} | {} | {:.2}x | {} | {} | {} |\n",
                r.query,
                r.rows,
                r.union.median_ms,
                r.parquet.median_ms,
                r.duckdb
                    .as_ref()
                    .map_or("-".to_string(), |t| format!("{:.1}", t.median_ms)),
                r.lake_only
                    .as_ref()
                    .map_or("-".to_string(), |t| format!("{:.1}", t.median_ms)),
                r.ratio(),
                ms(&r.union_fresh),
                ms(&r.parquet_fresh),
                r.fresh_ratio()
                    .map_or("-".to_string(), |x| format!("{x:.2}x")),
            ));
        }
        md.push('\n');
    }
    if let Some(peer) = &run.flink {
        md.push_str(&crate::tpch_flink::report(peer));
    }
    md.push_str(&crate::fixed_costs::report(&run.fixed_costs));
    md
}

/// The 22 queries with the TPC-H specification's validation parameters (Q15's view
/// as a common table expression).
pub fn queries() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "q1",
            "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price, sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc, count(*) AS count_order FROM lineitem WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus",
        ),
        (
            "q2",
            "SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment FROM part, supplier, partsupp, nation, region WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND p_size = 15 AND p_type LIKE '%BRASS' AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'EUROPE' AND ps_supplycost = (SELECT min(ps_supplycost) FROM partsupp, supplier, nation, region WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'EUROPE') ORDER BY s_acctbal DESC, n_name, s_name, p_partkey LIMIT 100",
        ),
        (
            "q3",
            "SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority FROM customer, orders, lineitem WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15' GROUP BY l_orderkey, o_orderdate, o_shippriority ORDER BY revenue DESC, o_orderdate, l_orderkey LIMIT 10",
        ),
        (
            "q4",
            "SELECT o_orderpriority, count(*) AS order_count FROM orders WHERE o_orderdate >= DATE '1993-07-01' AND o_orderdate < DATE '1993-07-01' + INTERVAL '3' MONTH AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority ORDER BY o_orderpriority",
        ),
        (
            "q5",
            "SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue FROM customer, orders, lineitem, supplier, nation, region WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'ASIA' AND o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1994-01-01' + INTERVAL '1' YEAR GROUP BY n_name ORDER BY revenue DESC",
        ),
        (
            "q6",
            "SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
        ),
        (
            "q7",
            "SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue FROM (SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation, extract(year FROM l_shipdate) AS l_year, l_extendedprice * (1 - l_discount) AS volume FROM supplier, lineitem, orders, customer, nation n1, nation n2 WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey AND ((n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY') OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE')) AND l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31') AS shipping GROUP BY supp_nation, cust_nation, l_year ORDER BY supp_nation, cust_nation, l_year",
        ),
        (
            "q8",
            "SELECT o_year, sum(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / sum(volume) AS mkt_share FROM (SELECT extract(year FROM o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) AS volume, n2.n_name AS nation FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey AND n1.n_regionkey = r_regionkey AND r_name = 'AMERICA' AND s_nationkey = n2.n_nationkey AND o_orderdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31' AND p_type = 'ECONOMY ANODIZED STEEL') AS all_nations GROUP BY o_year ORDER BY o_year",
        ),
        (
            "q9",
            "SELECT nation, o_year, sum(amount) AS sum_profit FROM (SELECT n_name AS nation, extract(year FROM o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount FROM part, supplier, lineitem, partsupp, orders, nation WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey AND p_name LIKE '%green%') AS profit GROUP BY nation, o_year ORDER BY nation, o_year DESC",
        ),
        (
            "q10",
            "SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue, c_acctbal, n_name, c_address, c_phone, c_comment FROM customer, orders, lineitem, nation WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate >= DATE '1993-10-01' AND o_orderdate < DATE '1993-10-01' + INTERVAL '3' MONTH AND l_returnflag = 'R' AND c_nationkey = n_nationkey GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment ORDER BY revenue DESC, c_custkey LIMIT 20",
        ),
        (
            "q11",
            "SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value FROM partsupp, supplier, nation WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY' GROUP BY ps_partkey HAVING sum(ps_supplycost * ps_availqty) > (SELECT sum(ps_supplycost * ps_availqty) * 0.0001 FROM partsupp, supplier, nation WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY') ORDER BY value DESC, ps_partkey",
        ),
        (
            "q12",
            "SELECT l_shipmode, sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high_line_count, sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low_line_count FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01' AND l_receiptdate < DATE '1994-01-01' + INTERVAL '1' YEAR GROUP BY l_shipmode ORDER BY l_shipmode",
        ),
        (
            "q13",
            "SELECT c_count, count(*) AS custdist FROM (SELECT c_custkey, count(o_orderkey) AS c_count FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) AS c_orders GROUP BY c_count ORDER BY custdist DESC, c_count DESC",
        ),
        (
            "q14",
            "SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END) / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue FROM lineitem, part WHERE l_partkey = p_partkey AND l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-09-01' + INTERVAL '1' MONTH",
        ),
        (
            "q15",
            "WITH revenue0 AS (SELECT l_suppkey AS supplier_no, sum(l_extendedprice * (1 - l_discount)) AS total_revenue FROM lineitem WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-01-01' + INTERVAL '3' MONTH GROUP BY l_suppkey) SELECT s_suppkey, s_name, s_address, s_phone, total_revenue FROM supplier, revenue0 WHERE s_suppkey = supplier_no AND total_revenue = (SELECT max(total_revenue) FROM revenue0) ORDER BY s_suppkey",
        ),
        (
            "q16",
            "SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) AS supplier_cnt FROM partsupp, part WHERE p_partkey = ps_partkey AND p_brand <> 'Brand#45' AND p_type NOT LIKE 'MEDIUM POLISHED%' AND p_size IN (49, 14, 23, 45, 19, 3, 36, 9) AND ps_suppkey NOT IN (SELECT s_suppkey FROM supplier WHERE s_comment LIKE '%Customer%Complaints%') GROUP BY p_brand, p_type, p_size ORDER BY supplier_cnt DESC, p_brand, p_type, p_size",
        ),
        (
            "q17",
            "SELECT sum(l_extendedprice) / 7.0 AS avg_yearly FROM lineitem, part WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container = 'MED BOX' AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)",
        ),
        (
            "q18",
            "SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) FROM customer, orders, lineitem WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 300) AND c_custkey = o_custkey AND o_orderkey = l_orderkey GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice ORDER BY o_totalprice DESC, o_orderdate, o_orderkey LIMIT 100",
        ),
        (
            "q19",
            "SELECT sum(l_extendedprice * (1 - l_discount)) AS revenue FROM lineitem, part WHERE (p_partkey = l_partkey AND p_brand = 'Brand#12' AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG') AND l_quantity >= 1 AND l_quantity <= 1 + 10 AND p_size BETWEEN 1 AND 5 AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON') OR (p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK') AND l_quantity >= 10 AND l_quantity <= 10 + 10 AND p_size BETWEEN 1 AND 10 AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON') OR (p_partkey = l_partkey AND p_brand = 'Brand#34' AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG') AND l_quantity >= 20 AND l_quantity <= 20 + 10 AND p_size BETWEEN 1 AND 15 AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')",
        ),
        (
            "q20",
            "SELECT s_name, s_address FROM supplier, nation WHERE s_suppkey IN (SELECT ps_suppkey FROM partsupp WHERE ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'forest%') AND ps_availqty > (SELECT 0.5 * sum(l_quantity) FROM lineitem WHERE l_partkey = ps_partkey AND l_suppkey = ps_suppkey AND l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR)) AND s_nationkey = n_nationkey AND n_name = 'CANADA' ORDER BY s_name",
        ),
        (
            "q21",
            "SELECT s_name, count(*) AS numwait FROM supplier, lineitem l1, orders, nation WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey AND o_orderstatus = 'F' AND l1.l_receiptdate > l1.l_commitdate AND EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey) AND NOT EXISTS (SELECT * FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate) AND s_nationkey = n_nationkey AND n_name = 'SAUDI ARABIA' GROUP BY s_name ORDER BY numwait DESC, s_name LIMIT 100",
        ),
        (
            "q22",
            "SELECT cntrycode, count(*) AS numcust, sum(c_acctbal) AS totacctbal FROM (SELECT substring(c_phone FROM 1 FOR 2) AS cntrycode, c_acctbal FROM customer WHERE substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17') AND c_acctbal > (SELECT avg(c_acctbal) FROM customer WHERE c_acctbal > 0.00 AND substring(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17')) AND NOT EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey)) AS custsale GROUP BY cntrycode ORDER BY cntrycode",
        ),
    ]
}
