//! Shaping rows to write, for every source's writer: input batches converted
//! exactly to the table's Arrow schema, delete keys, and the columns of a partial
//! update.

use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::compute::cast;

use crate::cast::{batch_of, written_as};
use crate::error::{Error, Result};
use crate::log::schema::SchemaVersion;
use crate::source::FlussTable;

/// Makes `batch` match the table's schema `version`: columns by name, converted
/// where needed without changing a value (never rounded, truncated, cut or made NULL;
/// the Fluss types bound what the Arrow types do not, a `CHAR`'s length, a time's
/// digits), missing nullable columns filled with nulls, NOT NULL columns checked.
pub(crate) fn conform_batch(batch: &RecordBatch, version: &SchemaVersion) -> Result<RecordBatch> {
    let target = &version.arrow;
    let schema = batch.schema();
    let mut columns = Vec::with_capacity(target.fields().len());
    for (field, declared) in target.fields().iter().zip(declared_types(version)) {
        let column = match schema.index_of(field.name()) {
            Ok(i) => written_as(batch.column(i), field, declared)?,
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
pub(crate) fn conform_keys(
    batch: &RecordBatch,
    version: &SchemaVersion,
    key_columns: &[usize],
) -> Result<RecordBatch> {
    let target = &version.arrow;
    let schema = batch.schema();
    let mut columns = Vec::with_capacity(target.fields().len());
    let declared: Vec<_> = declared_types(version).collect();
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
            written_as(c, field, declared.get(i).copied().flatten())?
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

/// Which columns of the table a partial update writes: those `batch` holds, which
/// must include the primary key; the others must be nullable.
pub(crate) fn partial_columns(table: &FlussTable, batch: &RecordBatch) -> Result<Vec<bool>> {
    let path = &table.path;
    let latest = table.schemas.latest()?;
    let names = batch.schema();
    let keys = table.info.get_schema().primary_key_indexes();
    // Fluss's own checks and words (`PartialUpdater`, `KvTablet.putAsLeader`), with
    // the table named
    let listed_names = || {
        let listed: Vec<&str> = names.fields().iter().map(|f| f.name().as_str()).collect();
        format!("[{}]", listed.join(", "))
    };
    let key_names = || {
        let keys: Vec<&str> = keys
            .iter()
            .filter_map(|&k| latest.arrow.fields().get(k).map(|f| f.name().as_str()))
            .collect();
        format!("[{}]", keys.join(", "))
    };
    let mut written = Vec::with_capacity(latest.arrow.fields().len());
    for (i, field) in latest.arrow.fields().iter().enumerate() {
        let listed = names.index_of(field.name()).is_ok();
        if keys.contains(&i) && !listed {
            return Err(Error::invalid_input(format!(
                "partial update of '{path}': the target write columns {} must contain \
                 the primary key columns {}",
                listed_names(),
                key_names()
            )));
        }
        if !listed && !field.is_nullable() {
            return Err(Error::invalid_input(format!(
                "partial update of '{path}': Partial Update requires all columns except \
                 primary key to be nullable, but column {} is NOT NULL",
                field.name()
            )));
        }
        written.push(listed);
    }
    Ok(written)
}

/// Each Arrow column's declared Fluss type, by position (`None` past the Fluss
/// columns, which a schema version never has).
fn declared_types(
    version: &SchemaVersion,
) -> impl Iterator<Item = Option<&fluss::metadata::DataType>> {
    let fields = version.schema.row_type().fields();
    (0..version.arrow.fields().len()).map(move |i| fields.get(i).map(|f| f.data_type()))
}
