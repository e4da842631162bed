//! Small helpers shared by the scan nodes: EXPLAIN text and LIMIT on streams.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result as DfResult;
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::union::BucketCut;

/// `0:[10,20) 1:[0,5)` (or `p=2024-01-01/0:[..)`), abbreviated past 16 buckets.
pub fn describe_buckets(buckets: &[BucketCut]) -> String {
    let mut parts: Vec<String> = buckets
        .iter()
        .take(16)
        .map(|b| {
            let prefix = b
                .location
                .partition
                .as_ref()
                .map_or(String::new(), |(_, name)| format!("{name}/"));
            format!(
                "{prefix}{}:[{},{})",
                b.location.bucket, b.range.start, b.range.stop
            )
        })
        .collect();
    if buckets.len() > 16 {
        parts.push(format!("... {} more", buckets.len() - 16));
    }
    parts.join(" ")
}

/// Column names of a schema, comma separated.
pub fn describe_projection(schema: &SchemaRef) -> String {
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Stops a batch stream after `limit` rows (the last batch is sliced).
pub fn limit_stream(
    stream: BoxStream<'static, DfResult<RecordBatch>>,
    limit: Option<usize>,
) -> BoxStream<'static, DfResult<RecordBatch>> {
    let Some(limit) = limit else {
        return stream;
    };
    stream
        .scan(0usize, move |seen, batch| {
            let out = match batch {
                Err(e) => Some(Err(e)),
                Ok(_) if *seen >= limit => None,
                Ok(b) => {
                    let take = (limit - *seen).min(b.num_rows());
                    *seen += take;
                    Some(Ok(b.slice(0, take)))
                }
            };
            futures::future::ready(out)
        })
        .boxed()
}
