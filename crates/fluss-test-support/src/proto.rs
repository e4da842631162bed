//! Protobuf messages of the Fluss RPC protocol, for exactly the RPCs this server answers.
//!
//! Hand-written `prost` definitions; every field number, label and type is taken from Fluss's
//! protocol definition `fluss-rpc/src/main/proto/FlussApi.proto` in apache/fluss at commit
//! `545c55390296374100d24947df4dcc58c964164d`, cross-checked against the copy fluss-rs 1.0.0
//! vendors (`fluss-rust/crates/fluss/proto/FlussApi.proto` at `5c07f88e50a8ff41b0ebc214a0458e5dba60be37`,
//! generated into its `src/proto/fluss.rs`). That copy is a superset: the fields it adds
//! (`routing_bucket_count`, `include_system_partitions`, `bucket_count_epoch`, ...) are not
//! needed here; prost skips unknown fields when decoding, so requests carrying them still parse.
//!
//! The file is `proto2`: `required` fields are always encoded (prost's `required` attribute),
//! `optional` fields are `Option`s, and `repeated` scalar fields marked `[packed = true]` are
//! packed. Fields a message carries that this server never reads or writes (for example
//! `FetchLogRequest`'s filter predicate, `ListDatabasesResponse`'s summaries) are omitted.

// Fields are named exactly as in FlussApi.proto, which documents them.
#![allow(missing_docs)]

// The messages the library's cluster source sends (FetchLog, Authenticate) and the
// error body are the library's own definitions, shared so client and server cannot
// drift apart.
pub use fluss_datafusion::source::cluster_wire::{
    AuthenticateRequest, AuthenticateResponse, ErrorResponse, FetchLogRequest, FetchLogResponse,
    PbCompoundPredicate, PbFetchLogReqForBucket, PbFetchLogReqForTable, PbFetchLogRespForBucket,
    PbFetchLogRespForTable, PbLeafPredicate, PbLiteralValue, PbPredicate, PbRemoteLogSegment,
    PbScanReqForBucket, RemoteLogFetchInfo, ScanKvRequest, ScanKvResponse,
};

// ---- ApiVersions (1000) ---------------------------------------------------------------------

// The library's own definitions (its cluster source asks servers for them).
pub use fluss_datafusion::source::cluster_wire::{
    ApiVersionsRequest, ApiVersionsResponse, PbApiVersion,
};

// ---- common ---------------------------------------------------------------------------------

/// `PbTablePath` of FlussApi.proto.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct PbTablePath {
    #[prost(string, required, tag = "1")]
    pub database_name: String,
    #[prost(string, required, tag = "2")]
    pub table_name: String,
}

/// `PbPhysicalTablePath` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbPhysicalTablePath {
    #[prost(string, required, tag = "1")]
    pub database_name: String,
    #[prost(string, required, tag = "2")]
    pub table_name: String,
    #[prost(string, optional, tag = "3")]
    pub partition_name: Option<String>,
}

/// `PbKeyValue` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbKeyValue {
    #[prost(string, required, tag = "1")]
    pub key: String,
    #[prost(string, required, tag = "2")]
    pub value: String,
}

/// `PbPartitionSpec` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbPartitionSpec {
    #[prost(message, repeated, tag = "1")]
    pub partition_key_values: Vec<PbKeyValue>,
}

// ---- MetaData (1012) ------------------------------------------------------------------------

/// `MetadataRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetadataRequest {
    #[prost(message, repeated, tag = "1")]
    pub table_path: Vec<PbTablePath>,
    #[prost(message, repeated, tag = "2")]
    pub partitions_path: Vec<PbPhysicalTablePath>,
    #[prost(int64, repeated, packed = "true", tag = "3")]
    pub partitions_id: Vec<i64>,
}

/// `MetadataResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetadataResponse {
    #[prost(message, optional, tag = "1")]
    pub coordinator_server: Option<PbServerNode>,
    #[prost(message, repeated, tag = "2")]
    pub tablet_servers: Vec<PbServerNode>,
    #[prost(message, repeated, tag = "3")]
    pub table_metadata: Vec<PbTableMetadata>,
    #[prost(message, repeated, tag = "4")]
    pub partition_metadata: Vec<PbPartitionMetadata>,
}

/// `PbServerNode` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbServerNode {
    #[prost(int32, required, tag = "1")]
    pub node_id: i32,
    #[prost(string, required, tag = "2")]
    pub host: String,
    #[prost(int32, required, tag = "3")]
    pub port: i32,
    #[prost(string, optional, tag = "4")]
    pub listeners: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub rack: Option<String>,
}

/// `PbTableMetadata` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbTableMetadata {
    #[prost(message, required, tag = "1")]
    pub table_path: PbTablePath,
    #[prost(int64, required, tag = "2")]
    pub table_id: i64,
    #[prost(int32, required, tag = "3")]
    pub schema_id: i32,
    #[prost(bytes = "vec", required, tag = "4")]
    pub table_json: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub bucket_metadata: Vec<PbBucketMetadata>,
    #[prost(int64, required, tag = "6")]
    pub created_time: i64,
    #[prost(int64, required, tag = "7")]
    pub modified_time: i64,
    #[prost(string, optional, tag = "8")]
    pub remote_data_dir: Option<String>,
}

/// `PbPartitionMetadata` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbPartitionMetadata {
    #[prost(int64, required, tag = "1")]
    pub table_id: i64,
    #[prost(string, required, tag = "2")]
    pub partition_name: String,
    #[prost(int64, required, tag = "3")]
    pub partition_id: i64,
    #[prost(message, repeated, tag = "4")]
    pub bucket_metadata: Vec<PbBucketMetadata>,
}

/// `PbBucketMetadata` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbBucketMetadata {
    #[prost(int32, required, tag = "1")]
    pub bucket_id: i32,
    #[prost(int32, optional, tag = "2")]
    pub leader_id: Option<i32>,
    #[prost(int32, repeated, packed = "true", tag = "3")]
    pub replica_id: Vec<i32>,
    #[prost(int32, optional, tag = "4")]
    pub leader_epoch: Option<i32>,
}

// ---- ListDatabases (1003), DatabaseExists (1004) --------------------------------------------

/// `ListDatabasesRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListDatabasesRequest {
    #[prost(bool, optional, tag = "1")]
    pub include_summary: Option<bool>,
}

/// `ListDatabasesResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListDatabasesResponse {
    #[prost(string, repeated, tag = "1")]
    pub database_name: Vec<String>,
}

/// `DatabaseExistsRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DatabaseExistsRequest {
    #[prost(string, required, tag = "1")]
    pub database_name: String,
}

/// `DatabaseExistsResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DatabaseExistsResponse {
    #[prost(bool, required, tag = "1")]
    pub exists: bool,
}

// ---- ListTables (1008), TableExists (1010), GetTable (1007), GetTableSchema (1011) ----------

/// `ListTablesRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListTablesRequest {
    #[prost(string, required, tag = "1")]
    pub database_name: String,
}

/// `ListTablesResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListTablesResponse {
    #[prost(string, repeated, tag = "1")]
    pub table_name: Vec<String>,
}

/// `TableExistsRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableExistsRequest {
    #[prost(message, required, tag = "1")]
    pub table_path: PbTablePath,
}

/// `TableExistsResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TableExistsResponse {
    #[prost(bool, required, tag = "1")]
    pub exists: bool,
}

/// `GetTableInfoRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTableInfoRequest {
    #[prost(message, required, tag = "1")]
    pub table_path: PbTablePath,
}

/// `GetTableInfoResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTableInfoResponse {
    #[prost(int64, required, tag = "1")]
    pub table_id: i64,
    #[prost(int32, required, tag = "2")]
    pub schema_id: i32,
    #[prost(bytes = "vec", required, tag = "3")]
    pub table_json: Vec<u8>,
    #[prost(int64, required, tag = "4")]
    pub created_time: i64,
    #[prost(int64, required, tag = "5")]
    pub modified_time: i64,
    #[prost(string, optional, tag = "6")]
    pub remote_data_dir: Option<String>,
}

/// `GetTableSchemaRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTableSchemaRequest {
    #[prost(message, required, tag = "1")]
    pub table_path: PbTablePath,
    #[prost(int32, optional, tag = "2")]
    pub schema_id: Option<i32>,
}

/// `GetTableSchemaResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTableSchemaResponse {
    #[prost(int32, required, tag = "1")]
    pub schema_id: i32,
    #[prost(bytes = "vec", required, tag = "2")]
    pub schema_json: Vec<u8>,
}

// ---- ListPartitionInfos (1009) --------------------------------------------------------------

/// `ListPartitionInfosRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListPartitionInfosRequest {
    #[prost(message, required, tag = "1")]
    pub table_path: PbTablePath,
    #[prost(message, optional, tag = "2")]
    pub partial_partition_spec: Option<PbPartitionSpec>,
}

/// `ListPartitionInfosResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListPartitionInfosResponse {
    #[prost(message, repeated, tag = "1")]
    pub partitions_info: Vec<PbPartitionInfo>,
}

/// `PbPartitionInfo` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbPartitionInfo {
    #[prost(int64, required, tag = "1")]
    pub partition_id: i64,
    #[prost(message, required, tag = "2")]
    pub partition_spec: PbPartitionSpec,
    #[prost(string, optional, tag = "3")]
    pub remote_data_dir: Option<String>,
}

// ---- GetLakeSnapshot (1032) -----------------------------------------------------------------

/// `GetLakeSnapshotRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetLakeSnapshotRequest {
    #[prost(message, required, tag = "1")]
    pub table_path: PbTablePath,
    #[prost(int64, optional, tag = "2")]
    pub snapshot_id: Option<i64>,
    #[prost(bool, optional, tag = "3")]
    pub readable: Option<bool>,
}

/// `GetLakeSnapshotResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetLakeSnapshotResponse {
    #[prost(int64, required, tag = "1")]
    pub table_id: i64,
    /// `snapshotId` in FlussApi.proto.
    #[prost(int64, required, tag = "2")]
    pub snapshot_id: i64,
    #[prost(message, repeated, tag = "3")]
    pub bucket_snapshots: Vec<PbLakeSnapshotForBucket>,
}

/// `PbLakeSnapshotForBucket` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbLakeSnapshotForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(int64, optional, tag = "3")]
    pub log_offset: Option<i64>,
    #[prost(string, optional, tag = "4")]
    pub partition_name: Option<String>,
}

// ---- ListOffsets (1021) ---------------------------------------------------------------------

/// `ListOffsetsRequest` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListOffsetsRequest {
    #[prost(int32, required, tag = "1")]
    pub follower_server_id: i32,
    #[prost(int32, required, tag = "2")]
    pub offset_type: i32,
    #[prost(int64, required, tag = "3")]
    pub table_id: i64,
    #[prost(int64, optional, tag = "4")]
    pub partition_id: Option<i64>,
    #[prost(int32, repeated, packed = "true", tag = "5")]
    pub bucket_id: Vec<i32>,
    /// `startTimestamp` in FlussApi.proto.
    #[prost(int64, optional, tag = "6")]
    pub start_timestamp: Option<i64>,
}

/// `ListOffsetsResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListOffsetsResponse {
    #[prost(message, repeated, tag = "1")]
    pub buckets_resp: Vec<PbListOffsetsRespForBucket>,
}

/// `PbListOffsetsRespForBucket` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
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

/// `LookupRequest` of FlussApi.proto: primary keys to look up, by bucket.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LookupRequest {
    #[prost(int64, required, tag = "1")]
    pub table_id: i64,
    #[prost(message, repeated, tag = "2")]
    pub buckets_req: Vec<PbLookupReqForBucket>,
    #[prost(bool, optional, tag = "3")]
    pub insert_if_not_exists: Option<bool>,
}

/// `PbLookupReqForBucket` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbLookupReqForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub keys: Vec<Vec<u8>>,
}

/// `LookupResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LookupResponse {
    #[prost(message, repeated, tag = "1")]
    pub buckets_resp: Vec<PbLookupRespForBucket>,
}

/// `PbLookupRespForBucket` of FlussApi.proto: one value per key, in request order.
#[derive(Clone, PartialEq, prost::Message)]
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

/// `PbValue` of FlussApi.proto: a key's value, unset when the key has none.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbValue {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub values: Option<Vec<u8>>,
}

// ---- InitWriter (1026), ProduceLog (1014) ---------------------------------------------------

/// `InitWriterRequest` of FlussApi.proto: an idempotent writer asks for its id.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InitWriterRequest {
    #[prost(message, repeated, tag = "1")]
    pub table_path: Vec<PbTablePath>,
}

/// `InitWriterResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InitWriterResponse {
    #[prost(int64, required, tag = "1")]
    pub writer_id: i64,
}

/// `ProduceLogRequest` of FlussApi.proto: log batches for buckets of one table.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProduceLogRequest {
    #[prost(int32, required, tag = "1")]
    pub acks: i32,
    #[prost(int64, required, tag = "2")]
    pub table_id: i64,
    #[prost(int32, required, tag = "3")]
    pub timeout_ms: i32,
    #[prost(message, repeated, tag = "4")]
    pub buckets_req: Vec<PbProduceLogReqForBucket>,
}

/// `PbProduceLogReqForBucket` of FlussApi.proto: one bucket's batches, as the client
/// built them (base offset and commit timestamp are the server's to set).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbProduceLogReqForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(bytes = "bytes", required, tag = "3")]
    pub records: bytes::Bytes,
}

/// `ProduceLogResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProduceLogResponse {
    #[prost(message, repeated, tag = "1")]
    pub buckets_resp: Vec<PbProduceLogRespForBucket>,
}

/// `PbProduceLogRespForBucket` of FlussApi.proto: the offset the bucket's batches were
/// appended at, or an error.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbProduceLogRespForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(int32, optional, tag = "3")]
    pub error_code: Option<i32>,
    #[prost(string, optional, tag = "4")]
    pub error_message: Option<String>,
    #[prost(int64, optional, tag = "5")]
    pub base_offset: Option<i64>,
}

// ---- PutKv (1016) ---------------------------------------------------------------------------

/// `PutKvRequest` of FlussApi.proto: KV record batches for buckets of one table
/// (`target_columns`: a partial update's columns, by index).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutKvRequest {
    #[prost(int32, required, tag = "1")]
    pub acks: i32,
    #[prost(int64, required, tag = "2")]
    pub table_id: i64,
    #[prost(int32, required, tag = "3")]
    pub timeout_ms: i32,
    #[prost(int32, repeated, packed = "false", tag = "4")]
    pub target_columns: Vec<i32>,
    #[prost(message, repeated, tag = "5")]
    pub buckets_req: Vec<PbPutKvReqForBucket>,
}

/// `PbPutKvReqForBucket` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbPutKvReqForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(bytes = "bytes", required, tag = "3")]
    pub records: bytes::Bytes,
}

/// `PutKvResponse` of FlussApi.proto.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutKvResponse {
    #[prost(message, repeated, tag = "1")]
    pub buckets_resp: Vec<PbPutKvRespForBucket>,
}

/// `PbPutKvRespForBucket` of FlussApi.proto: the changelog's end offset after the
/// write, or an error.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PbPutKvRespForBucket {
    #[prost(int64, optional, tag = "1")]
    pub partition_id: Option<i64>,
    #[prost(int32, required, tag = "2")]
    pub bucket_id: i32,
    #[prost(int32, optional, tag = "3")]
    pub error_code: Option<i32>,
    #[prost(string, optional, tag = "4")]
    pub error_message: Option<String>,
    #[prost(int64, optional, tag = "5")]
    pub log_end_offset: Option<i64>,
}
