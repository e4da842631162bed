//! Tests of the Fluss log batch codec and segment files (inside the crate: they reach
//! segment framing and recovery, which are not public).
//!
//! The byte layout checked here is `docs/reference/fluss-formats.md` §1: little-endian header,
//! CRC-32C from `SchemaId` to the end, V0/V1/V2 header sizes 48/52/56, change-type vector
//! after the statistics, one Arrow IPC record-batch message last.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::ErrorKind;
use crate::log::reader::bucket_offsets;
use crate::log::segment::{SegmentFile, SegmentWriter, frame_segment, list_segments};
use crate::log::{
    ArrowCompression, BatchIterator, BatchStatistics, BucketLogReader, ChangeTypes, ChangelogBatch,
    LogBatch, LogBatchBuilder, LogMagic, LogRange, LogReadMetrics, LogReadOptions, SchemaHistory,
    SchemaVersion,
};
use crate::storage::Storage;
use bytes::Bytes;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Decimal128Array, Int32Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{Int32Type, Int64Type};
use datafusion::arrow::ipc::root_as_message;
use datafusion::common::DFSchema;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use datafusion::prelude::{SessionContext, col, lit};
use datafusion::scalar::ScalarValue;
use fluss::metadata::{Column, DataTypes, Schema};
use fluss::record::ChangeType;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

const BUCKET: &str = "log-0";

/// `id INT, name STRING` (column ids 0, 1), schema id 1.
fn simple_version() -> SchemaVersion {
    let schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("name", DataTypes::string())
        .build()
        .unwrap();
    SchemaVersion::new(1, schema).unwrap()
}

/// Rows `id = i, name = "name-i"` for `i` in `ids` (every 7th name null).
fn simple_batch(version: &SchemaVersion, ids: Range<i32>) -> RecordBatch {
    let names: Vec<Option<String>> = ids
        .clone()
        .map(|i| (i % 7 != 3).then(|| format!("name-{i}")))
        .collect();
    RecordBatch::try_new(
        version.arrow.clone(),
        vec![
            Arc::new(Int32Array::from_iter_values(ids)) as ArrayRef,
            Arc::new(StringArray::from(names)),
        ],
    )
    .unwrap()
}

fn history(versions: impl IntoIterator<Item = SchemaVersion>) -> Arc<SchemaHistory> {
    let mut h = SchemaHistory::default();
    for v in versions {
        h.insert(v);
    }
    Arc::new(h)
}

/// Recomputes the CRC-32C of a (possibly patched) batch from the spec offsets.
fn recompute_crc(buf: &mut [u8]) {
    let (crc_at, schema_id_at) = if buf[12] == 2 { (25, 29) } else { (21, 25) };
    let crc = crc32c::crc32c(&buf[schema_id_at..]);
    buf[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
}

fn le_i64(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn le_i16(b: &[u8], at: usize) -> i16 {
    i16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

/// Expected header values, checked against both the accessors and the raw bytes.
struct ExpectedHeader {
    magic: LogMagic,
    base_offset: i64,
    commit_timestamp: i64,
    leader_epoch: Option<i32>,
    schema_id: i16,
    append_only: bool,
    records: i32,
    writer_id: i64,
    batch_sequence: i32,
}

fn check_header(bytes: &Bytes, e: &ExpectedHeader) -> LogBatch {
    let batch = LogBatch::parse(bytes.clone()).unwrap();
    let delta = (e.records - 1).max(0);
    // Accessors.
    assert_eq!(batch.magic(), e.magic);
    assert_eq!(batch.base_offset(), e.base_offset);
    assert_eq!(batch.size_in_bytes(), bytes.len());
    assert_eq!(batch.commit_timestamp(), e.commit_timestamp);
    assert_eq!(batch.leader_epoch(), e.leader_epoch);
    assert_eq!(batch.schema_id(), e.schema_id);
    assert_eq!(batch.is_append_only(), e.append_only);
    assert_eq!(batch.attributes() & 1 == 1, e.append_only);
    assert_eq!(batch.attributes() & 0xFE, 0, "bits 1-7 are unused");
    assert_eq!(batch.record_count(), e.records);
    assert_eq!(batch.last_offset_delta(), delta);
    assert_eq!(batch.last_offset(), e.base_offset + delta as i64);
    assert_eq!(batch.next_offset(), e.base_offset + delta as i64 + 1);
    assert_eq!(batch.writer_id(), e.writer_id);
    assert_eq!(batch.batch_sequence(), e.batch_sequence);
    batch.verify_crc().unwrap();
    assert_eq!(batch.crc(), batch.compute_crc());

    // Raw bytes at the offsets of the spec table (§1.3), independent of LogMagic.
    let b = bytes.as_ref();
    let shift = if e.magic == LogMagic::V2 { 4 } else { 0 };
    let header_size = match e.magic {
        LogMagic::V0 => 48,
        LogMagic::V1 => 52,
        LogMagic::V2 => 56,
    };
    assert_eq!(le_i64(b, 0), e.base_offset);
    assert_eq!(le_i32(b, 8) as usize, b.len() - 12, "length = total - 12");
    assert_eq!(b[12], e.magic.to_byte());
    assert_eq!(le_i64(b, 13), e.commit_timestamp);
    if let Some(epoch) = e.leader_epoch {
        assert_eq!(le_i32(b, 21), epoch);
    }
    let crc_at = 21 + shift;
    let schema_id_at = 25 + shift;
    assert_eq!(le_u32(b, crc_at), crc32c::crc32c(&b[schema_id_at..]));
    assert_eq!(le_u32(b, crc_at), batch.crc());
    assert_eq!(le_i16(b, schema_id_at), e.schema_id);
    assert_eq!(b[27 + shift], u8::from(e.append_only));
    assert_eq!(le_i32(b, 28 + shift), delta);
    assert_eq!(le_i64(b, 32 + shift), e.writer_id);
    assert_eq!(le_i32(b, 40 + shift), e.batch_sequence);
    assert_eq!(le_i32(b, 44 + shift), e.records);
    if e.magic == LogMagic::V0 {
        assert_eq!(batch.statistics_length(), 0);
        assert!(batch.statistics_bytes().is_none());
    } else {
        let stats_len = le_i32(b, 48 + shift);
        assert_eq!(batch.statistics_length(), stats_len);
        if stats_len > 0 {
            let stats = batch.statistics_bytes().unwrap();
            assert_eq!(stats.len(), stats_len as usize);
            assert_eq!(stats, &b[header_size..header_size + stats_len as usize]);
            assert_eq!(stats[0], 1, "statistics version byte");
        }
    }
    // The Arrow message starts with the IPC continuation marker right after
    // header + statistics + change types.
    let ct_len = if e.append_only { 0 } else { e.records as usize };
    let arrow_at = header_size + batch.statistics_length() as usize + ct_len;
    assert_eq!(batch.arrow_message().as_ref(), &b[arrow_at..]);
    assert_eq!(le_u32(b, arrow_at), 0xFFFF_FFFF);
    batch
}

/// Bytes of one encoded batch with a patch applied and the CRC recomputed.
fn patched(bytes: &Bytes, patch: impl FnOnce(&mut Vec<u8>)) -> Bytes {
    let mut v = bytes.to_vec();
    patch(&mut v);
    recompute_crc(&mut v);
    Bytes::from(v)
}

async fn open_storage() -> (tempfile::TempDir, Storage) {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap()).unwrap();
    (dir, storage)
}

/// Appends encoded batches to the bucket through a fresh `SegmentWriter`.
async fn append_all(storage: &Storage, roll_size: usize, batches: &[Bytes]) -> SegmentWriter {
    let mut writer = SegmentWriter::open(storage, BUCKET, roll_size, None)
        .await
        .unwrap();
    for b in batches {
        let batch = LogBatch::parse(b.clone()).unwrap();
        writer.append(storage, &batch).await.unwrap();
    }
    writer
}

async fn read_range(
    storage: &Storage,
    range: Range<i64>,
    schemas: &Arc<SchemaHistory>,
    target_id: i32,
    options: LogReadOptions,
) -> crate::Result<(Vec<ChangelogBatch>, LogReadMetrics)> {
    let target = schemas.get(target_id)?;
    BucketLogReader::new(
        storage.clone(),
        BUCKET.to_string(),
        LogRange::new(range.start, range.end),
        schemas.clone(),
        target,
        options,
    )?
    .collect()
    .await
}

/// `(first_offset, rows)` of each returned batch.
fn shape(batches: &[ChangelogBatch]) -> Vec<(i64, usize)> {
    batches
        .iter()
        .map(|b| (b.first_offset, b.batch.num_rows()))
        .collect()
}

/// All `id` values (column 0, Int32) of the returned batches.
fn ids(batches: &[ChangelogBatch]) -> Vec<i32> {
    batches
        .iter()
        .flat_map(|b| {
            b.batch
                .column(0)
                .as_primitive::<Int32Type>()
                .values()
                .to_vec()
        })
        .collect()
}

/// A log of `n` batches of `rows` rows each where `id == offset`, schema id 1.
fn simple_log(version: &SchemaVersion, n: i64, rows: i64, builder: &LogBatchBuilder) -> Vec<Bytes> {
    (0..n)
        .map(|k| {
            let base = k * rows;
            let batch = simple_batch(version, base as i32..(base + rows) as i32);
            builder.build(base, 1_000 + k, &batch, None).unwrap()
        })
        .collect()
}

fn segment_file_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(BUCKET))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs every read path over `bytes`; returns whether any of them panicked.
fn panics_on(bytes: Bytes, version: &SchemaVersion) -> bool {
    catch_unwind(AssertUnwindSafe(|| {
        if let Ok(batch) = LogBatch::parse(bytes.clone()) {
            let _ = batch.verify_crc();
            let _ = (
                batch.base_offset(),
                batch.last_offset(),
                batch.next_offset(),
                batch.commit_timestamp(),
                batch.leader_epoch(),
                batch.writer_id(),
                batch.batch_sequence(),
                batch.schema_id(),
                batch.is_append_only(),
            );
            if let Ok(ct) = batch.change_types() {
                let _ = (ct.len(), ct.iter().take(1_000).count());
            }
            if let Some(stats) = batch.statistics_bytes() {
                let _ = BatchStatistics::parse(stats, version.row_type());
            }
            let _ = batch.decode(&version.arrow, None);
            let _ = batch.decode(&version.arrow, Some(&[1]));
        }
        let mut iter = BatchIterator::new(bytes.clone());
        for b in iter.by_ref() {
            let _ = b;
        }
        let _ = iter.torn_tail();
        let segment = SegmentFile {
            base_offset: 0,
            path: format!("{BUCKET}/00000000000000000000.log"),
        };
        let _ = frame_segment(bytes.clone(), &segment, true);
        let _ = frame_segment(bytes, &segment, false);
    }))
    .is_err()
}

// ---------------------------------------------------------------------------------------
// 1. Header fields
// ---------------------------------------------------------------------------------------

#[test]
fn v0_header_round_trips() {
    let v = simple_version();
    let bytes = LogBatchBuilder::new(1, ArrowCompression::None)
        .build(1_000, 1_700_000_000_123, &simple_batch(&v, 0..5), None)
        .unwrap();
    let batch = check_header(
        &bytes,
        &ExpectedHeader {
            magic: LogMagic::V0,
            base_offset: 1_000,
            commit_timestamp: 1_700_000_000_123,
            leader_epoch: None,
            schema_id: 1,
            append_only: true,
            records: 5,
            writer_id: -1,
            batch_sequence: -1,
        },
    );
    assert_eq!(batch.last_offset(), 1_004);
    assert_eq!(batch.next_offset(), 1_005);
    assert_eq!(bytes[12], 0);
}

#[test]
fn v1_header_with_statistics_round_trips() {
    let v = simple_version();
    let bytes = LogBatchBuilder::new(3, ArrowCompression::Zstd(3))
        .with_statistics(v.row_type().clone(), vec![0, 1])
        .with_writer(77, 12)
        .build(42, 9_999, &simple_batch(&v, 10..20), None)
        .unwrap();
    let batch = check_header(
        &bytes,
        &ExpectedHeader {
            magic: LogMagic::V1,
            base_offset: 42,
            commit_timestamp: 9_999,
            leader_epoch: None,
            schema_id: 3,
            append_only: true,
            records: 10,
            writer_id: 77,
            batch_sequence: 12,
        },
    );
    assert_eq!(bytes[12], 1);
    assert!(batch.statistics_length() > 0);
    assert_eq!(batch.next_offset(), 52);

    let stats = BatchStatistics::parse(batch.statistics_bytes().unwrap(), v.row_type()).unwrap();
    let id = stats.column(0).unwrap();
    assert_eq!(id.null_count, 0);
    assert_eq!(id.min, Some(ScalarValue::Int32(Some(10))));
    assert_eq!(id.max, Some(ScalarValue::Int32(Some(19))));
    let name = stats.column(1).unwrap();
    assert_eq!(
        name.null_count, 2,
        "ids 10 and 17 have null names (i % 7 == 3)"
    );
    // Strings compare bytewise: "name-11" < ... < "name-19" (name-10 is null).
    assert_eq!(name.min, Some(ScalarValue::Utf8(Some("name-11".into()))));
    assert_eq!(name.max, Some(ScalarValue::Utf8(Some("name-19".into()))));

    let decoded = batch.decode(&v.arrow, None).unwrap();
    assert_eq!(decoded, simple_batch(&v, 10..20));
}

#[test]
fn v2_header_with_leader_epoch_round_trips() {
    let v = simple_version();
    let bytes = LogBatchBuilder::new(2, ArrowCompression::Lz4Frame)
        .with_magic(LogMagic::V2)
        .with_statistics(v.row_type().clone(), vec![0])
        .with_leader_epoch(9)
        .with_writer(5, 0)
        .build(7, 123, &simple_batch(&v, 0..3), None)
        .unwrap();
    let batch = check_header(
        &bytes,
        &ExpectedHeader {
            magic: LogMagic::V2,
            base_offset: 7,
            commit_timestamp: 123,
            leader_epoch: Some(9),
            schema_id: 2,
            append_only: true,
            records: 3,
            writer_id: 5,
            batch_sequence: 0,
        },
    );
    assert_eq!(bytes[12], 2);
    assert_eq!(le_i32(&bytes, 21), 9);
    assert!(batch.statistics_length() > 0, "V2 carries statistics too");
    assert_eq!(
        batch.decode(&v.arrow, None).unwrap(),
        simple_batch(&v, 0..3)
    );
}

#[test]
fn v2_without_epoch_writes_no_leader_epoch_and_v0_forced_drops_statistics() {
    let v = simple_version();
    let v2 = LogBatchBuilder::new(1, ArrowCompression::None)
        .with_magic(LogMagic::V2)
        .build(0, 0, &simple_batch(&v, 0..2), None)
        .unwrap();
    let v2 = LogBatch::parse(v2).unwrap();
    assert_eq!(v2.leader_epoch(), Some(-1));
    assert_eq!(v2.statistics_length(), 0, "no statistics configured");

    // Forcing V0 with statistics configured writes no statistics block.
    let v0 = LogBatchBuilder::new(1, ArrowCompression::None)
        .with_statistics(v.row_type().clone(), vec![0])
        .with_magic(LogMagic::V0)
        .build(0, 0, &simple_batch(&v, 0..2), None)
        .unwrap();
    let v0 = LogBatch::parse(v0).unwrap();
    assert_eq!(v0.magic(), LogMagic::V0);
    assert_eq!(v0.size_in_bytes(), 48 + v0.arrow_message().len());
    v0.verify_crc().unwrap();

    // An empty statistics mapping keeps V0, as Fluss does without table.statistics.columns.
    let plain = LogBatchBuilder::new(1, ArrowCompression::None)
        .with_statistics(v.row_type().clone(), vec![])
        .build(0, 0, &simple_batch(&v, 0..2), None)
        .unwrap();
    assert_eq!(plain[12], 0);
}

#[test]
fn commit_timestamp_and_base_offset_are_outside_the_crc() {
    // The server rewrites BaseOffset and CommitTimestamp without recomputing the CRC.
    let v = simple_version();
    let bytes = LogBatchBuilder::new(1, ArrowCompression::None)
        .with_statistics(v.row_type().clone(), vec![0])
        .build(0, 0, &simple_batch(&v, 0..4), None)
        .unwrap();
    let mut raw = bytes.to_vec();
    raw[0..8].copy_from_slice(&555_i64.to_le_bytes());
    raw[13..21].copy_from_slice(&1_234_567_i64.to_le_bytes());
    let batch = LogBatch::parse(Bytes::from(raw)).unwrap();
    batch.verify_crc().unwrap();
    assert_eq!(batch.base_offset(), 555);
    assert_eq!(batch.commit_timestamp(), 1_234_567);
    assert_eq!(batch.next_offset(), 559);
}

// ---------------------------------------------------------------------------------------
// 2. Compression
// ---------------------------------------------------------------------------------------

/// A schema with many column types: int, bigint, string, decimal, timestamps, bool, date.
fn wide_version() -> SchemaVersion {
    let schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("big", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("price", DataTypes::decimal(10, 2))
        .column("ts", DataTypes::timestamp())
        .column("ltz", DataTypes::timestamp_ltz_with_precision(3))
        .column("flag", DataTypes::boolean())
        .column("day", DataTypes::date())
        .build()
        .unwrap();
    SchemaVersion::new(1, schema).unwrap()
}

/// ~1000 repetitive rows with nulls in several columns.
fn wide_batch(version: &SchemaVersion, rows: usize) -> RecordBatch {
    let n = rows as i64;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(
            (0..rows as i32).map(|i| i % 50),
        )),
        Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 10 != 0).then_some(i * 1_000_000_007)),
        )),
        Arc::new(StringArray::from_iter((0..rows).map(|i| {
            (i % 5 != 0).then(|| format!("customer-{}-repeated-text", i % 13))
        }))),
        Arc::new(
            Decimal128Array::from_iter(
                (0..n).map(|i| (i % 4 != 1).then_some(i128::from(i * 1234 - 50_000))),
            )
            .with_precision_and_scale(10, 2)
            .unwrap(),
        ),
        Arc::new(TimestampMicrosecondArray::from_iter_values(
            (0..n).map(|i| 1_700_000_000_000_000 + i * 1_000),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter(
                (0..n).map(|i| (i % 3 != 0).then_some(1_600_000_000_000 + i)),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(BooleanArray::from_iter(
            (0..rows).map(|i| (i % 11 != 0).then_some(i % 2 == 0)),
        )),
        Arc::new(Date32Array::from_iter_values(
            (0..rows as i32).map(|i| 19_000 + i % 30),
        )),
    ];
    RecordBatch::try_new(version.arrow.clone(), columns).unwrap()
}

fn round_trip_with(compression: ArrowCompression) -> usize {
    let v = wide_version();
    let data = wide_batch(&v, 1000);
    let bytes = LogBatchBuilder::new(1, compression)
        .with_statistics(v.row_type().clone(), (0..8).collect())
        .build(100, 1, &data, None)
        .unwrap();
    let batch = LogBatch::parse(bytes.clone()).unwrap();
    batch.verify_crc().unwrap();
    assert_eq!(batch.record_count(), 1000);
    let decoded = batch.decode(&v.arrow, None).unwrap();
    assert_eq!(decoded, data, "{compression:?} round trip");
    // Projection decodes only the asked columns, in the asked order.
    let projected = batch.decode(&v.arrow, Some(&[2, 6])).unwrap();
    assert_eq!(projected.num_columns(), 2);
    assert_eq!(projected.schema().field(0).name(), "name");
    assert_eq!(projected.column(0), data.column(2));
    assert_eq!(projected.column(1), data.column(6));
    bytes.len()
}

#[test]
fn uncompressed_batch_round_trips_all_column_types() {
    round_trip_with(ArrowCompression::None);
}

#[test]
fn lz4_frame_batch_round_trips_and_is_smaller() {
    let none = round_trip_with(ArrowCompression::None);
    let lz4 = round_trip_with(ArrowCompression::Lz4Frame);
    assert!(lz4 < none, "lz4 {lz4} bytes vs none {none} bytes");
}

#[test]
fn zstd_batch_round_trips_and_is_smaller() {
    let none = round_trip_with(ArrowCompression::None);
    let zstd = round_trip_with(ArrowCompression::Zstd(3));
    assert!(zstd < none, "zstd {zstd} bytes vs none {none} bytes");
    let zstd_max = round_trip_with(ArrowCompression::Zstd(19));
    assert!(zstd_max < none);
}

#[test]
fn statistics_of_the_wide_batch_cover_every_type() {
    let v = wide_version();
    let data = wide_batch(&v, 1000);
    let bytes = LogBatchBuilder::new(1, ArrowCompression::Zstd(3))
        .with_statistics(v.row_type().clone(), (0..8).collect())
        .build(0, 0, &data, None)
        .unwrap();
    let batch = LogBatch::parse(bytes).unwrap();
    let stats = BatchStatistics::parse(batch.statistics_bytes().unwrap(), v.row_type()).unwrap();
    assert_eq!(stats.num_columns(), 8);
    let id = stats.column(0).unwrap();
    assert_eq!(
        (id.min.clone(), id.max.clone()),
        (
            Some(ScalarValue::Int32(Some(0))),
            Some(ScalarValue::Int32(Some(49)))
        )
    );
    assert_eq!(stats.column(1).unwrap().null_count, 100);
    assert_eq!(stats.column(2).unwrap().null_count, 200);
    assert_eq!(stats.column(3).unwrap().null_count, 250);
    assert_eq!(
        stats.column(3).unwrap().min,
        Some(ScalarValue::Decimal128(Some(-50_000), 10, 2))
    );
    assert_eq!(
        stats.column(4).unwrap().max,
        Some(ScalarValue::TimestampMicrosecond(
            Some(1_700_000_000_000_000 + 999 * 1_000),
            None
        ))
    );
    assert_eq!(
        stats.column(6).unwrap().min,
        Some(ScalarValue::Boolean(Some(false)))
    );
    assert_eq!(
        stats.column(7).unwrap().max,
        Some(ScalarValue::Date32(Some(19_029)))
    );
}

// ---------------------------------------------------------------------------------------
// 3. Change types
// ---------------------------------------------------------------------------------------

const CHANGELOG: [ChangeType; 5] = [
    ChangeType::Insert,
    ChangeType::UpdateBefore,
    ChangeType::UpdateAfter,
    ChangeType::Delete,
    ChangeType::Insert,
];

#[test]
fn pk_changelog_batch_keeps_change_types_in_order() {
    let v = simple_version();
    let data = simple_batch(&v, 0..5);
    let bytes = LogBatchBuilder::new(1, ArrowCompression::Zstd(3))
        .build(10, 0, &data, Some(&CHANGELOG))
        .unwrap();
    let batch = check_header(
        &bytes,
        &ExpectedHeader {
            magic: LogMagic::V0,
            base_offset: 10,
            commit_timestamp: 0,
            leader_epoch: None,
            schema_id: 1,
            append_only: false,
            records: 5,
            writer_id: -1,
            batch_sequence: -1,
        },
    );
    // The vector sits right after the 48-byte header: 1 +I, 2 -U, 3 +U, 4 -D.
    assert_eq!(&bytes[48..53], &[1, 2, 3, 4, 1]);
    let ct = batch.change_types().unwrap();
    assert!(matches!(ct, ChangeTypes::Vector(_)));
    assert_eq!(ct.len(), 5);
    assert_eq!(ct.iter().collect::<Vec<_>>(), CHANGELOG.to_vec());
    assert_eq!(batch.decode(&v.arrow, None).unwrap(), data);
}

#[test]
fn append_only_batches_report_append_only() {
    let v = simple_version();
    for magic in [LogMagic::V0, LogMagic::V1, LogMagic::V2] {
        let bytes = LogBatchBuilder::new(1, ArrowCompression::None)
            .with_statistics(v.row_type().clone(), vec![0])
            .with_magic(magic)
            .build(0, 0, &simple_batch(&v, 0..4), None)
            .unwrap();
        let batch = LogBatch::parse(bytes).unwrap();
        assert!(batch.is_append_only());
        let ct = batch.change_types().unwrap();
        assert!(
            matches!(ct, ChangeTypes::AppendOnly(4)),
            "{magic:?}: {ct:?}"
        );
        assert!(ct.iter().all(|c| c == ChangeType::AppendOnly));
    }
}

#[test]
fn change_type_count_must_match_rows() {
    let v = simple_version();
    let err = LogBatchBuilder::new(1, ArrowCompression::None)
        .build(0, 0, &simple_batch(&v, 0..4), Some(&CHANGELOG))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[test]
fn invalid_change_type_byte_is_an_error() {
    let v = simple_version();
    let bytes = LogBatchBuilder::new(1, ArrowCompression::None)
        .build(300, 0, &simple_batch(&v, 0..5), Some(&CHANGELOG))
        .unwrap();
    let bad = patched(&bytes, |b| b[48 + 2] = 9);
    let batch = LogBatch::parse(bad).unwrap();
    batch.verify_crc().unwrap();
    let err = batch.change_types().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert!(err.message().contains("change type byte 9"), "{err}");
    assert_eq!(err.context_value("base_offset"), Some("300"));
}

#[tokio::test]
async fn reader_returns_change_types_of_the_cut_rows() {
    let (_dir, storage) = open_storage().await;
    let v = simple_version();
    let bytes = LogBatchBuilder::new(1, ArrowCompression::None)
        .build(0, 77, &simple_batch(&v, 0..5), Some(&CHANGELOG))
        .unwrap();
    append_all(&storage, 1 << 20, &[bytes]).await;
    let schemas = history([v]);
    let (batches, _) = read_range(&storage, 1..4, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&batches), vec![(1, 3)]);
    assert_eq!(batches[0].change_types, CHANGELOG[1..4].to_vec());
    assert_eq!(batches[0].commit_timestamp, 77);
    assert_eq!(ids(&batches), vec![1, 2, 3]);
}

// ---------------------------------------------------------------------------------------
// 4. Zero-record batches
// ---------------------------------------------------------------------------------------

#[test]
fn zero_record_batch_owns_one_offset() {
    let v = simple_version();
    let empty = RecordBatch::new_empty(v.arrow.clone());
    for magic in [LogMagic::V0, LogMagic::V1] {
        let bytes = LogBatchBuilder::new(1, ArrowCompression::Zstd(3))
            .with_statistics(v.row_type().clone(), vec![0])
            .with_magic(magic)
            .build(3, 0, &empty, None)
            .unwrap();
        let batch = LogBatch::parse(bytes).unwrap();
        batch.verify_crc().unwrap();
        assert_eq!(batch.record_count(), 0);
        assert_eq!(batch.last_offset_delta(), 0);
        assert_eq!(batch.last_offset(), 3);
        assert_eq!(batch.next_offset(), 4);
        assert_eq!(batch.statistics_length(), 0, "no statistics for no rows");
        let decoded = batch.decode(&v.arrow, None).unwrap();
        assert_eq!(decoded.num_rows(), 0);
        assert_eq!(decoded.schema(), v.arrow);
        assert!(batch.change_types().unwrap().is_empty());
    }
}

#[tokio::test]
async fn reader_skips_zero_record_batch_but_advances_offsets() {
    let (_dir, storage) = open_storage().await;
    let v = simple_version();
    let b = LogBatchBuilder::new(1, ArrowCompression::None);
    let batches = vec![
        b.build(0, 0, &simple_batch(&v, 0..3), None).unwrap(),
        b.build(3, 0, &RecordBatch::new_empty(v.arrow.clone()), None)
            .unwrap(),
        b.build(4, 0, &simple_batch(&v, 4..7), None).unwrap(),
    ];
    let writer = append_all(&storage, 1 << 20, &batches).await;
    assert_eq!(writer.next_offset(), 7);
    assert_eq!(bucket_offsets(&storage, BUCKET).await.unwrap(), (0, 7));

    let schemas = history([v]);
    let (out, metrics) = read_range(&storage, 0..7, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(0, 3), (4, 3)]);
    assert_eq!(ids(&out), vec![0, 1, 2, 4, 5, 6]);
    assert_eq!(metrics.rows, 6);
    assert_eq!(metrics.batches_read, 2);

    // Starting on the empty batch's offset, and a range holding only it.
    let (out, _) = read_range(&storage, 3..7, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(4, 3)]);
    let (out, _) = read_range(&storage, 3..4, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert!(out.is_empty());
}

#[tokio::test]
async fn mid_segment_reads_start_near_the_range_and_see_later_appends() {
    // Batches of ~40 KiB in one segment: the reader's sparse batch index (an entry
    // every 64 KiB) lets a read start near its first offset; appends after the index
    // was built must still be read, and every range must return exactly its rows.
    let (_dir, storage) = open_storage().await;
    let v = simple_version();
    let b = LogBatchBuilder::new(1, ArrowCompression::None);
    let rows = 3000i64;
    let first = simple_log(&v, 12, rows, &b);
    let mut writer = append_all(&storage, 1 << 30, &first).await;
    let schemas = history([v.clone()]);
    let expect = |r: Range<i64>| (r.start as i32..r.end as i32).collect::<Vec<_>>();
    let check = |range: Range<i64>| {
        let storage = storage.clone();
        let schemas = schemas.clone();
        async move {
            let (out, _) = read_range(
                &storage,
                range.clone(),
                &schemas,
                1,
                LogReadOptions::verified(),
            )
            .await
            .unwrap();
            assert_eq!(ids(&out), expect(range.clone()), "range {range:?}");
        }
    };
    // Before and after the bucket's end was framed (which builds the index).
    check(5 * rows + 17..9 * rows).await;
    assert_eq!(
        bucket_offsets(&storage, BUCKET).await.unwrap(),
        (0, 12 * rows)
    );
    for range in [
        0..12 * rows,
        7 * rows..12 * rows,
        11 * rows + 5..11 * rows + 6,
        3..4,
    ] {
        check(range).await;
    }
    // Appends after the index: ranges ending past the framed prefix, and starting in it.
    for k in 12..20 {
        let base = k * rows;
        let batch = simple_batch(&v, base as i32..(base + rows) as i32);
        let bytes = b.build(base, 0, &batch, None).unwrap();
        writer
            .append(&storage, &LogBatch::parse(bytes).unwrap())
            .await
            .unwrap();
    }
    for range in [10 * rows..20 * rows, 15 * rows + 1..16 * rows, 0..20 * rows] {
        check(range).await;
    }
    assert_eq!(
        bucket_offsets(&storage, BUCKET).await.unwrap(),
        (0, 20 * rows)
    );
    check(19 * rows..20 * rows).await;
}

#[tokio::test]
async fn a_large_segment_is_framed_from_its_headers_with_the_same_answers() {
    // ~2.4 MB in one segment: a process that has not framed it finds its end from the
    // batch headers, then reads any range through the index that built.
    let (dir, storage) = open_storage().await;
    let v = simple_version();
    let b = LogBatchBuilder::new(1, ArrowCompression::None);
    let rows = 3000i64;
    let log = simple_log(&v, 60, rows, &b);
    append_all(&storage, 1 << 30, &log).await;
    let segment = dir.path().join(BUCKET).join("00000000000000000000.log");
    assert!(std::fs::metadata(&segment).unwrap().len() > 2 << 20);
    assert_eq!(
        bucket_offsets(&storage, BUCKET).await.unwrap(),
        (0, 60 * rows)
    );
    let schemas = history([v.clone()]);
    for range in [0..60 * rows, 31 * rows + 7..33 * rows, 59 * rows..60 * rows] {
        let (out, _) = read_range(
            &storage,
            range.clone(),
            &schemas,
            1,
            LogReadOptions::verified(),
        )
        .await
        .unwrap();
        assert_eq!(
            ids(&out),
            (range.start as i32..range.end as i32).collect::<Vec<_>>()
        );
    }
    // a torn append after the framed batches is not part of the log
    let next = b
        .build(60 * rows, 0, &simple_batch(&v, 0..rows as i32), None)
        .unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&segment)
        .unwrap();
    std::io::Write::write_all(&mut file, &next[..next.len() / 2]).unwrap();
    assert_eq!(
        bucket_offsets(&storage, BUCKET).await.unwrap(),
        (0, 60 * rows)
    );
}

#[tokio::test]
async fn a_damaged_length_in_a_large_segment_is_an_error_not_its_end() {
    // Header framing stops at a length running past the file; the bytes from there on
    // are judged as a whole: a valid batch after it means damage, never a torn tail.
    let (dir, storage) = open_storage().await;
    let v = simple_version();
    let b = LogBatchBuilder::new(1, ArrowCompression::None);
    let log = simple_log(&v, 60, 3000, &b);
    append_all(&storage, 1 << 30, &log).await;
    let segment = dir.path().join(BUCKET).join("00000000000000000000.log");
    let mut bytes = std::fs::read(&segment).unwrap();
    let at: usize = log[..30].iter().map(Bytes::len).sum();
    bytes[at + 8..at + 12].copy_from_slice(&i32::MAX.to_le_bytes());
    std::fs::write(&segment, &bytes).unwrap();
    let e = bucket_offsets(&storage, BUCKET).await.unwrap_err();
    assert!(e.to_string().contains("length is damaged"), "{e}");
}

// ---------------------------------------------------------------------------------------
// 5. Schema evolution
// ---------------------------------------------------------------------------------------

/// Schema 1: `a INT, b STRING` (ids 0, 1); schema 2 adds `c BIGINT` (id 2).
fn evolving_history() -> (SchemaVersion, SchemaVersion) {
    let s1 = Schema::builder()
        .column("a", DataTypes::int())
        .column("b", DataTypes::string())
        .build()
        .unwrap();
    let s2 = Schema::builder()
        .with_columns(vec![
            Column::new("a", DataTypes::int()).with_id(0),
            Column::new("b", DataTypes::string()).with_id(1),
            Column::new("c", DataTypes::bigint()).with_id(2),
        ])
        .build()
        .unwrap();
    let v1 = SchemaVersion::new(1, s1).unwrap();
    let v2 = SchemaVersion::new(2, s2).unwrap();
    assert_eq!(v1.column_ids(), vec![0, 1]);
    assert_eq!(v2.column_ids(), vec![0, 1, 2]);
    (v1, v2)
}

async fn evolved_log(storage: &Storage) -> Arc<SchemaHistory> {
    let (v1, v2) = evolving_history();
    let old = RecordBatch::try_new(
        v1.arrow.clone(),
        vec![
            Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef,
            Arc::new(StringArray::from(vec!["x", "y", "z"])),
        ],
    )
    .unwrap();
    let new = RecordBatch::try_new(
        v2.arrow.clone(),
        vec![
            Arc::new(Int32Array::from(vec![4, 5])) as ArrayRef,
            Arc::new(StringArray::from(vec![Some("u"), None])),
            Arc::new(Int64Array::from(vec![40, 50])),
        ],
    )
    .unwrap();
    let batches = vec![
        LogBatchBuilder::new(1, ArrowCompression::Zstd(3))
            .build(0, 0, &old, None)
            .unwrap(),
        LogBatchBuilder::new(2, ArrowCompression::Zstd(3))
            .build(3, 0, &new, None)
            .unwrap(),
    ];
    append_all(storage, 1 << 20, &batches).await;
    history([v1, v2])
}

#[tokio::test]
async fn old_schema_rows_read_with_null_for_added_column() {
    let (_dir, storage) = open_storage().await;
    let schemas = evolved_log(&storage).await;
    let (out, _) = read_range(&storage, 0..5, &schemas, 2, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(0, 3), (3, 2)]);
    for b in &out {
        assert_eq!(b.batch.schema(), schemas.get(2).unwrap().arrow);
    }
    let old = &out[0].batch;
    assert_eq!(old.column(2).null_count(), 3, "c did not exist in schema 1");
    assert_eq!(old.column(1).as_string::<i32>().value(2), "z");
    let new = &out[1].batch;
    assert_eq!(
        new.column(2).as_primitive::<Int64Type>().values().to_vec(),
        vec![40, 50]
    );
    assert!(new.column(1).is_null(1));
    assert_eq!(ids(&out), vec![1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn schema_evolution_with_projection() {
    let (_dir, storage) = open_storage().await;
    let schemas = evolved_log(&storage).await;
    let options = LogReadOptions {
        projection: Some(vec![2, 0]),
        verify_crc: true,
        predicate: None,
        ..Default::default()
    };
    let (out, _) = read_range(&storage, 1..5, &schemas, 2, options)
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(1, 2), (3, 2)]);
    for b in &out {
        let names: Vec<_> = b
            .batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, vec!["c", "a"]);
    }
    assert_eq!(out[0].batch.column(0).null_count(), 2);
    assert_eq!(
        out[0]
            .batch
            .column(1)
            .as_primitive::<Int32Type>()
            .values()
            .to_vec(),
        vec![2, 3]
    );
    assert_eq!(
        out[1]
            .batch
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec(),
        vec![40, 50]
    );
}

#[tokio::test]
async fn projection_of_only_an_added_column_keeps_old_row_count() {
    // Projecting only `c` decodes no column of a schema-1 batch; rows must still count.
    let (_dir, storage) = open_storage().await;
    let schemas = evolved_log(&storage).await;
    let options = LogReadOptions {
        projection: Some(vec![2]),
        verify_crc: true,
        predicate: None,
        ..Default::default()
    };
    let (out, metrics) = read_range(&storage, 0..5, &schemas, 2, options)
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(0, 3), (3, 2)]);
    assert_eq!(out[0].batch.column(0).null_count(), 3);
    assert_eq!(metrics.rows, 5);
}

#[tokio::test]
async fn reading_with_the_old_schema_drops_the_new_column() {
    let (_dir, storage) = open_storage().await;
    let schemas = evolved_log(&storage).await;
    let (out, _) = read_range(&storage, 0..5, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(0, 3), (3, 2)]);
    assert_eq!(out[1].batch.num_columns(), 2);
    assert_eq!(out[1].batch.schema(), schemas.get(1).unwrap().arrow);
}

// ---------------------------------------------------------------------------------------
// 6. Corrupt input
// ---------------------------------------------------------------------------------------

fn v1_batch(base: i64, compression: ArrowCompression) -> (SchemaVersion, Bytes) {
    let v = simple_version();
    let bytes = LogBatchBuilder::new(1, compression)
        .with_statistics(v.row_type().clone(), vec![0, 1])
        .build(base, 5, &simple_batch(&v, 0..20), None)
        .unwrap();
    (v, bytes)
}

#[test]
fn bad_crc_is_detected_and_names_the_base_offset() {
    let (_, bytes) = v1_batch(4_242, ArrowCompression::None);
    let mut raw = bytes.to_vec();
    let last = raw.len() - 1;
    raw[last] ^= 0x5A;
    let batch = LogBatch::parse(Bytes::from(raw)).unwrap();
    let err = batch.verify_crc().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert!(err.message().contains("CRC"), "{err}");
    assert_eq!(err.context_value("base_offset"), Some("4242"));
    assert!(err.to_string().contains("4242"));
}

/// Writes a valid log of two batches then flips a byte in the Arrow body of the second.
async fn log_with_bad_crc(storage: &Storage) -> Arc<SchemaHistory> {
    let v = simple_version();
    let b = LogBatchBuilder::new(1, ArrowCompression::None);
    let first = b.build(0, 0, &simple_batch(&v, 0..5), None).unwrap();
    let mut second = b
        .build(5, 0, &simple_batch(&v, 5..10), None)
        .unwrap()
        .to_vec();
    let at = second.len() - 3;
    second[at] ^= 0xFF;
    append_all(storage, 1 << 20, &[first]).await;
    let path = storage
        .local_path(&format!("{BUCKET}/00000000000000000000.log"))
        .unwrap();
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(&second)
        .unwrap();
    history([v])
}

#[tokio::test]
async fn reader_with_verify_crc_rejects_a_bad_batch() {
    let (_dir, storage) = open_storage().await;
    let schemas = log_with_bad_crc(&storage).await;
    let err = read_range(&storage, 0..10, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert!(err.to_string().contains("CRC"), "{err}");
    assert_eq!(err.context_value("base_offset"), Some("5"));
    assert_eq!(err.context_value("dir"), Some(BUCKET));
    // The first batch alone is still readable.
    let (out, _) = read_range(&storage, 0..5, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(0, 5)]);
}

#[tokio::test]

async fn reader_crc_error_names_the_segment_file() {
    let (_dir, storage) = open_storage().await;
    let schemas = log_with_bad_crc(&storage).await;
    let err = read_range(&storage, 0..10, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap_err();
    assert_eq!(
        err.context_value("file"),
        Some(format!("{BUCKET}/00000000000000000000.log").as_str()),
        "{err}"
    );
}

#[test]
fn truncated_header_is_an_error() {
    let (_, bytes) = v1_batch(77, ArrowCompression::None);
    let err = LogBatch::parse(bytes.slice(..20)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert!(err.message().contains("truncated"), "{err}");
    // Also no header at all.
    assert!(LogBatch::parse(Bytes::new()).is_err());
    // A whole header but a shorter body than Length says.
    let err = LogBatch::parse(bytes.slice(..bytes.len() - 1)).unwrap_err();
    assert!(err.message().contains("length"), "{err}");
}

#[test]

fn parse_errors_name_the_base_offset() {
    let (_, bytes) = v1_batch(77, ArrowCompression::None);
    let truncated = LogBatch::parse(bytes.slice(..20)).unwrap_err();
    let mut magic = bytes.to_vec();
    magic[12] = 7;
    let magic = LogBatch::parse(Bytes::from(magic)).unwrap_err();
    for err in [truncated, magic] {
        assert_eq!(err.context_value("base_offset"), Some("77"), "{err}");
    }
}

#[test]
fn unknown_magic_is_an_error() {
    let (_, bytes) = v1_batch(0, ArrowCompression::None);
    let mut raw = bytes.to_vec();
    raw[12] = 7;
    let err = LogBatch::parse(Bytes::from(raw.clone())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert!(err.message().contains("magic"), "{err}");
    assert!(err.message().contains('7'), "{err}");
    // Through a segment: the file and the byte position are named.
    let segment = SegmentFile {
        base_offset: 0,
        path: "log-0/00000000000000000000.log".into(),
    };
    let err = frame_segment(Bytes::from(raw), &segment, true).unwrap_err();
    assert!(err.to_string().contains("magic"), "{err}");
    assert_eq!(
        err.context_value("file"),
        Some("log-0/00000000000000000000.log")
    );
    assert_eq!(err.context_value("position"), Some("0"));
}

#[test]
fn length_past_the_end_is_a_torn_tail_not_an_error() {
    let (_, first) = v1_batch(0, ArrowCompression::None);
    let (_, second) = v1_batch(20, ArrowCompression::None);
    // The last batch claims more bytes than present.
    let mut buf = first.to_vec();
    buf.extend_from_slice(&second[..second.len() - 10]);
    let buf = Bytes::from(buf);

    let mut iter = BatchIterator::new(buf.clone());
    let got: Vec<_> = iter.by_ref().collect();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].as_ref().unwrap().base_offset(), 0);
    assert_eq!(iter.torn_tail(), Some(first.len()));
    assert_eq!(iter.position(), first.len());

    // Fewer than the 12 framing bytes left over is torn too.
    let mut short = first.to_vec();
    short.extend_from_slice(&second[..5]);
    let mut iter = BatchIterator::new(Bytes::from(short));
    assert_eq!(iter.by_ref().count(), 1);
    assert_eq!(iter.torn_tail(), Some(first.len()));

    let segment = SegmentFile {
        base_offset: 0,
        path: "log-0/00000000000000000000.log".into(),
    };
    let contents = frame_segment(buf.clone(), &segment, true).unwrap();
    assert!(contents.torn);
    assert_eq!(contents.valid_length, first.len());
    assert_eq!(contents.batches.len(), 1);

    let err = frame_segment(buf, &segment, false).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert_eq!(
        err.context_value("file"),
        Some("log-0/00000000000000000000.log")
    );
    assert!(err.message().contains("incomplete"), "{err}");
}

#[test]
fn length_smaller_than_a_header_is_an_error() {
    let (_, bytes) = v1_batch(0, ArrowCompression::None);
    let mut raw = bytes.to_vec();
    raw[8..12].copy_from_slice(&10_i32.to_le_bytes());
    let mut iter = BatchIterator::new(Bytes::from(raw.clone()));
    let err = iter.next().unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert_eq!(err.context_value("position"), Some("0"));
    assert!(iter.next().is_none(), "iteration stops after an error");
    raw[8..12].copy_from_slice(&(-1_i32).to_le_bytes());
    assert!(
        BatchIterator::new(Bytes::from(raw))
            .next()
            .unwrap()
            .is_err()
    );
}

#[tokio::test]
async fn unknown_schema_id_is_an_error() {
    let (_dir, storage) = open_storage().await;
    let v = simple_version();
    let bytes = LogBatchBuilder::new(9, ArrowCompression::None)
        .build(0, 0, &simple_batch(&v, 0..3), None)
        .unwrap();
    append_all(&storage, 1 << 20, &[bytes]).await;
    let schemas = history([v]);
    let err = read_range(&storage, 0..3, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("schema id 9"), "{err}");
    assert_eq!(err.context_value("base_offset"), Some("0"));
    assert_eq!(err.context_value("dir"), Some(BUCKET));
}

#[test]
fn garbage_arrow_message_with_valid_crc_is_a_decode_error() {
    let (v, bytes) = v1_batch(31, ArrowCompression::Zstd(3));
    let batch = LogBatch::parse(bytes.clone()).unwrap();
    let arrow_at = bytes.len() - batch.arrow_message().len();
    let mut rng = StdRng::seed_from_u64(7);
    for round in 0..50 {
        let garbage = patched(&bytes, |b| {
            for x in &mut b[arrow_at..] {
                *x = rng.random();
            }
            // Half the time keep the continuation marker so the metadata length is read.
            if round % 2 == 0 {
                b[arrow_at..arrow_at + 4].copy_from_slice(&[0xFF; 4]);
            }
        });
        let batch = LogBatch::parse(garbage).unwrap();
        batch.verify_crc().unwrap();
        let result = catch_unwind(AssertUnwindSafe(|| batch.decode(&v.arrow, None)))
            .expect("decode must not panic");
        let err = result.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DataInvalid);
        assert_eq!(err.context_value("base_offset"), Some("31"), "{err}");
    }
}

#[test]
fn arrow_row_count_must_match_the_header() {
    let (v, bytes) = v1_batch(0, ArrowCompression::None);
    let at = 44; // RecordCount in V1
    let bad = patched(&bytes, |b| {
        b[at..at + 4].copy_from_slice(&19_i32.to_le_bytes())
    });
    let batch = LogBatch::parse(bad).unwrap();
    let err = batch.decode(&v.arrow, None).unwrap_err();
    assert!(err.message().contains("rows"), "{err}");
}

#[test]
fn statistics_length_past_the_end_is_an_error() {
    let (_, bytes) = v1_batch(0, ArrowCompression::None);
    let bad = patched(&bytes, |b| {
        let len = b.len() as i32;
        b[48..52].copy_from_slice(&len.to_le_bytes());
    });
    assert!(LogBatch::parse(bad).is_err());
    let negative = patched(&bytes, |b| {
        b[48..52].copy_from_slice(&(-5_i32).to_le_bytes())
    });
    assert!(LogBatch::parse(negative).is_err());
}

#[test]
fn every_prefix_of_a_batch_is_rejected_without_panic() {
    let (v, bytes) = v1_batch(0, ArrowCompression::Zstd(3));
    for len in 0..bytes.len() {
        let prefix = bytes.slice(..len);
        assert!(
            !panics_on(prefix.clone(), &v),
            "panic on prefix of {len} bytes"
        );
        assert!(
            LogBatch::parse(prefix.clone()).is_err(),
            "prefix {len} parsed"
        );
        let mut iter = BatchIterator::new(prefix);
        assert_eq!(iter.by_ref().filter(Result::is_ok).count(), 0);
    }
    assert!(!panics_on(bytes, &v));
}

/// Byte ranges (within the whole batch) of the 8-byte uncompressed-length prefixes of
/// the compressed Arrow buffers, read from the IPC metadata of a valid batch.
fn compressed_length_prefixes(bytes: &Bytes) -> Vec<Range<usize>> {
    arrow_layout(bytes).1
}

/// The IPC metadata range and the compressed buffers' length-prefix ranges of a batch.
fn arrow_layout(bytes: &Bytes) -> (Range<usize>, Vec<Range<usize>>) {
    let batch = LogBatch::parse(bytes.clone()).unwrap();
    let message = batch.arrow_message();
    let arrow_at = bytes.len() - message.len();
    assert_eq!(le_u32(&message, 0), 0xFFFF_FFFF);
    let meta_len = le_i32(&message, 4) as usize;
    let ipc = root_as_message(&message[8..8 + meta_len]).unwrap();
    let header = ipc.header_as_record_batch().unwrap();
    assert!(header.compression().is_some(), "batch is not compressed");
    let body_at = arrow_at + 8 + meta_len;
    let prefixes = header
        .buffers()
        .unwrap()
        .iter()
        .filter(|b| b.length() >= 8)
        .map(|b| {
            let start = body_at + b.offset() as usize;
            start..start + 8
        })
        .collect();
    (arrow_at..body_at, prefixes)
}

/// 200 random single-byte corruptions (CRC recomputed) outside `skip`: never a panic.
fn fuzz_single_bytes(compression: ArrowCompression, seed: u64, skip: &[Range<usize>]) {
    let (v, bytes) = v1_batch(0, compression);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut done = 0;
    while done < 200 {
        let at = rng.random_range(0..bytes.len());
        if skip.iter().any(|r| r.contains(&at)) {
            continue;
        }
        done += 1;
        let value: u8 = rng.random();
        let corrupt = patched(&bytes, |b| b[at] = value);
        assert!(
            !panics_on(corrupt, &v),
            "panic with byte {at} set to {value:#04x} ({compression:?})"
        );
    }
}

#[test]
fn random_single_byte_corruptions_never_panic_uncompressed() {
    fuzz_single_bytes(ArrowCompression::None, 1, &[]);
}

// The compressed fuzzers stay off the IPC metadata and the buffers' uncompressed-length
// prefixes: a huge length prefix aborts the process, and so does a corrupt buffer offset in
// the metadata that makes arrow-ipc read compressed bytes as a length prefix (seen: LZ4,
// byte 283 of this batch set to 0x7c). See `huge_*_uncompressed_length_*` below.

/// Bytes the compressed fuzzers leave alone (see above).
fn compressed_fuzz_skip(bytes: &Bytes) -> Vec<Range<usize>> {
    let (metadata, mut skip) = arrow_layout(bytes);
    assert!(!skip.is_empty());
    skip.push(metadata);
    skip
}

#[test]
fn random_single_byte_corruptions_never_panic_zstd() {
    let (_, bytes) = v1_batch(0, ArrowCompression::Zstd(3));
    let skip = compressed_fuzz_skip(&bytes);
    fuzz_single_bytes(ArrowCompression::Zstd(3), 2, &skip);
}

#[test]
fn random_single_byte_corruptions_never_panic_lz4() {
    let (_, bytes) = v1_batch(0, ArrowCompression::Lz4Frame);
    let skip = compressed_fuzz_skip(&bytes);
    fuzz_single_bytes(ArrowCompression::Lz4Frame, 3, &skip);
}

/// Sets the uncompressed-length prefix of the first really compressed buffer (arrow
/// stores incompressible buffers with prefix -1) to 2^50 bytes, recomputes the CRC and
/// decodes: must be an error, not a process abort.
fn decode_with_huge_uncompressed_length(compression: ArrowCompression) {
    let (v, bytes) = v1_batch(9, compression);
    let prefix = compressed_length_prefixes(&bytes)
        .into_iter()
        .find(|p| le_i64(&bytes, p.start) > 0)
        .expect("a compressed buffer");
    let corrupt = patched(&bytes, |b| {
        b[prefix.clone()].copy_from_slice(&(1_i64 << 50).to_le_bytes())
    });
    let batch = LogBatch::parse(corrupt).unwrap();
    batch.verify_crc().unwrap();
    let err = batch.decode(&v.arrow, None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert_eq!(err.context_value("base_offset"), Some("9"));
}

#[test]

fn huge_lz4_uncompressed_length_is_an_error_not_an_abort() {
    decode_with_huge_uncompressed_length(ArrowCompression::Lz4Frame);
}

#[test]

fn huge_zstd_uncompressed_length_is_an_error_not_an_abort() {
    decode_with_huge_uncompressed_length(ArrowCompression::Zstd(3));
}

#[test]
fn every_single_byte_of_the_header_corrupted_never_panics() {
    let (v, bytes) = v1_batch(0, ArrowCompression::None);
    for at in 0..60 {
        for value in [0x00, 0x01, 0x7F, 0x80, 0xFF] {
            let corrupt = patched(&bytes, |b| b[at] = value);
            assert!(!panics_on(corrupt, &v), "byte {at} = {value:#04x}");
        }
    }
}

#[test]

fn base_offset_near_i64_max_does_not_panic() {
    let (v, bytes) = v1_batch(0, ArrowCompression::None);
    let mut raw = bytes.to_vec();
    raw[0..8].copy_from_slice(&(i64::MAX - 1).to_le_bytes());
    assert!(!panics_on(Bytes::from(raw), &v));
}

// ---------------------------------------------------------------------------------------
// 7. Segments
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn writer_rolls_twenty_digit_segments_and_reader_slices_exactly() {
    let (dir, storage) = open_storage().await;
    let v = simple_version();
    let log = simple_log(&v, 20, 10, &LogBatchBuilder::new(1, ArrowCompression::None));
    let batch_size = log[0].len();
    // Roughly three batches per segment.
    let writer = append_all(&storage, batch_size * 3 + 10, &log).await;
    assert_eq!(writer.next_offset(), 200);

    let names = segment_file_names(dir.path());
    assert!(names.len() > 1, "{names:?}");
    assert_eq!(names[0], "00000000000000000000.log");
    for name in &names {
        let (stem, ext) = name.split_once('.').unwrap();
        assert_eq!(ext, "log");
        assert_eq!(stem.len(), 20);
        let base: i64 = stem.parse().unwrap();
        assert_eq!(base % 10, 0, "segments start on batch boundaries: {name}");
    }
    let listed = list_segments(&storage, BUCKET).await.unwrap();
    assert_eq!(listed.len(), names.len());
    assert!(
        listed
            .windows(2)
            .all(|w| w[0].base_offset < w[1].base_offset)
    );
    assert_eq!(bucket_offsets(&storage, BUCKET).await.unwrap(), (0, 200));

    let schemas = history([v]);
    let (out, metrics) = read_range(&storage, 15..47, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(15, 5), (20, 10), (30, 10), (40, 7)]);
    assert_eq!(ids(&out), (15..47).collect::<Vec<_>>());
    assert_eq!(metrics.rows, 32);
    assert_eq!(metrics.batches_read, 4);

    // A range inside one batch, a range spanning segment boundaries, the whole log.
    let (out, _) = read_range(&storage, 123..125, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(123, 2)]);
    assert_eq!(ids(&out), vec![123, 124]);
    let (out, _) = read_range(&storage, 0..200, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(ids(&out), (0..200).collect::<Vec<_>>());
    assert_eq!(
        out.iter().map(|b| b.first_offset).collect::<Vec<_>>(),
        (0..20).map(|k| k * 10).collect::<Vec<_>>()
    );
    let (out, _) = read_range(&storage, 199..200, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(199, 1)]);
    for b in &out {
        assert!(b.change_types.iter().all(|c| *c == ChangeType::AppendOnly));
    }
}

#[tokio::test]
async fn empty_range_and_range_past_the_end() {
    let (_dir, storage) = open_storage().await;
    let v = simple_version();
    append_all(
        &storage,
        1 << 20,
        &simple_log(&v, 3, 5, &LogBatchBuilder::new(1, ArrowCompression::None)),
    )
    .await;
    let schemas = history([v]);
    let (out, _) = read_range(&storage, 7..7, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert!(out.is_empty());
    let err = read_range(&storage, 10..20, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert!(err.message().contains("15"), "{err}");
}

#[tokio::test]
async fn empty_bucket_has_zero_offsets() {
    let (_dir, storage) = open_storage().await;
    assert_eq!(bucket_offsets(&storage, BUCKET).await.unwrap(), (0, 0));
    let writer = SegmentWriter::open(&storage, BUCKET, 1024, None)
        .await
        .unwrap();
    assert_eq!(writer.next_offset(), 0);
}

#[tokio::test]
async fn writer_rejects_a_batch_at_the_wrong_offset() {
    let (_dir, storage) = open_storage().await;
    let v = simple_version();
    let log = simple_log(&v, 2, 5, &LogBatchBuilder::new(1, ArrowCompression::None));
    let mut writer = append_all(&storage, 1 << 20, &log[..1]).await;
    let gap = LogBatchBuilder::new(1, ArrowCompression::None)
        .build(6, 0, &simple_batch(&v, 6..11), None)
        .unwrap();
    assert!(
        writer
            .append(&storage, &LogBatch::parse(gap).unwrap())
            .await
            .is_err()
    );
    writer
        .append(&storage, &LogBatch::parse(log[1].clone()).unwrap())
        .await
        .unwrap();
    assert_eq!(writer.next_offset(), 10);
}

#[tokio::test]
async fn torn_tail_is_ignored_by_readers_and_truncated_by_the_writer() {
    let (dir, storage) = open_storage().await;
    let v = simple_version();
    let builder = LogBatchBuilder::new(1, ArrowCompression::None);
    let log = simple_log(&v, 6, 10, &builder);
    let batch_size = log[0].len();
    append_all(&storage, batch_size * 2 + 10, &log).await;
    let names = segment_file_names(dir.path());
    let last = dir.path().join(BUCKET).join(names.last().unwrap());
    let valid_len = std::fs::metadata(&last).unwrap().len();

    // A crash mid-append: half of the next batch.
    let next = builder
        .build(60, 0, &simple_batch(&v, 60..70), None)
        .unwrap();
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&last)
            .unwrap();
        f.write_all(&next[..next.len() / 2]).unwrap();
    }
    assert!(std::fs::metadata(&last).unwrap().len() > valid_len);

    let schemas = history([v.clone()]);
    assert_eq!(bucket_offsets(&storage, BUCKET).await.unwrap(), (0, 60));
    let (out, _) = read_range(&storage, 0..60, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(ids(&out), (0..60).collect::<Vec<_>>());
    let (out, _) = read_range(&storage, 55..60, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(shape(&out), vec![(55, 5)]);

    // The writer truncates the torn bytes and continues at offset 60.
    let mut writer = SegmentWriter::open(&storage, BUCKET, batch_size * 2 + 10, None)
        .await
        .unwrap();
    assert_eq!(std::fs::metadata(&last).unwrap().len(), valid_len);
    assert_eq!(writer.next_offset(), 60);
    writer
        .append(&storage, &LogBatch::parse(next).unwrap())
        .await
        .unwrap();
    assert_eq!(writer.next_offset(), 70);
    assert_eq!(bucket_offsets(&storage, BUCKET).await.unwrap(), (0, 70));
    let (out, _) = read_range(&storage, 0..70, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap();
    assert_eq!(ids(&out), (0..70).collect::<Vec<_>>());
    for name in segment_file_names(dir.path()) {
        let bytes = std::fs::read(dir.path().join(BUCKET).join(&name)).unwrap();
        let mut iter = BatchIterator::new(Bytes::from(bytes));
        assert!(iter.by_ref().all(|b| b.is_ok()));
        assert_eq!(iter.torn_tail(), None, "{name} is clean");
    }
}

#[tokio::test]
async fn torn_bytes_in_a_sealed_segment_are_an_error_naming_the_file() {
    let (dir, storage) = open_storage().await;
    let v = simple_version();
    let log = simple_log(&v, 6, 10, &LogBatchBuilder::new(1, ArrowCompression::None));
    append_all(&storage, log[0].len() * 2 + 10, &log).await;
    let names = segment_file_names(dir.path());
    assert!(names.len() >= 2);
    let first = dir.path().join(BUCKET).join(&names[0]);
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&first)
            .unwrap();
        f.write_all(&log[0][..30]).unwrap();
    }
    let schemas = history([v]);
    let err = read_range(&storage, 0..60, &schemas, 1, LogReadOptions::verified())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DataInvalid);
    assert_eq!(
        err.context_value("file"),
        Some(format!("{BUCKET}/{}", names[0]).as_str()),
        "{err}"
    );
}

#[test]
fn batch_offsets_going_backwards_in_a_segment_are_an_error() {
    let v = simple_version();
    let b = LogBatchBuilder::new(1, ArrowCompression::None);
    let mut bytes = b
        .build(0, 0, &simple_batch(&v, 0..5), None)
        .unwrap()
        .to_vec();
    bytes.extend_from_slice(&b.build(2, 0, &simple_batch(&v, 2..7), None).unwrap());
    let segment = SegmentFile {
        base_offset: 0,
        path: format!("{BUCKET}/00000000000000000000.log"),
    };
    let err = frame_segment(Bytes::from(bytes), &segment, true).unwrap_err();
    assert!(err.message().contains("backwards"), "{err}");
    assert_eq!(err.context_value("file"), Some(segment.path.as_str()));
}

// ---------------------------------------------------------------------------------------
// 8. Statistics pruning
// ---------------------------------------------------------------------------------------

fn pruning_predicate(
    version: &SchemaVersion,
    expr: datafusion::prelude::Expr,
) -> Arc<PruningPredicate> {
    let df_schema = DFSchema::try_from(version.arrow.as_ref().clone()).unwrap();
    let physical = SessionContext::new()
        .create_physical_expr(expr, &df_schema)
        .unwrap();
    Arc::new(
        PruningPredicateBuilder::new()
            .with_file_schema(version.arrow.clone())
            .try_build(physical)
            .unwrap(),
    )
}

/// 10 V1 batches: batch k holds ids (and offsets) 100k .. 100k+99.
async fn sorted_v1_log(storage: &Storage, statistics: bool) -> SchemaVersion {
    let v = simple_version();
    let mut builder = LogBatchBuilder::new(1, ArrowCompression::Zstd(3));
    if statistics {
        builder = builder.with_statistics(v.row_type().clone(), vec![0, 1]);
    }
    let log = simple_log(&v, 10, 100, &builder);
    append_all(storage, 1 << 20, &log).await;
    v
}

#[tokio::test]
async fn statistics_skip_batches_that_cannot_match() {
    let (_dir, storage) = open_storage().await;
    let v = sorted_v1_log(&storage, true).await;
    let predicate = pruning_predicate(&v, col("id").gt_eq(lit(950)).and(col("id").lt(lit(960))));
    let options = LogReadOptions {
        predicate: Some(predicate),
        verify_crc: true,
        projection: None,
        ..Default::default()
    };
    let schemas = history([v.clone()]);
    let target = schemas.get(1).unwrap();
    let mut reader = BucketLogReader::new(
        storage.clone(),
        BUCKET.to_string(),
        LogRange::new(0, 1000),
        schemas.clone(),
        target,
        options,
    )
    .unwrap();
    let mut out = Vec::new();
    while let Some(b) = reader.next_batch().await.unwrap() {
        out.push(b);
    }
    assert_eq!(reader.metrics().batches_skipped, 9);
    assert_eq!(reader.metrics().batches_read, 1);
    assert_eq!(
        reader.metrics().rows,
        100,
        "rows are not filtered, only batches"
    );
    assert_eq!(shape(&out), vec![(900, 100)]);
    assert_eq!(ids(&out), (900..1000).collect::<Vec<_>>());
}

#[tokio::test]
async fn statistics_pruning_on_a_string_column_and_no_match() {
    let (_dir, storage) = open_storage().await;
    let v = sorted_v1_log(&storage, true).await;
    let schemas = history([v.clone()]);
    // Nothing matches: every batch is skipped and no rows come back.
    let none = pruning_predicate(&v, col("id").gt(lit(5_000)));
    let (out, metrics) = read_range(
        &storage,
        0..1000,
        &schemas,
        1,
        LogReadOptions {
            predicate: Some(none),
            verify_crc: true,
            projection: None,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(out.is_empty());
    assert_eq!((metrics.batches_skipped, metrics.batches_read), (10, 0));

    // String bounds compare bytewise, so "name-150" lies inside batch 0's ["name-0",
    // "name-99"] too; batch 1 (["name-100", "name-199"]) must be read.
    let eq = pruning_predicate(&v, col("name").eq(lit("name-150")));
    let (out, metrics) = read_range(
        &storage,
        0..1000,
        &schemas,
        1,
        LogReadOptions {
            predicate: Some(eq),
            verify_crc: true,
            projection: Some(vec![0]),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(metrics.batches_read >= 1);
    assert!(
        out.iter().any(|b| b.first_offset == 100),
        "batch 1 holds name-150"
    );
    assert_eq!(metrics.batches_read + metrics.batches_skipped, 10);
}

#[tokio::test]
async fn batches_without_statistics_are_never_skipped() {
    let (_dir, storage) = open_storage().await;
    let v = sorted_v1_log(&storage, false).await;
    let predicate = pruning_predicate(&v, col("id").gt_eq(lit(950)).and(col("id").lt(lit(960))));
    let schemas = history([v]);
    let (out, metrics) = read_range(
        &storage,
        0..1000,
        &schemas,
        1,
        LogReadOptions {
            predicate: Some(predicate),
            verify_crc: true,
            projection: None,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(metrics.batches_skipped, 0);
    assert_eq!(metrics.batches_read, 10);
    assert_eq!(ids(&out).len(), 1000);
}
