//! The client side of the Fluss RPC protocol for the requests this crate sends itself
//! (FetchLog, ListOffsets, Lookup, and SASL/PLAIN's Authenticate): frames and the
//! protobuf messages.
//!
//! fluss-rs 1.0 keeps its messages crate-private (`pub(crate) mod proto`) and its
//! connection's `request` too, so a raw FetchLog (whose `records` bytes this crate
//! decodes with its own codec: CRC checked, change types read) needs its own. Field
//! numbers and labels are Fluss's protocol definition, `fluss-rpc/src/main/proto/
//! FlussApi.proto` (apache/fluss `545c55390296374100d24947df4dcc58c964164d`); the
//! framing is Java's `MessageCodec` and fluss-rs's `rpc/frame.rs` / `message/header.rs`:
//! - request: `i32 length | i16 api_key | i16 api_version | i32 request_id | body`;
//! - response: `i32 length | u8 type | i32 request_id | body` for type 0 (success) and
//!   1 (error, body `ErrorResponse`); type 2 (server failure) has no request id.
//!
//! All integers of the frame are big-endian.
//!
//! Hidden from the docs but public: the repository's Fluss RPC test server
//! (`crates/fluss-test-support`) serves these same messages.

// Fields are named exactly as in FlussApi.proto, which documents them.
#![allow(missing_docs)]

use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::{Error, ErrorKind, Result};

/// API keys of the requests sent (Java `ApiKeys`).
pub mod api_key {
    /// ApiVersions (which API keys and versions a server answers).
    pub const API_VERSIONS: i16 = 1000;
    /// FetchLog.
    pub const FETCH_LOG: i16 = 1015;
    /// Lookup (primary keys, answered from the KV store).
    pub const LOOKUP: i16 = 1017;
    /// ListOffsets.
    pub const LIST_OFFSETS: i16 = 1021;
    /// Authenticate (SASL).
    pub const AUTHENTICATE: i16 = 1038;
    /// ScanKv (a primary-key bucket's current rows, Fluss 1.0: `server-scan`).
    pub const SCAN_KV: i16 = 1061;
}

/// Fluss error codes this crate tells apart (Java `Errors`).
pub mod error_code {
    /// The fetch offset is outside `[log start, high watermark]`.
    pub const LOG_OFFSET_OUT_OF_RANGE: i32 = 19;
    /// No such table or bucket on this server.
    pub const UNKNOWN_TABLE_OR_BUCKET: i32 = 21;
    /// This server does not lead the bucket (metadata moved).
    pub const NOT_LEADER_OR_FOLLOWER: i32 = 12;
    /// The bucket has no leader right now (an election is under way).
    pub const LEADER_NOT_AVAILABLE: i32 = 44;
}

/// The largest response frame accepted (a FetchLog answer is bounded by its
/// `max_bytes`, 16 MiB by default, plus headers).
const MAX_FRAME: usize = 256 << 20;

/// `ErrorResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct ErrorResponse {
    #[prost(int32, required, tag = "1")]
    pub error_code: i32,
    #[prost(string, optional, tag = "2")]
    pub error_message: Option<String>,
}

/// `ApiVersionsRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct ApiVersionsRequest {
    #[prost(string, required, tag = "1")]
    pub client_software_name: String,
    #[prost(string, required, tag = "2")]
    pub client_software_version: String,
}

/// `ApiVersionsResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct ApiVersionsResponse {
    #[prost(message, repeated, tag = "1")]
    pub api_versions: Vec<PbApiVersion>,
    #[prost(int32, optional, tag = "2")]
    pub server_type: Option<i32>,
}

/// `PbApiVersion`.
#[derive(Clone, PartialEq, Message)]
pub struct PbApiVersion {
    #[prost(int32, required, tag = "1")]
    pub api_key: i32,
    #[prost(int32, required, tag = "2")]
    pub min_version: i32,
    #[prost(int32, required, tag = "3")]
    pub max_version: i32,
}

/// `AuthenticateRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct AuthenticateRequest {
    #[prost(string, required, tag = "1")]
    pub protocol: String,
    #[prost(bytes = "vec", required, tag = "2")]
    pub token: Vec<u8>,
}

/// `AuthenticateResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct AuthenticateResponse {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub challenge: Option<Vec<u8>>,
}

/// `FetchLogRequest` (this crate leaves fields 4..6 unset: no wait, no minimum,
/// leader reads).
#[derive(Clone, PartialEq, Message)]
pub struct FetchLogRequest {
    #[prost(int32, required, tag = "1")]
    pub follower_server_id: i32,
    #[prost(int32, required, tag = "2")]
    pub max_bytes: i32,
    #[prost(message, repeated, tag = "3")]
    pub tables_req: Vec<PbFetchLogReqForTable>,
    #[prost(int32, optional, tag = "4")]
    pub max_wait_ms: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub min_bytes: Option<i32>,
    #[prost(int32, optional, tag = "6")]
    pub read_preference: Option<i32>,
}

/// `PbFetchLogReqForTable`. With `filter_predicate` (and its `filter_schema_id`), the
/// server leaves out batches whose statistics prove no row matches.
#[derive(Clone, PartialEq, Message)]
pub struct PbFetchLogReqForTable {
    #[prost(int64, required, tag = "1")]
    pub table_id: i64,
    #[prost(bool, required, tag = "2")]
    pub projection_pushdown_enabled: bool,
    #[prost(int32, repeated, packed = "true", tag = "3")]
    pub projected_fields: Vec<i32>,
    #[prost(message, repeated, tag = "4")]
    pub buckets_req: Vec<PbFetchLogReqForBucket>,
    #[prost(message, optional, tag = "5")]
    pub filter_predicate: Option<PbPredicate>,
    #[prost(int32, optional, tag = "6")]
    pub filter_schema_id: Option<i32>,
}

/// `ListOffsetsRequest` of one partition's (or table's) buckets on one server.
#[derive(Clone, PartialEq, Message)]
pub struct ListOffsetsRequest {
    #[prost(int32, required, tag = "1")]
    pub follower_server_id: i32,
    /// [`offset_type`].
    #[prost(int32, required, tag = "2")]
    pub offset_type: i32,
    #[prost(int64, required, tag = "3")]
    pub table_id: i64,
    #[prost(int64, optional, tag = "4")]
    pub partition_id: Option<i64>,
    /// Packed, as Fluss's `[packed = true]` declares it.
    #[prost(int32, repeated, packed = "true", tag = "5")]
    pub bucket_id: Vec<i32>,
}

/// `ListOffsetsRequest.offset_type` (Java `ListOffsetsParam`).
pub mod offset_type {
    /// The log start offset.
    pub const EARLIEST: i32 = 0;
    /// The high watermark.
    pub const LATEST: i32 = 1;
}

/// `ListOffsetsResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct ListOffsetsResponse {
    #[prost(message, repeated, tag = "1")]
    pub buckets_resp: Vec<PbListOffsetsRespForBucket>,
}

/// `PbListOffsetsRespForBucket`.
#[derive(Clone, PartialEq, Message)]
pub struct PbListOffsetsRespForBucket {
    #[prost(int32, required, tag = "1")]
    pub bucket_id: i32,
    #[prost(int32, optional, tag = "2")]
    pub error_code: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub error_message: Option<String>,
    #[prost(int64, optional, tag = "4")]
    pub offset: Option<i64>,
}

/// `ScanKvRequest`: opens a scanner of one bucket (`bucket_scan_req`) or asks an open
/// one (`scanner_id`) for its next batch (`call_seq_id` counting the requests).
#[derive(Clone, PartialEq, Message)]
pub struct ScanKvRequest {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub scanner_id: Option<Vec<u8>>,
    #[prost(message, optional, tag = "2")]
    pub bucket_scan_req: Option<PbScanReqForBucket>,
    #[prost(int32, optional, tag = "3")]
    pub call_seq_id: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub batch_size_bytes: Option<i32>,
    #[prost(bool, optional, tag = "5")]
    pub close_scanner: Option<bool>,
}

/// `PbScanReqForBucket`.
#[derive(Clone, PartialEq, Message)]
pub struct PbScanReqForBucket {
    #[prost(int64, required, tag = "1")]
    pub table_id: i64,
    #[prost(int64, optional, tag = "2")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "3")]
    pub bucket_id: i32,
    #[prost(int64, optional, tag = "4")]
    pub limit: Option<i64>,
    #[prost(int32, optional, tag = "5")]
    pub routing_bucket_count: Option<i32>,
}

/// `ScanKvResponse`: `records` is a `DefaultValueRecordBatch` (each value the row's
/// schema id and the row, as Lookup answers them); `log_offset` is the high watermark
/// when the scanner opened (first response only).
#[derive(Clone, PartialEq, Message)]
pub struct ScanKvResponse {
    #[prost(int32, optional, tag = "1")]
    pub error_code: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub error_message: Option<String>,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub scanner_id: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    pub has_more_results: Option<bool>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub records: Option<Vec<u8>>,
    #[prost(int64, optional, tag = "6")]
    pub log_offset: Option<i64>,
}

/// The values of a `DefaultValueRecordBatch` (`i32 length | u8 magic | i32 count`,
/// then per record `i32 length | i16 schema id | row`, little endian; apache/fluss
/// `DefaultValueRecordBatch`, fluss-rs `record/kv/value_record_batch.rs`): each value
/// as Lookup answers one (schema id and row).
pub fn value_records(batch: &[u8]) -> Result<Vec<Vec<u8>>> {
    let invalid = |what: String| Error::new(ErrorKind::DataInvalid, what);
    let int = |at: usize| -> Option<i32> {
        batch
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_le_bytes)
    };
    let (Some(length), Some(count)) = (int(0), int(5)) else {
        return Err(invalid(format!(
            "a value record batch of {} bytes is shorter than its 9-byte header",
            batch.len()
        )));
    };
    if usize::try_from(length).ok().and_then(|l| l.checked_add(4)) != Some(batch.len()) {
        return Err(invalid(format!(
            "a value record batch says it has {length} bytes after its length, but has {}",
            batch.len().saturating_sub(4)
        )));
    }
    let count = usize::try_from(count)
        .map_err(|_| invalid(format!("a value record batch counts {count} records")))?;
    let mut values = Vec::with_capacity(count.min(batch.len() / 6));
    let mut at = 9usize;
    for i in 0..count {
        let length = int(at)
            .and_then(|l| usize::try_from(l).ok())
            .filter(|l| *l >= 2)
            .ok_or_else(|| {
                invalid(format!(
                    "record {i} of a value record batch has no valid length at byte {at}"
                ))
            })?;
        let value = batch.get(at + 4..at + 4 + length).ok_or_else(|| {
            invalid(format!(
                "record {i} of a value record batch runs past its end (byte {at}, {length} bytes)"
            ))
        })?;
        values.push(value.to_vec());
        at += 4 + length;
    }
    if at != batch.len() {
        return Err(invalid(format!(
            "a value record batch has {} bytes after its {count} records",
            batch.len() - at
        )));
    }
    Ok(values)
}

/// Encodes values (schema id and row each) as a `DefaultValueRecordBatch`, as a
/// tablet server answers ScanKv (the test server's side of [`value_records`]).
pub fn value_record_batch(values: &[Vec<u8>]) -> Vec<u8> {
    let body: usize = values.iter().map(|v| 4 + v.len()).sum();
    let mut out = Vec::with_capacity(9 + body);
    out.extend_from_slice(&((5 + body) as i32).to_le_bytes());
    out.push(0);
    out.extend_from_slice(&(values.len() as i32).to_le_bytes());
    for value in values {
        out.extend_from_slice(&(value.len() as i32).to_le_bytes());
        out.extend_from_slice(value);
    }
    out
}

/// `LookupRequest`: plain reads (fields 3..5 are for lookups that insert missing keys).
#[derive(Clone, PartialEq, Message)]
pub struct LookupRequest {
    #[prost(int64, required, tag = "1")]
    pub table_id: i64,
    #[prost(message, repeated, tag = "2")]
    pub buckets_req: Vec<PbLookupReqForBucket>,
}

/// `PbLookupReqForBucket`: the encoded primary keys of one bucket (fields 4 and 5 are
/// for lookups in historical partitions).
#[derive(Clone, PartialEq, Message)]
pub struct PbLookupReqForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub keys: Vec<Vec<u8>>,
}

/// `LookupResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct LookupResponse {
    #[prost(message, repeated, tag = "1")]
    pub buckets_resp: Vec<PbLookupRespForBucket>,
}

/// `PbLookupRespForBucket`: one value per key asked, in order.
#[derive(Clone, PartialEq, Message)]
pub struct PbLookupRespForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(int32, optional, tag = "3")]
    pub error_code: Option<i32>,
    #[prost(string, optional, tag = "4")]
    pub error_message: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub values: Vec<PbValue>,
}

/// `PbValue`: a row (`schema id | row bytes`), absent when the key has none.
#[derive(Clone, PartialEq, Message)]
pub struct PbValue {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub values: Option<Vec<u8>>,
}

/// `PbPredicate`: `type` 0 is a leaf, 1 a compound.
#[derive(Clone, PartialEq, Message)]
pub struct PbPredicate {
    #[prost(int32, required, tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub leaf: Option<PbLeafPredicate>,
    #[prost(message, optional, tag = "3")]
    pub compound: Option<PbCompoundPredicate>,
}

/// `PbLeafPredicate`: `function` applied to the column with schema field id
/// `field_id` and `literals` (codes in [`predicate_code`]).
#[derive(Clone, PartialEq, Message)]
pub struct PbLeafPredicate {
    #[prost(int32, required, tag = "1")]
    pub function: i32,
    #[prost(int32, required, tag = "2")]
    pub field_id: i32,
    #[prost(message, repeated, tag = "3")]
    pub literals: Vec<PbLiteralValue>,
}

/// `PbCompoundPredicate`: AND (0) or OR (1) of `children`.
#[derive(Clone, PartialEq, Message)]
pub struct PbCompoundPredicate {
    #[prost(int32, required, tag = "1")]
    pub function: i32,
    #[prost(message, repeated, tag = "2")]
    pub children: Vec<PbPredicate>,
}

/// `PbLiteralValue`: `literal_type` names the field that holds the value.
#[derive(Clone, PartialEq, Message)]
pub struct PbLiteralValue {
    #[prost(int32, required, tag = "1")]
    pub literal_type: i32,
    #[prost(bool, required, tag = "2")]
    pub is_null: bool,
    #[prost(bool, optional, tag = "3")]
    pub boolean_value: Option<bool>,
    #[prost(int32, optional, tag = "4")]
    pub int_value: Option<i32>,
    #[prost(int64, optional, tag = "5")]
    pub bigint_value: Option<i64>,
    #[prost(float, optional, tag = "6")]
    pub float_value: Option<f32>,
    #[prost(double, optional, tag = "7")]
    pub double_value: Option<f64>,
    #[prost(string, optional, tag = "8")]
    pub string_value: Option<String>,
    #[prost(bytes = "vec", optional, tag = "9")]
    pub binary_value: Option<Vec<u8>>,
    #[prost(int64, optional, tag = "10")]
    pub decimal_value: Option<i64>,
    #[prost(int64, optional, tag = "11")]
    pub timestamp_millis_value: Option<i64>,
    #[prost(int32, optional, tag = "12")]
    pub timestamp_nano_of_millis_value: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "13")]
    pub decimal_bytes: Option<Vec<u8>>,
}

/// The integer codes of `PbPredicate` (FlussApi.proto comments; fluss-rs
/// `predicate/pb.rs`).
pub mod predicate_code {
    /// `PbPredicate.type` of a leaf.
    pub const LEAF: i32 = 0;
    /// `PbPredicate.type` of a compound.
    pub const COMPOUND: i32 = 1;
    /// Leaf functions.
    pub const EQUAL: i32 = 0;
    /// `<>`.
    pub const NOT_EQUAL: i32 = 1;
    /// `<`.
    pub const LESS_THAN: i32 = 2;
    /// `<=`.
    pub const LESS_OR_EQUAL: i32 = 3;
    /// `>`.
    pub const GREATER_THAN: i32 = 4;
    /// `>=`.
    pub const GREATER_OR_EQUAL: i32 = 5;
    /// `IS NULL`.
    pub const IS_NULL: i32 = 6;
    /// `IS NOT NULL`.
    pub const IS_NOT_NULL: i32 = 7;
    /// `IN (...)`.
    pub const IN: i32 = 11;
    /// `NOT IN (...)`.
    pub const NOT_IN: i32 = 12;
    /// Compound functions.
    pub const AND: i32 = 0;
    /// `OR`.
    pub const OR: i32 = 1;
    /// Literal types (`PbDataTypeRoot`).
    pub const BOOLEAN: i32 = 0;
    /// `TINYINT`.
    pub const TINYINT: i32 = 1;
    /// `SMALLINT`.
    pub const SMALLINT: i32 = 2;
    /// `INT`.
    pub const INT: i32 = 3;
    /// `BIGINT`.
    pub const BIGINT: i32 = 4;
    /// `FLOAT`.
    pub const FLOAT: i32 = 5;
    /// `DOUBLE`.
    pub const DOUBLE: i32 = 6;
    /// `CHAR`.
    pub const CHAR: i32 = 7;
    /// `STRING`.
    pub const STRING: i32 = 8;
    /// `DATE` (days since the epoch in `bigint_value`, as fluss-rs writes it).
    pub const DATE: i32 = 10;
}

/// `PbFetchLogReqForBucket`.
#[derive(Clone, PartialEq, Message)]
pub struct PbFetchLogReqForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(int64, required, tag = "3")]
    pub fetch_offset: i64,
    #[prost(int32, required, tag = "4")]
    pub max_fetch_bytes: i32,
}

/// `FetchLogResponse`.
#[derive(Clone, PartialEq, Message)]
pub struct FetchLogResponse {
    #[prost(message, repeated, tag = "1")]
    pub tables_resp: Vec<PbFetchLogRespForTable>,
}

/// `PbFetchLogRespForTable`.
#[derive(Clone, PartialEq, Message)]
pub struct PbFetchLogRespForTable {
    #[prost(int64, required, tag = "1")]
    pub table_id: i64,
    #[prost(message, repeated, tag = "2")]
    pub buckets_resp: Vec<PbFetchLogRespForBucket>,
}

/// `PbFetchLogRespForBucket`.
#[derive(Clone, PartialEq, Message)]
pub struct PbFetchLogRespForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(int32, optional, tag = "3")]
    pub error_code: Option<i32>,
    #[prost(string, optional, tag = "4")]
    pub error_message: Option<String>,
    #[prost(int64, optional, tag = "5")]
    pub high_watermark: Option<i64>,
    #[prost(int64, optional, tag = "6")]
    pub log_start_offset: Option<i64>,
    #[prost(message, optional, tag = "7")]
    pub remote_log_fetch_info: Option<RemoteLogFetchInfo>,
    #[prost(bytes = "bytes", optional, tag = "8")]
    pub records: Option<bytes::Bytes>,
    #[prost(int64, optional, tag = "9")]
    pub filtered_end_offset: Option<i64>,
}

/// `PbRemoteLogFetchInfo`: the answer to a fetch below the local log, naming the
/// remote (tiered) segments from the one holding the fetch offset on.
#[derive(Clone, PartialEq, Message)]
pub struct RemoteLogFetchInfo {
    #[prost(string, required, tag = "1")]
    pub remote_log_tablet_dir: String,
    #[prost(string, optional, tag = "2")]
    pub partition_name: Option<String>,
    #[prost(message, repeated, tag = "3")]
    pub remote_log_segments: Vec<PbRemoteLogSegment>,
    /// Byte position in the first segment of the batch holding the fetch offset.
    #[prost(int32, optional, tag = "4")]
    pub first_start_pos: Option<i32>,
}

/// `PbRemoteLogSegment`: `{remote_log_tablet_dir}/{id}/{start:020}.log`, offsets
/// `[start, end)`.
#[derive(Clone, PartialEq, Message)]
pub struct PbRemoteLogSegment {
    #[prost(string, required, tag = "1")]
    pub remote_log_segment_id: String,
    #[prost(int64, required, tag = "2")]
    pub remote_log_start_offset: i64,
    #[prost(int64, required, tag = "3")]
    pub remote_log_end_offset: i64,
    #[prost(int32, required, tag = "4")]
    pub segment_size_in_bytes: i32,
    #[prost(int64, optional, tag = "5")]
    pub max_timestamp: Option<i64>,
}

/// An error answer of the server, with its Fluss error code.
pub(crate) fn server_error(code: i32, message: Option<&str>) -> Error {
    Error::new(
        ErrorKind::Cluster,
        format!(
            "the Fluss server answered error {code}: {}",
            message.unwrap_or("(no message)")
        ),
    )
    .with_context("error_code", code)
}

/// Writes one request frame.
pub(crate) async fn write_request<W: AsyncWrite + Unpin>(
    writer: &mut W,
    api_key: i16,
    api_version: i16,
    request_id: i32,
    body: &impl Message,
) -> Result<()> {
    let body = body.encode_to_vec();
    let mut frame = Vec::with_capacity(12 + body.len());
    frame.extend_from_slice(&((8 + body.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&api_key.to_be_bytes());
    frame.extend_from_slice(&api_version.to_be_bytes());
    frame.extend_from_slice(&request_id.to_be_bytes());
    frame.extend_from_slice(&body);
    writer.write_all(&frame).await.map_err(connection_error)?;
    writer.flush().await.map_err(connection_error)
}

/// Reads the response frame of `request_id` and decodes its body.
pub(crate) async fn read_response<R: AsyncRead + Unpin, M: Message + Default>(
    reader: &mut R,
    request_id: i32,
) -> Result<M> {
    let mut length = [0u8; 4];
    reader
        .read_exact(&mut length)
        .await
        .map_err(connection_error)?;
    let length = i32::from_be_bytes(length);
    if length < 1 || length as usize > MAX_FRAME {
        return Err(protocol_error(format!("response frame length {length}")));
    }
    let mut frame = vec![0u8; length as usize];
    reader
        .read_exact(&mut frame)
        .await
        .map_err(connection_error)?;
    let kind = frame[0];
    let body = match kind {
        0 | 1 => {
            let Some(id) = frame.get(1..5) else {
                return Err(protocol_error("response frame too short".to_string()));
            };
            let id = i32::from_be_bytes([id[0], id[1], id[2], id[3]]);
            if id < request_id {
                // The answer to a request whose caller went away (a LIMIT stops a
                // read mid-fetch): answers come in order, so skip to ours.
                return Box::pin(read_response(reader, request_id)).await;
            }
            if id != request_id {
                return Err(protocol_error(format!(
                    "response to request {id}, expected {request_id}"
                )));
            }
            &frame[5..]
        }
        2 => &frame[1..],
        other => return Err(protocol_error(format!("response type {other}"))),
    };
    if kind != 0 {
        let error = ErrorResponse::decode(body)
            .map_err(|e| protocol_error("undecodable error response".into()).with_source(e))?;
        return Err(server_error(
            error.error_code,
            error.error_message.as_deref(),
        ));
    }
    M::decode(body).map_err(|e| protocol_error("undecodable response".into()).with_source(e))
}

fn connection_error(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Cluster, "connection to the Fluss server failed").with_source(e)
}

fn protocol_error(message: String) -> Error {
    Error::new(
        ErrorKind::Cluster,
        format!("the Fluss server broke the protocol: {message}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_frame_has_the_header_fluss_reads() {
        let mut out = Vec::new();
        let body = AuthenticateRequest {
            protocol: "PLAIN".into(),
            token: b"\0u\0p".to_vec(),
        };
        write_request(&mut out, api_key::AUTHENTICATE, 0, 7, &body)
            .await
            .unwrap();
        let length = i32::from_be_bytes(out[0..4].try_into().unwrap()) as usize;
        assert_eq!(length, out.len() - 4);
        assert_eq!(i16::from_be_bytes([out[4], out[5]]), 1038);
        assert_eq!(i16::from_be_bytes([out[6], out[7]]), 0);
        assert_eq!(i32::from_be_bytes(out[8..12].try_into().unwrap()), 7);
        assert_eq!(AuthenticateRequest::decode(&out[12..]).unwrap(), body);
    }

    #[tokio::test]
    async fn an_error_frame_is_an_error_with_its_code() {
        let body = ErrorResponse {
            error_code: 19,
            error_message: Some("out of range".into()),
        }
        .encode_to_vec();
        let mut frame = Vec::new();
        frame.extend_from_slice(&((5 + body.len()) as i32).to_be_bytes());
        frame.push(1);
        frame.extend_from_slice(&3i32.to_be_bytes());
        frame.extend_from_slice(&body);
        let e = read_response::<_, FetchLogResponse>(&mut frame.as_slice(), 3)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cluster);
        assert_eq!(e.context_value("error_code"), Some("19"));
    }
}
