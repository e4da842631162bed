//! Union reads distributed over datafusion-distributed workers, on loopback only,
//! checked against the same queries run in one process.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::execution::runtime_env::RuntimeEnv;
use fluss_datafusion::FlussSource;
use fluss_datafusion::distributed::PlanSources;
use fluss_datafusion::sql::{FlussSession, SessionOptions};
use fluss_distributed::{TaskSizing, coordinator};
use url::Url;

/// Rows as sorted lines of text.
fn lines(batches: &[RecordBatch]) -> Vec<String> {
    let options = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for batch in batches {
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = formatters
                .iter()
                .map(|f| f.value(row).to_string())
                .collect();
            out.push(cells.join("|"));
        }
    }
    out.sort();
    out
}

/// A worker served in this process on a free loopback port, stopped on drop.
struct InProcessWorker {
    url: Url,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for InProcessWorker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn in_process_worker(source: Arc<dyn FlussSource>) -> InProcessWorker {
    let sources = Arc::new(PlanSources::new([source]).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = fluss_distributed::worker(sources, Arc::new(RuntimeEnv::default()));
    tokio::spawn(fluss_distributed::serve(worker, listener, async move {
        let _ = stopped.await;
    }));
    InProcessWorker {
        url,
        stop: Some(stop),
    }
}

/// A session on `source` whose queries run on `workers`, every scan split as far as
/// it goes.
async fn distributed_session(
    source: Arc<dyn FlussSource>,
    workers: &[InProcessWorker],
) -> FlussSession {
    let sources = Arc::new(PlanSources::new([source.clone()]).unwrap());
    let sizing = TaskSizing {
        bytes_per_task: 1,
        max_tasks: None,
    };
    let urls = workers.iter().map(|w| w.url.clone()).collect();
    let options = SessionOptions {
        create_database: false,
        state_hook: Some(coordinator(urls, sources, sizing)),
        explain_renderer: Some(fluss_distributed::explain_renderer()),
        ..SessionOptions::default()
    };
    FlussSession::with_options(source, options).await.unwrap()
}

const TABLES: &[&str] = &[
    "CREATE DATABASE IF NOT EXISTS db",
    "CREATE TABLE db.events (id BIGINT, name STRING, n INT) \
     WITH ('bucket.num' = '4', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true')",
    "INSERT INTO db.events VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40), \
     (5, 'e', 50), (6, 'f', 60), (7, 'g', 70), (8, 'h', 80)",
    "CALL fluss.tier('db.events')",
    "INSERT INTO db.events VALUES (9, 'i', 90), (10, 'j', 100), (11, NULL, 110), (12, 'l', NULL)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_paimon_log_table_reads_the_same_over_two_in_process_workers() {
    let (_dir, store, single) = fluss_test_support::local_store::store_from_sql(TABLES).await;
    let source: Arc<dyn FlussSource> = store;
    let workers = vec![
        in_process_worker(source.clone()).await,
        in_process_worker(source.clone()).await,
    ];
    let distributed = distributed_session(source, &workers).await;
    for sql in [
        "SELECT * FROM db.events",
        "SELECT name, n FROM db.events WHERE n > 35",
        "SELECT count(*), sum(n) FROM db.events",
    ] {
        let expected = lines(&single.execute(sql).await.unwrap());
        let explain = distributed
            .execute(&format!("EXPLAIN {sql}"))
            .await
            .unwrap();
        println!("{}", lines(&explain).join("\n"));
        let got = lines(&distributed.execute(sql).await.unwrap());
        assert_eq!(got, expected, "{sql}");
    }
}
