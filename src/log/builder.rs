//! Writing Fluss log record batches (V0, and V1 with statistics).
//!
//! Mirrors apache/fluss `MemoryLogRecordsArrowBuilder`: header, optional statistics,
//! optional change-type vector, then one Arrow IPC record-batch message (no schema
//! message) with per-buffer compression; the CRC-32C covers `SchemaId..end`.

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::ipc::MetadataVersion;
use datafusion::arrow::ipc::writer::{
    DictionaryTracker, IpcDataGenerator, IpcWriteContext, IpcWriteOptions, write_message,
};
use fluss::metadata::RowType;
use fluss::record::ChangeType;

use super::compression::ArrowCompression;
use super::format::{
    APPEND_ONLY_FLAG_MASK, LENGTH_OFFSET, LOG_OVERHEAD, LogMagic, MAGIC_OFFSET, NO_BATCH_SEQUENCE,
    NO_LEADER_EPOCH, NO_WRITER_ID,
};
use super::statistics::BatchStatistics;
use crate::error::{Error, Result};

/// Builds encoded log batches for one table schema.
#[derive(Debug, Clone)]
pub struct LogBatchBuilder {
    schema_id: i16,
    compression: ArrowCompression,
    statistics: Option<(RowType, Vec<usize>)>,
    magic: Option<LogMagic>,
    writer_id: i64,
    batch_sequence: i32,
    leader_epoch: i32,
}

impl LogBatchBuilder {
    /// A builder for batches of schema `schema_id` with the given compression.
    pub fn new(schema_id: i16, compression: ArrowCompression) -> Self {
        Self {
            schema_id,
            compression,
            statistics: None,
            magic: None,
            writer_id: NO_WRITER_ID,
            batch_sequence: NO_BATCH_SEQUENCE,
            leader_epoch: NO_LEADER_EPOCH,
        }
    }

    /// Collect V1 statistics for the columns in `mapping` (positions in `row_type`).
    /// An empty mapping keeps writing V0, as Fluss does without `table.statistics.columns`.
    pub fn with_statistics(mut self, row_type: RowType, mapping: Vec<usize>) -> Self {
        self.statistics = (!mapping.is_empty()).then_some((row_type, mapping));
        self
    }

    /// Forces a magic (tests of older/newer readers); by default V1 with statistics, else V0.
    pub fn with_magic(mut self, magic: LogMagic) -> Self {
        self.magic = Some(magic);
        self
    }

    /// Sets the idempotent writer id and batch sequence.
    pub fn with_writer(mut self, writer_id: i64, batch_sequence: i32) -> Self {
        self.writer_id = writer_id;
        self.batch_sequence = batch_sequence;
        self
    }

    /// Sets the V2 leader epoch.
    pub fn with_leader_epoch(mut self, leader_epoch: i32) -> Self {
        self.leader_epoch = leader_epoch;
        self
    }

    /// Encodes `batch` as one log batch at `base_offset`. `change_types` makes a PK
    /// changelog batch (one per row); `None` makes an append-only batch.
    pub fn build(
        &self,
        base_offset: i64,
        commit_timestamp: i64,
        batch: &RecordBatch,
        change_types: Option<&[ChangeType]>,
    ) -> Result<Bytes> {
        let rows = batch.num_rows();
        if let Some(ct) = change_types
            && ct.len() != rows
        {
            return Err(Error::invalid_input(format!(
                "{} change types for {rows} rows",
                ct.len()
            )));
        }
        let statistics = match &self.statistics {
            Some((row_type, mapping)) => BatchStatistics::serialize(batch, row_type, mapping)?,
            None => None,
        };
        let magic = self.magic.unwrap_or(if self.statistics.is_some() {
            LogMagic::V1
        } else {
            LogMagic::V0
        });
        let statistics = if magic.has_statistics() {
            statistics
        } else {
            None
        };
        let arrow = encode_arrow_message(batch, self.compression)?;

        let header_size = magic.header_size();
        let stats_len = statistics.as_ref().map_or(0, Vec::len);
        let ct_len = change_types.map_or(0, <[ChangeType]>::len);
        let total = header_size + stats_len + ct_len + arrow.len();
        let mut out = vec![0u8; header_size];
        out.reserve(total - header_size);
        if let Some(stats) = &statistics {
            out.extend_from_slice(stats);
        }
        if let Some(ct) = change_types {
            out.extend(ct.iter().map(ChangeType::to_byte_value));
        }
        out.extend_from_slice(&arrow);

        let put = |out: &mut Vec<u8>, at: usize, bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes)
        };
        put(&mut out, 0, &base_offset.to_le_bytes());
        put(
            &mut out,
            LENGTH_OFFSET,
            &((total - LOG_OVERHEAD) as i32).to_le_bytes(),
        );
        out[MAGIC_OFFSET] = magic.to_byte();
        put(
            &mut out,
            super::format::COMMIT_TIMESTAMP_OFFSET,
            &commit_timestamp.to_le_bytes(),
        );
        if let Some(at) = magic.leader_epoch_offset() {
            put(&mut out, at, &self.leader_epoch.to_le_bytes());
        }
        put(
            &mut out,
            magic.schema_id_offset(),
            &self.schema_id.to_le_bytes(),
        );
        out[magic.attributes_offset()] = if change_types.is_none() {
            APPEND_ONLY_FLAG_MASK
        } else {
            0
        };
        let last_offset_delta = rows.saturating_sub(1) as i32;
        put(
            &mut out,
            magic.last_offset_delta_offset(),
            &last_offset_delta.to_le_bytes(),
        );
        put(
            &mut out,
            magic.writer_id_offset(),
            &self.writer_id.to_le_bytes(),
        );
        put(
            &mut out,
            magic.batch_sequence_offset(),
            &self.batch_sequence.to_le_bytes(),
        );
        put(
            &mut out,
            magic.record_count_offset(),
            &(rows as i32).to_le_bytes(),
        );
        if let Some(at) = magic.statistics_length_offset() {
            put(&mut out, at, &(stats_len as i32).to_le_bytes());
        }
        let crc = crc32c::crc32c(&out[magic.schema_id_offset()..]);
        put(&mut out, magic.crc_offset(), &crc.to_le_bytes());
        Ok(Bytes::from(out))
    }
}

/// Encodes one Arrow IPC record-batch message (continuation marker, metadata, body),
/// 8-byte aligned like arrow-java, with the requested buffer compression.
pub fn encode_arrow_message(batch: &RecordBatch, compression: ArrowCompression) -> Result<Vec<u8>> {
    let mut options = IpcWriteOptions::try_new(8, false, MetadataVersion::V5)?
        .try_with_compression(compression.ipc_codec())?;
    if let ArrowCompression::Zstd(level) = compression {
        options = options.try_with_compression_level(Some(level))?;
    }
    let generator = IpcDataGenerator::default();
    let mut tracker = DictionaryTracker::new(false);
    let mut context = IpcWriteContext::default();
    let (dictionaries, encoded) = generator.encode(batch, &mut tracker, &options, &mut context)?;
    if !dictionaries.is_empty() {
        return Err(Error::unsupported(
            "dictionary-encoded columns cannot be written to a Fluss log batch",
        ));
    }
    let mut out = Vec::with_capacity(encoded.ipc_message.len() + encoded.arrow_data.len() + 16);
    write_message(&mut out, encoded, &options)?;
    Ok(out)
}
