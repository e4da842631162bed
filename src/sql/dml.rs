//! `CALL tier(...)`, the one write DataFusion cannot plan; `INSERT`, `UPDATE`,
//! `DELETE` and `MERGE INTO` are DataFusion writes ([`crate::provider::FlussWriteRule`]).

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};

use super::FlussSession;
use crate::error::{Error, Result};

/// `CALL [fluss.]tier('[db.]table')`: tiers the table's log tail into its lake.
pub async fn call(
    session: &FlussSession,
    procedure: &[String],
    args: &[String],
) -> Result<RecordBatch> {
    let name = procedure.last().map(String::as_str).unwrap_or_default();
    let prefix_ok = procedure[..procedure.len().saturating_sub(1)]
        .iter()
        .all(|p| p == super::CATALOG || p == "sys" || p == "system");
    if name != "tier" || !prefix_ok {
        return Err(Error::not_found(format!(
            "unknown procedure '{}' (available: fluss.tier('db.table'))",
            procedure.join(".")
        )));
    }
    let [table] = args else {
        return Err(Error::invalid_input(
            "tier takes one argument: the table name, e.g. CALL fluss.tier('db.orders')",
        ));
    };
    let parts: Vec<String> = table.split('.').map(str::to_string).collect();
    let path = session.table_path(&parts)?;
    let result = session
        .source()
        .writer()
        .ok_or_else(|| {
            Error::unsupported(format!(
                "CALL fluss.tier needs a LocalStore: {} is a Fluss deployment, whose own \
                 tiering service tiers its tables",
                session.source().name()
            ))
        })?
        .tier(&path)
        .await?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("table", DataType::Utf8, false),
        Field::new("snapshot_id", DataType::Int64, true),
        Field::new("records", DataType::UInt64, false),
        Field::new("buckets", DataType::UInt64, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec![path.to_string()])),
            Arc::new(Int64Array::from(vec![result.snapshot_id])),
            Arc::new(UInt64Array::from(vec![result.records as u64])),
            Arc::new(UInt64Array::from(vec![result.buckets as u64])),
        ],
    )?)
}
