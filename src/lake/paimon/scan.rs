//! Planning and reading a pinned Paimon snapshot for a union read.
//!
//! Planning is metadata only (`paimon` split planning with partition / bucket / stats
//! pruning) and yields plain [`LakeSplit`] values; merge-on-read splits travel as
//! paimon's own serialized `DataSplit`. Splits of append tables, and
//! primary-key splits paimon marks raw convertible, are plain parquet files read by
//! DataFusion's own parquet source; other primary-key splits go through the paimon
//! crate's merge-on-read reader (LSM levels, deletion vectors), bridged to arrow 59
//! without copying.

use std::collections::HashMap;

use datafusion::arrow::array::RecordBatch;
use datafusion::scalar::ScalarValue;
use futures::StreamExt;
use futures::stream::BoxStream;
use paimon::spec::{DataType as PaimonType, Datum, Predicate, PredicateBuilder};
use paimon::table::{DataSplit, Table};

use super::sections;
use crate::error::{Error, ErrorKind, Result};
use crate::lake::arrow_bridge::from_arrow58;
use crate::lake::predicate::{CompareOp, Comparison, LakePredicate, integer_literal};
use crate::lake::{ColumnMapping, KeyedRuns, LakeFile, LakePlan, LakeRead, LakeSplit, MergeTask};
use crate::table::partition_value::{PartitionValue, render};

fn lake_err(message: &str) -> impl FnOnce(paimon::Error) -> Error {
    let message = message.to_string();
    move |e| Error::new(ErrorKind::Lake, message).with_source(e)
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
pub(super) fn partition_name(table: &Table, split: &DataSplit) -> Result<Option<String>> {
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
        let datum = row
            .get_datum(i, field.data_type())
            .map_err(lake_err("bad partition value"))?;
        let value = match &datum {
            None => "null".to_string(),
            Some(datum) => render(match datum {
                Datum::String(s) => PartitionValue::Text(s),
                Datum::Bool(b) => PartitionValue::Bool(*b),
                Datum::TinyInt(v) => PartitionValue::Integer((*v).into()),
                Datum::SmallInt(v) => PartitionValue::Integer((*v).into()),
                Datum::Int(v) => PartitionValue::Integer((*v).into()),
                Datum::Long(v) => PartitionValue::Integer(*v),
                Datum::Bytes(b) => PartitionValue::Bytes(b),
                Datum::Date(days) => PartitionValue::Date(*days),
                Datum::Time(millis) => PartitionValue::Time(*millis),
                Datum::Timestamp { millis, nanos }
                | Datum::LocalZonedTimestamp { millis, nanos } => PartitionValue::Timestamp {
                    millis: *millis,
                    nanos_of_milli: *nanos,
                },
                other => {
                    return Err(Error::unsupported(format!(
                        "partition key '{key}' has a lake value ({other}) Fluss names no \
                         partition by"
                    )));
                }
            }),
        };
        values.push(value);
    }
    Ok(Some(values.join("$")))
}

/// Plans the splits of a pinned table. `filter` prunes partitions, buckets and files
/// (never rows: callers re-apply it).
pub async fn plan_snapshot(
    pinned: &Table,
    snapshot_id: i64,
    filter: Option<Predicate>,
    primary_key: bool,
) -> Result<LakePlan> {
    let mut read_builder = pinned.new_read_builder();
    if let Some(f) = filter {
        read_builder.with_filter(f);
    }
    let plan = read_builder
        .new_scan()
        .plan()
        .await
        .map_err(lake_err("cannot plan the lake scan"))?;
    let mergeable = provider_mergeable(pinned.schema().options());
    let key_types = key_types(pinned).unwrap_or_default();
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
        let rows = files.iter().map(|f| f.rows).sum();
        let has_deletes = split
            .data_deletion_files()
            .is_some_and(|d| d.iter().any(Option::is_some));
        // A primary-key split is read as plain parquet when paimon says it is raw
        // convertible (one sorted run or one file, unique keys, no delete rows), as
        // sorted runs the provider merges when their order is known, and by paimon's
        // merge reader otherwise.
        let runs = (primary_key && !has_deletes && !split.raw_convertible() && mergeable)
            .then(|| keyed_runs(split, &key_types))
            .flatten();
        let read = if let Some(runs) = runs {
            // files that share no key and hold no deletes are raw parquet
            if runs.newer.is_empty() && !runs.base_has_deletes {
                LakeRead::Parquet(ColumnMapping::ByName)
            } else {
                LakeRead::KeyedRuns(runs)
            }
        } else if has_deletes || (primary_key && !split.raw_convertible()) {
            LakeRead::MergeOnRead(MergeTask {
                payload: split
                    .serialize()
                    .map_err(lake_err("cannot serialize a lake split"))?,
                rows,
            })
        } else {
            LakeRead::Parquet(ColumnMapping::ByName)
        };
        splits.push(LakeSplit {
            partition_name: partition_name(pinned, split)?,
            bucket: split.bucket(),
            rows,
            files,
            read,
        });
    }
    Ok(LakePlan {
        snapshot_id,
        splits,
    })
}

/// Paimon's row-kind column of key-value files.
const VALUE_KIND_COLUMN: &str = "_VALUE_KIND";

/// Whether the table's rows merge as the provider merges sorted runs: the
/// deduplicate engine ordered by sequence number alone, deletes applied, no
/// deletion vectors (what Fluss creates: `PaimonConversions` sets none of these).
fn provider_mergeable(options: &HashMap<String, String>) -> bool {
    let core = paimon::spec::CoreOptions::new(options);
    matches!(
        core.merge_engine(),
        Ok(paimon::spec::MergeEngine::Deduplicate)
    ) && core.sequence_fields().is_empty()
        && core.rowkind_field().is_none()
        && !core.ignore_delete()
        && !core.deletion_vectors_enabled()
}

/// The split's files as sorted runs whose order the sequence numbers prove, or
/// `None` (the merge reader reads it then). `key_types` are the lake key's types
/// (the trimmed primary key): files whose key ranges no other file's overlaps
/// ([`sections::by_key_range`]) are base files as they are.
fn keyed_runs(split: &DataSplit, key_types: &[PaimonType]) -> Option<KeyedRuns> {
    let file = |f: &paimon::spec::DataFileMeta| LakeFile {
        path: split.data_file_path(f),
        size: f.file_size as u64,
        rows: f.row_count,
    };
    let mut runs = KeyedRuns {
        base: Vec::new(),
        base_has_deletes: false,
        newer: Vec::new(),
        row_kind_column: VALUE_KIND_COLUMN.to_string(),
    };
    for section in sections::by_key_range(split.data_files(), key_types) {
        let (base, newer) = section_runs(section)?;
        // a file that does not say how many deletes it holds may hold some
        runs.base_has_deletes |= base.iter().any(|f| f.delete_row_count != Some(0));
        runs.base.extend(base.into_iter().map(file));
        runs.newer.extend(newer.into_iter().map(file));
    }
    Some(runs)
}

/// The base run and the newer files (in the order their rows apply) of one key-range
/// section, or `None` when the sequence numbers do not prove their order.
///
/// The base is the highest level above 0 (one sorted run: its files' key ranges do not
/// overlap), or the level-0 file with the oldest rows when every file is at level 0;
/// every other file must hold only newer rows, and they apply in ascending sequence
/// order (files whose sequence ranges overlap must share a level above 0, so never hold
/// the same key). A section of one file is its own base.
#[allow(clippy::type_complexity)]
fn section_runs(
    files: Vec<&paimon::spec::DataFileMeta>,
) -> Option<(
    Vec<&paimon::spec::DataFileMeta>,
    Vec<&paimon::spec::DataFileMeta>,
)> {
    let top = files.iter().map(|f| f.level).max()?;
    let base_index: Vec<usize> = if top > 0 {
        (0..files.len())
            .filter(|&i| files[i].level == top)
            .collect()
    } else {
        let oldest = (0..files.len()).min_by_key(|&i| files[i].max_sequence_number)?;
        vec![oldest]
    };
    let (mut base, mut newer) = (Vec::new(), Vec::new());
    for (i, f) in files.into_iter().enumerate() {
        if base_index.contains(&i) {
            base.push(f);
        } else {
            newer.push(f);
        }
    }
    let base_max = base.iter().map(|f| f.max_sequence_number).max()?;
    if newer.iter().any(|f| f.min_sequence_number <= base_max) {
        return None;
    }
    newer.sort_by_key(|f| (f.min_sequence_number, f.max_sequence_number));
    for pair in newer.windows(2) {
        let ordered = pair[0].max_sequence_number < pair[1].min_sequence_number;
        let same_run = pair[0].level == pair[1].level && pair[0].level > 0;
        if !ordered && !same_run {
            return None;
        }
    }
    Some((base, newer))
}

/// The lake key's types: the primary key without the partition columns, as Paimon
/// writes files' min and max keys; `None` when a key column is missing.
fn key_types(table: &Table) -> Option<Vec<PaimonType>> {
    let fields = table.schema().fields();
    table
        .schema()
        .trimmed_primary_keys()
        .iter()
        .map(|k| {
            fields
                .iter()
                .find(|f| f.name() == k)
                .map(|f| f.data_type().clone())
        })
        .collect()
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

/// Translates the format-neutral lake predicate into Paimon's (what cannot be
/// expressed widens the pruning: an AND drops the part, an OR is dropped whole).
pub fn to_paimon_predicate(table: &Table, predicate: &LakePredicate) -> Option<Predicate> {
    let fields = table.schema().fields();
    let builder = PredicateBuilder::new(fields);
    translate(&builder, fields, predicate)
}

fn datum(value: &ScalarValue, ty: &PaimonType) -> Option<Datum> {
    if value.is_null() {
        return None;
    }
    let as_i64 = integer_literal;
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
    predicate: &LakePredicate,
) -> Option<Predicate> {
    let field_type = |name: &str| {
        fields
            .iter()
            .find(|f| f.name() == name)
            .map(|f| f.data_type())
    };
    match predicate {
        LakePredicate::And(parts) => {
            let mut kept: Vec<Predicate> = parts
                .iter()
                .filter_map(|p| translate(builder, fields, p))
                .collect();
            match kept.len() {
                0 => None,
                1 => kept.pop(),
                _ => Some(Predicate::and(kept)),
            }
        }
        LakePredicate::Or(parts) => Some(Predicate::or(
            parts
                .iter()
                .map(|p| translate(builder, fields, p))
                .collect::<Option<Vec<_>>>()?,
        )),
        LakePredicate::Compare(Comparison { column, op, value }) => {
            let d = datum(value, field_type(column)?)?;
            match op {
                CompareOp::Eq => builder.equal(column, d).ok(),
                CompareOp::NotEq => builder.not_equal(column, d).ok(),
                CompareOp::Lt => builder.less_than(column, d).ok(),
                CompareOp::LtEq => builder.less_or_equal(column, d).ok(),
                CompareOp::Gt => builder.greater_than(column, d).ok(),
                CompareOp::GtEq => builder.greater_or_equal(column, d).ok(),
            }
        }
        LakePredicate::IsNull(column) => builder.is_null(column).ok(),
        LakePredicate::IsNotNull(column) => builder.is_not_null(column).ok(),
        LakePredicate::In { column, values } => {
            let ty = field_type(column)?;
            let values = values
                .iter()
                .map(|v| datum(v, ty))
                .collect::<Option<Vec<_>>>()?;
            builder.is_in(column, values).ok()
        }
    }
}
