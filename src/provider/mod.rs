//! DataFusion integration: the catalog, the table provider and the scan nodes.

mod binlog;
mod blocking;
mod catalog;
mod changelog;
mod changelog_filters;
mod damaged;
mod describe;
mod field_ids;
mod filter_estimate;
mod lake_exec;
mod lake_snapshots;
mod log_exec;
mod lookup_exec;
mod lookup_join;
mod options;
mod pk_exec;
mod statistics;
mod table;
mod view_types;
mod write;

pub(crate) use catalog::fluss_table_of;
pub use catalog::{FlussCatalog, FlussSchema};
pub(crate) use damaged::damaged_table_error;
pub use lookup_join::{FlussLookupJoinExec, LookupJoinRule};
pub use options::FlussOptions;
pub use table::{FlussTableProvider, ReadMode};
pub(crate) use write::read_only_virtual_table;
pub use write::{FlussWriteRule, FlussWriteTarget, with_write_rule};
