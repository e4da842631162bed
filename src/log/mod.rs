//! The Fluss log format: record batches, their statistics, and segment files.
//!
//! fluss-rs keeps its codec private, so this module implements what a reader of
//! Fluss's on-disk log needs (apache/fluss `LogRecordBatchFormat`,
//! `DefaultLogRecordBatch`, `MemoryLogRecordsArrowBuilder`):
//!
//! ```text
//! segment file = batch | batch | ...            (segment.rs)
//! batch  = header (48/52/56 bytes, format.rs)
//!        | statistics (V1+, statistics.rs + aligned_row.rs)
//!        | change types (PK changelog only)
//!        | Arrow IPC record batch message, ZSTD/LZ4 buffers (batch.rs / builder.rs)
//! ```

pub(crate) mod aligned_row;
pub(crate) mod batch;
mod buffer_check;
pub(crate) mod builder;
pub(crate) mod compression;
mod cursor;
pub(crate) mod decompress;
pub(crate) mod format;
pub(crate) mod reader;
pub(crate) mod schema;
pub(crate) mod segment;
pub(crate) mod statistics;

#[cfg(test)]
mod tests;

pub use batch::{BatchIterator, ChangeTypes, LogBatch};
pub use builder::LogBatchBuilder;
pub use compression::ArrowCompression;
#[cfg(feature = "cluster")]
pub(crate) use cursor::LogCursor;
pub use format::LogMagic;
pub use reader::{
    BucketLogReader, ChangelogBatch, LogRange, LogReadCounters, LogReadMetrics, LogReadOptions,
};
pub use schema::{SchemaHistory, SchemaVersion};
pub use segment::{SegmentFile, list_segments};
pub use statistics::{BatchStatistics, ColumnStatistics};
