//! Splitting a Fluss scan leaf over the tasks of a distributed stage: how much it
//! reads ([`scan_size`]), and one variant per task reading disjoint buckets or
//! lake splits ([`split_scan`]).

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;

use super::super::describe::{
    group_by_size, lake_files_pruned as lake_files_pruned_metric, leaf_properties,
};
use super::super::kv_scan_exec::FlussKvScanExec;
use super::super::lake_exec::FlussLakeMergeExec;
use super::super::log_exec::FlussLogScanExec;
use super::super::pk_exec::{FlussPrimaryKeyScanExec, PrimaryKeyBucketTask};
use crate::error::{Error, Result};

/// How much a Fluss scan leaf reads: what a distributed planner sizes its tasks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanSize {
    /// Rows it reads (log offsets and lake rows; updates and deletes make a
    /// primary-key table's answer smaller).
    pub rows: u64,
    /// Bytes it reads, estimated: lake files by their size, log rows by the width
    /// of the columns read.
    pub bytes: u64,
    /// The most tasks it can be split over: its buckets (log, primary-key and
    /// key-value scans) or merge-on-read splits. 1 for a scan that is not split (a
    /// changelog keeps each bucket's changes in order on one task).
    pub units: usize,
}

/// Estimated bytes of one row of `schema` as read (fixed widths; 16 for strings
/// and other variable-width values).
fn row_bytes(schema: &Schema) -> u64 {
    schema
        .fields()
        .iter()
        .map(|f| f.data_type().primitive_width().unwrap_or(16) as u64)
        .sum::<u64>()
        .max(1)
}

/// The size of `plan` when it is a Fluss scan leaf; `None` for any other node.
pub fn scan_size(plan: &dyn ExecutionPlan) -> Option<ScanSize> {
    if let Some(scan) = plan.downcast_ref::<FlussLogScanExec>() {
        let rows: u64 = scan
            .groups
            .iter()
            .flatten()
            .map(|c| c.range.offsets())
            .sum();
        return Some(ScanSize {
            rows,
            bytes: rows * row_bytes(&scan.schema),
            units: scan.groups.iter().map(Vec::len).sum(),
        });
    }
    if let Some(merge) = plan.downcast_ref::<FlussLakeMergeExec>() {
        let rows: u64 = merge
            .groups
            .iter()
            .flatten()
            .map(|t| t.rows.max(0) as u64)
            .sum();
        return Some(ScanSize {
            rows,
            bytes: rows * row_bytes(&merge.schema),
            units: merge.groups.iter().map(Vec::len).sum(),
        });
    }
    if let Some(scan) = plan.downcast_ref::<FlussPrimaryKeyScanExec>() {
        let tasks = || scan.groups.iter().flatten();
        let rows: u64 = tasks().map(PrimaryKeyBucketTask::estimated_rows).sum();
        let width = row_bytes(&scan.schema);
        let bytes = tasks()
            .map(|t| {
                let files = t
                    .lake_parquet
                    .as_ref()
                    .map_or(0, |p| p.spec.files.iter().map(|f| f.size).sum::<u64>());
                let newer: u64 = t
                    .lake_newer_runs
                    .iter()
                    .flat_map(|r| &r.spec.files)
                    .map(|f| f.size)
                    .sum();
                let merged: u64 = t.lake_splits.iter().map(|s| s.rows.max(0) as u64).sum();
                let tail = t.tail.as_ref().map_or(0, |c| c.range.offsets());
                files + newer + (merged + tail) * width
            })
            .sum();
        return Some(ScanSize {
            rows,
            bytes,
            units: tasks().count(),
        });
    }
    if let Some(scan) = plan.downcast_ref::<FlussKvScanExec>() {
        let buckets: usize = scan.groups.iter().map(Vec::len).sum();
        return Some(ScanSize {
            rows: 0,
            bytes: 0,
            units: buckets,
        });
    }
    if let Some(scan) = plan.downcast_ref::<super::super::changelog::ChangelogExec>() {
        let rows: u64 = scan.buckets.iter().map(|c| c.range.offsets()).sum();
        return Some(ScanSize {
            rows,
            bytes: rows * row_bytes(&scan.schema),
            units: 1,
        });
    }
    None
}

/// Deals `units` (with their sizes) to `tasks` tasks, largest first to the least
/// loaded; every unit to exactly one task.
fn deal<T>(units: Vec<T>, tasks: usize, size: impl Fn(&T) -> u64) -> Vec<Vec<T>> {
    let mut units: Vec<(u64, T)> = units.into_iter().map(|u| (size(&u), u)).collect();
    units.sort_by_key(|(s, _)| std::cmp::Reverse(*s));
    let mut dealt: Vec<(u64, Vec<T>)> = (0..tasks).map(|_| (0, Vec::new())).collect();
    for (s, unit) in units {
        if let Some(task) = dealt.iter_mut().min_by_key(|(load, _)| *load) {
            task.0 += s.max(1);
            task.1.push(unit);
        }
    }
    dealt.into_iter().map(|(_, units)| units).collect()
}

/// Each task's units grouped into the same number of partitions: at most
/// `partitions`, no more than the most units a task has, padded with empty groups.
fn into_partitions<T>(
    per_task: Vec<Vec<T>>,
    partitions: usize,
    size: impl Fn(&T) -> u64 + Copy,
) -> Vec<Vec<Vec<T>>> {
    let most = per_task.iter().map(Vec::len).max().unwrap_or(0);
    let count = partitions.min(most).max(1);
    per_task
        .into_iter()
        .map(|units| {
            let mut groups = group_by_size(units, count, size);
            groups.resize_with(count, Vec::new);
            groups
        })
        .collect()
}

/// The units of `groups` dealt to `tasks` tasks and grouped into partitions, one
/// variant each by `build(task, groups)`.
fn variants<T: Clone>(
    groups: &[Vec<T>],
    tasks: usize,
    partitions: usize,
    size: impl Fn(&T) -> u64 + Copy,
    build: impl Fn(usize, Vec<Vec<T>>) -> Arc<dyn ExecutionPlan>,
) -> Vec<Arc<dyn ExecutionPlan>> {
    let dealt = deal(groups.iter().flatten().cloned().collect(), tasks, size);
    into_partitions(dealt, partitions, size)
        .into_iter()
        .enumerate()
        .map(|(task, groups)| build(task, groups))
        .collect()
}

/// Metrics of task `task`'s variant: the lake files a plan never opens are counted
/// once, on the first task, not once per task.
fn variant_metrics(task: usize, lake_files_pruned: usize) -> (ExecutionPlanMetricsSet, usize) {
    let metrics = ExecutionPlanMetricsSet::new();
    let pruned = if task == 0 { lake_files_pruned } else { 0 };
    lake_files_pruned_metric(&metrics, pruned);
    (metrics, pruned)
}

/// `plan` split over `tasks` tasks when it is a Fluss scan leaf that splits: one
/// variant per task, reading disjoint buckets or splits (together exactly the
/// plan's), all with the same schema and number of partitions. `None` for any other
/// node and for a scan that is not split ([`ScanSize::units`] 1).
pub fn split_scan(
    plan: &Arc<dyn ExecutionPlan>,
    tasks: usize,
) -> Option<Result<Vec<Arc<dyn ExecutionPlan>>>> {
    if tasks == 0 {
        return Some(Err(Error::invalid_input(
            "a scan cannot be split over no task",
        )));
    }
    let partitions = plan.properties().partitioning.partition_count();
    if let Some(scan) = plan.downcast_ref::<FlussLogScanExec>() {
        let size = |c: &crate::union::BucketCut| c.range.offsets();
        return Some(Ok(variants(
            &scan.groups,
            tasks,
            partitions,
            size,
            |task, groups| {
                let (metrics, pruned) = variant_metrics(task, scan.lake_files_pruned);
                Arc::new(FlussLogScanExec {
                    source: scan.source.clone(),
                    table: scan.table.clone(),
                    properties: leaf_properties(&scan.schema, groups.len()),
                    groups,
                    projection: scan.projection.clone(),
                    schema: scan.schema.clone(),
                    skipping: scan.skipping.clone(),
                    filters: scan.filters.clone(),
                    snapshot_id: scan.snapshot_id,
                    limit: scan.limit,
                    estimates: scan.estimates.clone(),
                    metrics,
                    partitions: scan.partitions,
                    lake_files_pruned: pruned,
                    exact_rows: scan.exact_rows,
                })
            },
        )));
    }
    if let Some(merge) = plan.downcast_ref::<FlussLakeMergeExec>() {
        let size = |t: &crate::lake::MergeTask| t.rows.max(0) as u64;
        return Some(Ok(variants(
            &merge.groups,
            tasks,
            partitions,
            size,
            |_, groups| {
                Arc::new(FlussLakeMergeExec::new(
                    merge.lake.clone(),
                    merge.source.clone(),
                    merge.table.clone(),
                    groups,
                    merge.schema.clone(),
                    merge.snapshot_id,
                    merge.limit,
                    merge.projection.clone(),
                    merge.estimates.clone(),
                ))
            },
        )));
    }
    if let Some(scan) = plan.downcast_ref::<FlussPrimaryKeyScanExec>() {
        let size = PrimaryKeyBucketTask::estimated_rows;
        return Some(Ok(variants(
            &scan.groups,
            tasks,
            partitions,
            size,
            |task, groups| {
                let (metrics, pruned) = variant_metrics(task, scan.lake_files_pruned);
                Arc::new(FlussPrimaryKeyScanExec {
                    inputs: scan.inputs.clone(),
                    properties: leaf_properties(&scan.schema, groups.len()),
                    groups,
                    schema: scan.schema.clone(),
                    limit: scan.limit,
                    filters: scan.filters.clone(),
                    metrics,
                    join_lookup: None,
                    partitions: scan.partitions,
                    lake_files_pruned: pruned,
                })
            },
        )));
    }
    if let Some(scan) = plan.downcast_ref::<FlussKvScanExec>() {
        let size = |_: &crate::source::BucketLocation| 1;
        return Some(Ok(variants(
            &scan.groups,
            tasks,
            partitions,
            size,
            |_, groups| {
                Arc::new(FlussKvScanExec {
                    source: scan.source.clone(),
                    table: scan.table.clone(),
                    properties: leaf_properties(&scan.schema, groups.len()),
                    groups,
                    table_schema: scan.table_schema.clone(),
                    predicate: scan.predicate.clone(),
                    projection: scan.projection.clone(),
                    filters: scan.filters.clone(),
                    reason: scan.reason,
                    schema: scan.schema.clone(),
                    metrics: ExecutionPlanMetricsSet::new(),
                })
            },
        )));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dealing_gives_every_unit_to_one_task_and_pads_partitions() {
        let dealt = deal(vec![5u64, 1, 4, 2, 3], 2, |u| *u);
        let mut all: Vec<u64> = dealt.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, vec![1, 2, 3, 4, 5]);
        let loads: Vec<u64> = dealt.iter().map(|t| t.iter().sum()).collect();
        assert!(loads.iter().all(|l| (7..=8).contains(l)), "{loads:?}");
        let parts = into_partitions(vec![vec![1u64, 2, 3], vec![4]], 8, |u| *u);
        assert!(parts.iter().all(|p| p.len() == 3));
        assert_eq!(parts[1].iter().filter(|g| g.is_empty()).count(), 2);
        let none = into_partitions(vec![Vec::<u64>::new(), Vec::new()], 4, |u| *u);
        assert!(none.iter().all(|p| p.len() == 1 && p[0].is_empty()));
    }
}
