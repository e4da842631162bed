//! `RunKeys`: the keys the newer sorted runs of a primary-key lake bucket hold, by
//! the newest run holding each, so older versions are dropped while every run
//! streams.
//!
//! A Paimon bucket tiered over several rounds holds several sorted runs, each with one
//! row per key; a key's version is the one in its newest run. Instead of merging the
//! runs row by row (the lake crate's loser tree), the keys of every run but the oldest
//! are read first (one column), then every run streams, each row kept only when no
//! newer run holds its key (and, as for every lake row, when the tail never touched
//! it). Memory follows the newer runs' keys, not their rows.

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashMap;
use datafusion::execution::memory_pool::MemoryReservation;

use super::fold::{as_i64, is_integer_key};
use crate::error::{Error, Result};

/// Key -> the newest run holding it (runs are numbered oldest first, from 1; the base
/// run, 0, is never recorded).
#[derive(Debug)]
enum Index {
    Integer(HashMap<i64, u32>),
    Encoded(RowConverter, HashMap<Box<[u8]>, u32>),
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
        let index = if is_integer_key(key_types) {
            Index::Integer(HashMap::new())
        } else {
            let fields = key_types
                .iter()
                .map(|t| SortField::new(t.clone()))
                .collect();
            Index::Encoded(RowConverter::new(fields)?, HashMap::new())
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
            Index::Integer(m) => m.capacity() * (size_of::<i64>() + size_of::<u32>() + 1),
            Index::Encoded(converter, m) => {
                converter.size()
                    + self.key_bytes
                    + m.capacity() * (size_of::<Box<[u8]>>() + size_of::<u32>() + 1)
            }
        }
    }

    /// Whether no newer run holds any key.
    pub fn is_empty(&self) -> bool {
        match &self.index {
            Index::Integer(m) => m.is_empty(),
            Index::Encoded(_, m) => m.is_empty(),
        }
    }

    /// Records that run `run` (1 for the oldest newer run) holds `keys`; runs are
    /// recorded oldest first, so a later run's number replaces an earlier one's.
    pub fn insert(&mut self, run: u32, keys: &[ArrayRef]) -> Result<()> {
        if run == 0 {
            return Err(Error::internal("the base run's keys are never recorded"));
        }
        match &mut self.index {
            Index::Integer(map) => {
                let column = as_i64(key_column(keys)?)?;
                let values = column.as_primitive::<Int64Type>();
                map.reserve(values.len());
                for key in values.values() {
                    map.insert(*key, run);
                }
            }
            Index::Encoded(converter, map) => {
                let rows = converter.convert_columns(keys)?;
                for row in rows.iter() {
                    let len = row.as_ref().len();
                    if map.insert(row.as_ref().into(), run).is_none() {
                        self.key_bytes += len;
                    }
                }
            }
        }
        self.account()
    }

    /// For each row of `keys` (a batch of run `run`'s rows, 0 for the base): whether
    /// no run newer than `run` holds its key, so the row is its key's lake version.
    pub fn newest(&self, run: u32, keys: &[ArrayRef]) -> Result<BooleanBuffer> {
        let rows = keys.first().map_or(0, |k| k.len());
        if self.is_empty() {
            return Ok(BooleanBuffer::new_set(rows));
        }
        let older = |holder: Option<&u32>| holder.is_none_or(|h| *h <= run);
        Ok(match &self.index {
            Index::Integer(map) => {
                let column = as_i64(key_column(keys)?)?;
                let values = column.as_primitive::<Int64Type>().values();
                BooleanBuffer::collect_bool(rows, |i| older(map.get(&values[i])))
            }
            Index::Encoded(converter, map) => {
                let encoded = converter.convert_columns(keys)?;
                BooleanBuffer::collect_bool(rows, |i| older(map.get(encoded.row(i).as_ref())))
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

    #[test]
    fn a_key_belongs_to_its_newest_run() {
        let mut keys = RunKeys::new(&[DataType::Int32]).unwrap();
        keys.insert(1, &ids(&[1, 2, 3])).unwrap();
        keys.insert(2, &ids(&[2])).unwrap();
        let newest = |run, values: &[i32]| -> Vec<bool> {
            keys.newest(run, &ids(values)).unwrap().iter().collect()
        };
        // the base keeps only keys no newer run has
        assert_eq!(newest(0, &[1, 2, 3, 4]), vec![false, false, false, true]);
        // run 1 loses key 2 to run 2
        assert_eq!(newest(1, &[1, 2, 3]), vec![true, false, true]);
        assert_eq!(newest(2, &[2]), vec![true]);
        assert!(keys.insert(0, &ids(&[9])).is_err());
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
        keys.insert(1, &batch(&["eu", "us"], &[1, 1])).unwrap();
        let kept: Vec<bool> = keys
            .newest(0, &batch(&["eu", "eu", "us"], &[1, 2, 2]))
            .unwrap()
            .iter()
            .collect();
        assert_eq!(kept, vec![false, true, true]);
        assert!(keys.memory_size() > 0);
    }
}
