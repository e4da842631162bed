//! The key-value state of one primary-key bucket, and the changelog a write produces.
//!
//! A Fluss tablet server keeps the latest row of every key in RocksDB and turns each
//! upsert/delete into changelog records (`+I` for a new key, `-U`/`+U` with the previous
//! image for an update, `-D` with the previous image for a delete; a delete of a missing
//! key emits nothing). The LocalStore rebuilds the same state by replaying the bucket's
//! changelog once, then keeps it in memory: rows are referenced by (batch, row) into
//! retained batches, never copied row by row.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, BooleanArray, RecordBatch};
use datafusion::arrow::compute::interleave_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::row::{OwnedRow, RowConverter, SortField};
use fluss::record::ChangeType;

use crate::error::{Error, Result};

/// The live rows of one bucket keyed by primary key.
#[derive(Debug)]
pub struct KeyValueState {
    schema: SchemaRef,
    key_columns: Vec<usize>,
    converter: RowConverter,
    batches: Vec<RecordBatch>,
    rows: HashMap<OwnedRow, (usize, usize)>,
    retained_rows: usize,
}

/// The changelog of one write: rows in full-schema layout and their change types.
#[derive(Debug)]
pub struct Changelog {
    /// Changelog rows (previous images for `-U`/`-D`).
    pub batch: RecordBatch,
    /// One change type per row.
    pub change_types: Vec<ChangeType>,
}

impl KeyValueState {
    /// An empty state for rows of `schema` keyed by `key_columns`.
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
            rows: HashMap::new(),
            retained_rows: 0,
        })
    }

    /// Bytes the state holds: retained batches and the key map.
    pub fn memory_size(&self) -> usize {
        let batches: usize = self
            .batches
            .iter()
            .map(RecordBatch::get_array_memory_size)
            .sum();
        let keys: usize = self.rows.keys().map(|k| k.as_ref().len()).sum();
        batches
            + keys
            + self.rows.capacity() * (size_of::<OwnedRow>() + size_of::<(usize, usize)>())
    }

    /// Number of live keys.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no key is live.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn keys_of(&self, batch: &RecordBatch, columns: &[usize]) -> Result<Vec<OwnedRow>> {
        let arrays: Vec<_> = columns.iter().map(|&i| batch.column(i).clone()).collect();
        let rows = self.converter.convert_columns(&arrays)?;
        Ok(rows.iter().map(|r| r.owned()).collect())
    }

    fn retain(&mut self, batch: &RecordBatch) -> usize {
        self.batches.push(batch.clone());
        self.retained_rows += batch.num_rows();
        self.batches.len() - 1
    }

    /// Replays changelog records read back from the log (last change wins).
    pub fn apply(&mut self, batch: &RecordBatch, change_types: &[ChangeType]) -> Result<()> {
        let keys = self.keys_of(batch, &self.key_columns.clone())?;
        let index = self.retain(batch);
        for (row, (key, change)) in keys.into_iter().zip(change_types).enumerate() {
            match change {
                ChangeType::UpdateBefore | ChangeType::Delete => {
                    self.rows.remove(&key);
                }
                _ => {
                    self.rows.insert(key, (index, row));
                }
            }
        }
        self.maybe_compact()
    }

    /// Upserts full rows, returning the changelog Fluss would write.
    pub fn upsert(&mut self, batch: &RecordBatch) -> Result<Changelog> {
        self.write(batch, None)
    }

    /// Applies one KV batch as a Fluss client sends it: full rows in order, each an
    /// upsert, or a delete by key where `deletes` is set (its other columns are
    /// ignored). Returns the one changelog the tablet writes for the batch.
    pub fn write(
        &mut self,
        batch: &RecordBatch,
        deletes: Option<&BooleanArray>,
    ) -> Result<Changelog> {
        if let Some(deletes) = deletes
            && deletes.len() != batch.num_rows()
        {
            return Err(Error::invalid_input(format!(
                "{} delete flags for {} rows",
                deletes.len(),
                batch.num_rows()
            )));
        }
        let keys = self.keys_of(batch, &self.key_columns.clone())?;
        let input = self.retain(batch);
        let is_delete = |row: usize| deletes.is_some_and(|d| d.is_valid(row) && d.value(row));
        self.record_changes(keys, |row| (!is_delete(row)).then_some((input, row)))
    }

    /// Partial update, as a Fluss tablet applies an upsert that names only some
    /// columns (`PartialUpdater`): for every row of `batch` (full-schema layout), the
    /// `written` columns take the new values and the others keep the key's current
    /// values (null for a new key). Changelog as for [`KeyValueState::upsert`]:
    /// `+I`, or `-U` with the previous image and `+U` with the merged row.
    pub fn write_partial(&mut self, batch: &RecordBatch, written: &[bool]) -> Result<Changelog> {
        if written.len() != self.schema.fields().len() {
            return Err(Error::internal(
                "partial update mask does not match the schema",
            ));
        }
        let keys = self.keys_of(batch, &self.key_columns.clone())?;
        let mut changes = Changelog {
            batch: RecordBatch::new_empty(self.schema.clone()),
            change_types: Vec::new(),
        };
        let mut parts = Vec::new();
        let mut start = 0;
        // Rows are merged in runs of distinct keys: a key written twice in one batch
        // merges its second row into the first one's result.
        while start < keys.len() {
            let mut seen = std::collections::HashSet::new();
            let end = (start..keys.len())
                .find(|&i| !seen.insert(&keys[i]))
                .unwrap_or(keys.len());
            let merged =
                self.merge_run(&batch.slice(start, end - start), &keys[start..end], written)?;
            let index = self.retain(&merged);
            let run = self.record_changes(keys[start..end].to_vec(), |i| Some((index, i)))?;
            changes.change_types.extend(run.change_types);
            parts.push(run.batch);
            start = end;
        }
        changes.batch = datafusion::arrow::compute::concat_batches(&self.schema, &parts)?;
        Ok(changes)
    }

    /// The rows of `run` (distinct keys) with their unwritten columns taken from the
    /// keys' current rows.
    fn merge_run(
        &self,
        run: &RecordBatch,
        keys: &[OwnedRow],
        written: &[bool],
    ) -> Result<RecordBatch> {
        let previous: Vec<Option<(usize, usize)>> =
            keys.iter().map(|k| self.rows.get(k).copied()).collect();
        let mut columns = Vec::with_capacity(written.len());
        for (c, field) in self.schema.fields().iter().enumerate() {
            if written[c] {
                columns.push(run.column(c).clone());
                continue;
            }
            let nulls = datafusion::arrow::array::new_null_array(field.data_type(), 1);
            let mut sources: Vec<&dyn Array> =
                self.batches.iter().map(|b| b.column(c).as_ref()).collect();
            let null_source = sources.len();
            sources.push(nulls.as_ref());
            let picks: Vec<(usize, usize)> = previous
                .iter()
                .map(|p| p.unwrap_or((null_source, 0)))
                .collect();
            columns.push(datafusion::arrow::compute::interleave(&sources, &picks)?);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }

    /// Deletes the keys found in `keys` (a batch holding at least the key columns, by
    /// name), returning `-D` records with the previous images.
    pub fn delete(&mut self, keys: &RecordBatch) -> Result<Changelog> {
        let columns = self
            .key_columns
            .iter()
            .map(|&i| {
                let name = self.schema.field(i).name();
                keys.schema().index_of(name).map_err(|_| {
                    Error::invalid_input(format!("delete needs the primary key column '{name}'"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let key_rows = self.keys_of(keys, &columns)?;
        self.record_changes(key_rows, |_| None)
    }

    /// Applies one change per key in order, `new_row(i)` being the upserted row of key
    /// `i` or `None` for a delete: `+I` for a new key, `-U`/`+U` for an update, `-D`
    /// with the previous image for a delete (nothing for a delete of a missing key).
    fn record_changes(
        &mut self,
        keys: Vec<OwnedRow>,
        new_row: impl Fn(usize) -> Option<(usize, usize)>,
    ) -> Result<Changelog> {
        let mut picks = Vec::with_capacity(keys.len() * 2);
        let mut change_types = Vec::with_capacity(keys.len() * 2);
        for (i, key) in keys.into_iter().enumerate() {
            match new_row(i) {
                Some(row) => match self.rows.insert(key, row) {
                    Some(previous) => {
                        picks.push(previous);
                        change_types.push(ChangeType::UpdateBefore);
                        picks.push(row);
                        change_types.push(ChangeType::UpdateAfter);
                    }
                    None => {
                        picks.push(row);
                        change_types.push(ChangeType::Insert);
                    }
                },
                None => {
                    if let Some(previous) = self.rows.remove(&key) {
                        picks.push(previous);
                        change_types.push(ChangeType::Delete);
                    }
                }
            }
        }
        let batch = self.gather(&picks)?;
        self.maybe_compact()?;
        Ok(Changelog {
            batch,
            change_types,
        })
    }

    fn gather(&self, picks: &[(usize, usize)]) -> Result<RecordBatch> {
        if picks.is_empty() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        let sources: Vec<&RecordBatch> = self.batches.iter().collect();
        Ok(interleave_record_batch(&sources, picks)?)
    }

    /// Drops retained batches once most of their rows are dead.
    fn maybe_compact(&mut self) -> Result<()> {
        if self.retained_rows <= 2 * self.rows.len() + 4096 {
            return Ok(());
        }
        let mut entries: Vec<(OwnedRow, (usize, usize))> = self.rows.drain().collect();
        let picks: Vec<(usize, usize)> = entries.iter().map(|(_, p)| *p).collect();
        let live = self.gather(&picks)?;
        self.batches = vec![live];
        self.retained_rows = entries.len();
        for (i, (_, pick)) in entries.iter_mut().enumerate() {
            *pick = (0, i);
        }
        self.rows = entries.into_iter().collect();
        Ok(())
    }

    /// The live rows as one batch.
    #[cfg(test)]
    pub fn snapshot(&self) -> Result<RecordBatch> {
        let picks: Vec<(usize, usize)> = self.rows.values().copied().collect();
        self.gather(&picks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
    use std::sync::Arc;

    fn batch(ids: &[i64], names: &[&str]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(StringArray::from(names.to_vec())),
            ],
        )
        .unwrap()
    }

    #[test]
    fn upsert_and_delete_produce_fluss_changelog() {
        let b = batch(&[1, 2], &["a", "b"]);
        let mut state = KeyValueState::new(b.schema(), vec![0]).unwrap();
        let log = state.upsert(&b).unwrap();
        assert_eq!(
            log.change_types,
            vec![ChangeType::Insert, ChangeType::Insert]
        );
        let log = state.upsert(&batch(&[2, 3], &["b2", "c"])).unwrap();
        assert_eq!(
            log.change_types,
            vec![
                ChangeType::UpdateBefore,
                ChangeType::UpdateAfter,
                ChangeType::Insert
            ]
        );
        let names = log.batch.column(1).as_string::<i32>();
        assert_eq!(names.value(0), "b");
        assert_eq!(names.value(1), "b2");
        let log = state.delete(&batch(&[1, 9], &["", ""])).unwrap();
        assert_eq!(log.change_types, vec![ChangeType::Delete]);
        assert_eq!(log.batch.column(0).as_primitive::<Int64Type>().value(0), 1);
        assert_eq!(state.len(), 2);
        let mut replay = KeyValueState::new(b.schema(), vec![0]).unwrap();
        replay
            .apply(
                &batch(&[5, 5], &["x", "x"]),
                &[ChangeType::Insert, ChangeType::Delete],
            )
            .unwrap();
        assert!(replay.is_empty());
    }

    #[test]
    fn a_partial_update_keeps_the_columns_it_does_not_write() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("city", DataType::Utf8, true),
        ]));
        let rows = |ids: &[i64], names: &[Option<&str>], cities: &[Option<&str>]| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(ids.to_vec())),
                    Arc::new(StringArray::from(names.to_vec())),
                    Arc::new(StringArray::from(cities.to_vec())),
                ],
            )
            .unwrap()
        };
        let mut state = KeyValueState::new(schema.clone(), vec![0]).unwrap();
        state
            .upsert(&rows(
                &[1, 2],
                &[Some("a"), Some("b")],
                &[Some("rome"), Some("oslo")],
            ))
            .unwrap();
        // write `name` only: 2 is updated twice, 3 is new
        let log = state
            .write_partial(
                &rows(
                    &[2, 3, 2],
                    &[Some("y"), Some("c"), Some("z")],
                    &[None, None, None],
                ),
                &[true, true, false],
            )
            .unwrap();
        assert_eq!(
            log.change_types,
            vec![
                ChangeType::UpdateBefore,
                ChangeType::UpdateAfter,
                ChangeType::Insert,
                ChangeType::UpdateBefore,
                ChangeType::UpdateAfter
            ]
        );
        let cities = log.batch.column(2).as_string::<i32>();
        let names = log.batch.column(1).as_string::<i32>();
        assert_eq!((names.value(1), cities.value(1)), ("y", "oslo"));
        assert!(
            cities.is_null(2),
            "a new key gets nulls in unwritten columns"
        );
        assert_eq!((names.value(3), cities.value(3)), ("y", "oslo"));
        assert_eq!((names.value(4), cities.value(4)), ("z", "oslo"));
        let live = state.snapshot().unwrap();
        assert_eq!(live.num_rows(), 3);
    }

    #[test]
    fn one_write_mixes_upserts_and_deletes_in_order() {
        let mut state = KeyValueState::new(batch(&[], &[]).schema(), vec![0]).unwrap();
        state.upsert(&batch(&[1, 2], &["a", "b"])).unwrap();
        // delete 1, update 2, insert 3, delete 3 again, delete a missing key
        let rows = batch(&[1, 2, 3, 3, 9], &["", "b2", "c", "", ""]);
        let deletes = BooleanArray::from(vec![true, false, false, true, true]);
        let log = state.write(&rows, Some(&deletes)).unwrap();
        assert_eq!(
            log.change_types,
            vec![
                ChangeType::Delete,
                ChangeType::UpdateBefore,
                ChangeType::UpdateAfter,
                ChangeType::Insert,
                ChangeType::Delete
            ]
        );
        let ids = log.batch.column(0).as_primitive::<Int64Type>();
        assert_eq!(ids.values().to_vec(), vec![1, 2, 2, 3, 3]);
        let names = log.batch.column(1).as_string::<i32>();
        // -D carries the previous image, not the delete row's values
        assert_eq!(names.value(0), "a");
        assert_eq!(names.value(4), "c");
        assert_eq!(state.len(), 1);
        let wrong = BooleanArray::from(vec![true]);
        assert!(state.write(&rows, Some(&wrong)).is_err());
    }
}
