//! Bounded reads of one bucket's log: `[start, stop)` as Arrow batches with change
//! types and offsets, with projection and batch skipping by V1 statistics.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Column;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningStatistics};
use datafusion::physical_plan::metrics::Count;
use datafusion::scalar::ScalarValue;
use fluss::record::ChangeType;

use super::batch::LogBatch;
use super::schema::{SchemaHistory, SchemaVersion, align_batch, column_mapping};
use super::segment::{SegmentFile, list_segments, read_segment_range};
use super::statistics::BatchStatistics;
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
    schemas: Arc<SchemaHistory>,
    target: Arc<SchemaVersion>,
    options: LogReadOptions,
    output_schema: SchemaRef,
    segments: Option<Vec<SegmentFile>>,
    next_segment: usize,
    pending: std::collections::VecDeque<(LogBatch, Arc<str>)>,
    position: i64,
    /// Whether a batch of the range has been seen (the first may start before it).
    started: bool,
    metrics: LogReadMetrics,
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
        let output_schema = match &options.projection {
            Some(p) => Arc::new(target.arrow.project(p)?),
            None => target.arrow.clone(),
        };
        Ok(Self {
            storage,
            bucket_dir,
            range,
            schemas,
            target,
            options,
            output_schema,
            segments: None,
            next_segment: 0,
            pending: Default::default(),
            position: range.start,
            started: false,
            metrics: LogReadMetrics::default(),
        })
    }

    /// The schema of produced batches.
    pub fn schema(&self) -> SchemaRef {
        self.output_schema.clone()
    }

    /// Counters so far.
    pub fn metrics(&self) -> &LogReadMetrics {
        &self.metrics
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
            let contents = read_segment_range(
                &self.storage,
                segment,
                is_last,
                self.position,
                self.range.stop,
            )
            .await?;
            let before = self.pending.len();
            let file: Arc<str> = Arc::from(segment.path.as_str());
            self.pending.extend(
                contents
                    .batches
                    .into_iter()
                    .filter(|b| {
                        b.next_offset() > self.position && b.base_offset() < self.range.stop
                    })
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
            if self.position >= self.range.stop {
                return Ok(None);
            }
            if self.pending.is_empty() && !self.fill().await? {
                if self.position < self.range.stop {
                    return Err(Error::data_invalid(format!(
                        "log ends at offset {} but the read range stops at {}",
                        self.position, self.range.stop
                    ))
                    .with_context("dir", &self.bucket_dir));
                }
                return Ok(None);
            }
            let Some((batch, file)) = self.pending.pop_front() else {
                continue;
            };
            // LogBatch errors already name the base offset; add where it lives.
            let context = |e: Error| {
                e.with_context("dir", &self.bucket_dir)
                    .with_context("file", &file)
            };
            // The first batch holds `start`; every later one begins where the one
            // before it ended. Anything else means offsets are missing from the log.
            let contiguous = if self.started {
                batch.base_offset() == self.position
            } else {
                batch.base_offset() <= self.position
            };
            if !contiguous {
                return Err(context(
                    Error::data_invalid(format!(
                        "the log skips from offset {} to a batch at {}: offsets are missing",
                        self.position,
                        batch.base_offset()
                    ))
                    .with_context("expected_offset", self.position)
                    .with_context("found_offset", batch.base_offset()),
                ));
            }
            self.started = true;
            self.position = batch.next_offset();
            if self.options.verify_crc {
                batch.verify_crc().map_err(context)?;
            }
            if batch.record_count() == 0 {
                continue;
            }
            let version = self
                .schemas
                .get(batch.schema_id() as i32)
                .map_err(|e| context(e.with_context("base_offset", batch.base_offset())))?;
            if self.skip_by_statistics(&batch, &version).map_err(context)? {
                self.metrics.batches_skipped += 1;
                if let Some(c) = &self.options.counters {
                    c.batches_skipped.add(1);
                }
                continue;
            }
            let decoded = self.decode(&batch, &version).map_err(context)?;
            self.metrics.batches_read += 1;
            self.metrics.bytes_read += batch.size_in_bytes();
            if let Some(c) = &self.options.counters {
                c.batches_read.add(1);
                c.bytes.add(batch.size_in_bytes());
            }
            if let Some(cut) = decoded {
                self.metrics.rows += cut.batch.num_rows();
                if let Some(c) = &self.options.counters {
                    c.rows.add(cut.batch.num_rows());
                }
                if cut.batch.num_rows() > 0 {
                    return Ok(Some(cut));
                }
            }
        }
    }

    fn skip_by_statistics(&self, batch: &LogBatch, version: &SchemaVersion) -> Result<bool> {
        let (Some(predicate), Some(bytes)) = (&self.options.predicate, batch.statistics_bytes())
        else {
            return Ok(false);
        };
        // Statistics are positional in the batch's own schema; only prune when that
        // schema is the target's, otherwise read (a superset is always correct).
        if version.id != self.target.id {
            return Ok(false);
        }
        let stats = match BatchStatistics::parse(bytes, version.row_type()) {
            Ok(s) => s,
            // Unreadable statistics never hide rows: include the batch, as Fluss does.
            Err(_) => return Ok(false),
        };
        let view = SingleBatchStatistics {
            stats: &stats,
            schema: &version.arrow,
            rows: batch.record_count() as u64,
        };
        match predicate.prune(&view) {
            Ok(keep) => Ok(!keep.first().copied().unwrap_or(true)),
            Err(_) => Ok(false),
        }
    }

    fn decode(&self, batch: &LogBatch, version: &SchemaVersion) -> Result<Option<ChangelogBatch>> {
        let target_columns: Vec<usize> = match &self.options.projection {
            Some(p) => p.clone(),
            None => (0..self.target.arrow.fields().len()).collect(),
        };
        let full_mapping = column_mapping(version, &self.target);
        let mapping: Vec<Option<usize>> = target_columns.iter().map(|&c| full_mapping[c]).collect();
        let mut decoded_columns: Vec<usize> = mapping.iter().flatten().copied().collect();
        decoded_columns.sort_unstable();
        decoded_columns.dedup();
        let decoded = batch.decode(&version.arrow, Some(&decoded_columns))?;
        let aligned = align_batch(&decoded, &decoded_columns, &mapping, &self.output_schema)?;
        let change_types = batch.change_types()?;
        // Cut the batch to [start, stop).
        let base = batch.base_offset();
        let first = (self.range.start - base).max(0) as usize;
        let end = ((self.range.stop - base).max(0) as usize).min(aligned.num_rows());
        if first >= end {
            return Ok(None);
        }
        Ok(Some(ChangelogBatch {
            first_offset: base + first as i64,
            commit_timestamp: batch.commit_timestamp(),
            change_types: (first..end).map(|i| change_types.get(i)).collect(),
            batch: aligned.slice(first, end - first),
        }))
    }

    /// Reads everything left into memory.
    pub async fn collect(mut self) -> Result<(Vec<ChangelogBatch>, LogReadMetrics)> {
        let mut out = Vec::new();
        while let Some(b) = self.next_batch().await? {
            out.push(b);
        }
        Ok((out, self.metrics))
    }
}

/// Adapts one batch's statistics to DataFusion's pruning interface (one container).
struct SingleBatchStatistics<'a> {
    stats: &'a BatchStatistics,
    schema: &'a SchemaRef,
    rows: u64,
}

impl SingleBatchStatistics<'_> {
    fn bound(&self, column: &Column, max: bool) -> Option<ArrayRef> {
        let index = self.schema.index_of(&column.name).ok()?;
        let stats = self.stats.column(index)?;
        let value = if max {
            stats.max.as_ref()?
        } else {
            stats.min.as_ref()?
        };
        value.to_array_of_size(1).ok()
    }
}

impl PruningStatistics for SingleBatchStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.bound(column, false)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.bound(column, true)
    }

    fn num_containers(&self) -> usize {
        1
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let index = self.schema.index_of(&column.name).ok()?;
        let stats = self.stats.column(index)?;
        Some(Arc::new(UInt64Array::from(vec![
            stats.null_count.max(0) as u64
        ])))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        Some(Arc::new(UInt64Array::from(vec![self.rows])))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
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
