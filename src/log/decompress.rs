//! Decompressing a log batch's projected Arrow buffers before arrow-ipc sees them.
//!
//! Fluss compresses every Arrow buffer of a batch as its own ZSTD or LZ4 frame
//! stream (`ArrowCompressionInfo`, one frame per buffer). arrow-ipc can decompress
//! them itself, but it creates a new ZSTD context for every batch, and for the small
//! batches of a changelog tail that creation cost as much as the decompression (it
//! probes the CPU, a VM exit on a virtual machine). Here the buffers of the projected
//! columns are decompressed with one context per thread into one 64-byte aligned
//! body, and arrow-ipc is handed a header that describes that body as uncompressed,
//! so it slices columns out of it without a copy.
//!
//! Column types whose buffer layout this walk does not know (unions, run-end encoded,
//! list views) return `None`, and the caller lets arrow-ipc decompress as before.

use std::cell::RefCell;
use std::io::Read;

use datafusion::arrow::buffer::{Buffer, MutableBuffer};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::ipc::{self, BodyCompression, CompressionType, FieldNode, RecordBatchArgs};
use flatbuffers::FlatBufferBuilder;

use crate::error::{Error, Result};

/// Uncompressed-length prefix meaning "stored as is" (Arrow IPC `BodyCompression`).
const STORED_UNCOMPRESSED: i64 = -1;

/// Alignment of each buffer in the rebuilt body, so arrow-ipc never copies to align.
const BUFFER_ALIGNMENT: usize = 64;

/// Largest body the decompressed buffers of one batch may add up to; it stops a
/// corrupt length prefix from making us reserve (and zero) absurd amounts of memory.
/// A Fluss batch holds about `client.writer.batch-size` (2 MiB by default) of Arrow
/// data, so this leaves two orders of magnitude of room.
const MAX_BODY_BYTES: usize = 256 << 20;

thread_local! {
    /// One ZSTD decompression context per thread, reused for every buffer.
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// An uncompressed copy of a batch: a record-batch header (flatbuffer bytes) and
/// the body it describes. Buffers of columns outside the projection are left out
/// (offset 0, length 0): arrow-ipc skips them without reading.
#[derive(Debug)]
pub struct DecompressedBatch {
    header: Vec<u8>,
    header_start: usize,
    body: Buffer,
}

impl DecompressedBatch {
    /// The rewritten record-batch header.
    pub fn header(&self) -> Result<ipc::RecordBatch<'_>> {
        flatbuffers::root::<ipc::RecordBatch>(&self.header[self.header_start..]).map_err(|e| {
            Error::data_invalid(format!("rebuilt Arrow record batch header is invalid: {e}"))
        })
    }

    /// The body holding the decompressed buffers.
    pub fn body(&self) -> &Buffer {
        &self.body
    }
}

/// Decompresses the buffers of the `projection` columns (all when `None`) of a
/// compressed record batch. `body` is the message body the header's buffer offsets
/// refer to (bounds already checked). Returns `None` when a column type has a buffer
/// layout this walk does not know.
pub fn decompress_projected(
    header: &ipc::RecordBatch<'_>,
    body: &[u8],
    schema: &Schema,
    projection: Option<&[usize]>,
) -> Result<Option<DecompressedBatch>> {
    let Some(compression) = header.compression() else {
        return Ok(None);
    };
    let codec = Codec::of(compression)?;
    let Some(needed) = needed_buffers(header, schema, projection) else {
        return Ok(None);
    };
    let buffers: Vec<ipc::Buffer> = header
        .buffers()
        .map(|b| b.iter().copied().collect())
        .unwrap_or_default();
    if needed.len() != buffers.len() {
        return Err(Error::data_invalid(format!(
            "Arrow header lists {} buffers but the schema's columns need {}",
            buffers.len(),
            needed.len()
        )));
    }

    // Lay the decompressed buffers out back to back, each aligned.
    let mut layout = Vec::with_capacity(buffers.len());
    let mut stored = Vec::with_capacity(buffers.len());
    let mut total = 0usize;
    for (i, (buffer, needed)) in buffers.iter().zip(&needed).enumerate() {
        let (length, as_is) = if *needed {
            uncompressed_length(buffer, body)?
        } else {
            (0, false)
        };
        // A ZSTD frame records its own content size: a length prefix that disagrees is
        // damaged, and is caught before anything is allocated for it.
        if *needed && !as_is && length > 0 && matches!(codec, Codec::Zstd) {
            let start = buffer.offset() as usize + 8;
            let frame = &body[start..buffer.offset() as usize + buffer.length() as usize];
            if let Ok(Some(content)) = zstd::zstd_safe::get_frame_content_size(frame)
                && content != length as u64
            {
                return Err(Error::data_invalid(format!(
                    "Arrow buffer {i} declares {length} bytes but its ZSTD frame holds {content}"
                )));
            }
        }
        layout.push(ipc::Buffer::new(total as i64, length as i64));
        stored.push(as_is);
        total = total
            .checked_add(length.next_multiple_of(BUFFER_ALIGNMENT))
            .filter(|t| *t <= MAX_BODY_BYTES)
            .ok_or_else(|| {
                Error::data_invalid(format!(
                    "Arrow buffers declare more than {MAX_BODY_BYTES} uncompressed bytes"
                ))
            })?;
    }
    let mut out = MutableBuffer::from_len_zeroed(total);
    for (i, ((source, target), as_is)) in buffers.iter().zip(&layout).zip(&stored).enumerate() {
        // Buffers outside the projection were laid out with length 0.
        if target.length() == 0 {
            continue;
        }
        let start = source.offset() as usize;
        let input = &body[start + 8..start + source.length() as usize];
        let output =
            &mut out.as_slice_mut()[target.offset() as usize..][..target.length() as usize];
        if *as_is {
            // its laid-out length is exactly the bytes after the prefix
            output.copy_from_slice(input);
        } else {
            codec
                .decompress(input, output)
                .map_err(|e| e.with_context("arrow_buffer", i))?;
        }
    }

    let mut builder = FlatBufferBuilder::with_capacity(128 + 16 * layout.len());
    let nodes: Vec<FieldNode> = header
        .nodes()
        .map(|n| n.iter().copied().collect())
        .unwrap_or_default();
    let nodes = builder.create_vector(&nodes);
    let buffers = builder.create_vector(&layout);
    let variadic = header
        .variadicBufferCounts()
        .map(|counts| builder.create_vector(&counts.iter().collect::<Vec<i64>>()));
    let record_batch = ipc::RecordBatch::create(
        &mut builder,
        &RecordBatchArgs {
            length: header.length(),
            nodes: Some(nodes),
            buffers: Some(buffers),
            compression: None,
            variadicBufferCounts: variadic,
        },
    );
    builder.finish(record_batch, None);
    let (bytes, start) = builder.collapse();
    Ok(Some(DecompressedBatch {
        header: bytes,
        header_start: start,
        body: out.into(),
    }))
}

/// The codec of a batch's buffers.
#[derive(Debug, Clone, Copy)]
enum Codec {
    Zstd,
    Lz4Frame,
}

impl Codec {
    fn of(compression: BodyCompression<'_>) -> Result<Self> {
        match compression.codec() {
            CompressionType::ZSTD => Ok(Codec::Zstd),
            CompressionType::LZ4_FRAME => Ok(Codec::Lz4Frame),
            other => Err(Error::data_invalid(format!(
                "unknown Arrow body compression codec {other:?}"
            ))),
        }
    }

    /// Decompresses `input` into exactly `output.len()` bytes.
    fn decompress(self, input: &[u8], output: &mut [u8]) -> Result<()> {
        let written = match self {
            Codec::Zstd => ZSTD.with(|cell| {
                let mut slot = cell.borrow_mut();
                let decompressor = match slot.as_mut() {
                    Some(d) => d,
                    None => slot.insert(zstd::bulk::Decompressor::new().map_err(|e| {
                        Error::data_invalid("cannot create a ZSTD context").with_source(e)
                    })?),
                };
                decompressor
                    .decompress_to_buffer(input, output)
                    .map_err(|e| {
                        Error::data_invalid("ZSTD buffer could not be decompressed").with_source(e)
                    })
            })?,
            Codec::Lz4Frame => {
                let mut decoder = lz4_flex::frame::FrameDecoder::new(input);
                decoder.read_exact(output).map_err(|e| {
                    Error::data_invalid("LZ4 frame buffer could not be decompressed").with_source(e)
                })?;
                // The stream must end where the declared length says.
                let mut extra = [0u8; 1];
                let more = decoder.read(&mut extra).map_err(|e| {
                    Error::data_invalid("LZ4 frame buffer could not be decompressed").with_source(e)
                })?;
                output.len() + more
            }
        };
        if written != output.len() {
            return Err(Error::data_invalid(format!(
                "buffer decompressed to {written} bytes but declares {}",
                output.len()
            )));
        }
        Ok(())
    }
}

/// The 8-byte uncompressed-length prefix of a compressed buffer.
fn prefix(buffer: &ipc::Buffer, body: &[u8]) -> Result<[u8; 8]> {
    let start = buffer.offset() as usize;
    body.get(start..start + 8)
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| Error::data_invalid("compressed Arrow buffer has no length prefix"))
}

/// Bytes a needed buffer takes once decompressed (0 for an empty buffer), and
/// whether it is stored as is (a -1 prefix) rather than compressed.
pub(super) fn uncompressed_length(buffer: &ipc::Buffer, body: &[u8]) -> Result<(usize, bool)> {
    if buffer.length() == 0 {
        return Ok((0, false));
    }
    if buffer.length() < 8 {
        return Err(Error::data_invalid(format!(
            "compressed Arrow buffer of {} bytes has no length prefix",
            buffer.length()
        )));
    }
    match i64::from_le_bytes(prefix(buffer, body)?) {
        STORED_UNCOMPRESSED => Ok((buffer.length() as usize - 8, true)),
        declared => usize::try_from(declared)
            .ok()
            .filter(|d| *d <= MAX_BODY_BYTES)
            .map(|d| (d, false))
            .ok_or_else(|| {
                Error::data_invalid(format!(
                    "Arrow buffer declares {declared} uncompressed bytes"
                ))
            }),
    }
}

/// Which buffers of the header the projected columns use, in header order; `None`
/// when a column type's buffer layout is not known here.
fn needed_buffers(
    header: &ipc::RecordBatch<'_>,
    schema: &Schema,
    projection: Option<&[usize]>,
) -> Option<Vec<bool>> {
    let mut variadic = header
        .variadicBufferCounts()
        .map(|v| v.iter().collect::<Vec<i64>>())
        .unwrap_or_default()
        .into_iter();
    let mut needed = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let count = buffer_count(field, &mut variadic)?;
        let wanted = projection.is_none_or(|p| p.contains(&i));
        needed.extend(std::iter::repeat_n(wanted, count));
    }
    Some(needed)
}

/// Number of IPC buffers a column of `field`'s type takes, children included
/// (arrow-ipc `RecordBatchDecoder::skip_field`).
fn buffer_count(field: &Field, variadic: &mut impl Iterator<Item = i64>) -> Option<usize> {
    use DataType::*;
    Some(match field.data_type() {
        Null => 0,
        Boolean
        | Int8
        | Int16
        | Int32
        | Int64
        | UInt8
        | UInt16
        | UInt32
        | UInt64
        | Float16
        | Float32
        | Float64
        | Timestamp(_, _)
        | Date32
        | Date64
        | Time32(_)
        | Time64(_)
        | Duration(_)
        | Interval(_)
        | Decimal32(_, _)
        | Decimal64(_, _)
        | Decimal128(_, _)
        | Decimal256(_, _)
        | FixedSizeBinary(_)
        | Dictionary(_, _) => 2,
        Utf8 | Binary | LargeUtf8 | LargeBinary => 3,
        Utf8View | BinaryView => 2 + usize::try_from(variadic.next()?).ok()?,
        List(child) | LargeList(child) | Map(child, _) => 2 + buffer_count(child, variadic)?,
        FixedSizeList(child, _) => 1 + buffer_count(child, variadic)?,
        Struct(children) => {
            let mut count = 1;
            for child in children {
                count += buffer_count(child, variadic)?;
            }
            count
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use datafusion::arrow::array::{
        ArrayRef, Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StringViewArray,
        StructArray,
    };
    use datafusion::arrow::datatypes::{DataType, Field, Fields, Int32Type, Schema};

    use crate::log::ArrowCompression;
    use crate::log::batch::decode_arrow_message;
    use crate::log::builder::encode_arrow_message;

    /// A batch with flat, nested and variadic columns, so every layout rule is walked.
    fn mixed_batch(rows: usize) -> RecordBatch {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows as i64));
        let names: ArrayRef = Arc::new(StringArray::from_iter(
            (0..rows).map(|i| (i % 7 != 0).then(|| format!("name-{i}"))),
        ));
        let lists: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..rows).map(|i| Some((0..(i % 4) as i32).map(Some).collect::<Vec<_>>())),
        ));
        let struct_fields = Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
        ]);
        let structs: ArrayRef = Arc::new(StructArray::new(
            struct_fields.clone(),
            vec![
                Arc::new(Int32Array::from_iter_values(0..rows as i32)),
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| "x".repeat(i % 5)),
                )),
            ],
            None,
        ));
        let views: ArrayRef = Arc::new(StringViewArray::from_iter_values(
            (0..rows).map(|i| format!("a string longer than twelve bytes {i}")),
        ));
        // Random values do not compress: their buffer is stored with a -1 prefix.
        let noise: ArrayRef = Arc::new(Int64Array::from_iter_values((0..rows as u64).map(|i| {
            let z = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            ((z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ (z >> 29)) as i64
        })));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new_list("list", Field::new_list_field(DataType::Int32, true), true),
            Field::new_struct("row", struct_fields, true),
            Field::new("view", DataType::Utf8View, false),
            Field::new("noise", DataType::Int64, false),
        ]));
        RecordBatch::try_new(schema, vec![ids, names, lists, structs, views, noise]).unwrap()
    }

    fn round_trip(compression: ArrowCompression, projection: Option<&[usize]>) {
        let batch = mixed_batch(1000);
        let message = Bytes::from(encode_arrow_message(&batch, compression).unwrap());
        let decoded = decode_arrow_message(
            message,
            &batch.schema(),
            projection,
            batch.num_rows() as i32,
        )
        .unwrap();
        let expected = match projection {
            Some(p) => batch.project(p).unwrap(),
            None => batch,
        };
        assert_eq!(decoded, expected);
    }

    #[test]
    fn zstd_and_lz4_buffers_decode_for_every_projection() {
        for compression in [ArrowCompression::Zstd(3), ArrowCompression::Lz4Frame] {
            round_trip(compression, None);
            for projection in [
                &[0][..],
                &[1],
                &[2],
                &[3],
                &[4],
                &[5],
                &[4, 0],
                &[5, 3, 1],
                &[],
            ] {
                round_trip(compression, Some(projection));
            }
        }
    }

    #[test]
    fn the_rebuilt_header_describes_only_projected_buffers() {
        let batch = mixed_batch(100);
        let message = encode_arrow_message(&batch, ArrowCompression::Zstd(3)).unwrap();
        let meta_len = i32::from_le_bytes(message[4..8].try_into().unwrap()) as usize;
        let ipc_message =
            datafusion::arrow::ipc::root_as_message(&message[8..8 + meta_len]).unwrap();
        let header = ipc_message.header_as_record_batch().unwrap();
        let body = &message[8 + meta_len..];
        let stored = header.buffers().unwrap().iter().filter(|b| {
            let start = b.offset() as usize;
            b.length() >= 8 && body[start..start + 8] == (-1i64).to_le_bytes()
        });
        assert!(
            stored.count() > 0,
            "the noise column is stored uncompressed"
        );
        let decompressed = super::decompress_projected(&header, body, &batch.schema(), Some(&[1]))
            .unwrap()
            .unwrap();
        let rebuilt = decompressed.header().unwrap();
        assert!(rebuilt.compression().is_none());
        let lengths: Vec<i64> = rebuilt
            .buffers()
            .unwrap()
            .iter()
            .map(|b| b.length())
            .collect();
        // id: 2 buffers, name: 3 (validity, offsets, data), then list/struct/view skipped.
        assert_eq!(lengths.len(), header.buffers().unwrap().len());
        assert!(lengths[..2].iter().all(|l| *l == 0));
        assert!(lengths[2..5].iter().all(|l| *l > 0));
        assert!(lengths[5..].iter().all(|l| *l == 0));
        assert!(
            rebuilt
                .buffers()
                .unwrap()
                .iter()
                .all(|b| b.offset() % 64 == 0)
        );
    }
}
