//! `t$lake$files`: the live data and delete files of the current snapshot, with the
//! columns of Iceberg's `FilesTable` that describe a file (`content`, `file_path`,
//! `file_format`, `spec_id`, `partition`, `record_count`, `file_size_in_bytes`,
//! `sort_order_id`). The partition is shown as text (`{v1, v2}`); the per-column
//! metrics are left out.

use std::sync::Arc;

use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use iceberg::spec::{DataFile, Literal, PrimitiveLiteral};
use iceberg::table::Table;

use super::current_manifests;
use crate::error::{Error, ErrorKind, Result};

/// The files table.
pub(super) async fn files(table: &Table) -> Result<RecordBatch> {
    let mut files: Vec<(i32, DataFile)> = Vec::new();
    for manifest in current_manifests(table).await? {
        let entries = manifest.load_manifest(table.file_io()).await.map_err(|e| {
            Error::new(ErrorKind::Lake, "cannot read an Iceberg manifest")
                .with_context("file", &manifest.manifest_path)
                .with_source(e)
        })?;
        for entry in entries.entries() {
            if entry.is_alive() {
                files.push((manifest.partition_spec_id, entry.data_file().clone()));
            }
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("content", DataType::Int32, false),
        Field::new("file_path", DataType::Utf8, false),
        Field::new("file_format", DataType::Utf8, false),
        Field::new("spec_id", DataType::Int32, false),
        Field::new("partition", DataType::Utf8, false),
        Field::new("record_count", DataType::Int64, false),
        Field::new("file_size_in_bytes", DataType::Int64, false),
        Field::new("sort_order_id", DataType::Int32, true),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int32Array::from_iter_values(
                files.iter().map(|(_, f)| f.content_type() as i32),
            )),
            Arc::new(StringArray::from_iter_values(
                files.iter().map(|(_, f)| f.file_path()),
            )),
            Arc::new(StringArray::from_iter_values(
                files
                    .iter()
                    .map(|(_, f)| f.file_format().to_string().to_uppercase()),
            )),
            Arc::new(Int32Array::from_iter_values(files.iter().map(|(s, _)| *s))),
            Arc::new(StringArray::from_iter_values(
                files.iter().map(|(_, f)| partition_text(f)),
            )),
            Arc::new(Int64Array::from_iter_values(
                files.iter().map(|(_, f)| f.record_count() as i64),
            )),
            Arc::new(Int64Array::from_iter_values(
                files.iter().map(|(_, f)| f.file_size_in_bytes() as i64),
            )),
            Arc::new(Int32Array::from(
                files
                    .iter()
                    .map(|(_, f)| f.sort_order_id())
                    .collect::<Vec<_>>(),
            )),
        ],
    )?)
}

/// A file's partition values as text: `{v1, v2}` (`null` for a null value).
fn partition_text(file: &DataFile) -> String {
    let values: Vec<String> = file
        .partition()
        .iter()
        .map(|value| match value {
            None => "null".to_string(),
            Some(Literal::Primitive(PrimitiveLiteral::String(s))) => s.clone(),
            Some(Literal::Primitive(PrimitiveLiteral::Int(v))) => v.to_string(),
            Some(Literal::Primitive(PrimitiveLiteral::Long(v))) => v.to_string(),
            Some(Literal::Primitive(PrimitiveLiteral::Boolean(v))) => v.to_string(),
            Some(other) => format!("{other:?}"),
        })
        .collect();
    format!("{{{}}}", values.join(", "))
}
