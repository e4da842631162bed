//! A `CAST` the user wrote around a value being written is kept, the way Flink keeps
//! it: `INSERT INTO t VALUES (CAST(1.005 AS DECIMAL(10, 2)))` stores `1.01`, as asked.
//!
//! The write rule takes the casts DataFusion's planner puts around written values off
//! (they round silently), and a cast the user wrote to exactly the column's type plans
//! to the same expression, so the rule would take it off too and the writer would then
//! refuse `1.005` as not fitting. The session marks the user's casts in the syntax
//! tree instead: a value written as `CAST(x AS T)` becomes `CAST(CAST(x AS T) AS T)`,
//! whose outer cast the rule takes off like the planner's, leaving the user's.

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{self, Expr, SetExpr};

/// `statement` (or the statement it explains) with the casts written around its
/// written values marked (see the module documentation); any other statement as it is.
pub(super) fn keep_explicit_casts(mut statement: Statement) -> Statement {
    match super::statement::sql_statement_mut(&mut statement) {
        Some(ast::Statement::Insert(insert)) => {
            if let Some(source) = insert.source.as_mut()
                && let SetExpr::Values(values) = source.body.as_mut()
            {
                mark_values(values);
            }
        }
        Some(ast::Statement::Update(update)) => {
            update
                .assignments
                .iter_mut()
                .for_each(|a| mark(&mut a.value));
        }
        Some(ast::Statement::Merge(merge)) => {
            for clause in &mut merge.clauses {
                match &mut clause.action {
                    ast::MergeAction::Update(u) => {
                        u.assignments.iter_mut().for_each(|a| mark(&mut a.value));
                    }
                    ast::MergeAction::Insert(i) => {
                        if let ast::MergeInsertKind::Values(values) = &mut i.kind {
                            mark_values(values);
                        }
                    }
                    ast::MergeAction::Delete { .. } => {}
                }
            }
        }
        _ => {}
    }
    statement
}

/// Marks the casts of every value of a `VALUES` list.
fn mark_values(values: &mut ast::Values) {
    values
        .rows
        .iter_mut()
        .flat_map(|row| row.content.iter_mut())
        .for_each(mark);
}

/// Wraps a top-level `CAST(x AS T)` in another `CAST(... AS T)`.
fn mark(value: &mut Expr) {
    if let Expr::Cast {
        kind: ast::CastKind::Cast | ast::CastKind::DoubleColon,
        data_type,
        array: false,
        format: None,
        ..
    } = value
    {
        let data_type = data_type.clone();
        let inner = std::mem::replace(value, Expr::value(ast::Value::Null));
        *value = Expr::Cast {
            kind: ast::CastKind::Cast,
            expr: Box::new(inner),
            data_type,
            array: false,
            format: None,
        };
    }
}
