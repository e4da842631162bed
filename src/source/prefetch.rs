//! Table metadata fetched for a whole statement at once, and confirmed instead of
//! waited for.
//!
//! DataFusion resolves a statement's tables one after another
//! (`SessionState::statement_to_plan`), so on a cluster a join of n tables waits for
//! n metadata round trips before planning starts. [`with_tables_prefetched`] asks
//! the source for all of them in one request first, and keeps the answers in the
//! statement's task; the source's `get_table` takes them from there. Nothing
//! outlives the task: a statement never sees metadata older than its own start.
//!
//! A read-only statement need not wait even for that one request.
//! [`with_tables_confirmed`] plans and runs it from the tables as the source last
//! saw them while the request is in flight, and keeps the answer only when the
//! request finds every table unchanged (same table id, schema id, creation and
//! modification time, bucket count). Otherwise the speculative run is dropped and the statement
//! runs again from the fresh metadata: the answer is always one planned from
//! metadata read after the statement started. A point lookup on a cluster then
//! costs one round trip (the lookup), not two.
//!
//! A session may accept metadata of a bounded age instead (`fluss.metadata_max_age_ms`,
//! 0 by default): tables the source fetched within that time are planned from as they
//! are, with no request at all.
//!
//! `FlussSession` does this for every query; an app planning through its own
//! `SessionContext` can wrap `SessionState::statement_to_plan` the same way.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use fluss::metadata::{TableInfo, TablePath};
use futures::future::{Either, select};

use super::FlussSource;
use crate::Result;

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

/// Runs a statement that only reads (`run` plans and executes it, and may be called
/// twice) from the metadata of `paths` as `source` last saw it, while one request
/// fetches the current metadata; the answer stands only if nothing changed, else
/// `run` runs again from the fresh metadata. Tables the source fetched within
/// `max_age` (when not zero) are not confirmed: the statement just runs from them.
/// Without last-seen metadata for every table, this is [`with_tables_prefetched`].
pub async fn with_tables_confirmed<T, F, Fut>(
    source: &dyn FlussSource,
    paths: &[TablePath],
    max_age: Duration,
    run: F,
) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let seen = (!paths.is_empty())
        .then(|| source.last_seen_tables(paths))
        .flatten();
    let Some(seen) = seen else {
        return with_tables_prefetched(source, paths, run()).await;
    };
    let seen = Arc::new(seen);
    let young = !max_age.is_zero()
        && source
            .last_seen_age(paths)
            .is_some_and(|age| age <= max_age);
    if young {
        return PREFETCHED.scope(seen, run()).await;
    }
    let confirms = |fresh: &Result<HashMap<TablePath, TableInfo>>| matches!(fresh, Ok(tables) if unchanged(&seen, tables));
    let fresh = Box::pin(source.prefetch_tables(paths));
    let speculative = Box::pin(PREFETCHED.scope(seen.clone(), run()));
    let fresh = match select(fresh, speculative).await {
        Either::Left((fresh, speculative)) => {
            if confirms(&fresh) {
                return speculative.await;
            }
            // dropped before running again: its reads stop here
            drop(speculative);
            fresh
        }
        Either::Right((answer, fresh)) => {
            let fresh = fresh.await;
            if confirms(&fresh) {
                return answer;
            }
            fresh
        }
    };
    match fresh {
        Ok(tables) if !tables.is_empty() => PREFETCHED.scope(Arc::new(tables), run()).await,
        // a table that is gone: each is fetched alone, and the error names it
        _ => run().await,
    }
}

/// Whether every table last seen is still the same version of the same table.
fn unchanged(seen: &HashMap<TablePath, TableInfo>, fresh: &HashMap<TablePath, TableInfo>) -> bool {
    seen.len() == fresh.len()
        && seen.iter().all(|(path, was)| {
            fresh.get(path).is_some_and(|is| {
                was.get_table_id() == is.get_table_id()
                    && was.get_schema_id() == is.get_schema_id()
                    && was.get_created_time() == is.get_created_time()
                    && was.get_modified_time() == is.get_modified_time()
                    && was.get_num_buckets() == is.get_num_buckets()
            })
        })
}

/// The metadata of `path` prefetched for the statement being planned, if any.
#[cfg(feature = "cluster")]
pub(crate) fn prefetched(path: &TablePath) -> Option<TableInfo> {
    PREFETCHED
        .try_with(|tables| tables.get(path).cloned())
        .ok()
        .flatten()
}
