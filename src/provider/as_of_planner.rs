//! [`TimeTravelPlanner`]: `VERSION AS OF`, `TIMESTAMP AS OF` and `FOR SYSTEM_TIME
//! AS OF` on Fluss tables, planned through DataFusion's relation planner hook, as
//! paimon-datafusion plans its time travel.
//!
//! DataFusion's own planning ignores a table version, which would read the table as
//! it is now; so a version on any of the catalog's other tables (`$changelog`,
//! `$lake$snapshots`, ...) is an error here, not a silent current read.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::catalog::default_table_source::{provider_as_source, source_as_provider};
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DFSchema, ScalarValue, plan_err};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::planner::{
    PlannedRelation, RelationPlanner, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::sql::sqlparser::ast::{self, TableFactor, TableVersion};

use super::changelog::ChangelogTableProvider;
use super::table::FlussTableProvider;
use super::time_travel::TimeTravel;

/// Plans `t VERSION AS OF <lake snapshot id>` and `t TIMESTAMP AS OF <time>` /
/// `t FOR SYSTEM_TIME AS OF <time>` on Fluss tables and their `t$lake` ([`TimeTravel`]).
/// A time is any constant expression: a timestamp (`TIMESTAMP '2024-05-01
/// 10:00:00'`, `now() - INTERVAL '1' HOUR`), a string of one (without a zone: UTC),
/// or epoch milliseconds. [`super::FlussCatalog::register_with`] registers it.
#[derive(Debug, Default)]
pub struct TimeTravelPlanner;

impl RelationPlanner for TimeTravelPlanner {
    fn plan_relation(
        &self,
        relation: TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> DfResult<RelationPlanning> {
        let TableFactor::Table {
            name,
            version: Some(version),
            args: None,
            ..
        } = &relation
        else {
            return Ok(RelationPlanning::Original(Box::new(relation)));
        };
        let as_of = match version {
            TableVersion::VersionAsOf(expr) => TimeTravel::Snapshot(snapshot_id(expr)?),
            TableVersion::TimestampAsOf(expr) | TableVersion::ForSystemTimeAsOf(expr) => {
                TimeTravel::AsOfTime(epoch_millis(expr.clone(), context)?)
            }
            other => {
                return plan_err!(
                    "table version '{other}' is not supported; use VERSION AS OF <lake snapshot id> or TIMESTAMP AS OF <time>"
                );
            }
        };
        let table_ref = context.object_name_to_table_reference(name.clone())?;
        let provider = source_as_provider(
            &context
                .context_provider()
                .get_table_source(table_ref.clone())?,
        )?;
        let Some(table) = provider.downcast_ref::<FlussTableProvider>() else {
            if provider.downcast_ref::<ChangelogTableProvider>().is_some()
                || table_ref.table().contains('$')
            {
                return plan_err!(
                    "{table_ref} cannot be read as of a snapshot or time: only a Fluss \
                     table and its $lake can (fluss_log_between reads the log between two times)"
                );
            }
            return Ok(RelationPlanning::Original(Box::new(relation)));
        };
        let as_of_table = Arc::new(table.clone().at(as_of));
        let plan =
            LogicalPlanBuilder::scan(table_ref, provider_as_source(as_of_table), None)?.build()?;
        let TableFactor::Table { alias, .. } = relation else {
            return plan_err!("a table factor changed while it was planned");
        };
        Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(
            plan, alias,
        ))))
    }
}

/// The lake snapshot id of `VERSION AS OF <id>`.
fn snapshot_id(expr: &ast::Expr) -> DfResult<i64> {
    let number = match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Some(n.as_str()),
            ast::Value::SingleQuotedString(s) => Some(s.as_str()),
            _ => None,
        },
        _ => None,
    };
    match number.and_then(|n| n.parse::<i64>().ok()) {
        Some(id) => Ok(id),
        None => plan_err!("VERSION AS OF takes a lake snapshot id (an integer), not {expr}"),
    }
}

/// The epoch milliseconds of a time expression in SQL.
fn epoch_millis(expr: ast::Expr, context: &mut dyn RelationPlannerContext) -> DfResult<i64> {
    let planned = context.sql_to_expr(expr, &DFSchema::empty())?;
    let options = Arc::new(context.context_provider().options().clone());
    constant_millis(planned, options, "AS OF")
}

/// The epoch milliseconds a constant time expression stands for: a timestamp or date
/// (one without a zone is UTC), a string of one or of epoch milliseconds, or an
/// integer of epoch milliseconds. `what` names the clause in errors.
pub(super) fn constant_millis(
    expr: Expr,
    options: Arc<ConfigOptions>,
    what: &str,
) -> DfResult<i64> {
    let shown = expr.to_string();
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_config_options(options)
            .with_current_time()
            .build(),
    );
    let refuse = || {
        plan_err!(
            "{what} takes a constant time (a timestamp, a string of one or of epoch \
             milliseconds, or epoch milliseconds), not {shown}"
        )
    };
    let Expr::Literal(value, _) = simplifier.simplify(expr)? else {
        return refuse();
    };
    if value.is_null() {
        return refuse();
    }
    let digits = match &value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    if let Some(millis) = digits {
        return Ok(millis);
    }
    let target = if value.data_type().is_integer() {
        DataType::Int64
    } else {
        DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    };
    match value.cast_to(&target) {
        Ok(ScalarValue::Int64(Some(millis)))
        | Ok(ScalarValue::TimestampMillisecond(Some(millis), _)) => Ok(millis),
        _ => refuse(),
    }
}
