//! Two datafusion-distributed workers in this process, for tests that check a read
//! distributed over them against the same read in one process (the full suite is
//! `crates/fluss-distributed/tests/`; here the fixtures of other test files reach it).

use std::sync::Arc;

use fluss_datafusion::FlussSource;
use fluss_datafusion::distributed::PlanSources;
use fluss_datafusion::sql::{FlussSession, SessionOptions};
use fluss_distributed::{LocalWorker, TaskSizing, coordinator, explain_renderer};

/// A session on `source` whose queries run on two in-process workers, every scan
/// split as far as it goes; the workers stop when it is dropped.
pub(super) struct Distributed {
    pub(super) session: FlussSession,
    _workers: Vec<LocalWorker>,
}

pub(super) async fn over_two_workers(source: Arc<dyn FlussSource>) -> Distributed {
    over_workers(source.clone(), vec![source.clone(), source]).await
}

/// As [`over_two_workers`], each worker reading through its own source (its own
/// connection to a cluster, as a worker process has).
pub(super) async fn over_workers(
    source: Arc<dyn FlussSource>,
    worker_sources: Vec<Arc<dyn FlussSource>>,
) -> Distributed {
    let mut workers = Vec::new();
    for worker_source in worker_sources {
        workers.push(LocalWorker::start(worker_source).await.unwrap());
    }
    let urls = workers.iter().map(|w| w.url().clone()).collect();
    let sizing = TaskSizing {
        bytes_per_task: 1,
        max_tasks: None,
    };
    let options = SessionOptions {
        create_database: false,
        state_hook: Some(coordinator(
            urls,
            Arc::new(PlanSources::new([source.clone()]).unwrap()),
            sizing,
        )),
        explain_renderer: Some(explain_renderer()),
        ..SessionOptions::default()
    };
    Distributed {
        session: FlussSession::with_options(source, options).await.unwrap(),
        _workers: workers,
    }
}
