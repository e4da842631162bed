//! Reading Iceberg data files with their delete files applied here, not by the
//! `iceberg` reader.
//!
//! iceberg 0.10.1's reader can wait forever while delete files load. A task whose
//! equality-delete file is still loading waits on a `tokio::sync::Notify`, created
//! after the state lock is released, for a `notify_waiters()` that may already have
//! fired (`arrow/delete_filter.rs`,
//! `get_equality_delete_predicate_for_delete_file_path`; apache/iceberg-rust #2873);
//! `try_start_eq_del_load` hands out a notifier that `insert_equality_delete` then
//! replaces (#2630); and a positional-delete file shared by two tasks has the same
//! window (`caching_delete_file_loader.rs`, #2859). A union read of a primary-key
//! table tiered by the real Fluss hung this way, with nothing left to wake it.
//!
//! So the reader gets each task without its delete files, and they are applied to
//! its rows here. Which delete files apply to which data file (sequence numbers,
//! partitions) stays iceberg's planning:
//! - **position deletes**: the `(file_path, pos)` rows naming the data file drop
//!   those row positions. The reader reads every row group in order (no predicate,
//!   and the task spans the whole file), so a row's position is its count so far.
//! - **equality deletes**: a row whose values in the delete file's equality columns
//!   equal one of its rows is dropped; nulls equal nulls (the Iceberg spec's
//!   `IS NULL` match).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::arrow::row::{RowConverter, SortField};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::scan::{FileScanTask, FileScanTaskDeleteFile};
use iceberg::spec::DataContentType;
use iceberg::table::Table;
use parquet58::arrow::PARQUET_FIELD_ID_META_KEY;
use parquet58::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::lake_error;
use crate::error::{Error, ErrorKind, Result};
use crate::lake::arrow_bridge::from_arrow58;

/// Field id of a position-delete file's `file_path` column (Iceberg spec, reserved).
const DELETE_FILE_PATH_ID: i32 = i32::MAX - 101;
/// Field id of a position-delete file's `pos` column.
const DELETE_FILE_POS_ID: i32 = i32::MAX - 102;

/// Reads `tasks` one after another, each with its delete files applied, as batches
/// of the columns each task projects (`project_field_ids`, in order).
pub(super) fn read_with_deletes(
    table: &Table,
    tasks: Vec<FileScanTask>,
) -> BoxStream<'static, Result<RecordBatch>> {
    let table = table.clone();
    let loaded = Arc::new(LoadedDeletes::default());
    futures::stream::iter(tasks)
        .then(move |task| {
            let (table, loaded) = (table.clone(), loaded.clone());
            async move { read_task(&table, &loaded, task).await }
        })
        .try_flatten()
        .boxed()
}

/// A position-delete file's deleted row positions, by data file path.
type PositionsByFile = HashMap<String, Vec<i64>>;

/// Delete files read once per read: one file applies to many data files.
#[derive(Default)]
struct LoadedDeletes {
    positions: Mutex<HashMap<String, Arc<PositionsByFile>>>,
    equalities: Mutex<HashMap<String, Arc<Vec<RecordBatch>>>>,
}

async fn read_task(
    table: &Table,
    loaded: &LoadedDeletes,
    mut task: FileScanTask,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let name = table.identifier().to_string();
    let file = task.data_file_path.clone();
    let located = |e: Error| e.with_context("table", &name).with_context("file", &file);
    let whole_file =
        task.start == 0 && (task.length == 0 || task.length >= task.file_size_in_bytes);
    if !whole_file {
        // a row's position would not be its count from the first row read
        return Err(located(Error::unsupported(
            "an Iceberg task reading part of a data file that has delete files",
        )));
    }
    let wanted = task.project_field_ids.len();
    let mut positions = Vec::new();
    let mut equalities = Vec::new();
    for delete in std::mem::take(&mut task.deletes) {
        match delete.file_type {
            DataContentType::PositionDeletes => {
                let by_file = load_positions(table, loaded, &delete).await?;
                positions.extend(by_file.get(&file).into_iter().flatten().copied());
            }
            DataContentType::EqualityDeletes => {
                let ids = delete.equality_ids.clone().unwrap_or_default();
                if ids.is_empty() {
                    return Err(located(Error::data_invalid(
                        "an Iceberg equality-delete file names no equality field ids",
                    ))
                    .with_context("delete_file", &delete.file_path));
                }
                // the equality columns are read too, after the wanted ones
                let columns = ids
                    .iter()
                    .map(|id| {
                        task.project_field_ids
                            .iter()
                            .position(|p| p == id)
                            .unwrap_or_else(|| {
                                task.project_field_ids.push(*id);
                                task.project_field_ids.len() - 1
                            })
                    })
                    .collect();
                let rows = load_equality(table, loaded, &delete, &ids).await?;
                equalities.push(EqualityDeletes {
                    file: delete.file_path.clone(),
                    columns,
                    rows,
                    keys: None,
                });
            }
            DataContentType::Data => {
                return Err(located(Error::data_invalid(
                    "an Iceberg task lists a data file among its delete files",
                ))
                .with_context("delete_file", &delete.file_path));
            }
        }
    }
    positions.sort_unstable();
    positions.dedup();
    let batches = table
        .reader_builder()
        .with_data_file_concurrency_limit(1)
        .build()
        .read(futures::stream::iter([Ok(task)]).boxed())
        .map_err(lake_error("cannot read the Iceberg table", &name))?;
    let mut filter = RowFilter {
        positions,
        equalities,
        next_row: 0,
        wanted,
    };
    let file_name = file.clone();
    Ok(batches
        .stream()
        .map(move |batch| {
            let batch = batch.map_err(|e| {
                Error::new(ErrorKind::Lake, "Iceberg read failed")
                    .with_context("table", &name)
                    .with_context("file", &file_name)
                    .with_source(e)
            })?;
            filter.apply(from_arrow58(batch)?).map_err(|e| {
                e.with_context("table", &name)
                    .with_context("file", &file_name)
            })
        })
        .boxed())
}

/// The delete rows of one equality-delete file and the columns of the read batch
/// they compare with.
struct EqualityDeletes {
    file: String,
    /// Positions in the read batch of the file's equality columns, in its id order.
    columns: Vec<usize>,
    /// The delete file's rows: its equality columns, in its id order.
    rows: Arc<Vec<RecordBatch>>,
    /// The delete rows as row-format keys of the read batch's types (made at the
    /// first batch, when those types are known).
    keys: Option<(RowConverter, HashSet<Box<[u8]>>)>,
}

impl EqualityDeletes {
    /// The converter and keys for batches whose equality columns are `columns`.
    fn keys(&mut self, columns: &[ArrayRef]) -> Result<&(RowConverter, HashSet<Box<[u8]>>)> {
        match self.keys {
            Some(ref keys) => Ok(keys),
            None => {
                let types: Vec<DataType> = columns.iter().map(|c| c.data_type().clone()).collect();
                let converter =
                    RowConverter::new(types.iter().cloned().map(SortField::new).collect())?;
                let mut keys = HashSet::new();
                for batch in self.rows.iter() {
                    let delete_columns = batch
                        .columns()
                        .iter()
                        .zip(&types)
                        .map(|(c, t)| cast(c, t))
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|e| {
                            Error::data_invalid(
                                "an Iceberg equality-delete file's column does not convert to the \
                                 data column's type",
                            )
                            .with_context("delete_file", &self.file)
                            .with_source(e)
                        })?;
                    let rows = converter.convert_columns(&delete_columns)?;
                    keys.extend(rows.iter().map(|r| Box::<[u8]>::from(r.as_ref())));
                }
                Ok(self.keys.insert((converter, keys)))
            }
        }
    }
}

/// Drops deleted rows from a data file's batches, in file order.
struct RowFilter {
    /// Deleted row positions, sorted.
    positions: Vec<i64>,
    equalities: Vec<EqualityDeletes>,
    /// Position of the next batch's first row.
    next_row: i64,
    /// Columns to return (the equality columns read only to compare follow them).
    wanted: usize,
}

impl RowFilter {
    fn apply(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let start = self.next_row;
        self.next_row += rows as i64;
        let mut keep = vec![true; rows];
        let from = self.positions.partition_point(|p| *p < start);
        let to = self.positions.partition_point(|p| *p < start + rows as i64);
        for p in &self.positions[from..to] {
            keep[(p - start) as usize] = false;
        }
        for deletes in &mut self.equalities {
            let columns: Vec<ArrayRef> = deletes
                .columns
                .iter()
                .map(|&i| batch.column(i).clone())
                .collect();
            let (converter, keys) = deletes.keys(&columns)?;
            let data = converter.convert_columns(&columns)?;
            for (i, row) in data.iter().enumerate() {
                if keep[i] && keys.contains(row.as_ref()) {
                    keep[i] = false;
                }
            }
        }
        let batch = batch.project(&(0..self.wanted).collect::<Vec<_>>())?;
        if keep.iter().all(|k| *k) {
            return Ok(batch);
        }
        Ok(filter_record_batch(&batch, &BooleanArray::from(keep))?)
    }
}

/// The whole bytes of the delete file at `path`.
pub(super) async fn read_delete_file(table: &Table, path: &str) -> Result<Bytes> {
    let name = table.identifier().to_string();
    table
        .file_io()
        .new_input(path)
        .map_err(lake_error("cannot open an Iceberg delete file", &name))?
        .read()
        .await
        .map_err(|e| {
            lake_error("cannot read an Iceberg delete file", &name)(e).with_context("file", path)
        })
}

/// The batches of the top-level columns of a delete file's parquet `bytes` that
/// `pick` chooses by (field id, name), in the order `pick` gives them.
fn read_columns(
    table: &Table,
    bytes: Bytes,
    delete: &FileScanTaskDeleteFile,
    pick: impl Fn(&[(Option<i32>, String)]) -> Result<Vec<usize>>,
) -> Result<Vec<RecordBatch>> {
    let name = table.identifier().to_string();
    let located = |e: Error| {
        e.with_context("table", &name)
            .with_context("file", &delete.file_path)
    };
    let bad = |message: &str, e: parquet58::errors::ParquetError| {
        located(Error::data_invalid(message.to_string()).with_source(e))
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| bad("an Iceberg delete file is not a readable parquet file", e))?;
    let fields: Vec<(Option<i32>, String)> = builder
        .schema()
        .fields()
        .iter()
        .map(|f| {
            let id = f
                .metadata()
                .get(PARQUET_FIELD_ID_META_KEY)
                .and_then(|id| id.parse().ok());
            (id, f.name().clone())
        })
        .collect();
    let order = pick(&fields).map_err(located)?;
    let mut sorted = order.clone();
    sorted.sort_unstable();
    sorted.dedup();
    let mask =
        parquet58::arrow::ProjectionMask::roots(builder.parquet_schema(), sorted.iter().copied());
    let reader = builder
        .with_projection(mask)
        .build()
        .map_err(|e| bad("an Iceberg delete file is not a readable parquet file", e))?;
    // the projected batch holds the picked columns in file order
    let positions: Vec<usize> = order
        .iter()
        .map(|i| sorted.iter().position(|s| s == i).unwrap_or(0))
        .collect();
    reader
        .map(|batch| {
            let batch = batch.map_err(|e| {
                located(
                    Error::data_invalid("an Iceberg delete file's rows cannot be read")
                        .with_source(e),
                )
            })?;
            let batch = from_arrow58(batch)?;
            Ok(batch.project(&positions)?)
        })
        .collect()
}

/// The deleted row positions of a position-delete file, by data file path.
async fn load_positions(
    table: &Table,
    loaded: &LoadedDeletes,
    delete: &FileScanTaskDeleteFile,
) -> Result<Arc<PositionsByFile>> {
    once_per_read(&loaded.positions, &delete.file_path, async {
        let bytes = read_delete_file(table, &delete.file_path).await?;
        let batches = read_columns(table, bytes, delete, |fields| {
            let find = |id: i32, name: &str| {
                fields
                    .iter()
                    .position(|(i, _)| *i == Some(id))
                    .or_else(|| fields.iter().position(|(_, n)| n == name))
                    .ok_or_else(|| {
                        Error::data_invalid(format!(
                            "an Iceberg position-delete file has no '{name}' column"
                        ))
                    })
            };
            Ok(vec![
                find(DELETE_FILE_PATH_ID, "file_path")?,
                find(DELETE_FILE_POS_ID, "pos")?,
            ])
        })?;
        let mut by_file = PositionsByFile::new();
        // the row's position in the delete file, for an error naming it
        let mut first_row = 0;
        for batch in &batches {
            let paths = cast(batch.column(0), &DataType::Utf8)?;
            let positions = cast(batch.column(1), &DataType::Int64)?;
            let (paths, positions) = (
                paths.as_string::<i32>(),
                positions.as_primitive::<Int64Type>(),
            );
            for i in 0..batch.num_rows() {
                if paths.is_null(i) || positions.is_null(i) {
                    return Err(Error::data_invalid(
                        "an Iceberg position-delete file has a null path or position",
                    )
                    .with_context("table", table.identifier().to_string())
                    .with_context("file", &delete.file_path)
                    .with_context("row", first_row + i));
                }
                by_file
                    .entry(paths.value(i).to_string())
                    .or_default()
                    .push(positions.value(i));
            }
            first_row += batch.num_rows();
        }
        Ok(by_file)
    })
    .await
}

/// The rows of an equality-delete file: its columns of `ids`, in that order.
async fn load_equality(
    table: &Table,
    loaded: &LoadedDeletes,
    delete: &FileScanTaskDeleteFile,
    ids: &[i32],
) -> Result<Arc<Vec<RecordBatch>>> {
    once_per_read(&loaded.equalities, &delete.file_path, async {
        let bytes = read_delete_file(table, &delete.file_path).await?;
        read_columns(table, bytes, delete, |fields| {
            ids.iter()
                .map(|id| {
                    fields
                        .iter()
                        .position(|(i, _)| *i == Some(*id))
                        .ok_or_else(|| {
                            Error::data_invalid(format!(
                                "an Iceberg equality-delete file has no column with field id {id}"
                            ))
                        })
                })
                .collect()
        })
    })
    .await
}

/// What `map` holds for `path`, else what `load` gives, kept for the rest of the read.
async fn once_per_read<T>(
    map: &Mutex<HashMap<String, Arc<T>>>,
    path: &str,
    load: impl std::future::Future<Output = Result<T>>,
) -> Result<Arc<T>> {
    if let Some(found) = map.lock().ok().and_then(|l| l.get(path).cloned()) {
        return Ok(found);
    }
    let value = Arc::new(load.await?);
    if let Ok(mut l) = map.lock() {
        l.insert(path.to_string(), value.clone());
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int32Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;

    fn batch(ids: Vec<Option<i32>>, names: Vec<Option<&str>>) -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("name", DataType::Utf8, true),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int32Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap()
    }

    fn ids(batch: &RecordBatch) -> Vec<Option<i32>> {
        batch
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int32Type>()
            .iter()
            .collect()
    }

    #[test]
    fn positions_count_across_batches_and_keys_match_nulls() {
        // delete rows: id 3, and a null id (matches null ids only); stored as Int64 to
        // check the cast to the data column's type
        let deletes = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)])),
            vec![Arc::new(datafusion::arrow::array::Int64Array::from(vec![
                Some(3),
                None,
            ]))],
        )
        .unwrap();
        let mut filter = RowFilter {
            // row 1 of the first batch, row 0 of the second (position 3)
            positions: vec![1, 3],
            equalities: vec![EqualityDeletes {
                file: "eq.parquet".into(),
                columns: vec![0],
                rows: Arc::new(vec![deletes]),
                keys: None,
            }],
            next_row: 0,
            wanted: 1,
        };
        let first = filter
            .apply(batch(
                vec![Some(0), Some(1), Some(2)],
                vec![Some("a"), Some("b"), Some("c")],
            ))
            .unwrap();
        assert_eq!(ids(&first), vec![Some(0), Some(2)]);
        assert_eq!(
            first.num_columns(),
            1,
            "the columns read only to compare are dropped"
        );
        let second = filter
            .apply(batch(
                vec![Some(9), Some(3), None, Some(4)],
                vec![Some("d"), None, Some("e"), Some("f")],
            ))
            .unwrap();
        assert_eq!(ids(&second), vec![Some(4)]);
    }
}
