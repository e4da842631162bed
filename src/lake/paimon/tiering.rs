//! Paimon's side of a tiering round ([`LakeWriter`]), as Fluss's `PaimonLakeWriter`
//! / `PaimonLakeCommitter` do it: each bucket's changelog is written into its bucket
//! (primary-key rows with `_VALUE_KIND`, so deletes reach the lake as DELETE rows),
//! prepared, and committed as one snapshot (commit user `__fluss_lake_tiering`, a
//! fresh commit identifier the round records first) whose `fluss-offsets` property is
//! then set to the round's offsets file. A commit is found again by its identifier.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::arrow::array::{Int8Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema};
use fluss::metadata::TablePath;
use fluss::record::ChangeType;
use futures::TryStreamExt;
use futures::stream::BoxStream;
use paimon::spec::{RowKind, VALUE_KIND_FIELD_NAME};
use paimon::table::{CommitMessage, TableCommit, TableWrite};

use super::PaimonLake;
use crate::error::{Error, ErrorKind, Result};
use crate::lake::arrow_bridge::to_arrow58;
use crate::lake::tiering::{LakeWriter, PendingCommit};
use crate::lake::{FLUSS_OFFSETS_PROPERTY, LakeLocation, TIERING_COMMIT_USER};
use crate::log::ChangelogBatch;
use crate::table::{BucketLocation, FlussTable, now_millis};

fn lake_err(message: &str, table: &TablePath) -> impl FnOnce(paimon::Error) -> Error + use<> {
    crate::lake::lake_error(message, &table.to_string())
}

fn row_kind(change: ChangeType) -> i8 {
    match change {
        ChangeType::AppendOnly | ChangeType::Insert => RowKind::Insert.to_value(),
        ChangeType::UpdateBefore => RowKind::UpdateBefore.to_value(),
        ChangeType::UpdateAfter => RowKind::UpdateAfter.to_value(),
        ChangeType::Delete => RowKind::Delete.to_value(),
    }
}

/// Appends Paimon's `_VALUE_KIND` column so deletes reach the lake as DELETE rows.
fn with_value_kind(batch: &RecordBatch, changes: &[ChangeType]) -> Result<RecordBatch> {
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(VALUE_KIND_FIELD_NAME, ArrowType::Int8, false));
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(Int8Array::from(
        changes.iter().map(|c| row_kind(*c)).collect::<Vec<_>>(),
    )));
    Ok(RecordBatch::try_new(
        Arc::new(ArrowSchema::new(fields)),
        columns,
    )?)
}

/// Sets the `fluss-offsets` property of a committed Paimon snapshot (the paimon crate
/// has no snapshot-properties parameter); the file is replaced atomically (renamed
/// over on a file system, put whole on an object store).
async fn set_snapshot_offsets(
    table: &paimon::table::Table,
    snapshot_id: i64,
    offsets: &str,
) -> Result<()> {
    let manager = table.snapshot_manager();
    let path = manager.snapshot_path(snapshot_id);
    let io = table.file_io();
    let read_err = |e: paimon::Error| {
        Error::new(ErrorKind::Lake, "cannot update the snapshot properties")
            .with_context("file", &path)
            .with_source(e)
    };
    let bytes = io
        .new_input(&path)
        .map_err(read_err)?
        .read()
        .await
        .map_err(read_err)?;
    let mut json: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| Error::from(e).with_context("file", &path))?;
    let object = json.as_object_mut().ok_or_else(|| {
        Error::data_invalid("snapshot file is not a JSON object").with_context("file", &path)
    })?;
    let properties = object
        .entry("properties")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if let Some(p) = properties.as_object_mut() {
        p.insert(
            FLUSS_OFFSETS_PROPERTY.to_string(),
            serde_json::Value::String(offsets.to_string()),
        );
    }
    let content = Bytes::from(serde_json::to_vec(&json)?);
    // An object store (S3, OSS, GCS) replaces an object atomically on PUT and has no
    // rename; a file system needs a temporary file renamed over the old one.
    let on_object_store = crate::storage::remote::is_remote(&path);
    let target = if on_object_store {
        path.clone()
    } else {
        format!("{path}.tmp-{}", uuid::Uuid::new_v4())
    };
    let write_err = |e: paimon::Error| {
        Error::new(ErrorKind::Lake, "cannot write the snapshot properties")
            .with_context("file", &target)
            .with_source(e)
    };
    io.new_output(&target)
        .map_err(write_err)?
        .write(content)
        .await
        .map_err(write_err)?;
    if !on_object_store {
        io.rename(&target, &path).await.map_err(write_err)?;
    }
    Ok(())
}

/// Finds the tiering snapshot with `commit_identifier`, if it was committed.
async fn find_tiering_snapshot(
    table: &paimon::table::Table,
    commit_identifier: i64,
) -> Result<Option<paimon::spec::Snapshot>> {
    let snapshots =
        table.snapshot_manager().list_all().await.map_err(|e| {
            Error::new(ErrorKind::Lake, "cannot list Paimon snapshots").with_source(e)
        })?;
    Ok(snapshots.into_iter().find(|s| {
        s.commit_user() == TIERING_COMMIT_USER && s.commit_identifier() == commit_identifier
    }))
}

/// The round's writer: the lake table (created or given its new columns), one
/// table write for every bucket, and the commit it ends with.
struct PaimonTiering {
    table: paimon::table::Table,
    path: TablePath,
    write: TableWrite,
    commit: TableCommit,
    has_bucket_key: bool,
    primary_key: bool,
    messages: Vec<CommitMessage>,
}

pub(in crate::lake) async fn writer(
    location: &LakeLocation,
    table: &FlussTable,
) -> Result<Box<dyn LakeWriter>> {
    let path = &table.path;
    let lake = PaimonLake::open_with_options(&location.warehouse, &location.options)?;
    let paimon_table = lake.ensure_table(table).await?;
    let builder = paimon_table
        .new_write_builder()
        .with_commit_user(TIERING_COMMIT_USER)
        .map_err(lake_err("cannot start a Paimon write", path))?;
    let write = builder
        .new_write()
        .map_err(lake_err("cannot start a Paimon write", path))?;
    let commit = builder.new_commit().with_ignore_empty_commit(false);
    Ok(Box::new(PaimonTiering {
        path: path.clone(),
        write,
        commit,
        has_bucket_key: !table.info.get_bucket_keys().is_empty(),
        primary_key: table.info.has_primary_key(),
        messages: Vec::new(),
        table: paimon_table,
    }))
}

#[async_trait]
impl LakeWriter for PaimonTiering {
    async fn has_snapshots(&mut self) -> Result<bool> {
        let latest = self.table.snapshot_manager().get_latest_snapshot_id().await;
        Ok(latest
            .map_err(lake_err("cannot read the Paimon snapshots", &self.path))?
            .is_some())
    }

    async fn write_bucket(
        &mut self,
        bucket: &BucketLocation,
        mut batches: BoxStream<'_, Result<ChangelogBatch>>,
    ) -> Result<usize> {
        let mut records = 0;
        let target_bucket = self.has_bucket_key.then_some(bucket.bucket);
        while let Some(batch) = batches.try_next().await? {
            let rows = if self.primary_key {
                with_value_kind(&batch.batch, &batch.change_types)?
            } else {
                batch.batch.clone()
            };
            self.write
                .write_arrow(&[to_arrow58(&rows)?], target_bucket)
                .await
                .map_err(lake_err("cannot write to the Paimon table", &self.path))?;
            records += batch.batch.num_rows();
        }
        Ok(records)
    }

    async fn prepare(&mut self) -> Result<Option<i64>> {
        self.messages = self
            .write
            .prepare_commit()
            .await
            .map_err(lake_err("cannot prepare the Paimon commit", &self.path))?;
        // Commit identifiers must grow across runs; wall-clock millis do, and stay
        // unique per table for runs at least a millisecond apart.
        Ok(Some(now_millis()))
    }

    async fn commit(self: Box<Self>, pending: &PendingCommit) -> Result<i64> {
        let Self {
            table,
            path,
            commit,
            messages,
            ..
        } = *self;
        let identifier = pending.commit_identifier.ok_or_else(|| {
            Error::internal("a Paimon commit needs the identifier it prepared")
                .with_context("table", path.to_string())
        })?;
        commit
            .commit_with_identifier(messages, identifier)
            .await
            .map_err(lake_err("cannot commit the Paimon snapshot", &path))?;
        let snapshot = find_tiering_snapshot(&table, identifier)
            .await?
            .ok_or_else(|| {
                Error::internal("committed Paimon snapshot not found")
                    .with_context("table", path.to_string())
            })?;
        set_snapshot_offsets(&table, snapshot.id(), &pending.offsets).await?;
        Ok(snapshot.id())
    }
}

/// The snapshot of the round with `pending`'s commit identifier, its `fluss-offsets`
/// property set (a crash may have come between the commit and the property).
pub(in crate::lake) async fn find_commit(
    location: &LakeLocation,
    table: &FlussTable,
    pending: &PendingCommit,
) -> Result<Option<i64>> {
    let Some(identifier) = pending.commit_identifier else {
        return Ok(None);
    };
    let lake = PaimonLake::open_with_options(&location.warehouse, &location.options)?;
    let Some(paimon_table) = lake
        .table(table.path.database(), table.path.table())
        .await?
    else {
        return Ok(None);
    };
    let Some(snapshot) = find_tiering_snapshot(&paimon_table, identifier).await? else {
        return Ok(None);
    };
    let has_offsets = snapshot
        .properties()
        .is_some_and(|p| p.contains_key(FLUSS_OFFSETS_PROPERTY));
    if !has_offsets {
        set_snapshot_offsets(&paimon_table, snapshot.id(), &pending.offsets).await?;
    }
    Ok(Some(snapshot.id()))
}
