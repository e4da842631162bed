//! The cut: what one query reads, pinned at planning.
//!
//! A union read pins the readable lake snapshot `S` and, per bucket, the log range
//! `[offset_b(S), high watermark)`, where `offset_b(S)` is the exclusive end offset
//! tiered into `S` (missing: the bucket's earliest offset). Everything the query reads
//! comes from this cut, so a tiering or an append during the query cannot change its
//! answer (DESIGN.md "The cut"; Fluss `LakeSplitGenerator`).

use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::log::LogRange;
use crate::source::{BucketLocation, FlussSource, FlussTable, ReadableSnapshot};

/// Bucket offset lookups in flight while pinning a cut.
const CONCURRENT_OFFSET_LOOKUPS: usize = 16;

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
    /// Partition names present in Fluss (to tell lake-only partitions apart).
    pub fluss_partitions: Vec<String>,
}

impl UnionCut {
    /// The snapshot id, if any.
    pub fn snapshot_id(&self) -> Option<i64> {
        self.snapshot.as_ref().map(|s| s.snapshot_id)
    }

    /// Total number of log offsets in the cut.
    pub fn log_offsets(&self) -> i64 {
        self.buckets.iter().map(|b| b.range.offsets() as i64).sum()
    }
}

/// Pins the cut of `table`. `keep_partition` selects partitions by name (partition
/// pruning); `use_lake` pins the readable lake snapshot (off for log-only reads) and
/// `read_log` resolves the per-bucket log ranges (off for lake-only reads, which would
/// otherwise look up every bucket's offsets for nothing).
pub async fn plan_cut(
    source: &dyn FlussSource,
    table: &FlussTable,
    keep_partition: &(dyn Fn(&str) -> bool + Send + Sync),
    use_lake: bool,
    read_log: bool,
) -> Result<UnionCut> {
    let snapshot = if use_lake && table.lake_format().is_some() {
        source.readable_lake_snapshot(table).await?
    } else {
        None
    };
    let buckets_per_partition = table.info.get_num_buckets();
    let mut locations = Vec::new();
    let mut fluss_partitions = Vec::new();
    if table.info.is_partitioned() {
        for partition in source.list_partitions(table).await? {
            let name = partition.get_partition_name();
            fluss_partitions.push(name.clone());
            // The `__historical__` partition only exists in the lake.
            if name.contains("__historical__") || !keep_partition(&name) {
                continue;
            }
            for bucket in 0..buckets_per_partition {
                locations.push(BucketLocation {
                    partition: Some((partition.get_partition_id(), name.clone())),
                    bucket,
                });
            }
        }
    } else {
        for bucket in 0..buckets_per_partition {
            locations.push(BucketLocation {
                partition: None,
                bucket,
            });
        }
    }
    if !read_log {
        locations.clear();
    }
    // Every bucket's offsets at once: each lookup is a directory listing and a size
    // (a round trip on object stores), and planning waits for all of them.
    let lookups: Vec<_> = locations
        .iter()
        .map(|location| source.bucket_offsets(table, location))
        .collect();
    let offsets = futures::stream::iter(lookups)
        .buffered(CONCURRENT_OFFSET_LOOKUPS)
        .try_collect::<Vec<_>>()
        .await?;
    let mut buckets = Vec::with_capacity(locations.len());
    for (location, offsets) in locations.into_iter().zip(offsets) {
        let tiered = snapshot
            .as_ref()
            .and_then(|s| s.offsets.get(location.partition_id(), location.bucket));
        let start = tiered.unwrap_or(offsets.earliest).max(offsets.earliest);
        buckets.push(BucketCut {
            location,
            range: LogRange::new(start, offsets.high_watermark.max(start)),
        });
    }
    Ok(UnionCut {
        snapshot,
        buckets,
        fluss_partitions,
    })
}
