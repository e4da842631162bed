//! `t$lake$buckets`: per partition and bucket of the latest snapshot, its rows,
//! bytes, files and last file's creation (Paimon's `BucketsTable`: `partition`,
//! `bucket`, `record_count`, `file_size_in_bytes`, `file_count`,
//! `last_update_time`).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Int32Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use paimon::table::Table;

use super::files::live_files;
use super::partitions::FileTotals;
use crate::error::Result;

/// The buckets table.
pub(super) async fn buckets(table: &Table) -> Result<RecordBatch> {
    let mut by_bucket: BTreeMap<(String, i32), FileTotals> = BTreeMap::new();
    for file in live_files(table).await? {
        by_bucket
            .entry((file.partition.clone(), file.bucket))
            .or_default()
            .add(&file);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Utf8, false),
        Field::new("bucket", DataType::Int32, false),
        Field::new("record_count", DataType::Int64, false),
        Field::new("file_size_in_bytes", DataType::Int64, false),
        Field::new("file_count", DataType::Int64, false),
        Field::new(
            "last_update_time",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
    ]));
    let totals: Vec<_> = by_bucket.iter().collect();
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter_values(
                totals.iter().map(|((p, _), _)| p),
            )),
            Arc::new(Int32Array::from_iter_values(
                totals.iter().map(|((_, b), _)| *b),
            )),
            Arc::new(Int64Array::from_iter_values(
                totals.iter().map(|(_, t)| t.record_count),
            )),
            Arc::new(Int64Array::from_iter_values(
                totals.iter().map(|(_, t)| t.size),
            )),
            Arc::new(Int64Array::from_iter_values(
                totals.iter().map(|(_, t)| t.file_count),
            )),
            Arc::new(TimestampMillisecondArray::from(
                totals
                    .iter()
                    .map(|(_, t)| t.last_update_time)
                    .collect::<Vec<_>>(),
            )),
        ],
    )?)
}
