//! Raw FetchLog reads of one bucket from its leader: the `records` bytes of each
//! answer are framed into batches and decoded by this crate's own codec through a
//! [`LogCursor`] (CRC checked, change types read, contiguity checked), the same path
//! a LocalStore's segment files take.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use fluss::rpc::FlussError;
use tokio::io::BufStream;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use super::remote_log::RemoteSegments;
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
    /// Set when an exchange did not end with a whole answer read (dropped, timed out,
    /// failed on the socket, or broke the protocol): the stream may stop inside a
    /// frame or be closed, so the connection is replaced.
    broken: AtomicBool,
    /// The API keys and versions the server answers, asked once (ApiVersions).
    api_versions: tokio::sync::OnceCell<Vec<wire::PbApiVersion>>,
}

/// Marks the connection broken unless disarmed (a whole answer was read).
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
    /// given; connecting and every request give up after `timeout`.
    pub(crate) async fn connect(
        address: &str,
        credentials: Option<&PlainCredentials>,
        timeout: Duration,
    ) -> Result<Self> {
        let cannot = || {
            Error::new(
                ErrorKind::Cluster,
                "cannot connect to a Fluss tablet server",
            )
            .with_context("server", address)
        };
        // An address that drops SYNs would otherwise wait for the OS (minutes).
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(cannot().with_source(e)),
            Err(_) => {
                tracing::warn!(server = %address, ?timeout, "connecting to a tablet server timed out");
                return Err(cannot().with_context("timeout", format!("{timeout:?}")));
            }
        };
        let connection = Self {
            address: address.to_string(),
            stream: Mutex::new(BufStream::new(stream)),
            next_request_id: AtomicI32::new(0),
            broken: AtomicBool::new(false),
            api_versions: tokio::sync::OnceCell::new(),
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
                .request::<_, wire::AuthenticateResponse>(
                    (api_key::AUTHENTICATE, 0),
                    &request,
                    timeout,
                )
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

    /// Whether the server answers `api` at `version`, from its ApiVersions answer,
    /// asked once per connection (a server leaves requests it does not know
    /// unanswered, as Fluss 0.9.1 does ScanKv).
    pub(super) async fn serves(&self, api: i16, version: i16, timeout: Duration) -> Result<bool> {
        let versions = self
            .api_versions
            .get_or_try_init(|| async {
                let answer: wire::ApiVersionsResponse = self
                    .request(
                        (api_key::API_VERSIONS, 0),
                        &wire::ApiVersionsRequest {
                            client_software_name: "fluss-datafusion".to_string(),
                            client_software_version: env!("CARGO_PKG_VERSION").to_string(),
                        },
                        timeout,
                    )
                    .await?;
                Ok::<_, Error>(answer.api_versions)
            })
            .await?;
        Ok(versions.iter().any(|v| {
            v.api_key == i32::from(api)
                && (v.min_version..=v.max_version).contains(&i32::from(version))
        }))
    }

    /// Sends `request` and reads its answer, giving up after `timeout` (a tablet server
    /// that stops answering must fail the read, not hang it).
    pub(super) async fn request<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        (api, version): (i16, i16),
        request: &Req,
        timeout: Duration,
    ) -> Result<Resp> {
        let mut stream = self.stream.lock().await;
        if self.is_broken() {
            // Another request broke it while this one waited for the stream: nothing
            // was sent, so the caller may send it on a new connection.
            return Err(Error::new(
                ErrorKind::Cluster,
                "the connection to the tablet server was cut inside another answer",
            )
            .with_context("server", &self.address)
            .with_context(NOT_SENT, true));
        }
        if closed_by_peer(stream.get_ref()) {
            // The server closed the connection while it was idle (it restarted):
            // nothing was sent, and the caller may send on a new connection.
            self.broken.store(true, Ordering::Relaxed);
            return Err(Error::new(
                ErrorKind::Cluster,
                "the tablet server closed the connection while it was idle",
            )
            .with_context("server", &self.address)
            .with_context(NOT_SENT, true));
        }
        let id = self.next_request_id.fetch_add(1, Ordering::Relaxed) & i32::MAX;
        // A request dropped after its write leaves a whole answer, which the next
        // read skips; one dropped while reading may leave half of one.
        let mut guard = ReadGuard(&self.broken, false);
        let exchange = async {
            wire::write_request(&mut *stream, api, version, id, request).await?;
            wire::read_response(&mut *stream, id).await
        };
        let started = std::time::Instant::now();
        let answer = match tokio::time::timeout(timeout, exchange).await {
            Ok(answer) => answer.map_err(|e| e.with_context("server", &self.address)),
            Err(_) => Err(Error::new(
                ErrorKind::Cluster,
                "the Fluss tablet server did not answer in time",
            )
            .with_context("server", &self.address)
            .with_context("timeout", format!("{timeout:?}"))),
        };
        match &answer {
            Ok(_) => tracing::trace!(
                server = %self.address,
                api,
                elapsed_us = started.elapsed().as_micros() as u64,
                "tablet server request"
            ),
            Err(e) => tracing::warn!(
                server = %self.address,
                api,
                elapsed_ms = started.elapsed().as_millis() as u64,
                error = %e,
                "tablet server request failed"
            ),
        }
        // Only a whole answer leaves the stream at a frame boundary: a success, or an
        // error frame the server sent (it carries its code). A socket error (the server
        // closed the connection, perhaps inside a frame), a timeout or a broken frame
        // leaves a connection that every later request would fail on.
        guard.1 = match &answer {
            Ok(_) => true,
            Err(e) => e.context_value("error_code").is_some(),
        };
        answer
    }

    /// Whether the connection must be replaced.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }
}

/// The context key of an error that says a connection was found closed or broken
/// before the request was sent (so sending it on a new connection sends it once).
const NOT_SENT: &str = "not_sent";

/// Whether `error` says the connection was found closed or broken before anything
/// was sent.
pub(super) fn not_sent(error: &Error) -> bool {
    error.context_value(NOT_SENT).is_some()
}

/// Whether the peer closed `stream` (end of stream or a reset waiting to be read),
/// without waiting and without consuming anything: bytes waiting to be read (an
/// answer a dropped request left) mean it is open.
///
/// One `recv(MSG_PEEK)` on the non-blocking socket, answered by the kernel at once.
/// A zero `tokio::time::timeout` around a peek looks the same but is not: tokio's
/// timer rounds a deadline up to the next millisecond tick (`deadline_to_tick`) and
/// fires it only when the driver has processed that tick, so every request on an
/// idle connection waited up to a millisecond or more for nothing.
fn closed_by_peer(stream: &TcpStream) -> bool {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    match socket2::SockRef::from(stream).peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
        ),
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
    /// How long one FetchLog may take before the read fails.
    pub request_timeout: Duration,
    /// Storage options for tiered (remote) log segments (the source's lake options).
    pub storage_options: Arc<HashMap<String, String>>,
    /// The batch filter sent with every fetch, with the schema id it names fields of;
    /// the server then leaves out batches that cannot match, so answers have gaps.
    pub filter: Option<(wire::PbPredicate, i32)>,
    /// Credentials for a new connection to the same server, when the one given was
    /// closed while idle.
    pub credentials: Option<PlainCredentials>,
}

/// A bounded read of one bucket over FetchLog.
pub(crate) struct BucketFetchReader {
    connection: Arc<TabletConnection>,
    fetch: BucketFetch,
    cursor: LogCursor,
    pending: VecDeque<LogBatch>,
    /// Remote segments being read (a fetch below the server's local log), before
    /// fetching resumes from the server.
    remote: Option<RemoteSegments>,
    /// Where the server's last answer says its filtering scanned to.
    filtered_end: Option<i64>,
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
            remote: None,
            filtered_end: None,
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
                if let Some(end) = self.filtered_end.take() {
                    self.cursor.skip_to(end);
                    continue;
                }
                self.fill().await?;
                continue;
            };
            let position = self.cursor.position();
            if batch.next_offset() <= position {
                continue;
            }
            // A filtering server leaves out batches no row of which matches.
            if self.fetch.filter.is_some() && batch.base_offset() > position {
                self.cursor.skip_to(batch.base_offset());
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
        if self.remote.is_some() {
            return self.fill_from_remote().await;
        }
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
                filter_predicate: self.fetch.filter.as_ref().map(|(p, _)| p.clone()),
                filter_schema_id: self.fetch.filter.as_ref().map(|(_, id)| *id),
                buckets_req: vec![wire::PbFetchLogReqForBucket {
                    partition_id: self.fetch.partition_id,
                    bucket_id: self.fetch.bucket,
                    fetch_offset: position,
                    max_fetch_bytes: self.fetch.max_fetch_bytes,
                }],
            }],
        };
        let timeout = self.fetch.request_timeout;
        let response: wire::FetchLogResponse = match self
            .connection
            .request((api_key::FETCH_LOG, 0), &request, timeout)
            .await
        {
            Err(e) if not_sent(&e) => {
                // nothing was sent: send it on a new connection to the same server
                self.connection = Arc::new(
                    TabletConnection::connect(
                        &self.connection.address,
                        self.fetch.credentials.as_ref(),
                        timeout,
                    )
                    .await?,
                );
                self.connection
                    .request((api_key::FETCH_LOG, 0), &request, timeout)
                    .await
            }
            answer => answer,
        }
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
            } else if code == error_code::UNKNOWN_TABLE_OR_BUCKET {
                // the server does not know the table id the query planned with
                error = error.with_context(
                    "hint",
                    "the table was dropped (or created again) since the query was planned, \
                     or the bucket's leader moved; retry the query",
                );
            } else if is_leadership_change(code) {
                error = error.with_context(
                    "hint",
                    "the bucket's leader moved or is being elected; retry the query",
                );
            }
            return Err(error);
        }
        if let Some(info) = &bucket.remote_log_fetch_info {
            // The offsets are no longer on the server's disk: read the segments it
            // tiered to remote storage, then fetch from where they end.
            let remote = RemoteSegments::new(info, position, &self.fetch.storage_options)
                .map_err(|e| e.with_context("server", &self.connection.address))?;
            self.remote = Some(remote);
            return self.fill_from_remote().await;
        }
        let records = bucket.records.unwrap_or_default();
        self.frame(records)?;
        self.filtered_end = bucket
            .filtered_end_offset
            .filter(|end| self.fetch.filter.is_some() && *end > position);
        if self.pending.is_empty() && self.filtered_end.is_none() {
            return Err(self
                .cursor
                .ended_early()
                .with_context("server", &self.connection.address)
                .with_context("high_watermark", bucket.high_watermark.unwrap_or(-1)));
        }
        Ok(())
    }

    /// Frames the whole batches of the next chunk of the remote segments. A chunk
    /// ends inside a batch at most once per batch: that batch is read again, whole,
    /// with the next chunk.
    async fn fill_from_remote(&mut self) -> Result<()> {
        let mut min_bytes = 0;
        loop {
            let Some(remote) = self.remote.as_mut() else {
                return Ok(());
            };
            let file = remote.current_location();
            let located = |e: Error| match &file {
                Some(f) => e.with_context("file", f),
                None => e,
            };
            let address = &self.connection.address;
            let Some((chunk, start)) = remote
                .next_chunk(min_bytes)
                .await
                .map_err(|e| e.with_context("server", address))?
            else {
                // every segment read; the server's local log follows
                let end = remote.end_offset();
                self.remote = None;
                if self.cursor.position() < end {
                    return Err(Error::data_invalid(format!(
                        "the remote log segments end at offset {end} but their batches end at {}",
                        self.cursor.position()
                    ))
                    .with_context("server", &self.connection.address));
                }
                return Ok(());
            };
            let mut consumed = 0u64;
            let mut batches = BatchIterator::new(chunk.clone());
            for batch in batches.by_ref() {
                let batch = batch.map_err(|e| located(e).with_context("byte", start + consumed))?;
                consumed += batch.size_in_bytes() as u64;
                self.pending.push_back(batch);
            }
            let whole_segment_read = start + (chunk.len() as u64) >= remote.segment_size();
            remote.advance(consumed);
            if consumed > 0 {
                return Ok(());
            }
            // no whole batch in the chunk: the batch is larger than the chunk, or the
            // segment ends inside it
            match torn_batch(&chunk) {
                Some((_, size)) if !whole_segment_read && size > chunk.len() as i64 => {
                    min_bytes = size as u64;
                }
                torn => {
                    let error = Error::data_invalid(match torn {
                        Some((base_offset, size)) => format!(
                            "the remote log segment ends inside the batch at offset {base_offset} \
                             ({size} bytes claimed)"
                        ),
                        None => "the remote log segment ends inside a batch header".to_string(),
                    });
                    return Err(located(error).with_context("byte", start));
                }
            }
        }
    }

    /// Frames the whole batches of one answer. A server may cut its answer inside the
    /// last batch (at the byte limit); that batch is fetched again next time. An answer
    /// with no whole batch at all is an error: the read could not progress (a server
    /// always sends the first batch whole, so its length field is wrong).
    fn frame(&mut self, records: Bytes) -> Result<()> {
        let total = records.len();
        let mut batches = BatchIterator::new(records.clone());
        for batch in batches.by_ref() {
            self.pending.push_back(batch.map_err(|e| {
                e.with_context("server", &self.connection.address)
                    .with_context("fetch_offset", self.cursor.position())
            })?);
        }
        if self.pending.is_empty() && total > 0 {
            let mut error = match torn_batch(&records) {
                Some((base_offset, size)) => Error::data_invalid(format!(
                    "the batch at offset {base_offset} claims {size} bytes, past the end of \
                     the FetchLog answer ({total} bytes)"
                ))
                .with_context("base_offset", base_offset),
                None => Error::data_invalid(format!(
                    "a FetchLog answer of {total} bytes holds no whole batch"
                )),
            };
            error = error
                .with_context("server", &self.connection.address)
                .with_context("fetch_offset", self.cursor.position())
                .with_context("max_fetch_bytes", self.fetch.max_fetch_bytes);
            return Err(error);
        }
        Ok(())
    }
}

/// Whether a FetchLog error code says the bucket is not led by the server asked (Java
/// `Errors`: `NOT_LEADER_OR_FOLLOWER` 12, `LEADER_NOT_AVAILABLE_EXCEPTION` 44,
/// `UNKNOWN_TABLE_OR_BUCKET_EXCEPTION` 21): the metadata the read was planned with is
/// stale. The codes come from fluss-rs's `FlussError`, which mirrors `Errors`.
pub(super) fn is_leadership_change(code: i32) -> bool {
    code == error_code::UNKNOWN_TABLE_OR_BUCKET
        || matches!(
            FlussError::for_code(code),
            FlussError::NotLeaderOrFollower | FlussError::LeaderNotAvailableException
        )
}

/// The base offset and claimed size of the batch `records` starts with, when its header
/// is whole but the batch is not.
fn torn_batch(records: &[u8]) -> Option<(i64, i64)> {
    let base_offset = i64::from_le_bytes(records.get(0..8)?.try_into().ok()?);
    let length = i32::from_le_bytes(records.get(8..12)?.try_into().ok()?);
    // the length counts the bytes after the base offset and the length itself
    Some((base_offset, i64::from(length) + 12))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leadership_codes_are_those_of_fluss() {
        assert!(is_leadership_change(12));
        assert!(is_leadership_change(44));
        assert!(is_leadership_change(21));
        // 22 is INVALID_UPDATE_VERSION_EXCEPTION, not a leadership change
        assert!(!is_leadership_change(22));
        assert!(!is_leadership_change(19));
    }

    #[test]
    fn a_torn_batch_names_its_offset_and_claimed_size() {
        let mut records = 42i64.to_le_bytes().to_vec();
        records.extend_from_slice(&100i32.to_le_bytes());
        assert_eq!(torn_batch(&records), Some((42, 112)));
        assert_eq!(torn_batch(&records[..10]), None);
    }

    /// The idle check answers at once, from the socket alone: open while nothing
    /// arrived, open while bytes wait to be read (they are only peeked), and closed
    /// once the peer closed its end.
    #[tokio::test]
    async fn an_idle_connection_is_seen_open_or_closed_at_once() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        assert!(!closed_by_peer(&client));
        server.write_all(b"x").await.unwrap();
        client.readable().await.unwrap();
        assert!(!closed_by_peer(&client), "pending bytes are not a close");
        assert!(!closed_by_peer(&client), "the peeked byte is still there");
        drop(server);
        // the close arrives after the byte; read the byte so the end shows
        let mut byte = [0u8; 1];
        loop {
            client.readable().await.unwrap();
            match client.try_read(&mut byte) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => panic!("{e}"),
            }
        }
        // the close travels on its own; give it up to 10 s
        for _ in 0..10_000 {
            if closed_by_peer(&client) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("the closed connection was never seen closed");
    }
}
