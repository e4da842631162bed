//! Byte layout of a Fluss log record batch header (magic V0, V1, V2).
//!
//! Source: apache/fluss `fluss-common/.../record/LogRecordBatchFormat.java`; the offsets
//! are summarised in `docs/reference/fluss-formats.md` §1.3. Every integer is little-endian.
//!
//! ```text
//!  field            V0  V1  V2
//!  BaseOffset i64    0   0   0
//!  Length i32        8   8   8     (= batch size - 12)
//!  Magic i8         12  12  12
//!  CommitTs i64     13  13  13
//!  LeaderEpoch i32   -   -  21
//!  CRC u32          21  21  25     (CRC-32C of SchemaId..end)
//!  SchemaId i16     25  25  29
//!  Attributes i8    27  27  31     (bit 0 = append-only)
//!  LastOffsetDelta  28  28  32
//!  WriterId i64     32  32  36
//!  BatchSequence    40  40  44
//!  RecordCount i32  44  44  48
//!  StatisticsLength  -  48  52
//!  header size      48  52  56
//! ```

use crate::error::{Error, Result};

/// Bytes before the batch body that frame it: `BaseOffset (8) + Length (4)`.
pub const LOG_OVERHEAD: usize = 12;
/// Offset of the `Length` field.
pub const LENGTH_OFFSET: usize = 8;
/// Offset of the `Magic` byte (same for every version).
pub const MAGIC_OFFSET: usize = 12;
/// Offset of the `CommitTimestamp` field (same for every version).
pub const COMMIT_TIMESTAMP_OFFSET: usize = 13;
/// Attributes bit marking a batch without a change-type vector (log tables).
pub const APPEND_ONLY_FLAG_MASK: u8 = 0x01;
/// `WriterId` of a batch written without idempotence.
pub const NO_WRITER_ID: i64 = -1;
/// `BatchSequence` of a batch written without idempotence.
pub const NO_BATCH_SEQUENCE: i32 = -1;
/// `LeaderEpoch` when unknown.
pub const NO_LEADER_EPOCH: i32 = -1;
/// Smallest header of any version; fewer bytes than this cannot be a batch.
pub const MIN_HEADER_SIZE: usize = 48;

/// The magic byte: which header layout a batch uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogMagic {
    /// The original layout (what Fluss writes without statistics).
    V0,
    /// V0 plus a statistics block (Fluss 1.0, `table.statistics.columns`).
    V1,
    /// V1 plus a leader epoch (readable; no production writer emits it).
    V2,
}

impl LogMagic {
    /// Parses the magic byte.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(LogMagic::V0),
            1 => Some(LogMagic::V1),
            2 => Some(LogMagic::V2),
            _ => None,
        }
    }

    /// The byte written for this magic.
    pub fn to_byte(self) -> u8 {
        match self {
            LogMagic::V0 => 0,
            LogMagic::V1 => 1,
            LogMagic::V2 => 2,
        }
    }

    /// Whether the header carries a `StatisticsLength` field.
    pub fn has_statistics(self) -> bool {
        self >= LogMagic::V1
    }

    /// Fixed header size: 48, 52 or 56 bytes.
    pub fn header_size(self) -> usize {
        match self {
            LogMagic::V0 => 48,
            LogMagic::V1 => 52,
            LogMagic::V2 => 56,
        }
    }

    /// V2 inserts the 4-byte leader epoch before the CRC and shifts later fields.
    fn shift(self) -> usize {
        if self == LogMagic::V2 { 4 } else { 0 }
    }

    /// Offset of `LeaderEpoch` (V2 only).
    pub fn leader_epoch_offset(self) -> Option<usize> {
        (self == LogMagic::V2).then_some(21)
    }

    /// Offset of the CRC.
    pub fn crc_offset(self) -> usize {
        21 + self.shift()
    }

    /// Offset of `SchemaId`, where the CRC-covered range starts.
    pub fn schema_id_offset(self) -> usize {
        25 + self.shift()
    }

    /// Offset of the attributes byte.
    pub fn attributes_offset(self) -> usize {
        27 + self.shift()
    }

    /// Offset of `LastOffsetDelta`.
    pub fn last_offset_delta_offset(self) -> usize {
        28 + self.shift()
    }

    /// Offset of `WriterId`.
    pub fn writer_id_offset(self) -> usize {
        32 + self.shift()
    }

    /// Offset of `BatchSequence`.
    pub fn batch_sequence_offset(self) -> usize {
        40 + self.shift()
    }

    /// Offset of `RecordCount`.
    pub fn record_count_offset(self) -> usize {
        44 + self.shift()
    }

    /// Offset of `StatisticsLength` (V1 and V2).
    pub fn statistics_length_offset(self) -> Option<usize> {
        self.has_statistics().then_some(48 + self.shift())
    }
}

/// Little-endian readers over a byte slice that return an error instead of panicking.
pub(crate) fn read_i64(buf: &[u8], at: usize) -> Result<i64> {
    Ok(i64::from_le_bytes(read_array::<8>(buf, at)?))
}

pub(crate) fn read_i32(buf: &[u8], at: usize) -> Result<i32> {
    Ok(i32::from_le_bytes(read_array::<4>(buf, at)?))
}

pub(crate) fn read_u32(buf: &[u8], at: usize) -> Result<u32> {
    Ok(u32::from_le_bytes(read_array::<4>(buf, at)?))
}

pub(crate) fn read_i16(buf: &[u8], at: usize) -> Result<i16> {
    Ok(i16::from_le_bytes(read_array::<2>(buf, at)?))
}

pub(crate) fn read_u8(buf: &[u8], at: usize) -> Result<u8> {
    buf.get(at)
        .copied()
        .ok_or_else(|| out_of_bounds(buf.len(), at, 1))
}

fn read_array<const N: usize>(buf: &[u8], at: usize) -> Result<[u8; N]> {
    at.checked_add(N)
        .and_then(|end| buf.get(at..end))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| out_of_bounds(buf.len(), at, N))
}

fn out_of_bounds(len: usize, at: usize, width: usize) -> Error {
    Error::data_invalid(format!(
        "truncated data: need {width} bytes at position {at}, only {len} available"
    ))
}

/// 20-digit zero-padded file name prefix of a segment starting at `offset`,
/// as Fluss `FlussPaths.filenamePrefixFromOffset`.
pub fn segment_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.log")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_sizes_follow_the_magic() {
        assert_eq!(LogMagic::V0.header_size(), 48);
        assert_eq!(LogMagic::V1.header_size(), 52);
        assert_eq!(LogMagic::V2.header_size(), 56);
        assert_eq!(LogMagic::V1.statistics_length_offset(), Some(48));
        assert_eq!(LogMagic::V2.statistics_length_offset(), Some(52));
        assert_eq!(LogMagic::V0.statistics_length_offset(), None);
        assert_eq!(LogMagic::V2.crc_offset(), 25);
        assert_eq!(LogMagic::V2.schema_id_offset(), 29);
        assert_eq!(LogMagic::V2.record_count_offset(), 48);
        assert_eq!(LogMagic::from_byte(3), None);
    }

    #[test]
    fn segment_names_are_20_digits() {
        assert_eq!(segment_file_name(0), "00000000000000000000.log");
        assert_eq!(segment_file_name(1234), "00000000000000001234.log");
    }

    #[test]
    fn reads_never_panic_past_the_end() {
        let buf = [1u8, 2, 3];
        assert!(read_i64(&buf, 0).is_err());
        assert!(read_u8(&buf, 3).is_err());
        assert_eq!(read_i16(&buf, 1).unwrap(), i16::from_le_bytes([2, 3]));
        assert!(read_i32(&buf, usize::MAX - 1).is_err());
    }
}
