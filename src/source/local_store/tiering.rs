//! A tiering round of the LocalStore, written once for every lake format, as the
//! Fluss tiering service runs one (`docs/reference/fluss-formats.md` §3): every
//! bucket from its last tiered offset to its end goes into the table's lake as one
//! lake snapshot. The format's side (write, prepare, commit, find a commit) is a
//! [`LakeWriter`]; this module owns the order that keeps a crash harmless:
//!
//! 1. under the writer lock, roll back an interrupted write statement, then resolve an
//!    interrupted round (below);
//! 2. write each pending bucket's log into the lake (invisible until committed), and
//!    prepare the commit;
//! 3. write the offsets file (`remote/lake/.../<uuid>.offsets`) and the pending marker
//!    (the offsets file and what the format finds its commit by);
//! 4. commit one lake snapshot whose `fluss-offsets` property is the offsets file;
//! 5. register the snapshot in `laketable.json`, then drop the marker.
//!
//! Readers trust only registered snapshots. A re-run first resolves a pending marker:
//! if the lake has the marked commit it is registered, otherwise the marker and its
//! offsets file are discarded and the round starts over, so no offset is tiered twice.

use bytes::Bytes;
use fluss::metadata::TablePath;

use super::{LocalStore, WriteGuard};
use crate::error::{Error, ErrorKind, Result};
use crate::lake::LakeLocation;
use crate::lake::tiering::{LakeWriter, PendingCommit, TieringResult, find_commit, lake_writer};
use crate::log::{LogRange, LogReadOptions};
use crate::source::layout;
use crate::source::metadata::{LakeSnapshotEntry, TableBucketOffsets};
use crate::source::{BucketLocation, FlussSource, FlussTable};
use crate::table::bucket_range;

/// Tiers everything from each bucket's last tiered offset to its current end into the
/// table's lake, committing one lake snapshot.
pub async fn tier(store: &LocalStore, path: &TablePath) -> Result<TieringResult> {
    let started = std::time::Instant::now();
    // One tiering at a time, and never of a write statement's uncommitted batches.
    let mut guard = store.write_guard().await?;
    let table = store.get_table(path).await?;
    store.recover_table(&mut guard, &table).await?;
    if table.lake_format().is_none() {
        return Err(
            Error::invalid_input("table has no lake: set 'table.datalake.enabled'='true'")
                .with_context("table", path.to_string()),
        );
    }
    let location = store.lake_location(&table).await?;
    let mut result = TieringResult::default();
    if let Some(id) = recover(store, &guard, &table, &location).await? {
        tracing::warn!(
            table = %path,
            snapshot = id,
            "registered a lake snapshot an interrupted tiering round had committed"
        );
        result.snapshot_id = Some(id);
        result.recovered = true;
    }

    let (mut offsets, pending) = pending_buckets(store, &table).await?;
    if pending.is_empty() {
        return Ok(result);
    }
    let mut writer = lake_writer(&location, &table).await?;
    check_lake_table_is_ours(store, &table, writer.as_mut()).await?;
    for PendingBucket {
        bucket,
        range,
        high_watermark,
    } in pending
    {
        let batches = store
            .read_log(&table, &bucket, range, LogReadOptions::verified())
            .await?;
        result.records += writer.write_bucket(&bucket, batches).await?;
        offsets.set(bucket.partition_id(), bucket.bucket, high_watermark);
        result.buckets += 1;
    }
    let commit_identifier = writer.prepare().await?;

    let marker = PendingCommit {
        offsets: new_offsets_path(&table),
        commit_identifier,
    };
    write_offsets_and_marker(store, &table, &offsets, &marker).await?;
    let snapshot_id = writer.commit(&marker).await?;
    register_and_finish(store, &guard, &table, snapshot_id, &marker.offsets).await?;
    result.snapshot_id = Some(snapshot_id);
    tracing::info!(
        table = %path,
        snapshot = snapshot_id,
        records = result.records,
        buckets = result.buckets,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "tiered the log tail into the lake"
    );
    Ok(result)
}

/// Finishes or discards an interrupted round; returns the snapshot it registered.
async fn recover(
    store: &LocalStore,
    guard: &WriteGuard<'_>,
    table: &FlussTable,
    location: &LakeLocation,
) -> Result<Option<i64>> {
    let Some(pending) = read_pending_marker(store, table).await? else {
        return Ok(None);
    };
    let committed = find_commit(location, table, &pending).await?;
    match committed {
        Some(snapshot_id) => {
            register_and_finish(store, guard, table, snapshot_id, &pending.offsets).await?
        }
        // Never committed: the offsets file is an orphan.
        None => discard_pending(store, table, &pending.offsets).await?,
    }
    Ok(committed)
}

/// One bucket's log not tiered yet.
struct PendingBucket {
    /// The bucket.
    bucket: BucketLocation,
    /// Its offsets from the last tiered offset to the high watermark.
    range: LogRange,
    /// The high watermark, the bucket's tiered offset once committed.
    high_watermark: i64,
}

/// The offsets tiered so far (the latest tiered snapshot's), and every bucket with log
/// after them: the same ranges a union read would take, so tiering never skips
/// offsets the log lost either.
async fn pending_buckets(
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
/// table's. The lake is asked only when the table has no snapshot registered.
async fn check_lake_table_is_ours(
    store: &LocalStore,
    table: &FlussTable,
    lake: &mut dyn LakeWriter,
) -> Result<()> {
    if store.latest_tiered_snapshot(table).await?.is_some() || !lake.has_snapshots().await? {
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
fn new_offsets_path(table: &FlussTable) -> String {
    format!(
        "{}/{}.offsets",
        layout::lake_offsets_dir(&table.path, table.table_id()),
        uuid::Uuid::new_v4()
    )
}

/// Writes a tiering round's offsets file, then the pending marker that a re-run after
/// a crash resolves.
async fn write_offsets_and_marker(
    store: &LocalStore,
    table: &FlussTable,
    offsets: &TableBucketOffsets,
    marker: &PendingCommit,
) -> Result<()> {
    store
        .storage()
        .put_atomic(&marker.offsets, Bytes::from(offsets.to_json()?))
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
async fn read_pending_marker(
    store: &LocalStore,
    table: &FlussTable,
) -> Result<Option<PendingCommit>> {
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
async fn discard_pending(store: &LocalStore, table: &FlussTable, offsets_path: &str) -> Result<()> {
    store.storage().delete(offsets_path).await?;
    store
        .storage()
        .delete(&layout::lake_tiering_pending_node(table.table_id()))
        .await
}

/// Registers a committed tiering snapshot in `laketable.json`, then drops the pending
/// marker: the round is complete.
async fn register_and_finish(
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
