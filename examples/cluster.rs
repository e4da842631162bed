//! Reading a live Fluss cluster: the application connects a `ClusterSource` (the
//! official client `fluss-rs` for metadata and offsets, raw FetchLog for the log) and
//! registers it as the `fluss` catalog of its own DataFusion `SessionContext`; every
//! table then union-reads its lake snapshot and the log tail the cluster serves.
//!
//! ```text
//! cargo run --example cluster -- host:9123 [database.table]
//! cargo run --example cluster          # no cluster at hand: an in-process one
//! ```
//!
//! Without an address the example starts the Fluss RPC test server of this
//! repository (`crates/fluss-test-support`) over a small LocalStore, so it runs
//! anywhere; the client side is the same either way.

use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use fluss_datafusion::provider::FlussCatalog;
use fluss_datafusion::source::{ClusterOptions, ClusterSource, FlussSource, LocalStore};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::server::{ServerConfig, TestServer};

/// A stand-in cluster: a LocalStore with a tiered table and a log tail, served over
/// Fluss's RPC protocol on 127.0.0.1.
async fn local_cluster(dir: &std::path::Path) -> Result<TestServer, Box<dyn std::error::Error>> {
    let root = dir.to_str().ok_or("temporary path is not UTF-8")?;
    let store = Arc::new(LocalStore::open(root).await?);
    let session = FlussSession::new(store.clone()).await?;
    for sql in [
        "CREATE TABLE fluss.events (id BIGINT, user_name STRING) \
         WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
        "INSERT INTO fluss.events VALUES (1, 'ann'), (2, 'bob'), (3, 'ann')",
        "CALL fluss.tier('fluss.events')",
        "INSERT INTO fluss.events VALUES (4, 'cid'), (5, 'ann')",
    ] {
        session.execute(sql).await?;
    }
    let model = load_local_store(&store).await?;
    Ok(TestServer::start(Arc::new(model), ServerConfig::default()).await?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = tempfile::tempdir()?;
    let (bootstrap_servers, table, _server) = match args.next() {
        Some(address) => (address, args.next(), None),
        None => {
            let server = local_cluster(dir.path()).await?;
            println!(
                "started a local Fluss RPC server at {}",
                server.bootstrap_servers()
            );
            (server.bootstrap_servers(), None, Some(server))
        }
    };
    let table = table.unwrap_or_else(|| "fluss.events".to_string());

    // 1. Connect: credentials and lake storage options would go in ClusterOptions too.
    let source = Arc::new(
        ClusterSource::connect(ClusterOptions {
            bootstrap_servers: bootstrap_servers.clone(),
            ..Default::default()
        })
        .await?,
    );
    println!(
        "databases of {bootstrap_servers}: {:?}",
        source.list_databases().await?
    );

    // 2. The application's own context, with the cluster as the `fluss` catalog.
    let ctx = SessionContext::new();
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(source)));
    for sql in [
        format!("SELECT * FROM fluss.{table} ORDER BY 1 LIMIT 10"),
        format!("SELECT count(*) AS all_rows FROM fluss.{table}"),
    ] {
        let batches = ctx.sql(&sql).await?.collect().await?;
        println!("{sql}\n{}", pretty_format_batches(&batches)?);
    }
    Ok(())
}
