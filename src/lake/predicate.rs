//! The filter a lake format prunes with ([`LakePredicate`]): the union read builds it
//! from a query's filters (`union/filters.rs`), each format translates it into its
//! own predicate (`paimon/scan.rs`, `iceberg/predicate.rs`).

use datafusion::scalar::ScalarValue;

/// A comparison operator between a column and a literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `=`
    Eq,
    /// `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

/// `column op value`, the column on the left.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Column name.
    pub column: String,
    /// Operator.
    pub op: CompareOp,
    /// The literal (possibly null).
    pub value: ScalarValue,
}

/// A filter as lake formats prune with it: comparisons of columns with literals,
/// null tests and `IN` lists, combined by AND and OR. Lake formats translate it into
/// their own predicates; a part they cannot express widens the pruning (an AND drops
/// it, an OR becomes no pruning), never narrows it.
#[derive(Debug, Clone, PartialEq)]
pub enum LakePredicate {
    /// All must hold.
    And(Vec<LakePredicate>),
    /// One must hold.
    Or(Vec<LakePredicate>),
    /// `column op literal`.
    Compare(Comparison),
    /// `column IS NULL`.
    IsNull(String),
    /// `column IS NOT NULL`.
    IsNotNull(String),
    /// `column IN (literals)`.
    In {
        /// Column name.
        column: String,
        /// The literals.
        values: Vec<ScalarValue>,
    },
}

/// An integer literal as `i64` (any width or signedness that fits), for translating
/// predicates to the lakes' integer columns.
pub(crate) fn integer_literal(value: &ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::Int8(Some(x)) => Some(*x as i64),
        ScalarValue::Int16(Some(x)) => Some(*x as i64),
        ScalarValue::Int32(Some(x)) => Some(*x as i64),
        ScalarValue::Int64(Some(x)) => Some(*x),
        ScalarValue::UInt8(Some(x)) => Some(*x as i64),
        ScalarValue::UInt16(Some(x)) => Some(*x as i64),
        ScalarValue::UInt32(Some(x)) => Some(*x as i64),
        ScalarValue::UInt64(Some(x)) => i64::try_from(*x).ok(),
        _ => None,
    }
}
