//! The shell's log: the library's `tracing` events (I/O, retries, planning and
//! tiering decisions, with timings) on stderr or in a file. Warnings show by default;
//! `-v` adds info, `-vv` debug, `-vvv` trace, and `RUST_LOG` (an `EnvFilter`, e.g.
//! `fluss_datafusion=debug`) overrides both. No event carries a credential: the
//! library logs names, offsets, counts and timings, never options or SQL text.

use std::path::Path;
use std::sync::Mutex;

use fluss_datafusion::error::{Error, Result};
use tracing_subscriber::EnvFilter;

/// Installs the process's log subscriber: `verbose` counts `-v`s, `file` sends the
/// log there (appended) instead of stderr.
pub fn init(verbose: u8, file: Option<&Path>) -> Result<()> {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(spec.trim())
            .map_err(|e| Error::invalid_input(format!("RUST_LOG is not a log filter: {e}")))?,
        _ => EnvFilter::new(format!("warn,fluss_datafusion={level},fluss_sql={level}")),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true);
    let installed = match file {
        Some(path) => {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    Error::invalid_input(format!("cannot open the log file {}", path.display()))
                        .with_source(e)
                })?;
            builder
                .with_ansi(false)
                .with_writer(Mutex::new(log))
                .try_init()
        }
        None => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .try_init(),
    };
    installed.map_err(|e| Error::internal(format!("cannot install the log: {e}")))
}
