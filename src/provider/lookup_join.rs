//! Lookup joins: a hash join whose build side is small and whose probe side scans a
//! primary-key table on its whole key reads only the build side's keys, by key, from
//! the tablet servers (the enrichment pattern: recent log events joined with the
//! current state of a PK table).
//!
//! [`LookupJoinRule`] runs after DataFusion's own physical rules, so the join order
//! and build side are DataFusion's. It takes a `HashJoinExec` in `CollectLeft` mode
//! whose probe side is a chain of row-preserving nodes (filters, projections,
//! repartitions) over a [`FlussPrimaryKeyScanExec`] that offers a lookup, joined on
//! exactly the table's primary-key columns, and whose build side is estimated at no
//! more than `fluss.max_lookup_keys` rows, and no more than the probed table's
//! estimated rows over `fluss.lookup_key_cost_rows` (below that, scanning the table
//! costs less than looking the keys up). The join becomes a
//! [`FlussLookupJoinExec`]: it reads the build side, hands its distinct keys to the
//! [`FlussKeyLookupExec`] that replaced the scan, then runs the same hash join over
//! the rows read and the looked-up rows. Join types that output probe rows without a
//! match (right, full, right anti) need the whole table and keep the scan.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::{cast, concat, filter_record_batch, is_not_null, take};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DataFusionError, JoinType, Statistics};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildStats, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties,
    SendableRecordBatchStream, StatisticsArgs, StatisticsContext, collect,
    replace_children_if_necessary,
};
use futures::TryStreamExt;

use super::lookup_exec::{KeySlot, LookupFallback, LookupKeys};
use super::options::FlussOptions;
use super::pk_exec::FlussPrimaryKeyScanExec;

/// Turns hash joins that probe a primary-key table on its whole key with a small
/// build side into lookup joins (see the module docs). Sessions built by
/// [`crate::sql::FlussSession`] have it; register it with
/// `SessionStateBuilder::with_physical_optimizer_rule` elsewhere.
#[derive(Debug, Default)]
pub struct LookupJoinRule;

impl PhysicalOptimizerRule for LookupJoinRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let options = config
            .extensions
            .get::<FlussOptions>()
            .cloned()
            .unwrap_or_default();
        if !options.key_lookups {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let Some(join) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            match lookup_join(&node, join, &options)? {
                Some(lookup) => Ok(Transformed::yes(Arc::new(lookup) as Arc<dyn ExecutionPlan>)),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "fluss_lookup_join"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The lookup join `join` becomes, if it qualifies.
fn lookup_join(
    node: &Arc<dyn ExecutionPlan>,
    join: &HashJoinExec,
    options: &FlussOptions,
) -> DfResult<Option<FlussLookupJoinExec>> {
    let keeps_unmatched_probe_rows = matches!(
        join.join_type(),
        JoinType::Right | JoinType::Full | JoinType::RightAnti | JoinType::RightMark
    );
    if *join.partition_mode() != PartitionMode::CollectLeft || keeps_unmatched_probe_rows {
        return Ok(None);
    }
    let left_stats =
        StatisticsContext::new().compute(join.left().as_ref(), &StatisticsArgs::new())?;
    let estimated = match left_stats.num_rows.get_value() {
        Some(&rows) if rows <= options.max_lookup_keys => rows,
        _ => return Ok(None),
    };
    let Some(scan_plan) = probed_scan(join.right()) else {
        return Ok(None);
    };
    let Some(scan) = scan_plan.downcast_ref::<FlussPrimaryKeyScanExec>() else {
        return Ok(None);
    };
    // cheaper to scan a table of fewer rows than the keys' lookups cost (a table of
    // unknown size is looked up: the keys are few already)
    let table_stats =
        StatisticsContext::new().compute(scan as &dyn ExecutionPlan, &StatisticsArgs::new())?;
    if let Some(&table_rows) = table_stats.num_rows.get_value()
        && estimated.saturating_mul(options.lookup_key_cost_rows) > table_rows
    {
        return Ok(None);
    }
    let Some(lookup) = scan.join_lookup() else {
        return Ok(None);
    };
    // the build side's expression of each primary-key column, in key order
    let table = lookup.table();
    let primary_keys = table.info.get_primary_keys().clone();
    let mut key_exprs: Vec<Option<Arc<dyn PhysicalExpr>>> = vec![None; primary_keys.len()];
    for (left, right) in join.on() {
        let Some(column) = right.downcast_ref::<Column>() else {
            return Ok(None);
        };
        let Some(at) = scan_column(join.right(), column.index()) else {
            return Ok(None);
        };
        let Some(&table_column) = lookup.projection().get(at) else {
            return Ok(None);
        };
        let name = lookup.table_schema().field(table_column).name();
        match primary_keys.iter().position(|k| k == name) {
            Some(k) if key_exprs[k].is_none() => key_exprs[k] = Some(left.clone()),
            _ => return Ok(None),
        }
    }
    let Some(key_exprs) = key_exprs.into_iter().collect::<Option<Vec<_>>>() else {
        return Ok(None);
    };
    let key_schema = lookup.key_schema()?;
    let slot = Arc::new(KeySlot::default());
    // keys in partitions Fluss no longer has are read by the scan the lookup replaced
    let leaf = Arc::new(
        lookup
            .exec(LookupKeys::FromJoin {
                slot: slot.clone(),
                estimated,
            })?
            .with_fallback(LookupFallback::Planned(scan_plan.clone())),
    );
    let join_right = join.right().clone();
    let right = replace_scan(join.right(), leaf)?;
    let join = replace_children_if_necessary(node.clone(), vec![join.left().clone(), right])?;
    Ok(Some(FlussLookupJoinExec {
        join,
        key_exprs,
        key_schema,
        slot,
        scan: join_right,
        max_keys: options.max_lookup_keys,
        prepared: Default::default(),
    }))
}

/// Whether `plan` passes its input's rows through, each output column one input
/// column (`Some(input column)` for output column `column`).
fn input_column(plan: &Arc<dyn ExecutionPlan>, column: usize) -> Option<usize> {
    if plan.is::<RepartitionExec>() {
        return Some(column);
    }
    if let Some(filter) = plan.downcast_ref::<FilterExec>() {
        return match filter.projection() {
            Some(projection) => projection.get(column).copied(),
            None => Some(column),
        };
    }
    if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
        let expr = &projection.expr().get(column)?.expr;
        return expr.downcast_ref::<Column>().map(Column::index);
    }
    None
}

/// The primary-key scan (a [`FlussPrimaryKeyScanExec`]) at the bottom of a probe
/// side of row-preserving nodes.
fn probed_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<&Arc<dyn ExecutionPlan>> {
    if plan.downcast_ref::<FlussPrimaryKeyScanExec>().is_some() {
        return Some(plan);
    }
    input_column(plan, 0)?;
    match plan.children().as_slice() {
        [child] => probed_scan(child),
        _ => None,
    }
}

/// The scan's output column that output column `column` of the probe side is.
fn scan_column(plan: &Arc<dyn ExecutionPlan>, column: usize) -> Option<usize> {
    if plan.is::<FlussPrimaryKeyScanExec>() {
        return Some(column);
    }
    let input = input_column(plan, column)?;
    match plan.children().as_slice() {
        [child] => scan_column(child, input),
        _ => None,
    }
}

/// The probe side with its scan replaced by `leaf`.
fn replace_scan(
    plan: &Arc<dyn ExecutionPlan>,
    leaf: Arc<dyn ExecutionPlan>,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    if plan.is::<FlussPrimaryKeyScanExec>() {
        return Ok(leaf);
    }
    match plan.children().as_slice() {
        [child] => {
            let child = replace_scan(child, leaf)?;
            replace_children_if_necessary(plan.clone(), vec![child])
        }
        _ => Err(DataFusionError::Internal(
            "a lookup join's probe side lost its scan".into(),
        )),
    }
}

/// A hash join whose probe side reads the build side's keys by key.
///
/// Clones share the join's preparation (its output partitions run one join).
#[derive(Debug, Clone)]
pub struct FlussLookupJoinExec {
    /// The join, its probe side ending in the lookup.
    join: Arc<dyn ExecutionPlan>,
    /// The build side's expression of each primary-key column, in key order.
    key_exprs: Vec<Arc<dyn PhysicalExpr>>,
    /// The keys' schema (the key columns in the table's Fluss Arrow types).
    key_schema: SchemaRef,
    slot: Arc<KeySlot>,
    /// The probe side as planned (the scan), for a build side with more keys than
    /// `max_keys` after all: estimates can be wrong.
    scan: Arc<dyn ExecutionPlan>,
    max_keys: usize,
    /// The join over the build side's rows, once they are read (all output
    /// partitions share one).
    prepared: Arc<tokio::sync::OnceCell<Arc<dyn ExecutionPlan>>>,
}

impl FlussLookupJoinExec {
    /// Reads the build side, hands its keys to the lookup, and makes the join over
    /// the rows read.
    async fn prepare(&self, context: Arc<TaskContext>) -> DfResult<Arc<dyn ExecutionPlan>> {
        let children = self.join.children();
        let (Some(left), Some(right)) = (children.first(), children.get(1)) else {
            return Err(DataFusionError::Internal("a join without two sides".into()));
        };
        let left = (*left).clone();
        let right = (*right).clone();
        let batches = collect(left.clone(), context).await?;
        let keys = self.keys_of(&batches)?;
        let rows = MemorySourceConfig::try_new_exec(&[batches], left.schema(), None)?;
        // more keys than estimated: scan, where the scan keeps the join's partitioning
        let partitions = |p: &Arc<dyn ExecutionPlan>| p.properties().partitioning.partition_count();
        if keys.num_rows() > self.max_keys && partitions(&self.scan) == partitions(&right) {
            return replace_children_if_necessary(self.join.clone(), vec![rows, self.scan.clone()]);
        }
        self.slot.put(keys);
        replace_children_if_necessary(self.join.clone(), vec![rows, right])
    }

    /// The distinct non-null keys of the build side's rows.
    fn keys_of(&self, batches: &[RecordBatch]) -> DfResult<RecordBatch> {
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.key_exprs.len());
        for (expr, field) in self.key_exprs.iter().zip(self.key_schema.fields()) {
            let parts = batches
                .iter()
                .map(|b| {
                    let values = expr.evaluate(b)?.into_array(b.num_rows())?;
                    Ok(cast(&values, field.data_type())?)
                })
                .collect::<DfResult<Vec<ArrayRef>>>()?;
            let parts: Vec<&dyn datafusion::arrow::array::Array> =
                parts.iter().map(|a| a.as_ref()).collect();
            columns.push(if parts.is_empty() {
                datafusion::arrow::array::new_empty_array(field.data_type())
            } else {
                concat(&parts)?
            });
        }
        let nullable = Arc::new(Schema::new(
            self.key_schema
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect::<Vec<_>>(),
        ));
        let mut keys = RecordBatch::try_new(nullable, columns)?;
        // a null key matches no row
        for i in 0..keys.num_columns() {
            let present = is_not_null(keys.column(i))?;
            keys = filter_record_batch(&keys, &present)?;
        }
        let converter = RowConverter::new(
            keys.schema()
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )?;
        let rows = converter.convert_columns(keys.columns())?;
        let mut seen = std::collections::HashSet::with_capacity(rows.num_rows());
        let distinct: Vec<u32> = (0..rows.num_rows())
            .filter(|&i| seen.insert(rows.row(i)))
            .map(|i| i as u32)
            .collect();
        let distinct = datafusion::arrow::array::UInt32Array::from(distinct);
        let columns = keys
            .columns()
            .iter()
            .map(|c| take(c.as_ref(), &distinct, None))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RecordBatch::try_new(self.key_schema.clone(), columns)?)
    }
}

impl DisplayAs for FlussLookupJoinExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "FlussLookupJoinExec: build side read first, its keys looked up; "
        )?;
        match self.join.downcast_ref::<HashJoinExec>() {
            Some(join) => join.fmt_as(t, f),
            None => write!(f, "{}", self.join.name()),
        }
    }
}

impl ExecutionPlan for FlussLookupJoinExec {
    fn name(&self) -> &str {
        "FlussLookupJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.join.properties()
    }

    fn input_distribution_requirements(
        &self,
    ) -> datafusion::physical_plan::InputDistributionRequirements {
        self.join.input_distribution_requirements()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.join.children()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(
            &Arc<dyn PhysicalExpr>,
        ) -> DfResult<datafusion::common::tree_node::TreeNodeRecursion>,
    ) -> DfResult<datafusion::common::tree_node::TreeNodeRecursion> {
        self.join.apply_expressions(f)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self {
            join: replace_children_if_necessary(self.join.clone(), children)?,
            prepared: Default::default(),
            ..self.as_ref().clone()
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let this = self.clone();
        let schema = self.join.schema();
        let stream = futures::stream::once(async move {
            let join = this
                .prepared
                .get_or_try_init(|| this.prepare(context.clone()))
                .await?;
            join.execute(partition, context)
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        self.join.child_stats_requests(partition)
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        self.join.statistics_from_inputs(input_stats, args)
    }
}
