//! `server-scan`: a primary-key bucket's current rows, asked of its tablet server with
//! ScanKv (Fluss 1.0, `client.scanner.kv.batch-strategy = server-scan`).
//!
//! The first request opens a scanner on the bucket (`bucket_scan_req`); the server
//! answers with a batch of values and a scanner id, and every further request names
//! the scanner and counts itself (`call_seq_id`) until the server says it has no more
//! (`has_more_results = false`). Each bucket is its own scan of the RocksDB state at
//! its own moment: several buckets are not one atomic snapshot (Fluss says the same of
//! its `KvBatchSplit`).

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use futures::stream::BoxStream;

use super::fetch::TabletConnection;
use super::{lookup, wire};
use crate::error::{Error, ErrorKind, Result};
use crate::source::{BucketLocation, FlussTable};

/// The ScanKv version sent.
const SCAN_KV_API_VERSION: i16 = 0;

/// Bytes of values asked for per response (Java's `client.scanner.kv.fetch.max-bytes`
/// default is 4 MiB).
const BATCH_SIZE_BYTES: i32 = 4 << 20;

/// Where a bucket's scan is.
enum ScanState {
    /// Not opened yet.
    Open,
    /// Opened: the scanner's id and the next request's sequence number.
    Next {
        scanner_id: Vec<u8>,
        call_seq_id: i32,
    },
    Done,
}

/// The current rows of `bucket` of `table`, one batch per ScanKv answer, in the
/// table's latest schema's Arrow layout.
pub(super) fn scan_bucket(
    connection: Arc<TabletConnection>,
    table: FlussTable,
    bucket: BucketLocation,
    timeout: Duration,
) -> BoxStream<'static, Result<RecordBatch>> {
    let stream = futures::stream::try_unfold(ScanState::Open, move |state| {
        let (connection, table, bucket) = (connection.clone(), table.clone(), bucket.clone());
        async move {
            let context = |e: Error| {
                let e = e
                    .with_context("table", table.path.to_string())
                    .with_context("bucket", bucket.bucket);
                match &bucket.partition {
                    Some((_, name)) => e.with_context("partition", name),
                    None => e,
                }
            };
            if matches!(state, ScanState::Open)
                && !connection
                    .serves(wire::api_key::SCAN_KV, SCAN_KV_API_VERSION, timeout)
                    .await
                    .map_err(context)?
            {
                // a server without ScanKv (Fluss 0.9) leaves its requests unanswered
                return Err(context(Error::new(
                    ErrorKind::FeatureUnsupported,
                    "the tablet server does not serve ScanKv (client.scanner.kv.batch-strategy \
                     = server-scan needs Fluss 1.0 or later)",
                )));
            }
            let request = match state {
                ScanState::Done => return Ok(None),
                ScanState::Open => wire::ScanKvRequest {
                    scanner_id: None,
                    bucket_scan_req: Some(wire::PbScanReqForBucket {
                        table_id: table.table_id(),
                        partition_id: bucket.partition_id(),
                        bucket_id: bucket.bucket,
                        limit: None,
                        routing_bucket_count: None,
                    }),
                    call_seq_id: Some(0),
                    batch_size_bytes: Some(BATCH_SIZE_BYTES),
                    close_scanner: None,
                },
                ScanState::Next {
                    ref scanner_id,
                    call_seq_id,
                } => wire::ScanKvRequest {
                    scanner_id: Some(scanner_id.clone()),
                    bucket_scan_req: None,
                    call_seq_id: Some(call_seq_id),
                    batch_size_bytes: Some(BATCH_SIZE_BYTES),
                    close_scanner: None,
                },
            };
            let response: wire::ScanKvResponse = connection
                .request(
                    (wire::api_key::SCAN_KV, SCAN_KV_API_VERSION),
                    &request,
                    timeout,
                )
                .await
                .map_err(context)?;
            if let Some(code) = response.error_code.filter(|c| *c != 0) {
                return Err(context(Error::new(
                    ErrorKind::Cluster,
                    format!(
                        "the tablet server could not scan the bucket's rows (ScanKv): {} \
                         (error code {code})",
                        response.error_message.as_deref().unwrap_or("no message")
                    ),
                )));
            }
            let values = match &response.records {
                Some(records) => wire::value_records(records).map_err(context)?,
                None => Vec::new(),
            };
            let rows = lookup::decode_rows(&table, values).map_err(context)?;
            let next = match (response.has_more_results, response.scanner_id) {
                (Some(true), Some(scanner_id)) => ScanState::Next {
                    scanner_id,
                    call_seq_id: match state {
                        ScanState::Next { call_seq_id, .. } => call_seq_id + 1,
                        _ => 1,
                    },
                },
                (Some(true), None) => {
                    return Err(context(Error::new(
                        ErrorKind::DataInvalid,
                        "the tablet server has more rows to scan but named no scanner",
                    )));
                }
                _ => ScanState::Done,
            };
            Ok(Some((rows, next)))
        }
    });
    Box::pin(stream)
}
