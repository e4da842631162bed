//! `FlussKeyLookupExec`: the current rows of the primary keys a filter fixes, read by
//! key from the source (a cluster's tablet servers, the Lookup RPC) instead of a scan
//! of lake and tail.
//!
//! A lookup reads the state when it runs, not the lake snapshot and offset cut a scan
//! reads: EXPLAIN says so (`reads=current state`).
//!
//! Keys in partitions the source no longer has (dropped or expired from Fluss, their
//! tiered rows in the lake only) cannot be looked up: the lookup then runs the scan it
//! replaced, its [`LookupFallback`], so such rows are never missed (apache/fluss 3443).

use std::fmt;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
    execute_stream,
};
use futures::TryStreamExt;
use futures::future::BoxFuture;

use super::describe::describe_projection;
use super::view_types::answered_rows;
use crate::error::{Error, Result};
use crate::source::{FlussSource, FlussTable, LookedUp};

/// The keys a [`FlussKeyLookupExec`] reads.
#[derive(Debug, Clone)]
pub enum LookupKeys {
    /// Keys the statement's filters fix: one row per key, the primary-key columns in
    /// the table's Fluss Arrow types.
    Fixed(RecordBatch),
    /// Keys of a join's build side, known when it has been read
    /// ([`super::lookup_join::FlussLookupJoinExec`] puts them in the slot).
    FromJoin {
        /// Where the join puts the keys before the lookup runs.
        slot: Arc<KeySlot>,
        /// The planner's estimate of their number (the build side's rows).
        estimated: usize,
    },
}

/// The keys of a join's build side, handed from the join to its lookup.
#[derive(Debug, Default)]
pub struct KeySlot(Mutex<Option<RecordBatch>>);

impl KeySlot {
    /// Hands over the keys (one row per key, as [`LookupKeys::Fixed`] holds them).
    pub fn put(&self, keys: RecordBatch) {
        match self.0.lock() {
            Ok(mut slot) => *slot = Some(keys),
            Err(poisoned) => *poisoned.into_inner() = Some(keys),
        }
    }

    fn get(&self) -> Option<RecordBatch> {
        match self.0.lock() {
            Ok(slot) => slot.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// Plans, when a lookup needs it, the scan the lookup replaced.
pub type DeferredScan = Arc<
    dyn Fn(Arc<TaskContext>) -> BoxFuture<'static, DfResult<Arc<dyn ExecutionPlan>>> + Send + Sync,
>;

/// The scan a lookup runs instead when some keys fall in partitions the source does
/// not have ([`LookedUp::PartitionsMissing`]): it reads the same rows (the lookup's
/// table, projection and filters), from the lake and the log.
#[derive(Clone)]
pub enum LookupFallback {
    /// A scan already planned (a lookup join's probe side).
    Planned(Arc<dyn ExecutionPlan>),
    /// A scan planned only if it is needed, so a point lookup plans no scan.
    Deferred(DeferredScan),
}

impl fmt::Debug for LookupFallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupFallback::Planned(plan) => write!(f, "Planned({})", plan.name()),
            LookupFallback::Deferred(_) => write!(f, "Deferred"),
        }
    }
}

impl LookupFallback {
    async fn plan(&self, context: Arc<TaskContext>) -> DfResult<Arc<dyn ExecutionPlan>> {
        match self {
            LookupFallback::Planned(plan) => Ok(plan.clone()),
            LookupFallback::Deferred(plan) => plan(context).await,
        }
    }
}

/// What a lookup of a table reads, less its keys: the provider makes one for a scan
/// whose keys may come from a join ([`super::lookup_join::LookupJoinRule`]).
#[derive(Debug, Clone)]
pub struct KeyLookupPlan {
    source: Arc<dyn FlussSource>,
    table: FlussTable,
    /// The table's whole row as the provider shows it (views for strings).
    table_schema: SchemaRef,
    /// The scan's filters over `table_schema`, applied to the looked-up rows.
    predicate: Option<Arc<dyn PhysicalExpr>>,
    projection: Vec<usize>,
    filters: Vec<String>,
}

impl KeyLookupPlan {
    /// A lookup in `table` producing `table_schema` projected to `projection` after
    /// `predicate` (the scan's filters) holds.
    pub fn new(
        source: Arc<dyn FlussSource>,
        table: FlussTable,
        table_schema: SchemaRef,
        predicate: Option<Arc<dyn PhysicalExpr>>,
        projection: Vec<usize>,
        filters: Vec<String>,
    ) -> Self {
        Self {
            source,
            table,
            table_schema,
            predicate,
            projection,
            filters,
        }
    }

    /// The table looked up in.
    pub fn table(&self) -> &FlussTable {
        &self.table
    }

    /// The table column of each output column.
    pub fn projection(&self) -> &[usize] {
        &self.projection
    }

    /// The table's columns as the provider shows them.
    pub fn table_schema(&self) -> &SchemaRef {
        &self.table_schema
    }

    /// The schema of the keys looked up: the primary-key columns, in key order, of
    /// the table's latest Fluss schema (not null).
    pub fn key_schema(&self) -> Result<SchemaRef> {
        let latest = self.table.schemas.latest()?;
        let fields = self
            .table
            .info
            .get_primary_keys()
            .iter()
            .map(|k| {
                let field = latest.arrow.field_with_name(k)?;
                Ok(field.clone().with_nullable(false))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(Schema::new(fields)))
    }

    /// The lookup of `keys`.
    pub fn exec(&self, keys: LookupKeys) -> Result<FlussKeyLookupExec> {
        let schema = Arc::new(self.table_schema.project(&self.projection)?);
        let properties = super::describe::leaf_properties(&schema, 1);
        Ok(FlussKeyLookupExec {
            plan: self.clone(),
            keys,
            fallback: None,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The looked-up rows of `batch` (the source's answer, in Fluss types) that
    /// the filters keep, projected.
    fn finish(&self, batch: RecordBatch) -> Result<RecordBatch> {
        answered_rows(
            batch,
            &self.table_schema,
            self.predicate.as_ref(),
            &self.projection,
        )
    }
}

/// Reads the rows of a set of primary keys from the source by key.
#[derive(Debug)]
pub struct FlussKeyLookupExec {
    plan: KeyLookupPlan,
    keys: LookupKeys,
    /// What to read when the source cannot answer for every key; without it, such
    /// a lookup is an error naming the partitions.
    fallback: Option<LookupFallback>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl FlussKeyLookupExec {
    /// Runs `fallback` when some keys fall in partitions the source does not have.
    /// Its output schema must be this lookup's.
    pub fn with_fallback(mut self, fallback: LookupFallback) -> Self {
        self.fallback = Some(fallback);
        self
    }

    fn estimated_keys(&self) -> usize {
        match &self.keys {
            LookupKeys::Fixed(keys) => keys.num_rows(),
            LookupKeys::FromJoin { estimated, .. } => *estimated,
        }
    }
}

impl DisplayAs for FlussKeyLookupExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        super::describe::as_format(t, f, |f| {
            let keys = match &self.keys {
                LookupKeys::Fixed(keys) => keys.num_rows().to_string(),
                LookupKeys::FromJoin { estimated, .. } => {
                    format!("from the join's build side (estimated {estimated})")
                }
            };
            write!(
                f,
                "FlussKeyLookupExec: table={}, keys={keys}, reads=current state (key lookups, not \
                 the snapshot cut), projection=[{}]",
                self.plan.table.path,
                describe_projection(&self.schema),
            )?;
            if !self.plan.filters.is_empty() {
                write!(f, ", filters=[{}]", self.plan.filters.join(", "))?;
            }
            Ok(())
        })
    }
}

impl ExecutionPlan for FlussKeyLookupExec {
    fn name(&self) -> &str {
        "FlussKeyLookupExec"
    }

    super::describe::leaf_node_methods!();
    super::describe::no_expressions!();

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let schema = self.schema.clone();
        if partition != 0 {
            return Ok(super::describe::empty_partition(schema));
        }
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let keys_looked_up = MetricBuilder::new(&self.metrics).counter("keys_looked_up", 0);
        let scanned_instead = MetricBuilder::new(&self.metrics).counter("scanned_instead", 0);
        let plan = self.plan.clone();
        let keys = self.keys.clone();
        let fallback = self.fallback.clone();
        let stream_schema = schema.clone();
        let stream = futures::stream::once(async move {
            let keys = match keys {
                LookupKeys::Fixed(keys) => keys,
                LookupKeys::FromJoin { slot, .. } => slot.get().ok_or_else(|| {
                    Error::internal("a join lookup ran before its join had read its keys")
                })?,
            };
            keys_looked_up.add(keys.num_rows());
            let found = match plan.source.lookup_keys(&plan.table, &keys).await? {
                LookedUp::Rows(found) => found,
                LookedUp::PartitionsMissing(partitions) => {
                    let Some(fallback) = fallback else {
                        return Err(DataFusionError::from(
                            Error::invalid_input(format!(
                                "keys of partitions {} cannot be looked up: the partitions \
                                 are not in Fluss (dropped, expired or never created), and \
                                 their rows can only be read from the lake by a scan",
                                partitions.join(", ")
                            ))
                            .with_context("table", plan.table.path.to_string()),
                        ));
                    };
                    tracing::info!(
                        table = %plan.table.path,
                        partitions = partitions.join(", "),
                        "keys of partitions Fluss no longer has: scanning instead of looking up"
                    );
                    scanned_instead.add(1);
                    let scan = fallback.plan(context.clone()).await?;
                    let output_rows = baseline.output_rows().clone();
                    let rows = execute_stream(scan, context)?
                        .inspect_ok(move |batch| output_rows.add(batch.num_rows()));
                    let rows: SendableRecordBatchStream =
                        Box::pin(RecordBatchStreamAdapter::new(stream_schema, rows));
                    return Ok(rows);
                }
            };
            let _timer = baseline.elapsed_compute().timer();
            let rows = plan.finish(found)?;
            baseline.record_output(rows.num_rows());
            let one: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(
                stream_schema,
                futures::stream::iter([Ok(rows)]),
            ));
            Ok::<_, DataFusionError>(one)
        });
        let stream = stream.try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// At most one row per key.
    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let mut stats = Statistics::new_unknown(&self.schema);
        stats.num_rows = match partition {
            Some(p) if p > 0 => Precision::Exact(0),
            _ => Precision::Inexact(self.estimated_keys()),
        };
        Ok(Arc::new(stats))
    }
}
