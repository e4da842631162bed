//! `t$lake$manifests`: the manifests of the current snapshot, with the columns of
//! Iceberg's `ManifestsTable` that describe a manifest (`content`, `path`,
//! `length`, `partition_spec_id`, `added_snapshot_id`, and the added, existing and
//! deleted data and delete file counts). Its partition summaries are left out.

use std::sync::Arc;

use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use iceberg::spec::{ManifestContentType, ManifestFile};
use iceberg::table::Table;

use super::current_manifests;
use crate::error::Result;

/// The manifests table.
pub(super) async fn manifests(table: &Table) -> Result<RecordBatch> {
    let manifests = current_manifests(table).await?;
    let count = |m: &ManifestFile, content: ManifestContentType, n: Option<u32>| {
        if m.content == content {
            n.map_or(0, |n| n as i32)
        } else {
            0
        }
    };
    let counts = |f: &dyn Fn(&ManifestFile) -> i32| {
        Arc::new(Int32Array::from_iter_values(manifests.iter().map(f)))
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("content", DataType::Int32, false),
        Field::new("path", DataType::Utf8, false),
        Field::new("length", DataType::Int64, false),
        Field::new("partition_spec_id", DataType::Int32, false),
        Field::new("added_snapshot_id", DataType::Int64, false),
        Field::new("added_data_files_count", DataType::Int32, false),
        Field::new("existing_data_files_count", DataType::Int32, false),
        Field::new("deleted_data_files_count", DataType::Int32, false),
        Field::new("added_delete_files_count", DataType::Int32, false),
        Field::new("existing_delete_files_count", DataType::Int32, false),
        Field::new("deleted_delete_files_count", DataType::Int32, false),
    ]));
    use ManifestContentType::{Data, Deletes};
    Ok(RecordBatch::try_new(
        schema,
        vec![
            counts(&|m| m.content as i32),
            Arc::new(StringArray::from_iter_values(
                manifests.iter().map(|m| &m.manifest_path),
            )),
            Arc::new(Int64Array::from_iter_values(
                manifests.iter().map(|m| m.manifest_length),
            )),
            counts(&|m| m.partition_spec_id),
            Arc::new(Int64Array::from_iter_values(
                manifests.iter().map(|m| m.added_snapshot_id),
            )),
            counts(&|m| count(m, Data, m.added_files_count)),
            counts(&|m| count(m, Data, m.existing_files_count)),
            counts(&|m| count(m, Data, m.deleted_files_count)),
            counts(&|m| count(m, Deletes, m.added_files_count)),
            counts(&|m| count(m, Deletes, m.existing_files_count)),
            counts(&|m| count(m, Deletes, m.deleted_files_count)),
        ],
    )?)
}
