//! Committing data files together with equality-delete files: an Iceberg "row delta".
//!
//! iceberg 0.10.1 commits data files only (`fast_append` rejects delete files,
//! `transaction/snapshot.rs`), so this writes what the spec asks of a v2 commit
//! itself (Iceberg table spec, "Manifests", "Manifest Lists", "Sequence Numbers"):
//! - one data manifest and one deletes manifest (content = deletes) for the new
//!   files, their entries `ADDED` with the new snapshot's sequence number;
//! - a manifest list: the parent snapshot's manifests, then the two new ones;
//! - a snapshot (operation `overwrite`, the caller's summary properties) set as the
//!   `main` branch, in metadata version N+1 of the hadoop catalog.
//!
//! An equality delete applies to data files of a lower sequence number in its
//! partition, so the deletes remove the keys' older rows from earlier snapshots and
//! leave the rows added with them.

use std::collections::HashMap;

use iceberg::spec::{
    DataFile, MAIN_BRANCH, ManifestFile, ManifestListWriter, ManifestWriterBuilder, Operation,
    Snapshot, Summary,
};
use iceberg::table::Table;

use super::hadoop::HadoopCatalog;
use crate::error::Result;
use crate::lake::lake_error;
use crate::table::now_millis;

/// The files one commit adds.
pub struct RowDelta {
    /// Data files (content = data).
    pub data_files: Vec<DataFile>,
    /// Equality-delete files.
    pub delete_files: Vec<DataFile>,
    /// Snapshot summary entries besides the operation and the counts.
    pub properties: HashMap<String, String>,
}

/// A fresh snapshot id no snapshot of `table` has (positive, as Java's are).
fn new_snapshot_id(table: &Table) -> i64 {
    loop {
        let (high, _) = uuid::Uuid::new_v4().as_u64_pair();
        let id = (high & i64::MAX as u64) as i64;
        if id != 0 && table.metadata().snapshot_by_id(id).is_none() {
            return id;
        }
    }
}

/// Commits `delta` on top of `table`'s current snapshot; returns the table as
/// committed and the new snapshot's id.
pub async fn commit_row_delta(
    catalog: &HadoopCatalog,
    table: &Table,
    delta: RowDelta,
) -> Result<(Table, i64)> {
    let name = table.identifier().to_string();
    let err = |what: &str| {
        lake_error(
            &format!("cannot commit the Iceberg snapshot: {what}"),
            &name,
        )
    };
    let metadata = table.metadata();
    let file_io = table.file_io();
    let schema = metadata.current_schema().clone();
    let spec = metadata.default_partition_spec().as_ref().clone();
    let snapshot_id = new_snapshot_id(table);
    let sequence_number = metadata.next_sequence_number();
    let parent = metadata.current_snapshot().cloned();
    let commit_id = uuid::Uuid::new_v4();
    let metadata_dir = format!("{}/metadata", metadata.location().trim_end_matches('/'));

    let mut manifests: Vec<ManifestFile> = Vec::new();
    let mut summary = delta.properties;
    let count = |files: &[DataFile]| files.iter().map(|f| f.record_count()).sum::<u64>();
    summary.insert(
        "added-data-files".into(),
        delta.data_files.len().to_string(),
    );
    summary.insert("added-records".into(), count(&delta.data_files).to_string());
    summary.insert(
        "added-delete-files".into(),
        delta.delete_files.len().to_string(),
    );
    summary.insert(
        "added-equality-deletes".into(),
        count(&delta.delete_files).to_string(),
    );
    for (files, deletes) in [(delta.data_files, false), (delta.delete_files, true)] {
        if files.is_empty() {
            continue;
        }
        let path = format!("{metadata_dir}/{commit_id}-m{}.avro", manifests.len());
        let output = file_io.new_output(&path).map_err(err("manifest"))?;
        let builder =
            ManifestWriterBuilder::new(output, Some(snapshot_id), schema.clone(), spec.clone());
        let mut writer = if deletes {
            builder.build_v2_deletes()
        } else {
            builder.build_v2_data()
        };
        for file in files {
            writer
                .add_file(file, sequence_number)
                .map_err(err("manifest entry"))?;
        }
        manifests.push(
            writer
                .write_manifest_file()
                .await
                .map_err(err("manifest"))?,
        );
    }
    if let Some(parent) = &parent {
        let list = table
            .manifest_list_reader(parent)
            .load()
            .await
            .map_err(err("the parent's manifest list"))?;
        manifests.extend(list.consume_entries());
    }

    let list_path = format!("{metadata_dir}/snap-{snapshot_id}-0-{commit_id}.avro");
    let output = file_io
        .new_output(&list_path)
        .map_err(err("manifest list"))?;
    let mut list = ManifestListWriter::v2(
        output.writer().await.map_err(err("manifest list"))?,
        snapshot_id,
        parent.as_ref().map(|p| p.snapshot_id()),
        sequence_number,
    );
    list.add_manifests(manifests.into_iter())
        .map_err(err("manifest list"))?;
    list.close().await.map_err(err("manifest list"))?;

    let snapshot = Snapshot::builder()
        .with_snapshot_id(snapshot_id)
        .with_parent_snapshot_id(parent.as_ref().map(|p| p.snapshot_id()))
        .with_sequence_number(sequence_number)
        .with_timestamp_ms(now_millis())
        .with_manifest_list(list_path)
        .with_schema_id(schema.schema_id())
        .with_summary(Summary {
            operation: Operation::Overwrite,
            additional_properties: summary,
        })
        .build();
    let location = table.metadata_location().unwrap_or_default().to_string();
    let next = metadata
        .clone()
        .into_builder(Some(location))
        .set_branch_snapshot(snapshot, MAIN_BRANCH)
        .and_then(|b| b.build())
        .map_err(err("metadata"))?
        .metadata;
    let committed = catalog.commit_metadata(table, next).await?;
    Ok((committed, snapshot_id))
}
