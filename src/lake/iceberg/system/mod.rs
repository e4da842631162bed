//! Iceberg's metadata tables a `t$lake$<name>` shows, one file each, with the
//! columns Iceberg's own (`org.apache.iceberg.*Table`) gives them: `history`,
//! `manifests` and `files`.

mod files;
mod history;
mod manifests;

use datafusion::arrow::array::RecordBatch;
use iceberg::spec::ManifestFile;
use iceberg::table::Table;

use crate::error::{Error, ErrorKind, Result};

/// The metadata tables [`system_table`] answers.
pub(super) const SYSTEM_TABLES: &[&str] = &["history", "manifests", "files"];

/// The metadata table `name` of `table`; `None` for a name this module has none of.
pub(super) async fn system_table(table: &Table, name: &str) -> Result<Option<RecordBatch>> {
    match name {
        "history" => history::history(table).map(Some),
        "manifests" => manifests::manifests(table).await.map(Some),
        "files" => files::files(table).await.map(Some),
        _ => Ok(None),
    }
}

/// The manifests of the current snapshot (none before the first).
async fn current_manifests(table: &Table) -> Result<Vec<ManifestFile>> {
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(Vec::new());
    };
    let list = table
        .manifest_list_reader(snapshot)
        .load()
        .await
        .map_err(|e| {
            Error::new(ErrorKind::Lake, "cannot read the Iceberg manifest list")
                .with_context("file", snapshot.manifest_list())
                .with_source(e)
        })?;
    Ok(list.consume_entries().into_iter().collect())
}
