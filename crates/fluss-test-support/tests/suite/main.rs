//! The test server's tests, one binary (each file of its own would link the whole
//! dependency tree again, 400 MB apiece): the wire protocol seen by a raw client,
//! fluss-rs 1.0 and pyfluss against a served LocalStore, the library's cluster source
//! with faults, writes and remote log segments.

mod common;

mod client;
mod cluster_faults;
mod cluster_source;
mod cluster_writes;
mod local_store;
mod pyfluss;
mod remote_log;
mod wire;
