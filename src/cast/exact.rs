//! Writing a value into a column exactly: converted only when the column then holds
//! the same number, never rounded, truncated or wrapped. Flink's strict cast and
//! Fluss's writers keep what was written; a value that does not fit (too many
//! fractional digits for the scale, out of range, a fraction into an integer) is an
//! error naming the column and the value.

use datafusion::arrow::array::{Array, ArrayRef, new_null_array};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::compute::kernels::cmp::distinct;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use super::column_as;
use crate::error::{Error, ErrorKind, Result};

/// `column` written into `field`: cast as [`column_as`] does, with two checks a
/// plain cast lacks. A value never becomes NULL (text that is not a date, a number
/// out of range), and integers and decimals hold each value exactly. Text is read
/// as a number with all its digits first, so `'1.005'` into `DECIMAL(15, 2)` fails
/// as `1.005` does.
pub(crate) fn exactly_as(column: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    let target = field.data_type();
    if column.data_type() == target {
        return Ok(column.clone());
    }
    // logical: a `NullArray` (an untyped `NULL` in VALUES) has no null buffer
    if column.logical_null_count() == column.len() {
        return Ok(new_null_array(target, column.len()));
    }
    let exact = holds_exact_numbers(target);
    let number = match column.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View if exact => {
            Some(never_null(column, &TEXT_AS_NUMBER, field, column)?)
        }
        _ => None,
    };
    let from = number.as_ref().unwrap_or(column);
    let converted = never_null(from, target, field, column)?;
    if !exact {
        return Ok(converted);
    }
    // A cast keeps the value or changes it (rounds, truncates): cast back, only a
    // kept value compares equal to what was written.
    let back = cast(&converted, from.data_type())?;
    let changed = distinct(from, &back)?;
    match (0..changed.len()).find(|&i| changed.is_valid(i) && changed.value(i)) {
        None => Ok(converted),
        Some(row) => Err(Error::invalid_input(format!(
            "value {} does not fit column '{}' {} exactly: it would be stored as {} \
             (values are stored as written, never rounded or truncated; to store it \
             rounded, say so: CAST(value AS type) or ROUND(value, scale))",
            shown(column, row)?,
            field.name(),
            sql_type(target),
            shown(&converted, row)?
        ))),
    }
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
fn shown(array: &ArrayRef, row: usize) -> Result<String> {
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
fn sql_type(data_type: &DataType) -> String {
    match data_type {
        DataType::Int8 => "TINYINT".into(),
        DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INT".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
            format!("DECIMAL({p}, {s})")
        }
        DataType::Decimal256(p, s) => format!("DECIMAL({p}, {s})"),
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
    }
}
