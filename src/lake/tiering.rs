//! Tiering the LocalStore's log into the table's lake, as the Fluss tiering service
//! does (`docs/reference/fluss-formats.md` §3): one run tiers every bucket from its
//! last tiered offset to its end and commits one lake snapshot. Each format writes its
//! own files (`paimon/tiering.rs`, `iceberg/tiering.rs`); this module runs one at a time, under the store's
//! writer lock, after rolling back an interrupted write statement.

use fluss::metadata::TablePath;

use super::LakeFormat;

use crate::error::{Error, Result};
use crate::source::{FlussSource, LocalStore};

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
