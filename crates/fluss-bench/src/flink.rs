//! The head-to-head with Fluss's own reader (`fluss-bench --vs-flink`): the same real
//! Fluss cluster and the same tables (TPC-H `lineitem` and `orders` as log tables,
//! `customer` as a primary-key table; written through Fluss's Java client, tiered by
//! Fluss's tiering service into Paimon, then a tail left in the log), queried by
//! Flink's batch union read in a warm TableEnvironment and by this crate's union read
//! through the `ClusterSource` in a warm session. Both sides' timings leave out
//! start-up (JVM, Fluss and Flink mini cluster; connecting), which the report states
//! apart. The harness is `tests/real-fluss/` (`fluss_test_support::real_fluss`).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::csv::{QuoteStyle, WriterBuilder};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use fluss_datafusion::source::{ClusterOptions, ClusterSource};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::real_fluss::{FLUSS_VERSION, RealFluss};
use serde_json::json;

use crate::Timing;
use crate::cluster::{ENRICHMENT_EVENTS, KeyLookupResult, LookupTables, measure_lookups};
use crate::generate::{BenchResult, Context, PARTS, lake_parts, part_batches, table_schema};
use crate::queries::{self, Query};

/// The tables of the head-to-head, with their bucket key and whether it is a primary key.
const TABLES: [(&str, &str, bool); 3] = [
    ("lineitem", "l_orderkey", false),
    ("orders", "o_orderkey", false),
    ("customer", "c_custkey", true),
];

/// Fluss buckets per table.
const BUCKETS: i32 = 4;

/// What the head-to-head measured.
#[derive(Debug, serde::Serialize)]
pub struct HeadToHead {
    pub scale_factor: f64,
    pub tail_share: f64,
    pub fluss_version: &'static str,
    pub rows: Vec<(String, usize, usize)>,
    pub startup_ms: Vec<(String, f64)>,
    pub queries: Vec<QueryResult>,
    /// Point lookups and the enrichment join on `customer` through the cluster's
    /// Lookup RPC, against fluss-rs's `Lookuper` and against scanning.
    pub lookups: KeyLookupResult,
}

/// One query on both engines.
#[derive(Debug, serde::Serialize)]
pub struct QueryResult {
    pub name: String,
    pub title: String,
    pub flink: Timing,
    pub ours: Timing,
}

/// The Flink SQL type of a tpchgen column.
pub(crate) fn flink_type(dt: &DataType) -> BenchResult<String> {
    Ok(match dt {
        DataType::Int64 => "BIGINT".into(),
        DataType::Int32 => "INT".into(),
        DataType::Decimal128(p, s) => format!("DECIMAL({p}, {s})"),
        DataType::Date32 => "DATE".into(),
        DataType::Utf8 => "STRING".into(),
        other => return Err(format!("no Flink type for {other}").into()),
    })
}

/// Flink's column definitions of `schema`, the primary-key columns `keys` NOT NULL.
pub(crate) fn flink_columns(schema: &SchemaRef, keys: &[&str]) -> BenchResult<Vec<String>> {
    schema
        .fields()
        .iter()
        .map(|field| {
            let not_null = if keys.contains(&field.name().as_str()) {
                " NOT NULL"
            } else {
                ""
            };
            Ok(format!(
                "`{}` {}{not_null}",
                field.name(),
                flink_type(field.data_type())?
            ))
        })
        .collect()
}

fn create_sql(
    table: &str,
    schema: &SchemaRef,
    key: &str,
    primary_key: bool,
) -> BenchResult<String> {
    let keys: &[&str] = if primary_key { &[key] } else { &[] };
    let mut columns = flink_columns(schema, keys)?;
    if primary_key {
        columns.push(format!("PRIMARY KEY (`{key}`) NOT ENFORCED"));
    }
    let mut options = vec![
        format!("'bucket.num' = '{BUCKETS}'"),
        "'table.datalake.enabled' = 'true'".to_string(),
        format!(
            "'table.datalake.freshness' = '{}'",
            fluss_test_support::real_fluss::PAUSED_FRESHNESS
        ),
    ];
    if !primary_key {
        options.push(format!("'bucket.key' = '{key}'"));
    }
    Ok(format!(
        "CREATE TABLE fc.db.{table} ({}) WITH ({})",
        columns.join(", "),
        options.join(", ")
    ))
}

/// Writes parts `parts` of `table` as tab-separated text (the harness's `load`
/// format); returns the rows written.
fn write_text(
    table: &str,
    sf: f64,
    parts: std::ops::RangeInclusive<i32>,
    file: &Path,
) -> BenchResult<usize> {
    let out = std::fs::File::create(file).context(|| format!("creating {}", file.display()))?;
    let mut writer = WriterBuilder::new()
        .with_header(false)
        .with_delimiter(b'\t')
        .with_quote_style(QuoteStyle::Never)
        .build(std::io::BufWriter::new(out));
    let mut rows = 0;
    for part in parts {
        for batch in part_batches(table, sf, part)? {
            rows += batch.num_rows();
            writer
                .write(&batch)
                .context(|| format!("writing {}", file.display()))?;
        }
    }
    let mut inner = writer.into_inner();
    inner
        .flush()
        .context(|| format!("writing {}", file.display()))?;
    Ok(rows)
}

fn median_timing(samples: Vec<f64>, rows: usize) -> Timing {
    Timing::from_samples(samples, rows)
}

/// One command to the real-Fluss harness, its error as the benchmark's.
pub(crate) fn call(
    fluss: &mut RealFluss,
    command: serde_json::Value,
) -> BenchResult<serde_json::Value> {
    fluss
        .call(command)
        .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.to_string().into() })
}

/// Runs the head-to-head at scale factor `sf` with `tail_share` of each table in the
/// log tail, `runs` measured runs per query after `warmup`; writes `report.md` and
/// `results.json` to `out`.
pub async fn run(
    sf: f64,
    tail_share: f64,
    warmup: usize,
    runs: usize,
    out: &Path,
) -> BenchResult<HeadToHead> {
    if !RealFluss::available("paimon") {
        return Err("the real-Fluss harness is not set up: run tests/real-fluss/setup.sh".into());
    }
    std::fs::create_dir_all(out).context(|| format!("creating {}", out.display()))?;
    let data = tempfile::tempdir().context(|| "a temporary directory".into())?;
    let lake = lake_parts(tail_share);
    let mut files = Vec::new();
    let mut rows = Vec::new();
    for (table, _, _) in TABLES {
        let lake_file = data.path().join(format!("{table}.lake.tsv"));
        let tail_file = data.path().join(format!("{table}.tail.tsv"));
        let lake_rows = write_text(table, sf, 1..=lake, &lake_file)?;
        let tail_rows = write_text(table, sf, lake + 1..=PARTS, &tail_file)?;
        eprintln!("vs-flink: {table}: {lake_rows} rows to tier, {tail_rows} in the tail");
        rows.push((table.to_string(), lake_rows, tail_rows));
        files.push((table, lake_file, tail_file));
    }

    let started = Instant::now();
    let mut fluss = RealFluss::start("paimon", 7200).map_err(|e| e.to_string())?;
    let mut startup = vec![(
        "harness ready: JVM, Fluss cluster (ZooKeeper, coordinator, 2 tablet servers), Flink mini cluster".to_string(),
        started.elapsed().as_secs_f64() * 1000.0,
    )];
    call(
        &mut fluss,
        json!({"cmd": "sql", "sql": "CREATE DATABASE IF NOT EXISTS fc.db"}),
    )?;
    for (table, key, primary_key) in TABLES {
        let sql = create_sql(table, &table_schema(table)?, key, primary_key)?;
        call(&mut fluss, json!({"cmd": "sql", "sql": sql}))?;
    }
    let op = |primary_key: bool| if primary_key { "upsert" } else { "append" };
    for ((table, _, primary_key), (_, lake_file, _)) in TABLES.iter().zip(&files) {
        let t = Instant::now();
        call(
            &mut fluss,
            json!({"cmd": "load", "table": format!("db.{table}"), "op": op(*primary_key),
            "file": lake_file.to_string_lossy()}),
        )?;
        eprintln!(
            "vs-flink: {table}: loaded through the Java client in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let t = Instant::now();
    call(
        &mut fluss,
        json!({"cmd": "tier", "tables": TABLES.iter().map(|(t, _, _)| format!("db.{t}")).collect::<Vec<_>>(),
        "timeout_s": 3600}),
    )?;
    eprintln!("vs-flink: tiered in {:.1} s", t.elapsed().as_secs_f64());
    for ((table, _, primary_key), (_, _, tail_file)) in TABLES.iter().zip(&files) {
        call(
            &mut fluss,
            json!({"cmd": "load", "table": format!("db.{table}"), "op": op(*primary_key),
            "file": tail_file.to_string_lossy()}),
        )?;
    }

    let connect = Instant::now();
    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: fluss.bootstrap_servers().to_string(),
        ..Default::default()
    })
    .await
    .context(|| "connecting the cluster source".into())?;
    let session = FlussSession::new(Arc::new(source))
        .await
        .context(|| "a session".into())?;
    startup.push((
        "ours: ClusterSource connect + session".to_string(),
        connect.elapsed().as_secs_f64() * 1000.0,
    ));

    let selected: Vec<Query> = queries::all()
        .into_iter()
        .filter(|q| {
            q.tables
                .iter()
                .all(|(t, _)| TABLES.iter().any(|(name, _, _)| name == t))
        })
        .collect();
    let mut results = Vec::new();
    for (i, query) in selected.iter().enumerate() {
        let flink_sql = query.render(|t| format!("fc.db.{t}"));
        let ours_sql = query.render(|t| format!("db.{t}"));
        let mut flink_samples = Vec::new();
        let mut flink_rows = 0;
        for round in 0..warmup + runs {
            let reply = call(
                &mut fluss,
                json!({"cmd": "query", "sql": flink_sql, "count_only": true, "timeout_s": 3600}),
            )?;
            let ms = reply["millis"].as_f64().unwrap_or(f64::NAN);
            flink_rows = reply["row_count"].as_u64().unwrap_or(0) as usize;
            if i == 0 && round == 0 {
                startup.push((
                    "Flink: first query of a fresh TableEnvironment (planner, catalog)".to_string(),
                    ms,
                ));
            }
            if round >= warmup {
                flink_samples.push(ms);
            }
        }
        let mut our_samples = Vec::new();
        let mut our_rows = 0;
        for round in 0..warmup + runs {
            let t = Instant::now();
            let batches = session
                .execute(&ours_sql)
                .await
                .context(|| format!("{}: {ours_sql}", query.name))?;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            our_rows = batches.iter().map(|b| b.num_rows()).sum();
            if i == 0 && round == 0 {
                startup.push((
                    "ours: first query of the session (cold caches)".to_string(),
                    ms,
                ));
            }
            if round >= warmup {
                our_samples.push(ms);
            }
        }
        if our_rows != flink_rows {
            return Err(format!(
                "{}: Flink answered {flink_rows} rows, the union read {our_rows}",
                query.name
            )
            .into());
        }
        let result = QueryResult {
            name: query.name.to_string(),
            title: query.title.to_string(),
            flink: median_timing(flink_samples, flink_rows),
            ours: median_timing(our_samples, our_rows),
        };
        eprintln!(
            "vs-flink: {:<18} Flink {:>9.1} ms  ours {:>8.1} ms  ({:.1}x)",
            result.name,
            result.flink.median_ms,
            result.ours.median_ms,
            result.flink.median_ms / result.ours.median_ms
        );
        results.push(result);
    }
    let lookups = lookups_on(&mut fluss, &session, data.path(), &rows, warmup, runs).await?;
    fluss.shutdown();
    let head = HeadToHead {
        scale_factor: sf,
        tail_share,
        fluss_version: FLUSS_VERSION,
        rows,
        startup_ms: startup,
        queries: results,
        lookups,
    };
    write_report(&head, warmup, runs, out)?;
    Ok(head)
}

/// Point lookups and the enrichment join on the real cluster: `customer` looked up
/// through SQL (the cluster's Lookup RPC) and through fluss-rs's `Lookuper`, and
/// [`ENRICHMENT_EVENTS`] recent rows of a log table that is never tiered joined with
/// it on its key, by lookups and by scanning.
async fn lookups_on(
    fluss: &mut RealFluss,
    session: &FlussSession,
    dir: &Path,
    rows: &[(String, usize, usize)],
    warmup: usize,
    runs: usize,
) -> BenchResult<KeyLookupResult> {
    let customers = rows
        .iter()
        .find(|(t, _, _)| t == "customer")
        .map(|(_, lake, tail)| lake + tail)
        .ok_or("no customer table")?;
    let key = move |i: usize| 1 + ((i * 7919) % customers) as i64;
    let events = dir.join("events.tsv");
    let text: String = (0..ENRICHMENT_EVENTS)
        .map(|i| format!("{i}\t{}\t{}\n", key(i * 13 + 5), i % 100))
        .collect();
    std::fs::write(&events, text).context(|| format!("writing {}", events.display()))?;
    for command in [
        json!({"cmd": "sql", "sql": "CREATE TABLE fc.db.events (event BIGINT, customer BIGINT, \
            amount INT) WITH ('bucket.num' = '1')"}),
        json!({"cmd": "load", "table": "db.events", "op": "append",
            "file": events.to_string_lossy()}),
    ] {
        call(fluss, command)?;
    }
    let result = measure_lookups(
        session,
        fluss.bootstrap_servers(),
        LookupTables {
            database: "db",
            table: "customer",
            key_column: "c_custkey",
            value_column: "c_acctbal",
            events: "events",
            rows: customers,
        },
        key,
        runs.max(20),
        warmup.max(5),
    )
    .await?;
    eprintln!(
        "vs-flink: point lookup SQL {:.2} ms (aged metadata {:.2} ms, EXPLAIN {:.2} ms), Lookuper {:.2} ms; enrichment join by lookups {:.1} ms, by scanning {:.1} ms",
        result.sql.median_ms,
        result.sql_aged_metadata.median_ms,
        result.sql_planning.median_ms,
        result.lookuper.median_ms,
        result.enrichment_lookup.median_ms,
        result.enrichment_scan.median_ms
    );
    Ok(result)
}

fn write_report(head: &HeadToHead, warmup: usize, runs: usize, out: &Path) -> BenchResult<()> {
    let json = serde_json::to_string_pretty(head).context(|| "results as JSON".into())?;
    std::fs::write(out.join("results.json"), json).context(|| "writing results.json".into())?;
    let mut md = String::new();
    md.push_str("# Union read against Flink's, on the same real Fluss cluster\n\n");
    md.push_str(&format!(
        "Fluss {} (the newest release Maven Central serves here), Flink 1.20.3, Paimon 1.3.1; \
         TPC-H SF {} `lineitem` and `orders` (log tables) and `customer` (primary-key table), \
         {BUCKETS} buckets each, written through Fluss's Java client, tiered into Paimon by \
         Fluss's tiering service, then {:.0}% of each table written into the log tail. Flink: \
         batch union read (`SELECT … FROM fc.db.<t>`) in one warm TableEnvironment on a mini \
         cluster, parallelism 1, rows counted in the harness (`count_only`), time measured \
         there. Ours: `ClusterSource` union read in one warm session, target partitions = \
         cores, rows collected. Median of {runs} runs after {warmup} warm-up; both on the \
         same 2-core machine, one after the other.\n\n",
        head.fluss_version,
        head.scale_factor,
        head.tail_share * 100.0
    ));
    md.push_str(&crate::report::provenance(&crate::machine()));
    md.push_str("| table | rows tiered | rows in the tail |\n|---|---:|---:|\n");
    for (t, lake, tail) in &head.rows {
        md.push_str(&format!("| {t} | {lake} | {tail} |\n"));
    }
    md.push_str(
        "\n| query | Flink (ms) | ours (ms) | Flink / ours | rows |\n|---|---:|---:|---:|---:|\n",
    );
    let mut log_sum = 0.0;
    for q in &head.queries {
        let ratio = q.flink.median_ms / q.ours.median_ms;
        log_sum += ratio.ln();
        md.push_str(&format!(
            "| {} ({}) | {:.1} | {:.1} | {:.1}x | {} |\n",
            q.name, q.title, q.flink.median_ms, q.ours.median_ms, ratio, q.ours.rows
        ));
    }
    if !head.queries.is_empty() {
        md.push_str(&format!(
            "\nGeometric mean of Flink / ours: **{:.1}x**.\n",
            (log_sum / head.queries.len() as f64).exp()
        ));
    }
    let l = &head.lookups;
    md.push_str(&format!(
        "\n## Key lookups on the cluster\n\n`customer` ({} rows) looked up by key, {} keys, \
         each in turn through SQL (`{}`, planned and executed in the warm session, answered \
         by the tablet servers' Lookup RPC) and through fluss-rs's own `Lookuper` (created \
         once, with a 2 ms batch window). The enrichment join (`{}`) joins {} rows of a \
         log table that is never tiered with `customer`, by batched lookups \
         (`fluss.key_lookups = true`, `fluss.lookup_key_cost_rows = 0`) and by scanning the union of its lake and \
         tail (`false`); both give the same answer.\n\n\
         | what | median (ms) | ratio |\n|---|---:|---:|\n\
         | point lookup, SQL | {:.2} | {:.2}x the Lookuper |\n\
         | point lookup, `Lookuper::lookup` | {:.2} | |\n\
         | point lookup, SQL, `fluss.metadata_max_age_ms` = {} (no confirming metadata request) | {:.2} | {:.2}x the Lookuper |\n\
         | `EXPLAIN` of the SQL lookup (planning, beside the table metadata request that confirms it) | {:.2} | |\n\
         | enrichment join by lookups | {:.1} | scanning / lookups {:.2}x |\n\
         | enrichment join by scanning | {:.1} | |\n\n\
         By default (`fluss.lookup_key_cost_rows` = {}) the session's plan for this \
         join: **{}**.\n",
        l.rows,
        l.sql.samples_ms.len(),
        l.query,
        l.enrichment_query,
        ENRICHMENT_EVENTS,
        l.sql.median_ms,
        l.sql.median_ms / l.lookuper.median_ms,
        l.lookuper.median_ms,
        crate::cluster::AGED_METADATA_MS,
        l.sql_aged_metadata.median_ms,
        l.sql_aged_metadata.median_ms / l.lookuper.median_ms,
        l.sql_planning.median_ms,
        l.enrichment_lookup.median_ms,
        l.enrichment_scan.median_ms / l.enrichment_lookup.median_ms,
        l.enrichment_scan.median_ms,
        fluss_datafusion::provider::FlussOptions::default().lookup_key_cost_rows,
        l.enrichment_default,
    ));
    md.push_str("\nStart-up, not in the timings above:\n\n| what | ms |\n|---|---:|\n");
    for (what, ms) in &head.startup_ms {
        md.push_str(&format!("| {what} | {ms:.0} |\n"));
    }
    md.push_str(&format!(
        "\nMade by `bash tests/real-fluss/setup.sh && cargo run --release --bin fluss-bench -- \
         --vs-flink --sf {} --flink-tail-share {} --runs {runs} --warmup {warmup} --out <dir>`.\n",
        head.scale_factor, head.tail_share
    ));
    std::fs::write(out.join("report.md"), md).context(|| "writing report.md".into())?;
    Ok(())
}
