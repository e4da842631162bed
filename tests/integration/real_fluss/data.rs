//! The scenario tables' columns, the rows the tests write, and a model of what each
//! table holds (the oracle where Flink cannot be one).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::canonical::{Rows, date_time, float};

/// How a column's values travel: JSON for the harness, canonical text to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    BigInt,
    Str,
    Decimal,
    Date,
    Timestamp,
    TimestampLtz,
    Boolean,
    Double,
    Bytes,
}

/// A column of a scenario table.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: &'static str,
    pub sql_type: &'static str,
    pub kind: Kind,
}

const fn column(name: &'static str, sql_type: &'static str, kind: Kind) -> Column {
    Column {
        name,
        sql_type,
        kind,
    }
}

/// The value columns every scenario table has, after `id`.
pub const VALUE_COLUMNS: [Column; 9] = [
    column("name", "STRING", Kind::Str),
    column("score", "BIGINT", Kind::BigInt),
    column("price", "DECIMAL(10, 2)", Kind::Decimal),
    column("day", "DATE", Kind::Date),
    column("ts", "TIMESTAMP(3)", Kind::Timestamp),
    column("ltz", "TIMESTAMP_LTZ(3)", Kind::TimestampLtz),
    column("flag", "BOOLEAN", Kind::Boolean),
    column("ratio", "DOUBLE", Kind::Double),
    column("raw", "BYTES", Kind::Bytes),
];

/// The column `ALTER TABLE … ADD` adds to the schema-evolution tables.
pub const ADDED_COLUMN: Column = column("email", "STRING", Kind::Str);

/// A table's partition column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partitioning {
    None,
    Str,
    Int,
    Date,
    Bool,
    Timestamp,
}

impl Partitioning {
    pub fn label(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Str => "str",
            Self::Int => "int",
            Self::Date => "date",
            Self::Bool => "bool",
            Self::Timestamp => "ts",
        }
    }

    pub fn column(self) -> Option<Column> {
        match self {
            Self::None => None,
            Self::Str => Some(column("p", "STRING", Kind::Str)),
            Self::Int => Some(column("p", "INT", Kind::Int)),
            Self::Date => Some(column("p", "DATE", Kind::Date)),
            Self::Bool => Some(column("p", "BOOLEAN", Kind::Boolean)),
            Self::Timestamp => Some(column("p", "TIMESTAMP(6)", Kind::Timestamp)),
        }
    }

    /// The two partitions' values (canonical text).
    pub fn values(self) -> [&'static str; 2] {
        match self {
            Self::None => ["", ""],
            Self::Str => ["a", "b"],
            Self::Int => ["1", "2"],
            Self::Date => ["2024-01-01", "2024-01-02"],
            Self::Bool => ["false", "true"],
            Self::Timestamp => ["2024-01-01 10:30:00", "2024-01-02 08:00:00.25"],
        }
    }

    /// The Fluss partition name of a value (`PartitionNameConverters`): the canonical
    /// text, except a timestamp's `2024-01-02-08-00-00_25`.
    pub fn name_of(self, value: &str) -> String {
        match self {
            Self::Timestamp => {
                let (clock, fraction) = value.split_once('.').unwrap_or((value, ""));
                format!("{}_{fraction}", clock.replace([' ', ':'], "-"))
            }
            _ => value.to_string(),
        }
    }

    /// A SQL literal of a value.
    pub fn literal(self, value: &str) -> String {
        match self {
            Self::Int | Self::Bool => value.to_string(),
            Self::Date => format!("DATE '{value}'"),
            Self::Timestamp => format!("TIMESTAMP '{value}'"),
            Self::None | Self::Str => format!("'{value}'"),
        }
    }
}

/// A value as the harness takes it in JSON.
pub fn json_value(kind: Kind, text: &Option<String>) -> Value {
    let Some(t) = text else {
        return Value::Null;
    };
    match kind {
        Kind::Int | Kind::BigInt => json!(t.parse::<i64>().expect("integer text")),
        Kind::Double => json!(t.parse::<f64>().expect("float text")),
        Kind::Boolean => json!(t == "true"),
        // LocalDateTime.parse / Instant.parse want the ISO 'T'
        Kind::Timestamp | Kind::TimestampLtz => json!(t.replacen(' ', "T", 1)),
        Kind::Str | Kind::Decimal | Kind::Date | Kind::Bytes => json!(t),
    }
}

/// The values (canonical text) of row `id` in `version` of the data, without
/// `id` and the partition column.
pub fn values(id: i32, version: i32) -> Vec<Option<String>> {
    let i = id as i64;
    let v = version as i64;
    let base_millis = 1_709_287_200_000i64; // 2024-03-01 10:00:00 UTC
    let ts_millis = base_millis + i * 3_600_123 + v * 60_000;
    vec![
        (id % 7 != 3).then(|| format!("n{id}v{version}")),
        (id % 5 != 4).then(|| (i * 10 + v).to_string()),
        Some(format!("{}.{:02}", i * 3 + v, (i * 7) % 100)),
        Some(
            (chrono::NaiveDate::from_ymd_opt(2024, 1, 1).expect("date")
                + chrono::Duration::days(i * 3 + v))
            .format("%Y-%m-%d")
            .to_string(),
        ),
        Some(date_time(ts_millis as i128 * 1_000_000)),
        (id % 6 != 5).then(|| format!("{}Z", date_time((ts_millis + 7) as i128 * 1_000_000))),
        Some((id % 2 == 0).to_string()),
        Some(float(i as f64 * 0.5 + v as f64)),
        (id % 4 != 1).then(|| format!("{:02x}{:02x}", id as u8, version as u8)),
    ]
}

/// One change of a table's changelog: its partition, `_change_type`, row.
pub type Change = (String, &'static str, Vec<Option<String>>);

/// What a table holds: log tables every appended row, primary-key tables one row per
/// key; and the changelog Fluss writes for the changes made.
#[derive(Debug, Clone, Default)]
pub struct Model {
    log: Vec<Vec<Option<String>>>,
    /// key (id, partition) -> row
    kv: BTreeMap<(i32, String), Vec<Option<String>>>,
    primary_key: bool,
    changes: Vec<Change>,
}

impl Model {
    pub fn new(primary_key: bool) -> Self {
        Self {
            primary_key,
            ..Default::default()
        }
    }

    pub fn append(&mut self, partition: String, row: Vec<Option<String>>) {
        self.changes.push((partition, "insert", row.clone()));
        self.log.push(row);
    }

    /// The changes an upsert of `row` makes: an insert, or the old and the new image.
    fn replace(&mut self, key: (i32, String), row: Vec<Option<String>>) {
        let partition = key.1.clone();
        match self.kv.insert(key, row.clone()) {
            Some(old) => {
                self.changes.push((partition.clone(), "update_before", old));
                self.changes.push((partition, "update_after", row));
            }
            None => self.changes.push((partition, "insert", row)),
        }
    }

    /// `row` holds every column; `key` is (id, partition value).
    pub fn upsert(&mut self, key: (i32, String), row: Vec<Option<String>>) {
        self.replace(key, row);
    }

    /// A partial update: only the columns at `positions` take `row`'s values.
    pub fn partial_update(
        &mut self,
        key: (i32, String),
        width: usize,
        positions: &[usize],
        row: &[Option<String>],
    ) {
        let mut merged = self
            .kv
            .get(&key)
            .cloned()
            .unwrap_or_else(|| vec![None; width]);
        for (&p, v) in positions.iter().zip(row) {
            merged[p] = v.clone();
        }
        self.replace(key, merged);
    }

    pub fn delete(&mut self, key: &(i32, String)) {
        if let Some(old) = self.kv.remove(key) {
            self.changes.push((key.1.clone(), "delete", old));
        }
    }

    /// Widens every row by a NULL column (ALTER TABLE … ADD COLUMN).
    pub fn add_column(&mut self) {
        for row in self.log.iter_mut().chain(self.kv.values_mut()) {
            row.push(None);
        }
        for (_, _, row) in &mut self.changes {
            row.push(None);
        }
    }

    /// The partition left Fluss (its rows stay in the lake; its log is gone).
    pub fn drop_partition_log(&mut self, partition: &str) {
        self.changes.retain(|(p, _, _)| p != partition);
    }

    pub fn rows(&self) -> Rows {
        if self.primary_key {
            self.kv.values().cloned().collect()
        } else {
            self.log.clone()
        }
    }

    /// The changelog as rows of `_change_type` then the columns.
    pub fn changelog(&self) -> Rows {
        self.changes
            .iter()
            .map(|(_, kind, row)| {
                let mut r = vec![Some(kind.to_string())];
                r.extend(row.iter().cloned());
                r
            })
            .collect()
    }
}
