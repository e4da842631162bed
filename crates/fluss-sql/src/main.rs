//! `fluss-sql`: an interactive SQL shell (and script runner) over a LocalStore or a
//! live Fluss cluster, with union read of Fluss tables through DataFusion.
//!
//! ```text
//! fluss-sql --demo                                  # demo dataset + shell
//! fluss-sql --store ./data -c "SELECT ..." --format csv
//! fluss-sql -f script.sql -q
//! fluss-sql --bootstrap-servers host:9123 --lake-option s3.endpoint=http://...
//! ```

/// mimalloc, as datafusion-cli: glibc malloc's cost shows in DataFusion's many small
/// allocations and in zstd's per-batch decompression contexts.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod complete;
mod demo;
mod logging;
mod print;
mod running;

use clap::Parser;
use complete::ShellHelper;
use demo::{DEMO_DATABASE, SUGGESTED_QUERIES, create_demo};
use fluss_datafusion::distributed::PlanSources;
use fluss_datafusion::error::{Error, Result};
use fluss_datafusion::source::{
    ClusterOptions, ClusterSource, FlussSource, LocalStore, LocalStoreOptions,
};
use fluss_datafusion::sql::{
    FlussSession, SessionOptions, describe_table, is_complete, list_tables, one_line,
    parse_object_name, split_statements,
};
use print::{PrintFormat, Printed, ResultPrinter, Wanted};
use running::{Produced, Running, run_task};
use rustyline::Editor;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use tokio::runtime::Runtime;

/// Command-line options.
#[derive(Debug, Parser)]
#[command(
    name = "fluss-sql",
    version,
    about = "SQL shell for Apache Fluss tables: union read of the lake snapshot and the log tail"
)]
struct Args {
    /// Run a command (SQL statements or a \meta-command) and exit; repeatable.
    #[arg(short = 'c', long = "command")]
    command: Vec<String>,
    /// Run the statements of a file at start-up, before anything else (repeatable);
    /// an interactive shell runs ~/.fluss-sqlrc when there is one and no -r is given.
    #[arg(short = 'r', long = "rc")]
    rc: Vec<PathBuf>,
    /// Run the statements of a file and exit; repeatable.
    #[arg(short = 'f', long = "file")]
    file: Vec<PathBuf>,
    /// Output format. Rows print as they come, in every format; the table sizes its
    /// columns from its first 1,000 rows and cuts a wider later cell to fit (ending
    /// in …). JSON writes NULL as null and decimals as exact numbers with every digit
    /// (1.50), as DuckDB does: read them with a decimal-aware parser.
    #[arg(long, default_value = "table", value_parser = parse_format)]
    format: PrintFormat,
    /// Rows shown by the table and expanded formats: a number or `inf` (default 40
    /// interactive, inf otherwise). Reading stops past them: the rest is not counted.
    #[arg(long, value_parser = parse_maxrows)]
    maxrows: Option<MaxRows>,
    /// No banner, no row counts or timings.
    #[arg(short, long)]
    quiet: bool,
    /// LocalStore root: a directory or an object-store URL (made a store only by
    /// --create or --demo).
    #[arg(long, default_value = "./fluss-data")]
    store: String,
    /// Create the store and the database when missing.
    #[arg(long)]
    create: bool,
    /// Database used for unqualified names: an existing one, unless --create [default: fluss].
    #[arg(short = 'd', long)]
    database: Option<String>,
    /// Memory limit of the query engine, e.g. 512m, 2g.
    #[arg(long, value_parser = fluss_distributed::parse_size)]
    memory_limit: Option<usize>,
    /// Number of partitions queries are planned with (default: cores).
    #[arg(long)]
    target_partitions: Option<usize>,
    /// Create a TPC-H-shaped demo dataset in the store (once) before running.
    #[arg(long)]
    demo: bool,
    /// Size of the demo dataset (1 = 15,000 orders, 1,500 customers) [default: 1].
    #[arg(long)]
    demo_scale: Option<f64>,
    /// Lake format of the demo's `orders` table: paimon or iceberg.
    #[arg(long, default_value = "paimon")]
    demo_orders_lake: String,
    /// Query a live Fluss cluster (`host:port[,host:port]`) instead of a LocalStore.
    #[arg(long)]
    bootstrap_servers: Option<String>,
    /// SASL/PLAIN user for the cluster (or `FLUSS_SASL_USERNAME`).
    #[arg(long)]
    sasl_username: Option<String>,
    /// SASL/PLAIN password (better: `FLUSS_SASL_PASSWORD`, which no process list shows).
    #[arg(long)]
    sasl_password: Option<String>,
    /// A lake catalog or storage option for every table, `key=value` (repeatable),
    /// e.g. `s3.endpoint=http://127.0.0.1:9000`.
    #[arg(long = "lake-option", value_parser = fluss_distributed::parse_key_value)]
    lake_option: Vec<(String, String)>,
    /// A Fluss client option for writes to a cluster, `key=value` (repeatable), by
    /// Fluss's names, e.g. `client.writer.acks=all`, `client.writer.batch-size=2mb`.
    #[arg(long = "client-option", value_parser = fluss_distributed::parse_key_value)]
    client_option: Vec<(String, String)>,
    /// More log on stderr: -v info, -vv debug, -vvv trace (warnings always; `RUST_LOG`,
    /// e.g. `fluss_datafusion=debug`, overrides), and errors with their backtrace
    /// where `RUST_BACKTRACE` captured one. Never credentials.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    verbose: u8,
    /// Write the log to this file (appended) instead of stderr.
    #[arg(long)]
    log_file: Option<PathBuf>,
    /// Run queries distributed over `fluss-worker`s (`host:port,host:port`), each
    /// started with the same source (`--store` or `--bootstrap-servers`); EXPLAIN
    /// shows the stages and their tasks. Every address must answer at start-up.
    /// With one worker queries run in the shell (a stage is split over two or more).
    #[arg(long)]
    workers: Option<String>,
    /// Bytes a distributed scan's task reads, e.g. 64m (with --workers): one task
    /// per this many bytes, at most one per bucket or split and per worker.
    #[arg(long, value_parser = fluss_distributed::parse_size, default_value = "128m")]
    worker_task_bytes: usize,
}

/// The cluster options of the command line and the `FLUSS_SASL_*` environment.
fn cluster_options(args: &Args, bootstrap_servers: &str) -> ClusterOptions {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    ClusterOptions {
        bootstrap_servers: bootstrap_servers.to_string(),
        sasl_username: args
            .sasl_username
            .clone()
            .or_else(|| env("FLUSS_SASL_USERNAME")),
        sasl_password: args
            .sasl_password
            .clone()
            .or_else(|| env("FLUSS_SASL_PASSWORD")),
        lake_options: args.lake_option.iter().cloned().collect(),
        max_fetch_bytes: None,
        client_options: args.client_option.iter().cloned().collect(),
    }
}

/// A row limit for the table format.
#[derive(Debug, Clone, Copy)]
enum MaxRows {
    Limit(usize),
    Unlimited,
}

fn parse_format(s: &str) -> std::result::Result<PrintFormat, String> {
    s.parse().map_err(|e: Error| e.message().to_string())
}

fn parse_maxrows(s: &str) -> std::result::Result<MaxRows, String> {
    if s.eq_ignore_ascii_case("inf") || s.eq_ignore_ascii_case("all") {
        return Ok(MaxRows::Unlimited);
    }
    s.parse::<usize>()
        .map(MaxRows::Limit)
        .map_err(|_| format!("'{s}' is not a number or 'inf'"))
}

/// Bytes of output gathered before a write: rows go out a batch at a time, not a
/// line at a time.
const OUTPUT_BUFFER: usize = 64 << 10;

/// An output that remembers whether its reader went away (a closed pipe).
struct PipeAware<W: Write> {
    inner: W,
    closed: bool,
}

impl<W: Write> PipeAware<W> {
    fn noted<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &result {
            self.closed |= e.kind() == std::io::ErrorKind::BrokenPipe;
        }
        result
    }
}

impl<W: Write> Write for PipeAware<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf);
        self.noted(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let flushed = self.inner.flush();
        self.noted(flushed)
    }
}

/// Shell state that meta-commands change.
struct Shell {
    session: FlussSession,
    runtime: Runtime,
    format: PrintFormat,
    maxrows: Option<usize>,
    quiet: bool,
    timing: bool,
    spinner: bool,
    interactive: bool,
    /// Where results go (`\o file`); stdout when `None`.
    output: Option<std::fs::File>,
    /// `\x`: one block per row, whatever `format` is.
    expanded: bool,
}

const HELP: &str = r#"Meta-commands:
  \d              list databases and tables
  \d <table>      describe a table: columns, keys, buckets, lake snapshot, per-bucket lag
  \timing [on|off] query timing
  \x              expanded rows on/off (one line per column)
  \pset format F  output format: table, csv, tsv, json, ndjson, automatic, expanded
  \o [file]       results to a file, or back to stdout
  \i file         run the statements of a file
  \quiet [on|off] row counts and timings
  \h [function]   this help, or a function's signature and description
  \?              this help
  \q              quit
Ctrl-C cancels the running statement (the shell stays); at the prompt it clears the line.
A second Ctrl-C within 2 s of one that cancelled quits (exit status 130).
Rows print as they come; --maxrows stops the reading once that many are shown.
SQL (end statements with ';'):
  SELECT / EXPLAIN / COPY (SELECT ...) TO 'out.parquet' / SET / SHOW TABLES   (DataFusion)
  CREATE DATABASE [IF NOT EXISTS] db        DROP DATABASE [IF EXISTS] db [CASCADE]
  CREATE TABLE [IF NOT EXISTS] t (col type [NOT NULL], ..., PRIMARY KEY (..) NOT ENFORCED)
      [PARTITIONED BY (..)] WITH ('bucket.num' = '4', 'table.datalake.enabled' = 'true')
  DROP TABLE [IF EXISTS] t                  USE db        SHOW DATABASES
  INSERT INTO t [(cols)] VALUES ... | SELECT ...     (append to log tables, upsert into PK tables)
  UPDATE t SET c = ... [WHERE ...]                   (primary-key tables: a partial update)
  DELETE FROM t [WHERE ...]                          (primary-key tables)
  MERGE INTO t USING s ON ... WHEN [NOT] MATCHED ... (primary-key tables: one statement)
  CALL fluss.tier('db.t')                            (tier the log tail into the lake)
  ALTER TABLE t ADD|DROP [IF [NOT] EXISTS] PARTITION (k = 'v', ...)   SHOW PARTITIONS t
      ('table.auto-partition.enabled' = 'true' creates them ahead and expires them)
  SELECT * FROM t (union: lake + log tail)   SELECT * FROM "t$lake" (lake only)
  "t$log" (the tail not yet tiered), "t$changelog", "t$binlog" (every change),
  "t$lake$snapshots", "t$lake$files", "t$lake$options", ... (the lake's system tables)
Time travel:
  SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2026-01-01 10:00:00'  (or TIMESTAMP AS OF;
      the rows as they were then; times without a zone are UTC; epoch millis too)
  SELECT * FROM t VERSION AS OF 3       (the table as readable lake snapshot 3 recorded it)
  SELECT * FROM "t$lake" VERSION AS OF 3 / TIMESTAMP AS OF ...   (a lake snapshot alone)
  SELECT * FROM fluss_log_between('db.t', start [, end])  (rows committed in [start, end))
Primary-key tables on a cluster (Fluss 1.0):
  SELECT /*+ OPTIONS('client.scanner.kv.batch-strategy' = 'server-scan') */ * FROM t
      (the tablet servers' current rows, bucket by bucket; or SET fluss.kv_batch_strategy)"#;

impl Shell {
    /// Prints a result that is in memory, at most `--maxrows` rows of it when
    /// `limited` (never for EXPLAIN or `\d`, whose rows are one answer).
    fn print(
        &mut self,
        schema: &datafusion::arrow::datatypes::SchemaRef,
        batches: &[datafusion::arrow::array::RecordBatch],
        limited: bool,
    ) -> Result<Printed> {
        let mut printer = self.printer(schema.clone(), limited);
        self.write_with(|out| {
            for batch in batches {
                if printer.push(batch, out)? == Wanted::Enough {
                    break;
                }
            }
            Ok(())
        })?;
        self.write_with(|out| printer.finish(out))
    }

    /// A printer of rows of `schema` in the shell's format, limited to `--maxrows`
    /// when `limited`.
    fn printer(
        &self,
        schema: datafusion::arrow::datatypes::SchemaRef,
        limited: bool,
    ) -> ResultPrinter {
        let format = if self.expanded {
            PrintFormat::Expanded
        } else {
            self.format
        };
        ResultPrinter::new(format, schema, self.maxrows.filter(|_| limited))
    }

    /// Runs `write` on the output (`\o` file or stdout), buffered and flushed after.
    /// A closed pipe (`fluss-sql -c ... | head`) ends the shell quietly: the reader
    /// has what it wanted.
    fn write_with<T>(&mut self, write: impl FnOnce(&mut dyn Write) -> Result<T>) -> Result<T> {
        let stdout = std::io::stdout();
        let target: Box<dyn Write + '_> = match &mut self.output {
            Some(file) => Box::new(file),
            None => Box::new(stdout.lock()),
        };
        let mut out = PipeAware {
            inner: BufWriter::with_capacity(OUTPUT_BUFFER, target),
            closed: false,
        };
        let written = write(&mut out).and_then(|value| {
            out.flush()?;
            Ok(value)
        });
        if out.closed {
            std::process::exit(0);
        }
        written
    }

    /// Prints the row count (and time) on stderr: `N rows shown` when `--maxrows`
    /// stopped the reading, as the rest was not counted.
    fn summary(&self, printed: Option<Printed>, elapsed: Duration) {
        if self.quiet {
            return;
        }
        let what = match printed {
            Some(Printed { rows, cut: true }) => format!("{rows} rows shown"),
            Some(Printed { rows: 1, .. }) => "1 row".to_string(),
            Some(Printed { rows, .. }) => format!("{rows} rows"),
            None => "OK".to_string(),
        };
        if self.timing {
            eprintln!("{what} ({:.3}s)", elapsed.as_secs_f64());
        } else {
            eprintln!("{what}");
        }
    }

    /// Runs a script: lines starting with `\` (between statements) are meta-commands,
    /// everything else is SQL. Stops at the first error, which names `source` (a
    /// file) and the line its statement starts on.
    fn run_script(&mut self, text: &str, source: Option<&Path>) -> Result<bool> {
        let mut pending = String::new();
        let mut first_line = 0;
        let located = |e: Error, line: usize| match source {
            Some(path) => e
                .with_context("file", path.display())
                .with_context("line", line),
            None => e,
        };
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with('\\') && pending.trim().is_empty() {
                pending.clear();
                if !self.meta(line.trim()).map_err(|e| located(e, i + 1))? {
                    return Ok(false);
                }
            } else {
                if pending.trim().is_empty() {
                    first_line = i + 1;
                }
                pending.push_str(line);
                pending.push('\n');
                if is_complete(&pending) {
                    if !self.run(&pending).map_err(|e| located(e, first_line))? {
                        return Ok(false);
                    }
                    pending.clear();
                }
            }
        }
        if pending.trim().is_empty() {
            Ok(true)
        } else {
            self.run(&pending).map_err(|e| located(e, first_line))
        }
    }

    /// Runs the statements of the file at `path` (`-f`, `-r`, `\i`).
    fn run_file(&mut self, path: &Path) -> Result<bool> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::from(e).with_context("file", path.display()))?;
        self.run_script(&text, Some(path))
    }

    /// Runs one command: a `\meta-command` or one or more SQL statements.
    fn run(&mut self, input: &str) -> Result<bool> {
        let trimmed = input.trim();
        if trimmed.starts_with('\\') {
            return self.meta(trimmed);
        }
        if matches!(
            trimmed.trim_end_matches(';').to_ascii_lowercase().as_str(),
            "quit" | "exit"
        ) {
            return Ok(false);
        }
        for statement in split_statements(trimmed)? {
            self.statement(&statement)?;
        }
        Ok(true)
    }

    /// Runs one statement, printing a query's rows as they come.
    fn statement(&mut self, sql: &str) -> Result<()> {
        let start = Instant::now();
        let explain = sql
            .trim_start()
            .get(..7)
            .is_some_and(|w| w.eq_ignore_ascii_case("explain"));
        let session = self.session.clone();
        let mut running = Running::start(&self.runtime, session, sql.to_string(), self.interactive);
        let (schema, notice) = match running.next(&self.runtime, self.spinner)? {
            Produced::Done(result) => {
                if let Some(notice) = &result.notice {
                    eprintln!("Notice: {notice}");
                }
                let printed = match result.has_columns() {
                    true => Some(self.print(&result.schema, &result.batches, !explain)?),
                    false => None,
                };
                self.summary(printed, start.elapsed());
                return Ok(());
            }
            Produced::Rows { schema, notice } => (schema, notice),
            Produced::Batch(_) | Produced::End => {
                return Err(Error::internal(
                    "a statement's rows came before their schema",
                ));
            }
        };
        if let Some(notice) = &notice {
            eprintln!("Notice: {notice}");
        }
        let mut printer = self.printer(schema, !explain);
        // the spinner runs until the first rows come (an aggregate's may take long)
        let mut waiting_for_rows = self.spinner;
        loop {
            match running.next(&self.runtime, waiting_for_rows)? {
                Produced::Batch(batch) => {
                    waiting_for_rows = false;
                    if self.write_with(|out| printer.push(&batch, out))? == Wanted::Enough {
                        break;
                    }
                }
                Produced::End => break,
                Produced::Done(_) | Produced::Rows { .. } => {
                    return Err(Error::internal("a statement answered twice"));
                }
            }
        }
        // the rows not read are not made
        drop(running);
        let printed = self.write_with(|out| printer.finish(out))?;
        self.summary(Some(printed), start.elapsed());
        Ok(())
    }

    /// Runs `future` on the runtime, with the spinner and Ctrl-C of a statement.
    fn run_task<T: Send + 'static>(
        &self,
        future: impl std::future::Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        run_task(&self.runtime, future, self.interactive, self.spinner)
    }

    fn meta(&mut self, command: &str) -> Result<bool> {
        let body = command
            .trim_start_matches('\\')
            .trim()
            .trim_end_matches(';');
        let (name, arg) = match body.split_once(char::is_whitespace) {
            Some((n, a)) => (n, a.trim()),
            None => (body, ""),
        };
        match name {
            "q" | "quit" => return Ok(false),
            "?" | "help" => println!("{HELP}"),
            "h" if arg.is_empty() => println!("{HELP}"),
            "h" => {
                let session = self.session.clone();
                let pattern = arg.replace('\'', "''");
                let result = self.runtime.block_on(async move {
                    session
                        .execute_statement(&format!("SHOW FUNCTIONS LIKE '{pattern}'"))
                        .await
                })?;
                if result.num_rows() == 0 {
                    return Err(Error::not_found(format!(
                        "no function '{arg}' (SHOW FUNCTIONS lists them all)"
                    )));
                }
                // one block per signature, whatever the output format
                let expanded = std::mem::replace(&mut self.expanded, true);
                let printed = self.print(&result.schema, &result.batches, false);
                self.expanded = expanded;
                printed?;
            }
            "timing" => {
                self.timing = switch(arg, self.timing, "\\timing")?;
                eprintln!("Timing is {}.", if self.timing { "on" } else { "off" });
            }
            "quiet" => {
                self.quiet = switch(arg, self.quiet, "\\quiet")?;
                eprintln!("Quiet is {}.", if self.quiet { "on" } else { "off" });
            }
            "x" => {
                self.expanded = switch(arg, self.expanded, "\\x")?;
                eprintln!(
                    "Expanded display is {}.",
                    if self.expanded { "on" } else { "off" }
                );
            }
            "pset" => match arg.split_once(char::is_whitespace) {
                Some(("format", format)) => {
                    self.format = format.trim().parse()?;
                    eprintln!("Output format is {}.", self.format);
                }
                _ => {
                    return Err(Error::invalid_input(
                        "\\pset takes: format table|csv|tsv|json|ndjson|automatic|expanded",
                    ));
                }
            },
            "o" => {
                self.output = match arg {
                    "" => None,
                    path => Some(
                        std::fs::File::create(path)
                            .map_err(|e| Error::from(e).with_context("file", path))?,
                    ),
                };
            }
            "i" | "include" => {
                if arg.is_empty() {
                    return Err(Error::invalid_input("\\i takes a file name"));
                }
                return self.run_file(Path::new(arg));
            }
            "d" | "dt" | "l" if arg.is_empty() => {
                let session = self.session.clone();
                let batch = self
                    .runtime
                    .block_on(async move { list_tables(&session).await })?;
                self.print(&batch.schema(), std::slice::from_ref(&batch), false)?;
            }
            "d" => {
                let name = parse_object_name(arg)?;
                let session = self.session.clone();
                let sections = self
                    .runtime
                    .block_on(async move { describe_table(&session, &name).await })?;
                for (i, batch) in sections.iter().enumerate() {
                    if i > 0 && self.format == PrintFormat::Table {
                        println!();
                    }
                    self.print(&batch.schema(), std::slice::from_ref(batch), false)?;
                }
            }
            other => {
                return Err(Error::invalid_input(format!(
                    "unknown meta-command '\\{other}' (\\? for help)"
                )));
            }
        }
        Ok(true)
    }
}

fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLUSS_SQL_HISTORY") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".fluss_sql_history"))
}

/// What a script's outcome means for the process: go on (`None`), or exit with a code
/// (`\q` succeeds; an error is printed and fails).
fn exit_after(outcome: Result<bool>) -> Option<ExitCode> {
    match outcome {
        Ok(true) => None,
        Ok(false) => Some(ExitCode::SUCCESS),
        Err(e) => {
            print_error(&e);
            Some(ExitCode::FAILURE)
        }
    }
}

/// `~/.fluss-sqlrc`, when it exists.
fn default_rc() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("HOME")?).join(".fluss-sqlrc");
    path.is_file().then_some(path)
}

/// The new value of an on/off setting: `on`, `off`, or toggled when `arg` is empty.
fn switch(arg: &str, current: bool, command: &str) -> Result<bool> {
    match arg.to_ascii_lowercase().as_str() {
        "" => Ok(!current),
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(Error::invalid_input(format!(
            "{command} takes on or off, not '{other}'"
        ))),
    }
}

/// Whether errors are printed with their backtrace (`-v` given): an error is one
/// line otherwise, even where `RUST_BACKTRACE` is set for everything.
static SHOW_BACKTRACES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn print_error(e: &Error) {
    eprintln!("Error: {}", one_line(&e.to_string()));
    // where it was made, when RUST_BACKTRACE captured it and -v asks to see it
    if SHOW_BACKTRACES.load(std::sync::atomic::Ordering::Relaxed)
        && let Some(backtrace) = e.backtrace()
    {
        eprintln!("{backtrace}");
    }
}

fn interactive(shell: &mut Shell, demo: bool) -> Result<ExitCode> {
    if !shell.quiet {
        println!(
            "fluss-sql {} - store {}, database '{}'. Type \\? for help, \\q to quit.",
            env!("CARGO_PKG_VERSION"),
            shell.session.source().name(),
            shell.session.current_database()
        );
        if demo {
            println!("Try the demo (orders, customer, nation: lake snapshot + log tail):");
            for q in SUGGESTED_QUERIES {
                println!("  {q}");
            }
        }
    }
    let helper = ShellHelper {
        names: Arc::new(Mutex::new(None)),
        session: shell.session.clone(),
        handle: shell.runtime.handle().clone(),
    };
    let names = helper.names.clone();
    let mut editor: Editor<ShellHelper, DefaultHistory> = Editor::new()
        .map_err(|e| Error::internal("cannot start the line editor").with_source(e))?;
    editor.set_helper(Some(helper));
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    running::watch_interrupts(&shell.runtime);
    loop {
        let prompt = format!("fluss:{}> ", shell.session.current_database());
        match editor.readline(&prompt) {
            Ok(line) => {
                let input = line.trim();
                if input.is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(input);
                // appended now, so a shell that is killed keeps what was typed
                if let Some(path) = &history {
                    let _ = editor.append_history(path);
                }
                match shell.run(input) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => print_error(&e),
                }
                let lower = input.to_ascii_lowercase();
                if ["create", "drop", "use"].iter().any(|k| lower.contains(k))
                    && let Ok(mut n) = names.lock()
                {
                    *n = None;
                }
            }
            // a second Ctrl-C right after one that cancelled a statement quits
            Err(ReadlineError::Interrupted) if running::second_ctrl_c() => {
                return Ok(ExitCode::from(running::INTERRUPTED_STATUS));
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                return Err(Error::internal("line editor failed").with_source(e));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The error for a `--store` location that holds no store, suggesting the default
/// store folder inside it when that is one.
async fn not_a_store(location: &str) -> Error {
    let inside = format!("{}/fluss-data", location.trim_end_matches('/'));
    let hint = if LocalStore::is_store_at(&inside).await.unwrap_or(false) {
        format!("; did you mean --store {inside}?")
    } else {
        String::new()
    };
    Error::not_found(format!(
        "'{location}' is not a Fluss store (no databases under zk/metadata); --create makes \
         one there, --demo one with the demo dataset{hint}"
    ))
}

fn run(args: Args) -> Result<ExitCode> {
    // Large stacks, as query planning and expression evaluation recurse over
    // expression trees (only the pages used are committed).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(WORKER_STACK)
        .build()
        .map_err(|e| Error::internal("cannot start the runtime").with_source(e))?;
    // Nothing is created unless asked for: a mistyped --store or -d is an error, not
    // a new empty store or database.
    let create = args.create || args.demo;
    let named_database = args.database.clone();
    let task_bytes = args.worker_task_bytes;
    let workers = args
        .workers
        .as_deref()
        .map(fluss_distributed::parse_workers)
        .transpose()?;
    let mut options = SessionOptions {
        default_database: named_database
            .clone()
            .unwrap_or_else(|| DEMO_DATABASE.to_string()),
        create_database: create,
        target_partitions: args.target_partitions,
        memory_limit: args.memory_limit,
        // `CREATE EXTERNAL TABLE ... LOCATION 's3://…'` and `COPY ... TO 's3://…'`
        object_store_options: args.lake_option.iter().cloned().collect(),
        ..SessionOptions::default()
    };
    if args.bootstrap_servers.is_some() && args.demo {
        return Err(Error::invalid_input(
            "--demo creates its dataset in a LocalStore (--store), not on a cluster",
        ));
    }
    let store_location = args.store.clone();
    let store_options = LocalStoreOptions {
        lake_options: args.lake_option.iter().cloned().collect(),
        ..LocalStoreOptions::default()
    };
    let cluster = args
        .bootstrap_servers
        .as_deref()
        .map(|servers| cluster_options(&args, servers));
    let (store, session) = runtime.block_on(async move {
        let (store, source): (Option<Arc<LocalStore>>, Arc<dyn FlussSource>) = match cluster {
            Some(options) => (None, Arc::new(ClusterSource::connect(options).await?)),
            None => {
                if !create && !LocalStore::is_store_at(&store_location).await? {
                    return Err(not_a_store(&store_location).await);
                }
                let store =
                    Arc::new(LocalStore::open_with_options(&store_location, store_options).await?);
                (Some(store.clone()), store)
            }
        };
        if let (false, Some(name)) = (create, &named_database) {
            let databases = source.list_databases().await?;
            if !databases.contains(name) {
                return Err(Error::not_found(format!(
                    "database '{name}' does not exist in {} (its databases: {}); CREATE \
                     DATABASE {name} makes it, or --create",
                    source.name(),
                    databases.join(", ")
                )));
            }
        }
        if let Some(workers) = workers {
            fluss_distributed::check_workers(&workers).await?;
            if workers.len() == 1 {
                eprintln!(
                    "Notice: with one worker queries run in this shell: a stage is split \
                     over two workers or more"
                );
            }
            let sources = Arc::new(PlanSources::new([source.clone()])?);
            options.state_hook = Some(fluss_distributed::coordinator(
                workers,
                sources,
                fluss_distributed::TaskSizing {
                    bytes_per_task: task_bytes as u64,
                    max_tasks: None,
                },
            ));
            options.explain_renderer = Some(fluss_distributed::explain_renderer());
        }
        let session = FlussSession::with_options(source, options).await?;
        Ok::<_, Error>((store, session))
    })?;
    let scripted = !args.command.is_empty() || !args.file.is_empty();
    // `echo "SELECT 1;" | fluss-sql` runs stdin as a script, as psql does.
    let piped = !scripted && !std::io::stdin().is_terminal();
    let interactive_mode = !scripted && !piped;
    let maxrows = match args.maxrows {
        Some(MaxRows::Limit(n)) => Some(n),
        Some(MaxRows::Unlimited) => None,
        None if interactive_mode => Some(40),
        None => None,
    };
    let mut shell = Shell {
        session,
        runtime,
        format: args.format,
        maxrows,
        quiet: args.quiet,
        timing: true,
        spinner: std::io::stderr().is_terminal(),
        interactive: interactive_mode,
        output: None,
        expanded: false,
    };
    if let (true, Some(store)) = (args.demo, store) {
        let start = Instant::now();
        let session = shell.session.clone();
        let scale = args.demo_scale.unwrap_or(1.0);
        let orders_lake = args.demo_orders_lake.clone();
        let summary = shell
            .run_task(async move { create_demo(&session, &store, scale, &orders_lake).await })?;
        if !summary.created && args.demo_scale.is_some() {
            eprintln!(
                "Notice: the store has the demo dataset already, so --demo-scale is ignored \
                 (DROP DATABASE {DEMO_DATABASE} CASCADE, then --demo, makes it again)"
            );
        }
        if !args.quiet && summary.created {
            eprintln!(
                "Created the demo dataset: {} orders, {} customers, {} nations ({:.1}s)",
                summary.orders,
                summary.customers,
                summary.nations,
                start.elapsed().as_secs_f64()
            );
        }
    }
    // start-up files: -r, or ~/.fluss-sqlrc for an interactive shell
    let rc = match (&args.rc[..], shell.interactive) {
        ([], true) => default_rc().into_iter().collect(),
        (files, _) => files.to_vec(),
    };
    for file in &rc {
        if let Some(code) = exit_after(shell.run_file(file)) {
            return Ok(code);
        }
    }
    if !shell.interactive {
        for command in &args.command {
            if let Some(code) = exit_after(shell.run_script(command, None)) {
                return Ok(code);
            }
        }
        for file in &args.file {
            if let Some(code) = exit_after(shell.run_file(file)) {
                return Ok(code);
            }
        }
        if piped {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| Error::from(e).with_context("file", "<stdin>"))?;
            if let Some(code) = exit_after(shell.run_script(&text, None)) {
                return Ok(code);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    interactive(&mut shell, args.demo)
}

fn main() -> ExitCode {
    fluss_alloc::delay_mimalloc_purge(std::time::Duration::from_secs(1));
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        eprintln!("Error: internal error: {}", one_line(&message));
    }));
    let args = Args::parse();
    SHOW_BACKTRACES.store(args.verbose > 0, std::sync::atomic::Ordering::Relaxed);
    if let Err(e) = logging::init(args.verbose, args.log_file.as_deref()) {
        print_error(&e);
        return ExitCode::FAILURE;
    }
    // The shell itself runs on a thread with a large stack: statements are planned on it.
    let shell = std::thread::Builder::new()
        .name("fluss-sql".into())
        .stack_size(MAIN_STACK)
        .spawn(move || run(args));
    let outcome = match shell {
        Ok(handle) => handle
            .join()
            .unwrap_or_else(|_| Err(Error::internal("the shell thread panicked"))),
        Err(e) => Err(Error::internal("cannot start the shell thread").with_source(e)),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            print_error(&e);
            ExitCode::FAILURE
        }
    }
}

/// Stack of the thread the shell plans statements on.
const MAIN_STACK: usize = 256 << 20;

/// Stack of the runtime's worker threads (query execution).
const WORKER_STACK: usize = 64 << 20;
