//! Small helpers shared by the scan nodes: EXPLAIN text and LIMIT on streams.

use std::fmt;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result as DfResult;
use futures::StreamExt;
use futures::stream::BoxStream;

use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};
use datafusion::physical_plan::{DisplayFormatType, Partitioning, PlanProperties};

use crate::log::LogReadCounters;
use crate::union::BucketCut;

/// Writes a node's description, which `line` writes as one `Name: key=value, …` line,
/// in format `t`. EXPLAIN FORMAT TREE gets one `key=value` per line (split at the
/// commas outside brackets), so the tree's boxes wrap each value at its own spaces
/// and punctuation, never inside a word as they wrap one long line.
pub fn as_format(
    t: DisplayFormatType,
    f: &mut fmt::Formatter,
    line: impl Fn(&mut fmt::Formatter) -> fmt::Result,
) -> fmt::Result {
    /// `line` as a `Display`.
    struct Line<F>(F);
    impl<F: Fn(&mut fmt::Formatter) -> fmt::Result> fmt::Display for Line<F> {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            (self.0)(f)
        }
    }
    if !matches!(t, DisplayFormatType::TreeRender) {
        return line(f);
    }
    let text = Line(line).to_string();
    // the node's name is the box's title already
    let body = match text.split_once(": ") {
        Some((name, rest)) if !name.contains(' ') => rest,
        _ => text.as_str(),
    };
    let (mut depth, mut start, mut entries) = (0i32, 0, Vec::new());
    for (i, c) in body.char_indices() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            ',' if depth == 0 && body[i + 1..].starts_with(' ') => {
                entries.push(body[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.push(body[start..].trim());
    write!(f, "{}", entries.join("\n"))
}

/// `0:[10,20) 1:[0,5)` (or `p=2024-01-01/0:[..)`), abbreviated past 16 buckets.
pub fn describe_buckets(buckets: &[BucketCut]) -> String {
    // In (partition, bucket) order whatever order the partitions read them in.
    let mut sorted: Vec<&BucketCut> = buckets.iter().collect();
    sorted.sort_by_key(|b| {
        (
            b.location.partition.as_ref().map(|(id, _)| *id),
            b.location.bucket,
        )
    });
    let mut parts: Vec<String> = sorted
        .into_iter()
        .take(16)
        .map(|b| {
            let prefix = b
                .location
                .partition
                .as_ref()
                .map_or(String::new(), |(_, name)| format!("{name}/"));
            format!(
                "{prefix}{}:[{},{})",
                b.location.bucket, b.range.start, b.range.stop
            )
        })
        .collect();
    if buckets.len() > 16 {
        parts.push(format!("... {} more", buckets.len() - 16));
    }
    parts.join(" ")
}

/// Column names of a schema, comma separated.
pub fn describe_projection(schema: &SchemaRef) -> String {
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Stops a batch stream after `limit` rows (the last batch is sliced).
pub fn limit_stream(
    stream: BoxStream<'static, DfResult<RecordBatch>>,
    limit: Option<usize>,
) -> BoxStream<'static, DfResult<RecordBatch>> {
    let Some(limit) = limit else {
        return stream;
    };
    stream
        .scan(0usize, move |seen, batch| {
            let out = match batch {
                Err(e) => Some(Err(e)),
                Ok(_) if *seen >= limit => None,
                Ok(b) => {
                    let take = (limit - *seen).min(b.num_rows());
                    *seen += take;
                    Some(Ok(b.slice(0, take)))
                }
            };
            futures::future::ready(out)
        })
        .boxed()
}

/// Plan properties of a scan leaf: `partitions` unordered bounded partitions.
pub fn leaf_properties(schema: &SchemaRef, partitions: usize) -> std::sync::Arc<PlanProperties> {
    std::sync::Arc::new(PlanProperties::new(
        EquivalenceProperties::new(schema.clone()),
        Partitioning::UnknownPartitioning(partitions.max(1)),
        EmissionType::Incremental,
        Boundedness::Bounded,
    ))
}

/// Spreads `items` over at most `target` output partitions, largest first onto the
/// least loaded one: DataFusion's `target_partitions` is the scan's parallelism, so a
/// table with more buckets than that reads several buckets one after another in one
/// partition (as ListingTable packs files into file groups).
pub fn group_by_size<T>(mut items: Vec<T>, target: usize, size: impl Fn(&T) -> u64) -> Vec<Vec<T>> {
    let target = target.max(1).min(items.len());
    if target == 0 {
        return Vec::new();
    }
    items.sort_by_key(|item| std::cmp::Reverse(size(item)));
    let mut groups: Vec<(u64, Vec<T>)> = (0..target).map(|_| (0, Vec::new())).collect();
    for item in items {
        let weight = size(&item);
        if let Some((load, group)) = groups.iter_mut().min_by_key(|(load, _)| *load) {
            *load += weight.max(1);
            group.push(item);
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// Log read counters registered as metrics of `partition` (EXPLAIN ANALYZE).
pub fn log_counters(metrics: &ExecutionPlanMetricsSet, partition: usize) -> LogReadCounters {
    LogReadCounters {
        batches_read: MetricBuilder::new(metrics).counter("log_batches_read", partition),
        batches_skipped: MetricBuilder::new(metrics).counter("log_batches_skipped", partition),
        rows: MetricBuilder::new(metrics).counter("log_rows", partition),
        bytes: MetricBuilder::new(metrics).counter("log_bytes", partition),
    }
}

/// Counts, as the metric `lake_files_pruned`, the files of a lake snapshot a scan's
/// plan never opens (pruned by the lake's planning, partitions and buckets). Known
/// when the scan is planned, it shows in EXPLAIN ANALYZE beside the read's metrics.
pub fn lake_files_pruned(metrics: &ExecutionPlanMetricsSet, files: usize) {
    if files > 0 {
        MetricBuilder::new(metrics)
            .counter("lake_files_pruned", 0)
            .add(files);
    }
}

/// The `ExecutionPlan` methods every scan leaf here implements the same way: no
/// children, cached properties in `self.properties`. Leaves holding no expression
/// add [`no_expressions`]; the others list theirs, so that a hash join finds the
/// dynamic filter it fills in its probe side (`plan_contains_expression_id`).
macro_rules! leaf_node_methods {
    () => {
        fn properties(&self) -> &std::sync::Arc<datafusion::physical_plan::PlanProperties> {
            &self.properties
        }

        fn children(&self) -> Vec<&std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
            vec![]
        }

        fn with_new_children(
            self: std::sync::Arc<Self>,
            _children: Vec<std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>>,
        ) -> datafusion::error::Result<std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>>
        {
            Ok(self)
        }
    };
}
pub(crate) use leaf_node_methods;

/// `ExecutionPlan` methods of a node that passes its one child, `self.input`, through
/// untouched: its properties and order, and filters pushed to the child as if the
/// node were not there.
macro_rules! pass_through_node_methods {
    () => {
        fn properties(&self) -> &std::sync::Arc<datafusion::physical_plan::PlanProperties> {
            self.input.properties()
        }

        fn children(&self) -> Vec<&std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
            vec![&self.input]
        }

        fn maintains_input_order(&self) -> Vec<bool> {
            vec![true]
        }

        fn benefits_from_input_partitioning(&self) -> Vec<bool> {
            vec![false]
        }

        fn gather_filters_for_pushdown(
            &self,
            _phase: datafusion::physical_plan::filter_pushdown::FilterPushdownPhase,
            parent_filters: Vec<std::sync::Arc<dyn datafusion::physical_expr::PhysicalExpr>>,
            _config: &datafusion::config::ConfigOptions,
        ) -> datafusion::error::Result<datafusion::physical_plan::filter_pushdown::FilterDescription>
        {
            datafusion::physical_plan::filter_pushdown::FilterDescription::from_children(
                parent_filters,
                &self.children(),
            )
        }

        fn handle_child_pushdown_result(
            &self,
            _phase: datafusion::physical_plan::filter_pushdown::FilterPushdownPhase,
            child_pushdown_result: datafusion::physical_plan::filter_pushdown::ChildPushdownResult,
            _config: &datafusion::config::ConfigOptions,
        ) -> datafusion::error::Result<
            datafusion::physical_plan::filter_pushdown::FilterPushdownPropagation<
                std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>,
            >,
        > {
            Ok(
                datafusion::physical_plan::filter_pushdown::FilterPushdownPropagation::if_all(
                    child_pushdown_result,
                ),
            )
        }
    };
}
pub(crate) use pass_through_node_methods;

/// `ExecutionPlan::apply_expressions` of a leaf holding no expression.
macro_rules! no_expressions {
    () => {
        fn apply_expressions(
            &self,
            _f: &mut dyn FnMut(
                &std::sync::Arc<dyn datafusion::physical_expr::PhysicalExpr>,
            ) -> datafusion::error::Result<
                datafusion::common::tree_node::TreeNodeRecursion,
            >,
        ) -> datafusion::error::Result<datafusion::common::tree_node::TreeNodeRecursion> {
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        }
    };
}
pub(crate) use no_expressions;

/// The stream of a partition that reads nothing.
pub fn empty_partition(schema: SchemaRef) -> datafusion::physical_plan::SendableRecordBatchStream {
    Box::pin(
        datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
            schema,
            futures::stream::empty(),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::group_by_size;

    #[test]
    fn groups_balance_by_size_and_respect_the_target() {
        let groups = group_by_size(vec![5u64, 1, 4, 2, 3], 2, |x| *x);
        assert_eq!(groups.len(), 2);
        let loads: Vec<u64> = groups.iter().map(|g| g.iter().sum()).collect();
        assert_eq!(loads, vec![8, 7]);
        assert_eq!(group_by_size(vec![1u64, 2], 8, |x| *x).len(), 2);
        assert!(group_by_size(Vec::<u64>::new(), 4, |x| *x).is_empty());
        assert_eq!(group_by_size(vec![0u64, 0, 0], 2, |x| *x).concat().len(), 3);
    }
}
