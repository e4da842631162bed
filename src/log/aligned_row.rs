//! `AlignedRow`: the fixed-width binary row that carries V1 batch statistics.
//!
//! The layout is Flink's `BinaryRowData` / Paimon's `BinaryRow` (apache/fluss
//! `fluss-common/.../row/aligned/AlignedRow.java`, `row/AbstractBinaryWriter.java`):
//!
//! ```text
//! [null bitset: ((arity + 63 + 8) / 64) * 8 bytes; byte 0 = row kind, field i = bit i + 8]
//! [8-byte slot per field][variable part, each entry padded to 8 bytes]
//! ```
//! Fixed-width values sit in their slot (little-endian). Strings of at most 7 bytes are
//! inlined with `0x80 | len` in the slot's high byte; longer strings, non-compact decimals
//! (precision > 18) and non-compact timestamps (precision > 3) live in the variable part
//! and the slot holds `(offset << 32) | len` (timestamps: `(offset << 32) | nanoOfMillis`).

use crate::error::{Error, Result};

/// Precision up to which a decimal is stored as an unscaled `i64` in its slot.
pub const MAX_COMPACT_DECIMAL_PRECISION: u32 = 18;
/// Precision up to which a timestamp is stored as epoch millis in its slot.
pub const MAX_COMPACT_TIMESTAMP_PRECISION: u32 = 3;

/// Size of the null bitset (which includes the header byte) for `arity` fields.
pub fn null_bitset_size(arity: usize) -> usize {
    (arity + 63 + 8) / 64 * 8
}

/// Size of the fixed part: bitset plus one 8-byte slot per field.
pub fn fixed_part_size(arity: usize) -> usize {
    null_bitset_size(arity) + 8 * arity
}

/// Read access to one aligned row; every accessor checks bounds.
#[derive(Debug, Clone, Copy)]
pub struct AlignedRowReader<'a> {
    bytes: &'a [u8],
    arity: usize,
}

impl<'a> AlignedRowReader<'a> {
    /// Wraps `bytes` as a row of `arity` fields; fails if the fixed part does not fit.
    pub fn new(bytes: &'a [u8], arity: usize) -> Result<Self> {
        if bytes.len() < fixed_part_size(arity) {
            return Err(Error::data_invalid(format!(
                "aligned row of {arity} fields needs at least {} bytes, got {}",
                fixed_part_size(arity),
                bytes.len()
            )));
        }
        Ok(Self { bytes, arity })
    }

    fn slot_offset(&self, index: usize) -> Result<usize> {
        if index >= self.arity {
            return Err(Error::data_invalid(format!(
                "field {index} out of range for a row of {} fields",
                self.arity
            )));
        }
        Ok(null_bitset_size(self.arity) + 8 * index)
    }

    fn slot(&self, index: usize) -> Result<[u8; 8]> {
        let at = self.slot_offset(index)?;
        let mut out = [0u8; 8];
        out.copy_from_slice(&self.bytes[at..at + 8]);
        Ok(out)
    }

    /// Whether field `index` is null.
    pub fn is_null(&self, index: usize) -> Result<bool> {
        self.slot_offset(index)?;
        let bit = index + 8;
        Ok(self.bytes[bit / 8] & (1 << (bit % 8)) != 0)
    }

    /// A BOOLEAN field.
    pub fn get_bool(&self, index: usize) -> Result<bool> {
        Ok(self.slot(index)?[0] != 0)
    }

    /// A TINYINT field.
    pub fn get_i8(&self, index: usize) -> Result<i8> {
        Ok(self.slot(index)?[0] as i8)
    }

    /// A SMALLINT field.
    pub fn get_i16(&self, index: usize) -> Result<i16> {
        let s = self.slot(index)?;
        Ok(i16::from_le_bytes([s[0], s[1]]))
    }

    /// An INT, DATE or TIME (millis of day) field.
    pub fn get_i32(&self, index: usize) -> Result<i32> {
        let s = self.slot(index)?;
        Ok(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// A BIGINT field (also compact decimals and compact timestamps).
    pub fn get_i64(&self, index: usize) -> Result<i64> {
        Ok(i64::from_le_bytes(self.slot(index)?))
    }

    /// A FLOAT field.
    pub fn get_f32(&self, index: usize) -> Result<f32> {
        Ok(f32::from_bits(self.get_i32(index)? as u32))
    }

    /// A DOUBLE field.
    pub fn get_f64(&self, index: usize) -> Result<f64> {
        Ok(f64::from_bits(self.get_i64(index)? as u64))
    }

    /// The raw bytes of a STRING / BYTES field (inline or in the variable part).
    pub fn get_binary(&self, index: usize) -> Result<&'a [u8]> {
        let at = self.slot_offset(index)?;
        let slot = self.slot(index)?;
        let mark = slot[7];
        if mark & 0x80 != 0 {
            let len = (mark & 0x7f) as usize;
            if len > 7 {
                return Err(Error::data_invalid(format!(
                    "inline value of field {index} claims {len} bytes (max 7)"
                )));
            }
            return Ok(&self.bytes[at..at + len]);
        }
        let word = u64::from_le_bytes(slot);
        self.variable_part(index, (word >> 32) as usize, (word & 0xffff_ffff) as usize)
    }

    /// A STRING field as UTF-8.
    pub fn get_str(&self, index: usize) -> Result<&'a str> {
        std::str::from_utf8(self.get_binary(index)?).map_err(|e| {
            Error::data_invalid(format!("field {index} is not valid UTF-8")).with_source(e)
        })
    }

    /// The unscaled value of a DECIMAL(precision, _) field.
    pub fn get_decimal(&self, index: usize, precision: u32) -> Result<i128> {
        if precision <= MAX_COMPACT_DECIMAL_PRECISION {
            return Ok(self.get_i64(index)? as i128);
        }
        let word = u64::from_le_bytes(self.slot(index)?);
        let bytes =
            self.variable_part(index, (word >> 32) as usize, (word & 0xffff_ffff) as usize)?;
        if bytes.is_empty() || bytes.len() > 16 {
            return Err(Error::data_invalid(format!(
                "decimal field {index} has {} unscaled bytes (expected 1..=16)",
                bytes.len()
            )));
        }
        // Big-endian two's complement, sign-extended to 16 bytes.
        let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
        let mut full = [fill; 16];
        full[16 - bytes.len()..].copy_from_slice(bytes);
        Ok(i128::from_be_bytes(full))
    }

    /// A TIMESTAMP / TIMESTAMP_LTZ field as `(epoch millis, nano of milli)`.
    pub fn get_timestamp(&self, index: usize, precision: u32) -> Result<(i64, i32)> {
        if precision <= MAX_COMPACT_TIMESTAMP_PRECISION {
            return Ok((self.get_i64(index)?, 0));
        }
        let word = u64::from_le_bytes(self.slot(index)?);
        let millis = self.variable_part(index, (word >> 32) as usize, 8)?;
        let mut m = [0u8; 8];
        m.copy_from_slice(millis);
        Ok((i64::from_le_bytes(m), (word & 0xffff_ffff) as i32))
    }

    fn variable_part(&self, index: usize, offset: usize, len: usize) -> Result<&'a [u8]> {
        offset
            .checked_add(len)
            .filter(|end| offset >= fixed_part_size(self.arity) && *end <= self.bytes.len())
            .map(|end| &self.bytes[offset..end])
            .ok_or_else(|| {
                Error::data_invalid(format!(
                    "field {index} points to bytes {offset}..+{len} outside a row of {} bytes",
                    self.bytes.len()
                ))
            })
    }
}

/// Builds one aligned row, field by field, byte-compatible with Java's writer.
#[derive(Debug)]
pub struct AlignedRowWriter {
    arity: usize,
    buf: Vec<u8>,
}

impl AlignedRowWriter {
    /// A row of `arity` fields, all zero (non-null) until written.
    pub fn new(arity: usize) -> Self {
        Self {
            arity,
            buf: vec![0u8; fixed_part_size(arity)],
        }
    }

    fn slot_offset(&self, index: usize) -> usize {
        debug_assert!(index < self.arity);
        null_bitset_size(self.arity) + 8 * index
    }

    fn put_slot(&mut self, index: usize, bytes: &[u8]) {
        let at = self.slot_offset(index);
        self.buf[at..at + 8].fill(0);
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
    }

    /// Marks field `index` null (its slot stays zero).
    pub fn set_null(&mut self, index: usize) {
        let bit = index + 8;
        self.buf[bit / 8] |= 1 << (bit % 8);
        let at = self.slot_offset(index);
        self.buf[at..at + 8].fill(0);
    }

    /// Writes a BOOLEAN.
    pub fn write_bool(&mut self, index: usize, v: bool) {
        self.put_slot(index, &[v as u8]);
    }

    /// Writes a TINYINT.
    pub fn write_i8(&mut self, index: usize, v: i8) {
        self.put_slot(index, &v.to_le_bytes());
    }

    /// Writes a SMALLINT.
    pub fn write_i16(&mut self, index: usize, v: i16) {
        self.put_slot(index, &v.to_le_bytes());
    }

    /// Writes an INT / DATE / TIME.
    pub fn write_i32(&mut self, index: usize, v: i32) {
        self.put_slot(index, &v.to_le_bytes());
    }

    /// Writes a BIGINT.
    pub fn write_i64(&mut self, index: usize, v: i64) {
        self.put_slot(index, &v.to_le_bytes());
    }

    /// Writes a FLOAT.
    pub fn write_f32(&mut self, index: usize, v: f32) {
        self.put_slot(index, &v.to_le_bytes());
    }

    /// Writes a DOUBLE.
    pub fn write_f64(&mut self, index: usize, v: f64) {
        self.put_slot(index, &v.to_le_bytes());
    }

    /// Writes STRING / BYTES data: inline when at most 7 bytes.
    pub fn write_binary(&mut self, index: usize, v: &[u8]) {
        if v.len() <= 7 {
            let mut slot = [0u8; 8];
            slot[..v.len()].copy_from_slice(v);
            slot[7] = 0x80 | v.len() as u8;
            self.put_slot(index, &slot);
        } else {
            let offset = self.append_variable(v, v.len().next_multiple_of(8));
            self.put_slot(index, &((offset << 32) | v.len() as u64).to_le_bytes());
        }
    }

    /// Writes a DECIMAL given its unscaled value.
    pub fn write_decimal(&mut self, index: usize, unscaled: i128, precision: u32) {
        if precision <= MAX_COMPACT_DECIMAL_PRECISION {
            self.write_i64(index, unscaled as i64);
            return;
        }
        let bytes = minimal_twos_complement(unscaled);
        // Java reserves 16 bytes for every non-compact decimal.
        let offset = self.append_variable(&bytes, 16);
        self.put_slot(index, &((offset << 32) | bytes.len() as u64).to_le_bytes());
    }

    /// Writes a TIMESTAMP / TIMESTAMP_LTZ from epoch millis and nano of milli.
    pub fn write_timestamp(
        &mut self,
        index: usize,
        millis: i64,
        nano_of_milli: i32,
        precision: u32,
    ) {
        if precision <= MAX_COMPACT_TIMESTAMP_PRECISION {
            self.write_i64(index, millis);
            return;
        }
        let offset = self.append_variable(&millis.to_le_bytes(), 8);
        self.put_slot(
            index,
            &((offset << 32) | (nano_of_milli as u32) as u64).to_le_bytes(),
        );
    }

    fn append_variable(&mut self, data: &[u8], reserved: usize) -> u64 {
        let offset = self.buf.len();
        self.buf.extend_from_slice(data);
        self.buf.resize(offset + reserved.max(data.len()), 0);
        offset as u64
    }

    /// The finished row bytes.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// `BigInteger.toByteArray()`: the shortest big-endian two's complement encoding.
fn minimal_twos_complement(v: i128) -> Vec<u8> {
    let full = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (full[start], full[start + 1]);
        let redundant = (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    full[start..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitset_sizes() {
        assert_eq!(null_bitset_size(1), 8);
        assert_eq!(null_bitset_size(56), 8);
        assert_eq!(null_bitset_size(57), 16);
        assert_eq!(fixed_part_size(2), 24);
    }

    #[test]
    fn round_trips_every_kind_of_field() {
        let mut w = AlignedRowWriter::new(7);
        w.write_i32(0, -5);
        w.write_binary(1, b"short");
        w.write_binary(2, b"a longer string value");
        w.write_decimal(3, -123456789012345678901234567i128, 30);
        w.write_timestamp(4, 1_700_000_000_123, 456_000, 6);
        w.set_null(5);
        w.write_f64(6, 2.5);
        let bytes = w.finish();
        let r = AlignedRowReader::new(&bytes, 7).unwrap();
        assert_eq!(r.get_i32(0).unwrap(), -5);
        assert_eq!(r.get_str(1).unwrap(), "short");
        assert_eq!(r.get_str(2).unwrap(), "a longer string value");
        assert_eq!(
            r.get_decimal(3, 30).unwrap(),
            -123456789012345678901234567i128
        );
        assert_eq!(r.get_timestamp(4, 6).unwrap(), (1_700_000_000_123, 456_000));
        assert!(r.is_null(5).unwrap());
        assert!(!r.is_null(6).unwrap());
        assert_eq!(r.get_f64(6).unwrap(), 2.5);
    }

    #[test]
    fn corrupt_rows_are_errors() {
        assert!(AlignedRowReader::new(&[0u8; 10], 2).is_err());
        let mut w = AlignedRowWriter::new(1);
        w.write_binary(0, b"0123456789");
        let mut bytes = w.finish();
        // point the variable part past the end
        bytes[8 + 4] = 0xff;
        let r = AlignedRowReader::new(&bytes, 1).unwrap();
        assert!(r.get_str(0).is_err());
        assert!(r.get_i32(1).is_err());
    }

    #[test]
    fn minimal_encoding_matches_biginteger() {
        assert_eq!(minimal_twos_complement(0), vec![0]);
        assert_eq!(minimal_twos_complement(127), vec![0x7f]);
        assert_eq!(minimal_twos_complement(128), vec![0x00, 0x80]);
        assert_eq!(minimal_twos_complement(-1), vec![0xff]);
        assert_eq!(minimal_twos_complement(-129), vec![0xff, 0x7f]);
    }
}
