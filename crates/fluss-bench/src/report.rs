//! The report: targets (pass/fail, never failing the run), `report.md`, SVG charts
//! and `results.json` with every raw number, per lake format (every dataset is
//! generated once per format; each figure names the format it was measured on).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use crate::generate::{BenchResult, Context, LakeFormat};
use crate::{Measurement, Suite, Timing};

/// One performance target of the suite.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// Short id.
    pub name: String,
    /// The lake format it was measured on (`None`: it reads no lake, as the log
    /// decode, or compares formats).
    pub lake: Option<LakeFormat>,
    /// What is compared with what.
    pub description: String,
    /// The bound, as text.
    pub threshold: String,
    /// The measured value the bound applies to.
    pub value: Option<f64>,
    /// Pass/fail; `None` when it could not be measured.
    pub pass: Option<bool>,
    /// Per-query figures and notes.
    pub detail: String,
}

impl Target {
    /// `name` with its lake format (`paimon/lake_only_vs_listing_table`).
    pub fn label(&self) -> String {
        match self.lake {
            Some(lake) => format!("{lake}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

const LOG_QUERIES: [&str; 5] = [
    "q1_scan_agg",
    "q6_filter_agg",
    "selective_filter",
    "count_star",
    "top_n",
];

/// Queries that read a primary-key table in full: the PK tail targets use them.
const PK_QUERIES: [&str; 3] = ["pk_scan_customer", "pk_scan_part", "enrichment_join"];

/// The bound of a PK union read with a 10% tail against the lake-only read of the
/// same format (issue 20's target; 1.5 before the lake files' keys were kept).
const PK_TAIL10_BOUND: f64 = 1.2;

/// The bound of a PK union read with a 10% tail on another format against the same
/// read on Paimon.
const PK_TAIL10_VS_PAIMON_BOUND: f64 = 1.5;

fn main_tp(suite: &Suite) -> usize {
    suite.config["target_partitions"]
        .as_array()
        .and_then(|a| a.iter().filter_map(|v| v.as_u64()).max())
        .unwrap_or(2) as usize
}

/// The lake formats the run generated datasets for, in [`LakeFormat::ALL`] order.
fn lakes(suite: &Suite) -> Vec<LakeFormat> {
    LakeFormat::ALL
        .iter()
        .copied()
        .filter(|l| suite.datasets.iter().any(|d| d.lake == *l))
        .collect()
}

fn measurement<'a>(
    suite: &'a Suite,
    lake: LakeFormat,
    (sf, share): (f64, f64),
    query: &str,
    engine: &str,
    tp: usize,
) -> Option<&'a Measurement> {
    suite.measurements.iter().find(|m| {
        m.lake == lake
            && m.sf == sf
            && m.tail_share == share
            && m.query == query
            && m.engine == engine
            && m.target_partitions == tp
    })
}

fn timing<'a>(
    suite: &'a Suite,
    lake: LakeFormat,
    sf: f64,
    share: f64,
    query: &str,
    engine: &str,
    tp: usize,
) -> Option<&'a Timing> {
    measurement(suite, lake, (sf, share), query, engine, tp).and_then(|m| m.timing.as_ref())
}

/// Why `engine` cannot run `query` on this dataset, when it said so.
fn not_supported<'a>(
    suite: &'a Suite,
    lake: LakeFormat,
    sf: f64,
    share: f64,
    query: &str,
    engine: &str,
    tp: usize,
) -> Option<&'a str> {
    measurement(suite, lake, (sf, share), query, engine, tp)
        .and_then(|m| m.not_supported.as_deref())
}

fn median(
    suite: &Suite,
    lake: LakeFormat,
    sf: f64,
    share: f64,
    query: &str,
    engine: &str,
    tp: usize,
) -> Option<f64> {
    timing(suite, lake, sf, share, query, engine, tp)
        .map(|t| t.median_ms)
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// Engines timed in turn within the same rounds (`time_interleaved`): sample `i` of
/// each was taken in round `i`. The Python peers run in their own process.
const INTERLEAVED_ENGINES: &[&str] = &["union", "cluster", "lake_only", "listing_table"];

/// The bound of a full scan through the cluster source and the RPC test server on
/// loopback, against the LocalStore source on the same store.
const CLUSTER_BOUND: f64 = 1.3;

/// `engine` time / `peer` time on one dataset: the median of the per-round ratios
/// when both were timed in the same rounds (a round's two runs are moments apart, so
/// the machine's drift between rounds cancels), else the ratio of the medians.
fn time_ratio(
    suite: &Suite,
    lake: LakeFormat,
    (sf, share, tp): (f64, f64, usize),
    query: &str,
    engine: &str,
    peer: &str,
) -> Option<f64> {
    let a = timing(suite, lake, sf, share, query, engine, tp)?;
    let b = timing(suite, lake, sf, share, query, peer, tp)?;
    let paired = INTERLEAVED_ENGINES.contains(&engine)
        && INTERLEAVED_ENGINES.contains(&peer)
        && a.samples_ms.len() == b.samples_ms.len()
        && !a.samples_ms.is_empty();
    if paired {
        let ratios: Vec<f64> = a
            .samples_ms
            .iter()
            .zip(&b.samples_ms)
            .map(|(x, y)| x / y)
            .filter(|r| r.is_finite() && *r > 0.0)
            .collect();
        // the same median every timing in the report uses
        let median = Timing::from_samples(ratios, 0).median_ms;
        return median.is_finite().then_some(median);
    }
    Some(
        median(suite, lake, sf, share, query, engine, tp)?
            / median(suite, lake, sf, share, query, peer, tp)?,
    )
}

fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// The largest value, `None` for none.
fn largest(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(f64::max)
}

fn sfs(suite: &Suite, lake: LakeFormat) -> Vec<f64> {
    let mut v: Vec<f64> = suite
        .datasets
        .iter()
        .filter(|d| d.lake == lake)
        .map(|d| d.sf)
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

fn shares_at(suite: &Suite, lake: LakeFormat, sf: f64) -> Vec<f64> {
    let mut v: Vec<f64> = suite
        .datasets
        .iter()
        .filter(|d| d.lake == lake && d.sf == sf)
        .map(|d| d.tail_share)
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// The largest scale factor that has a dataset of `lake` at `share`.
fn largest_sf_with(suite: &Suite, lake: LakeFormat, share: f64) -> Option<f64> {
    sfs(suite, lake)
        .into_iter()
        .rev()
        .find(|sf| shares_at(suite, lake, *sf).contains(&share))
}

/// The largest scale factor that has datasets of both formats at `share`.
fn largest_common_sf_with(suite: &Suite, a: LakeFormat, b: LakeFormat, share: f64) -> Option<f64> {
    sfs(suite, a).into_iter().rev().find(|sf| {
        shares_at(suite, a, *sf).contains(&share) && shares_at(suite, b, *sf).contains(&share)
    })
}

#[allow(clippy::too_many_arguments)]
fn ratio_target(
    suite: &Suite,
    lake: LakeFormat,
    name: &str,
    description: &str,
    engine: &str,
    peer: &str,
    queries: &[&str],
    threshold: f64,
    below: bool,
) -> Target {
    let tp = main_tp(suite);
    let mut ratios = Vec::new();
    let mut unsupported = Vec::new();
    let mut detail = String::new();
    if let Some(sf) = largest_sf_with(suite, lake, 0.0) {
        let _ = write!(detail, "SF {sf}, tail 0%: ");
        for q in queries {
            if let Some(r) = time_ratio(suite, lake, (sf, 0.0, tp), q, engine, peer) {
                ratios.push(r);
                let _ = write!(detail, "{q} {r:.2}x; ");
            } else if not_supported(suite, lake, sf, 0.0, q, peer, tp).is_some() {
                unsupported.push(*q);
            }
        }
        if !unsupported.is_empty() {
            let _ = write!(
                detail,
                "not supported by {peer} (left out): {}; ",
                unsupported.join(", ")
            );
        }
    }
    let value = geomean(&ratios);
    let pass = value.map(|v| if below { v <= threshold } else { v < threshold });
    Target {
        name: name.into(),
        lake: Some(lake),
        description: description.into(),
        threshold: format!(
            "geometric mean {} {threshold}",
            if below { "<=" } else { "<" }
        ),
        value,
        pass,
        detail: if ratios.is_empty() {
            format!("not measured ({peer} did not run)")
        } else {
            detail
        },
    }
}

/// The targets one lake format is judged by on its own datasets.
fn lake_targets(suite: &Suite, lake: LakeFormat) -> Vec<Target> {
    let tp = main_tp(suite);
    let all_queries: Vec<&str> = suite.queries.iter().map(|q| q.name).collect();
    let full_scan: Vec<&str> = suite
        .queries
        .iter()
        .filter(|q| q.full_scan)
        .map(|q| q.name)
        .collect();
    let reader = lake.python_peer();
    let mut targets = vec![
        ratio_target(
            suite,
            lake,
            "lake_only_vs_listing_table",
            "lake-only scan (t$lake) time / DataFusion ListingTable on the same parquet files (log-table queries)",
            "lake_only",
            "listing_table",
            &LOG_QUERIES,
            1.10,
            true,
        ),
        ratio_target(
            suite,
            lake,
            "union_tail0_vs_listing_table",
            "union read at 0% tail time / DataFusion ListingTable (log-table queries)",
            "union",
            "listing_table",
            &LOG_QUERIES,
            1.10,
            true,
        ),
        ratio_target(
            suite,
            lake,
            &format!("lake_only_vs_{reader}"),
            &format!(
                "lake-only scan time / {reader} (+DuckDB) on the same lake tables (all queries it supports): faster means < 1"
            ),
            "lake_only",
            reader,
            &all_queries,
            1.0,
            false,
        ),
    ];

    // PK union at 10% tail vs lake-only
    let mut ratios = Vec::new();
    let mut detail = String::new();
    if let Some(sf) = largest_sf_with(suite, lake, 0.1) {
        let _ = write!(detail, "SF {sf}, tail 10%: ");
        for q in PK_QUERIES {
            if let Some(r) = time_ratio(suite, lake, (sf, 0.1, tp), q, "union", "lake_only") {
                ratios.push(r);
                let medians = median(suite, lake, sf, 0.1, q, "union", tp)
                    .zip(median(suite, lake, sf, 0.1, q, "lake_only", tp))
                    .map(|(u, l)| u / l)
                    .unwrap_or(f64::NAN);
                let _ = write!(detail, "{q} {r:.2}x (ratio of medians {medians:.2}x); ");
            }
        }
    }
    targets.push(worst_query_target(
        "pk_union_tail10_vs_lake_only".into(),
        Some(lake),
        "PK table union read with a 10% tail / lake-only read of the same table".into(),
        PK_TAIL10_BOUND,
        &ratios,
        detail,
        "not measured (no 10% tail dataset)".into(),
    ));

    // point lookup buckets
    let worst_lookup = suite
        .lookups
        .iter()
        .filter(|l| l.lake == lake)
        .max_by_key(|l| l.buckets_with_rows);
    targets.push(Target {
        name: "point_lookup_one_bucket".into(),
        lake: Some(lake),
        description: "buckets with rows read (lake_rows + log_rows metrics of the plan) for `WHERE c_custkey = 42`".into(),
        threshold: "== 1 bucket".into(),
        value: worst_lookup.map(|l| l.buckets_with_rows as f64),
        pass: worst_lookup.map(|l| l.buckets_with_rows <= 1),
        detail: worst_lookup
            .map(|l| {
                let finding = if l.buckets_with_rows > 1 {
                    " FINDING: the provider does not prune buckets by primary key yet; every bucket is read and the filter is applied after the merge"
                } else {
                    ""
                };
                format!(
                    "worst case SF {} tail {}: {} of {} buckets read rows ({} rows read){finding}",
                    l.sf, l.tail_share, l.buckets_with_rows, l.buckets_total, l.rows_read
                )
            })
            .unwrap_or_else(|| "not measured".into()),
    });

    // scaling with data
    let all_sfs = sfs(suite, lake);
    let mut detail = String::new();
    let mut exponents = Vec::new();
    if let (Some(lo), Some(hi)) = (all_sfs.first(), all_sfs.last())
        && hi > lo
    {
        let _ = write!(
            detail,
            "union at 0% tail, SF {lo} -> {hi} (x{:.0} data): ",
            hi / lo
        );
        for q in &full_scan {
            if let (Some(a), Some(b)) = (
                median(suite, lake, *lo, 0.0, q, "union", tp),
                median(suite, lake, *hi, 0.0, q, "union", tp),
            ) {
                let e = (b / a).ln() / (hi / lo).ln();
                exponents.push(e);
                let _ = write!(detail, "{q} time x{:.1} (exponent {e:.2}); ", b / a);
            }
        }
    }
    let worst_e = largest(&exponents);
    targets.push(Target {
        name: "scaling_with_data".into(),
        lake: Some(lake),
        description: "time grows at most linearly with the scale factor: exponent ln(t2/t1)/ln(sf2/sf1) over full-scan queries".into(),
        threshold: "worst exponent <= 1.15".into(),
        value: worst_e,
        pass: worst_e.map(|e| e <= 1.15),
        detail: if exponents.is_empty() {
            "not measured (one scale factor)".into()
        } else {
            detail
        },
    });

    // scaling with the tail share: linear fit of time vs share
    let mut detail = String::new();
    let mut fits = Vec::new();
    // the scale factor that got the tail-share sweep (the first one given)
    let swept = all_sfs
        .iter()
        .max_by_key(|sf| shares_at(suite, lake, **sf).len());
    if let Some(sf) = swept {
        let shares = shares_at(suite, lake, *sf);
        if shares.len() >= 3 {
            let _ = write!(detail, "SF {sf}, union, shares {shares:?}: ");
            for q in &full_scan {
                let pts: Vec<(f64, f64)> = shares
                    .iter()
                    .filter_map(|s| median(suite, lake, *sf, *s, q, "union", tp).map(|t| (*s, t)))
                    .collect();
                if pts.len() < 3 {
                    continue;
                }
                let r2 = r_squared(&pts);
                let (min, max) = pts
                    .iter()
                    .fold((f64::MAX, 0f64), |(a, b), (_, t)| (a.min(*t), b.max(*t)));
                let grows = pts.last().map(|p| p.1).unwrap_or(f64::NAN) / pts[0].1;
                let linear = r2 >= 0.8 || max / min <= 1.25 || grows <= 1.0;
                fits.push(linear);
                let _ = write!(
                    detail,
                    "{q} R2 {r2:.2}, last/first x{grows:.2}{}; ",
                    if linear { "" } else { " (not linear)" }
                );
            }
        }
    }
    targets.push(Target {
        name: "scaling_with_tail_share".into(),
        lake: Some(lake),
        description: "union time vs tail share is linear: R2 of a linear fit >= 0.8, or flat (max/min <= 1.25), or not growing, per full-scan query".into(),
        threshold: "every query linear".into(),
        value: (!fits.is_empty())
            .then(|| fits.iter().filter(|f| **f).count() as f64 / fits.len() as f64),
        pass: (!fits.is_empty()).then(|| fits.iter().all(|f| *f)),
        detail: if fits.is_empty() {
            "not measured (fewer than 3 tail shares)".into()
        } else {
            detail
        },
    });

    // target partitions
    let tps: BTreeSet<usize> = suite
        .measurements
        .iter()
        .filter(|m| m.lake == lake)
        .map(|m| m.target_partitions)
        .collect();
    let mut ratios = Vec::new();
    let mut detail = String::new();
    if let (Some(sf), true) = (
        largest_sf_with(suite, lake, 0.0),
        tps.contains(&1) && tps.contains(&2),
    ) {
        let _ = write!(detail, "SF {sf}, tail 0%, union: ");
        for q in &full_scan {
            if let (Some(one), Some(two)) = (
                median(suite, lake, sf, 0.0, q, "union", 1),
                median(suite, lake, sf, 0.0, q, "union", 2),
            ) {
                ratios.push(one / two);
                let _ = write!(detail, "{q} {:.2}x; ", one / two);
            }
        }
    }
    let value = geomean(&ratios);
    targets.push(Target {
        name: "two_partitions_speedup".into(),
        lake: Some(lake),
        description: "union time at 1 target partition / at 2 (full-scan queries)".into(),
        threshold: "geometric mean >= 1.6".into(),
        value,
        pass: value.map(|v| v >= 1.6),
        detail: if ratios.is_empty() {
            "not measured (needs --target-partitions 1,2)".into()
        } else {
            detail
        },
    });
    targets
}

/// A PK union read with a 10% tail on `lake` against the same read on Paimon (same
/// generator and seed, so the same rows and changes): the worst ratio of medians
/// over the PK queries, at the largest scale factor both formats have a 10% tail at.
/// The two datasets run one after the other, not in the same rounds, so the ratio is
/// of the medians.
fn vs_paimon_target(suite: &Suite, lake: LakeFormat) -> Target {
    let tp = main_tp(suite);
    let paimon = LakeFormat::Paimon;
    let mut ratios = Vec::new();
    let mut detail = String::new();
    if let Some(sf) = largest_common_sf_with(suite, lake, paimon, 0.1) {
        let _ = write!(detail, "SF {sf}, tail 10%, union: ");
        for q in PK_QUERIES {
            if let (Some(p), Some(x)) = (
                median(suite, paimon, sf, 0.1, q, "union", tp),
                median(suite, lake, sf, 0.1, q, "union", tp),
            ) {
                ratios.push(x / p);
                let _ = write!(
                    detail,
                    "{q} {} {x:.1} ms / Paimon {p:.1} ms = {:.2}x; ",
                    lake.title(),
                    x / p
                );
            }
        }
    }
    worst_query_target(
        format!("{lake}_pk_union_tail10_vs_paimon"),
        None,
        format!(
            "PK table union read with a 10% tail on {} / the same read on Paimon (same data; ratio of medians)",
            lake.title()
        ),
        PK_TAIL10_VS_PAIMON_BOUND,
        &ratios,
        detail,
        format!(
            "not measured (needs 10% tail datasets of Paimon and {} at one scale factor)",
            lake.title()
        ),
    )
}

/// A target met when the worst of `ratios` is at most `bound`.
fn worst_query_target(
    name: String,
    lake: Option<LakeFormat>,
    description: String,
    bound: f64,
    ratios: &[f64],
    detail: String,
    not_measured: String,
) -> Target {
    let worst = largest(ratios);
    Target {
        name,
        lake,
        description,
        threshold: format!("worst query <= {bound}"),
        value: worst,
        pass: worst.map(|w| w <= bound),
        detail: if ratios.is_empty() {
            not_measured
        } else {
            detail
        },
    }
}

/// Union reads through the cluster source / through the LocalStore source, on the
/// largest dataset with a 10% tail (the log is read over FetchLog), else tail 0%.
fn cluster_target(suite: &Suite, lake: LakeFormat) -> Target {
    let tp = main_tp(suite);
    let full_scan: Vec<&str> = suite
        .queries
        .iter()
        .filter(|q| q.full_scan)
        .map(|q| q.name)
        .collect();
    let mut ratios = Vec::new();
    let mut detail = String::new();
    let dataset = largest_sf_with(suite, lake, 0.1)
        .map(|sf| (sf, 0.1))
        .or_else(|| largest_sf_with(suite, lake, 0.0).map(|sf| (sf, 0.0)));
    if let Some((sf, share)) = dataset {
        let _ = write!(detail, "SF {sf}, tail {}: ", pct(share));
        for q in &full_scan {
            if let Some(r) = time_ratio(suite, lake, (sf, share, tp), q, "cluster", "union") {
                ratios.push(r);
                let _ = write!(detail, "{q} {r:.2}x; ");
            }
        }
    }
    worst_query_target(
        "cluster_vs_localstore".into(),
        Some(lake),
        "union read through ClusterSource + the Fluss RPC test server on loopback / the same read through the LocalStore source (same store, full-scan queries)".into(),
        CLUSTER_BOUND,
        &ratios,
        detail,
        "not measured".into(),
    )
}

/// Computes every target from the measurements.
pub fn evaluate(suite: &Suite) -> Vec<Target> {
    let mut targets = Vec::new();
    for lake in lakes(suite) {
        targets.extend(lake_targets(suite, lake));
        targets.push(cluster_target(suite, lake));
    }
    for lake in lakes(suite) {
        if lake != LakeFormat::Paimon && lakes(suite).contains(&LakeFormat::Paimon) {
            targets.push(vs_paimon_target(suite, lake));
        }
    }

    // point lookups on a cluster
    let lookup = suite.key_lookup.as_ref();
    let lookup_ratio = lookup.map(|l| l.sql.median_ms / l.lookuper.median_ms);
    targets.push(Target {
        name: "cluster_point_lookup_vs_lookuper".into(),
        lake: None,
        description: "`WHERE pk = k` through SQL on a cluster / fluss-rs Lookuper::lookup of k (median per key)".into(),
        threshold: "<= 1.5".into(),
        value: lookup_ratio,
        pass: lookup_ratio.map(|r| r <= 1.5),
        detail: lookup
            .map(|l| {
                format!(
                    "{} rows, test server on loopback: SQL {:.2} ms (planning included; EXPLAIN alone {:.2} ms), Lookuper {:.2} ms",
                    l.rows, l.sql.median_ms, l.sql_planning.median_ms, l.lookuper.median_ms
                )
            })
            .unwrap_or_else(|| "not measured".into()),
    });

    let enrichment = lookup.map(|l| l.enrichment_scan.median_ms / l.enrichment_lookup.median_ms);
    targets.push(Target {
        name: "cluster_enrichment_join_lookup_vs_scan".into(),
        lake: None,
        description: format!(
            "{} log rows joined with a PK table on its key on a cluster: time scanning the table / time looking the keys up",
            crate::cluster::ENRICHMENT_EVENTS
        ),
        threshold: ">= 10".into(),
        value: enrichment,
        pass: enrichment.map(|r| r >= 10.0),
        detail: lookup
            .map(|l| {
                format!(
                    "{} rows, test server on loopback: lookup join {:.1} ms, scan {:.1} ms (same answers); planned by default as a {}",
                    l.rows, l.enrichment_lookup.median_ms, l.enrichment_scan.median_ms, l.enrichment_default
                )
            })
            .unwrap_or_else(|| "not measured".into()),
    });

    // log decode
    let zstd = suite.decode.iter().find(|d| d.codec == "ZSTD");
    let lz4 = suite.decode.iter().find(|d| d.codec == "LZ4_FRAME");
    targets.push(Target {
        name: "log_decode_zstd_vs_arrow_ipc".into(),
        lake: None,
        description: "BucketLogReader throughput / arrow-ipc read_record_batch throughput, ZSTD log tail".into(),
        threshold: ">= 0.80".into(),
        value: zstd.map(|d| d.throughput_ratio()),
        pass: zstd.map(|d| d.throughput_ratio() >= 0.80),
        detail: zstd
            .map(|d| {
                format!(
                    "{} rows in {} batches: reader {:.1} Mrows/s, arrow-ipc {:.1} Mrows/s (both incl. segment file read; reader also verifies CRC-32C)",
                    d.rows,
                    d.batches,
                    d.rows as f64 / d.fluss_reader_secs / 1e6,
                    d.rows as f64 / d.arrow_ipc_secs / 1e6
                )
            })
            .unwrap_or_else(|| "not measured".into()),
    });
    let lz4_vs_zstd = match (lz4, zstd) {
        (Some(l), Some(z)) => Some(l.ns_per_row() / z.ns_per_row()),
        _ => None,
    };
    targets.push(Target {
        name: "log_decode_lz4_vs_zstd".into(),
        lake: None,
        description: "BucketLogReader ns/row on LZ4_FRAME / on ZSTD (same rows)".into(),
        threshold: "<= 1.05 (not slower; 5% noise allowance)".into(),
        value: lz4_vs_zstd,
        pass: lz4_vs_zstd.map(|r| r <= 1.05),
        detail: match (lz4, zstd) {
            (Some(l), Some(z)) => format!(
                "LZ4_FRAME {:.1} ns/row ({} bytes), ZSTD {:.1} ns/row ({} bytes)",
                l.ns_per_row(),
                l.bytes,
                z.ns_per_row(),
                z.bytes
            ),
            _ => "not measured".into(),
        },
    });
    targets
}

fn r_squared(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx == 0.0 || syy == 0.0 {
        return 1.0;
    }
    (sxy * sxy) / (sxx * syy)
}

fn fmt_ms(t: Option<&Timing>) -> String {
    match t {
        Some(t) if t.samples_ms.len() > 1 => {
            format!("{:.1} ({:.1}–{:.1})", t.median_ms, t.min_ms, t.max_ms)
        }
        Some(t) => format!("{:.1}", t.median_ms),
        None => "—".into(),
    }
}

fn fmt_ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}x", a / b),
        _ => "—".into(),
    }
}

fn pct(share: f64) -> String {
    format!("{}%", (share * 100.0 * 100.0).round() / 100.0)
}

const COLORS: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(23, 190, 207),
];

/// A line chart of named series; `log_x`/`log_y` pick log axes.
#[allow(clippy::too_many_arguments)]
fn line_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_x: bool,
    log_y: bool,
) -> BenchResult<bool> {
    let points: Vec<(f64, f64)> = series.iter().flat_map(|s| s.1.iter().copied()).collect();
    if points.is_empty() {
        return Ok(false);
    }
    let (mut x0, mut x1, mut y0, mut y1) = points.iter().fold(
        (f64::MAX, f64::MIN, f64::MAX, f64::MIN),
        |(a, b, c, d), (x, y)| (a.min(*x), b.max(*x), c.min(*y), d.max(*y)),
    );
    if log_x {
        x0 /= 1.5;
        x1 *= 1.5;
    } else {
        let pad = ((x1 - x0) * 0.05).max(0.01);
        x0 -= pad;
        x1 += pad;
    }
    if log_y {
        y0 = (y0 / 1.5).max(1e-3);
        y1 *= 1.5;
    } else {
        y0 = 0.0;
        y1 = y1 * 1.1 + 1e-9;
    }
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .draw()?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
                    .label(name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                    });
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.85))
                .draw()?;
        }};
    }
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70);
    match (log_x, log_y) {
        (true, true) => {
            draw!(builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?)
        }
        (true, false) => draw!(builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?),
        (false, true) => draw!(builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?),
        (false, false) => draw!(builder.build_cartesian_2d(x0..x1, y0..y1)?),
    }
    root.present()?;
    Ok(true)
}

/// Grouped bars: one group per category, one bar per series, log y axis.
fn bar_chart(
    path: &Path,
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
    reference: Option<f64>,
) -> BenchResult<bool> {
    let values: Vec<f64> = series
        .iter()
        .flat_map(|s| s.1.iter().flatten().copied())
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if values.is_empty() || categories.is_empty() {
        return Ok(false);
    }
    let lo = values
        .iter()
        .copied()
        .fold(f64::MAX, f64::min)
        .min(reference.unwrap_or(f64::MAX))
        / 1.5;
    let hi = values
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .max(reference.unwrap_or(0.0))
        * 1.5;
    let root = SVGBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = categories.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(y_desc)
        .draw()?;
    let k = series.len() as f64;
    for (j, (name, vals)) in series.iter().enumerate() {
        let color = COLORS[j % COLORS.len()];
        chart
            .draw_series(vals.iter().enumerate().filter_map(|(i, v)| {
                let v = (*v)?;
                let x0 = i as f64 + 0.1 + 0.8 * j as f64 / k;
                let x1 = x0 + 0.8 / k;
                Some(Rectangle::new([(x0, lo), (x1, v)], color.filled()))
            }))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    if let Some(r) = reference {
        chart.draw_series(LineSeries::new(
            vec![(0.0, r), (n, r)],
            BLACK.stroke_width(1),
        ))?;
    }
    for (i, c) in categories.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, lo));
        let width = c.len() as i32 * 6;
        root.draw(&Text::new(
            c.clone(),
            (px - width / 2, py + 8),
            ("sans-serif", 12),
        ))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()?;
    root.present()?;
    Ok(true)
}

/// Writes the charts; returns (file, caption) of each chart written. Charts of one
/// lake format's datasets are written per format (`<chart>_<format>.svg`).
fn charts(suite: &Suite, out: &Path) -> BenchResult<Vec<(String, String)>> {
    let mut written = Vec::new();
    for lake in lakes(suite) {
        written.extend(lake_charts(suite, lake, out)?);
    }

    // PK memory: one series per (format, table, scale factor)
    let mut series = Vec::new();
    for lake in lakes(suite) {
        for table in ["customer", "part"] {
            for sf in sfs(suite, lake) {
                let pts: Vec<(f64, f64)> = suite
                    .memory
                    .iter()
                    .filter(|m| m.lake == lake && m.table == table && m.sf == sf)
                    .map(|m| (m.tail_rows as f64, m.union_peak_bytes as f64 / 1048576.0))
                    .collect();
                if !pts.is_empty() {
                    series.push((format!("{lake} {table} SF {sf}"), pts));
                }
            }
        }
    }
    let file = "pk_memory.svg";
    if line_chart(
        &out.join(file),
        "Peak heap of a PK table union scan vs tail size",
        "changelog rows in the tail",
        "peak heap growth (MiB)",
        &series,
        false,
        false,
    )? {
        written.push((
            file.to_string(),
            "Peak heap growth (counting allocator) during one union scan of a primary-key table, vs the changelog rows in its tail, per lake format.".into(),
        ));
    }

    // log decode
    if !suite.decode.is_empty() {
        let cats: Vec<String> = suite.decode.iter().map(|d| d.codec.clone()).collect();
        let series = vec![
            (
                "arrow-ipc read_record_batch".to_string(),
                suite
                    .decode
                    .iter()
                    .map(|d| Some(d.rows as f64 / d.arrow_ipc_secs / 1e6))
                    .collect(),
            ),
            (
                "fluss BucketLogReader".to_string(),
                suite
                    .decode
                    .iter()
                    .map(|d| Some(d.rows as f64 / d.fluss_reader_secs / 1e6))
                    .collect(),
            ),
        ];
        let file = "log_decode.svg";
        if bar_chart(
            &out.join(file),
            "Log tail decode throughput (higher is better)",
            "million rows / s (log)",
            &cats,
            &series,
            None,
        )? {
            written.push((
                file.to_string(),
                "Log tail decode throughput: this crate's BucketLogReader vs arrow-ipc's own reader on the same segments.".into(),
            ));
        }
    }
    Ok(written)
}

/// The charts of one lake format's datasets: peers, tail share, scale factor, target
/// partitions.
fn lake_charts(suite: &Suite, lake: LakeFormat, out: &Path) -> BenchResult<Vec<(String, String)>> {
    let tp = main_tp(suite);
    let title = lake.title();
    let mut written = Vec::new();
    let names: Vec<&str> = suite.queries.iter().map(|q| q.name).collect();

    // peers at tail 0, largest SF
    if let Some(sf) = largest_sf_with(suite, lake, 0.0) {
        let series: Vec<(String, Vec<Option<f64>>)> =
            ["union", "lake_only", "duckdb", lake.python_peer()]
                .iter()
                .map(|e| {
                    (
                        e.to_string(),
                        names
                            .iter()
                            .map(|q| {
                                Some(
                                    median(suite, lake, sf, 0.0, q, e, tp)?
                                        / median(suite, lake, sf, 0.0, q, "listing_table", tp)?,
                                )
                            })
                            .collect(),
                    )
                })
                .collect();
        let file = format!("peers_{lake}.svg");
        if bar_chart(
            &out.join(&file),
            &format!("{title}: time / DataFusion ListingTable, SF {sf}, tail 0% (lower is better)"),
            "ratio to ListingTable (log)",
            &names.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            &series,
            Some(1.0),
        )? {
            written.push((
                file,
                format!("{title}: every engine's median time as a ratio to DataFusion ListingTable on the same parquet files (SF {sf}, tail 0%, {tp} partitions); the line is 1.0."),
            ));
        }
    }

    // tail share
    if let Some(sf) = sfs(suite, lake).first().copied() {
        let shares = shares_at(suite, lake, sf);
        let series: Vec<(String, Vec<(f64, f64)>)> = names
            .iter()
            .map(|q| {
                (
                    q.to_string(),
                    shares
                        .iter()
                        .filter_map(|s| {
                            Some((s * 100.0, median(suite, lake, sf, *s, q, "union", tp)?))
                        })
                        .collect(),
                )
            })
            .collect();
        let file = format!("tail_share_{lake}.svg");
        if shares.len() > 1
            && line_chart(
                &out.join(&file),
                &format!("{title}: union read time vs tail share (SF {sf})"),
                "share of each table in the log tail (%)",
                "median ms (log)",
                &series,
                false,
                true,
            )?
        {
            written.push((
                file,
                format!("{title}: union read median time vs the share of each table left in the Fluss log tail (SF {sf}, {tp} partitions)."),
            ));
        }
    }

    // scale factor
    let all_sfs = sfs(suite, lake);
    if all_sfs.len() > 1 {
        let series: Vec<(String, Vec<(f64, f64)>)> = names
            .iter()
            .map(|q| {
                (
                    q.to_string(),
                    all_sfs
                        .iter()
                        .filter_map(|sf| {
                            Some((*sf, median(suite, lake, *sf, 0.0, q, "union", tp)?))
                        })
                        .collect(),
                )
            })
            .collect();
        let file = format!("scale_factor_{lake}.svg");
        if line_chart(
            &out.join(&file),
            &format!("{title}: union read time vs scale factor (tail 0%)"),
            "TPC-H scale factor (log)",
            "median ms (log)",
            &series,
            true,
            true,
        )? {
            written.push((
                file,
                format!("{title}: union read median time vs scale factor at tail 0% (log-log: slope 1 = linear)."),
            ));
        }
    }

    // target partitions
    let tps: BTreeSet<usize> = suite
        .measurements
        .iter()
        .filter(|m| m.lake == lake)
        .map(|m| m.target_partitions)
        .collect();
    if tps.len() > 1
        && let Some(sf) = largest_sf_with(suite, lake, 0.0)
    {
        let fewest = *tps.iter().next().unwrap_or(&1);
        let series: Vec<(String, Vec<(f64, f64)>)> = names
            .iter()
            .map(|q| {
                let base = median(suite, lake, sf, 0.0, q, "union", fewest);
                (
                    q.to_string(),
                    tps.iter()
                        .filter_map(|t| {
                            Some((
                                *t as f64,
                                base? / median(suite, lake, sf, 0.0, q, "union", *t)?,
                            ))
                        })
                        .collect(),
                )
            })
            .collect();
        let file = format!("target_partitions_{lake}.svg");
        if line_chart(
            &out.join(&file),
            &format!("{title}: union read speed-up vs target partitions (SF {sf}, tail 0%)"),
            "target partitions",
            "speed-up over the fewest partitions",
            &series,
            false,
            false,
        )? {
            written.push((
                file,
                format!(
                    "{title}: speed-up of the union read over {fewest} target partition(s) (SF {sf}, tail 0%)."
                ),
            ));
        }
    }
    Ok(written)
}

/// Writes `report.md`, the charts and `results.json` to `out`.
pub fn write(suite: &Suite, out: &Path) -> BenchResult<()> {
    std::fs::create_dir_all(out).context(|| format!("creating {}", out.display()))?;
    std::fs::write(
        out.join("results.json"),
        serde_json::to_vec_pretty(suite).context(|| "serializing results".into())?,
    )
    .context(|| "writing results.json".into())?;
    let charts = charts(suite, out)?;
    let md = markdown(suite, &charts);
    std::fs::write(out.join("report.md"), md).context(|| "writing report.md".into())?;
    Ok(())
}

/// A timing cell: `median (min–max)`, `not supported` when the engine said it cannot
/// run the query, `—` when it did not run.
fn cell(
    suite: &Suite,
    lake: LakeFormat,
    sf: f64,
    share: f64,
    query: &str,
    engine: &str,
    tp: usize,
) -> String {
    match timing(suite, lake, sf, share, query, engine, tp) {
        Some(t) => fmt_ms(Some(t)),
        None if not_supported(suite, lake, sf, share, query, engine, tp).is_some() => {
            "not supported".into()
        }
        None => "—".into(),
    }
}

fn markdown(suite: &Suite, charts: &[(String, String)]) -> String {
    let tp = main_tp(suite);
    let mut md = String::new();
    let _ = writeln!(md, "# fluss-datafusion benchmark suite\n");
    let _ = writeln!(
        md,
        "Union read (lake snapshot + Fluss log tail) against its peers on the same files, for \
         every lake format: each dataset is generated once per format with the same generator \
         and seed, and each section below names the format it was measured on. \
         Every figure is a median of at least {} run(s) after {} warm-up run(s) (more, up to 20x, \
         until a query's runs add up to {} ms; the engines of a query run in turn), shown as \
         `median (min–max)` ms, and as a ratio to a named peer. Each dataset is flushed to \
         disk (`sync`) after it is generated and before it is timed. Lake formats: {}.\n",
        suite.config["runs"],
        suite.config["warmup"],
        suite.config["min_time_ms"],
        suite.config["lake_formats"]
    );
    md.push_str(&provenance(&suite.machine));
    let _ = writeln!(
        md,
        "\nConfiguration: `{}`\n",
        serde_json::to_string(&suite.config).unwrap_or_default()
    );

    let _ = writeln!(md, "## Targets\n");
    let _ = writeln!(
        md,
        "Computed from this run; timings never fail the run. A ratio between two engines \
         timed in the same rounds (union, lake-only, ListingTable) is the median of the \
         per-round ratios, so drift of the machine between rounds cancels; the tables below \
         show each engine's own median. Targets with a lake format were measured on that \
         format's datasets; the cross-format target compares two formats' datasets.\n"
    );
    let _ = writeln!(
        md,
        "| target | lake | result | value | bound | detail |\n|---|---|---|---|---|---|"
    );
    for t in &suite.targets {
        let _ = writeln!(
            md,
            "| `{}` — {} | {} | **{}** | {} | {} | {} |",
            t.name,
            t.description,
            t.lake.map(|l| l.name()).unwrap_or("—"),
            match t.pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "not measured",
            },
            t.value
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "—".into()),
            t.threshold,
            t.detail.replace('|', "/")
        );
    }

    // every other format's union read against Paimon's on the same data
    let paimon = LakeFormat::Paimon;
    for lake in lakes(suite) {
        if lake == paimon || !lakes(suite).contains(&paimon) {
            continue;
        }
        let title = lake.title();
        let _ = writeln!(
            md,
            "\n## {title} vs Paimon: union read on the same data ({tp} partitions)\n\n\
             The same generator and seed tiered into each format; `{title} / Paimon` is the ratio of \
             the two union reads' medians (the datasets run one after the other, not in the same rounds). \
             The target `{lake}_pk_union_tail10_vs_paimon` is the worst of {} at tail 10% (bound {PK_TAIL10_VS_PAIMON_BOUND}x).\n",
            PK_QUERIES.join(", ")
        );
        for sf in sfs(suite, lake) {
            let shares: Vec<f64> = shares_at(suite, lake, sf)
                .into_iter()
                .filter(|s| shares_at(suite, paimon, sf).contains(s))
                .collect();
            if shares.is_empty() {
                continue;
            }
            let mut header = format!("SF {sf}\n\n| query |");
            let mut sep = "|---|".to_string();
            for s in &shares {
                let _ = write!(
                    header,
                    " {} Paimon ms | {} {title} ms | {title} / Paimon |",
                    pct(*s),
                    pct(*s)
                );
                sep.push_str("---|---|---|");
            }
            let _ = writeln!(md, "{header}\n{sep}");
            for q in &suite.queries {
                let mut row = format!("| `{}` |", q.name);
                for s in &shares {
                    let _ = write!(
                        row,
                        " {} | {} | {} |",
                        fmt_ms(timing(suite, paimon, sf, *s, q.name, "union", tp)),
                        fmt_ms(timing(suite, lake, sf, *s, q.name, "union", tp)),
                        fmt_ratio(
                            median(suite, lake, sf, *s, q.name, "union", tp),
                            median(suite, paimon, sf, *s, q.name, "union", tp)
                        )
                    );
                }
                let _ = writeln!(md, "{row}");
            }
            let _ = writeln!(md);
        }
    }

    let _ = writeln!(md, "\n## Peers\n");
    let _ = writeln!(md, "| peer | lake | ran | what |\n|---|---|---|---|");
    for p in &suite.peers {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            p.name,
            p.lake.map(|l| l.name()).unwrap_or("—"),
            if p.ran { "yes" } else { "**no**" },
            p.note
        );
    }

    let _ = writeln!(md, "\n## Queries\n");
    let _ = writeln!(md, "| query | what |\n|---|---|");
    for q in &suite.queries {
        let _ = writeln!(md, "| `{}` | {} |", q.name, q.title);
    }

    for lake in lakes(suite) {
        lake_sections(&mut md, suite, lake);
    }

    let _ = writeln!(
        md,
        "\n## Primary-key tables: peak memory vs tail\n\nPeak heap growth during one scan aggregate (counting global allocator); ratio to **the lake-only read** of the same table.\n"
    );
    let _ = writeln!(
        md,
        "| lake | table | SF | tail share | tail changelog rows | union peak MiB | lake-only peak MiB | union / lake-only |\n|---|---|---|---|---|---|---|---|"
    );
    for p in &suite.memory {
        let mib = |b: usize| b as f64 / 1048576.0;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:.1} | {} | {} |",
            p.lake,
            p.table,
            p.sf,
            pct(p.tail_share),
            p.tail_rows,
            mib(p.union_peak_bytes),
            p.lake_only_peak_bytes
                .map(|b| format!("{:.1}", mib(b)))
                .unwrap_or_else(|| "—".into()),
            fmt_ratio(
                Some(p.union_peak_bytes as f64),
                p.lake_only_peak_bytes.map(|b| b as f64)
            ),
        );
    }

    if let Some(p) = &suite.planning {
        let _ = writeln!(
            md,
            "\n## Cluster source: planning a {}-bucket table\n\n`{}` planned (logical and physical plan: \
             snapshot, offsets of every bucket, lake splits; nothing executed) through each source in turn; \
             ratio to **the LocalStore source**. The lake plan is cached per snapshot in both.\n",
            p.buckets, p.query
        );
        let _ = writeln!(
            md,
            "| source | median ms (min–max) | ratio |\n|---|---|---|\n| LocalStore | {} | 1.00 |\n| cluster (test server, loopback) | {} | {} |",
            fmt_ms(Some(&p.local_store)),
            fmt_ms(Some(&p.cluster)),
            fmt_ratio(Some(p.cluster.median_ms), Some(p.local_store.median_ms)),
        );
    }

    let _ = writeln!(
        md,
        "\n## Log tail decode\n\nEvery bucket of a tail-only `lineitem` table read on one thread; ratio to **arrow-ipc `read_record_batch`** \
         on the same batches' Arrow messages (both include reading the segment files; the reader also frames, verifies CRC-32C and decodes change types).\n"
    );
    let _ = writeln!(
        md,
        "| codec | rows | batches | segment bytes | arrow-ipc ms | reader ms | reader Mrows/s | reader / arrow-ipc throughput | reader ns/row |\n|---|---|---|---|---|---|---|---|---|"
    );
    for d in &suite.decode {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1} |",
            d.codec,
            d.rows,
            d.batches,
            d.bytes,
            d.arrow_ipc_secs * 1e3,
            d.fluss_reader_secs * 1e3,
            d.rows as f64 / d.fluss_reader_secs / 1e6,
            d.throughput_ratio(),
            d.ns_per_row()
        );
    }

    let _ = writeln!(md, "\n## Point lookup: buckets read\n");
    let _ = writeln!(
        md,
        "| lake | SF | tail share | buckets with rows read | buckets | rows read |\n|---|---|---|---|---|---|"
    );
    for l in &suite.lookups {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            l.lake,
            l.sf,
            pct(l.tail_share),
            l.buckets_with_rows,
            l.buckets_total,
            l.rows_read
        );
    }
    for lake in lakes(suite) {
        let of_lake: Vec<_> = suite.lookups.iter().filter(|l| l.lake == lake).collect();
        if let Some(l) = of_lake
            .iter()
            .rev()
            .find(|l| l.tail_share > 0.0)
            .or(of_lake.last())
        {
            let _ = writeln!(
                md,
                "\nEXPLAIN ANALYZE of `{}` ({}, SF {}, tail {}):\n\n```text\n{}```",
                l.sql,
                lake.title(),
                l.sf,
                pct(l.tail_share),
                l.plan
            );
        }
    }

    if !charts.is_empty() {
        let _ = writeln!(md, "\n## Charts\n");
        for (file, caption) in charts {
            let _ = writeln!(md, "{caption}\n\n![{file}]({file})\n");
        }
    }

    let _ = writeln!(md, "\n## Datasets\n");
    let _ = writeln!(
        md,
        "PK tails are written in 8 rounds, each one KV write (the round's new keys, updated \
         keys and deletes together, as a Fluss client batches a bucket's writes), so every \
         bucket's changelog tail is 8 log batches mixing +I, -U/+U pairs and -D.\n"
    );
    let _ = writeln!(
        md,
        "| lake | SF | tail share | buckets | load s | disk MiB | lake files (li/o/c/p) | rows: lake + tail → live (lineitem; orders; customer; part) |\n|---|---|---|---|---|---|---|---|"
    );
    for d in &suite.datasets {
        let files: Vec<String> = ["lineitem", "orders", "customer", "part"]
            .iter()
            .map(|t| d.lake_files.get(*t).copied().unwrap_or(0).to_string())
            .collect();
        let rows: Vec<String> = d
            .tables
            .iter()
            .map(|t| {
                if t.primary_key {
                    format!(
                        "{} + {} ({} upd, {} del) → {}",
                        t.lake_rows, t.tail_rows, t.tail_updates, t.tail_deletes, t.live_rows
                    )
                } else {
                    format!("{} + {} → {}", t.lake_rows, t.tail_rows, t.live_rows)
                }
            })
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.1} | {:.1} | {} | {} |",
            d.lake,
            d.sf,
            pct(d.tail_share),
            d.buckets,
            d.load_seconds,
            d.disk_bytes as f64 / 1048576.0,
            files.join("/"),
            rows.join("; ")
        );
    }

    let _ = writeln!(md, "\n## Problems\n");
    if suite.problems.is_empty() {
        let _ = writeln!(
            md,
            "None: every query ran on every engine that could run, and every union count matched the rows written."
        );
    } else {
        for p in &suite.problems {
            let _ = writeln!(md, "- {p}");
        }
    }

    let _ = writeln!(
        md,
        "\n## Reproduce\n\n```sh\nbash tests/python/setup_venv.sh   # DuckDB + pypaimon + pyiceberg peers\ncargo run --release --bin fluss-bench -- --out target/bench-results/suite\n```\n\n\
         `--lake-formats paimon,iceberg` picks the formats (default: all). \
         Raw numbers (every sample, each with its `lake`): `results.json`. The data is deterministic: TPC-H rows from tpchgen, \
         the primary-key tail from `--seed`."
    );
    md
}

/// The sections of one lake format's datasets: peers at tail 0, tail share, scale
/// factor, target partitions.
fn lake_sections(md: &mut String, suite: &Suite, lake: LakeFormat) {
    let tp = main_tp(suite);
    let title = lake.title();
    let reader = lake.python_peer();
    let pk_files = match lake {
        LakeFormat::Paimon => {
            "For PK tables ListingTable and DuckDB read the Paimon files directly (one sorted run \
             per bucket, retractions filtered, no merge), which is a lower bound."
        }
        LakeFormat::Iceberg => {
            "For PK tables ListingTable and DuckDB read the Iceberg data files directly: the \
             tiering writes one row per key, and the equality deletes it commits with them apply \
             only to earlier snapshots' files, so the data files hold exactly the live rows. \
             pyiceberg cannot read tables with equality-delete files (`not supported`)."
        }
    };
    for sf in sfs(suite, lake) {
        if !shares_at(suite, lake, sf).contains(&0.0) {
            continue;
        }
        let _ = writeln!(
            md,
            "\n## {title}: union read vs peers — SF {sf}, tail 0% ({tp} partitions)\n\n\
             Ratios are to **DataFusion ListingTable** over the same parquet files (lower bound of the lake part); \
             the last column is lake-only / {reader}. {pk_files}\n"
        );
        let _ = writeln!(
            md,
            "| query | ListingTable ms | union ms | union / LT | lake-only ms | lake-only / LT | DuckDB ms | DuckDB / LT | {reader} ms | {reader} / LT | lake-only / {reader} |\n|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for q in &suite.queries {
            let c = |e: &str| cell(suite, lake, sf, 0.0, q.name, e, tp);
            let med = |e: &str| median(suite, lake, sf, 0.0, q.name, e, tp);
            let lt = med("listing_table");
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                q.name,
                c("listing_table"),
                c("union"),
                fmt_ratio(med("union"), lt),
                c("lake_only"),
                fmt_ratio(med("lake_only"), lt),
                c("duckdb"),
                fmt_ratio(med("duckdb"), lt),
                c(reader),
                fmt_ratio(med(reader), lt),
                fmt_ratio(med("lake_only"), med(reader)),
            );
        }
    }

    for sf in sfs(suite, lake) {
        let shares = shares_at(suite, lake, sf);
        if shares.len() < 2 {
            continue;
        }
        let _ = writeln!(
            md,
            "\n## {title}: union read vs tail share — SF {sf} ({tp} partitions)\n\n\
             Union median ms per tail share, with the ratio to **the union read at 0% tail** and to **lake-only at the same share** \
             (`u/0%`, `u/lake`); `cl/u` is the same union read through the cluster source and the RPC test server on loopback / \
             through the LocalStore source.\n"
        );
        let mut header = "| query |".to_string();
        let mut sep = "|---|".to_string();
        for s in &shares {
            let _ = write!(header, " {} ms | u/0% | u/lake | cl/u |", pct(*s));
            sep.push_str("---|---|---|---|");
        }
        let _ = writeln!(md, "{header}\n{sep}");
        for q in &suite.queries {
            let base = median(suite, lake, sf, 0.0, q.name, "union", tp);
            let mut row = format!("| `{}` |", q.name);
            for s in &shares {
                let u = median(suite, lake, sf, *s, q.name, "union", tp);
                let cluster = time_ratio(suite, lake, (sf, *s, tp), q.name, "cluster", "union");
                let _ = write!(
                    row,
                    " {} | {} | {} | {} |",
                    fmt_ms(timing(suite, lake, sf, *s, q.name, "union", tp)),
                    fmt_ratio(u, base),
                    fmt_ratio(u, median(suite, lake, sf, *s, q.name, "lake_only", tp)),
                    cluster.map_or_else(|| "—".into(), |r| format!("{r:.2}"))
                );
            }
            let _ = writeln!(md, "{row}");
        }
    }

    let all_sfs = sfs(suite, lake);
    if all_sfs.len() > 1 {
        let first = all_sfs[0];
        let _ = writeln!(
            md,
            "\n## {title}: union read vs scale factor — tail 0% ({tp} partitions)\n\nRatio to **the union read at SF {first}**; data grows by the SF ratio.\n"
        );
        let mut header = "| query |".to_string();
        let mut sep = "|---|".to_string();
        for sf in &all_sfs {
            let _ = write!(
                header,
                " SF {sf} ms | / SF {first} (data x{:.0}) |",
                sf / first
            );
            sep.push_str("---|---|");
        }
        let _ = writeln!(md, "{header}\n{sep}");
        for q in &suite.queries {
            let base = median(suite, lake, first, 0.0, q.name, "union", tp);
            let mut row = format!("| `{}` |", q.name);
            for sf in &all_sfs {
                let _ = write!(
                    row,
                    " {} | {} |",
                    fmt_ms(timing(suite, lake, *sf, 0.0, q.name, "union", tp)),
                    fmt_ratio(median(suite, lake, *sf, 0.0, q.name, "union", tp), base)
                );
            }
            let _ = writeln!(md, "{row}");
        }
    }

    let tps: BTreeSet<usize> = suite
        .measurements
        .iter()
        .filter(|m| m.lake == lake)
        .map(|m| m.target_partitions)
        .collect();
    if tps.len() > 1 {
        let min_tp = *tps.iter().next().unwrap_or(&1);
        let _ = writeln!(
            md,
            "\n## {title}: union read vs target partitions — tail 0%\n\nSpeed-up is **the union read at {min_tp} partition(s)** / this.\n"
        );
        for sf in sfs(suite, lake) {
            if !shares_at(suite, lake, sf).contains(&0.0) {
                continue;
            }
            let mut header = format!("SF {sf}\n\n| query |");
            let mut sep = "|---|".to_string();
            for t in &tps {
                let _ = write!(header, " {t} partitions ms | speed-up |");
                sep.push_str("---|---|");
            }
            let _ = writeln!(md, "{header}\n{sep}");
            for q in &suite.queries {
                let base = median(suite, lake, sf, 0.0, q.name, "union", min_tp);
                let mut row = format!("| `{}` |", q.name);
                for t in &tps {
                    let _ = write!(
                        row,
                        " {} | {} |",
                        fmt_ms(timing(suite, lake, sf, 0.0, q.name, "union", *t)),
                        fmt_ratio(base, median(suite, lake, sf, 0.0, q.name, "union", *t))
                    );
                }
                let _ = writeln!(md, "{row}");
            }
            let _ = writeln!(md);
        }
    }
}

/// The "Machine" section every report carries, so a reader can tell what made it:
/// CPU, cores, memory, OS, rustc, commit and whether the tree was dirty, build
/// profile and date (and the suite's own duration where it has one).
pub(crate) fn provenance(machine: &BTreeMap<String, String>) -> String {
    let mut md = String::from("## Machine\n\n| | |\n|---|---|\n");
    for k in [
        "cpu",
        "nproc",
        "memory",
        "os",
        "rustc",
        "git_commit",
        "git_dirty",
        "profile",
        "date",
        "suite_seconds",
    ] {
        if let Some(v) = machine.get(k) {
            let _ = writeln!(md, "| {k} | {v} |");
        }
    }
    md.push('\n');
    md
}
