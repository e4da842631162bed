//! `t$lake$files`: the live data and delete files of the current snapshot, with the
//! columns of Iceberg's `FilesTable` that describe a file (`content`, `file_path`,
//! `file_format`, `spec_id`, `partition`, `record_count`, `file_size_in_bytes`,
//! `sort_order_id`). The partition is shown as text (`{v1, v2}`, each value as Fluss
//! names partitions); the per-column metrics are left out.

use std::sync::Arc;

use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use iceberg::spec::DataFile;
use iceberg::table::Table;

use super::current_manifests;
use crate::error::{Error, ErrorKind, Result};
use crate::lake::iceberg::scan::partition_value;

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
    let partitions = files
        .iter()
        .map(|(spec, f)| partition_text(table, *spec, f))
        .collect::<Result<Vec<_>>>()?;
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
            Arc::new(StringArray::from(partitions)),
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

/// A file's partition values as text, `{v1, v2}`: each rendered by the scan's
/// [`partition_value`] for its source column's type.
fn partition_text(table: &Table, spec_id: i32, file: &DataFile) -> Result<String> {
    let metadata = table.metadata();
    let spec = metadata.partition_spec_by_id(spec_id).ok_or_else(|| {
        Error::data_invalid(format!("the table has no partition spec {spec_id}"))
            .with_context("file", file.file_path())
    })?;
    let schema = metadata.current_schema();
    let mut values = Vec::with_capacity(spec.fields().len());
    for (field, value) in spec.fields().iter().zip(file.partition().iter()) {
        let source = schema.field_by_id(field.source_id).ok_or_else(|| {
            Error::data_invalid(format!(
                "partition field '{}' has no source column in the Iceberg schema",
                field.name
            ))
            .with_context("file", file.file_path())
        })?;
        values.push(partition_value(value, &source.field_type)?);
    }
    Ok(format!("{{{}}}", values.join(", ")))
}
