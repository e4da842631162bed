//! `ChangelogFold`: the log tail of one primary-key bucket folded to its last change
//! per key, and the anti-join of lake rows against it.
//!
//! Fluss's batch reader sort-merges lake and tail by key (`SortMergeReader`); a hash
//! map gives the same answer in O(lake + tail) with memory bounded by the tail:
//! - fold: last change per key wins; `-U`/`-D` mark the key deleted, `+I`/`+U` upsert;
//! - lake rows whose key appears in the tail are dropped (the changelog always wins);
//! - the tail's surviving upserts are emitted after the lake rows.

use std::collections::HashMap;

use datafusion::arrow::array::{BooleanArray, RecordBatch};
use datafusion::arrow::compute::interleave_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::row::{RowConverter, SortField};
use fluss::record::ChangeType;

use crate::error::Result;

/// The folded changelog tail of one bucket.
#[derive(Debug)]
pub struct ChangelogFold {
    schema: SchemaRef,
    key_columns: Vec<usize>,
    converter: RowConverter,
    batches: Vec<RecordBatch>,
    /// Row-format key bytes -> last upsert (batch, row), `None` once deleted. Keys are
    /// looked up by `&[u8]`, so probing lake rows allocates nothing per row.
    latest: HashMap<Box<[u8]>, Option<(usize, usize)>>,
    records: usize,
}

impl ChangelogFold {
    /// An empty fold of rows of `schema` keyed by `key_columns` (indexes into `schema`).
    pub fn new(schema: SchemaRef, key_columns: Vec<usize>) -> Result<Self> {
        let fields = key_columns
            .iter()
            .map(|&i| SortField::new(schema.field(i).data_type().clone()))
            .collect();
        Ok(Self {
            converter: RowConverter::new(fields)?,
            schema,
            key_columns,
            batches: Vec::new(),
            latest: HashMap::new(),
            records: 0,
        })
    }

    /// Applies changelog records in offset order.
    pub fn apply(&mut self, batch: &RecordBatch, change_types: &[ChangeType]) -> Result<()> {
        let columns: Vec<_> = self
            .key_columns
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        let keys = self.converter.convert_columns(&columns)?;
        self.batches.push(batch.clone());
        let index = self.batches.len() - 1;
        for (row, change) in change_types.iter().enumerate() {
            let value = match change {
                ChangeType::UpdateBefore | ChangeType::Delete => None,
                _ => Some((index, row)),
            };
            self.latest.insert(keys.row(row).as_ref().into(), value);
        }
        self.records += change_types.len();
        Ok(())
    }

    /// Distinct keys touched by the tail.
    pub fn keys(&self) -> usize {
        self.latest.len()
    }

    /// Changelog records folded.
    pub fn records(&self) -> usize {
        self.records
    }

    /// Which rows of a lake batch survive: those whose key the tail never touched.
    /// `key_columns` index the key columns in `lake`.
    pub fn surviving(&self, lake: &RecordBatch, key_columns: &[usize]) -> Result<BooleanArray> {
        if self.latest.is_empty() {
            return Ok(BooleanArray::from(vec![true; lake.num_rows()]));
        }
        let columns: Vec<_> = key_columns
            .iter()
            .map(|&i| lake.column(i).clone())
            .collect();
        let keys = self.converter.convert_columns(&columns)?;
        Ok((0..lake.num_rows())
            .map(|i| Some(!self.latest.contains_key(keys.row(i).as_ref())))
            .collect())
    }

    /// The tail's live rows (last upsert of every key not deleted), in one batch.
    pub fn live_rows(&self) -> Result<RecordBatch> {
        let picks: Vec<(usize, usize)> = self.latest.values().flatten().copied().collect();
        if picks.is_empty() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        let sources: Vec<&RecordBatch> = self.batches.iter().collect();
        Ok(interleave_record_batch(&sources, &picks)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
    use std::sync::Arc;

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
        let live = fold.live_rows().unwrap();
        let mut ids: Vec<i64> = live.column(0).as_primitive::<Int64Type>().values().to_vec();
        ids.sort();
        assert_eq!(ids, vec![1, 2]);
        let lake = batch(&[2, 3, 5], &["old2", "old3", "e"]);
        let keep = fold.surviving(&lake, &[0]).unwrap();
        assert_eq!(keep, BooleanArray::from(vec![false, false, true]));
        assert_eq!(fold.keys(), 4);
        assert_eq!(fold.records(), 7);
    }
}
