//! Partition values as Fluss spells them in partition names, and back: Fluss's
//! `PartitionUtils.convertValueOfType` and `PartitionNameConverters`. Writes name
//! partitions with [`render`], the lake formats name their partitions the same way
//! (so a lake split finds its Fluss partition), and the partition pruner reads a
//! name's values back with [`parse`].
//!
//! | type | name |
//! |---|---|
//! | STRING, CHAR | as is |
//! | BOOLEAN | `true`, `false` |
//! | TINYINT ... BIGINT | decimal |
//! | BINARY, BYTES | lowercase hex |
//! | DATE | `2024-05-01` |
//! | TIME | `10-30-00_123` (milliseconds) |
//! | TIMESTAMP, TIMESTAMP_LTZ | `2024-05-01-10-30-00_` + the fraction's digits, no trailing zeros (UTC) |
//!
//! FLOAT and DOUBLE keys, which Fluss names by Java's `Float.toString`, are refused.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType as ArrowType, Date32Type, Int8Type, Int16Type, Int32Type, Int64Type,
    Time32MillisecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use datafusion::scalar::ScalarValue;

use crate::error::{Error, Result};

/// One partition value, typed as the partition column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionValue<'a> {
    /// STRING or CHAR.
    Text(&'a str),
    /// BOOLEAN.
    Bool(bool),
    /// TINYINT, SMALLINT, INT or BIGINT.
    Integer(i64),
    /// BINARY or BYTES.
    Bytes(&'a [u8]),
    /// DATE: days since the epoch.
    Date(i32),
    /// TIME: milliseconds of the day.
    Time(i32),
    /// TIMESTAMP or TIMESTAMP_LTZ: epoch milliseconds and the nanoseconds within
    /// that millisecond.
    Timestamp {
        /// Epoch milliseconds.
        millis: i64,
        /// Nanoseconds within the millisecond, `0..1_000_000`.
        nanos_of_milli: i32,
    },
}

/// The value as Fluss names it.
pub fn render(value: PartitionValue<'_>) -> String {
    match value {
        PartitionValue::Text(s) => s.to_string(),
        PartitionValue::Bool(b) => b.to_string(),
        PartitionValue::Integer(i) => i.to_string(),
        PartitionValue::Bytes(bytes) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        PartitionValue::Date(days) => match chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
            .and_then(|epoch| epoch.checked_add_signed(chrono::TimeDelta::days(days.into())))
        {
            Some(date) => date.format("%Y-%m-%d").to_string(),
            None => days.to_string(),
        },
        PartitionValue::Time(millis) => {
            let (hours, rest) = (millis.div_euclid(3_600_000), millis.rem_euclid(3_600_000));
            let (minutes, rest) = (rest / 60_000, rest % 60_000);
            format!(
                "{hours:02}-{minutes:02}-{:02}_{:03}",
                rest / 1000,
                rest % 1000
            )
        }
        PartitionValue::Timestamp {
            millis,
            nanos_of_milli,
        } => {
            let seconds = millis.div_euclid(1000);
            let nanos = millis.rem_euclid(1000) * 1_000_000 + i64::from(nanos_of_milli);
            let Some(time) = chrono::DateTime::from_timestamp(seconds, nanos as u32) else {
                return format!("{millis}");
            };
            let fraction = format!("{nanos:09}");
            format!(
                "{}_{}",
                time.naive_utc().format("%Y-%m-%d-%H-%M-%S"),
                fraction.trim_end_matches('0')
            )
        }
    }
}

/// Whether values of `data_type` (the Arrow type of a Fluss partition column) can
/// name partitions here.
pub fn names_partitions(data_type: &ArrowType) -> bool {
    matches!(
        data_type,
        ArrowType::Utf8
            | ArrowType::LargeUtf8
            | ArrowType::Utf8View
            | ArrowType::Boolean
            | ArrowType::Int8
            | ArrowType::Int16
            | ArrowType::Int32
            | ArrowType::Int64
            | ArrowType::Binary
            | ArrowType::LargeBinary
            | ArrowType::BinaryView
            | ArrowType::FixedSizeBinary(_)
            | ArrowType::Date32
            | ArrowType::Time32(TimeUnit::Millisecond)
            | ArrowType::Timestamp(_, _)
    )
}

/// The name of row `row` of a partition column (`None` when null).
pub fn render_array_value(column: &ArrayRef, row: usize) -> Result<Option<String>> {
    if column.is_null(row) {
        return Ok(None);
    }
    let value = match column.data_type() {
        ArrowType::Utf8 => PartitionValue::Text(column.as_string::<i32>().value(row)),
        ArrowType::LargeUtf8 => PartitionValue::Text(column.as_string::<i64>().value(row)),
        ArrowType::Utf8View => PartitionValue::Text(column.as_string_view().value(row)),
        ArrowType::Boolean => PartitionValue::Bool(column.as_boolean().value(row)),
        ArrowType::Int8 => {
            PartitionValue::Integer(column.as_primitive::<Int8Type>().value(row).into())
        }
        ArrowType::Int16 => {
            PartitionValue::Integer(column.as_primitive::<Int16Type>().value(row).into())
        }
        ArrowType::Int32 => {
            PartitionValue::Integer(column.as_primitive::<Int32Type>().value(row).into())
        }
        ArrowType::Int64 => PartitionValue::Integer(column.as_primitive::<Int64Type>().value(row)),
        ArrowType::Binary => PartitionValue::Bytes(column.as_binary::<i32>().value(row)),
        ArrowType::LargeBinary => PartitionValue::Bytes(column.as_binary::<i64>().value(row)),
        ArrowType::BinaryView => PartitionValue::Bytes(column.as_binary_view().value(row)),
        ArrowType::FixedSizeBinary(_) => {
            PartitionValue::Bytes(column.as_fixed_size_binary().value(row))
        }
        ArrowType::Date32 => PartitionValue::Date(column.as_primitive::<Date32Type>().value(row)),
        ArrowType::Time32(TimeUnit::Millisecond) => {
            PartitionValue::Time(column.as_primitive::<Time32MillisecondType>().value(row))
        }
        ArrowType::Timestamp(unit, _) => {
            let (millis, nanos_of_milli) = match unit {
                TimeUnit::Second => {
                    let v = column.as_primitive::<TimestampSecondType>().value(row);
                    (v.saturating_mul(1000), 0)
                }
                TimeUnit::Millisecond => (
                    column.as_primitive::<TimestampMillisecondType>().value(row),
                    0,
                ),
                TimeUnit::Microsecond => {
                    let v = column.as_primitive::<TimestampMicrosecondType>().value(row);
                    (v.div_euclid(1000), (v.rem_euclid(1000) * 1000) as i32)
                }
                TimeUnit::Nanosecond => {
                    let v = column.as_primitive::<TimestampNanosecondType>().value(row);
                    (v.div_euclid(1_000_000), v.rem_euclid(1_000_000) as i32)
                }
            };
            PartitionValue::Timestamp {
                millis,
                nanos_of_milli,
            }
        }
        other => {
            return Err(Error::unsupported(format!(
                "partition columns of type {other} cannot name a partition here"
            )));
        }
    };
    Ok(Some(render(value)))
}

/// The value a partition name spells for a column of `data_type`, as the column
/// holds it (`None`: the text is no value of that type).
pub fn parse(text: &str, data_type: &ArrowType) -> Option<ScalarValue> {
    let scalar = match data_type {
        ArrowType::Utf8 => ScalarValue::Utf8(Some(text.to_string())),
        ArrowType::LargeUtf8 => ScalarValue::LargeUtf8(Some(text.to_string())),
        ArrowType::Utf8View => ScalarValue::Utf8View(Some(text.to_string())),
        ArrowType::Boolean => ScalarValue::Boolean(Some(match text {
            t if t.eq_ignore_ascii_case("true") => true,
            t if t.eq_ignore_ascii_case("false") => false,
            _ => return None,
        })),
        ArrowType::Int8 => ScalarValue::Int8(Some(text.parse().ok()?)),
        ArrowType::Int16 => ScalarValue::Int16(Some(text.parse().ok()?)),
        ArrowType::Int32 => ScalarValue::Int32(Some(text.parse().ok()?)),
        ArrowType::Int64 => ScalarValue::Int64(Some(text.parse().ok()?)),
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => {
            let bytes = parse_hex(text)?;
            match data_type {
                ArrowType::Binary => ScalarValue::Binary(Some(bytes)),
                ArrowType::LargeBinary => ScalarValue::LargeBinary(Some(bytes)),
                _ => ScalarValue::BinaryView(Some(bytes)),
            }
        }
        ArrowType::FixedSizeBinary(n) => {
            let bytes = parse_hex(text)?;
            (bytes.len() == usize::try_from(*n).ok()?)
                .then(|| ScalarValue::FixedSizeBinary(*n, Some(bytes)))?
        }
        ArrowType::Date32 => {
            let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
            let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
            ScalarValue::Date32(Some(i32::try_from((date - epoch).num_days()).ok()?))
        }
        ArrowType::Time32(TimeUnit::Millisecond) => {
            let (clock, millis) = text.split_once('_')?;
            let parts: Vec<i32> = clock
                .split('-')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            let [hours, minutes, seconds] = parts.as_slice() else {
                return None;
            };
            let millis: i32 = millis.parse().ok()?;
            ScalarValue::Time32Millisecond(Some(
                ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis,
            ))
        }
        ArrowType::Timestamp(unit, zone) => {
            let (clock, fraction) = text.split_once('_')?;
            let time = chrono::NaiveDateTime::parse_from_str(clock, "%Y-%m-%d-%H-%M-%S").ok()?;
            if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let nanos: i64 = format!("{fraction:0<9}").parse().ok()?;
            let seconds = time.and_utc().timestamp();
            let zone = zone.clone();
            let at = |per_second: i64, per_unit: i64| {
                seconds
                    .checked_mul(per_second)
                    .and_then(|s| s.checked_add(nanos / per_unit))
            };
            match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(Some(seconds), zone),
                TimeUnit::Millisecond => {
                    ScalarValue::TimestampMillisecond(Some(at(1000, 1_000_000)?), zone)
                }
                TimeUnit::Microsecond => {
                    ScalarValue::TimestampMicrosecond(Some(at(1_000_000, 1000)?), zone)
                }
                TimeUnit::Nanosecond => {
                    ScalarValue::TimestampNanosecond(Some(at(1_000_000_000, 1)?), zone)
                }
            }
        }
        _ => return None,
    };
    Some(scalar)
}

/// Refuses a partition spec (`k = 'v', ...`) naming a key that is not one of the
/// table's partition keys (compared without case, as SQL names are).
pub fn check_spec_keys(table: &str, keys: &[String], spec: &[(String, String)]) -> Result<()> {
    match spec
        .iter()
        .find(|(k, _)| !keys.iter().any(|key| key.eq_ignore_ascii_case(k)))
    {
        Some((extra, _)) => Err(Error::invalid_input(format!(
            "'{extra}' is not a partition key of table {table} (partition keys: {})",
            keys.join(", ")
        ))),
        None => Ok(()),
    }
}

/// The bytes of lowercase or uppercase hex text.
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_fluss_s_and_read_back() {
        // PartitionNameConverters: the fraction without trailing zeros, none at all
        // for a whole second
        let whole = PartitionValue::Timestamp {
            millis: 1_714_559_400_000,
            nanos_of_milli: 0,
        };
        assert_eq!(render(whole), "2024-05-01-10-30-00_");
        let fine = PartitionValue::Timestamp {
            millis: 1_714_559_400_123,
            nanos_of_milli: 400_000,
        };
        assert_eq!(render(fine), "2024-05-01-10-30-00_1234");
        assert_eq!(render(PartitionValue::Time(37_800_123)), "10-30-00_123");
        assert_eq!(render(PartitionValue::Bytes(&[0, 0xab])), "00ab");
        assert_eq!(render(PartitionValue::Date(19_844)), "2024-05-01");
        assert_eq!(render(PartitionValue::Bool(true)), "true");
        assert_eq!(render(PartitionValue::Date(0)), "1970-01-01");
        assert_eq!(render(PartitionValue::Date(19723)), "2024-01-01");
        assert_eq!(render(PartitionValue::Date(-1)), "1969-12-31");

        let micros = ArrowType::Timestamp(TimeUnit::Microsecond, None);
        assert_eq!(
            parse("2024-05-01-10-30-00_1234", &micros),
            Some(ScalarValue::TimestampMicrosecond(
                Some(1_714_559_400_123_400),
                None
            ))
        );
        assert_eq!(
            parse("2024-05-01-10-30-00_", &micros),
            Some(ScalarValue::TimestampMicrosecond(
                Some(1_714_559_400_000_000),
                None
            ))
        );
        assert_eq!(
            parse("10-30-00_123", &ArrowType::Time32(TimeUnit::Millisecond)),
            Some(ScalarValue::Time32Millisecond(Some(37_800_123)))
        );
        assert_eq!(
            parse("00ab", &ArrowType::Binary),
            Some(ScalarValue::Binary(Some(vec![0, 0xab])))
        );
        assert_eq!(parse("maybe", &ArrowType::Boolean), None);
        assert_eq!(
            parse("2024-05-01", &ArrowType::Date32),
            Some(ScalarValue::Date32(Some(19_844)))
        );
    }
}
