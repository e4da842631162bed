//! How the fold and the run keys hash a primary key: one integer column by value, two
//! or more integer columns packed into one `u128`, anything else by arrow's row
//! format. Packing spares composite integer keys an allocation and a byte-slice hash
//! per row (most of a TPC-H `partsupp` scan's merge time).

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::arrow::row::{RowConverter, SortField};

use crate::error::{Error, Result};

/// How a key of given column types is hashed.
#[derive(Debug)]
pub(crate) enum KeyEncoding {
    /// One signed integer column, by value (as `i64`).
    Integer,
    /// Two or more integer columns packed into one `u128` (their bit widths).
    Packed(Vec<u32>),
    /// Any other key, by its row-format bytes.
    Encoded(RowConverter),
}

impl KeyEncoding {
    /// The encoding of a key of `types` (the key's columns, in order).
    pub(crate) fn for_types(types: &[DataType]) -> Result<Self> {
        if matches!(
            types,
            [DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64]
        ) {
            return Ok(Self::Integer);
        }
        if let Some(widths) = packed_widths(types) {
            return Ok(Self::Packed(widths));
        }
        let fields = types.iter().map(|t| SortField::new(t.clone())).collect();
        Ok(Self::Encoded(RowConverter::new(fields)?))
    }
}

/// An integer key column as `Int64`.
pub(crate) fn as_i64(column: &ArrayRef) -> Result<ArrayRef> {
    Ok(cast(column, &DataType::Int64)?)
}

/// Bits of an integer key column, `None` for other types.
fn bits(data_type: &DataType) -> Option<u32> {
    Some(match data_type {
        DataType::Int8 => 8,
        DataType::Int16 => 16,
        DataType::Int32 => 32,
        DataType::Int64 => 64,
        _ => return None,
    })
}

/// The bit widths of a key of `types` when it is two or more integer columns of at
/// most 128 bits together (one integer column is indexed by value already).
fn packed_widths(types: &[DataType]) -> Option<Vec<u32>> {
    if types.len() < 2 {
        return None;
    }
    let widths: Vec<u32> = types.iter().map(bits).collect::<Option<_>>()?;
    (widths.iter().sum::<u32>() <= 128).then_some(widths)
}

/// Each row's key columns packed into one value: every column's bits, in order, two's
/// complement truncated to its width (the packing is one-to-one for values of the
/// columns' types). A NULL key column is an error: primary-key columns are NOT NULL.
pub(crate) fn pack(columns: &[ArrayRef], widths: &[u32]) -> Result<Vec<u128>> {
    if columns.len() != widths.len() {
        return Err(Error::internal(
            "a packed key got the wrong number of columns",
        ));
    }
    let rows = columns.first().map_or(0, |c| c.len());
    let mut keys = vec![0u128; rows];
    for (column, &width) in columns.iter().zip(widths) {
        if column.null_count() > 0 {
            return Err(Error::data_invalid("a primary-key column holds NULL"));
        }
        let values = as_i64(column)?;
        let values = values.as_primitive::<Int64Type>().values();
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        for (key, value) in keys.iter_mut().zip(values.iter()) {
            *key = (*key << width) | u128::from((*value as u64) & mask);
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn keys_are_hashed_by_value_where_they_can_be() {
        let encoding = |types: &[DataType]| KeyEncoding::for_types(types).unwrap();
        assert!(matches!(encoding(&[DataType::Int16]), KeyEncoding::Integer));
        assert!(matches!(
            encoding(&[DataType::Int64, DataType::Int32]),
            KeyEncoding::Packed(_)
        ));
        assert!(matches!(
            encoding(&[DataType::Utf8]),
            KeyEncoding::Encoded(_)
        ));
    }

    #[test]
    fn integer_columns_pack_one_to_one() {
        assert_eq!(
            packed_widths(&[DataType::Int32, DataType::Int64]),
            Some(vec![32, 64])
        );
        assert_eq!(packed_widths(&[DataType::Int64]), None);
        assert_eq!(packed_widths(&[DataType::Utf8, DataType::Int32]), None);
        assert_eq!(
            packed_widths(&[DataType::Int64, DataType::Int64, DataType::Int8]),
            None
        );
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![1, 1, -1, 2])),
            Arc::new(Int64Array::from(vec![2, 3, 2, -3])),
        ];
        let keys = pack(&columns, &[32, 64]).unwrap();
        let mut distinct = keys.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 4);
        // the same values pack the same
        let again = pack(&columns, &[32, 64]).unwrap();
        assert_eq!(keys, again);
        let nulls: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![Some(1), None])),
            Arc::new(Int64Array::from(vec![1, 2])),
        ];
        assert!(pack(&nulls, &[32, 64]).is_err());
        let strings: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec!["a"]))];
        assert!(pack(&strings, &[32, 64]).is_err());
    }
}
