//! Writes through an application's own `SessionContext` (no `FlussSession`): with
//! the catalog registered by `register_with` they are DataFusion writes; registered
//! alone, the tables refuse them rather than write rounded values or apply a
//! statement whose subquery filter DataFusion 55 dropped; a host that can only hand
//! over its planned rows (datafusion-python) writes them whole.

use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::prelude::SessionContext;
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::provider::FlussCatalog;
use fluss_datafusion::source::LocalStore;

async fn store_with_table(dir: &tempfile::TempDir) -> Arc<LocalStore> {
    let store = Arc::new(
        LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap(),
    );
    store.create_database("db", None, true).await.unwrap();
    let schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .primary_key(vec!["id"])
        .unwrap()
        .build()
        .unwrap();
    let descriptor = TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(2), vec![])
        .build()
        .unwrap();
    store
        .create_table(&TablePath::new("db", "t"), &descriptor, false)
        .await
        .unwrap();
    store
}

async fn rows(ctx: &SessionContext) -> String {
    let batches = ctx
        .sql("SELECT * FROM fluss.db.t ORDER BY id")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test]
async fn a_catalog_registered_alone_refuses_writes_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_table(&dir).await;
    let writer = SessionContext::new();
    FlussCatalog::new(store.clone()).register_with(&writer, "fluss");
    writer
        .sql("INSERT INTO fluss.db.t VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();

    let plain = SessionContext::new();
    plain.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    for sql in [
        "INSERT INTO fluss.db.t VALUES (3, 'c')",
        "DELETE FROM fluss.db.t WHERE id IN (SELECT 1)",
        "UPDATE fluss.db.t SET name = 'x' WHERE id IN (SELECT 2)",
    ] {
        let outcome = match plain.sql(sql).await {
            Ok(df) => df.collect().await.map(|_| ()),
            Err(e) => Err(e),
        };
        let error = outcome.expect_err(sql).to_string();
        assert!(error.contains("register_with"), "{sql}: {error}");
    }
    let expected = rows(&writer).await;
    assert_eq!(rows(&plain).await, expected);
    assert!(expected.contains("| 1  | a    |") && expected.contains("| 2  | b    |"));
}

#[tokio::test]
async fn register_with_adds_the_write_rule_once_and_dataframes_write_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_table(&dir).await;
    let ctx = SessionContext::new();
    FlussCatalog::new(store.clone()).register_with(&ctx, "fluss");
    FlussCatalog::new(store.clone()).register_with(&ctx, "fluss");
    let rules = ctx.state().analyzer().rules.clone();
    assert_eq!(
        rules.iter().filter(|r| r.name() == "fluss_writes").count(),
        1
    );
    // first, before DataFusion's type coercion casts a DELETE's key columns
    assert_eq!(rules[0].name(), "fluss_writes");

    let frame = ctx
        .sql("SELECT CAST(7 AS BIGINT) AS k, 'seven' AS v")
        .await
        .unwrap();
    let written = frame
        .write_table("fluss.db.t", DataFrameWriteOptions::new())
        .await
        .unwrap();
    assert_eq!(
        pretty_format_batches(&written)
            .unwrap()
            .to_string()
            .matches("| 1 ")
            .count(),
        1
    );
    assert!(rows(&ctx).await.contains("| 7  | seven |"));

    let explain = ctx
        .sql("EXPLAIN UPDATE fluss.db.t SET name = 'x' WHERE id = 7")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let explain = pretty_format_batches(&explain).unwrap().to_string();
    assert!(
        explain.contains("FlussSink: table=db.t, write=partial update"),
        "{explain}"
    );
}

/// What the Python package does for datafusion-python, whose FFI forwards a table's
/// `insert_into` without the write rule: the host's planned rows, written whole.
#[tokio::test]
async fn insert_whole_rows_writes_what_a_host_without_the_rule_planned() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_table(&dir).await;
    let ctx = SessionContext::new();
    FlussCatalog::new(store.clone()).register_with(&ctx, "fluss");
    ctx.sql("INSERT INTO fluss.db.t VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();

    let table = ctx.table_provider("fluss.db.t").await.unwrap();
    let table = table
        .downcast_ref::<fluss_datafusion::FlussTableProvider>()
        .unwrap();
    let host = SessionContext::new();
    let planned = |sql: &'static str| {
        let host = host.clone();
        async move {
            host.sql(sql)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap()
        }
    };
    // an upsert of a key there and a new key
    let rows_in = planned(
        "SELECT CAST(column1 AS BIGINT) AS id, column2 AS name \
         FROM (VALUES (2, 'b2'), (3, 'c'))",
    )
    .await;
    let written = datafusion::physical_plan::collect(
        table.insert_whole_rows(rows_in, InsertOp::Append).unwrap(),
        host.task_ctx(),
    )
    .await
    .unwrap();
    assert!(
        pretty_format_batches(&written)
            .unwrap()
            .to_string()
            .contains("| 2     |")
    );
    let now = rows(&ctx).await;
    for row in ["| 1  | a    |", "| 2  | b2   |", "| 3  | c    |"] {
        assert!(now.contains(row), "{now}");
    }

    // appends and upserts only
    let again = planned("SELECT CAST(5 AS BIGINT) AS id, 'e' AS name").await;
    let error = table
        .insert_whole_rows(again, InsertOp::Overwrite)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("INSERT OVERWRITE") && error.contains("db.t"),
        "{error}"
    );

    // whole rows only, in the table's order
    let partial = planned("SELECT CAST(4 AS BIGINT) AS id").await;
    let error = table
        .insert_whole_rows(partial, InsertOp::Append)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("(id, name)") && error.contains("db.t"),
        "{error}"
    );
    let log = ctx
        .table_provider(datafusion::common::TableReference::full(
            "fluss", "db", "t$log",
        ))
        .await
        .unwrap();
    let log = log
        .downcast_ref::<fluss_datafusion::FlussTableProvider>()
        .unwrap();
    let input = planned("SELECT CAST(4 AS BIGINT) AS id, 'd' AS name").await;
    let error = log
        .insert_whole_rows(input, InsertOp::Append)
        .unwrap_err()
        .to_string();
    assert!(error.contains("read-only"), "{error}");
    assert_eq!(rows(&ctx).await, now);
}
