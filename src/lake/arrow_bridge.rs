//! Moves record batches between arrow 59 (DataFusion, fluss-rs) and arrow 58 (the
//! paimon crate) without copying, through the Arrow C Data Interface: both versions
//! share the same `#[repr(C)]` structs (`docs/reference/lake-crates.md` §4).

use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, RecordBatchOptions, StructArray};
use datafusion::arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi, to_ffi};

use crate::error::{Error, Result};

/// Converts an arrow-59 batch to arrow 58 (for the paimon writer).
pub fn to_arrow58(batch: &RecordBatch) -> Result<arrow58::record_batch::RecordBatch> {
    let rows = batch.num_rows();
    if batch.num_columns() == 0 {
        let options = arrow58::record_batch::RecordBatchOptions::new().with_row_count(Some(rows));
        return arrow58::record_batch::RecordBatch::try_new_with_options(
            Arc::new(arrow58::datatypes::Schema::empty()),
            vec![],
            &options,
        )
        .map_err(|e| Error::internal("arrow 58 batch").with_source(e));
    }
    let structs = StructArray::from(batch.clone());
    let (array, schema) = to_ffi(&structs.to_data())?;
    // SAFETY: arrow 58 and 59 define the same C Data Interface structs; ownership moves
    // with the boxes and the release callbacks stay with the data.
    let (array, schema) = unsafe {
        let array = Box::into_raw(Box::new(array)) as *mut arrow58::ffi::FFI_ArrowArray;
        let schema = Box::into_raw(Box::new(schema)) as *mut arrow58::ffi::FFI_ArrowSchema;
        (*Box::from_raw(array), *Box::from_raw(schema))
    };
    let data = unsafe { arrow58::ffi::from_ffi(array, &schema) }
        .map_err(|e| Error::internal("arrow 59 -> 58 conversion failed").with_source(e))?;
    Ok(arrow58::array::StructArray::from(data).into())
}

/// Converts an arrow-58 batch (from the paimon reader) to arrow 59.
pub fn from_arrow58(batch: arrow58::record_batch::RecordBatch) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    if batch.num_columns() == 0 {
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        return Ok(RecordBatch::try_new_with_options(
            Arc::new(datafusion::arrow::datatypes::Schema::empty()),
            vec![],
            &options,
        )?);
    }
    use arrow58::array::Array as _;
    let structs = arrow58::array::StructArray::from(batch);
    let (array, schema) = arrow58::ffi::to_ffi(&structs.to_data())
        .map_err(|e| Error::internal("arrow 58 export failed").with_source(e))?;
    let (array, schema) = unsafe {
        let array = Box::into_raw(Box::new(array)) as *mut FFI_ArrowArray;
        let schema = Box::into_raw(Box::new(schema)) as *mut FFI_ArrowSchema;
        (*Box::from_raw(array), *Box::from_raw(schema))
    };
    let data = unsafe { from_ffi(array, &schema) }?;
    let structs = StructArray::from(data);
    if structs.len() != rows {
        return Err(Error::internal(
            "row count changed in arrow 58 -> 59 conversion",
        ));
    }
    Ok(RecordBatch::from(structs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray, TimestampMicrosecondArray};

    #[test]
    fn round_trips_through_arrow58() {
        let batch = RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as _),
            (
                "name",
                Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])) as _,
            ),
            (
                "ts",
                Arc::new(TimestampMicrosecondArray::from(vec![1, 2, 3]).with_timezone("UTC")) as _,
            ),
        ])
        .unwrap();
        let b58 = to_arrow58(&batch).unwrap();
        assert_eq!(b58.num_rows(), 3);
        assert_eq!(
            b58.schema().field(2).data_type().to_string(),
            "Timestamp(µs, \"UTC\")"
        );
        let back = from_arrow58(b58).unwrap();
        assert_eq!(back, batch);
    }
}
