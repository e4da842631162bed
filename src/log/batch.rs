//! Reading Fluss log record batches: header access, CRC-32C check, change types,
//! statistics and zero-copy Arrow decoding.
//!
//! A [`LogBatch`] is a cheap view over one batch inside a shared [`Bytes`] buffer
//! (a segment file or a fetch response read once); decoding hands slices of that
//! buffer to arrow-ipc, so column data is never copied unless it was compressed.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::RecordBatchDecoder;
use datafusion::arrow::ipc::{MessageHeader, root_as_message};
use fluss::record::ChangeType;

use super::decompress::decompress_projected;
use super::format::{
    APPEND_ONLY_FLAG_MASK, LENGTH_OFFSET, LOG_OVERHEAD, LogMagic, MAGIC_OFFSET, MIN_HEADER_SIZE,
    read_i16, read_i32, read_i64, read_u8, read_u32,
};
use crate::error::{Error, Result};

/// Maps a change-type byte to a [`ChangeType`] (`0 +A, 1 +I, 2 -U, 3 +U, 4 -D`).
pub fn change_type_from_byte(byte: u8) -> Option<ChangeType> {
    match byte {
        0 => Some(ChangeType::AppendOnly),
        1 => Some(ChangeType::Insert),
        2 => Some(ChangeType::UpdateBefore),
        3 => Some(ChangeType::UpdateAfter),
        4 => Some(ChangeType::Delete),
        _ => None,
    }
}

/// The change type of each record of a batch.
#[derive(Debug, Clone)]
pub enum ChangeTypes {
    /// An append-only batch: every record is `+A`.
    AppendOnly(usize),
    /// One byte per record (PK changelog batches).
    Vector(Bytes),
}

impl ChangeTypes {
    /// Number of records.
    pub fn len(&self) -> usize {
        match self {
            ChangeTypes::AppendOnly(n) => *n,
            ChangeTypes::Vector(v) => v.len(),
        }
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Change type of record `i`; the vector was validated when the batch was read.
    pub fn get(&self, i: usize) -> ChangeType {
        match self {
            ChangeTypes::AppendOnly(_) => ChangeType::AppendOnly,
            ChangeTypes::Vector(v) => change_type_from_byte(v[i]).unwrap_or(ChangeType::AppendOnly),
        }
    }

    /// Iterates all change types in record order.
    pub fn iter(&self) -> impl Iterator<Item = ChangeType> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// One Fluss log record batch, borrowed from a shared buffer.
#[derive(Debug, Clone)]
pub struct LogBatch {
    bytes: Bytes,
    magic: LogMagic,
}

impl LogBatch {
    /// Wraps exactly one batch (`LOG_OVERHEAD + Length` bytes). Checks framing, magic and
    /// section lengths; the CRC is checked separately by [`LogBatch::verify_crc`].
    pub fn parse(bytes: Bytes) -> Result<Self> {
        let base_offset = read_i64(&bytes, 0).ok();
        Self::parse_inner(bytes).map_err(|e| match base_offset {
            Some(o) => e.with_context("base_offset", o),
            None => e,
        })
    }

    fn parse_inner(bytes: Bytes) -> Result<Self> {
        let size = bytes.len();
        Self::checked(bytes, size)
    }

    /// Where a batch starting with `header` (at least its fixed header; `size` bytes in
    /// all) ends: its base offset, the offset after it and its size, with the header
    /// checked as [`LogBatch::parse`] checks it. Frames a segment from its headers
    /// alone, without reading the batches.
    pub(crate) fn frame_of_header(header: Bytes, size: usize) -> Result<(i64, i64)> {
        let batch = Self::checked(header, size)?;
        Ok((batch.base_offset(), batch.next_offset()))
    }

    /// Checks framing, magic and section lengths of a batch of `size` bytes whose
    /// first bytes are `bytes` (all of them, or at least the fixed header).
    fn checked(bytes: Bytes, size: usize) -> Result<Self> {
        if bytes.len() < MIN_HEADER_SIZE {
            return Err(Error::data_invalid(format!(
                "truncated batch header: {} bytes, need at least {MIN_HEADER_SIZE}",
                bytes.len()
            )));
        }
        let length = read_i32(&bytes, LENGTH_OFFSET)?;
        if length < 0 || LOG_OVERHEAD + length as usize != size {
            return Err(Error::data_invalid(format!(
                "batch length field {length} does not match {size} available bytes"
            )));
        }
        let magic_byte = read_u8(&bytes, MAGIC_OFFSET)?;
        let magic = LogMagic::from_byte(magic_byte)
            .ok_or_else(|| Error::data_invalid(format!("unknown log batch magic {magic_byte}")))?;
        if bytes.len() < magic.header_size() || size < magic.header_size() {
            return Err(Error::data_invalid(format!(
                "truncated batch header: {} bytes, magic {magic_byte} needs {}",
                bytes.len().min(size),
                magic.header_size()
            )));
        }
        let batch = Self { bytes, magic };
        let records = batch.record_count();
        if records < 0 {
            return Err(Error::data_invalid(format!(
                "negative record count {records}"
            )));
        }
        if batch.last_offset_delta() < 0 {
            return Err(Error::data_invalid(format!(
                "negative last offset delta {}",
                batch.last_offset_delta()
            )));
        }
        let base = batch.base_offset();
        if base < 0
            || base
                .checked_add(batch.last_offset_delta() as i64 + 1)
                .is_none()
        {
            return Err(Error::data_invalid(format!(
                "base offset {base} out of range"
            )));
        }
        let stats = batch.statistics_length();
        if stats < 0 {
            return Err(Error::data_invalid(format!(
                "negative statistics length {stats}"
            )));
        }
        let mut data_start = batch.records_data_offset();
        if !batch.is_append_only() {
            data_start += records as usize;
        }
        if data_start > size {
            return Err(Error::data_invalid(format!(
                "statistics and change types ({data_start} bytes) run past the batch end ({size})"
            )));
        }
        Ok(batch)
    }

    /// The raw bytes of the whole batch.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Size of the batch in bytes, including the 12-byte overhead.
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Header layout version.
    pub fn magic(&self) -> LogMagic {
        self.magic
    }

    fn i32_at(&self, at: usize) -> i32 {
        // In bounds: `parse` checked the header size for this magic.
        read_i32(&self.bytes, at).unwrap_or_default()
    }

    /// Offset of the first record.
    pub fn base_offset(&self) -> i64 {
        read_i64(&self.bytes, 0).unwrap_or_default()
    }

    /// Server-assigned commit timestamp in epoch millis.
    pub fn commit_timestamp(&self) -> i64 {
        read_i64(&self.bytes, super::format::COMMIT_TIMESTAMP_OFFSET).unwrap_or_default()
    }

    /// Leader epoch (V2 only).
    pub fn leader_epoch(&self) -> Option<i32> {
        self.magic.leader_epoch_offset().map(|at| self.i32_at(at))
    }

    /// Stored CRC-32C.
    pub fn crc(&self) -> u32 {
        read_u32(&self.bytes, self.magic.crc_offset()).unwrap_or_default()
    }

    /// Schema id the Arrow data was written with.
    pub fn schema_id(&self) -> i16 {
        read_i16(&self.bytes, self.magic.schema_id_offset()).unwrap_or_default()
    }

    /// Attributes byte.
    pub fn attributes(&self) -> u8 {
        self.bytes[self.magic.attributes_offset()]
    }

    /// Whether the batch has no change-type vector (every record `+A`).
    pub fn is_append_only(&self) -> bool {
        self.attributes() & APPEND_ONLY_FLAG_MASK != 0
    }

    /// `lastOffset - baseOffset`.
    pub fn last_offset_delta(&self) -> i32 {
        self.i32_at(self.magic.last_offset_delta_offset())
    }

    /// Offset of the last record (a batch with zero records still owns this offset).
    /// `parse` rejects batches where this would overflow.
    pub fn last_offset(&self) -> i64 {
        self.base_offset()
            .saturating_add(self.last_offset_delta() as i64)
    }

    /// Offset right after this batch: where a reader continues.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }

    /// Idempotent writer id, or `-1`.
    pub fn writer_id(&self) -> i64 {
        read_i64(&self.bytes, self.magic.writer_id_offset()).unwrap_or_default()
    }

    /// Idempotent batch sequence, or `-1`.
    pub fn batch_sequence(&self) -> i32 {
        self.i32_at(self.magic.batch_sequence_offset())
    }

    /// Number of records in the Arrow data.
    pub fn record_count(&self) -> i32 {
        self.i32_at(self.magic.record_count_offset())
    }

    /// Length of the statistics block (0 for V0 or when absent).
    pub fn statistics_length(&self) -> i32 {
        self.magic
            .statistics_length_offset()
            .map_or(0, |at| self.i32_at(at))
    }

    /// Where the change-type vector (or the Arrow message) starts.
    fn records_data_offset(&self) -> usize {
        self.magic.header_size() + self.statistics_length().max(0) as usize
    }

    /// The raw statistics block, if the batch carries one.
    pub fn statistics_bytes(&self) -> Option<&[u8]> {
        let len = self.statistics_length();
        (len > 0).then(|| {
            let start = self.magic.header_size();
            &self.bytes[start..start + len as usize]
        })
    }

    /// CRC-32C over `SchemaId..end`, as Fluss computes it.
    pub fn compute_crc(&self) -> u32 {
        crc32c::crc32c(&self.bytes[self.magic.schema_id_offset()..])
    }

    /// Fails if the stored CRC does not match the content.
    pub fn verify_crc(&self) -> Result<()> {
        let (stored, computed) = (self.crc(), self.compute_crc());
        if stored != computed {
            return Err(Error::data_invalid(format!(
                "CRC-32C mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ))
            .with_context("base_offset", self.base_offset()));
        }
        Ok(())
    }

    /// The change type of every record.
    pub fn change_types(&self) -> Result<ChangeTypes> {
        let count = self.record_count() as usize;
        if self.is_append_only() {
            return Ok(ChangeTypes::AppendOnly(count));
        }
        let start = self.records_data_offset();
        let vector = self.bytes.slice(start..start + count);
        if let Some(bad) = vector.iter().find(|b| change_type_from_byte(**b).is_none()) {
            return Err(
                Error::data_invalid(format!("unknown change type byte {bad}"))
                    .with_context("base_offset", self.base_offset()),
            );
        }
        Ok(ChangeTypes::Vector(vector))
    }

    /// The Arrow IPC message bytes (possibly empty for a batch without records).
    pub fn arrow_message(&self) -> Bytes {
        let mut start = self.records_data_offset();
        if !self.is_append_only() {
            start += self.record_count() as usize;
        }
        self.bytes.slice(start..)
    }

    /// Decodes the Arrow data with `schema` (the Arrow schema of this batch's schema id),
    /// keeping only the `projection` columns (indexes into `schema`) when given.
    pub fn decode(&self, schema: &SchemaRef, projection: Option<&[usize]>) -> Result<RecordBatch> {
        decode_arrow_message(
            self.arrow_message(),
            schema,
            projection,
            self.record_count(),
        )
        .map_err(|e| e.with_context("base_offset", self.base_offset()))
    }
}

/// Decodes one encapsulated Arrow IPC record-batch message with no schema message
/// before it: `[0xFFFFFFFF][i32 metadata length][flatbuffer Message][body]`.
pub fn decode_arrow_message(
    message: Bytes,
    schema: &SchemaRef,
    projection: Option<&[usize]>,
    expected_rows: i32,
) -> Result<RecordBatch> {
    let output_schema = match projection {
        Some(p) => std::sync::Arc::new(schema.project(p)?),
        None => schema.clone(),
    };
    if message.is_empty() {
        if expected_rows != 0 {
            return Err(Error::data_invalid(format!(
                "batch declares {expected_rows} records but has no Arrow data"
            )));
        }
        return Ok(RecordBatch::new_empty(output_schema));
    }
    let mut pos = 0usize;
    let mut meta_len = read_i32(&message, pos)?;
    pos += 4;
    if meta_len == -1 {
        // continuation marker (IPC format >= 0.15)
        meta_len = read_i32(&message, pos)?;
        pos += 4;
    }
    if meta_len <= 0 {
        return Err(Error::data_invalid(format!(
            "invalid Arrow IPC metadata length {meta_len}"
        )));
    }
    let meta_end = pos + meta_len as usize;
    let meta = message.get(pos..meta_end).ok_or_else(|| {
        Error::data_invalid(format!(
            "Arrow IPC metadata of {meta_len} bytes runs past the message ({} bytes)",
            message.len()
        ))
    })?;
    let ipc = root_as_message(meta)
        .map_err(|e| Error::data_invalid(format!("invalid Arrow IPC message: {e}")))?;
    if ipc.header_type() != MessageHeader::RecordBatch {
        return Err(Error::data_invalid(format!(
            "expected an Arrow record batch message, found {:?}",
            ipc.header_type()
        )));
    }
    let header = ipc
        .header_as_record_batch()
        .ok_or_else(|| Error::data_invalid("Arrow message has no record batch header"))?;
    if header.length() != expected_rows as i64 {
        return Err(Error::data_invalid(format!(
            "Arrow data holds {} rows but the batch header declares {expected_rows}",
            header.length()
        )));
    }
    let body_len = usize::try_from(ipc.bodyLength())
        .map_err(|_| Error::data_invalid("negative Arrow body length"))?;
    let body_end = meta_end
        .checked_add(body_len)
        .filter(|end| *end <= message.len())
        .ok_or_else(|| {
            Error::data_invalid(format!(
                "Arrow body of {body_len} bytes runs past the message ({} bytes)",
                message.len()
            ))
        })?;
    let body = message.slice(meta_end..body_end);
    validate_layout(&header, &body, expected_rows)?;
    super::buffer_check::check_buffer_sizes(&header, &body, schema)?;
    // Compressed buffers of the projected columns are decompressed here with a reused
    // per-thread context (see decompress.rs); arrow-ipc then slices the result.
    let decompressed = decompress_projected(&header, &body, schema, projection)?;
    let (header, body) = match &decompressed {
        Some(d) => (d.header()?, d.body().clone()),
        None => (header, Buffer::from(body)),
    };
    let version = ipc.version();
    let dictionaries = HashMap::new();
    // arrow-ipc asserts on some malformed inputs; turn any panic into an error so a
    // corrupt batch never takes the process down.
    let decoded = std::panic::catch_unwind(AssertUnwindSafe(|| {
        RecordBatchDecoder::try_new(&body, header, schema.clone(), &dictionaries, &version)?
            .with_projection(projection)
            .with_require_alignment(false)
            .read_record_batch()
    }))
    .map_err(|_| {
        Error::data_invalid("Arrow record batch could not be decoded (malformed buffers)")
    })?;
    let batch = decoded.map_err(|e| {
        Error::data_invalid("Arrow record batch does not match the schema").with_source(e)
    })?;
    // The decoder keeps the schema it was given; make sure projected output matches.
    if batch.schema() != output_schema {
        return Ok(RecordBatch::try_new(
            output_schema,
            batch.columns().to_vec(),
        )?);
    }
    Ok(batch)
}

/// Largest uncompressed size one Arrow buffer of a log batch may declare. Fluss
/// batches are a few MiB; the bound only stops a corrupt length prefix from making the
/// decoder reserve absurd amounts of memory (an allocation failure aborts the process).
pub const MAX_BUFFER_BYTES: i64 = 1 << 31;

/// Checks buffer and node bounds in the record-batch header before arrow-ipc trusts
/// them: every buffer lies inside the body, compressed buffers declare a sane
/// uncompressed length, and no node claims more than [`MAX_BUFFER_BYTES`] values.
fn validate_layout(
    header: &datafusion::arrow::ipc::RecordBatch<'_>,
    body: &[u8],
    expected_rows: i32,
) -> Result<()> {
    let compressed = header.compression().is_some();
    if let Some(buffers) = header.buffers() {
        for (i, buffer) in buffers.iter().enumerate() {
            let (offset, length) = (buffer.offset(), buffer.length());
            let end = offset.checked_add(length);
            if offset < 0 || length < 0 || end.is_none_or(|e| e as u64 > body.len() as u64) {
                return Err(Error::data_invalid(format!(
                    "Arrow buffer {i} at {offset}+{length} lies outside the {}-byte body",
                    body.len()
                )));
            }
            if compressed && length >= 8 {
                let start = offset as usize;
                let mut prefix = [0u8; 8];
                prefix.copy_from_slice(&body[start..start + 8]);
                let declared = i64::from_le_bytes(prefix);
                if declared != -1 && !(0..=MAX_BUFFER_BYTES).contains(&declared) {
                    return Err(Error::data_invalid(format!(
                        "Arrow buffer {i} declares {declared} uncompressed bytes"
                    )));
                }
            }
        }
    }
    if let Some(nodes) = header.nodes() {
        for node in nodes.iter() {
            if node.length() < 0 || node.length() > MAX_BUFFER_BYTES || node.null_count() < 0 {
                return Err(Error::data_invalid(format!(
                    "Arrow field node claims {} values ({} nulls)",
                    node.length(),
                    node.null_count()
                )));
            }
        }
    }
    if expected_rows < 0 {
        return Err(Error::data_invalid("negative record count"));
    }
    Ok(())
}

/// Iterates the batches laid back to back in a buffer (a segment file or a slice of it).
///
/// Yields an error for a batch whose framing is invalid and stops; a trailing partial
/// batch (fewer bytes than its `Length` says) is reported by [`BatchIterator::torn_tail`]
/// rather than as an error, since it is what a crash mid-append leaves behind.
#[derive(Debug)]
pub struct BatchIterator {
    bytes: Bytes,
    position: usize,
    torn_tail: Option<usize>,
    failed: bool,
}

impl BatchIterator {
    /// Iterates `bytes` from the start.
    pub fn new(bytes: Bytes) -> Self {
        Self {
            bytes,
            position: 0,
            torn_tail: None,
            failed: false,
        }
    }

    /// Byte position of the next batch.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Position of an incomplete batch at the end of the buffer, once iteration reached it.
    pub fn torn_tail(&self) -> Option<usize> {
        self.torn_tail
    }
}

impl Iterator for BatchIterator {
    type Item = Result<LogBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.position >= self.bytes.len() {
            return None;
        }
        let remaining = self.bytes.len() - self.position;
        if remaining < LOG_OVERHEAD {
            self.torn_tail = Some(self.position);
            return None;
        }
        let length = match read_i32(&self.bytes, self.position + LENGTH_OFFSET) {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        if length < (MIN_HEADER_SIZE - LOG_OVERHEAD) as i32 {
            // Zeros past the last batch are preallocated space a crash left
            // unwritten, not a batch: the segment's caller decides what a tail is.
            if self.bytes[self.position..].iter().all(|b| *b == 0) {
                self.torn_tail = Some(self.position);
                return None;
            }
            self.failed = true;
            return Some(Err(Error::data_invalid(format!(
                "batch length {length} is smaller than any batch header"
            ))
            .with_context("position", self.position)));
        }
        let size = LOG_OVERHEAD + length as usize;
        if size > remaining {
            self.torn_tail = Some(self.position);
            return None;
        }
        let start = self.position;
        self.position += size;
        let parsed = LogBatch::parse(self.bytes.slice(start..start + size))
            .map_err(|e| e.with_context("position", start));
        if parsed.is_err() {
            self.failed = true;
        }
        Some(parsed)
    }
}
