//! [`PartitionPruner`]: which partitions a scan reads, decided from their names, and
//! how many it read and pruned (shown by EXPLAIN).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::utils::conjunction;
use datafusion::physical_expr::PhysicalExpr;

use crate::error::{Error, Result};
use crate::source::FlussTable;
use crate::table::partition_value;
use crate::union::filters::PlacedFilters;

/// Decides from a partition name whether the partition can hold matching rows.
/// Which partitions a scan keeps, by their names. The filters pushed `Exact` must be
/// evaluated for every partition (DataFusion does not filter their rows again): one
/// that cannot be, for a partition whose name does not hold a value of its column's
/// type, fails the scan ([`PartitionPruner::check`]) instead of keeping the partition
/// unfiltered. The others keep a partition they cannot judge (DataFusion re-applies
/// them).
pub(super) struct PartitionPruner {
    schema: SchemaRef,
    exact: Option<(Arc<dyn PhysicalExpr>, String)>,
    inexact: Option<Arc<dyn PhysicalExpr>>,
    unjudged: Mutex<Vec<String>>,
    /// Every partition asked about (from Fluss's list and from the lake's splits),
    /// and whether it was kept.
    decided: Mutex<BTreeMap<String, bool>>,
}

impl PartitionPruner {
    /// The pruner of `filters`' partition filters over a table of `schema`
    /// partitioned by `keys`.
    pub(super) fn new(
        state: &dyn Session,
        filters: &PlacedFilters,
        schema: &SchemaRef,
        keys: &[String],
    ) -> Result<Self> {
        let (exact, inexact) = (filters.exact_partition(), filters.inexact_partition());
        if exact.is_empty() && inexact.is_empty() {
            return Ok(Self::keep_all());
        }
        let fields: Vec<_> = keys
            .iter()
            .map(|k| schema.field_with_name(k).cloned())
            .collect::<std::result::Result<_, _>>()?;
        let partition_schema = Arc::new(Schema::new(fields));
        let df_schema = DFSchema::try_from(partition_schema.as_ref().clone())
            .map_err(|e| Error::internal("partition schema").with_source(e))?;
        let compile = |filters: Vec<Expr>| -> Result<Option<(Arc<dyn PhysicalExpr>, String)>> {
            let Some(predicate) = conjunction(filters) else {
                return Ok(None);
            };
            let shown = predicate.to_string();
            let physical = state
                .create_physical_expr(predicate, &df_schema)
                .map_err(|e| {
                    Error::invalid_input("partition filter cannot be planned").with_source(e)
                })?;
            Ok(Some((physical, shown)))
        };
        Ok(Self {
            exact: compile(exact)?,
            inexact: compile(inexact)?.map(|(p, _)| p),
            schema: partition_schema,
            unjudged: Default::default(),
            decided: Default::default(),
        })
    }

    /// A pruner keeping every partition.
    pub(super) fn keep_all() -> Self {
        Self {
            schema: Arc::new(Schema::empty()),
            exact: None,
            inexact: None,
            unjudged: Default::default(),
            decided: Default::default(),
        }
    }

    /// Whether the partition named `name` may hold rows the filters keep.
    pub(super) fn keep(&self, name: &str) -> bool {
        let keep = self.judge(name);
        if let Ok(mut decided) = self.decided.lock() {
            decided.insert(name.to_string(), keep);
        }
        keep
    }

    /// How many partitions the scan reads and prunes; `None` when it was asked about
    /// none (an unpartitioned table).
    pub(super) fn partitions_read(&self) -> Option<PartitionsRead> {
        let decided = self.decided.lock().ok()?;
        if decided.is_empty() {
            return None;
        }
        let read = decided.values().filter(|kept| **kept).count();
        Some(PartitionsRead {
            read,
            pruned: decided.len() - read,
        })
    }

    fn judge(&self, name: &str) -> bool {
        let exact = match &self.exact {
            None => true,
            Some((predicate, _)) => match evaluate_partition(predicate, &self.schema, name) {
                Some(keep) => keep,
                None => {
                    if let Ok(mut unjudged) = self.unjudged.lock() {
                        unjudged.push(name.to_string());
                    }
                    true
                }
            },
        };
        exact
            && self.inexact.as_ref().is_none_or(|predicate| {
                evaluate_partition(predicate, &self.schema, name).unwrap_or(true)
            })
    }

    /// Fails when an exact filter could not be evaluated for a partition [`Self::keep`]
    /// was asked about.
    pub(super) fn check(&self, table: &FlussTable) -> Result<()> {
        let unjudged = self.unjudged.lock().map(|u| u.clone()).unwrap_or_default();
        let (Some(name), Some((_, filter))) = (unjudged.first(), &self.exact) else {
            return Ok(());
        };
        Err(Error::data_invalid(format!(
            "partition '{name}' cannot be checked against the filter {filter}: its name \
             does not hold values of the partition columns' types ({})",
            self.schema
                .fields()
                .iter()
                .map(|f| format!("{} {}", f.name(), f.data_type()))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .with_context("table", table.path.to_string())
        .with_context("partition", name.clone()))
    }
}

/// How many partitions a scan reads and how many its partition filters pruned: the
/// partitions Fluss lists and those only in the lake that the lake's own planning
/// (which prunes by the same filters first) returned, each counted once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionsRead {
    /// Partitions read.
    pub read: usize,
    /// Partitions skipped without reading anything of them.
    pub pruned: usize,
}

impl fmt::Display for PartitionsRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "partitions_read={}, partitions_pruned={}",
            self.read, self.pruned
        )
    }
}

/// Whether the partition `name` passes `predicate` (`None`: the name holds no value
/// of a partition column's type, or the predicate cannot be evaluated).
fn evaluate_partition(
    predicate: &Arc<dyn PhysicalExpr>,
    schema: &SchemaRef,
    name: &str,
) -> Option<bool> {
    let values: Vec<&str> = name.split('$').collect();
    if values.len() != schema.fields().len() {
        return None;
    }
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .zip(values)
        .map(|(f, v)| partition_value::parse(v, f.data_type())?.to_array().ok())
        .collect::<Option<_>>()?;
    let batch = RecordBatch::try_new(schema.clone(), columns).ok()?;
    let result = predicate.evaluate(&batch).ok()?.into_array(1).ok()?;
    let bools = result.as_any().downcast_ref::<BooleanArray>()?;
    Some(bools.is_valid(0) && bools.value(0))
}
