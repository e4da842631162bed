//! `RunKeys`: the keys of the newer sorted runs of a primary-key lake bucket, so
//! older versions are dropped while every run streams once.
//!
//! A Paimon bucket tiered over several rounds holds several sorted runs, each with one
//! row per key; a key's version is the one in its newest run. Instead of merging the
//! runs row by row (the lake crate's loser tree), the runs stream newest first: a row
//! is kept when no run streamed before it holds its key (and, as for every lake row,
//! when the tail never touched it), and its key is then recorded for the older runs.
//! Memory follows the newer runs' keys, not their rows.

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::arrow::row::RowConverter;
use datafusion::common::HashSet;
use datafusion::execution::memory_pool::MemoryReservation;

use super::key::{KeyEncoding, as_i64, pack};
use crate::error::{Error, Result};

/// The keys recorded.
#[derive(Debug)]
enum Index {
    Integer(HashSet<i64>),
    Packed(Vec<u32>, HashSet<u128>),
    Encoded(RowConverter, HashSet<Box<[u8]>>),
}

/// The keys of a bucket's newer lake runs.
#[derive(Debug)]
pub struct RunKeys {
    index: Index,
    key_bytes: usize,
    memory: Option<MemoryReservation>,
}

impl RunKeys {
    /// Keys of `key_types` (the primary key's columns, in order).
    pub fn new(key_types: &[DataType]) -> Result<Self> {
        let index = match KeyEncoding::for_types(key_types)? {
            KeyEncoding::Integer => Index::Integer(HashSet::new()),
            KeyEncoding::Packed(widths) => Index::Packed(widths, HashSet::new()),
            KeyEncoding::Encoded(converter) => Index::Encoded(converter, HashSet::new()),
        };
        Ok(Self {
            index,
            key_bytes: 0,
            memory: None,
        })
    }

    /// Accounts the keys' memory in `reservation`: a run too large for the pool fails
    /// with a resources-exhausted error instead of growing.
    pub fn track_memory(&mut self, reservation: MemoryReservation) -> Result<()> {
        self.memory = Some(reservation);
        self.account()
    }

    fn account(&mut self) -> Result<()> {
        let size = self.memory_size();
        if let Some(memory) = &mut self.memory {
            memory.try_resize(size)?;
        }
        Ok(())
    }

    /// Bytes the key index holds.
    pub fn memory_size(&self) -> usize {
        match &self.index {
            Index::Integer(m) => m.capacity() * (size_of::<i64>() + 1),
            Index::Packed(_, m) => m.capacity() * (size_of::<u128>() + 1),
            Index::Encoded(converter, m) => {
                converter.size() + self.key_bytes + m.capacity() * (size_of::<Box<[u8]>>() + 1)
            }
        }
    }

    /// Whether no newer run holds any key.
    pub fn is_empty(&self) -> bool {
        match &self.index {
            Index::Integer(m) => m.is_empty(),
            Index::Packed(_, m) => m.is_empty(),
            Index::Encoded(_, m) => m.is_empty(),
        }
    }

    /// Which rows of `keys` no run recorded so far holds (the rows that are their
    /// key's newest version, as runs are visited newest first), then records them:
    /// one lookup per row, as the keys of one run are unique.
    pub fn first_seen(&mut self, keys: &[ArrayRef]) -> Result<BooleanBuffer> {
        let rows = keys.first().map_or(0, |k| k.len());
        let seen = match &mut self.index {
            Index::Integer(set) => {
                let column = as_i64(key_column(keys)?)?;
                let values = column.as_primitive::<Int64Type>().values();
                set.reserve(rows);
                BooleanBuffer::collect_bool(rows, |i| set.insert(values[i]))
            }
            Index::Packed(widths, set) => {
                let packed = pack(keys, widths)?;
                set.reserve(rows);
                BooleanBuffer::collect_bool(rows, |i| set.insert(packed[i]))
            }
            Index::Encoded(converter, set) => {
                let encoded = converter.convert_columns(keys)?;
                let mut added = 0;
                let seen = BooleanBuffer::collect_bool(rows, |i| {
                    let key = encoded.row(i);
                    let new = set.insert(key.as_ref().into());
                    if new {
                        added += key.as_ref().len();
                    }
                    new
                });
                self.key_bytes += added;
                seen
            }
        };
        self.account()?;
        Ok(seen)
    }

    /// Which rows of `keys` no recorded run holds (for the oldest run, whose keys need
    /// not be recorded).
    pub fn unseen(&self, keys: &[ArrayRef]) -> Result<BooleanBuffer> {
        let rows = keys.first().map_or(0, |k| k.len());
        if self.is_empty() {
            return Ok(BooleanBuffer::new_set(rows));
        }
        Ok(match &self.index {
            Index::Integer(set) => {
                let column = as_i64(key_column(keys)?)?;
                let values = column.as_primitive::<Int64Type>().values();
                BooleanBuffer::collect_bool(rows, |i| !set.contains(&values[i]))
            }
            Index::Packed(widths, set) => {
                let packed = pack(keys, widths)?;
                BooleanBuffer::collect_bool(rows, |i| !set.contains(&packed[i]))
            }
            Index::Encoded(converter, set) => {
                let encoded = converter.convert_columns(keys)?;
                BooleanBuffer::collect_bool(rows, |i| !set.contains(encoded.row(i).as_ref()))
            }
        })
    }
}

fn key_column(keys: &[ArrayRef]) -> Result<&ArrayRef> {
    keys.first()
        .ok_or_else(|| Error::internal("a primary key has at least one column"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, StringArray};
    use std::sync::Arc;

    fn ids(values: &[i32]) -> Vec<ArrayRef> {
        vec![Arc::new(Int32Array::from(values.to_vec())) as ArrayRef]
    }

    fn bits(buffer: BooleanBuffer) -> Vec<bool> {
        buffer.iter().collect()
    }

    #[test]
    fn a_key_belongs_to_its_newest_run() {
        let mut keys = RunKeys::new(&[DataType::Int32]).unwrap();
        assert_eq!(bits(keys.unseen(&ids(&[1])).unwrap()), vec![true]);
        // the newest run first: all its rows are versions
        assert_eq!(bits(keys.first_seen(&ids(&[2])).unwrap()), vec![true]);
        // an older run loses key 2
        assert_eq!(
            bits(keys.first_seen(&ids(&[1, 2, 3])).unwrap()),
            vec![true, false, true]
        );
        // the base keeps only keys no newer run has
        assert_eq!(
            bits(keys.unseen(&ids(&[1, 2, 3, 4])).unwrap()),
            vec![false, false, false, true]
        );
    }

    #[test]
    fn composite_integer_keys_are_packed() {
        let types = [DataType::Int32, DataType::Int32];
        let mut keys = RunKeys::new(&types).unwrap();
        assert!(matches!(keys.index, Index::Packed(..)));
        let batch = |a: &[i32], b: &[i32]| -> Vec<ArrayRef> {
            vec![
                Arc::new(Int32Array::from(a.to_vec())) as ArrayRef,
                Arc::new(Int32Array::from(b.to_vec())) as ArrayRef,
            ]
        };
        keys.first_seen(&batch(&[1, 2], &[2, 1])).unwrap();
        assert_eq!(
            bits(keys.unseen(&batch(&[1, 2, 1], &[2, 2, 1])).unwrap()),
            vec![false, true, true]
        );
    }

    #[test]
    fn composite_keys_are_encoded() {
        let types = [DataType::Utf8, DataType::Int32];
        let mut keys = RunKeys::new(&types).unwrap();
        let batch = |r: &[&str], i: &[i32]| -> Vec<ArrayRef> {
            vec![
                Arc::new(StringArray::from(r.to_vec())) as ArrayRef,
                Arc::new(Int32Array::from(i.to_vec())) as ArrayRef,
            ]
        };
        keys.first_seen(&batch(&["eu", "us"], &[1, 1])).unwrap();
        assert_eq!(
            bits(
                keys.unseen(&batch(&["eu", "eu", "us"], &[1, 2, 2]))
                    .unwrap()
            ),
            vec![false, true, true]
        );
        assert!(keys.memory_size() > 0);
    }
}
