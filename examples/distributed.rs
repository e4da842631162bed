//! A union read distributed over two workers (datafusion-distributed): the
//! coordinator plans the query once, pinning the cut, and each worker reads its
//! share of the buckets and lake files. Here both workers run in this process; in a
//! deployment each is a `fluss-worker --listen host:port --store <root>` process,
//! and the shell takes them as `fluss-sql --workers host:port,host:port`.
//!
//! ```text
//! cargo run --example distributed
//! ```

use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use fluss_datafusion::FlussSource;
use fluss_datafusion::distributed::PlanSources;
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::sql::{FlussSession, SessionOptions};
use fluss_distributed::{LocalWorker, TaskSizing, coordinator, explain_renderer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("store");
    let root = root.to_str().ok_or("temporary path is not UTF-8")?;
    let store: Arc<dyn FlussSource> = Arc::new(LocalStore::open(root).await?);

    // A table with rows in the lake and more in the log tail.
    let setup = FlussSession::new(store.clone()).await?;
    setup
        .execute(
            "CREATE TABLE orders (id BIGINT, customer STRING, amount DOUBLE) \
             WITH ('bucket.num' = '4', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true')",
        )
        .await?;
    setup
        .execute(
            "INSERT INTO orders SELECT value, 'customer-' || (value % 7), value * 1.5 \
             FROM generate_series(1, 800)",
        )
        .await?;
    setup.execute("CALL fluss.tier('orders')").await?;
    setup
        .execute(
            "INSERT INTO orders SELECT value, 'customer-' || (value % 7), value * 1.5 \
             FROM generate_series(801, 1000)",
        )
        .await?;

    // Two workers on loopback ports, serving plans that read this store (each a
    // `fluss-worker` process in a deployment); they stop when dropped.
    let workers = [
        LocalWorker::start(store.clone()).await?,
        LocalWorker::start(store.clone()).await?,
    ];
    let urls = workers.iter().map(|w| w.url().clone()).collect();

    // The coordinator: a session whose queries are planned over the workers. Small
    // tables are split too here (one task per byte); the default is 128 MiB a task.
    let sizing = TaskSizing {
        bytes_per_task: 1,
        max_tasks: None,
    };
    let options = SessionOptions {
        state_hook: Some(coordinator(
            urls,
            Arc::new(PlanSources::new([store.clone()])?),
            sizing,
        )),
        explain_renderer: Some(explain_renderer()),
        ..SessionOptions::default()
    };
    let session = FlussSession::with_options(store, options).await?;
    let query = "SELECT customer, count(*) AS orders, sum(amount) AS total \
                 FROM orders GROUP BY customer ORDER BY customer";
    let explain = session.execute(&format!("EXPLAIN {query}")).await?;
    println!("{}", pretty_format_batches(&explain)?);
    let rows = session.execute(query).await?;
    println!("{}", pretty_format_batches(&rows)?);
    Ok(())
}
