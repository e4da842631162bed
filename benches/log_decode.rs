//! Log tail decode throughput: this crate's batch reader (framing, CRC-32C, change
//! types, zero-copy Arrow decode) against arrow-ipc's own record-batch reader on the
//! very same ZSTD / LZ4_FRAME messages, in one process.
//!
//! `cargo bench --bench log_decode` prints and writes (`target/bench-results/log_decode.json`)
//! the ratio `fluss rows/s ÷ arrow-ipc rows/s` per codec (target: ≥ 0.80 for ZSTD).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{Criterion, Throughput};
use datafusion::arrow::array::{
    Float64Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::ipc::reader::read_record_batch;
use datafusion::arrow::ipc::root_as_message;
use fluss_datafusion::log::{ArrowCompression, BatchIterator, LogBatchBuilder};

const BATCHES: usize = 64;
const ROWS: usize = 4096;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("price", DataType::Float64, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
    ]))
}

fn batch(k: usize) -> RecordBatch {
    let base = (k * ROWS) as i64;
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(base..base + ROWS as i64)),
            Arc::new(StringArray::from_iter_values(
                (0..ROWS).map(|i| format!("customer-{}", (i * 7919) % 1000)),
            )),
            Arc::new(Float64Array::from_iter_values(
                (0..ROWS).map(|i| (i % 1000) as f64 * 0.25),
            )),
            Arc::new(TimestampMillisecondArray::from_iter_values(
                (0..ROWS as i64).map(|i| 1_700_000_000_000 + base + i),
            )),
        ],
    )
    .unwrap()
}

/// A segment of encoded log batches and, separately, each batch's Arrow message.
fn segment(compression: ArrowCompression) -> (Bytes, Vec<Bytes>) {
    let builder = LogBatchBuilder::new(1, compression);
    let mut segment = Vec::new();
    let mut messages = Vec::new();
    let mut offset = 0i64;
    for k in 0..BATCHES {
        let b = batch(k);
        let encoded = builder.build(offset, 0, &b, None).unwrap();
        offset += b.num_rows() as i64;
        let parsed = fluss_datafusion::log::LogBatch::parse(encoded.clone()).unwrap();
        messages.push(parsed.arrow_message());
        segment.extend_from_slice(&encoded);
    }
    (Bytes::from(segment), messages)
}

fn decode_fluss(segment: &Bytes, schema: &SchemaRef) -> usize {
    let mut rows = 0;
    for batch in BatchIterator::new(segment.clone()) {
        let batch = batch.unwrap();
        batch.verify_crc().unwrap();
        let _changes = batch.change_types().unwrap();
        rows += batch.decode(schema, None).unwrap().num_rows();
    }
    rows
}

fn decode_arrow_ipc(messages: &[Bytes], schema: &SchemaRef) -> usize {
    let mut rows = 0;
    let dictionaries = HashMap::new();
    for message in messages {
        // continuation marker + metadata length + flatbuffer + body
        let meta_len = i32::from_le_bytes(message[4..8].try_into().unwrap()) as usize;
        let meta = &message[8..8 + meta_len];
        let ipc = root_as_message(meta).unwrap();
        let header = ipc.header_as_record_batch().unwrap();
        let body = Buffer::from(message.slice(8 + meta_len..));
        let decoded = read_record_batch(
            &body,
            header,
            schema.clone(),
            &dictionaries,
            None,
            &ipc.version(),
        )
        .unwrap();
        rows += decoded.num_rows();
    }
    rows
}

fn benches(c: &mut Criterion) {
    let schema = schema();
    for (name, compression) in [
        ("zstd", ArrowCompression::Zstd(3)),
        ("lz4_frame", ArrowCompression::Lz4Frame),
    ] {
        let (segment, messages) = segment(compression);
        assert_eq!(
            decode_fluss(&segment, &schema),
            decode_arrow_ipc(&messages, &schema)
        );
        let mut group = c.benchmark_group(format!("log_decode_{name}"));
        group.throughput(Throughput::Elements((BATCHES * ROWS) as u64));
        group.bench_function("arrow_ipc_reader", |b| {
            b.iter(|| black_box(decode_arrow_ipc(&messages, &schema)))
        });
        group.bench_function("fluss_log_reader", |b| {
            b.iter(|| black_box(decode_fluss(&segment, &schema)))
        });
        group.finish();
    }
}

fn mean_ns(group: &str, function: &str) -> Option<f64> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/criterion")
        .join(group)
        .join(function)
        .join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
    // `cargo test --benches` runs each function once without measuring: no report.
    if std::env::args().any(|a| a == "--bench") {
        let mut report = serde_json::Map::new();
        for codec in ["zstd", "lz4_frame"] {
            let group = format!("log_decode_{codec}");
            if let (Some(peer), Some(ours)) = (
                mean_ns(&group, "arrow_ipc_reader"),
                mean_ns(&group, "fluss_log_reader"),
            ) {
                let ratio = peer / ours;
                println!("{codec}: fluss log reader throughput = {ratio:.2} x arrow-ipc reader");
                report.insert(
                    codec.to_string(),
                    serde_json::json!({
                        "arrow_ipc_reader_ns": peer,
                        "fluss_log_reader_ns": ours,
                        "throughput_ratio": ratio,
                        "rows": BATCHES * ROWS,
                    }),
                );
            }
        }
        let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
        let _ = std::fs::create_dir_all(&out);
        let _ = std::fs::write(
            out.join("log_decode.json"),
            serde_json::to_vec_pretty(&serde_json::Value::Object(report)).unwrap(),
        );
    }
}
