//! The bytes of one encoded node: a JSON header and the binary parts it refers to
//! by index (schemas, expressions and arrays, in DataFusion's and Arrow's own
//! encodings).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf;
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// The first bytes of every node this codec encodes (and a version: a node of
/// another version is refused, never misread).
const MAGIC: &[u8; 8] = b"FLUSSPL1";

/// A part of a frame, by index.
pub(super) type Part = usize;

/// A frame being written.
pub(super) struct FrameWriter<'a> {
    parts: Vec<Vec<u8>>,
    codec: &'a dyn PhysicalExtensionCodec,
    converter: &'a dyn PhysicalProtoConverterExtension,
}

impl<'a> FrameWriter<'a> {
    pub(super) fn new(
        codec: &'a dyn PhysicalExtensionCodec,
        converter: &'a dyn PhysicalProtoConverterExtension,
    ) -> Self {
        // part 0 is the header, written last
        Self {
            parts: vec![Vec::new()],
            codec,
            converter,
        }
    }

    fn push(&mut self, bytes: Vec<u8>) -> Part {
        self.parts.push(bytes);
        self.parts.len() - 1
    }

    /// An Arrow schema (DataFusion's protobuf form).
    pub(super) fn schema(&mut self, schema: &Schema) -> DfResult<Part> {
        let proto = protobuf::Schema::try_from(schema)?;
        Ok(self.push(proto.encode_to_vec()))
    }

    /// A physical expression, through the plan's converter (so its functions and
    /// nested extension expressions encode as the rest of the plan's do).
    pub(super) fn expr(&mut self, expr: &Arc<dyn PhysicalExpr>) -> DfResult<Part> {
        let proto = self.converter.physical_expr_to_proto(expr, self.codec)?;
        Ok(self.push(proto.encode_to_vec()))
    }

    /// Arrays of equal length (Arrow IPC).
    pub(super) fn arrays(&mut self, arrays: &[ArrayRef]) -> Result<Part> {
        let fields: Vec<Field> = arrays
            .iter()
            .enumerate()
            .map(|(i, a)| Field::new(format!("c{i}"), a.data_type().clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), arrays.to_vec())?;
        let mut bytes = Vec::new();
        let mut writer = StreamWriter::try_new(&mut bytes, &schema)?;
        writer.write(&batch)?;
        writer.finish()?;
        drop(writer);
        Ok(self.push(bytes))
    }

    /// The frame with `header` as its JSON header.
    pub(super) fn finish(mut self, header: &impl Serialize, buf: &mut Vec<u8>) -> Result<()> {
        self.parts[0] = serde_json::to_vec(header)
            .map_err(|e| Error::internal("a plan node does not serialize").with_source(e))?;
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&(self.parts.len() as u32).to_le_bytes());
        for part in &self.parts {
            buf.extend_from_slice(&(part.len() as u64).to_le_bytes());
            buf.extend_from_slice(part);
        }
        Ok(())
    }
}

/// A frame being read.
pub(super) struct FrameReader<'a> {
    parts: Vec<&'a [u8]>,
    ctx: PhysicalPlanDecodeContext<'a>,
    converter: &'a dyn PhysicalProtoConverterExtension,
}

impl<'a> FrameReader<'a> {
    /// The frame in `buf`; `None` when `buf` is not one of this codec's nodes.
    pub(super) fn open(
        buf: &'a [u8],
        task: &'a TaskContext,
        codec: &'a dyn PhysicalExtensionCodec,
        converter: &'a dyn PhysicalProtoConverterExtension,
    ) -> Result<Option<Self>> {
        let Some(mut rest) = buf.strip_prefix(MAGIC.as_slice()) else {
            return Ok(None);
        };
        let damaged =
            |what: &str| Error::data_invalid(format!("a shipped plan node is damaged: {what}"));
        let count = take(&mut rest, 4).ok_or_else(|| damaged("no part count"))?;
        let count = u32::from_le_bytes([count[0], count[1], count[2], count[3]]) as usize;
        let mut parts = Vec::with_capacity(count.min(1024));
        for i in 0..count {
            let len = take(&mut rest, 8).ok_or_else(|| damaged("a part has no length"))?;
            let mut le = [0u8; 8];
            le.copy_from_slice(len);
            let len = usize::try_from(u64::from_le_bytes(le))
                .map_err(|_| damaged("a part is longer than memory"))?;
            let part = take(&mut rest, len)
                .ok_or_else(|| damaged(&format!("part {i} of {count} ends early")))?;
            parts.push(part);
        }
        if parts.is_empty() {
            return Err(damaged("no header"));
        }
        if !rest.is_empty() {
            return Err(damaged("bytes after its last part"));
        }
        Ok(Some(Self {
            parts,
            ctx: PhysicalPlanDecodeContext::new(task, codec),
            converter,
        }))
    }

    fn part(&self, part: Part) -> Result<&'a [u8]> {
        self.parts.get(part).copied().ok_or_else(|| {
            Error::data_invalid(format!(
                "a shipped plan node names part {part}, which it lacks"
            ))
        })
    }

    /// The JSON header.
    pub(super) fn header<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(self.part(0)?).map_err(|e| {
            Error::data_invalid("a shipped plan node's header does not deserialize").with_source(e)
        })
    }

    /// The task context the plan is decoded for.
    pub(super) fn task(&self) -> &'a TaskContext {
        self.ctx.task_ctx()
    }

    /// An Arrow schema.
    pub(super) fn schema(&self, part: Part) -> DfResult<SchemaRef> {
        let proto = protobuf::Schema::decode(self.part(part)?)
            .map_err(|e| Error::data_invalid("a shipped schema does not decode").with_source(e))?;
        Ok(Arc::new(Schema::try_from(&proto)?))
    }

    /// A physical expression over `schema`.
    pub(super) fn expr(&self, part: Part, schema: &Schema) -> DfResult<Arc<dyn PhysicalExpr>> {
        let proto = protobuf::PhysicalExprNode::decode(self.part(part)?).map_err(|e| {
            Error::data_invalid("a shipped expression does not decode").with_source(e)
        })?;
        self.converter
            .proto_to_physical_expr(&proto, schema, &self.ctx)
    }

    /// Arrays written by [`FrameWriter::arrays`].
    pub(super) fn arrays(&self, part: Part) -> Result<Vec<ArrayRef>> {
        let mut reader = StreamReader::try_new(self.part(part)?, None)?;
        let batch = reader
            .next()
            .transpose()?
            .ok_or_else(|| Error::data_invalid("shipped arrays hold no batch"))?;
        Ok(batch.columns().to_vec())
    }
}

/// The next `n` bytes of `rest`, if it holds them.
fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if rest.len() < n {
        return None;
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Some(head)
}
