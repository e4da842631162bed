//! Tiering into Paimon: copy each bucket's log from its last tiered offset to its end into the lake,
//! as the Fluss tiering service does (`docs/reference/fluss-formats.md` §3).
//!
//! Order, so that a crash at any point leaves the store readable and a re-run never
//! tiers the same offsets twice:
//! 1. write the lake data files (invisible until committed);
//! 2. write the offsets file (`remote/lake/.../<uuid>.offsets`) and a pending marker;
//! 3. commit one lake snapshot (commit user `__fluss_lake_tiering`, a fresh commit
//!    identifier) and set its `fluss-offsets` property to the offsets file;
//! 4. register the snapshot in `laketable.json`, then drop the marker.
//!
//! Readers trust only registered snapshots. A re-run first resolves a pending marker:
//! if the lake has the marked commit it is finished and registered, otherwise the
//! marker and its offsets file are discarded and tiering starts over.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Int8Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema};
use fluss::metadata::TablePath;
use fluss::record::ChangeType;
use futures::TryStreamExt;
use paimon::spec::{RowKind, VALUE_KIND_FIELD_NAME};
use serde::{Deserialize, Serialize};

use super::PaimonLake;
use crate::error::{Error, ErrorKind, Result};
use crate::lake::arrow_bridge::to_arrow58;
use crate::lake::tiering::{
    PendingBucket, TieringResult, check_lake_table_is_ours, discard_pending, new_offsets_path,
    pending_buckets, read_pending_marker, register_and_finish, write_offsets_and_marker,
};
use crate::lake::{FLUSS_OFFSETS_PROPERTY, LakeLocation, TIERING_COMMIT_USER};
use crate::log::LogReadOptions;
use crate::source::local_store::{WriteGuard, now_millis};
use crate::source::{FlussSource, FlussTable, LocalStore};

#[derive(Debug, Serialize, Deserialize)]
struct PendingTiering {
    commit_identifier: i64,
    offsets: String,
}

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
/// has no snapshot-properties parameter); the file is replaced atomically.
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
    let tmp = format!("{path}.tmp-{}", uuid::Uuid::new_v4());
    let write_err = |e: paimon::Error| {
        Error::new(ErrorKind::Lake, "cannot write the snapshot properties")
            .with_context("file", &tmp)
            .with_source(e)
    };
    io.new_output(&tmp)
        .map_err(write_err)?
        .write(Bytes::from(serde_json::to_vec(&json)?))
        .await
        .map_err(write_err)?;
    io.rename(&tmp, &path).await.map_err(write_err)?;
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

/// Finishes or discards an interrupted run; returns the snapshot it registered.
async fn recover(
    store: &LocalStore,
    guard: &WriteGuard<'_>,
    table: &FlussTable,
    lake: &PaimonLake,
) -> Result<Option<i64>> {
    let Some(pending) = read_pending_marker::<PendingTiering>(store, table).await? else {
        return Ok(None);
    };
    let paimon_table = lake
        .table(table.path.database(), table.path.table())
        .await?;
    let committed = match &paimon_table {
        Some(t) => find_tiering_snapshot(t, pending.commit_identifier).await?,
        None => None,
    };
    let registered = match (committed, paimon_table) {
        (Some(snapshot), Some(t)) => {
            let has_offsets = snapshot
                .properties()
                .is_some_and(|p| p.contains_key(FLUSS_OFFSETS_PROPERTY));
            if !has_offsets {
                set_snapshot_offsets(&t, snapshot.id(), &pending.offsets).await?;
            }
            register_and_finish(store, guard, table, snapshot.id(), &pending.offsets).await?;
            Some(snapshot.id())
        }
        _ => {
            // Never committed: the offsets file is an orphan.
            discard_pending(store, table, &pending.offsets).await?;
            None
        }
    };
    Ok(registered)
}

/// Tiers everything from each bucket's last tiered offset to its current end into the
/// table's lake (Paimon), committing one lake snapshot.
pub(in crate::lake) async fn tier(
    store: &LocalStore,
    guard: &WriteGuard<'_>,
    table: &FlussTable,
    location: &LakeLocation,
) -> Result<TieringResult> {
    let path = &table.path;
    let lake = PaimonLake::open_with_options(&location.warehouse, &location.options)?;
    let mut result = TieringResult::default();
    if let Some(id) = recover(store, guard, table, &lake).await? {
        result.snapshot_id = Some(id);
        result.recovered = true;
    }

    let (mut offsets, pending) = pending_buckets(store, table).await?;
    let paimon_table = lake.ensure_table(table).await?;
    check_lake_table_is_ours(store, table, async || {
        let latest = paimon_table
            .snapshot_manager()
            .get_latest_snapshot_id()
            .await;
        Ok(latest
            .map_err(lake_err("cannot read the Paimon snapshots", path))?
            .is_some())
    })
    .await?;
    let has_bucket_key = !table.info.get_bucket_keys().is_empty();
    let is_pk = table.info.has_primary_key();
    let write_builder = paimon_table
        .new_write_builder()
        .with_commit_user(TIERING_COMMIT_USER)
        .map_err(lake_err("cannot start a Paimon write", path))?;
    let mut writer = write_builder
        .new_write()
        .map_err(lake_err("cannot start a Paimon write", path))?;

    for PendingBucket {
        bucket,
        range,
        high_watermark,
    } in pending
    {
        let mut stream = store
            .read_log(table, &bucket, range, LogReadOptions::verified())
            .await?;
        while let Some(batch) = stream.try_next().await? {
            let rows = if is_pk {
                with_value_kind(&batch.batch, &batch.change_types)?
            } else {
                batch.batch.clone()
            };
            let rows = to_arrow58(&rows)?;
            let target_bucket = has_bucket_key.then_some(bucket.bucket);
            writer
                .write_arrow(&[rows], target_bucket)
                .await
                .map_err(lake_err("cannot write to the Paimon table", path))?;
            result.records += batch.batch.num_rows();
        }
        offsets.set(bucket.partition_id(), bucket.bucket, high_watermark);
        result.buckets += 1;
    }
    if result.buckets == 0 {
        writer.close().await;
        return Ok(result);
    }
    let messages = writer
        .prepare_commit()
        .await
        .map_err(lake_err("cannot prepare the Paimon commit", path))?;

    // 2. offsets file + pending marker
    let offsets_path = new_offsets_path(table);
    // Commit identifiers must grow across runs; wall-clock millis do, and stay unique
    // per table for runs at least a millisecond apart.
    let commit_identifier = now_millis();
    let pending = PendingTiering {
        commit_identifier,
        offsets: offsets_path.clone(),
    };
    write_offsets_and_marker(store, table, &offsets_path, &offsets, &pending).await?;

    // 3. commit + property
    write_builder
        .new_commit()
        .with_ignore_empty_commit(false)
        .commit_with_identifier(messages, commit_identifier)
        .await
        .map_err(lake_err("cannot commit the Paimon snapshot", path))?;
    let snapshot = find_tiering_snapshot(&paimon_table, commit_identifier)
        .await?
        .ok_or_else(|| {
            Error::internal("committed Paimon snapshot not found")
                .with_context("table", path.to_string())
        })?;
    set_snapshot_offsets(&paimon_table, snapshot.id(), &offsets_path).await?;

    // 4. register, then drop the marker
    register_and_finish(store, guard, table, snapshot.id(), &offsets_path).await?;
    result.snapshot_id = Some(snapshot.id());
    Ok(result)
}
