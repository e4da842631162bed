//! DML on the LocalStore: `INSERT` (append to log tables, upsert into primary-key
//! tables), `UPDATE` and `DELETE` (primary-key tables) and `CALL tier(...)`.
//!
//! The rows to write are planned by DataFusion, whose scans pin their cut at
//! planning, so `INSERT INTO t SELECT ... FROM t` reads the table as it was before
//! the write; an INSERT streams its rows into one all-or-nothing statement.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::logical_expr::Expr;
use fluss::metadata::TablePath;

use super::FlussSession;
use super::error::from_datafusion;
use super::parse::quote_ident;
use crate::error::{Error, Result};
use crate::source::{FlussTable, WriteKind};
use crate::union::filters::{combinations, key_literals};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::scalar::ScalarValue;
use futures::{StreamExt, TryStreamExt};

/// The `count` row DataFusion returns for DML.
pub(super) fn count_batch(count: usize) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]));
    Ok(RecordBatch::try_new(
        schema,
        vec![Arc::new(UInt64Array::from(vec![count as u64]))],
    )?)
}

/// `fluss."db"."t"` for DataFusion.
pub fn qualified(path: &TablePath) -> String {
    format!(
        "{}.{}.{}",
        super::CATALOG,
        quote_ident(path.database()),
        quote_ident(path.table())
    )
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

/// The primary-key table a DML statement's `name` (as parsed) writes to, or an error
/// naming the statement (`what`) and why.
pub(super) async fn primary_key_target(
    session: &FlussSession,
    name: &datafusion::sql::sqlparser::ast::ObjectName,
    what: &str,
) -> Result<FlussTable> {
    let parts = name
        .0
        .iter()
        .map(|part| part.as_ident().map(normalized))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| Error::invalid_input(format!("'{name}' is not a table name")))?;
    let path = session.write_target(&parts)?;
    let table = session.source().get_table(&path).await?;
    if !table.info.has_primary_key() {
        return Err(Error::invalid_input(format!(
            "{what} needs a primary-key table; '{path}' is a log table (append only)"
        )));
    }
    Ok(table)
}

/// `INSERT INTO path [(columns)] source`: returns the `count` row.
pub async fn insert(
    session: &FlussSession,
    path: &TablePath,
    columns: Option<Vec<String>>,
    source: &str,
) -> Result<RecordBatch> {
    let table = session.source().get_table(path).await?;
    insert_into(session, &table, columns, source).await
}

/// [`insert`] into `table`, already loaded (UPDATE loads it to check its keys).
async fn insert_into(
    session: &FlussSession,
    table: &FlussTable,
    columns: Option<Vec<String>>,
    source: &str,
) -> Result<RecordBatch> {
    let path = &table.path;
    let table_columns = column_names(table);
    let column_count = table_columns.len();
    let targets = match columns {
        Some(cols) => {
            for (i, c) in cols.iter().enumerate() {
                if !table_columns.contains(c) {
                    return Err(Error::invalid_input(format!(
                        "table '{path}' has no column '{c}'"
                    )));
                }
                if cols[..i].contains(c) {
                    return Err(Error::invalid_input(format!(
                        "column '{c}' is listed twice in the INSERT into '{path}'"
                    )));
                }
            }
            cols
        }
        None => table_columns,
    };
    let target_schema = table.schemas.latest()?.arrow.clone();
    let df = session
        .context()
        .sql(source)
        .await
        .map_err(from_datafusion)?;
    let sources = df.schema().columns();
    if sources.len() != targets.len() {
        return Err(Error::invalid_input(format!(
            "INSERT into '{path}' has {} value column(s) for {} target column(s) ({})",
            sources.len(),
            targets.len(),
            targets.join(", ")
        )));
    }
    // Positional: the i-th value column is written to the i-th target column. Not
    // cast here: DataFusion's cast rounds (`1.005` into DECIMAL(15, 2)) and truncates
    // (`2.7` into INT); the writer converts each value exactly or refuses it.
    let mut exprs = Vec::with_capacity(targets.len());
    for (column, name) in sources.into_iter().zip(&targets) {
        target_schema.field_with_name(name)?;
        exprs.push(Expr::Column(column).alias(name));
    }
    let df = df.select(exprs).map_err(from_datafusion)?;
    let kind = match (table.info.has_primary_key(), targets.len() < column_count) {
        // Fluss partial update: unlisted columns keep their values (never NULLed).
        (true, true) => WriteKind::PartialUpdate,
        (true, false) => WriteKind::Upsert,
        (false, _) => WriteKind::Append,
    };
    // Streamed into one statement: memory stays bounded by a batch, and the rows
    // read come from the cut pinned when the plan was made, before anything is
    // written (so `INSERT INTO t SELECT ... FROM t` reads t as it was).
    let rows = df.execute_stream().await.map_err(from_datafusion)?;
    let pool = session.context().runtime_env().memory_pool.clone();
    let written = session
        .writer("INSERT")?
        .write(
            path,
            kind,
            rows.map_err(from_datafusion).boxed(),
            Some(&pool),
        )
        .await?;
    count_batch(written.rows)
}

/// `UPDATE t [AS a] SET c = expr, ... [WHERE predicate]` on a primary-key table: a
/// Fluss partial update of the SET columns of the rows the predicate selects (the
/// other columns keep their values), returning the rows updated.
///
/// The rows are selected by a query DataFusion plans as any other, so a subquery in
/// the predicate is planned, never dropped (DataFusion 55's own UPDATE passes a
/// provider only the filters it finds on the target table: apache/datafusion #24654).
pub async fn update(session: &FlussSession, sql: &str) -> Result<RecordBatch> {
    use datafusion::sql::sqlparser::ast;
    let ast::Statement::Update(update) = super::parse::parse_one(sql)? else {
        return Err(Error::invalid_input("expected one UPDATE statement"));
    };
    if update.from.is_some() || !update.table.joins.is_empty() {
        return Err(Error::unsupported(
            "UPDATE ... FROM is not supported: write the new values with INSERT INTO t \
             (key columns, columns) SELECT ..., which updates those columns only",
        ));
    }
    if update.returning.is_some() || update.limit.is_some() || !update.order_by.is_empty() {
        return Err(Error::unsupported(
            "UPDATE takes SET and WHERE only (no RETURNING, ORDER BY or LIMIT)",
        ));
    }
    let ast::TableFactor::Table { name, alias, .. } = &update.table.relation else {
        return Err(Error::unsupported("UPDATE needs a table name"));
    };
    let table = primary_key_target(session, name, "UPDATE").await?;
    let path = table.path.clone();
    let keys = table.info.get_primary_keys();
    let mut columns: Vec<String> = keys.clone();
    let mut values: Vec<String> = keys.iter().map(|k| quote_ident(k)).collect();
    for assignment in &update.assignments {
        let ast::AssignmentTarget::ColumnName(target) = &assignment.target else {
            return Err(Error::unsupported(
                "UPDATE SET (a, b) = ... is not supported: set each column",
            ));
        };
        let column = target
            .0
            .last()
            .and_then(|part| part.as_ident().map(normalized))
            .ok_or_else(|| Error::invalid_input(format!("'{target}' is not a column")))?;
        if keys.contains(&column) {
            return Err(Error::invalid_input(format!(
                "UPDATE cannot change primary key column '{column}' of '{path}' (DELETE the \
                 row and INSERT it under the new key)"
            )));
        }
        if columns.contains(&column) {
            return Err(Error::invalid_input(format!(
                "column '{column}' is set twice in the UPDATE of '{path}'"
            )));
        }
        columns.push(column);
        values.push(assignment.value.to_string());
    }
    let mut select = format!("SELECT {} FROM {}", values.join(", "), qualified(&path));
    if let Some(alias) = alias {
        select.push_str(&format!(" AS {}", alias.name));
    }
    if let Some(selection) = &update.selection {
        select.push_str(&format!(" WHERE {selection}"));
    }
    insert_into(session, &table, Some(columns), &select).await
}

/// An identifier as DataFusion resolves it: unquoted ones in lower case.
pub(super) fn normalized(ident: &datafusion::sql::sqlparser::ast::Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// `DELETE FROM path [WHERE predicate]` on a primary-key table: the matching keys are
/// selected through DataFusion (union read), then deleted in the store.
pub async fn delete(
    session: &FlussSession,
    path: &TablePath,
    predicate: Option<&str>,
) -> Result<RecordBatch> {
    let table = session.source().get_table(path).await?;
    if !table.info.has_primary_key() {
        return Err(Error::invalid_input(format!(
            "DELETE needs a primary-key table; '{path}' is a log table (append only)"
        )));
    }
    let keys = table
        .info
        .get_primary_keys()
        .iter()
        .map(|k| quote_ident(k))
        .collect::<Vec<_>>()
        .join(", ");
    let mut sql = format!("SELECT {keys} FROM {}", qualified(path));
    if let Some(p) = predicate {
        sql.push_str(" WHERE ");
        sql.push_str(p);
    }
    let df = session.context().sql(&sql).await.map_err(from_datafusion)?;
    // `WHERE k = v [AND ...]` naming every key column deletes those keys without
    // reading the table, as Fluss's Flink connector pushes such a DELETE down (a key
    // that is not there still takes an empty changelog batch). Anything else selects
    // the keys to delete through a union read first.
    let keys = match literal_keys(&df, &table)? {
        Some(keys) => futures::stream::iter([Ok(keys)]).boxed(),
        None => df
            .execute_stream()
            .await
            .map_err(from_datafusion)?
            .map_err(from_datafusion)
            .boxed(),
    };
    let pool = session.context().runtime_env().memory_pool.clone();
    let written = session
        .writer("DELETE")?
        .write(path, WriteKind::Delete, keys, Some(&pool))
        .await?;
    // the rows deleted: the changelog's -D records
    count_batch(written.records)
}

/// The keys a DELETE's filter fixes, when it is a conjunction of `k = v` / `k IN
/// (...)` covering every primary-key column and nothing else.
fn literal_keys(df: &DataFrame, table: &FlussTable) -> Result<Option<RecordBatch>> {
    let mut filters = Vec::new();
    df.logical_plan().apply(|plan| {
        if let LogicalPlan::Filter(filter) = plan {
            filters.extend(split_conjunction(&filter.predicate).into_iter().cloned());
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if filters.is_empty() {
        return Ok(None);
    }
    let schema = table.schemas.latest()?.arrow.clone();
    let key_names = table.info.get_primary_keys();
    let mut values: Vec<Option<Vec<ScalarValue>>> = vec![None; key_names.len()];
    for filter in &filters {
        let fixed = key_literals(filter);
        let columns: Vec<String> = filter
            .column_refs()
            .iter()
            .map(|c| c.name.clone())
            .collect();
        // a conjunct that is not only key literals means rows must be read
        if fixed.is_empty() || columns.iter().any(|c| !fixed.iter().any(|(k, _)| k == c)) {
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
    let mut fields = Vec::with_capacity(key_names.len());
    let mut columns = Vec::with_capacity(key_names.len());
    for (i, name) in key_names.iter().enumerate() {
        let field = schema.field_with_name(name)?;
        let array = ScalarValue::iter_to_array(rows.iter().map(|r| r[i].clone()))?;
        // a literal no key can equal (`k = 1.5` on an INT key) matches nothing: read
        let Ok(array) = crate::cast::exactly_as(&array, field) else {
            return Ok(None);
        };
        fields.push(Field::new(name, field.data_type().clone(), true));
        columns.push(array);
    }
    Ok(Some(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?))
}

/// `CALL [fluss.]tier('[db.]table')`: tiers the table's log tail into its lake.
pub async fn call(
    session: &FlussSession,
    procedure: &[String],
    args: &[String],
) -> Result<RecordBatch> {
    let name = procedure.last().map(String::as_str).unwrap_or_default();
    let prefix_ok = procedure[..procedure.len().saturating_sub(1)]
        .iter()
        .all(|p| p == super::CATALOG || p == "sys" || p == "system");
    if name != "tier" || !prefix_ok {
        return Err(Error::not_found(format!(
            "unknown procedure '{}' (available: fluss.tier('db.table'))",
            procedure.join(".")
        )));
    }
    let [table] = args else {
        return Err(Error::invalid_input(
            "tier takes one argument: the table name, e.g. CALL fluss.tier('db.orders')",
        ));
    };
    let parts: Vec<String> = table.split('.').map(str::to_string).collect();
    let path = session.table_path(&parts)?;
    let result = session
        .source()
        .writer()
        .ok_or_else(|| {
            Error::unsupported(format!(
                "CALL fluss.tier needs a LocalStore: {} is a Fluss deployment, whose own \
                 tiering service tiers its tables",
                session.source().name()
            ))
        })?
        .tier(&path)
        .await?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("table", DataType::Utf8, false),
        Field::new("snapshot_id", DataType::Int64, true),
        Field::new("records", DataType::UInt64, false),
        Field::new("buckets", DataType::UInt64, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec![path.to_string()])),
            Arc::new(Int64Array::from(vec![result.snapshot_id])),
            Arc::new(UInt64Array::from(vec![result.records as u64])),
            Arc::new(UInt64Array::from(vec![result.buckets as u64])),
        ],
    )?)
}
