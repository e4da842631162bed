//! Rendering results as text: an aligned table, CSV, TSV, a JSON array or
//! newline-delimited JSON (the formats of datafusion-cli's `--format`).

use std::fmt;
use std::str::FromStr;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::csv::WriterBuilder as CsvWriterBuilder;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::{ArrayWriter, LineDelimitedWriter};
use datafusion::arrow::util::pretty::pretty_format_batches_with_schema;

use fluss_datafusion::error::{Error, Result};

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrintFormat {
    /// An aligned, boxed table.
    #[default]
    Table,
    /// Comma-separated values with a header.
    Csv,
    /// Tab-separated values with a header.
    Tsv,
    /// One JSON array of objects.
    Json,
    /// One JSON object per line.
    NdJson,
    /// datafusion-cli's default: a table for bounded results (which every result
    /// here is; datafusion-cli streams unbounded ones).
    Automatic,
    /// One block per row, a line per column (psql's `\x`).
    Expanded,
}

impl FromStr for PrintFormat {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "table" => Ok(Self::Table),
            "csv" => Ok(Self::Csv),
            "tsv" => Ok(Self::Tsv),
            "json" => Ok(Self::Json),
            "ndjson" | "nd-json" => Ok(Self::NdJson),
            "automatic" => Ok(Self::Automatic),
            "expanded" => Ok(Self::Expanded),
            other => Err(Error::invalid_input(format!(
                "unknown format '{other}' (table, csv, tsv, json, ndjson, automatic, expanded)"
            ))),
        }
    }
}

impl fmt::Display for PrintFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Table => "table",
            Self::Csv => "csv",
            Self::Tsv => "tsv",
            Self::Json => "json",
            Self::NdJson => "ndjson",
            Self::Automatic => "automatic",
            Self::Expanded => "expanded",
        })
    }
}

/// The first `max_rows` rows of `batches`.
fn head(batches: &[RecordBatch], max_rows: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut left = max_rows;
    for batch in batches {
        if left == 0 {
            break;
        }
        let take = left.min(batch.num_rows());
        out.push(batch.slice(0, take));
        left -= take;
    }
    out
}

/// Renders `batches` (of `schema`) in `format`. `max_rows` limits the rows shown by
/// the table format only (machine-readable formats always get every row). The text
/// ends with a newline unless it is empty.
pub fn format_batches(
    format: PrintFormat,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    max_rows: Option<usize>,
) -> Result<String> {
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut out = Vec::<u8>::new();
    match format {
        PrintFormat::Expanded => {
            let shown = match max_rows {
                Some(n) if n < total => head(batches, n),
                _ => batches.to_vec(),
            };
            out.extend_from_slice(expanded(schema, &shown)?.as_bytes());
            if let Some(n) = max_rows.filter(|n| *n < total) {
                out.extend_from_slice(
                    format!("({n} of {total} rows shown; use --maxrows to see more)\n").as_bytes(),
                );
            }
        }
        PrintFormat::Table | PrintFormat::Automatic => {
            let shown = match max_rows {
                Some(n) if n < total => head(batches, n),
                _ => batches.to_vec(),
            };
            let text = pretty_format_batches_with_schema(schema.clone(), &shown)?;
            out.extend_from_slice(text.to_string().as_bytes());
            out.push(b'\n');
            if let Some(n) = max_rows.filter(|n| *n < total) {
                out.extend_from_slice(
                    format!("({n} of {total} rows shown; use --maxrows to see more)\n").as_bytes(),
                );
            }
        }
        PrintFormat::Csv | PrintFormat::Tsv => {
            let delimiter = if format == PrintFormat::Csv {
                b','
            } else {
                b'\t'
            };
            let mut writer = CsvWriterBuilder::new()
                .with_header(true)
                .with_delimiter(delimiter)
                .build(&mut out);
            if batches.is_empty() {
                writer.write(&flat(&RecordBatch::new_empty(schema.clone()))?)?;
            }
            for batch in batches {
                writer.write(&flat(batch)?)?;
            }
        }
        PrintFormat::Json => {
            if total == 0 {
                out.extend_from_slice(b"[]");
            } else {
                let mut writer = ArrayWriter::new(&mut out);
                for batch in batches {
                    writer.write(batch)?;
                }
                writer.finish()?;
            }
            out.push(b'\n');
        }
        PrintFormat::NdJson => {
            let mut writer = LineDelimitedWriter::new(&mut out);
            for batch in batches {
                writer.write(batch)?;
            }
            writer.finish()?;
        }
    }
    String::from_utf8(out).map_err(|e| Error::internal("output is not UTF-8").with_source(e))
}

/// `batch` with its nested columns (structs, lists, maps: `t$binlog`'s `before` and
/// `after`) as their text, as the table format shows them: CSV has no nested values.
fn flat(batch: &RecordBatch) -> Result<RecordBatch> {
    use datafusion::arrow::array::{ArrayRef, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| f.data_type().is_nested())
    {
        return Ok(batch.clone());
    }
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if !field.data_type().is_nested() {
            fields.push(field.as_ref().clone());
            columns.push(column.clone());
            continue;
        }
        let formatter = ArrayFormatter::try_new(column.as_ref(), &FormatOptions::default())?;
        let text: StringArray = (0..column.len())
            .map(|i| column.is_valid(i).then(|| formatter.value(i).to_string()))
            .collect();
        fields.push(Field::new(field.name(), DataType::Utf8, true));
        columns.push(std::sync::Arc::new(text));
    }
    Ok(RecordBatch::try_new(
        std::sync::Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// psql's expanded display: `-[ RECORD n ]-` then `column | value` per column.
fn expanded(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String> {
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    let width = schema
        .fields()
        .iter()
        .map(|f| f.name().chars().count())
        .max()
        .unwrap_or(0);
    let options = FormatOptions::default().with_null("NULL");
    let mut text = String::new();
    let mut record = 0;
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            record += 1;
            text.push_str(&format!("-[ RECORD {record} ]-\n"));
            for (field, formatter) in schema.fields().iter().zip(&formatters) {
                text.push_str(&format!(
                    "{:width$} | {}\n",
                    field.name(),
                    formatter.value(row)
                ));
            }
        }
    }
    if record == 0 {
        text.push_str("(0 rows)\n");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::Int64Array;

    use super::*;

    #[test]
    fn formats() {
        let batch =
            RecordBatch::try_from_iter(vec![("a", Arc::new(Int64Array::from(vec![1, 2])) as _)])
                .unwrap();
        let schema = batch.schema();
        let b = [batch];
        assert_eq!(
            format_batches(PrintFormat::Csv, &schema, &b, None).unwrap(),
            "a\n1\n2\n"
        );
        assert_eq!(
            format_batches(PrintFormat::NdJson, &schema, &b, None).unwrap(),
            "{\"a\":1}\n{\"a\":2}\n"
        );
        assert_eq!(
            format_batches(PrintFormat::Json, &schema, &b, None).unwrap(),
            "[{\"a\":1},{\"a\":2}]\n"
        );
        let t = format_batches(PrintFormat::Table, &schema, &b, Some(1)).unwrap();
        assert!(t.contains("(1 of 2 rows shown"), "{t}");
        assert_eq!(
            format_batches(PrintFormat::Expanded, &schema, &b, None).unwrap(),
            "-[ RECORD 1 ]-\na | 1\n-[ RECORD 2 ]-\na | 2\n"
        );
        assert_eq!(
            "nd-json".parse::<PrintFormat>().unwrap(),
            PrintFormat::NdJson
        );
        assert_eq!(
            "automatic".parse::<PrintFormat>().unwrap(),
            PrintFormat::Automatic
        );
    }
}
