//! A time limit for a long test: a test that hangs stops the test process, naming
//! itself, instead of holding CI until its own limit cuts the log short.
//!
//! A hang with every thread parked (a lost wake-up) never fails a test by itself,
//! and `cargo test` then prints only "has been running for over 60 seconds".

use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::time::Duration;

/// Stops the process unless dropped within its limit after [`Watchdog::arm`]:
/// dropping it drops the sender its thread waits on, which ends that wait.
#[derive(Debug)]
pub struct Watchdog {
    _disarm: Option<Sender<()>>,
}

impl Watchdog {
    /// Starts the clock for `what`: if this guard is still alive after `limit`, the
    /// process prints why and exits with a failure.
    pub fn arm(what: impl Into<String>, limit: Duration) -> Self {
        let what = what.into();
        let (disarm, disarmed) = channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = disarmed.recv_timeout(limit) {
                    eprintln!(
                        "watchdog: {what} has run for more than {limit:?}, so it is taken \
                         to hang; stopping the test process"
                    );
                    std::process::exit(101);
                }
            });
        // without a thread there is no limit, and the test runs as it would anyway
        Self {
            _disarm: spawned.ok().map(|_| disarm),
        }
    }
}
