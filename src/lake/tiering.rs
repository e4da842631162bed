//! The lake side of tiering, format by format, as Fluss splits it
//! (`LakeTieringFactory` → `LakeWriter` / `LakeCommitter`): a [`LakeWriter`] writes a
//! round's changelog into the lake table, prepares, and commits one snapshot whose
//! `fluss-offsets` property names the round's offsets file; [`find_commit`] finds
//! that snapshot again after a crash. Nothing here knows the LocalStore: the round
//! itself (writer lock, cut, offsets file, pending marker, registration, recovery) is
//! written once, in `source/local_store/tiering.rs`
//! (`docs/reference/fluss-formats.md` §3).

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use super::{LakeFormat, LakeLocation};
use crate::error::{Error, Result};
use crate::log::ChangelogBatch;
use crate::table::{BucketLocation, FlussTable};

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

/// What a round records before it commits (its pending marker), so that a re-run
/// after a crash finds the commit, or knows there was none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCommit {
    /// The round's offsets file: the committed snapshot's `fluss-offsets` property.
    pub offsets: String,
    /// The commit identifier, for formats that find a commit by one (Paimon);
    /// Iceberg finds it by `offsets` in the snapshot summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_identifier: Option<i64>,
}

/// One round's writes into a lake table (Fluss's `LakeWriter` and `LakeCommitter`).
#[async_trait]
pub trait LakeWriter: Send {
    /// Whether the lake table holds snapshots (a table's first round refuses a lake
    /// table that does: they were tiered from something else).
    async fn has_snapshots(&mut self) -> Result<bool>;

    /// Writes one bucket's changelog (invisible until committed); returns the
    /// records written.
    async fn write_bucket(
        &mut self,
        bucket: &BucketLocation,
        batches: BoxStream<'_, Result<ChangelogBatch>>,
    ) -> Result<usize>;

    /// Finishes the written files; returns the commit identifier the round must
    /// record before committing, for formats that find a commit by one.
    async fn prepare(&mut self) -> Result<Option<i64>>;

    /// Commits what was written as one snapshot carrying `pending.offsets` as its
    /// `fluss-offsets` property; returns the snapshot id.
    async fn commit(self: Box<Self>, pending: &PendingCommit) -> Result<i64>;
}

/// The writer of `table`'s lake at `location`: its lake table is created on first
/// use, clean as Fluss 1.0 creates it, and given the columns an `ALTER TABLE ... ADD`
/// left it without.
pub async fn lake_writer(
    location: &LakeLocation,
    table: &FlussTable,
) -> Result<Box<dyn LakeWriter>> {
    match location.format {
        #[cfg(feature = "paimon")]
        LakeFormat::Paimon => super::paimon::tiering::writer(location, table).await,
        #[cfg(feature = "iceberg")]
        LakeFormat::Iceberg => super::iceberg::tiering::writer(location, table).await,
        other => Err(unsupported(other, table)),
    }
}

/// The snapshot an interrupted round committed, found by what it recorded (and, if
/// the crash came before it, given its `fluss-offsets` property); `None` if the
/// round never committed.
#[cfg_attr(
    not(any(feature = "paimon", feature = "iceberg")),
    allow(unused_variables)
)]
pub async fn find_commit(
    location: &LakeLocation,
    table: &FlussTable,
    pending: &PendingCommit,
) -> Result<Option<i64>> {
    match location.format {
        #[cfg(feature = "paimon")]
        LakeFormat::Paimon => super::paimon::tiering::find_commit(location, table, pending).await,
        #[cfg(feature = "iceberg")]
        LakeFormat::Iceberg => super::iceberg::tiering::find_commit(location, table, pending).await,
        other => Err(unsupported(other, table)),
    }
}

fn unsupported(format: LakeFormat, table: &FlussTable) -> Error {
    format.unavailable(
        table,
        &format!("tiering to {} is not supported yet", format.name()),
    )
}
