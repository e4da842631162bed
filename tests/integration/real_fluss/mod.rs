//! Conformance against the real Apache Fluss: a real cluster, lakes written by Fluss's
//! own tiering service, and Flink's batch union read as the expected answer
//! (`tests/real-fluss/`, driven through `fluss_test_support::real_fluss`).
//!
//! Each format runs one scenario matrix on one cluster: {log, primary-key} tables ×
//! {no partitions, partitioned by STRING, INT, DATE} × {never tiered, tiered with a
//! tail, fully tiered}, plus tables for the cases around them (a log table with a
//! bucket key, buckets without lake data or log, ADD COLUMN with an older lake snapshot
//! and a tail of two schemas, an expired partition left only in the lake, an
//! auto-partitioned table). Every table is read through the `ClusterSource` and
//! compared with Flink's union read of the same table at the same moment, with
//! Flink's `t$lake`, and with a model of the rows written (the oracle where Flink is
//! not one: Iceberg primary-key tables, which Flink cannot batch-read, apache/fluss
//! #3048; and Paimon tables partitioned by a non-STRING type, whose lake splits
//! Fluss 0.9.1's Flink reader names by `getString` — fixed upstream in `8cd8d1628`).
//!
//! After the matrix, the lakes the LocalStore's own tiering writes are read by
//! Paimon's / Iceberg's own Flink connectors (`our_lakes.rs`), rows our cluster
//! source writes are read back by Flink (`writes.rs`), and the differential test's random operations run on the same cluster
//! (`differential::run_against_real`, `FLUSS_REAL_DIFF_STEPS`, default 30).
//!
//! The harness runs the newest Fluss release Maven Central serves here
//! ([`fluss_test_support::real_fluss::FLUSS_VERSION`]); without it set up
//! (`tests/real-fluss/setup.sh`) the tests skip, unless `FLUSS_REQUIRE_REAL_FLUSS=1`.

mod canonical;
mod data;
mod faults;
mod our_lakes;
mod scenario;
mod writes;

use std::sync::Mutex;
use std::time::Duration;

use fluss_test_support::real_fluss::RealFluss;
use fluss_test_support::watchdog::Watchdog;

/// One real cluster at a time: two JVMs with Flink mini clusters would only fight
/// over the two cores.
static ONE_CLUSTER: Mutex<()> = Mutex::new(());

fn run(format: &str) {
    if !RealFluss::available(format) {
        return;
    }
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    // the harness's own life is bounded; a read of ours that hangs is not
    let limit = 1500;
    let _limit = Watchdog::arm(
        format!("real_fluss::{format}_union_reads_match_flink"),
        Duration::from_secs(limit),
    );
    let mut fluss = RealFluss::start(format, limit).expect("the real-Fluss harness starts");
    let mut failures = scenario::run_matrix(&mut fluss);
    // the lakes our own tiering writes, read by the format's own Java reader
    failures.extend(our_lakes::check(&mut fluss));
    // rows we write to the cluster, read back by Flink
    failures.extend(writes::check(&mut fluss));
    // random writes, tierings and reads, every read against a model
    let steps = std::env::var("FLUSS_REAL_DIFF_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    crate::differential::run_against_real(&mut fluss, steps);
    assert!(
        failures.is_empty(),
        "{} disagreement(s) with the real Fluss ({format}; harness log {}):\n{}",
        failures.len(),
        fluss.log_path().display(),
        failures.join("\n\n")
    );
}

#[test]
fn paimon_union_reads_match_flink() {
    run("paimon");
}

#[test]
fn iceberg_union_reads_match_flink() {
    run("iceberg");
}

/// A tablet server stopped during a read, the coordinator restarted, a table dropped
/// and created again between planning and execution (`faults.rs`).
#[test]
fn faults_of_a_real_cluster_end_in_the_full_answer_or_a_named_error() {
    if !RealFluss::available("paimon") {
        return;
    }
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let limit = 900;
    let _limit = Watchdog::arm(
        "real_fluss::faults_of_a_real_cluster_end_in_the_full_answer_or_a_named_error",
        Duration::from_secs(limit),
    );
    let mut fluss = RealFluss::start("paimon", limit).expect("the real-Fluss harness starts");
    faults::run(&mut fluss);
}
