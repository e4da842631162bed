//! Fluss log record batches: indexing a served log, slicing it at batch boundaries, and
//! projecting Arrow batches to a subset of columns.
//!
//! A Fluss log (a log segment file, or a `records` field of `FetchLogResponse`) is a plain
//! concatenation of record batches. Every batch starts with a little-endian header
//! (fluss-rs `src/record/log_record_batch.rs` constants, Java `LogRecordBatchFormat`):
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | base offset, i64 |
//! | 8..12 | length, i32 = batch size - `LOG_OVERHEAD` (12) |
//! | 12 | magic (0, 1 or 2) |
//! | 13..21 | commit timestamp, i64 |
//! | (V2 only) 21..25 | leader epoch, i32, shifting every later field by 4 |
//! | 21..25 | CRC32C, u32 |
//! | 25..27 | schema id, i16 |
//! | 27 | attributes (bit 0: append-only) |
//! | 28..32 | last offset delta, i32 |
//! | 32..40 | writer id, i64 |
//! | 40..44 | batch sequence, i32 |
//! | 44..48 | record count, i32 |
//! | (V1+) 48..52 | statistics length, i32, then the statistics |
//!
//! then, for a changelog (not append-only) batch, one change-type byte per record, then the
//! Arrow IPC encapsulated record batch message (continuation `0xFFFFFFFF`, metadata length,
//! flatbuffer `Message`, body).

use std::sync::Arc;

use arrow_ipc::{
    BodyCompressionBuilder, Buffer, FieldNode, MessageBuilder, MessageHeader, RecordBatchBuilder,
    root_as_message,
};
use bytes::Bytes;
use serde_json::Value;

use crate::errors::{ApiError, INVALID_COLUMN_PROJECTION, UNKNOWN_SERVER_ERROR};

const LENGTH_OFFSET: usize = 8;
/// Bytes before the part the length field counts: base offset and length.
const LOG_OVERHEAD: usize = 12;
const MAGIC_OFFSET: usize = 12;
const V0_HEADER_SIZE: usize = 48;
const LEADER_EPOCH_LENGTH: usize = 4;
const SCHEMA_ID_OFFSET_V0: usize = 25;
const ATTRIBUTES_OFFSET_V0: usize = 27;
const LAST_OFFSET_DELTA_OFFSET_V0: usize = 28;
const COMMIT_TIMESTAMP_OFFSET: usize = 13;
const WRITER_ID_OFFSET_V0: usize = 32;
const BATCH_SEQUENCE_OFFSET_V0: usize = 40;
const RECORDS_COUNT_OFFSET_V0: usize = 44;
const STATISTICS_LENGTH_OFFSET_V0: usize = 48;
const APPEND_ONLY_FLAG_MASK: u8 = 0x01;
const ARROW_CONTINUATION: u32 = 0xFFFF_FFFF;
const ARROW_HEADER_SIZE: usize = 8;

/// Why a byte sequence is not a valid Fluss log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError(pub String);

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LogError {}

fn read_i32(data: &[u8], at: usize) -> Option<i32> {
    data.get(at..at + 4)?
        .try_into()
        .ok()
        .map(i32::from_le_bytes)
}

fn read_i64(data: &[u8], at: usize) -> Option<i64> {
    data.get(at..at + 8)?
        .try_into()
        .ok()
        .map(i64::from_le_bytes)
}

fn header_size(magic: u8) -> Option<usize> {
    match magic {
        0 => Some(V0_HEADER_SIZE),
        1 => Some(V0_HEADER_SIZE + 4),
        2 => Some(V0_HEADER_SIZE + 4 + LEADER_EPOCH_LENGTH),
        _ => None,
    }
}

fn field_shift(magic: u8) -> usize {
    if magic >= 2 { LEADER_EPOCH_LENGTH } else { 0 }
}

/// Where one batch sits in a served log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchInfo {
    position: usize,
    size: usize,
    base_offset: i64,
    last_offset: i64,
}

/// The log of one bucket, exactly as stored: a concatenation of record batches.
///
/// The log start offset is the base offset of the first batch and the high watermark the
/// offset after the last batch (everything served counts as committed). Cloning is cheap.
#[derive(Debug, Clone)]
pub struct ServedLog {
    records: Bytes,
    batches: Arc<[BatchInfo]>,
    log_start_offset: i64,
    high_watermark: i64,
    remote: Option<Arc<RemoteLog>>,
    /// Batches retention deleted ([`ServedLog::expired_before`]): no longer served,
    /// but what the bucket's key-value state was built from.
    expired: Option<Bytes>,
}

/// The part of a bucket's log a tablet server has copied to remote storage
/// (`remote.data.dir`) and deleted locally. FetchLog answers a fetch below the local
/// log with [`RemoteLog::tablet_dir`] and the segments from the one holding the fetch
/// offset on, as Fluss's `ReplicaManager.fetchLogFromRemote` does; the client reads
/// `{tablet_dir}/{segment id}/{start offset:020}.log` itself.
#[derive(Debug, Clone)]
pub struct RemoteLog {
    /// The remote log tablet directory, as the server names it
    /// (`{remote.data.dir}/log/{db}/{table}-{id}/{bucket}`).
    pub tablet_dir: String,
    /// The segments, in offset order, contiguous.
    pub segments: Vec<RemoteSegment>,
}

/// One remote log segment.
#[derive(Debug, Clone)]
pub struct RemoteSegment {
    /// The segment's UUID.
    pub id: String,
    /// The base offset of its first batch.
    pub start_offset: i64,
    /// The offset after its last batch (exclusive, as Fluss's `RemoteLogSegment`).
    pub end_offset: i64,
    /// Its bytes, as written to the remote file.
    pub bytes: Bytes,
    batches: Arc<[BatchInfo]>,
}

impl RemoteSegment {
    /// The file's path under the tablet directory (`{id}/{start offset:020}.log`).
    pub fn file_name(&self) -> String {
        format!("{}/{:020}.log", self.id, self.start_offset)
    }

    /// The byte position of the batch holding `offset` (Fluss's offset-index lookup,
    /// exact here).
    pub fn position_of(&self, offset: i64) -> usize {
        let at = self.batches.partition_point(|b| b.last_offset < offset);
        self.batches.get(at).map_or(0, |b| b.position)
    }
}

impl ServedLog {
    /// Indexes `records`, a concatenation of whole Fluss record batches (a log segment file).
    ///
    /// Fails if a batch is truncated, has an unknown magic or a negative length, or if base
    /// offsets go backwards.
    pub fn new(records: impl Into<Bytes>) -> Result<Self, LogError> {
        let records: Bytes = records.into();
        let mut batches = Vec::new();
        let mut position = 0;
        while position < records.len() {
            let data = &records[position..];
            let err = |what: &str| LogError(format!("batch at byte {position}: {what}"));
            let base_offset = read_i64(data, 0).ok_or_else(|| err("truncated header"))?;
            let length = read_i32(data, LENGTH_OFFSET).ok_or_else(|| err("truncated header"))?;
            let length = usize::try_from(length).map_err(|_| err("negative length"))?;
            let size = length + LOG_OVERHEAD;
            let magic = *data
                .get(MAGIC_OFFSET)
                .ok_or_else(|| err("truncated header"))?;
            let header = header_size(magic).ok_or_else(|| err("unknown magic"))?;
            if size < header {
                return Err(err("length shorter than the header"));
            }
            if size > data.len() {
                return Err(err("truncated batch"));
            }
            let delta = read_i32(data, LAST_OFFSET_DELTA_OFFSET_V0 + field_shift(magic))
                .ok_or_else(|| err("truncated header"))?;
            let last_offset = base_offset + i64::from(delta);
            if let Some(prev) = batches.last().map(|b: &BatchInfo| b.last_offset)
                && base_offset <= prev
            {
                return Err(err("base offset does not follow the previous batch"));
            }
            batches.push(BatchInfo {
                position,
                size,
                base_offset,
                last_offset,
            });
            position += size;
        }
        let log_start_offset = batches.first().map_or(0, |b| b.base_offset);
        let high_watermark = batches.last().map_or(0, |b| b.last_offset + 1);
        Ok(Self {
            records,
            batches: batches.into(),
            log_start_offset,
            high_watermark,
            remote: None,
            expired: None,
        })
    }

    /// The log with `produced` appended, as a tablet server appends a client's
    /// batches: each batch gets the next offsets (its base offset rewritten) and
    /// `commit_timestamp`, fields outside its CRC. Returns the new log and the base
    /// offset of the first appended batch. Fails, appending nothing, if `produced` is
    /// not whole batches.
    pub fn appended(
        &self,
        produced: &[u8],
        commit_timestamp: i64,
    ) -> Result<(Self, i64), LogError> {
        let base = self.high_watermark;
        let mut records = Vec::with_capacity(self.records.len() + produced.len());
        records.extend_from_slice(&self.records);
        let (mut next, mut position) = (base, 0);
        while position < produced.len() {
            let data = &produced[position..];
            let err = |what: &str| LogError(format!("produced batch at byte {position}: {what}"));
            let length = read_i32(data, LENGTH_OFFSET).ok_or_else(|| err("truncated header"))?;
            let size = usize::try_from(length)
                .map_err(|_| err("negative length"))?
                .saturating_add(LOG_OVERHEAD);
            let magic = *data
                .get(MAGIC_OFFSET)
                .ok_or_else(|| err("truncated header"))?;
            let header = header_size(magic).ok_or_else(|| err("unknown magic"))?;
            if size < header || size > data.len() {
                return Err(err("length does not fit the request"));
            }
            let delta = read_i32(data, LAST_OFFSET_DELTA_OFFSET_V0 + field_shift(magic))
                .ok_or_else(|| err("truncated header"))?;
            let mut bytes = data[..size].to_vec();
            bytes[..8].copy_from_slice(&next.to_le_bytes());
            bytes[COMMIT_TIMESTAMP_OFFSET..COMMIT_TIMESTAMP_OFFSET + 8]
                .copy_from_slice(&commit_timestamp.to_le_bytes());
            records.extend_from_slice(&bytes);
            next += i64::from(delta) + 1;
            position += size;
        }
        let appended_any = position > 0;
        let mut log = ServedLog::new(records)?;
        if self.batches.is_empty() {
            log.log_start_offset = self.log_start_offset;
        }
        if !appended_any {
            log.high_watermark = self.high_watermark;
        }
        log.remote = self.remote.clone();
        Ok((log, base))
    }

    /// The writer id and batch sequence of the first batch of `produced` (a client's
    /// idempotence keys: `-1` when it has none), if it holds a whole header.
    pub fn writer_of(produced: &[u8]) -> Option<(i64, i32)> {
        let magic = *produced.get(MAGIC_OFFSET)?;
        header_size(magic)?;
        let shift = field_shift(magic);
        Some((
            read_i64(produced, WRITER_ID_OFFSET_V0 + shift)?,
            read_i32(produced, BATCH_SEQUENCE_OFFSET_V0 + shift)?,
        ))
    }

    /// An empty log starting (and ending) at `offset`.
    pub fn empty(offset: i64) -> Self {
        Self {
            records: Bytes::new(),
            batches: Arc::from(Vec::new()),
            log_start_offset: offset,
            high_watermark: offset,
            remote: None,
            expired: None,
        }
    }

    /// The same log cut before `offset`: the batches whose offsets all lie below it (a
    /// high watermark below the end of the stored batches hides the rest, as a tablet
    /// server hides uncommitted batches). Fails if a batch holds offsets on both sides.
    pub fn truncated_before(&self, offset: i64) -> Result<Self, LogError> {
        let kept = self.batches.partition_point(|b| b.last_offset < offset);
        if let Some(b) = self.batches.get(kept)
            && b.base_offset < offset
        {
            return Err(LogError(format!(
                "offset {offset} lies inside the batch of offsets {}..={}",
                b.base_offset, b.last_offset
            )));
        }
        if kept == self.batches.len() {
            return Ok(self.clone());
        }
        let end = self.batches.get(kept).map_or(0, |b| b.position);
        let batches: Arc<[BatchInfo]> = self.batches[..kept].into();
        Ok(Self {
            records: self.records.slice(..end),
            high_watermark: batches
                .last()
                .map_or(self.log_start_offset, |b| b.last_offset + 1),
            batches,
            log_start_offset: self.log_start_offset,
            remote: self.remote.clone(),
            expired: self.expired.clone(),
        })
    }

    /// Moves the batches below `offset` (which must be a batch boundary) to remote
    /// storage, cut into `segments` segments of about equal batch counts, as Fluss's
    /// remote log tiering does; the remote log is named `tablet_dir`. The result serves
    /// the rest locally. Write each [`RemoteSegment::bytes`] to
    /// `{tablet_dir}/{file_name}` for clients to read.
    pub fn tier_to_remote(
        &self,
        offset: i64,
        segments: usize,
        tablet_dir: &str,
    ) -> Result<Self, LogError> {
        let cut = self.batches.partition_point(|b| b.last_offset < offset);
        if let Some(b) = self.batches.get(cut)
            && b.base_offset < offset
        {
            return Err(LogError(format!(
                "offset {offset} lies inside the batch of offsets {}..={}",
                b.base_offset, b.last_offset
            )));
        }
        if cut == 0 || segments == 0 {
            return Err(LogError(format!("no batch below offset {offset} to tier")));
        }
        let per_segment = cut.div_ceil(segments);
        let mut remote = Vec::new();
        for (n, chunk) in self.batches[..cut].chunks(per_segment).enumerate() {
            let (first, last) = (chunk[0], chunk[chunk.len() - 1]);
            let bytes = self
                .records
                .slice(first.position..last.position + last.size);
            let batches: Vec<BatchInfo> = chunk
                .iter()
                .map(|b| BatchInfo {
                    position: b.position - first.position,
                    ..*b
                })
                .collect();
            remote.push(RemoteSegment {
                // deterministic, UUID-shaped ids
                id: format!("00000000-0000-4000-8000-{:012x}", n + 1),
                start_offset: first.base_offset,
                end_offset: last.last_offset + 1,
                bytes,
                batches: batches.into(),
            });
        }
        let local_start = self.batches.get(cut).map_or(0, |b| b.position);
        let local: Vec<BatchInfo> = self.batches[cut..]
            .iter()
            .map(|b| BatchInfo {
                position: b.position - local_start,
                ..*b
            })
            .collect();
        Ok(Self {
            records: self.records.slice(local_start..),
            batches: local.into(),
            log_start_offset: self.log_start_offset,
            high_watermark: self.high_watermark,
            remote: Some(Arc::new(RemoteLog {
                tablet_dir: tablet_dir.to_string(),
                segments: remote,
            })),
            expired: self.expired.clone(),
        })
    }

    /// The same log after retention deleted the batches below `offset` (which must be
    /// a batch boundary of a log without a remote part): the log then starts at
    /// `offset`. A tablet server's key-value state still holds every key written, so
    /// the deleted batches are kept for [`ServedLog::expired`] only.
    pub fn expired_before(&self, offset: i64) -> Result<Self, LogError> {
        if self.remote.is_some() {
            return Err(LogError("expiring a log with a remote part".into()));
        }
        let cut = self.batches.partition_point(|b| b.last_offset < offset);
        if self
            .batches
            .get(cut)
            .is_some_and(|b| b.base_offset != offset)
            || (cut == self.batches.len() && offset != self.high_watermark)
        {
            return Err(LogError(format!("offset {offset} is not a batch boundary")));
        }
        let start = self
            .batches
            .get(cut)
            .map_or(self.records.len(), |b| b.position);
        let kept: Vec<BatchInfo> = self.batches[cut..]
            .iter()
            .map(|b| BatchInfo {
                position: b.position - start,
                ..*b
            })
            .collect();
        let mut expired = self
            .expired
            .as_ref()
            .map(|e| e.to_vec())
            .unwrap_or_default();
        expired.extend_from_slice(&self.records[..start]);
        Ok(Self {
            records: self.records.slice(start..),
            batches: kept.into(),
            log_start_offset: offset,
            high_watermark: self.high_watermark,
            remote: None,
            expired: Some(Bytes::from(expired)),
        })
    }

    /// The batches retention deleted ([`ServedLog::expired_before`]), when it did.
    pub fn expired(&self) -> Option<&Bytes> {
        self.expired.as_ref()
    }

    /// The remote part of the log, if some of it was tiered.
    pub fn remote(&self) -> Option<&RemoteLog> {
        self.remote.as_deref()
    }

    /// The first offset held locally (the log start offset when nothing is remote).
    pub fn local_start_offset(&self) -> i64 {
        match (&self.remote, self.batches.first()) {
            (None, _) => self.log_start_offset,
            (Some(_), Some(b)) => b.base_offset,
            (Some(r), None) => r
                .segments
                .last()
                .map_or(self.high_watermark, |s| s.end_offset),
        }
    }

    /// The first offset of the log.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// The high watermark: the offset after the last record served.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The number of batches.
    pub fn batch_count(&self) -> usize {
        self.batches.len()
    }

    /// The raw bytes, as given to [`ServedLog::new`].
    pub fn records(&self) -> &Bytes {
        &self.records
    }

    /// The commit timestamp of each batch with its base offset, in log order.
    pub(crate) fn batch_timestamps(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.batches.iter().map(|b| {
            let ts = read_i64(&self.records[b.position..], 13).unwrap_or(i64::MIN);
            (b.base_offset, ts)
        })
    }

    /// Reads whole batches from the batch holding `offset` on, like Fluss's
    /// `LogSegment.read`: as many batches as fit in `max_bytes`, or, when `min_one_batch` is
    /// set and the first one does not fit, that first batch alone. A batch is never split;
    /// the client drops the records before `offset` itself. `offset` must lie in
    /// `[log_start_offset, high_watermark)`.
    ///
    /// With a projection, every Arrow batch is rewritten to the projected columns first and
    /// `max_bytes` applies to the projected size.
    pub(crate) fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        mut projection: Option<&mut Projector>,
    ) -> Result<Vec<u8>, ApiError> {
        let first = self.batches.partition_point(|b| b.last_offset < offset);
        let mut out = Vec::new();
        for batch in &self.batches[first..] {
            let raw = &self.records[batch.position..batch.position + batch.size];
            let bytes = match projection.as_deref_mut() {
                None => std::borrow::Cow::Borrowed(raw),
                Some(p) => std::borrow::Cow::Owned(p.project_batch(raw)?),
            };
            let fits = out.len() + bytes.len() <= max_bytes;
            // the first batch of the response may exceed the limit
            let forced = !fits && out.is_empty() && min_one_batch;
            if !fits && !forced {
                break;
            }
            out.extend_from_slice(&bytes);
            if forced {
                break;
            }
        }
        Ok(out)
    }
}

impl ServedLog {
    /// Reads as [`ServedLog::read`] does, leaving out the batches `include` rejects,
    /// as Fluss's `LogSegment` read with a filter does: the answer may have gaps, and
    /// when the batches after the last one sent were all left out (or every batch
    /// was), the offset after the last batch scanned comes back too, so the client
    /// can move past them (`filtered_end_offset`).
    pub(crate) fn read_filtered(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        include: &dyn Fn(&[u8]) -> bool,
    ) -> (Vec<u8>, Option<i64>) {
        let first = self.batches.partition_point(|b| b.last_offset < offset);
        let mut out = Vec::new();
        let mut last_scanned = None;
        let mut last_included = None;
        let mut size_break = false;
        for batch in &self.batches[first..] {
            let raw = &self.records[batch.position..batch.position + batch.size];
            last_scanned = Some(batch.last_offset + 1);
            if !include(raw) {
                continue;
            }
            let fits = out.len() + raw.len() <= max_bytes;
            let forced = !fits && out.is_empty() && min_one_batch;
            if !fits && !forced {
                size_break = true;
                break;
            }
            out.extend_from_slice(raw);
            last_included = Some(batch.last_offset + 1);
            if forced {
                break;
            }
        }
        let filtered_end = match (last_scanned, last_included) {
            (Some(scanned), None) => Some(scanned),
            (Some(scanned), Some(included)) if !size_break && scanned > included => Some(scanned),
            _ => None,
        };
        (out, filtered_end)
    }
}

/// The length of the longest prefix of `records` that holds only whole batches, stopping
/// at a torn tail: a last batch cut short (a crash mid-append), whose header or body ends
/// before its length says. Anything else wrong (a negative length, say) is not a tear; the
/// whole length is returned so that [`ServedLog::new`] reports it.
pub fn complete_batches_len(records: &[u8]) -> usize {
    let mut position = 0;
    loop {
        let rest = &records[position..];
        if rest.is_empty() {
            return position;
        }
        let Some(length) = read_i32(rest, LENGTH_OFFSET) else {
            return position;
        };
        let Ok(length) = usize::try_from(length) else {
            return records.len();
        };
        match length.checked_add(LOG_OVERHEAD) {
            Some(size) if size <= rest.len() => position += size,
            _ => return position,
        }
    }
}

/// How many Arrow field nodes and buffers one column spans, in the pre-order layout of an
/// Arrow IPC record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ColumnLayout {
    nodes: usize,
    buffers: usize,
}

/// Arrow layout of a Fluss data type (JSON form of `DataTypeJsonSerde`), following the Arrow
/// types fluss-rs `to_arrow_type` (and Java `ArrowUtils.toArrowSchema`) map it to.
fn type_layout(data_type: &Value) -> Result<ColumnLayout, String> {
    let name = data_type
        .get("type")
        .and_then(Value::as_str)
        .ok_or("data type without `type`")?;
    let child = |key: &str| -> Result<ColumnLayout, String> {
        type_layout(
            data_type
                .get(key)
                .ok_or(format!("{name} without `{key}`"))?,
        )
    };
    Ok(match name {
        // validity + values
        "BOOLEAN"
        | "TINYINT"
        | "SMALLINT"
        | "INTEGER"
        | "BIGINT"
        | "FLOAT"
        | "DOUBLE"
        | "DECIMAL"
        | "DATE"
        | "TIME_WITHOUT_TIME_ZONE"
        | "TIMESTAMP_WITHOUT_TIME_ZONE"
        | "TIMESTAMP_WITH_LOCAL_TIME_ZONE"
        | "BINARY" => ColumnLayout {
            nodes: 1,
            buffers: 2,
        },
        // validity + offsets + data
        "CHAR" | "STRING" | "BYTES" => ColumnLayout {
            nodes: 1,
            buffers: 3,
        },
        // List: validity + offsets, then the element
        "ARRAY" => {
            let element = child("element_type")?;
            ColumnLayout {
                nodes: 1 + element.nodes,
                buffers: 2 + element.buffers,
            }
        }
        // Map: validity + offsets, then the `entries` struct (validity) of key and value
        "MAP" => {
            let key = child("key_type")?;
            let value = child("value_type")?;
            ColumnLayout {
                nodes: 2 + key.nodes + value.nodes,
                buffers: 3 + key.buffers + value.buffers,
            }
        }
        // Struct: validity, then the fields
        "ROW" => {
            let mut layout = ColumnLayout {
                nodes: 1,
                buffers: 1,
            };
            for field in data_type
                .get("fields")
                .and_then(Value::as_array)
                .ok_or("ROW without `fields`")?
            {
                let f = type_layout(field.get("field_type").ok_or("ROW field without type")?)?;
                layout.nodes += f.nodes;
                layout.buffers += f.buffers;
            }
            layout
        }
        other => return Err(format!("unsupported data type {other}")),
    })
}

/// Projects the batches of one table to the requested columns, with the schema each batch
/// names (its header's schema id), like Java's `FileLogProjection` with its projection cache.
#[derive(Debug)]
pub(crate) struct Projector {
    schemas: std::collections::BTreeMap<i32, Vec<u8>>,
    fields: Vec<i32>,
    by_schema: std::collections::HashMap<i16, Projection>,
}

impl Projector {
    /// A projector to `fields`, validated against the latest of `schemas`.
    pub(crate) fn new(
        schemas: std::collections::BTreeMap<i32, Vec<u8>>,
        fields: Vec<i32>,
    ) -> Result<Self, ApiError> {
        let latest = schemas
            .values()
            .next_back()
            .ok_or_else(|| ApiError::new(UNKNOWN_SERVER_ERROR, "table without schema"))?;
        Projection::new(latest, &fields)?;
        Ok(Self {
            schemas,
            fields,
            by_schema: Default::default(),
        })
    }

    fn project_batch(&mut self, raw: &[u8]) -> Result<Vec<u8>, ApiError> {
        let magic = raw.get(MAGIC_OFFSET).copied().unwrap_or(u8::MAX);
        let at = SCHEMA_ID_OFFSET_V0 + field_shift(magic);
        let schema_id = raw
            .get(at..at + 2)
            .and_then(|b| b.try_into().ok())
            .map(i16::from_le_bytes)
            .ok_or_else(|| ApiError::new(UNKNOWN_SERVER_ERROR, "corrupt batch: no schema id"))?;
        if !self.by_schema.contains_key(&schema_id) {
            let schema = self.schemas.get(&i32::from(schema_id)).ok_or_else(|| {
                ApiError::new(
                    crate::errors::SCHEMA_NOT_EXIST,
                    format!("schema {schema_id} of a log batch does not exist"),
                )
            })?;
            let projection = Projection::new(schema, &self.fields)?;
            self.by_schema.insert(schema_id, projection);
        }
        match self.by_schema.get(&schema_id) {
            Some(p) => p.project_batch(raw),
            None => Err(ApiError::new(UNKNOWN_SERVER_ERROR, "projection cache")),
        }
    }
}

/// A column projection of Arrow log batches of one schema, like Java's `FileLogProjection`: the Arrow
/// metadata is rewritten to the selected field nodes and buffers and the selected buffers are
/// copied as they are (compressed or not); nothing is decoded.
#[derive(Debug, Clone)]
struct Projection {
    /// Per top-level column, its layout; and which columns are selected.
    columns: Vec<ColumnLayout>,
    selected: Vec<bool>,
}

impl Projection {
    /// A projection of the schema `schema_json` (Fluss Schema JSON) to `fields`, which must be
    /// strictly increasing column indexes (Java rejects anything else with
    /// `INVALID_COLUMN_PROJECTION`, as does this).
    fn new(schema_json: &[u8], fields: &[i32]) -> Result<Self, ApiError> {
        let invalid = |m: String| ApiError::new(INVALID_COLUMN_PROJECTION, m);
        let schema: Value = serde_json::from_slice(schema_json)
            .map_err(|e| ApiError::new(UNKNOWN_SERVER_ERROR, format!("bad schema JSON: {e}")))?;
        let columns = schema
            .get("columns")
            .and_then(Value::as_array)
            .ok_or_else(|| ApiError::new(UNKNOWN_SERVER_ERROR, "schema without columns"))?
            .iter()
            .map(|c| {
                type_layout(c.get("data_type").unwrap_or(&Value::Null))
                    .map_err(|e| ApiError::new(UNKNOWN_SERVER_ERROR, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if fields.is_empty() {
            return Err(invalid("Empty projection is not supported.".into()));
        }
        let mut selected = vec![false; columns.len()];
        let mut prev = -1;
        for &f in fields {
            if f <= prev {
                return Err(invalid(format!(
                    "The projection indexes should be in field order without duplicates, but is {fields:?}"
                )));
            }
            let slot = usize::try_from(f)
                .ok()
                .and_then(|i| selected.get_mut(i))
                .ok_or_else(|| {
                    invalid(format!(
                        "Projected fields {fields:?} is out of bound for schema with {} fields.",
                        columns.len()
                    ))
                })?;
            *slot = true;
            prev = f;
        }
        Ok(Self { columns, selected })
    }

    /// Projects one whole batch (`raw` is exactly one batch).
    fn project_batch(&self, raw: &[u8]) -> Result<Vec<u8>, ApiError> {
        let corrupt = |m: &str| ApiError::new(UNKNOWN_SERVER_ERROR, format!("corrupt batch: {m}"));
        let magic = *raw.get(MAGIC_OFFSET).ok_or_else(|| corrupt("no magic"))?;
        let header = header_size(magic).ok_or_else(|| corrupt("unknown magic"))?;
        if raw.len() <= header {
            // an empty (header-only) batch keeps offsets moving; served as is
            return Ok(raw.to_vec());
        }
        let shift = field_shift(magic);
        let append_only = raw[ATTRIBUTES_OFFSET_V0 + shift] & APPEND_ONLY_FLAG_MASK != 0;
        let statistics = if magic >= 1 {
            let len = read_i32(raw, STATISTICS_LENGTH_OFFSET_V0 + shift)
                .ok_or_else(|| corrupt("no statistics length"))?;
            usize::try_from(len).map_err(|_| corrupt("negative statistics length"))?
        } else {
            0
        };
        let change_types = if append_only {
            0
        } else {
            let count = read_i32(raw, RECORDS_COUNT_OFFSET_V0 + shift)
                .ok_or_else(|| corrupt("no record count"))?;
            usize::try_from(count).map_err(|_| corrupt("negative record count"))?
        };
        let records_start = header + statistics;
        let arrow_start = records_start + change_types;
        let arrow = raw.get(arrow_start..).ok_or_else(|| corrupt("truncated"))?;
        let continuation = arrow
            .get(0..4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes);
        if continuation != Some(ARROW_CONTINUATION) {
            return Err(corrupt("no Arrow continuation marker"));
        }
        let meta_len = read_i32(arrow, 4)
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(|| corrupt("bad Arrow metadata length"))?;
        let meta = arrow
            .get(ARROW_HEADER_SIZE..ARROW_HEADER_SIZE + meta_len)
            .ok_or_else(|| corrupt("truncated Arrow metadata"))?;
        let body = &arrow[ARROW_HEADER_SIZE + meta_len..];
        let message = root_as_message(meta).map_err(|e| corrupt(&e.to_string()))?;
        let batch = message
            .header_as_record_batch()
            .ok_or_else(|| corrupt("not an Arrow record batch"))?;
        let nodes = batch.nodes().ok_or_else(|| corrupt("no field nodes"))?;
        let buffers = batch.buffers().ok_or_else(|| corrupt("no buffers"))?;
        let body_length = usize::try_from(message.bodyLength()).unwrap_or(usize::MAX);
        if body_length > body.len() {
            return Err(corrupt("truncated Arrow body"));
        }

        let total_nodes: usize = self.columns.iter().map(|c| c.nodes).sum();
        let total_buffers: usize = self.columns.iter().map(|c| c.buffers).sum();
        if nodes.len() != total_nodes || buffers.len() != total_buffers {
            return Err(corrupt("Arrow layout does not match the schema"));
        }

        let mut new_nodes: Vec<FieldNode> = Vec::new();
        let mut new_buffers: Vec<Buffer> = Vec::new();
        let mut new_body = Vec::new();
        let (mut node_at, mut buffer_at) = (0, 0);
        for (column, &selected) in self.columns.iter().zip(&self.selected) {
            if selected {
                new_nodes.extend((node_at..node_at + column.nodes).map(|i| {
                    let node = nodes.get(i);
                    FieldNode::new(node.length(), node.null_count())
                }));
                for i in buffer_at..buffer_at + column.buffers {
                    let buffer = buffers.get(i);
                    let start = usize::try_from(buffer.offset()).unwrap_or(usize::MAX);
                    let len = usize::try_from(buffer.length()).unwrap_or(usize::MAX);
                    // like Java, copy up to the next buffer's start: keeps the 8-byte padding
                    let end = if i + 1 < buffers.len() {
                        usize::try_from(buffers.get(i + 1).offset()).unwrap_or(usize::MAX)
                    } else {
                        body_length
                    };
                    let data = body
                        .get(start..end)
                        .filter(|d| d.len() >= len)
                        .ok_or_else(|| corrupt("Arrow buffer out of bounds"))?;
                    new_buffers.push(Buffer::new(new_body.len() as i64, len as i64));
                    new_body.extend_from_slice(data);
                }
            }
            node_at += column.nodes;
            buffer_at += column.buffers;
        }
        while !new_body.len().is_multiple_of(8) {
            new_body.push(0);
        }

        let mut fbb = flatbuffers::FlatBufferBuilder::new();
        let nodes_vec = fbb.create_vector(&new_nodes);
        let buffers_vec = fbb.create_vector(&new_buffers);
        let compression = batch.compression().map(|c| {
            let mut b = BodyCompressionBuilder::new(&mut fbb);
            b.add_codec(c.codec());
            b.add_method(c.method());
            b.finish()
        });
        let mut rb = RecordBatchBuilder::new(&mut fbb);
        rb.add_length(batch.length());
        rb.add_nodes(nodes_vec);
        rb.add_buffers(buffers_vec);
        if let Some(c) = compression {
            rb.add_compression(c);
        }
        let rb = rb.finish();
        let mut mb = MessageBuilder::new(&mut fbb);
        mb.add_version(message.version());
        mb.add_header_type(MessageHeader::RecordBatch);
        mb.add_header(rb.as_union_value());
        mb.add_bodyLength(new_body.len() as i64);
        let m = mb.finish();
        fbb.finish(m, None);
        let mut new_meta = fbb.finished_data().to_vec();
        // the metadata length includes padding so that the body starts 8-byte aligned
        while !(ARROW_HEADER_SIZE + new_meta.len()).is_multiple_of(8) {
            new_meta.push(0);
        }

        let mut out = Vec::with_capacity(
            header + change_types + ARROW_HEADER_SIZE + new_meta.len() + new_body.len(),
        );
        out.extend_from_slice(&raw[..header]);
        out.extend_from_slice(&raw[records_start..arrow_start]);
        out.extend_from_slice(&ARROW_CONTINUATION.to_le_bytes());
        out.extend_from_slice(&(new_meta.len() as i32).to_le_bytes());
        out.extend_from_slice(&new_meta);
        out.extend_from_slice(&new_body);
        let length = i32::try_from(out.len() - LOG_OVERHEAD)
            .map_err(|_| corrupt("projected batch too large"))?;
        out[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_le_bytes());
        if magic >= 1 {
            // projection drops the statistics (Java `clearStatisticsFromHeader`)
            let at = STATISTICS_LENGTH_OFFSET_V0 + shift;
            out[at..at + 4].copy_from_slice(&0i32.to_le_bytes());
        }
        // Like Java's FileLogProjection the CRC is left as it was: it covers the unprojected
        // batch, and clients do not verify it on projected fetches.
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A V0 header-only batch: `base` offset, `delta` last offset delta.
    fn empty_batch(base: i64, delta: i32, magic: u8) -> Vec<u8> {
        let size = header_size(magic).unwrap();
        let mut b = vec![0u8; size];
        b[0..8].copy_from_slice(&base.to_le_bytes());
        b[8..12].copy_from_slice(&((size - LOG_OVERHEAD) as i32).to_le_bytes());
        b[MAGIC_OFFSET] = magic;
        let at = LAST_OFFSET_DELTA_OFFSET_V0 + field_shift(magic);
        b[at..at + 4].copy_from_slice(&delta.to_le_bytes());
        b
    }

    #[test]
    fn indexes_batches() {
        let mut log = empty_batch(5, 1, 0);
        log.extend(empty_batch(7, 0, 2));
        let log = ServedLog::new(log).unwrap();
        assert_eq!((log.log_start_offset(), log.high_watermark()), (5, 8));
        assert_eq!(log.batch_count(), 2);
        // offset 6 is in the first batch, which is served whole
        assert_eq!(log.read(6, 1, true, None).unwrap().len(), 48);
        assert_eq!(log.read(6, 1, false, None).unwrap().len(), 0);
        assert_eq!(log.read(7, 1000, false, None).unwrap().len(), 56);
        assert_eq!(log.read(5, 1000, false, None).unwrap().len(), 48 + 56);
        let empty = ServedLog::empty(3);
        assert_eq!((empty.log_start_offset(), empty.high_watermark()), (3, 3));
    }

    #[test]
    fn torn_tails_and_truncation() {
        let mut log = empty_batch(0, 1, 0);
        log.extend(empty_batch(2, 0, 2));
        let whole = log.len();
        assert_eq!(complete_batches_len(&log), whole);
        for cut in [1, 11, 12, 20, 55] {
            assert_eq!(complete_batches_len(&log[..whole - cut]), 48, "cut {cut}");
        }
        assert_eq!(complete_batches_len(&log[..5]), 0);
        let mut negative = log.clone();
        negative[48 + 8..48 + 12].copy_from_slice(&(-1i32).to_le_bytes());
        assert_eq!(complete_batches_len(&negative), negative.len());

        let served = ServedLog::new(log).unwrap();
        let first = served.truncated_before(2).unwrap();
        assert_eq!((first.log_start_offset(), first.high_watermark()), (0, 2));
        assert_eq!(first.records().len(), 48);
        assert_eq!(served.truncated_before(3).unwrap().records().len(), whole);
        assert!(
            served.truncated_before(1).is_err(),
            "inside the first batch"
        );
        let none = served.truncated_before(0).unwrap();
        assert_eq!((none.log_start_offset(), none.high_watermark()), (0, 0));
        assert_eq!(none.batch_count(), 0);
    }

    #[test]
    fn rejects_broken_logs() {
        let batch = empty_batch(0, 0, 0);
        assert!(
            ServedLog::new(batch[..20].to_vec()).is_err(),
            "truncated header"
        );
        let mut bad_magic = batch.clone();
        bad_magic[MAGIC_OFFSET] = 9;
        assert!(ServedLog::new(bad_magic).is_err());
        let mut negative = batch.clone();
        negative[8..12].copy_from_slice(&(-1i32).to_le_bytes());
        assert!(ServedLog::new(negative).is_err());
        let mut long = batch.clone();
        long[8..12].copy_from_slice(&1000i32.to_le_bytes());
        assert!(ServedLog::new(long).is_err(), "truncated batch");
        let mut backwards = empty_batch(5, 0, 0);
        backwards.extend(empty_batch(5, 0, 0));
        assert!(ServedLog::new(backwards).is_err());
    }

    #[test]
    fn layouts_follow_the_arrow_types() {
        let layout = |t: &str| type_layout(&serde_json::from_str(t).unwrap()).unwrap();
        assert_eq!(
            layout(r#"{"type":"BIGINT"}"#),
            ColumnLayout {
                nodes: 1,
                buffers: 2
            }
        );
        assert_eq!(
            layout(r#"{"type":"STRING"}"#),
            ColumnLayout {
                nodes: 1,
                buffers: 3
            }
        );
        assert_eq!(
            layout(r#"{"type":"ARRAY","element_type":{"type":"STRING"}}"#),
            ColumnLayout {
                nodes: 2,
                buffers: 5
            }
        );
        assert_eq!(
            layout(r#"{"type":"MAP","key_type":{"type":"INTEGER"},"value_type":{"type":"BYTES"}}"#),
            ColumnLayout {
                nodes: 4,
                buffers: 8
            }
        );
        assert_eq!(
            layout(r#"{"type":"ROW","fields":[{"name":"a","field_type":{"type":"BOOLEAN"}}]}"#),
            ColumnLayout {
                nodes: 2,
                buffers: 3
            }
        );
    }
}
