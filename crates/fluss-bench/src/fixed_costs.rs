//! The per-query fixed costs of union read on the TPC-H data, each against the same
//! engine on the merged parquet: planning every table in a fresh `fluss-sql`
//! process (what `-c` users and batch jobs pay before the first row), and point
//! lookups by primary key in a warm session, a new key each.

use std::path::Path;
use std::time::Instant;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::Timing;
use crate::generate::BenchResult;
use crate::tpch::{fresh_process_args, fresh_process_timing, table_names};

/// Lookups timed per engine (after as many warm-ups as [`LOOKUP_WARMUPS`]).
const LOOKUPS: usize = 200;
/// Lookups run first and not timed.
const LOOKUP_WARMUPS: usize = 20;
/// Customers at SF 1 (TPC-H: 150,000 × SF).
const CUSTOMERS_PER_SF: f64 = 150_000.0;

/// What one share's fixed costs measured (median milliseconds).
#[derive(Debug, Serialize)]
pub struct FixedCosts {
    /// Share of each table in the tail.
    pub tail_share: f64,
    /// A fresh `fluss-sql -c 'SELECT 1'`: the process itself, taken out of the
    /// planning figures below.
    pub process_ms: f64,
    /// Planning (`EXPLAIN`) of one query over all 8 tables in a fresh process, less
    /// the process, per table: union read.
    pub cold_planning_per_table_ms: f64,
    /// The same over the merged parquet (its 8 external tables registered first, as
    /// a `-c` user would).
    pub parquet_cold_planning_per_table_ms: f64,
    /// `SELECT c_name FROM customer WHERE c_custkey = k` in a warm session, a new `k`
    /// each time: union read.
    pub point_lookup: Timing,
    /// The same on the merged parquet, in the same rounds.
    pub parquet_point_lookup: Timing,
}

impl FixedCosts {
    /// Cold planning per table, union / parquet.
    pub fn cold_planning_ratio(&self) -> f64 {
        self.cold_planning_per_table_ms / self.parquet_cold_planning_per_table_ms
    }

    /// Warm point lookup, union / parquet (medians).
    pub fn point_lookup_ratio(&self) -> f64 {
        self.point_lookup.median_ms / self.parquet_point_lookup.median_ms
    }
}

/// Measures one share's fixed costs: `runs` fresh processes per planning figure, and
/// [`LOOKUPS`] lookups per engine, interleaved key by key.
pub async fn measure(
    shell: &Path,
    root: &Path,
    sf: f64,
    tail_share: f64,
    runs: usize,
    union: &SessionContext,
    parquet: &SessionContext,
) -> BenchResult<FixedCosts> {
    let store = root.join("store");
    let merged = root.join("parquet");
    let tables = table_names();
    let all_tables = format!("EXPLAIN SELECT count(*) FROM {}", tables.join(", "));
    let process = fresh_process_timing(
        shell,
        &fresh_process_args(&store, None, "SELECT 1"),
        runs,
        1,
    )?;
    let union_plan = fresh_process_timing(
        shell,
        &fresh_process_args(&store, None, &all_tables),
        runs,
        1,
    )?;
    let parquet_plan = fresh_process_timing(
        shell,
        &fresh_process_args(&store, Some(&merged), &all_tables),
        runs,
        1,
    )?;
    let per_table = |t: &Timing| (t.median_ms - process.median_ms) / tables.len() as f64;

    let customers = (CUSTOMERS_PER_SF * sf).max(1.0) as u64;
    let (mut ours, mut theirs, mut found) = (Vec::new(), Vec::new(), 0usize);
    for i in 0..(LOOKUP_WARMUPS + LOOKUPS) {
        // spread over the key range (and so over the buckets), each key once
        let key = (i as u64 * 7_919) % customers + 1;
        let sql = format!("SELECT c_name FROM customer WHERE c_custkey = {key}");
        let (union_ms, union_names) = time_query(union, &sql).await?;
        let (parquet_ms, parquet_names) = time_query(parquet, &sql).await?;
        // each answer checked: the engines agree, and a row found is the key's
        // customer by TPC-H's own definition (C_NAME = "Customer#" and the key in
        // 9 digits; tail updates change balances and comments, never names); a
        // key the tail deleted answers no row on both
        if union_names != parquet_names {
            return Err(format!(
                "{sql}: union read answered {union_names:?}, the merged parquet {parquet_names:?}"
            )
            .into());
        }
        let expected = format!("Customer#{key:09}");
        if union_names.iter().any(|name| *name != expected) {
            return Err(format!("{sql} answered {union_names:?}, not [{expected:?}]").into());
        }
        found += union_names.len();
        if i >= LOOKUP_WARMUPS {
            ours.push(union_ms);
            theirs.push(parquet_ms);
        }
    }
    // a lookup answering nothing is cheap: most keys must be found to time lookups
    if found * 10 < (LOOKUP_WARMUPS + LOOKUPS) * 9 {
        return Err(format!(
            "only {found} of {} point lookups found their customer",
            LOOKUP_WARMUPS + LOOKUPS
        )
        .into());
    }
    Ok(FixedCosts {
        tail_share,
        process_ms: process.median_ms,
        cold_planning_per_table_ms: per_table(&union_plan),
        parquet_cold_planning_per_table_ms: per_table(&parquet_plan),
        point_lookup: Timing::from_samples(ours, 1),
        parquet_point_lookup: Timing::from_samples(theirs, 1),
    })
}

/// Milliseconds of planning and running `sql` (one text column, one row or none),
/// and its answer.
async fn time_query(ctx: &SessionContext, sql: &str) -> BenchResult<(f64, Vec<String>)> {
    let start = Instant::now();
    let batches = crate::collect_sql(ctx, sql).await?;
    let elapsed = start.elapsed().as_secs_f64() * 1000.0;
    let mut names = Vec::new();
    for batch in &batches {
        let column = datafusion::arrow::compute::cast(
            batch.column(0),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )?;
        let column = column.as_string::<i32>();
        names.extend((0..column.len()).map(|i| column.value(i).to_string()));
    }
    if names.len() > 1 {
        return Err(format!("{sql} answered {} rows", names.len()).into());
    }
    Ok((elapsed, names))
}

/// The report's section on fixed costs, in Markdown.
pub fn report(costs: &[FixedCosts]) -> String {
    if costs.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "## Fixed costs\n\nPlanning: one `EXPLAIN` over all 8 tables in a fresh `fluss-sql -c` \
         process, less a fresh `SELECT 1`, per table (median ms). Point lookup: \
         `SELECT c_name FROM customer WHERE c_custkey = k` in a warm session, a new `k` each \
         time (median ms; union and parquet in the same rounds).\n\n\
         | tail share | process | planning per table, union | parquet | ratio | point lookup, union | parquet | ratio |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for c in costs {
        md.push_str(&format!(
            "| {} | {:.1} | {:.2} | {:.2} | {:.2}x | {:.2} | {:.2} | {:.2}x |\n",
            c.tail_share,
            c.process_ms,
            c.cold_planning_per_table_ms,
            c.parquet_cold_planning_per_table_ms,
            c.cold_planning_ratio(),
            c.point_lookup.median_ms,
            c.parquet_point_lookup.median_ms,
            c.point_lookup_ratio(),
        ));
    }
    md.push('\n');
    md
}
