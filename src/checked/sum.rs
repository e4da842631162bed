//! `sum()` whose integer and decimal totals fail on overflow: DataFusion's `sum`
//! adds with `add_wrapping`, so seven times `9223372036854775807` sums to a small
//! number. [`CheckedSum`] is DataFusion's `Sum` in every way (name, types, state,
//! statistics) but for its accumulators over `BIGINT`, `BIGINT UNSIGNED` and
//! `DECIMAL` totals, which add with overflow checks and check a decimal's precision.
//! Floating point, interval and `DISTINCT` sums stay DataFusion's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::datatypes::{
    ArrowNativeTypeOp, ArrowNumericType, DataType, Decimal128Type, Decimal256Type, FieldRef,
    Int64Type, UInt64Type,
};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::functions_aggregate::sum::Sum;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, Documentation, EmitTo, Expr, GroupsAccumulator, Operator,
    ReversedUDAF, SetMonotonicity, Signature, StatisticsArgs,
};
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::prim_op::PrimitiveGroupsAccumulator;

/// DataFusion's `sum`, checked (see the module documentation).
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct CheckedSum {
    inner: Sum,
}

/// The total types whose sums are checked.
fn checked_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int64 | DataType::UInt64 | DataType::Decimal128(..) | DataType::Decimal256(..)
    )
}

impl AggregateUDFImpl for CheckedSum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        self.inner.return_type(arg_types)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        let total = args.return_field.data_type().clone();
        if args.is_distinct || !checked_type(&total) {
            return self.inner.accumulator(args);
        }
        Ok(match total {
            DataType::Int64 => Box::new(CheckedSumAccumulator::<Int64Type>::new(total)),
            DataType::UInt64 => Box::new(CheckedSumAccumulator::<UInt64Type>::new(total)),
            DataType::Decimal128(..) => {
                Box::new(CheckedSumAccumulator::<Decimal128Type>::new(total))
            }
            _ => Box::new(CheckedSumAccumulator::<Decimal256Type>::new(total)),
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> DfResult<Box<dyn GroupsAccumulator>> {
        let total = args.return_field.data_type().clone();
        if !checked_type(&total) {
            return self.inner.create_groups_accumulator(args);
        }
        Ok(match total {
            DataType::Int64 => CheckedGroups::<Int64Type>::boxed(total),
            DataType::UInt64 => CheckedGroups::<UInt64Type>::boxed(total),
            DataType::Decimal128(..) => CheckedGroups::<Decimal128Type>::boxed(total),
            _ => CheckedGroups::<Decimal256Type>::boxed(total),
        })
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        let total = args.return_field.data_type().clone();
        if args.is_distinct || !checked_type(&total) {
            return self.inner.create_sliding_accumulator(args);
        }
        // the checked accumulator retracts too
        self.accumulator(args)
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.order_sensitivity()
    }

    fn simplify_expr_op_literal(
        &self,
        agg_function: &AggregateFunction,
        arg: &Expr,
        op: Operator,
        lit: &Expr,
        arg_is_left: bool,
    ) -> DfResult<Option<Expr>> {
        self.inner
            .simplify_expr_op_literal(agg_function, arg, op, lit, arg_is_left)
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn value_from_stats(&self, statistics_args: &StatisticsArgs) -> Option<ScalarValue> {
        self.inner.value_from_stats(statistics_args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.set_monotonicity(data_type)
    }
}

/// The error of a total out of its type's range.
fn overflowed<T>(data_type: &DataType) -> DfResult<T> {
    Err(crate::error::Error::invalid_input(format!(
        "sum overflow: the total is out of range of {} (integer and decimal sums fail on \
         overflow; sum(CAST(x AS DECIMAL(38, 0))) sums wider)",
        crate::cast::sql_type_name(data_type)
    ))
    .into())
}

/// Whether every total fits `data_type`'s precision (decimals; integers always do).
fn fits(array: &ArrayRef, data_type: &DataType) -> bool {
    match data_type {
        DataType::Decimal128(p, _) => array
            .as_primitive::<Decimal128Type>()
            .validate_decimal_precision(*p)
            .is_ok(),
        DataType::Decimal256(p, _) => array
            .as_primitive::<Decimal256Type>()
            .validate_decimal_precision(*p)
            .is_ok(),
        _ => true,
    }
}

/// A sum that adds and retracts with overflow checks.
struct CheckedSumAccumulator<T: ArrowNumericType> {
    sum: T::Native,
    count: u64,
    data_type: DataType,
}

impl<T: ArrowNumericType> std::fmt::Debug for CheckedSumAccumulator<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CheckedSumAccumulator({})", self.data_type)
    }
}

impl<T: ArrowNumericType> CheckedSumAccumulator<T> {
    fn new(data_type: DataType) -> Self {
        Self {
            sum: T::Native::ZERO,
            count: 0,
            data_type,
        }
    }

    fn add(&mut self, values: &ArrayRef, sign: bool) -> DfResult<()> {
        let values = values.as_primitive::<T>();
        for value in values.iter().flatten() {
            let next = if sign {
                self.sum.add_checked(value)
            } else {
                self.sum.sub_checked(value)
            };
            match next {
                Ok(next) => self.sum = next,
                Err(_) => return overflowed(&self.data_type),
            }
        }
        let valid = (values.len() - values.null_count()) as u64;
        self.count = if sign {
            self.count + valid
        } else {
            self.count.saturating_sub(valid)
        };
        Ok(())
    }
}

impl<T: ArrowNumericType> Accumulator for CheckedSumAccumulator<T> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.add(&values[0], true)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        // the state is the partial total (NULL: no values)
        let before = self.count;
        self.add(&states[0], true)?;
        // a partial total counts as values, whatever it summed
        self.count = before + (states[0].len() - states[0].null_count()) as u64;
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.add(&values[0], false)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        let value = (self.count > 0).then_some(self.sum);
        let scalar = ScalarValue::new_primitive::<T>(value, &self.data_type)?;
        if !fits(&scalar.to_array()?, &self.data_type) {
            return overflowed(&self.data_type);
        }
        Ok(scalar)
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn size(&self) -> usize {
        size_of_val(self)
    }
}

/// DataFusion's per-group sum (`PrimitiveGroupsAccumulator`) with a checked add: an
/// overflow marks the accumulator, and the batch that caused it fails.
struct CheckedGroups<T: ArrowNumericType> {
    inner: Box<dyn GroupsAccumulator>,
    overflow: Arc<AtomicBool>,
    data_type: DataType,
    _total: std::marker::PhantomData<fn() -> T>,
}

impl<T: ArrowNumericType + Send> CheckedGroups<T> {
    fn boxed(data_type: DataType) -> Box<dyn GroupsAccumulator> {
        let overflow = Arc::new(AtomicBool::new(false));
        let flag = overflow.clone();
        let inner = PrimitiveGroupsAccumulator::<T, _>::new(&data_type, move |x, y| {
            match x.add_checked(y) {
                Ok(sum) => *x = sum,
                Err(_) => flag.store(true, Ordering::Relaxed),
            }
        });
        Box::new(Self {
            inner: Box::new(inner),
            overflow,
            data_type,
            _total: std::marker::PhantomData,
        })
    }

    fn checked(&self) -> DfResult<()> {
        if self.overflow.load(Ordering::Relaxed) {
            return overflowed(&self.data_type);
        }
        Ok(())
    }

    fn checked_totals(&self, totals: ArrayRef) -> DfResult<ArrayRef> {
        self.checked()?;
        if !fits(&totals, &self.data_type) {
            return overflowed(&self.data_type);
        }
        Ok(totals)
    }
}

impl<T: ArrowNumericType + Send> GroupsAccumulator for CheckedGroups<T> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.inner
            .update_batch(values, group_indices, opt_filter, total_num_groups)?;
        self.checked()
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> DfResult<ArrayRef> {
        let totals = self.inner.evaluate(emit_to)?;
        self.checked_totals(totals)
    }

    fn state(&mut self, emit_to: EmitTo) -> DfResult<Vec<ArrayRef>> {
        let state = self.inner.state(emit_to)?;
        self.checked()?;
        Ok(state)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.inner
            .merge_batch(values, group_indices, total_num_groups)?;
        self.checked()
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> DfResult<Vec<ArrayRef>> {
        self.inner.convert_to_state(values, opt_filter)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }
}
