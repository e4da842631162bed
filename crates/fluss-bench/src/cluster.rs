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

/// A LocalStore at `root` and a session writing into it.
async fn store_at(root: &std::path::Path) -> BenchResult<(Arc<LocalStore>, FlussSession)> {
    let store = Arc::new(
        LocalStore::open(&root.to_string_lossy())
            .await
            .context(|| format!("opening {}", root.display()))?,
    );
    let session = FlussSession::new(store.clone())
        .await
        .context(|| "session".into())?;
    Ok((store, session))
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
    let (store, session) = store_at(root).await?;
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

/// A point lookup on a cluster: one SQL statement through [`FlussSession`] against
/// fluss-rs's own `Lookuper` round trip, the same keys on the same served table.
#[derive(Debug, Clone, Serialize)]
pub struct KeyLookupResult {
    /// Rows of the table looked up in.
    pub rows: usize,
    /// The statement timed (`{key}` is each run's key).
    pub query: String,
    /// `Lookuper::lookup` of one key (created once, warm; a lookup batch window of
    /// 2 ms), per key.
    pub lookuper: Timing,
    /// The statement, planned and executed in a warm session, per key.
    pub sql: Timing,
    /// `EXPLAIN` of the statement, per key: the table's metadata and planning, without
    /// the lookup.
    pub sql_planning: Timing,
    /// The statement with `fluss.metadata_max_age_ms` = [`AGED_METADATA_MS`]: planned
    /// from the table as last fetched, without the Metadata request confirming it.
    pub sql_aged_metadata: Timing,
    /// The enrichment join timed (recent log rows joined with the table on its key).
    pub enrichment_query: String,
    /// The join with lookups (`fluss.key_lookups` on and `fluss.lookup_key_cost_rows`
    /// 0: the build side's keys looked up whatever the table's size).
    pub enrichment_lookup: Timing,
    /// The same join scanning the table (`fluss.key_lookups` off).
    pub enrichment_scan: Timing,
    /// What the session chose by default for the join: `lookups` or `scan`
    /// (`fluss.lookup_key_cost_rows`).
    pub enrichment_default: String,
}

/// `fluss.metadata_max_age_ms` of [`KeyLookupResult::sql_aged_metadata`].
pub const AGED_METADATA_MS: u64 = 60_000;

/// Log rows of the enrichment join (each a random key of the table).
pub const ENRICHMENT_EVENTS: usize = 1_000;

/// Rows of the key-lookup benchmark's table (SF 1 `customer` has 150,000).
pub const KEY_LOOKUP_ROWS: usize = 150_000;

/// Times point lookups of `runs` keys of a `rows`-row table on a tiered primary-key table with a tail,
/// served by the test server: through fluss-rs's `Lookuper` and through SQL, key by
/// key in turn (after `warmup` of each).
pub async fn key_lookup_bench(
    root: &std::path::Path,
    rows: usize,
    runs: usize,
    warmup: usize,
) -> BenchResult<KeyLookupResult> {
    let (store, session) = store_at(root).await?;
    let mut statements = vec![
        "CREATE DATABASE look".to_string(),
        "CREATE TABLE look.customer (c_custkey BIGINT, c_name STRING, c_acctbal DOUBLE, \
         c_comment STRING, PRIMARY KEY (c_custkey) NOT ENFORCED) \
         WITH ('bucket.num' = '8', 'table.datalake.enabled' = 'true')"
            .to_string(),
    ];
    for chunk in (0..rows).collect::<Vec<_>>().chunks(10_000) {
        let values: Vec<String> = chunk
            .iter()
            .map(|i| format!("({i}, 'Customer#{i:09}', {}.5, 'comment of {i}')", i % 9999))
            .collect();
        statements.push(format!(
            "INSERT INTO look.customer VALUES {}",
            values.join(", ")
        ));
    }
    statements.push("CALL fluss.tier('look.customer')".to_string());
    let updates: Vec<String> = (0..rows / 10)
        .map(|i| format!("({}, 'Updated#{i}', 1.0, 'updated')", i * 10))
        .collect();
    statements.push(format!(
        "INSERT INTO look.customer VALUES {}",
        updates.join(", ")
    ));
    for sql in statements {
        session
            .execute(&sql)
            .await
            .context(|| sql.chars().take(80).collect())?;
    }
    // the enrichment join's recent events: a log table not tiered
    let events: Vec<String> = (0..ENRICHMENT_EVENTS)
        .map(|i| format!("({i}, {}, {})", (i * 104_729) % rows, i % 100))
        .collect();
    for sql in [
        "CREATE TABLE look.events (event BIGINT, customer BIGINT, amount INT) \
         WITH ('bucket.num' = '1')"
            .to_string(),
        format!("INSERT INTO look.events VALUES {}", events.join(", ")),
    ] {
        session
            .execute(&sql)
            .await
            .context(|| sql.chars().take(80).collect())?;
    }
    let (server, cluster) = connect(&store).await?;
    let remote = FlussSession::with_options(
        Arc::new(cluster),
        fluss_datafusion::sql::SessionOptions {
            default_database: "look".into(),
            ..Default::default()
        },
    )
    .await
    .context(|| "cluster session".into())?;
    // keys spread over the table, a tenth of them updated in the tail
    let keys = |i: usize| ((i * 7919) % rows) as i64;
    measure_lookups(
        &remote,
        &server.bootstrap_servers(),
        LookupTables {
            database: "look",
            table: "customer",
            key_column: "c_custkey",
            value_column: "c_acctbal",
            events: "events",
            rows,
        },
        keys,
        runs,
        warmup,
    )
    .await
}

/// The tables [`measure_lookups`] reads: a primary-key table keyed by one BIGINT
/// column, and a log table of recent events whose `customer` column holds its keys.
pub struct LookupTables<'a> {
    /// The database of both tables.
    pub database: &'a str,
    /// The primary-key table.
    pub table: &'a str,
    /// Its primary key (one BIGINT column).
    pub key_column: &'a str,
    /// A numeric column the enrichment join sums.
    pub value_column: &'a str,
    /// The log table of recent events (`customer BIGINT` among its columns).
    pub events: &'a str,
    /// Rows of the primary-key table.
    pub rows: usize,
}

/// Times point lookups (SQL through `remote` against fluss-rs's `Lookuper` on a
/// connection of its own to `bootstrap_servers`, key `keys(i)` in run `i`, each
/// answered with one row by both) and the enrichment join of the events with the
/// table, with key lookups and scanning in turn (same answers required). Shared by
/// the test-server benchmark and the head-to-head on the real cluster.
pub async fn measure_lookups(
    remote: &FlussSession,
    bootstrap_servers: &str,
    tables: LookupTables<'_>,
    keys: impl Fn(usize) -> i64,
    runs: usize,
    warmup: usize,
) -> BenchResult<KeyLookupResult> {
    use fluss::client::FlussConnection;
    use fluss::config::Config;
    use fluss::metadata::TablePath;
    use fluss::row::GenericRow;

    let LookupTables {
        database,
        table,
        key_column,
        value_column,
        events,
        rows,
    } = tables;
    // a short lookup batch window (fluss-rs's default of 100 ms would make each single
    // lookup wait for the rest of its window)
    let connection = FlussConnection::new(Config {
        bootstrap_servers: bootstrap_servers.to_string(),
        lookup_batch_timeout_ms: 2,
        ..Default::default()
    })
    .await
    .context(|| "fluss-rs connection".into())?;
    let served = connection
        .get_table(&TablePath::new(database, table))
        .await
        .context(|| "fluss-rs table".into())?;
    let mut lookuper = served
        .new_lookup()
        .and_then(|l| l.create_lookuper())
        .context(|| "fluss-rs lookuper".into())?;
    let query = format!("SELECT * FROM {database}.{table} WHERE {key_column} = {{key}}");
    let (mut direct, mut sql, mut planning, mut aged) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..warmup.max(1) + runs.max(5) {
        let k = keys(i);
        let started = Instant::now();
        let found = lookuper
            .lookup(&GenericRow::from_data(vec![k]))
            .await
            .context(|| format!("Lookuper::lookup({k})"))?
            .to_record_batch()
            .context(|| "lookup result".into())?
            .num_rows();
        let lookuper_ms = started.elapsed().as_secs_f64() * 1e3;
        let statement = query.replace("{key}", &k.to_string());
        let started = Instant::now();
        let batches = remote
            .execute(&statement)
            .await
            .context(|| statement.clone())?;
        let sql_ms = started.elapsed().as_secs_f64() * 1e3;
        // the same statement planned only: table metadata and planning, no lookup
        let explain = format!("EXPLAIN {statement}");
        let started = Instant::now();
        remote.execute(&explain).await.context(|| explain.clone())?;
        let planning_ms = started.elapsed().as_secs_f64() * 1e3;
        // and with metadata of a bounded age accepted: no confirming request
        let set = format!("SET fluss.metadata_max_age_ms = {AGED_METADATA_MS}");
        remote.execute(&set).await.context(|| set.clone())?;
        let started = Instant::now();
        let again = remote
            .execute(&statement)
            .await
            .context(|| statement.clone())?;
        let aged_ms = started.elapsed().as_secs_f64() * 1e3;
        remote
            .execute("SET fluss.metadata_max_age_ms = 0")
            .await
            .context(|| "SET".into())?;
        let answered: usize = batches.iter().map(|b| b.num_rows()).sum();
        let answered_again: usize = again.iter().map(|b| b.num_rows()).sum();
        if answered != found || answered != 1 || answered_again != 1 {
            return Err(format!("{statement}: {answered} rows, the Lookuper found {found}").into());
        }
        if i >= warmup.max(1) {
            direct.push(lookuper_ms);
            sql.push(sql_ms);
            planning.push(planning_ms);
            aged.push(aged_ms);
        }
    }
    // the enrichment join, with lookups and scanning, in turn
    let enrichment_query = format!(
        "SELECT count(*), sum(c.{value_column}) FROM {database}.{events} e \
         JOIN {database}.{table} c ON e.customer = c.{key_column}"
    );
    // what the session chooses by default (lookups or a scan, by estimated costs)
    let explain = format!("EXPLAIN {enrichment_query}");
    let plan = remote.execute(&explain).await.context(|| explain.clone())?;
    let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan)
        .context(|| "rendering".into())?
        .to_string();
    let enrichment_default = if plan.contains("FlussLookupJoinExec") {
        "lookups"
    } else {
        "scan"
    };
    // then each way, forced: lookups whatever the costs, or none
    remote
        .execute("SET fluss.lookup_key_cost_rows = 0")
        .await
        .context(|| "SET".into())?;
    let (mut looked, mut scanned) = (Vec::new(), Vec::new());
    for i in 0..warmup.max(1) + (runs / 5).max(5) {
        let mut answers = Vec::new();
        for (lookups, samples) in [(true, &mut looked), (false, &mut scanned)] {
            let set = format!("SET fluss.key_lookups = {lookups}");
            remote.execute(&set).await.context(|| set.clone())?;
            let started = Instant::now();
            let batches = remote
                .execute(&enrichment_query)
                .await
                .context(|| enrichment_query.clone())?;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            answers.push(
                datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                    .context(|| "rendering".into())?
                    .to_string(),
            );
            if i >= warmup.max(1) {
                samples.push(ms);
            }
        }
        if answers[0] != answers[1] {
            return Err(format!(
                "{enrichment_query}: lookups answered {} but the scan {}",
                answers[0], answers[1]
            )
            .into());
        }
    }
    let defaults = fluss_datafusion::provider::FlussOptions::default();
    for reset in [
        format!("SET fluss.key_lookups = {}", defaults.key_lookups),
        format!(
            "SET fluss.lookup_key_cost_rows = {}",
            defaults.lookup_key_cost_rows
        ),
    ] {
        remote.execute(&reset).await.context(|| reset.clone())?;
    }
    Ok(KeyLookupResult {
        enrichment_default: enrichment_default.into(),
        enrichment_query,
        enrichment_lookup: Timing::from_samples(looked, 1),
        enrichment_scan: Timing::from_samples(scanned, 1),
        rows,
        query,
        lookuper: Timing::from_samples(direct, 1),
        sql: Timing::from_samples(sql, 1),
        sql_planning: Timing::from_samples(planning, 1),
        sql_aged_metadata: Timing::from_samples(aged, 1),
    })
}
