//! Rendering results as text as their batches arrive: an aligned table, CSV, TSV, a
//! JSON array, newline-delimited JSON (the formats of datafusion-cli's `--format`),
//! or psql's expanded records.
//!
//! Memory stays bounded whatever the result's size: every format but the table
//! writes each batch as it comes. The table sizes its columns from its first
//! [`TABLE_SIZING_ROWS`] rows (as psql's `FETCH_COUNT` does); a result that fits is
//! printed exactly as DataFusion prints it, a longer one goes on in the same widths,
//! a later cell wider than its column cut to it and ending in `…` (CSV and JSON
//! show every value whole).

use std::fmt;
use std::io::Write;
use std::str::FromStr;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::csv::WriterBuilder as CsvWriterBuilder;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::json::writer::{LineDelimited, WriterBuilder as JsonWriterBuilder};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::arrow::util::pretty::pretty_format_batches_with_schema;
use unicode_width::UnicodeWidthStr;

use fluss_datafusion::error::{Error, Result};

/// Rows a table is sized from before it starts printing.
pub const TABLE_SIZING_ROWS: usize = 1_000;

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
    /// One JSON array of objects (NULLs as `null`, decimals as exact numbers).
    Json,
    /// One JSON object per line.
    NdJson,
    /// datafusion-cli's default: a table.
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

/// Whether a printer wants more rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// Send the next batch.
    More,
    /// The row limit is shown and a row beyond it was seen: stop reading.
    Enough,
}

/// What a printer printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Printed {
    /// Rows written.
    pub rows: usize,
    /// Whether it stopped at its row limit with rows left unread.
    pub cut: bool,
}

/// Prints one result's rows as their batches arrive.
pub struct ResultPrinter {
    format: PrintFormat,
    schema: SchemaRef,
    /// Rows the table and expanded formats show at most.
    max_rows: Option<usize>,
    rows: usize,
    cut: bool,
    table: TableState,
}

/// The table format's rows held to size the columns, or the widths once sized.
#[derive(Default)]
struct TableState {
    held: Vec<RecordBatch>,
    held_rows: usize,
    layout: Option<Layout>,
}

impl ResultPrinter {
    /// A printer of rows of `schema` in `format`. `max_rows` limits the rows the table
    /// and expanded formats show (machine-readable formats get every row).
    pub fn new(format: PrintFormat, schema: SchemaRef, max_rows: Option<usize>) -> Self {
        let limited = matches!(
            format,
            PrintFormat::Table | PrintFormat::Automatic | PrintFormat::Expanded
        );
        Self {
            format,
            schema,
            max_rows: max_rows.filter(|_| limited),
            rows: 0,
            cut: false,
            table: TableState::default(),
        }
    }

    /// Prints `batch` (or holds it, while a table is being sized).
    pub fn push(&mut self, batch: &RecordBatch, out: &mut dyn Write) -> Result<Wanted> {
        let room = self.max_rows.map_or(usize::MAX, |m| m - self.rows);
        let take = room.min(batch.num_rows());
        if take < batch.num_rows() {
            self.cut = true;
        }
        if take > 0 {
            let batch = batch.slice(0, take);
            let first = self.rows;
            self.rows += take;
            match self.format {
                PrintFormat::Table | PrintFormat::Automatic => self.push_table(batch, out)?,
                PrintFormat::Csv => write_delimited(&batch, b',', first == 0, out)?,
                PrintFormat::Tsv => write_delimited(&batch, b'\t', first == 0, out)?,
                PrintFormat::Json => write_json_array_rows(&batch, first == 0, out)?,
                PrintFormat::NdJson => write_json_lines(&batch, out)?,
                PrintFormat::Expanded => write_expanded(&self.schema, &batch, first, out)?,
            }
        }
        Ok(if self.cut {
            Wanted::Enough
        } else {
            Wanted::More
        })
    }

    /// Ends the output: a held table, a closing bracket, the note of a cut.
    pub fn finish(mut self, out: &mut dyn Write) -> Result<Printed> {
        match self.format {
            PrintFormat::Table | PrintFormat::Automatic => self.finish_table(out)?,
            PrintFormat::Csv | PrintFormat::Tsv if self.rows == 0 => {
                let delimiter = if self.format == PrintFormat::Csv {
                    b','
                } else {
                    b'\t'
                };
                write_delimited(
                    &RecordBatch::new_empty(self.schema.clone()),
                    delimiter,
                    true,
                    out,
                )?;
            }
            PrintFormat::Json => out.write_all(if self.rows == 0 { b"[]\n" } else { b"]\n" })?,
            PrintFormat::Expanded if self.rows == 0 => out.write_all(b"(0 rows)\n")?,
            _ => {}
        }
        if self.cut {
            writeln!(
                out,
                "(first {} rows shown; the rest was not read: --maxrows shows more)",
                self.rows
            )?;
        }
        Ok(Printed {
            rows: self.rows,
            cut: self.cut,
        })
    }

    fn push_table(&mut self, batch: RecordBatch, out: &mut dyn Write) -> Result<()> {
        if let Some(layout) = &self.table.layout {
            return layout.write_rows(&batch, out);
        }
        self.table.held_rows += batch.num_rows();
        self.table.held.push(batch);
        if self.table.held_rows > TABLE_SIZING_ROWS {
            let layout = Layout::of(&self.schema, &self.table.held)?;
            layout.write_header(out)?;
            for held in std::mem::take(&mut self.table.held) {
                layout.write_rows(&held, out)?;
            }
            self.table.layout = Some(layout);
        }
        Ok(())
    }

    fn finish_table(&mut self, out: &mut dyn Write) -> Result<()> {
        let layout = match self.table.layout.take() {
            Some(layout) => layout,
            None => {
                let held = std::mem::take(&mut self.table.held);
                let layout = Layout::of(&self.schema, &held)?;
                if !layout.open_last {
                    let text = pretty_format_batches_with_schema(self.schema.clone(), &held)?;
                    return Ok(writeln!(out, "{text}")?);
                }
                layout.write_header(out)?;
                for batch in &held {
                    layout.write_rows(batch, out)?;
                }
                layout
            }
        };
        layout.write_border(out)
    }
}

/// Column widths of a table, and whether its last column is left open: a column of
/// text over several lines (EXPLAIN's plans) is not padded to its longest line, so
/// no line is wider than its content.
struct Layout {
    names: Vec<String>,
    widths: Vec<usize>,
    open_last: bool,
}

impl Layout {
    fn of(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Self> {
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let mut widths: Vec<usize> = names.iter().map(|n| n.width()).collect();
        let mut multi_line_last = false;
        for batch in batches {
            for (i, column) in cells(batch)?.into_iter().enumerate() {
                for cell in column {
                    multi_line_last |= i + 1 == names.len() && cell.contains('\n');
                    let widest = cell.lines().map(UnicodeWidthStr::width).max();
                    widths[i] = widths[i].max(widest.unwrap_or(0));
                }
            }
        }
        if let (true, Some(last), Some(name)) = (multi_line_last, widths.last_mut(), names.last()) {
            *last = name.width();
        }
        Ok(Self {
            names,
            widths,
            open_last: multi_line_last,
        })
    }

    fn write_border(&self, out: &mut dyn Write) -> Result<()> {
        let mut line = String::from("+");
        for (i, width) in self.widths.iter().enumerate() {
            line.push_str(&"-".repeat(width + 2));
            if !(self.open_last && i + 1 == self.widths.len()) {
                line.push('+');
            }
        }
        Ok(writeln!(out, "{line}")?)
    }

    fn write_header(&self, out: &mut dyn Write) -> Result<()> {
        self.write_border(out)?;
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        self.write_line(&names, out)?;
        self.write_border(out)
    }

    fn write_rows(&self, batch: &RecordBatch, out: &mut dyn Write) -> Result<()> {
        let columns = cells(batch)?;
        for row in 0..batch.num_rows() {
            let lines: Vec<Vec<&str>> = columns
                .iter()
                .map(|c| c[row].trim_end_matches('\n').split('\n').collect())
                .collect();
            let height = lines.iter().map(Vec::len).max().unwrap_or(1);
            for i in 0..height {
                let parts: Vec<&str> = lines
                    .iter()
                    .map(|l| l.get(i).copied().unwrap_or(""))
                    .collect();
                self.write_line(&parts, out)?;
            }
        }
        Ok(())
    }

    /// One line of cells, each padded (or cut) to its column's width.
    fn write_line(&self, parts: &[&str], out: &mut dyn Write) -> Result<()> {
        let mut line = String::new();
        for (i, (part, width)) in parts.iter().zip(&self.widths).enumerate() {
            line.push_str("| ");
            if self.open_last && i + 1 == parts.len() {
                line.push_str(part);
                break;
            }
            let cell = fitted(part, *width);
            let pad = width.saturating_sub(cell.width());
            line.push_str(&cell);
            line.push_str(&" ".repeat(pad + 1));
            if i + 1 == parts.len() {
                line.push('|');
            }
        }
        Ok(writeln!(out, "{}", line.trim_end())?)
    }
}

/// `text` cut to `width` columns, its last one `…`, when it is wider.
fn fitted(text: &str, width: usize) -> std::borrow::Cow<'_, str> {
    if text.width() <= width {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut cut = String::new();
    let mut used = 1; // the `…`
    for c in text.chars() {
        used += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used > width {
            break;
        }
        cut.push(c);
    }
    cut.push('…');
    std::borrow::Cow::Owned(cut)
}

/// Each column's cells as text, as DataFusion's tables show them (NULL empty).
fn cells(batch: &RecordBatch) -> Result<Vec<Vec<String>>> {
    let options = FormatOptions::default().with_display_error(true);
    batch
        .columns()
        .iter()
        .map(|column| {
            let formatter = ArrayFormatter::try_new(column.as_ref(), &options)?;
            Ok((0..column.len())
                .map(|i| formatter.value(i).to_string())
                .collect())
        })
        .collect()
}

/// CSV or TSV rows of `batch`, after a header line when `header`.
fn write_delimited(
    batch: &RecordBatch,
    delimiter: u8,
    header: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let mut writer = CsvWriterBuilder::new()
        .with_header(header)
        .with_delimiter(delimiter)
        .build(out);
    Ok(writer.write(&flat(batch)?)?)
}

/// JSON objects of `batch`'s rows, one a line. NULLs are written as `null` (as
/// DuckDB does; arrow-json's default drops the key) and decimals as exact numbers
/// (`1.50`, every digit, as DuckDB and datafusion-cli do).
fn json_lines(batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut text = Vec::new();
    let mut writer = JsonWriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, LineDelimited>(&mut text);
    writer.write(batch)?;
    writer.finish()?;
    drop(writer);
    Ok(text)
}

fn write_json_lines(batch: &RecordBatch, out: &mut dyn Write) -> Result<()> {
    Ok(out.write_all(&json_lines(batch)?)?)
}

/// `batch`'s rows as elements of one JSON array, a row a line as DuckDB writes it:
/// `[` before the first, `,` and a line break between (so `head` and line readers
/// get rows as they come).
fn write_json_array_rows(batch: &RecordBatch, first: bool, out: &mut dyn Write) -> Result<()> {
    let text = json_lines(batch)?;
    for (i, line) in text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        out.write_all(if first && i == 0 { b"[" } else { b",\n" })?;
        out.write_all(line)?;
    }
    Ok(())
}

/// `batch` with its nested columns (structs, lists, maps: `t$binlog`'s `before` and
/// `after`) as their text, as the table format shows them: CSV has no nested values.
fn flat(batch: &RecordBatch) -> Result<RecordBatch> {
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
        columns.push(Arc::new(text));
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// psql's expanded display: `-[ RECORD n ]-` then `column | value` per column;
/// `before` records were printed already.
fn write_expanded(
    schema: &SchemaRef,
    batch: &RecordBatch,
    before: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let width = schema
        .fields()
        .iter()
        .map(|f| f.name().width())
        .max()
        .unwrap_or(0);
    let options = FormatOptions::default().with_null("NULL");
    let formatters = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    for row in 0..batch.num_rows() {
        writeln!(out, "-[ RECORD {} ]-", before + row + 1)?;
        for (field, formatter) in schema.fields().iter().zip(&formatters) {
            writeln!(out, "{:width$} | {}", field.name(), formatter.value(row))?;
        }
    }
    Ok(())
}

/// Renders `batches` (of `schema`) in `format`, at most `max_rows` of them in the
/// table and expanded formats.
#[cfg(test)]
fn format_batches(
    format: PrintFormat,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    max_rows: Option<usize>,
) -> Result<String> {
    let mut out = Vec::<u8>::new();
    let mut printer = ResultPrinter::new(format, schema.clone(), max_rows);
    for batch in batches {
        if printer.push(batch, &mut out)? == Wanted::Enough {
            break;
        }
    }
    printer.finish(&mut out)?;
    String::from_utf8(out).map_err(|e| Error::internal("output is not UTF-8").with_source(e))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Decimal128Array, Int64Array};

    use super::*;

    fn numbers(values: Vec<i64>) -> RecordBatch {
        RecordBatch::try_from_iter(vec![("a", Arc::new(Int64Array::from(values)) as _)]).unwrap()
    }

    #[test]
    fn formats() {
        let batch = numbers(vec![1, 2]);
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
            "[{\"a\":1},\n{\"a\":2}]\n"
        );
        assert_eq!(
            format_batches(PrintFormat::Json, &schema, &[], None).unwrap(),
            "[]\n"
        );
        assert_eq!(
            format_batches(PrintFormat::Csv, &schema, &[], None).unwrap(),
            "a\n"
        );
        let t = format_batches(PrintFormat::Table, &schema, &b, Some(1)).unwrap();
        assert!(t.contains("(first 1 rows shown"), "{t}");
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

    /// Rows over several batches print as one result: one header, one array.
    #[test]
    fn batches_join_into_one_result() {
        let b = [numbers(vec![1]), numbers(vec![2, 3])];
        let schema = b[0].schema();
        assert_eq!(
            format_batches(PrintFormat::Json, &schema, &b, None).unwrap(),
            "[{\"a\":1},\n{\"a\":2},\n{\"a\":3}]\n"
        );
        assert_eq!(
            format_batches(PrintFormat::Tsv, &schema, &b, None).unwrap(),
            "a\n1\n2\n3\n"
        );
        assert_eq!(
            format_batches(PrintFormat::Expanded, &schema, &b, Some(2)).unwrap(),
            "-[ RECORD 1 ]-\na | 1\n-[ RECORD 2 ]-\na | 2\n\
             (first 2 rows shown; the rest was not read: --maxrows shows more)\n"
        );
    }

    /// JSON keeps NULL keys and every digit of a decimal.
    #[test]
    fn json_writes_nulls_and_exact_decimals() {
        let price = Decimal128Array::from(vec![Some(150), None])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let batch = RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int64Array::from(vec![1, 2])) as _),
            ("price", Arc::new(price) as _),
        ])
        .unwrap();
        let schema = batch.schema();
        assert_eq!(
            format_batches(PrintFormat::NdJson, &schema, &[batch], None).unwrap(),
            "{\"id\":1,\"price\":1.50}\n{\"id\":2,\"price\":null}\n"
        );
    }

    /// A table longer than its sizing rows streams on in the first rows' widths,
    /// cutting a wider later cell, and matches DataFusion's own table up to there.
    #[test]
    fn a_long_table_keeps_the_widths_of_its_first_rows() {
        let first: Vec<i64> = (0..=TABLE_SIZING_ROWS as i64).map(|i| i % 10).collect();
        let b = [numbers(first), numbers(vec![7, 123_456])];
        let schema = b[0].schema();
        let text = format_batches(PrintFormat::Table, &schema, &b, None).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(&lines[..4], ["+---+", "| a |", "+---+", "| 0 |"]);
        assert_eq!(&lines[lines.len() - 3..], ["| 7 |", "| … |", "+---+"]);
        // header (3 lines), the sizing rows and one more, the two later rows, border
        assert_eq!(lines.len(), 3 + TABLE_SIZING_ROWS + 1 + 2 + 1);
    }

    /// A multi-line last column (EXPLAIN's plan) is not padded to its longest line.
    #[test]
    fn multi_line_cells_are_not_padded() {
        let batch = RecordBatch::try_from_iter(vec![
            (
                "plan_type",
                Arc::new(StringArray::from(vec!["physical_plan"])) as _,
            ),
            (
                "plan",
                Arc::new(StringArray::from(vec![format!(
                    "short\n{}",
                    "x".repeat(300)
                )])) as _,
            ),
        ])
        .unwrap();
        let schema = batch.schema();
        let text = format_batches(PrintFormat::Table, &schema, &[batch], None).unwrap();
        assert_eq!(
            text,
            format!(
                "+---------------+------\n| plan_type     | plan\n+---------------+------\n\
                 | physical_plan | short\n|               | {}\n+---------------+------\n",
                "x".repeat(300)
            )
        );
    }
}
