//! A cluster that takes writes: [`WritableCluster`] appends the batches clients produce
//! (`ProduceLog`) to its buckets' logs, as a tablet server leading every bucket would,
//! so that the library's cluster writes (fluss-rs's `AppendWriter`) can be tested with
//! faults the real cluster cannot be made to show on demand (see [`crate::faults`]).
//!
//! Idempotence follows Fluss's `WriterStateManager`: a writer's batches for a bucket
//! carry sequences 0, 1, 2, ...; a batch whose sequence was appended already (a retry
//! after a lost answer) is answered with the offset it got then and not appended
//! again, and one that skips a sequence is refused (`OUT_OF_ORDER_SEQUENCE_EXCEPTION`).

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

use crate::errors::{self, ApiError};
use crate::log::ServedLog;
use crate::memory::MemoryCluster;
use crate::model::{ClusterModel, ServedLakeSnapshot, ServedTable};

/// `NO_WRITER_ID`: a batch of a writer without idempotence.
const NO_WRITER_ID: i64 = -1;

/// A bucket as the writer state keys it: table, partition, bucket.
type BucketKey = (i64, Option<i64>, i32);

/// A writer's state at one bucket: the last sequence appended, and the base offset
/// each sequence got.
#[derive(Debug, Default)]
struct WriterState {
    last: i32,
    offsets: HashMap<i32, i64>,
}

/// [`MemoryCluster`]'s tables and logs, taking appends.
#[derive(Debug, Default)]
pub struct WritableCluster {
    cluster: RwLock<MemoryCluster>,
    /// Per writer and bucket: the last sequence appended and the base offset of each
    /// sequence appended (a retried batch gets its first answer again).
    writers: Mutex<HashMap<(i64, BucketKey), WriterState>>,
}

impl WritableCluster {
    /// Serves `cluster` and takes writes into it.
    pub fn new(cluster: MemoryCluster) -> Self {
        Self {
            cluster: RwLock::new(cluster),
            writers: Mutex::default(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, MemoryCluster> {
        self.cluster.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl ClusterModel for WritableCluster {
    fn databases(&self) -> Vec<String> {
        self.read().databases()
    }

    fn tables(&self, database: &str) -> Option<Vec<String>> {
        self.read().tables(database)
    }

    fn table(&self, database: &str, table: &str) -> Option<ServedTable> {
        self.read().table(database, table)
    }

    fn table_by_id(&self, table_id: i64) -> Option<(String, String, ServedTable)> {
        self.read().table_by_id(table_id)
    }

    fn lake_snapshots(&self, table_id: i64) -> Vec<ServedLakeSnapshot> {
        self.read().lake_snapshots(table_id)
    }

    fn log(&self, table_id: i64, partition_id: Option<i64>, bucket: i32) -> Option<ServedLog> {
        self.read().log(table_id, partition_id, bucket)
    }

    fn put_kv(
        &self,
        table_id: i64,
        partition_id: Option<i64>,
        bucket: i32,
        records: &[u8],
        target_columns: &[i32],
    ) -> Result<i64, ApiError> {
        let batch =
            fluss::record::kv::KvRecordBatch::new(bytes::Bytes::copy_from_slice(records), 0);
        let writer = match (batch.writer_id(), batch.batch_sequence()) {
            (Ok(id), Ok(sequence)) if id != NO_WRITER_ID => Some((id, sequence)),
            _ => None,
        };
        self.write(
            table_id,
            partition_id,
            bucket,
            writer,
            |log, db, name, table| {
                crate::kv_write::changelog_of_put((db, name), table, log, records, target_columns)
            },
        )
        .map(|(log_end, _)| log_end)
    }

    fn append(
        &self,
        table_id: i64,
        partition_id: Option<i64>,
        bucket: i32,
        records: &[u8],
    ) -> Result<i64, ApiError> {
        let writer = ServedLog::writer_of(records).filter(|(id, _)| *id != NO_WRITER_ID);
        self.write(table_id, partition_id, bucket, writer, |_, _, _, _| {
            Ok(Some(bytes::Bytes::copy_from_slice(records)))
        })
        .map(|(_, base)| base)
    }
}

impl WritableCluster {
    /// Appends what `change` makes of the bucket's log (log batch bytes; `None`:
    /// nothing) once per writer sequence; returns the log end offset after it and
    /// the base offset the batches got (a retried sequence: what it got first).
    fn write(
        &self,
        table_id: i64,
        partition_id: Option<i64>,
        bucket: i32,
        writer: Option<(i64, i32)>,
        change: impl FnOnce(
            &ServedLog,
            &str,
            &str,
            &ServedTable,
        ) -> Result<Option<bytes::Bytes>, ApiError>,
    ) -> Result<(i64, i64), ApiError> {
        let key: BucketKey = (table_id, partition_id, bucket);
        let mut writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        let mut cluster = self.cluster.write().unwrap_or_else(|e| e.into_inner());
        let (Some(log), Some((db, name, table))) = (
            cluster.log(table_id, partition_id, bucket),
            cluster.table_by_id(table_id),
        ) else {
            return Err(ApiError::new(
                errors::UNKNOWN_TABLE_OR_BUCKET,
                format!("Unknown table or bucket: {key:?}"),
            ));
        };
        if let Some((id, sequence)) = writer
            && let Some(state) = writers.get(&(id, key))
        {
            if let Some(offset) = state.offsets.get(&sequence) {
                return Ok((log.high_watermark(), *offset));
            }
            let last = state.last;
            if sequence != last + 1 {
                return Err(ApiError::new(
                    errors::OUT_OF_ORDER_SEQUENCE,
                    format!(
                        "Out of order batch sequence for writer {id} at bucket {key:?}: \
                         {sequence} (incoming), {last} (current)"
                    ),
                ));
            }
        }
        let (base, log_end) = match change(&log, &db, &name, &table)? {
            Some(batches) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                let (appended, base) = log
                    .appended(&batches, now)
                    .map_err(|e| ApiError::new(errors::CORRUPT_MESSAGE, e.0))?;
                let log_end = appended.high_watermark();
                cluster.add_log(table_id, partition_id, bucket, appended);
                (base, log_end)
            }
            None => (log.high_watermark(), log.high_watermark()),
        };
        if let Some((id, sequence)) = writer {
            let state = writers.entry((id, key)).or_default();
            state.last = sequence;
            state.offsets.insert(sequence, base);
        }
        Ok((log_end, base))
    }
}
