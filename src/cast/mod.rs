//! Casting a batch's columns to a table's column types: the one rule the layers
//! share, whether a source answers in its client's Arrow types (fluss-rs's lookup
//! rows), a scan exposes strings as views, a lake file is read in the table's types
//! or a write is conformed to the table.

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{Field, SchemaRef};

use crate::error::{Error, ErrorKind, Result};

mod exact;
mod fixed;
mod temporal;

pub(crate) use exact::{exactly_as, written_as};
use exact::{shown, sql_type};

/// The SQL name of an Arrow type, as users write it (`BIGINT`, `DECIMAL(10, 2)`).
pub(crate) fn sql_type_name(data_type: &datafusion::arrow::datatypes::DataType) -> String {
    sql_type(data_type)
}

/// `column` as `field`'s type: itself when it has it already, else cast. A cast that
/// fails is an error of `kind` naming the column and both types, in the words of the
/// caller's `verb` ("column 'c' of type Utf8 cannot be {verb} as Int32").
pub(crate) fn column_as(
    column: &ArrayRef,
    field: &Field,
    kind: ErrorKind,
    verb: &str,
) -> Result<ArrayRef> {
    if column.data_type() == field.data_type() {
        return Ok(column.clone());
    }
    cast(column, field.data_type()).map_err(|e| {
        Error::new(
            kind,
            format!(
                "column '{}' of type {} cannot be {verb} as {}",
                field.name(),
                column.data_type(),
                field.data_type()
            ),
        )
        .with_source(e)
    })
}

/// `columns` as a batch of `schema` with `rows` rows (kept when there are no
/// columns, as for `COUNT(*)`).
pub(crate) fn batch_of(
    schema: &SchemaRef,
    columns: Vec<ArrayRef>,
    rows: usize,
) -> Result<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// `batch` with its columns cast to `schema`'s types where they differ, matched by
/// position (the same columns in the same order); `batch` itself when every type is
/// already `schema`'s. A column count that differs is an internal error, a cast
/// that fails one naming the column and both types.
pub(crate) fn by_position(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if batch.num_columns() != schema.fields().len() {
        return Err(Error::internal(format!(
            "a batch of {} columns cannot be read as {} columns",
            batch.num_columns(),
            schema.fields().len()
        )));
    }
    let same = batch
        .schema_ref()
        .fields()
        .iter()
        .zip(schema.fields())
        .all(|(a, b)| a.data_type() == b.data_type());
    if same {
        return Ok(batch);
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| column_as(column, field, ErrorKind::Internal, "read"))
        .collect::<Result<Vec<_>>>()?;
    batch_of(schema, columns, batch.num_rows())
}
