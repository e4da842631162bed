//! The benchmark suite's smoke run: `fluss-bench --smoke` generates tiny TPC-H-shaped
//! stores for every lake format (Paimon, Iceberg), runs every query on the union read
//! and on every peer that can run, and writes the report. This test checks that the
//! run succeeded and that `report.md` and `results.json` exist and list every query
//! for every format, with the Iceberg-vs-Paimon comparison (it never looks at timings).

use std::process::Command;

const QUERIES: [&str; 9] = [
    "q1_scan_agg",
    "q6_filter_agg",
    "selective_filter",
    "count_star",
    "top_n",
    "point_lookup",
    "enrichment_join",
    "pk_scan_customer",
    "pk_scan_part",
];

/// The lake formats the suite runs on.
const LAKES: [&str; 2] = ["paimon", "iceberg"];

/// Runs `fluss-bench <args> --out <dir>` in a new temporary directory, which it
/// returns once the run succeeded (`what` names the run in the failure message).
fn run_bench(args: &[&str], what: &str) -> tempfile::TempDir {
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_fluss-bench"))
        .args(args)
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("running fluss-bench");
    assert!(
        output.status.success(),
        "fluss-bench {what} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

#[test]
fn smoke_run_writes_a_report_with_every_query() {
    let out = run_bench(&["--smoke"], "--smoke");

    let report = std::fs::read_to_string(out.path().join("report.md")).expect("report.md");
    let json = std::fs::read_to_string(out.path().join("results.json")).expect("results.json");
    let results: serde_json::Value = serde_json::from_str(&json).expect("results.json is JSON");
    let measurements = results["measurements"]
        .as_array()
        .expect("measurements array");
    let timed = |lake: &str, engine: &str, query: &str| {
        measurements.iter().any(|m| {
            m["lake"] == lake
                && m["query"] == query
                && m["engine"] == engine
                && m["timing"]["median_ms"].is_number()
        })
    };
    for query in QUERIES {
        assert!(report.contains(query), "report.md does not list {query}");
        for lake in LAKES {
            for engine in ["union", "cluster", "lake_only", "listing_table"] {
                assert!(
                    timed(lake, engine, query),
                    "results.json has no {engine} timing for {query} on {lake}"
                );
            }
        }
    }
    let datasets = results["datasets"].as_array().expect("datasets array");
    for lake in LAKES {
        assert!(
            datasets.iter().any(|d| d["lake"] == lake),
            "results.json has no {lake} dataset"
        );
    }
    for section in [
        "## Targets",
        "## Iceberg vs Paimon",
        "## Iceberg: union read vs peers",
        "## Paimon: union read vs peers",
        "## Peers",
        "## Log tail decode",
        "## Cluster source: planning a 64-bucket table",
    ] {
        assert!(report.contains(section), "report.md lacks {section}");
    }
    let targets = results["targets"].as_array().expect("targets array");
    let target = |name: &str, lake: Option<&str>| {
        targets
            .iter()
            .find(|t| t["name"] == name && t["lake"].as_str() == lake)
            .unwrap_or_else(|| panic!("results.json lacks target {name} ({lake:?})"))
    };
    for lake in LAKES {
        let t = target("cluster_vs_localstore", Some(lake));
        assert!(t["value"].is_number(), "{lake} cluster / LocalStore: {t}");
        let t = target("lake_only_vs_listing_table", Some(lake));
        assert!(
            t["value"].is_number(),
            "{lake} lake-only / ListingTable: {t}"
        );
    }
    let t = target("iceberg_pk_union_tail10_vs_paimon", None);
    assert!(t["value"].is_number(), "Iceberg / Paimon PK union: {t}");

    // pyiceberg, when the Python peers ran: log-table queries timed, queries of the
    // primary-key tables (equality deletes) reported as not supported, never failed
    let peers = results["peers"].as_array().expect("peers array");
    let pyiceberg_ran = peers
        .iter()
        .any(|p| p["name"] == "pyiceberg" && p["ran"] == true);
    if pyiceberg_ran {
        for query in QUERIES {
            let m = measurements
                .iter()
                .find(|m| {
                    m["lake"] == "iceberg" && m["engine"] == "pyiceberg" && m["query"] == query
                })
                .unwrap_or_else(|| panic!("no pyiceberg measurement of {query}"));
            let pk = matches!(
                query,
                "point_lookup" | "enrichment_join" | "pk_scan_customer" | "pk_scan_part"
            );
            if pk {
                assert!(m["not_supported"].is_string(), "pyiceberg {query}: {m}");
            } else {
                assert!(
                    m["timing"]["median_ms"].is_number(),
                    "pyiceberg {query}: {m}"
                );
            }
        }
    }
    assert_eq!(
        results["decode"].as_array().map(Vec::len),
        Some(2),
        "log decode measured for ZSTD and LZ4_FRAME"
    );
    for lake in LAKES {
        let chart = format!("peers_{lake}.svg");
        assert!(out.path().join(&chart).exists(), "{chart}");
    }
}

/// `fluss-bench --tpch` at a small scale, on both lake formats: all 22 TPC-H queries
/// through union read give the same answers as the same engine on the merged
/// contents as parquet (the run fails on any difference), with PK tails of new keys,
/// updates and deletes over two-round lakes.
#[test]
fn tpch_answers_through_union_read_equal_the_merged_parquet() {
    for (lake, share) in [("paimon", "0.3"), ("iceberg", "0.1")] {
        let out = run_bench(
            &[
                "--tpch",
                "--sf",
                "0.01",
                "--runs",
                "1",
                "--warmup",
                "0",
                "--tpch-tail-shares",
                share,
                "--lake-formats",
                lake,
            ],
            &format!("--tpch on {lake}"),
        );
        let report = std::fs::read_to_string(out.path().join("tpch.md")).expect("tpch.md");
        for q in 1..=22 {
            assert!(report.contains(&format!("| q{q} |")), "tpch.md lacks q{q}");
        }
        // every report says what made it
        for fact in [
            "| cpu |",
            "| nproc |",
            "| rustc |",
            "| git_commit |",
            "| git_dirty |",
            "| profile |",
            "| date |",
        ] {
            assert!(report.contains(fact), "tpch.md lacks {fact}");
        }
    }
}

/// `--tpch-fresh-runs` times queries in new `fluss-sql -c` processes (the shell built
/// beside the benchmark), union read and the merged parquet registered as external
/// tables alike; `--tpch-queries` picks the queries.
#[test]
fn tpch_fresh_processes_time_the_chosen_queries_through_the_shell() {
    let out = run_bench(
        &[
            "--tpch",
            "--sf",
            "0.01",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--tpch-tail-shares",
            "0.1",
            "--lake-formats",
            "paimon",
            "--tpch-fresh-runs",
            "1",
            "--tpch-queries",
            "q1,q6",
        ],
        "--tpch fresh",
    );
    let report = std::fs::read_to_string(out.path().join("tpch.md")).expect("tpch.md");
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("| q") && !l.starts_with("| query"))
        .collect();
    assert_eq!(rows.len(), 2, "only q1 and q6:\n{report}");
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | query | rows | union | parquet | duckdb | lake | ratio | union fresh | parquet fresh | fresh ratio |
        assert!(cells[8].parse::<f64>().is_ok(), "union fresh timed: {row}");
        assert!(
            cells[9].parse::<f64>().is_ok(),
            "parquet fresh timed: {row}"
        );
    }
}

/// `fluss-bench --tpch-distributed` over two workers (served in the benchmark's
/// process, every scan split as far as it goes): all 22 TPC-H queries over a Paimon
/// lake at SF 0.1 and an Iceberg lake at SF 0.01, each with a 10 % tail (PK tails with
/// updates and deletes), give the one-process answers (the run fails on any
/// difference), and most of them run as plans of several stages whose tasks are
/// spread over both workers.
#[test]
fn tpch_answers_over_two_workers_equal_one_process() {
    for (lake, sf) in [("paimon", "0.1"), ("iceberg", "0.01")] {
        let out = run_bench(
            &[
                "--tpch-distributed",
                "2",
                "--in-process-workers",
                "--worker-task-bytes",
                "1",
                "--sf",
                sf,
                "--runs",
                "0",
                "--tpch-tail-shares",
                "0.1",
                "--lake-formats",
                lake,
            ],
            &format!("--tpch-distributed on {lake}"),
        );
        let json = std::fs::read_to_string(out.path().join("tpch-distributed.json"))
            .expect("tpch-distributed.json");
        let run: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        let results = run["results"].as_array().expect("results");
        let names: Vec<&str> = results.iter().filter_map(|r| r["query"].as_str()).collect();
        let all: Vec<String> = (1..=22).map(|q| format!("q{q}")).collect();
        assert_eq!(names, all, "{lake}: every query checked");
        let spread = results
            .iter()
            .filter(|r| {
                r["stages"].as_u64() > Some(1) && r["tasks"].as_u64() > r["stages"].as_u64()
            })
            .count();
        assert!(
            spread >= 18,
            "{lake}: only {spread} of 22 queries ran as several stages with tasks on both \
             workers: {json}"
        );
    }
}
