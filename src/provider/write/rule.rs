//! [`FlussWriteRule`]: rewrites DataFusion's plan of a write to a Fluss table into
//! an `INSERT` of the rows to write into a [`FlussWriteTarget`].

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, TableReference};
use datafusion::datasource::{MemTable, provider_as_source, source_as_provider};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    DmlStatement, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Projection, WriteOp,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::scalar::ScalarValue;

use super::is_unlisted;
use super::sink::{Change, FlussWriteTarget};
use crate::error::{Error, Result};
use crate::provider::changelog::ChangelogTableProvider;
use crate::provider::{FlussTableProvider, ReadMode};
use crate::source::FlussTable;
use crate::union::filters::{combinations, key_literals};

/// The analyzer rule that plans writes to Fluss tables (see the `provider::write` module):
/// `INSERT` appends to log tables and upserts into primary-key tables (an INSERT
/// that lists some columns is a Fluss partial update), `UPDATE` is a partial update
/// of its SET columns, `DELETE` deletes by key, and `MERGE INTO` upserts and deletes.
/// Virtual tables (`t$lake`, `t$changelog`) are refused as read-only.
#[derive(Debug, Default, Clone, Copy)]
pub struct FlussWriteRule;

impl AnalyzerRule for FlussWriteRule {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_down(|node| match node {
            LogicalPlan::Dml(dml) => Ok(rewrite(dml, config)?),
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "fluss_writes"
    }
}

/// One write statement, rewritten when it writes to a Fluss table.
fn rewrite(dml: DmlStatement, config: &ConfigOptions) -> Result<Transformed<LogicalPlan>> {
    let Ok(provider) = source_as_provider(&dml.target) else {
        return Ok(Transformed::no(LogicalPlan::Dml(dml)));
    };
    if let Some((base, kind)) = virtual_table(provider.as_ref(), &dml.table_name) {
        return Err(super::read_only_virtual_table(
            &dml.table_name.to_string(),
            base,
            kind,
        ));
    }
    let Some(fluss) = provider.downcast_ref::<FlussTableProvider>() else {
        return Ok(Transformed::no(LogicalPlan::Dml(dml)));
    };
    let table = fluss.table();
    let (input, change, statement) = match &dml.op {
        WriteOp::Insert(InsertOp::Append) => {
            let (input, change) = insert(&dml.input, table)?;
            (input, change, "INSERT")
        }
        WriteOp::Insert(_) => return Err(super::overwrite_refused()),
        WriteOp::Delete => (delete(&dml.input, table)?, Change::Delete, "DELETE"),
        WriteOp::Update => {
            let (input, change) = update(&dml, table)?;
            (input, change, "UPDATE")
        }
        WriteOp::MergeInto(op) => {
            let (input, change) = super::merge::plan(&dml, op, table, config)?;
            (input, change, "MERGE")
        }
        _ => return Ok(Transformed::no(LogicalPlan::Dml(dml))),
    };
    let schema = Arc::new(input.schema().as_arrow().clone());
    let target = FlussWriteTarget::of(fluss, change, schema, statement);
    Ok(Transformed::yes(LogicalPlan::Dml(DmlStatement::new(
        dml.table_name.clone(),
        provider_as_source(Arc::new(target)),
        WriteOp::Insert(InsertOp::Append),
        Arc::new(input),
    ))))
}

/// `(base, kind)` when `name` is one of the read-only virtual tables of a Fluss
/// table (`t$lake`, `t$log`, `t$lake$snapshots`, `t$changelog`).
fn virtual_table<'a>(
    provider: &dyn TableProvider,
    name: &'a TableReference,
) -> Option<(&'a str, &'a str)> {
    let (base, kind) = name.table().split_once('$')?;
    let ours = provider
        .downcast_ref::<FlussTableProvider>()
        .is_some_and(|p| p.mode() != ReadMode::Union)
        || provider.is::<ChangelogTableProvider>()
        || (provider.is::<MemTable>() && kind.starts_with("lake$"));
    ours.then_some((base, kind))
}

/// A statement that changes rows by key needs a primary-key table.
pub(super) fn primary_keyed(table: &FlussTable, statement: &str) -> Result<()> {
    if table.info.has_primary_key() {
        return Ok(());
    }
    Err(Error::invalid_input(format!(
        "{statement} needs a primary-key table; '{}' is a log table (append only)",
        table.path
    )))
}

/// The names of `table`'s columns, in order.
pub(super) fn column_names(table: &FlussTable) -> Vec<String> {
    table
        .info
        .get_schema()
        .column_names()
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// `INSERT`: the planner's projection over the values, with its casts taken off
/// (the writer converts each value exactly, or refuses it) and, on a primary-key
/// table, the columns the statement did not list left out (a partial update).
fn insert(input: &LogicalPlan, table: &FlussTable) -> Result<(LogicalPlan, Change)> {
    let columns = column_names(table);
    let full = Change::whole_rows(table);
    let projection = match input {
        LogicalPlan::Projection(p) if p.expr.len() == columns.len() => p,
        // a DataFrame written with `write_table`: its columns, by position
        _ => return Ok((by_position(input, table, &columns)?, full)),
    };
    let mut exprs = Vec::with_capacity(columns.len());
    for (expr, column) in projection.expr.iter().zip(&columns) {
        let value = expr.clone().unalias();
        if is_unlisted(&value) {
            continue;
        }
        let value = match value {
            Expr::Cast(cast) if matches!(*cast.expr, Expr::Column(_)) => *cast.expr,
            other => other,
        };
        exprs.push(value.alias(column));
    }
    let change = if exprs.len() < columns.len() {
        Change::PartialUpdate
    } else {
        full
    };
    // the planner plans VALUES against the listed columns: one VALUES column per
    // projected column reference (a log table's unlisted columns are NULL literals)
    let listed = exprs
        .iter()
        .filter(|e| match e {
            Expr::Alias(alias) => matches!(*alias.expr, Expr::Column(_)),
            other => matches!(other, Expr::Column(_)),
        })
        .count();
    let input = uncast_values(projection.input.as_ref().clone(), listed)?;
    let plan = Projection::try_new(exprs, Arc::new(input))?;
    Ok((LogicalPlan::Projection(plan), change))
}

/// The INSERT's `VALUES` lists without the casts to the column types DataFusion's
/// planner wraps each value in (it plans them against the table's schema), so the
/// writer sees `1.005` and `2.7` as written and converts them exactly or refuses
/// them (text too: `'2024-02-30'` into a DATE is an error naming the column). The
/// planner's typed NULLs become plain NULLs again, and a column whose values differ
/// in type is written as text ([`as_text_where_mixed`]). A `CAST(x AS type)` written
/// to exactly the column's type looks like the planner's, and is checked as exactly.
/// Should the values' types still not unify, the list stays as planned.
fn uncast_values(input: LogicalPlan, width: usize) -> Result<LogicalPlan> {
    let plan = input.transform_up(|node| match node {
        LogicalPlan::Values(values) if values.schema.fields().len() == width => {
            let mut rows: Vec<Vec<Expr>> = values
                .values
                .iter()
                .map(|row| row.iter().cloned().map(uncast).collect())
                .collect();
            as_text_where_mixed(&mut rows)?;
            match LogicalPlanBuilder::values(rows).and_then(|b| b.build()) {
                Ok(uncast) => Ok(Transformed::yes(uncast)),
                Err(_) => Ok(Transformed::no(LogicalPlan::Values(values))),
            }
        }
        other => Ok(Transformed::yes(other.recompute_schema()?)),
    })?;
    Ok(plan.data)
}

/// A column whose uncast values differ in type (`'2.5'` and `3`) would take a type
/// DataFusion picks for both, which may not hold either exactly: its values are
/// written as their text, which the writer converts exactly to the column's type.
fn as_text_where_mixed(rows: &mut [Vec<Expr>]) -> Result<()> {
    let empty = datafusion::common::DFSchema::empty();
    let width = rows.first().map_or(0, Vec::len);
    for column in 0..width {
        let mut types = Vec::new();
        for row in rows.iter() {
            let data_type = row[column].get_type(&empty)?;
            if !data_type.is_null() && !types.contains(&data_type) {
                types.push(data_type);
            }
        }
        if types.len() > 1 {
            for row in rows.iter_mut() {
                let value = std::mem::take(&mut row[column]);
                row[column] = match value {
                    Expr::Literal(null, None) if null.is_null() => Expr::Literal(null, None),
                    other => {
                        other.cast_to(&datafusion::arrow::datatypes::DataType::Utf8, &empty)?
                    }
                };
            }
        }
    }
    Ok(())
}

/// One value of a `VALUES` row without the planner's cast (see [`uncast_values`]).
fn uncast(value: Expr) -> Expr {
    match value {
        Expr::Literal(null, None) if null.is_null() => Expr::Literal(ScalarValue::Null, None),
        Expr::Cast(cast) => *cast.expr,
        other => other,
    }
}

/// Rows given as a plan of their own (`DataFrame::write_table`): column `i` is
/// written to the table's column `i`.
fn by_position(input: &LogicalPlan, table: &FlussTable, columns: &[String]) -> Result<LogicalPlan> {
    let schema = input.schema();
    if schema.fields().len() != columns.len() {
        return Err(Error::invalid_input(format!(
            "INSERT into '{}' has {} value column(s) for its {} column(s) ({})",
            table.path,
            schema.fields().len(),
            columns.len(),
            columns.join(", ")
        )));
    }
    let exprs = columns
        .iter()
        .enumerate()
        .map(|(i, name)| Expr::Column(Column::from(schema.qualified_field(i))).alias(name))
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(input.clone()),
    )?))
}

/// `DELETE`: the keys of the rows the statement's `WHERE` selects (planned whole, so
/// a subquery is a semi join, never a dropped filter). A `WHERE` that names every key
/// column by literals deletes those keys without reading the table, as Fluss's Flink
/// connector pushes such a DELETE down.
fn delete(input: &LogicalPlan, table: &FlussTable) -> Result<LogicalPlan> {
    primary_keyed(table, "DELETE")?;
    if let Some(keys) = literal_keys(input, table)? {
        return Ok(keys);
    }
    let schema = input.schema();
    let exprs = table
        .info
        .get_primary_keys()
        .iter()
        .map(|k| {
            let (qualifier, field) = schema.qualified_field_with_unqualified_name(k)?;
            Ok(Expr::Column(Column::from((qualifier, field))))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(input.clone()),
    )?))
}

/// The keys a DELETE's `WHERE` fixes, as rows of values, when it is a conjunction of
/// `k = v` / `k IN (...)` on the table's scan covering every primary-key column and
/// nothing else.
fn literal_keys(input: &LogicalPlan, table: &FlussTable) -> Result<Option<LogicalPlan>> {
    let LogicalPlan::Filter(filter) = input else {
        return Ok(None);
    };
    if !matches!(filter.input.as_ref(), LogicalPlan::TableScan(_)) {
        return Ok(None);
    }
    let schema = table.schemas.latest()?.arrow.clone();
    let key_names = table.info.get_primary_keys();
    let mut values: Vec<Option<Vec<ScalarValue>>> = vec![None; key_names.len()];
    for conjunct in split_conjunction(&filter.predicate) {
        let fixed = key_literals(conjunct);
        let mut only_keys = !fixed.is_empty();
        conjunct.apply(|e| {
            if let Expr::Column(c) = e
                && !fixed.iter().any(|(k, _)| *k == c.name)
            {
                only_keys = false;
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        // a conjunct that is not only key literals means rows must be read
        if !only_keys {
            return Ok(None);
        }
        for (column, literals) in fixed {
            let Some(i) = key_names.iter().position(|k| *k == column) else {
                return Ok(None);
            };
            values[i] = Some(literals);
        }
    }
    let Some(values) = values.into_iter().collect::<Option<Vec<_>>>() else {
        return Ok(None);
    };
    let rows = combinations(&values);
    let mut columns = Vec::with_capacity(key_names.len());
    for (i, name) in key_names.iter().enumerate() {
        let field = schema.field_with_name(name)?;
        let array = ScalarValue::iter_to_array(rows.iter().map(|r| r[i].clone()))?;
        // a literal no key can equal (`k = 1.5` on an INT key) matches nothing: read
        let Ok(array) = crate::cast::exactly_as(&array, field) else {
            return Ok(None);
        };
        columns.push(array);
    }
    let literal_rows = (0..rows.len())
        .map(|row| {
            columns
                .iter()
                .map(|c| Ok(Expr::Literal(ScalarValue::try_from_array(c, row)?, None)))
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let values = LogicalPlanBuilder::values(literal_rows)?.build()?;
    let named = values
        .schema()
        .columns()
        .into_iter()
        .zip(key_names)
        .map(|(c, k)| Expr::Column(c).alias(k))
        .collect();
    Ok(Some(LogicalPlan::Projection(Projection::try_new(
        named,
        Arc::new(values),
    )?)))
}

/// `UPDATE`: the key and the SET columns of the rows selected (a Fluss partial
/// update: the other columns keep their values), each SET value uncast.
///
/// A SET value is what the planner's projection holds for its column, with the cast
/// it adds to the column's type taken off; a `CAST(x AS type)` to exactly the
/// column's type, written by the user, looks the same and is checked as exactly.
fn update(dml: &DmlStatement, table: &FlussTable) -> Result<(LogicalPlan, Change)> {
    primary_keyed(table, "UPDATE")?;
    let path = &table.path;
    let LogicalPlan::Projection(projection) = dml.input.as_ref() else {
        return Err(Error::internal(format!(
            "the UPDATE of '{path}' was planned without its projection"
        )));
    };
    let targets = target_qualifiers(&projection.input, &dml.table_name)?;
    let keys = table.info.get_primary_keys();
    let mut exprs = Vec::new();
    let mut set = 0;
    for (expr, field) in projection.expr.iter().zip(projection.schema.fields()) {
        let name = field.name();
        let value = expr.clone().unalias();
        let unchanged = matches!(&value, Expr::Column(c) if c.name == *name
            && c.relation.as_ref().is_none_or(|r| targets.iter().any(|t| r.resolved_eq(t))));
        if unchanged {
            if keys.contains(name) {
                exprs.push(expr.clone());
            }
            continue;
        }
        if keys.contains(name) {
            return Err(Error::invalid_input(format!(
                "UPDATE cannot change primary key column '{name}' of '{path}' (DELETE the \
                 row and INSERT it under the new key)"
            )));
        }
        let value = uncast_to(value, field.data_type());
        exprs.push(value.alias(name));
        set += 1;
    }
    if set == 0 {
        // `SET v = v`: the rows are written again as they are
        return Ok((dml.input.as_ref().clone(), Change::Upsert));
    }
    let plan = Projection::try_new(exprs, projection.input.clone())?;
    Ok((LogicalPlan::Projection(plan), Change::PartialUpdate))
}

/// `value` without a top-level cast to `data_type`, the column's type: the cast
/// DataFusion's UPDATE planner and its type coercion of MERGE's values add, which
/// rounds. The writer converts the value exactly, or refuses it.
pub(super) fn uncast_to(value: Expr, data_type: &datafusion::arrow::datatypes::DataType) -> Expr {
    match value {
        Expr::Cast(cast) if cast.field.data_type() == data_type => *cast.expr,
        other => other,
    }
}

/// The names the target table's columns go by in a statement's plan: the table's
/// own and the aliases given to its scan.
fn target_qualifiers(plan: &LogicalPlan, target: &TableReference) -> Result<Vec<TableReference>> {
    let mut names = vec![target.clone()];
    plan.apply(|node| {
        if let LogicalPlan::SubqueryAlias(alias) = node
            && let LogicalPlan::TableScan(scan) = alias.input.as_ref()
            && scan.table_name.resolved_eq(target)
        {
            names.push(alias.alias.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(names)
}
