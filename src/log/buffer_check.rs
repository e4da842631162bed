//! Checks that an Arrow IPC record batch's buffers are large enough for the values
//! its field nodes declare, before arrow-ipc builds arrays from them.
//!
//! arrow-ipc trusts some sizes: a validity bitmap shorter than its node's length makes
//! `ArrayDataBuilder::build` panic (`BooleanBuffer::new`) before any validation runs.
//! A damaged batch must be an error naming it, so the columns are walked here in the
//! order the IPC format lays out nodes and buffers (the format's "Buffer layout"
//! table; arrow-ipc `RecordBatchDecoder`), with each buffer's decompressed size.
//! Types whose layout this walk does not know stop it (the rest is left to arrow-ipc).

use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit, Schema};
use datafusion::arrow::ipc;

use super::decompress::uncompressed_length;
use crate::error::{Error, Result};

/// Checks every column of `schema` against the header's nodes and buffers.
pub fn check_buffer_sizes(
    header: &ipc::RecordBatch<'_>,
    body: &[u8],
    schema: &Schema,
) -> Result<()> {
    let compressed = header.compression().is_some();
    let mut buffers = Vec::new();
    for buffer in header.buffers().iter().flatten() {
        buffers.push(if compressed {
            uncompressed_length(buffer, body)?.0
        } else {
            buffer.length().max(0) as usize
        });
    }
    let nodes = header
        .nodes()
        .iter()
        .flatten()
        .map(|n| (n.length().max(0) as usize, n.null_count().max(0) as usize))
        .collect();
    let variadic = header
        .variadicBufferCounts()
        .iter()
        .flatten()
        .collect::<Vec<i64>>();
    let mut walk = Walk {
        buffers,
        nodes,
        variadic,
        next_buffer: 0,
        next_node: 0,
        next_variadic: 0,
    };
    let mut complete = true;
    for field in schema.fields() {
        if !walk.field(field, None)? {
            complete = false;
            break;
        }
    }
    // arrow-ipc asserts that every variadic buffer count is used by a view column
    // (reader.rs `variadic_counts.is_empty()`): a count no column takes is corruption.
    let unused = if complete {
        walk.next_variadic < walk.variadic.len()
    } else {
        !walk.variadic.is_empty() && !schema.fields().iter().any(|f| has_view(f.data_type()))
    };
    if unused {
        return Err(Error::data_invalid(format!(
            "batch declares {} variadic buffer counts, its view columns use {}",
            walk.variadic.len(),
            walk.next_variadic
        )));
    }
    Ok(())
}

/// Whether a type is or holds a view type (the only users of variadic buffers).
fn has_view(data_type: &DataType) -> bool {
    match data_type {
        DataType::Utf8View | DataType::BinaryView => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_view(f.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| has_view(f.data_type())),
        _ => false,
    }
}

struct Walk {
    buffers: Vec<usize>,
    nodes: Vec<(usize, usize)>,
    variadic: Vec<i64>,
    next_buffer: usize,
    next_node: usize,
    next_variadic: usize,
}

/// Bytes of `len` values of a fixed-width type, if it is one.
fn fixed_width(data_type: &DataType) -> Option<usize> {
    use DataType::*;
    Some(match data_type {
        Int8 | UInt8 => 1,
        Int16 | UInt16 | Float16 => 2,
        Int32 | UInt32 | Float32 | Date32 | Time32(_) | Decimal32(_, _) => 4,
        Int64
        | UInt64
        | Float64
        | Date64
        | Time64(_)
        | Timestamp(_, _)
        | Duration(_)
        | Decimal64(_, _) => 8,
        Decimal128(_, _) => 16,
        Decimal256(_, _) => 32,
        Interval(IntervalUnit::YearMonth) => 4,
        Interval(IntervalUnit::DayTime) => 8,
        Interval(IntervalUnit::MonthDayNano) => 16,
        FixedSizeBinary(n) => usize::try_from(*n).ok()?,
        _ => return None,
    })
}

impl Walk {
    fn node(&mut self, field: &Field) -> Result<(usize, usize)> {
        let node = self.nodes.get(self.next_node).copied().ok_or_else(|| {
            Error::data_invalid(format!(
                "the Arrow batch has no field node for column '{}'",
                field.name()
            ))
        })?;
        self.next_node += 1;
        Ok(node)
    }

    fn buffer(&mut self, field: &Field) -> Result<usize> {
        let size = self.buffers.get(self.next_buffer).copied().ok_or_else(|| {
            Error::data_invalid(format!(
                "the Arrow batch has too few buffers for column '{}'",
                field.name()
            ))
        })?;
        self.next_buffer += 1;
        Ok(size)
    }

    /// Takes the next buffer, which must hold at least `needed` bytes; returns its size.
    fn sized(&mut self, field: &Field, what: &str, needed: usize) -> Result<usize> {
        let size = self.buffer(field)?;
        if size < needed {
            return Err(Error::data_invalid(format!(
                "Arrow {what} buffer of column '{}' has {size} bytes, its values need {needed}",
                field.name()
            )));
        }
        Ok(size)
    }

    fn validity(&mut self, field: &Field, len: usize, nulls: usize) -> Result<()> {
        if nulls > len {
            return Err(Error::data_invalid(format!(
                "Arrow column '{}' declares {nulls} nulls in {len} values",
                field.name()
            )));
        }
        let needed = if nulls > 0 { len.div_ceil(8) } else { 0 };
        self.sized(field, "validity", needed).map(drop)
    }

    fn offsets(&mut self, field: &Field, len: usize, width: usize) -> Result<()> {
        let needed = if len > 0 { (len + 1) * width } else { 0 };
        self.whole_values(field, "offsets", needed, width)
    }

    /// Takes a buffer arrow-data reads whole as `width`-byte values (offsets, views):
    /// `Buffer::typed_data` asserts its length is a multiple of the width.
    fn whole_values(
        &mut self,
        field: &Field,
        what: &str,
        needed: usize,
        width: usize,
    ) -> Result<()> {
        let size = self.sized(field, what, needed)?;
        if size % width != 0 {
            return Err(Error::data_invalid(format!(
                "Arrow {what} buffer of column '{}' has {size} bytes, not a multiple of {width}",
                field.name()
            )));
        }
        Ok(())
    }

    /// Walks one column and its children; `Ok(false)` when its layout is unknown here.
    fn field(&mut self, field: &Field, parent_len: Option<usize>) -> Result<bool> {
        let (len, nulls) = self.node(field)?;
        if let Some(parent) = parent_len
            && len < parent
        {
            return Err(Error::data_invalid(format!(
                "Arrow child column '{}' holds {len} values, its parent needs {parent}",
                field.name()
            )));
        }
        use DataType::*;
        match field.data_type() {
            Null => {}
            Boolean => {
                self.validity(field, len, nulls)?;
                self.sized(field, "values", len.div_ceil(8))?;
            }
            Utf8 | Binary => {
                self.validity(field, len, nulls)?;
                self.offsets(field, len, 4)?;
                self.buffer(field)?;
            }
            LargeUtf8 | LargeBinary => {
                self.validity(field, len, nulls)?;
                self.offsets(field, len, 8)?;
                self.buffer(field)?;
            }
            Utf8View | BinaryView => {
                self.validity(field, len, nulls)?;
                self.whole_values(field, "views", len.saturating_mul(16), 16)?;
                let count = self.variadic.get(self.next_variadic).copied().unwrap_or(0);
                self.next_variadic += 1;
                for _ in 0..count.max(0) {
                    self.buffer(field)?;
                }
            }
            List(child) | Map(child, _) => {
                self.validity(field, len, nulls)?;
                self.offsets(field, len, 4)?;
                return self.field(child, None);
            }
            LargeList(child) => {
                self.validity(field, len, nulls)?;
                self.offsets(field, len, 8)?;
                return self.field(child, None);
            }
            FixedSizeList(child, size) => {
                self.validity(field, len, nulls)?;
                let size = usize::try_from(*size).unwrap_or(0);
                return self.field(child, Some(len.saturating_mul(size)));
            }
            Struct(children) => {
                self.validity(field, len, nulls)?;
                for child in children {
                    if !self.field(child, Some(len))? {
                        return Ok(false);
                    }
                }
            }
            other => match fixed_width(other) {
                Some(width) => {
                    self.validity(field, len, nulls)?;
                    self.sized(field, "values", len.saturating_mul(width))?;
                }
                None => return Ok(false),
            },
        }
        Ok(true)
    }
}
