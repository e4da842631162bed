//! Bad input gives a clear error naming the table and the object, never a panic and
//! never a partial wrong result.

use std::sync::Arc;

use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::prelude::SessionContext;
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::{FlussCatalog, LocalStore, tier};

fn rows(ids: &[i64]) -> RecordBatch {
    RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(ids.to_vec())) as _),
        (
            "name",
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("n{i}")),
            )) as _,
        ),
        (
            "score",
            Arc::new(Int32Array::from_iter_values(ids.iter().map(|i| *i as i32))) as _,
        ),
    ])
    .unwrap()
}

async fn setup(
    pk: bool,
) -> (
    tempfile::TempDir,
    Arc<LocalStore>,
    SessionContext,
    TablePath,
) {
    setup_on(pk, "paimon").await
}

/// A table `db.t` (id, name, score) with one bucket on a `format` lake.
async fn setup_on(
    pk: bool,
    format: &str,
) -> (
    tempfile::TempDir,
    Arc<LocalStore>,
    SessionContext,
    TablePath,
) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap(),
    );
    store.create_database("db", None, false).await.unwrap();
    let mut s = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("score", DataTypes::int());
    if pk {
        s = s.primary_key(vec!["id"]).unwrap();
    }
    let d = TableDescriptor::builder()
        .schema(s.build().unwrap())
        .distributed_by(Some(1), vec![])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.format", format)
        .build()
        .unwrap();
    let path = TablePath::new("db", "t");
    store.create_table(&path, &d, false).await.unwrap();
    let ctx = SessionContext::new();
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    (dir, store, ctx, path)
}

async fn error_of(ctx: &SessionContext, sql: &str) -> String {
    match ctx.sql(sql).await {
        Err(e) => e.to_string(),
        Ok(df) => match df.collect().await {
            Err(e) => e.to_string(),
            Ok(batches) => panic!("expected an error, got {} batches", batches.len()),
        },
    }
}

fn files_with_extension(root: &std::path::Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == ext) {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test]
async fn unknown_catalog_database_and_table() {
    let (_dir, _store, ctx, _) = setup(false).await;
    assert!(
        error_of(&ctx, "SELECT * FROM fluss.db.nope")
            .await
            .contains("nope")
    );
    assert!(
        error_of(&ctx, "SELECT * FROM fluss.nodb.t")
            .await
            .contains("nodb")
    );
    assert!(
        error_of(&ctx, "SELECT * FROM other.db.t")
            .await
            .contains("other")
    );
    let e = error_of(&ctx, "SELECT * FROM fluss.db.\"t$bogus\"").await;
    assert!(e.contains("unknown virtual table"), "{e}");
}

#[tokio::test]
async fn missing_lake_file_names_table_and_file() {
    let (dir, store, ctx, path) = setup(false).await;
    store.append(&path, &rows(&[1, 2, 3])).await.unwrap();
    tier(&store, &path).await.unwrap();
    let files = files_with_extension(&dir.path().join("lake/paimon/db.db/t"), "parquet");
    assert!(!files.is_empty());
    std::fs::remove_file(&files[0]).unwrap();
    let e = error_of(&ctx, "SELECT * FROM fluss.db.t").await;
    assert!(e.contains("lake data file is missing"), "{e}");
    assert!(e.contains("table: db.t"), "{e}");
    assert!(
        e.contains(files[0].file_name().unwrap().to_str().unwrap()),
        "{e}"
    );
}

#[tokio::test]
async fn corrupt_log_batch_names_table_bucket_file_and_offset() {
    let (dir, store, ctx, path) = setup(false).await;
    store.append(&path, &rows(&[1, 2, 3])).await.unwrap();
    store.append(&path, &rows(&[4, 5])).await.unwrap();
    let segment = files_with_extension(&dir.path().join("data"), "log")
        .pop()
        .unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0xff; // inside the second batch's Arrow body
    std::fs::write(&segment, bytes).unwrap();
    let e = error_of(&ctx, "SELECT * FROM fluss.db.t").await;
    assert!(e.contains("CRC-32C mismatch"), "{e}");
    assert!(e.contains("table: db.t"), "{e}");
    assert!(e.contains("bucket: 0"), "{e}");
    assert!(e.contains("base_offset: 3"), "{e}");
    assert!(e.contains("00000000000000000000.log"), "{e}");
}

#[tokio::test]
async fn lake_schema_mismatch_is_reported() {
    let (dir, store, ctx, path) = setup(true).await;
    store.upsert(&path, &rows(&[1, 2])).await.unwrap();
    tier(&store, &path).await.unwrap();
    // Another writer evolved the lake table: column `name` renamed in schema-1.
    let schema_dir = dir.path().join("lake/paimon/db.db/t/schema");
    let schema0 = std::fs::read_to_string(schema_dir.join("schema-0")).unwrap();
    let schema1 = schema0
        .replace("\"name\":\"name\"", "\"name\":\"nm\"")
        .replace("\"id\":0,", "\"id\":1,");
    assert_ne!(schema0, schema1);
    std::fs::write(schema_dir.join("schema-1"), schema1).unwrap();
    let e = error_of(&ctx, "SELECT * FROM fluss.db.t").await;
    assert!(
        e.contains("lake schema does not match the Fluss schema"),
        "{e}"
    );
    assert!(e.contains("'name'"), "{e}");
    assert!(e.contains("table: db.t"), "{e}");
}

/// A lake column whose values are of another kind than the Fluss column's (another
/// writer changed the lake table) is an error naming the column and both types, for
/// the union table and `t$lake`: a lake `int` read for a Fluss `STRING` would be cast
/// to strings, silently wrong.
#[tokio::test]
async fn a_lake_column_of_another_type_is_reported() {
    for format in ["paimon", "iceberg"] {
        let (dir, store, ctx, path) = setup_on(false, format).await;
        store.append(&path, &rows(&[1, 2])).await.unwrap();
        tier(&store, &path).await.unwrap();
        let lake_type = if format == "paimon" {
            let schema_dir = dir.path().join("lake/paimon/db.db/t/schema");
            let schema0 = std::fs::read_to_string(schema_dir.join("schema-0")).unwrap();
            let schema1 = schema0
                .replace(
                    "\"name\":\"name\",\"type\":\"STRING\"",
                    "\"name\":\"name\",\"type\":\"INT\"",
                )
                .replace("\"id\":0,", "\"id\":1,");
            assert_ne!(schema0, schema1);
            std::fs::write(schema_dir.join("schema-1"), schema1).unwrap();
            "INT"
        } else {
            let metadata = dir
                .path()
                .join("lake/iceberg/db/t/metadata/v2.metadata.json");
            let json = std::fs::read_to_string(&metadata).unwrap();
            let damaged = json.replace(
                "\"name\":\"name\",\"required\":false,\"type\":\"string\"",
                "\"name\":\"name\",\"required\":false,\"type\":\"int\"",
            );
            assert_ne!(json, damaged);
            std::fs::write(&metadata, damaged).unwrap();
            "int"
        };
        for sql in [
            "SELECT * FROM fluss.db.t",
            "SELECT * FROM fluss.db.\"t$lake\"",
        ] {
            let e = error_of(&ctx, sql).await;
            assert!(
                e.contains(&format!(
                    "column 'name' is {lake_type} in the lake table but Utf8 in Fluss"
                )),
                "{format}: {sql}: {e}"
            );
            assert!(e.contains("table: db.t"), "{format}: {e}");
        }
    }
}

#[tokio::test]
async fn bad_sql_is_an_error() {
    let (_dir, _store, ctx, _) = setup(false).await;
    assert!(
        error_of(&ctx, "SELEC * FROM fluss.db.t")
            .await
            .contains("SELEC")
    );
    assert!(
        error_of(&ctx, "SELECT nope FROM fluss.db.t")
            .await
            .contains("nope")
    );
}

/// One table whose metadata file is truncated does not hide the catalog: `SHOW
/// TABLES`, `information_schema` and `\d` list every table (the damaged one as
/// damaged), reading it names the damage, the other table reads as before, and
/// `DROP TABLE` removes it (its log data too), so SQL can clean it up.
#[tokio::test]
async fn a_damaged_table_is_listed_named_and_dropped_without_hiding_the_others() {
    use fluss_datafusion::sql::FlussSession;

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap(),
    );
    let session = FlussSession::new(store.clone()).await.unwrap();
    for sql in [
        "CREATE TABLE hurt (id BIGINT, v STRING)",
        "CREATE TABLE fine (id BIGINT, v STRING)",
        "INSERT INTO hurt VALUES (1, 'a')",
        "INSERT INTO fine VALUES (2, 'b')",
    ] {
        session.execute(sql).await.unwrap();
    }
    let node = dir
        .path()
        .join("zk/metadata/databases/fluss/tables/hurt.json");
    let bytes = std::fs::read(&node).unwrap();
    std::fs::write(&node, &bytes[..bytes.len() / 2]).unwrap();
    let text = |batches: Vec<RecordBatch>| {
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    };
    let tables = text(session.execute("SHOW TABLES").await.unwrap());
    assert!(
        tables.contains("hurt") && tables.contains("fine"),
        "{tables}"
    );
    let columns = text(
        session
            .execute(
                "SELECT table_name, column_name FROM information_schema.columns \
                 WHERE table_schema = 'fluss' ORDER BY table_name, column_name",
            )
            .await
            .unwrap(),
    );
    assert!(
        columns.contains("fine") && !columns.contains("hurt"),
        "{columns}"
    );
    let listed = text(vec![
        fluss_datafusion::sql::list_tables(&session).await.unwrap(),
    ]);
    assert!(
        listed
            .lines()
            .any(|l| l.contains("hurt") && l.contains("damaged")),
        "{listed}"
    );
    let fine = text(session.execute("SELECT * FROM fine").await.unwrap());
    assert!(fine.contains("| 2  | b |"), "{fine}");
    for sql in ["SELECT * FROM hurt", "SELECT v FROM hurt WHERE id = 1"] {
        let e = session.execute(sql).await.unwrap_err().to_string();
        assert!(e.contains("table 'fluss.hurt' is damaged"), "{sql}: {e}");
        assert!(e.contains("hurt.json"), "{sql}: {e}");
        assert!(e.contains("DROP TABLE fluss.hurt removes it"), "{sql}: {e}");
    }
    session.execute("DROP TABLE hurt").await.unwrap();
    let data: Vec<String> = std::fs::read_dir(dir.path().join("data/fluss"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(data.iter().all(|d| d.starts_with("fine-")), "{data:?}");
    session
        .execute("CREATE TABLE hurt (id BIGINT, v STRING)")
        .await
        .unwrap();
    let again = text(
        session
            .execute("SELECT count(*) AS n FROM hurt")
            .await
            .unwrap(),
    );
    assert!(again.contains("| 0 |"), "{again}");
}
