//! Integer `+`, `-`, `*` and negation over Arrow's checked kernels: an overflow is an
//! error naming the operation and the SQL type, never a wrapped value.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, Result as DfResult, exec_err};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, Operator, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr_common::datum::apply;

/// Which checked operation a function computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckedOperator {
    /// `a + b`.
    Add,
    /// `a - b`.
    Subtract,
    /// `a * b`.
    Multiply,
    /// `-a`.
    Negate,
}

impl CheckedOperator {
    /// The function that computes it (one instance each, shared).
    pub fn udf(self) -> Arc<ScalarUDF> {
        static FUNCTIONS: LazyLock<[Arc<ScalarUDF>; 4]> = LazyLock::new(|| {
            [
                CheckedOperator::Add,
                CheckedOperator::Subtract,
                CheckedOperator::Multiply,
                CheckedOperator::Negate,
            ]
            .map(|op| Arc::new(ScalarUDF::from(CheckedFunction::new(op))))
        });
        FUNCTIONS[self as usize].clone()
    }

    fn name(self) -> &'static str {
        match self {
            Self::Add => "checked_add",
            Self::Subtract => "checked_subtract",
            Self::Multiply => "checked_multiply",
            Self::Negate => "checked_negate",
        }
    }

    fn operator(self) -> Operator {
        match self {
            Self::Add => Operator::Plus,
            Self::Subtract | Self::Negate => Operator::Minus,
            Self::Multiply => Operator::Multiply,
        }
    }
}

/// One checked operation as a DataFusion function.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedFunction {
    op: CheckedOperator,
    signature: Signature,
}

impl CheckedFunction {
    fn new(op: CheckedOperator) -> Self {
        let arity = if op == CheckedOperator::Negate { 1 } else { 2 };
        Self {
            op,
            signature: Signature::any(arity, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for CheckedFunction {
    fn name(&self) -> &str {
        self.op.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        match arg_types.first() {
            Some(t) => Ok(t.clone()),
            None => exec_err!("{} takes an operand", self.name()),
        }
    }

    /// Nullable as the operator is: when an operand is.
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let Some(first) = args.arg_fields.first() else {
            return exec_err!("{} takes an operand", self.name());
        };
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(
            first
                .as_ref()
                .clone()
                .with_name(self.name())
                .with_nullable(nullable),
        ))
    }

    /// The operator's own column name (`a + b`, `(- a)`), so a query's columns are
    /// named as written.
    fn schema_name(&self, args: &[Expr]) -> DfResult<String> {
        let expr = match (self.op, args) {
            (CheckedOperator::Negate, [a]) => Expr::Negative(Box::new(a.clone())),
            (op, [a, b]) => Expr::BinaryExpr(BinaryExpr::new(
                Box::new(a.clone()),
                op.operator(),
                Box::new(b.clone()),
            )),
            _ => return exec_err!("{} takes two operands", self.name()),
        };
        Ok(expr.schema_name().to_string())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let data_type = args.return_type().clone();
        let outcome = match (self.op, args.args.as_slice()) {
            (CheckedOperator::Add, [a, b]) => apply(a, b, numeric::add),
            (CheckedOperator::Subtract, [a, b]) => apply(a, b, numeric::sub),
            (CheckedOperator::Multiply, [a, b]) => apply(a, b, numeric::mul),
            (CheckedOperator::Negate, [a]) => match a {
                ColumnarValue::Array(array) => numeric::neg(array.as_ref())
                    .map(ColumnarValue::Array)
                    .map_err(|e| DataFusionError::ArrowError(Box::new(e), None)),
                ColumnarValue::Scalar(scalar) => scalar
                    .to_array()
                    .and_then(|array| {
                        numeric::neg(array.as_ref())
                            .map_err(|e| DataFusionError::ArrowError(Box::new(e), None))
                    })
                    .and_then(|array| {
                        datafusion::common::ScalarValue::try_from_array(array.as_ref(), 0)
                    })
                    .map(ColumnarValue::Scalar),
            },
            _ => return exec_err!("{} got the wrong number of operands", self.name()),
        };
        outcome.map_err(|e| overflow(e, &data_type))
    }
}

/// An Arrow overflow as an error saying what overflowed and what to do (of kind
/// invalid input: the statement asked for a value its type cannot hold).
fn overflow(e: DataFusionError, data_type: &DataType) -> DataFusionError {
    let DataFusionError::ArrowError(arrow, _) = e.find_root() else {
        return e;
    };
    let ArrowError::ArithmeticOverflow(what) = arrow.as_ref() else {
        return e;
    };
    let what = what.strip_prefix("Overflow happened on: ").unwrap_or(what);
    let sql = crate::cast::sql_type_name(data_type);
    crate::error::Error::invalid_input(format!(
        "{sql} overflow: {what} is out of range (integer arithmetic fails on overflow, as in \
         PostgreSQL; CAST an operand to DECIMAL(38, 0) for a wider result)"
    ))
    .into()
}
