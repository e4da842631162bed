//! The cut: what one query reads, pinned at planning.
//!
//! A union read pins the readable lake snapshot `S` and, per bucket, the log range
//! `[offset_b(S), high watermark)`, where `offset_b(S)` is the exclusive end offset
//! tiered into `S` (missing: the bucket's earliest offset). Everything the query reads
//! comes from this cut, so a tiering or an append during the query cannot change its
//! answer (docs/DESIGN.md "The cut"; Fluss `LakeSplitGenerator`).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::log::LogRange;
use crate::source::{BucketLocation, FlussSource, FlussTable, ReadableSnapshot};
pub use crate::table::bucket_range;

/// The log range of one bucket in the cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketCut {
    /// Which bucket (and partition).
    pub location: BucketLocation,
    /// Offsets to read: `[tiered end, high watermark)`.
    pub range: LogRange,
}

/// A pinned view of a table: lake snapshot + per-bucket log ranges.
#[derive(Debug, Clone)]
pub struct UnionCut {
    /// The readable lake snapshot, if anything was tiered.
    pub snapshot: Option<ReadableSnapshot>,
    /// Every bucket of every selected partition with its log range.
    pub buckets: Vec<BucketCut>,
}

impl UnionCut {
    /// The snapshot id, if any.
    pub fn snapshot_id(&self) -> Option<i64> {
        self.snapshot.as_ref().map(|s| s.snapshot_id)
    }
}

/// Pins the cut of `table`. `keep_partition` selects partitions by name (partition
/// pruning) and `buckets`, when given, the buckets (a filter that fixes the bucket
/// key: the other buckets' offsets are never looked up); `use_lake` pins the
/// readable lake snapshot (off for log-only reads) and `read_log` resolves the
/// per-bucket log ranges (off for lake-only reads, which would otherwise look up
/// every bucket's offsets for nothing).
pub async fn plan_cut(
    source: &dyn FlussSource,
    table: &FlussTable,
    keep_partition: &(dyn Fn(&str) -> bool + Send + Sync),
    buckets: Option<&HashSet<i32>>,
    use_lake: bool,
    read_log: bool,
) -> Result<UnionCut> {
    let keep_bucket = |bucket: &i32| buckets.is_none_or(|b| b.contains(bucket));
    let snapshot = if use_lake && table.lake_format().is_some() {
        source.readable_lake_snapshot(table).await?
    } else {
        None
    };
    let buckets_per_partition = table.info.get_num_buckets();
    let mut locations = Vec::new();
    if table.info.is_partitioned() {
        for partition in source.list_partitions(table).await? {
            let name = partition.get_partition_name();
            // The `__historical__` partition only exists in the lake.
            if name.contains("__historical__") || !keep_partition(&name) {
                continue;
            }
            for bucket in (0..buckets_per_partition).filter(keep_bucket) {
                locations.push(BucketLocation {
                    partition: Some((partition.get_partition_id(), name.clone())),
                    bucket,
                });
            }
        }
    } else {
        for bucket in (0..buckets_per_partition).filter(keep_bucket) {
            locations.push(BucketLocation {
                partition: None,
                bucket,
            });
        }
    }
    if !read_log {
        locations.clear();
    }
    let offsets = source.bucket_offsets(table, &locations).await?;
    let mut buckets = Vec::with_capacity(locations.len());
    for (location, offsets) in locations.into_iter().zip(offsets) {
        let tiered = snapshot
            .as_ref()
            .and_then(|s| s.offsets.get(location.partition_id(), location.bucket));
        let range = bucket_range(tiered, offsets).map_err(|e| {
            let e = e
                .with_context("table", table.path.to_string())
                .with_context("bucket", location.bucket);
            match &location.partition {
                Some((_, name)) => e.with_context("partition", name),
                None => e,
            }
        })?;
        buckets.push(BucketCut { location, range });
    }
    Ok(UnionCut { snapshot, buckets })
}
