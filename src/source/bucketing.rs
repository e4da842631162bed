//! Which bucket a row goes to, exactly as a Fluss client computes it.
//!
//! The bucket key is encoded with fluss-rs's public `KeyEncoderFactory` (Paimon
//! `BinaryRow` bytes for Paimon tables, Fluss's compacted key otherwise) and hashed
//! with apache/fluss `BucketingFunction.of(lakeFormat)`:
//! - Paimon: `abs(murmur3_42(key) % n)` (`PaimonBucketingFunction`), so Fluss bucket b
//!   is Paimon bucket b and a PK union read can pair them.
//! - Iceberg: `(murmur3_32(key) & i32::MAX) % n` (`IcebergBucketingFunction`, Guava's
//!   `murmur3_32_fixed`, the hash of Iceberg's `bucket` transform), so Fluss bucket b
//!   is the lake's `bucket(key, n)` = b.
//! - none / Lance: `murmurHash(murmur3_42(key)) % n` (`FlussBucketingFunction`).
//!
//! fluss-rs keeps its bucketing functions private; the hashes below follow its
//! `util/murmur_hash.rs` (Flink's `MurmurHashUtils`).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use fluss::metadata::{DataLakeFormat, RowType};
use fluss::row::ColumnarRow;
use fluss::row::encode::{KeyEncoder, KeyEncoderFactory};

use crate::error::{Error, Result};

const C1: u32 = 0xCC9E_2D51;
const C2: u32 = 0x1B87_3593;

fn mix_k1(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

fn mix_h1(h: u32, k: u32) -> u32 {
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xE654_6B64)
}

fn bit_mix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// Flink/Fluss `MurmurHashUtils.hashBytes` with seed 42: word-at-a-time, tail bytes
/// mixed one by one.
pub fn murmur3_seed42(data: &[u8]) -> i32 {
    let mut h = 42u32;
    let chunks = data.chunks_exact(4);
    let tail = chunks.remainder();
    for chunk in chunks {
        h = mix_h1(
            h,
            mix_k1(u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])),
        );
    }
    for byte in tail {
        h = mix_h1(h, mix_k1(*byte as u32));
    }
    bit_mix(h ^ data.len() as u32) as i32
}

/// Standard MurmurHash3 x86 32-bit with seed 0 (Guava `murmur3_32_fixed`): tail
/// bytes are combined into one block, unlike [`murmur3_seed42`].
pub fn murmur3_32(data: &[u8]) -> u32 {
    let mut h = 0u32;
    let chunks = data.chunks_exact(4);
    let tail = chunks.remainder();
    for chunk in chunks {
        h = mix_h1(
            h,
            mix_k1(u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])),
        );
    }
    let k = tail
        .iter()
        .enumerate()
        .fold(0u32, |k, (i, b)| k | ((*b as u32) << (8 * i)));
    h ^= mix_k1(k);
    bit_mix(h ^ data.len() as u32)
}

/// Flink `MathUtils.murmurHash(int)`: a non-negative mix of an int.
pub fn murmur_hash_int(input: i32) -> i32 {
    let mut h = mix_k1(input as u32).rotate_left(13);
    h = h.wrapping_mul(5).wrapping_add(0xE654_6B64);
    h ^= 4;
    let out = bit_mix(h) as i32;
    if out >= 0 {
        out
    } else if out != i32::MIN {
        -out
    } else {
        0
    }
}

/// Bucket of an encoded bucket key for the table's lake format.
pub fn bucket_of_key(key: &[u8], num_buckets: i32, lake: Option<&DataLakeFormat>) -> Result<i32> {
    if num_buckets <= 0 {
        return Err(Error::invalid_input(format!(
            "bucket count must be positive, got {num_buckets}"
        )));
    }
    Ok(match lake {
        Some(DataLakeFormat::Paimon) => (murmur3_seed42(key) % num_buckets).wrapping_abs(),
        Some(DataLakeFormat::Iceberg) => (murmur3_32(key) as i32 & i32::MAX) % num_buckets,
        _ => murmur_hash_int(murmur3_seed42(key)) % num_buckets,
    })
}

/// Assigns rows of a table to buckets.
pub struct BucketAssigner {
    num_buckets: i32,
    lake: Option<DataLakeFormat>,
    row_type: Arc<RowType>,
    encoder: Option<Box<dyn KeyEncoder>>,
    next_sticky: i32,
}

impl std::fmt::Debug for BucketAssigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketAssigner")
            .field("num_buckets", &self.num_buckets)
            .field("lake", &self.lake)
            .field("has_bucket_key", &self.encoder.is_some())
            .finish()
    }
}

impl BucketAssigner {
    /// An assigner for `bucket_keys` (empty: no bucket key, batches go round-robin).
    pub fn new(
        row_type: &RowType,
        bucket_keys: &[String],
        num_buckets: i32,
        lake: Option<DataLakeFormat>,
    ) -> Result<Self> {
        let encoder = if bucket_keys.is_empty() {
            None
        } else {
            Some(KeyEncoderFactory::of_bucket_key_encoder(
                row_type,
                bucket_keys,
                &lake,
            )?)
        };
        Ok(Self {
            num_buckets,
            lake,
            row_type: Arc::new(row_type.clone()),
            encoder,
            next_sticky: 0,
        })
    }

    /// The bucket of every row of `batch` (a batch of the full row type).
    pub fn assign(&mut self, batch: &RecordBatch) -> Result<Vec<i32>> {
        let Some(encoder) = self.encoder.as_mut() else {
            // Sticky assignment, as the Fluss client does for tables without a bucket key.
            let bucket = self.next_sticky;
            self.next_sticky = (self.next_sticky + 1) % self.num_buckets.max(1);
            return Ok(vec![bucket; batch.num_rows()]);
        };
        let mut row = ColumnarRow::new(Arc::new(batch.clone()), self.row_type.clone(), 0, None)?;
        let mut buckets = Vec::with_capacity(batch.num_rows());
        for i in 0..batch.num_rows() {
            row.set_row_id(i);
            let key = encoder.encode_key(&row)?;
            buckets.push(bucket_of_key(&key, self.num_buckets, self.lake.as_ref())?);
        }
        Ok(buckets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur_matches_the_reference_vectors() {
        // fluss-rs util/murmur_hash.rs `test_flink_murmur` vectors (Flink MurmurHashUtils).
        assert_eq!(murmur3_seed42(&[]), 0x087F_CD5C);
        assert_eq!(
            murmur3_seed42(b"The quick brown fox jumps over the lazy dog"),
            0x1BC6_F880
        );
        assert_eq!(murmur_hash_int(0), 0x2362_F9DE);
        assert_eq!(murmur_hash_int(42), 0x43A4_6E1D);
        assert_eq!(murmur_hash_int(-77), 0x2EEB_27DE);
        assert!(murmur_hash_int(12345) >= 0);
    }

    #[test]
    fn iceberg_buckets_match_the_reference_vectors() {
        // fluss-rs bucketing/mod.rs `test_iceberg_bucketing` (Java IcebergBucketingFunction)
        let iceberg = Some(&DataLakeFormat::Iceberg);
        assert_eq!(bucket_of_key(&[0, 10], 7, iceberg).unwrap(), 3);
        assert_eq!(bucket_of_key(&[0, 10, 10, 10], 12, iceberg).unwrap(), 4);
        let uuid = "2bb87d68-baf9-4e64-90f9-f80910419fa6".as_bytes();
        assert_eq!(bucket_of_key(uuid, 16, iceberg).unwrap(), 12);
        let fox = "The quick brown fox jumps over the lazy dog".as_bytes();
        assert_eq!(bucket_of_key(fox, 8, iceberg).unwrap(), 3);
        // Guava's murmur3_32 of "hello"
        assert_eq!(murmur3_32(b"hello"), 0x248B_FA47);
    }

    #[test]
    fn paimon_buckets_are_in_range() {
        for key in [&b"abcdefgh"[..], b"12345678abcdefgh"] {
            let b = bucket_of_key(key, 7, Some(&DataLakeFormat::Paimon)).unwrap();
            assert!((0..7).contains(&b));
        }
        assert!(bucket_of_key(b"x", 0, None).is_err());
    }
}
