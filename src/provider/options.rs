//! Session options of Fluss tables, set with `SET fluss.<name> = <value>`.

use datafusion::common::config::ConfigExtension;
use datafusion::common::extensions_options;

extensions_options! {
    /// How Fluss tables are read. A session built by [`crate::sql::FlussSession`]
    /// registers these; a provider in a session without them reads with the
    /// defaults.
    pub struct FlussOptions {
        /// Whether a filter fixing a primary-key table's whole key (`=`, `IN`) reads
        /// the keys' current rows from the tablet servers' key-value store (the
        /// Lookup RPC) instead of scanning lake and tail. Only sources that serve
        /// lookups (a cluster) use it; a LocalStore always scans, answering keys from
        /// its tail's key index. Lookups read the state when asked, not the lake
        /// snapshot and offset cut.
        pub key_lookups: bool, default = true
        /// Most keys a statement looks up on the tablet servers; a filter fixing more
        /// keys scans.
        pub max_lookup_keys: usize, default = 1024
    }
}

impl ConfigExtension for FlussOptions {
    const PREFIX: &'static str = "fluss";
}
