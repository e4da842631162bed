//! A live Fluss cluster as a [`FlussSource`]: metadata, offsets and lake snapshots
//! through the official client `fluss-rs` (`FlussAdmin`), log reads as raw FetchLog
//! requests whose batches this crate's own codec decodes ([`fetch`]).
//!
//! Why raw FetchLog rather than fluss-rs's scanners: fluss-rs 1.0 has no bounded
//! Arrow reader for primary-key tables (its Arrow scanner refuses them; the row
//! scanner yields one record at a time), it does not verify batch CRCs, and its Arrow
//! scanner retries an out-of-range fetch forever with empty polls instead of failing.
//! The raw path reads log and primary-key tables alike, as whole batches with their
//! change-type vectors, CRC-checked, and an offset the log no longer holds is an
//! error naming the bucket and offset.
//!
//! ```text
//!   FlussAdmin (fluss-rs) ── databases, older schemas, partitions, readable lake
//!                            snapshot
//!   Metadata (fluss-rs) ──── tables (a tablet server's cache), bucket leaders
//!                            ──> TabletConnection ── FetchLog ──> LogBatch framing
//!                                ──> LogCursor (CRC, contiguity, decode)
//!                            ──> TabletConnection ── ListOffsets (both ends at once),
//!                                Lookup (one request per server)
//! ```

mod client_options;
mod fetch;
mod kv_scan;
mod lookup;
mod predicate;
mod remote_log;
#[cfg_attr(not(feature = "test-support"), allow(dead_code, unreachable_pub))]
pub mod wire;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use fluss::client::{FlussAdmin, FlussConnection};
use fluss::config::Config;
use fluss::metadata::{PartitionInfo, PhysicalTablePath, TableBucket, TableInfo, TablePath};
use fluss::rpc::FlussError;
use futures::stream::BoxStream;

use self::fetch::{BucketFetch, BucketFetchReader, PlainCredentials, TabletConnection};
use super::{BucketLocation, BucketOffsets, FlussSource, FlussTable, LookedUp, ReadableSnapshot};
use crate::error::{Error, ErrorKind, Result};
use crate::lake::LakeLocation;
use crate::log::{
    ChangelogBatch, LogCursor, LogRange, LogReadOptions, SchemaHistory, SchemaVersion,
};
use crate::source::metadata::TableBucketOffsets;

/// How to reach a cluster and its lakes.
#[derive(Clone, Default)]
pub struct ClusterOptions {
    /// `host:port[,host:port…]` of the coordinator.
    pub bootstrap_servers: String,
    /// SASL/PLAIN user, when the cluster requires authentication.
    pub sasl_username: Option<String>,
    /// SASL/PLAIN password (never shown in `Debug`, errors or EXPLAIN).
    pub sasl_password: Option<String>,
    /// Options added to every table's lake catalog and storage options
    /// (`s3.endpoint`, `s3.access-key-id`, …): they may hold credentials.
    pub lake_options: HashMap<String, String>,
    /// Most bytes per FetchLog request for one bucket (default 1 MiB, Fluss's
    /// `client.scanner.log.fetch.max-bytes-for-bucket`).
    pub max_fetch_bytes: Option<i32>,
    /// Fluss client options for writes, by Fluss's names (`client.writer.acks`,
    /// `client.writer.batch-size`, `client.writer.batch-timeout`, ...).
    pub client_options: HashMap<String, String>,
}

impl fmt::Debug for ClusterOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<&String> = self.lake_options.keys().collect();
        keys.sort();
        f.debug_struct("ClusterOptions")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("sasl_username", &self.sasl_username)
            .field("sasl_password", &self.sasl_password.as_ref().map(|_| "***"))
            .field("lake_option_keys", &keys)
            .finish()
    }
}

/// A Fluss cluster read through its RPC protocol.
///
/// Every request to the cluster gives up after the source's request timeout
/// ([`ClusterSource::with_request_timeout`], 30 s by default, Fluss's
/// `client.request-timeout`): a server that stops answering fails the query naming the
/// server instead of hanging it. fluss-rs 1.0 has no request timeout of its own.
///
/// Every client call runs on the source's own runtime: fluss-rs spawns each
/// connection's reader task where the connection is first made, and DataFusion's
/// synchronous catalog methods reach the source through a short-lived runtime
/// (`provider/blocking.rs`) whose tasks die with it; a connection made there would
/// hang every later request on it.
pub struct ClusterSource {
    options: ClusterOptions,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    connection: Arc<FlussConnection>,
    admin: Arc<FlussAdmin>,
    tablets: Arc<tokio::sync::Mutex<Tablets>>,
    request_timeout: Duration,
    /// The lake options, shared by every bucket read (remote log segments).
    storage_options: Arc<HashMap<String, String>>,
    /// Schema histories by (table id, latest schema id): a schema id's schema never
    /// changes, so only a table's first statement under a new schema fetches the
    /// older ones.
    schemas: std::sync::Mutex<HashMap<(i64, i32), Arc<SchemaHistory>>>,
    /// When each table's metadata was last asked for (the request's start, so an
    /// age is never understated).
    fetched_at: std::sync::Mutex<HashMap<TablePath, std::time::Instant>>,
}

/// Open fetch connections by (tablet server address, stripe).
type Tablets = HashMap<(String, i32), Arc<TabletConnection>>;

impl Drop for ClusterSource {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which async code may not; let it wind down.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl fmt::Debug for ClusterSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterSource")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The default of [`ClusterOptions::max_fetch_bytes`].
const DEFAULT_MAX_FETCH_BYTES: i32 = 1 << 20;

/// Connections kept to each tablet server for log fetches (lookups and the two ends of
/// ListOffsets get one each beside them).
const CONNECTIONS_PER_SERVER: i32 = 4;

/// The Lookup request version sent: v1 carries keys encoded as the table's kv
/// format version says (Paimon `BinaryRow` keys for format 2 tables with their own
/// bucket key), which v0 servers reject for such tables (apache/fluss
/// `ReplicaManager.validateClientVersionForPkTable`); every server from 0.9 takes it.
const LOOKUP_API_VERSION: i16 = 1;

/// Schema histories kept at most (then the cache starts over).
const MAX_CACHED_SCHEMA_HISTORIES: usize = 1024;

/// The default request timeout (Fluss's `client.request-timeout`).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What a fluss-rs call answers.
type ClientResult<T> = std::result::Result<T, fluss::error::Error>;

/// Whether a fluss-rs call failed on its connection (closed by the server, or not
/// made), not on an answer: a read may then be sent again.
fn on_a_closed_connection(error: &fluss::error::Error) -> bool {
    use fluss::rpc::RpcError;
    matches!(
        error,
        fluss::error::Error::RpcError {
            source: RpcError::ConnectionError(_) | RpcError::Poisoned(_),
            ..
        }
    )
}

/// A fluss-rs error as this crate's: missing objects are `NotFound`, the rest
/// `Cluster`, with the client's message.
/// An error of the fluss-rs client: not-found errors as such, others as cluster
/// errors naming the cluster (`bootstrap_servers`).
fn client_error<'a>(
    what: &'a str,
    bootstrap_servers: &'a str,
) -> impl FnOnce(fluss::error::Error) -> Error + 'a {
    move |e| {
        let kind = match e.api_error() {
            Some(
                FlussError::TableNotExist
                | FlussError::DatabaseNotExist
                | FlussError::PartitionNotExists
                | FlussError::SchemaNotExist,
            ) => ErrorKind::NotFound,
            _ => ErrorKind::Cluster,
        };
        let error = Error::new(kind, format!("{what}: {}", cluster_said(&e)));
        if kind == ErrorKind::Cluster {
            error.with_context("bootstrap_servers", bootstrap_servers)
        } else {
            error
        }
    }
}

/// A fluss-rs error in words: an error the cluster answered as its message, code and
/// name (fluss-rs shows it as a Rust struct), anything else as fluss-rs words it.
fn cluster_said(e: &fluss::error::Error) -> String {
    match e {
        fluss::error::Error::FlussAPIError { api_error } => format!(
            "{} (Fluss error {}, {:?})",
            api_error.message.trim_end_matches('.'),
            api_error.code,
            FlussError::for_code(api_error.code)
        ),
        other => other.to_string(),
    }
}

impl ClusterSource {
    /// A lake snapshot with its offsets (GetLakeSnapshot): the readable one
    /// (`snapshot_id` `None`), or the one with that id; `None` where there is none.
    async fn get_lake_snapshot(
        &self,
        table: &FlussTable,
        snapshot_id: Option<i64>,
    ) -> Result<Option<ReadableSnapshot>> {
        if table.lake_format().is_none() {
            return Ok(None);
        }
        let (admin, path) = (self.admin.clone(), table.path.clone());
        let snapshot = match self
            .read_on_client(|| {
                let (admin, path) = (admin.clone(), path.clone());
                async move {
                    match snapshot_id {
                        None => admin.get_lake_snapshot(&path, None, Some(true)).await,
                        Some(id) => admin.get_lake_snapshot(&path, Some(id), None).await,
                    }
                }
            })
            .await?
        {
            Ok(s) => s,
            Err(e) if e.api_error() == Some(FlussError::LakeSnapshotNotExist) => return Ok(None),
            Err(e) => {
                return Err(client_error(
                    "cannot get the lake snapshot",
                    &self.options.bootstrap_servers,
                )(e)
                .with_context("table", table.path.to_string()));
            }
        };
        let buckets = table.info.get_num_buckets().max(0) as usize;
        let mut offsets: BTreeMap<Option<i64>, Vec<i64>> = BTreeMap::new();
        if !table.info.is_partitioned() {
            offsets.insert(None, vec![-1; buckets]);
        }
        for b in &snapshot.bucket_snapshots {
            let entry = offsets
                .entry(b.partition_id)
                .or_insert_with(|| vec![-1; buckets]);
            let slot = usize::try_from(b.bucket_id)
                .ok()
                .and_then(|i| entry.get_mut(i))
                .ok_or_else(|| {
                    Error::data_invalid(format!(
                        "the lake snapshot names bucket {} of a {buckets}-bucket table",
                        b.bucket_id
                    ))
                    .with_context("table", table.path.to_string())
                })?;
            // A bucket with no tiered offset is read from its earliest offset.
            *slot = b.log_offset.unwrap_or(-1);
        }
        Ok(Some(ReadableSnapshot {
            snapshot_id: snapshot.snapshot_id,
            offsets: TableBucketOffsets {
                table_id: table.table_id(),
                offsets,
            },
        }))
    }

    /// Connects to the cluster at `options.bootstrap_servers`.
    pub async fn connect(options: ClusterOptions) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fluss-cluster-client")
            .enable_all()
            .build()
            .map_err(|e| {
                Error::internal("cannot start the cluster client's runtime").with_source(e)
            })?;
        let handle = runtime.handle().clone();
        let mut config = Config {
            bootstrap_servers: options.bootstrap_servers.clone(),
            ..Default::default()
        };
        if let Err(e) = client_options::apply(&mut config, &options.client_options) {
            runtime.shutdown_background();
            return Err(e);
        }
        if let (Some(user), Some(password)) = (&options.sasl_username, &options.sasl_password) {
            config.security_protocol = "sasl".into();
            config.security_sasl_mechanism = "PLAIN".into();
            config.security_sasl_username = user.clone();
            config.security_sasl_password = password.clone();
        }
        let connected = handle
            .spawn(async move {
                let connection = FlussConnection::new(config).await?;
                let admin = connection.get_admin()?;
                Ok::<_, fluss::error::Error>((connection, admin))
            })
            .await;
        let (connection, admin) = match connected {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                let e = client_error(
                    "cannot connect to the Fluss cluster",
                    &options.bootstrap_servers,
                )(e);
                runtime.shutdown_background();
                return Err(e);
            }
            Err(e) => {
                runtime.shutdown_background();
                return Err(Error::internal("the cluster client's task failed").with_source(e));
            }
        };
        Ok(Self {
            storage_options: Arc::new(options.lake_options.clone()),
            options,
            runtime: Some(runtime),
            handle,
            connection: Arc::new(connection),
            admin,
            tablets: Default::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            schemas: Default::default(),
            fetched_at: Default::default(),
        })
    }

    /// The same source with every later request to the cluster (a FetchLog, a
    /// metadata, offsets or lake snapshot call) failing after `timeout` rather than
    /// waiting on a server that does not answer. (A method rather than a
    /// [`ClusterOptions`] field: connecting keeps the default of 30 s, and options
    /// built field by field stay valid.)
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Runs `call` on the source's runtime (see [`ClusterSource`]), giving up after the
    /// request timeout (the call is then cancelled).
    async fn on_client<T: Send + 'static>(
        &self,
        call: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T> {
        let mut task = self.handle.spawn(call);
        match tokio::time::timeout(self.request_timeout, &mut task).await {
            Ok(joined) => joined
                .map_err(|e| Error::internal("the cluster client's task failed").with_source(e)),
            Err(_) => {
                task.abort();
                Err(Error::new(
                    ErrorKind::Cluster,
                    format!(
                        "the Fluss cluster did not answer within {:?}",
                        self.request_timeout
                    ),
                )
                .with_context("bootstrap_servers", &self.options.bootstrap_servers))
            }
        }
    }

    /// Runs an idempotent fluss-rs read on the client's runtime, and once more when
    /// it failed on a pooled connection the server had closed: fluss-rs poisons such
    /// a connection when its reader meets the end of the stream and replaces it on the
    /// next request, but a request sent before that fails (a restarted server); its
    /// own scanner retries these errors the same way (`client/table/scanner.rs`).
    async fn read_on_client<T, F, Fut>(&self, call: F) -> Result<ClientResult<T>>
    where
        T: Send + 'static,
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = ClientResult<T>> + Send + 'static,
    {
        match self.on_client(call()).await? {
            Err(e) if on_a_closed_connection(&e) => self.on_client(call()).await,
            answer => Ok(answer),
        }
    }

    fn credentials(&self) -> Option<PlainCredentials> {
        match (&self.options.sasl_username, &self.options.sasl_password) {
            (Some(username), Some(password)) => Some(PlainCredentials {
                username: username.clone(),
                password: password.clone(),
            }),
            _ => None,
        }
    }

    /// A table's current metadata: prefetched for the statement, or from a tablet
    /// server's metadata cache (a Metadata request, as fluss-rs's writers and
    /// lookupers learn a table). fluss-rs's `FlussAdmin::get_table_info` asks the
    /// coordinator, which reads ZooKeeper, and then sends this same Metadata request
    /// as well (`client/admin.rs`): two round trips and a ZooKeeper read for every
    /// statement. The tablet servers' cache is what the coordinator pushes after
    /// every table change, so a statement sees the table as the cluster's own
    /// clients do.
    async fn table_info(&self, path: &TablePath) -> Result<TableInfo> {
        if let Some(info) = super::prefetch::prefetched(path) {
            return Ok(info);
        }
        if let Some(info) = self
            .tables_metadata(std::slice::from_ref(path))
            .await?
            .remove(path)
        {
            return Ok(info);
        }
        // Not in the answer (it always is when the request succeeds): ask the
        // coordinator.
        let (admin, owned) = (self.admin.clone(), path.clone());
        self.read_on_client(|| {
            let (admin, owned) = (admin.clone(), owned.clone());
            async move { admin.get_table_info(&owned).await }
        })
        .await?
        .map_err(client_error(
            "cannot load the table",
            &self.options.bootstrap_servers,
        ))
    }

    /// The current metadata of `paths`, in one Metadata request: a tablet server
    /// answers it from its cache (`RpcServiceBase.processMetadataRequest`; a table
    /// missing there is read from ZooKeeper, one that does not exist is an error).
    async fn tables_metadata(&self, paths: &[TablePath]) -> Result<HashMap<TablePath, TableInfo>> {
        let asked = std::time::Instant::now();
        let metadata = self.connection.get_metadata();
        let owned = paths.to_vec();
        self.read_on_client(|| {
            let (metadata, owned) = (metadata.clone(), owned.clone());
            async move {
                let paths: std::collections::HashSet<&TablePath> = owned.iter().collect();
                metadata
                    .update_tables_metadata(&paths, &Default::default(), Vec::new())
                    .await
            }
        })
        .await?
        .map_err(client_error(
            "cannot load the table",
            &self.options.bootstrap_servers,
        ))?;
        let cluster = metadata.get_cluster();
        let found: HashMap<TablePath, TableInfo> = paths
            .iter()
            .filter_map(|p| {
                cluster
                    .opt_get_table(p)
                    .map(|info| (p.clone(), info.clone()))
            })
            .collect();
        if let Ok(mut fetched) = self.fetched_at.lock() {
            for path in paths {
                if found.contains_key(path) {
                    fetched.insert(path.clone(), asked);
                } else {
                    fetched.remove(path);
                }
            }
        }
        Ok(found)
    }

    /// An older schema of a table (immutable once written, so its history is cached).
    async fn table_schema(&self, path: &TablePath, id: i32) -> Result<fluss::metadata::Schema> {
        let (admin, owned) = (self.admin.clone(), path.clone());
        let schema = self
            .read_on_client(|| {
                let (admin, owned) = (admin.clone(), owned.clone());
                async move { admin.get_table_schema(&owned, Some(id)).await }
            })
            .await?
            .map_err(|e| {
                client_error(
                    "cannot load a schema of the table",
                    &self.options.bootstrap_servers,
                )(e)
                .with_context("schema_id", id)
            })?;
        Ok(schema.into_parts().0)
    }

    /// The connection to the leader of a bucket (made once per server).
    async fn leader(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
    ) -> Result<Arc<TabletConnection>> {
        let address = self
            .leader_address(table, bucket.partition_id(), bucket.bucket)
            .await?;
        // One exchange at a time per connection: the buckets of a scan read in
        // parallel, so each server gets a few connections, striped by bucket.
        self.tablet(address, bucket.bucket.rem_euclid(CONNECTIONS_PER_SERVER))
            .await
    }

    /// The address of a bucket's leader, from the client's metadata (asked for when
    /// the client does not know it).
    async fn leader_address(
        &self,
        table: &FlussTable,
        partition_id: Option<i64>,
        bucket: i32,
    ) -> Result<String> {
        let table_bucket = TableBucket::new_with_partition(table.table_id(), partition_id, bucket);
        let metadata = self.connection.get_metadata();
        // known already (the statement's metadata request brought it): no hop onto
        // the client's runtime
        if let Some(leader) = metadata.get_cluster().leader_for(&table_bucket) {
            return Ok(leader.url());
        }
        if partition_id.is_some() {
            self.know_table(table).await?;
        }
        let path = table.path.clone();
        let leader = self
            .read_on_client(|| {
                let (metadata, path, table_bucket) =
                    (metadata.clone(), path.clone(), table_bucket.clone());
                async move { metadata.leader_for(&path, &table_bucket).await }
            })
            .await?
            .map_err(client_error(
                "cannot find the bucket's leader",
                &self.options.bootstrap_servers,
            ))?
            .ok_or_else(|| {
                Error::new(ErrorKind::Cluster, "the bucket has no leader")
                    .with_context("table", table.path.to_string())
                    .with_context("bucket", bucket)
            })?;
        Ok(leader.url())
    }

    /// Connection `stripe` to the tablet server at `address` (made once, and again
    /// when broken).
    async fn tablet(&self, address: String, stripe: i32) -> Result<Arc<TabletConnection>> {
        let key = (address, stripe);
        // open already: no hop onto the client's runtime
        if let Ok(tablets) = self.tablets.try_lock()
            && let Some(c) = tablets.get(&key).filter(|c| !c.is_broken())
        {
            return Ok(c.clone());
        }
        let (address, stripe) = key;
        let tablets = self.tablets.clone();
        let credentials = self.credentials();
        let timeout = self.request_timeout;
        self.on_client(async move {
            let mut tablets = tablets.lock().await;
            let key = (address, stripe);
            if let Some(c) = tablets.get(&key).filter(|c| !c.is_broken()) {
                return Ok(c.clone());
            }
            let connection =
                Arc::new(TabletConnection::connect(&key.0, credentials.as_ref(), timeout).await?);
            tablets.insert(key, connection.clone());
            Ok(connection)
        })
        .await?
    }

    /// Sends `request` on connection `stripe` to `address`, and once more on a new
    /// connection when the old one was found closed (a restarted server) or broken by
    /// another request before this one was sent.
    async fn exchange<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        address: &str,
        stripe: i32,
        api: (i16, i16),
        request: &Req,
    ) -> Result<Resp> {
        let connection = self.tablet(address.to_string(), stripe).await?;
        match connection.request(api, request, self.request_timeout).await {
            Err(e) if fetch::not_sent(&e) => {
                let connection = self.tablet(address.to_string(), stripe).await?;
                connection.request(api, request, self.request_timeout).await
            }
            answer => answer,
        }
    }

    /// The partition id of every name (`None`: no such partition), from the client's
    /// metadata.
    async fn partition_ids(
        &self,
        table: &FlussTable,
        names: &[String],
    ) -> Result<Vec<Option<i64>>> {
        self.know_table(table).await?;
        let metadata = self.connection.get_metadata();
        let mut ids: HashMap<&str, Option<i64>> = HashMap::new();
        for name in names {
            if ids.contains_key(name.as_str()) {
                continue;
            }
            let path =
                PhysicalTablePath::of_partitioned(Arc::new(table.path.clone()), Some(name.clone()));
            let id = self
                .read_on_client(|| {
                    let (metadata, path) = (metadata.clone(), path.clone());
                    async move { metadata.check_and_update_partition_metadata(&path).await }
                })
                .await?
                .map_err(|e| {
                    client_error("cannot find a partition", &self.options.bootstrap_servers)(e)
                        .with_context("partition", name)
                })?;
            ids.insert(name, id);
        }
        Ok(names
            .iter()
            .map(|n| ids.get(n.as_str()).copied().flatten())
            .collect())
    }

    /// Sends the keys to their buckets' leaders, one Lookup request per server, all at
    /// once, and returns the rows found (in no particular order).
    async fn send_lookups(
        &self,
        table: &FlussTable,
        keys: &lookup::KeysByBucket,
    ) -> Result<Vec<Vec<u8>>> {
        let mut by_server: HashMap<String, Vec<wire::PbLookupReqForBucket>> = HashMap::new();
        for ((partition_id, bucket), keys) in keys {
            let address = self.leader_address(table, *partition_id, *bucket).await?;
            by_server
                .entry(address)
                .or_default()
                .push(wire::PbLookupReqForBucket {
                    partition_id: *partition_id,
                    bucket_id: *bucket,
                    keys: keys.clone(),
                });
        }
        let requests = by_server
            .into_iter()
            .map(|(address, buckets_req)| async move {
                let request = wire::LookupRequest {
                    table_id: table.table_id(),
                    buckets_req,
                };
                // a stripe of its own, beside the scans' fetches
                self.exchange::<_, wire::LookupResponse>(
                    &address,
                    CONNECTIONS_PER_SERVER,
                    (wire::api_key::LOOKUP, LOOKUP_API_VERSION),
                    &request,
                )
                .await
            });
        let mut rows = Vec::new();
        for response in futures::future::try_join_all(requests).await? {
            for bucket in response.buckets_resp {
                if let Some(code) = bucket.error_code.filter(|c| *c != 0) {
                    let message = bucket.error_message.as_deref();
                    return Err(bucket_error(
                        "look up keys",
                        table,
                        bucket.bucket_id,
                        code,
                        message,
                    ));
                }
                rows.extend(bucket.values.into_iter().filter_map(|v| v.values));
            }
        }
        Ok(rows)
    }

    /// The earliest offset and high watermark of `buckets`: ListOffsets requests
    /// sent straight to each bucket's leader, for both ends and every partition at
    /// once. (fluss-rs's `FlussAdmin::list_offsets` refreshes the table's metadata
    /// before every call, as Java's does, then asks for one end of one partition:
    /// four round trips one after another per partition, where the statement has
    /// just fetched the table's metadata.)
    async fn list_offsets(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<BucketOffsets>> {
        // leaders one after the other: a leader the client does not know refreshes the
        // table's or the partition's metadata, and refreshes running side by side can
        // drop each other's bucket leaders from the shared cluster view
        let mut by_server: BTreeMap<(String, Option<i64>), Vec<i32>> = BTreeMap::new();
        for b in buckets {
            let address = self
                .leader_address(table, b.partition_id(), b.bucket)
                .await?;
            by_server
                .entry((address, b.partition_id()))
                .or_default()
                .push(b.bucket);
        }
        let requests = by_server.iter().flat_map(|((address, partition_id), ids)| {
            [wire::offset_type::EARLIEST, wire::offset_type::LATEST].map(|offset_type| {
                let request = wire::ListOffsetsRequest {
                    follower_server_id: -1,
                    offset_type,
                    table_id: table.table_id(),
                    partition_id: *partition_id,
                    bucket_id: ids.clone(),
                };
                async move {
                    // stripes of their own beside the scans' fetches, one per end so
                    // that both go out together
                    let stripe = CONNECTIONS_PER_SERVER + 1 + offset_type;
                    let response: wire::ListOffsetsResponse = self
                        .exchange(address, stripe, (wire::api_key::LIST_OFFSETS, 0), &request)
                        .await?;
                    Ok::<_, Error>((*partition_id, offset_type, response))
                }
            })
        });
        // (earliest, high watermark) by (partition id, bucket)
        type Ends = (Option<i64>, Option<i64>);
        let mut found: HashMap<(Option<i64>, i32), Ends> = HashMap::new();
        for (partition_id, offset_type, response) in futures::future::try_join_all(requests).await?
        {
            for bucket in response.buckets_resp {
                if let Some(code) = bucket.error_code.filter(|c| *c != 0) {
                    let message = bucket.error_message.as_deref();
                    let what = "list the bucket's offsets";
                    return Err(bucket_error(what, table, bucket.bucket_id, code, message));
                }
                let ends = found.entry((partition_id, bucket.bucket_id)).or_default();
                if offset_type == wire::offset_type::EARLIEST {
                    ends.0 = bucket.offset;
                } else {
                    ends.1 = bucket.offset;
                }
            }
        }
        buckets
            .iter()
            .map(|b| match found.get(&(b.partition_id(), b.bucket)) {
                Some((Some(earliest), Some(high_watermark))) => Ok(BucketOffsets {
                    earliest: *earliest,
                    high_watermark: *high_watermark,
                }),
                _ => Err(Error::new(
                    ErrorKind::Cluster,
                    "the cluster listed no offsets for a bucket",
                )
                .with_context("table", table.path.to_string())
                .with_context("bucket", b.bucket)),
            })
            .collect()
    }

    /// Runs `request` once more after learning the table's buckets again when a
    /// server answered that a bucket moved (its leader changed), as fluss-rs's lookup
    /// sender retries.
    async fn again_if_a_bucket_moved<T, Fut>(
        &self,
        table: &FlussTable,
        request: impl Fn() -> Fut,
    ) -> Result<T>
    where
        Fut: std::future::Future<Output = Result<T>>,
    {
        match request().await {
            Err(e)
                if e.context_value("error_code")
                    .and_then(|c| c.parse().ok())
                    .is_some_and(fetch::is_leadership_change) =>
            {
                tracing::warn!(
                    table = %table.path,
                    error_code = e.context_value("error_code").unwrap_or_default(),
                    "a bucket's leader moved: retrying after refreshing the table's metadata"
                );
                self.refresh_table_metadata(table).await?;
                request().await
            }
            answer => answer,
        }
    }

    /// Loads `table` into the client's metadata unless it is there already. Every
    /// request for a partition's metadata goes after it: fluss-rs 1.0 names a
    /// partition's table from the metadata it had before the answer
    /// (`Cluster::update`, cluster.rs:314, an `unwrap`), which a client that never
    /// loaded the table (a distributed worker given a plan) does not have.
    async fn know_table(&self, table: &FlussTable) -> Result<()> {
        let known = self
            .connection
            .get_metadata()
            .get_cluster()
            .get_table_path_by_id(table.table_id())
            .is_some();
        if known {
            return Ok(());
        }
        self.refresh_table_metadata(table).await
    }

    /// Learns a table's buckets and their leaders again (a leader moved).
    async fn refresh_table_metadata(&self, table: &FlussTable) -> Result<()> {
        let metadata = self.connection.get_metadata();
        let path = table.path.clone();
        self.read_on_client(|| {
            let (metadata, path) = (metadata.clone(), path.clone());
            async move { metadata.update_table_metadata(&path).await }
        })
        .await?
        .map_err(|e| {
            client_error("cannot load the table", &self.options.bootstrap_servers)(e)
                .with_context("table", table.path.to_string())
        })
    }
}

#[async_trait]
impl FlussSource for ClusterSource {
    fn name(&self) -> String {
        format!("fluss cluster {}", self.options.bootstrap_servers)
    }

    fn spec(&self) -> Option<super::SourceSpec> {
        Some(super::SourceSpec::Cluster {
            bootstrap_servers: self.options.bootstrap_servers.clone(),
        })
    }

    /// A cluster takes writes as any Fluss client writes them (`write.rs`).
    fn writer(&self) -> Option<&dyn super::FlussWriter> {
        Some(self)
    }

    async fn list_databases(&self) -> Result<Vec<String>> {
        let admin = self.admin.clone();
        self.read_on_client(|| {
            let admin = admin.clone();
            async move { admin.list_databases().await }
        })
        .await?
        .map_err(client_error(
            "cannot list databases",
            &self.options.bootstrap_servers,
        ))
    }

    async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        let (admin, name) = (self.admin.clone(), database.to_string());
        self.read_on_client(|| {
            let (admin, name) = (admin.clone(), name.clone());
            async move { admin.list_tables(&name).await }
        })
        .await?
        .map_err(|e| {
            client_error("cannot list tables", &self.options.bootstrap_servers)(e)
                .with_context("database", database)
        })
    }

    async fn get_table(&self, path: &TablePath) -> Result<FlussTable> {
        let context = |e: Error| e.with_context("table", path.to_string());
        let started = std::time::Instant::now();
        let info = self.table_info(path).await.map_err(context)?;
        tracing::debug!(
            table = %path,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "fetched table metadata from the coordinator"
        );
        let latest = info.get_schema_id();
        let key = (info.get_table_id(), latest);
        let cached = self
            .schemas
            .lock()
            .ok()
            .and_then(|schemas| schemas.get(&key).cloned());
        let schemas = match cached {
            Some(history) => history,
            None => {
                // Every schema a batch may carry: ids run from 1 to the latest.
                let mut history = SchemaHistory::default();
                for id in 1..=latest {
                    let schema = if id == latest {
                        info.get_schema().clone()
                    } else {
                        self.table_schema(path, id).await.map_err(context)?
                    };
                    history.insert(SchemaVersion::new(id, schema).map_err(context)?);
                }
                let history = Arc::new(history);
                if let Ok(mut schemas) = self.schemas.lock() {
                    if schemas.len() >= MAX_CACHED_SCHEMA_HISTORIES {
                        schemas.clear();
                    }
                    schemas.insert(key, history.clone());
                }
                history
            }
        };
        let table = FlussTable {
            path: path.clone(),
            info,
            schemas,
        };
        table.validate().map_err(context)?;
        Ok(table)
    }

    async fn prefetch_tables(&self, paths: &[TablePath]) -> Result<HashMap<TablePath, TableInfo>> {
        self.tables_metadata(paths).await
    }

    /// From when this source last asked for each table (`tables_metadata`).
    fn last_seen_age(&self, paths: &[TablePath]) -> Option<Duration> {
        let fetched = self.fetched_at.lock().ok()?;
        paths
            .iter()
            .map(|p| fetched.get(p).map(std::time::Instant::elapsed))
            .try_fold(Duration::ZERO, |oldest, age| age.map(|a| oldest.max(a)))
    }

    /// From fluss-rs's metadata cache, which every Metadata answer updates.
    fn last_seen_tables(&self, paths: &[TablePath]) -> Option<HashMap<TablePath, TableInfo>> {
        let cluster = self.connection.get_metadata().get_cluster();
        paths
            .iter()
            .map(|p| {
                cluster
                    .opt_get_table(p)
                    .map(|info| (p.clone(), info.clone()))
            })
            .collect()
    }

    async fn list_partitions(&self, table: &FlussTable) -> Result<Vec<PartitionInfo>> {
        let (admin, path) = (self.admin.clone(), table.path.clone());
        self.read_on_client(|| {
            let (admin, path) = (admin.clone(), path.clone());
            async move { admin.list_partition_infos(&path).await }
        })
        .await?
        .map_err(|e| {
            client_error(
                "cannot list the table's partitions",
                &self.options.bootstrap_servers,
            )(e)
            .with_context("table", table.path.to_string())
        })
    }

    async fn readable_lake_snapshot(&self, table: &FlussTable) -> Result<Option<ReadableSnapshot>> {
        self.get_lake_snapshot(table, None).await
    }

    async fn lake_snapshot(
        &self,
        table: &FlussTable,
        snapshot_id: i64,
    ) -> Result<Option<ReadableSnapshot>> {
        // Fluss answers a snapshot by id with its tiered offsets: those are the
        // readable ones except for Paimon tables with deletion vectors, whose
        // readable snapshot Fluss computes separately (fluss-formats.md 3.4 (c)).
        // There only the readable snapshot itself is known to be readable.
        let readable = self.get_lake_snapshot(table, None).await?;
        if readable
            .as_ref()
            .is_some_and(|r| r.snapshot_id == snapshot_id)
        {
            return Ok(readable);
        }
        if paimon_deletion_vectors(table) {
            return Ok(None);
        }
        self.get_lake_snapshot(table, Some(snapshot_id)).await
    }

    async fn bucket_offsets(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<BucketOffsets>> {
        self.again_if_a_bucket_moved(table, || self.list_offsets(table, buckets))
            .await
    }

    async fn read_log(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        range: LogRange,
        options: LogReadOptions,
    ) -> Result<BoxStream<'static, Result<ChangelogBatch>>> {
        let options = LogReadOptions {
            verify_crc: true,
            ..options
        };
        let filter = server_filter(table, &options);
        let cursor = LogCursor::new(
            range,
            table.schemas.clone(),
            table.schemas.latest()?,
            options,
        )?;
        let connection = self.leader(table, bucket).await?;
        let fetch = BucketFetch {
            table_id: table.table_id(),
            partition_id: bucket.partition_id(),
            bucket: bucket.bucket,
            max_fetch_bytes: self
                .options
                .max_fetch_bytes
                .unwrap_or(DEFAULT_MAX_FETCH_BYTES),
            request_timeout: self.request_timeout,
            storage_options: self.storage_options.clone(),
            filter,
            credentials: self.credentials(),
        };
        let reader = BucketFetchReader::new(connection, fetch, cursor);
        Ok(super::bucket_stream(reader, table, bucket.bucket))
    }

    fn serves_key_lookups(&self, table: &FlussTable) -> bool {
        lookup::keys_encodable(table)
    }

    fn serves_kv_scans(&self, table: &FlussTable) -> bool {
        table.info.has_primary_key() && lookup::keys_encodable(table)
    }

    async fn scan_kv(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let connection = self.leader(table, bucket).await?;
        Ok(kv_scan::scan_bucket(
            connection,
            table.clone(),
            bucket.clone(),
            self.request_timeout,
        ))
    }

    async fn lookup_keys(&self, table: &FlussTable, keys: &RecordBatch) -> Result<LookedUp> {
        let context = |e: Error| e.with_context("table", table.path.to_string());
        let partitions = match lookup::partition_names(&table.info, keys).map_err(context)? {
            Some(names) => {
                let ids = self.partition_ids(table, &names).await.map_err(context)?;
                let mut missing: Vec<String> = names
                    .into_iter()
                    .zip(&ids)
                    .filter(|(_, id)| id.is_none())
                    .map(|(name, _)| name)
                    .collect();
                if !missing.is_empty() {
                    missing.sort();
                    missing.dedup();
                    return Ok(LookedUp::PartitionsMissing(missing));
                }
                Some(ids)
            }
            None => None,
        };
        let by_bucket =
            lookup::encode_keys(&table.info, keys, partitions.as_deref()).map_err(context)?;
        let rows = self
            .again_if_a_bucket_moved(table, || self.send_lookups(table, &by_bucket))
            .await?;
        lookup::decode_rows(table, rows)
            .map(LookedUp::Rows)
            .map_err(context)
    }

    async fn lake_location(&self, table: &FlussTable) -> Result<LakeLocation> {
        // a cluster's warehouses are absolute paths or URLs
        LakeLocation::of_table(table, &self.options.lake_options, str::to_string)
    }
}

/// A tablet server's error for one bucket of a request (`what` it could not do),
/// naming the table, the bucket and the server's code (which a retry reads back).
fn bucket_error(
    what: &str,
    table: &FlussTable,
    bucket: i32,
    code: i32,
    message: Option<&str>,
) -> Error {
    Error::new(
        ErrorKind::Cluster,
        format!(
            "the tablet server could not {what}: {}",
            message.unwrap_or("no message")
        ),
    )
    .with_context("table", table.path.to_string())
    .with_context("bucket", bucket)
    .with_context("error_code", code)
}

/// The batch filter to send with the fetches of `table`: the pushed filters the
/// server can evaluate, when the table's batches carry statistics
/// (`table.statistics.columns`); without them a server has nothing to filter by.
fn server_filter(table: &FlussTable, options: &LogReadOptions) -> Option<(wire::PbPredicate, i32)> {
    let has_statistics = table
        .info
        .get_properties()
        .get(crate::log::statistics::STATISTICS_COLUMNS_PROPERTY)
        .is_some_and(|c| !c.trim().is_empty());
    if !has_statistics {
        return None;
    }
    let expr = options.predicate.as_ref()?.orig_expr().clone();
    let schema = table.info.get_schema();
    let predicate = predicate::to_pb_predicate(&expr, &predicate::field_ids(schema))?;
    Some((predicate, table.info.get_schema_id()))
}

/// Whether `table`'s Paimon lake keeps deletion vectors (`table.datalake.paimon.
/// deletion-vectors.enabled`), whose snapshots are readable only once compacted.
fn paimon_deletion_vectors(table: &FlussTable) -> bool {
    table
        .info
        .get_properties()
        .get("table.datalake.paimon.deletion-vectors.enabled")
        .or_else(|| {
            table
                .info
                .get_custom_properties()
                .get("paimon.deletion-vectors.enabled")
        })
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}
