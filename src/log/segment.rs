//! Log segment files of one bucket: `log-<bucket>/<20-digit base offset>.log`.
//!
//! A segment holds batches back to back (tablet-server layout, apache/fluss
//! `FlussPaths`). The writer appends to the newest segment and rolls a new one past a
//! size limit (or on every append where the storage cannot append in place). Readers
//! read a segment once into [`Bytes`] and walk batch headers to reach an offset without
//! decoding anything before it. An incomplete batch at the end of the newest segment
//! (a crash mid-append) is invisible to readers and truncated when a writer opens it.

use bytes::Bytes;

use super::batch::{BatchIterator, LogBatch};
use super::format::segment_file_name;
use crate::error::{Error, Result};
use crate::storage::Storage;

/// One segment file of a bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFile {
    /// Offset of the first batch in the file (from its name).
    pub base_offset: i64,
    /// Path relative to the store root.
    pub path: String,
}

/// Lists the segments of a bucket directory, ordered by base offset.
pub async fn list_segments(storage: &Storage, bucket_dir: &str) -> Result<Vec<SegmentFile>> {
    let mut segments = Vec::new();
    let names = match storage.list_dir(bucket_dir).await {
        Ok(names) => names,
        Err(e) if e.kind() == crate::error::ErrorKind::NotFound => return Ok(segments),
        Err(e) => return Err(e),
    };
    for name in names {
        let Some(stem) = name.strip_suffix(".log") else {
            continue;
        };
        if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let base_offset = stem.parse::<i64>().map_err(|_| {
            Error::data_invalid("segment name out of range").with_context("file", &name)
        })?;
        segments.push(SegmentFile {
            base_offset,
            path: format!("{bucket_dir}/{name}"),
        });
    }
    segments.sort_by_key(|s| s.base_offset);
    Ok(segments)
}

/// The complete batches of a segment, and where a torn tail (if any) starts.
#[derive(Debug)]
pub struct SegmentContents {
    /// Batches in file order.
    pub batches: Vec<LogBatch>,
    /// Byte length of the complete batches.
    pub valid_length: usize,
    /// Whether bytes after `valid_length` form an incomplete batch.
    pub torn: bool,
}

/// Reads and frames every batch of a segment (headers only, no Arrow decoding).
///
/// `is_last` says whether this is the newest segment: only there may a torn tail exist;
/// anywhere else an incomplete batch is corruption.
pub async fn read_segment(
    storage: &Storage,
    segment: &SegmentFile,
    is_last: bool,
) -> Result<SegmentContents> {
    let bytes = storage.read(&segment.path).await?;
    frame_segment(bytes, segment, is_last)
}

/// Frames batches in already-read segment bytes (see [`read_segment`]).
pub fn frame_segment(
    bytes: Bytes,
    segment: &SegmentFile,
    is_last: bool,
) -> Result<SegmentContents> {
    let total = bytes.len();
    let mut iter = BatchIterator::new(bytes);
    let mut batches = Vec::new();
    let mut expected_offset = segment.base_offset;
    for batch in iter.by_ref() {
        let batch = batch.map_err(|e| e.with_context("file", &segment.path))?;
        if batch.base_offset() < expected_offset {
            return Err(Error::data_invalid(format!(
                "batch base offset {} goes backwards (expected at least {expected_offset})",
                batch.base_offset()
            ))
            .with_context("file", &segment.path));
        }
        expected_offset = batch.next_offset();
        batches.push(batch);
    }
    let valid_length = iter.position();
    let torn = valid_length < total;
    if torn && !is_last {
        return Err(Error::data_invalid(format!(
            "incomplete batch at byte {valid_length} of a sealed segment ({total} bytes)"
        ))
        .with_context("file", &segment.path));
    }
    Ok(SegmentContents {
        batches,
        valid_length,
        torn,
    })
}

/// What is known about the complete batches at the start of a segment file.
#[derive(Debug, Clone, Copy)]
struct FramedPrefix {
    valid_length: u64,
    next_offset: i64,
}

/// Process-wide memo of framed segment prefixes, keyed by absolute path: finding a
/// bucket's high watermark then reads only the bytes appended since the last look
/// instead of the whole active segment (Fluss keeps an offset index for this).
static FRAMED: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<String, FramedPrefix>>,
> = std::sync::LazyLock::new(Default::default);

/// The offset after the last complete batch of a segment, reading only bytes not
/// framed before. A torn tail is ignored (it may still be being written).
pub async fn segment_end_offset(storage: &Storage, segment: &SegmentFile) -> Result<i64> {
    let key = storage.absolute(&segment.path);
    let size = storage.size(&segment.path).await?;
    let known = FRAMED
        .lock()
        .ok()
        .and_then(|m| m.get(&key).copied())
        .filter(|k| k.valid_length <= size);
    let start = known.map_or(
        FramedPrefix {
            valid_length: 0,
            next_offset: segment.base_offset,
        },
        |k| k,
    );
    if start.valid_length == size {
        return Ok(start.next_offset);
    }
    let bytes = storage
        .read_range(&segment.path, start.valid_length..size)
        .await?;
    let mut iter = BatchIterator::new(bytes);
    let mut next_offset = start.next_offset;
    for batch in iter.by_ref() {
        let batch = batch.map_err(|e| e.with_context("file", &segment.path))?;
        if batch.base_offset() < next_offset {
            return Err(Error::data_invalid(format!(
                "batch base offset {} goes backwards (expected at least {next_offset})",
                batch.base_offset()
            ))
            .with_context("file", &segment.path));
        }
        next_offset = batch.next_offset();
    }
    let framed = FramedPrefix {
        valid_length: start.valid_length + iter.position() as u64,
        next_offset,
    };
    if let Ok(mut m) = FRAMED.lock() {
        m.insert(key, framed);
    }
    Ok(next_offset)
}

/// Appends encoded batches to a bucket directory.
#[derive(Debug)]
pub struct SegmentWriter {
    bucket_dir: String,
    roll_size: usize,
    active: Option<(SegmentFile, usize)>,
    next_offset: i64,
}

impl SegmentWriter {
    /// Opens the writer of a bucket: finds the newest segment, truncates a torn tail and
    /// recovers the next offset.
    pub async fn open(storage: &Storage, bucket_dir: &str, roll_size: usize) -> Result<Self> {
        let segments = list_segments(storage, bucket_dir).await?;
        let mut writer = Self {
            bucket_dir: bucket_dir.to_string(),
            roll_size,
            active: None,
            next_offset: 0,
        };
        if let Some(last) = segments.last() {
            let contents = read_segment(storage, last, true).await?;
            if contents.torn && storage.supports_append() {
                storage
                    .truncate(&last.path, contents.valid_length as u64)
                    .await?;
            }
            writer.next_offset = contents
                .batches
                .last()
                .map_or(last.base_offset, LogBatch::next_offset);
            writer.active = Some((last.clone(), contents.valid_length));
        }
        Ok(writer)
    }

    /// Offset the next appended batch gets (the bucket's log end offset).
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// Appends one encoded batch whose base offset must be [`SegmentWriter::next_offset`].
    pub async fn append(&mut self, storage: &Storage, batch: &LogBatch) -> Result<()> {
        if batch.base_offset() != self.next_offset {
            return Err(Error::internal(format!(
                "appending batch at offset {} but the log ends at {}",
                batch.base_offset(),
                self.next_offset
            )));
        }
        let size = batch.size_in_bytes();
        let roll = match &self.active {
            None => true,
            Some((_, len)) => {
                !storage.supports_append() || (*len > 0 && len + size > self.roll_size)
            }
        };
        if roll {
            let segment = SegmentFile {
                base_offset: batch.base_offset(),
                path: format!(
                    "{}/{}",
                    self.bucket_dir,
                    segment_file_name(batch.base_offset())
                ),
            };
            self.active = Some((segment, 0));
        }
        let Some((segment, len)) = self.active.as_mut() else {
            return Err(Error::internal("no active segment"));
        };
        if storage.supports_append() {
            storage.append(&segment.path, batch.bytes()).await?;
        } else {
            storage
                .put_atomic(&segment.path, batch.bytes().clone())
                .await?;
        }
        *len += size;
        self.next_offset = batch.next_offset();
        Ok(())
    }
}
