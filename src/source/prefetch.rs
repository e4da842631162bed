//! Table metadata fetched for a whole statement at once.
//!
//! DataFusion resolves a statement's tables one after another
//! (`SessionState::statement_to_plan`), so on a cluster a join of n tables waits for
//! n metadata round trips before planning starts. [`with_tables_prefetched`] asks
//! the source for all of them in one request first, and keeps the answers in the
//! planning task; the source's `get_table` takes them from there. Nothing outlives
//! the task: a statement never sees metadata older than its own start.
//!
//! `FlussSession` does this for every query; an app planning through its own
//! `SessionContext` can wrap `SessionState::statement_to_plan` the same way.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use fluss::metadata::{TableInfo, TablePath};

use super::FlussSource;

tokio::task_local! {
    static PREFETCHED: Arc<HashMap<TablePath, TableInfo>>;
}

/// Runs `planning` with the metadata of `paths` fetched from `source` together
/// beforehand, when there are two or more (one needs no batching). A failed prefetch
/// (a name that is no Fluss table, for one) leaves each table to be fetched alone.
pub async fn with_tables_prefetched<F: Future>(
    source: &dyn FlussSource,
    paths: &[TablePath],
    planning: F,
) -> F::Output {
    if paths.len() < 2 {
        return planning.await;
    }
    match source.prefetch_tables(paths).await {
        Ok(tables) if !tables.is_empty() => PREFETCHED.scope(Arc::new(tables), planning).await,
        _ => planning.await,
    }
}

/// The metadata of `path` prefetched for the statement being planned, if any.
pub(crate) fn prefetched(path: &TablePath) -> Option<TableInfo> {
    PREFETCHED
        .try_with(|tables| tables.get(path).cloned())
        .ok()
        .flatten()
}
