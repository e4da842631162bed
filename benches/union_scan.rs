//! Union-read benchmarks (issue 3), each reported as a ratio against a peer measured
//! in the same process on the same data:
//!
//! 1. log table fully tiered to Paimon: union scan time ÷ DataFusion ListingTable over
//!    the same parquet files (same query, same target partitions); target ≤ 1.10;
//! 2. PK table with a tail of 10% of the lake's rows: union time ÷ lake-only (`t$lake`)
//!    time; target ≤ 1.5; plus peak heap growth vs tail and lake size;
//! 3. a 1% filter on a sorted column: share of lake row groups and of log batches
//!    skipped (EXPLAIN ANALYZE metrics); target ≥ 90% each.
//!
//! `cargo bench --bench union_scan` writes `target/bench-results/union_scan.json`.
//! `cargo test --benches` runs it once at a tiny scale without timing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_alloc::PeakTrackingAllocator;
use fluss_datafusion::lake::LakeScanRequest;
use fluss_datafusion::provider::FlussCatalog;
use fluss_datafusion::source::{FlussSource, LocalStore};
use fluss_datafusion::tier;

/// mimalloc (as fluss-sql and fluss-bench use) with live and peak heap bytes counted,
/// to show PK merge memory follows the tail.
#[global_allocator]
static ALLOCATOR: PeakTrackingAllocator<mimalloc::MiMalloc> =
    PeakTrackingAllocator::new(mimalloc::MiMalloc);

struct Scale {
    log_rows: usize,
    pk_rows: usize,
    filter_batches: usize,
    runs: usize,
    measure: bool,
}

fn rows(start: usize, n: usize, tag: &str) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n).map(|i| i as i64).collect();
    RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(ids.clone())) as _),
        (
            "name",
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("{tag}-{}", i % 977)),
            )) as _,
        ),
        (
            "score",
            Arc::new(Int32Array::from_iter_values(
                ids.iter().map(|i| (i % 1000) as i32),
            )) as _,
        ),
    ])
    .unwrap()
}

fn descriptor(pk: bool, buckets: i32, stats: bool) -> TableDescriptor {
    let mut s = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("score", DataTypes::int());
    if pk {
        s = s.primary_key(vec!["id"]).unwrap();
    }
    let mut d = TableDescriptor::builder()
        .schema(s.build().unwrap())
        .distributed_by(
            Some(buckets),
            if pk { vec![] } else { vec!["id".to_string()] },
        )
        .property("table.datalake.enabled", "true");
    if stats {
        d = d.property("table.statistics.columns", "*");
    }
    d.build().unwrap()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Median time to plan (not run) a query: the per-query fixed cost.
async fn time_planning(ctx: &SessionContext, sql: &str, runs: usize) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        ctx.sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        samples.push(start.elapsed());
    }
    median(samples)
}

/// Median times of two queries run alternately (`a b a b ...` after one warm-up each),
/// so drift on a busy machine hits both sides alike.
async fn time_pair(ctx: &SessionContext, a: &str, b: &str, runs: usize) -> (Duration, Duration) {
    for sql in [a, b] {
        ctx.sql(sql).await.unwrap().collect().await.unwrap(); // warm-up
    }
    let (mut times_a, mut times_b) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (sql, samples) in [(a, &mut times_a), (b, &mut times_b)] {
            let start = Instant::now();
            ctx.sql(sql).await.unwrap().collect().await.unwrap();
            samples.push(start.elapsed());
        }
    }
    (median(times_a), median(times_b))
}

/// Sum of a counter / pruning metric over the plan tree.
fn metric(plan: &Arc<dyn ExecutionPlan>, name: &str) -> (usize, usize) {
    let mut out = (0, 0);
    if let Some(metrics) = plan.metrics() {
        for m in metrics.iter() {
            match m.value() {
                MetricValue::Count { name: n, count } if n == name => out.0 += count.value(),
                MetricValue::PruningMetrics {
                    name: n,
                    pruning_metrics,
                } if n == name => {
                    out.0 += pruning_metrics.pruned();
                    out.1 += pruning_metrics.matched();
                }
                _ => {}
            }
        }
    }
    for child in plan.children() {
        let (a, b) = metric(child, name);
        out.0 += a;
        out.1 += b;
    }
    out
}

async fn store_ctx(
    dir: &tempfile::TempDir,
    partitions: usize,
) -> (Arc<LocalStore>, SessionContext) {
    let store = Arc::new(
        LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap(),
    );
    store.create_database("db", None, true).await.unwrap();
    let config = SessionConfig::new().with_target_partitions(partitions);
    let ctx = SessionContext::new_with_config(config);
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    (store, ctx)
}

async fn bench_log_vs_listing(
    scale: &Scale,
    report: &mut serde_json::Map<String, serde_json::Value>,
) {
    let dir = tempfile::tempdir().unwrap();
    let (store, ctx) = store_ctx(&dir, 2).await;
    let path = TablePath::new("db", "events");
    store
        .create_table(&path, &descriptor(false, 4, false), true)
        .await
        .unwrap();
    let chunk = 100_000.min(scale.log_rows);
    for start in (0..scale.log_rows).step_by(chunk) {
        store.append(&path, &rows(start, chunk, "e")).await.unwrap();
    }
    tier(&store, &path).await.unwrap();
    // the same parquet files as a ListingTable
    let table = store.get_table(&path).await.unwrap();
    let snapshot = store.readable_lake_snapshot(&table).await.unwrap().unwrap();
    let location = store.lake_location(&table).await.unwrap();
    let lake = fluss_datafusion::lake::open(&location, &table)
        .await
        .unwrap()
        .unwrap();
    let plan = lake
        .plan(&LakeScanRequest {
            snapshot_id: snapshot.snapshot_id,
            filter: None,
            primary_key: false,
        })
        .await
        .unwrap();
    let urls: Vec<ListingTableUrl> = plan
        .splits
        .iter()
        .flat_map(|s| s.files.iter())
        .map(|f| ListingTableUrl::parse(f.path.trim_start_matches("file:")).unwrap())
        .collect();
    let options =
        ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(table.schemas.latest().unwrap().arrow.clone());
    ctx.register_table(
        "listing_events",
        Arc::new(ListingTable::try_new(config).unwrap()),
    )
    .unwrap();
    let query = |t: &str| format!("SELECT count(*), sum(score), max(name), min(id) FROM {t}");
    let (union, listing) = time_pair(
        &ctx,
        &query("fluss.db.events"),
        &query("listing_events"),
        scale.runs,
    )
    .await;
    let ratio = union.as_secs_f64() / listing.as_secs_f64();
    let union_plan = time_planning(&ctx, &query("fluss.db.events"), scale.runs).await;
    let listing_plan = time_planning(&ctx, &query("listing_events"), scale.runs).await;
    println!("   planning only: union {union_plan:?}, ListingTable {listing_plan:?}");
    println!(
        "1. log table fully tiered ({} rows, {} files): union {:?} vs ListingTable {:?} -> {ratio:.2}x (target <= 1.10)",
        scale.log_rows,
        plan.splits.iter().map(|s| s.files.len()).sum::<usize>(),
        union,
        listing
    );
    report.insert(
        "log_table_fully_tiered_vs_listing_table".into(),
        serde_json::json!({"rows": scale.log_rows, "union_ms": union.as_secs_f64()*1e3, "listing_table_ms": listing.as_secs_f64()*1e3, "ratio": ratio, "target_max": 1.10}),
    );
}

async fn bench_pk_tail(scale: &Scale, report: &mut serde_json::Map<String, serde_json::Value>) {
    let mut results = Vec::new();
    for (lake_rows, tail_share) in [
        (scale.pk_rows, 0.10),
        (scale.pk_rows, 0.01),
        (scale.pk_rows / 2, 0.10),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (store, ctx) = store_ctx(&dir, 2).await;
        let path = TablePath::new("db", "users");
        store
            .create_table(&path, &descriptor(true, 4, false), true)
            .await
            .unwrap();
        let chunk = 100_000.min(lake_rows);
        for start in (0..lake_rows).step_by(chunk) {
            store
                .upsert(&path, &rows(start, chunk, "v1"))
                .await
                .unwrap();
        }
        tier(&store, &path).await.unwrap();
        // tail: half updates of existing keys, half new keys
        let tail = ((lake_rows as f64) * tail_share) as usize;
        store.upsert(&path, &rows(0, tail / 2, "v2")).await.unwrap();
        store
            .upsert(&path, &rows(lake_rows, tail - tail / 2, "new"))
            .await
            .unwrap();
        let sql = |t: &str| format!("SELECT count(*), sum(score), max(name) FROM fluss.db.{t}");
        let (union, lake_only) =
            time_pair(&ctx, &sql("users"), &sql("\"users$lake\""), scale.runs).await;
        // peak heap above the baseline during one union query
        let base = ALLOCATOR.reset_peak();
        ctx.sql(&sql("users"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let peak_union = ALLOCATOR.peak().saturating_sub(base);
        let base = ALLOCATOR.reset_peak();
        ctx.sql(&sql("\"users$lake\""))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let peak_lake = ALLOCATOR.peak().saturating_sub(base);
        let ratio = union.as_secs_f64() / lake_only.as_secs_f64();
        println!(
            "2. PK table, lake {lake_rows} rows, tail {tail} rows ({:.0}%): union {union:?} vs lake-only {lake_only:?} -> {ratio:.2}x (target <= 1.5 at 10%); peak heap union {:.1} MiB, lake-only {:.1} MiB",
            tail_share * 100.0,
            peak_union as f64 / 1048576.0,
            peak_lake as f64 / 1048576.0
        );
        results.push(serde_json::json!({"lake_rows": lake_rows, "tail_rows": tail, "union_ms": union.as_secs_f64()*1e3, "lake_only_ms": lake_only.as_secs_f64()*1e3, "ratio": ratio, "peak_heap_union_bytes": peak_union, "peak_heap_lake_only_bytes": peak_lake}));
    }
    report.insert(
        "pk_union_vs_lake_only".into(),
        serde_json::Value::Array(results),
    );
}

async fn bench_filter_skipping(
    scale: &Scale,
    report: &mut serde_json::Map<String, serde_json::Value>,
) {
    let dir = tempfile::tempdir().unwrap();
    let (store, ctx) = store_ctx(&dir, 2).await;
    let path = TablePath::new("db", "sorted");
    store
        .create_table(&path, &descriptor(false, 1, true), true)
        .await
        .unwrap();
    let batch_rows = 5_000;
    let total = scale.filter_batches * batch_rows;
    // first half tiered in 20 rounds (20 lake files), second half stays in the tail
    let rounds = 20.min(scale.filter_batches / 2).max(1);
    let per_round = (scale.filter_batches / 2) / rounds;
    let mut next = 0;
    for _ in 0..rounds {
        for _ in 0..per_round {
            store
                .append(&path, &rows(next, batch_rows, "s"))
                .await
                .unwrap();
            next += batch_rows;
        }
        tier(&store, &path).await.unwrap();
    }
    while next < total {
        store
            .append(&path, &rows(next, batch_rows, "s"))
            .await
            .unwrap();
        next += batch_rows;
    }
    let width = (total / 100) as i64;
    let mut out = Vec::new();
    for (label, lo) in [
        ("lake", (total / 4) as i64),
        ("log", (3 * total / 4) as i64),
    ] {
        let sql = format!(
            "SELECT count(*) FROM fluss.db.sorted WHERE id >= {lo} AND id < {}",
            lo + width
        );
        let df = ctx.sql(&sql).await.unwrap();
        let plan = df.create_physical_plan().await.unwrap();
        let result = collect(plan.clone(), ctx.task_ctx()).await.unwrap();
        let (skipped, _) = metric(&plan, "log_batches_skipped");
        let (read, _) = metric(&plan, "log_batches_read");
        let (rg_pruned, rg_matched) = metric(&plan, "row_groups_pruned_statistics");
        let (files_pruned, files_matched) = metric(&plan, "files_ranges_pruned_statistics");
        let lake_total_groups = rounds; // one row group per lake file written by tiering
        let lake_read = rg_matched;
        let lake_skipped = 1.0 - lake_read as f64 / lake_total_groups as f64;
        let log_skipped = skipped as f64 / (skipped + read).max(1) as f64;
        println!(
            "3. 1% filter in the {label} part ({sql}): rows {}, lake row groups read {lake_read}/{lake_total_groups} (parquet pruned {rg_pruned}, files pruned {files_pruned}/{}) -> {:.0}% skipped; log batches skipped {skipped}/{} -> {:.0}% (targets >= 90%)",
            datafusion::arrow::util::pretty::pretty_format_batches(&result)
                .unwrap()
                .to_string()
                .lines()
                .nth(3)
                .unwrap_or("")
                .trim(),
            files_pruned + files_matched,
            lake_skipped * 100.0,
            skipped + read,
            log_skipped * 100.0
        );
        out.push(serde_json::json!({"part": label, "lake_row_groups_total": lake_total_groups, "lake_row_groups_read": lake_read, "lake_skipped_share": lake_skipped, "log_batches_total": skipped + read, "log_batches_skipped": skipped, "log_skipped_share": log_skipped}));
    }
    report.insert(
        "filter_1pct_sorted_column".into(),
        serde_json::Value::Array(out),
    );
}

fn main() {
    let measure = std::env::args().any(|a| a == "--bench");
    let scale = if measure {
        Scale {
            log_rows: 2_000_000,
            pk_rows: 400_000,
            filter_batches: 200,
            runs: 21,
            measure,
        }
    } else {
        Scale {
            log_rows: 20_000,
            pk_rows: 4_000,
            filter_batches: 8,
            runs: 1,
            measure,
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut report = serde_json::Map::new();
    runtime.block_on(async {
        bench_log_vs_listing(&scale, &mut report).await;
        bench_pk_tail(&scale, &mut report).await;
        bench_filter_skipping(&scale, &mut report).await;
    });
    if scale.measure {
        let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            out.join("union_scan.json"),
            serde_json::to_vec_pretty(&report).unwrap(),
        )
        .unwrap();
        println!("wrote {}", out.join("union_scan.json").display());
    }
}
