//! ScanKv (Fluss 1.0's `server-scan`): a primary-key bucket's current rows, in batches
//! of about the bytes asked for, through a scanner session the client names on every
//! request after the first, counting its requests (`call_seq_id`). The rows are the
//! bucket's key-value state when the scanner opened (rebuilt from its log, retention
//! included: see [`crate::log::ServedLog::expired_before`]), in key order.

use std::collections::HashMap;
use std::sync::Mutex;

use fluss_datafusion::source::cluster_wire::{ScanKvRequest, ScanKvResponse, value_record_batch};

use crate::errors::{self, ApiError};
use crate::kv::BucketKv;

/// One open scanner: the values left to send and the next request's number.
#[derive(Debug)]
struct Scanner {
    values: Vec<Vec<u8>>,
    sent: usize,
    next_call: i32,
}

/// The open scanners of a server, by id.
#[derive(Debug, Default)]
pub(crate) struct Scanners {
    open: Mutex<HashMap<Vec<u8>, Scanner>>,
    next_id: std::sync::atomic::AtomicU64,
}

/// An answer carrying `error`.
pub(crate) fn error_response(error: ApiError) -> ScanKvResponse {
    ScanKvResponse {
        error_code: Some(error.code),
        error_message: Some(error.message),
        scanner_id: None,
        has_more_results: Some(false),
        records: None,
        log_offset: None,
    }
}

impl Scanners {
    /// Opens a scanner over `kv` (the bucket's state at high watermark
    /// `high_watermark`) and answers with its first batch.
    pub(crate) fn open(
        &self,
        kv: &BucketKv,
        high_watermark: i64,
        request: &ScanKvRequest,
    ) -> ScanKvResponse {
        let mut entries: Vec<(&bytes::Bytes, &bytes::Bytes)> = kv.iter().collect();
        entries.sort();
        let scanner = Scanner {
            values: entries.into_iter().map(|(_, v)| v.to_vec()).collect(),
            sent: 0,
            next_call: 1,
        };
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_be_bytes()
            .to_vec();
        let mut answer = self.send(id, scanner, request);
        answer.log_offset = Some(high_watermark);
        answer
    }

    /// The next batch of the scanner the request names.
    pub(crate) fn next(&self, request: &ScanKvRequest) -> ScanKvResponse {
        let Some(id) = request.scanner_id.clone() else {
            return error_response(invalid("a ScanKv request names no scanner"));
        };
        let scanner = match self.open.lock() {
            Ok(mut open) => open.remove(&id),
            Err(poisoned) => poisoned.into_inner().remove(&id),
        };
        let Some(scanner) = scanner else {
            return error_response(invalid("unknown scanner id"));
        };
        if request.call_seq_id != Some(scanner.next_call) {
            return error_response(invalid(&format!(
                "out of order ScanKv request: call_seq_id {:?}, expected {}",
                request.call_seq_id, scanner.next_call
            )));
        }
        if request.close_scanner == Some(true) {
            return ScanKvResponse {
                error_code: None,
                error_message: None,
                scanner_id: Some(id),
                has_more_results: Some(false),
                records: None,
                log_offset: None,
            };
        }
        self.send(id, scanner, request)
    }

    /// Answers with the scanner's next values (at least one, about
    /// `batch_size_bytes`) and keeps it open if more are left.
    fn send(&self, id: Vec<u8>, mut scanner: Scanner, request: &ScanKvRequest) -> ScanKvResponse {
        let budget = request
            .batch_size_bytes
            .and_then(|b| usize::try_from(b).ok())
            .unwrap_or(4 << 20);
        let mut bytes = 0;
        let mut end = scanner.sent;
        while end < scanner.values.len() && (end == scanner.sent || bytes < budget) {
            bytes += scanner.values[end].len() + 4;
            end += 1;
        }
        let batch = value_record_batch(&scanner.values[scanner.sent..end]);
        scanner.sent = end;
        scanner.next_call += 1;
        let more = scanner.sent < scanner.values.len();
        if more {
            match self.open.lock() {
                Ok(mut open) => open.insert(id.clone(), scanner),
                Err(poisoned) => poisoned.into_inner().insert(id.clone(), scanner),
            };
        }
        ScanKvResponse {
            error_code: None,
            error_message: None,
            scanner_id: more.then_some(id),
            has_more_results: Some(more),
            records: Some(batch),
            log_offset: None,
        }
    }
}

fn invalid(message: &str) -> ApiError {
    ApiError::new(errors::UNKNOWN_SERVER_ERROR, message.to_string())
}
