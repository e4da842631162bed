//! Time travel: what a read of a table, or of its lake, as of a lake snapshot or a
//! point in time pins.
//!
//! - `t$lake` as of snapshot `n` reads the lake's snapshot `n`; as of a time, the
//!   newest lake snapshot committed by then.
//! - The union table as of snapshot `n` reads the table exactly as the *readable*
//!   snapshot `n` Fluss registered recorded it: its lake rows, and nothing of the log
//!   past its offsets (the union's cut at that snapshot, with every log range empty).
//!   Its lake alone, system columns and all, is `t$lake` as of `n`.
//! - The union table as of a time reads the newest readable snapshot committed by
//!   then, and each bucket's log up to its first batch committed after that time
//!   (batch headers carry the commit time, so no batch is split): the rows as they
//!   were. Without such a snapshot the log alone must still hold them from offset 0.
//! - `fluss_log_between(t, start, end)` reads only the log's batches committed in
//!   `[start, end)`, as Spark's `fluss_incremental_between_timestamp` does: a log
//!   table's rows appended then, a primary-key table's changes then folded (the
//!   keys inserted or updated, as they were at `end`; keys deleted drop out).

use std::fmt;

use datafusion::arrow::temporal_conversions::timestamp_ms_to_datetime;

use super::lake_snapshots::lake_snapshots_of;
use crate::error::{Error, Result};
use crate::source::{FlussSource, FlussTable, ReadableSnapshot, TableBucketOffsets};
use crate::union::{CommitTimes, CutLake};

/// When a read looks at a table, other than now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeTravel {
    /// `VERSION AS OF`: a lake snapshot id.
    Snapshot(i64),
    /// `TIMESTAMP AS OF` / `FOR SYSTEM_TIME AS OF`: a point in time, epoch millis.
    AsOfTime(i64),
    /// `fluss_log_between`: the log's batches committed in `[start, end)` (epoch
    /// millis), without the lake.
    LogBetween {
        /// First commit time read.
        start: i64,
        /// First commit time not read.
        end: i64,
    },
}

/// Epoch milliseconds as a UTC time.
pub(super) fn show_millis(millis: i64) -> String {
    match timestamp_ms_to_datetime(millis) {
        Some(t) => t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
        None => format!("{millis} ms"),
    }
}

impl fmt::Display for TimeTravel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeTravel::Snapshot(id) => write!(f, "lake snapshot {id}"),
            TimeTravel::AsOfTime(millis) => write!(f, "{}", show_millis(*millis)),
            TimeTravel::LogBetween { start, end } => write!(
                f,
                "log committed in [{}, {})",
                show_millis(*start),
                show_millis(*end)
            ),
        }
    }
}

/// The lake snapshot and log bounds of a read of `table` at `when`.
pub(super) async fn union_at(
    source: &dyn FlussSource,
    table: &FlussTable,
    when: TimeTravel,
) -> Result<(CutLake, CommitTimes)> {
    let name = table.path.to_string();
    let until = |millis| CommitTimes {
        from: None,
        until: Some(millis),
    };
    if let TimeTravel::LogBetween { start, end } = when {
        if end <= start {
            return Err(Error::invalid_input(format!(
                "fluss_log_between reads [start, end): its end ({}) must be after its start ({})",
                show_millis(end),
                show_millis(start)
            )));
        }
        let times = CommitTimes {
            from: Some(start),
            until: Some(end - 1),
        };
        return Ok((CutLake::Skip, times));
    }
    if table.lake_format().is_none() {
        return match when {
            TimeTravel::AsOfTime(millis) => Ok((CutLake::Pinned(None), until(millis))),
            _ => Err(Error::invalid_input(format!(
                "table {name} has no lake, so it has no lake snapshot to read as of; \
                 read it as of a time (TIMESTAMP AS OF) instead"
            ))),
        };
    }
    match when {
        TimeTravel::LogBetween { .. } => Err(Error::internal("log window planned as of")),
        TimeTravel::Snapshot(id) => match source.lake_snapshot(table, id).await? {
            Some(snapshot) => Ok((CutLake::AtSnapshot(snapshot), CommitTimes::default())),
            None => {
                let registered = source.registered_lake_snapshots(table).await?;
                let known = match registered {
                    Some(ids) if !ids.is_empty() => format!(
                        " (registered: {})",
                        ids.iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    _ => String::new(),
                };
                Err(Error::not_found(format!(
                    "lake snapshot {id} of table {name} is not a readable snapshot Fluss \
                     registered{known}, so the union cannot be read at it; its lake alone \
                     reads as {}.\"{}$lake\" VERSION AS OF {id}",
                    table.path.database(),
                    table.path.table()
                )))
            }
        },
        TimeTravel::AsOfTime(millis) => {
            let snapshots = lake_snapshots_of(source, table).await?;
            let registered = source.registered_lake_snapshots(table).await?;
            // newest first by commit time (Iceberg's snapshot ids are not ordered),
            // then by the lake's own order
            let mut candidates: Vec<_> = snapshots
                .iter()
                .enumerate()
                .map(|(order, s)| (s.commit_time_millis, order, s))
                .filter(|(time, _, _)| *time <= millis)
                .map(|(time, order, s)| (std::cmp::Reverse((time, order)), s))
                .filter(|(_, s)| {
                    registered
                        .as_ref()
                        .is_none_or(|ids| ids.contains(&s.snapshot_id))
                })
                .collect();
            candidates.sort_by_key(|(newest_first, _)| *newest_first);
            for (_, candidate) in candidates {
                if let Some(snapshot) = source.lake_snapshot(table, candidate.snapshot_id).await? {
                    return Ok((CutLake::Pinned(Some(snapshot)), until(millis)));
                }
            }
            Ok((CutLake::Pinned(None), until(millis)))
        }
    }
}

/// The lake snapshot `t$lake` reads at `when`.
pub(super) async fn lake_at(
    source: &dyn FlussSource,
    table: &FlussTable,
    when: TimeTravel,
) -> Result<CutLake> {
    let name = table.path.to_string();
    let snapshots = lake_snapshots_of(source, table).await?;
    let chosen = match when {
        TimeTravel::Snapshot(id) => snapshots.iter().find(|s| s.snapshot_id == id),
        TimeTravel::LogBetween { .. } => {
            return Err(Error::invalid_input(format!(
                "{name}$lake is the lake alone; fluss_log_between reads the log"
            )));
        }
        TimeTravel::AsOfTime(millis) => snapshots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.commit_time_millis <= millis)
            .max_by_key(|(order, s)| (s.commit_time_millis, *order))
            .map(|(_, s)| s),
    };
    let Some(chosen) = chosen else {
        let held = match (snapshots.first(), snapshots.last()) {
            (Some(first), Some(last)) => format!(
                "its lake holds snapshots {} to {}, the first committed at {}",
                first.snapshot_id,
                last.snapshot_id,
                show_millis(first.commit_time_millis)
            ),
            _ => "nothing was tiered into its lake".to_string(),
        };
        return Err(Error::not_found(format!(
            "table {name}$lake has no snapshot as of {when}: {held}"
        )));
    };
    Ok(CutLake::Pinned(Some(ReadableSnapshot {
        snapshot_id: chosen.snapshot_id,
        offsets: TableBucketOffsets::new(table.table_id()),
    })))
}
