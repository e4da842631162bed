//! DataFusion integration: the catalog, the table provider and the scan nodes.

mod as_of_planner;
mod binlog;
mod blocking;
mod catalog;
mod changelog;
mod changelog_filters;
#[cfg(feature = "distributed")]
pub(crate) mod codec;
mod cooperative_joins;
mod damaged;
mod describe;
mod field_id_scan;
mod field_ids;
mod filter_estimate;
mod kv_scan_exec;
mod lake_exec;
mod lake_snapshots;
mod log_between;
mod log_exec;
mod lookup_exec;
mod lookup_join;
mod options;
mod partition_pruner;
mod pk_exec;
mod statistics;
mod table;
mod time_travel;
mod view_types;
mod write;

pub use as_of_planner::TimeTravelPlanner;
pub(crate) use catalog::fluss_table_of;
pub use catalog::{FlussCatalog, FlussSchema};
pub use cooperative_joins::CooperativeJoinsRule;
pub(crate) use damaged::damaged_table_error;
pub use log_between::{LOG_BETWEEN, LogBetweenFunction};
pub use lookup_join::{FlussLookupJoinExec, LookupJoinRule};
pub use options::FlussOptions;
pub use table::{FlussTableProvider, ReadMode};
pub use time_travel::TimeTravel;
pub(crate) use write::read_only_virtual_table;
pub use write::{FlussWriteRule, FlussWriteTarget, with_write_rule};
