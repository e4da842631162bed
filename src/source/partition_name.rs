//! Partition names rendered from a row's partition-column values, as Fluss names
//! partitions (`PartitionUtils`): each value as a string, joined by `$`.

use datafusion::arrow::array::ArrayRef;

use crate::error::{Error, Result};
use crate::source::layout::validate_partition_name;
use crate::table::partition_value::render_array_value;

#[cfg(feature = "cluster")]
pub(crate) use crate::table::partition_value::names_partitions;

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
    let Some(value) = render_array_value(column, row)? else {
        return Err(Error::invalid_input(
            "partition column values must not be null",
        ));
    };
    validate_partition_name(&value)?;
    Ok(value)
}
