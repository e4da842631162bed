//! A Fluss RPC test server: an in-process Tokio TCP server that speaks Apache Fluss's wire
//! protocol (framing and protobuf messages) well enough for the official Rust client
//! (`fluss-rs`) to connect, browse metadata, list offsets, read lake snapshot metadata and
//! fetch log batches, and take the writes of its append and upsert writers.
//!
//! * [`frame`]: length-prefixed frames, request/response headers, API keys.
//! * [`proto`]: the protobuf messages of the RPCs served.
//! * [`errors`]: Fluss protocol error codes.
//! * [`model`]: the [`model::ClusterModel`] trait the server reads everything from.
//! * [`log`]: log batch indexing, slicing at batch boundaries, column projection.
//! * [`memory`]: an in-memory `ClusterModel`.
//! * [`local_store`]: a `ClusterModel` holding everything a library `LocalStore` holds.
//! * [`writes`]: a `ClusterModel` that takes writes (`ProduceLog`, and `PutKv` applied by
//!   [`kv_write`] as a tablet server's `KvTablet` applies it).
//! * [`server`]: the server itself.
//! * [`faults`]: fault injection for the server (dropped connections, error answers,
//!   damaged batches, missing leaders), off by default.
//! * [`s3`]: a local S3-compatible server (moto) for lakes on object storage.
//! * [`real_fluss`]: the real Apache Fluss (cluster, tiering service, Flink's union read)
//!   from `tests/real-fluss/`, driven by JSON commands.
//! * [`watchdog`]: a time limit that stops a hung test process, naming the test.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use std::sync::Arc;
//! use fluss_test_support::{memory::MemoryCluster, server::{ServerConfig, TestServer}};
//!
//! let mut cluster = MemoryCluster::new();
//! cluster.add_database("db");
//! let server = TestServer::start(Arc::new(cluster), ServerConfig::default()).await?;
//! let bootstrap = server.bootstrap_servers(); // give this to fluss-rs's Config
//! # drop(bootstrap);
//! drop(server); // stops the listener and every connection
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod errors;
pub mod faults;
mod filter;
pub mod frame;
pub mod kv;
mod kv_scan;
pub mod kv_write;
pub mod local_store;
pub mod log;
pub mod memory;
pub mod mirror;
pub mod model;
pub mod proto;
pub mod real_fluss;
pub mod real_source;
pub mod s3;
pub mod server;
pub mod watchdog;
pub mod writes;
