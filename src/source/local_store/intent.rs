//! Write statements are all or nothing: the pending-write intent.
//!
//! A statement can append batches to several buckets. Before its first batch reaches
//! a bucket, the writer records in `zk/tabletservers/tables/<id>/pending_write.json`
//! where that bucket's log ended (offset, active segment and its length). Deleting the
//! file commits the statement. While the file exists, readers treat each listed
//! bucket as ending where the statement found it, so a statement in progress, or one
//! a crash interrupted, is never read; the next writer of the table rolls the buckets
//! back to those points (truncating the segment, removing segments the statement
//! started) and removes the file. Re-running the statement then writes it once.
//!
//! Before it removes the file, a statement records its buckets' new ends in the
//! store's commit record ([`super::committed`]); a rollback puts them back first.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::LocalStore;
use crate::error::{Error, Result};
use crate::log::segment::{forget_framing, list_segments};
use crate::source::{BucketLocation, FlussTable};

/// `zk/tabletservers/tables/<table_id>/pending_write.json`.
pub fn intent_node(table_id: i64) -> String {
    format!("zk/tabletservers/tables/{table_id}/pending_write.json")
}

/// Where one bucket's log ended when the statement first wrote to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntentBucket {
    /// Partition id, for partitioned tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_id: Option<i64>,
    /// Bucket id.
    pub bucket: i32,
    /// The bucket's log directory.
    pub dir: String,
    /// The bucket's log end offset before the statement.
    pub start_offset: i64,
    /// The segment the statement appended to first, if one existed, and its length
    /// before the statement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<(String, u64)>,
}

/// The buckets a statement in progress has written to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteIntent {
    /// Format version (1).
    pub version: i32,
    /// Buckets touched so far, in the order they were first written.
    pub buckets: Vec<IntentBucket>,
}

impl WriteIntent {
    /// The offset readers must stop at for `bucket`, if the statement touched it.
    pub fn start_offset(&self, bucket: &BucketLocation) -> Option<i64> {
        self.buckets
            .iter()
            .find(|b| b.partition_id == bucket.partition_id() && b.bucket == bucket.bucket)
            .map(|b| b.start_offset)
    }

    fn contains(&self, dir: &str) -> bool {
        self.buckets.iter().any(|b| b.dir == dir)
    }
}

impl LocalStore {
    /// The pending-write intent of a table, if a statement is in progress or was
    /// interrupted.
    pub(crate) async fn read_intent(&self, table_id: i64) -> Result<Option<WriteIntent>> {
        let node = intent_node(table_id);
        let Some(bytes) = self.storage.read_optional(&node).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::from(e).with_context("file", &node))
    }

    /// Records that the statement is about to write to `bucket` (once per bucket).
    pub(super) async fn record_intent(
        &self,
        table: &FlussTable,
        intent: &mut WriteIntent,
        entry: IntentBucket,
    ) -> Result<()> {
        if intent.contains(&entry.dir) {
            return Ok(());
        }
        intent.version = 1;
        intent.buckets.push(entry);
        let node = intent_node(table.table_id());
        self.storage
            .put_atomic(&node, Bytes::from(serde_json::to_vec(intent)?))
            .await
    }

    /// Commits the statement: its batches become visible.
    pub(super) async fn commit_intent(
        &self,
        table: &FlussTable,
        intent: &WriteIntent,
    ) -> Result<()> {
        if intent.buckets.is_empty() {
            return Ok(());
        }
        self.storage.delete(&intent_node(table.table_id())).await
    }

    /// Undoes what an uncommitted statement wrote, then removes its intent. The
    /// commit record goes back first: a crash between recording the statement's ends
    /// and removing its intent left them there, and its batches are about to go.
    pub(super) async fn roll_back(&self, table_id: i64, intent: &WriteIntent) -> Result<()> {
        let mut committed = self.committed_ends().await?;
        let before = committed.clone();
        for bucket in &intent.buckets {
            let location = BucketLocation {
                partition: bucket.partition_id.map(|id| (id, String::new())),
                bucket: bucket.bucket,
            };
            if committed
                .get(table_id, &location)
                .is_some_and(|end| end > bucket.start_offset)
            {
                committed.set(
                    (table_id, bucket.partition_id, bucket.bucket),
                    bucket.start_offset,
                );
            }
        }
        if committed != before {
            self.store_committed_ends(&committed).await?;
        }
        for bucket in &intent.buckets {
            for segment in list_segments(&self.storage, &bucket.dir).await? {
                let kept = bucket
                    .segment
                    .as_ref()
                    .is_some_and(|(path, _)| *path == segment.path);
                if kept {
                    continue;
                }
                if segment.base_offset >= bucket.start_offset {
                    forget_framing(&self.storage, &segment.path);
                    self.storage.delete(&segment.path).await?;
                }
            }
            if let Some((path, length)) = &bucket.segment
                && self.storage.size(path).await? > *length
            {
                forget_framing(&self.storage, path);
                self.storage.truncate(path, *length).await?;
            }
        }
        self.storage.delete(&intent_node(table_id)).await
    }
}
