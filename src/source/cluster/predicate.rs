//! The batch filter sent with FetchLog (`PbPredicate`): the pushed filters the
//! server can evaluate against batch statistics, so batches no row of which matches
//! never cross the network.
//!
//! Only what has an exact Fluss counterpart is sent: comparisons of a column with a
//! literal of its own type, `IS [NOT] NULL`, `IN` lists, and AND / OR of those. An
//! AND keeps the parts it can send (the server's answer is a superset either way);
//! an OR is sent only whole. Rows are filtered again after decoding, so a filter the
//! server ignores or applies loosely costs bytes, never rows.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, Literal,
};
use datafusion::scalar::ScalarValue;
use fluss::metadata::DataType;

use super::wire::{
    PbCompoundPredicate, PbLeafPredicate, PbLiteralValue, PbPredicate, predicate_code as code,
};

/// The columns a filter may name: column name -> Fluss schema field id and type.
pub(crate) type FieldIds = HashMap<String, (i32, DataType)>;

/// The field ids and types of `schema`'s columns.
pub(crate) fn field_ids(schema: &fluss::metadata::Schema) -> FieldIds {
    schema
        .columns()
        .iter()
        .map(|c| (c.name().to_string(), (c.id(), c.data_type().clone())))
        .collect()
}

/// The part of `expr` the server can evaluate, `None` if nothing is.
pub(crate) fn to_pb_predicate(expr: &Arc<dyn PhysicalExpr>, ids: &FieldIds) -> Option<PbPredicate> {
    let any = expr;
    if let Some(binary) = any.downcast_ref::<BinaryExpr>() {
        match binary.op() {
            Operator::And => {
                let children: Vec<PbPredicate> = [binary.left(), binary.right()]
                    .into_iter()
                    .filter_map(|c| to_pb_predicate(c, ids))
                    .collect();
                return compound(code::AND, children);
            }
            Operator::Or => {
                let left = to_pb_predicate(binary.left(), ids)?;
                let right = to_pb_predicate(binary.right(), ids)?;
                return compound(code::OR, vec![left, right]);
            }
            _ => return comparison(binary, ids),
        }
    }
    if let Some(is_null) = any.downcast_ref::<IsNullExpr>() {
        let (field_id, _) = column(is_null.arg(), ids)?;
        return Some(leaf(code::IS_NULL, field_id, Vec::new()));
    }
    if let Some(not_null) = any.downcast_ref::<IsNotNullExpr>() {
        let (field_id, _) = column(not_null.arg(), ids)?;
        return Some(leaf(code::IS_NOT_NULL, field_id, Vec::new()));
    }
    if let Some(in_list) = any.downcast_ref::<InListExpr>() {
        let (field_id, data_type) = column(in_list.expr(), ids)?;
        let literals = in_list
            .list()
            .iter()
            .map(|item| literal(item, &data_type))
            .collect::<Option<Vec<_>>>()?;
        let function = if in_list.negated() {
            code::NOT_IN
        } else {
            code::IN
        };
        return Some(leaf(function, field_id, literals));
    }
    None
}

fn compound(function: i32, mut children: Vec<PbPredicate>) -> Option<PbPredicate> {
    match children.len() {
        0 => None,
        1 => children.pop(),
        _ => Some(PbPredicate {
            r#type: code::COMPOUND,
            leaf: None,
            compound: Some(PbCompoundPredicate { function, children }),
        }),
    }
}

fn leaf(function: i32, field_id: i32, literals: Vec<PbLiteralValue>) -> PbPredicate {
    PbPredicate {
        r#type: code::LEAF,
        leaf: Some(PbLeafPredicate {
            function,
            field_id,
            literals,
        }),
        compound: None,
    }
}

/// `column op literal` or `literal op column` (flipped).
fn comparison(binary: &BinaryExpr, ids: &FieldIds) -> Option<PbPredicate> {
    let (field, value, op) = match column(binary.left(), ids) {
        Some(field) => (field, binary.right(), *binary.op()),
        None => (
            column(binary.right(), ids)?,
            binary.left(),
            binary.op().swap()?,
        ),
    };
    let (field_id, data_type) = field;
    let function = match op {
        Operator::Eq => code::EQUAL,
        Operator::NotEq => code::NOT_EQUAL,
        Operator::Lt => code::LESS_THAN,
        Operator::LtEq => code::LESS_OR_EQUAL,
        Operator::Gt => code::GREATER_THAN,
        Operator::GtEq => code::GREATER_OR_EQUAL,
        _ => return None,
    };
    let value = literal(value, &data_type)?;
    Some(leaf(function, field_id, vec![value]))
}

fn column(expr: &Arc<dyn PhysicalExpr>, ids: &FieldIds) -> Option<(i32, DataType)> {
    let column = expr.downcast_ref::<Column>()?;
    ids.get(column.name()).cloned()
}

/// A non-null literal of the column's own Fluss type, as fluss-rs encodes it
/// (`to_pb_literal`); `None` for anything else (a cast, another type, a null).
fn literal(expr: &Arc<dyn PhysicalExpr>, column_type: &DataType) -> Option<PbLiteralValue> {
    let value = expr.downcast_ref::<Literal>()?.value();
    let mut pb = PbLiteralValue {
        literal_type: 0,
        is_null: false,
        ..Default::default()
    };
    match (column_type, value) {
        (DataType::Boolean(_), ScalarValue::Boolean(Some(v))) => {
            pb.literal_type = code::BOOLEAN;
            pb.boolean_value = Some(*v);
        }
        (DataType::TinyInt(_), ScalarValue::Int8(Some(v))) => {
            pb.literal_type = code::TINYINT;
            pb.int_value = Some(i32::from(*v));
        }
        (DataType::SmallInt(_), ScalarValue::Int16(Some(v))) => {
            pb.literal_type = code::SMALLINT;
            pb.int_value = Some(i32::from(*v));
        }
        (DataType::Int(_), ScalarValue::Int32(Some(v))) => {
            pb.literal_type = code::INT;
            pb.int_value = Some(*v);
        }
        (DataType::BigInt(_), ScalarValue::Int64(Some(v))) => {
            pb.literal_type = code::BIGINT;
            pb.bigint_value = Some(*v);
        }
        (DataType::Float(_), ScalarValue::Float32(Some(v))) => {
            pb.literal_type = code::FLOAT;
            pb.float_value = Some(*v);
        }
        (DataType::Double(_), ScalarValue::Float64(Some(v))) => {
            pb.literal_type = code::DOUBLE;
            pb.double_value = Some(*v);
        }
        (
            DataType::Char(_) | DataType::String(_),
            ScalarValue::Utf8(Some(v))
            | ScalarValue::LargeUtf8(Some(v))
            | ScalarValue::Utf8View(Some(v)),
        ) => {
            pb.literal_type = match column_type {
                DataType::Char(_) => code::CHAR,
                _ => code::STRING,
            };
            pb.string_value = Some(v.clone());
        }
        (DataType::Date(_), ScalarValue::Date32(Some(v))) => {
            pb.literal_type = code::DATE;
            pb.bigint_value = Some(i64::from(*v));
        }
        _ => return None,
    }
    Some(pb)
}
