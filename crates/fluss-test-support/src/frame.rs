//! Fluss RPC framing: length-prefixed frames, request and response headers.
//!
//! Every message on the wire, either way, is one frame: a big-endian `i32` length followed by
//! that many bytes (fluss-rs `src/rpc/frame.rs:49-80` `read_message` and `:101-110`
//! `write_message`; Java `MessageCodec` writes `frameLength` with `ByteBuf.writeInt`, i.e.
//! big-endian). Inside:
//!
//! * request: `api_key: i16`, `api_version: i16`, `request_id: i32` (all big-endian, 8 bytes,
//!   fluss-rs `src/rpc/message/header.rs:26,50-52`, Java `MessageCodec.REQUEST_HEADER_LENGTH`
//!   and `encodeRequest`), then the protobuf request message.
//! * response: `response_type: u8` (0 = `SUCCESS_RESPONSE`, 1 = `ERROR_RESPONSE`,
//!   2 = `SERVER_FAILURE`, Java `ResponseType`), then for success and error `request_id: i32`
//!   (Java `MessageCodec.encodeSuccessResponse` / `encodeErrorResponse`,
//!   `RESPONSE_HEADER_LENGTH = 5`), then the protobuf response message, or an `ErrorResponse`
//!   for an error. A `SERVER_FAILURE` has no request id (`SERVER_FAILURE_HEADER_LENGTH = 1`),
//!   only the `ErrorResponse`; Java sends it before closing a broken connection. (fluss-rs
//!   `ResponseHeader::read`, `header.rs:67-84`, always reads a request id, so it cannot
//!   attribute a `SERVER_FAILURE`; it fails its pending requests when the connection closes.)
//!
//! Citations are to fluss-rs 1.0.0 as published on crates.io and to apache/fluss
//! `fluss-rpc/src/main/java/org/apache/fluss/rpc/protocol/MessageCodec.java` at commit
//! `545c55390296374100d24947df4dcc58c964164d`.

use bytes::{Buf, Bytes};
use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::errors::ApiError;

/// Length of the request header: api key, api version, request id.
pub const REQUEST_HEADER_LENGTH: usize = 8;
/// Response type of a successful response.
pub const SUCCESS_RESPONSE: u8 = 0;
/// Response type of an error response (carries an `ErrorResponse` for one request).
pub const ERROR_RESPONSE: u8 = 1;
/// Response type of a server failure (carries an `ErrorResponse`, no request id).
pub const SERVER_FAILURE: u8 = 2;

/// The API keys of Fluss (Java `ApiKeys`, fluss-rs `src/rpc/api_key.rs`) that this server
/// answers, and the unique version (0) of each it supports.
pub mod api_key {
    /// `API_VERSIONS`.
    pub const API_VERSIONS: i16 = 1000;
    /// `LIST_DATABASES`.
    pub const LIST_DATABASES: i16 = 1003;
    /// `DATABASE_EXISTS`.
    pub const DATABASE_EXISTS: i16 = 1004;
    /// `GET_TABLE_INFO`.
    pub const GET_TABLE_INFO: i16 = 1007;
    /// `LIST_TABLES`.
    pub const LIST_TABLES: i16 = 1008;
    /// `LIST_PARTITION_INFOS`.
    pub const LIST_PARTITION_INFOS: i16 = 1009;
    /// `TABLE_EXISTS`.
    pub const TABLE_EXISTS: i16 = 1010;
    /// `GET_TABLE_SCHEMA`.
    pub const GET_TABLE_SCHEMA: i16 = 1011;
    /// `GET_METADATA`.
    pub const GET_METADATA: i16 = 1012;
    /// `PRODUCE_LOG`.
    pub const PRODUCE_LOG: i16 = 1014;
    /// `FETCH_LOG`.
    pub const FETCH_LOG: i16 = 1015;
    /// `PUT_KV`.
    pub const PUT_KV: i16 = 1016;
    /// `LOOKUP`.
    pub const LOOKUP: i16 = 1017;
    /// `LIST_OFFSETS`.
    pub const LIST_OFFSETS: i16 = 1021;
    /// `INIT_WRITER`.
    pub const INIT_WRITER: i16 = 1026;
    /// `GET_LAKE_SNAPSHOT`.
    pub const GET_LAKE_SNAPSHOT: i16 = 1032;
    /// `AUTHENTICATE`.
    pub const AUTHENTICATE: i16 = 1038;
    /// `SCAN_KV` (Fluss 1.0).
    pub const SCAN_KV: i16 = 1061;

    /// Every API key answered, with its `(min, max)` version.
    pub const SUPPORTED: &[(i16, i16, i16)] = &[
        (API_VERSIONS, 0, 0),
        (LIST_DATABASES, 0, 0),
        (DATABASE_EXISTS, 0, 0),
        (GET_TABLE_INFO, 0, 0),
        (LIST_TABLES, 0, 0),
        (LIST_PARTITION_INFOS, 0, 0),
        (TABLE_EXISTS, 0, 0),
        (GET_TABLE_SCHEMA, 0, 0),
        (GET_METADATA, 0, 0),
        // v1 only adds a historical partition's name, which this server never needs
        (PRODUCE_LOG, 0, 1),
        (FETCH_LOG, 0, 0),
        // v2 adds a backpressure answer field, v3 a historical partition's name: unset
        (PUT_KV, 0, 0),
        // v1 only changes how clients encode keys of kv format version 2 tables with
        // their own bucket key; the server keys its rows with the same encoder.
        (LOOKUP, 0, 1),
        (LIST_OFFSETS, 0, 0),
        (INIT_WRITER, 0, 0),
        (GET_LAKE_SNAPSHOT, 0, 0),
        (AUTHENTICATE, 0, 0),
        (SCAN_KV, 0, 0),
    ];
}

/// A problem with the byte stream itself; the connection is closed after it.
#[derive(Debug)]
pub enum FrameError {
    /// Reading failed, or the peer closed the connection inside a frame.
    Io(std::io::Error),
    /// The length prefix is negative or shorter than a request header.
    BadLength(i32),
    /// The frame is larger than the configured limit.
    TooLarge {
        /// The length prefix.
        length: usize,
        /// The limit.
        limit: usize,
    },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "I/O error: {e}"),
            FrameError::BadLength(l) => write!(f, "invalid frame length {l}"),
            FrameError::TooLarge { length, limit } => {
                write!(
                    f,
                    "frame of {length} bytes exceeds the limit of {limit} bytes"
                )
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// A request frame split into its header and its (undecoded) protobuf body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The API key.
    pub api_key: i16,
    /// The API version.
    pub api_version: i16,
    /// The request id the response must carry.
    pub request_id: i32,
    /// The protobuf-encoded request message.
    pub body: Bytes,
}

/// Reads one request frame. Returns `Ok(None)` when the peer closed the connection cleanly
/// between frames. Frames over `max_frame_size` bytes are rejected before anything is
/// allocated for them.
pub async fn read_request<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_frame_size: usize,
) -> Result<Option<Request>, FrameError> {
    let mut len_buf = [0u8; 4];
    match reader.read_exact(&mut len_buf).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let length = i32::from_be_bytes(len_buf);
    let size = usize::try_from(length).map_err(|_| FrameError::BadLength(length))?;
    if size < REQUEST_HEADER_LENGTH {
        return Err(FrameError::BadLength(length));
    }
    if size > max_frame_size {
        return Err(FrameError::TooLarge {
            length: size,
            limit: max_frame_size,
        });
    }
    let mut frame = vec![0u8; size];
    reader
        .read_exact(&mut frame)
        .await
        .map_err(FrameError::Io)?;
    let mut frame = Bytes::from(frame);
    // size >= REQUEST_HEADER_LENGTH, so these reads cannot run past the end
    let api_key = frame.get_i16();
    let api_version = frame.get_i16();
    let request_id = frame.get_i32();
    Ok(Some(Request {
        api_key,
        api_version,
        request_id,
        body: frame,
    }))
}

fn frame(response_type: u8, request_id: Option<i32>, body: &impl Message) -> Vec<u8> {
    let header = 1 + if request_id.is_some() { 4 } else { 0 };
    let length = header + body.encoded_len();
    let mut out = Vec::with_capacity(4 + length);
    // Frames are far below 2 GiB (responses are bounded by fetch sizes); saturate otherwise.
    out.extend_from_slice(&i32::try_from(length).unwrap_or(i32::MAX).to_be_bytes());
    out.push(response_type);
    if let Some(id) = request_id {
        out.extend_from_slice(&id.to_be_bytes());
    }
    body.encode_raw(&mut out);
    out
}

/// Encodes a `SUCCESS_RESPONSE` frame (length prefix included) for `request_id`.
pub fn encode_success(request_id: i32, response: &impl Message) -> Vec<u8> {
    frame(SUCCESS_RESPONSE, Some(request_id), response)
}

/// Encodes an `ERROR_RESPONSE` frame (length prefix included) for `request_id`.
pub fn encode_error(request_id: i32, error: &ApiError) -> Vec<u8> {
    frame(ERROR_RESPONSE, Some(request_id), &error.to_response())
}

/// Encodes a `SERVER_FAILURE` frame (length prefix included).
pub fn encode_server_failure(error: &ApiError) -> Vec<u8> {
    frame(SERVER_FAILURE, None, &error.to_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ListTablesResponse;

    #[tokio::test]
    async fn request_round_trip() {
        let mut wire = Vec::new();
        wire.extend_from_slice(&(8 + 3i32).to_be_bytes());
        wire.extend_from_slice(&1008i16.to_be_bytes());
        wire.extend_from_slice(&0i16.to_be_bytes());
        wire.extend_from_slice(&42i32.to_be_bytes());
        wire.extend_from_slice(&[1, 2, 3]);
        let mut reader = wire.as_slice();
        let req = read_request(&mut reader, 1024).await.unwrap().unwrap();
        assert_eq!(
            (req.api_key, req.api_version, req.request_id),
            (1008, 0, 42)
        );
        assert_eq!(&req.body[..], &[1, 2, 3]);
        assert!(read_request(&mut reader, 1024).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn bad_lengths_are_rejected() {
        let mut reader: &[u8] = &(-1i32).to_be_bytes();
        assert!(matches!(
            read_request(&mut reader, 10).await,
            Err(FrameError::BadLength(-1))
        ));
        let mut reader: &[u8] = &4i32.to_be_bytes();
        assert!(matches!(
            read_request(&mut reader, 10).await,
            Err(FrameError::BadLength(4))
        ));
        let mut reader: &[u8] = &100i32.to_be_bytes();
        assert!(matches!(
            read_request(&mut reader, 10).await,
            Err(FrameError::TooLarge { .. })
        ));
        let mut truncated = 20i32.to_be_bytes().to_vec();
        truncated.extend_from_slice(&[0; 5]);
        let mut reader = truncated.as_slice();
        assert!(matches!(
            read_request(&mut reader, 100).await,
            Err(FrameError::Io(_))
        ));
    }

    #[test]
    fn response_layout() {
        let body = ListTablesResponse {
            table_name: vec!["t".into()],
        };
        let bytes = encode_success(7, &body);
        assert_eq!(
            i32::from_be_bytes(bytes[0..4].try_into().unwrap()) as usize,
            bytes.len() - 4
        );
        assert_eq!(bytes[4], SUCCESS_RESPONSE);
        assert_eq!(i32::from_be_bytes(bytes[5..9].try_into().unwrap()), 7);
        assert_eq!(ListTablesResponse::decode(&bytes[9..]).unwrap(), body);

        let failure = encode_server_failure(&ApiError::new(-1, "x"));
        assert_eq!(failure[4], SERVER_FAILURE);
        assert_eq!(
            crate::proto::ErrorResponse::decode(&failure[5..])
                .unwrap()
                .error_code,
            -1
        );
    }
}
