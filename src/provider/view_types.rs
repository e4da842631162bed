//! Strings and bytes as Arrow view types, as DataFusion's own tables read them.
//!
//! A `ListingTable` reads parquet `STRING` and `BYTES` columns as `Utf8View` and
//! `BinaryView` (`datafusion.execution.parquet.schema_force_view_types`, on by
//! default): the parquet reader then decodes dictionary pages into views instead of
//! copying every string, and comparisons, hashing and filters on views skip most of
//! the bytes. TPC-H's string-heavy queries (Q19, Q12) run 25–35 % faster on views.
//! A union table exposes the same types, so its lake files decode as fast and its
//! plans match those of plain parquet. The log tail is Arrow IPC in Fluss's own
//! types (`Utf8`, `Binary`); its columns are cast to views, which points at the
//! decoded bytes without copying them.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::physical_expr::PhysicalExpr;

use crate::error::{Error, Result};

/// The view type a column of `data_type` is read as, if it has one.
fn view_type(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 => Some(DataType::Utf8View),
        DataType::Binary | DataType::LargeBinary => Some(DataType::BinaryView),
        _ => None,
    }
}

/// `schema` with its top-level string and binary columns as view types (metadata
/// kept).
pub fn with_view_types(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match view_type(f.data_type()) {
            Some(view) => f.as_ref().clone().with_data_type(view),
            None => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with its columns cast to `schema`'s types where they differ (the same
/// columns in the same order; strings and bytes to views, anything else as it is).
pub fn to_view_types(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    crate::cast::by_position(batch, schema)
}

/// Rows a source answered by key or by scan (`batch`, in Fluss types) as a scan of
/// `schema` produces them: views for strings, the rows `predicate` (the scan's
/// filters) keeps, projected.
pub fn answered_rows(
    batch: RecordBatch,
    schema: &SchemaRef,
    predicate: Option<&Arc<dyn PhysicalExpr>>,
    projection: &[usize],
) -> Result<RecordBatch> {
    let mut rows = to_view_types(batch, schema)?;
    if let Some(predicate) = predicate {
        let keep = predicate
            .evaluate(&rows)
            .and_then(|v| v.into_array(rows.num_rows()))
            .map_err(|e| Error::internal("cannot filter a source's rows").with_source(e))?;
        let keep = keep
            .as_boolean_opt()
            .ok_or_else(|| Error::internal("a filter of a source's rows is not a boolean"))?;
        rows = filter_record_batch(&rows, keep)?;
    }
    Ok(rows.project(projection)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray, BinaryArray, Int32Array, StringArray};

    #[test]
    fn strings_and_bytes_become_views_without_changing_values() {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("raw", DataType::Binary, true),
        ]);
        let views = with_view_types(&schema);
        let types: Vec<_> = views
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        assert_eq!(
            types,
            vec![DataType::Int32, DataType::Utf8View, DataType::BinaryView]
        );
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int32Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec![
                    Some("a string longer than twelve bytes"),
                    None,
                ])),
                Arc::new(BinaryArray::from(vec![Some(&b"\x00\x01"[..]), Some(b"")])),
            ],
        )
        .unwrap();
        let read = to_view_types(batch, &views).unwrap();
        assert_eq!(read.schema(), views);
        let names = read.column(1).as_string_view();
        assert_eq!(names.value(0), "a string longer than twelve bytes");
        assert!(names.is_null(1));
        assert_eq!(read.column(2).as_binary_view().value(0), b"\x00\x01");
        // a batch already in view types is returned as it is
        let again = to_view_types(read.clone(), &views).unwrap();
        assert_eq!(again, read);
    }
}
