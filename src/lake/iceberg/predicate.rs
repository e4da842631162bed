//! The format-neutral [`LakePredicate`] as an Iceberg predicate, for the planner's
//! partition and file-metrics pruning. What cannot be expressed widens the pruning:
//! an AND drops the part, an OR is dropped whole; literals convert only to a column
//! of their own kind (integers to integer columns, strings to strings, ...), as for
//! Paimon, so a pruned file never held a matching row.

use datafusion::scalar::ScalarValue;
use iceberg::expr::{Predicate, Reference};
use iceberg::spec::{Datum, PrimitiveType, Schema, Type};

use crate::lake::predicate::{CompareOp, Comparison, LakePredicate, integer_literal};

/// `predicate` over the columns of `schema`, if any part can be expressed.
pub fn to_iceberg_predicate(schema: &Schema, predicate: &LakePredicate) -> Option<Predicate> {
    match predicate {
        LakePredicate::And(parts) => parts
            .iter()
            .filter_map(|p| to_iceberg_predicate(schema, p))
            .reduce(Predicate::and),
        LakePredicate::Or(parts) => parts
            .iter()
            .map(|p| to_iceberg_predicate(schema, p))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .reduce(Predicate::or),
        LakePredicate::Compare(Comparison { column, op, value }) => {
            let d = datum(value, column_type(schema, column)?)?;
            let r = Reference::new(column);
            Some(match op {
                CompareOp::Eq => r.equal_to(d),
                CompareOp::NotEq => r.not_equal_to(d),
                CompareOp::Lt => r.less_than(d),
                CompareOp::LtEq => r.less_than_or_equal_to(d),
                CompareOp::Gt => r.greater_than(d),
                CompareOp::GtEq => r.greater_than_or_equal_to(d),
            })
        }
        LakePredicate::IsNull(column) => {
            column_type(schema, column)?;
            Some(Reference::new(column).is_null())
        }
        LakePredicate::IsNotNull(column) => {
            column_type(schema, column)?;
            Some(Reference::new(column).is_not_null())
        }
        LakePredicate::In { column, values } => {
            let ty = column_type(schema, column)?;
            let values = values
                .iter()
                .map(|v| datum(v, ty))
                .collect::<Option<Vec<_>>>()?;
            Some(Reference::new(column).is_in(values))
        }
    }
}

fn column_type<'a>(schema: &'a Schema, column: &str) -> Option<&'a PrimitiveType> {
    match schema.field_by_name(column)?.field_type.as_ref() {
        Type::Primitive(p) => Some(p),
        _ => None,
    }
}

fn datum(value: &ScalarValue, ty: &PrimitiveType) -> Option<Datum> {
    let integer = integer_literal(value);
    Some(match (ty, value) {
        (PrimitiveType::Int, _) => Datum::int(i32::try_from(integer?).ok()?),
        (PrimitiveType::Long, _) => Datum::long(integer?),
        (
            PrimitiveType::String,
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => Datum::string(s),
        (PrimitiveType::Date, ScalarValue::Date32(Some(d))) => Datum::date(*d),
        (PrimitiveType::Boolean, ScalarValue::Boolean(Some(b))) => Datum::bool(*b),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use iceberg::spec::NestedField;

    use super::*;

    fn schema() -> Schema {
        Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(
                    1,
                    "id",
                    Type::Primitive(PrimitiveType::Long),
                )),
                Arc::new(NestedField::optional(
                    2,
                    "dt",
                    Type::Primitive(PrimitiveType::String),
                )),
                Arc::new(NestedField::optional(
                    3,
                    "x",
                    Type::Primitive(PrimitiveType::Double),
                )),
            ])
            .build()
            .unwrap()
    }

    fn compare(column: &str, op: CompareOp, value: ScalarValue) -> LakePredicate {
        LakePredicate::Compare(Comparison {
            column: column.into(),
            op,
            value,
        })
    }

    #[test]
    fn what_cannot_be_expressed_widens_the_pruning() {
        let s = schema();
        let id = compare("id", CompareOp::Eq, ScalarValue::Int64(Some(5)));
        let dt = compare("dt", CompareOp::GtEq, ScalarValue::from("2026-01-01"));
        let double = compare("x", CompareOp::Lt, ScalarValue::Float64(Some(1.5)));
        let text = |p: &LakePredicate| to_iceberg_predicate(&s, p).map(|p| p.to_string());
        assert_eq!(text(&id).as_deref(), Some("id = 5"));
        // an AND keeps what it can, an OR needs every part
        let and = LakePredicate::And(vec![id.clone(), double.clone(), dt.clone()]);
        assert_eq!(
            text(&and).as_deref(),
            Some("(id = 5) AND (dt >= \"2026-01-01\")")
        );
        assert_eq!(
            text(&LakePredicate::Or(vec![id.clone(), double.clone()])),
            None
        );
        assert!(text(&LakePredicate::Or(vec![id.clone(), dt])).is_some());
        // a string literal never prunes an integer column, nor an unknown column
        assert_eq!(
            text(&compare("id", CompareOp::Eq, ScalarValue::from("5"))),
            None
        );
        assert_eq!(text(&LakePredicate::IsNull("nope".into())), None);
        let in_list = LakePredicate::In {
            column: "id".into(),
            values: vec![ScalarValue::Int32(Some(1)), ScalarValue::Int64(Some(2))],
        };
        assert!(text(&in_list).is_some());
    }
}
