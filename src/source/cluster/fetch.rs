//! Raw FetchLog reads of one bucket from its leader: the `records` bytes of each
//! answer are framed into batches and decoded by this crate's own codec through a
//! [`LogCursor`] (CRC checked, change types read, contiguity checked), the same path
//! a LocalStore's segment files take.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use bytes::Bytes;
use tokio::io::BufStream;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use super::wire::{self, api_key, error_code};
use crate::error::{Error, ErrorKind, Result};
use crate::log::{BatchIterator, ChangelogBatch, LogBatch, LogCursor};

/// SASL/PLAIN credentials. `Debug` never shows the password.
#[derive(Clone)]
pub(crate) struct PlainCredentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for PlainCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlainCredentials({}, ***)", self.username)
    }
}

/// One connection to a tablet server, one request at a time.
#[derive(Debug)]
pub(crate) struct TabletConnection {
    address: String,
    stream: Mutex<BufStream<TcpStream>>,
    next_request_id: AtomicI32,
    /// Set when a request was dropped while its answer was being read: the stream
    /// may stop inside a frame, so the connection is replaced.
    broken: AtomicBool,
}

/// Marks the connection broken unless disarmed (the read finished).
struct ReadGuard<'a>(&'a AtomicBool, bool);

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

impl TabletConnection {
    /// Connects to `address` (`host:port`) and authenticates when `credentials` are
    /// given.
    pub(crate) async fn connect(
        address: &str,
        credentials: Option<&PlainCredentials>,
    ) -> Result<Self> {
        let stream = TcpStream::connect(address).await.map_err(|e| {
            Error::new(
                ErrorKind::Cluster,
                "cannot connect to a Fluss tablet server",
            )
            .with_context("server", address)
            .with_source(e)
        })?;
        let connection = Self {
            address: address.to_string(),
            stream: Mutex::new(BufStream::new(stream)),
            next_request_id: AtomicI32::new(0),
            broken: AtomicBool::new(false),
        };
        if let Some(c) = credentials {
            // PLAIN's one message: authzid NUL authcid NUL password (RFC 4616).
            let mut token = Vec::with_capacity(2 + c.username.len() + c.password.len());
            token.push(0);
            token.extend_from_slice(c.username.as_bytes());
            token.push(0);
            token.extend_from_slice(c.password.as_bytes());
            let request = wire::AuthenticateRequest {
                protocol: "PLAIN".into(),
                token,
            };
            connection
                .request::<_, wire::AuthenticateResponse>(api_key::AUTHENTICATE, &request)
                .await
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Cluster,
                        "SASL/PLAIN authentication to the Fluss server failed",
                    )
                    .with_context("server", address)
                    .with_context("user", &c.username)
                    .with_source(e)
                })?;
        }
        Ok(connection)
    }

    async fn request<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        api: i16,
        request: &Req,
    ) -> Result<Resp> {
        let mut stream = self.stream.lock().await;
        if self.is_broken() {
            return Err(Error::new(
                ErrorKind::Cluster,
                "the connection to the tablet server was cut inside an answer; retry",
            )
            .with_context("server", &self.address));
        }
        let id = self.next_request_id.fetch_add(1, Ordering::Relaxed) & i32::MAX;
        // A request dropped after its write leaves a whole answer, which the next
        // read skips; one dropped while reading may leave half of one.
        let mut guard = ReadGuard(&self.broken, false);
        wire::write_request(&mut *stream, api, 0, id, request).await?;
        let answer = wire::read_response(&mut *stream, id)
            .await
            .map_err(|e| e.with_context("server", &self.address));
        guard.1 = true;
        answer
    }

    /// Whether the connection must be replaced.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }
}

/// What one bucket read fetches.
#[derive(Debug, Clone)]
pub(crate) struct BucketFetch {
    pub table_id: i64,
    pub partition_id: Option<i64>,
    pub bucket: i32,
    /// Most bytes asked for per request (Fluss's `client.scanner.log.fetch.max-bytes-for-bucket`).
    pub max_fetch_bytes: i32,
}

/// A bounded read of one bucket over FetchLog.
pub(crate) struct BucketFetchReader {
    connection: Arc<TabletConnection>,
    fetch: BucketFetch,
    cursor: LogCursor,
    pending: VecDeque<LogBatch>,
}

impl BucketFetchReader {
    /// A reader of the cursor's range through `connection`.
    pub(crate) fn new(
        connection: Arc<TabletConnection>,
        fetch: BucketFetch,
        cursor: LogCursor,
    ) -> Self {
        Self {
            connection,
            fetch,
            cursor,
            pending: VecDeque::new(),
        }
    }
}

#[async_trait::async_trait]
impl crate::source::BucketBatches for BucketFetchReader {
    async fn next_batch(&mut self) -> Result<Option<ChangelogBatch>> {
        loop {
            if self.cursor.is_done() {
                return Ok(None);
            }
            let Some(batch) = self.pending.pop_front() else {
                self.fill().await?;
                continue;
            };
            let position = self.cursor.position();
            if batch.next_offset() <= position {
                continue;
            }
            if let Some(decoded) = self.cursor.accept(&batch).map_err(|e| {
                e.with_context("server", &self.connection.address)
                    .with_context("fetch_offset", position)
            })? {
                return Ok(Some(decoded));
            }
        }
    }
}

impl BucketFetchReader {
    /// Fetches the batches from the cursor's position on.
    async fn fill(&mut self) -> Result<()> {
        let position = self.cursor.position();
        let request = wire::FetchLogRequest {
            // -1: a client, not a follower replica.
            follower_server_id: -1,
            max_bytes: self.fetch.max_fetch_bytes,
            max_wait_ms: None,
            min_bytes: None,
            read_preference: None,
            tables_req: vec![wire::PbFetchLogReqForTable {
                table_id: self.fetch.table_id,
                projection_pushdown_enabled: false,
                projected_fields: Vec::new(),
                buckets_req: vec![wire::PbFetchLogReqForBucket {
                    partition_id: self.fetch.partition_id,
                    bucket_id: self.fetch.bucket,
                    fetch_offset: position,
                    max_fetch_bytes: self.fetch.max_fetch_bytes,
                }],
            }],
        };
        let response: wire::FetchLogResponse = self
            .connection
            .request(api_key::FETCH_LOG, &request)
            .await
            .map_err(|e| e.with_context("fetch_offset", position))?;
        let bucket = response
            .tables_resp
            .into_iter()
            .filter(|t| t.table_id == self.fetch.table_id)
            .flat_map(|t| t.buckets_resp)
            .find(|b| b.bucket_id == self.fetch.bucket && b.partition_id == self.fetch.partition_id)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Cluster,
                    "the Fluss server's FetchLog answer has no entry for the bucket",
                )
                .with_context("server", &self.connection.address)
            })?;
        if let Some(code) = bucket.error_code.filter(|c| *c != 0) {
            let mut error = wire::server_error(code, bucket.error_message.as_deref())
                .with_context("server", &self.connection.address)
                .with_context("fetch_offset", position);
            if code == error_code::LOG_OFFSET_OUT_OF_RANGE {
                // The range was planned from the cluster's offsets: offsets it needs
                // are gone (retention) or never came.
                error = Error::data_invalid(format!(
                    "the log no longer holds offset {position} the read needs"
                ))
                .with_context("server", &self.connection.address)
                .with_source(error);
            } else if matches!(
                code,
                error_code::UNKNOWN_TABLE_OR_BUCKET | error_code::NOT_LEADER_OR_FOLLOWER
            ) {
                error = error.with_context("hint", "the table's metadata changed; retry the query");
            }
            return Err(error);
        }
        if bucket.remote_log_fetch_info.is_some() {
            return Err(Error::unsupported(
                "the read range starts in tiered (remote) log segments, which are not read yet",
            )
            .with_context("server", &self.connection.address)
            .with_context("fetch_offset", position));
        }
        let records = bucket.records.unwrap_or_default();
        self.frame(records)?;
        if self.pending.is_empty() {
            return Err(self
                .cursor
                .ended_early()
                .with_context("server", &self.connection.address)
                .with_context("high_watermark", bucket.high_watermark.unwrap_or(-1)));
        }
        Ok(())
    }

    /// Frames the whole batches of one answer. A server may cut its answer inside the
    /// last batch (at the byte limit); that batch is fetched again next time. An answer
    /// with no whole batch at all is an error: the read could not progress.
    fn frame(&mut self, records: Bytes) -> Result<()> {
        let total = records.len();
        let mut batches = BatchIterator::new(records);
        for batch in batches.by_ref() {
            self.pending.push_back(batch.map_err(|e| {
                e.with_context("server", &self.connection.address)
                    .with_context("fetch_offset", self.cursor.position())
            })?);
        }
        if self.pending.is_empty() && total > 0 {
            return Err(Error::data_invalid(format!(
                "a FetchLog answer of {total} bytes holds no whole batch (max_fetch_bytes {})",
                self.fetch.max_fetch_bytes
            ))
            .with_context("server", &self.connection.address)
            .with_context("fetch_offset", self.cursor.position()));
        }
        Ok(())
    }
}
