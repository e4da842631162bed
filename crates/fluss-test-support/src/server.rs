//! The Tokio server: accepts connections and answers Fluss RPCs from a [`ClusterModel`].
//!
//! One listener plays the coordinator and the single tablet server (node id 0) of a
//! one-node cluster: `MetaData` advertises the listener's address for both, and every bucket
//! is led by node 0. Each connection is one task that reads a request, answers it and only
//! then reads the next, so responses come back in request order. At most one request frame
//! (bounded by [`ServerConfig::max_frame_size`]) is buffered per connection.
//!
//! Security follows Java's `NettyServerHandler`: with SASL/PLAIN configured, a connection
//! starts unauthenticated; `ApiVersions` and `Authenticate` are answered, every other request
//! gets `AUTHENTICATE_EXCEPTION` until an `Authenticate` with a right `\0user\0password` token
//! succeeds.
//!
//! [`ServerConfig::faults`] makes the server misbehave on purpose (drop or stall FetchLog
//! requests, answer a bucket with an error, damage a batch, report no leader); see
//! [`crate::faults`]. Without faults it answers like a healthy cluster.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use prost::Message;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use crate::errors::{self, ApiError};
use crate::faults::{BucketRef, ConnectionFault, Faults, FetchCounter};
use crate::filter::BatchFilter;
use crate::frame::{self, Request, api_key};
use crate::kv::{BucketKv, bucket_kv};
use crate::log::Projector;
use crate::model::{ClusterModel, ServedTable};
use crate::proto::*;

/// The node id of the one node (coordinator and tablet server) this server impersonates.
pub const NODE_ID: i32 = 0;

/// `FetchParams.FETCH_FROM_EARLIEST_OFFSET`: a fetch offset meaning "the log start offset".
const FETCH_FROM_EARLIEST_OFFSET: i64 = -2;

/// `ListOffsetsParam` offset types.
const LIST_EARLIEST_OFFSET: i32 = 0;
const LIST_LATEST_OFFSET: i32 = 1;
const LIST_OFFSET_FROM_TIMESTAMP: i32 = 2;

/// How a [`TestServer`] behaves.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// SASL/PLAIN users (`username -> password`). `None`: plaintext, no authentication.
    pub sasl_plain_users: Option<HashMap<String, String>>,
    /// The largest request frame accepted; a larger one closes the connection.
    pub max_frame_size: usize,
    /// Faults to inject (none by default).
    pub faults: Faults,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            sasl_plain_users: None,
            max_frame_size: 16 * 1024 * 1024,
            faults: Faults::default(),
        }
    }
}

impl ServerConfig {
    /// A configuration requiring SASL/PLAIN with one user.
    pub fn with_sasl_plain(username: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            sasl_plain_users: Some(HashMap::from([(username.into(), password.into())])),
            ..Self::default()
        }
    }
}

/// A running server. Dropping it (or calling [`TestServer::shutdown`]) stops the listener and
/// every connection task.
#[derive(Debug)]
pub struct TestServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Binds `127.0.0.1:0` and starts serving `model` on the current Tokio runtime.
    pub async fn start(model: Arc<dyn ClusterModel>, config: ServerConfig) -> io::Result<Self> {
        Self::start_at(SocketAddr::from(([127, 0, 0, 1], 0)), model, config).await
    }

    /// Like [`TestServer::start`], at `addr`: a server restarted where clients know it.
    pub async fn start_at(
        addr: SocketAddr,
        model: Arc<dyn ClusterModel>,
        config: ServerConfig,
    ) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let shared = Arc::new(Shared {
            model,
            addr,
            config,
            received: std::sync::Mutex::new(Vec::new()),
            fetches: FetchCounter::default(),
            lookups: Default::default(),
            produces: Default::default(),
            produce_requests: FetchCounter::default(),
            writer_ids: Default::default(),
            record_bytes_sent: Default::default(),
            kv: Default::default(),
            scanners: Default::default(),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared), shutdown_rx));
        Ok(Self {
            shared,
            addr,
            shutdown: Some(shutdown_tx),
            task: Some(task),
        })
    }

    /// Stops the server and waits until its listener and connections are closed, so
    /// its address can be bound again at once: dropping it closes them only when the
    /// runtime next gets to the aborted accept task.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
            // an aborted task's result is its cancellation: only the wait matters
            let _ = task.await;
        }
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address as a fluss-rs `bootstrap_servers` string (`host:port`).
    pub fn bootstrap_servers(&self) -> String {
        self.addr.to_string()
    }

    /// The API keys of the requests received so far, in arrival order (the first
    /// [`MAX_RECORDED_REQUESTS`] only), e.g. to check which RPCs a client operation sends.
    pub fn received_api_keys(&self) -> Vec<i16> {
        match self.shared.received.lock() {
            Ok(keys) => keys.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Bytes of log records sent in FetchLog answers so far (a filtering fetch sends
    /// fewer).
    pub fn record_bytes_sent(&self) -> u64 {
        self.shared
            .record_bytes_sent
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Forgets the requests recorded so far.
    pub fn clear_received_api_keys(&self) {
        match self.shared.received.lock() {
            Ok(mut keys) => keys.clear(),
            Err(poisoned) => poisoned.into_inner().clear(),
        }
    }

    /// Stops the server and waits until the listener and all connections are closed.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Aborting the accept task drops the listener and its JoinSet, which aborts every
        // connection task: nothing outlives the handle, even if the runtime is not polled.
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// How many request API keys [`TestServer::received_api_keys`] keeps at most.
pub const MAX_RECORDED_REQUESTS: usize = 10_000;

struct Shared {
    model: Arc<dyn ClusterModel>,
    addr: SocketAddr,
    config: ServerConfig,
    received: std::sync::Mutex<Vec<i16>>,
    /// FetchLog requests received, for [`crate::faults::FetchMatch::Nth`].
    fetches: FetchCounter,
    /// Lookups received per bucket, for [`Faults::lookup_error`].
    lookups: std::sync::Mutex<HashMap<BucketRef, usize>>,
    /// ProduceLog and PutKv parts received per bucket, for [`Faults::produce_error`].
    produces: std::sync::Mutex<HashMap<BucketRef, usize>>,
    /// ProduceLog and PutKv requests received, for [`Faults::close_after_produce`].
    produce_requests: FetchCounter,
    /// The last writer id handed out by `InitWriter`.
    writer_ids: std::sync::atomic::AtomicI64,
    /// Bytes of log records sent in FetchLog answers.
    record_bytes_sent: std::sync::atomic::AtomicU64,
    /// The key-value state of each bucket looked up, with the high watermark of the
    /// log it was rebuilt from (rebuilt when the log has grown).
    kv: std::sync::Mutex<HashMap<BucketRef, (i64, Arc<BucketKv>)>>,
    /// Open ScanKv scanners.
    scanners: crate::kv_scan::Scanners,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("addr", &self.addr)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                Err(e) => {
                    log::warn!("fluss test server: accept failed: {e}");
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut conn = Connection {
        authenticated: shared.config.sasl_plain_users.is_none(),
        shared,
    };
    loop {
        let request = match frame::read_request(&mut read, conn.shared.config.max_frame_size).await
        {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(e) => {
                // Like Java's exceptionCaught: a SERVER_FAILURE, then close.
                log::debug!("fluss test server: closing connection: {e}");
                let failure = frame::encode_server_failure(&ApiError::new(
                    errors::UNKNOWN_SERVER_ERROR,
                    e.to_string(),
                ));
                let _ = write.write_all(&failure).await;
                let _ = write.shutdown().await;
                return;
            }
        };
        if let Ok(mut keys) = conn.shared.received.lock()
            && keys.len() < MAX_RECORDED_REQUESTS
        {
            keys.push(request.api_key);
        }
        let fault = conn.connection_fault(&request);
        let response = conn.handle(&request);
        match fault {
            None => {
                if write.write_all(&response).await.is_err() {
                    return;
                }
            }
            // Returning drops both halves of the socket: the client sees it close.
            Some(ConnectionFault::Close) => return,
            Some(ConnectionFault::CutAnswer { bytes }) => {
                let _ = write
                    .write_all(&response[..bytes.min(response.len())])
                    .await;
                let _ = write.shutdown().await;
                return;
            }
            // Holds the connection open without answering; the task ends when the
            // server stops (its JoinSet aborts it).
            Some(ConnectionFault::Stall) => std::future::pending::<()>().await,
        }
    }
}

fn decode<M: Message + Default>(request: &Request) -> Result<M, ApiError> {
    M::decode(request.body.clone()).map_err(|e| {
        ApiError::new(
            errors::UNKNOWN_SERVER_ERROR,
            format!("Cannot parse request of API key {}: {e}", request.api_key),
        )
    })
}

fn table_not_exist(path: &PbTablePath) -> ApiError {
    ApiError::new(
        errors::TABLE_NOT_EXIST,
        format!(
            "Table '{}.{}' does not exist.",
            path.database_name, path.table_name
        ),
    )
}

fn bucket_name(table_id: i64, partition_id: Option<i64>, bucket: i32) -> String {
    match partition_id {
        Some(p) => format!("TableBucket{{tableId={table_id}, partitionId={p}, bucket={bucket}}}"),
        None => format!("TableBucket{{tableId={table_id}, bucket={bucket}}}"),
    }
}

fn unknown_bucket(table_id: i64, partition_id: Option<i64>, bucket: i32) -> ApiError {
    ApiError::new(
        errors::UNKNOWN_TABLE_OR_BUCKET,
        format!(
            "Unknown table or bucket: {}",
            bucket_name(table_id, partition_id, bucket)
        ),
    )
}

struct Connection {
    shared: Arc<Shared>,
    authenticated: bool,
}

impl Connection {
    fn model(&self) -> &dyn ClusterModel {
        self.shared.model.as_ref()
    }

    fn faults(&self) -> &Faults {
        &self.shared.config.faults
    }

    /// The connection fault hitting `request`, if it is a FetchLog or ProduceLog one
    /// matches. Only requests that would be answered count (authenticated, supported
    /// version).
    fn connection_fault(&self, request: &Request) -> Option<ConnectionFault> {
        let write = request.api_key == api_key::PRODUCE_LOG || request.api_key == api_key::PUT_KV;
        if write && self.authenticated {
            let n = self.shared.produce_requests.next();
            return self.faults().produce_connection_fault(n);
        }
        if request.api_key != api_key::FETCH_LOG
            || !self.authenticated
            || self.faults().fetch_connection.is_empty()
        {
            return None;
        }
        let n = self.shared.fetches.next();
        let buckets: Vec<BucketRef> = decode::<FetchLogRequest>(request)
            .map(|r| {
                r.tables_req
                    .iter()
                    .flat_map(|t| {
                        t.buckets_req
                            .iter()
                            .map(|b| BucketRef::new(t.table_id, b.partition_id, b.bucket_id))
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.faults().connection_fault(n, &buckets)
    }

    /// Answers one request; the result is a whole response frame.
    fn handle(&mut self, request: &Request) -> Vec<u8> {
        match self.dispatch(request) {
            Ok(frame) => frame,
            Err(error) => frame::encode_error(request.request_id, &error),
        }
    }

    fn dispatch(&mut self, request: &Request) -> Result<Vec<u8>, ApiError> {
        let key = request.api_key;
        let Some(&(_, min, max)) = api_key::SUPPORTED.iter().find(|(k, _, _)| *k == key) else {
            // Java's NettyServerHandler drops unknown keys without answering; answering keeps
            // a client from waiting forever.
            return Err(ApiError::new(
                errors::UNSUPPORTED_VERSION,
                format!("The server does not support API key {key}."),
            ));
        };
        if request.api_version < min || request.api_version > max {
            return Err(ApiError::new(
                errors::UNSUPPORTED_VERSION,
                format!(
                    "The server does not support version {} of API key {key} (supported: {min}..={max}).",
                    request.api_version
                ),
            ));
        }
        if !self.authenticated && key != api_key::API_VERSIONS && key != api_key::AUTHENTICATE {
            return Err(ApiError::new(
                errors::AUTHENTICATE_EXCEPTION,
                "The connection has not completed authentication yet. This may be caused by a \
                 missing or incorrect configuration of 'client.security.protocol' on the client side.",
            ));
        }
        let id = request.request_id;
        let ok = |m: &dyn EncodeDyn| m.encode_frame(id);
        match key {
            api_key::API_VERSIONS => {
                let _: ApiVersionsRequest = decode(request)?;
                Ok(ok(&api_versions()))
            }
            api_key::AUTHENTICATE => Ok(ok(&self.authenticate(decode(request)?)?)),
            api_key::LIST_DATABASES => {
                let _: ListDatabasesRequest = decode(request)?;
                Ok(ok(&ListDatabasesResponse {
                    database_name: self.model().databases(),
                }))
            }
            api_key::DATABASE_EXISTS => {
                let r: DatabaseExistsRequest = decode(request)?;
                let exists = self.model().tables(&r.database_name).is_some();
                Ok(ok(&DatabaseExistsResponse { exists }))
            }
            api_key::LIST_TABLES => {
                let r: ListTablesRequest = decode(request)?;
                let tables = self.model().tables(&r.database_name).ok_or_else(|| {
                    ApiError::new(
                        errors::DATABASE_NOT_EXIST,
                        format!("Database {} does not exist.", r.database_name),
                    )
                })?;
                Ok(ok(&ListTablesResponse { table_name: tables }))
            }
            api_key::TABLE_EXISTS => {
                let r: TableExistsRequest = decode(request)?;
                let p = &r.table_path;
                let exists = self
                    .model()
                    .table(&p.database_name, &p.table_name)
                    .is_some();
                Ok(ok(&TableExistsResponse { exists }))
            }
            api_key::GET_TABLE_INFO => {
                let r: GetTableInfoRequest = decode(request)?;
                let t = self.table(&r.table_path)?;
                Ok(ok(&GetTableInfoResponse {
                    table_id: t.table_id,
                    schema_id: t.schema_id,
                    table_json: t.table_json,
                    created_time: t.created_time,
                    modified_time: t.modified_time,
                    remote_data_dir: t.remote_data_dir,
                }))
            }
            api_key::GET_TABLE_SCHEMA => {
                let r: GetTableSchemaRequest = decode(request)?;
                let t = self.table(&r.table_path)?;
                let schema_id = r.schema_id.unwrap_or(t.schema_id);
                let schema = t.schemas.get(&schema_id).ok_or_else(|| {
                    ApiError::new(
                        errors::SCHEMA_NOT_EXIST,
                        format!(
                            "Schema for table {}.{} with schema id {schema_id} does not exist.",
                            r.table_path.database_name, r.table_path.table_name
                        ),
                    )
                })?;
                Ok(ok(&GetTableSchemaResponse {
                    schema_id,
                    schema_json: schema.clone(),
                }))
            }
            api_key::LIST_PARTITION_INFOS => {
                let r: ListPartitionInfosRequest = decode(request)?;
                Ok(ok(&self.list_partition_infos(r)?))
            }
            api_key::GET_METADATA => Ok(ok(&self.metadata(decode(request)?)?)),
            api_key::GET_LAKE_SNAPSHOT => Ok(ok(&self.lake_snapshot(decode(request)?)?)),
            api_key::LIST_OFFSETS => Ok(ok(&self.list_offsets(decode(request)?))),
            api_key::FETCH_LOG => Ok(ok(&self.fetch_log(decode(request)?))),
            api_key::LOOKUP => Ok(ok(&self.lookup(decode(request)?))),
            api_key::SCAN_KV => Ok(ok(&self.scan_kv(decode(request)?))),
            api_key::INIT_WRITER => {
                let _: InitWriterRequest = decode(request)?;
                let id = 1 + self
                    .shared
                    .writer_ids
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(ok(&InitWriterResponse { writer_id: id }))
            }
            api_key::PRODUCE_LOG => Ok(ok(&self.produce_log(decode(request)?))),
            api_key::PUT_KV => Ok(ok(&self.put_kv(decode(request)?))),
            _ => Err(ApiError::new(
                errors::UNSUPPORTED_VERSION,
                format!("The server does not support API key {key}."),
            )),
        }
    }

    fn table(&self, path: &PbTablePath) -> Result<ServedTable, ApiError> {
        self.model()
            .table(&path.database_name, &path.table_name)
            .ok_or_else(|| table_not_exist(path))
    }

    fn authenticate(&mut self, r: AuthenticateRequest) -> Result<AuthenticateResponse, ApiError> {
        let fail = |m: &str| ApiError::new(errors::AUTHENTICATE_EXCEPTION, m);
        let Some(users) = &self.shared.config.sasl_plain_users else {
            return Err(fail(
                "Authentication is not enabled on this listener (PLAINTEXT).",
            ));
        };
        if !r.protocol.eq_ignore_ascii_case("PLAIN") {
            return Err(fail(&format!(
                "Unsupported SASL mechanism '{}': the server supports PLAIN.",
                r.protocol
            )));
        }
        // RFC 4616: [authzid] NUL authcid NUL passwd
        let mut parts = r.token.split(|&b| b == 0);
        let (Some(_authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(fail("Invalid SASL/PLAIN token."));
        };
        let user = String::from_utf8_lossy(user);
        match users.get(user.as_ref()) {
            Some(expected) if expected.as_bytes() == password => {
                self.authenticated = true;
                Ok(AuthenticateResponse { challenge: None })
            }
            _ => Err(fail(&format!(
                "Authentication failed: Invalid username or password for user '{user}'."
            ))),
        }
    }

    fn node(&self) -> PbServerNode {
        PbServerNode {
            node_id: NODE_ID,
            host: self.shared.addr.ip().to_string(),
            port: i32::from(self.shared.addr.port()),
            listeners: None,
            rack: None,
        }
    }

    fn metadata(&self, r: MetadataRequest) -> Result<MetadataResponse, ApiError> {
        let faults = self.faults();
        let buckets = |table_id: i64, partition_id: Option<i64>, count: i32| {
            (0..count)
                .map(|bucket_id| PbBucketMetadata {
                    bucket_id,
                    leader_id: faults
                        .leader_of(BucketRef::new(table_id, partition_id, bucket_id))
                        .unwrap_or(Some(NODE_ID)),
                    replica_id: vec![NODE_ID],
                    leader_epoch: Some(0),
                })
                .collect::<Vec<PbBucketMetadata>>()
        };
        let mut response = MetadataResponse {
            coordinator_server: Some(self.node()),
            tablet_servers: vec![self.node()],
            table_metadata: Vec::new(),
            partition_metadata: Vec::new(),
        };
        let mut requested = Vec::new();
        for path in &r.table_path {
            let t = self.table(path)?;
            response.table_metadata.push(PbTableMetadata {
                table_path: path.clone(),
                table_id: t.table_id,
                schema_id: t.schema_id,
                table_json: t.table_json.clone(),
                // a partitioned table's buckets belong to its partitions
                bucket_metadata: if t.is_partitioned() {
                    Vec::new()
                } else {
                    buckets(t.table_id, None, t.bucket_count)
                },
                created_time: t.created_time,
                modified_time: t.modified_time,
                remote_data_dir: t.remote_data_dir.clone(),
            });
            requested.push(t);
        }
        for path in &r.partitions_path {
            let table_path = PbTablePath {
                database_name: path.database_name.clone(),
                table_name: path.table_name.clone(),
            };
            let t = self.table(&table_path)?;
            let name = path.partition_name.as_deref().unwrap_or_default();
            let p = t
                .partitions
                .iter()
                .find(|p| p.name == name)
                .ok_or_else(|| {
                    ApiError::new(
                        errors::PARTITION_NOT_EXISTS,
                        format!(
                            "Table partition '{}.{}({name})' does not exist.",
                            path.database_name, path.table_name
                        ),
                    )
                })?;
            response.partition_metadata.push(PbPartitionMetadata {
                table_id: t.table_id,
                partition_name: p.name.clone(),
                partition_id: p.partition_id,
                bucket_metadata: buckets(t.table_id, Some(p.partition_id), t.bucket_count),
            });
        }
        // Like Java, partition ids are looked up among the requested tables.
        for &id in &r.partitions_id {
            let found = requested.iter().find_map(|t| {
                t.partitions
                    .iter()
                    .find(|p| p.partition_id == id)
                    .map(|p| (t, p))
            });
            let (t, p) = found.ok_or_else(|| {
                ApiError::new(
                    errors::PARTITION_NOT_EXISTS,
                    format!("Partition with id {id} does not exist."),
                )
            })?;
            response.partition_metadata.push(PbPartitionMetadata {
                table_id: t.table_id,
                partition_name: p.name.clone(),
                partition_id: p.partition_id,
                bucket_metadata: buckets(t.table_id, Some(p.partition_id), t.bucket_count),
            });
        }
        Ok(response)
    }

    fn list_partition_infos(
        &self,
        r: ListPartitionInfosRequest,
    ) -> Result<ListPartitionInfosResponse, ApiError> {
        let t = self.table(&r.table_path)?;
        if !t.is_partitioned() {
            return Err(ApiError::new(
                errors::TABLE_NOT_PARTITIONED,
                format!(
                    "Table '{}.{}' is not a partitioned table.",
                    r.table_path.database_name, r.table_path.table_name
                ),
            ));
        }
        let filter: Vec<(String, String)> = r
            .partial_partition_spec
            .map(|s| {
                s.partition_key_values
                    .into_iter()
                    .map(|kv| (kv.key, kv.value))
                    .collect()
            })
            .unwrap_or_default();
        let partitions_info = t
            .partitions
            .iter()
            .filter(|p| filter.iter().all(|f| p.spec.contains(f)))
            .map(|p| PbPartitionInfo {
                partition_id: p.partition_id,
                partition_spec: PbPartitionSpec {
                    partition_key_values: p
                        .spec
                        .iter()
                        .map(|(key, value)| PbKeyValue {
                            key: key.clone(),
                            value: value.clone(),
                        })
                        .collect(),
                },
                remote_data_dir: t.remote_data_dir.clone(),
            })
            .collect();
        Ok(ListPartitionInfosResponse { partitions_info })
    }

    fn lake_snapshot(
        &self,
        r: GetLakeSnapshotRequest,
    ) -> Result<GetLakeSnapshotResponse, ApiError> {
        let readable = r.readable == Some(true);
        if readable && r.snapshot_id.is_some() {
            return Err(ApiError::new(
                errors::UNKNOWN_SERVER_ERROR,
                "GetLakeSnapshotRequest cannot set both snapshot_id and readable=true; use one \
                 or the other to specify either a snapshot by id or the latest readable snapshot.",
            ));
        }
        let t = self.table(&r.table_path)?;
        let snapshots = self.model().lake_snapshots(t.table_id);
        let chosen = if readable {
            snapshots.iter().rev().find(|s| s.readable)
        } else if let Some(id) = r.snapshot_id {
            snapshots.iter().find(|s| s.snapshot_id == id)
        } else {
            snapshots.last()
        };
        let Some(s) = chosen else {
            let mut message = format!(
                "Lake table {} doesn't exist for table: {}.{}, table id: {}",
                if readable {
                    "readable snapshot"
                } else {
                    "snapshot"
                },
                r.table_path.database_name,
                r.table_path.table_name,
                t.table_id
            );
            if let (false, Some(id)) = (readable, r.snapshot_id) {
                message.push_str(&format!(", snapshot id: {id}"));
            }
            return Err(ApiError::new(errors::LAKE_SNAPSHOT_NOT_EXIST, message));
        };
        Ok(GetLakeSnapshotResponse {
            table_id: t.table_id,
            snapshot_id: s.snapshot_id,
            bucket_snapshots: s
                .buckets
                .iter()
                .map(|b| PbLakeSnapshotForBucket {
                    partition_id: b.partition_id,
                    bucket_id: b.bucket,
                    log_offset: Some(b.log_offset),
                    partition_name: b.partition_name.clone(),
                })
                .collect(),
        })
    }

    fn list_offsets(&self, r: ListOffsetsRequest) -> ListOffsetsResponse {
        let buckets_resp = r
            .bucket_id
            .iter()
            .map(|&bucket_id| {
                let result = self
                    .model()
                    .log(r.table_id, r.partition_id, bucket_id)
                    .ok_or_else(|| unknown_bucket(r.table_id, r.partition_id, bucket_id))
                    .and_then(|log| match r.offset_type {
                        LIST_EARLIEST_OFFSET => Ok(log.log_start_offset()),
                        LIST_LATEST_OFFSET => Ok(log.high_watermark()),
                        LIST_OFFSET_FROM_TIMESTAMP => {
                            let ts = r.start_timestamp.ok_or_else(|| {
                                ApiError::new(
                                    errors::INVALID_TIMESTAMP,
                                    "ListOffsets from timestamp without a timestamp.",
                                )
                            })?;
                            // the first batch committed at or after `ts`, else the end
                            Ok(log
                                .batch_timestamps()
                                .find(|&(_, commit)| commit >= ts)
                                .map_or(log.high_watermark(), |(base, _)| base))
                        }
                        other => Err(ApiError::new(
                            errors::UNKNOWN_SERVER_ERROR,
                            format!("Unknown offset type {other}."),
                        )),
                    });
                match result {
                    Ok(offset) => PbListOffsetsRespForBucket {
                        bucket_id,
                        error_code: None,
                        error_message: None,
                        offset: Some(offset),
                    },
                    Err(e) => PbListOffsetsRespForBucket {
                        bucket_id,
                        error_code: Some(e.code),
                        error_message: Some(e.message),
                        offset: None,
                    },
                }
            })
            .collect();
        ListOffsetsResponse { buckets_resp }
    }

    /// Answers each key with the bucket's current value of it, as a tablet server
    /// reads its KV store (`KvTablet.multiGet`); a bucket it cannot answer gets an
    /// error of its own.
    /// Appends each bucket's batches through the model (a model that takes no writes
    /// answers every bucket with an error); injected bucket errors append nothing.
    fn produce_log(&self, r: ProduceLogRequest) -> ProduceLogResponse {
        let buckets_resp = r
            .buckets_req
            .into_iter()
            .map(|b| {
                let at = BucketRef::new(r.table_id, b.partition_id, b.bucket_id);
                let appended = match self.faults().produce_error_of(at, self.nth_write(at)) {
                    Some(e) => Err(e.clone()),
                    None => {
                        self.model()
                            .append(r.table_id, b.partition_id, b.bucket_id, &b.records)
                    }
                };
                let (base_offset, error) = match appended {
                    Ok(offset) => (Some(offset), None),
                    Err(e) => (None, Some(e)),
                };
                PbProduceLogRespForBucket {
                    partition_id: b.partition_id,
                    bucket_id: b.bucket_id,
                    error_code: error.as_ref().map(|e| e.code),
                    error_message: error.map(|e| e.message),
                    base_offset,
                }
            })
            .collect();
        ProduceLogResponse { buckets_resp }
    }

    /// The number of this write (ProduceLog or PutKv part) to `at`, 1-based.
    fn nth_write(&self, at: BucketRef) -> usize {
        match self.shared.produces.lock() {
            Ok(mut counts) => {
                let n = counts.entry(at).or_default();
                *n += 1;
                *n
            }
            Err(_) => 0,
        }
    }

    /// Applies each bucket's KV records through the model, as [`Self::produce_log`]
    /// appends log batches (the same injected write errors apply).
    fn put_kv(&self, r: PutKvRequest) -> PutKvResponse {
        let buckets_resp = r
            .buckets_req
            .into_iter()
            .map(|b| {
                let at = BucketRef::new(r.table_id, b.partition_id, b.bucket_id);
                let written = match self.faults().produce_error_of(at, self.nth_write(at)) {
                    Some(e) => Err(e.clone()),
                    None => self.model().put_kv(
                        r.table_id,
                        b.partition_id,
                        b.bucket_id,
                        &b.records,
                        &r.target_columns,
                    ),
                };
                let (log_end_offset, error) = match written {
                    Ok(offset) => (Some(offset), None),
                    Err(e) => (None, Some(e)),
                };
                PbPutKvRespForBucket {
                    partition_id: b.partition_id,
                    bucket_id: b.bucket_id,
                    error_code: error.as_ref().map(|e| e.code),
                    error_message: error.map(|e| e.message),
                    log_end_offset,
                }
            })
            .collect();
        PutKvResponse { buckets_resp }
    }

    fn lookup(&self, r: LookupRequest) -> LookupResponse {
        let table = self.model().table_by_id(r.table_id);
        let buckets_resp = r
            .buckets_req
            .into_iter()
            .map(|b| {
                let answer = |error: Option<ApiError>, values| PbLookupRespForBucket {
                    partition_id: b.partition_id,
                    bucket_id: b.bucket_id,
                    error_code: error.as_ref().map(|e| e.code),
                    error_message: error.map(|e| e.message),
                    values,
                };
                let Some((database, name, table)) = &table else {
                    let error = unknown_bucket(r.table_id, b.partition_id, b.bucket_id);
                    return answer(Some(error), Vec::new());
                };
                let at = BucketRef::new(r.table_id, b.partition_id, b.bucket_id);
                let nth = match self.shared.lookups.lock() {
                    Ok(mut counts) => {
                        let n = counts.entry(at).or_default();
                        *n += 1;
                        *n
                    }
                    Err(_) => 0,
                };
                if let Some(e) = self.faults().lookup_error_of(at, nth) {
                    return answer(Some(e.clone()), Vec::new());
                }
                match self.bucket_kv(database, name, table, b.partition_id, b.bucket_id) {
                    Ok(kv) => {
                        let values = b
                            .keys
                            .iter()
                            .map(|k| PbValue {
                                values: kv.get(k.as_slice()).map(|v| v.to_vec()),
                            })
                            .collect();
                        answer(None, values)
                    }
                    Err(e) => answer(Some(e), Vec::new()),
                }
            })
            .collect();
        LookupResponse { buckets_resp }
    }

    /// ScanKv: opens a scanner on a bucket's key-value state, or answers the next
    /// batch of an open one ([`crate::kv_scan`]).
    fn scan_kv(&self, r: ScanKvRequest) -> ScanKvResponse {
        use crate::kv_scan::error_response;
        let Some(open) = &r.bucket_scan_req else {
            return self.shared.scanners.next(&r);
        };
        if r.scanner_id.is_some() {
            return error_response(ApiError::new(
                errors::UNKNOWN_SERVER_ERROR,
                "a ScanKv request names both a bucket and a scanner",
            ));
        }
        let (table_id, partition_id, bucket) = (open.table_id, open.partition_id, open.bucket_id);
        let Some((database, name, table)) = self.model().table_by_id(table_id) else {
            return error_response(unknown_bucket(table_id, partition_id, bucket));
        };
        let Some(log) = self.model().log(table_id, partition_id, bucket) else {
            return error_response(unknown_bucket(table_id, partition_id, bucket));
        };
        match self.bucket_kv(&database, &name, &table, partition_id, bucket) {
            Ok(kv) => self.shared.scanners.open(&kv, log.high_watermark(), &r),
            Err(e) => error_response(e),
        }
    }

    /// The key-value state of one bucket, rebuilt from its log when that has grown.
    fn bucket_kv(
        &self,
        database: &str,
        name: &str,
        table: &ServedTable,
        partition_id: Option<i64>,
        bucket: i32,
    ) -> Result<Arc<BucketKv>, ApiError> {
        let log = self
            .model()
            .log(table.table_id, partition_id, bucket)
            .ok_or_else(|| unknown_bucket(table.table_id, partition_id, bucket))?;
        let at = BucketRef::new(table.table_id, partition_id, bucket);
        let cached = |kv: &HashMap<BucketRef, (i64, Arc<BucketKv>)>| {
            kv.get(&at)
                .filter(|(hw, _)| *hw == log.high_watermark())
                .map(|(_, kv)| kv.clone())
        };
        if let Some(kv) = self.shared.kv.lock().ok().and_then(|kv| cached(&kv)) {
            return Ok(kv);
        }
        let kv = Arc::new(
            bucket_kv(database, name, table, &log)
                .map_err(|e| ApiError::new(errors::UNKNOWN_SERVER_ERROR, e))?,
        );
        if let Ok(mut all) = self.shared.kv.lock() {
            all.insert(at, (log.high_watermark(), kv.clone()));
        }
        Ok(kv)
    }

    /// Mirrors `ReplicaManager.readFromLog`: buckets in request order, each limited to
    /// `min(remaining request bytes, bucket max bytes)`, the first non-empty read allowed to
    /// exceed the limit by one whole batch.
    fn fetch_log(&self, r: FetchLogRequest) -> FetchLogResponse {
        let mut remaining = usize::try_from(r.max_bytes).unwrap_or(0);
        let mut min_one_batch = true;
        let mut tables_resp = Vec::with_capacity(r.tables_req.len());
        for table_req in r.tables_req {
            let table_id = table_req.table_id;
            let table = self.model().table_by_id(table_id).map(|(_, _, t)| t);
            let mut projector = match (&table, table_req.projection_pushdown_enabled) {
                (Some(t), true) => Some(Projector::new(
                    t.schemas.clone(),
                    table_req.projected_fields.clone(),
                )),
                _ => None,
            };
            // batches are filtered by their statistics when the client sent a filter
            // (and no projection, which this server does not combine with one)
            let filter = match (
                &table,
                table_req.filter_predicate.clone(),
                table_req.filter_schema_id,
                table_req.projection_pushdown_enabled,
            ) {
                (Some(t), Some(predicate), Some(schema_id), false) => t
                    .schemas
                    .get(&schema_id)
                    .and_then(|json| serde_json::from_slice::<serde_json::Value>(json).ok())
                    .and_then(|json| {
                        <fluss::metadata::Schema as fluss::metadata::JsonSerde>::deserialize_json(
                            &json,
                        )
                        .ok()
                    })
                    .map(|schema| BatchFilter::new(predicate, schema_id, &schema)),
                _ => None,
            };
            let mut buckets_resp = Vec::with_capacity(table_req.buckets_req.len());
            for b in table_req.buckets_req {
                let mut resp = PbFetchLogRespForBucket {
                    partition_id: b.partition_id,
                    bucket_id: b.bucket_id,
                    error_code: None,
                    error_message: None,
                    high_watermark: None,
                    log_start_offset: None,
                    remote_log_fetch_info: None,
                    records: None,
                    filtered_end_offset: None,
                };
                let projection = match projector.as_mut() {
                    None => Ok(None),
                    Some(Ok(p)) => Ok(Some(p)),
                    Some(Err(e)) => Err(e.clone()),
                };
                let at = BucketRef::new(table_id, b.partition_id, b.bucket_id);
                let result = projection.and_then(|projection| {
                    if let Some(e) = self.faults().fetch_error_of(at) {
                        return Err(e.clone());
                    }
                    let log = table
                        .as_ref()
                        .and_then(|_| self.model().log(table_id, b.partition_id, b.bucket_id))
                        .ok_or_else(|| unknown_bucket(table_id, b.partition_id, b.bucket_id))?;
                    let (start, end) = (log.log_start_offset(), log.high_watermark());
                    let offset = if b.fetch_offset == FETCH_FROM_EARLIEST_OFFSET {
                        start
                    } else {
                        b.fetch_offset
                    };
                    if offset < start || offset > end {
                        return Err(ApiError::new(
                            errors::LOG_OFFSET_OUT_OF_RANGE,
                            format!(
                                "Received request for offset {offset} for table bucket {}, but we \
                                 only have log segments from offset {start} up to {end}.",
                                bucket_name(table_id, b.partition_id, b.bucket_id)
                            ),
                        ));
                    }
                    // Below the local log: the segments tiered to remote storage, as
                    // `ReplicaManager.fetchLogFromRemote` answers (no records).
                    if offset < log.local_start_offset()
                        && let Some(remote) = log.remote()
                    {
                        let partition_name = b.partition_id.and_then(|id| {
                            table.as_ref().and_then(|t| {
                                t.partitions
                                    .iter()
                                    .find(|p| p.partition_id == id)
                                    .map(|p| p.name.clone())
                            })
                        });
                        return Ok((
                            log.clone(),
                            Vec::new(),
                            remote_fetch_info(remote, offset, partition_name),
                        ));
                    }
                    let limit = remaining.min(usize::try_from(b.max_fetch_bytes).unwrap_or(0));
                    let (mut records, filtered_end) = match (&filter, offset == end) {
                        (_, true) => (Vec::new(), None),
                        (Some(filter), false) => {
                            log.read_filtered(offset, limit, min_one_batch, &|raw| {
                                filter.include(raw)
                            })
                        }
                        (None, false) => {
                            (log.read(offset, limit, min_one_batch, projection)?, None)
                        }
                    };
                    self.faults().damage_records(at, &mut records);
                    resp.filtered_end_offset = filtered_end;
                    Ok((log, records, None))
                });
                match result {
                    Ok((log, records, remote)) => {
                        self.shared
                            .record_bytes_sent
                            .fetch_add(records.len() as u64, std::sync::atomic::Ordering::Relaxed);
                        if !records.is_empty() {
                            min_one_batch = false;
                        }
                        remaining = remaining.saturating_sub(records.len());
                        resp.high_watermark = Some(log.high_watermark());
                        resp.log_start_offset = Some(log.log_start_offset());
                        if remote.is_some() {
                            resp.remote_log_fetch_info = remote;
                        } else {
                            resp.records = Some(records.into());
                        }
                    }
                    Err(e) => {
                        resp.error_code = Some(e.code);
                        resp.error_message = Some(e.message);
                    }
                }
                buckets_resp.push(resp);
            }
            tables_resp.push(PbFetchLogRespForTable {
                table_id,
                buckets_resp,
            });
        }
        FetchLogResponse { tables_resp }
    }
}

/// The remote segments holding `offset` and every later one, the first read from the
/// batch holding `offset`.
fn remote_fetch_info(
    remote: &crate::log::RemoteLog,
    offset: i64,
    partition_name: Option<String>,
) -> Option<RemoteLogFetchInfo> {
    let segments: Vec<_> = remote
        .segments
        .iter()
        .filter(|s| s.end_offset > offset)
        .collect();
    let first = segments.first()?;
    Some(RemoteLogFetchInfo {
        remote_log_tablet_dir: remote.tablet_dir.clone(),
        partition_name,
        first_start_pos: i32::try_from(first.position_of(offset)).ok(),
        remote_log_segments: segments
            .iter()
            .map(|s| PbRemoteLogSegment {
                remote_log_segment_id: s.id.clone(),
                remote_log_start_offset: s.start_offset,
                remote_log_end_offset: s.end_offset,
                segment_size_in_bytes: i32::try_from(s.bytes.len()).unwrap_or(i32::MAX),
                max_timestamp: None,
            })
            .collect(),
    })
}

fn api_versions() -> ApiVersionsResponse {
    ApiVersionsResponse {
        api_versions: api_key::SUPPORTED
            .iter()
            .map(|&(key, min, max)| PbApiVersion {
                api_key: i32::from(key),
                min_version: i32::from(min),
                max_version: i32::from(max),
            })
            .collect(),
        // Left unset: this one listener is both the coordinator and the tablet server, and
        // fluss-rs only checks the advertised type when it is present
        // (`validate_server_type`, src/rpc/server_connection.rs:165-188).
        server_type: None,
    }
}

/// Object-safe helper to encode any response message into a success frame.
trait EncodeDyn {
    fn encode_frame(&self, request_id: i32) -> Vec<u8>;
}

impl<M: Message> EncodeDyn for M {
    fn encode_frame(&self, request_id: i32) -> Vec<u8> {
        frame::encode_success(request_id, self)
    }
}
