//! `MERGE INTO target USING source ON condition WHEN ...` on a primary-key table:
//! each source row takes the first clause that applies to it, and the statement's
//! upserts and deletes are written as one all-or-nothing Fluss KV batch.
//!
//! The rows are one query: the source left-joined with the target on the condition
//! (a target key that is not NULL means matched), the clause each row takes, and
//! every target column's new value under it.

use std::collections::HashSet;

use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::{Int64Type, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::Column;
use datafusion::common::config::ConfigOptions;
use datafusion::logical_expr::dml::{MergeIntoAction, MergeIntoClauseKind, MergeIntoOp};
use datafusion::logical_expr::{
    DmlStatement, Expr, JoinType, LogicalPlan, LogicalPlanBuilder, case, lit, when,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::optimizer::analyzer::type_coercion::TypeCoercion;
use fluss::metadata::TablePath;

use super::sink::Change;
use crate::error::{Error, Result};
use crate::source::FlussTable;

/// Name of the column holding the clause each row takes (1-based; NULL: none).
const CLAUSE: &str = "__fluss_merge_clause";

/// The rows a MERGE writes ([`Change::Merge`]): the clause column, then the full row.
pub(super) fn plan(
    dml: &DmlStatement,
    op: &MergeIntoOp,
    table: &FlussTable,
    config: &ConfigOptions,
) -> Result<(LogicalPlan, Change)> {
    super::rule::primary_keyed(table, "MERGE INTO")?;
    let path = &table.path;
    let keys = table.info.get_primary_keys();
    let target = &dml.table_name;
    let column = |name: &str| Expr::Column(Column::new(Some(target.clone()), name));
    let matched = column(&keys[0]).is_not_null();
    let mut chosen: Option<datafusion::logical_expr::conditional_expressions::CaseBuilder> = None;
    let mut deleting = Vec::with_capacity(op.clauses.len());
    for (i, clause) in op.clauses.iter().enumerate() {
        let applies = match clause.kind {
            MergeIntoClauseKind::Matched => matched.clone(),
            kind if kind.is_not_matched_by_target() => !matched.clone(),
            _ => {
                return Err(Error::unsupported(
                    "WHEN NOT MATCHED BY SOURCE is not supported (it would scan the whole \
                     target for rows no source row matches)",
                ));
            }
        };
        let applies = match &clause.predicate {
            Some(predicate) => applies.and(predicate.clone()),
            None => applies,
        };
        let number = lit(i as i64 + 1);
        chosen = Some(match chosen {
            None => when(applies, number),
            Some(mut builder) => {
                builder.when(applies, number);
                builder
            }
        });
        if let MergeIntoAction::Update(set) = &clause.action
            && let Some((key, _)) = set.iter().find(|(c, _)| keys.contains(c))
        {
            return Err(Error::invalid_input(format!(
                "MERGE cannot change primary key column '{key}' of '{path}'"
            )));
        }
        deleting.push(matches!(clause.action, MergeIntoAction::Delete));
    }
    let Some(chosen) = chosen else {
        return Err(Error::invalid_input("MERGE needs at least one WHEN clause"));
    };
    let clause = chosen.end()?;
    let columns = super::rule::column_names(table);
    let target_schema = dml.target.schema();
    let mut select = vec![clause.clone().alias(CLAUSE)];
    for name in &columns {
        let current = column(name);
        // DataFusion's type coercion casts a MERGE's values to the column's type
        let column_type = target_schema.field_with_name(name)?.data_type().clone();
        let uncast = |value: &Expr| super::rule::uncast_to(value.clone(), &column_type);
        let mut value = case(clause.clone());
        for (i, merge_clause) in op.clauses.iter().enumerate() {
            let new = match &merge_clause.action {
                MergeIntoAction::Delete => current.clone(),
                MergeIntoAction::Update(set) => set
                    .iter()
                    .find(|(c, _)| c == name)
                    .map_or(current.clone(), |(_, v)| uncast(v)),
                MergeIntoAction::Insert {
                    columns: listed,
                    values,
                } => {
                    let at = if listed.is_empty() {
                        columns.iter().position(|c| c == name)
                    } else {
                        listed.iter().position(|c| c == name)
                    };
                    at.and_then(|at| values.get(at).map(uncast))
                        .unwrap_or(Expr::Literal(datafusion::scalar::ScalarValue::Null, None))
                }
            };
            value.when(lit(i as i64 + 1), new);
        }
        select.push(value.end()?.alias(name));
    }
    let target_scan =
        LogicalPlanBuilder::scan(target.clone(), dml.target.clone(), None)?.build()?;
    let plan = LogicalPlanBuilder::from(dml.input.as_ref().clone())
        .join_on(target_scan, JoinType::Left, [op.on.clone()])?
        .project(select)?
        .build()?;
    let plan = TypeCoercion::new().analyze(plan, config)?;
    Ok((plan, Change::Merge { deleting }))
}

/// The full rows a MERGE writes and, per row, whether it deletes: the rows of
/// `batches` that took a clause, without the clause column.
pub(super) fn changes(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    deleting: &[bool],
    keys: &[String],
    path: &TablePath,
) -> Result<(RecordBatch, BooleanArray)> {
    let all = concat_batches(schema, batches)?;
    let chosen = all.column(0).as_primitive::<Int64Type>();
    let taken = BooleanArray::from_iter((0..all.num_rows()).map(|i| Some(chosen.is_valid(i))));
    let rows = filter_record_batch(&all, &taken)?;
    let clauses = rows.column(0).as_primitive::<Int64Type>().clone();
    let deletes = BooleanArray::from_iter(clauses.iter().map(|c| {
        let index = c.and_then(|c| usize::try_from(c - 1).ok());
        Some(index.and_then(|i| deleting.get(i).copied()) == Some(true))
    }));
    let rows = rows.project(&(1..rows.num_columns()).collect::<Vec<_>>())?;
    no_key_twice(&rows, keys, path)?;
    Ok((rows, deletes))
}

/// A target row may be changed once per statement (SQL's rule): several source rows
/// matching one key, or inserting one key twice, is an error naming the key.
fn no_key_twice(rows: &RecordBatch, keys: &[String], path: &TablePath) -> Result<()> {
    let schema = rows.schema();
    let key_columns = keys
        .iter()
        .map(|k| Ok(rows.column(schema.index_of(k)?).clone()))
        .collect::<Result<Vec<_>>>()?;
    let converter = RowConverter::new(
        key_columns
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let converted = converter.convert_columns(&key_columns)?;
    let mut seen = HashSet::new();
    for (i, key) in converted.iter().enumerate() {
        if !seen.insert(key) {
            let shown: Vec<String> = key_columns
                .iter()
                .map(|c| {
                    datafusion::arrow::util::display::array_value_to_string(c, i)
                        .unwrap_or_default()
                })
                .collect();
            return Err(Error::invalid_input(format!(
                "MERGE into '{path}' would change the row with key ({}) more than once: \
                 several source rows match it",
                shown.join(", ")
            )));
        }
    }
    Ok(())
}
