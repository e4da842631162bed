//! What a `t$changelog` scan takes from its filters before reading: the offsets and
//! the commit times they allow. Both are bounds the scan reads within; every filter
//! is still applied to the rows read.

use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};
use datafusion::scalar::ScalarValue;

/// The comparisons of `column` with a literal in the conjunction of `filters`, the
/// column on the left (`5 < c` is `c > 5`; `c BETWEEN a AND b` is `c >= a`, `c <= b`).
fn comparisons<'a>(filters: &'a [Expr], column: &str) -> Vec<(Operator, &'a ScalarValue)> {
    let is_column = |e: &Expr| matches!(e, Expr::Column(c) if c.name == column);
    let literal = |e: &'a Expr| match e {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    };
    let mut found = Vec::new();
    let mut pending: Vec<&Expr> = filters.iter().collect();
    while let Some(filter) = pending.pop() {
        match filter {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::And,
                right,
            }) => {
                pending.push(left);
                pending.push(right);
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                if let (true, Some(v)) = (is_column(left), literal(right)) {
                    found.push((*op, v));
                } else if let (true, Some(v), Some(op)) =
                    (is_column(right), literal(left), op.swap())
                {
                    found.push((op, v));
                }
            }
            Expr::Between(Between {
                expr,
                negated: false,
                low,
                high,
            }) if is_column(expr) => {
                if let (Some(low), Some(high)) = (literal(low), literal(high)) {
                    found.push((Operator::GtEq, low));
                    found.push((Operator::LtEq, high));
                }
            }
            _ => {}
        }
    }
    found
}

/// The values `[from, to)` of an integer-valued `column` the conjunction of `filters`
/// allows by its comparisons with literals, each literal given as the integers just
/// below and above it by `value` (equal when it is one); `None` when none bounds it.
fn bounds(
    filters: &[Expr],
    column: &str,
    value: impl Fn(&ScalarValue) -> Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    let (mut from, mut to) = (i64::MIN, i64::MAX);
    let mut bounded = false;
    for (op, literal) in comparisons(filters, column) {
        let Some((floor, ceil)) = value(literal) else {
            continue;
        };
        bounded = true;
        // a row whose value is m passes `m op x` exactly when:
        match op {
            Operator::Eq => {
                from = from.max(ceil);
                to = to.min(floor.saturating_add(1));
            }
            Operator::Gt => from = from.max(floor.saturating_add(1)),
            Operator::GtEq => from = from.max(ceil),
            Operator::Lt => to = to.min(ceil),
            Operator::LtEq => to = to.min(floor.saturating_add(1)),
            _ => {}
        }
    }
    bounded.then_some((from, to))
}

/// The offsets `[low, high)` the conjunction of `filters` allows by its comparisons of
/// `_log_offset` with integer literals; the rest of a filter allows every offset.
pub(super) fn offset_bounds(filters: &[Expr]) -> (i64, i64) {
    bounds(filters, "_log_offset", |v| {
        crate::lake::predicate::integer_literal(v).map(|v| (v, v))
    })
    .unwrap_or((i64::MIN, i64::MAX))
}

/// A timestamp literal in milliseconds, rounded down and up.
fn millis(value: &ScalarValue) -> Option<(i64, i64)> {
    let (value, per_milli) = match value {
        ScalarValue::TimestampSecond(Some(v), _) => {
            let ms = v.saturating_mul(1000);
            return Some((ms, ms));
        }
        ScalarValue::TimestampMillisecond(Some(v), _) => return Some((*v, *v)),
        ScalarValue::TimestampMicrosecond(Some(v), _) => (*v, 1_000),
        ScalarValue::TimestampNanosecond(Some(v), _) => (*v, 1_000_000),
        _ => return None,
    };
    Some((
        value.div_euclid(per_milli),
        value.saturating_add(per_milli - 1).div_euclid(per_milli),
    ))
}

/// The commit times `[from, to)` (epoch millis, as batches are stamped) the
/// conjunction of `filters` allows by its comparisons of `_commit_timestamp` with
/// timestamp literals of any unit, so a batch is skipped only when no row of it
/// passes; `None` when no filter bounds them.
pub(super) fn commit_time_bounds(filters: &[Expr]) -> Option<(i64, i64)> {
    bounds(filters, "_commit_timestamp", millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    #[test]
    fn offsets_and_commit_times_are_bounded_by_the_conjunction() {
        let filters = [
            col("_log_offset")
                .gt_eq(lit(3i64))
                .and(lit(9i64).gt(col("_log_offset"))),
            col("_log_offset").between(lit(0i64), lit(5i64)),
            col("id").eq(lit(1)),
        ];
        assert_eq!(offset_bounds(&filters), (3, 6));
        assert_eq!(offset_bounds(&[]), (i64::MIN, i64::MAX));
        let micros = |v| lit(ScalarValue::TimestampMicrosecond(Some(v), None));
        let filters = [
            col("_commit_timestamp").gt(micros(1_500)),
            col("_commit_timestamp").lt_eq(micros(4_500)),
        ];
        // m * 1000 > 1500 means m >= 2; m * 1000 <= 4500 means m <= 4
        assert_eq!(commit_time_bounds(&filters), Some((2, 5)));
        assert_eq!(commit_time_bounds(&[col("id").eq(lit(1))]), None);
    }
}
