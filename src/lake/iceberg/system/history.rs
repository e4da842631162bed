//! `t$lake$history`: the snapshot log, with the columns of Iceberg's `HistoryTable`
//! (`made_current_at`, `snapshot_id`, `parent_id`, `is_current_ancestor`).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{BooleanArray, Int64Array, RecordBatch, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use iceberg::table::Table;

use crate::error::Result;

/// The snapshot log: when each snapshot became current, its parent, and whether it is
/// an ancestor of the current snapshot (a rolled-back one is not).
pub(super) fn history(table: &Table) -> Result<RecordBatch> {
    let metadata = table.metadata();
    let mut ancestors = HashSet::new();
    let mut at = metadata.current_snapshot_id();
    while let Some(id) = at {
        if !ancestors.insert(id) {
            break;
        }
        at = metadata
            .snapshot_by_id(id)
            .and_then(|s| s.parent_snapshot_id());
    }
    let log = metadata.history();
    let parent = |id: i64| {
        metadata
            .snapshot_by_id(id)
            .and_then(|s| s.parent_snapshot_id())
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new(
            "made_current_at",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("parent_id", DataType::Int64, true),
        Field::new("is_current_ancestor", DataType::Boolean, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(
                TimestampMillisecondArray::from_iter_values(log.iter().map(|l| l.timestamp_ms))
                    .with_timezone("UTC"),
            ),
            Arc::new(Int64Array::from_iter_values(
                log.iter().map(|l| l.snapshot_id),
            )),
            Arc::new(Int64Array::from(
                log.iter()
                    .map(|l| parent(l.snapshot_id))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(BooleanArray::from(
                log.iter()
                    .map(|l| ancestors.contains(&l.snapshot_id))
                    .collect::<Vec<_>>(),
            )),
        ],
    )?)
}
