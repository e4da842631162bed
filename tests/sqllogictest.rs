//! Runs every `sql/*.slt` file through a [`FlussSession`] on a store of its own.
//!
//! Tests are data: each file builds the tables it reads with SQL (`CREATE TABLE`,
//! `INSERT`, `DELETE`, `CALL fluss.tier`), most by including the shared set-up files
//! of `sql/setup/` (each documents its table's expected contents), so adding a case
//! means adding a file. Only what SQL cannot express (hand-made segments, tables
//! other tools wrote) has a Rust fixture, in the other test files.
//!
//! Value rendering: `NULL` for nulls, `(empty)` for empty strings, floats with three
//! decimals, booleans `true`/`false`, everything else as Arrow displays it. Column
//! types: `I` integers, `R` floats and decimals, `T` everything else (checked).
//! Multi-line cells (EXPLAIN plans) become one row per line, indentation shown as
//! `-` (as DataFusion's own sqllogictest does). Occurrences of the store's temporary
//! root directory are replaced by `<root>`.
//!
//! Environment: `FLUSS_SLT_FILTER=<substring>[,<substring>…]` runs only the matching files;
//! `FLUSS_SLT_COMPLETE=1` rewrites each file's expected output with what the queries
//! return now (DataFusion's `--complete`): review the diff before committing it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Float16Type, Float32Type, Float64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use fluss_datafusion::Error;
use fluss_datafusion::source::{FlussSource, LocalStore, LocalStoreOptions};
use fluss_datafusion::sql::{FlussSession, SessionOptions};
use sqllogictest::{DBOutput, DefaultColumnType, Normalizer};

// ------------------------------------------------------------------ the AsyncDB

/// One sqllogictest connection: a session over the file's own store.
struct FlussDb {
    session: FlussSession,
    root: String,
}

/// Where a file's session reads from: the store itself, or the cluster source
/// against the Fluss RPC test server serving that store (writes go into the store,
/// and the server serves what they wrote).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Through {
    LocalStore,
    Cluster,
}

impl Through {
    fn label(self) -> &'static str {
        match self {
            Through::LocalStore => "local",
            Through::Cluster => "cluster",
        }
    }
}

impl FlussDb {
    async fn open(store: Arc<LocalStore>, root: String, through: Through) -> Result<Self, Error> {
        match through {
            Through::LocalStore => Self::new(store, root).await,
            Through::Cluster => {
                let source = fluss_test_support::mirror::MirroredSource::start(store).await?;
                Self::new(Arc::new(source), root).await
            }
        }
    }

    async fn new(store: Arc<dyn FlussSource>, root: String) -> Result<Self, Error> {
        // The files' tables live in `db` (created by `setup/databases.slt` too).
        Self::with_database(store, root, "db").await
    }

    async fn with_database(
        store: Arc<dyn FlussSource>,
        root: String,
        database: &str,
    ) -> Result<Self, Error> {
        // Fixed partitioning so EXPLAIN output does not depend on the machine's cores.
        let options = SessionOptions {
            target_partitions: Some(4),
            default_database: database.to_string(),
            ..Default::default()
        };
        let session = FlussSession::with_options(store, options).await?;
        Ok(Self { session, root })
    }

    /// Replaces the store's temporary root (also without its leading `/`, as
    /// DataFusion prints file paths) by `<root>`.
    fn hide_root(&self, text: String) -> String {
        text.replace(&self.root, "<root>")
            .replace(self.root.trim_start_matches('/'), "<root>")
    }
}

fn column_type(data_type: &DataType) -> DefaultColumnType {
    match data_type {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => DefaultColumnType::Integer,
        DataType::Float16
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal32(_, _)
        | DataType::Decimal64(_, _)
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _) => DefaultColumnType::FloatingPoint,
        _ => DefaultColumnType::Text,
    }
}

fn float_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        let s = format!("{v:.3}");
        // no "-0.000"
        if s == "-0.000" {
            "0.000".to_string()
        } else {
            s
        }
    }
}

fn cell_text(array: &ArrayRef, formatter: &ArrayFormatter, row: usize) -> String {
    if array.is_null(row) {
        return "NULL".to_string();
    }
    let text = match array.data_type() {
        DataType::Float16 => float_text(array.as_primitive::<Float16Type>().value(row).to_f64()),
        DataType::Float32 => float_text(array.as_primitive::<Float32Type>().value(row) as f64),
        DataType::Float64 => float_text(array.as_primitive::<Float64Type>().value(row)),
        _ => formatter.value(row).to_string(),
    };
    if text.is_empty() {
        "(empty)".to_string()
    } else {
        text
    }
}

/// Multi-line cells (plans) become one row per line; indentation is shown as `-`.
fn expand_row(row: Vec<String>, out: &mut Vec<Vec<String>>) {
    if !row.iter().any(|c| c.contains('\n')) {
        out.push(row);
        return;
    }
    let mut first = Vec::new();
    let mut extra = Vec::new();
    for cell in row {
        if cell.contains('\n') {
            for line in cell.lines() {
                let trimmed = line.trim_start_matches(' ');
                let indent = line.len() - trimmed.len();
                let line = format!("{}{}", "-".repeat(indent), trimmed.trim_end());
                if !line.is_empty() {
                    extra.push(vec![line]);
                }
            }
        } else {
            first.push(cell);
        }
    }
    out.push(first);
    out.extend(extra);
}

#[async_trait::async_trait]
impl sqllogictest::AsyncDB for FlussDb {
    type Error = Error;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<Self::ColumnType>, Self::Error> {
        let result = self.session.execute_statement(sql).await?;
        let schema = result.schema.clone();
        if schema.fields().is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = schema
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect();
        let options = FormatOptions::default().with_null("NULL");
        let mut rows = Vec::new();
        for batch in &result.batches {
            let formatters = batch
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
                .collect::<Result<Vec<_>, _>>()?;
            for row in 0..batch.num_rows() {
                let cells = batch
                    .columns()
                    .iter()
                    .zip(&formatters)
                    .map(|(c, f)| self.hide_root(cell_text(c, f, row)))
                    .collect();
                expand_row(cells, &mut rows);
            }
        }
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "fluss-datafusion"
    }

    async fn sleep(dur: std::time::Duration) {
        tokio::time::sleep(dur).await;
    }
}

/// Compares rows whole (cells joined, then whitespace-normalized), so rows of
/// different widths (expanded plans) compare naturally. `<slt:ignore>` keeps the
/// default fragment matching.
fn validator(normalizer: Normalizer, actual: &[Vec<String>], expected: &[String]) -> bool {
    if expected.iter().any(|l| l.contains("<slt:ignore>")) {
        return sqllogictest::default_validator(normalizer, actual, expected);
    }
    let actual: Vec<String> = actual.iter().map(|r| normalizer(&r.join(" "))).collect();
    let expected: Vec<String> = expected.iter().map(normalizer).collect();
    actual == expected
}

// ------------------------------------------------------------------ the runner

fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
    let filter = std::env::var("FLUSS_SLT_FILTER").ok();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .filter(|p| {
            filter
                .as_deref()
                .is_none_or(|f| f.split(',').any(|one| p.to_string_lossy().contains(one)))
        })
        .collect();
    files.sort();
    files
}

/// The lake formats every file runs on (the first is the one `FLUSS_SLT_COMPLETE`
/// rewrites expectations with).
const LAKE_FORMATS: [&str; 2] = ["paimon", "iceberg"];

/// Longest one file may run in [`sql_logic_tests`] (they take seconds).
const FILE_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Held by each of the two suites for its whole run, so they never run side by
/// side: with the real-Fluss suite's JVM beside it, the test-server suite has hung
/// on one file, all threads idle (about one run in five on this 2-core machine). The
/// same symptom in the real-Fluss differential run was iceberg 0.10.1's delete loading
/// losing a wake-up (now bypassed: `src/lake/iceberg/delete_reader.rs`), likely this
/// one's cause too; the suites stay apart until runs side by side show it gone.
static ONE_SUITE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_logic_tests() {
    let _alone = ONE_SUITE_AT_A_TIME.lock().await;
    let files = slt_files();
    assert!(!files.is_empty(), "no sql/*.slt files");
    let complete = std::env::var("FLUSS_SLT_COMPLETE").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    // Every lake case runs on both formats: the store's default lake format is the
    // parameter, and the format's name is a label (`skipif iceberg`, `onlyif paimon`)
    // for the few records whose output names the format.
    // Every file on both lake formats, through both sources; the format's and the
    // source's names are labels (`onlyif cluster`) for the few records whose output
    // depends on them.
    let runs = [Through::LocalStore, Through::Cluster]
        .into_iter()
        .flat_map(|t| LAKE_FORMATS.map(|f| (t, f)));
    for (through, format) in runs {
        for file in &files {
            // every file on a store of its own: the tables it builds are all it sees
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().to_str().unwrap().to_string();
            let options = LocalStoreOptions {
                datalake_format: format.to_string(),
                ..Default::default()
            };
            let store = Arc::new(LocalStore::open_with_options(&root, options).await.unwrap());
            let mut runner = sqllogictest::Runner::new(move || {
                let (store, root) = (store.clone(), root.clone());
                async move { FlussDb::open(store, root, through).await }
            });
            runner.add_label(format);
            runner.add_label(through.label());
            runner.with_validator(validator);
            runner.with_column_validator(sqllogictest::strict_column_validator);
            let name = format!(
                "{} [{format}, {}]",
                file.file_name().unwrap().to_string_lossy(),
                through.label()
            );
            if complete {
                if format != LAKE_FORMATS[0] || through != Through::LocalStore {
                    continue;
                }
                runner
                    .update_test_file(
                        file,
                        " ",
                        validator,
                        sqllogictest::default_normalizer,
                        sqllogictest::strict_column_validator,
                    )
                    .await
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                eprintln!("rewrote {name}");
                continue;
            }
            // a file takes seconds: one that hangs fails by name instead of stalling CI
            match tokio::time::timeout(FILE_TIME_LIMIT, runner.run_file_async(file)).await {
                Ok(Ok(())) => eprintln!("ok     {name}"),
                Ok(Err(e)) => {
                    eprintln!("FAILED {name}\n{}", e.display(false));
                    failures.push(format!("{name}: {}", e.display(false)));
                }
                Err(_) => {
                    eprintln!("FAILED {name}: not finished within {FILE_TIME_LIMIT:?}");
                    failures.push(format!("{name}: not finished within {FILE_TIME_LIMIT:?}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} sqllogictest files failed:\n\n{}",
        failures.len(),
        files.len() * LAKE_FORMATS.len() * 2,
        failures.join("\n\n")
    );
}

// ------------------------------------------------------------------ the real Fluss

/// The files that also run against a real Fluss cluster (`tests/real-fluss/`): the
/// union-read answers, which must not depend on who wrote and tiered the data. The
/// others are about this crate's own store or plans: EXPLAIN output (offsets, file
/// counts), `$lake` of the lake layout our tiering writes (Fluss 0.9.1 still writes
/// the legacy one), Iceberg-only files (the cluster tiers to one format), the
/// catalog of a store, and errors whose text our LocalStore writer words.
/// Records within these files that depend on the same things are marked
/// `skipif real`.
const REAL_FLUSS_FILES: &[&str] = &[
    "aggregates.slt",
    "joins.slt",
    "log_lake_and_tail.slt",
    "log_lake_only.slt",
    "log_tail_only.slt",
    "order_limit.slt",
    "partitions.slt",
    "pk_filters.slt",
    "pk_key_lookup.slt",
    "pk_lookup_join.slt",
    "pk_lake_only.slt",
    "pk_lake_runs.slt",
    "pk_partial_update.slt",
    "pk_tail_only.slt",
    "pk_updates_across_cut.slt",
    "upstream_regressions.slt",
];

/// `text` with the databases `db` and `empty_db` renamed to `<prefix>db` and
/// `<prefix>empty_db`: each file gets databases of its own on the shared cluster
/// (dropping a table does not drop its lake table in Fluss 0.9.1, so names are never
/// reused).
fn rename_databases(text: &str, prefix: &str) -> String {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    for c in text.chars().chain(std::iter::once('\n')) {
        if is_ident(c) {
            word.push(c);
            continue;
        }
        if word == "db" || word == "empty_db" {
            out.push_str(prefix);
        }
        out.push_str(&word);
        word.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// The files of [`REAL_FLUSS_FILES`] through the cluster source against a real Fluss
/// cluster whose tables were created by Flink's catalog, written by the Java client
/// and tiered by Fluss's tiering service. Same expected answers as everywhere else.
#[test]
fn sql_logic_tests_against_the_real_fluss() {
    let _alone = ONE_SUITE_AT_A_TIME.blocking_lock();
    use fluss_test_support::real_fluss::RealFluss;
    use fluss_test_support::real_source::RealClusterSource;
    use std::sync::Mutex;

    let format = "paimon";
    if !RealFluss::available(format) {
        return;
    }
    let files: Vec<PathBuf> = slt_files()
        .into_iter()
        .filter(|f| {
            REAL_FLUSS_FILES
                .iter()
                .any(|n| f.file_name().is_some_and(|x| x == *n))
        })
        .collect();
    if files.is_empty() {
        return;
    }
    let fluss = RealFluss::start(format, 1200).expect("the real-Fluss harness starts");
    let log = fluss.log_path();
    let root = fluss.work_dir().to_string_lossy().to_string();
    let harness = Arc::new(Mutex::new(fluss));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sql_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
    let copies = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (n, file) in files.iter().enumerate() {
        // the file and the set-up files it includes, with databases of its own
        let prefix = format!("slt{n}_");
        let dir = copies.path().join(&prefix);
        std::fs::create_dir_all(dir.join("setup")).unwrap();
        for entry in std::fs::read_dir(sql_dir.join("setup")).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(
                dir.join("setup").join(path.file_name().unwrap()),
                rename_databases(&text, &prefix),
            )
            .unwrap();
        }
        let copy = dir.join(file.file_name().unwrap());
        let text = std::fs::read_to_string(file).unwrap();
        std::fs::write(&copy, rename_databases(&text, &prefix)).unwrap();

        let (h, r, database) = (harness.clone(), root.clone(), format!("{prefix}db"));
        let mut runner = sqllogictest::Runner::new(move || {
            let (h, r, database) = (h.clone(), r.clone(), database.clone());
            async move {
                let source = RealClusterSource::connect(h).await?;
                FlussDb::with_database(Arc::new(source), r, &database).await
            }
        });
        runner.add_label(format);
        runner.add_label("real");
        runner.with_validator(validator);
        runner.with_column_validator(sqllogictest::strict_column_validator);
        let name = format!(
            "{} [{format}, real Fluss]",
            file.file_name().unwrap().to_string_lossy()
        );
        match runtime.block_on(runner.run_file_async(&copy)) {
            Ok(()) => eprintln!("ok     {name}"),
            Err(e) => {
                eprintln!("FAILED {name}\n{}", e.display(false));
                failures.push(format!("{name}: {}", e.display(false)));
            }
        }
        // the file's tables stop being tiered with every later file's
        let mut h = harness.lock().unwrap_or_else(|e| e.into_inner());
        for database in ["db", "empty_db"] {
            let _ = h.sql(&format!(
                "DROP DATABASE IF EXISTS `{prefix}{database}` CASCADE"
            ));
        }
    }
    harness.lock().unwrap_or_else(|e| e.into_inner()).shutdown();
    assert!(
        failures.is_empty(),
        "{} of {} sqllogictest files disagree on the real Fluss (harness log {}):\n\n{}",
        failures.len(),
        files.len(),
        log.display(),
        failures.join("\n\n")
    );
}

#[test]
fn databases_are_renamed_as_words_only() {
    assert_eq!(
        rename_databases(
            "CREATE DATABASE db; SELECT * FROM db.t, empty_db.x, fluss_db.y, db_1\n",
            "s1_"
        ),
        "CREATE DATABASE s1_db; SELECT * FROM s1_db.t, s1_empty_db.x, fluss_db.y, db_1\n"
    );
    assert_eq!(
        rename_databases("CALL fluss.tier('db.users')", "p_"),
        "CALL fluss.tier('p_db.users')"
    );
}
