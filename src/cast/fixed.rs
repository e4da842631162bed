//! Fixed lengths written exactly: `CHAR(n)` holds at most `n` characters and
//! `BINARY(n)` exactly `n` bytes; a longer value is an error, never cut.
//!
//! Shorter values: Fluss stores a `CHAR` value as written (its Arrow log writer,
//! `ArrowVarCharWriter`, and its compacted key-value rows, `CompactedRowWriter.writeChar`,
//! encode `CHAR(n)` as `STRING`), so it is stored unpadded. A `BINARY(n)` value is
//! Arrow's `FixedSizeBinary(n)`, always `n` bytes: a shorter one is padded with zero
//! bytes, as Fluss's `IndexedRowWriter.writeBinary` and Flink's casts to `BINARY(n)`
//! (`BinaryToBinaryCastRule`, `Arrays.copyOf`) pad it.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, FixedSizeBinaryBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};

use super::shown;
use crate::error::{Error, Result};

/// Checks that every value of `text` (the column as text, written into `field`, a
/// `CHAR(length)`) has at most `length` characters.
pub(super) fn check_char(
    text: &ArrayRef,
    field: &Field,
    length: usize,
    shown_type: &str,
) -> Result<()> {
    let utf8 = cast(text, &DataType::Utf8)?;
    let values = utf8.as_string::<i32>();
    let long =
        (0..values.len()).find(|&i| values.is_valid(i) && values.value(i).chars().count() > length);
    match long {
        Some(row) => Err(Error::invalid_input(format!(
            "value '{}' does not fit column '{}' {shown_type}: it has {} characters (values \
             are stored as written, never cut; to store a prefix, say so: substr(value, 1, \
             {length}))",
            values.value(row),
            field.name(),
            values.value(row).chars().count()
        ))),
        None => Ok(()),
    }
}

/// `column` (bytes, or text as its UTF-8 bytes) as `BINARY(length)`: each value
/// zero-padded to `length` bytes, a longer one an error naming it.
pub(super) fn binary(
    column: &ArrayRef,
    field: &Field,
    length: i32,
    shown_type: &str,
) -> Result<ArrayRef> {
    let bytes = cast(column, &DataType::LargeBinary)?;
    let values = bytes.as_binary::<i64>();
    let width = usize::try_from(length).unwrap_or_default();
    let mut builder = FixedSizeBinaryBuilder::with_capacity(values.len(), length);
    let mut padded = vec![0u8; width];
    for i in 0..values.len() {
        if values.is_null(i) {
            builder.append_null();
            continue;
        }
        let value = values.value(i);
        if value.len() > width {
            return Err(Error::invalid_input(format!(
                "value {} does not fit column '{}' {shown_type}: it has {} bytes (values are \
                 stored as written, never cut)",
                shown(column, i)?,
                field.name(),
                value.len()
            )));
        }
        padded.fill(0);
        padded[..value.len()].copy_from_slice(value);
        builder.append_value(&padded)?;
    }
    Ok(Arc::new(builder.finish()))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{BinaryArray, FixedSizeBinaryArray, StringArray};

    use super::*;

    #[test]
    fn char_takes_at_most_its_length_in_characters() {
        let field = Field::new("c", DataType::Utf8, true);
        let fits: ArrayRef = Arc::new(StringArray::from(vec![Some("äbc"), None, Some("")]));
        check_char(&fits, &field, 3, "CHAR(3)").expect("three characters fit");
        let long: ArrayRef = Arc::new(StringArray::from(vec!["ab", "abcdef"]));
        let e = check_char(&long, &field, 3, "CHAR(3)")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("value 'abcdef' does not fit column 'c' CHAR(3)"),
            "{e}"
        );
        assert!(e.contains("6 characters"), "{e}");
    }

    #[test]
    fn binary_is_padded_with_zeros_and_never_cut() {
        let field = Field::new("b", DataType::FixedSizeBinary(3), true);
        let short: ArrayRef = Arc::new(BinaryArray::from_opt_vec(vec![Some(b"ab"), None]));
        let written = binary(&short, &field, 3, "BINARY(3)").expect("pads");
        let written = written
            .as_any()
            .downcast_ref::<FixedSizeBinaryArray>()
            .expect("fixed");
        assert_eq!(written.value(0), b"ab\0");
        assert!(written.is_null(1));
        let long: ArrayRef = Arc::new(BinaryArray::from_vec(vec![b"abcd"]));
        let e = binary(&long, &field, 3, "BINARY(3)")
            .unwrap_err()
            .to_string();
        assert!(e.contains("4 bytes"), "{e}");
    }
}
