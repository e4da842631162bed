//! A small cursor over DataFusion's SQL tokens (`datafusion::sql::sqlparser`), used to
//! recognise the statements the session runs itself (DDL, DML, `CALL`, `USE`) and to
//! split a script into statements.
//!
//! The tokenizer runs without unescaping, so the text of any suffix of a statement
//! (an `INSERT`'s `SELECT`, a `DELETE`'s predicate) can be rebuilt exactly from its
//! tokens and handed to DataFusion unchanged.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{Error, Result};

/// Tokenizes `sql` (GenericDialect, no unescaping).
pub fn tokenize(sql: &str) -> Result<Vec<Token>> {
    let dialect = GenericDialect {};
    Tokenizer::new(&dialect, sql)
        .with_unescape(false)
        .tokenize()
        .map_err(|e| Error::invalid_input(format!("SQL syntax error: {e}")))
}

/// Splits a script into statements at top-level `;`, dropping empty ones.
pub fn split_statements(sql: &str) -> Result<Vec<String>> {
    let mut statements = Vec::new();
    let mut current = String::new();
    let mut has_content = false;
    for token in tokenize(sql)? {
        match token {
            Token::SemiColon => {
                if has_content {
                    statements.push(current.trim().to_string());
                }
                current.clear();
                has_content = false;
            }
            Token::EOF => {}
            Token::Whitespace(w) => current.push_str(&w.to_string()),
            other => {
                has_content = true;
                current.push_str(&other.to_string());
            }
        }
    }
    if has_content {
        statements.push(current.trim().to_string());
    }
    Ok(statements)
}

/// How deep the expression trees of a statement can be, estimated from its tokens:
/// the longest chain of binary operators at one parenthesis level (`1+1+...+1` and
/// `a OR b OR ...` parse into trees as deep as they are long) plus the deepest
/// parenthesis nesting. A comma or a clause keyword ends a chain.
pub fn expression_depth(sql: &str) -> Result<usize> {
    use datafusion::sql::sqlparser::keywords::Keyword;
    let mut chains: Vec<usize> = vec![0];
    let (mut longest, mut deepest) = (0, 0);
    for token in tokenize(sql)? {
        let operator = match &token {
            Token::LParen => {
                chains.push(0);
                deepest = deepest.max(chains.len() - 1);
                continue;
            }
            Token::RParen => {
                if chains.len() > 1 {
                    chains.pop();
                }
                continue;
            }
            Token::Comma | Token::SemiColon => {
                if let Some(chain) = chains.last_mut() {
                    *chain = 0;
                }
                continue;
            }
            Token::Word(w) => match w.keyword {
                Keyword::AND | Keyword::OR => true,
                Keyword::SELECT
                | Keyword::FROM
                | Keyword::WHERE
                | Keyword::GROUP
                | Keyword::HAVING
                | Keyword::ORDER
                | Keyword::LIMIT
                | Keyword::VALUES
                | Keyword::ON
                | Keyword::UNION
                | Keyword::WHEN
                | Keyword::THEN
                | Keyword::ELSE => {
                    if let Some(chain) = chains.last_mut() {
                        *chain = 0;
                    }
                    continue;
                }
                _ => false,
            },
            Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::Mod
            | Token::StringConcat
            | Token::Eq
            | Token::Neq
            | Token::Lt
            | Token::Gt
            | Token::LtEq
            | Token::GtEq
            | Token::Caret
            | Token::Ampersand
            | Token::Pipe
            | Token::ShiftLeft
            | Token::ShiftRight => true,
            _ => false,
        };
        if operator && let Some(chain) = chains.last_mut() {
            *chain += 1;
            longest = longest.max(*chain);
        }
    }
    Ok(longest + deepest)
}

/// A possibly qualified object name (`t`, `db.t`, `"a b".t`) and nothing after it.
pub fn parse_object_name(text: &str) -> Result<Vec<String>> {
    let mut c = Cursor::new(text)?;
    let name = c.object_name()?;
    c.expect_end()?;
    Ok(name)
}

/// Whether `input` is a complete statement for an interactive shell: it ends with a
/// `;` outside quotes and comments (an unterminated quote is incomplete).
pub fn is_complete(input: &str) -> bool {
    match tokenize(input) {
        Ok(tokens) => tokens
            .iter()
            .rev()
            .find(|t| !matches!(t, Token::Whitespace(_) | Token::EOF))
            .is_some_and(|t| matches!(t, Token::SemiColon)),
        Err(_) => false,
    }
}

/// The optimizer hints of `sql` (`/*+ OPTIONS('k' = 'v') */`, as Flink writes them),
/// each as written inside its comment.
pub fn hints(sql: &str) -> Vec<String> {
    use datafusion::sql::sqlparser::tokenizer::Whitespace;
    // every query asks: most have no hint, and need not be tokenized again for it
    if !sql.contains("/*+") {
        return Vec::new();
    }
    tokenize(sql)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| match t {
            Token::Whitespace(Whitespace::MultiLineComment(body)) => {
                body.strip_prefix('+').map(|hint| hint.trim().to_string())
            }
            _ => None,
        })
        .collect()
}

/// The `'key' = 'value'` pairs of a hint's `OPTIONS(...)` (as [`hints`] returns
/// it, Flink's dynamic table options); empty for any other hint.
pub fn hint_options(hint: &str) -> Vec<(String, String)> {
    let tokens: Vec<Token> = tokenize(hint)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF))
        .collect();
    let is_options = matches!(tokens.first(), Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("options"))
        && matches!(tokens.get(1), Some(Token::LParen))
        && matches!(tokens.last(), Some(Token::RParen));
    if !is_options {
        return Vec::new();
    }
    tokens[2..tokens.len() - 1]
        .split(|t| matches!(t, Token::Comma))
        .filter_map(|pair| match pair {
            [
                Token::SingleQuotedString(k),
                Token::Eq,
                Token::SingleQuotedString(v),
            ] => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect()
}

/// Unescapes the body of a single-quoted SQL string (`''` is one quote).
pub fn unescape_string(raw: &str) -> String {
    raw.replace("''", "'")
}

/// Quotes an identifier for DataFusion (`"name"`, doubling inner quotes).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A cursor over the tokens of one statement; whitespace and comments are skipped by
/// every method except [`Cursor::rest`].
#[derive(Debug, Clone)]
pub struct Cursor {
    tokens: Vec<Token>,
    pos: usize,
}

impl Cursor {
    /// Tokenizes one statement.
    pub fn new(sql: &str) -> Result<Self> {
        Ok(Self {
            tokens: tokenize(sql)?,
            pos: 0,
        })
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.tokens.get(self.pos), Some(Token::Whitespace(_))) {
            self.pos += 1;
        }
    }

    /// The next significant token (`EOF` at the end).
    pub fn peek(&mut self) -> &Token {
        self.skip_whitespace();
        self.tokens.get(self.pos).unwrap_or(&Token::EOF)
    }

    /// The `n`-th significant token from here (0 = next).
    pub fn peek_nth(&self, n: usize) -> Token {
        self.tokens[self.pos.min(self.tokens.len())..]
            .iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .nth(n)
            .cloned()
            .unwrap_or(Token::EOF)
    }

    /// Consumes and returns the next significant token.
    pub fn next_token(&mut self) -> Token {
        self.skip_whitespace();
        let token = self.tokens.get(self.pos).cloned().unwrap_or(Token::EOF);
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    /// Whether the next token is the unquoted word `keyword` (case-insensitive).
    pub fn peek_keyword(&mut self, keyword: &str) -> bool {
        is_keyword(self.peek(), keyword)
    }

    /// Consumes the unquoted word `keyword` if it is next.
    pub fn eat_keyword(&mut self, keyword: &str) -> bool {
        if self.peek_keyword(keyword) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Consumes the keyword sequence `keywords` if all of it is next (else nothing).
    pub fn eat_keywords(&mut self, keywords: &[&str]) -> bool {
        let all = keywords
            .iter()
            .enumerate()
            .all(|(i, k)| is_keyword(&self.peek_nth(i), k));
        if all {
            for _ in keywords {
                self.next_token();
            }
        }
        all
    }

    /// Consumes `keyword` or fails naming what was found.
    pub fn expect_keyword(&mut self, keyword: &str) -> Result<()> {
        if self.eat_keyword(keyword) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{}'", keyword.to_ascii_uppercase())))
        }
    }

    /// Consumes `token` (punctuation) if it is next.
    pub fn eat(&mut self, token: &Token) -> bool {
        if self.peek() == token {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Consumes `token` or fails naming what was found.
    pub fn expect(&mut self, token: &Token) -> Result<()> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{token}'")))
        }
    }

    /// An error "expected X, found Y".
    pub fn unexpected(&mut self, expected: &str) -> Error {
        let found = match self.peek() {
            Token::EOF => "end of statement".to_string(),
            t => format!("'{t}'"),
        };
        Error::invalid_input(format!(
            "SQL syntax error: expected {expected}, found {found}"
        ))
    }

    /// An identifier: unquoted words are lower-cased (as DataFusion does), quoted ones
    /// kept as written.
    pub fn ident(&mut self) -> Result<String> {
        match self.peek().clone() {
            Token::Word(w) => {
                self.pos += 1;
                Ok(match w.quote_style {
                    Some(_) => w.value.replace("\"\"", "\""),
                    None => w.value.to_lowercase(),
                })
            }
            _ => Err(self.unexpected("an identifier")),
        }
    }

    /// A dotted name `a[.b[.c]]`.
    pub fn object_name(&mut self) -> Result<Vec<String>> {
        let mut parts = vec![self.ident()?];
        while self.eat(&Token::Period) {
            parts.push(self.ident()?);
        }
        Ok(parts)
    }

    /// A parenthesised, comma-separated identifier list `(a, b)`.
    pub fn ident_list(&mut self) -> Result<Vec<String>> {
        self.expect(&Token::LParen)?;
        let mut names = vec![self.ident()?];
        while self.eat(&Token::Comma) {
            names.push(self.ident()?);
        }
        self.expect(&Token::RParen)?;
        Ok(names)
    }

    /// A single-quoted string literal, unescaped.
    pub fn string(&mut self) -> Result<String> {
        match self.peek().clone() {
            Token::SingleQuotedString(s) => {
                self.pos += 1;
                Ok(unescape_string(&s))
            }
            _ => Err(self.unexpected("a quoted string")),
        }
    }

    /// A non-negative integer literal.
    pub fn number(&mut self) -> Result<u32> {
        match self.peek().clone() {
            Token::Number(n, _) => {
                let value = n.parse::<u32>().map_err(|_| {
                    Error::invalid_input(format!("SQL syntax error: '{n}' is not a valid length"))
                })?;
                self.pos += 1;
                Ok(value)
            }
            _ => Err(self.unexpected("a number")),
        }
    }

    /// Whether only whitespace, `;` and the end remain.
    pub fn at_end(&self) -> bool {
        self.tokens[self.pos.min(self.tokens.len())..]
            .iter()
            .all(|t| matches!(t, Token::Whitespace(_) | Token::SemiColon | Token::EOF))
    }

    /// Fails unless the statement ends here.
    pub fn expect_end(&mut self) -> Result<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.unexpected("end of statement"))
        }
    }

    /// The exact text of the remaining tokens (without a trailing `;`).
    pub fn rest(&self) -> String {
        let mut text = String::new();
        for token in &self.tokens[self.pos.min(self.tokens.len())..] {
            match token {
                Token::EOF => {}
                t => text.push_str(&t.to_string()),
            }
        }
        text.trim().trim_end_matches(';').trim().to_string()
    }
}

/// Whether `token` is the unquoted word `keyword`.
pub fn is_keyword(token: &Token, keyword: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_completes() {
        let parts = split_statements("SELECT ';' ; -- c\n SELECT 2;;").unwrap();
        assert_eq!(parts, vec!["SELECT ';'", "-- c\n SELECT 2"]);
        assert!(is_complete("SELECT 1;"));
        assert!(!is_complete("SELECT ';"));
        assert!(!is_complete("SELECT 1"));
    }

    #[test]
    fn expression_depth_counts_operator_chains_and_nesting() {
        assert_eq!(expression_depth("SELECT 1").unwrap(), 0);
        assert_eq!(expression_depth("SELECT 1+1+1, 2*2").unwrap(), 2);
        assert_eq!(expression_depth("SELECT ((1+1))+1").unwrap(), 3);
        assert_eq!(
            expression_depth("SELECT a FROM t WHERE a = 1 OR a = 2 OR a = 3").unwrap(),
            5
        );
        // a long VALUES list is wide, not deep
        let values = vec!["(1, 'a')"; 5000].join(", ");
        assert_eq!(
            expression_depth(&format!("INSERT INTO t VALUES {values}")).unwrap(),
            1
        );
        let deep = format!("SELECT {}", vec!["1"; 10_001].join("+"));
        assert_eq!(expression_depth(&deep).unwrap(), 10_000);
    }
}

#[cfg(test)]
mod hint_tests {
    #[test]
    fn hint_options_of_flink_hints() {
        let sql =
            "SELECT /*+ OPTIONS('client.scanner.kv.batch-strategy' = 'server-scan') */ * FROM t";
        let hints = super::hints(sql);
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert_eq!(
            super::hint_options(&hints[0]),
            vec![(
                "client.scanner.kv.batch-strategy".to_string(),
                "server-scan".to_string()
            )],
            "{hints:?}"
        );
        assert!(super::hint_options("BROADCAST(t)").is_empty());
    }
}
