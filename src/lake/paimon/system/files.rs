//! `t$lake$files`: the data files of the lake table's latest snapshot, with the
//! columns of Paimon's `FilesTable` that describe a file (`partition`, `bucket`,
//! `file_path`, `file_format`, `schema_id`, `level`, `record_count`,
//! `file_size_in_bytes`, `min_sequence_number`, `max_sequence_number`,
//! `creation_time`, `file_source`). Its key and value statistics columns, binary
//! rows in Paimon, are left out.

use std::sync::Arc;

use datafusion::arrow::array::{
    Int32Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use paimon::table::Table;

use crate::error::{Error, ErrorKind, Result};
use crate::lake::paimon::scan::partition_name;

/// One live data file of the latest snapshot.
pub(super) struct LiveFile {
    /// The partition as Paimon shows it: `{v1, v2}`, `{}` when unpartitioned.
    pub partition: String,
    pub bucket: i32,
    pub path: String,
    pub format: String,
    pub schema_id: i64,
    pub level: i32,
    /// Rows in the file, delete rows included (Paimon's `record_count`).
    pub record_count: i64,
    pub size: i64,
    pub min_sequence_number: i64,
    pub max_sequence_number: i64,
    /// Epoch millis, when Paimon recorded it.
    pub creation_time: Option<i64>,
    /// `APPEND` or `COMPACT`, when recorded.
    pub file_source: Option<&'static str>,
}

/// The live data files of `table`'s latest snapshot (what a scan of it reads), by
/// partition, bucket and path.
pub(super) async fn live_files(table: &Table) -> Result<Vec<LiveFile>> {
    let plan = table
        .new_read_builder()
        .new_scan()
        .plan()
        .await
        .map_err(|e| Error::new(ErrorKind::Lake, "cannot plan the Paimon scan").with_source(e))?;
    let mut files = Vec::new();
    for split in plan.splits() {
        let partition = match partition_name(table, split)? {
            Some(name) => format!("{{{}}}", name.split('$').collect::<Vec<_>>().join(", ")),
            None => "{}".to_string(),
        };
        for file in split.data_files() {
            let format = file
                .file_name
                .rsplit_once('.')
                .map_or("", |(_, ext)| ext)
                .to_string();
            files.push(LiveFile {
                partition: partition.clone(),
                bucket: split.bucket(),
                path: split.data_file_path(file),
                format,
                schema_id: file.schema_id,
                level: file.level,
                record_count: file.row_count,
                size: file.file_size,
                min_sequence_number: file.min_sequence_number,
                max_sequence_number: file.max_sequence_number,
                creation_time: file.creation_time.map(|t| t.timestamp_millis()),
                file_source: file.file_source.map(|s| match s {
                    0 => "APPEND",
                    _ => "COMPACT",
                }),
            });
        }
    }
    files.sort_by(|a, b| (&a.partition, a.bucket, &a.path).cmp(&(&b.partition, b.bucket, &b.path)));
    Ok(files)
}

/// The files table.
pub(super) async fn files(table: &Table) -> Result<RecordBatch> {
    let files = live_files(table).await?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Utf8, false),
        Field::new("bucket", DataType::Int32, false),
        Field::new("file_path", DataType::Utf8, false),
        Field::new("file_format", DataType::Utf8, false),
        Field::new("schema_id", DataType::Int64, false),
        Field::new("level", DataType::Int32, false),
        Field::new("record_count", DataType::Int64, false),
        Field::new("file_size_in_bytes", DataType::Int64, false),
        Field::new("min_sequence_number", DataType::Int64, false),
        Field::new("max_sequence_number", DataType::Int64, false),
        Field::new(
            "creation_time",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
        Field::new("file_source", DataType::Utf8, true),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter_values(
                files.iter().map(|f| &f.partition),
            )),
            Arc::new(Int32Array::from_iter_values(files.iter().map(|f| f.bucket))),
            Arc::new(StringArray::from_iter_values(files.iter().map(|f| &f.path))),
            Arc::new(StringArray::from_iter_values(
                files.iter().map(|f| &f.format),
            )),
            Arc::new(Int64Array::from_iter_values(
                files.iter().map(|f| f.schema_id),
            )),
            Arc::new(Int32Array::from_iter_values(files.iter().map(|f| f.level))),
            Arc::new(Int64Array::from_iter_values(
                files.iter().map(|f| f.record_count),
            )),
            Arc::new(Int64Array::from_iter_values(files.iter().map(|f| f.size))),
            Arc::new(Int64Array::from_iter_values(
                files.iter().map(|f| f.min_sequence_number),
            )),
            Arc::new(Int64Array::from_iter_values(
                files.iter().map(|f| f.max_sequence_number),
            )),
            Arc::new(TimestampMillisecondArray::from(
                files.iter().map(|f| f.creation_time).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                files.iter().map(|f| f.file_source).collect::<Vec<_>>(),
            )),
        ],
    )?)
}
