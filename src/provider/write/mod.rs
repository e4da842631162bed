//! Writes through DataFusion: `INSERT`, `UPDATE`, `DELETE` and `MERGE INTO` on
//! Fluss tables are planned by DataFusion's SQL planner and optimizer, then written
//! by one sink node over the source's writer.
//!
//! DataFusion 55 hands a provider's `delete_from` and `update` only the filters it
//! finds above the target scan, so a subquery in `WHERE` (which its optimizer turns
//! into a semi join) or an always-false `WHERE` (folded away) reaches them as "no
//! filter", and the statement would change every row (apache/datafusion #24654).
//! Its INSERT and UPDATE planners also cast each value to the column's type, which
//! rounds `1.005` into `DECIMAL(15, 2)` and truncates `2.7` into `INT`. So
//! [`FlussWriteRule`], an analyzer rule, rewrites every write to a Fluss table,
//! before the optimizer runs, into an `INSERT` of the rows to write (a query the
//! optimizer plans whole, subqueries included, values uncast) into a
//! [`FlussWriteTarget`] naming how they are written; its `insert_into` is a
//! `DataSinkExec` over a [`FlussSink`](sink). A session without the rule gets a
//! refusal from the table's own write hooks ([`refusal`]), never a partial write; a
//! host that can only hand over the rows it planned (datafusion-python, across the
//! FFI) writes them whole through [`FlussTableProvider::insert_whole_rows`].

mod merge;
mod rule;
mod sink;

use std::sync::{Arc, LazyLock};

use datafusion::common::DataFusionError;
use datafusion::common::metadata::FieldMetadata;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::scalar::ScalarValue;
use fluss::metadata::TablePath;

pub use rule::FlussWriteRule;
pub use sink::FlussWriteTarget;

use crate::error::{Error, Result};
use crate::provider::{FlussTableProvider, ReadMode};
use sink::Change;

/// `rules` with [`FlussWriteRule`] first (unless they hold it already): it must see
/// a statement before DataFusion's type coercion wraps the key columns of a
/// `DELETE`'s `WHERE` in casts and casts a `MERGE`'s values to the column types.
pub fn with_write_rule(
    rules: &[Arc<dyn AnalyzerRule + Send + Sync>],
) -> Vec<Arc<dyn AnalyzerRule + Send + Sync>> {
    let rule = FlussWriteRule;
    let mut all: Vec<Arc<dyn AnalyzerRule + Send + Sync>> = Vec::with_capacity(rules.len() + 1);
    if !rules.iter().any(|r| r.name() == rule.name()) {
        all.push(Arc::new(rule));
    }
    all.extend(rules.iter().cloned());
    all
}

/// Metadata key of the default a primary-key table gives the columns an INSERT does
/// not list: [`FlussWriteRule`] writes those rows as a Fluss partial update, which
/// keeps the unlisted columns' values instead of setting them NULL.
const UNLISTED: &str = "fluss.unlisted_column";

/// The default of every column of a primary-key table ([`UNLISTED`]): a NULL that
/// the rule recognises by its metadata (a user's NULL has none).
pub(crate) fn unlisted_column() -> &'static Expr {
    static MARKER: LazyLock<Expr> = LazyLock::new(|| {
        let metadata = FieldMetadata::from(std::collections::BTreeMap::from([(
            UNLISTED.to_string(),
            "true".to_string(),
        )]));
        Expr::Literal(ScalarValue::Null, Some(metadata))
    });
    &MARKER
}

/// Whether `expr` is [`unlisted_column`], possibly cast by the INSERT planner.
fn is_unlisted(expr: &Expr) -> bool {
    match expr {
        Expr::Literal(_, Some(metadata)) => metadata.inner().contains_key(UNLISTED),
        Expr::Cast(cast) => is_unlisted(&cast.expr),
        _ => false,
    }
}

impl FlussTableProvider {
    /// The plan of an `INSERT` of whole rows that a session without
    /// [`FlussWriteRule`] planned: datafusion-python, whose FFI forwards a table's
    /// `insert_into` but neither its column defaults nor `DELETE` and `UPDATE`. The
    /// rows are appended to a log table and upserted into a primary-key table, as one
    /// all-or-nothing statement.
    ///
    /// That session's planner has already cast the values to the column types and set
    /// the columns an INSERT did not list to NULL, as DataFusion does for every table;
    /// a Fluss partial update, `DELETE`, `UPDATE`, `MERGE INTO` and values checked as
    /// written need the rule ([`crate::sql::FlussSession`] holds it). `input` must give
    /// every column of the table, in order; `insert_op` must be an append (`INSERT
    /// OVERWRITE` and `REPLACE INTO` are refused).
    pub fn insert_whole_rows(
        &self,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let table = self.table();
        if insert_op != InsertOp::Append {
            return Err(overwrite_refused().with_context("table", table.path.to_string()));
        }
        let path = &table.path;
        let kind = match self.mode() {
            ReadMode::Union => None,
            ReadMode::LakeOnly => Some("lake"),
            ReadMode::LogOnly => Some("log"),
        };
        if let Some(kind) = kind {
            let name = format!("{}${kind}", path.table());
            return Err(read_only_virtual_table(&name, path.table(), kind));
        }
        if self.time_travel().is_some() {
            return Err(Error::invalid_input(format!(
                "'{path}' read as of an earlier time is not written to: write to '{path}'"
            )));
        }
        let columns = rule::column_names(table);
        let schema = input.schema();
        let given: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        if given != columns {
            return Err(Error::invalid_input(format!(
                "an INSERT into '{path}' without fluss_datafusion's write rule gives whole \
                 rows: the columns ({}) in order, not ({})",
                columns.join(", "),
                given.join(", ")
            )));
        }
        let target = FlussWriteTarget::of(self, Change::whole_rows(table), schema, "INSERT");
        Ok(target.sink_exec(input))
    }
}

/// The error of `INSERT OVERWRITE` and `REPLACE INTO`.
fn overwrite_refused() -> Error {
    Error::unsupported(
        "INSERT OVERWRITE and REPLACE INTO are not supported (Fluss tables are appended to \
         or upserted)",
    )
}

/// The error of a write to the virtual table `name` (`kind` of the table `base`),
/// which is read-only.
pub(crate) fn read_only_virtual_table(name: &str, base: &str, kind: &str) -> Error {
    Error::invalid_input(format!(
        "'{name}' is a read-only virtual table (${kind} of '{base}'): write to '{base}'"
    ))
}

/// What a Fluss table's own write hooks answer when the session lacks
/// [`FlussWriteRule`]: DataFusion would hand them values already rounded and,
/// for subqueries, filters already dropped.
pub(crate) fn refusal(statement: &str, path: &TablePath) -> DataFusionError {
    Error::unsupported(format!(
        "{statement} into Fluss table '{path}' needs fluss_datafusion's write rule in the \
         session: register the catalog with FlussCatalog::register_with(&ctx, \"fluss\"), \
         or add FlussWriteRule as an analyzer rule (without it DataFusion 55 would round \
         values to the column types and drop subquery filters, apache/datafusion #24654)"
    ))
    .into()
}
