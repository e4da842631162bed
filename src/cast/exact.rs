//! Writing a value into a column exactly: converted only when the column then holds
//! the same value, never rounded, truncated, cut or wrapped. Flink's strict cast and
//! Fluss's writers keep what was written; a value that does not fit (too many
//! fractional digits for the scale, out of range, a fraction into an integer) is an
//! error naming the column and the value.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, new_null_array};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::compute::kernels::cmp::distinct;
use std::ops::Not;

use datafusion::arrow::datatypes::{
    DataType, Decimal32Type, Decimal64Type, Decimal128Type, Decimal256Type, DecimalType, Field,
    Float64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use fluss::metadata::DataType as FlussType;

use super::column_as;
use crate::error::{Error, ErrorKind, Result};

/// `column` written into `field`, whose declared Fluss type is `declared` when the
/// caller knows it (it bounds what the Arrow type does not: a `CHAR`'s length, a
/// time's digits). Cast as [`column_as`] does, with the checks a plain cast lacks:
///
/// - a value never becomes NULL (text that is not a date, a number out of range);
/// - integers and decimals hold each value exactly, text read as a number with all
///   its digits first, so `'1.005'` into `DECIMAL(15, 2)` fails as `1.005` does;
/// - a floating point column takes the nearest value, but never an infinity for a
///   finite value (`1e40` into `FLOAT`);
/// - timestamps and times keep every fractional digit, and a timestamp becomes a
///   date or a time of day only through a `CAST` ([`super::temporal`]);
/// - `CHAR(n)` and `BINARY(n)` take at most `n` characters or bytes
///   ([`super::fixed`]).
pub(crate) fn written_as(
    column: &ArrayRef,
    field: &Field,
    declared: Option<&FlussType>,
) -> Result<ArrayRef> {
    let target = field.data_type();
    let shown_type = declared.map_or_else(|| sql_type(target), declared_name);
    // logical: a `NullArray` (an untyped `NULL` in VALUES) has no null buffer
    if column.logical_null_count() == column.len() {
        return Ok(if column.data_type() == target {
            column.clone()
        } else {
            new_null_array(target, column.len())
        });
    }
    if let Some(precision) = time_precision(declared, target) {
        super::temporal::check(column, field, precision, &shown_type)?;
    }
    match (declared, target) {
        (Some(FlussType::Char(char_type)), _) => {
            let length = char_type.length() as usize;
            super::fixed::check_char(column, field, length, &shown_type)?;
        }
        (_, DataType::FixedSizeBinary(length)) if column.data_type() != target => {
            return super::fixed::binary(column, field, *length, &shown_type);
        }
        _ => {}
    }
    if column.data_type() == target {
        return Ok(column.clone());
    }
    let exact = holds_exact_numbers(target);
    let number = match column.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View if exact => {
            Some(never_null(column, &TEXT_AS_NUMBER, field, column)?)
        }
        // A float is the number its shortest decimal spelling says (`1e28`, `0.1`):
        // Arrow's float-to-decimal cast multiplies in floating point, and the nearest
        // double of what it stores compares equal to what was written.
        DataType::Float16 | DataType::Float32 | DataType::Float64 if exact => {
            let text = cast(column, &DataType::Utf8)?;
            Some(never_null(&text, &TEXT_AS_NUMBER, field, column)?)
        }
        _ => None,
    };
    let from = number.as_ref().unwrap_or(column);
    let converted = never_null(from, target, field, column)?;
    if matches!(
        target,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    ) {
        never_infinite(column, &converted, field, &shown_type)?;
        return Ok(converted);
    }
    if !exact {
        return Ok(converted);
    }
    // Arrow's decimal casts keep a value that fits the integer but not the precision
    // (`10^28` into `DECIMAL(38, 10)` becomes `10^38`, 39 digits): out of range.
    if let Some(row) = past_precision(&converted) {
        return Err(Error::invalid_input(format!(
            "value {} cannot be written to column '{}' {shown_type}: it is out of range",
            shown(column, row)?,
            field.name()
        )));
    }
    // A cast keeps the value or changes it (rounds, truncates): cast back, only a
    // kept value compares equal to what was written.
    let back = cast(&converted, from.data_type())?;
    let changed = distinct(from, &back)?;
    match (0..changed.len()).find(|&i| changed.is_valid(i) && changed.value(i)) {
        None => Ok(converted),
        Some(row) => Err(Error::invalid_input(format!(
            "value {} does not fit column '{}' {shown_type} exactly: it would be stored as {} \
             (values are stored as written, never rounded or truncated; to store it \
             rounded, say so: CAST(value AS type) or ROUND(value, scale))",
            shown(column, row)?,
            field.name(),
            shown(&converted, row)?
        ))),
    }
}

/// `column` written into `field` when its Fluss type is not at hand: the Arrow type's
/// own bounds ([`written_as`]).
pub(crate) fn exactly_as(column: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    written_as(column, field, None)
}

/// The first row of a decimal column whose value has more digits than its precision.
fn past_precision(column: &ArrayRef) -> Option<usize> {
    fn first<T: DecimalType>(column: &ArrayRef, precision: u8) -> Option<usize> {
        let values = column.as_primitive::<T>();
        (0..values.len()).find(|&i| {
            values.is_valid(i) && T::is_valid_decimal_precision(values.value(i), precision).not()
        })
    }
    match column.data_type() {
        DataType::Decimal32(p, _) => first::<Decimal32Type>(column, *p),
        DataType::Decimal64(p, _) => first::<Decimal64Type>(column, *p),
        DataType::Decimal128(p, _) => first::<Decimal128Type>(column, *p),
        DataType::Decimal256(p, _) => first::<Decimal256Type>(column, *p),
        _ => None,
    }
}

/// The digits of the second a timestamp or time column holds: its declared
/// precision, else its Arrow unit's.
fn time_precision(declared: Option<&FlussType>, target: &DataType) -> Option<u32> {
    match declared {
        Some(FlussType::Timestamp(t)) => return Some(t.precision()),
        Some(FlussType::TimestampLTz(t)) => return Some(t.precision()),
        Some(FlussType::Time(t)) => return Some(t.precision()),
        _ => {}
    }
    match target {
        DataType::Timestamp(unit, _) | DataType::Time32(unit) | DataType::Time64(unit) => {
            Some(super::temporal::unit_digits(*unit))
        }
        DataType::Date32 | DataType::Date64 => Some(0),
        _ => None,
    }
}

/// A finite value that became an infinity (`1e40` into `FLOAT`) is an error; an
/// infinity written as one (a float's, or the text `inf`, `Infinity`) is kept.
fn never_infinite(
    written: &ArrayRef,
    converted: &ArrayRef,
    field: &Field,
    shown_type: &str,
) -> Result<()> {
    let as_f64 = cast(converted, &DataType::Float64)?;
    let values = as_f64.as_primitive::<Float64Type>();
    let infinite =
        (0..values.len()).filter(|&i| values.is_valid(i) && values.value(i).is_infinite());
    let written_f64 = match written.data_type() {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            Some(cast(written, &DataType::Float64)?)
        }
        _ => None,
    };
    let text = match written.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Some(cast(written, &DataType::Utf8)?)
        }
        _ => None,
    };
    for row in infinite {
        let spelled = match (&written_f64, &text) {
            (Some(f), _) => f.as_primitive::<Float64Type>().value(row).is_infinite(),
            (None, Some(t)) => {
                let word = t.as_string::<i32>().value(row).trim().to_ascii_lowercase();
                let word = word.trim_start_matches(['+', '-']);
                word == "inf" || word == "infinity"
            }
            (None, None) => false,
        };
        if !spelled {
            return Err(Error::invalid_input(format!(
                "value {} is out of range of column '{}' {shown_type}: it would be stored as \
                 {} (an infinity is stored only when one is written)",
                shown(written, row)?,
                field.name(),
                shown(converted, row)?
            )));
        }
    }
    Ok(())
}

/// The name a Fluss type is declared with, without its nullability.
fn declared_name(declared: &FlussType) -> String {
    declared
        .to_string()
        .trim_end_matches(" NOT NULL")
        .to_string()
}

/// `column` cast to `to`, or an error naming the first of `written`'s values that the
/// cast turned into NULL (out of range, or not a value of that type).
fn never_null(
    column: &ArrayRef,
    to: &DataType,
    field: &Field,
    written: &ArrayRef,
) -> Result<ArrayRef> {
    let as_to = Field::new(field.name(), to.clone(), true);
    let converted = column_as(column, &as_to, ErrorKind::InvalidInput, "written")?;
    if converted.logical_null_count() == column.logical_null_count() {
        return Ok(converted);
    }
    let (was, is) = (column.logical_nulls(), converted.logical_nulls());
    let null = |nulls: &Option<NullBuffer>, i: usize| nulls.as_ref().is_some_and(|n| n.is_null(i));
    let row = (0..column.len())
        .find(|&i| !null(&was, i) && null(&is, i))
        .unwrap_or_default();
    Err(Error::invalid_input(format!(
        "value {} cannot be written to column '{}' {}: it is out of range or not a value \
         of that type",
        shown(written, row)?,
        field.name(),
        sql_type(field.data_type())
    )))
}

/// Row `row` of `array` as text.
pub(super) fn shown(array: &ArrayRef, row: usize) -> Result<String> {
    Ok(
        ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())?
            .value(row)
            .to_string(),
    )
}

/// How text is read before it is written into a number column: every digit of any
/// value an integer or decimal column can hold.
const TEXT_AS_NUMBER: DataType = DataType::Decimal256(76, 38);

/// Types whose values are exact numbers (floating point columns take the nearest).
fn holds_exact_numbers(data_type: &DataType) -> bool {
    data_type.is_integer()
        || matches!(
            data_type,
            DataType::Decimal32(..)
                | DataType::Decimal64(..)
                | DataType::Decimal128(..)
                | DataType::Decimal256(..)
        )
}

/// The SQL name users wrote the column type with.
pub(super) fn sql_type(data_type: &DataType) -> String {
    match data_type {
        DataType::Int8 => "TINYINT".into(),
        DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INT".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
            format!("DECIMAL({p}, {s})")
        }
        DataType::Decimal256(p, s) => format!("DECIMAL({p}, {s})"),
        DataType::Float32 => "FLOAT".into(),
        DataType::Float64 => "DOUBLE".into(),
        DataType::Date32 | DataType::Date64 => "DATE".into(),
        DataType::Timestamp(unit, None) => {
            format!("TIMESTAMP({})", super::temporal::unit_digits(*unit))
        }
        DataType::Timestamp(unit, Some(_)) => {
            format!("TIMESTAMP_LTZ({})", super::temporal::unit_digits(*unit))
        }
        DataType::Time32(unit) | DataType::Time64(unit) => {
            format!("TIME({})", super::temporal::unit_digits(*unit))
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "STRING".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "BYTES".into(),
        DataType::FixedSizeBinary(n) => format!("BINARY({n})"),
        DataType::Boolean => "BOOLEAN".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Decimal128Array, Float64Array, Int64Array, StringArray};

    use super::*;

    fn decimal(values: &[Option<i128>], precision: u8, scale: i8) -> ArrayRef {
        Arc::new(
            Decimal128Array::from(values.to_vec())
                .with_precision_and_scale(precision, scale)
                .expect("valid precision"),
        )
    }

    fn message(column: ArrayRef, field: &Field) -> String {
        exactly_as(&column, field)
            .expect_err("the value does not fit")
            .to_string()
    }

    #[test]
    fn decimals_keep_every_digit_or_fail() {
        let column = Field::new("price", DataType::Decimal128(15, 2), true);
        let fits = exactly_as(&decimal(&[Some(1500), None], 4, 3), &column).expect("1.500 fits");
        assert_eq!(fits.as_ref(), decimal(&[Some(150), None], 15, 2).as_ref());
        let error = message(decimal(&[Some(1500), Some(1005)], 4, 3), &column);
        assert!(error.contains("value 1.005"), "{error}");
        assert!(error.contains("'price' DECIMAL(15, 2)"), "{error}");
        assert!(
            error.contains("stored as 1.01") || error.contains("stored as 1.00"),
            "{error}"
        );
        let wide = decimal(&[Some(123_456_789_012_345_678_900_123_456_789)], 30, 10);
        let column = Field::new("d", DataType::Decimal128(38, 10), true);
        let kept = exactly_as(&wide, &column).expect("fits");
        assert_eq!(
            kept.as_ref(),
            decimal(&[Some(123_456_789_012_345_678_900_123_456_789)], 38, 10).as_ref()
        );
        let small = Field::new("d", DataType::Decimal128(5, 2), true);
        assert!(message(decimal(&[Some(1_000_000)], 9, 2), &small).contains("out of range"));
    }

    #[test]
    fn integers_take_no_fraction_and_no_overflow() {
        let column = Field::new("n", DataType::Int32, true);
        let error = message(decimal(&[Some(27)], 2, 1), &column);
        assert!(
            error.contains("value 2.7 does not fit column 'n' INT"),
            "{error}"
        );
        assert!(error.contains("stored as 2"), "{error}");
        let whole = exactly_as(&decimal(&[Some(20)], 2, 1), &column).expect("2.0 is 2");
        assert_eq!(whole.data_type(), &DataType::Int32);
        let big: ArrayRef = Arc::new(Int64Array::from(vec![1, 1 << 40]));
        assert!(message(big, &column).contains("out of range"));
        let float: ArrayRef = Arc::new(Float64Array::from(vec![2.5]));
        assert!(message(float, &column).contains("value 2.5"));
    }

    #[test]
    fn text_is_read_with_all_its_digits() {
        let column = Field::new("price", DataType::Decimal128(15, 2), true);
        let text: ArrayRef = Arc::new(StringArray::from(vec!["1.25", "1.005"]));
        assert!(message(text, &column).contains("value 1.005"));
        let text: ArrayRef = Arc::new(StringArray::from(vec!["12", "twelve"]));
        let error = message(text, &column);
        assert!(error.contains("value twelve cannot be written"), "{error}");
        let ok: ArrayRef = Arc::new(StringArray::from(vec![Some("1.25"), None]));
        let written = exactly_as(&ok, &column).expect("fits");
        assert_eq!(
            written.as_ref(),
            decimal(&[Some(125), None], 15, 2).as_ref()
        );
    }

    #[test]
    fn text_that_is_no_value_of_the_type_is_an_error_not_null() {
        let column = Field::new("day", DataType::Date32, true);
        let text: ArrayRef = Arc::new(StringArray::from(vec![Some("2024-02-29"), None]));
        assert_eq!(exactly_as(&text, &column).expect("a date").null_count(), 1);
        let text: ArrayRef = Arc::new(StringArray::from(vec!["2024-02-30"]));
        assert!(message(text, &column).contains("value 2024-02-30 cannot be written"));
    }

    #[test]
    fn an_untyped_null_is_null_in_any_column() {
        let column = Field::new("city", DataType::Utf8, true);
        let null: ArrayRef = Arc::new(datafusion::arrow::array::NullArray::new(2));
        assert_eq!(
            exactly_as(&null, &column)
                .expect("NULL")
                .logical_null_count(),
            2
        );
        let text: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
        let column = Field::new("c", DataType::LargeUtf8, true);
        assert_eq!(exactly_as(&text, &column).expect("text").null_count(), 1);
    }

    #[test]
    fn floating_point_columns_take_the_nearest_value() {
        let column = Field::new("x", DataType::Float64, true);
        let written = exactly_as(&decimal(&[Some(1)], 20, 19), &column).expect("nearest double");
        assert_eq!(written.data_type(), &DataType::Float64);
        // never an infinity for a finite value, an infinity written as one kept
        let float = Field::new("f", DataType::Float32, true);
        let huge: ArrayRef = Arc::new(Float64Array::from(vec![1e40]));
        assert!(message(huge, &float).contains("value 1e40 is out of range of column 'f' FLOAT"));
        let infinite: ArrayRef = Arc::new(Float64Array::from(vec![f64::INFINITY, 1.5]));
        exactly_as(&infinite, &float).expect("an infinity is written as one");
        let text: ArrayRef = Arc::new(StringArray::from(vec!["-Infinity", "1e400"]));
        let e = message(text, &Field::new("d", DataType::Float64, true));
        assert!(e.contains("value 1e400 is out of range"), "{e}");
    }

    #[test]
    fn a_float_into_a_decimal_is_the_number_it_spells() {
        // the double nearest 1e28 would fit DECIMAL(38, 10) but 10^28 does not
        let column = Field::new("d", DataType::Decimal128(38, 10), true);
        let float: ArrayRef = Arc::new(Float64Array::from(vec![1e28]));
        assert!(message(float, &column).contains("1e28"));
        let tenth: ArrayRef = Arc::new(Float64Array::from(vec![0.1]));
        let column = Field::new("d", DataType::Decimal128(3, 2), true);
        let kept = exactly_as(&tenth, &column).expect("0.1 is 0.10");
        assert_eq!(kept.as_ref(), decimal(&[Some(10)], 3, 2).as_ref());
    }

    #[test]
    fn a_decimal_past_its_precision_is_out_of_range() {
        // 10^28 into DECIMAL(38, 10): Arrow's cast keeps the 39-digit 10^38
        let column = Field::new("d", DataType::Decimal128(38, 10), true);
        let ten_to_28 = decimal(&[Some(10_i128.pow(28))], 29, 0);
        assert!(message(ten_to_28, &column).contains("out of range"));
    }
}
