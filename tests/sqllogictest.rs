//! Runs every `sql/*.slt` file against one LocalStore fixture through DataFusion.
//!
//! Adding a case means adding an `.slt` file: each file runs on a fresh
//! `SessionContext` (so `SET` does not leak between files) over the same store,
//! which holds the tables built by [`build_fixture`] (documented there, with the
//! expected contents of every table worked out by hand).
//!
//! Value rendering: `NULL` for nulls, `(empty)` for empty strings, floats with three
//! decimals, booleans `true`/`false`, everything else as Arrow displays it. Column
//! types: `I` integers, `R` floats and decimals, `T` everything else (checked).
//! Multi-line cells (EXPLAIN plans) become one row per line, indentation shown as
//! `-` (as DataFusion's own sqllogictest does). Occurrences of the store's temporary
//! root directory are replaced by `<root>`.
//!
//! Environment: `FLUSS_SLT_FILTER=<substring>` runs only the matching files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Float16Type, Float32Type, Float64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::prelude::{SessionConfig, SessionContext};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::lake::tiering::tier;
use fluss_datafusion::provider::FlussCatalog;
use fluss_datafusion::source::LocalStore;
use sqllogictest::{DBOutput, DefaultColumnType, Normalizer};

// ------------------------------------------------------------------ the AsyncDB

/// One sqllogictest connection: a DataFusion session over the shared store.
struct FlussDb {
    ctx: SessionContext,
    root: String,
}

impl FlussDb {
    fn new(store: Arc<LocalStore>, root: String) -> Self {
        // Fixed partitioning so EXPLAIN output does not depend on the machine's cores.
        let config = SessionConfig::new()
            .with_target_partitions(4)
            .with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store)));
        Self { ctx, root }
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
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<Self::ColumnType>, Self::Error> {
        let df = self.ctx.sql(sql).await?;
        let schema = df.schema().as_arrow().clone();
        let batches: Vec<RecordBatch> = df.collect().await?;
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
        for batch in &batches {
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

// ------------------------------------------------------------------ the fixture

fn i64s(v: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}

fn i32s(v: &[Option<i32>]) -> ArrayRef {
    Arc::new(Int32Array::from(v.to_vec()))
}

fn f64s(v: &[f64]) -> ArrayRef {
    Arc::new(Float64Array::from(v.to_vec()))
}

fn strs(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

/// `(id BIGINT, name STRING, score INT)` rows.
fn people(rows: &[(i64, Option<&str>, Option<i32>)]) -> RecordBatch {
    batch(vec![
        ("id", i64s(&rows.iter().map(|r| r.0).collect::<Vec<_>>())),
        ("name", strs(&rows.iter().map(|r| r.1).collect::<Vec<_>>())),
        ("score", i32s(&rows.iter().map(|r| r.2).collect::<Vec<_>>())),
    ])
}

/// `(id BIGINT, name STRING, city STRING, score INT)` rows.
fn users(rows: &[(i64, &str, Option<&str>, i32)]) -> RecordBatch {
    batch(vec![
        ("id", i64s(&rows.iter().map(|r| r.0).collect::<Vec<_>>())),
        (
            "name",
            strs(&rows.iter().map(|r| Some(r.1)).collect::<Vec<_>>()),
        ),
        ("city", strs(&rows.iter().map(|r| r.2).collect::<Vec<_>>())),
        (
            "score",
            i32s(&rows.iter().map(|r| Some(r.3)).collect::<Vec<_>>()),
        ),
    ])
}

fn keys(ids: &[i64]) -> RecordBatch {
    batch(vec![("id", i64s(ids))])
}

fn people_schema(pk: bool) -> Schema {
    let mut s = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("score", DataTypes::int());
    if pk {
        s = s.primary_key(vec!["id"]).unwrap();
    }
    s.build().unwrap()
}

fn descriptor(schema: Schema, buckets: i32, bucket_keys: &[&str], lake: bool) -> TableDescriptor {
    let mut d = TableDescriptor::builder().schema(schema).distributed_by(
        Some(buckets),
        bucket_keys.iter().map(|s| s.to_string()).collect(),
    );
    if lake {
        d = d.property("table.datalake.enabled", "true");
    }
    d.build().unwrap()
}

/// Builds every table the `.slt` files read (database `db`). Expected contents:
///
/// - `logs_tail` (log, 2 buckets, lake enabled, never tiered): 5 rows, all in the tail.
/// - `logs_lake` (log, 3 buckets): 6 rows in two appends, each tiered (snapshots 1, 2);
///   the tail is empty.
/// - `logs_both` (log, 2 buckets): 4 rows tiered (snapshot 1), 2 more tiered (snapshot
///   2), 3 in the tail, one of them a second row with id 3 (log tables do not dedup).
/// - `users` (PK id, 3 buckets): 6 rows tiered (snapshot 1); an update of 6 and a
///   delete of 5 tiered (snapshot 2); then in the tail: updates of lake rows (2: score
///   2 -> 200, 4: score 100 -> 5, city paris -> lisbon), delete of lake row 3, insert 7,
///   insert + delete 8, re-insert of 5, two updates of 1, a delete of missing key 99.
///   Union: 1 alice paris 12 | 2 bob berlin 200 | 4 dave lisbon 5 | 5 erin oslo 55 |
///   6 frank madrid 61 | 7 gina oslo 70.
///   Lake: 1 alice paris 10 | 2 bob berlin 2 | 3 carol rome 30 | 4 dave paris 100 |
///   6 frank madrid 61.
/// - `users_tail` (PK, 2 buckets, never tiered): 1 x 1 | 2 y2 22 | 4 w 4.
/// - `users_lake` (PK, 4 buckets, fully tiered in 2 snapshots): 1 a 1 | 2 bb 20 | 3 c 3 | 5 e 5.
/// - `orders` (log, 2 buckets): 4 orders tiered, 4 in the tail; joins `users` on user_id.
/// - `events` (log partitioned by dt, 2 buckets): 2024-01-01 lake only, 2024-01-02 lake
///   and tail, 2024-01-03 tail only.
/// - `accounts` (PK (region, id) partitioned by region, 2 buckets): eu/us tiered, then in
///   the tail an update (eu,2), a delete (us,1), an insert into a new partition apac.
///   Union: apac 1 500 | eu 1 100 | eu 2 250 | us 3 400.
/// - `plain` (log, 1 bucket, no lake): 2 rows.
async fn build_fixture(store: &LocalStore) {
    store.create_database("db", None, false).await.unwrap();
    store
        .create_database("empty_db", None, false)
        .await
        .unwrap();

    // logs_tail: tail only
    let p = TablePath::new("db", "logs_tail");
    store
        .create_table(
            &p,
            &descriptor(people_schema(false), 2, &["id"], true),
            false,
        )
        .await
        .unwrap();
    store
        .append(
            &p,
            &people(&[
                (1, Some("a"), Some(10)),
                (2, Some("b"), Some(20)),
                (3, Some("c"), Some(30)),
            ]),
        )
        .await
        .unwrap();
    store
        .append(&p, &people(&[(4, Some("d"), None), (5, None, Some(50))]))
        .await
        .unwrap();

    // logs_lake: lake only
    let p = TablePath::new("db", "logs_lake");
    store
        .create_table(
            &p,
            &descriptor(people_schema(false), 3, &["id"], true),
            false,
        )
        .await
        .unwrap();
    store
        .append(
            &p,
            &people(&[
                (1, Some("a"), Some(10)),
                (2, Some("b"), Some(20)),
                (3, Some("c"), Some(30)),
            ]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();
    store
        .append(
            &p,
            &people(&[
                (4, Some("d"), Some(40)),
                (5, Some("e"), Some(50)),
                (6, Some("f"), Some(60)),
            ]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();

    // logs_both: two tierings + tail
    let p = TablePath::new("db", "logs_both");
    store
        .create_table(
            &p,
            &descriptor(people_schema(false), 2, &["id"], true),
            false,
        )
        .await
        .unwrap();
    store
        .append(
            &p,
            &people(&[
                (1, Some("a"), Some(10)),
                (2, Some("b"), Some(20)),
                (3, Some("c"), Some(30)),
                (4, Some("d"), Some(40)),
            ]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();
    store
        .append(
            &p,
            &people(&[(5, Some("e"), Some(50)), (6, Some("f"), Some(60))]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();
    store
        .append(
            &p,
            &people(&[
                (7, Some("g"), Some(70)),
                (8, Some("h"), None),
                (3, Some("c2"), Some(33)),
            ]),
        )
        .await
        .unwrap();

    // users: PK, updates and deletes across the cut
    let users_schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("city", DataTypes::string())
        .column("score", DataTypes::int())
        .primary_key(vec!["id"])
        .unwrap()
        .build()
        .unwrap();
    let p = TablePath::new("db", "users");
    store
        .create_table(&p, &descriptor(users_schema, 3, &[], true), false)
        .await
        .unwrap();
    store
        .upsert(
            &p,
            &users(&[
                (1, "alice", Some("paris"), 10),
                (2, "bob", Some("berlin"), 2),
                (3, "carol", Some("rome"), 30),
                (4, "dave", Some("paris"), 100),
                (5, "erin", Some("oslo"), 50),
                (6, "frank", Some("rome"), 60),
            ]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();
    store
        .upsert(&p, &users(&[(6, "frank", Some("madrid"), 61)]))
        .await
        .unwrap();
    store.delete(&p, &keys(&[5])).await.unwrap();
    tier(store, &p).await.unwrap();
    store
        .upsert(&p, &users(&[(2, "bob", Some("berlin"), 200)]))
        .await
        .unwrap();
    store
        .upsert(&p, &users(&[(4, "dave", Some("lisbon"), 5)]))
        .await
        .unwrap();
    store.delete(&p, &keys(&[3])).await.unwrap();
    store
        .upsert(
            &p,
            &users(&[
                (7, "gina", Some("oslo"), 70),
                (8, "hank", Some("paris"), 80),
            ]),
        )
        .await
        .unwrap();
    store.delete(&p, &keys(&[8])).await.unwrap();
    store
        .upsert(&p, &users(&[(5, "erin", Some("oslo"), 55)]))
        .await
        .unwrap();
    store
        .upsert(&p, &users(&[(1, "alice", None, 11)]))
        .await
        .unwrap();
    store
        .upsert(&p, &users(&[(1, "alice", Some("paris"), 12)]))
        .await
        .unwrap();
    store.delete(&p, &keys(&[99])).await.unwrap();

    // users_tail: PK, tail only
    let p = TablePath::new("db", "users_tail");
    store
        .create_table(&p, &descriptor(people_schema(true), 2, &[], true), false)
        .await
        .unwrap();
    store
        .upsert(
            &p,
            &people(&[
                (1, Some("x"), Some(1)),
                (2, Some("y"), Some(2)),
                (3, Some("z"), Some(3)),
            ]),
        )
        .await
        .unwrap();
    store
        .upsert(&p, &people(&[(2, Some("y2"), Some(22))]))
        .await
        .unwrap();
    store.delete(&p, &keys(&[3])).await.unwrap();
    store
        .upsert(&p, &people(&[(4, Some("w"), Some(4))]))
        .await
        .unwrap();

    // users_lake: PK, fully tiered (merge-on-read in the lake)
    let p = TablePath::new("db", "users_lake");
    store
        .create_table(&p, &descriptor(people_schema(true), 4, &[], true), false)
        .await
        .unwrap();
    store
        .upsert(
            &p,
            &people(&[
                (1, Some("a"), Some(1)),
                (2, Some("b"), Some(2)),
                (3, Some("c"), Some(3)),
                (4, Some("d"), Some(4)),
                (5, Some("e"), Some(5)),
            ]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();
    store
        .upsert(&p, &people(&[(2, Some("bb"), Some(20))]))
        .await
        .unwrap();
    store.delete(&p, &keys(&[4])).await.unwrap();
    tier(store, &p).await.unwrap();

    // orders: log table joined with users
    let orders_schema = Schema::builder()
        .column("order_id", DataTypes::bigint())
        .column("user_id", DataTypes::bigint())
        .column("amount", DataTypes::double())
        .column("status", DataTypes::string())
        .build()
        .unwrap();
    let orders = |rows: &[(i64, i64, f64, &str)]| {
        batch(vec![
            (
                "order_id",
                i64s(&rows.iter().map(|r| r.0).collect::<Vec<_>>()),
            ),
            (
                "user_id",
                i64s(&rows.iter().map(|r| r.1).collect::<Vec<_>>()),
            ),
            (
                "amount",
                f64s(&rows.iter().map(|r| r.2).collect::<Vec<_>>()),
            ),
            (
                "status",
                strs(&rows.iter().map(|r| Some(r.3)).collect::<Vec<_>>()),
            ),
        ])
    };
    let p = TablePath::new("db", "orders");
    store
        .create_table(
            &p,
            &descriptor(orders_schema, 2, &["order_id"], true),
            false,
        )
        .await
        .unwrap();
    store
        .append(
            &p,
            &orders(&[
                (100, 1, 12.5, "paid"),
                (101, 2, 7.25, "paid"),
                (102, 3, 99.0, "open"),
                (103, 4, 1.5, "paid"),
            ]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();
    store
        .append(
            &p,
            &orders(&[
                (104, 5, 20.0, "open"),
                (105, 7, 3.75, "paid"),
                (106, 1, 8.0, "paid"),
                (107, 42, 5.0, "open"),
            ]),
        )
        .await
        .unwrap();

    // events: partitioned log table
    let events_schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("dt", DataTypes::string())
        .column("kind", DataTypes::string())
        .column("v", DataTypes::int())
        .build()
        .unwrap();
    let events = |rows: &[(i64, &str, &str, i32)]| {
        batch(vec![
            ("id", i64s(&rows.iter().map(|r| r.0).collect::<Vec<_>>())),
            (
                "dt",
                strs(&rows.iter().map(|r| Some(r.1)).collect::<Vec<_>>()),
            ),
            (
                "kind",
                strs(&rows.iter().map(|r| Some(r.2)).collect::<Vec<_>>()),
            ),
            (
                "v",
                i32s(&rows.iter().map(|r| Some(r.3)).collect::<Vec<_>>()),
            ),
        ])
    };
    let p = TablePath::new("db", "events");
    let d = TableDescriptor::builder()
        .schema(events_schema)
        .partitioned_by(vec!["dt"])
        .distributed_by(Some(2), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .build()
        .unwrap();
    store.create_table(&p, &d, false).await.unwrap();
    store
        .append(
            &p,
            &events(&[
                (1, "2024-01-01", "click", 1),
                (2, "2024-01-01", "view", 2),
                (3, "2024-01-01", "click", 3),
                (4, "2024-01-02", "view", 4),
                (5, "2024-01-02", "click", 5),
            ]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();
    store
        .append(
            &p,
            &events(&[
                (6, "2024-01-02", "click", 6),
                (7, "2024-01-03", "view", 7),
                (8, "2024-01-03", "click", 8),
            ]),
        )
        .await
        .unwrap();

    // accounts: partitioned PK table
    let accounts_schema = Schema::builder()
        .column("region", DataTypes::string())
        .column("id", DataTypes::bigint())
        .column("balance", DataTypes::int())
        .primary_key(vec!["region", "id"])
        .unwrap()
        .build()
        .unwrap();
    let accounts = |rows: &[(&str, i64, i32)]| {
        batch(vec![
            (
                "region",
                strs(&rows.iter().map(|r| Some(r.0)).collect::<Vec<_>>()),
            ),
            ("id", i64s(&rows.iter().map(|r| r.1).collect::<Vec<_>>())),
            (
                "balance",
                i32s(&rows.iter().map(|r| Some(r.2)).collect::<Vec<_>>()),
            ),
        ])
    };
    let account_keys = |rows: &[(&str, i64)]| {
        batch(vec![
            (
                "region",
                strs(&rows.iter().map(|r| Some(r.0)).collect::<Vec<_>>()),
            ),
            ("id", i64s(&rows.iter().map(|r| r.1).collect::<Vec<_>>())),
        ])
    };
    let p = TablePath::new("db", "accounts");
    let d = TableDescriptor::builder()
        .schema(accounts_schema)
        .partitioned_by(vec!["region"])
        .distributed_by(Some(2), vec![])
        .property("table.datalake.enabled", "true")
        .build()
        .unwrap();
    store.create_table(&p, &d, false).await.unwrap();
    store
        .upsert(
            &p,
            &accounts(&[
                ("eu", 1, 100),
                ("eu", 2, 200),
                ("us", 1, 300),
                ("us", 3, 400),
            ]),
        )
        .await
        .unwrap();
    tier(store, &p).await.unwrap();
    store
        .upsert(&p, &accounts(&[("eu", 2, 250), ("apac", 1, 500)]))
        .await
        .unwrap();
    store.delete(&p, &account_keys(&[("us", 1)])).await.unwrap();

    // plain: no lake
    let p = TablePath::new("db", "plain");
    store
        .create_table(&p, &descriptor(people_schema(false), 1, &[], false), false)
        .await
        .unwrap();
    store
        .append(
            &p,
            &people(&[(1, Some("p1"), Some(1)), (2, Some("p2"), Some(2))]),
        )
        .await
        .unwrap();
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
                .is_none_or(|f| p.to_string_lossy().contains(f))
        })
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_logic_tests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    let store = Arc::new(LocalStore::open(&root).await.unwrap());
    build_fixture(&store).await;

    let files = slt_files();
    assert!(!files.is_empty(), "no sql/*.slt files");
    let mut failures = Vec::new();
    for file in &files {
        let store = store.clone();
        let root = root.clone();
        let mut runner = sqllogictest::Runner::new(move || {
            let db = FlussDb::new(store.clone(), root.clone());
            async move { Ok::<_, DataFusionError>(db) }
        });
        runner.with_validator(validator);
        runner.with_column_validator(sqllogictest::strict_column_validator);
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        match runner.run_file_async(file).await {
            Ok(()) => eprintln!("ok     {name}"),
            Err(e) => {
                eprintln!("FAILED {name}\n{}", e.display(false));
                failures.push(format!("{name}: {}", e.display(false)));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} sqllogictest files failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
