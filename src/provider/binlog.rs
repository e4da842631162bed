//! `t$binlog`: a primary-key table's changelog in Fluss's binlog shape
//! (`BinlogFlinkTableSource`, `BinlogRowConverter`): `_change_type`, `_log_offset`,
//! `_commit_timestamp`, then the row `before` and the row `after` a change. An `-U`
//! and the `+U` after it are one `update` row, with the `-U`'s offset and timestamp;
//! an insert has no `before`, a delete no `after`.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, StructArray,
    TimestampMillisecondArray,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::{interleave, nullif};
use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use datafusion::common::DataFusionError;
use datafusion::error::Result as DfResult;
use fluss::record::ChangeType;

use crate::log::ChangelogBatch;

/// The binlog schema of a table whose rows are `data`.
pub fn binlog_schema(data: &SchemaRef) -> SchemaRef {
    // every field may be NULL: `before['id']` of an insert is NULL, as in Flink
    let nullable: Fields = data
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    let row = DataType::Struct(nullable);
    let mut fields = super::changelog::meta_fields();
    fields.push(Field::new("before", row.clone(), true));
    fields.push(Field::new("after", row, true));
    Arc::new(Schema::new(fields))
}

/// An `-U` waiting for its `+U`: the row (one-row batch), offset and timestamp.
struct PendingBefore {
    row: RecordBatch,
    offset: i64,
    timestamp: i64,
}

/// Turns one bucket's changelog batches, in offset order, into binlog rows.
pub struct BinlogFold {
    schema: SchemaRef,
    pending: Option<PendingBefore>,
}

/// One binlog row: its change, offset, timestamp, and where `before` and `after` come
/// from (`(source, row)`: source 0 is a pending `-U`, 1 the current batch).
struct Entry {
    change: &'static str,
    offset: i64,
    timestamp: i64,
    before: Option<(usize, usize)>,
    after: Option<(usize, usize)>,
}

impl BinlogFold {
    /// A fold into `schema` ([`binlog_schema`]).
    pub fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            pending: None,
        }
    }

    /// The binlog rows of `b` (an `-U` at its end waits for the next batch's `+U`).
    pub fn push(&mut self, b: &ChangelogBatch) -> DfResult<RecordBatch> {
        let carried = self.pending.take();
        let mut entries = Vec::with_capacity(b.batch.num_rows());
        let mut waiting: Option<(usize, usize, i64, i64)> =
            carried.as_ref().map(|p| (0, 0, p.offset, p.timestamp));
        for (i, change) in b.change_types.iter().enumerate() {
            let offset = b.first_offset + i as i64;
            if let Some((_, _, before_offset, _)) = waiting
                && *change != ChangeType::UpdateAfter
            {
                return Err(DataFusionError::Execution(format!(
                    "the changelog's -U at offset {before_offset} is followed by offset \
                     {offset}, not by its +U"
                )));
            }
            match change {
                ChangeType::UpdateBefore => {
                    waiting = Some((1, i, offset, b.commit_timestamp));
                }
                ChangeType::UpdateAfter => {
                    let Some((source, row, before_offset, timestamp)) = waiting.take() else {
                        return Err(DataFusionError::Execution(format!(
                            "the changelog has a +U at offset {offset} without the -U before it"
                        )));
                    };
                    entries.push(Entry {
                        change: "update",
                        offset: before_offset,
                        timestamp,
                        before: Some((source, row)),
                        after: Some((1, i)),
                    });
                }
                ChangeType::Insert | ChangeType::AppendOnly => entries.push(Entry {
                    change: "insert",
                    offset,
                    timestamp: b.commit_timestamp,
                    before: None,
                    after: Some((1, i)),
                }),
                ChangeType::Delete => entries.push(Entry {
                    change: "delete",
                    offset,
                    timestamp: b.commit_timestamp,
                    before: Some((1, i)),
                    after: None,
                }),
            }
        }
        if let Some((source, row, offset, timestamp)) = waiting {
            let row = match (source, &carried) {
                (0, Some(p)) => p.row.clone(),
                _ => b.batch.slice(row, 1),
            };
            self.pending = Some(PendingBefore {
                row,
                offset,
                timestamp,
            });
        }
        let carried_row = carried
            .map(|p| p.row)
            .unwrap_or_else(|| b.batch.slice(0, 0));
        self.rows(&entries, &[&carried_row, &b.batch])
    }

    /// Fails if an `-U` is still waiting when the range ends: the log never has one
    /// without its `+U` (Fluss writes them in one batch).
    pub fn finish(&self) -> DfResult<()> {
        match &self.pending {
            Some(p) => Err(DataFusionError::Execution(format!(
                "the changelog's -U at offset {} has no +U after it",
                p.offset
            ))),
            None => Ok(()),
        }
    }

    fn rows(&self, entries: &[Entry], sources: &[&RecordBatch]) -> DfResult<RecordBatch> {
        let row_fields = match self.schema.field(3).data_type() {
            DataType::Struct(fields) => fields.clone(),
            _ => Fields::empty(),
        };
        let side = |pick: fn(&Entry) -> Option<(usize, usize)>| -> DfResult<ArrayRef> {
            let indices: Vec<(usize, usize)> =
                entries.iter().map(|e| pick(e).unwrap_or((1, 0))).collect();
            let valid: Vec<bool> = entries.iter().map(|e| pick(e).is_some()).collect();
            let missing = BooleanArray::from_iter(valid.iter().map(|v| Some(!v)));
            let columns = (0..row_fields.len())
                .map(|c| {
                    let arrays: Vec<&dyn Array> =
                        sources.iter().map(|s| s.column(c).as_ref()).collect();
                    if entries.is_empty() || sources[1].num_rows() == 0 {
                        return Ok(datafusion::arrow::array::new_empty_array(
                            row_fields[c].data_type(),
                        ));
                    }
                    // the fields of a missing image are NULL themselves: DataFusion's
                    // get_field (`before['id']`) takes a field as it is, without the
                    // struct's own nulls
                    Ok(nullif(&interleave(&arrays, &indices)?, &missing)?)
                })
                .collect::<DfResult<Vec<_>>>()?;
            let nulls = NullBuffer::from(valid);
            Ok(Arc::new(StructArray::try_new(
                row_fields.clone(),
                columns,
                Some(nulls),
            )?))
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                entries.iter().map(|e| e.change),
            )),
            Arc::new(Int64Array::from_iter_values(
                entries.iter().map(|e| e.offset),
            )),
            Arc::new(
                TimestampMillisecondArray::from_iter_values(entries.iter().map(|e| e.timestamp))
                    .with_timezone("UTC"),
            ),
            side(|e| e.before)?,
            side(|e| e.after)?,
        ];
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int32Array;

    fn batch(first_offset: i64, ids: &[i32], changes: &[ChangeType]) -> ChangelogBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, true)]));
        ChangelogBatch {
            first_offset,
            commit_timestamp: first_offset * 1000,
            change_types: changes.to_vec(),
            batch: RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(ids.to_vec()))])
                .unwrap(),
        }
    }

    fn fold() -> BinlogFold {
        let data = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, true)]));
        BinlogFold::new(binlog_schema(&data))
    }

    #[test]
    fn an_update_split_across_batches_is_one_row_at_the_before_offset() {
        let mut fold = fold();
        let first = fold
            .push(&batch(
                0,
                &[1, 2],
                &[ChangeType::Insert, ChangeType::UpdateBefore],
            ))
            .unwrap();
        assert_eq!(first.num_rows(), 1);
        let second = fold
            .push(&batch(
                2,
                &[2, 3],
                &[ChangeType::UpdateAfter, ChangeType::Delete],
            ))
            .unwrap();
        fold.finish().unwrap();
        let changes = second
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let offsets = second
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(changes.value(0), "update");
        assert_eq!(offsets.value(0), 1);
        assert_eq!(changes.value(1), "delete");
        let after = second
            .column(4)
            .as_any()
            .downcast_ref::<StructArray>()
            .unwrap();
        assert!(after.is_valid(0) && after.is_null(1));
    }

    #[test]
    fn an_unpaired_before_image_is_an_error() {
        let mut fold = fold();
        let e = fold
            .push(&batch(
                0,
                &[1, 1],
                &[ChangeType::UpdateBefore, ChangeType::Insert],
            ))
            .unwrap_err();
        assert!(e.to_string().contains("-U at offset 0"), "{e}");
        let mut fold = self::fold();
        fold.push(&batch(0, &[1], &[ChangeType::UpdateBefore]))
            .unwrap();
        assert!(fold.finish().is_err());
        let e = self::fold()
            .push(&batch(0, &[1], &[ChangeType::UpdateAfter]))
            .unwrap_err();
        assert!(e.to_string().contains("without the -U"), "{e}");
    }
}
