//! The per-batch half of a bounded log read, apart from where batches come from (a
//! LocalStore's segment files, a cluster's FetchLog responses): each batch must start
//! where the one before it ended, its CRC is verified, its schema looked up, it is
//! skipped by its statistics or decoded, aligned to the target schema and cut to the
//! range.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Column;
use datafusion::physical_optimizer::pruning::PruningStatistics;
use datafusion::scalar::ScalarValue;

use super::batch::LogBatch;
use super::reader::{ChangelogBatch, LogRange, LogReadMetrics, LogReadOptions};
use super::schema::{SchemaHistory, SchemaVersion, align_batch, column_mapping};
use super::statistics::BatchStatistics;
use crate::error::{Error, Result};

/// Where a bounded read of one bucket is, and how it turns batches into rows.
#[derive(Debug)]
pub(crate) struct LogCursor {
    range: LogRange,
    schemas: Arc<SchemaHistory>,
    target: Arc<SchemaVersion>,
    options: LogReadOptions,
    output_schema: SchemaRef,
    /// The next offset the read needs.
    position: i64,
    /// Whether a batch of the range has been seen (the first may start before it).
    started: bool,
    metrics: LogReadMetrics,
}

impl LogCursor {
    /// A cursor at the start of `range`, producing rows of `target` (projected).
    pub fn new(
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
            range,
            schemas,
            target,
            options,
            output_schema,
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

    /// The next offset the read needs (where the next batch must start).
    pub fn position(&self) -> i64 {
        self.position
    }

    /// Whether the whole range has been read.
    pub fn is_done(&self) -> bool {
        self.position >= self.range.stop
    }

    /// Moves past offsets `[position, offset)` without reading them: a server that
    /// filters batches by their statistics says none of their rows matches (a
    /// FetchLog answer's gaps and `filtered_end_offset`). The next batch must start
    /// exactly at `offset`.
    #[cfg(feature = "cluster")]
    pub fn skip_to(&mut self, offset: i64) {
        if offset > self.position {
            self.position = offset;
            self.started = true;
            self.metrics.batches_skipped += 1;
            if let Some(c) = &self.options.counters {
                c.batches_skipped.add(1);
            }
        }
    }

    /// The error for a log that ends before the range does.
    pub fn ended_early(&self) -> Error {
        ended_early(self.position, self.range.stop)
    }

    /// Takes the next batch of the log: `Some` rows when it holds rows of the range
    /// that its statistics do not exclude.
    pub fn accept(&mut self, batch: &LogBatch) -> Result<Option<ChangelogBatch>> {
        continues(batch, self.position, self.started)?;
        self.started = true;
        self.position = batch.next_offset();
        if self.options.verify_crc {
            batch.verify_crc()?;
        }
        if batch.record_count() == 0 {
            return Ok(None);
        }
        if let Some((from, to)) = self.options.commit_time
            && !(from..to).contains(&batch.commit_timestamp())
        {
            self.metrics.batches_skipped += 1;
            if let Some(c) = &self.options.counters {
                c.batches_skipped.add(1);
            }
            return Ok(None);
        }
        let version = self
            .schemas
            .get(batch.schema_id() as i32)
            .map_err(|e| e.with_context("base_offset", batch.base_offset()))?;
        if self.skip_by_statistics(batch, &version)? {
            self.metrics.batches_skipped += 1;
            if let Some(c) = &self.options.counters {
                c.batches_skipped.add(1);
            }
            return Ok(None);
        }
        let decoded = self.decode(batch, &version)?;
        self.metrics.batches_read += 1;
        self.metrics.bytes_read += batch.size_in_bytes();
        if let Some(c) = &self.options.counters {
            c.batches_read.add(1);
            c.bytes.add(batch.size_in_bytes());
        }
        let Some(cut) = decoded else {
            return Ok(None);
        };
        self.metrics.rows += cut.batch.num_rows();
        if let Some(c) = &self.options.counters {
            c.rows.add(cut.batch.num_rows());
        }
        Ok((cut.batch.num_rows() > 0).then_some(cut))
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

/// Checks that `batch` continues a read at offset `position`: the first batch of a
/// read (`started` false) holds `position`, and every later one begins where the one
/// before it ended. Anything else means offsets are missing from the log.
pub(crate) fn continues(batch: &LogBatch, position: i64, started: bool) -> Result<()> {
    let contiguous = if started {
        batch.base_offset() == position
    } else {
        batch.base_offset() <= position
    };
    if contiguous {
        return Ok(());
    }
    Err(Error::data_invalid(format!(
        "the log skips from offset {position} to a batch at {}: offsets are missing",
        batch.base_offset()
    ))
    .with_context("expected_offset", position)
    .with_context("found_offset", batch.base_offset()))
}

/// The error for a log that ends at `position`, before the read range's `stop`.
pub(crate) fn ended_early(position: i64, stop: i64) -> Error {
    Error::data_invalid(format!(
        "log ends at offset {position} but the read range stops at {stop}"
    ))
}
