//! Fault injection for crash tests: every durable step a write takes (write, rename,
//! fsync, truncate, delete) asks the injector first, and the k-th step fails, as a
//! crash at that instruction would leave the files. A failing write writes half its
//! bytes first (a torn write).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, ErrorKind, Result};

/// One durable step of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoStep {
    /// Bytes written to a file (a new file, an append).
    Write,
    /// A staging file renamed into place.
    Rename,
    /// `fsync` of a file or a directory.
    Sync,
    /// A file cut to a length.
    Truncate,
    /// A file or directory removed.
    Delete,
}

/// Counts steps and fails the `fail_at`-th one (1-based); 0 never fails.
#[derive(Debug, Default)]
pub struct FaultInjector {
    fail_at: AtomicUsize,
    steps: AtomicUsize,
    log: Mutex<Vec<(IoStep, String)>>,
}

impl FaultInjector {
    /// An injector failing step `fail_at` (0: none, only counting).
    pub fn failing_at(fail_at: usize) -> Self {
        Self {
            fail_at: AtomicUsize::new(fail_at),
            ..Default::default()
        }
    }

    /// Steps taken so far.
    pub fn steps(&self) -> usize {
        self.steps.load(Ordering::SeqCst)
    }

    /// The steps taken, in order (for test diagnostics).
    pub fn log(&self) -> Vec<(IoStep, String)> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Called before each step: fails the chosen one, and every later one (a crashed
    /// process takes no further steps).
    pub fn check(&self, step: IoStep, path: &str) -> Result<()> {
        let n = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
        if let Ok(mut log) = self.log.lock() {
            log.push((step, path.to_string()));
        }
        let fail_at = self.fail_at.load(Ordering::SeqCst);
        if fail_at != 0 && n >= fail_at {
            return Err(Error::new(
                ErrorKind::Io,
                format!("injected fault at step {n} ({step:?})"),
            )
            .with_context("file", path));
        }
        Ok(())
    }

    /// Whether the step about to be taken fails (a failing write is torn).
    pub fn will_fail(&self) -> bool {
        let fail_at = self.fail_at.load(Ordering::SeqCst);
        fail_at != 0 && self.steps() + 1 >= fail_at
    }
}
