//! The integration tests, one binary (each test file of its own would link the whole
//! dependency tree again): union reads, the LocalStore, bad input and damaged stores,
//! crash points, concurrent writers, a source that is not a LocalStore, the Java
//! golden statistics, pypaimon as an oracle, and the differential test against a
//! model.

#[allow(dead_code)]
mod common;

mod auto_partition;
mod bad_input;
mod committed_means_kept;
mod concurrent_writers;
mod crash_points;
mod datafusion_writes;
mod differential;
mod distributed_workers;
mod foreign_source;
mod iceberg_interop;
mod local_store;
mod log_statistics_golden;
mod no_silent_loss;
mod object_storage;
mod pypaimon_interop;
mod real_fluss;
mod schema_evolution;
mod server_scan;
mod time_travel;
mod union_read;
