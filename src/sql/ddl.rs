//! DDL on the LocalStore: `CREATE DATABASE`, `CREATE TABLE` (Flink/Fluss syntax),
//! `DROP TABLE`, `DROP DATABASE`, and the columns of `ALTER TABLE ... ADD`.
//!
//! ```sql
//! CREATE TABLE [IF NOT EXISTS] [db.]t (
//!   id BIGINT NOT NULL, name STRING, price DECIMAL(15, 2), ts TIMESTAMP_LTZ(3),
//!   PRIMARY KEY (id) NOT ENFORCED
//! ) [COMMENT '...'] [PARTITIONED BY (dt)]
//! WITH ('bucket.num' = '4', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true');
//! ```
//!
//! `bucket.num` / `bucket.key` become the table distribution (as Fluss's Flink catalog
//! does); other `table.*` options are table properties, the rest custom properties.

use datafusion::sql::sqlparser::tokenizer::Token;
use fluss::metadata::{
    DataType, DataTypes, DecimalType, Schema, TableDescriptor, TimeType, TimestampLTzType,
    TimestampType,
};

use super::parse::{Cursor, is_keyword};
use crate::error::{Error, Result};
use crate::source::NewColumn;

/// A parsed `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    /// The table name as written (`t`, `db.t` or `fluss.db.t`).
    pub name: Vec<String>,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Columns: name, type, comment.
    pub columns: Vec<(String, DataType, Option<String>)>,
    /// Primary key columns, if any.
    pub primary_key: Option<Vec<String>>,
    /// `PARTITIONED BY` columns.
    pub partition_keys: Vec<String>,
    /// `WITH` options in order.
    pub options: Vec<(String, String)>,
    /// `COMMENT`.
    pub comment: Option<String>,
    /// `LIKE source`: the table copies the source's columns, keys, partitions,
    /// buckets and options; its own `WITH` options and `COMMENT` win.
    pub like: Option<Vec<String>>,
    /// `AS query` (CTAS): the columns are the query's, and its rows are inserted.
    pub as_query: Option<String>,
}

/// A parsed `CREATE DATABASE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateDatabase {
    /// Database name.
    pub name: String,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// `COMMENT`.
    pub comment: Option<String>,
}

/// Parses `CREATE DATABASE|SCHEMA [IF NOT EXISTS] name [COMMENT '...']` after
/// `CREATE DATABASE` has been consumed.
pub fn parse_create_database(c: &mut Cursor) -> Result<CreateDatabase> {
    let if_not_exists = c.eat_keywords(&["if", "not", "exists"]);
    let name = single_name(c.object_name()?)?;
    let comment = if c.eat_keyword("comment") {
        c.eat(&Token::Eq);
        Some(c.string()?)
    } else {
        None
    };
    c.expect_end()?;
    Ok(CreateDatabase {
        name,
        if_not_exists,
        comment,
    })
}

/// A database name: `db` or `fluss.db`.
fn single_name(parts: Vec<String>) -> Result<String> {
    match parts.as_slice() {
        [db] => Ok(db.clone()),
        [catalog, db] if catalog == "fluss" => Ok(db.clone()),
        _ => Err(Error::invalid_input(format!(
            "invalid database name '{}'",
            parts.join(".")
        ))),
    }
}

/// Parses a `CREATE TABLE` after `CREATE TABLE` has been consumed.
pub fn parse_create_table(c: &mut Cursor) -> Result<CreateTable> {
    let if_not_exists = c.eat_keywords(&["if", "not", "exists"]);
    let name = c.object_name()?;
    let mut spec = CreateTable {
        name,
        if_not_exists,
        columns: Vec::new(),
        primary_key: None,
        partition_keys: Vec::new(),
        options: Vec::new(),
        comment: None,
        like: None,
        as_query: None,
    };
    // `CREATE TABLE t LIKE s` and `CREATE TABLE t (LIKE s)`
    if c.eat_keyword("like") {
        spec.like = Some(c.object_name()?);
        parse_table_clauses(c, &mut spec)?;
        c.expect_end()?;
        return Ok(spec);
    }
    if matches!(c.peek(), Token::LParen) && is_keyword(&c.peek_nth(1), "like") {
        c.next_token();
        c.next_token();
        spec.like = Some(c.object_name()?);
        c.expect(&Token::RParen)?;
        parse_table_clauses(c, &mut spec)?;
        c.expect_end()?;
        return Ok(spec);
    }
    // Flink's `CREATE TABLE t WITH (...) LIKE s` lists no columns
    let has_columns = c.eat(&Token::LParen);
    if has_columns {
        parse_columns(c, &mut spec)?;
    }
    parse_table_clauses(c, &mut spec)?;
    // `CREATE TABLE t [(PRIMARY KEY (k) NOT ENFORCED)] [WITH (...)] AS query`, as
    // Flink writes it: the columns are the query's
    if c.eat_keyword("as") {
        if !spec.columns.is_empty() {
            return Err(Error::unsupported(
                "CREATE TABLE ... AS SELECT takes its columns from the query: list none \
                 (a PRIMARY KEY constraint may be given)",
            ));
        }
        let query = c.rest();
        if query.is_empty() {
            return Err(c.unexpected("a query"));
        }
        spec.as_query = Some(query);
        return Ok(spec);
    }
    if !has_columns && !c.peek_keyword("like") {
        return Err(c.unexpected("'(' and the table's columns"));
    }
    // Flink's `CREATE TABLE t WITH (...) LIKE s`: the columns come from s alone here
    if c.eat_keyword("like") {
        if !spec.columns.is_empty() || spec.primary_key.is_some() {
            return Err(Error::unsupported(
                "CREATE TABLE ... LIKE takes its columns from the source table: list none",
            ));
        }
        spec.like = Some(c.object_name()?);
    }
    c.expect_end()?;
    Ok(spec)
}

/// The columns and constraints of a `CREATE TABLE`, after its `(`, through `)`.
fn parse_columns(c: &mut Cursor, spec: &mut CreateTable) -> Result<()> {
    loop {
        if c.eat_keyword("constraint") {
            c.ident()?;
        }
        if c.eat_keywords(&["primary", "key"]) {
            let columns = c.ident_list()?;
            c.eat_keywords(&["not", "enforced"]);
            set_primary_key(spec, columns)?;
        } else {
            parse_column(c, spec)?;
        }
        if !c.eat(&Token::Comma) {
            return c.expect(&Token::RParen);
        }
    }
}

/// `COMMENT`, `PARTITIONED BY` and `WITH (...)` after a table's columns, in any order.
fn parse_table_clauses(c: &mut Cursor, spec: &mut CreateTable) -> Result<()> {
    loop {
        if c.eat_keyword("comment") {
            spec.comment = Some(c.string()?);
        } else if c.eat_keywords(&["partitioned", "by"]) {
            spec.partition_keys = c.ident_list()?;
        } else if c.eat_keyword("with") {
            c.expect(&Token::LParen)?;
            loop {
                let key = c.string()?;
                c.expect(&Token::Eq)?;
                let value = c.string()?;
                spec.options.push((key, value));
                if !c.eat(&Token::Comma) {
                    break;
                }
            }
            c.expect(&Token::RParen)?;
        } else {
            break;
        }
    }
    Ok(())
}

/// `spec` (a `CREATE TABLE t LIKE source`) with `source`'s columns, keys,
/// partitions, buckets and options; `spec`'s own options and comment win.
pub fn like(spec: CreateTable, source: &crate::source::FlussTable) -> Result<CreateTable> {
    if spec.like.is_some() && !spec.partition_keys.is_empty() {
        return Err(Error::unsupported(
            "CREATE TABLE ... LIKE takes its partitions from the source table",
        ));
    }
    // the source's own DDL, as SHOW CREATE TABLE prints it
    let ddl = super::show_create::create_table_ddl(source);
    let mut c = Cursor::new(&ddl)?;
    c.expect_keyword("create")?;
    c.expect_keyword("table")?;
    let mut table = parse_create_table(&mut c)?;
    table.name = spec.name;
    table.if_not_exists = spec.if_not_exists;
    if spec.comment.is_some() {
        table.comment = spec.comment;
    }
    for (key, value) in spec.options {
        match table.options.iter_mut().find(|(k, _)| *k == key) {
            Some(kept) => kept.1 = value,
            None => table.options.push((key, value)),
        }
    }
    Ok(table)
}

fn set_primary_key(spec: &mut CreateTable, columns: Vec<String>) -> Result<()> {
    if spec.primary_key.is_some() {
        return Err(Error::invalid_input(
            "a table can have only one PRIMARY KEY",
        ));
    }
    spec.primary_key = Some(columns);
    Ok(())
}

fn parse_column(c: &mut Cursor, spec: &mut CreateTable) -> Result<()> {
    let name = c.ident()?;
    let (data_type, comment, primary_key) = column_tail(c)?;
    if primary_key {
        set_primary_key(spec, vec![name.clone()])?;
    }
    spec.columns.push((name, data_type, comment));
    Ok(())
}

/// A column's type and what may follow it: `[NOT] NULL`, `PRIMARY KEY [NOT
/// ENFORCED]`, `COMMENT '...'`, in any order (whether it named the primary key).
fn column_tail(c: &mut Cursor) -> Result<(DataType, Option<String>, bool)> {
    let mut data_type = parse_type(c)?;
    let (mut comment, mut primary_key) = (None, false);
    loop {
        if c.eat_keywords(&["not", "null"]) {
            data_type = data_type.as_non_nullable();
        } else if c.eat_keyword("null") {
        } else if c.eat_keywords(&["primary", "key"]) {
            c.eat_keywords(&["not", "enforced"]);
            primary_key = true;
        } else if c.eat_keyword("comment") {
            comment = Some(c.string()?);
        } else {
            break;
        }
    }
    Ok((data_type, comment, primary_key))
}

/// The columns of `ALTER TABLE t ADD ...`, after `ADD`: `[COLUMN] c TYPE [NULL]
/// [COMMENT '...']`, Flink's `(c TYPE, ...)`, or more `, ADD [COLUMN] ...` clauses.
/// Fluss appends nullable columns only (`SchemaUpdate.addColumn`), so a position
/// (`FIRST`, `AFTER x`) and a key are refused here with its words.
pub fn parse_add_columns(c: &mut Cursor) -> Result<Vec<NewColumn>> {
    let mut columns = Vec::new();
    loop {
        let listed = c.eat(&Token::LParen);
        if !listed {
            c.eat_keyword("column");
        }
        loop {
            let name = c.ident()?;
            let (data_type, comment, primary_key) = column_tail(c)?;
            if primary_key {
                return Err(Error::invalid_input(format!(
                    "ALTER TABLE cannot add column '{name}' to the primary key (Fluss adds \
                     nullable columns only)"
                )));
            }
            if c.eat_keyword("first") || c.eat_keyword("after") {
                return Err(Error::invalid_input(format!(
                    "ALTER TABLE cannot place column '{name}' FIRST or AFTER another: Fluss \
                     adds columns at the end only"
                )));
            }
            columns.push(NewColumn {
                name,
                data_type,
                comment,
            });
            if !listed || !c.eat(&Token::Comma) {
                break;
            }
        }
        if listed {
            c.expect(&Token::RParen)?;
        }
        if !(c.eat(&Token::Comma) && c.eat_keyword("add")) {
            break;
        }
    }
    Ok(columns)
}

fn fluss_err(e: fluss::error::Error) -> Error {
    Error::invalid_input(e.to_string())
}

/// Optional `(n)` / `(p, s)` after a type name.
fn type_args(c: &mut Cursor) -> Result<Vec<u32>> {
    let mut args = Vec::new();
    if c.eat(&Token::LParen) {
        args.push(c.number()?);
        while c.eat(&Token::Comma) {
            args.push(c.number()?);
        }
        c.expect(&Token::RParen)?;
    }
    Ok(args)
}

fn too_many(name: &str, args: &[u32], max: usize) -> Result<()> {
    if args.len() > max {
        return Err(Error::invalid_input(format!(
            "type {name} takes at most {max} argument(s), got {}",
            args.len()
        )));
    }
    Ok(())
}

/// Flink's `VARCHAR(n)` / `VARBINARY(n)`: Fluss has no bounded variable-length type,
/// so only the unbounded one (`n` = 2147483647, Flink's `STRING` / `BYTES`) is
/// `unbounded_type`; any other length is refused naming it, as Fluss's Flink catalog
/// refuses it (`FlinkTypeToFlussType.visit(VarCharType)`: "Unsupported data type"),
/// never silently widened. Flink's bare `VARCHAR` is `VARCHAR(1)`.
fn unbounded(
    name: &str,
    args: &[u32],
    unbounded: &str,
    unbounded_type: DataType,
) -> Result<DataType> {
    too_many(name, args, 1)?;
    match args.first() {
        Some(&length) if length == i32::MAX as u32 => Ok(unbounded_type),
        length => Err(Error::unsupported(format!(
            "column type {name}({}) is not a Fluss type: Fluss has no bounded {name} \
             (Fluss's Flink catalog refuses it too); use {unbounded}{}",
            length.copied().unwrap_or(1),
            if unbounded == "STRING" {
                ", or CHAR(n) for a fixed length"
            } else {
                ", or BINARY(n) for a fixed length"
            }
        ))),
    }
}

/// Parses a SQL type into a Fluss type (nullable; `NOT NULL` is applied by the caller).
pub fn parse_type(c: &mut Cursor) -> Result<DataType> {
    let name = match c.next_token() {
        Token::Word(w) => w.value.to_ascii_uppercase(),
        other => {
            return Err(Error::invalid_input(format!(
                "SQL syntax error: expected a column type, found '{other}'"
            )));
        }
    };
    let data_type = match name.as_str() {
        "BOOLEAN" | "BOOL" => DataTypes::boolean(),
        "TINYINT" => DataTypes::tinyint(),
        "SMALLINT" => DataTypes::smallint(),
        "INT" | "INTEGER" => DataTypes::int(),
        "BIGINT" => DataTypes::bigint(),
        "FLOAT" | "REAL" => DataTypes::float(),
        "DOUBLE" => {
            c.eat_keyword("precision");
            DataTypes::double()
        }
        "DECIMAL" | "NUMERIC" | "DEC" => {
            let args = type_args(c)?;
            too_many(&name, &args, 2)?;
            let precision = args.first().copied().unwrap_or(10);
            let scale = args.get(1).copied().unwrap_or(0);
            DataType::Decimal(DecimalType::new(precision, scale).map_err(fluss_err)?)
        }
        "STRING" | "TEXT" => DataTypes::string(),
        "VARCHAR" => unbounded(&name, &type_args(c)?, "STRING", DataTypes::string())?,
        "CHAR" | "CHARACTER" => {
            if c.eat_keyword("varying") {
                let name = format!("{name} VARYING");
                unbounded(&name, &type_args(c)?, "STRING", DataTypes::string())?
            } else {
                let args = type_args(c)?;
                too_many(&name, &args, 1)?;
                DataTypes::char(args.first().copied().unwrap_or(1))
            }
        }
        "DATE" => DataTypes::date(),
        "TIME" => {
            let args = type_args(c)?;
            too_many(&name, &args, 1)?;
            c.eat_keywords(&["without", "time", "zone"]);
            DataType::Time(TimeType::new(args.first().copied().unwrap_or(0)).map_err(fluss_err)?)
        }
        "TIMESTAMP" => {
            let args = type_args(c)?;
            too_many(&name, &args, 1)?;
            let precision = args.first().copied().unwrap_or(6);
            if c.eat_keywords(&["with", "local", "time", "zone"]) {
                DataType::TimestampLTz(TimestampLTzType::new(precision).map_err(fluss_err)?)
            } else if c.eat_keywords(&["with", "time", "zone"]) {
                return Err(Error::unsupported(
                    "TIMESTAMP WITH TIME ZONE is not a Fluss type; use TIMESTAMP_LTZ or TIMESTAMP WITH LOCAL TIME ZONE",
                ));
            } else {
                c.eat_keywords(&["without", "time", "zone"]);
                DataType::Timestamp(TimestampType::new(precision).map_err(fluss_err)?)
            }
        }
        "TIMESTAMP_LTZ" => {
            let args = type_args(c)?;
            too_many(&name, &args, 1)?;
            let precision = args.first().copied().unwrap_or(6);
            DataType::TimestampLTz(TimestampLTzType::new(precision).map_err(fluss_err)?)
        }
        "BYTES" | "BLOB" | "BYTEA" => DataTypes::bytes(),
        "VARBINARY" => unbounded(&name, &type_args(c)?, "BYTES", DataTypes::bytes())?,
        "BINARY" => {
            let args = type_args(c)?;
            too_many(&name, &args, 1)?;
            DataTypes::binary(args.first().copied().unwrap_or(1) as usize)
        }
        other => {
            return Err(Error::unsupported(format!(
                "column type {other} is not supported (use BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), STRING, CHAR(n), DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), BYTES, BINARY(n))"
            )));
        }
    };
    Ok(data_type)
}

/// Builds the Fluss table descriptor of a parsed `CREATE TABLE`.
pub fn descriptor(spec: &CreateTable) -> Result<TableDescriptor> {
    let mut schema = Schema::builder();
    for (name, data_type, comment) in &spec.columns {
        let mut data_type = data_type.clone();
        if spec
            .primary_key
            .as_ref()
            .is_some_and(|pk| pk.contains(name))
        {
            data_type = data_type.as_non_nullable();
        }
        schema = schema.column(name.clone(), data_type);
        if let Some(comment) = comment {
            schema = schema.with_comment(comment.clone());
        }
    }
    let known: Vec<&str> = spec.columns.iter().map(|(n, _, _)| n.as_str()).collect();
    let check = |what: &str, cols: &[String]| -> Result<()> {
        for col in cols {
            if !known.contains(&col.as_str()) {
                return Err(Error::invalid_input(format!(
                    "{what} column '{col}' is not a column of the table"
                )));
            }
        }
        Ok(())
    };
    if let Some(pk) = &spec.primary_key {
        check("primary key", pk)?;
        schema = schema.primary_key(pk.clone()).map_err(fluss_err)?;
    }
    check("partition", &spec.partition_keys)?;
    let schema = schema.build().map_err(fluss_err)?;
    let mut builder = TableDescriptor::builder().schema(schema);
    if !spec.partition_keys.is_empty() {
        builder = builder.partitioned_by(spec.partition_keys.clone());
    }
    if let Some(comment) = &spec.comment {
        builder = builder.comment(comment.clone());
    }
    let mut bucket_count = None;
    let mut bucket_keys = Vec::new();
    for (key, value) in &spec.options {
        match key.as_str() {
            "bucket.num" => {
                let n = value.trim().parse::<i32>().ok().filter(|n| *n > 0);
                bucket_count = Some(n.ok_or_else(|| {
                    Error::invalid_input(format!(
                        "'bucket.num' must be a positive integer, got '{value}'"
                    ))
                })?);
            }
            "bucket.key" => {
                bucket_keys = value
                    .split(',')
                    .map(|k| k.trim().to_string())
                    .filter(|k| !k.is_empty())
                    .collect();
                check("bucket key", &bucket_keys)?;
            }
            k if k.starts_with("table.") => builder = builder.property(key, value),
            _ => builder = builder.custom_property(key, value),
        }
    }
    if bucket_count.is_some() || !bucket_keys.is_empty() {
        builder = builder.distributed_by(bucket_count, bucket_keys);
    }
    builder.build().map_err(fluss_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flink_style_ddl() {
        let sql = "CREATE TABLE IF NOT EXISTS db.Orders (\
            id BIGINT NOT NULL, \"Name\" VARCHAR(2147483647) COMMENT 'n', p DECIMAL(15, 2), \
            ts TIMESTAMP(3) WITH LOCAL TIME ZONE, dt STRING, \
            PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) \
            WITH ('bucket.num' = '4', 'table.datalake.enabled' = 'true', 'x' = 'y')";
        let mut c = Cursor::new(sql).unwrap();
        c.eat_keywords(&["create", "table"]);
        let spec = parse_create_table(&mut c).unwrap();
        assert_eq!(spec.name, vec!["db", "orders"]);
        assert!(spec.if_not_exists);
        assert_eq!(spec.columns[1].0, "Name");
        assert_eq!(spec.primary_key, Some(vec!["id".into(), "dt".into()]));
        assert_eq!(spec.partition_keys, vec!["dt"]);
        let d = descriptor(&spec).unwrap();
        assert_eq!(
            d.table_distribution().and_then(|t| t.bucket_count()),
            Some(4)
        );
        assert_eq!(
            d.properties()
                .get("table.datalake.enabled")
                .map(String::as_str),
            Some("true")
        );
        assert_eq!(
            d.custom_properties().get("x").map(String::as_str),
            Some("y")
        );
    }

    #[test]
    fn rejects_unknown_types() {
        let mut c = Cursor::new("CREATE TABLE t (a GEOMETRY)").unwrap();
        c.eat_keywords(&["create", "table"]);
        let e = parse_create_table(&mut c).unwrap_err();
        assert!(e.to_string().contains("GEOMETRY"), "{e}");
    }

    fn type_of(sql: &str) -> Result<DataType> {
        parse_type(&mut Cursor::new(sql).unwrap())
    }

    #[test]
    fn types_are_kept_as_written_or_refused_by_name() {
        for (sql, kept) in [
            ("CHAR(3)", DataTypes::char(3)),
            ("BINARY(4)", DataTypes::binary(4)),
            ("STRING", DataTypes::string()),
            ("VARCHAR(2147483647)", DataTypes::string()),
            ("VARBINARY(2147483647)", DataTypes::bytes()),
            ("BYTES", DataTypes::bytes()),
        ] {
            assert_eq!(type_of(sql).unwrap(), kept, "{sql}");
        }
        for (sql, named) in [
            ("VARCHAR(3)", "VARCHAR(3) is not a Fluss type"),
            ("VARCHAR", "VARCHAR(1) is not a Fluss type"),
            (
                "CHARACTER VARYING(10)",
                "CHARACTER VARYING(10) is not a Fluss type",
            ),
            ("VARBINARY(8)", "VARBINARY(8) is not a Fluss type"),
        ] {
            let e = type_of(sql).unwrap_err();
            assert_eq!(
                e.kind(),
                crate::error::ErrorKind::FeatureUnsupported,
                "{sql}"
            );
            assert!(e.to_string().contains(named), "{sql}: {e}");
        }
    }
}
