//! `SHOW PARTITIONS t [PARTITION (k = 'v', ...)]`, as Flink's Fluss catalog lists
//! them: one row per partition Fluss holds, `k=v[/k2=v2]`, in name order.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};

use super::{FlussSession, StatementResult};
use crate::error::{Error, Result};

/// The partitions of the table `name`, those matching `spec` when given.
pub(super) async fn show_partitions(
    session: &FlussSession,
    name: &[String],
    spec: &[(String, String)],
) -> Result<StatementResult> {
    let path = session.table_path(name)?;
    let table = session.source().get_table(&path).await?;
    let keys = table.info.get_partition_keys().to_vec();
    if keys.is_empty() {
        return Err(Error::invalid_input(format!(
            "Table {path} is not a partitioned table."
        )));
    }
    crate::table::partition_value::check_spec_keys(&path.to_string(), &keys, spec)?;
    let mut rows: Vec<String> = Vec::new();
    for partition in session.source().list_partitions(&table).await? {
        let name = partition.get_partition_name();
        let values: Vec<&str> = name.split('$').collect();
        let matches = spec.iter().all(|(k, v)| {
            keys.iter()
                .position(|key| key.eq_ignore_ascii_case(k))
                .and_then(|i| values.get(i))
                .is_some_and(|value| value == v)
        });
        if matches {
            rows.push(
                keys.iter()
                    .zip(&values)
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("/"),
            );
        }
    }
    rows.sort();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "partition",
        DataType::Utf8,
        false,
    )]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(rows))])?;
    Ok(StatementResult::of(batch))
}
