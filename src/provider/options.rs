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
        /// About how many scanned rows one looked-up key costs: a join looks its
        /// build side's keys up only when their estimated count times this is no more
        /// than the probed table's estimated rows, and scans otherwise. Measured on a
        /// 2-core machine, 1,000 keys against scanning a 150,000-row table (lake on
        /// local disk): about 110 on the RPC test server (`fluss-bench --key-lookups`)
        /// and 134 on a real Fluss cluster (`fluss-bench --vs-flink`). Lower it where
        /// scans read remote object storage; 0 looks up whenever the keys fit
        /// `max_lookup_keys`.
        pub lookup_key_cost_rows: usize, default = 128
        /// How old, in milliseconds, the table metadata a read-only statement on a
        /// cluster is planned from may be without a request confirming it. 0 (the
        /// default): every such statement sends one Metadata request beside its
        /// planning, and its answer stands only if the tables did not change, so no
        /// answer is planned from metadata older than the statement. Above 0, a
        /// statement whose tables were all fetched within that time runs from them
        /// without the request, as a metastore cache's time to live: a table dropped,
        /// created again or altered meanwhile is seen only once that time has passed,
        /// and until then its reads fail naming the table or read it as it was.
        pub metadata_max_age_ms: u64, default = 0
        /// How a primary-key table's current rows are read where no lake snapshot
        /// holds them (Fluss's `client.scanner.kv.batch-strategy`, which a
        /// `/*+ OPTIONS('client.scanner.kv.batch-strategy' = '...') */` hint sets for
        /// one statement): `snapshot-merge` (the default) folds the changelog onto
        /// the lake snapshot; `server-scan` asks each bucket's tablet server for its
        /// current rows (ScanKv, a cluster of Fluss 1.0 or later), bucket by bucket,
        /// not one atomic snapshot across them. Where the changelog no longer
        /// reaches back to what the lake holds, a cluster scans the servers anyway.
        pub kv_batch_strategy: String, default = "snapshot-merge".to_string()
    }
}

/// Fluss's `client.scanner.kv.batch-strategy` value that reads primary-key tables
/// by ScanKv.
pub const SERVER_SCAN: &str = "server-scan";

impl ConfigExtension for FlussOptions {
    const PREFIX: &'static str = "fluss";
}
