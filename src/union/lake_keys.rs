//! `LakeKeyCache`: the primary-key columns of immutable lake files, decoded once and
//! kept between queries.
//!
//! The bucket merge keeps a lake row only when neither the tail nor a newer sorted run
//! holds its key, so it needs the key of every lake row it reads. Read beside the
//! query's columns, the key column is decompressed and decoded again by every query:
//! in a warm primary-key union read it was most of the time the read spent over a
//! lake-only read of the same table, for a column the query often never asks for. A
//! lake data file never changes once written (Paimon and Iceberg name every file
//! once), so its keys in file order are a value: the merge reads them once, keeps
//! them here, and reads only the query's columns with each row's position in the file
//! (parquet's `row_number` virtual column), which finds the row's key. Files are
//! evicted least recently used first when the cache would pass its byte capacity; a
//! capacity of 0 keeps nothing.
//!
//! One cache belongs to one source's catalog ([`crate::FlussCatalog`]), as the
//! [`super::TailCache`] does, so what one source's credentials read is never served
//! to another.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::DynComparator;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBufferBuilder, RecordBatch, make_comparator,
};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::{SortOptions, concat_batches};
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};

use crate::error::{Error, Result};

/// Bytes of lake keys a catalog keeps by default.
pub const DEFAULT_LAKE_KEY_CACHE_BYTES: usize = 256 << 20;

/// One lake file's keys as a query reads them: its path and size (a file is written
/// once under its name) and the key columns' types in the scan.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LakeFileId {
    /// The file's URL.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// The key columns' types, in key order.
    pub key_types: Vec<DataType>,
}

/// The primary-key columns of one lake file, row `i` of the batch being row `i` of
/// the file.
#[derive(Debug)]
pub(crate) struct FileKeys {
    keys: RecordBatch,
    /// Whether the rows are in ascending key order by Arrow's comparators (a sorted
    /// run's are), checked once: a lookup then finds its keys by binary search.
    ascending: bool,
}

impl FileKeys {
    /// The keys from batches of a scan of the whole file that read its key columns
    /// then its row numbers (the last column). The row numbers must run from 0 without
    /// a gap, which proves each key sits at its row's position.
    pub(crate) fn from_scan(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Self> {
        let key_count = schema.fields().len().saturating_sub(1);
        let mut expected: i64 = 0;
        for batch in batches {
            let numbers = batch
                .columns()
                .get(key_count)
                .and_then(|c| c.as_primitive_opt::<Int64Type>())
                .ok_or_else(|| Error::internal("a lake key scan has no row-number column"))?;
            if numbers.null_count() > 0 {
                return Err(Error::internal("a lake key scan read a null row number"));
            }
            for &n in numbers.values() {
                if n != expected {
                    return Err(Error::internal(format!(
                        "a lake key scan read row {n} where row {expected} was due"
                    )));
                }
                expected += 1;
            }
        }
        let key_indices: Vec<usize> = (0..key_count).collect();
        let schema = Arc::new(schema.project(&key_indices)?);
        let batches = batches
            .iter()
            .map(|b| b.project(&key_indices))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let keys = concat_batches(&schema, &batches)?;
        let ascending = KeyOrder::of(keys.columns())?.is_some_and(|order| {
            (1..keys.num_rows()).all(|row| order.compare(row - 1, row) != Ordering::Greater)
        });
        Ok(Self { keys, ascending })
    }

    /// The rows holding one of the `lookup` keys (one array per key column, one row
    /// per key, of the key columns' types), found by binary search; `None` when the
    /// rows are not known to be in key order.
    pub(crate) fn search(&self, lookup: &[ArrayRef]) -> Result<Option<BooleanBuffer>> {
        if !self.ascending {
            return Ok(None);
        }
        let Some(order) = KeyOrder::between(self.keys.columns(), lookup)? else {
            return Ok(None);
        };
        let rows = self.keys.num_rows();
        let mut holding = BooleanBufferBuilder::new(rows);
        holding.append_n(rows, false);
        let count = lookup.first().map_or(0, |k| k.len());
        for key in 0..count {
            let first = partition_point(rows, |row| order.compare(row, key) == Ordering::Less);
            for row in first..rows {
                if order.compare(row, key) != Ordering::Equal {
                    break;
                }
                holding.set_bit(row, true);
            }
        }
        Ok(Some(holding.finish()))
    }

    /// The key columns, one row per row of the file.
    pub(crate) fn batch(&self) -> &RecordBatch {
        &self.keys
    }

    /// Rows of the file.
    pub(crate) fn rows(&self) -> usize {
        self.keys.num_rows()
    }

    /// Bytes the keys hold.
    pub(crate) fn memory_size(&self) -> usize {
        self.keys.get_array_memory_size()
    }
}

/// The first index in `0..len` for which `before` is false (`before` true for a
/// prefix, then false).
fn partition_point(len: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut low, mut high) = (0, len);
    while low < high {
        let middle = low + (high - low) / 2;
        if before(middle) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// Lexicographic comparison of rows of key columns with rows of other key columns
/// (or the same), column by column with Arrow's comparators. Only for key types whose
/// comparator order agrees with equality as a key (no floating point: `-0.0` and
/// `0.0` compare unequal there).
struct KeyOrder {
    columns: Vec<DynComparator>,
}

impl KeyOrder {
    /// Rows of `keys` against rows of `keys`.
    fn of(keys: &[ArrayRef]) -> Result<Option<Self>> {
        Self::between(keys, keys)
    }

    /// Rows of `left` against rows of `right`; `None` for types not compared so.
    fn between(left: &[ArrayRef], right: &[ArrayRef]) -> Result<Option<Self>> {
        let mut columns = Vec::with_capacity(left.len());
        for (l, r) in left.iter().zip(right) {
            let comparable = l.data_type() == r.data_type()
                && !l.data_type().is_floating()
                && (l.data_type().is_primitive()
                    || matches!(
                        l.data_type(),
                        DataType::Utf8
                            | DataType::LargeUtf8
                            | DataType::Utf8View
                            | DataType::Binary
                            | DataType::LargeBinary
                            | DataType::BinaryView
                            | DataType::FixedSizeBinary(_)
                            | DataType::Boolean
                    ));
            if !comparable || l.null_count() > 0 || r.null_count() > 0 {
                return Ok(None);
            }
            columns.push(make_comparator(
                l.as_ref(),
                r.as_ref(),
                SortOptions::default(),
            )?);
        }
        Ok((!columns.is_empty()).then_some(Self { columns }))
    }

    /// Row `left` of the left columns against row `right` of the right ones.
    fn compare(&self, left: usize, right: usize) -> Ordering {
        for column in &self.columns {
            let order = column(left, right);
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }
}

#[derive(Debug)]
struct Entry {
    keys: Arc<FileKeys>,
    bytes: usize,
    last_used: u64,
}

#[derive(Debug, Default)]
struct Entries {
    by_file: HashMap<LakeFileId, Entry>,
    bytes: usize,
    clock: u64,
}

/// Lake files' keys by `LakeFileId`, at most `capacity` bytes of them.
pub struct LakeKeyCache {
    capacity: usize,
    entries: Mutex<Entries>,
}

/// Sizes only: the entries hold table keys.
impl std::fmt::Debug for LakeKeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LakeKeyCache")
            .field("capacity", &self.capacity)
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl LakeKeyCache {
    /// A cache of at most `capacity` bytes of keys (0: none are kept).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(Entries::default()),
        }
    }

    /// Bytes of keys held now.
    pub fn bytes(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.bytes)
    }

    /// The keys of `file`, if kept.
    pub(crate) fn get(&self, file: &LakeFileId) -> Option<Arc<FileKeys>> {
        let mut entries = self.entries.lock().ok()?;
        entries.clock += 1;
        let now = entries.clock;
        let entry = entries.by_file.get_mut(file)?;
        entry.last_used = now;
        Some(entry.keys.clone())
    }

    /// Keeps the keys of `file`, evicting the least recently used files to make room;
    /// returns whether they are kept (keys larger than the whole cache are not).
    pub(crate) fn insert(&self, file: LakeFileId, keys: Arc<FileKeys>) -> bool {
        let bytes = keys.memory_size();
        if bytes > self.capacity {
            return false;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return false;
        };
        if let Some(old) = entries.by_file.remove(&file) {
            entries.bytes -= old.bytes;
        }
        while entries.bytes + bytes > self.capacity && entries.evict_oldest() {}
        entries.clock += 1;
        let last_used = entries.clock;
        entries.bytes += bytes;
        entries.by_file.insert(
            file,
            Entry {
                keys,
                bytes,
                last_used,
            },
        );
        true
    }
}

impl Entries {
    /// Drops the least recently used file's keys; false when there are none.
    fn evict_oldest(&mut self) -> bool {
        let oldest = self
            .by_file
            .iter()
            .min_by_key(|(_, e)| e.last_used)
            .map(|(file, _)| file.clone());
        let Some(file) = oldest else {
            return false;
        };
        if let Some(entry) = self.by_file.remove(&file) {
            self.bytes -= entry.bytes;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array};
    use datafusion::arrow::datatypes::{Field, Schema};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, false),
            Field::new("row_number", DataType::Int64, false),
        ]))
    }

    fn scanned(keys: &[i32], numbers: &[i64]) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(keys.to_vec())),
            Arc::new(Int64Array::from(numbers.to_vec())),
        ];
        RecordBatch::try_new(schema(), columns).unwrap()
    }

    fn id(path: &str) -> LakeFileId {
        LakeFileId {
            path: path.into(),
            size: 10,
            key_types: vec![DataType::Int32],
        }
    }

    fn holding(keys: &FileKeys, lookup: &[i32]) -> Option<Vec<usize>> {
        let lookup: ArrayRef = Arc::new(Int32Array::from(lookup.to_vec()));
        let found = keys.search(&[lookup]).unwrap()?;
        Some(found.set_indices().collect())
    }

    #[test]
    fn keys_in_order_are_found_by_binary_search() {
        let numbers: Vec<i64> = (0..7).collect();
        let sorted = [scanned(&[1, 3, 3, 5, 8, 13, 21], &numbers)];
        let keys = FileKeys::from_scan(&schema(), &sorted).unwrap();
        assert_eq!(holding(&keys, &[3]), Some(vec![1, 2]));
        assert_eq!(holding(&keys, &[21, 1, 4]), Some(vec![0, 6]));
        assert_eq!(holding(&keys, &[0, 22, 6]), Some(vec![]));
        // keys out of order are not searched
        let unsorted = [scanned(&[1, 5, 3], &numbers[..3])];
        let keys = FileKeys::from_scan(&schema(), &unsorted).unwrap();
        assert_eq!(holding(&keys, &[3]), None);
    }

    #[test]
    fn keys_are_taken_only_from_a_scan_of_every_row_in_order() {
        let batches = [scanned(&[7, 3], &[0, 1]), scanned(&[9], &[2])];
        let keys = FileKeys::from_scan(&schema(), &batches).unwrap();
        assert_eq!(keys.rows(), 3);
        assert_eq!(keys.batch().num_columns(), 1);
        let column = keys
            .batch()
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int32Type>();
        assert_eq!(column.values().to_vec(), vec![7, 3, 9]);
        // a skipped row or rows out of order would put keys at the wrong rows
        let gap = [scanned(&[7, 3], &[0, 2])];
        assert!(FileKeys::from_scan(&schema(), &gap).is_err());
        let late = [scanned(&[7], &[1])];
        assert!(FileKeys::from_scan(&schema(), &late).is_err());
    }

    #[test]
    fn the_least_recently_used_files_make_room() {
        let keys = || {
            let batch = scanned(
                &(0..1000).collect::<Vec<_>>(),
                &(0..1000).collect::<Vec<_>>(),
            );
            Arc::new(FileKeys::from_scan(&schema(), &[batch]).unwrap())
        };
        let one = keys().memory_size();
        let cache = LakeKeyCache::new(one * 2 + one / 2);
        assert!(cache.insert(id("a"), keys()));
        assert!(cache.insert(id("b"), keys()));
        assert!(cache.get(&id("a")).is_some());
        assert!(cache.insert(id("c"), keys()));
        assert!(cache.get(&id("a")).is_some());
        assert!(cache.get(&id("b")).is_none());
        assert!(cache.bytes() <= one * 2 + one / 2);
        // the same path under another size or key type is another file
        let mut other = id("a");
        other.size = 11;
        assert!(cache.get(&other).is_none());
        // nothing is kept by a cache of no bytes
        let none = LakeKeyCache::new(0);
        assert!(!none.insert(id("a"), keys()));
        assert!(none.get(&id("a")).is_none());
    }
}
