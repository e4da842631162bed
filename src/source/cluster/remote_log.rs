//! Tiered (remote) log segments: a tablet server answers a fetch below its local log
//! with the remote segments that hold it (`PbRemoteLogFetchInfo`), and the client
//! reads `{remote_log_tablet_dir}/{segment id}/{start offset:020}.log` from remote
//! storage itself (Fluss's `RemoteLogDownloader`; fluss-rs `client/table/remote_log.rs`).
//!
//! Segments are read in ranged chunks through `object_store` (local paths through the
//! local file system), configured by the source's storage options, and framed into
//! whole batches that go through the same cursor as FetchLog answers. The first
//! segment is read from `first_start_pos`, the batch holding the fetch offset.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::wire::RemoteLogFetchInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::storage::redact;
use crate::storage::remote::object_store_at;

/// Bytes read per request; a batch larger than this is read with a larger request.
const CHUNK_BYTES: u64 = 8 * 1024 * 1024;

/// One remote segment still to read.
#[derive(Debug, Clone)]
struct Segment {
    location: String,
    start_offset: i64,
    end_offset: i64,
    size: u64,
}

/// The remote segments of one FetchLog answer, read in order.
pub(crate) struct RemoteSegments {
    segments: Vec<Segment>,
    /// The segment being read, and the byte position in it.
    current: usize,
    position: u64,
    options: HashMap<String, String>,
    /// The current segment's store and object path.
    store: Option<(Arc<dyn ObjectStore>, ObjectPath)>,
}

impl std::fmt::Debug for RemoteSegments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSegments")
            .field("segments", &self.segments)
            .field("current", &self.current)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl RemoteSegments {
    /// The segments of `info` that hold offsets from `fetch_offset` on, read with the
    /// storage `options`; an error if they do not start at or before the offset, or
    /// are not contiguous (offsets would be lost between them).
    pub(crate) fn new(
        info: &RemoteLogFetchInfo,
        fetch_offset: i64,
        options: &HashMap<String, String>,
    ) -> Result<Self> {
        let dir = info.remote_log_tablet_dir.trim_end_matches('/');
        let mut segments: Vec<Segment> = info
            .remote_log_segments
            .iter()
            .filter(|s| s.remote_log_end_offset > fetch_offset)
            .map(|s| Segment {
                location: format!(
                    "{dir}/{}/{:020}.log",
                    s.remote_log_segment_id, s.remote_log_start_offset
                ),
                start_offset: s.remote_log_start_offset,
                end_offset: s.remote_log_end_offset,
                size: u64::try_from(s.segment_size_in_bytes).unwrap_or(0),
            })
            .collect();
        segments.sort_by_key(|s| s.start_offset);
        let invalid = |message: String| {
            Error::data_invalid(message)
                .with_context("remote_log_tablet_dir", redact(dir))
                .with_context("fetch_offset", fetch_offset)
        };
        let Some(first) = segments.first() else {
            return Err(invalid(
                "the server answered with remote log segments, none of which holds the fetch offset"
                    .into(),
            ));
        };
        if first.start_offset > fetch_offset {
            return Err(invalid(format!(
                "the first remote log segment starts at offset {}, after the fetch offset",
                first.start_offset
            )));
        }
        for pair in segments.windows(2) {
            if pair[1].start_offset != pair[0].end_offset {
                return Err(invalid(format!(
                    "remote log segments are not contiguous: one ends at offset {}, the next starts at {}",
                    pair[0].end_offset, pair[1].start_offset
                )));
            }
        }
        let position = u64::try_from(info.first_start_pos.unwrap_or(0))
            .map_err(|_| invalid("the remote log answer has a negative first_start_pos".into()))?;
        Ok(Self {
            segments,
            current: 0,
            position,
            options: options.clone(),
            store: None,
        })
    }

    /// The offset after the last remote segment: where local fetching resumes.
    pub(crate) fn end_offset(&self) -> i64 {
        self.segments.last().map_or(0, |s| s.end_offset)
    }

    /// The file being read, for errors.
    pub(crate) fn current_location(&self) -> Option<String> {
        self.segments.get(self.current).map(|s| redact(&s.location))
    }

    /// The next chunk of at least `min_bytes` bytes (at most what the segment has
    /// left) of the current segment, with the byte position it starts at; `None`
    /// when every segment has been read.
    pub(crate) async fn next_chunk(&mut self, min_bytes: u64) -> Result<Option<(Bytes, u64)>> {
        let Some(segment) = self.segments.get(self.current).cloned() else {
            return Ok(None);
        };
        if self.position >= segment.size {
            self.current += 1;
            self.position = 0;
            self.store = None;
            return Box::pin(self.next_chunk(min_bytes)).await;
        }
        let (store, path) = self.store_of(&segment.location)?;
        let end = segment.size.min(self.position + CHUNK_BYTES.max(min_bytes));
        let start = self.position;
        let bytes = store.get_range(&path, start..end).await.map_err(|e| {
            let kind = match e {
                object_store::Error::NotFound { .. } => ErrorKind::NotFound,
                _ => ErrorKind::Io,
            };
            Error::new(kind, "cannot read a remote log segment")
                .with_context("file", redact(&segment.location))
                .with_context("bytes", format!("{start}..{end}"))
                .with_source(e)
        })?;
        Ok(Some((bytes, start)))
    }

    /// Marks `consumed` bytes of the current chunk as read.
    pub(crate) fn advance(&mut self, consumed: u64) {
        self.position += consumed;
    }

    /// The size of the segment being read (0 when all are read).
    pub(crate) fn segment_size(&self) -> u64 {
        self.segments.get(self.current).map_or(0, |s| s.size)
    }

    fn store_of(&mut self, location: &str) -> Result<(Arc<dyn ObjectStore>, ObjectPath)> {
        if let Some(cached) = &self.store {
            return Ok(cached.clone());
        }
        let found = object_store_at(location, &self.options)?;
        self.store = Some(found.clone());
        Ok(found)
    }
}
