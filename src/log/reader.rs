//! Bounded reads of one bucket's log: `[start, stop)` as Arrow batches with change
//! types and offsets, with projection and batch skipping by V1 statistics.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_optimizer::pruning::PruningPredicate;
use datafusion::physical_plan::metrics::Count;
use fluss::record::ChangeType;

use super::batch::LogBatch;
use super::cursor::{LogCursor, continues, ended_early};
use super::schema::{SchemaHistory, SchemaVersion};
use super::segment::{SegmentFile, list_segments, read_segment_range};
use crate::error::{Error, Result};
use crate::storage::Storage;

/// A half-open range of log offsets `[start, stop)` of one bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LogRange {
    /// First offset to read (inclusive).
    pub start: i64,
    /// Offset to stop at (exclusive); the high watermark at planning.
    pub stop: i64,
}

impl LogRange {
    /// `[start, stop)`.
    pub fn new(start: i64, stop: i64) -> Self {
        Self { start, stop }
    }

    /// Whether the range holds no offsets.
    pub fn is_empty(&self) -> bool {
        self.start >= self.stop
    }

    /// How many offsets the range holds (records, or an upper bound where batches
    /// leave gaps).
    pub fn offsets(&self) -> u64 {
        self.stop.saturating_sub(self.start).max(0) as u64
    }
}

/// Decoded records of one log batch, cut to the requested range.
#[derive(Debug, Clone)]
pub struct ChangelogBatch {
    /// Offset of the first row of `batch`.
    pub first_offset: i64,
    /// The batch's commit timestamp (epoch millis).
    pub commit_timestamp: i64,
    /// One change type per row.
    pub change_types: Vec<ChangeType>,
    /// The rows, aligned to the requested schema and projection.
    pub batch: RecordBatch,
}

/// What a bucket read decodes and skips.
#[derive(Debug, Clone, Default)]
pub struct LogReadOptions {
    /// Columns of the target schema to produce (all when `None`).
    pub projection: Option<Vec<usize>>,
    /// Batches whose statistics prove no row can match are skipped (rows are not filtered).
    pub predicate: Option<Arc<PruningPredicate>>,
    /// Only batches committed in `[from, to)` (epoch millis, the batch header's commit
    /// timestamp, which every row of a batch shares) are read; the others are skipped
    /// undecoded. `None`: every batch.
    pub commit_time: Option<(i64, i64)>,
    /// Verify each batch's CRC-32C (on by default in [`LogReadOptions::verified`]).
    pub verify_crc: bool,
    /// Shared counters to report into (EXPLAIN ANALYZE metrics).
    pub counters: Option<LogReadCounters>,
}

/// Counters a reader adds to as it goes; clones share the same values.
#[derive(Debug, Clone, Default)]
pub struct LogReadCounters {
    /// Batches decoded.
    pub batches_read: Count,
    /// Batches skipped by statistics.
    pub batches_skipped: Count,
    /// Rows produced.
    pub rows: Count,
    /// Bytes of decoded batches.
    pub bytes: Count,
}

impl LogReadOptions {
    /// Full rows, CRC verified.
    pub fn verified() -> Self {
        Self {
            verify_crc: true,
            ..Default::default()
        }
    }
}

/// Counters of one bucket read (reported in EXPLAIN ANALYZE).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogReadMetrics {
    /// Batches decoded.
    pub batches_read: usize,
    /// Batches skipped because their statistics exclude the predicate.
    pub batches_skipped: usize,
    /// Rows produced.
    pub rows: usize,
    /// Bytes of batches decoded.
    pub bytes_read: usize,
}

/// Reads one bucket's log range segment by segment.
#[derive(Debug)]
pub struct BucketLogReader {
    storage: Storage,
    bucket_dir: String,
    range: LogRange,
    segments: Option<Vec<SegmentFile>>,
    next_segment: usize,
    pending: std::collections::VecDeque<(LogBatch, Arc<str>)>,
    cursor: LogCursor,
}

impl BucketLogReader {
    /// A reader of `range` in `bucket_dir`, producing rows of `target` (projected).
    pub fn new(
        storage: Storage,
        bucket_dir: String,
        range: LogRange,
        schemas: Arc<SchemaHistory>,
        target: Arc<SchemaVersion>,
        options: LogReadOptions,
    ) -> Result<Self> {
        Ok(Self {
            storage,
            bucket_dir,
            range,
            segments: None,
            next_segment: 0,
            pending: Default::default(),
            cursor: LogCursor::new(range, schemas, target, options)?,
        })
    }

    /// The schema of produced batches.
    pub fn schema(&self) -> SchemaRef {
        self.cursor.schema()
    }

    /// Counters so far.
    pub fn metrics(&self) -> &LogReadMetrics {
        self.cursor.metrics()
    }

    async fn fill(&mut self) -> Result<bool> {
        if self.segments.is_none() {
            let segments = list_segments(&self.storage, &self.bucket_dir).await?;
            // Start at the newest segment whose base offset is <= start.
            let first = segments
                .iter()
                .rposition(|s| s.base_offset <= self.range.start)
                .unwrap_or(0);
            self.next_segment = first;
            self.segments = Some(segments);
        }
        let segments = self.segments.as_deref().unwrap_or_default();
        while self.next_segment < segments.len() {
            let segment = &segments[self.next_segment];
            if segment.base_offset >= self.range.stop {
                break;
            }
            let is_last = self.next_segment + 1 == segments.len();
            self.next_segment += 1;
            let position = self.cursor.position();
            let contents =
                read_segment_range(&self.storage, segment, is_last, position, self.range.stop)
                    .await?;
            let before = self.pending.len();
            let file: Arc<str> = Arc::from(segment.path.as_str());
            self.pending.extend(
                contents
                    .batches
                    .into_iter()
                    .filter(|b| b.next_offset() > position && b.base_offset() < self.range.stop)
                    .map(|b| (b, file.clone())),
            );
            if self.pending.len() > before {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The next decoded batch in the range, `None` at the end.
    pub async fn next_batch(&mut self) -> Result<Option<ChangelogBatch>> {
        loop {
            if self.cursor.is_done() {
                return Ok(None);
            }
            if self.pending.is_empty() && !self.fill().await? {
                return Err(self
                    .cursor
                    .ended_early()
                    .with_context("dir", &self.bucket_dir));
            }
            let Some((batch, file)) = self.pending.pop_front() else {
                continue;
            };
            // LogBatch errors already name the base offset; add where it lives.
            let decoded = self.cursor.accept(&batch).map_err(|e| {
                e.with_context("dir", &self.bucket_dir)
                    .with_context("file", &file)
            })?;
            if decoded.is_some() {
                return Ok(decoded);
            }
        }
    }

    /// Reads everything left into memory.
    pub async fn collect(mut self) -> Result<(Vec<ChangelogBatch>, LogReadMetrics)> {
        let mut out = Vec::new();
        while let Some(b) = self.next_batch().await? {
            out.push(b);
        }
        Ok((out, self.cursor.metrics().clone()))
    }
}

/// The log end offset of a bucket (offset after the last complete batch) and its
/// earliest offset; `(0, 0)` for an empty bucket.
pub async fn bucket_offsets(storage: &Storage, bucket_dir: &str) -> Result<(i64, i64)> {
    let segments = list_segments(storage, bucket_dir).await?;
    let Some(last) = segments.last() else {
        return Ok((0, 0));
    };
    let earliest = segments.first().map_or(0, |s| s.base_offset);
    let end = super::segment::segment_end_offset(storage, last).await?;
    // An empty newest segment (just rolled, or a stray file) puts the end at its
    // name: that must be where the segment before it ends, or the end would hide or
    // invent offsets.
    if end == last.base_offset
        && let [.., previous, _] = segments.as_slice()
    {
        let previous_end = super::segment::segment_end_offset(storage, previous).await?;
        if previous_end != last.base_offset {
            return Err(Error::data_invalid(format!(
                "the newest segment is empty and named for offset {} but the segment \
                 before it ends at {previous_end}",
                last.base_offset
            ))
            .with_context("file", &last.path)
            .with_context("expected_offset", previous_end)
            .with_context("found_offset", last.base_offset));
        }
    }
    Ok((earliest, end))
}

/// The rows of `range` of a log table's bucket, counted from its batches' headers:
/// each batch's CRC is checked and the batches must continue each other's offsets
/// from the one holding `range.start` to `range.stop`, as a read checks them, but no
/// batch is decoded. `None` when a batch's record count is not one per offset (a
/// primary-key changelog, an empty batch): then only a read can count.
pub async fn count_log_rows(
    storage: &Storage,
    bucket_dir: &str,
    range: LogRange,
) -> Result<Option<u64>> {
    if range.is_empty() {
        return Ok(Some(0));
    }
    let segments = list_segments(storage, bucket_dir).await?;
    let first = segments
        .iter()
        .rposition(|s| s.base_offset <= range.start)
        .unwrap_or(0);
    let mut position = range.start;
    let mut started = false;
    let mut rows = 0u64;
    for (i, segment) in segments.iter().enumerate().skip(first) {
        if position >= range.stop || segment.base_offset >= range.stop {
            break;
        }
        let is_last = i + 1 == segments.len();
        let contents = read_segment_range(storage, segment, is_last, position, range.stop).await?;
        let context = |e: Error| {
            e.with_context("dir", bucket_dir)
                .with_context("file", &segment.path)
        };
        for batch in &contents.batches {
            if batch.next_offset() <= position || batch.base_offset() >= range.stop {
                continue;
            }
            continues(batch, position, started).map_err(context)?;
            batch.verify_crc().map_err(context)?;
            if i64::from(batch.record_count()) != i64::from(batch.last_offset_delta()) + 1 {
                return Ok(None);
            }
            let from = batch.base_offset().max(range.start);
            let to = batch.next_offset().min(range.stop);
            rows += u64::try_from(to - from).unwrap_or_default();
            started = true;
            position = batch.next_offset();
        }
    }
    if position < range.stop {
        return Err(ended_early(position, range.stop).with_context("dir", bucket_dir));
    }
    Ok(Some(rows))
}
