//! Values as canonical text, the form the harness renders Flink's answers in
//! (`tests/real-fluss/README.md`): both engines' rows are compared as text, so the
//! comparison never depends on either engine's own formatting.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::*;

/// One answer: rows of cells, `None` for NULL.
pub type Rows = Vec<Vec<Option<String>>>;

/// ".123" for 123 000 000 ns, "" for 0: nanoseconds without trailing zeros.
pub fn fraction(nanos: u32) -> String {
    if nanos == 0 {
        return String::new();
    }
    let s = format!(".{nanos:09}");
    s.trim_end_matches('0').to_string()
}

/// `YYYY-MM-DD HH:MM:SS[.fraction]` of epoch nanoseconds.
pub fn date_time(epoch_nanos: i128) -> String {
    let secs = epoch_nanos.div_euclid(1_000_000_000) as i64;
    let nanos = epoch_nanos.rem_euclid(1_000_000_000) as u32;
    let dt = chrono::DateTime::from_timestamp(secs, nanos).expect("timestamp in range");
    format!(
        "{}{}",
        dt.naive_utc().format("%Y-%m-%d %H:%M:%S"),
        fraction(nanos)
    )
}

/// A float as its shortest decimal text (Java: `new BigDecimal(Double.toString(v))
/// .stripTrailingZeros().toPlainString()`).
pub fn float(v: f64) -> String {
    if v.is_nan() || v.is_infinite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".to_string();
    }
    format!("{v}")
}

fn timestamp_nanos(array: &dyn Array, row: usize, unit: &TimeUnit) -> i128 {
    let (v, scale) = match unit {
        TimeUnit::Second => (
            array.as_primitive::<TimestampSecondType>().value(row),
            1_000_000_000,
        ),
        TimeUnit::Millisecond => (
            array.as_primitive::<TimestampMillisecondType>().value(row),
            1_000_000,
        ),
        TimeUnit::Microsecond => (
            array.as_primitive::<TimestampMicrosecondType>().value(row),
            1000,
        ),
        TimeUnit::Nanosecond => (
            array.as_primitive::<TimestampNanosecondType>().value(row),
            1,
        ),
    };
    v as i128 * scale
}

/// One cell as canonical text.
pub fn cell(array: &dyn Array, row: usize) -> Option<String> {
    if array.is_null(row) {
        return None;
    }
    Some(match array.data_type() {
        DataType::Boolean => array.as_boolean().value(row).to_string(),
        DataType::Int8 => array.as_primitive::<Int8Type>().value(row).to_string(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(row).to_string(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).to_string(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::Float32 => {
            // Java renders the float's own shortest text, not the double's
            let v = array.as_primitive::<Float32Type>().value(row);
            if v == 0.0 {
                "0".to_string()
            } else {
                format!("{v}")
            }
        }
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => array.as_string::<i32>().value(row).to_string(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).to_string(),
        DataType::Utf8View => array.as_string_view().value(row).to_string(),
        DataType::Decimal128(_, _) => array.as_primitive::<Decimal128Type>().value_as_string(row),
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(row);
            (chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch")
                + chrono::Duration::days(days as i64))
            .format("%Y-%m-%d")
            .to_string()
        }
        DataType::Time32(TimeUnit::Millisecond) => {
            let ms = array.as_primitive::<Time32MillisecondType>().value(row) as i64;
            let (h, m, s) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60);
            format!(
                "{h:02}:{m:02}:{s:02}{}",
                fraction((ms % 1000) as u32 * 1_000_000)
            )
        }
        DataType::Timestamp(unit, tz) => {
            let text = date_time(timestamp_nanos(array, row, unit));
            if tz.is_some() {
                format!("{text}Z")
            } else {
                text
            }
        }
        DataType::Binary => hex(array.as_binary::<i32>().value(row)),
        DataType::LargeBinary => hex(array.as_binary::<i64>().value(row)),
        DataType::BinaryView => hex(array.as_binary_view().value(row)),
        DataType::FixedSizeBinary(_) => hex(array.as_fixed_size_binary().value(row)),
        other => panic!("no canonical text for {other}"),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every row of `batches` as canonical text, and the column names.
pub fn rows(batches: &[RecordBatch]) -> (Vec<String>, Rows) {
    let mut names = Vec::new();
    let mut out = Vec::new();
    for batch in batches {
        if names.is_empty() {
            names = batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
        }
        for row in 0..batch.num_rows() {
            out.push(
                batch
                    .columns()
                    .iter()
                    .map(|c| cell(c.as_ref(), row))
                    .collect(),
            );
        }
    }
    (names, out)
}

/// Rows sorted (NULL first), for comparing answers as multisets.
pub fn sorted(mut rows: Rows) -> Rows {
    rows.sort();
    rows
}
