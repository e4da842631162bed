//! `t$lake$schemas`: every schema of the lake table (`SchemasTable`: `schema_id`,
//! `fields`, `partition_keys`, `primary_keys`, `options` as JSON, `comment`,
//! `update_time`).

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};

use crate::error::{Error, ErrorKind, Result};

/// The schemas, oldest first.
pub(super) async fn schemas(table: &paimon::table::Table) -> Result<RecordBatch> {
    let all = table.schema_manager().list_all().await.map_err(|e| {
        Error::new(ErrorKind::Lake, "cannot list the Paimon schemas").with_source(e)
    })?;
    let json = |v: serde_json::Result<String>| v.map_err(Error::from);
    let mut fields = Vec::new();
    let mut partition_keys = Vec::new();
    let mut primary_keys = Vec::new();
    let mut options = Vec::new();
    for s in &all {
        fields.push(json(serde_json::to_string(s.fields()))?);
        partition_keys.push(json(serde_json::to_string(s.partition_keys()))?);
        primary_keys.push(json(serde_json::to_string(s.primary_keys()))?);
        let sorted: std::collections::BTreeMap<_, _> = s.options().iter().collect();
        options.push(json(serde_json::to_string(&sorted))?);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("schema_id", DataType::Int64, false),
        Field::new("fields", DataType::Utf8, false),
        Field::new("partition_keys", DataType::Utf8, false),
        Field::new("primary_keys", DataType::Utf8, false),
        Field::new("options", DataType::Utf8, false),
        Field::new("comment", DataType::Utf8, true),
        Field::new(
            "update_time",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(all.iter().map(|s| s.id()))),
            Arc::new(StringArray::from(fields)),
            Arc::new(StringArray::from(partition_keys)),
            Arc::new(StringArray::from(primary_keys)),
            Arc::new(StringArray::from(options)),
            Arc::new(StringArray::from(
                all.iter()
                    .map(|s| s.comment().map(str::to_string))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(TimestampMillisecondArray::from_iter_values(
                all.iter().map(|s| s.time_millis()),
            )),
        ],
    )?)
}
