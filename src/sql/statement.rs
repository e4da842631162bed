//! Recognising the statements [`super::FlussSession`] runs itself; everything else is
//! a [`Statement::Query`] for DataFusion.

use datafusion::sql::sqlparser::tokenizer::Token;

use super::ddl::{CreateDatabase, CreateTable, parse_create_database, parse_create_table};
use super::parse::{Cursor, is_keyword};
use crate::error::{Error, Result};

/// One statement, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `CREATE DATABASE|SCHEMA`.
    CreateDatabase(CreateDatabase),
    /// `CREATE TABLE` in the Fluss catalog.
    CreateTable(CreateTable),
    /// `DROP TABLE [IF EXISTS] name [, name]`.
    DropTable {
        /// Table names as written.
        names: Vec<Vec<String>>,
        /// `IF EXISTS`.
        if_exists: bool,
    },
    /// `DROP DATABASE|SCHEMA [IF EXISTS] name [CASCADE|RESTRICT]`.
    DropDatabase {
        /// Database name as written.
        name: Vec<String>,
        /// `IF EXISTS`.
        if_exists: bool,
        /// `CASCADE`.
        cascade: bool,
    },
    /// `ALTER TABLE t SET ('k' = 'v', ...)` / `ALTER TABLE t RESET ('k', ...)`.
    AlterTable {
        /// Table name as written.
        name: Vec<String>,
        /// Options set.
        set: Vec<(String, String)>,
        /// Options reset (removed).
        reset: Vec<String>,
    },
    /// `ALTER TABLE t ADD [COLUMN] c TYPE [COMMENT '...']` (or Flink's `ADD (c TYPE,
    /// ...)`): nullable columns appended to the table.
    AddColumns {
        /// Table name as written.
        name: Vec<String>,
        /// The columns, in order.
        columns: Vec<crate::source::NewColumn>,
    },
    /// `ALTER TABLE t ADD [IF NOT EXISTS] PARTITION (k = 'v', ...)` and `ALTER TABLE t
    /// DROP [IF EXISTS] PARTITION (...)`, as Flink's Fluss catalog takes them.
    AlterPartition {
        /// Table name as written.
        name: Vec<String>,
        /// Each partition key's value, as Fluss spells it in partition names.
        spec: Vec<(String, String)>,
        /// ADD (else DROP).
        add: bool,
        /// `IF NOT EXISTS` / `IF EXISTS`.
        if_clause: bool,
    },
    /// `SHOW PARTITIONS t [PARTITION (k = 'v', ...)]`: the partitions Fluss holds, each
    /// as `k=v[/k2=v2]`, as Flink shows them.
    ShowPartitions {
        /// Table name as written.
        name: Vec<String>,
        /// Partition keys' values every partition listed has.
        spec: Vec<(String, String)>,
    },
    /// `CALL procedure('arg', ...)`.
    Call {
        /// Procedure name as written.
        procedure: Vec<String>,
        /// String arguments.
        args: Vec<String>,
    },
    /// `USE [fluss.]database`.
    Use {
        /// Database name as written.
        database: Vec<String>,
    },
    /// `SHOW DATABASES` / `SHOW SCHEMAS`.
    ShowDatabases,
    /// `SHOW CATALOGS` (Flink SQL).
    ShowCatalogs,
    /// `SHOW CREATE TABLE name`: Fluss DDL for a Fluss table, DataFusion's answer for
    /// anything else (`sql`).
    ShowCreateTable {
        /// Table name as written.
        name: Vec<String>,
        /// The statement, for DataFusion.
        sql: String,
    },
    /// `DESCRIBE|DESC name`: Fluss types and keys for a Fluss table, DataFusion's
    /// answer for anything else (`sql`).
    Describe {
        /// Table name as written.
        name: Vec<String>,
        /// The statement, for DataFusion.
        sql: String,
    },
    /// `SHOW TABLES FROM|IN database` (Flink SQL; a plain `SHOW TABLES` is DataFusion's).
    ShowTablesOf {
        /// Database name as written.
        database: Vec<String>,
    },
    /// `USE CATALOG name` (Flink SQL).
    UseCatalog {
        /// Catalog name as written.
        catalog: String,
    },
    /// `SET 'key' = 'value'`: Flink's quoted form. Settings of Flink's SQL client
    /// and runtime are answered here; any other key is DataFusion's `SET`.
    QuotedSet {
        /// The key, unquoted.
        key: String,
        /// The value, unquoted.
        value: String,
    },
    /// Anything else, for DataFusion.
    Query(String),
}

/// Whether a (possibly qualified) name lives in another catalog than `fluss`.
fn foreign(name: &[String]) -> bool {
    name.len() == 3 && name[0] != "fluss"
}

/// The table an `INSERT INTO`, `DELETE FROM`, `UPDATE` or `MERGE INTO`
/// names (`None` for other statements).
fn write_target(c: &mut Cursor) -> Result<Option<Vec<String>>> {
    let writes = (c.eat_keyword("insert") && c.eat_keyword("into"))
        || (c.eat_keyword("delete") && c.eat_keyword("from"))
        || c.eat_keyword("update")
        || (c.eat_keyword("merge") && c.eat_keyword("into"));
    if !writes {
        return Ok(None);
    }
    Ok(Some(c.object_name()?))
}

/// What a `CREATE VIEW` / `CREATE EXTERNAL TABLE` creates ("view", "external
/// table"): DataFusion keeps those in memory, beside the Fluss tables.
pub fn session_object(sql: &str) -> Option<&'static str> {
    let mut c = Cursor::new(sql).ok()?;
    if !c.eat_keyword("create") {
        return None;
    }
    c.eat_keywords(&["or", "replace"]);
    c.eat_keyword("temporary");
    c.eat_keyword("temp");
    c.eat_keyword("unbounded");
    if c.eat_keyword("view") {
        return Some("view");
    }
    (c.eat_keyword("external") && c.eat_keyword("table")).then_some("external table")
}

/// The SQL statement `statement` is, or the one it explains (`EXPLAIN [ANALYZE] s`),
/// for the session's syntax-tree rewrites.
pub(super) fn sql_statement_mut(
    statement: &mut datafusion::sql::parser::Statement,
) -> Option<&mut datafusion::sql::sqlparser::ast::Statement> {
    use datafusion::sql::parser::Statement;
    match statement {
        Statement::Statement(inner) => Some(inner.as_mut()),
        Statement::Explain(explain) => sql_statement_mut(explain.statement.as_mut()),
        _ => None,
    }
}

/// Whether DataFusion's `statement` only reads: a query, or `EXPLAIN [ANALYZE]` of
/// one, and no `SELECT … INTO`, which creates a table. Such a statement can be run
/// again without effect, so it may be planned from metadata not yet confirmed.
pub fn reads_only(statement: &datafusion::sql::parser::Statement) -> bool {
    use datafusion::sql::parser::Statement as DataFusion;
    use datafusion::sql::sqlparser::ast::{SetExpr, Statement as Sql};
    match statement {
        DataFusion::Statement(s) => match s.as_ref() {
            Sql::Query(query) => {
                !matches!(query.body.as_ref(), SetExpr::Select(select) if select.into.is_some())
            }
            _ => false,
        },
        DataFusion::Explain(explain) => reads_only(&explain.statement),
        _ => false,
    }
}

/// Classifies and parses one statement.
pub fn parse_statement(sql: &str) -> Result<Statement> {
    let mut c = Cursor::new(sql)?;
    let query = || {
        Ok(Statement::Query(
            sql.trim().trim_end_matches(';').to_string(),
        ))
    };
    if c.eat_keyword("create") {
        if c.eat_keyword("database") || c.eat_keyword("schema") {
            return Ok(Statement::CreateDatabase(parse_create_database(&mut c)?));
        }
        if c.eat_keyword("table") {
            let spec = parse_create_table(&mut c)?;
            if foreign(&spec.name) {
                return query();
            }
            return Ok(Statement::CreateTable(spec));
        }
        return query();
    }
    if c.eat_keyword("drop") {
        if c.eat_keyword("table") {
            let if_exists = c.eat_keywords(&["if", "exists"]);
            let mut names = vec![c.object_name()?];
            while c.eat(&Token::Comma) {
                names.push(c.object_name()?);
            }
            c.expect_end()?;
            if names.iter().any(|n| foreign(n)) {
                return query();
            }
            return Ok(Statement::DropTable { names, if_exists });
        }
        if c.eat_keyword("database") || c.eat_keyword("schema") {
            let if_exists = c.eat_keywords(&["if", "exists"]);
            let name = c.object_name()?;
            let cascade = c.eat_keyword("cascade");
            if !cascade {
                c.eat_keyword("restrict");
            }
            c.expect_end()?;
            return Ok(Statement::DropDatabase {
                name,
                if_exists,
                cascade,
            });
        }
        return query();
    }
    if c.peek_keyword("alter") && is_keyword(&c.peek_nth(1), "table") {
        c.next_token();
        c.next_token();
        let name = c.object_name()?;
        if foreign(&name) {
            return query();
        }
        let (mut set, mut reset) = (Vec::new(), Vec::new());
        if c.eat_keyword("set") {
            c.expect(&Token::LParen)?;
            loop {
                let key = c.string()?;
                c.expect(&Token::Eq)?;
                set.push((key, c.string()?));
                if !c.eat(&Token::Comma) {
                    break;
                }
            }
            c.expect(&Token::RParen)?;
        } else if c.eat_keyword("reset") {
            c.expect(&Token::LParen)?;
            loop {
                reset.push(c.string()?);
                if !c.eat(&Token::Comma) {
                    break;
                }
            }
            c.expect(&Token::RParen)?;
        } else if (c.peek_keyword("add") || c.peek_keyword("drop"))
            && (is_keyword(&c.peek_nth(1), "partition")
                || (is_keyword(&c.peek_nth(1), "if")
                    && (is_keyword(&c.peek_nth(3), "partition")
                        || is_keyword(&c.peek_nth(4), "partition"))))
        {
            let add = c.eat_keyword("add");
            if !add {
                c.next_token();
            }
            let if_clause = if add {
                c.eat_keywords(&["if", "not", "exists"])
            } else {
                c.eat_keywords(&["if", "exists"])
            };
            c.expect_keyword("partition")?;
            let spec = partition_spec(&mut c)?;
            c.expect_end()?;
            return Ok(Statement::AlterPartition {
                name,
                spec,
                add,
                if_clause,
            });
        } else if c.eat_keyword("add") {
            let columns = super::ddl::parse_add_columns(&mut c)?;
            c.expect_end()?;
            return Ok(Statement::AddColumns { name, columns });
        } else {
            return Err(Error::unsupported(format!(
                "ALTER TABLE ... {} is not supported yet (ADD [COLUMN] c TYPE, ADD|DROP \
                 PARTITION (k = 'v'), SET ('key' = 'value', ...) and RESET ('key', ...) are; \
                 Fluss 1.0 cannot drop, rename or modify columns)",
                c.rest()
            )));
        }
        c.expect_end()?;
        return Ok(Statement::AlterTable { name, set, reset });
    }
    // DataFusion plans writes, but resolves a virtual table's columns first: name
    // why a write to one is refused before it can complain about the values
    if let Some(name) = write_target(&mut c)? {
        if let Some((base, kind)) = name.last().and_then(|t| t.split_once('$'))
            && !foreign(&name)
        {
            return Err(crate::provider::read_only_virtual_table(
                &name.join("."),
                base,
                kind,
            ));
        }
        return query();
    }
    if c.eat_keyword("call") {
        let procedure = c.object_name()?;
        c.expect(&Token::LParen)?;
        let mut args = Vec::new();
        if !c.eat(&Token::RParen) {
            loop {
                args.push(c.string()?);
                if !c.eat(&Token::Comma) {
                    break;
                }
            }
            c.expect(&Token::RParen)?;
        }
        c.expect_end()?;
        return Ok(Statement::Call { procedure, args });
    }
    if c.eat_keyword("use") {
        if c.peek_keyword("catalog") && !matches!(c.peek_nth(1), Token::EOF | Token::SemiColon) {
            c.next_token();
            let catalog = c.object_name()?.join(".");
            c.expect_end()?;
            return Ok(Statement::UseCatalog { catalog });
        }
        let database = c.object_name()?;
        c.expect_end()?;
        return Ok(Statement::Use { database });
    }
    if c.peek_keyword("show")
        && is_keyword(&c.peek_nth(1), "create")
        && is_keyword(&c.peek_nth(2), "table")
    {
        c.next_token();
        c.next_token();
        c.next_token();
        let name = c.object_name()?;
        c.expect_end()?;
        return Ok(Statement::ShowCreateTable {
            name,
            sql: sql.trim().trim_end_matches(';').to_string(),
        });
    }
    if (c.peek_keyword("describe") || c.peek_keyword("desc"))
        && !matches!(c.peek_nth(1), Token::LParen)
        && !is_keyword(&c.peek_nth(1), "select")
    {
        let mut probe = c.clone();
        probe.next_token();
        if let Ok(name) = probe.object_name()
            && probe.expect_end().is_ok()
        {
            return Ok(Statement::Describe {
                name,
                sql: sql.trim().trim_end_matches(';').to_string(),
            });
        }
    }
    if c.peek_keyword("show") && is_keyword(&c.peek_nth(1), "partitions") {
        c.next_token();
        c.next_token();
        let name = c.object_name()?;
        let spec = if c.eat_keyword("partition") {
            partition_spec(&mut c)?
        } else {
            Vec::new()
        };
        c.expect_end()?;
        return Ok(Statement::ShowPartitions { name, spec });
    }
    if c.peek_keyword("show") && is_keyword(&c.peek_nth(1), "catalogs") {
        c.next_token();
        c.next_token();
        c.expect_end()?;
        return Ok(Statement::ShowCatalogs);
    }
    if c.peek_keyword("show")
        && is_keyword(&c.peek_nth(1), "tables")
        && (is_keyword(&c.peek_nth(2), "from") || is_keyword(&c.peek_nth(2), "in"))
    {
        c.next_token();
        c.next_token();
        c.next_token();
        let database = c.object_name()?;
        c.expect_end()?;
        return Ok(Statement::ShowTablesOf { database });
    }
    if c.peek_keyword("set") && matches!(c.peek_nth(1), Token::SingleQuotedString(_)) {
        c.next_token();
        let key = c.string()?;
        c.expect(&Token::Eq)?;
        let value = c.string()?;
        c.expect_end()?;
        return Ok(Statement::QuotedSet { key, value });
    }
    if c.peek_keyword("show")
        && (is_keyword(&c.peek_nth(1), "databases") || is_keyword(&c.peek_nth(1), "schemas"))
    {
        c.next_token();
        c.next_token();
        c.expect_end()?;
        return Ok(Statement::ShowDatabases);
    }
    query()
}

/// `(k = 'v', k2 = 3, ...)`: each partition key with its value as text (a string,
/// number or boolean literal).
fn partition_spec(c: &mut Cursor) -> Result<Vec<(String, String)>> {
    c.expect(&Token::LParen)?;
    let mut spec = Vec::new();
    loop {
        let key = c.ident()?;
        c.expect(&Token::Eq)?;
        let negative = c.eat(&Token::Minus);
        let value = match c.next_token() {
            Token::SingleQuotedString(v) => super::parse::unescape_string(&v),
            Token::Number(n, _) if negative => format!("-{n}"),
            Token::Number(n, _) => n,
            Token::Word(w)
                if !negative
                    && (w.value.eq_ignore_ascii_case("true")
                        || w.value.eq_ignore_ascii_case("false")) =>
            {
                w.value.to_ascii_lowercase()
            }
            other => {
                return Err(Error::invalid_input(format!(
                    "SQL syntax error: a partition value is a string, number or boolean, \
                     not {other}"
                )));
            }
        };
        spec.push((key, value));
        if !c.eat(&Token::Comma) {
            break;
        }
    }
    c.expect(&Token::RParen)?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        assert!(matches!(
            parse_statement("insert into t (a, b) values (1, 2);").unwrap(),
            Statement::Query(_)
        ));
        assert!(matches!(
            parse_statement("CALL fluss.tier('db.t')").unwrap(),
            Statement::Call { ref args, .. } if args == &["db.t"]
        ));
        assert!(matches!(
            parse_statement("SELECT 1").unwrap(),
            Statement::Query(_)
        ));
        assert_eq!(
            parse_statement("SET 'execution.runtime-mode' = 'batch';").unwrap(),
            Statement::QuotedSet {
                key: "execution.runtime-mode".into(),
                value: "batch".into()
            }
        );
        assert_eq!(
            parse_statement("USE CATALOG fluss").unwrap(),
            Statement::UseCatalog {
                catalog: "fluss".into()
            }
        );
        // a database named `catalog` is still a database
        assert!(matches!(
            parse_statement("USE catalog").unwrap(),
            Statement::Use { .. }
        ));
        assert_eq!(
            parse_statement("show tables from db").unwrap(),
            Statement::ShowTablesOf {
                database: vec!["db".into()]
            }
        );
        assert_eq!(
            parse_statement("SHOW CATALOGS").unwrap(),
            Statement::ShowCatalogs
        );
        assert!(matches!(
            parse_statement("SHOW TABLES").unwrap(),
            Statement::Query(_)
        ));
        assert!(matches!(
            parse_statement("DROP DATABASE IF EXISTS x CASCADE").unwrap(),
            Statement::DropDatabase {
                if_exists: true,
                cascade: true,
                ..
            }
        ));
    }
}
