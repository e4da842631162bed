//! `t$lake$buckets`: per partition and bucket of the latest snapshot, its rows,
//! bytes, files and last file's creation (Paimon's `BucketsTable`: `partition`,
//! `bucket`, `record_count`, `file_size_in_bytes`, `file_count`,
//! `last_update_time`).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use paimon::table::Table;

use super::files::live_files;
use super::partitions::{FileTotals, totals_columns};
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
    let (totals_fields, totals) = totals_columns(by_bucket.values());
    let mut fields = vec![
        Field::new("partition", DataType::Utf8, false),
        Field::new("bucket", DataType::Int32, false),
    ];
    fields.extend(totals_fields);
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            by_bucket.keys().map(|(p, _)| p),
        )),
        Arc::new(Int32Array::from_iter_values(
            by_bucket.keys().map(|(_, b)| *b),
        )),
    ];
    columns.extend(totals);
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}
