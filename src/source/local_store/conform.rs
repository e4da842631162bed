//! Shaping rows to write: input batches cast to the table's Arrow schema, and delete
//! keys.

use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::SchemaRef;

use crate::cast::{batch_of, exactly_as};
use crate::error::{Error, Result};

/// Makes `batch` match the table's Arrow schema: columns by name, converted where
/// needed without changing a value (never rounded, truncated or made NULL), missing
/// nullable columns filled with nulls, NOT NULL columns checked.
pub fn conform_batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut columns = Vec::with_capacity(target.fields().len());
    for field in target.fields() {
        let column = match schema.index_of(field.name()) {
            Ok(i) => exactly_as(batch.column(i), field)?,
            Err(_) if field.is_nullable() => {
                datafusion::arrow::array::new_null_array(field.data_type(), batch.num_rows())
            }
            Err(_) => {
                return Err(Error::invalid_input(format!(
                    "missing value for NOT NULL column '{}'",
                    field.name()
                )));
            }
        };
        if !field.is_nullable() && column.null_count() > 0 {
            return Err(Error::invalid_input(format!(
                "NULL written to NOT NULL column '{}'",
                field.name()
            )));
        }
        columns.push(column);
    }
    for field in schema.fields() {
        if target.index_of(field.name()).is_err() {
            return Err(Error::invalid_input(format!(
                "unknown column '{}'",
                field.name()
            )));
        }
    }
    batch_of(target, columns, batch.num_rows())
}

/// A delete batch: key columns (converted exactly: `1.5` never deletes key `1`),
/// other columns null (only keys are used).
pub(super) fn conform_keys(
    batch: &RecordBatch,
    target: &SchemaRef,
    key_columns: &[usize],
) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut columns = Vec::with_capacity(target.fields().len());
    for (i, field) in target.fields().iter().enumerate() {
        let column = if key_columns.contains(&i) {
            let c = schema
                .index_of(field.name())
                .map(|j| batch.column(j))
                .map_err(|_| {
                    Error::invalid_input(format!(
                        "delete needs the primary key column '{}'",
                        field.name()
                    ))
                })?;
            exactly_as(c, field)?
        } else {
            match schema.index_of(field.name()) {
                Ok(j) => cast(batch.column(j), field.data_type())?,
                Err(_) => {
                    datafusion::arrow::array::new_null_array(field.data_type(), batch.num_rows())
                }
            }
        };
        columns.push(column);
    }
    // Not validated as NOT NULL: only key columns are read from a delete batch.
    let relaxed = Arc::new(datafusion::arrow::datatypes::Schema::new(
        target
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ));
    Ok(RecordBatch::try_new(relaxed, columns)?)
}
