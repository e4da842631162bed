//! A query's rows as an Arrow record batch reader: what pyarrow's
//! `RecordBatchReader` (and through its Arrow C stream, Polars and DuckDB) pulls from,
//! one batch at a time, as the query produces them.

use datafusion::arrow::array::{RecordBatch, RecordBatchReader};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;

use crate::runtime::block_on;

/// The batches of a running query, pulled on the process's runtime.
pub struct StreamReader {
    schema: SchemaRef,
    stream: Option<SendableRecordBatchStream>,
}

impl StreamReader {
    /// A reader of `stream`'s batches.
    pub fn new(stream: SendableRecordBatchStream) -> Self {
        Self {
            schema: stream.schema(),
            stream: Some(stream),
        }
    }
}

impl Iterator for StreamReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let stream = self.stream.as_mut()?;
        let next = block_on(stream.next());
        match next {
            Some(Ok(batch)) => Some(Ok(batch)),
            Some(Err(e)) => {
                // An error ends the stream: nothing after it could be trusted.
                self.stream = None;
                Some(Err(ArrowError::ExternalError(Box::new(e))))
            }
            None => {
                self.stream = None;
                None
            }
        }
    }
}

impl RecordBatchReader for StreamReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
