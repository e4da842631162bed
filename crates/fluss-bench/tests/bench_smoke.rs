//! The benchmark suite's smoke run: `fluss-bench --smoke` generates tiny TPC-H-shaped
//! stores, runs every query on the union read and on every peer that can run, and
//! writes the report. This test checks that the run succeeded and that `report.md`
//! and `results.json` exist and list every query (it never looks at timings).

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

#[test]
fn smoke_run_writes_a_report_with_every_query() {
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_fluss-bench"))
        .arg("--smoke")
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("running fluss-bench");
    assert!(
        output.status.success(),
        "fluss-bench --smoke failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );

    let report = std::fs::read_to_string(out.path().join("report.md")).expect("report.md");
    let json = std::fs::read_to_string(out.path().join("results.json")).expect("results.json");
    let results: serde_json::Value = serde_json::from_str(&json).expect("results.json is JSON");
    let measurements = results["measurements"]
        .as_array()
        .expect("measurements array");
    for query in QUERIES {
        assert!(report.contains(query), "report.md does not list {query}");
        assert!(
            measurements.iter().any(|m| m["query"] == query
                && m["engine"] == "union"
                && m["timing"]["median_ms"].is_number()),
            "results.json has no union timing for {query}"
        );
    }
    for section in ["## Targets", "## Peers", "## Log tail decode"] {
        assert!(report.contains(section), "report.md lacks {section}");
    }
    assert_eq!(
        results["decode"].as_array().map(Vec::len),
        Some(2),
        "log decode measured for ZSTD and LZ4_FRAME"
    );
    assert!(out.path().join("peers.svg").exists(), "peers.svg");
}
