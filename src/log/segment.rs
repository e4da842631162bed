//! Log segment files of one bucket: `log-<bucket>/<20-digit base offset>.log`.
//!
//! A segment holds batches back to back (tablet-server layout, apache/fluss
//! `FlussPaths`). The writer appends to the newest segment and rolls a new one past a
//! size limit (or on every append where the storage cannot append in place). Readers
//! read a segment once into [`Bytes`] and walk batch headers to reach an offset without
//! decoding anything before it. An incomplete batch at the end of the newest segment
//! past the bucket's committed end (a crash mid-append) is invisible to readers and
//! truncated when a writer opens it; one below it is damage (see [`lost_commits`]).

use bytes::Bytes;

use super::batch::{BatchIterator, LogBatch};
use super::format::segment_file_name;
use crate::error::{Error, Result};
use crate::storage::Storage;

/// The error for a bucket whose log ends at `end`, before the `committed` end its
/// store's commit record holds: committed batches are gone (cut, truncated or
/// deleted), and reading or appending would silently drop them. It names the bucket's
/// directory and the offsets lost; callers add the table and the file.
pub fn lost_commits(end: i64, committed: i64, bucket_dir: &str) -> Error {
    Error::data_invalid(format!(
        "the log ends at offset {end} but the store's commit record says offsets up to \
         {committed} were committed: offsets [{end}, {committed}) are lost (a damaged or \
         cut segment); reads and writes of this bucket fail until it is restored"
    ))
    .with_context("dir", bucket_dir)
    .with_context("lost_offsets", format!("[{end}, {committed})"))
}

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
    frame_from(bytes, segment, is_last, segment.base_offset)
}

/// Frames batches in bytes that start at a batch boundary whose base offset is
/// `expected_offset`: every batch must start where the one before it ended (Fluss logs
/// have no gaps; a gap means bytes were lost).
///
/// Bytes after the last complete batch are a torn tail (a crash mid-append) only in
/// the newest segment and only if [`tail_is_torn_write`] says they can be one;
/// anything else is corruption, reported and never truncated.
fn frame_from(
    bytes: Bytes,
    segment: &SegmentFile,
    is_last: bool,
    expected_offset: i64,
) -> Result<SegmentContents> {
    let total = bytes.len();
    let mut iter = BatchIterator::new(bytes.clone());
    let mut batches = Vec::new();
    let mut expected_offset = expected_offset;
    for batch in iter.by_ref() {
        let batch = batch.map_err(|e| e.with_context("file", &segment.path))?;
        if batch.base_offset() != expected_offset {
            let what = if batch.base_offset() < expected_offset {
                "goes backwards"
            } else {
                "leaves a gap"
            };
            return Err(Error::data_invalid(format!(
                "batch base offset {} {what}: expected {expected_offset}",
                batch.base_offset()
            ))
            .with_context("file", &segment.path)
            .with_context("expected_offset", expected_offset)
            .with_context("found_offset", batch.base_offset()));
        }
        expected_offset = batch.next_offset();
        batches.push(batch);
    }
    let valid_length = iter.position();
    let torn = valid_length < total;
    if torn {
        let tail = bytes.slice(valid_length..);
        if !is_last {
            return Err(Error::data_invalid(format!(
                "incomplete batch at byte {valid_length} of a sealed segment ({total} bytes)"
            ))
            .with_context("file", &segment.path));
        }
        if let Err(e) = tail_is_torn_write(&tail, expected_offset) {
            return Err(e
                .with_context("file", &segment.path)
                .with_context("position", valid_length));
        }
    }
    Ok(SegmentContents {
        batches,
        valid_length,
        torn,
    })
}

/// Whether the bytes after the last complete batch of the newest segment can be a
/// write that a crash cut short (Kafka's log recovery draws the same line): zeros
/// (space preallocated and never written), or the beginning of the next batch, whose
/// base offset (once 8 bytes of it exist) is `expected_offset` and after which no
/// complete valid batch follows. A length field that runs past the file while valid
/// batches follow it is a damaged length, not a torn write: truncating there would
/// drop committed batches.
pub fn tail_is_torn_write(tail: &[u8], expected_offset: i64) -> Result<()> {
    if tail.iter().all(|b| *b == 0) {
        return Ok(());
    }
    if let Some(base) = tail.get(..8) {
        let base = i64::from_le_bytes(base.try_into().unwrap_or_default());
        if base != expected_offset {
            return Err(Error::data_invalid(format!(
                "bytes after the last complete batch start with base offset {base}, expected \
                 {expected_offset}: the segment is damaged"
            )));
        }
    }
    if let Some(found) = first_valid_batch_after(tail, 1) {
        return Err(Error::data_invalid(format!(
            "a batch length field runs past the end of the file but a valid batch follows \
             {found} bytes later: the length is damaged"
        )));
    }
    Ok(())
}

/// Position (relative to `bytes`) of the first complete batch at or after `from`
/// whose header parses and whose CRC matches.
fn first_valid_batch_after(bytes: &[u8], from: usize) -> Option<usize> {
    use super::format::{LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET};
    (from..bytes.len().saturating_sub(LOG_OVERHEAD)).find(|&at| {
        let magic = bytes.get(at + MAGIC_OFFSET).copied();
        if !matches!(magic, Some(0..=2)) {
            return false;
        }
        let length = bytes
            .get(at + LENGTH_OFFSET..at + LENGTH_OFFSET + 4)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_le_bytes);
        let Some(size) = length
            .and_then(|l| usize::try_from(l).ok())
            .map(|l| l + LOG_OVERHEAD)
        else {
            return false;
        };
        let Some(candidate) = bytes.get(at..at.saturating_add(size)) else {
            return false;
        };
        LogBatch::parse(Bytes::copy_from_slice(candidate))
            .and_then(|b| b.verify_crc())
            .is_ok()
    })
}

/// What is known about the complete batches at the start of a segment file: where
/// the framed prefix ends, and a sparse index of batch positions in it.
#[derive(Debug, Clone, Default)]
struct SegmentIndex {
    /// Byte length of the complete batches framed so far.
    valid_length: u64,
    /// Offset after the last framed batch.
    next_offset: i64,
    /// `(base offset, byte position)` of batches at least [`INDEX_INTERVAL`] apart,
    /// ascending (Fluss's offset index is sparse in the same way).
    entries: Vec<(i64, u64)>,
}

/// Bytes between two entries of a [`SegmentIndex`]: a read from a mid-segment
/// offset reads at most this much before the batch it needs.
const INDEX_INTERVAL: u64 = 64 * 1024;

impl SegmentIndex {
    /// Position and base offset of the last indexed batch at or before `offset`.
    fn seek(&self, offset: i64) -> Option<(u64, i64)> {
        let i = self.entries.partition_point(|(base, _)| *base <= offset);
        i.checked_sub(1)
            .map(|i| (self.entries[i].1, self.entries[i].0))
    }

    /// Where the bytes holding offsets below `stop` end: the first indexed batch at or
    /// past `stop`, else the end of the framed prefix.
    fn end_before(&self, stop: i64) -> u64 {
        let i = self.entries.partition_point(|(base, _)| *base < stop);
        self.entries
            .get(i)
            .map_or(self.valid_length, |(_, position)| *position)
    }

    /// Records batches framed from `position` on (a batch boundary inside or at the
    /// end of the known prefix), each as its [`Frame`].
    fn extend(
        &mut self,
        position: u64,
        batches: impl IntoIterator<Item = Frame>,
        framed_length: u64,
    ) {
        if position > self.valid_length {
            return;
        }
        let mut at = position;
        for frame in batches {
            if at >= self.valid_length {
                let far = self
                    .entries
                    .last()
                    .is_none_or(|(_, last)| at >= last + INDEX_INTERVAL);
                if far {
                    self.entries.push((frame.base_offset, at));
                }
                self.next_offset = frame.next_offset;
            }
            at += frame.size;
        }
        self.valid_length = self.valid_length.max(position + framed_length);
    }
}

/// Process-wide memo of framed segment prefixes, keyed by absolute path: finding a
/// bucket's high watermark reads only the bytes appended since the last look, and a
/// read from a mid-segment offset starts near it instead of at byte 0 (Fluss keeps an
/// offset index for both). Segment bytes are only ever appended (a torn tail past the
/// framed prefix may be truncated), so a framed prefix stays true.
static FRAMED: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<String, SegmentIndex>>,
> = std::sync::LazyLock::new(Default::default);

/// What `look` reads off the memo entry of `key`, if there is one (the entry's batch
/// index is not copied out).
fn with_index<R>(key: &str, look: impl FnOnce(&SegmentIndex) -> R) -> Option<R> {
    FRAMED.lock().ok().and_then(|m| m.get(key).map(look))
}

/// Where one batch of a segment lies: its offsets and its size in bytes.
#[derive(Debug, Clone, Copy)]
struct Frame {
    base_offset: i64,
    next_offset: i64,
    size: u64,
}

impl Frame {
    fn of(batch: &LogBatch) -> Self {
        Self {
            base_offset: batch.base_offset(),
            next_offset: batch.next_offset(),
            size: batch.size_in_bytes() as u64,
        }
    }
}

fn remember(key: String, position: u64, batches: &[LogBatch], framed_length: u64) {
    remember_frames(key, position, batches.iter().map(Frame::of), framed_length);
}

fn remember_frames(
    key: String,
    position: u64,
    frames: impl IntoIterator<Item = Frame>,
    framed_length: u64,
) {
    if let Ok(mut m) = FRAMED.lock() {
        m.entry(key)
            .or_default()
            .extend(position, frames, framed_length);
    }
}

/// Drops what the memo knows of a segment about to be truncated or removed (a
/// rolled-back write): its framed prefix is no longer true.
pub fn forget_framing(storage: &Storage, path: &str) {
    if let Ok(mut m) = FRAMED.lock() {
        m.remove(&storage.absolute(path));
    }
}

/// The offset after the last complete batch of a segment, reading only bytes not
/// framed before. A torn tail is ignored (it may still be being written).
///
/// On a local store the unframed batches are framed by their headers alone
/// ([`frame_by_headers`]): a process that has not looked at the segment yet (every
/// `fluss-sql -c`) reads a few kilobytes to find a bucket's end, not the segment.
pub async fn segment_end_offset(storage: &Storage, segment: &SegmentFile) -> Result<i64> {
    let key = storage.absolute(&segment.path);
    let size = storage.size(&segment.path).await?;
    let (mut position, mut next_offset) = with_index(&key, |k| (k.valid_length, k.next_offset))
        .filter(|(valid_length, _)| *valid_length <= size)
        .unwrap_or((0, segment.base_offset));
    if position == size {
        return Ok(next_offset);
    }
    if size - position > HEADER_FRAMING_MIN_BYTES
        && let Some(file) = storage.open_local(&segment.path)?
    {
        let frames = frame_by_headers(&file, position, size, next_offset)
            .map_err(|e| Error::from(e).with_context("file", &segment.path))?;
        let framed: u64 = frames.iter().map(|f| f.size).sum();
        if let Some(last) = frames.last() {
            next_offset = last.next_offset;
        }
        remember_frames(key.clone(), position, frames, framed);
        position += framed;
        if position == size {
            return Ok(next_offset);
        }
    }
    let bytes = storage.read_range(&segment.path, position..size).await?;
    let framed = frame_from(bytes, segment, true, next_offset)?;
    let end = framed
        .batches
        .last()
        .map_or(next_offset, LogBatch::next_offset);
    remember(key, position, &framed.batches, framed.valid_length as u64);
    Ok(end)
}

/// Unframed bytes of a local segment past which its end is found from batch headers
/// instead of by reading the bytes.
const HEADER_FRAMING_MIN_BYTES: u64 = 1 << 20;

/// Frames the complete batches of a local segment from `position` (a batch boundary
/// whose base offset is `expected`) by reading each batch's fixed header only, checked
/// as [`LogBatch::parse`] checks a batch and required to continue the offsets. Stops
/// at the first header that does not fit in the `size` bytes of the file, does not
/// check, or breaks contiguity: the bytes from there on are left to [`frame_from`],
/// which tells a torn tail from damage on the bytes themselves. CRCs are checked when
/// batches are read, as for batches framed from their bytes.
fn frame_by_headers(
    file: &std::fs::File,
    mut position: u64,
    size: u64,
    mut expected: i64,
) -> std::io::Result<Vec<Frame>> {
    use std::os::unix::fs::FileExt;
    const HEADER: usize = 56; // the largest fixed header (V2)
    let mut frames = Vec::new();
    let mut header = [0u8; HEADER];
    while size - position >= super::format::MIN_HEADER_SIZE as u64 {
        let available = HEADER.min((size - position) as usize);
        file.read_exact_at(&mut header[..available], position)?;
        let length = i32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        let Ok(length) = u64::try_from(length) else {
            break;
        };
        let batch_size = super::format::LOG_OVERHEAD as u64 + length;
        if batch_size > size - position {
            break;
        }
        let Ok(batch_size) = usize::try_from(batch_size) else {
            break;
        };
        let head = Bytes::copy_from_slice(&header[..available]);
        match LogBatch::frame_of_header(head, batch_size) {
            Ok((base_offset, next_offset)) if base_offset == expected => {
                frames.push(Frame {
                    base_offset,
                    next_offset,
                    size: batch_size as u64,
                });
                expected = next_offset;
                position += batch_size as u64;
            }
            _ => break,
        }
    }
    Ok(frames)
}

/// The complete batches of a segment that may hold offsets in `[start, stop)`: batches
/// before `start` are mostly not read (the read starts at the indexed batch nearest
/// before it) and bytes past a framed prefix that already reaches `stop` are not read.
/// Callers still filter batches by offset.
pub async fn read_segment_range(
    storage: &Storage,
    segment: &SegmentFile,
    is_last: bool,
    start: i64,
    stop: i64,
) -> Result<SegmentContents> {
    let key = storage.absolute(&segment.path);
    let known = with_index(&key, |index| {
        let (position, base) = index.seek(start).unwrap_or((0, segment.base_offset));
        // Everything needed lies inside the framed prefix when it reaches `stop`.
        let inside = (stop <= index.next_offset).then(|| index.end_before(stop));
        (position, base, inside, index.valid_length)
    });
    let Some((position, base, inside, valid_length)) = known else {
        let contents = read_segment(storage, segment, is_last).await?;
        remember(key, 0, &contents.batches, contents.valid_length as u64);
        return Ok(contents);
    };
    let bytes = if let Some(end) = inside {
        // no size lookup, no bytes past the batches holding `[start, stop)`
        storage
            .read_range(&segment.path, position..end.max(position))
            .await?
    } else if position == 0 {
        storage.read(&segment.path).await?
    } else {
        let size = storage.size(&segment.path).await?;
        if size < valid_length {
            return Err(Error::data_invalid(format!(
                "segment shrank to {size} bytes below its {valid_length} framed bytes"
            ))
            .with_context("file", &segment.path));
        }
        storage.read_range(&segment.path, position..size).await?
    };
    let contents = frame_from(bytes, segment, is_last, base)?;
    remember(
        key,
        position,
        &contents.batches,
        contents.valid_length as u64,
    );
    Ok(contents)
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
    /// Opens the writer of a bucket: finds the newest segment, recovers the next
    /// offset and truncates a torn tail.
    ///
    /// `committed` is the bucket's end as its commit record holds it, if it holds one:
    /// only bytes past it may be a torn write. A log that ends before it has lost
    /// committed batches, and the writer refuses to append (truncating nothing), with
    /// the error a read gives.
    pub async fn open(
        storage: &Storage,
        bucket_dir: &str,
        roll_size: usize,
        committed: Option<i64>,
    ) -> Result<Self> {
        let segments = list_segments(storage, bucket_dir).await?;
        let mut writer = Self {
            bucket_dir: bucket_dir.to_string(),
            roll_size,
            active: None,
            next_offset: 0,
        };
        let Some(last) = segments.last() else {
            return match committed {
                Some(c) if c > 0 => Err(lost_commits(0, c, bucket_dir)),
                _ => Ok(writer),
            };
        };
        let contents = read_segment(storage, last, true).await?;
        let end = contents
            .batches
            .last()
            .map_or(last.base_offset, LogBatch::next_offset);
        if let Some(c) = committed.filter(|c| end < *c) {
            return Err(lost_commits(end, c, bucket_dir).with_context("file", &last.path));
        }
        if contents.torn && storage.supports_append() {
            storage
                .truncate(&last.path, contents.valid_length as u64)
                .await?;
        }
        writer.next_offset = end;
        writer.active = Some((last.clone(), contents.valid_length));
        Ok(writer)
    }

    /// The segment the next append goes to, if one is open, and its length.
    pub fn active(&self) -> Option<(&str, u64)> {
        self.active
            .as_ref()
            .map(|(segment, len)| (segment.path.as_str(), *len as u64))
    }

    /// The bucket directory.
    pub fn bucket_dir(&self) -> &str {
        &self.bucket_dir
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
