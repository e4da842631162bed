//! Boundary values of every Fluss type for the differential test: the columns past
//! `d`, `ts` and `b` each hold values at and next to their type's bounds (chosen by a
//! row's key and `v`, as [`super::exact_values`] chooses theirs), so every write,
//! tiering and read carries them, on both lakes; and [`OUT_OF_RANGE`], each type's
//! first value past its range, which a write must refuse naming the column.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, FixedSizeBinaryArray, Float32Array, Float64Array,
    Int8Array, Int16Array, StringArray, Time32MillisecondArray, TimestampMillisecondArray,
};
use fluss::metadata::{DataTypes, SchemaBuilder};

/// The table schema's typed columns.
pub fn with_columns(schema: SchemaBuilder) -> SchemaBuilder {
    schema
        .column("i8", DataTypes::tinyint())
        .column("i16", DataTypes::smallint())
        .column("f", DataTypes::float())
        .column("dbl", DataTypes::double())
        .column("flag", DataTypes::boolean())
        .column("day", DataTypes::date())
        .column("tm", DataTypes::time_with_precision(3))
        .column("t3", DataTypes::timestamp_with_precision(3))
        .column("c", DataTypes::char(4))
        .column("bin", DataTypes::binary(3))
}

fn of<T: Clone>(values: &[Option<T>], pick: usize, salt: usize) -> Option<T> {
    values[(pick / (salt + 1) + salt) % values.len()].clone()
}

/// The typed columns of rows whose picks are `picks`.
pub fn arrays(picks: &[usize]) -> Vec<(&'static str, ArrayRef)> {
    const I8: [Option<i8>; 5] = [Some(i8::MIN), Some(i8::MAX), Some(0), Some(-1), None];
    const I16: [Option<i16>; 4] = [Some(i16::MIN), Some(i16::MAX), Some(1), None];
    const F: [Option<f32>; 7] = [
        Some(f32::MIN),
        Some(f32::MAX),
        Some(f32::MIN_POSITIVE),
        Some(1.4e-45),
        Some(-0.0),
        Some(f32::INFINITY),
        None,
    ];
    const DBL: [Option<f64>; 6] = [
        Some(f64::MIN),
        Some(f64::MAX),
        Some(5e-324),
        Some(-0.0),
        Some(f64::NEG_INFINITY),
        None,
    ];
    const FLAG: [Option<bool>; 3] = [Some(true), Some(false), None];
    // 0001-01-01 and 9999-12-31 (days since the epoch), either side of it
    const DAY: [Option<i32>; 5] = [Some(-719_162), Some(2_932_896), Some(-1), Some(0), None];
    // milliseconds of the day: midnight, the last millisecond, one
    const TM: [Option<i32>; 4] = [Some(0), Some(86_399_999), Some(1), None];
    const T3: [Option<i64>; 5] = [
        Some(-62_135_596_800_000),
        Some(253_402_300_799_999),
        Some(-1),
        Some(0),
        None,
    ];
    const C: [Option<&str>; 5] = [Some(""), Some("abcd"), Some("äöü€"), Some("a"), None];
    const BIN: [Option<[u8; 3]>; 4] = [Some([0, 0, 0]), Some([0xff; 3]), Some([1, 0, 0]), None];
    let column = |values: Vec<Option<[u8; 3]>>| -> ArrayRef {
        Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(values.into_iter(), 3)
                .expect("three bytes each"),
        )
    };
    vec![
        (
            "i8",
            Arc::new(Int8Array::from_iter(picks.iter().map(|p| of(&I8, *p, 0)))) as ArrayRef,
        ),
        (
            "i16",
            Arc::new(Int16Array::from_iter(picks.iter().map(|p| of(&I16, *p, 1)))),
        ),
        (
            "f",
            Arc::new(Float32Array::from_iter(picks.iter().map(|p| of(&F, *p, 2)))),
        ),
        (
            "dbl",
            Arc::new(Float64Array::from_iter(
                picks.iter().map(|p| of(&DBL, *p, 3)),
            )),
        ),
        (
            "flag",
            Arc::new(BooleanArray::from_iter(
                picks.iter().map(|p| of(&FLAG, *p, 4)),
            )),
        ),
        (
            "day",
            Arc::new(Date32Array::from_iter(
                picks.iter().map(|p| of(&DAY, *p, 5)),
            )),
        ),
        (
            "tm",
            Arc::new(Time32MillisecondArray::from_iter(
                picks.iter().map(|p| of(&TM, *p, 6)),
            )),
        ),
        (
            "t3",
            Arc::new(TimestampMillisecondArray::from_iter(
                picks.iter().map(|p| of(&T3, *p, 7)),
            )),
        ),
        (
            "c",
            Arc::new(StringArray::from_iter(picks.iter().map(|p| of(&C, *p, 8)))),
        ),
        (
            "bin",
            column(picks.iter().map(|p| of(&BIN, *p, 9)).collect()),
        ),
    ]
}

/// Each type's first value past its range (or its precision, or its length), as SQL,
/// and the column it is written to: every one must be refused naming the column, and
/// leave the table as it was.
pub const OUT_OF_RANGE: [(&str, &str); 15] = [
    ("i8", "128"),
    ("i8", "-129"),
    ("i16", "32768"),
    ("n", "2147483648"),
    ("id", "9223372036854775808"),
    ("d", "10000000000000000000000000000"),
    ("d", "0.00000000001"),
    ("f", "'3.5e38'"),
    ("dbl", "'1.8e308'"),
    ("flag", "'maybe'"),
    ("day", "'2024-01-01 00:00:01'"),
    ("tm", "'23:59:59.9999'"),
    ("t3", "'9999-12-31 23:59:59.9999'"),
    ("ts", "'1970-01-01 00:00:00.0000001'"),
    ("c", "'abcde'"),
];

/// `BINARY(3)`'s first value too long, apart: a hex literal.
pub const BINARY_TOO_LONG: (&str, &str) = ("bin", "X'01020304'");
