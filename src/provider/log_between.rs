//! `fluss_log_between('db.t', start [, end])`: the rows a table's log committed in
//! `[start, end)`, as Spark's `fluss_incremental_between_timestamp` reads them
//! ([`TimeTravel::LogBetween`]). It seeks by the batch headers' commit timestamps,
//! as fluss-rs's `new_between_timestamps` does, instead of scanning the log.

use std::sync::Arc;

use datafusion::catalog::{CatalogProvider, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{ScalarValue, plan_err};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::Expr;

use super::as_of_planner::constant_millis;
use super::blocking::block_on;
use super::catalog::FlussCatalog;
use super::table::{FlussTableProvider, ReadMode};
use super::time_travel::TimeTravel;
use crate::table::now_millis;

/// The table function `fluss_log_between('[db.]t', start [, end])` over a
/// catalog's tables. `start` and `end` are times as `TIMESTAMP AS OF` takes them
/// (timestamps, strings of them or of epoch milliseconds, epoch milliseconds);
/// without `end`, up to now. A log table gives the rows appended in the window; a
/// primary-key table the rows of the keys inserted or updated in it, as they were
/// at its end (keys deleted drop out). The lake is not read, and a window older
/// than the log still holds is an error.
#[derive(Debug, Clone)]
pub struct LogBetweenFunction {
    catalog: FlussCatalog,
}

impl LogBetweenFunction {
    /// The function over `catalog`'s tables.
    pub fn new(catalog: FlussCatalog) -> Self {
        Self { catalog }
    }
}

/// The function's name, as it is registered.
pub const LOG_BETWEEN: &str = "fluss_log_between";

impl TableFunctionImpl for LogBetweenFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DfResult<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        if !(2..=3).contains(&exprs.len()) {
            return plan_err!(
                "{LOG_BETWEEN} takes a table name, a start time and an optional end time, \
                 e.g. {LOG_BETWEEN}('db.t', '2026-01-01 00:00:00', '2026-01-01 01:00:00')"
            );
        }
        let options = Arc::new(args.session().config().options().as_ref().clone());
        let name = table_name(&exprs[0])?;
        let start = constant_millis(exprs[1].clone(), options.clone(), LOG_BETWEEN)?;
        let end = match exprs.get(2) {
            Some(end) => constant_millis(end.clone(), options.clone(), LOG_BETWEEN)?,
            None => now_millis(),
        };
        let parts: Vec<&str> = name.split('.').collect();
        let (database, table) = match parts.as_slice() {
            [table] => (options.catalog.default_schema.as_str(), *table),
            [database, table] | [_, database, table] => (*database, *table),
            _ => return plan_err!("{LOG_BETWEEN}: '{name}' is not a table name ([db.]table)"),
        };
        let Some(schema) = self.catalog.schema(database) else {
            return plan_err!("{LOG_BETWEEN}: database '{database}' does not exist");
        };
        let provider = block_on(async move { schema.table(table).await })??;
        let fluss = provider
            .as_ref()
            .and_then(|p| p.downcast_ref::<FlussTableProvider>())
            .filter(|p| p.mode() == ReadMode::Union);
        match fluss {
            Some(fluss) => Ok(Arc::new(
                fluss.clone().at(TimeTravel::LogBetween { start, end }),
            )),
            None if provider.is_some() => plan_err!(
                "{LOG_BETWEEN} reads the log of a Fluss table; {database}.{table} is not one"
            ),
            None => plan_err!("{LOG_BETWEEN}: table {database}.{table} does not exist"),
        }
    }
}

/// The table name argument: a constant string.
fn table_name(expr: &Expr) -> DfResult<String> {
    match expr {
        Expr::Literal(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)),
            _,
        ) => Ok(s.clone()),
        other => {
            plan_err!("{LOG_BETWEEN} takes the table's name as a string ('db.t'), not {other}")
        }
    }
}
