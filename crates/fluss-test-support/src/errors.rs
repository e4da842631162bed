//! Fluss protocol error codes this server answers with.
//!
//! The numbers are part of the wire protocol; they are those of
//! `fluss-rpc/src/main/java/org/apache/fluss/rpc/protocol/Errors.java` in apache/fluss
//! (commit `545c55390296374100d24947df4dcc58c964164d`) and of fluss-rs 1.0.0's
//! `src/rpc/fluss_api_error.rs` (`FlussError`).

use crate::proto::ErrorResponse;

/// A Fluss error: a protocol error code and a message, as carried by `ErrorResponse` or by a
/// per-bucket `error_code` / `error_message` pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The protocol error code (see the constants in this module).
    pub code: i32,
    /// A human-readable message.
    pub message: String,
}

impl ApiError {
    /// An error with the given code and message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// This error as the protobuf `ErrorResponse`.
    pub fn to_response(&self) -> ErrorResponse {
        ErrorResponse {
            error_code: self.code,
            error_message: Some(self.message.clone()),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fluss error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// `UNKNOWN_SERVER_ERROR`: an unexpected failure (Java's `ApiError.fromThrowable` default).
pub const UNKNOWN_SERVER_ERROR: i32 = -1;
/// `NONE`.
pub const NONE: i32 = 0;
/// `CORRUPT_MESSAGE`: a request's records do not parse.
pub const CORRUPT_MESSAGE: i32 = 3;
/// `UNSUPPORTED_VERSION`: unknown API key or unsupported API version.
pub const UNSUPPORTED_VERSION: i32 = 2;
/// `DATABASE_NOT_EXIST`.
pub const DATABASE_NOT_EXIST: i32 = 4;
/// `TABLE_NOT_EXIST`.
pub const TABLE_NOT_EXIST: i32 = 7;
/// `SCHEMA_NOT_EXIST`.
pub const SCHEMA_NOT_EXIST: i32 = 9;
/// `LOG_OFFSET_OUT_OF_RANGE_EXCEPTION`.
pub const LOG_OFFSET_OUT_OF_RANGE: i32 = 19;
/// `UNKNOWN_TABLE_OR_BUCKET_EXCEPTION`.
pub const UNKNOWN_TABLE_OR_BUCKET: i32 = 21;
/// `OUT_OF_ORDER_SEQUENCE_EXCEPTION`: an idempotent writer's batch skips sequences.
pub const OUT_OF_ORDER_SEQUENCE: i32 = 31;
/// `INVALID_COLUMN_PROJECTION`.
pub const INVALID_COLUMN_PROJECTION: i32 = 34;
/// `PARTITION_NOT_EXISTS`.
pub const PARTITION_NOT_EXISTS: i32 = 36;
/// `TABLE_NOT_PARTITIONED_EXCEPTION`.
pub const TABLE_NOT_PARTITIONED: i32 = 37;
/// `INVALID_TIMESTAMP_EXCEPTION`.
pub const INVALID_TIMESTAMP: i32 = 38;
/// `AUTHENTICATE_EXCEPTION`.
pub const AUTHENTICATE_EXCEPTION: i32 = 46;
/// `LAKE_SNAPSHOT_NOT_EXIST`.
pub const LAKE_SNAPSHOT_NOT_EXIST: i32 = 53;
