//! Helpers shared by the integration tests: rendering Arrow rows as JSON values with
//! the rules of `tests/python/paimon_render.py`, so Rust and Python results compare.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::TimeUnit;
use serde_json::{Map, Value, json};

fn render_timestamp(value: i64, unit: &TimeUnit, tz: bool) -> Value {
    let micros = match unit {
        TimeUnit::Second => value * 1_000_000,
        TimeUnit::Millisecond => value * 1000,
        TimeUnit::Microsecond => value,
        TimeUnit::Nanosecond => value / 1000,
    };
    let dt = chrono::DateTime::from_timestamp_micros(micros).expect("timestamp in range");
    let s = dt.naive_utc().format("%Y-%m-%dT%H:%M:%S%.3f").to_string();
    Value::String(if tz { format!("{s}Z") } else { s })
}

/// One cell as JSON.
pub fn render_cell(array: &dyn Array, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    use datafusion::arrow::datatypes::*;
    match array.data_type() {
        DataType::Boolean => json!(array.as_boolean().value(row)),
        DataType::Int8 => json!(array.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => json!(array.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => json!(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(row)),
        DataType::Float32 => json!(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => json!(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => json!(array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => json!(array.as_string::<i64>().value(row)),
        DataType::Utf8View => json!(array.as_string_view().value(row)),
        DataType::Decimal128(_, _) => {
            json!(array.as_primitive::<Decimal128Type>().value_as_string(row))
        }
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(row);
            let d = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()
                + chrono::Duration::days(days as i64);
            json!(d.format("%Y-%m-%d").to_string())
        }
        DataType::Timestamp(unit, tz) => {
            let v = match unit {
                TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row),
                TimeUnit::Millisecond => {
                    array.as_primitive::<TimestampMillisecondType>().value(row)
                }
                TimeUnit::Microsecond => {
                    array.as_primitive::<TimestampMicrosecondType>().value(row)
                }
                TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(row),
            };
            render_timestamp(v, unit, tz.is_some())
        }
        DataType::Binary => {
            let b = array.as_binary::<i32>().value(row);
            json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>())
        }
        other => panic!("no JSON rendering for {other}"),
    }
}

/// All rows of `batches` as JSON objects (column order kept).
pub fn render_rows(batches: &[RecordBatch]) -> Vec<Value> {
    let mut rows = Vec::new();
    for batch in batches {
        let schema = batch.schema();
        for row in 0..batch.num_rows() {
            let mut object = Map::new();
            for (i, field) in schema.fields().iter().enumerate() {
                object.insert(
                    field.name().clone(),
                    render_cell(batch.column(i).as_ref(), row),
                );
            }
            rows.push(Value::Object(object));
        }
    }
    rows
}

fn sort_key(v: &Value) -> (u8, String) {
    match v {
        Value::Null => (0, String::new()),
        Value::Bool(b) => (1, format!("{:020}", *b as i64)),
        Value::Number(n) => {
            // order numbers numerically: the f64's bits, flipped so that they sort as
            // unsigned integers (adding an offset to the float lost small differences)
            let bits = n.as_f64().unwrap_or(0.0).to_bits();
            let key = if bits >> 63 == 1 {
                !bits
            } else {
                bits | 1 << 63
            };
            (1, format!("{key:016x}"))
        }
        Value::String(s) => (2, s.clone()),
        other => (3, other.to_string()),
    }
}

/// Sorts rows by every column in order (stable across Rust and Python).
pub fn sort_rows(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by(|a, b| {
        let (Value::Object(a), Value::Object(b)) = (a, b) else {
            return std::cmp::Ordering::Equal;
        };
        for (k, va) in a {
            let vb = b.get(k).unwrap_or(&Value::Null);
            let o = sort_key(va).cmp(&sort_key(vb));
            if o != std::cmp::Ordering::Equal {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    });
    rows
}

/// The Python interpreter of the test venv, if installed (`tests/python/setup_venv.sh`).
/// With `FLUSS_REQUIRE_PYTHON=1` (set by CI) a missing venv fails the test instead.
pub fn venv_python() -> Option<std::path::PathBuf> {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    if std::env::var("FLUSS_REQUIRE_PYTHON").is_ok_and(|v| v == "1") {
        panic!("the Python venv is required: run tests/python/setup_venv.sh");
    }
    eprintln!("skipping: no Python venv (run tests/python/setup_venv.sh)");
    None
}
