//! `t$lake$manifests`: the manifest files of the lake table's latest snapshot, base
//! then delta list, with the columns of Paimon's `ManifestsTable` that describe a
//! manifest (`file_name`, `file_size`, `num_added_files`, `num_deleted_files`,
//! `schema_id`). Its partition statistics, binary rows in Paimon, are left out.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use paimon::spec::{ManifestFileMeta, ManifestList};
use paimon::table::Table;

use crate::error::{Error, ErrorKind, Result};

/// The manifests table (empty before the first snapshot).
pub(super) async fn manifests(table: &Table) -> Result<RecordBatch> {
    let lake = |message: &'static str| {
        move |e: paimon::Error| Error::new(ErrorKind::Lake, message).with_source(e)
    };
    let snapshots = table.snapshot_manager();
    let latest = snapshots
        .get_latest_snapshot()
        .await
        .map_err(lake("cannot read the latest Paimon snapshot"))?;
    let mut manifests: Vec<ManifestFileMeta> = Vec::new();
    if let Some(snapshot) = latest {
        for list in [
            snapshot.base_manifest_list(),
            snapshot.delta_manifest_list(),
        ] {
            let path = snapshots.manifest_path(list);
            let metas = ManifestList::read(table.file_io(), &path)
                .await
                .map_err(|e| {
                    Error::new(ErrorKind::Lake, "cannot read a Paimon manifest list")
                        .with_context("file", &path)
                        .with_source(e)
                })?;
            manifests.extend(metas);
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("file_name", DataType::Utf8, false),
        Field::new("file_size", DataType::Int64, false),
        Field::new("num_added_files", DataType::Int64, false),
        Field::new("num_deleted_files", DataType::Int64, false),
        Field::new("schema_id", DataType::Int64, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter_values(
                manifests.iter().map(|m| m.file_name()),
            )),
            Arc::new(Int64Array::from_iter_values(
                manifests.iter().map(|m| m.file_size()),
            )),
            Arc::new(Int64Array::from_iter_values(
                manifests.iter().map(|m| m.num_added_files()),
            )),
            Arc::new(Int64Array::from_iter_values(
                manifests.iter().map(|m| m.num_deleted_files()),
            )),
            Arc::new(Int64Array::from_iter_values(
                manifests.iter().map(|m| m.schema_id()),
            )),
        ],
    )?)
}
