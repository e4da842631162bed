//! Running statements so that Ctrl-C stops them, and handing their rows to the
//! shell's thread as they come.
//!
//! A statement runs as a task on the runtime, never on the shell's own thread: the
//! shell waits for its rows with Ctrl-C in view however busy the task is (an
//! aggregate draining a nested-loop join never returns `Pending`, so a signal
//! awaited beside it in one future would never be seen). Ctrl-C aborts the task,
//! which drops the statement's future and so its scans (a write stops before its
//! commit, or is recovered as after a crash). The library's sessions put a
//! `CooperativeExec` above every join, so the aborted query's threads reach a
//! yield point, and stop, within a few batches.
//! The shell waits for that before it prompts again; a second Ctrl-C within
//! [`DOUBLE_CTRL_C`] ends the process with status 130, as an interrupted psql does
//! ([`watch_interrupts`] sees every Ctrl-C, whenever it comes, and the prompt asks
//! [`second_ctrl_c`] for one it reads itself).

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use fluss_datafusion::error::{Error, ErrorKind, Result};
use fluss_datafusion::sql::{FlussSession, StatementOutput, StatementResult};
use futures::StreamExt;
use tokio::runtime::Runtime;
use tokio::sync::mpsc::{Receiver, Sender};
use tokio::task::JoinHandle;

/// Two Ctrl-C this close together end the shell.
pub const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);

/// The exit status of a shell ended by Ctrl-C (128 + SIGINT, as psql's).
pub const INTERRUPTED_STATUS: u8 = 130;

/// Batches on their way from a statement's task to the printer: the task waits
/// while the printer (or the pipe behind it) is slower.
const BATCHES_IN_FLIGHT: usize = 2;

/// When the last Ctrl-C came while a statement ran (at the prompt the line editor
/// reads Ctrl-C as a key, and no signal is raised).
static LAST_INTERRUPT: Mutex<Option<Instant>> = Mutex::new(None);

/// Whether a Ctrl-C now is the second within [`DOUBLE_CTRL_C`] of one that came
/// while a statement ran.
pub fn second_ctrl_c() -> bool {
    LAST_INTERRUPT
        .lock()
        .ok()
        .and_then(|last| *last)
        .is_some_and(|at| at.elapsed() <= DOUBLE_CTRL_C)
}

/// Watches for Ctrl-C for as long as `runtime` runs (an interactive shell): the
/// second within [`DOUBLE_CTRL_C`] ends the process, wherever the shell is then
/// (waiting for rows, for an aborted query to stop, or between the two).
pub fn watch_interrupts(runtime: &Runtime) {
    runtime.spawn(async {
        while tokio::signal::ctrl_c().await.is_ok() {
            if second_ctrl_c() {
                exit_interrupted();
            }
            if let Ok(mut last) = LAST_INTERRUPT.lock() {
                *last = Some(Instant::now());
            }
        }
    });
}

/// Ends the process as a shell interrupted twice: what was printed is flushed, and
/// the history file holds every line already (it is appended as lines are run).
pub fn exit_interrupted() -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    eprintln!();
    std::process::exit(i32::from(INTERRUPTED_STATUS))
}

/// What a statement's task hands the shell.
pub enum Produced {
    /// A statement that ran to its end.
    Done(StatementResult),
    /// A query's rows follow, of this schema.
    Rows {
        /// The rows' schema.
        schema: SchemaRef,
        /// Something the user should know about the query.
        notice: Option<String>,
    },
    /// The next batch of rows.
    Batch(RecordBatch),
    /// The last batch came.
    End,
}

/// Completes on Ctrl-C. Kept across waits: once polled it is registered, so a
/// Ctrl-C between two waits (while rows print) is not lost.
type Interrupt = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

fn interrupt() -> Interrupt {
    Box::pin(tokio::signal::ctrl_c())
}

/// A statement running as a task on the runtime: aborted when dropped, so that
/// rows nobody reads stop being made.
pub struct Running {
    task: JoinHandle<()>,
    items: Receiver<Result<Produced>>,
    /// Awaited in an interactive shell; elsewhere SIGINT ends the process.
    interrupt: Option<Interrupt>,
}

impl Running {
    /// Starts `sql` on `runtime`.
    pub fn start(runtime: &Runtime, session: FlussSession, sql: String, interactive: bool) -> Self {
        let (sender, items) = tokio::sync::mpsc::channel(BATCHES_IN_FLIGHT);
        let task = runtime.spawn(produce(session, sql, sender));
        Self {
            task,
            items,
            interrupt: interactive.then(interrupt),
        }
    }

    /// The statement's next item, with a spinner on stderr while it takes more than
    /// a second when `spinner`. A Ctrl-C stops the statement and fails `Cancelled`.
    pub fn next(&mut self, runtime: &Runtime, spinner: bool) -> Result<Produced> {
        let (items, task) = (&mut self.items, &mut self.task);
        let received = wait(runtime, task, items.recv(), &mut self.interrupt, spinner)?;
        match received {
            Some(item) => item,
            // the task ended without a word: it panicked (the hook printed why)
            None => Err(Error::internal("the statement stopped without an answer")),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Runs `future` as a task on `runtime` and waits for its outcome, stopping it on
/// Ctrl-C as a statement is stopped (interactive shells).
pub fn run_task<T: Send + 'static>(
    runtime: &Runtime,
    future: impl Future<Output = Result<T>> + Send + 'static,
    interactive: bool,
    spinner: bool,
) -> Result<T> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let mut task = runtime.spawn(async move {
        let _ = sender.send(future.await);
    });
    let mut interrupt = interactive.then(interrupt);
    let outcome = wait(runtime, &mut task, receiver, &mut interrupt, spinner);
    task.abort();
    match outcome? {
        Ok(result) => result,
        Err(_) => Err(Error::internal("the task stopped without an answer")),
    }
}

/// Waits on the shell's thread for `wanted` while `task` runs on `runtime`. When
/// `interrupt` (an interactive shell) completes first, `task` is aborted and waited
/// for until it has stopped (a second Ctrl-C ends the process), and the wait fails
/// `Cancelled`.
fn wait<T, R>(
    runtime: &Runtime,
    task: &mut JoinHandle<R>,
    wanted: impl Future<Output = T>,
    interrupt: &mut Option<Interrupt>,
    spinner: bool,
) -> Result<T> {
    let spinner = spinner.then(Spinner::start);
    let outcome = runtime.block_on(async {
        let Some(interrupted) = interrupt.as_mut() else {
            return Some(wanted.await);
        };
        tokio::select! {
            value = wanted => Some(value),
            _ = interrupted => None,
        }
    });
    drop(spinner);
    match outcome {
        Some(value) => Ok(value),
        None => {
            // a completed listener is not polled again
            *interrupt = None;
            stop(runtime, task);
            Err(Error::new(
                ErrorKind::Cancelled,
                "statement cancelled (Ctrl-C; twice within 2s quits)",
            ))
        }
    }
}

/// Aborts `task` and waits until it has stopped (a second Ctrl-C meanwhile ends the
/// process: [`watch_interrupts`]).
fn stop<R>(runtime: &Runtime, task: &mut JoinHandle<R>) {
    task.abort();
    let _ = runtime.block_on(task);
}

/// Runs `sql` and sends what it produces to `items`, a query's rows batch by batch
/// as the receiver takes them; stops when the receiver is gone.
async fn produce(session: FlussSession, sql: String, items: Sender<Result<Produced>>) {
    let output = match session.execute_statement_stream(&sql).await {
        Ok(output) => output,
        Err(e) => {
            let _ = items.send(Err(e)).await;
            return;
        }
    };
    let (mut stream, notice) = match output {
        StatementOutput::Done(result) => {
            let _ = items.send(Ok(Produced::Done(result))).await;
            return;
        }
        StatementOutput::Rows { stream, notice } => (stream, notice),
    };
    let schema = stream.schema();
    if items
        .send(Ok(Produced::Rows { schema, notice }))
        .await
        .is_err()
    {
        return;
    }
    while let Some(batch) = stream.next().await {
        let failed = batch.is_err();
        let item = batch.map(Produced::Batch).map_err(Error::from);
        if items.send(item).await.is_err() || failed {
            return;
        }
    }
    let _ = items.send(Ok(Produced::End)).await;
}

/// A spinner on stderr, drawn once a statement has run for a second, until dropped.
struct Spinner {
    stop: mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    fn start() -> Self {
        let (stop, wait) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || spin(wait));
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Draws the spinner until told to stop.
fn spin(stop: mpsc::Receiver<()>) {
    if stop.recv_timeout(Duration::from_secs(1)).is_ok() {
        return;
    }
    let start = Instant::now() - Duration::from_secs(1);
    let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let mut i = 0;
    loop {
        eprint!(
            "\r{} running... {:.1}s ",
            frames[i % frames.len()],
            start.elapsed().as_secs_f64()
        );
        i += 1;
        match stop.recv_timeout(Duration::from_millis(100)) {
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            _ => break,
        }
    }
    eprint!("\r\x1b[2K");
}
