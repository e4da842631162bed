//! One writer per store: an exclusive lock every write statement holds while it runs.
//!
//! Local roots take an advisory `flock` on `<root>/writer.lock`; object-store roots
//! create the object `writer.lock` only if it is absent. A second writer waits up to
//! a timeout, then fails naming the holder ("store is locked by pid N"). Readers never
//! take the lock: every file they read is replaced atomically or only appended to.
//!
//! The lock file also counts write statements (its `generation`), so a writer that
//! kept state between statements (open segments, key-value state) learns whether
//! another process wrote in between and must reload it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};

/// Name of the lock file under the store root.
pub const WRITER_LOCK_FILE: &str = "writer.lock";

/// How often a waiting writer looks again.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

#[derive(Debug, Default, Serialize, Deserialize)]
struct LockContent {
    pid: u32,
    #[serde(default)]
    host: String,
    #[serde(default)]
    generation: u64,
}

/// The held writer lock; released when dropped.
#[derive(Debug)]
pub struct WriterLock {
    held: Held,
    /// The write-statement count found when the lock was taken (`None` where it is
    /// not kept: object stores).
    pub previous_generation: Option<u64>,
    /// The count this holder wrote (its own statement).
    pub generation: u64,
}

#[derive(Debug)]
enum Held {
    File(#[allow(dead_code)] File),
    Object(Arc<dyn ObjectStore>, ObjectPath),
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        if let Held::Object(store, path) = &self.held {
            let (store, path) = (store.clone(), path.clone());
            // Best effort: a lock object left behind is named in the next error.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = store.delete(&path).await;
                });
            }
        }
        // A file lock is released when the file closes.
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn locked_error(content: &LockContent, waited: Duration) -> Error {
    let host = if content.host.is_empty() {
        String::new()
    } else {
        format!(" on {}", content.host)
    };
    Error::new(
        ErrorKind::Busy,
        format!(
            "store is locked by pid {}{host} (another writer); waited {:.1} s",
            content.pid,
            waited.as_secs_f64()
        ),
    )
}

/// Takes the lock file at `path`, waiting up to `timeout`.
pub(super) async fn lock_file(path: &std::path::Path, timeout: Duration) -> Result<WriterLock> {
    let io = |what: &'static str| {
        move |e: std::io::Error| {
            Error::from(e)
                .with_context("op", what)
                .with_context("file", path.display())
        }
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io("open the writer lock"))?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                if started.elapsed() >= timeout {
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    let content: LockContent = serde_json::from_str(&text).unwrap_or_default();
                    return Err(locked_error(&content, started.elapsed())
                        .with_context("file", path.display()));
                }
                tokio::time::sleep(POLL_INTERVAL).await;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io("lock")(e)),
        }
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(io("read the writer lock"))?;
    let previous: LockContent = serde_json::from_str(&text).unwrap_or_default();
    let content = LockContent {
        pid: std::process::id(),
        host: host_name(),
        generation: previous.generation + 1,
    };
    let bytes = serde_json::to_vec(&content)?;
    file.set_len(0).map_err(io("write the writer lock"))?;
    file.rewind().map_err(io("write the writer lock"))?;
    file.write_all(&bytes)
        .map_err(io("write the writer lock"))?;
    Ok(WriterLock {
        held: Held::File(file),
        previous_generation: Some(previous.generation),
        generation: content.generation,
    })
}

/// Creates the lock object at `path` in `store`, waiting up to `timeout`.
pub(super) async fn lock_object(
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    timeout: Duration,
) -> Result<WriterLock> {
    let content = LockContent {
        pid: std::process::id(),
        host: host_name(),
        generation: 0,
    };
    let bytes = serde_json::to_vec(&content)?;
    let started = Instant::now();
    loop {
        let options = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match store
            .put_opts(&path, PutPayload::from(bytes.clone()), options)
            .await
        {
            Ok(_) => {
                return Ok(WriterLock {
                    held: Held::Object(store, path),
                    previous_generation: None,
                    generation: 0,
                });
            }
            Err(object_store::Error::AlreadyExists { .. }) => {
                if started.elapsed() >= timeout {
                    let holder = match store.get(&path).await {
                        Ok(r) => r.bytes().await.ok(),
                        Err(_) => None,
                    };
                    let holder: LockContent = holder
                        .and_then(|b| serde_json::from_slice(&b).ok())
                        .unwrap_or_default();
                    return Err(locked_error(&holder, started.elapsed())
                        .with_context("file", &path)
                        .with_context("hint", "delete the lock object if that writer is gone"));
                }
                tokio::time::sleep(POLL_INTERVAL).await;
            }
            Err(e) => {
                return Err(Error::from(e).with_context("file", &path));
            }
        }
    }
}
