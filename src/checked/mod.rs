//! SQL arithmetic that never wraps around: integer `+`, `-`, `*`, unary `-` and
//! `sum()` fail on overflow instead of returning a wrong number.
//!
//! DataFusion 55 plans integer arithmetic with Arrow's wrapping kernels
//! (`BinaryExpr::new` leaves `fail_on_overflow` off and its planner never turns it
//! on) and sums integers with `add_wrapping`, so `9223372036854775807 + 1` is
//! `-9223372036854775808`. Flink wraps the same way (Java `long` arithmetic,
//! `ScalarOperatorGens`). Here an overflow is an error, as PostgreSQL and DuckDB give:
//! a value that cannot be computed is never written to a table or shown as an answer.
//!
//! - [`CheckedArithmetic`], an analyzer rule after type coercion, replaces integer
//!   `+`, `-`, `*` and negation with functions over Arrow's checked kernels
//!   ([`arithmetic`]). Their column names are the operators' (`a + b`); EXPLAIN shows
//!   them as `checked_add(a, b)`. Decimal and floating point arithmetic are
//!   DataFusion's (decimals widen their precision; floats follow IEEE 754).
//! - [`sum`] replaces DataFusion's `sum` with one whose integer and decimal totals
//!   fail on overflow; others sums are DataFusion's own.

mod arithmetic;
mod sum;

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{
    AggregateUDF, BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator,
};
use datafusion::optimizer::AnalyzerRule;

pub use arithmetic::CheckedOperator;
pub use sum::CheckedSum;

/// The analyzer rule that makes integer arithmetic fail on overflow (see the module
/// documentation). It must run after DataFusion's type coercion, which gives both
/// operands of an operator one type: [`with_checked_arithmetic`] puts it last.
#[derive(Debug, Default)]
pub struct CheckedArithmetic;

impl AnalyzerRule for CheckedArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let schema = node.schema().clone();
            // expressions resolve against the node's inputs, or its own schema for
            // nodes without inputs
            let inputs: Vec<_> = node.inputs().iter().map(|i| i.schema().clone()).collect();
            // Top down: an operator's operands are typed while they are still the
            // planner's expressions (a rewritten function types its arguments again,
            // and a long chain of them would take quadratic or worse time).
            node.map_expressions(|expr| {
                expr.transform_down(|e| {
                    let resolve = |e: &Expr| -> Option<datafusion::arrow::datatypes::DataType> {
                        inputs
                            .iter()
                            .chain(std::iter::once(&schema))
                            .find_map(|s| e.get_type(s.as_ref()).ok())
                    };
                    Ok(checked(e, resolve))
                })
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "fluss_checked_arithmetic"
    }
}

/// `e` with an integer operator replaced by its checked function.
fn checked(
    e: Expr,
    type_of: impl Fn(&Expr) -> Option<datafusion::arrow::datatypes::DataType>,
) -> Transformed<Expr> {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let operator = match op {
                Operator::Plus => Some(CheckedOperator::Add),
                Operator::Minus => Some(CheckedOperator::Subtract),
                Operator::Multiply => Some(CheckedOperator::Multiply),
                _ => None,
            };
            let integers = operator.is_some()
                && [&left, &right]
                    .iter()
                    .all(|side| type_of(side).is_some_and(|t| t.is_integer()));
            match operator {
                Some(operator) if integers => {
                    Transformed::yes(operator.udf().call(vec![*left, *right]))
                }
                _ => Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })),
            }
        }
        Expr::Negative(inner) if type_of(&inner).is_some_and(|t| t.is_signed_integer()) => {
            Transformed::yes(CheckedOperator::Negate.udf().call(vec![*inner]))
        }
        other => Transformed::no(other),
    }
}

/// `rules` with [`CheckedArithmetic`] last (unless they hold it already).
pub fn with_checked_arithmetic(
    rules: &[Arc<dyn AnalyzerRule + Send + Sync>],
) -> Vec<Arc<dyn AnalyzerRule + Send + Sync>> {
    let mut all = rules.to_vec();
    if !rules.iter().any(|r| r.name() == CheckedArithmetic.name()) {
        all.push(Arc::new(CheckedArithmetic));
    }
    all
}

/// `sum` whose integer and decimal totals fail on overflow, under DataFusion's name
/// (registering it replaces DataFusion's `sum`).
pub fn sum() -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::from(CheckedSum::default()))
}
