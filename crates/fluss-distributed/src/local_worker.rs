//! [`LocalWorker`]: a worker served in this process, for tests, examples and
//! embedders that run their workers beside the coordinator.

use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use fluss_datafusion::distributed::PlanSources;
use fluss_datafusion::{Error, FlussSource, Result};
use url::Url;

/// A worker served on this process's tokio runtime on a free loopback port, reading
/// `source` through its own [`PlanSources`] (its own caches and lake tables, as a
/// `fluss-worker` process has); it stops when dropped.
#[derive(Debug)]
pub struct LocalWorker {
    url: Url,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl LocalWorker {
    /// Starts a worker serving plans of `source` (from within a tokio runtime).
    pub async fn start(source: Arc<dyn FlussSource>) -> Result<Self> {
        let sources = Arc::new(PlanSources::new([source])?);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| Error::internal("cannot bind a local worker").with_source(e))?;
        let address = listener
            .local_addr()
            .map_err(|e| Error::internal("a local worker has no address").with_source(e))?;
        let url = Url::parse(&format!("http://{address}"))
            .map_err(|e| Error::internal("a local worker's address").with_source(e))?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = crate::worker(sources, Arc::new(RuntimeEnv::default()));
        tokio::spawn(crate::serve(worker, listener, async move {
            let _ = stopped.await;
        }));
        Ok(Self {
            url,
            stop: Some(stop),
        })
    }

    /// Where a coordinator reaches it (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &Url {
        &self.url
    }
}

impl Drop for LocalWorker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
