//! Planning a pinned Iceberg snapshot into [`LakeSplit`]s, and reading the tasks that
//! carry delete files (the `iceberg` crate's reader, deletes applied by
//! [`super::delete_reader`]).

use datafusion::arrow::array::RecordBatch;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::expr::Predicate;
use iceberg::scan::FileScanTask;
use iceberg::spec::{Literal, PrimitiveLiteral, PrimitiveType, TableMetadata, Transform, Type};
use iceberg::table::Table;
use serde::{Deserialize, Serialize};

use super::lake_error;
use super::predicate::to_iceberg_predicate;
use crate::error::{Error, ErrorKind, Result};
use crate::lake::{
    ColumnMapping, LakeFile, LakePlan, LakeRead, LakeScanRequest, LakeSplit, MergeTask,
};
use crate::table::partition_value::{PartitionValue, render};

/// The lake column that names a row's Fluss bucket.
const BUCKET_COLUMN: &str = "__bucket";

/// What a merge task holds: the task Iceberg planned (its data file, delete files
/// and schema), whole, so any process that opens the table reads it without
/// planning the snapshot again. Left out, as they do not serialize: the partition
/// and its spec (iceberg 0.10.1's reader uses them only together, and plans no
/// spec) and the name mapping (the table's, put back when read).
#[derive(Serialize, Deserialize)]
struct MergeTaskPayload {
    task: FileScanTask,
}

/// The task of a merge task, as [`read_tasks`] reads it.
pub fn merge_task(task: &MergeTask, table: &Table) -> Result<FileScanTask> {
    let mut planned = serde_json::from_slice::<MergeTaskPayload>(&task.payload)
        .map(|p| p.task)
        .map_err(|e| {
            Error::new(
                ErrorKind::Lake,
                "an Iceberg merge task does not deserialize",
            )
            .with_source(e)
        })?;
    planned.name_mapping = name_mapping(table)?;
    Ok(planned)
}

/// The table's name mapping (`schema.name-mapping.default`), as iceberg's planner
/// gives its tasks.
fn name_mapping(table: &Table) -> Result<Option<std::sync::Arc<iceberg::spec::NameMapping>>> {
    let Some(raw) = table
        .metadata()
        .properties()
        .get(iceberg::spec::DEFAULT_SCHEMA_NAME_MAPPING)
    else {
        return Ok(None);
    };
    serde_json::from_str(raw)
        .map(|m| Some(std::sync::Arc::new(m)))
        .map_err(|e| {
            Error::data_invalid(format!(
                "the table property {} is not a name mapping",
                iceberg::spec::DEFAULT_SCHEMA_NAME_MAPPING
            ))
            .with_source(e)
        })
}

/// `task` as a merge task's payload.
fn merge_task_payload(task: &FileScanTask) -> Result<Vec<u8>> {
    let mut task = task.clone();
    task.partition = None;
    task.partition_spec = None;
    task.name_mapping = None;
    // the planning filter prunes files only: the reader never filters rows by it
    task.predicate = None;
    serde_json::to_vec(&MergeTaskPayload { task })
        .map_err(|e| Error::internal("an Iceberg merge task does not serialize").with_source(e))
}

/// Plans the data files of `request.snapshot_id`: one split per file, plain parquet
/// when it has no delete files (columns matched by name, or by field id after a
/// rename), otherwise a merge task carrying its planned task whole, for the
/// `iceberg` reader.
pub async fn plan_snapshot(table: &Table, request: &LakeScanRequest) -> Result<LakePlan> {
    let metadata = table.metadata();
    if metadata.snapshot_by_id(request.snapshot_id).is_none() {
        return Err(
            Error::not_found("the registered lake snapshot is not in the Iceberg table")
                .with_context("snapshot", request.snapshot_id),
        );
    }
    let filter = request
        .filter
        .as_ref()
        .and_then(|f| to_iceberg_predicate(metadata.current_schema(), f));
    let tasks = match filter {
        // A filter the planner cannot bind only costs pruning: plan without it.
        Some(filter) => match plan_files(table, request.snapshot_id, Some(filter)).await {
            Ok(tasks) => tasks,
            Err(_) => plan_files(table, request.snapshot_id, None).await?,
        },
        None => plan_files(table, request.snapshot_id, None).await?,
    };
    super::deletes::check_delete_files(table, &tasks)?;
    // A file's columns match the table's by name unless a schema renamed a field
    // id (then by field id, which DataFusion's parquet source does through an
    // expression adapter).
    let mapping = if names_are_stable(metadata) {
        ColumnMapping::ByName
    } else {
        ColumnMapping::ByFieldId(
            metadata
                .current_schema()
                .as_struct()
                .fields()
                .iter()
                .map(|f| (f.name.clone(), f.id))
                .collect(),
        )
    };
    let mut splits = Vec::with_capacity(tasks.len());
    for task in &tasks {
        let (partition_name, bucket) = placement(task, metadata)?;
        let whole_file = task.start == 0 && task.length == task.file_size_in_bytes;
        let rows = task.record_count.map_or(0, |r| r as i64);
        let read = match task.record_count {
            Some(_) if whole_file && task.deletes.is_empty() => LakeRead::Parquet(mapping.clone()),
            _ => LakeRead::MergeOnRead(MergeTask {
                payload: merge_task_payload(task)?,
                rows,
            }),
        };
        splits.push(LakeSplit {
            partition_name,
            bucket,
            files: vec![LakeFile {
                path: task.data_file_path.clone(),
                size: task.file_size_in_bytes,
                rows,
            }],
            read,
            rows,
        });
    }
    Ok(LakePlan {
        snapshot_id: request.snapshot_id,
        splits,
    })
}

/// The snapshot's data files, pruned by `filter` (partitions and file metrics).
async fn plan_files(
    table: &Table,
    snapshot_id: i64,
    filter: Option<Predicate>,
) -> Result<Vec<FileScanTask>> {
    let name = table.identifier().to_string();
    let mut scan = table.scan().snapshot_id(snapshot_id).select_all();
    if let Some(filter) = filter {
        scan = scan.with_filter(filter);
    }
    let tasks = scan
        .build()
        .map_err(lake_error("cannot plan the Iceberg scan", &name))?
        .plan_files()
        .await
        .map_err(lake_error("cannot plan the Iceberg scan", &name))?
        .try_collect()
        .await
        .map_err(lake_error("cannot plan the Iceberg scan", &name))?;
    Ok(tasks)
}

/// Whether every schema of the table names each field id as the current schema
/// does (no rename, no drop-and-re-add under an old name): then a data file's
/// columns match the table's by name, as DataFusion's parquet source matches them.
/// Otherwise files are matched by field id.
fn names_are_stable(metadata: &TableMetadata) -> bool {
    let current = metadata.current_schema();
    metadata.schemas_iter().all(|schema| {
        schema.as_struct().fields().iter().all(|field| {
            let same_id = current.field_by_id(field.id).map(|f| f.name == field.name);
            let same_name = current.field_by_name(&field.name).map(|f| f.id == field.id);
            same_id.unwrap_or(true) && same_name.unwrap_or(true)
        })
    })
}

/// The Fluss partition name and bucket of a task, from its partition: identity
/// fields on the partition keys give the name (values joined by `$`, in spec order,
/// which is Fluss's partition-key order), `identity(__bucket)` or `bucket(key, N)` the
/// bucket (`-1` when the spec has neither).
fn placement(task: &FileScanTask, metadata: &TableMetadata) -> Result<(Option<String>, i32)> {
    let Some(partition) = &task.partition else {
        return Ok((None, -1));
    };
    // iceberg 0.10.1 plans tasks without their spec (`with_partition_spec(None)` in
    // `scan/context.rs`). Fluss never evolves a lake table's spec, so the table's
    // one spec is every file's; with several, a file's spec cannot be told here.
    let spec = match &task.partition_spec {
        Some(spec) => spec.clone(),
        None if metadata.partition_specs_iter().len() == 1 => {
            metadata.default_partition_spec().clone()
        }
        None => {
            return Err(Error::unsupported(
                "Iceberg tables with an evolved partition spec are not supported yet",
            )
            .with_context("file", &task.data_file_path));
        }
    };
    if spec.fields().len() != partition.fields().len() {
        return Err(Error::data_invalid(format!(
            "an Iceberg data file has {} partition values, its spec {} fields",
            partition.fields().len(),
            spec.fields().len()
        ))
        .with_context("file", &task.data_file_path));
    }
    let schema = metadata.current_schema();
    let mut values = Vec::new();
    let mut bucket = -1;
    for (field, value) in spec.fields().iter().zip(partition.iter()) {
        let source = schema.field_by_id(field.source_id).ok_or_else(|| {
            Error::data_invalid(format!(
                "partition field '{}' has no source column in the Iceberg schema",
                field.name
            ))
            .with_context("file", &task.data_file_path)
        })?;
        let is_bucket = match field.transform {
            Transform::Identity => source.name == BUCKET_COLUMN,
            Transform::Bucket(_) => true,
            _ => {
                return Err(Error::unsupported(format!(
                    "Iceberg partition transform {} on '{}' is not one Fluss writes",
                    field.transform, source.name
                ))
                .with_context("file", &task.data_file_path));
            }
        };
        if is_bucket {
            bucket = match value.and_then(Literal::as_primitive_literal) {
                Some(PrimitiveLiteral::Int(b)) if b >= 0 => b,
                other => {
                    return Err(Error::data_invalid(format!(
                        "Iceberg bucket partition value {other:?} is not a bucket number"
                    ))
                    .with_context("file", &task.data_file_path));
                }
            };
        } else {
            values.push(partition_value(value, &source.field_type).map_err(|e| {
                e.with_context("column", &source.name)
                    .with_context("file", &task.data_file_path)
            })?);
        }
    }
    Ok(((!values.is_empty()).then(|| values.join("$")), bucket))
}

/// A partition value as Fluss renders it in partition names
/// ([`crate::table::partition_value`]).
pub(super) fn partition_value(value: Option<&Literal>, ty: &Type) -> Result<String> {
    let Some(literal) = value.and_then(Literal::as_primitive_literal) else {
        return Ok("null".to_string());
    };
    let value = match (&literal, ty) {
        (PrimitiveLiteral::Int(days), Type::Primitive(PrimitiveType::Date)) => {
            PartitionValue::Date(*days)
        }
        (PrimitiveLiteral::String(s), _) => PartitionValue::Text(s),
        (PrimitiveLiteral::Int(v), _) => PartitionValue::Integer((*v).into()),
        (PrimitiveLiteral::Long(v), _) => PartitionValue::Integer(*v),
        (PrimitiveLiteral::Boolean(v), _) => PartitionValue::Bool(*v),
        (other, _) => {
            return Err(Error::unsupported(format!(
                "Iceberg partition value {other:?} of type {ty} is not supported"
            )));
        }
    };
    Ok(render(value))
}

/// Reads planned tasks with the `iceberg` reader (columns matched by field id),
/// position and equality deletes applied ([`super::delete_reader`]), projected to
/// `columns`, as arrow-59 batches in the lake's types.
pub fn read_tasks(
    table: &Table,
    mut tasks: Vec<FileScanTask>,
    columns: &[String],
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    if tasks.is_empty() {
        return Ok(futures::stream::empty().boxed());
    }
    for task in &mut tasks {
        let mut ids = Vec::with_capacity(columns.len().max(1));
        for column in columns {
            let field = task.schema.field_by_name(column).ok_or_else(|| {
                Error::data_invalid(format!(
                    "lake data has no column '{column}' (lake schema does not match the Fluss schema)"
                ))
                .with_context("file", &task.data_file_path)
            })?;
            ids.push(field.id);
        }
        if ids.is_empty() {
            // Row counts only (`count(*)`): one column carries them through the reader.
            if let Some(first) = task.schema.as_struct().fields().first() {
                ids.push(first.id);
            }
        }
        task.project_field_ids = ids;
        // The planning filter prunes files only (LakeScanRequest: never rows, the
        // caller re-applies it); iceberg's reader would filter rows with it.
        task.predicate = None;
    }
    Ok(super::delete_reader::read_with_deletes(table, tasks))
}
