//! `ChangelogFold`: the log tail of one primary-key bucket folded to its last change
//! per key, and the anti-join of lake rows against it.
//!
//! Fluss's batch reader sort-merges lake and tail by key (`SortMergeReader`); a hash
//! map gives the same answer in O(lake + tail) with memory bounded by the tail:
//! - fold: last change per key wins; `-U`/`-D` mark the key deleted, `+I`/`+U` upsert;
//! - lake rows whose key appears in the tail are dropped (the changelog always wins);
//! - the tail's surviving upserts are emitted after the lake rows.

use std::sync::Arc;

use datafusion::arrow::array::BooleanBufferBuilder;
use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::array::{AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::{BatchCoalescer, interleave, max, min};
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::arrow::row::RowConverter;
// hashbrown with foldhash: several times faster than std's SipHash for integer keys,
// and the fold probes one key per lake row.
use datafusion::common::HashMap;
use datafusion::execution::memory_pool::MemoryReservation;
use fluss::record::ChangeType;

use super::key::{KeyEncoding, as_i64, pack};
use crate::error::Result;

/// Where the fold finds a key: integer keys by value (no encoding, the common case
/// of one integer primary key), any other key by its row-format bytes.
#[derive(Debug)]
enum KeyIndex {
    Integer(HashMap<i64, Latest>),
    /// Two or more integer columns packed into one value (their bit widths).
    Packed(Vec<u32>, HashMap<u128, Latest>),
    Encoded(RowConverter, HashMap<Box<[u8]>, Latest>),
}

/// A key's last change: `(batch << 32) | row` of its last upsert, or [`DELETED`].
/// One word instead of `Option<(usize, usize)>` halves the map (it is probed once per
/// lake row, so its size shows in cache misses).
type Latest = u64;
const DELETED: Latest = u64::MAX;

/// Bits per slot of the key map a bitmap may take: 16 bytes, below the 17 a slot of
/// the map holds (key, [`Latest`], control byte), so the bitmap never outgrows the map.
const BITMAP_BITS_PER_SLOT: i128 = 128;

/// The touched keys of `map`, all within `[min, max]`, as `(min, bit per key in [min,
/// max])`, or `None` when the range is too sparse for a bitmap no larger than the map.
/// A TPC-H `orders` tail (new keys, updates and deletes spread over the whole key
/// range) is one key in ~100 of its range: a 0.8 MB bitmap instead of a 2 MB map.
fn dense_keys(map: &HashMap<i64, Latest>, (min, max): (i64, i64)) -> Option<(i64, BooleanBuffer)> {
    let range = (max as i128) - (min as i128) + 1;
    if range > BITMAP_BITS_PER_SLOT * map.capacity() as i128 {
        return None;
    }
    let mut bits = BooleanBufferBuilder::new(range as usize);
    bits.append_n(range as usize, false);
    for key in map.keys() {
        bits.set_bit((*key as i128 - min as i128) as usize, true);
    }
    Some((min, bits.finish()))
}

/// Whether record `row` is a `-U` directly followed by the `+U` of the same key, as a
/// tablet writes every update: the `+U` overwrites it in the fold, so it is skipped
/// (a third of an update-heavy tail's map writes).
fn superseded(
    change_types: &[ChangeType],
    row: usize,
    same_key: impl Fn(usize, usize) -> bool,
) -> bool {
    change_types[row] == ChangeType::UpdateBefore
        && change_types.get(row + 1) == Some(&ChangeType::UpdateAfter)
        && same_key(row, row + 1)
}

/// The folded changelog tail of one bucket.
#[derive(Debug)]
pub struct ChangelogFold {
    schema: SchemaRef,
    key_columns: Vec<usize>,
    batches: Vec<RecordBatch>,
    /// key -> last upsert (batch, row) or deleted; probing lake rows allocates nothing
    /// per row.
    latest: KeyIndex,
    records: usize,
    /// Integer keys touched, as one bit per key in `[min, max]` when that bitmap is no
    /// larger than the key map ([`dense_keys`], so memory still follows the tail):
    /// probing every lake row against a bitmap beats probing the map. Built on the
    /// first probe, and again on the first probe after more changes.
    touched: std::sync::OnceLock<Option<(i64, BooleanBuffer)>>,
    /// Which rows of each batch are live (a key's last upsert), built on the first
    /// [`Self::live_rows`] (again after more changes): a cached fold answers every
    /// later scan without walking the key map again. One bit per record, left out of
    /// the memory accounting.
    live: std::sync::OnceLock<Vec<BooleanArray>>,
    /// Smallest and largest integer key folded (from each batch's min/max kernels,
    /// cheaper than two passes over the map).
    key_range: Option<(i64, i64)>,
    /// Where the fold's memory is accounted (the query's memory pool), if anywhere.
    memory: Option<MemoryReservation>,
    /// Running totals for [`Self::memory_size`], kept per batch so accounting stays
    /// O(1) per batch instead of rescanning every batch and key.
    batch_bytes: usize,
    key_bytes: usize,
}

impl ChangelogFold {
    /// An empty fold of rows of `schema` keyed by `key_columns` (indexes into `schema`).
    pub fn new(schema: SchemaRef, key_columns: Vec<usize>) -> Result<Self> {
        let types: Vec<DataType> = key_columns
            .iter()
            .map(|&i| schema.field(i).data_type().clone())
            .collect();
        let latest = match KeyEncoding::for_types(&types)? {
            KeyEncoding::Integer => KeyIndex::Integer(HashMap::new()),
            KeyEncoding::Packed(widths) => KeyIndex::Packed(widths, HashMap::new()),
            KeyEncoding::Encoded(converter) => KeyIndex::Encoded(converter, HashMap::new()),
        };
        Ok(Self {
            schema,
            key_columns,
            batches: Vec::new(),
            latest,
            records: 0,
            touched: std::sync::OnceLock::new(),
            live: std::sync::OnceLock::new(),
            key_range: None,
            memory: None,
            batch_bytes: 0,
            key_bytes: 0,
        })
    }

    /// Accounts the fold's memory in `reservation` from now on: every batch applied
    /// grows it, and a fold that would pass the pool's limit fails with a
    /// resources-exhausted error instead of growing.
    pub fn track_memory(&mut self, reservation: MemoryReservation) -> Result<()> {
        self.memory = Some(reservation);
        self.account()
    }

    /// Stops accounting the fold's memory in the query's pool (frees its reservation):
    /// a fold kept by a [`super::TailCache`] outlives its query and is bounded by the
    /// cache instead.
    pub fn release_memory(&mut self) {
        self.memory = None;
    }

    fn account(&mut self) -> Result<()> {
        let size = self.memory_size();
        if let Some(memory) = &mut self.memory {
            memory.try_resize(size)?;
        }
        Ok(())
    }

    /// Makes room for `records` more changelog records (the tail's offset span), so
    /// the key map is not rehashed while folding.
    pub fn reserve(&mut self, records: usize) -> Result<()> {
        match &mut self.latest {
            KeyIndex::Integer(m) => m.reserve(records),
            KeyIndex::Packed(_, m) => m.reserve(records),
            KeyIndex::Encoded(_, m) => m.reserve(records),
        }
        self.account()
    }

    /// Applies changelog records in offset order.
    pub fn apply(&mut self, batch: &RecordBatch, change_types: &[ChangeType]) -> Result<()> {
        if batch.num_rows() > u32::MAX as usize || self.batches.len() >= u32::MAX as usize {
            return Err(crate::error::Error::internal(
                "changelog fold holds at most 2^32 batches of 2^32 rows",
            ));
        }
        // what the probes built from the fold so far is stale now
        self.touched = std::sync::OnceLock::new();
        self.live = std::sync::OnceLock::new();
        self.batches.push(batch.clone());
        self.batch_bytes += batch.get_array_memory_size();
        let index = ((self.batches.len() - 1) as u64) << 32;
        let value = |row: usize, change: &ChangeType| match change {
            ChangeType::UpdateBefore | ChangeType::Delete => DELETED,
            _ => index | row as u64,
        };
        match &mut self.latest {
            KeyIndex::Integer(map) => {
                let keys = as_i64(batch.column(self.key_columns[0]))?;
                let keys = keys.as_primitive::<Int64Type>();
                if let (Some(lo), Some(hi)) = (min(keys), max(keys)) {
                    self.key_range = Some(match self.key_range {
                        Some((l, h)) => (l.min(lo), h.max(hi)),
                        None => (lo, hi),
                    });
                }
                for (row, change) in change_types.iter().enumerate() {
                    if !superseded(change_types, row, |a, b| keys.value(a) == keys.value(b)) {
                        map.insert(keys.value(row), value(row, change));
                    }
                }
            }
            KeyIndex::Packed(widths, map) => {
                let columns: Vec<_> = self
                    .key_columns
                    .iter()
                    .map(|&i| batch.column(i).clone())
                    .collect();
                let keys = pack(&columns, widths)?;
                for (row, change) in change_types.iter().enumerate() {
                    if !superseded(change_types, row, |a, b| keys[a] == keys[b]) {
                        map.insert(keys[row], value(row, change));
                    }
                }
            }
            KeyIndex::Encoded(converter, map) => {
                let columns: Vec<_> = self
                    .key_columns
                    .iter()
                    .map(|&i| batch.column(i).clone())
                    .collect();
                let keys = converter.convert_columns(&columns)?;
                for (row, change) in change_types.iter().enumerate() {
                    if !superseded(change_types, row, |a, b| keys.row(a) == keys.row(b)) {
                        let key = keys.row(row);
                        let len = key.as_ref().len();
                        if map
                            .insert(key.as_ref().into(), value(row, change))
                            .is_none()
                        {
                            self.key_bytes += len;
                        }
                    }
                }
            }
        }
        self.records += change_types.len();
        self.account()
    }

    /// Bytes the fold holds: the tail's batches and the key map.
    pub fn memory_size(&self) -> usize {
        let map = match &self.latest {
            KeyIndex::Integer(m) => m.capacity() * (size_of::<i64>() + size_of::<Latest>() + 1),
            KeyIndex::Packed(_, m) => m.capacity() * (size_of::<u128>() + size_of::<Latest>() + 1),
            KeyIndex::Encoded(converter, m) => {
                converter.size()
                    + self.key_bytes
                    + m.capacity() * (size_of::<Box<[u8]>>() + size_of::<Latest>() + 1)
            }
        };
        self.batch_bytes + map
    }

    /// Distinct keys touched by the tail.
    pub fn keys(&self) -> usize {
        match &self.latest {
            KeyIndex::Integer(m) => m.len(),
            KeyIndex::Packed(_, m) => m.len(),
            KeyIndex::Encoded(_, m) => m.len(),
        }
    }

    /// Changelog records folded.
    #[cfg(test)]
    pub fn records(&self) -> usize {
        self.records
    }

    /// Which rows of a lake batch survive: those whose key the tail never touched.
    /// `key_columns` index the key columns in `lake`.
    pub fn surviving(&self, lake: &RecordBatch, key_columns: &[usize]) -> Result<BooleanArray> {
        let rows = lake.num_rows();
        if self.keys() == 0 {
            return Ok(BooleanArray::new(BooleanBuffer::new_set(rows), None));
        }
        let keep = match &self.latest {
            KeyIndex::Integer(map) => {
                let keys = as_i64(lake.column(key_columns[0]))?;
                let keys = keys.as_primitive::<Int64Type>().values();
                let dense = || self.key_range.and_then(|range| dense_keys(map, range));
                match self.touched.get_or_init(dense) {
                    Some((min, bits)) => BooleanBuffer::collect_bool(rows, |i| {
                        let at = (keys[i] as i128) - (*min as i128);
                        !(at >= 0 && (at as usize) < bits.len() && bits.value(at as usize))
                    }),
                    None => BooleanBuffer::collect_bool(rows, |i| !map.contains_key(&keys[i])),
                }
            }
            KeyIndex::Packed(widths, map) => {
                let columns: Vec<_> = key_columns
                    .iter()
                    .map(|&i| lake.column(i).clone())
                    .collect();
                let keys = pack(&columns, widths)?;
                BooleanBuffer::collect_bool(rows, |i| !map.contains_key(&keys[i]))
            }
            KeyIndex::Encoded(converter, map) => {
                let columns: Vec<_> = key_columns
                    .iter()
                    .map(|&i| lake.column(i).clone())
                    .collect();
                let keys = converter.convert_columns(&columns)?;
                BooleanBuffer::collect_bool(rows, |i| !map.contains_key(keys.row(i).as_ref()))
            }
        };
        Ok(BooleanArray::new(keep, None))
    }

    /// The tail's live rows whose key is one of `keys` (the key columns' values, one
    /// row per key, of the fold's key types), with only the `projection` columns: a
    /// point lookup or a short `IN` list answered from the key index, not by
    /// projecting every live row. Rows come in `keys` order, each key once.
    pub fn live_rows_of(
        &self,
        keys: &[ArrayRef],
        projection: &[usize],
        batch_size: usize,
    ) -> Result<Vec<RecordBatch>> {
        let wanted = keys.first().map_or(0, |k| k.len());
        let mut found: Vec<(usize, usize)> = Vec::new();
        let mut seen: datafusion::common::HashSet<Latest> = Default::default();
        let mut hit = |latest: Option<&Latest>| {
            if let Some(&latest) = latest
                && latest != DELETED
                && seen.insert(latest)
            {
                found.push(((latest >> 32) as usize, (latest as u32) as usize));
            }
        };
        match &self.latest {
            KeyIndex::Integer(map) => {
                let column = keys.first().ok_or_else(|| {
                    crate::error::Error::internal("a key lookup names no key column")
                })?;
                let values = as_i64(column)?;
                let values = values.as_primitive::<Int64Type>();
                for i in 0..wanted {
                    if values.is_valid(i) {
                        hit(map.get(&values.value(i)));
                    }
                }
            }
            KeyIndex::Packed(widths, map) => {
                for key in pack(keys, widths)? {
                    hit(map.get(&key));
                }
            }
            KeyIndex::Encoded(converter, map) => {
                let encoded = converter.convert_columns(keys)?;
                for i in 0..wanted {
                    hit(map.get(encoded.row(i).as_ref()));
                }
            }
        }
        let schema = Arc::new(self.schema.project(projection)?);
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let sources: Vec<RecordBatch> = self
            .batches
            .iter()
            .map(|b| b.project(projection))
            .collect::<std::result::Result<_, _>>()?;
        let columns = (0..projection.len())
            .map(|c| {
                let arrays: Vec<&dyn datafusion::arrow::array::Array> =
                    sources.iter().map(|b| b.column(c).as_ref()).collect();
                interleave(&arrays, &found)
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let options =
            datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(found.len()));
        let rows = RecordBatch::try_new_with_options(schema, columns, &options)?;
        let size = batch_size.max(1);
        Ok((0..rows.num_rows())
            .step_by(size)
            .map(|at| rows.slice(at, size.min(rows.num_rows() - at)))
            .collect())
    }

    /// The tail's live rows (last upsert of every key not deleted) with only the
    /// `projection` columns, in changelog order, in batches of at most `batch_size`.
    ///
    /// Each changelog batch is filtered by a mask of its live rows straight into the
    /// output (no gather in hash order, which reads rows at random).
    pub fn live_rows(&self, projection: &[usize], batch_size: usize) -> Result<Vec<RecordBatch>> {
        let live = self.live.get_or_init(|| self.live_masks());
        let schema = Arc::new(self.schema.project(projection)?);
        let mut coalescer = BatchCoalescer::new(schema, batch_size.max(1));
        for (batch, mask) in self.batches.iter().zip(live) {
            if mask.true_count() > 0 {
                coalescer.push_batch_with_filter(batch.project(projection)?, mask)?;
            }
        }
        coalescer.finish_buffered_batch()?;
        Ok(std::iter::from_fn(|| coalescer.next_completed_batch()).collect())
    }

    /// A mask of the live rows of each batch.
    fn live_masks(&self) -> Vec<BooleanArray> {
        let mut live: Vec<BooleanBufferBuilder> = self
            .batches
            .iter()
            .map(|batch| {
                let mut mask = BooleanBufferBuilder::new(batch.num_rows());
                mask.append_n(batch.num_rows(), false);
                mask
            })
            .collect();
        let mut mark = |latest: &Latest| {
            if *latest != DELETED {
                live[(*latest >> 32) as usize].set_bit((*latest as u32) as usize, true);
            }
        };
        match &self.latest {
            KeyIndex::Integer(m) => m.values().for_each(&mut mark),
            KeyIndex::Packed(_, m) => m.values().for_each(&mut mark),
            KeyIndex::Encoded(_, m) => m.values().for_each(&mut mark),
        }
        live.into_iter()
            .map(|mut mask| BooleanArray::new(mask.finish(), None))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};

    fn batch(ids: &[i64], names: &[&str]) -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, false),
                Field::new("name", DataType::Utf8, true),
            ])),
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(StringArray::from(names.to_vec())),
            ],
        )
        .unwrap()
    }

    #[test]
    fn last_change_wins_and_lake_rows_are_anti_joined() {
        let b = batch(&[1, 2, 2, 3, 4], &["a", "b", "b2", "c", "d"]);
        let mut fold = ChangelogFold::new(b.schema(), vec![0]).unwrap();
        use ChangeType::*;
        fold.apply(&b, &[Insert, UpdateBefore, UpdateAfter, Insert, Insert])
            .unwrap();
        fold.apply(&batch(&[3, 4], &["c", "d"]), &[Delete, UpdateBefore])
            .unwrap();
        let live = fold.live_rows(&[0, 1], 8192).unwrap();
        assert_eq!(live.len(), 1);
        // changelog order: key 1's insert, then key 2's update
        let ids = live[0]
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec();
        assert_eq!(ids, vec![1, 2]);
        assert_eq!(live[0].column(1).as_string::<i32>().value(1), "b2");
        // projected and split into batches of at most `batch_size` rows
        let live = fold.live_rows(&[1], 1).unwrap();
        assert_eq!(live.len(), 2);
        assert_eq!(live[0].num_columns(), 1);
        let lake = batch(&[2, 3, 5], &["old2", "old3", "e"]);
        let keep = fold.surviving(&lake, &[0]).unwrap();
        assert_eq!(keep, BooleanArray::from(vec![false, false, true]));
        assert_eq!(fold.keys(), 4);
        assert_eq!(fold.records(), 7);
    }

    #[test]
    fn probes_after_more_changes_see_them() {
        use ChangeType::*;
        let first = batch(&[1, 2], &["a", "b"]);
        let mut fold = ChangelogFold::new(first.schema(), vec![0]).unwrap();
        fold.apply(&first, &[Insert, Insert]).unwrap();
        let lake = batch(&[1, 3, 5], &["x", "y", "z"]);
        assert_eq!(fold.live_rows(&[0], 8192).unwrap()[0].num_rows(), 2);
        assert_eq!(
            fold.surviving(&lake, &[0]).unwrap(),
            BooleanArray::from(vec![false, true, true])
        );
        // the masks and the key bitmap built by those probes are rebuilt
        fold.apply(&batch(&[2, 3], &["b", "c"]), &[Delete, Insert])
            .unwrap();
        let ids: Vec<i64> = fold.live_rows(&[0], 8192).unwrap()[0]
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec();
        assert_eq!(ids, vec![1, 3]);
        assert_eq!(
            fold.surviving(&lake, &[0]).unwrap(),
            BooleanArray::from(vec![false, false, true])
        );
    }

    #[test]
    fn an_update_before_is_skipped_only_when_its_update_after_follows() {
        use ChangeType::*;
        for key_columns in [vec![0], vec![0, 1]] {
            // key 1: -U/+U pair (skipped -U); key 2: -U then +U of another key (kept:
            // key 2 ends deleted); key 3: -U last in the batch (kept, deleted)
            let b = batch(&[1, 1, 2, 4, 3], &["a", "a", "b", "d", "c"]);
            let mut fold = ChangelogFold::new(b.schema(), key_columns.clone()).unwrap();
            fold.apply(
                &batch(&[1, 2, 3], &["a", "b", "c"]),
                &[Insert, Insert, Insert],
            )
            .unwrap();
            fold.apply(
                &b,
                &[
                    UpdateBefore,
                    UpdateAfter,
                    UpdateBefore,
                    UpdateAfter,
                    UpdateBefore,
                ],
            )
            .unwrap();
            let live = fold.live_rows(&[0], 8192).unwrap();
            let ids = live[0]
                .column(0)
                .as_primitive::<Int64Type>()
                .values()
                .to_vec();
            assert_eq!(ids, vec![1, 4], "key columns {key_columns:?}");
        }
    }

    #[test]
    fn dense_and_sparse_integer_keys_probe_alike() {
        use ChangeType::*;
        // dense: keys 10..20 (bitmap); sparse: 10 keys spread over 10^12 (map)
        for step in [1i64, 100_000_000_000] {
            let ids: Vec<i64> = (0..10).map(|k| 10 + k * step).collect();
            let names = vec!["x"; 10];
            let mut fold = ChangelogFold::new(batch(&ids, &names).schema(), vec![0]).unwrap();
            fold.apply(&batch(&ids, &names), &[Insert; 10]).unwrap();
            let lake_ids = vec![i64::MIN, 9, 10, 10 + 5 * step, 11 + 9 * step, i64::MAX];
            let keep = fold.surviving(&batch(&lake_ids, &["y"; 6]), &[0]).unwrap();
            let dense = fold.touched.get().unwrap().is_some();
            assert_eq!(dense, step == 1);
            assert_eq!(
                keep,
                BooleanArray::from(vec![true, true, false, false, true, true]),
                "step {step}"
            );
        }
    }

    #[test]
    fn composite_and_string_keys_use_the_encoded_index() {
        let b = batch(&[1, 2], &["x", "y"]);
        // key = (name): a string key
        let mut fold = ChangelogFold::new(b.schema(), vec![1]).unwrap();
        fold.apply(&b, &[ChangeType::Insert, ChangeType::Delete])
            .unwrap();
        let lake = batch(&[7, 8, 9], &["x", "y", "z"]);
        assert_eq!(
            fold.surviving(&lake, &[1]).unwrap(),
            BooleanArray::from(vec![false, false, true])
        );
        assert_eq!(fold.live_rows(&[0, 1], 8192).unwrap()[0].num_rows(), 1);
        // key = (id, name)
        let mut fold = ChangelogFold::new(b.schema(), vec![0, 1]).unwrap();
        fold.apply(&b, &[ChangeType::Insert, ChangeType::Insert])
            .unwrap();
        let lake = batch(&[1, 2], &["x", "other"]);
        assert_eq!(
            fold.surviving(&lake, &[0, 1]).unwrap(),
            BooleanArray::from(vec![false, true])
        );
    }

    #[test]
    fn composite_integer_keys_use_the_packed_index() {
        use ChangeType::*;
        let schema = Arc::new(Schema::new(vec![
            Field::new("part", DataType::Int64, false),
            Field::new("supp", DataType::Int32, false),
        ]));
        let rows = |p: &[i64], s: &[i32]| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(p.to_vec())),
                    Arc::new(datafusion::arrow::array::Int32Array::from(s.to_vec())),
                ],
            )
            .unwrap()
        };
        let mut fold = ChangelogFold::new(schema.clone(), vec![0, 1]).unwrap();
        assert!(matches!(fold.latest, KeyIndex::Packed(..)));
        // (1, 2) updated (-U directly followed by +U), (2, 1) deleted, (1, 1) inserted
        fold.apply(
            &rows(&[1, 1, 2, 1], &[2, 2, 1, 1]),
            &[UpdateBefore, UpdateAfter, Delete, Insert],
        )
        .unwrap();
        assert_eq!(fold.keys(), 3);
        assert_eq!(
            fold.surviving(&rows(&[1, 2, 2, 1], &[2, 1, 2, 1]), &[0, 1])
                .unwrap(),
            BooleanArray::from(vec![false, false, true, false])
        );
        let live = fold.live_rows(&[0, 1], 8192).unwrap();
        assert_eq!(live.iter().map(RecordBatch::num_rows).sum::<usize>(), 2);
    }

    #[test]
    fn memory_size_counts_each_distinct_key_once() {
        use ChangeType::*;
        let b = batch(&[1, 2], &["xx", "yyy"]);
        let mut fold = ChangelogFold::new(b.schema(), vec![1]).unwrap();
        fold.apply(&b, &[Insert, Insert]).unwrap();
        let once = fold.memory_size();
        // the same keys again: one more batch held, no new key bytes
        fold.apply(&b, &[Delete, Insert]).unwrap();
        let twice = fold.memory_size();
        assert_eq!(fold.key_bytes, fold_key_bytes(&fold));
        assert_eq!(twice - once, b.get_array_memory_size());
    }

    fn fold_key_bytes(fold: &ChangelogFold) -> usize {
        match &fold.latest {
            KeyIndex::Encoded(_, m) => m.keys().map(|k| k.len()).sum(),
            KeyIndex::Integer(_) | KeyIndex::Packed(..) => 0,
        }
    }
}
