//! `MERGE INTO target USING source ON condition WHEN ...` on a primary-key table:
//! each source row takes the first clause that applies to it, and the statement's
//! upserts and deletes are written as one all-or-nothing Fluss KV batch.
//!
//! The rows are worked out by one query DataFusion plans: the source left-joined
//! with the target on the condition (a target key that is not NULL means matched),
//! the clause each row takes, and every target column's new value.

use std::collections::HashSet;

use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, Expr, MergeAction, MergeClauseKind, MergeInsertKind, Statement, TableFactor,
};

use super::FlussSession;
use super::dml::{count_batch, qualified};
use super::error::from_datafusion;
use super::parse::quote_ident;
use crate::error::{Error, Result};

/// Name of the query's column holding the clause each row takes (1-based; NULL: none).
const CLAUSE: &str = "__fluss_merge_clause";

/// What one `WHEN` clause does.
enum Action {
    /// `UPDATE SET`: new value expressions by column.
    Update(Vec<(String, String)>),
    Delete,
    /// `INSERT (columns) VALUES (...)`: value expressions by column.
    Insert(Vec<(String, String)>),
}

/// Runs a `MERGE INTO` statement; returns the rows it inserted, updated or deleted.
pub async fn merge(session: &FlussSession, sql: &str) -> Result<RecordBatch> {
    let Statement::Merge(merge) = super::parse::parse_one(sql)? else {
        return Err(Error::invalid_input("expected one MERGE statement"));
    };
    if merge.output.is_some() {
        return Err(Error::unsupported("MERGE ... OUTPUT is not supported"));
    }
    let TableFactor::Table { name, alias, .. } = &merge.table else {
        return Err(Error::unsupported("MERGE INTO needs a table name"));
    };
    let table = super::dml::primary_key_target(session, name, "MERGE INTO").await?;
    let path = table.path.clone();
    let columns = super::dml::column_names(&table);
    let keys = table.info.get_primary_keys().clone();
    // how the user's expressions name the target
    let target = match alias {
        Some(alias) => alias.name.to_string(),
        None => quote_ident(path.table()),
    };
    let column_of = |name: &datafusion::sql::sqlparser::ast::ObjectName| -> Result<String> {
        let column = name
            .0
            .last()
            .and_then(|p| p.as_ident().map(super::dml::normalized))
            .ok_or_else(|| Error::invalid_input(format!("'{name}' is not a column")))?;
        if !columns.contains(&column) {
            return Err(Error::invalid_input(format!(
                "table '{path}' has no column '{column}'"
            )));
        }
        Ok(column)
    };
    let matched = format!("{target}.{} IS NOT NULL", quote_ident(&keys[0]));
    let mut conditions = Vec::new();
    let mut actions = Vec::new();
    for clause in &merge.clauses {
        let when = match clause.clause_kind {
            MergeClauseKind::Matched => matched.clone(),
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => {
                format!("NOT ({matched})")
            }
            MergeClauseKind::NotMatchedBySource => {
                return Err(Error::unsupported(
                    "WHEN NOT MATCHED BY SOURCE is not supported (it would scan the whole \
                     target for rows no source row matches)",
                ));
            }
        };
        let when = match &clause.predicate {
            Some(predicate) => format!("{when} AND ({predicate})"),
            None => when,
        };
        let action = match &clause.action {
            MergeAction::Delete { .. } => Action::Delete,
            MergeAction::Update(update) => {
                if update.update_predicate.is_some() || update.delete_predicate.is_some() {
                    return Err(Error::unsupported(
                        "UPDATE ... WHERE / DELETE WHERE inside MERGE is not supported",
                    ));
                }
                let mut set = Vec::new();
                for assignment in &update.assignments {
                    let AssignmentTarget::ColumnName(name) = &assignment.target else {
                        return Err(Error::unsupported("SET (a, b) = ... is not supported"));
                    };
                    let column = column_of(name)?;
                    if keys.contains(&column) {
                        return Err(Error::invalid_input(format!(
                            "MERGE cannot change primary key column '{column}' of '{path}'"
                        )));
                    }
                    set.push((column, assignment.value.to_string()));
                }
                Action::Update(set)
            }
            MergeAction::Insert(insert) => {
                let MergeInsertKind::Values(values) = &insert.kind else {
                    return Err(Error::unsupported("INSERT ROW in MERGE is not supported"));
                };
                let [row] = values.rows.as_slice() else {
                    return Err(Error::invalid_input("MERGE's INSERT takes one VALUES row"));
                };
                let targets = if insert.columns.is_empty() {
                    columns.clone()
                } else {
                    insert
                        .columns
                        .iter()
                        .map(&column_of)
                        .collect::<Result<Vec<_>>>()?
                };
                if targets.len() != row.content.len() {
                    return Err(Error::invalid_input(format!(
                        "MERGE's INSERT has {} values for {} columns",
                        row.content.len(),
                        targets.len()
                    )));
                }
                let values = row.content.iter().map(Expr::to_string);
                Action::Insert(targets.into_iter().zip(values).collect())
            }
        };
        conditions.push(when);
        actions.push(action);
    }
    if actions.is_empty() {
        return Err(Error::invalid_input("MERGE needs at least one WHEN clause"));
    }
    // the clause each row takes, then every target column's new value under it
    let clause = format!(
        "CASE {} END",
        conditions
            .iter()
            .enumerate()
            .map(|(i, when)| format!("WHEN {when} THEN {}", i + 1))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut select = vec![format!("{clause} AS {CLAUSE}")];
    for column in &columns {
        let current = format!("{target}.{}", quote_ident(column));
        let arms: Vec<String> = actions
            .iter()
            .enumerate()
            .map(|(i, action)| {
                let value = match action {
                    Action::Delete => current.clone(),
                    Action::Update(set) => set
                        .iter()
                        .find(|(c, _)| c == column)
                        .map_or(current.clone(), |(_, v)| v.clone()),
                    Action::Insert(values) => values
                        .iter()
                        .find(|(c, _)| c == column)
                        .map_or("NULL".to_string(), |(_, v)| v.clone()),
                };
                format!("WHEN {} THEN {value}", i + 1)
            })
            .collect();
        select.push(format!(
            "CASE {clause} {} END AS {}",
            arms.join(" "),
            quote_ident(column)
        ));
    }
    let query = format!(
        "SELECT {} FROM {} LEFT JOIN {} AS {target} ON {}",
        select.join(", "),
        merge.source,
        qualified(&path),
        merge.on
    );
    let batches = session
        .context()
        .sql(&query)
        .await
        .map_err(from_datafusion)?
        .collect()
        .await
        .map_err(from_datafusion)?;
    let Some(first) = batches.first() else {
        return count_batch(0);
    };
    let all = concat_batches(&first.schema(), &batches)?;
    let chosen = all.column(0).as_primitive::<Int64Type>();
    let taken = BooleanArray::from_iter((0..all.num_rows()).map(|i| Some(chosen.is_valid(i))));
    let rows = filter_record_batch(&all, &taken)?;
    if rows.num_rows() == 0 {
        return count_batch(0);
    }
    let clauses = rows.column(0).as_primitive::<Int64Type>().clone();
    let deletes = BooleanArray::from_iter(clauses.iter().map(|c| {
        let index = c.and_then(|c| usize::try_from(c - 1).ok());
        Some(matches!(
            index.and_then(|i| actions.get(i)),
            Some(Action::Delete)
        ))
    }));
    let rows = rows.project(&(1..rows.num_columns()).collect::<Vec<_>>())?;
    no_key_twice(&rows, &keys, &path)?;
    let written = session
        .writer("MERGE")?
        .write_changes(&path, &rows, &deletes)
        .await?;
    count_batch(written.rows)
}

/// A target row may be changed once per statement (SQL's rule): several source rows
/// matching one key, or inserting one key twice, is an error naming the key.
fn no_key_twice(
    rows: &RecordBatch,
    keys: &[String],
    path: &fluss::metadata::TablePath,
) -> Result<()> {
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
