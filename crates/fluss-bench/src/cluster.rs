//! The cluster source as a peer of the LocalStore source: the same store served by
//! the Fluss RPC test server on loopback (`fluss_test_support`) and read through
//! `ClusterSource` (fluss-rs admin, raw FetchLog), so the report can say what the
//! network path costs on the same queries; and planning time of a 64-bucket table
//! through both sources.

use std::sync::Arc;
use std::time::Instant;

use datafusion::prelude::{SessionConfig, SessionContext};
use fluss_datafusion::LocalStore;
use fluss_datafusion::provider::FlussCatalog;
use fluss_datafusion::source::{ClusterOptions, ClusterSource, FlussSource};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::server::{ServerConfig, TestServer};
use serde::Serialize;

use crate::Timing;
use crate::generate::{BenchResult, Context};

/// A test server serving a store and a session context reading it through the
/// cluster source (catalog `fluss`, as the LocalStore contexts name theirs).
pub struct ServedStore {
    /// Reads through `ClusterSource`.
    pub ctx: SessionContext,
    _server: TestServer,
}

fn ctx_over(source: Arc<dyn FlussSource>, tp: usize) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(tp));
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(source)));
    ctx
}

async fn connect(store: &LocalStore) -> BenchResult<(TestServer, ClusterSource)> {
    let model = load_local_store(store)
        .await
        .context(|| "loading the store into the test server".into())?;
    let server = TestServer::start(Arc::new(model), ServerConfig::default())
        .await
        .context(|| "starting the test server".into())?;
    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: server.bootstrap_servers(),
        ..ClusterOptions::default()
    })
    .await
    .context(|| "connecting the cluster source".into())?;
    Ok((server, source))
}

impl ServedStore {
    /// Serves what `store` holds now (a snapshot) on 127.0.0.1.
    pub async fn start(store: &LocalStore, tp: usize) -> BenchResult<Self> {
        let (server, source) = connect(store).await?;
        Ok(Self {
            ctx: ctx_over(Arc::new(source), tp),
            _server: server,
        })
    }
}

/// Planning time of one query on a table with [`PLANNING_BUCKETS`] buckets.
#[derive(Debug, Clone, Serialize)]
pub struct PlanningResult {
    /// Buckets of the tables planned.
    pub buckets: i32,
    /// The query planned (logical and physical plan, no execution).
    pub query: String,
    /// Through the LocalStore source.
    pub local_store: Timing,
    /// Through the cluster source and the test server on loopback.
    pub cluster: Timing,
}

/// Buckets of the planning benchmark's tables.
pub const PLANNING_BUCKETS: i32 = 64;

/// Plans a union read of a tiered 64-bucket primary-key table with a tail in every
/// bucket, `runs` times through each source in turn (after `warmup` plans each).
pub async fn planning_bench(
    root: &std::path::Path,
    runs: usize,
    warmup: usize,
) -> BenchResult<PlanningResult> {
    let store = Arc::new(
        LocalStore::open(&root.to_string_lossy())
            .await
            .context(|| format!("opening {}", root.display()))?,
    );
    let session = FlussSession::new(store.clone())
        .await
        .context(|| "session".into())?;
    let values: Vec<String> = (0..2000).map(|i| format!("({i}, 'v{i}', {i})")).collect();
    let tail: Vec<String> = (0..500)
        .map(|i| format!("({}, 'u{i}', {i})", i * 4))
        .collect();
    for sql in [
        "CREATE DATABASE plan".to_string(),
        format!(
            "CREATE TABLE plan.kv (id BIGINT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '{PLANNING_BUCKETS}', 'table.datalake.enabled' = 'true')"
        ),
        format!("INSERT INTO plan.kv VALUES {}", values.join(", ")),
        "CALL fluss.tier('plan.kv')".to_string(),
        format!("INSERT INTO plan.kv VALUES {}", tail.join(", ")),
    ] {
        session.execute(&sql).await.context(|| sql.clone())?;
    }
    let (_server, cluster) = connect(&store).await?;
    let local_ctx = ctx_over(store.clone(), 4);
    let cluster_ctx = ctx_over(Arc::new(cluster), 4);
    let query = "SELECT v, sum(n) FROM fluss.plan.kv WHERE n > 10 GROUP BY v".to_string();
    let plan = |ctx: &SessionContext| {
        let ctx = ctx.clone();
        let query = query.clone();
        async move {
            let started = Instant::now();
            let frame = ctx.sql(&query).await.context(|| query.clone())?;
            frame
                .create_physical_plan()
                .await
                .context(|| query.clone())?;
            Ok::<f64, Box<dyn std::error::Error + Send + Sync>>(
                started.elapsed().as_secs_f64() * 1e3,
            )
        }
    };
    for _ in 0..warmup.max(1) {
        plan(&local_ctx).await?;
        plan(&cluster_ctx).await?;
    }
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(3) {
        local.push(plan(&local_ctx).await?);
        remote.push(plan(&cluster_ctx).await?);
    }
    Ok(PlanningResult {
        buckets: PLANNING_BUCKETS,
        query,
        local_store: Timing::from_samples(local, 0),
        cluster: Timing::from_samples(remote, 0),
    })
}
