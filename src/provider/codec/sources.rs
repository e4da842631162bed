//! [`PlanSources`]: the sources a process runs shipped plans against, and the lake
//! tables of their tables, opened once and kept.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::lake::LakeTable;
use crate::source::{FlussSource, SourceSpec};
use crate::table::FlussTable;
use crate::union::lake_keys::DEFAULT_LAKE_KEY_CACHE_BYTES;
use crate::union::tail_cache::DEFAULT_TAIL_CACHE_BYTES;
use crate::union::{LakeKeyCache, TailCache};

/// Lake tables kept open, by source, table id and snapshot (a table opened before a
/// snapshot was committed may not know it).
const KEPT_LAKES: usize = 64;

type LakeKey = (SourceSpec, i64, i64);

/// One served source and what its plans keep between queries: its own caches, as a
/// catalog keeps them per source, so what one source's credentials read is never
/// served to a plan of another.
struct Served {
    spec: SourceSpec,
    source: Arc<dyn FlussSource>,
    tail_cache: Arc<TailCache>,
    lake_keys: Arc<LakeKeyCache>,
}

/// The sources a process (a distributed worker) runs shipped plans against: only
/// those it was started with, never one a plan names. Each plan's lake table is
/// opened through its source's lake options on first use and kept; primary-key
/// tails folded and lake files' keys are kept per source, as in one process.
pub struct PlanSources {
    sources: Vec<Served>,
    lakes: Mutex<VecDeque<(LakeKey, Arc<dyn LakeTable>)>>,
    /// Where lake tables are opened: plans are decoded synchronously, and a table
    /// opened there must keep the runtime its clients were made on.
    runtime: Option<tokio::runtime::Runtime>,
}

impl fmt::Debug for PlanSources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let specs: Vec<String> = self.sources.iter().map(|s| s.spec.to_string()).collect();
        f.debug_struct("PlanSources")
            .field("sources", &specs)
            .finish_non_exhaustive()
    }
}

impl Drop for PlanSources {
    fn drop(&mut self) {
        // dropping a runtime blocks, which async code may not: let it wind down
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl PlanSources {
    /// Plans reading `sources` run here; a source that cannot name itself
    /// ([`FlussSource::spec`]) is an error.
    pub fn new(sources: impl IntoIterator<Item = Arc<dyn FlussSource>>) -> Result<Self> {
        let mut named = Vec::new();
        for source in sources {
            let spec = source.spec().ok_or_else(|| {
                Error::invalid_input(format!(
                    "{} cannot be opened by another process, so no plan of it is shipped",
                    source.name()
                ))
            })?;
            named.push(Served {
                spec,
                source,
                tail_cache: Arc::new(TailCache::new(DEFAULT_TAIL_CACHE_BYTES)),
                lake_keys: Arc::new(LakeKeyCache::new(DEFAULT_LAKE_KEY_CACHE_BYTES)),
            });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fluss-plan-sources")
            .enable_all()
            .build()
            .map_err(|e| {
                Error::internal("cannot start the lake opener's runtime").with_source(e)
            })?;
        Ok(Self {
            sources: named,
            lakes: Mutex::new(VecDeque::new()),
            runtime: Some(runtime),
        })
    }

    /// Bounds the caches every served source keeps between plans (bytes; 0 keeps
    /// nothing): folded primary-key tails and lake files' key columns. Both default
    /// to 256 MiB, as a catalog's.
    pub fn with_cache_bytes(mut self, tail_cache: usize, lake_keys: usize) -> Self {
        for served in &mut self.sources {
            served.tail_cache = Arc::new(TailCache::new(tail_cache));
            served.lake_keys = Arc::new(LakeKeyCache::new(lake_keys));
        }
        self
    }

    /// The sources served, by spec.
    pub fn specs(&self) -> impl Iterator<Item = &SourceSpec> {
        self.sources.iter().map(|s| &s.spec)
    }

    /// The source `spec` names, if this process serves it.
    pub(crate) fn source(&self, spec: &SourceSpec) -> Result<Arc<dyn FlussSource>> {
        Ok(self.served(spec)?.source.clone())
    }

    /// The tail cache and lake-key cache of `spec`'s source.
    pub(crate) fn caches(&self, spec: &SourceSpec) -> Result<(Arc<TailCache>, Arc<LakeKeyCache>)> {
        let served = self.served(spec)?;
        Ok((served.tail_cache.clone(), served.lake_keys.clone()))
    }

    fn served(&self, spec: &SourceSpec) -> Result<&Served> {
        self.sources
            .iter()
            .find(|s| &s.spec == spec)
            .ok_or_else(|| {
                let served: Vec<String> = self.specs().map(ToString::to_string).collect();
                Error::invalid_input(format!(
                    "the plan reads {spec}, which this process does not serve (it serves: {})",
                    if served.is_empty() {
                        "nothing".to_string()
                    } else {
                        served.join(", ")
                    }
                ))
            })
    }

    /// The lake table of `table` in `spec`'s source, able to read `snapshot_id`.
    pub(crate) fn lake(
        &self,
        spec: &SourceSpec,
        table: &FlussTable,
        snapshot_id: i64,
    ) -> Result<Arc<dyn LakeTable>> {
        let key = (spec.clone(), table.table_id(), snapshot_id);
        if let Some(lake) = self.kept_lake(&key) {
            return Ok(lake);
        }
        let source = self.source(spec)?;
        let opened_table = table.clone();
        let lake = self.block_on(async move {
            let location = source.lake_location(&opened_table).await?;
            crate::lake::open(&location, &opened_table).await
        })??;
        let lake = lake.ok_or_else(|| {
            Error::not_found("the plan reads a lake snapshot of a table that has no lake table")
                .with_context("table", table.path.to_string())
                .with_context("snapshot", snapshot_id)
        })?;
        if let Ok(mut lakes) = self.lakes.lock() {
            if lakes.len() >= KEPT_LAKES {
                lakes.pop_front();
            }
            lakes.push_back((key, lake.clone()));
        }
        Ok(lake)
    }

    fn kept_lake(&self, key: &LakeKey) -> Option<Arc<dyn LakeTable>> {
        let lakes = self.lakes.lock().ok()?;
        lakes.iter().find(|(k, _)| k == key).map(|(_, l)| l.clone())
    }

    /// Runs `future` on the opener's runtime and waits for it (from synchronous
    /// code, on any thread).
    fn block_on<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T> {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| Error::internal("the lake opener's runtime is gone"))?;
        let (done, answer) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let _ = done.send(future.await);
        });
        answer
            .recv()
            .map_err(|_| Error::internal("opening a lake table was abandoned"))
    }
}
