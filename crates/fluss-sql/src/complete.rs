//! Tab completion (meta-commands, `\pset format` values, SQL keywords, catalog
//! names) and multi-line input until `;`.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use fluss_datafusion::error::Result;
use fluss_datafusion::sql::{FlussSession, is_complete};
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};

/// The meta-commands, as Tab offers them (`\?` and `\h` too, in the help).
pub const META_COMMANDS: &[&str] = &[
    "d", "dt", "l", "timing", "x", "pset", "o", "i", "include", "quiet", "h", "help", "q", "quit",
];

/// The formats `\pset format` takes.
const FORMATS: &[&str] = &[
    "table",
    "csv",
    "tsv",
    "json",
    "ndjson",
    "automatic",
    "expanded",
];

/// SQL keywords offered by tab completion.
const KEYWORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "LEFT",
    "RIGHT",
    "FULL",
    "INNER",
    "OUTER",
    "CROSS",
    "ON",
    "USING",
    "AS",
    "AND",
    "OR",
    "NOT",
    "NULL",
    "IS",
    "IN",
    "BETWEEN",
    "LIKE",
    "ILIKE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "DISTINCT",
    "UNION",
    "ALL",
    "WITH",
    "VALUES",
    "INSERT",
    "INTO",
    "DELETE",
    "CREATE",
    "DROP",
    "TABLE",
    "DATABASE",
    "SCHEMA",
    "IF",
    "EXISTS",
    "PRIMARY",
    "KEY",
    "ENFORCED",
    "PARTITIONED",
    "CASCADE",
    "EXPLAIN",
    "ANALYZE",
    "COPY",
    "TO",
    "SET",
    "SHOW",
    "TABLES",
    "DATABASES",
    "USE",
    "CALL",
    "DESC",
    "ASC",
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "CAST",
    "DATE",
    "TIMESTAMP",
    "INTERVAL",
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
    "STRING",
    "VARCHAR",
    "CHAR",
    "TIME",
    "TIMESTAMP_LTZ",
    "BYTES",
    "BINARY",
    "TRUE",
    "FALSE",
];

/// Tab completion, multi-line input until `;`.
pub struct ShellHelper {
    /// Catalog names, loaded on first use; `None` again after DDL.
    pub names: Arc<Mutex<Option<Vec<String>>>>,
    /// The session whose catalog names are offered.
    pub session: FlussSession,
    /// The runtime the names are loaded on.
    pub handle: tokio::runtime::Handle,
}

impl ShellHelper {
    /// Catalog, database, table and column names (loaded on first use, reloaded
    /// after DDL).
    fn names(&self) -> Vec<String> {
        let Ok(mut guard) = self.names.lock() else {
            return Vec::new();
        };
        if guard.is_none() {
            let session = self.session.clone();
            let loaded = self
                .handle
                .block_on(async move { load_names(&session).await })
                .unwrap_or_default();
            *guard = Some(loaded);
        }
        guard.clone().unwrap_or_default()
    }
}

async fn load_names(session: &FlussSession) -> Result<Vec<String>> {
    let store = session.source();
    let mut names = vec!["fluss".to_string(), "information_schema".to_string()];
    for db in store.list_databases().await? {
        for table in store.list_tables(&db).await?.into_iter().take(500) {
            let path = fluss::metadata::TablePath::new(db.as_str(), table.as_str());
            if let Ok(t) = store.get_table(&path).await {
                names.extend(
                    t.info
                        .get_schema()
                        .column_names()
                        .into_iter()
                        .map(str::to_string),
                );
            }
            names.push(table);
        }
        names.push(db);
    }
    names.sort();
    names.dedup();
    Ok(names)
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        if let Some(meta) = meta_completion(before) {
            return Ok(meta);
        }
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .map_or(0, |i| {
                i + before[i..].chars().next().map_or(1, char::len_utf8)
            });
        let prefix = &before[start..];
        if prefix.is_empty() {
            return Ok((start, Vec::new()));
        }
        let lower = prefix.to_lowercase();
        let upper_case = prefix.chars().any(char::is_uppercase);
        let mut candidates: Vec<Pair> = Vec::new();
        for name in self.names() {
            if name.to_lowercase().starts_with(&lower) {
                candidates.push(Pair {
                    display: name.clone(),
                    replacement: name,
                });
            }
        }
        for keyword in KEYWORDS {
            if keyword.to_lowercase().starts_with(&lower) {
                let k = if upper_case {
                    keyword.to_string()
                } else {
                    keyword.to_lowercase()
                };
                candidates.push(Pair {
                    display: k.clone(),
                    replacement: k,
                });
            }
        }
        Ok((start, candidates))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for ShellHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        let input = ctx.input().trim();
        let done = input.is_empty()
            || input.starts_with('\\')
            || matches!(input.to_ascii_lowercase().as_str(), "quit" | "exit")
            || is_complete(input);
        Ok(if done {
            ValidationResult::Valid(None)
        } else {
            ValidationResult::Incomplete
        })
    }
}

impl Helper for ShellHelper {}

/// Completions of a meta-command line: its name, or `\pset`'s words. `None` when
/// `before` (the line up to the cursor) is SQL.
fn meta_completion(before: &str) -> Option<(usize, Vec<Pair>)> {
    let command = before.trim_start().strip_prefix('\\')?;
    let offset = before.len() - command.len();
    let pairs = |words: &[&str], prefix: &str| -> Vec<Pair> {
        words
            .iter()
            .filter(|w| w.starts_with(prefix))
            .map(|w| Pair {
                display: w.to_string(),
                replacement: w.to_string(),
            })
            .collect()
    };
    let words: Vec<&str> = command.split_whitespace().collect();
    let typing_word = !command.ends_with(char::is_whitespace);
    match (words.as_slice(), typing_word) {
        ([] | [_], true) => Some((offset, pairs(META_COMMANDS, command))),
        (["pset"], false) => Some((before.len(), pairs(&["format"], ""))),
        (["pset", word], true) => Some((before.len() - word.len(), pairs(&["format"], word))),
        (["pset", "format"], false) => Some((before.len(), pairs(FORMATS, ""))),
        (["pset", "format", word], true) => Some((before.len() - word.len(), pairs(FORMATS, word))),
        _ => Some((before.len(), Vec::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(before: &str) -> Vec<String> {
        meta_completion(before)
            .map(|(_, pairs)| pairs.into_iter().map(|p| p.replacement).collect())
            .unwrap_or_default()
    }

    /// Every meta-command completes on Tab, and `\pset format` its formats.
    #[test]
    fn meta_commands_complete() {
        assert_eq!(offered("\\tim"), ["timing"]);
        assert_eq!(meta_completion("\\tim").map(|(start, _)| start), Some(1));
        assert_eq!(offered("\\qu"), ["quiet", "quit"]);
        assert_eq!(offered("\\").len(), META_COMMANDS.len());
        for command in META_COMMANDS {
            assert!(offered(&format!("\\{command}")).contains(&command.to_string()));
        }
        assert_eq!(offered("\\pset "), ["format"]);
        assert_eq!(offered("\\pset format nd"), ["ndjson"]);
        assert_eq!(
            meta_completion("\\pset format nd").map(|(start, _)| start),
            Some(13)
        );
        assert!(offered("\\timing o").is_empty());
        assert!(meta_completion("SELECT 1").is_none());
    }
}
