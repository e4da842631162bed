//! [`FlussWriteTarget`]: the table [`super::FlussWriteRule`] writes into, whose
//! `insert_into` is a `DataSinkExec` over a [`FlussSink`]: one all-or-nothing
//! statement through the source's [`crate::source::FlussWriter`].

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::TableType;
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::Result as DfResult;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use fluss::metadata::TablePath;
use futures::{StreamExt, TryStreamExt};

use crate::error::{Error, Result};
use crate::provider::FlussTableProvider;
use crate::source::{FlussSource, FlussTable, FlussWriter, WriteKind};

/// How the rows of a write statement change a Fluss table.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// Appended to a log table.
    Append,
    /// Full rows upserted into a primary-key table.
    Upsert,
    /// Rows holding the key and some columns: only those columns change.
    PartialUpdate,
    /// Rows holding the key: those keys are deleted.
    Delete,
    /// `MERGE INTO`: each row leads with the clause it takes (NULL: none), then the
    /// full row; `deleting[i]` says whether clause `i + 1` deletes.
    Merge {
        /// Per clause, whether it deletes.
        deleting: Vec<bool>,
    },
}

impl Change {
    /// How an INSERT of whole rows changes `table`: appended to a log table, upserted
    /// into a primary-key table.
    pub(crate) fn whole_rows(table: &FlussTable) -> Self {
        if table.info.has_primary_key() {
            Change::Upsert
        } else {
            Change::Append
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Change::Append => "append",
            Change::Upsert => "upsert",
            Change::PartialUpdate => "partial update",
            Change::Delete => "delete",
            Change::Merge { .. } => "merge",
        }
    }
}

/// A Fluss table as the target of one planned write: rows of `schema` written as
/// `change` by the statement `statement` (named in errors).
#[derive(Debug, Clone)]
pub struct FlussWriteTarget {
    source: Arc<dyn FlussSource>,
    path: TablePath,
    keys: Vec<String>,
    change: Change,
    schema: SchemaRef,
    statement: &'static str,
}

impl FlussWriteTarget {
    /// The table `provider` reads, written through its source.
    pub(crate) fn of(
        provider: &FlussTableProvider,
        change: Change,
        schema: SchemaRef,
        statement: &'static str,
    ) -> Self {
        let table = provider.table();
        Self {
            source: provider.source().clone(),
            path: table.path.clone(),
            keys: table.info.get_primary_keys().clone(),
            change,
            schema,
            statement,
        }
    }
}

#[async_trait]
impl datafusion::catalog::TableProvider for FlussWriteTarget {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(Error::internal(format!("the write target of '{}' is not read", self.path)).into())
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![
            TableProviderFilterPushDown::Unsupported;
            filters.len()
        ])
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        _insert_op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self.sink_exec(input))
    }
}

impl FlussWriteTarget {
    /// The plan that writes `input`'s rows: a `DataSinkExec` over a [`FlussSink`].
    pub(crate) fn sink_exec(&self, input: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let sink = FlussSink {
            target: self.clone(),
            schema: input.schema(),
        };
        Arc::new(DataSinkExec::new(input, Arc::new(sink), None))
    }
}

/// Writes a statement's rows as one all-or-nothing statement of the source's writer,
/// and answers with the rows it changed (for DELETE, the changelog's `-D` records).
#[derive(Debug)]
struct FlussSink {
    target: FlussWriteTarget,
    schema: SchemaRef,
}

impl FlussSink {
    fn writer(&self) -> Result<&dyn FlussWriter> {
        crate::source::writer::writer_of(self.target.source.as_ref(), self.target.statement)
    }

    async fn write(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let writer = self.writer()?;
        let target = &self.target;
        let kind = match &target.change {
            Change::Append => WriteKind::Append,
            Change::Upsert => WriteKind::Upsert,
            Change::PartialUpdate => WriteKind::PartialUpdate,
            Change::Delete => WriteKind::Delete,
            Change::Merge { deleting } => {
                let batches: Vec<_> = data.try_collect().await?;
                let (rows, deletes) = super::merge::changes(
                    &self.schema,
                    &batches,
                    deleting,
                    &target.keys,
                    &target.path,
                )?;
                if rows.num_rows() == 0 {
                    return Ok(0);
                }
                let written = writer.write_changes(&target.path, &rows, &deletes).await?;
                return Ok(written.rows as u64);
            }
        };
        // Streamed into one statement: memory stays bounded by a batch, and the rows
        // come from the cut each scan pinned when the plan was made, before anything
        // is written (`INSERT INTO t SELECT ... FROM t` reads t as it was).
        let pool = context.memory_pool().clone();
        let rows = data.map_err(Error::from).boxed();
        let written = writer.write(&target.path, kind, rows, Some(&pool)).await?;
        Ok(match target.change {
            Change::Delete => written.records,
            _ => written.rows,
        } as u64)
    }
}

impl DisplayAs for FlussSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => write!(
                f,
                "table={}\nwrite={}",
                self.target.path,
                self.target.change.name()
            ),
            _ => write!(
                f,
                "FlussSink: table={}, write={}",
                self.target.path,
                self.target.change.name()
            ),
        }
    }
}

#[async_trait]
impl DataSink for FlussSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> DfResult<u64> {
        Ok(self.write(data, context).await?)
    }
}
