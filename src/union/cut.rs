//! The cut: what one query reads, pinned at planning.
//!
//! A union read pins the readable lake snapshot `S` and, per bucket, the log range
//! `[offset_b(S), high watermark)`, where `offset_b(S)` is the exclusive end offset
//! tiered into `S` (missing: the bucket's earliest offset). Everything the query reads
//! comes from this cut, so a tiering or an append during the query cannot change its
//! answer (docs/DESIGN.md "The cut"; Fluss `LakeSplitGenerator`).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::log::LogRange;
use crate::source::{BucketLocation, BucketOffsets, FlussSource, FlussTable, ReadableSnapshot};
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

/// Which lake snapshot a cut pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CutLake {
    /// None: the log alone (`$changelog`).
    Skip,
    /// The latest readable snapshot: the table as it is now.
    LatestReadable,
    /// This snapshot (time travel). `None`: none was tiered by then, so the log must
    /// still hold every bucket from offset 0.
    Pinned(Option<ReadableSnapshot>),
    /// The table exactly as this snapshot recorded it (`VERSION AS OF`): its lake
    /// rows and nothing of the log past its offsets, so every bucket's log range is
    /// empty at the snapshot's offset (0 where it tiered nothing of the bucket).
    AtSnapshot(ReadableSnapshot),
}

/// Where, by commit time, the log ranges of a cut begin and end (epoch millis,
/// inclusive; `None`: from the tiered or earliest offset, to the high watermark).
/// Every row of a batch shares the batch's commit time, so no batch is split.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitTimes {
    /// Each range starts at the bucket's first batch committed at or after this.
    pub from: Option<i64>,
    /// Each range ends before the bucket's first batch committed after this.
    pub until: Option<i64>,
}

/// Pins the cut of `table`. `keep_partition` selects partitions by name (partition
/// pruning) and `buckets`, when given, the buckets (a filter that fixes the bucket
/// key: the other buckets' offsets are never looked up); `lake` says which lake
/// snapshot to pin and `read_log` resolves the per-bucket log ranges (off for
/// lake-only reads, which would otherwise look up every bucket's offsets for
/// nothing); `times` bounds the ranges by commit time (time travel).
pub async fn plan_cut(
    source: &dyn FlussSource,
    table: &FlussTable,
    keep_partition: &(dyn Fn(&str) -> bool + Send + Sync),
    buckets: Option<&HashSet<i32>>,
    lake: CutLake,
    read_log: bool,
    times: CommitTimes,
) -> Result<UnionCut> {
    let keep_bucket = |bucket: &i32| buckets.is_none_or(|b| b.contains(bucket));
    let from_zero = lake == CutLake::Pinned(None);
    let at_snapshot = matches!(lake, CutLake::AtSnapshot(_));
    let snapshot = match lake {
        CutLake::LatestReadable if table.lake_format().is_some() => {
            source.readable_lake_snapshot(table).await?
        }
        CutLake::Pinned(snapshot) => snapshot,
        CutLake::AtSnapshot(snapshot) => Some(snapshot),
        CutLake::Skip | CutLake::LatestReadable => None,
    };
    let buckets_per_partition = table.info.get_num_buckets();
    let mut locations = Vec::new();
    if table.info.is_partitioned() {
        for partition in source.list_partitions(table).await? {
            let name = partition.get_partition_name();
            // The `__historical__` partition only exists in the lake.
            if name.contains(crate::table::HISTORICAL_PARTITION) || !keep_partition(&name) {
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
    let mut offsets = source.bucket_offsets(table, &locations).await?;
    let starts = match times.from {
        Some(from) => Some(
            source
                .offsets_after(table, &locations, &offsets, from.saturating_sub(1))
                .await?,
        ),
        None => None,
    };
    if let Some(until) = times.until {
        let ends = source
            .offsets_after(table, &locations, &offsets, until)
            .await?;
        for (offsets, end) in offsets.iter_mut().zip(ends) {
            offsets.high_watermark = offsets.high_watermark.min(end.max(offsets.earliest));
        }
    }
    let mut buckets = Vec::with_capacity(locations.len());
    for (i, (location, offsets)) in locations.into_iter().zip(offsets).enumerate() {
        let tiered = snapshot
            .as_ref()
            .and_then(|s| s.offsets.get(location.partition_id(), location.bucket))
            .or(from_zero.then_some(0));
        let range = match starts.as_ref().and_then(|s| s.get(i)) {
            Some(&start) => window_range(start, offsets, times.from.unwrap_or_default()),
            None if at_snapshot => {
                // the log up to the snapshot's offset, nothing after it: the lake's
                // claim is checked as any cut checks it, the range read is empty
                let at = tiered.unwrap_or(0);
                bucket_range(
                    Some(at),
                    BucketOffsets {
                        earliest: offsets.earliest.min(at),
                        high_watermark: offsets.high_watermark,
                    },
                )
                .map(|_| LogRange::new(at, at))
            }
            None => bucket_range(tiered, offsets),
        };
        let range = range.map_err(|e| {
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

/// A bucket's range of a window of commit times: from `start`, its first batch
/// committed at or after `from`, to the (time-bounded) high watermark. When that
/// batch is the first the log still holds and the log no longer starts at 0, the
/// batches retention removed may have been committed inside the window too: an
/// error, never a silently shorter answer.
fn window_range(start: i64, offsets: BucketOffsets, from: i64) -> Result<LogRange> {
    let BucketOffsets {
        earliest,
        high_watermark,
    } = offsets;
    if start <= earliest && earliest > 0 {
        return Err(Error::data_invalid(format!(
            "the log starts at offset {earliest}: offsets [0, {earliest}) were removed, and \
             they may hold rows committed at or after {from} ms, where the window starts"
        ))
        .with_context("missing_offsets", format!("[0, {earliest})")));
    }
    Ok(LogRange::new(
        start.clamp(earliest, high_watermark),
        high_watermark,
    ))
}
