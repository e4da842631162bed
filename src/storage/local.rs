//! Durable writes to local files, SQLite-style: a write is on disk when it returns.
//!
//! - a whole file is replaced by writing a staging file (`name#<uuid>`, which listings
//!   skip), fsyncing it, renaming it into place and fsyncing the directory;
//! - an append is fsynced (data) before it returns, and a new file's directory is
//!   fsynced so the file itself survives a crash;
//! - truncation and removal are fsynced likewise.
//!
//! Every step asks the [`FaultInjector`] first, so crash tests can stop a write at any
//! of them.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::faults::{FaultInjector, IoStep};
use crate::error::{Error, Result};

/// Where durable steps report to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Steps<'a> {
    pub faults: Option<&'a FaultInjector>,
    /// The path as the store names it (for errors).
    pub name: &'a str,
}

impl Steps<'_> {
    fn check(&self, step: IoStep) -> Result<()> {
        match self.faults {
            Some(f) => f.check(step, self.name),
            None => Ok(()),
        }
    }

    fn torn(&self) -> bool {
        self.faults.is_some_and(FaultInjector::will_fail)
    }

    fn io(&self, what: &'static str) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |e| {
            Error::from(e)
                .with_context("op", what)
                .with_context("file", self.name)
        }
    }
}

/// fsync of a directory, so the names it holds (a rename, a new file) are durable.
fn sync_dir(dir: &Path, steps: Steps<'_>) -> Result<()> {
    steps.check(IoStep::Sync)?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(steps.io("fsync directory"))
}

/// Creates `dir` and its missing ancestors, fsyncing the parent of each one created.
pub(super) fn create_dirs(dir: &Path, steps: Steps<'_>) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dirs(parent, steps)?;
    }
    steps.check(IoStep::Write)?;
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(steps.io("create directory")(e)),
    }
    match dir.parent() {
        Some(parent) => sync_dir(parent, steps),
        None => Ok(()),
    }
}

/// Replaces `path` with `bytes` atomically and durably.
pub(super) fn write_atomic(path: &Path, bytes: &[u8], steps: Steps<'_>) -> Result<()> {
    let dir = path.parent().ok_or_else(|| {
        Error::invalid_input("a file needs a directory").with_context("file", steps.name)
    })?;
    create_dirs(dir, steps)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let staging = dir.join(format!("{name}#{}", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let torn = steps.torn();
        steps.check(IoStep::Write).inspect_err(|_| {
            if torn {
                let _ = std::fs::write(&staging, &bytes[..bytes.len() / 2]);
            }
        })?;
        let mut file = File::create(&staging).map_err(steps.io("create"))?;
        file.write_all(bytes).map_err(steps.io("write"))?;
        steps.check(IoStep::Sync)?;
        file.sync_all().map_err(steps.io("fsync"))?;
        steps.check(IoStep::Rename)?;
        std::fs::rename(&staging, path).map_err(steps.io("rename"))
    })();
    if written.is_err() && steps.faults.is_none() {
        // A real failure leaves no staging file behind (an injected one plays a crash).
        let _ = std::fs::remove_file(&staging);
    }
    written?;
    sync_dir(dir, steps)
}

/// Appends `bytes` to `path` (created if missing) and fsyncs them.
pub(super) fn append(path: &Path, bytes: &[u8], steps: Steps<'_>) -> Result<()> {
    let dir = path.parent().ok_or_else(|| {
        Error::invalid_input("a file needs a directory").with_context("file", steps.name)
    })?;
    create_dirs(dir, steps)?;
    let created = !path.exists();
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(steps.io("open for append"))?;
    let torn = steps.torn();
    steps.check(IoStep::Write).inspect_err(|_| {
        if torn {
            let _ = file.write_all(&bytes[..bytes.len() / 2]);
        }
    })?;
    file.write_all(bytes).map_err(steps.io("append"))?;
    steps.check(IoStep::Sync)?;
    file.sync_data().map_err(steps.io("fsync"))?;
    if created {
        sync_dir(dir, steps)?;
    }
    Ok(())
}

/// Cuts `path` to `len` bytes, durably.
pub(super) fn truncate(path: &Path, len: u64, steps: Steps<'_>) -> Result<()> {
    steps.check(IoStep::Truncate)?;
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(steps.io("open for truncate"))?;
    file.set_len(len).map_err(steps.io("truncate"))?;
    steps.check(IoStep::Sync)?;
    file.sync_all().map_err(steps.io("fsync"))
}

/// Removes a file (missing is fine), durably.
pub(super) fn remove_file(path: &Path, steps: Steps<'_>) -> Result<()> {
    steps.check(IoStep::Delete)?;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(steps.io("remove")(e)),
    }
    match path.parent() {
        Some(dir) => sync_dir(dir, steps),
        None => Ok(()),
    }
}

/// Removes a directory tree (missing is fine), durably.
pub(super) fn remove_dir_all(path: &Path, steps: Steps<'_>) -> Result<()> {
    steps.check(IoStep::Delete)?;
    match std::fs::remove_dir_all(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(steps.io("remove directory")(e)),
    }
    match path.parent() {
        Some(dir) if dir.exists() => sync_dir(dir, steps),
        _ => Ok(()),
    }
}
