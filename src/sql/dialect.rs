//! The SQL dialect of a [`super::FlussSession`]: DataFusion's generic dialect, plus
//! the table versions of time travel (`t VERSION AS OF 3`, `t TIMESTAMP AS OF '...'`,
//! `t FOR SYSTEM_TIME AS OF ...`), which sqlparser parses only for dialects that
//! say they have them (`Dialect::supports_table_versioning`). The generic dialect
//! does not, and sqlparser's dialects that do differ from it elsewhere.

use datafusion::common::config::Dialect as ConfiguredDialect;
use datafusion::error::Result as DfResult;
use datafusion::execution::SessionState;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::dialect::{Dialect, GenericDialect};

/// DataFusion's generic dialect with table versions ([`FlussDialect::new`]).
#[derive(Debug, Default)]
pub struct FlussDialect(GenericDialect);

impl FlussDialect {
    /// The dialect.
    pub fn new() -> Self {
        Self(GenericDialect {})
    }
}

/// Parses one statement as `SessionState::sql_to_statement` does, in
/// [`FlussDialect`] where the session's dialect is the generic one (the default).
pub(crate) fn parse_statement(state: &SessionState, sql: &str) -> DfResult<Statement> {
    let options = state.config().options();
    let dialect = options.sql_parser.dialect;
    if dialect != ConfiguredDialect::Generic {
        return state.sql_to_statement(sql, &dialect);
    }
    let mut statements = DFParserBuilder::new(sql)
        .with_dialect(&FlussDialect::new())
        .with_recursion_limit(options.sql_parser.recursion_limit.get())
        .build()?
        .parse_statements()?;
    if statements.len() > 1 {
        return datafusion::common::not_impl_err!(
            "The context currently only supports a single SQL statement"
        );
    }
    statements.pop_front().ok_or_else(|| {
        datafusion::common::plan_datafusion_err!(
            "No SQL statements were provided in the query string"
        )
    })
}

/// Answers each named `Dialect` question as the generic dialect does.
macro_rules! as_generic {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool {
            self.0.$name()
        })*
    };
}

impl Dialect for FlussDialect {
    // `dialect_of!(parser is GenericDialect)` checks inside sqlparser hold for it
    fn dialect(&self) -> std::any::TypeId {
        self.0.dialect()
    }

    fn supports_table_versioning(&self) -> bool {
        true
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.0.is_delimited_identifier_start(ch)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.0.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.0.is_identifier_part(ch)
    }

    as_generic!(
        supports_unicode_string_literal,
        supports_partition_by_after_order_by,
        supports_array_join_syntax,
        supports_group_by_expr,
        supports_group_by_with_modifier,
        supports_left_associative_joins_without_parens,
        supports_connect_by,
        supports_match_recognize,
        supports_pipe_operator,
        supports_start_transaction_modifier,
        supports_window_function_null_treatment_arg,
        supports_dictionary_syntax,
        supports_window_clause_named_window_reference,
        supports_parenthesized_set_variables,
        supports_select_wildcard_except,
        support_map_literal_syntax,
        allow_extract_custom,
        allow_extract_single_quotes,
        supports_extract_comma_syntax,
        supports_create_view_comment_syntax,
        supports_parens_around_table_factor,
        supports_values_as_table_factor,
        supports_create_index_with_clause,
        supports_explain_with_utility_options,
        supports_limit_comma,
        supports_update_order_by,
        supports_from_first_select,
        supports_projection_trailing_commas,
        supports_asc_desc_in_column_definition,
        supports_try_convert,
        supports_bitwise_shift_operators,
        supports_comment_on,
        supports_load_extension,
        supports_named_fn_args_with_assignment_operator,
        supports_struct_literal,
        supports_empty_projections,
        supports_nested_comments,
        supports_multiline_comment_hints,
        supports_user_host_grantee,
        supports_string_escape_constant,
        supports_array_typedef_with_brackets,
        supports_match_against,
        supports_set_names,
        supports_comma_separated_set_assignments,
        supports_filter_during_aggregation,
        supports_select_wildcard_exclude,
        supports_data_type_signed_suffix,
        supports_interval_options,
        supports_quote_delimited_string,
        supports_select_wildcard_replace,
        supports_select_wildcard_ilike,
        supports_select_wildcard_rename,
        supports_optimize_table,
        supports_install,
        supports_detach,
        supports_prewhere,
        supports_with_fill,
        supports_limit_by,
        supports_interpolate,
        supports_settings,
        supports_select_format,
        supports_comment_optimizer_hint,
        supports_constraint_keyword_without_name,
        supports_key_column_option,
        supports_comma_separated_trim,
        supports_cte_without_as,
        supports_select_item_multi_column_alias,
        supports_xml_expressions
    );
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    #[test]
    fn time_travel_parses_and_the_rest_as_generic() {
        for sql in [
            "SELECT * FROM t VERSION AS OF 3",
            "SELECT * FROM t TIMESTAMP AS OF '2024-01-01 00:00:00'",
            "SELECT * FROM db.t FOR SYSTEM_TIME AS OF now() - INTERVAL '1' HOUR AS x",
        ] {
            let parsed = Parser::parse_sql(&FlussDialect::new(), sql);
            assert!(parsed.is_ok(), "{sql}: {parsed:?}");
        }
        // a generic-only construct still parses: `SELECT * EXCLUDE`, `LIMIT a, b`
        for sql in ["SELECT * EXCLUDE (a) FROM t", "SELECT 1 LIMIT 1, 2"] {
            let ours = Parser::parse_sql(&FlussDialect::new(), sql).map(|s| s[0].to_string());
            let generic = Parser::parse_sql(&GenericDialect {}, sql).map(|s| s[0].to_string());
            assert_eq!(ours, generic, "{sql}");
        }
    }
}
