//! The V1 statistics block against the Java golden fixture, byte for byte, both ways.
//!
//! The fixture is apache/fluss `fluss-common/src/test/resources/encoding/statistics_block.hex`
//! (written by Java's `LogRecordBatchStatisticsCompatibilityTest`); fluss-rs 1.0.0 ships
//! the same file, which this test reads from the cargo registry copy of the dependency.

use std::sync::Arc;

use datafusion::arrow::array::*;
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema, TimeUnit};
use datafusion::scalar::ScalarValue;
use fluss::metadata::{DataField, DataTypes, RowType};
use fluss_datafusion::log::BatchStatistics;

fn golden_hex() -> String {
    let home = std::env::var("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo")
        });
    let src = home.join("registry").join("src");
    for index in std::fs::read_dir(&src).expect("cargo registry sources") {
        let path = index
            .unwrap()
            .path()
            .join("fluss-rs-1.0.0/src/record/testdata/statistics_block.hex");
        if let Ok(hex) = std::fs::read_to_string(&path) {
            return hex.trim().to_string();
        }
    }
    panic!("statistics_block.hex not found under {}", src.display());
}

fn row_type() -> RowType {
    RowType::new(vec![
        DataField::new("bool", DataTypes::boolean(), None),
        DataField::new("i8", DataTypes::tinyint(), None),
        DataField::new("i16", DataTypes::smallint(), None),
        DataField::new("i32", DataTypes::int(), None),
        DataField::new("i64", DataTypes::bigint(), None),
        DataField::new("f32", DataTypes::float(), None),
        DataField::new("f64", DataTypes::double(), None),
        DataField::new("str", DataTypes::string(), None),
        DataField::new("dec5", DataTypes::decimal(5, 2), None),
        DataField::new("dec20", DataTypes::decimal(20, 3), None),
        DataField::new("date", DataTypes::date(), None),
        DataField::new("time", DataTypes::time(), None),
        DataField::new("ts3", DataTypes::timestamp_with_precision(3), None),
        DataField::new("ts6", DataTypes::timestamp_with_precision(6), None),
        DataField::new("ltz3", DataTypes::timestamp_ltz_with_precision(3), None),
        DataField::new("ltz6", DataTypes::timestamp_ltz_with_precision(6), None),
        DataField::new("strnull", DataTypes::string(), None),
        DataField::new("f32x", DataTypes::float(), None),
        DataField::new("f64x", DataTypes::double(), None),
    ])
}

fn batch() -> RecordBatch {
    let millis = ArrowType::Timestamp(TimeUnit::Millisecond, None);
    let micros = ArrowType::Timestamp(TimeUnit::Microsecond, None);
    let schema = Schema::new(vec![
        Field::new("bool", ArrowType::Boolean, true),
        Field::new("i8", ArrowType::Int8, true),
        Field::new("i16", ArrowType::Int16, true),
        Field::new("i32", ArrowType::Int32, true),
        Field::new("i64", ArrowType::Int64, true),
        Field::new("f32", ArrowType::Float32, true),
        Field::new("f64", ArrowType::Float64, true),
        Field::new("str", ArrowType::Utf8, true),
        Field::new("dec5", ArrowType::Decimal128(5, 2), true),
        Field::new("dec20", ArrowType::Decimal128(20, 3), true),
        Field::new("date", ArrowType::Date32, true),
        Field::new("time", ArrowType::Time32(TimeUnit::Millisecond), true),
        Field::new("ts3", millis.clone(), true),
        Field::new("ts6", micros.clone(), true),
        Field::new("ltz3", millis, true),
        Field::new("ltz6", micros, true),
        Field::new("strnull", ArrowType::Utf8, true),
        Field::new("f32x", ArrowType::Float32, true),
        Field::new("f64x", ArrowType::Float64, true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(BooleanArray::from(vec![true, false, true])),
            Arc::new(Int8Array::from(vec![1, -3, 7])),
            Arc::new(Int16Array::from(vec![100, 200, -50])),
            Arc::new(Int32Array::from(vec![Some(10), None, Some(30)])),
            Arc::new(Int64Array::from(vec![1000, -2000, 3000])),
            Arc::new(Float32Array::from(vec![1.5, -2.5, 0.5])),
            Arc::new(Float64Array::from(vec![3.25, 1.25, 9.75])),
            Arc::new(StringArray::from(vec!["banana", "apple", "cherry"])),
            Arc::new(
                Decimal128Array::from(vec![12345_i128, 6789, 50000])
                    .with_precision_and_scale(5, 2)
                    .unwrap(),
            ),
            Arc::new(
                Decimal128Array::from(vec![12345678901_i128, 1234, 99999999999999999])
                    .with_precision_and_scale(20, 3)
                    .unwrap(),
            ),
            Arc::new(Date32Array::from(vec![19000, 18000, 20000])),
            Arc::new(Time32MillisecondArray::from(vec![
                3600000, 7200000, 1800000,
            ])),
            Arc::new(TimestampMillisecondArray::from(vec![
                1700000000123,
                1600000000000,
                1800000000999,
            ])),
            Arc::new(TimestampMicrosecondArray::from(vec![
                1700000000123456,
                1600000000000001,
                1800000000999999,
            ])),
            Arc::new(TimestampMillisecondArray::from(vec![
                1700000000123,
                1600000000000,
                1800000000999,
            ])),
            Arc::new(TimestampMicrosecondArray::from(vec![
                1700000000123456,
                1600000000000001,
                1800000000999999,
            ])),
            Arc::new(StringArray::from(vec![None::<&str>, None, None])),
            Arc::new(Float32Array::from(vec![
                -0.0,
                f32::from_bits(0xFFC0_0000),
                0.0,
            ])),
            Arc::new(Float64Array::from(vec![
                0.0,
                -0.0,
                f64::from_bits(0xFFF8_0000_0000_0000),
            ])),
        ],
    )
    .unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn writer_matches_the_java_golden_block_byte_for_byte() {
    let mapping: Vec<usize> = (0..19).collect();
    let bytes = BatchStatistics::serialize(&batch(), &row_type(), &mapping)
        .unwrap()
        .unwrap();
    assert_eq!(hex(&bytes), golden_hex());
}

#[test]
fn parser_reads_the_java_golden_block() {
    let bytes = unhex(&golden_hex());
    let stats = BatchStatistics::parse(&bytes, &row_type()).unwrap();
    assert_eq!(stats.num_columns(), 19);
    let col = |i: usize| stats.column(i).unwrap().clone();
    assert_eq!(col(0).min, Some(ScalarValue::Boolean(Some(false))));
    assert_eq!(col(0).max, Some(ScalarValue::Boolean(Some(true))));
    assert_eq!(col(1).min, Some(ScalarValue::Int8(Some(-3))));
    assert_eq!(col(2).min, Some(ScalarValue::Int16(Some(-50))));
    assert_eq!(col(3).null_count, 1);
    assert_eq!(col(3).min, Some(ScalarValue::Int32(Some(10))));
    assert_eq!(col(3).max, Some(ScalarValue::Int32(Some(30))));
    assert_eq!(col(4).max, Some(ScalarValue::Int64(Some(3000))));
    assert_eq!(col(5).min, Some(ScalarValue::Float32(Some(-2.5))));
    assert_eq!(col(6).max, Some(ScalarValue::Float64(Some(9.75))));
    assert_eq!(col(7).min, Some(ScalarValue::Utf8(Some("apple".into()))));
    assert_eq!(col(7).max, Some(ScalarValue::Utf8(Some("cherry".into()))));
    assert_eq!(col(8).max, Some(ScalarValue::Decimal128(Some(50000), 5, 2)));
    assert_eq!(
        col(9).max,
        Some(ScalarValue::Decimal128(Some(99999999999999999), 20, 3))
    );
    assert_eq!(col(10).min, Some(ScalarValue::Date32(Some(18000))));
    assert_eq!(col(11).max, Some(ScalarValue::Time32Second(Some(7200))));
    assert_eq!(
        col(12).max,
        Some(ScalarValue::TimestampMillisecond(Some(1800000000999), None))
    );
    assert_eq!(
        col(13).min,
        Some(ScalarValue::TimestampMicrosecond(
            Some(1600000000000001),
            None
        ))
    );
    assert_eq!(
        col(15).max,
        Some(ScalarValue::TimestampMicrosecond(
            Some(1800000000999999),
            Some("UTC".into())
        ))
    );
    assert_eq!(col(16).null_count, 3);
    assert_eq!(col(16).min, None);
    // Java order: -0.0 < 0.0 and NaN above everything
    let ScalarValue::Float32(Some(min)) = col(17).min.unwrap() else {
        panic!()
    };
    assert!(min == 0.0 && min.is_sign_negative());
    let ScalarValue::Float32(Some(max)) = col(17).max.unwrap() else {
        panic!()
    };
    assert!(max.is_nan());
    // and the parsed block serializes back to the same bytes
    let again = BatchStatistics::serialize(&batch(), &row_type(), &(0..19).collect::<Vec<_>>())
        .unwrap()
        .unwrap();
    assert_eq!(again, bytes);
}

#[test]
fn truncated_blocks_are_errors_not_panics() {
    let bytes = unhex(&golden_hex());
    for len in 0..bytes.len() {
        // every prefix either parses (never for a real cut) or errors, and never panics
        let _ = BatchStatistics::parse(&bytes[..len], &row_type());
    }
    assert!(BatchStatistics::parse(&bytes[..bytes.len() - 1], &row_type()).is_err());
    let mut bad_version = bytes.clone();
    bad_version[0] = 9;
    assert!(BatchStatistics::parse(&bad_version, &row_type()).is_err());
}
