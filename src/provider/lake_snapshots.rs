//! `t$lake$snapshots`: the lake table's snapshots with their Fluss tiering metadata
//! (the `fluss-offsets` property, and whether Fluss registered the snapshot); and
//! `t$lake$<name>`, the lake format's other system tables.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result as DfResult};

use crate::error::Result;
use crate::lake::LakeSnapshot;
use crate::source::{FlussSource, FlussTable};

/// The snapshots of `table`'s lake, oldest first (none before anything was tiered).
pub(super) async fn lake_snapshots_of(
    source: &dyn FlussSource,
    table: &FlussTable,
) -> Result<Vec<LakeSnapshot>> {
    let location = source.lake_location(table).await?;
    match crate::lake::open(&location, table).await? {
        Some(lake) => lake.snapshots().await,
        None => Ok(Vec::new()),
    }
}

/// The snapshots of `table`'s lake, as a table.
pub async fn lake_snapshots_table(
    source: &dyn FlussSource,
    table: &FlussTable,
) -> DfResult<Arc<dyn TableProvider>> {
    let snapshots = lake_snapshots_of(source, table).await?;
    let registered = source.registered_lake_snapshots(table).await?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("schema_id", DataType::Int64, false),
        Field::new("commit_user", DataType::Utf8, false),
        Field::new("commit_kind", DataType::Utf8, false),
        Field::new(
            "commit_time",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
        Field::new("total_record_count", DataType::Int64, true),
        Field::new("fluss_offsets", DataType::Utf8, true),
        Field::new("registered", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(
                snapshots.iter().map(|s| s.snapshot_id),
            )),
            Arc::new(Int64Array::from_iter_values(
                snapshots.iter().map(|s| s.schema_id),
            )),
            Arc::new(StringArray::from_iter_values(
                snapshots.iter().map(|s| s.commit_user.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                snapshots.iter().map(|s| s.commit_kind.as_str()),
            )),
            Arc::new(
                TimestampMillisecondArray::from_iter_values(
                    snapshots.iter().map(|s| s.commit_time_millis),
                )
                .with_timezone("UTC"),
            ),
            Arc::new(Int64Array::from(
                snapshots
                    .iter()
                    .map(|s| s.total_record_count)
                    .collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                snapshots
                    .iter()
                    .map(|s| s.fluss_offsets.clone())
                    .collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                snapshots
                    .iter()
                    .map(|s| {
                        registered.as_ref().map(|ids| {
                            if ids.contains(&s.snapshot_id) {
                                "yes"
                            } else {
                                "no"
                            }
                        })
                    })
                    .collect::<Vec<_>>(),
            )),
        ],
    )?;
    Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
}

/// The lake format's system table `name` of `table` (`t$lake$options`, ...), as a
/// table; an error naming the ones the format has when it has no such table.
pub async fn lake_system_table(
    source: &dyn FlussSource,
    table: &FlussTable,
    name: &str,
) -> DfResult<Arc<dyn TableProvider>> {
    let path = &table.path;
    if table.lake_format().is_none() {
        return Err(DataFusionError::Plan(format!(
            "table {path} has no lake ('table.datalake.enabled' is not true)"
        )));
    }
    let location = source.lake_location(table).await?;
    let Some(lake) = crate::lake::open(&location, table).await? else {
        return Err(DataFusionError::Plan(format!(
            "the lake table of {path} does not exist yet (nothing was tiered)"
        )));
    };
    let Some(batch) = lake.system_table(name).await? else {
        return Err(DataFusionError::Plan(format!(
            "unknown lake system table '$lake${name}' of {path} ({} has: snapshots, {})",
            lake.format_name(),
            lake.system_tables().join(", ")
        )));
    };
    Ok(Arc::new(MemTable::try_new(
        batch.schema(),
        vec![vec![batch]],
    )?))
}
