//! Table schemas by id, and aligning batches written under an older schema id to the
//! schema a reader asks for.
//!
//! Log batches carry no Arrow schema, only a `SchemaId`; the reader rebuilds the Arrow
//! schema from that id's Fluss schema (`fluss::record::to_arrow_schema`). Columns are
//! matched across schema versions by column id, as Fluss does (`schema_alignment` in
//! fluss-rs): columns added later read as nulls, dropped columns disappear.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions, new_null_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{Field, Schema as ArrowSchema, SchemaRef};
use fluss::metadata::{RowType, Schema};

use crate::error::{Error, Result};

/// One version of a table schema.
#[derive(Debug, Clone)]
pub struct SchemaVersion {
    /// The schema id (`schemas/<id>`; the first is 1).
    pub id: i32,
    /// The Fluss schema.
    pub schema: Schema,
    /// The Arrow schema log batches of this id decode with.
    pub arrow: SchemaRef,
}

impl SchemaVersion {
    /// Builds the Arrow view of a Fluss schema.
    pub fn new(id: i32, schema: Schema) -> Result<Self> {
        let arrow = arrow_schema_of(schema.row_type())?;
        Ok(Self { id, schema, arrow })
    }

    /// The row type.
    pub fn row_type(&self) -> &RowType {
        self.schema.row_type()
    }

    /// Column ids in column order.
    pub fn column_ids(&self) -> Vec<i32> {
        self.schema.columns().iter().map(|c| c.id()).collect()
    }
}

/// The Arrow schema of a Fluss row type (Fluss's own mapping).
pub fn arrow_schema_of(row_type: &RowType) -> Result<SchemaRef> {
    let schema = fluss::record::to_arrow_schema(row_type)?;
    // fluss-rs builds plain fields; keep them as they are.
    Ok(Arc::new(ArrowSchema::new(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect::<Vec<Field>>(),
    )))
}

/// Every known schema version of a table.
#[derive(Debug, Clone, Default)]
pub struct SchemaHistory {
    versions: BTreeMap<i32, Arc<SchemaVersion>>,
}

impl SchemaHistory {
    /// Adds a version.
    pub fn insert(&mut self, version: SchemaVersion) {
        self.versions.insert(version.id, Arc::new(version));
    }

    /// The version with `id`.
    pub fn get(&self, id: i32) -> Result<Arc<SchemaVersion>> {
        self.versions
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::data_invalid(format!("unknown schema id {id}")))
    }

    /// The newest version.
    pub fn latest(&self) -> Result<Arc<SchemaVersion>> {
        self.versions
            .values()
            .next_back()
            .cloned()
            .ok_or_else(|| Error::data_invalid("table has no schema"))
    }

    /// Every version, oldest first.
    pub fn versions(&self) -> impl Iterator<Item = &Arc<SchemaVersion>> {
        self.versions.values()
    }

    /// Number of versions.
    pub fn len(&self) -> usize {
        self.versions.len()
    }

    /// Whether no version is known.
    pub fn is_empty(&self) -> bool {
        self.versions.is_empty()
    }
}

/// How to turn a batch decoded with `source` into columns of `target`: for each target
/// column, the index of the source column with the same column id, if any.
pub fn column_mapping(source: &SchemaVersion, target: &SchemaVersion) -> Vec<Option<usize>> {
    let source_ids = source.column_ids();
    target
        .column_ids()
        .iter()
        .map(|id| source_ids.iter().position(|s| s == id))
        .collect()
}

/// Rebuilds `batch` (decoded with the source schema, possibly projected to
/// `decoded_columns`) as `output` columns: `mapping[i]` names the source column of
/// output column `i`; missing columns become nulls, types are cast when they differ.
pub fn align_batch(
    batch: &RecordBatch,
    decoded_columns: &[usize],
    mapping: &[Option<usize>],
    output: &SchemaRef,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let mut columns = Vec::with_capacity(mapping.len());
    for (field, source) in output.fields().iter().zip(mapping) {
        let position = source.and_then(|s| decoded_columns.iter().position(|d| *d == s));
        let column = match position {
            Some(p) => {
                let array = batch.column(p).clone();
                if array.data_type() == field.data_type() {
                    array
                } else {
                    cast(&array, field.data_type())?
                }
            }
            None => new_null_array(field.data_type(), rows),
        };
        columns.push(column);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(output.clone(), columns, &options).map_err(|e| {
        Error::data_invalid("batch cannot be aligned to the table schema").with_source(e)
    })
}
