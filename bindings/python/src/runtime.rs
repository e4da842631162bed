//! One Tokio runtime for the process, made again in a forked child.
//!
//! datafusion-ffi enters the runtime it is given only to execute plans and poll their
//! streams; `table()` and `scan()` are polled on datafusion-python's own runtime,
//! where this library's reactor (the cluster source's sockets, its timers) does not
//! exist. [`InRuntime`] enters ours around each poll of such a future.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use tokio::runtime::Handle;

/// The runtime of this process and the pid that made it.
static RUNTIME: Mutex<Option<(u32, Handle)>> = Mutex::new(None);

/// The process's runtime. A child forked after first use gets a new one: the
/// parent's worker threads do not exist in it, so the parent's runtime is left
/// alone (shutting it down would wait for those threads forever).
pub fn handle() -> Handle {
    let pid = std::process::id();
    let mut slot = RUNTIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((owner, handle)) = slot.as_ref()
        && *owner == pid
    {
        return handle.clone();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("fluss-datafusion")
        .build()
        .unwrap_or_else(|e| panic!("cannot start the Tokio runtime: {e}"));
    let handle = runtime.handle().clone();
    // It lives as long as the process (or, after a fork, is abandoned with it).
    std::mem::forget(runtime);
    *slot = Some((pid, handle.clone()));
    handle
}

/// Runs `future` to completion on the process's runtime (call it with the GIL
/// released: `py.detach`).
pub fn block_on<F: Future>(future: F) -> F::Output {
    handle().block_on(future)
}

/// A future polled inside the process's runtime, whatever runtime polls it.
pub struct InRuntime<F> {
    handle: Handle,
    inner: Pin<Box<F>>,
}

impl<F: Future> InRuntime<F> {
    /// `future`, to be polled inside the process's runtime.
    pub fn new(future: F) -> Self {
        Self {
            handle: handle(),
            inner: Box::pin(future),
        }
    }
}

impl<F: Future> Future for InRuntime<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let handle = self.handle.clone();
        let _entered = handle.enter();
        self.inner.as_mut().poll(cx)
    }
}
