//! `UPDATE t SET ... FROM s WHERE ...` (PostgreSQL's form, and Flink users' habit
//! from other databases), which DataFusion 55's SQL planner refuses ("UPDATE ... FROM
//! is not supported", apache/datafusion #19950). It is the `MERGE INTO t USING s ON
//! <where> WHEN MATCHED THEN UPDATE SET ...` it means, which DataFusion plans and
//! the write rule turns into a Fluss partial update: the statement is rewritten as
//! that MERGE, syntax tree to syntax tree. Where PostgreSQL would update a row matched
//! by several source rows with any one of them, the MERGE refuses the statement
//! (a key changed twice), never picking one silently.

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    self, Expr, Merge, MergeAction, MergeClause, MergeClauseKind, MergeUpdateExpr, TableFactor,
    TableWithJoins, Update, UpdateTableFromKind, Value,
};
use datafusion::sql::sqlparser::tokenizer::Span;

/// `statement` (or the statement it explains) with an `UPDATE ... FROM` rewritten as
/// its MERGE; any other statement as it is.
pub(super) fn as_merge(mut statement: Statement) -> Statement {
    if let Some(sql) = super::statement::sql_statement_mut(&mut statement)
        && let ast::Statement::Update(update) = sql
        && mergeable(update)
        && let Some(source) = source_of(update)
    {
        *sql = ast::Statement::Merge(merge_of(update.clone(), source));
    }
    statement
}

/// An UPDATE with one FROM item and nothing a MERGE could not say (DataFusion refuses
/// those clauses in its own words either way).
fn mergeable(update: &Update) -> bool {
    let one_from = match &update.from {
        Some(UpdateTableFromKind::BeforeSet(f)) | Some(UpdateTableFromKind::AfterSet(f)) => {
            f.len() == 1
        }
        None => false,
    };
    one_from
        && update.table.joins.is_empty()
        && update.returning.is_none()
        && update.or.is_none()
        && update.limit.is_none()
        && update.output.is_none()
        && update.order_by.is_empty()
}

/// The UPDATE's FROM item, taken out of it, as a MERGE's source.
fn source_of(update: &mut Update) -> Option<TableFactor> {
    let item = match update.from.take()? {
        UpdateTableFromKind::BeforeSet(mut f) | UpdateTableFromKind::AfterSet(mut f) => f.pop()?,
    };
    Some(match item {
        TableWithJoins { relation, joins } if joins.is_empty() => relation,
        table_with_joins => TableFactor::NestedJoin {
            table_with_joins: Box::new(table_with_joins),
            alias: None,
        },
    })
}

/// The MERGE an UPDATE with `source` as its FROM item means.
fn merge_of(update: Update, source: TableFactor) -> Merge {
    let Update {
        update_token,
        optimizer_hints,
        table,
        assignments,
        selection,
        ..
    } = update;
    let on = selection.unwrap_or(Expr::Value(Value::Boolean(true).with_span(Span::empty())));
    Merge {
        merge_token: update_token,
        optimizer_hints,
        into: true,
        table: table.relation,
        source,
        on: Box::new(on),
        clauses: vec![MergeClause {
            when_token: AttachedToken::empty(),
            clause_kind: MergeClauseKind::Matched,
            predicate: None,
            action: MergeAction::Update(MergeUpdateExpr {
                update_token: AttachedToken::empty(),
                assignments,
                update_predicate: None,
                delete_predicate: None,
            }),
        }],
        output: None,
    }
}
