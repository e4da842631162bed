//! Server-side batch filtering of FetchLog (`filter_predicate`), as a tablet server
//! does it (`LogSegment` read with a `FilterContext`): a batch is left out when its
//! statistics prove that no row can satisfy the predicate. Anything the statistics
//! cannot decide (no statistics, another schema, an unknown function or type)
//! includes the batch, as Fluss does on any evaluation failure.
//!
//! The statistics block is parsed by the library's reader (checked against Java's
//! bytes by its own tests); the predicate is evaluated here.

use std::cmp::Ordering;

use bytes::Bytes;
use datafusion::scalar::ScalarValue;
use fluss::metadata::{RowType, Schema};
use fluss_datafusion::log::{BatchStatistics, ColumnStatistics, LogBatch};

use crate::proto::{PbLiteralValue, PbPredicate};

// PbPredicate codes (FlussApi.proto comments).
const LEAF: i32 = 0;
const COMPOUND: i32 = 1;
const EQUAL: i32 = 0;
const NOT_EQUAL: i32 = 1;
const LESS_THAN: i32 = 2;
const LESS_OR_EQUAL: i32 = 3;
const GREATER_THAN: i32 = 4;
const GREATER_OR_EQUAL: i32 = 5;
const IS_NULL: i32 = 6;
const IS_NOT_NULL: i32 = 7;
const IN: i32 = 11;
const AND: i32 = 0;
const OR: i32 = 1;

/// A predicate bound to the schema it was compiled against.
pub(crate) struct BatchFilter {
    predicate: PbPredicate,
    schema_id: i32,
    /// Field id of each column of the schema, by position.
    field_ids: Vec<i32>,
    row_type: RowType,
}

impl BatchFilter {
    /// The filter of a request, for a table whose schema `schema_id` is `schema`.
    pub(crate) fn new(predicate: PbPredicate, schema_id: i32, schema: &Schema) -> Self {
        Self {
            predicate,
            schema_id,
            field_ids: schema.columns().iter().map(|c| c.id()).collect(),
            row_type: schema.row_type().clone(),
        }
    }

    /// Whether the batch `raw` may hold a matching row.
    pub(crate) fn include(&self, raw: &[u8]) -> bool {
        let Ok(batch) = LogBatch::parse(Bytes::copy_from_slice(raw)) else {
            return true;
        };
        if i32::from(batch.schema_id()) != self.schema_id {
            return true;
        }
        let Some(bytes) = batch.statistics_bytes() else {
            return true;
        };
        let Ok(stats) = BatchStatistics::parse(bytes, &self.row_type) else {
            return true;
        };
        let rows = i64::from(batch.record_count());
        self.may_match(&self.predicate, &stats, rows)
    }

    fn may_match(&self, p: &PbPredicate, stats: &BatchStatistics, rows: i64) -> bool {
        match (p.r#type, &p.leaf, &p.compound) {
            (LEAF, Some(leaf), _) => {
                let Some(column) = self
                    .field_ids
                    .iter()
                    .position(|id| *id == leaf.field_id)
                    .and_then(|i| stats.column(i))
                else {
                    return true;
                };
                leaf_may_match(leaf.function, &leaf.literals, column, rows)
            }
            (COMPOUND, _, Some(c)) if c.function == AND => c
                .children
                .iter()
                .all(|child| self.may_match(child, stats, rows)),
            (COMPOUND, _, Some(c)) if c.function == OR => c
                .children
                .iter()
                .any(|child| self.may_match(child, stats, rows)),
            _ => true,
        }
    }
}

fn leaf_may_match(
    function: i32,
    literals: &[PbLiteralValue],
    column: &ColumnStatistics,
    rows: i64,
) -> bool {
    match function {
        IS_NULL => return column.null_count > 0,
        IS_NOT_NULL => return column.null_count < rows,
        _ => {}
    }
    let (Some(min), Some(max)) = (&column.min, &column.max) else {
        // no bounds: all null (no comparison is true), or unknown
        return column.null_count < rows;
    };
    // Whether `a` compared with `b` may be one of `allowed` (incomparable: may).
    let may = |a: &ScalarValue, b: &ScalarValue, allowed: &[Ordering]| {
        a.partial_cmp(b).is_none_or(|o| allowed.contains(&o))
    };
    let literal = |i: usize| literals.get(i).and_then(|l| scalar(l, min));
    use Ordering::{Equal, Greater, Less};
    match function {
        EQUAL | IN => (0..literals.len()).any(|i| match literal(i) {
            Some(v) => may(min, &v, &[Less, Equal]) && may(max, &v, &[Greater, Equal]),
            None => true,
        }),
        NOT_EQUAL => literal(0).is_none_or(|v| {
            !(min.partial_cmp(&v) == Some(Equal) && max.partial_cmp(&v) == Some(Equal))
        }),
        LESS_THAN => literal(0).is_none_or(|v| may(min, &v, &[Less])),
        LESS_OR_EQUAL => literal(0).is_none_or(|v| may(min, &v, &[Less, Equal])),
        GREATER_THAN => literal(0).is_none_or(|v| may(max, &v, &[Greater])),
        GREATER_OR_EQUAL => literal(0).is_none_or(|v| may(max, &v, &[Greater, Equal])),
        _ => true,
    }
}

/// The literal as a value of the statistics' type (`like`); `None` when it is null
/// or of another kind (the batch is then included).
fn scalar(l: &PbLiteralValue, like: &ScalarValue) -> Option<ScalarValue> {
    if l.is_null {
        return None;
    }
    Some(match like {
        ScalarValue::Boolean(_) => ScalarValue::Boolean(Some(l.boolean_value?)),
        ScalarValue::Int8(_) => ScalarValue::Int8(Some(i8::try_from(l.int_value?).ok()?)),
        ScalarValue::Int16(_) => ScalarValue::Int16(Some(i16::try_from(l.int_value?).ok()?)),
        ScalarValue::Int32(_) => ScalarValue::Int32(Some(l.int_value?)),
        ScalarValue::Int64(_) => ScalarValue::Int64(Some(l.bigint_value?)),
        ScalarValue::Float32(_) => ScalarValue::Float32(Some(l.float_value?)),
        ScalarValue::Float64(_) => ScalarValue::Float64(Some(l.double_value?)),
        ScalarValue::Utf8(_) => ScalarValue::Utf8(Some(l.string_value.clone()?)),
        ScalarValue::Utf8View(_) => ScalarValue::Utf8View(Some(l.string_value.clone()?)),
        ScalarValue::LargeUtf8(_) => ScalarValue::LargeUtf8(Some(l.string_value.clone()?)),
        ScalarValue::Date32(_) => ScalarValue::Date32(Some(i32::try_from(l.bigint_value?).ok()?)),
        _ => return None,
    })
}
