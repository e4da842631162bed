//! Fault injection for the [`crate::server::TestServer`]: what a misbehaving or failing
//! cluster does to a client, so that tests can check that each failure is a clear error
//! and never a partial result.
//!
//! Faults are part of [`crate::server::ServerConfig::faults`] and off by default (an
//! empty [`Faults`]). Each one is declared up front, not scripted, so a test reads as
//! the cluster it simulates:
//!
//! ```
//! use fluss_test_support::faults::{BucketRef, FetchMatch, Faults};
//! use fluss_test_support::server::ServerConfig;
//!
//! let bucket = BucketRef::new(0, None, 1);
//! let config = ServerConfig {
//!     faults: Faults::default()
//!         // the first FetchLog is never answered: the socket closes instead
//!         .close_on_fetch(FetchMatch::Nth(1))
//!         // every FetchLog of bucket 1 answers it with NOT_LEADER_OR_FOLLOWER (12)
//!         .fetch_error(bucket, 12, "Leader is not local"),
//!     ..ServerConfig::default()
//! };
//! assert!(!config.faults.is_empty());
//! ```
//!
//! * Connection faults hit whole FetchLog requests, picked by [`FetchMatch`]: the server
//!   closes the socket instead of answering ([`Faults::close_on_fetch`]), sends only the
//!   first bytes of the answer frame and then closes ([`Faults::cut_fetch_answer`]), or
//!   never answers while keeping the socket open ([`Faults::stall_fetch`]).
//! * Bucket faults change one bucket's part of every FetchLog answer: a Fluss error code
//!   instead of records ([`Faults::fetch_error`]), or a batch whose length field claims
//!   more bytes than the answer holds ([`Faults::stretch_batch`]). (A batch with a bad CRC
//!   needs no fault: serve a log whose bytes are damaged; the server does not check CRCs.)
//! * Metadata faults change what `MetaData` says about a bucket's leader
//!   ([`Faults::leader`]): no leader, or a node that is not among the tablet servers.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::errors::ApiError;

/// A bucket as FetchLog and MetaData name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BucketRef {
    /// The table id.
    pub table_id: i64,
    /// The partition id, for a partitioned table.
    pub partition_id: Option<i64>,
    /// The bucket id.
    pub bucket: i32,
}

impl BucketRef {
    /// The bucket `bucket` of table `table_id` (of partition `partition_id`, if any).
    pub fn new(table_id: i64, partition_id: Option<i64>, bucket: i32) -> Self {
        Self {
            table_id,
            partition_id,
            bucket,
        }
    }
}

/// Which FetchLog requests a connection fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchMatch {
    /// Only the `n`th FetchLog request the server receives (1-based, counted over all
    /// connections): a one-off failure, after which the server answers normally again.
    Nth(usize),
    /// Every FetchLog request that asks for this bucket: a lasting failure.
    Bucket(BucketRef),
}

/// What the server does with a matched FetchLog request instead of answering it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionFault {
    /// Closes the connection without an answer (a server that died mid-request).
    Close,
    /// Sends only the first `bytes` bytes of the answer frame, then closes the connection
    /// (a server that died mid-answer).
    CutAnswer {
        /// How many bytes of the frame (length prefix included) are sent.
        bytes: usize,
    },
    /// Never answers and keeps the connection open until the server stops (a hung
    /// server): the client must give up by itself.
    Stall,
}

/// A one-bucket change to FetchLog answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BucketFault {
    /// The bucket is answered with this error code and message, no records.
    Error(ApiError),
    /// The length field of the batch with this base offset is increased by `by`, so
    /// that the batch claims bytes past the end of the answer.
    StretchBatch {
        /// The base offset of the batch to damage.
        base_offset: i64,
        /// How many bytes are added to its length field.
        by: i32,
    },
}

/// The faults a [`crate::server::TestServer`] injects; empty (no fault) by default.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Connection faults of FetchLog requests; the first matching one applies.
    pub fetch_connection: Vec<(FetchMatch, ConnectionFault)>,
    /// Changes to one bucket's part of every FetchLog answer, applied in order.
    pub fetch_bucket: Vec<(BucketRef, BucketFault)>,
    /// The leader id `MetaData` reports for a bucket instead of the server's own node:
    /// `None` leaves `leader_id` unset, `Some(-1)` is Fluss's "no leader", any other id
    /// a node that no tablet server listed has.
    pub leaders: Vec<(BucketRef, Option<i32>)>,
    /// Errors answered to Lookup requests for a bucket: the first `n` lookups of it
    /// (`None`: every one) get the error instead of values.
    pub lookup_errors: Vec<(BucketRef, ApiError, Option<usize>)>,
    /// Errors answered to a bucket's part of write requests (ProduceLog, PutKv): the
    /// first `n` of them (`None`: every one) get the error and append nothing.
    pub produce_errors: Vec<(BucketRef, ApiError, Option<usize>)>,
    /// Connection faults of the `n`th write request (ProduceLog or PutKv, 1-based,
    /// over all connections). The request is handled (its batches appended) first: the answer
    /// is what is lost, as when a server dies after appending.
    pub produce_connection: Vec<(usize, ConnectionFault)>,
}

impl Faults {
    /// Whether no fault is configured.
    pub fn is_empty(&self) -> bool {
        self.fetch_connection.is_empty()
            && self.fetch_bucket.is_empty()
            && self.leaders.is_empty()
            && self.lookup_errors.is_empty()
            && self.produce_errors.is_empty()
            && self.produce_connection.is_empty()
    }

    /// Answers the first `times` ProduceLog requests for `bucket` (`None`: all of them)
    /// with error `code`, appending nothing: a retriable one (12
    /// `NOT_LEADER_OR_FOLLOWER`) makes a client retry, another (13
    /// `RECORD_TOO_LARGE_EXCEPTION`) fails its rows.
    pub fn produce_error(
        mut self,
        bucket: BucketRef,
        code: i32,
        message: impl Into<String>,
        times: Option<usize>,
    ) -> Self {
        let error = ApiError::new(code, message);
        self.produce_errors.push((bucket, error, times));
        self
    }

    /// Appends the `nth` ProduceLog request's batches, then closes the connection
    /// instead of answering (the client does not know they were appended).
    pub fn close_after_produce(mut self, nth: usize) -> Self {
        self.produce_connection.push((nth, ConnectionFault::Close));
        self
    }

    /// Never answers the `nth` ProduceLog request (its batches are appended).
    pub fn stall_produce(mut self, nth: usize) -> Self {
        self.produce_connection.push((nth, ConnectionFault::Stall));
        self
    }

    /// The error for the `nth` (1-based) write of `bucket`, if any.
    pub(crate) fn produce_error_of(&self, bucket: BucketRef, nth: usize) -> Option<&ApiError> {
        nth_error(&self.produce_errors, bucket, nth)
    }

    /// The connection fault of the `nth` ProduceLog request, if any.
    pub(crate) fn produce_connection_fault(&self, nth: usize) -> Option<ConnectionFault> {
        self.produce_connection
            .iter()
            .find(|(n, _)| *n == nth)
            .map(|(_, fault)| *fault)
    }

    /// Closes the connection instead of answering the matched FetchLog requests.
    pub fn close_on_fetch(mut self, which: FetchMatch) -> Self {
        self.fetch_connection.push((which, ConnectionFault::Close));
        self
    }

    /// Sends only the first `bytes` bytes of the matched FetchLog answers, then closes.
    pub fn cut_fetch_answer(mut self, which: FetchMatch, bytes: usize) -> Self {
        self.fetch_connection
            .push((which, ConnectionFault::CutAnswer { bytes }));
        self
    }

    /// Never answers the matched FetchLog requests (the connection stays open).
    pub fn stall_fetch(mut self, which: FetchMatch) -> Self {
        self.fetch_connection.push((which, ConnectionFault::Stall));
        self
    }

    /// Answers `bucket` in every FetchLog with error `code` (a Fluss `Errors` code, e.g.
    /// 12 `NOT_LEADER_OR_FOLLOWER` or 44 `LEADER_NOT_AVAILABLE_EXCEPTION`).
    pub fn fetch_error(mut self, bucket: BucketRef, code: i32, message: impl Into<String>) -> Self {
        self.fetch_bucket
            .push((bucket, BucketFault::Error(ApiError::new(code, message))));
        self
    }

    /// Adds `by` to the length field of `bucket`'s batch at `base_offset` in every FetchLog
    /// answer holding it.
    pub fn stretch_batch(mut self, bucket: BucketRef, base_offset: i64, by: i32) -> Self {
        self.fetch_bucket
            .push((bucket, BucketFault::StretchBatch { base_offset, by }));
        self
    }

    /// Answers the first `times` Lookup requests for `bucket` (`None`: all of them)
    /// with error `code` (e.g. 12 `NOT_LEADER_OR_FOLLOWER`, after which a client
    /// learns the leader again and retries).
    pub fn lookup_error(
        mut self,
        bucket: BucketRef,
        code: i32,
        message: impl Into<String>,
        times: Option<usize>,
    ) -> Self {
        self.lookup_errors
            .push((bucket, ApiError::new(code, message), times));
        self
    }

    /// The error for the `nth` (1-based) Lookup of `bucket`, if any.
    pub(crate) fn lookup_error_of(&self, bucket: BucketRef, nth: usize) -> Option<&ApiError> {
        nth_error(&self.lookup_errors, bucket, nth)
    }

    /// Reports `leader_id` as `bucket`'s leader in `MetaData` (see [`Faults::leaders`]).
    pub fn leader(mut self, bucket: BucketRef, leader_id: Option<i32>) -> Self {
        self.leaders.push((bucket, leader_id));
        self
    }

    /// The leader override of `bucket`, if any.
    pub(crate) fn leader_of(&self, bucket: BucketRef) -> Option<Option<i32>> {
        self.leaders
            .iter()
            .find(|(b, _)| *b == bucket)
            .map(|(_, leader)| *leader)
    }

    /// The first error fault of `bucket`, if any.
    pub(crate) fn fetch_error_of(&self, bucket: BucketRef) -> Option<&ApiError> {
        self.fetch_bucket.iter().find_map(|(b, f)| match f {
            BucketFault::Error(e) if *b == bucket => Some(e),
            _ => None,
        })
    }

    /// Applies the batch faults of `bucket` to the records of its FetchLog answer.
    pub(crate) fn damage_records(&self, bucket: BucketRef, records: &mut [u8]) {
        for (b, fault) in &self.fetch_bucket {
            if let (true, BucketFault::StretchBatch { base_offset, by }) = (*b == bucket, fault) {
                stretch_batch(records, *base_offset, *by);
            }
        }
    }

    /// The connection fault for the FetchLog request numbered `n` (1-based) that asks
    /// for `buckets`, if any.
    pub(crate) fn connection_fault(
        &self,
        n: usize,
        buckets: &[BucketRef],
    ) -> Option<ConnectionFault> {
        self.fetch_connection
            .iter()
            .find(|(which, _)| match which {
                FetchMatch::Nth(k) => *k == n,
                FetchMatch::Bucket(b) => buckets.contains(b),
            })
            .map(|(_, fault)| *fault)
    }
}

/// The error of the first of `errors` for `bucket` still in force at its `nth`
/// request (one with `times` `None` always is).
fn nth_error(
    errors: &[(BucketRef, ApiError, Option<usize>)],
    bucket: BucketRef,
    nth: usize,
) -> Option<&ApiError> {
    errors
        .iter()
        .find(|(b, _, times)| *b == bucket && times.is_none_or(|t| nth <= t))
        .map(|(_, e, _)| e)
}

/// Counts FetchLog requests for [`FetchMatch::Nth`].
#[derive(Debug, Default)]
pub(crate) struct FetchCounter(AtomicUsize);

impl FetchCounter {
    /// The number of the request just received (1-based).
    pub(crate) fn next(&self) -> usize {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// Bytes before the part a batch's length field counts (base offset and length).
const LOG_OVERHEAD: usize = 12;

/// Adds `by` to the length field of the batch at `base_offset`, walking the batches by
/// their (undamaged) lengths. Records that do not parse are left as they are.
fn stretch_batch(records: &mut [u8], base_offset: i64, by: i32) {
    let mut position = 0;
    while let Some(header) = records.get(position..position + LOG_OVERHEAD) {
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&header[..8]);
        let mut length = [0u8; 4];
        length.copy_from_slice(&header[8..12]);
        let length = i32::from_le_bytes(length);
        if i64::from_le_bytes(offset) == base_offset {
            let stretched = length.saturating_add(by).to_le_bytes();
            records[position + 8..position + 12].copy_from_slice(&stretched);
            return;
        }
        let Ok(length) = usize::try_from(length) else {
            return;
        };
        position += LOG_OVERHEAD + length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretching_changes_only_the_named_batch() {
        // two fake batches: base offsets 0 and 5, lengths 4 and 2
        let mut records = Vec::new();
        records.extend_from_slice(&0i64.to_le_bytes());
        records.extend_from_slice(&4i32.to_le_bytes());
        records.extend_from_slice(&[0; 4]);
        records.extend_from_slice(&5i64.to_le_bytes());
        records.extend_from_slice(&2i32.to_le_bytes());
        records.extend_from_slice(&[0; 2]);
        let before = records.clone();
        stretch_batch(&mut records, 5, 100);
        assert_eq!(records[..24], before[..24]);
        assert_eq!(&records[24..28], &102i32.to_le_bytes());
        stretch_batch(&mut records, 7, 100);
        assert_eq!(&records[24..28], &102i32.to_le_bytes());
    }

    #[test]
    fn nth_matches_once_and_bucket_matches_every_request() {
        let b = BucketRef::new(1, None, 0);
        let faults = Faults::default()
            .close_on_fetch(FetchMatch::Nth(2))
            .stall_fetch(FetchMatch::Bucket(b));
        let other = [BucketRef::new(1, None, 1)];
        assert_eq!(faults.connection_fault(1, &other), None);
        assert_eq!(
            faults.connection_fault(2, &other),
            Some(ConnectionFault::Close)
        );
        assert_eq!(
            faults.connection_fault(3, &[b]),
            Some(ConnectionFault::Stall)
        );
        assert!(Faults::default().is_empty());
    }
}
