//! Paimon's system tables a `t$lake$<name>` shows, one file each (as
//! paimon-datafusion has them), with the columns Paimon's own
//! (`org.apache.paimon.table.system.*Table`) gives them: `options`, `schemas`,
//! `files`, `partitions`, `buckets` and `manifests`.

mod buckets;
mod files;
mod manifests;
mod options;
mod partitions;
mod schemas;

use datafusion::arrow::array::RecordBatch;

use crate::error::Result;

/// The system table `name` of `table`; `None` for a name this module has none of.
pub(super) async fn system_table(
    table: &paimon::table::Table,
    name: &str,
) -> Result<Option<RecordBatch>> {
    match name {
        "options" => options::options(table).map(Some),
        "schemas" => schemas::schemas(table).await.map(Some),
        "files" => files::files(table).await.map(Some),
        "partitions" => partitions::partitions(table).await.map(Some),
        "buckets" => buckets::buckets(table).await.map(Some),
        "manifests" => manifests::manifests(table).await.map(Some),
        _ => Ok(None),
    }
}

/// The system tables [`system_table`] answers.
pub(super) const SYSTEM_TABLES: &[&str] = &[
    "options",
    "schemas",
    "files",
    "partitions",
    "buckets",
    "manifests",
];
