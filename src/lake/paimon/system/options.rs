//! `t$lake$options`: the lake table's options (`OptionsTable`: `key`, `value`).

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};

use crate::error::Result;

/// The options, sorted by key.
pub(super) fn options(table: &paimon::table::Table) -> Result<RecordBatch> {
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
