//! `SHOW CREATE TABLE` and `DESCRIBE` of a Fluss table, in Fluss's own terms: the
//! DDL that creates the table again (Fluss types, primary key, partitions, buckets
//! and options, as `CREATE TABLE` takes them here and in Flink), and its columns
//! with Fluss types and keys.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};

use super::parse::quote_ident;
use crate::error::Result;
use crate::source::FlussTable;

/// `name` as written in DDL: bare when it is a plain lower-case identifier.
fn ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        quote_ident(name)
    }
}

/// A single-quoted SQL string.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The `CREATE TABLE` statement that creates `table` again.
pub fn create_table_ddl(table: &FlussTable) -> String {
    let info = &table.info;
    let schema = info.get_schema();
    let primary_key = info.get_primary_keys();
    let mut lines: Vec<String> = schema
        .columns()
        .iter()
        .map(|column| {
            let mut line = format!("  {} {}", ident(column.name()), column.data_type());
            if let Some(comment) = column.comment() {
                line.push_str(&format!(" COMMENT {}", literal(comment)));
            }
            line
        })
        .collect();
    if !primary_key.is_empty() {
        let keys: Vec<String> = primary_key.iter().map(|k| ident(k)).collect();
        lines.push(format!("  PRIMARY KEY ({}) NOT ENFORCED", keys.join(", ")));
    }
    let mut ddl = format!(
        "CREATE TABLE {}.{} (\n{}\n)",
        ident(table.path.database()),
        ident(table.path.table()),
        lines.join(",\n")
    );
    if let Some(comment) = info.get_comment() {
        ddl.push_str(&format!("\nCOMMENT {}", literal(comment)));
    }
    let partition_keys = info.get_partition_keys();
    if !partition_keys.is_empty() {
        let keys: Vec<String> = partition_keys.iter().map(|k| ident(k)).collect();
        ddl.push_str(&format!("\nPARTITIONED BY ({})", keys.join(", ")));
    }
    let mut options = vec![("bucket.num".to_string(), info.get_num_buckets().to_string())];
    if !info.is_default_bucket_key() {
        options.push(("bucket.key".to_string(), info.get_bucket_keys().join(",")));
    }
    let mut rest: Vec<(String, String)> = info
        .get_properties()
        .iter()
        .chain(info.get_custom_properties())
        .filter(|(k, _)| k.as_str() != "bucket.num" && k.as_str() != "bucket.key")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    rest.sort();
    options.extend(rest);
    let options: Vec<String> = options
        .iter()
        .map(|(k, v)| format!("  {} = {}", literal(k), literal(v)))
        .collect();
    ddl.push_str(&format!("\nWITH (\n{}\n)", options.join(",\n")));
    ddl
}

/// `SHOW CREATE TABLE`: one row, the table's name and its DDL.
pub fn show_create_table(table: &FlussTable) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("table", DataType::Utf8, false),
        Field::new("create_statement", DataType::Utf8, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec![table.path.to_string()])),
            Arc::new(StringArray::from(vec![create_table_ddl(table)])),
        ],
    )?)
}

/// `DESCRIBE`: a row per column with its Fluss type (nullability apart, as
/// DataFusion's `DESCRIBE` shows it) and the keys it belongs to.
pub fn describe_columns(table: &FlussTable) -> Result<RecordBatch> {
    let info = &table.info;
    let schema = info.get_schema();
    let (mut names, mut types, mut nullable, mut keys) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for column in schema.columns() {
        let name = column.name();
        let data_type = column.data_type();
        names.push(name.to_string());
        types.push(
            data_type
                .to_string()
                .trim_end_matches(" NOT NULL")
                .to_string(),
        );
        nullable.push(if data_type.is_nullable() { "YES" } else { "NO" });
        let mut roles = Vec::new();
        if info.get_primary_keys().iter().any(|k| k == name) {
            roles.push("PRIMARY KEY");
        }
        if info.get_partition_keys().iter().any(|k| k == name) {
            roles.push("PARTITION KEY");
        }
        if info.get_bucket_keys().iter().any(|k| k == name) {
            roles.push("BUCKET KEY");
        }
        keys.push(roles.join(", "));
    }
    let fields = ["column_name", "data_type", "is_nullable", "key"]
        .map(|name| Field::new(name, DataType::Utf8, false));
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields.to_vec())),
        vec![
            Arc::new(StringArray::from(names)),
            Arc::new(StringArray::from(types)),
            Arc::new(StringArray::from(nullable)),
            Arc::new(StringArray::from(keys)),
        ],
    )?)
}
