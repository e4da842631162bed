//! The V1 statistics block: per-column null counts and min/max bounds of one batch.
//!
//! Binary layout (apache/fluss `LogRecordBatchStatisticsWriter.java`,
//! `LogRecordBatchStatisticsParser.java`; `docs/reference/fluss-formats.md` §1.6), little-endian:
//!
//! ```text
//! u8 version = 1 | i16 N | N x i16 column index | N x i32 null count
//! i32 min row size | min AlignedRow (N fields) | i32 max row size | max AlignedRow
//! ```
//! Column indexes point into the full row type of the batch's schema id. Bounds follow
//! Java's natural order (`Float.compare`: NaN above +inf, -0.0 below 0.0; strings
//! bytewise), and an all-null column has null bounds. Java's collector has no `CHAR`
//! case, so CHAR columns get null bounds here too (byte-compatible output).
//!
//! Parsed bounds become DataFusion [`ScalarValue`]s of the column's Arrow type so that
//! `PruningPredicate` can decide whether a
//! batch can hold matching rows.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::compute::kernels::aggregate;
use datafusion::arrow::datatypes::{
    DataType as ArrowType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use datafusion::scalar::ScalarValue;
use fluss::metadata::{DataType, RowType};

use super::aligned_row::{AlignedRowReader, AlignedRowWriter};
use super::format::{read_i16, read_i32, read_u8};
use crate::error::{Error, Result};

/// Version byte leading every statistics block.
pub const STATISTICS_VERSION: u8 = 1;

/// Table property naming the columns that carry statistics (`*` = all supported).
pub const STATISTICS_COLUMNS_PROPERTY: &str = "table.statistics.columns";

/// Statistics of one column within one batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStatistics {
    /// Number of nulls in the batch.
    pub null_count: i64,
    /// Smallest non-null value, `None` when all values are null or unknown.
    pub min: Option<ScalarValue>,
    /// Largest non-null value, `None` when all values are null or unknown.
    pub max: Option<ScalarValue>,
}

/// Parsed statistics of one batch, indexed by the position in the full row type.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchStatistics {
    columns: Vec<Option<ColumnStatistics>>,
}

impl BatchStatistics {
    /// Statistics of column `index` of the full row, `None` if not collected.
    pub fn column(&self, index: usize) -> Option<&ColumnStatistics> {
        self.columns.get(index).and_then(|c| c.as_ref())
    }

    /// Number of columns of the row type the statistics describe.
    pub fn num_columns(&self) -> usize {
        self.columns.len()
    }

    /// Parses a statistics block written for a batch of `row_type`.
    pub fn parse(bytes: &[u8], row_type: &RowType) -> Result<Self> {
        let version = read_u8(bytes, 0)?;
        if version != STATISTICS_VERSION {
            return Err(Error::data_invalid(format!(
                "unsupported statistics version {version} (expected {STATISTICS_VERSION})"
            )));
        }
        let count = read_i16(bytes, 1)?;
        if count < 0 {
            return Err(Error::data_invalid(format!(
                "negative statistics column count {count}"
            )));
        }
        let count = count as usize;
        let fields = row_type.fields();
        let mut indexes = Vec::with_capacity(count);
        for i in 0..count {
            let index = read_i16(bytes, 3 + 2 * i)?;
            if index < 0 || index as usize >= fields.len() {
                return Err(Error::data_invalid(format!(
                    "statistics column index {index} out of range for {} columns",
                    fields.len()
                )));
            }
            indexes.push(index as usize);
        }
        let mut null_counts = Vec::with_capacity(count);
        for i in 0..count {
            null_counts.push(read_i32(bytes, 3 + 2 * count + 4 * i)?);
        }
        let mut pos = 3 + 6 * count;
        let min_row = read_row(bytes, &mut pos)?;
        let max_row = read_row(bytes, &mut pos)?;
        let types: Vec<&DataType> = indexes.iter().map(|&i| fields[i].data_type()).collect();
        let bound = |row: Option<&[u8]>, i: usize| -> Result<Option<ScalarValue>> {
            match row {
                None => Ok(None),
                Some(row) => {
                    let reader = AlignedRowReader::new(row, count)?;
                    read_bound(&reader, i, types[i])
                }
            }
        };
        let mut columns = vec![None; fields.len()];
        for (i, &index) in indexes.iter().enumerate() {
            columns[index] = Some(ColumnStatistics {
                null_count: null_counts[i] as i64,
                min: bound(min_row, i)?,
                max: bound(max_row, i)?,
            });
        }
        Ok(Self { columns })
    }

    /// Computes and serializes statistics of `batch` for the columns in `mapping`
    /// (positions in `row_type`, ascending). `None` for an empty batch or mapping.
    pub fn serialize(
        batch: &RecordBatch,
        row_type: &RowType,
        mapping: &[usize],
    ) -> Result<Option<Vec<u8>>> {
        if mapping.is_empty() || batch.num_rows() == 0 {
            return Ok(None);
        }
        let fields = row_type.fields();
        if batch.num_columns() != fields.len() {
            return Err(Error::invalid_input(format!(
                "statistics need a batch of the full row type: {} columns for {} fields",
                batch.num_columns(),
                fields.len()
            )));
        }
        let mut out = Vec::new();
        out.push(STATISTICS_VERSION);
        out.extend_from_slice(&(mapping.len() as i16).to_le_bytes());
        for &index in mapping {
            if index >= fields.len() {
                return Err(Error::invalid_input(format!(
                    "statistics column {index} out of range"
                )));
            }
            out.extend_from_slice(&(index as i16).to_le_bytes());
        }
        for &index in mapping {
            out.extend_from_slice(&(batch.column(index).null_count() as i32).to_le_bytes());
        }
        let mut bounds = Vec::with_capacity(mapping.len());
        for &index in mapping {
            bounds.push(column_bounds(
                batch.column(index),
                fields[index].data_type(),
            )?);
        }
        for pick_max in [false, true] {
            let mut row = AlignedRowWriter::new(mapping.len());
            for (i, b) in bounds.iter().enumerate() {
                match b {
                    None => row.set_null(i),
                    Some((min, max)) => {
                        let value = if pick_max { max } else { min };
                        write_bound(&mut row, i, value, fields[mapping[i]].data_type())?;
                    }
                }
            }
            let row = row.finish();
            out.extend_from_slice(&(row.len() as i32).to_le_bytes());
            out.extend_from_slice(&row);
        }
        Ok(Some(out))
    }
}

/// Whether Fluss collects statistics for a column of this type.
pub fn is_supported_statistics_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Boolean(_)
            | DataType::TinyInt(_)
            | DataType::SmallInt(_)
            | DataType::Int(_)
            | DataType::BigInt(_)
            | DataType::Float(_)
            | DataType::Double(_)
            | DataType::String(_)
            | DataType::Char(_)
            | DataType::Decimal(_)
            | DataType::Date(_)
            | DataType::Time(_)
            | DataType::Timestamp(_)
            | DataType::TimestampLTz(_)
    )
}

/// Resolves `table.statistics.columns` to ascending column positions.
/// Unset means no statistics; `*` means every supported column.
pub fn statistics_column_mapping(property: Option<&str>, row_type: &RowType) -> Result<Vec<usize>> {
    let Some(value) = property.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(Vec::new());
    };
    let fields = row_type.fields();
    if value == "*" {
        return Ok(fields
            .iter()
            .enumerate()
            .filter(|(_, f)| is_supported_statistics_type(f.data_type()))
            .map(|(i, _)| i)
            .collect());
    }
    let mut mapping = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let index = fields
            .iter()
            .position(|f| f.name() == name)
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "statistics column '{name}' is not a column of the table"
                ))
            })?;
        if !is_supported_statistics_type(fields[index].data_type()) {
            return Err(Error::invalid_input(format!(
                "statistics are not supported for column '{name}' of type {}",
                fields[index].data_type()
            )));
        }
        mapping.push(index);
    }
    mapping.sort_unstable();
    mapping.dedup();
    Ok(mapping)
}

fn read_row<'a>(bytes: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>> {
    let size = read_i32(bytes, *pos)?;
    *pos += 4;
    if size < 0 {
        return Err(Error::data_invalid(format!(
            "negative statistics row size {size}"
        )));
    }
    if size == 0 {
        return Ok(None);
    }
    let end = *pos + size as usize;
    let row = bytes.get(*pos..end).ok_or_else(|| {
        Error::data_invalid(format!(
            "statistics row of {size} bytes at position {pos} runs past the block of {} bytes",
            bytes.len()
        ))
    })?;
    *pos = end;
    Ok(Some(row))
}

fn time_unit_for_precision(precision: u32) -> TimeUnit {
    match precision {
        0 => TimeUnit::Second,
        1..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        _ => TimeUnit::Nanosecond,
    }
}

fn timestamp_scalar(millis: i64, nanos: i32, precision: u32, tz: Option<Arc<str>>) -> ScalarValue {
    match time_unit_for_precision(precision) {
        TimeUnit::Second => ScalarValue::TimestampSecond(Some(millis.div_euclid(1000)), tz),
        TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(Some(millis), tz),
        TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(
            Some(
                millis
                    .saturating_mul(1000)
                    .saturating_add((nanos / 1000) as i64),
            ),
            tz,
        ),
        TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(
            Some(
                millis
                    .saturating_mul(1_000_000)
                    .saturating_add(nanos as i64),
            ),
            tz,
        ),
    }
}

fn read_bound(row: &AlignedRowReader<'_>, i: usize, ty: &DataType) -> Result<Option<ScalarValue>> {
    if row.is_null(i)? {
        return Ok(None);
    }
    let value = match ty {
        DataType::Boolean(_) => ScalarValue::Boolean(Some(row.get_bool(i)?)),
        DataType::TinyInt(_) => ScalarValue::Int8(Some(row.get_i8(i)?)),
        DataType::SmallInt(_) => ScalarValue::Int16(Some(row.get_i16(i)?)),
        DataType::Int(_) => ScalarValue::Int32(Some(row.get_i32(i)?)),
        DataType::BigInt(_) => ScalarValue::Int64(Some(row.get_i64(i)?)),
        DataType::Float(_) => ScalarValue::Float32(Some(row.get_f32(i)?)),
        DataType::Double(_) => ScalarValue::Float64(Some(row.get_f64(i)?)),
        DataType::String(_) | DataType::Char(_) => {
            ScalarValue::Utf8(Some(row.get_str(i)?.to_string()))
        }
        DataType::Decimal(d) => ScalarValue::Decimal128(
            Some(row.get_decimal(i, d.precision())?),
            d.precision() as u8,
            d.scale() as i8,
        ),
        DataType::Date(_) => ScalarValue::Date32(Some(row.get_i32(i)?)),
        DataType::Time(t) => {
            let millis = row.get_i32(i)?;
            match time_unit_for_precision(t.precision()) {
                TimeUnit::Second => ScalarValue::Time32Second(Some(millis / 1000)),
                TimeUnit::Millisecond => ScalarValue::Time32Millisecond(Some(millis)),
                TimeUnit::Microsecond => ScalarValue::Time64Microsecond(Some(millis as i64 * 1000)),
                TimeUnit::Nanosecond => {
                    ScalarValue::Time64Nanosecond(Some(millis as i64 * 1_000_000))
                }
            }
        }
        DataType::Timestamp(t) => {
            let (millis, nanos) = row.get_timestamp(i, t.precision())?;
            timestamp_scalar(millis, nanos, t.precision(), None)
        }
        DataType::TimestampLTz(t) => {
            let (millis, nanos) = row.get_timestamp(i, t.precision())?;
            timestamp_scalar(millis, nanos, t.precision(), Some("UTC".into()))
        }
        other => {
            return Err(Error::data_invalid(format!(
                "statistics present for unsupported type {other}"
            )));
        }
    };
    Ok(Some(value))
}

/// One column's bound, in the representation the aligned row writer needs.
#[derive(Debug, Clone)]
enum Bound {
    Bool(bool),
    Int(i64),
    Float32(f32),
    Float64(f64),
    Str(String),
    Decimal(i128),
    Timestamp(i64, i32),
}

/// Java's `Float.compare` / `Double.compare` order: NaN above everything, -0.0 < 0.0.
fn java_float_cmp(a: f64, b: f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

fn float_bounds<T: Copy + Into<f64>>(values: impl Iterator<Item = Option<T>>) -> Option<(T, T)> {
    let mut bounds: Option<(T, T)> = None;
    for v in values.flatten() {
        bounds = Some(match bounds {
            None => (v, v),
            Some((min, max)) => (
                if java_float_cmp(v.into(), min.into()).is_lt() {
                    v
                } else {
                    min
                },
                if java_float_cmp(v.into(), max.into()).is_gt() {
                    v
                } else {
                    max
                },
            ),
        });
    }
    bounds
}

fn int_bounds(values: impl Iterator<Item = Option<i64>>) -> Option<(Bound, Bound)> {
    let (mut min, mut max) = (None::<i64>, None::<i64>);
    for v in values.flatten() {
        min = Some(min.map_or(v, |m| m.min(v)));
        max = Some(max.map_or(v, |m| m.max(v)));
    }
    Some((Bound::Int(min?), Bound::Int(max?)))
}

fn mismatch(column: &dyn Array, ty: &DataType) -> Error {
    Error::invalid_input(format!(
        "arrow column of type {} does not match the table column type {ty}",
        column.data_type()
    ))
}

/// Nanoseconds-per-unit helpers to turn an Arrow timestamp into (millis, nano of milli).
fn split_timestamp(value: i64, unit: TimeUnit) -> (i64, i32) {
    match unit {
        TimeUnit::Second => (value.saturating_mul(1000), 0),
        TimeUnit::Millisecond => (value, 0),
        TimeUnit::Microsecond => (
            value.div_euclid(1000),
            (value.rem_euclid(1000) * 1000) as i32,
        ),
        TimeUnit::Nanosecond => (
            value.div_euclid(1_000_000),
            value.rem_euclid(1_000_000) as i32,
        ),
    }
}

fn column_bounds(column: &ArrayRef, ty: &DataType) -> Result<Option<(Bound, Bound)>> {
    let column = column.as_ref();
    macro_rules! ints {
        ($arr:ty) => {{
            let a = column
                .as_any()
                .downcast_ref::<$arr>()
                .ok_or_else(|| mismatch(column, ty))?;
            Ok(int_bounds(a.iter().map(|v| v.map(|v| v as i64))))
        }};
    }
    match ty {
        DataType::Boolean(_) => {
            let a = column
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| mismatch(column, ty))?;
            Ok(aggregate::min_boolean(a)
                .zip(aggregate::max_boolean(a))
                .map(|(min, max)| (Bound::Bool(min), Bound::Bool(max))))
        }
        DataType::TinyInt(_) => ints!(Int8Array),
        DataType::SmallInt(_) => ints!(Int16Array),
        DataType::Int(_) => ints!(Int32Array),
        DataType::BigInt(_) => ints!(Int64Array),
        DataType::Date(_) => ints!(Date32Array),
        DataType::Float(_) => {
            let a = column
                .as_any()
                .downcast_ref::<Float32Array>()
                .ok_or_else(|| mismatch(column, ty))?;
            Ok(float_bounds(a.iter()).map(|(l, h)| (Bound::Float32(l), Bound::Float32(h))))
        }
        DataType::Double(_) => {
            let a = column
                .as_any()
                .downcast_ref::<Float64Array>()
                .ok_or_else(|| mismatch(column, ty))?;
            Ok(float_bounds(a.iter()).map(|(l, h)| (Bound::Float64(l), Bound::Float64(h))))
        }
        // Java's collector has no CHAR case: CHAR bounds stay null.
        DataType::Char(_) => Ok(None),
        DataType::String(_) => {
            let a = column
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| mismatch(column, ty))?;
            Ok(aggregate::min_string(a)
                .zip(aggregate::max_string(a))
                .map(|(l, h)| (Bound::Str(l.to_string()), Bound::Str(h.to_string()))))
        }
        DataType::Decimal(_) => {
            let a = column
                .as_any()
                .downcast_ref::<Decimal128Array>()
                .ok_or_else(|| mismatch(column, ty))?;
            Ok(aggregate::min(a)
                .zip(aggregate::max(a))
                .map(|(l, h)| (Bound::Decimal(l), Bound::Decimal(h))))
        }
        DataType::Time(_) => {
            let millis: Vec<Option<i64>> = match column.data_type() {
                ArrowType::Time32(TimeUnit::Second) => column
                    .as_primitive::<datafusion::arrow::datatypes::Time32SecondType>()
                    .iter()
                    .map(|v| v.map(|v| v as i64 * 1000))
                    .collect(),
                ArrowType::Time32(_) => column
                    .as_primitive::<datafusion::arrow::datatypes::Time32MillisecondType>()
                    .iter()
                    .map(|v| v.map(|v| v as i64))
                    .collect(),
                ArrowType::Time64(TimeUnit::Microsecond) => column
                    .as_primitive::<datafusion::arrow::datatypes::Time64MicrosecondType>()
                    .iter()
                    .map(|v| v.map(|v| v / 1000))
                    .collect(),
                ArrowType::Time64(_) => column
                    .as_primitive::<datafusion::arrow::datatypes::Time64NanosecondType>()
                    .iter()
                    .map(|v| v.map(|v| v / 1_000_000))
                    .collect(),
                _ => return Err(mismatch(column, ty)),
            };
            Ok(int_bounds(millis.into_iter()))
        }
        DataType::Timestamp(_) | DataType::TimestampLTz(_) => {
            let ArrowType::Timestamp(unit, _) = column.data_type() else {
                return Err(mismatch(column, ty));
            };
            let values: Vec<Option<i64>> = match unit {
                TimeUnit::Second => column
                    .as_primitive::<TimestampSecondType>()
                    .iter()
                    .collect(),
                TimeUnit::Millisecond => column
                    .as_primitive::<TimestampMillisecondType>()
                    .iter()
                    .collect(),
                TimeUnit::Microsecond => column
                    .as_primitive::<TimestampMicrosecondType>()
                    .iter()
                    .collect(),
                TimeUnit::Nanosecond => column
                    .as_primitive::<TimestampNanosecondType>()
                    .iter()
                    .collect(),
            };
            let (mut min, mut max) = (None::<i64>, None::<i64>);
            for v in values.into_iter().flatten() {
                min = Some(min.map_or(v, |m| m.min(v)));
                max = Some(max.map_or(v, |m| m.max(v)));
            }
            Ok(min.zip(max).map(|(l, h)| {
                let (lm, ln) = split_timestamp(l, *unit);
                let (hm, hn) = split_timestamp(h, *unit);
                (Bound::Timestamp(lm, ln), Bound::Timestamp(hm, hn))
            }))
        }
        _ => Ok(None),
    }
}

fn write_bound(row: &mut AlignedRowWriter, i: usize, bound: &Bound, ty: &DataType) -> Result<()> {
    match (bound, ty) {
        (Bound::Bool(v), _) => row.write_bool(i, *v),
        (Bound::Int(v), DataType::TinyInt(_)) => row.write_i8(i, *v as i8),
        (Bound::Int(v), DataType::SmallInt(_)) => row.write_i16(i, *v as i16),
        (Bound::Int(v), DataType::Int(_) | DataType::Date(_) | DataType::Time(_)) => {
            row.write_i32(i, *v as i32)
        }
        (Bound::Int(v), _) => row.write_i64(i, *v),
        (Bound::Float32(v), _) => row.write_f32(i, *v),
        (Bound::Float64(v), _) => row.write_f64(i, *v),
        (Bound::Str(v), _) => row.write_binary(i, v.as_bytes()),
        (Bound::Decimal(v), DataType::Decimal(d)) => row.write_decimal(i, *v, d.precision()),
        (Bound::Timestamp(millis, nanos), DataType::Timestamp(t)) => {
            row.write_timestamp(i, *millis, *nanos, t.precision())
        }
        (Bound::Timestamp(millis, nanos), DataType::TimestampLTz(t)) => {
            row.write_timestamp(i, *millis, *nanos, t.precision())
        }
        (b, ty) => {
            return Err(Error::internal(format!(
                "bound {b:?} does not fit column type {ty}"
            )));
        }
    }
    Ok(())
}
