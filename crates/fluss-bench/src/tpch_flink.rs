//! Flink's union read as a peer of `--tpch` (`--tpch-flink`): the same 8 tables with
//! the same history (lake rounds, each tiered, then the tail's inserts, updates and
//! deletes) written into a real Fluss cluster through Fluss's Java client and tiered
//! by Fluss's tiering service, then TPC-H's 22 queries run by Flink's batch union read
//! and by this crate's union read through the `ClusterSource`, on the same cluster.
//!
//! Both answers are checked: ours on the cluster must equal the merged parquet
//! baseline's exactly (the cluster holds the LocalStore's rows), Flink's must agree
//! with ours row by row in the queries' order (values as text, numbers within a
//! millionth or a unit of the last decimal place: Flink's decimal scales and
//! rounding differ from DataFusion's). A Flink query that
//! fails or runs out of time is reported, not retried.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::csv::{QuoteStyle, WriterBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use fluss_datafusion::source::{ClusterOptions, ClusterSource};
use fluss_datafusion::sql::{FlussSession, SessionOptions};
use fluss_test_support::real_fluss::{FLUSS_VERSION, PAUSED_FRESHNESS, RealFluss};
use serde::Serialize;
use serde_json::json;

use crate::Timing;
use crate::flink::{call, flink_columns};
use crate::generate::{
    BenchResult, Context, GenConfig, PARTS, PkWrite, lake_parts, part_batches, pk_history,
    table_schema,
};
use crate::tpch::{TABLES, TpchTable, format_rows};

/// The harness JVM's flags for a benchmark: the full JIT (tests limit it to C1 for a
/// fast start) and room for Flink's joins.
const JVM_FLAGS: &str = "-Xmx6g -XX:MaxDirectMemorySize=2g -XX:+UseParallelGC";

/// Flink's managed memory (its joins, aggregations and sorts; split among 4 slots,
/// the query's one slot gets a quarter).
const FLINK_MANAGED_MEMORY: &str = "2g";

/// Seconds a Flink query may run before it is cancelled.
const FLINK_QUERY_TIMEOUT_S: u64 = 1800;

/// Flink on the cluster, at one tail share.
#[derive(Debug, Serialize)]
pub struct FlinkPeer {
    /// Share of each table in the tail.
    pub tail_share: f64,
    /// The Fluss release the harness runs.
    pub fluss_version: &'static str,
    /// Buckets per table on the cluster.
    pub buckets: Vec<(String, i32)>,
    /// Seconds to write and tier the 8 tables.
    pub load_seconds: f64,
    /// Every query.
    pub queries: Vec<FlinkQuery>,
}

/// One query on the cluster.
#[derive(Debug, Serialize)]
pub struct FlinkQuery {
    /// `q1` … `q22`.
    pub query: String,
    /// Flink's batch union read (time measured in the harness, rows collected there).
    pub flink: Option<Timing>,
    /// Why Flink gave no answer, if it did not.
    pub flink_error: Option<String>,
    /// Whether Flink's answer agrees with ours; the first difference otherwise.
    pub flink_difference: Option<String>,
    /// Ours through the `ClusterSource`, warm session.
    pub cluster: Timing,
}

impl FlinkQuery {
    /// Flink / ours on the cluster (medians), when Flink answered.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.flink.as_ref()?.median_ms / self.cluster.median_ms)
    }
}

/// Settings of the Flink peer.
pub struct FlinkArgs<'a> {
    /// The generator's settings of the share measured (the LocalStore's).
    pub config: &'a GenConfig,
    /// Measured Flink runs per query (after one warm-up query for the session).
    pub flink_runs: usize,
    /// Warm-up and measured runs of ours per query.
    pub warmup: usize,
    pub runs: usize,
    /// Target partitions of our session.
    pub target_partitions: usize,
}

/// Buckets of `table` on the cluster: the LocalStore's, except one for `nation` and
/// `region` (Fluss 0.9.1's batch union read waits forever on a bucket holding neither
/// lake data nor log, apache/fluss #2958, which 5 regions in 4 buckets may leave).
fn cluster_buckets(table: &TpchTable, config: &GenConfig) -> i32 {
    if matches!(table.name, "nation" | "region") {
        1
    } else {
        config.buckets()
    }
}

/// Flink's `CREATE TABLE` of a TPC-H table in the Fluss catalog `fc`.
fn create_sql(table: &TpchTable, config: &GenConfig) -> BenchResult<String> {
    let keys: &[&str] = if table.primary_key { table.keys } else { &[] };
    let mut columns = flink_columns(&table_schema(table.name)?, keys)?;
    if table.primary_key {
        columns.push(format!(
            "PRIMARY KEY ({}) NOT ENFORCED",
            table
                .keys
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let options = [
        format!("'bucket.num' = '{}'", cluster_buckets(table, config)),
        format!("'bucket.key' = '{}'", table.bucket_keys.join(",")),
        "'table.datalake.enabled' = 'true'".to_string(),
        format!("'table.datalake.freshness' = '{PAUSED_FRESHNESS}'"),
    ];
    Ok(format!(
        "CREATE TABLE fc.db.{} ({}) WITH ({})",
        table.name,
        columns.join(", "),
        options.join(", ")
    ))
}

/// A query in Flink's dialect: `value` is a reserved word there.
fn flink_sql(sql: &str) -> String {
    sql.replace(" AS value ", " AS `value` ")
        .replace("ORDER BY value ", "ORDER BY `value` ")
}

/// One file of rows for the harness's `load`, and its op.
struct Load {
    table: &'static str,
    op: &'static str,
    file: std::path::PathBuf,
}

/// What is written between two tierings: each table's file, and whether the table
/// is tiered after it.
#[derive(Default)]
struct Phase {
    loads: Vec<Load>,
    tiered: Vec<&'static str>,
}

/// Writes batches as tab-separated text, each row after `prefix` (a `+`/`-` field
/// per row) when given; returns the rows written.
fn write_tsv(
    out: &mut impl Write,
    batch: &RecordBatch,
    prefix: Option<&dyn Fn(usize) -> &'static str>,
) -> BenchResult<usize> {
    let batch = match prefix {
        None => batch.clone(),
        Some(op) => {
            let mut fields = vec![Arc::new(Field::new("op", DataType::Utf8, false))];
            fields.extend(batch.schema().fields().iter().cloned());
            let mut columns: Vec<ArrayRef> = vec![Arc::new(StringArray::from_iter_values(
                (0..batch.num_rows()).map(op),
            ))];
            columns.extend(batch.columns().iter().cloned());
            RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
                .context(|| "a batch with ops".into())?
        }
    };
    let mut writer = WriterBuilder::new()
        .with_header(false)
        .with_delimiter(b'\t')
        .with_quote_style(QuoteStyle::Never)
        .build(out);
    writer.write(&batch).context(|| "writing rows".into())?;
    Ok(batch.num_rows())
}

/// A table's writes between two tierings: each batch with the row its deletes start
/// at (`None`: appended), and whether the table is tiered after them.
type Segment = (Vec<(RecordBatch, Option<usize>)>, bool);

/// Writes every table's history into files under `dir`, cut into phases at its
/// tierings.
fn write_histories(dir: &Path, config: &GenConfig) -> BenchResult<Vec<Phase>> {
    let mut phases: Vec<Phase> = Vec::new();
    for (i, table) in TABLES.iter().enumerate() {
        let mut segments: Vec<Segment> = vec![(Vec::new(), false)];
        if table.primary_key {
            let seed = config.seed ^ (i as u64 + 1);
            let (writes, _) = pk_history(table.name, table.value, table.comment, config, seed)?;
            for write in writes {
                let current = segments.len() - 1;
                match write {
                    PkWrite::Upsert(batch) => {
                        let rows = batch.num_rows();
                        segments[current].0.push((batch, Some(rows)));
                    }
                    PkWrite::Changes { batch, upserts } => {
                        segments[current].0.push((batch, Some(upserts)))
                    }
                    PkWrite::Tier => {
                        segments[current].1 = true;
                        segments.push((Vec::new(), false));
                    }
                }
            }
        } else {
            let lake = lake_parts(config.tail_share);
            for part in 1..=PARTS {
                for batch in part_batches(table.name, config.sf, part)? {
                    let current = segments.len() - 1;
                    segments[current].0.push((batch, None));
                }
                if part == lake {
                    let current = segments.len() - 1;
                    segments[current].1 = true;
                    segments.push((Vec::new(), false));
                }
            }
        }
        for (k, (batches, tier)) in segments.into_iter().enumerate() {
            if phases.len() <= k {
                phases.push(Phase::default());
            }
            if tier {
                phases[k].tiered.push(table.name);
            }
            if batches.is_empty() {
                continue;
            }
            let file = dir.join(format!("{}.{k}.tsv", table.name));
            let mut out = std::io::BufWriter::new(
                std::fs::File::create(&file).context(|| format!("creating {}", file.display()))?,
            );
            for (batch, upserts) in &batches {
                match upserts {
                    None => write_tsv(&mut out, batch, None)?,
                    Some(upserts) => {
                        let upserts = *upserts;
                        let op = move |row: usize| if row < upserts { "+" } else { "-" };
                        write_tsv(&mut out, batch, Some(&op))?
                    }
                };
            }
            out.flush()
                .context(|| format!("writing {}", file.display()))?;
            let op = if table.primary_key {
                "changes"
            } else {
                "append"
            };
            phases[k].loads.push(Load {
                table: table.name,
                op,
                file,
            });
        }
    }
    Ok(phases)
}

/// Whether Flink's answer agrees with ours, in order; the first difference if not.
fn difference(ours: &[Vec<String>], flink: &serde_json::Value) -> Option<String> {
    let Some(rows) = flink.as_array() else {
        return Some("Flink returned no rows array".to_string());
    };
    if rows.len() != ours.len() {
        return Some(format!(
            "Flink answers {} rows, ours {}",
            rows.len(),
            ours.len()
        ));
    }
    for (i, (ours, theirs)) in ours.iter().zip(rows).enumerate() {
        let theirs: Vec<String> = theirs
            .as_array()
            .map(|cells| {
                cells
                    .iter()
                    .map(|c| c.as_str().unwrap_or("NULL").to_string())
                    .collect()
            })
            .unwrap_or_default();
        let agree =
            theirs.len() == ours.len() && ours.iter().zip(&theirs).all(|(a, b)| cells_agree(a, b));
        if !agree {
            return Some(format!("row {i}: ours {ours:?}, Flink {theirs:?}"));
        }
    }
    None
}

/// Equal text, or numbers within a millionth of the larger or one unit of the
/// coarser one's last decimal place (an average of decimals rounds in Flink and is
/// truncated in DataFusion).
fn cells_agree(ours: &str, flink: &str) -> bool {
    if ours == flink {
        return true;
    }
    let scale = |s: &str| s.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    match (ours.parse::<f64>(), flink.parse::<f64>()) {
        (Ok(a), Ok(b)) => {
            let unit = 10f64.powi(-scale(ours).min(scale(flink)));
            let difference = (a - b).abs();
            difference <= 1e-6 * a.abs().max(b.abs()) || difference <= unit * 1.000_001
        }
        _ => false,
    }
}

/// Loads the tables into a real cluster, then runs every query on Flink and on ours
/// there; `expected` holds the merged parquet's answers (sorted lines) by query.
pub async fn run(
    args: &FlinkArgs<'_>,
    queries: &[(&'static str, &'static str)],
    expected: &HashMap<String, Vec<String>>,
) -> BenchResult<FlinkPeer> {
    let format = args.config.lake.name();
    if !RealFluss::available(format) {
        return Err(
            "--tpch-flink needs the real-Fluss harness: run tests/real-fluss/setup.sh".into(),
        );
    }
    let data = tempfile::tempdir().context(|| "a temporary directory".into())?;
    let phases = write_histories(data.path(), args.config)?;
    let mut fluss = RealFluss::start_with_env(
        format,
        8 * 3600,
        &[
            ("REAL_FLUSS_JVM_FLAGS", JVM_FLAGS),
            ("FLUSS_HARNESS_FLINK_MANAGED_MEMORY", FLINK_MANAGED_MEMORY),
        ],
    )
    .map_err(|e| e.to_string())?;
    let started = Instant::now();
    for sql in ["CREATE DATABASE IF NOT EXISTS fc.db", "USE fc.db"] {
        call(&mut fluss, json!({"cmd": "sql", "sql": sql}))?;
    }
    for table in &TABLES {
        call(
            &mut fluss,
            json!({"cmd": "sql", "sql": create_sql(table, args.config)?}),
        )?;
    }
    for (k, phase) in phases.iter().enumerate() {
        for load in &phase.loads {
            let t = Instant::now();
            let reply = call(
                &mut fluss,
                json!({"cmd": "load", "table": format!("db.{}", load.table), "op": load.op,
                    "file": load.file.to_string_lossy()}),
            )?;
            eprintln!(
                "tpch-flink: phase {k}: {} rows into {} in {:.1} s",
                reply["rows"],
                load.table,
                t.elapsed().as_secs_f64()
            );
        }
        if !phase.tiered.is_empty() {
            let t = Instant::now();
            call(
                &mut fluss,
                json!({"cmd": "tier", "tables": phase.tiered.iter().map(|t| format!("db.{t}")).collect::<Vec<_>>(),
                    "timeout_s": 3600}),
            )?;
            eprintln!(
                "tpch-flink: phase {k}: {} tables tiered in {:.1} s",
                phase.tiered.len(),
                t.elapsed().as_secs_f64()
            );
        }
    }
    let load_seconds = started.elapsed().as_secs_f64();
    drop(data);

    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: fluss.bootstrap_servers().to_string(),
        ..Default::default()
    })
    .await
    .context(|| "connecting the cluster source".into())?;
    let session = FlussSession::with_options(
        Arc::new(source),
        SessionOptions {
            default_database: "db".to_string(),
            target_partitions: Some(args.target_partitions),
            ..Default::default()
        },
    )
    .await
    .context(|| "a session on the cluster".into())?;

    let mut results = Vec::new();
    for (i, (name, sql)) in queries.iter().enumerate() {
        let mut samples = Vec::new();
        let mut ours = Vec::new();
        for round in 0..args.warmup + args.runs {
            let t = Instant::now();
            let batches = session
                .execute(sql)
                .await
                .context(|| format!("{name} on the cluster"))?;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            ours = format_rows(&batches)?;
            if round >= args.warmup {
                samples.push(ms);
            }
        }
        let mut lines: Vec<String> = ours.iter().map(|r| r.join("|")).collect();
        lines.sort();
        if expected.get(*name) != Some(&lines) {
            return Err(format!(
                "tpch {name}: the union read on the real cluster answers {} rows, unlike the \
                 merged parquet ({} rows)",
                lines.len(),
                expected.get(*name).map_or(0, Vec::len)
            )
            .into());
        }
        let cluster = Timing::from_samples(samples, ours.len());
        let flink_query = flink_sql(sql);
        let mut flink_samples = Vec::new();
        let mut flink_error = None;
        let mut flink_difference = None;
        // one more run of the first query warms the TableEnvironment (planner, JIT)
        let rounds = args.flink_runs + usize::from(i == 0);
        for round in 0..rounds {
            match call(
                &mut fluss,
                json!({"cmd": "query", "sql": flink_query, "timeout_s": FLINK_QUERY_TIMEOUT_S}),
            ) {
                Ok(reply) => {
                    if round + args.flink_runs >= rounds {
                        flink_samples.push(reply["millis"].as_f64().unwrap_or(f64::NAN));
                    }
                    flink_difference = difference(&ours, &reply["rows"]);
                }
                Err(e) => {
                    flink_error = Some(e.to_string());
                    break;
                }
            }
        }
        let flink = (flink_error.is_none() && !flink_samples.is_empty())
            .then(|| Timing::from_samples(flink_samples, ours.len()));
        let result = FlinkQuery {
            query: name.to_string(),
            flink,
            flink_error,
            flink_difference,
            cluster,
        };
        eprintln!(
            "tpch-flink: {name}: Flink {} ms, ours on the cluster {:.1} ms{}",
            result
                .flink
                .as_ref()
                .map_or("-".to_string(), |t| format!("{:.0}", t.median_ms)),
            result.cluster.median_ms,
            match (&result.flink_error, &result.flink_difference) {
                (Some(e), _) => format!(" (Flink failed: {e})"),
                (None, Some(d)) => format!(" (answers differ: {d})"),
                (None, None) => String::new(),
            }
        );
        results.push(result);
    }
    fluss.shutdown();
    Ok(FlinkPeer {
        tail_share: args.config.tail_share,
        fluss_version: FLUSS_VERSION,
        buckets: TABLES
            .iter()
            .map(|t| (t.name.to_string(), cluster_buckets(t, args.config)))
            .collect(),
        load_seconds,
        queries: results,
    })
}

/// The peer's section of the TPC-H report.
pub fn report(peer: &FlinkPeer) -> String {
    let ratios: Vec<f64> = peer.queries.iter().filter_map(FlinkQuery::ratio).collect();
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
    let mut md = format!(
        "## Flink's union read on a real Fluss cluster (tail share {})\n\n\
         The same 8 tables with the same history (lake rounds, each tiered by Fluss's \
         tiering service into the lake, then the tail's inserts, updates and deletes), \
         written into a Fluss {} cluster through its Java client in {:.0} s. Flink \
         1.20.3 batch union read in one warm TableEnvironment on a mini cluster \
         (parallelism 1, full JIT, 512 MB managed memory for the query's slot; time \
         measured in the harness, rows collected there), against this crate's union read \
         through the `ClusterSource` in a warm session on the same cluster. Ours there \
         answers exactly what the merged parquet answers; Flink's answers are compared \
         with ours row by row (numbers within a millionth, or one unit of the last decimal \
         place: Flink rounds an average of decimals, DataFusion truncates it).\n\n\
         Geometric mean Flink / ours: **{geo:.1}x** over {} queries.\n\n\
         | query | Flink (ms) | ours on the cluster (ms) | Flink / ours | answers |\n\
         |---|---|---|---|---|\n",
        peer.tail_share,
        peer.fluss_version,
        peer.load_seconds,
        ratios.len()
    );
    for q in &peer.queries {
        let answers = match (&q.flink_error, &q.flink_difference) {
            (Some(e), _) => format!("Flink failed: {}", innermost(e).replace('|', "\\|")),
            (None, Some(d)) => format!("differ: {}", d.replace('|', "\\|")),
            (None, None) => "agree".to_string(),
        };
        md.push_str(&format!(
            "| {} | {} | {:.1} | {} | {answers} |\n",
            q.query,
            q.flink
                .as_ref()
                .map_or("-".to_string(), |t| format!("{:.0}", t.median_ms)),
            q.cluster.median_ms,
            q.ratio().map_or("-".to_string(), |r| format!("{r:.1}x")),
        ));
    }
    md.push('\n');
    md
}

/// The last two causes of a Java error chain (the report's cell; the JSON keeps all).
fn innermost(error: &str) -> String {
    let causes: Vec<&str> = error.split(" | caused by: ").collect();
    causes[causes.len().saturating_sub(2)..].join(" | caused by: ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_agree_within_a_millionth_and_text_exactly() {
        assert!(cells_agree("0.0434", "0.043400"));
        assert!(cells_agree("0.047758", "0.047759"));
        assert!(!cells_agree("0.047758", "0.047760"));
        assert!(cells_agree("348406.05", "348406.054285"));
        assert!(!cells_agree("348406.05", "348407.05"));
        assert!(!cells_agree("BRAZIL", "brazil"));
        assert!(cells_agree("NULL", "NULL"));
    }

    #[test]
    fn flink_quotes_the_reserved_word_value() {
        let q11 = crate::tpch::queries()
            .into_iter()
            .find(|(n, _)| *n == "q11")
            .map(|(_, s)| flink_sql(s))
            .unwrap_or_default();
        assert!(q11.contains("AS `value` FROM") && q11.contains("ORDER BY `value` DESC"));
    }
}
