//! Running the async source API from DataFusion's synchronous catalog methods
//! (`CatalogProvider::schema_names`, `SchemaProvider::table_names`, ...).

use std::future::Future;

use crate::error::{Error, Result};

/// Runs `future` to completion on a private current-thread runtime in a scoped
/// thread, so it works whether or not the caller is inside a tokio runtime.
pub fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
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
}
