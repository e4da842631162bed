//! Lakes on S3-compatible object storage: a local moto server on 127.0.0.1
//! (`fluss_test_support::s3`, started here or by `.ci/run`).
//!
//! - pyiceberg writes its tables straight to S3 (`gen_iceberg_fixtures.py
//!   --s3-endpoint`); they union-read with a tail through the hadoop layout and the
//!   sql catalog on S3, with the same checks as the local files get
//!   (`iceberg_interop`), and through the cluster source.
//! - A LocalStore's tiered Paimon lake is uploaded to S3 and its local copy removed;
//!   through the cluster source and the RPC test server, with the warehouse property
//!   pointing at S3, every query answers as the local read did.
//!
//! Credentials are given as lake options and never appear in EXPLAIN, `\d` or errors.

use super::common;
use super::iceberg_interop::{
    Store, fixtures_with, log_t_union_reads_with_its_tail, pk_t_union_reads_with_its_tail,
};

use std::sync::Arc;

use fluss::metadata::TablePath;
use fluss_datafusion::source::{ClusterOptions, ClusterSource, FlussSource, LocalStoreOptions};
use fluss_datafusion::sql::{FlussSession, describe_table};
use fluss_datafusion::{ErrorKind, LocalStore};
use fluss_test_support::local_store::{TIERED_TABLES_SQL, load_local_store, store_from_sql};
use fluss_test_support::s3::{self, S3Server};
use fluss_test_support::server::{ServerConfig, TestServer};

/// The S3 server, or `None` (test skipped) without the venv's moto.
fn s3_server() -> Option<S3Server> {
    match S3Server::start() {
        Ok(server) => Some(server),
        Err(why) => {
            if std::env::var("FLUSS_REQUIRE_PYTHON").is_ok_and(|v| v == "1") {
                panic!("{why}: run tests/python/setup_venv.sh");
            }
            eprintln!("skipping: {why} (run tests/python/setup_venv.sh)");
            None
        }
    }
}

/// A prefix of the bucket no other test (or run, on a shared server) writes.
fn unique_prefix(what: &str) -> String {
    format!("{what}-{}", uuid::Uuid::new_v4().simple())
}

fn assert_never_shown(text: &str) {
    assert!(!text.contains(s3::SECRET_KEY), "a secret is shown: {text}");
    assert!(
        !text.contains(s3::ACCESS_KEY),
        "an access key is shown: {text}"
    );
}

async fn render(session: &FlussSession, sql: &str) -> String {
    let batches = session
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    format!("{:?}", common::render_rows(&batches))
}

#[tokio::test]
async fn pyiceberg_tables_on_s3_union_read_through_the_hadoop_layout_and_the_sql_catalog() {
    let Some(s3) = s3_server() else { return };
    let root = format!("s3://{}/{}", s3::BUCKET, unique_prefix("iceberg"));
    let Some(fx) = fixtures_with(&["--s3-endpoint", s3.endpoint(), "--s3-warehouse", &root]) else {
        return;
    };
    let fx = fx.path();
    let options = LocalStoreOptions {
        lake_options: s3.options(),
        ..LocalStoreOptions::default()
    };

    // the hadoop layout: version-hint.text and v<N>.metadata.json on S3
    let hadoop = Store::with_options(options.clone()).await;
    let lake = format!("'table.datalake.iceberg.warehouse' = '{root}/hadoop'");
    pk_t_union_reads_with_its_tail(&hadoop, fx, &lake).await;

    // the sql catalog: a local sqlite file naming metadata files on S3
    let sql = Store::with_options(options).await;
    let lake = format!(
        "'table.datalake.iceberg.type' = 'sql', 'table.datalake.iceberg.name' = 'default', \
         'table.datalake.iceberg.uri' = 'jdbc:sqlite:{}', \
         'table.datalake.iceberg.warehouse' = '{root}/warehouse'",
        fx.join("warehouse/catalog.db").display()
    );
    log_t_union_reads_with_its_tail(&sql, fx, &lake).await;

    // EXPLAIN never shows the credentials the files are read with
    let plan = format!("{:?}", hadoop.sql("EXPLAIN SELECT * FROM pk_t").await);
    assert!(plan.contains("lake_splits=2"), "{plan}");
    assert_never_shown(&plan);

    // the same tables through the cluster source: credentials as its lake options
    for store in [&hadoop, &sql] {
        let local = store.session();
        let server = serve(store.store()).await;
        let cluster = cluster_session(&server, &s3).await;
        for table in ["pk_t", "log_t"] {
            let exists = local
                .source()
                .get_table(&TablePath::new("fluss", table))
                .await
                .is_ok();
            if !exists {
                continue;
            }
            for query in [
                format!("SELECT * FROM {table} ORDER BY id"),
                format!("SELECT id FROM {table} WHERE id > 3 ORDER BY id"),
                format!("SELECT * FROM \"{table}$lake\" ORDER BY id"),
                format!("SELECT count(*) FROM {table}"),
            ] {
                assert_eq!(
                    render(&cluster, &query).await,
                    render(local, &query).await,
                    "{query}"
                );
            }
        }
    }
}

/// A tiered log table and a tiered primary-key table, each with a tail.
async fn tiered_store() -> (tempfile::TempDir, Arc<LocalStore>, FlussSession) {
    store_from_sql(TIERED_TABLES_SQL).await
}

async fn serve(store: &LocalStore) -> TestServer {
    let model = load_local_store(store).await.unwrap();
    TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .unwrap()
}

async fn cluster_session(server: &TestServer, s3: &S3Server) -> FlussSession {
    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: server.bootstrap_servers(),
        lake_options: s3.options(),
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    FlussSession::new(Arc::new(source)).await.unwrap()
}

const QUERIES: [&str; 8] = [
    "SELECT * FROM db.logs ORDER BY id",
    "SELECT name FROM db.logs WHERE score >= 30 ORDER BY name",
    "SELECT count(*), sum(score) FROM db.logs",
    "SELECT * FROM \"db\".\"logs$lake\" ORDER BY id",
    "SELECT * FROM db.kv ORDER BY id",
    "SELECT v FROM db.kv WHERE id = 1",
    "SELECT count(*) FROM db.kv",
    "SELECT * FROM \"db\".\"kv$lake\" ORDER BY id",
];

#[tokio::test]
async fn a_paimon_lake_moved_to_s3_reads_through_the_cluster_source_as_it_did_locally() {
    let Some(s3) = s3_server() else { return };
    let (_dir, store, local) = tiered_store().await;
    let mut expected = Vec::new();
    for query in QUERIES {
        expected.push(render(&local, query).await);
    }

    // Move the warehouse: upload it, then remove the local copy, so only S3 has it.
    let table = store
        .get_table(&TablePath::new("db", "logs"))
        .await
        .unwrap();
    let warehouse = store.lake_location(&table).await.unwrap().warehouse;
    let prefix = unique_prefix("paimon");
    let uploaded = s3
        .upload_dir(std::path::Path::new(&warehouse), &prefix)
        .await
        .unwrap();
    assert!(uploaded > 4, "{uploaded} files uploaded");
    std::fs::rename(&warehouse, format!("{warehouse}.moved")).unwrap();

    let mut model = load_local_store(&store).await.unwrap();
    let s3_warehouse = format!("s3://{}/{prefix}", s3::BUCKET);
    for name in ["logs", "kv"] {
        assert!(model.set_table_property(
            "db",
            name,
            "table.datalake.paimon.warehouse",
            &s3_warehouse
        ));
    }
    let server = TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .unwrap();
    let cluster = cluster_session(&server, &s3).await;
    for (query, expected) in QUERIES.iter().zip(&expected) {
        assert_eq!(&render(&cluster, query).await, expected, "{query}");
    }
    // A second source reading the same tables with other lake options (credentials;
    // here another endpoint) never gets what the first one opened, although the plans
    // of these very snapshots are cached in this process: it opens the lake itself,
    // through its own endpoint, which serves nothing.
    let mut other_options = s3.options();
    other_options.insert("s3.endpoint".into(), "http://127.0.0.1:9".into());
    let other = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: server.bootstrap_servers(),
        lake_options: other_options,
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    let other = FlussSession::new(Arc::new(other)).await.unwrap();
    for query in ["SELECT * FROM db.logs", "SELECT * FROM db.kv"] {
        let e = other
            .execute(query)
            .await
            .expect_err("a lake opened with another source's options");
        assert_never_shown(&format!("{e} {e:?}"));
    }
    // the local store has no warehouse any more: its own lake read now fails, naming
    // what is missing (and the cluster read above did not use it)
    let e = local
        .execute("SELECT * FROM db.logs")
        .await
        .expect_err("the local warehouse is gone");
    assert!(
        matches!(
            e.kind(),
            ErrorKind::NotFound | ErrorKind::Lake | ErrorKind::Io
        ),
        "{e}"
    );

    let plan = render(&cluster, "EXPLAIN SELECT * FROM db.kv WHERE id > 1").await;
    assert!(plan.contains("lake_splits=2"), "{plan}");
    assert_never_shown(&plan);
    let described = describe_table(&cluster, &["db".into(), "kv".into()])
        .await
        .unwrap();
    assert_never_shown(&format!("{:?}", common::render_rows(&described)));

    // wrong credentials: moto accepts any, so point at a bucket that does not exist
    let mut model = load_local_store(&store).await.unwrap();
    assert!(model.set_table_property(
        "db",
        "logs",
        "table.datalake.paimon.warehouse",
        "s3://no-such-bucket/wh"
    ));
    let server = TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .unwrap();
    let cluster = cluster_session(&server, &s3).await;
    let e = cluster
        .execute("SELECT * FROM db.logs")
        .await
        .expect_err("no such bucket");
    let shown = format!("{e} {e:?}");
    assert!(shown.contains("no-such-bucket"), "{shown}");
    assert_never_shown(&shown);
}

/// The shell's object-store URLs: `COPY ... TO 's3://…'` and `CREATE EXTERNAL TABLE
/// ... LOCATION 's3://…'` reach the S3 server with the session's options (the shell's
/// `--lake-option`), as datafusion-cli's do; the secret is never shown.
#[tokio::test]
async fn copy_to_and_external_tables_on_s3_use_the_session_options() {
    let Some(s3) = s3_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap(),
    );
    let options = fluss_datafusion::sql::SessionOptions {
        object_store_options: s3.options(),
        ..Default::default()
    };
    let session = FlussSession::with_options(store, options).await.unwrap();
    session
        .execute("CREATE TABLE orders (id BIGINT, total DECIMAL(10, 2))")
        .await
        .unwrap();
    session
        .execute("INSERT INTO orders VALUES (1, 9.50), (2, 20.25), (3, 1.00)")
        .await
        .unwrap();
    let prefix = unique_prefix("exports");
    let location = format!("s3://{}/{prefix}/orders/", s3::BUCKET);
    let pretty = |batches: Vec<datafusion::arrow::array::RecordBatch>| {
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    };
    let copied = session
        .execute(&format!(
            "COPY (SELECT * FROM orders WHERE id > 1) TO '{location}' STORED AS PARQUET"
        ))
        .await
        .unwrap();
    assert!(pretty(copied).contains("| 2     |"));
    session
        .execute(&format!(
            "CREATE EXTERNAL TABLE exported STORED AS PARQUET LOCATION '{location}'"
        ))
        .await
        .unwrap();
    let read = pretty(
        session
            .execute("SELECT id, total FROM exported ORDER BY id")
            .await
            .unwrap(),
    );
    assert!(
        read.contains("| 2  | 20.25 |") && read.contains("| 3  | 1.00  |"),
        "{read}"
    );
    let explain = pretty(
        session
            .execute("EXPLAIN SELECT * FROM exported")
            .await
            .unwrap(),
    );
    assert_never_shown(&explain);
    // without the options, the same URL is refused, not read with someone else's keys
    let bare = FlussSession::new(Arc::new(
        LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap(),
    ))
    .await
    .unwrap();
    let refused = bare
        .execute(&format!("SELECT count(*) FROM '{location}'"))
        .await;
    assert!(refused.is_err(), "read {location} without its options");
    assert_never_shown(&refused.unwrap_err().to_string());
}
