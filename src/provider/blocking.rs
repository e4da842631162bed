//! Running the async source API from DataFusion's synchronous catalog methods
//! (`CatalogProvider::schema_names`, `SchemaProvider::table_names`, ...).

use std::future::Future;

use crate::error::{Error, Result};

/// Runs `future` to completion on a private current-thread runtime in a scoped
/// thread, so it works whether or not the caller is inside a tokio runtime.
///
/// On a worker of a multi-thread runtime the wait is announced with
/// [`tokio::task::block_in_place`]: the worker's queue, including the task it woke
/// last (its LIFO slot, which other workers cannot steal), moves to another thread.
/// Without that, a source whose answer needs a task of the caller's own runtime (a
/// server in the same process, as in the tests) could wait on a task stuck behind
/// the blocked worker.
pub fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let run = || {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| Error::internal("cannot start a runtime").with_source(e))?;
                    Ok(runtime.block_on(future))
                })
                .join()
                .map_err(|_| Error::internal("catalog lookup panicked"))?
        })
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(run)
        }
        _ => run(),
    }
}
