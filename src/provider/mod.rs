//! DataFusion integration: the catalog, the table provider and the scan nodes.

pub mod blocking;
pub mod catalog;
pub mod changelog;
pub mod describe;
pub mod lake_exec;
mod lake_snapshots;
pub mod log_exec;
pub mod pk_exec;
pub mod table;

pub use catalog::{FlussCatalog, FlussSchema};
pub use table::{FlussTableProvider, ReadMode};
