//! Planning and reading a pinned Paimon snapshot for a union read.
//!
//! Planning is metadata only (`paimon` split planning with partition / bucket / stats
//! pruning) and yields plain [`LakeSplit`] values. Splits of append tables, and
//! primary-key splits paimon marks raw convertible, are plain parquet files read by
//! DataFusion's own parquet source; other primary-key splits go through the paimon
//! crate's merge-on-read reader (LSM levels, deletion vectors), bridged to arrow 59
//! without copying.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use datafusion::scalar::ScalarValue;
use futures::StreamExt;
use futures::stream::BoxStream;
use paimon::spec::{DataType as PaimonType, Datum, Predicate, PredicateBuilder};
use paimon::table::{DataSplit, Table};

use super::arrow_bridge::from_arrow58;
use crate::error::{Error, ErrorKind, Result};

/// One data file of a split.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LakeFile {
    /// Absolute path or URL.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Rows in the file (before deletes).
    pub rows: i64,
}

/// How a split is read.
#[derive(Debug, Clone)]
pub enum LakeRead {
    /// Plain parquet files: every physical row is a live row.
    Parquet,
    /// Merge-on-read through the paimon crate (overlapping PK levels, delete rows,
    /// deletion vectors).
    MergeOnRead(Box<DataSplit>),
}

/// One (partition, bucket) group of lake files of the pinned snapshot.
#[derive(Debug, Clone)]
pub struct LakeSplit {
    /// Fluss partition name (values joined by `$`), for partitioned tables.
    pub partition_name: Option<String>,
    /// Lake bucket (= Fluss bucket); `-1` for bucket-unaware tables.
    pub bucket: i32,
    /// Data files.
    pub files: Vec<LakeFile>,
    /// How to read them.
    pub read: LakeRead,
    /// Row count (exact for append splits, upper bound for merge splits).
    pub rows: i64,
}

/// The splits of one snapshot.
#[derive(Debug, Clone)]
pub struct PaimonSnapshotPlan {
    /// The snapshot id the plan is pinned to.
    pub snapshot_id: i64,
    /// The pinned table (for merge-on-read reads).
    pub table: Table,
    /// Splits after pruning.
    pub splits: Vec<LakeSplit>,
}

fn lake_err(message: &str) -> impl FnOnce(paimon::Error) -> Error {
    let message = message.to_string();
    move |e| Error::new(ErrorKind::Lake, message).with_source(e)
}

/// Plans of immutable snapshots, keyed by warehouse, table, snapshot and filters.
static PLAN_CACHE: std::sync::LazyLock<std::sync::Mutex<HashMap<String, PaimonSnapshotPlan>>> =
    std::sync::LazyLock::new(Default::default);

/// Most plans kept; the cache is emptied when it would grow past this.
const PLAN_CACHE_ENTRIES: usize = 128;

/// A cached plan for `key`, if one was made in this process.
pub fn cached_plan(key: &str) -> Option<PaimonSnapshotPlan> {
    PLAN_CACHE.lock().ok()?.get(key).cloned()
}

/// Remembers the plan of a snapshot (snapshots never change once committed).
pub fn cache_plan(key: String, plan: &PaimonSnapshotPlan) {
    if let Ok(mut cache) = PLAN_CACHE.lock() {
        if cache.len() >= PLAN_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(key, plan.clone());
    }
}

/// Pins `table` to `snapshot_id`.
pub async fn pin_snapshot(table: &Table, snapshot_id: i64) -> Result<Table> {
    table
        .copy_with_time_travel_strict(HashMap::from([(
            "scan.snapshot-id".to_string(),
            snapshot_id.to_string(),
        )]))
        .await
        .map_err(|e| {
            Error::new(ErrorKind::NotFound, "lake snapshot cannot be read")
                .with_context("snapshot", snapshot_id)
                .with_source(e)
        })
}

/// The Fluss partition name of a split (values rendered as Fluss does, joined by `$`).
fn partition_name(table: &Table, split: &DataSplit) -> Result<Option<String>> {
    let keys = table.schema().partition_keys();
    if keys.is_empty() {
        return Ok(None);
    }
    let fields = table.schema().fields();
    let row = split.partition();
    let mut values = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        let field = fields.iter().find(|f| f.name() == key).ok_or_else(|| {
            Error::data_invalid(format!(
                "partition key '{key}' is not a column of the lake table"
            ))
        })?;
        if row.is_null_at(i) {
            values.push("null".to_string());
            continue;
        }
        let value = match field.data_type() {
            PaimonType::VarChar(_) | PaimonType::Char(_) => {
                row.get_string(i)
                    .map(str::to_string)
                    .map_err(lake_err("bad partition value"))?
            }
            PaimonType::Int(_) => row
                .get_int(i)
                .map_err(lake_err("bad partition value"))?
                .to_string(),
            PaimonType::BigInt(_) => row
                .get_long(i)
                .map_err(lake_err("bad partition value"))?
                .to_string(),
            PaimonType::Date(_) => {
                chrono_date(row.get_int(i).map_err(lake_err("bad partition value"))?)
            }
            other => {
                return Err(Error::unsupported(format!(
                    "partition key '{key}' of lake type {other:?} is not supported"
                )));
            }
        };
        values.push(value);
    }
    Ok(Some(values.join("$")))
}

fn chrono_date(days: i32) -> String {
    // Civil-from-days (Howard Hinnant), avoiding a date dependency.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

/// Plans the splits of a pinned table. `filter` prunes partitions, buckets and files
/// (never rows: callers re-apply it).
pub async fn plan_snapshot(
    pinned: Table,
    snapshot_id: i64,
    filter: Option<Predicate>,
    primary_key: bool,
) -> Result<PaimonSnapshotPlan> {
    let mut read_builder = pinned.new_read_builder();
    if let Some(f) = filter {
        read_builder.with_filter(f);
    }
    let plan = read_builder
        .new_scan()
        .plan()
        .await
        .map_err(lake_err("cannot plan the lake scan"))?;
    let mut splits = Vec::with_capacity(plan.splits().len());
    for split in plan.splits() {
        let files: Vec<LakeFile> = split
            .data_files()
            .iter()
            .map(|f| LakeFile {
                path: split.data_file_path(f),
                size: f.file_size as u64,
                rows: f.row_count,
            })
            .collect();
        let has_deletes = split
            .data_deletion_files()
            .is_some_and(|d| d.iter().any(Option::is_some));
        // A primary-key split is read as plain parquet when paimon says it is raw
        // convertible (one sorted run or one file, unique keys, no delete rows).
        let read = if has_deletes || (primary_key && !split.raw_convertible()) {
            LakeRead::MergeOnRead(Box::new(split.clone()))
        } else {
            LakeRead::Parquet
        };
        splits.push(LakeSplit {
            partition_name: partition_name(&pinned, split)?,
            bucket: split.bucket(),
            rows: files.iter().map(|f| f.rows).sum(),
            files,
            read,
        });
    }
    Ok(PaimonSnapshotPlan {
        snapshot_id,
        table: pinned,
        splits,
    })
}

/// Reads merge-on-read splits with the paimon reader, projected to `columns`
/// (lake column names), as arrow-59 batches.
pub fn read_merged(
    table: &Table,
    splits: Vec<DataSplit>,
    columns: &[String],
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let mut read_builder = table.new_read_builder();
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    read_builder
        .with_projection(&names)
        .map_err(lake_err("cannot project the lake read"))?;
    let read = read_builder
        .new_read()
        .map_err(lake_err("cannot read the lake table"))?;
    let stream = read
        .to_arrow(&splits)
        .map_err(lake_err("cannot read the lake table"))?;
    Ok(stream
        .map(|b| {
            b.map_err(|e| Error::new(ErrorKind::Lake, "lake read failed").with_source(e))
                .and_then(from_arrow58)
        })
        .boxed())
}

/// Translates DataFusion filters to a Paimon predicate over `columns` (conjunction of
/// what can be translated; the rest is dropped, which only widens the pruning).
pub fn to_paimon_predicate(
    table: &Table,
    filters: &[Expr],
    columns: &[String],
) -> Option<Predicate> {
    let builder = PredicateBuilder::new(table.schema().fields());
    let fields = table.schema().fields();
    let parts: Vec<Predicate> = filters
        .iter()
        .filter_map(|f| translate(&builder, fields, f, columns))
        .collect();
    match parts.len() {
        0 => None,
        1 => parts.into_iter().next(),
        _ => Some(Predicate::and(parts)),
    }
}

fn column_name(expr: &Expr, columns: &[String]) -> Option<String> {
    match expr {
        Expr::Column(c) if columns.iter().any(|n| n == &c.name) => Some(c.name.clone()),
        Expr::Cast(c) => column_name(&c.expr, columns),
        _ => None,
    }
}

fn literal(expr: &Expr) -> Option<&ScalarValue> {
    match expr {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

fn datum(value: &ScalarValue, ty: &PaimonType) -> Option<Datum> {
    if value.is_null() {
        return None;
    }
    let as_i64 = |v: &ScalarValue| -> Option<i64> {
        match v {
            ScalarValue::Int8(Some(x)) => Some(*x as i64),
            ScalarValue::Int16(Some(x)) => Some(*x as i64),
            ScalarValue::Int32(Some(x)) => Some(*x as i64),
            ScalarValue::Int64(Some(x)) => Some(*x),
            ScalarValue::UInt8(Some(x)) => Some(*x as i64),
            ScalarValue::UInt16(Some(x)) => Some(*x as i64),
            ScalarValue::UInt32(Some(x)) => Some(*x as i64),
            ScalarValue::UInt64(Some(x)) => i64::try_from(*x).ok(),
            _ => None,
        }
    };
    Some(match ty {
        PaimonType::TinyInt(_) => Datum::TinyInt(i8::try_from(as_i64(value)?).ok()?),
        PaimonType::SmallInt(_) => Datum::SmallInt(i16::try_from(as_i64(value)?).ok()?),
        PaimonType::Int(_) => Datum::Int(i32::try_from(as_i64(value)?).ok()?),
        PaimonType::BigInt(_) => Datum::Long(as_i64(value)?),
        PaimonType::VarChar(_) | PaimonType::Char(_) => match value {
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)) => Datum::String(s.clone()),
            _ => return None,
        },
        PaimonType::Date(_) => match value {
            ScalarValue::Date32(Some(d)) => Datum::Date(*d),
            _ => return None,
        },
        PaimonType::Boolean(_) => match value {
            ScalarValue::Boolean(Some(b)) => Datum::Bool(*b),
            _ => return None,
        },
        _ => return None,
    })
}

fn translate(
    builder: &PredicateBuilder,
    fields: &[paimon::spec::DataField],
    expr: &Expr,
    columns: &[String],
) -> Option<Predicate> {
    let field_type = |name: &str| {
        fields
            .iter()
            .find(|f| f.name() == name)
            .map(|f| f.data_type())
    };
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => {
                let l = translate(builder, fields, left, columns);
                let r = translate(builder, fields, right, columns);
                match (l, r) {
                    (Some(l), Some(r)) => Some(Predicate::and(vec![l, r])),
                    (Some(x), None) | (None, Some(x)) => Some(x),
                    _ => None,
                }
            }
            Operator::Or => {
                let l = translate(builder, fields, left, columns)?;
                let r = translate(builder, fields, right, columns)?;
                Some(Predicate::or(vec![l, r]))
            }
            _ => {
                let (name, value, op) = match (column_name(left, columns), literal(right)) {
                    (Some(n), Some(v)) => (n, v, *op),
                    _ => match (literal(left), column_name(right, columns)) {
                        (Some(v), Some(n)) => (n, v, op.swap()?),
                        _ => return None,
                    },
                };
                let d = datum(value, field_type(&name)?)?;
                match op {
                    Operator::Eq => builder.equal(&name, d).ok(),
                    Operator::NotEq => builder.not_equal(&name, d).ok(),
                    Operator::Lt => builder.less_than(&name, d).ok(),
                    Operator::LtEq => builder.less_or_equal(&name, d).ok(),
                    Operator::Gt => builder.greater_than(&name, d).ok(),
                    Operator::GtEq => builder.greater_or_equal(&name, d).ok(),
                    _ => None,
                }
            }
        },
        Expr::IsNull(e) => builder.is_null(&column_name(e, columns)?).ok(),
        Expr::IsNotNull(e) => builder.is_not_null(&column_name(e, columns)?).ok(),
        Expr::InList(list) if !list.negated => {
            let name = column_name(&list.expr, columns)?;
            let ty = field_type(&name)?;
            let values = list
                .list
                .iter()
                .map(|e| literal(e).and_then(|v| datum(v, ty)))
                .collect::<Option<Vec<_>>>()?;
            builder.is_in(&name, values).ok()
        }
        _ => None,
    }
}

/// Lake schema to Fluss schema: the Arrow types the union table exposes.
pub fn target_schema(fluss: &SchemaRef) -> SchemaRef {
    Arc::clone(fluss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_render_as_iso() {
        assert_eq!(chrono_date(0), "1970-01-01");
        assert_eq!(chrono_date(19723), "2024-01-01");
        assert_eq!(chrono_date(-1), "1969-12-31");
    }
}
