//! Partition names rendered from a row's partition-column values, as Fluss names
//! partitions (`PartitionUtils`): each value as a string, joined by `$`.

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::source::layout::validate_partition_name;

/// Whether values of `data_type` can name a partition here.
pub(crate) fn names_partitions(data_type: &ArrowType) -> bool {
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
            | ArrowType::Date32
    )
}

/// The partition name of `row`, from its partition columns (in partition-key order).
pub(crate) fn partition_name(columns: &[ArrayRef], row: usize) -> Result<String> {
    let values = columns
        .iter()
        .map(|c| partition_value(c, row))
        .collect::<Result<Vec<_>>>()?;
    Ok(values.join("$"))
}

/// Renders one partition value as Fluss names partitions (`PartitionUtils`).
fn partition_value(column: &ArrayRef, row: usize) -> Result<String> {
    if column.is_null(row) {
        return Err(Error::invalid_input(
            "partition column values must not be null",
        ));
    }
    let data_type = column.data_type();
    if !names_partitions(data_type) {
        return Err(Error::unsupported(format!(
            "partition columns of type {data_type} cannot name a partition here"
        )));
    }
    let s = cast(&column.slice(row, 1), &ArrowType::Utf8)?;
    let value = s
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()
        .ok_or_else(|| Error::internal("cast to string failed"))?
        .value(0)
        .to_string();
    validate_partition_name(&value)?;
    Ok(value)
}
