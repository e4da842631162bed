//! Where Fluss tables come from: the [`FlussSource`] trait and the embedded
//! [`LocalStore`].
//!
//! A source answers exactly what a union read needs at planning time (table
//! metadata, the readable lake snapshot, per-bucket offsets) and at execution time
//! (bounded log reads). The LocalStore implements it over files laid out as a Fluss
//! deployment lays them out; a live cluster (fluss-rs `FlussAdmin` +
//! `RecordBatchLogReader`) can implement the same trait.

pub(crate) mod bucketing;
#[cfg(feature = "cluster")]
mod cluster;
pub(crate) mod conform;
pub(crate) mod kv;
pub(crate) mod layout;
pub(crate) mod local_store;
pub(crate) mod metadata;
pub(crate) mod partition_name;
pub mod prefetch;
mod spec;
pub(crate) mod writer;

use std::fmt::Debug;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use fluss::metadata::{PartitionInfo, TableInfo, TablePath};
use futures::stream::BoxStream;

#[doc(hidden)]
/// The cluster RPC messages, shared with the repository's Fluss RPC test server
/// (`test-support` feature: not public API).
#[cfg(all(feature = "cluster", feature = "test-support"))]
pub use cluster::wire as cluster_wire;
#[cfg(feature = "cluster")]
pub use cluster::{ClusterOptions, ClusterSource};
pub use local_store::{LocalStore, LocalStoreOptions, StoreClock};
pub use metadata::{
    LakeSnapshotEntry, LegacyLakeSnapshot, RegisteredLakeSnapshots, TableBucketOffsets,
};
pub use spec::SourceSpec;
pub use writer::{ALTERABLE_TABLE_OPTIONS, FlussWriter, NewColumn, WriteKind, WriteResult};

pub use crate::table::{
    BucketLocation, BucketOffsets, FlussTable, LAKE_FORMAT_PROPERTY, MAX_BUCKETS,
};

use crate::error::{Error, ErrorKind, Result};
use crate::lake::LakeLocation;
use crate::log::{ChangelogBatch, LogRange, LogReadOptions};

/// The lake snapshot a union read may use, with the exclusive end offset tiered into
/// it for each bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadableSnapshot {
    /// Lake snapshot id.
    pub snapshot_id: i64,
    /// Tiered end offsets per (partition, bucket).
    pub offsets: TableBucketOffsets,
}

/// A bounded read of one bucket's log, batch by batch (a LocalStore's segments, a
/// cluster's FetchLog answers).
#[async_trait]
pub(crate) trait BucketBatches: Send + 'static {
    /// The next decoded batch of the range, `None` at its end.
    async fn next_batch(&mut self) -> Result<Option<ChangelogBatch>>;
}

/// The batches of `reader` as a stream whose errors name the table and bucket.
pub(crate) fn bucket_stream(
    reader: impl BucketBatches,
    table: &FlussTable,
    bucket: i32,
) -> BoxStream<'static, Result<ChangelogBatch>> {
    let table_name = table.path.to_string();
    Box::pin(futures::stream::try_unfold(reader, move |mut reader| {
        let table_name = table_name.clone();
        async move {
            let next = reader.next_batch().await.map_err(|e| {
                e.with_context("table", table_name)
                    .with_context("bucket", bucket)
            })?;
            Ok(next.map(|b| (b, reader)))
        }
    }))
}

/// The read side of Fluss: metadata, lake snapshot pointers, offsets and log ranges.
#[async_trait]
pub trait FlussSource: Debug + Send + Sync {
    /// A display name (store root or cluster address; never credentials).
    fn name(&self) -> String;

    /// How another process opens this source again, to run part of a plan read
    /// from it (a distributed worker); `None` when it cannot, and such a plan is
    /// then not shipped.
    fn spec(&self) -> Option<SourceSpec> {
        None
    }

    /// Database names.
    async fn list_databases(&self) -> Result<Vec<String>>;

    /// Table names of a database.
    async fn list_tables(&self, database: &str) -> Result<Vec<String>>;

    /// A table's metadata.
    async fn get_table(&self, path: &TablePath) -> Result<FlussTable>;

    /// The current metadata of several tables at once, for the statement about to be
    /// planned ([`prefetch::with_tables_prefetched`]). Sources whose `get_table`
    /// costs no round trip answer nothing (the default).
    async fn prefetch_tables(
        &self,
        _paths: &[TablePath],
    ) -> Result<std::collections::HashMap<TablePath, TableInfo>> {
        Ok(std::collections::HashMap::new())
    }

    /// The metadata of `paths` as this source last saw it, if it saw all of them: a
    /// read-only statement is planned from it while [`prefetch_tables`] confirms it
    /// ([`prefetch::with_tables_confirmed`]). Sources that keep none answer `None`
    /// (the default).
    ///
    /// [`prefetch_tables`]: FlussSource::prefetch_tables
    fn last_seen_tables(
        &self,
        _paths: &[TablePath],
    ) -> Option<std::collections::HashMap<TablePath, TableInfo>> {
        None
    }

    /// How long ago this source last fetched the metadata of `paths` (of the one
    /// fetched longest ago), if it fetched every one of them: a read-only statement
    /// may skip confirming tables seen recently enough (`fluss.metadata_max_age_ms`,
    /// [`prefetch::with_tables_confirmed`]). Sources that keep none answer `None`
    /// (the default).
    fn last_seen_age(&self, _paths: &[TablePath]) -> Option<std::time::Duration> {
        None
    }

    /// Partitions of a partitioned table.
    async fn list_partitions(&self, table: &FlussTable) -> Result<Vec<PartitionInfo>>;

    /// The latest readable lake snapshot and its offsets; `None` if nothing is tiered.
    async fn readable_lake_snapshot(&self, table: &FlussTable) -> Result<Option<ReadableSnapshot>>;

    /// The registered lake snapshot `snapshot_id` with the offsets a union read of it
    /// uses, if Fluss registered it and it is readable (`None` otherwise): time
    /// travel reads the union at an older snapshot. Sources that keep only the
    /// latest snapshot refuse (the default).
    async fn lake_snapshot(
        &self,
        table: &FlussTable,
        snapshot_id: i64,
    ) -> Result<Option<ReadableSnapshot>> {
        Err(Error::new(
            ErrorKind::FeatureUnsupported,
            format!(
                "{} cannot read lake snapshot {snapshot_id} with its offsets",
                self.name()
            ),
        )
        .with_context("table", table.path.to_string()))
    }

    /// Per bucket, in order, the first offset of a batch committed after
    /// `timestamp_ms` (epoch millis; the high watermark where none was): where a read
    /// of the log as of that time ends. `offsets` are the buckets' earliest offsets
    /// and high watermarks, as [`FlussSource::bucket_offsets`] gave them. The default
    /// seeks by the batches' headers, reading the first later batch only (every row
    /// of a batch shares its commit timestamp, so no batch is split).
    async fn offsets_after(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
        offsets: &[BucketOffsets],
        timestamp_ms: i64,
    ) -> Result<Vec<i64>> {
        use futures::TryStreamExt;
        let mut ends = Vec::with_capacity(buckets.len());
        for (bucket, offsets) in buckets.iter().zip(offsets) {
            let range = LogRange::new(offsets.earliest, offsets.high_watermark);
            if range.is_empty() {
                ends.push(offsets.high_watermark);
                continue;
            }
            let options = LogReadOptions {
                projection: Some(Vec::new()),
                commit_time: Some((timestamp_ms.saturating_add(1), i64::MAX)),
                ..LogReadOptions::verified()
            };
            let mut batches = self.read_log(table, bucket, range, options).await?;
            let first_later = batches.try_next().await?;
            ends.push(first_later.map_or(offsets.high_watermark, |b| b.first_offset));
        }
        Ok(ends)
    }

    /// Earliest offset and high watermark of each of `buckets`, in order, resolved
    /// together (one round of lookups or requests, not one per bucket).
    async fn bucket_offsets(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<BucketOffsets>>;

    /// Reads `range` of a bucket's log as decoded batches with change types.
    async fn read_log(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        range: LogRange,
        options: LogReadOptions,
    ) -> Result<BoxStream<'static, Result<ChangelogBatch>>>;

    /// The rows of `range` of a log table's bucket, counted without decoding them
    /// from metadata the source has validated (batch headers whose offsets continue
    /// each other, CRCs checked), so that `count(*)` can be answered from it. `None`
    /// when the source cannot count them short of reading them as a scan does. A log
    /// that is damaged or misses offsets is an error, as its read would be.
    async fn count_log_rows(
        &self,
        _table: &FlussTable,
        _bucket: &BucketLocation,
        _range: LogRange,
    ) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Where the table's lake lives: format, warehouse and the options to read it
    /// (a LocalStore resolves relative warehouses against its root; a cluster source
    /// reads `table.datalake.<format>.*` and adds its own storage options).
    async fn lake_location(&self, table: &FlussTable) -> Result<LakeLocation>;

    /// The lake snapshot ids Fluss has registered for the table (`None` where the
    /// source cannot list them).
    async fn registered_lake_snapshots(&self, _table: &FlussTable) -> Result<Option<Vec<i64>>> {
        Ok(None)
    }

    /// Every bucket of the table: per partition for partitioned tables.
    async fn buckets(&self, table: &FlussTable) -> Result<Vec<BucketLocation>> {
        let n = table.info.get_num_buckets();
        if !table.info.is_partitioned() {
            return Ok((0..n)
                .map(|bucket| BucketLocation {
                    partition: None,
                    bucket,
                })
                .collect());
        }
        let mut out = Vec::new();
        for p in self.list_partitions(table).await? {
            for bucket in 0..n {
                out.push(BucketLocation {
                    partition: Some((p.get_partition_id(), p.get_partition_name())),
                    bucket,
                });
            }
        }
        Ok(out)
    }

    /// The writer of this source, if it takes writes (the LocalStore and a cluster
    /// source do; a source of someone else's may be read-only).
    fn writer(&self) -> Option<&dyn FlussWriter> {
        None
    }

    /// Whether [`FlussSource::scan_kv`] answers for `table`: a primary-key table on
    /// a cluster, whose tablet servers scan their key-value state (ScanKv).
    fn serves_kv_scans(&self, _table: &FlussTable) -> bool {
        false
    }

    /// The current rows of one bucket of a primary-key table as its tablet server
    /// holds them when scanned (ScanKv: Fluss's `server-scan`), in the table's latest
    /// schema's Arrow layout. Each bucket is scanned at its own moment: the buckets
    /// are not one atomic snapshot.
    async fn scan_kv(
        &self,
        table: &FlussTable,
        _bucket: &BucketLocation,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        Err(Error::new(
            ErrorKind::FeatureUnsupported,
            format!("{} does not scan key-value state", self.name()),
        )
        .with_context("table", table.path.to_string()))
    }

    /// Whether [`FlussSource::lookup_keys`] answers for `table`: the source keeps
    /// each key's current row where it can be read by key (a cluster's tablet
    /// servers) and can encode the table's keys as it does.
    fn serves_key_lookups(&self, _table: &FlussTable) -> bool {
        false
    }

    /// The current rows of a primary-key table with the keys of `keys` (one row per
    /// key: the primary-key columns, named and typed as in the table's latest Fluss
    /// schema), in that schema's Arrow layout; keys without a row are left out.
    /// Current means as the source holds them when asked, not as of a lake snapshot
    /// and offset cut. Keys of partitions the source does not have cannot be
    /// answered by key: see [`LookedUp::PartitionsMissing`].
    async fn lookup_keys(&self, table: &FlussTable, _keys: &RecordBatch) -> Result<LookedUp> {
        Err(Error::new(
            ErrorKind::FeatureUnsupported,
            format!("{} does not look up keys", self.name()),
        )
        .with_context("table", table.path.to_string()))
    }
}

/// A key lookup's answer ([`FlussSource::lookup_keys`]).
#[derive(Debug, Clone)]
pub enum LookedUp {
    /// The current row of every key that has one.
    Rows(RecordBatch),
    /// Some keys fall in partitions the source does not have: dropped or expired
    /// from Fluss (their tiered rows live on in the lake only, which a lookup does
    /// not read), or never created. The reader must scan instead (apache/fluss
    /// 3443: lookups missed a partition that exists only in the lake).
    PartitionsMissing(Vec<String>),
}
