//! `t$lake$partitions`: per partition of the latest snapshot, its rows, bytes, files
//! and last file's creation (Paimon's `PartitionsTable`: `partition`,
//! `record_count`, `file_size_in_bytes`, `file_count`, `last_update_time`).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use paimon::table::Table;

use super::files::{LiveFile, live_files};
use crate::error::Result;

/// Rows, bytes, files and the newest creation time of a group of files.
#[derive(Default)]
pub(super) struct FileTotals {
    pub record_count: i64,
    pub size: i64,
    pub file_count: i64,
    pub last_update_time: Option<i64>,
}

impl FileTotals {
    /// Adds `file` to the totals.
    pub fn add(&mut self, file: &LiveFile) {
        self.record_count += file.record_count;
        self.size += file.size;
        self.file_count += 1;
        self.last_update_time = self.last_update_time.max(file.creation_time);
    }
}

/// The totals' columns (`record_count`, `file_size_in_bytes`, `file_count`,
/// `last_update_time`): their fields, and their arrays for `totals` in order.
pub(super) fn totals_columns<'a>(
    totals: impl Iterator<Item = &'a FileTotals> + Clone,
) -> (Vec<Field>, Vec<ArrayRef>) {
    let fields = vec![
        Field::new("record_count", DataType::Int64, false),
        Field::new("file_size_in_bytes", DataType::Int64, false),
        Field::new("file_count", DataType::Int64, false),
        Field::new(
            "last_update_time",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
    ];
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            totals.clone().map(|t| t.record_count),
        )),
        Arc::new(Int64Array::from_iter_values(totals.clone().map(|t| t.size))),
        Arc::new(Int64Array::from_iter_values(
            totals.clone().map(|t| t.file_count),
        )),
        Arc::new(TimestampMillisecondArray::from(
            totals.map(|t| t.last_update_time).collect::<Vec<_>>(),
        )),
    ];
    (fields, arrays)
}

/// The partitions table.
pub(super) async fn partitions(table: &Table) -> Result<RecordBatch> {
    let mut by_partition: BTreeMap<String, FileTotals> = BTreeMap::new();
    for file in live_files(table).await? {
        by_partition
            .entry(file.partition.clone())
            .or_default()
            .add(&file);
    }
    let (totals_fields, totals) = totals_columns(by_partition.values());
    let mut fields = vec![Field::new("partition", DataType::Utf8, false)];
    fields.extend(totals_fields);
    let mut columns: Vec<ArrayRef> =
        vec![Arc::new(StringArray::from_iter_values(by_partition.keys()))];
    columns.extend(totals);
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}
