//! Times written exactly: a timestamp or a time keeps every fractional digit it was
//! written with, or the write is refused; a timestamp never becomes a date or a time
//! of day without a `CAST` that asks for it.
//!
//! Fluss keeps precision 0–9 (`TIMESTAMP(p)`, `TIMESTAMP_LTZ(p)`, `TIME(p)`) and stores
//! each in the Arrow unit that holds it (`fluss::record::to_arrow_type`: seconds for 0,
//! milliseconds for 1–3, ...), so a unit alone does not bound the digits: the declared
//! precision does. A value with more digits than that is an error naming it; a `CAST`
//! in the statement truncates, as Flink's casts do (`DateTimeUtils.truncate`), and the
//! writer then sees no extra digit.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::{CastOptions, cast, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, TimeUnit, TimestampNanosecondType};

use super::shown;
use crate::error::{Error, Result};

/// The fractional-second digits a value of `unit` can carry.
pub(super) fn unit_digits(unit: TimeUnit) -> u32 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

/// Checks `column` (of any type) written into a timestamp, time or date column
/// `field` of declared precision `precision` (digits of the second; `shown_type`
/// names the column's type): an error names the first value a conversion would
/// change. Columns of other types pass.
pub(super) fn check(
    column: &ArrayRef,
    field: &Field,
    precision: u32,
    shown_type: &str,
) -> Result<()> {
    let target = field.data_type();
    let source = column.data_type();
    match target {
        DataType::Timestamp(..) | DataType::Time32(_) | DataType::Time64(_) => {}
        DataType::Date32 | DataType::Date64 => return date(column, field, shown_type),
        _ => return Ok(()),
    }
    let is_time = matches!(target, DataType::Time32(_) | DataType::Time64(_));
    if is_time && matches!(source, DataType::Timestamp(..)) {
        return Err(needs_cast(
            column,
            field,
            shown_type,
            "its date would be lost",
            "TIME",
        ));
    }
    match source {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let text = cast(column, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let extra = (0..text.len())
                .find(|&i| text.is_valid(i) && fraction_digits(text.value(i)) > precision);
            if let Some(row) = extra {
                return Err(too_precise(column, row, field, shown_type, precision));
            }
        }
        DataType::Timestamp(unit, _) | DataType::Time32(unit) | DataType::Time64(unit) => {
            let digits = unit_digits(*unit);
            if digits > precision {
                let step = 10_i64.pow(digits - precision);
                // Time32 has no cast to Int64: by way of its own Int32
                let raw = match source {
                    DataType::Time32(_) => {
                        cast(&cast(column, &DataType::Int32)?, &DataType::Int64)?
                    }
                    _ => cast(column, &DataType::Int64)?,
                };
                let raw = raw.as_primitive::<Int64Type>();
                let extra =
                    (0..raw.len()).find(|&i| raw.is_valid(i) && raw.value(i).rem_euclid(step) != 0);
                if let Some(row) = extra {
                    return Err(too_precise(column, row, field, shown_type, precision));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A date column takes dates, text of a date, and a timestamp only through a `CAST`:
/// its time of day would otherwise be lost without a word (Flink casts a TIMESTAMP
/// into a DATE sink implicitly, `LogicalTypeCasts`; the stricter rule keeps values).
fn date(column: &ArrayRef, field: &Field, shown_type: &str) -> Result<()> {
    match column.data_type() {
        DataType::Timestamp(..) | DataType::Time32(_) | DataType::Time64(_) => Err(needs_cast(
            column,
            field,
            shown_type,
            "its time of day would be lost",
            "DATE",
        )),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            // text with a time of day parses as a timestamp; only midnight is a date
            let text = cast(column, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let as_time = cast_with_options(
                &text as &dyn Array,
                &DataType::Timestamp(TimeUnit::Nanosecond, None),
                &CastOptions {
                    safe: true,
                    ..Default::default()
                },
            )?;
            let nanos = as_time.as_primitive::<TimestampNanosecondType>();
            const DAY: i64 = 86_400_000_000_000;
            let timed = (0..nanos.len()).find(|&i| {
                nanos.is_valid(i)
                    && nanos.value(i).rem_euclid(DAY) != 0
                    && text.value(i).contains(':')
            });
            match timed {
                Some(row) => Err(Error::invalid_input(format!(
                    "value {} cannot be written to column '{}' {shown_type}: it has a time \
                     of day, which a date does not hold (CAST(value AS DATE) takes its date)",
                    text.value(row),
                    field.name()
                ))),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The digits of the second's fraction `text` spells, trailing zeros not counted:
/// `2024-05-01 10:00:00.120` has 2, `10:00:00` none.
pub(super) fn fraction_digits(text: &str) -> u32 {
    let bytes = text.as_bytes();
    // the `.` after `hh:mm:ss` (or `mm:ss`): a colon three places before it
    let Some(dot) = (3..bytes.len()).find(|&i| {
        bytes[i] == b'.'
            && bytes[i - 3] == b':'
            && bytes[i - 2].is_ascii_digit()
            && bytes[i - 1].is_ascii_digit()
    }) else {
        return 0;
    };
    let digits = &bytes[dot + 1..];
    let run = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    let significant = digits[..run]
        .iter()
        .rposition(|b| *b != b'0')
        .map_or(0, |last| last + 1);
    significant as u32
}

fn too_precise(
    column: &ArrayRef,
    row: usize,
    field: &Field,
    shown_type: &str,
    precision: u32,
) -> Error {
    let value = shown(column, row).unwrap_or_else(|_| "?".into());
    let ask = match field.data_type() {
        DataType::Timestamp(..) => {
            "; to store it truncated, say so: CAST(value AS TIMESTAMP(0|3|6)) or \
             date_trunc('second', value)"
        }
        _ => ": write it with fewer digits",
    };
    Error::invalid_input(format!(
        "value {value} does not fit column '{}' {shown_type} exactly: it has more fractional \
         digits of a second than the column's {precision} (values are stored as written, \
         never truncated{ask})",
        field.name()
    ))
}

fn needs_cast(column: &ArrayRef, field: &Field, shown_type: &str, lost: &str, to: &str) -> Error {
    Error::invalid_input(format!(
        "a {} value cannot be written to column '{}' {shown_type} without a CAST: {lost} \
         (CAST(value AS {to}) says so)",
        super::sql_type(column.data_type()),
        field.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fraction_digits_of_text() {
        for (text, digits) in [
            ("2024-05-01 10:00:00", 0),
            ("2024-05-01 10:00:00.120", 2),
            ("2024-05-01T10:00:00.123456789Z", 9),
            ("2024-05-01 10:00:00.5+02:00", 1),
            ("10:00:00.000", 0),
            ("10:00:00.0001", 4),
            ("2024-05-01", 0),
        ] {
            assert_eq!(fraction_digits(text), digits, "{text}");
        }
    }
}
