//! `t$changelog`: the Fluss log of a table (log only, bounded at the high watermark)
//! with `_change_type`, `_log_offset` and `_commit_timestamp` before the columns, as
//! Fluss's Flink catalog exposes it (`ChangelogFlinkTableSource`, `ChangelogRowConverter`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::datasource::TableType;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use fluss::record::ChangeType;
use futures::{StreamExt, TryStreamExt};

use super::binlog::BinlogFold;
use super::changelog_filters::{commit_time_bounds, offset_bounds};
use crate::log::{ChangelogBatch, LogReadOptions};
use crate::source::{FlussSource, FlussTable};
use crate::union::{BucketCut, CommitTimes, CutLake, plan_cut};

/// The columns before the table's: `_change_type`, `_log_offset`, `_commit_timestamp`.
const META_COLUMNS: usize = 3;

/// `_change_type`, `_log_offset` and `_commit_timestamp`, as Fluss's changelog and
/// binlog tables begin.
pub(super) fn meta_fields() -> Vec<Field> {
    vec![
        Field::new("_change_type", DataType::Utf8, false),
        Field::new("_log_offset", DataType::Int64, false),
        Field::new(
            "_commit_timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
    ]
}

/// `_change_type` values (`ChangelogRowConverter`).
pub fn change_type_name(change: ChangeType) -> &'static str {
    match change {
        ChangeType::AppendOnly | ChangeType::Insert => "insert",
        ChangeType::UpdateBefore => "update_before",
        ChangeType::UpdateAfter => "update_after",
        ChangeType::Delete => "delete",
    }
}

/// The `t$changelog` table, or a primary-key table's `t$binlog`.
#[derive(Debug, Clone)]
pub struct ChangelogTableProvider {
    source: Arc<dyn FlussSource>,
    table: FlussTable,
    schema: SchemaRef,
    binlog: bool,
}

impl ChangelogTableProvider {
    /// The changelog of `table`.
    pub fn new(source: Arc<dyn FlussSource>, table: FlussTable) -> crate::Result<Self> {
        let data = table.schemas.latest()?.arrow.clone();
        let mut fields = meta_fields();
        fields.extend(data.fields().iter().map(|f| f.as_ref().clone()));
        Ok(Self {
            source,
            table,
            schema: Arc::new(Schema::new(fields)),
            binlog: false,
        })
    }

    /// The binlog of `table`, a primary-key table (Fluss has none for log tables).
    pub fn binlog(source: Arc<dyn FlussSource>, table: FlussTable) -> crate::Result<Self> {
        if !table.info.has_primary_key() {
            return Err(crate::Error::invalid_input(format!(
                "'{}$binlog' exists for primary-key tables only; '{}' is a log table (its \
                 changes are '{}$changelog')",
                table.path, table.path, table.path
            )));
        }
        let data = table.schemas.latest()?.arrow.clone();
        Ok(Self {
            source,
            schema: super::binlog::binlog_schema(&data),
            table,
            binlog: true,
        })
    }
}

fn changelog_batch(schema: &SchemaRef, b: &ChangelogBatch) -> DfResult<RecordBatch> {
    let n = b.batch.num_rows();
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            b.change_types.iter().map(|c| change_type_name(*c)),
        )),
        Arc::new(Int64Array::from_iter_values(
            (0..n as i64).map(|i| b.first_offset + i),
        )),
        Arc::new(TimestampMillisecondArray::from(vec![b.commit_timestamp; n]).with_timezone("UTC")),
    ];
    columns.extend(b.batch.columns().iter().cloned());
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

#[async_trait]
impl datafusion::catalog::TableProvider for ChangelogTableProvider {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    /// Every filter reaches the scan, `Inexact`: one bounding `_log_offset` narrows
    /// each bucket's range, and DataFusion applies them all to the rows read.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let mut cut = plan_cut(
            self.source.as_ref(),
            &self.table,
            &|_| true,
            None,
            CutLake::Skip,
            true,
            CommitTimes::default(),
        )
        .await?;
        // the offsets the filters allow: every bucket's range narrowed to them (not a
        // binlog's: a range starting or ending between an -U and its +U would split
        // an update)
        let (low, high) = if self.binlog {
            (i64::MIN, i64::MAX)
        } else {
            offset_bounds(filters)
        };
        for bucket in &mut cut.buckets {
            let range = &mut bucket.range;
            range.start = range.start.max(low);
            range.stop = range.stop.min(high).max(range.start);
        }
        let limit = if filters.is_empty() { limit } else { None };
        // batches committed outside the times the filters allow are skipped by their
        // header (a binlog's too could split an update)
        let commit_time = if self.binlog {
            None
        } else {
            commit_time_bounds(filters)
        };
        Ok(Arc::new(ChangelogExec::new(
            self,
            cut.buckets,
            projection.cloned(),
            limit,
            commit_time,
        )?))
    }
}

/// Reads each bucket's log in the cut (narrowed to the offsets the filters allow),
/// one partition per bucket.
#[derive(Debug)]
pub struct ChangelogExec {
    pub(super) source: Arc<dyn FlussSource>,
    pub(super) table: FlussTable,
    pub(super) buckets: Vec<BucketCut>,
    pub(super) full_schema: SchemaRef,
    pub(super) projection: Option<Vec<usize>>,
    pub(super) schema: SchemaRef,
    pub(super) limit: Option<usize>,
    pub(super) binlog: bool,
    /// The table columns read (all when `None`), in table order.
    pub(super) data: Option<Vec<usize>>,
    /// The commit times `[from, to)` of the batches read (all when `None`).
    pub(super) commit_time: Option<(i64, i64)>,
    pub(super) metrics: ExecutionPlanMetricsSet,
    pub(super) properties: Arc<PlanProperties>,
}

impl ChangelogExec {
    fn new(
        provider: &ChangelogTableProvider,
        buckets: Vec<BucketCut>,
        projection: Option<Vec<usize>>,
        limit: Option<usize>,
        commit_time: Option<(i64, i64)>,
    ) -> DfResult<Self> {
        let (source, table) = (provider.source.clone(), provider.table.clone());
        let (full_schema, binlog) = (provider.schema.clone(), provider.binlog);
        let schema = match &projection {
            Some(p) => Arc::new(full_schema.project(p)?),
            None => full_schema.clone(),
        };
        // the changelog's table columns read: only those projected (the binlog's
        // before and after need them all)
        let data = match (&projection, binlog) {
            (Some(p), false) => {
                let mut data: Vec<usize> = p
                    .iter()
                    .filter_map(|&i| i.checked_sub(META_COLUMNS))
                    .collect();
                data.sort_unstable();
                data.dedup();
                Some(data)
            }
            _ => None,
        };
        let properties = super::describe::leaf_properties(&schema, buckets.len());
        Ok(Self {
            source,
            table,
            buckets,
            full_schema,
            projection,
            schema,
            limit,
            binlog,
            data,
            commit_time,
            metrics: ExecutionPlanMetricsSet::new(),
            properties,
        })
    }
}

impl DisplayAs for ChangelogExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        super::describe::as_format(t, f, |f| {
            write!(
                f,
                "FlussChangelogExec: table={}, shape={}, log_ranges=[{}], projection=[{}]{}",
                self.table.path,
                if self.binlog { "binlog" } else { "changelog" },
                super::describe::describe_buckets(&self.buckets),
                self.schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                match self.commit_time {
                    Some((from, to)) => {
                        let bound = |t: i64, open: i64| {
                            if t == open {
                                String::new()
                            } else {
                                t.to_string()
                            }
                        };
                        format!(
                            ", commit_time=[{},{})",
                            bound(from, i64::MIN),
                            bound(to, i64::MAX)
                        )
                    }
                    None => String::new(),
                }
            )
        })
    }
}

impl ExecutionPlan for ChangelogExec {
    fn name(&self) -> &str {
        "FlussChangelogExec"
    }

    super::describe::leaf_node_methods!();
    super::describe::no_expressions!();

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let schema = self.schema.clone();
        let Some(cut) = self.buckets.get(partition).cloned() else {
            return Ok(super::describe::empty_partition(schema));
        };
        let source = self.source.clone();
        let table = self.table.clone();
        // what a read batch becomes: the meta columns, then the table columns read
        let (full, projection) = match (&self.data, &self.projection) {
            (Some(data), Some(projection)) => {
                let mut fields: Vec<usize> = (0..META_COLUMNS).collect();
                fields.extend(data.iter().map(|d| d + META_COLUMNS));
                let read = Arc::new(self.full_schema.project(&fields)?);
                let positions = projection
                    .iter()
                    .map(|&i| match i.checked_sub(META_COLUMNS) {
                        None => i,
                        Some(d) => {
                            META_COLUMNS + data.iter().position(|x| *x == d).unwrap_or_default()
                        }
                    })
                    .collect();
                (read, Some(positions))
            }
            _ => (self.full_schema.clone(), self.projection.clone()),
        };
        let options = LogReadOptions {
            projection: self.data.clone(),
            commit_time: self.commit_time,
            counters: Some(super::describe::log_counters(&self.metrics, partition)),
            ..LogReadOptions::verified()
        };
        let batches = futures::stream::once(async move {
            source
                .read_log(&table, &cut.location, cut.range, options)
                .await
        })
        .try_flatten();
        let fold = self
            .binlog
            .then(|| Arc::new(std::sync::Mutex::new(BinlogFold::new(full.clone()))));
        let folding = fold.clone();
        let rows = batches.map(move |b| {
            let b = b.map_err(DataFusionError::from)?;
            let batch = match &folding {
                Some(fold) => lock(fold)?.push(&b)?,
                None => changelog_batch(&full, &b)?,
            };
            match &projection {
                Some(p) => Ok(batch.project(p)?),
                None => Ok(batch),
            }
        });
        // the range ends with every -U paired with its +U
        let end = futures::stream::once(async move {
            match &fold {
                Some(fold) => lock(fold)?.finish(),
                None => Ok(()),
            }
        })
        .filter_map(|done: DfResult<()>| async move { done.err().map(Err) });
        let stream = rows.chain(end).boxed();
        let stream = super::describe::limit_stream(stream, self.limit);
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        Ok(Arc::new(Statistics::new_unknown(&self.schema)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

fn lock(fold: &std::sync::Mutex<BinlogFold>) -> DfResult<std::sync::MutexGuard<'_, BinlogFold>> {
    fold.lock()
        .map_err(|_| DataFusionError::Execution("the binlog fold was poisoned".to_string()))
}
