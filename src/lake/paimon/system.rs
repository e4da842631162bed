//! Paimon's system tables a `t$lake$<name>` shows, with the columns Paimon's own
//! (`org.apache.paimon.table.system.*Table`) and paimon-datafusion give them:
//! `options` (`OptionsTable`: `key`, `value`) and `schemas` (`SchemasTable`:
//! `schema_id`, `fields`, `partition_keys`, `primary_keys`, `options` as JSON,
//! `comment`, `update_time`).

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};

use crate::error::{Error, ErrorKind, Result};

/// The system table `name` of `table`; `None` for a name this module has none of.
pub(super) async fn system_table(
    table: &paimon::table::Table,
    name: &str,
) -> Result<Option<RecordBatch>> {
    match name {
        "options" => options(table).map(Some),
        "schemas" => schemas(table).await.map(Some),
        _ => Ok(None),
    }
}

/// The system tables [`system_table`] answers.
pub(super) const SYSTEM_TABLES: &[&str] = &["options", "schemas"];

fn options(table: &paimon::table::Table) -> Result<RecordBatch> {
    let mut options: Vec<(&String, &String)> = table.schema().options().iter().collect();
    options.sort();
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter_values(
                options.iter().map(|(k, _)| k),
            )),
            Arc::new(StringArray::from_iter_values(
                options.iter().map(|(_, v)| v),
            )),
        ],
    )?)
}

async fn schemas(table: &paimon::table::Table) -> Result<RecordBatch> {
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
