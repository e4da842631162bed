//! Tiering the LocalStore's log into the table's lake, as the Fluss tiering service
//! does (`docs/reference/fluss-formats.md` §3): one run tiers every bucket from its
//! last tiered offset to its end and commits one lake snapshot. Each format writes its
//! own files (`paimon/tiering.rs`, `iceberg/tiering.rs`); this module runs one at a time, under the store's
//! writer lock, after rolling back an interrupted write statement.

use bytes::Bytes;
use fluss::metadata::TablePath;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::LakeFormat;

use crate::error::{Error, ErrorKind, Result};
use crate::log::LogRange;
use crate::source::layout;
use crate::source::local_store::WriteGuard;
use crate::source::metadata::{LakeSnapshotEntry, TableBucketOffsets};
use crate::source::{BucketLocation, FlussSource, FlussTable, LocalStore};
use crate::union::cut::bucket_range;

/// What one tiering run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TieringResult {
    /// The lake snapshot committed (or recovered), if any.
    pub snapshot_id: Option<i64>,
    /// Changelog records written to the lake.
    pub records: usize,
    /// Buckets that had new data.
    pub buckets: usize,
    /// Whether a snapshot left by an interrupted run was registered.
    pub recovered: bool,
}

/// Tiers everything from each bucket's last tiered offset to its current end into the
/// table's lake, committing one lake snapshot.
pub async fn tier(store: &LocalStore, path: &TablePath) -> Result<TieringResult> {
    // One tiering at a time, and never of a write statement's uncommitted batches.
    let mut guard = store.write_guard().await?;
    let table = store.get_table(path).await?;
    store.recover_table(&mut guard, &table).await?;
    let Some(_) = table.lake_format() else {
        return Err(
            Error::invalid_input("table has no lake: set 'table.datalake.enabled'='true'")
                .with_context("table", path.to_string()),
        );
    };
    let location = store.lake_location(&table).await?;
    match location.format {
        LakeFormat::Paimon => super::paimon::tiering::tier(store, &guard, &table, &location).await,
        LakeFormat::Iceberg => {
            super::iceberg::tiering::tier(store, &guard, &table, &location).await
        }
        other => Err(Error::unsupported(format!(
            "tiering to {} is not supported yet",
            other.name()
        ))
        .with_context("table", path.to_string())),
    }
}

/// One bucket's log not tiered yet.
pub(super) struct PendingBucket {
    /// The bucket.
    pub bucket: BucketLocation,
    /// Its offsets from the last tiered offset to the high watermark.
    pub range: LogRange,
    /// The high watermark, the bucket's tiered offset once committed.
    pub high_watermark: i64,
}

/// The offsets tiered so far (the latest tiered snapshot's), and every bucket with log
/// after them: the same ranges a union read would take, so tiering never skips
/// offsets the log lost either.
pub(super) async fn pending_buckets(
    store: &LocalStore,
    table: &FlussTable,
) -> Result<(TableBucketOffsets, Vec<PendingBucket>)> {
    let offsets = store
        .latest_tiered_snapshot(table)
        .await?
        .map(|s| s.offsets)
        .unwrap_or_else(|| TableBucketOffsets::new(table.table_id()));
    let buckets = store.buckets(table).await?;
    let bounds = store.bucket_offsets(table, &buckets).await?;
    let mut pending = Vec::new();
    for (bucket, bounds) in buckets.into_iter().zip(bounds) {
        let range = bucket_range(offsets.get(bucket.partition_id(), bucket.bucket), bounds)
            .map_err(|e| {
                e.with_context("table", table.path.to_string())
                    .with_context("bucket", bucket.bucket)
            })?;
        if !range.is_empty() {
            pending.push(PendingBucket {
                bucket,
                range,
                high_watermark: bounds.high_watermark,
            });
        }
    }
    Ok((offsets, pending))
}

/// Refuses a table's first tiering into a lake table that already has snapshots.
///
/// They were tiered from something else (a dropped table of the same name, another
/// writer): appending to them would make a union read show their rows as this
/// table's. `lake_has_snapshots` is asked only when the table has none registered.
pub(super) async fn check_lake_table_is_ours<F>(
    store: &LocalStore,
    table: &FlussTable,
    lake_has_snapshots: F,
) -> Result<()>
where
    F: AsyncFnOnce() -> Result<bool>,
{
    if store.latest_tiered_snapshot(table).await?.is_some() || !lake_has_snapshots().await? {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::AlreadyExists,
        "the lake table already holds snapshots this table did not tier (left by a dropped \
         table of the same name, or written by another tool); drop it from the lake, or \
         use another table name",
    )
    .with_context("table", table.path.to_string()))
}

/// A fresh path for a tiering round's offsets file.
pub(super) fn new_offsets_path(table: &FlussTable) -> String {
    format!(
        "{}/{}.offsets",
        layout::lake_offsets_dir(&table.path, table.table_id()),
        uuid::Uuid::new_v4()
    )
}

/// Writes a tiering round's offsets file at `offsets_path`, then the pending `marker`
/// that a re-run after a crash resolves.
pub(super) async fn write_offsets_and_marker(
    store: &LocalStore,
    table: &FlussTable,
    offsets_path: &str,
    offsets: &TableBucketOffsets,
    marker: &impl Serialize,
) -> Result<()> {
    store
        .storage()
        .put_atomic(offsets_path, Bytes::from(offsets.to_json()?))
        .await?;
    store
        .storage()
        .put_atomic(
            &layout::lake_tiering_pending_node(table.table_id()),
            Bytes::from(serde_json::to_vec(marker)?),
        )
        .await
}

/// The pending marker an interrupted round left, if any.
pub(super) async fn read_pending_marker<T: DeserializeOwned>(
    store: &LocalStore,
    table: &FlussTable,
) -> Result<Option<T>> {
    let node = layout::lake_tiering_pending_node(table.table_id());
    let Some(bytes) = store.storage().read_optional(&node).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::from(e).with_context("file", &node))
}

/// Drops an interrupted round whose lake commit never happened: its offsets file is
/// an orphan.
pub(super) async fn discard_pending(
    store: &LocalStore,
    table: &FlussTable,
    offsets_path: &str,
) -> Result<()> {
    store.storage().delete(offsets_path).await?;
    store
        .storage()
        .delete(&layout::lake_tiering_pending_node(table.table_id()))
        .await
}

/// Registers a committed tiering snapshot in `laketable.json`, then drops the pending
/// marker: the round is complete.
pub(super) async fn register_and_finish(
    store: &LocalStore,
    guard: &WriteGuard<'_>,
    table: &FlussTable,
    snapshot_id: i64,
    offsets_path: &str,
) -> Result<()> {
    store
        .register_lake_snapshot(
            guard,
            table.table_id(),
            LakeSnapshotEntry {
                snapshot_id,
                tiered_offsets: offsets_path.to_string(),
                readable_offsets: Some(offsets_path.to_string()),
            },
        )
        .await?;
    store
        .storage()
        .delete(&layout::lake_tiering_pending_node(table.table_id()))
        .await
}
