//! Whether a lake table's columns can serve a Fluss table's: every Fluss column
//! exists in the lake table, with values of the same kind. The read casts lake
//! values to the Fluss type within a kind (Iceberg stores `TINYINT` as `int` and
//! timestamps as microseconds), never across kinds: a lake column `v int` read for a
//! Fluss `v STRING` would otherwise be cast to strings, silently wrong.

use datafusion::arrow::datatypes::{DataType, SchemaRef};

use crate::error::{Error, Result};

/// The kind of values a column holds, as far as the lake and Fluss must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueKind {
    Boolean,
    Integer,
    Float,
    /// Decimals agree when their scales do (a wider precision only widens).
    Decimal {
        scale: i32,
    },
    String,
    Binary,
    Date,
    Time,
    Timestamp,
    TimestampWithZone,
    /// Lists, maps and rows: checked by name only.
    Nested,
    /// A kind this crate does not compare (always accepted).
    Other,
}

impl ValueKind {
    /// The kind of a Fluss column's arrow type.
    pub(crate) fn of_arrow(ty: &DataType) -> Self {
        match ty {
            DataType::Boolean => Self::Boolean,
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64 => Self::Integer,
            DataType::Float16 | DataType::Float32 | DataType::Float64 => Self::Float,
            DataType::Decimal32(_, s)
            | DataType::Decimal64(_, s)
            | DataType::Decimal128(_, s)
            | DataType::Decimal256(_, s) => Self::Decimal { scale: *s as i32 },
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Self::String,
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => Self::Binary,
            DataType::Date32 | DataType::Date64 => Self::Date,
            DataType::Time32(_) | DataType::Time64(_) => Self::Time,
            DataType::Timestamp(_, None) => Self::Timestamp,
            DataType::Timestamp(_, Some(_)) => Self::TimestampWithZone,
            DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Map(..)
            | DataType::Struct(_) => Self::Nested,
            _ => Self::Other,
        }
    }

    fn agrees_with(self, other: Self) -> bool {
        self == other || self == Self::Other || other == Self::Other
    }
}

/// Checks that every column of `fluss` is in the lake table, with the same kind of
/// values. `lake_column` gives a lake column's kind and its type as the lake names it
/// (for the error), or `None` when the lake table has no such column.
pub(crate) fn check_lake_columns(
    fluss: &SchemaRef,
    lake_column: impl Fn(&str) -> Option<(ValueKind, String)>,
) -> Result<()> {
    for field in fluss.fields() {
        let Some((kind, lake_type)) = lake_column(field.name()) else {
            return Err(Error::data_invalid(format!(
                "lake schema does not match the Fluss schema: column '{}' is missing in the lake table",
                field.name()
            )));
        };
        if !kind.agrees_with(ValueKind::of_arrow(field.data_type())) {
            return Err(Error::data_invalid(format!(
                "lake schema does not match the Fluss schema: column '{}' is {lake_type} in the lake table but {} in Fluss",
                field.name(),
                field.data_type()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::datatypes::{Field, Schema, TimeUnit};

    use super::*;

    fn fluss() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int8, false),
            Field::new("v", DataType::Utf8, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]))
    }

    #[test]
    fn integers_of_any_width_and_timestamps_of_any_unit_agree() {
        let lake = |name: &str| {
            Some(match name {
                "id" => (ValueKind::Integer, "int".to_string()),
                "v" => (ValueKind::String, "string".to_string()),
                _ => (ValueKind::Timestamp, "timestamp".to_string()),
            })
        };
        assert!(check_lake_columns(&fluss(), lake).is_ok());
    }

    #[test]
    fn a_column_of_another_kind_is_named_with_both_types() {
        let lake = |name: &str| {
            Some(match name {
                "v" => (ValueKind::Integer, "int".to_string()),
                "id" => (ValueKind::Integer, "int".to_string()),
                _ => (ValueKind::Timestamp, "timestamp".to_string()),
            })
        };
        let e = check_lake_columns(&fluss(), lake).unwrap_err().to_string();
        assert!(
            e.contains("column 'v' is int in the lake table but Utf8 in Fluss"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_column_is_named() {
        let lake = |name: &str| (name != "ts").then(|| (ValueKind::Other, String::new()));
        let e = check_lake_columns(&fluss(), lake).unwrap_err().to_string();
        assert!(e.contains("column 'ts' is missing"), "{e}");
    }
}
