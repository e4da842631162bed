//! Union reads distributed over datafusion-distributed workers, on loopback only,
//! each checked against the same query run in one process: log and primary-key
//! tables with a lake and a tail, Paimon and Iceberg, partitioned or not, from a
//! LocalStore and from a cluster (the RPC test server); in-process workers and `fluss-worker` processes.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion_distributed::{DistributedMetricsFormat, explain_analyze};
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use fluss_datafusion::FlussSource;
use fluss_datafusion::distributed::{FlussPhysicalCodec, PlanSources};
use fluss_datafusion::source::{ClusterOptions, ClusterSource};
use fluss_datafusion::sql::{FlussSession, SessionOptions};
use fluss_distributed::{LocalWorker, TaskSizing, coordinator};
use fluss_test_support::local_store::{load_local_store, store_from_sql};
use fluss_test_support::server::{ServerConfig, TestServer};
use url::Url;

/// Log and primary-key tables on both lake formats, each tiered and then given a
/// tail (updates and deletes of tiered keys among it).
const TABLES: &[&str] = &[
    "CREATE DATABASE IF NOT EXISTS db",
    "CREATE TABLE db.log_p (id BIGINT, name STRING, n INT) \
     WITH ('bucket.num' = '4', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true')",
    "INSERT INTO db.log_p VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40), \
     (5, 'e', 50), (6, 'f', 60), (7, 'g', 70), (8, 'h', 80)",
    "CALL fluss.tier('db.log_p')",
    "INSERT INTO db.log_p VALUES (9, 'i', 90), (10, 'j', 100), (11, NULL, 110), (12, 'l', NULL)",
    "CREATE TABLE db.pk_p (id BIGINT, owner STRING, balance INT, PRIMARY KEY (id) NOT ENFORCED) \
     WITH ('bucket.num' = '4', 'table.datalake.enabled' = 'true')",
    "INSERT INTO db.pk_p VALUES (1, 'ann', 10), (2, 'bob', 20), (3, 'cy', 30), (4, 'di', 40), \
     (5, 'ed', 50), (6, 'fay', 60)",
    "CALL fluss.tier('db.pk_p')",
    "INSERT INTO db.pk_p VALUES (1, 'ann', 11), (7, 'gus', 70), (8, 'hal', 80)",
    "DELETE FROM db.pk_p WHERE id = 2",
    "CREATE TABLE db.log_i (id BIGINT, name STRING, n INT) \
     WITH ('bucket.num' = '4', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true', \
     'table.datalake.format' = 'iceberg')",
    "INSERT INTO db.log_i VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40), \
     (5, 'e', 50), (6, 'f', 60)",
    "CALL fluss.tier('db.log_i')",
    "INSERT INTO db.log_i VALUES (7, 'g', 70), (8, 'h', 80), (9, NULL, 90)",
    "CREATE TABLE db.pk_i (id BIGINT, owner STRING, balance INT, PRIMARY KEY (id) NOT ENFORCED) \
     WITH ('bucket.num' = '4', 'table.datalake.enabled' = 'true', \
     'table.datalake.format' = 'iceberg')",
    "INSERT INTO db.pk_i VALUES (1, 'ann', 10), (2, 'bob', 20), (3, 'cy', 30), (4, 'di', 40)",
    "CALL fluss.tier('db.pk_i')",
    "INSERT INTO db.pk_i VALUES (1, 'ann', 12), (2, 'bob', 21)",
    "DELETE FROM db.pk_i WHERE id = 3",
    "CALL fluss.tier('db.pk_i')",
    "INSERT INTO db.pk_i VALUES (4, 'di', 44), (5, 'ed', 50)",
    "DELETE FROM db.pk_i WHERE id = 2",
    "CREATE TABLE db.pk_by_day (id BIGINT, dt STRING, v INT, PRIMARY KEY (dt, id) NOT ENFORCED) \
     PARTITIONED BY (dt) WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
    "INSERT INTO db.pk_by_day VALUES (1, '2026-01-01', 10), (2, '2026-01-01', 20), \
     (1, '2026-01-02', 30), (2, '2026-01-02', 40)",
    "CALL fluss.tier('db.pk_by_day')",
    "INSERT INTO db.pk_by_day VALUES (1, '2026-01-01', 11), (3, '2026-01-03', 50)",
];

/// Queries over every table: whole rows, filters, aggregates, a join, the lake alone.
const QUERIES: &[&str] = &[
    "SELECT * FROM db.log_p",
    "SELECT name, n FROM db.log_p WHERE n > 35",
    "SELECT count(*), sum(n) FROM db.log_p",
    "SELECT * FROM db.pk_p",
    "SELECT owner FROM db.pk_p WHERE balance >= 30",
    "SELECT count(*), sum(balance) FROM db.pk_p",
    "SELECT * FROM db.log_i",
    "SELECT id FROM db.log_i WHERE name IS NULL OR n < 30",
    "SELECT * FROM db.pk_i",
    "SELECT count(*) FROM db.pk_i",
    "SELECT l.id, l.name, p.owner FROM db.log_p l JOIN db.pk_p p ON l.id = p.id",
    "SELECT * FROM \"db\".\"pk_p$lake\"",
    "SELECT * FROM \"db\".\"log_i$lake\" WHERE id > 2",
    "SELECT * FROM db.pk_by_day",
    "SELECT dt, sum(v) FROM db.pk_by_day WHERE dt >= '2026-01-02' GROUP BY dt",
];

/// Rows as sorted lines of text.
/// A worker's `host:port`, as errors name it.
fn address(url: &Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port().unwrap_or_default()
    )
}

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

async fn in_process_worker(source: Arc<dyn FlussSource>) -> LocalWorker {
    LocalWorker::start(source).await.unwrap()
}

/// A `fluss-worker` process on a free loopback port, killed on drop.
struct WorkerProcess {
    url: Url,
    child: Child,
}

impl WorkerProcess {
    fn url(&self) -> &Url {
        &self.url
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn worker_process(source_args: &[&str]) -> WorkerProcess {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fluss-worker"))
        .args(["--listen", "127.0.0.1:0", "--stop-with-stdin"])
        .args(source_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .unwrap();
    let address = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("fluss-worker said {first:?}"));
    WorkerProcess {
        url: Url::parse(&format!("http://{address}")).unwrap(),
        child,
    }
}

/// A session on `source` whose queries run on the workers at `urls`, every scan
/// split as far as it goes.
async fn distributed_session(source: Arc<dyn FlussSource>, urls: Vec<Url>) -> FlussSession {
    let sources = Arc::new(PlanSources::new([source.clone()]).unwrap());
    let sizing = TaskSizing {
        bytes_per_task: 1,
        max_tasks: None,
    };
    let options = SessionOptions {
        create_database: false,
        state_hook: Some(coordinator(urls, sources, sizing)),
        explain_renderer: Some(fluss_distributed::explain_renderer()),
        ..SessionOptions::default()
    };
    FlussSession::with_options(source, options).await.unwrap()
}

async fn physical_plan(session: &FlussSession, sql: &str) -> Arc<dyn ExecutionPlan> {
    session
        .context()
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

/// The rows each task of every stage produced (the stage's first node), from a
/// distributed plan that ran, as `EXPLAIN ANALYZE` counts them per task.
async fn rows_per_task(executed: Arc<dyn ExecutionPlan>) -> Vec<Vec<u64>> {
    let executed = fluss_distributed::distributed_plan(&executed);
    let text = explain_analyze(executed, DistributedMetricsFormat::PerTask)
        .await
        .unwrap();
    let mut stages = Vec::new();
    let mut in_stage = false;
    for line in text.lines() {
        if line.contains("┌───── Stage") {
            in_stage = true;
            continue;
        }
        if in_stage && let Some(at) = line.find("output_rows={") {
            let rest = &line[at + "output_rows={".len()..];
            let counts = rest[..rest.find('}').unwrap()]
                .split(", ")
                .map(|t| t.split(':').nth(1).unwrap().trim().parse::<u64>().unwrap())
                .collect();
            stages.push(counts);
            in_stage = false;
        }
    }
    stages
}

/// Every query gives the single process's rows; plans show their stages and split
/// scans; every task of a stage, each on its own worker, produced rows.
async fn check_queries(single: &FlussSession, distributed: &FlussSession, workers: usize) {
    let mut every_task_produced = 0;
    for sql in QUERIES {
        let expected = lines(&single.execute(sql).await.unwrap());
        let got = lines(&distributed.execute(sql).await.unwrap());
        assert_eq!(got, expected, "{sql}");
        let explain = lines(
            &distributed
                .execute(&format!("EXPLAIN {sql}"))
                .await
                .unwrap(),
        )
        .join("\n");
        assert!(explain.contains("DistributedExec"), "{sql}: {explain}");
        assert!(explain.contains("Stage 1"), "{sql}: {explain}");
        let plan = physical_plan(distributed, sql).await;
        let rows = lines(
            &collect(plan.clone(), distributed.context().task_ctx())
                .await
                .unwrap(),
        );
        assert_eq!(rows, expected, "{sql}");
        for stage in rows_per_task(plan).await {
            assert!(stage.len() <= workers, "{sql}: {stage:?}");
            if stage.len() == workers && stage.iter().all(|r| *r > 0) {
                every_task_produced += 1;
            }
        }
    }
    assert!(
        every_task_produced >= QUERIES.len() / 2,
        "only {every_task_produced} stages had rows from every worker"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_in_process_workers_read_what_one_process_reads() {
    let (_dir, store, single) = store_from_sql(TABLES).await;
    let source: Arc<dyn FlussSource> = store;
    let workers = [
        in_process_worker(source.clone()).await,
        in_process_worker(source.clone()).await,
    ];
    let urls = workers.iter().map(|w| w.url().clone()).collect();
    let distributed = distributed_session(source, urls).await;
    check_queries(&single, &distributed, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_worker_processes_read_what_one_process_reads() {
    let (dir, store, single) = store_from_sql(TABLES).await;
    let root = dir.path().to_str().unwrap();
    // memory limits written as the shell takes them (the worker refused `1g` once)
    let workers = [
        worker_process(&["--store", root, "--memory-limit", "1g"]),
        worker_process(&["--store", root, "--memory-limit", "1.5G"]),
    ];
    let urls = workers.iter().map(|w| w.url().clone()).collect();
    let distributed = distributed_session(store, urls).await;
    check_queries(&single, &distributed, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_read_a_cluster_as_one_process_does() {
    let (_dir, store, _) = store_from_sql(TABLES).await;
    let model = load_local_store(&store).await.unwrap();
    let server = TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .unwrap();
    let connect = || async {
        Arc::new(
            ClusterSource::connect(ClusterOptions {
                bootstrap_servers: server.bootstrap_servers(),
                ..ClusterOptions::default()
            })
            .await
            .unwrap(),
        ) as Arc<dyn FlussSource>
    };
    let single = FlussSession::new(connect().await).await.unwrap();
    let workers = [
        in_process_worker(connect().await).await,
        in_process_worker(connect().await).await,
    ];
    let urls = workers.iter().map(|w| w.url().clone()).collect();
    let distributed = distributed_session(connect().await, urls).await;
    check_queries(&single, &distributed, 2).await;
    // a process started on another source serves none of these plans
    let (_other_dir, other, _) = store_from_sql(&["CREATE DATABASE IF NOT EXISTS db"]).await;
    let strangers = [
        in_process_worker(other.clone()).await,
        in_process_worker(other).await,
    ];
    let urls = strangers.iter().map(|w| w.url().clone()).collect();
    let misdirected = distributed_session(connect().await, urls).await;
    let error = misdirected
        .execute("SELECT * FROM db.log_p")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("does not serve"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_after_planning_stay_invisible() {
    let (_dir, store, single) = store_from_sql(TABLES).await;
    let source: Arc<dyn FlussSource> = store;
    let workers = [
        in_process_worker(source.clone()).await,
        in_process_worker(source.clone()).await,
    ];
    let urls = workers.iter().map(|w| w.url().clone()).collect();
    let distributed = distributed_session(source, urls).await;
    let queries = [
        "SELECT * FROM db.log_p",
        "SELECT * FROM db.pk_p",
        "SELECT * FROM db.pk_i",
    ];
    let mut planned = Vec::new();
    for sql in queries {
        let expected = lines(&single.execute(sql).await.unwrap());
        planned.push((sql, physical_plan(&distributed, sql).await, expected));
    }
    for sql in [
        "INSERT INTO db.log_p VALUES (13, 'm', 130), (14, 'n', 140)",
        "INSERT INTO db.pk_p VALUES (1, 'ann', 99), (20, 'zed', 200)",
        "DELETE FROM db.pk_p WHERE id = 3",
        "INSERT INTO db.pk_i VALUES (1, 'ann', 99)",
        "CALL fluss.tier('db.pk_p')",
    ] {
        single.execute(sql).await.unwrap();
    }
    for (sql, plan, expected) in planned {
        let got = lines(
            &collect(plan, distributed.context().task_ctx())
                .await
                .unwrap(),
        );
        assert_eq!(got, expected, "{sql}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_worker_fails_the_query_naming_it_never_a_partial_answer() {
    let (dir, store, _) = store_from_sql(TABLES).await;
    let root = dir.path().to_str().unwrap();
    let alive = worker_process(&["--store", root]);
    let mut dead = worker_process(&["--store", root]);
    let urls = vec![alive.url().clone(), dead.url().clone()];
    let distributed = distributed_session(store, urls).await;
    let plan = physical_plan(&distributed, "SELECT * FROM db.log_p").await;
    dead.child.kill().unwrap();
    dead.child.wait().unwrap();
    for _ in 0..3 {
        // either task may be routed to the dead worker: run until one is
        let plan = plan.clone();
        match collect(plan, distributed.context().task_ctx()).await {
            Ok(rows) => assert_eq!(lines(&rows).len(), 12, "a whole answer or an error"),
            Err(e) => {
                let error = fluss_datafusion::Error::from(e);
                println!("{error}");
                assert_eq!(error.kind(), fluss_datafusion::ErrorKind::Io, "{error}");
                let message = error.to_string();
                assert!(
                    message.contains(&format!("the worker at {} (", address(dead.url()))),
                    "{message}"
                );
                return;
            }
        }
    }
    panic!("no query reached the dead worker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_killed_mid_query_ends_it_in_an_error_or_the_whole_answer() {
    let rows = 300_000;
    let (dir, store, _) = store_from_sql(&[
        "CREATE DATABASE IF NOT EXISTS db",
        "CREATE TABLE db.big (id BIGINT, name STRING) \
         WITH ('bucket.num' = '4', 'bucket.key' = 'id')",
        &format!(
            "INSERT INTO db.big SELECT value, 'name-' || value FROM generate_series(1, {rows})"
        ),
    ])
    .await;
    let root = dir.path().to_str().unwrap();
    let alive = worker_process(&["--store", root]);
    let mut killed = worker_process(&["--store", root]);
    let urls = vec![alive.url().clone(), killed.url().clone()];
    let distributed = distributed_session(store, urls).await;
    let mut stream = distributed
        .context()
        .sql("SELECT id, name FROM db.big")
        .await
        .unwrap()
        .execute_stream()
        .await
        .unwrap();
    use futures::StreamExt;
    let mut seen = match stream.next().await {
        Some(Ok(batch)) => batch.num_rows(),
        other => panic!("no first batch: {other:?}"),
    };
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    let mut failed = None;
    while let Some(batch) = stream.next().await {
        match batch {
            Ok(batch) => seen += batch.num_rows(),
            Err(e) => {
                failed = Some(e.to_string());
                break;
            }
        }
    }
    match failed {
        Some(error) => {
            println!("the query failed after {seen} rows: {error}");
            assert!(error.contains("distributed over the workers"), "{error}");
            assert!(
                error.contains(&format!("the worker at {} (", address(killed.url()))),
                "{error}"
            );
        }
        // the killed worker had sent all its rows before it died
        None => assert_eq!(seen, rows, "a partial answer without an error"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scan_nodes_encode_and_decode_without_a_network() {
    let (_dir, store, single) = store_from_sql(TABLES).await;
    let store_again = store.clone();
    let source: Arc<dyn FlussSource> = store;
    let codec = FlussPhysicalCodec::new(Arc::new(PlanSources::new([source]).unwrap()));
    let ctx = single.context().task_ctx();
    for sql in QUERIES {
        let plan = physical_plan(&single, sql).await;
        let bytes = physical_plan_to_bytes_with_extension_codec(plan.clone(), &codec)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let decoded = physical_plan_from_bytes_with_extension_codec(&bytes, &ctx, &codec)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(
            displayable(decoded.as_ref()).indent(true).to_string(),
            displayable(plan.as_ref()).indent(true).to_string(),
            "{sql}"
        );
        let expected = lines(&single.execute(sql).await.unwrap());
        assert_eq!(
            lines(&collect(decoded, ctx.clone()).await.unwrap()),
            expected,
            "{sql}"
        );
    }
    // A worker keeps primary-key tails folded between plans, as one process does,
    // unless its caches are bounded to nothing.
    let sql = "SELECT * FROM db.pk_p";
    let plan = physical_plan(&single, sql).await;
    for (cache_bytes, kept) in [(None, true), (Some(0), false)] {
        let source: Arc<dyn FlussSource> = store_again.clone();
        let mut sources = PlanSources::new([source]).unwrap();
        if let Some(bytes) = cache_bytes {
            sources = sources.with_cache_bytes(bytes, bytes);
        }
        let codec = FlussPhysicalCodec::new(Arc::new(sources));
        let bytes = physical_plan_to_bytes_with_extension_codec(plan.clone(), &codec).unwrap();
        let mut hits = Vec::new();
        for _ in 0..2 {
            let decoded =
                physical_plan_from_bytes_with_extension_codec(&bytes, &ctx, &codec).unwrap();
            collect(decoded.clone(), ctx.clone()).await.unwrap();
            hits.push(metric_sum(decoded.as_ref(), "tail_cache_hits"));
        }
        assert_eq!(hits[0], 0, "nothing was kept before the first plan");
        assert_eq!(hits[1] > 0, kept, "cache bytes {cache_bytes:?}: {hits:?}");
    }
}

/// The sum of the counter `name` over every node of `plan`.
fn metric_sum(plan: &dyn ExecutionPlan, name: &str) -> usize {
    let own = plan
        .metrics()
        .and_then(|m| m.sum_by_name(name))
        .map_or(0, |v| v.as_usize());
    own + plan
        .children()
        .into_iter()
        .map(|c| metric_sum(c.as_ref(), name))
        .sum::<usize>()
}
