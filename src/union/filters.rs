//! Filter placement: for each filter DataFusion pushes into a Fluss table scan, which
//! parts of the union read may use it, and whether the scan makes it exact.
//!
//! The rules (docs/DESIGN.md "Union semantics" and "Pushdown contract"):
//! - a filter on partition columns only prunes partitions on both sides, exactly:
//!   it is the one kind the scan reports `Exact`;
//! - log tables: any filter may prune the lake (partitions, buckets, files, row
//!   groups) and skip log batches by their V1 statistics; DataFusion re-applies it;
//! - primary-key tables: only filters on partition and key columns may prune the lake
//!   before the merge (a filter on a value column would drop a lake row the tail
//!   updates, and its stale version would surface), and none skips changelog
//!   batches; a lake split already holding one version per key (raw convertible) may
//!   be pruned by any filter that names no partition column, since the anti-join
//!   still runs against every tail key;
//! - equality or `IN` on every bucket key selects the buckets those values hash to,
//!   on both sides;
//! - LIMIT is pushed only when every filter is exact.
//!
//! Literal comparisons are recognised once, here ([`comparison`]); the lake formats
//! translate the format-neutral [`LakePredicate`] into their own predicates.

use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use datafusion::scalar::ScalarValue;

use crate::source::FlussTable;

pub use crate::lake::predicate::{CompareOp, Comparison, LakePredicate};

/// The key columns of a table, by name: what filter placement depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyColumns {
    /// Partition columns.
    pub partition_keys: Vec<String>,
    /// Primary-key columns (empty for log tables).
    pub primary_keys: Vec<String>,
    /// Bucket-key columns.
    pub bucket_keys: Vec<String>,
}

impl KeyColumns {
    /// The key columns of `table`.
    pub fn of(table: &FlussTable) -> Self {
        Self {
            partition_keys: table.info.get_partition_keys().to_vec(),
            primary_keys: table.info.get_primary_keys().clone(),
            bucket_keys: table.info.get_bucket_keys().to_vec(),
        }
    }

    fn is_primary_key_table(&self) -> bool {
        !self.primary_keys.is_empty()
    }
}

/// Where one filter may be used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placement {
    /// Prunes partitions by name, on both sides.
    pub partition_pruning: bool,
    /// Prunes the lake plan: partitions, buckets, files (and, on log tables, row
    /// groups).
    pub lake_pruning: bool,
    /// Prunes row groups of primary-key lake splits that hold one version per key.
    pub raw_lake_pruning: bool,
    /// Skips log batches whose V1 statistics exclude it.
    pub log_batch_skipping: bool,
    /// Fixes bucket-key values (equality or `IN` on a bucket key).
    pub bucket_pruning: bool,
    /// The scan guarantees it: DataFusion need not re-apply it.
    pub exact: bool,
}

fn column_names(expr: &Expr) -> Vec<String> {
    expr.column_refs()
        .into_iter()
        .map(|c| c.name.clone())
        .collect()
}

/// Whether `expr` names columns, all of them in `allowed`.
fn only(columns: &[String], allowed: &[&String]) -> bool {
    !columns.is_empty() && columns.iter().all(|c| allowed.contains(&c))
}

/// Places one filter.
pub fn place(filter: &Expr, keys: &KeyColumns) -> Placement {
    let columns = column_names(filter);
    let partition: Vec<&String> = keys.partition_keys.iter().collect();
    let on_partitions = only(&columns, &partition);
    let names_partition = columns.iter().any(|c| keys.partition_keys.contains(c));
    let pk = keys.is_primary_key_table();
    let merge_safe: Vec<&String> = keys
        .partition_keys
        .iter()
        .chain(&keys.primary_keys)
        .collect();
    Placement {
        partition_pruning: on_partitions,
        lake_pruning: if pk {
            only(&columns, &merge_safe)
        } else {
            !columns.is_empty()
        },
        raw_lake_pruning: pk && !names_partition,
        log_batch_skipping: !pk,
        bucket_pruning: key_literals(filter)
            .iter()
            .any(|(c, _)| keys.bucket_keys.contains(c)),
        exact: on_partitions && prunes_exactly(filter),
    }
}

/// Whether the partition pruner evaluates `filter` for every partition, by its form:
/// comparisons, `IN` lists, `BETWEEN`, null tests, `NOT`, `AND` and `OR` of partition
/// columns and literals, and casts that cannot fail. Anything else (functions, `LIKE`,
/// arithmetic, a cast that may fail on some value) is pushed `Inexact`: the pruner
/// keeps a partition it cannot judge, and DataFusion filters the rows again. So an
/// `Exact` filter holds by construction, never by the partitions a table happens to
/// have (issue 22; an `Exact` filter's rows are never filtered again).
pub fn prunes_exactly(filter: &Expr) -> bool {
    use datafusion::logical_expr::expr::InList;
    use datafusion::logical_expr::{Between, Cast, TryCast};
    match filter {
        Expr::Column(_) | Expr::Literal(..) => true,
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            matches!(
                op,
                Operator::Eq
                    | Operator::NotEq
                    | Operator::Lt
                    | Operator::LtEq
                    | Operator::Gt
                    | Operator::GtEq
                    | Operator::And
                    | Operator::Or
                    | Operator::IsDistinctFrom
                    | Operator::IsNotDistinctFrom
            ) && prunes_exactly(left)
                && prunes_exactly(right)
        }
        Expr::Not(e)
        | Expr::IsNull(e)
        | Expr::IsNotNull(e)
        | Expr::IsTrue(e)
        | Expr::IsFalse(e)
        | Expr::IsNotTrue(e)
        | Expr::IsNotFalse(e)
        | Expr::IsUnknown(e)
        | Expr::IsNotUnknown(e) => prunes_exactly(e),
        Expr::InList(InList { expr, list, .. }) => {
            prunes_exactly(expr) && list.iter().all(prunes_exactly)
        }
        Expr::Between(Between {
            expr, low, high, ..
        }) => prunes_exactly(expr) && prunes_exactly(low) && prunes_exactly(high),
        Expr::Cast(Cast { expr, field, .. }) | Expr::TryCast(TryCast { expr, field, .. }) => {
            matches!(expr.as_ref(), Expr::Column(_) | Expr::Literal(..))
                && cast_never_fails(field.data_type())
        }
        // functions, LIKE, arithmetic, subqueries, ...
        _ => false,
    }
}

/// A cast to `to` that every partition value survives, whatever its type: to text.
fn cast_never_fails(to: &datafusion::arrow::datatypes::DataType) -> bool {
    use datafusion::arrow::datatypes::DataType;
    matches!(
        to,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// The filters of one scan, each with its placement.
#[derive(Debug, Clone, Default)]
pub struct PlacedFilters {
    filters: Vec<(Expr, Placement)>,
    bucket_keys: Vec<String>,
}

impl PlacedFilters {
    /// Places every filter of a scan of a table with `keys`.
    pub fn new(filters: &[Expr], keys: &KeyColumns) -> Self {
        Self {
            filters: filters
                .iter()
                .map(|f| (f.clone(), place(f, keys)))
                .collect(),
            bucket_keys: keys.bucket_keys.clone(),
        }
    }

    fn select(&self, pick: impl Fn(&Placement) -> bool) -> Vec<Expr> {
        self.filters
            .iter()
            .filter(|(_, p)| pick(p))
            .map(|(f, _)| f.clone())
            .collect()
    }

    /// Every filter.
    pub fn all(&self) -> Vec<Expr> {
        self.select(|_| true)
    }

    /// Filters on partition columns only.
    pub fn partition(&self) -> Vec<Expr> {
        self.select(|p| p.partition_pruning)
    }

    /// The filters on partition columns the scan makes exact ([`prunes_exactly`]).
    pub fn exact_partition(&self) -> Vec<Expr> {
        self.select(|p| p.partition_pruning && p.exact)
    }

    /// The other filters on partition columns: they prune the partitions they can
    /// judge, and DataFusion applies them again.
    pub fn inexact_partition(&self) -> Vec<Expr> {
        self.select(|p| p.partition_pruning && !p.exact)
    }

    /// Filters the scan does not make exact: DataFusion applies them again above it.
    pub fn inexact(&self) -> Vec<Expr> {
        self.select(|p| !p.exact)
    }

    /// Filters the lake plan may prune with.
    pub fn lake(&self) -> Vec<Expr> {
        self.select(|p| p.lake_pruning)
    }

    /// Filters that may prune the row groups of one-version-per-key lake splits.
    pub fn raw_lake(&self) -> Vec<Expr> {
        self.select(|p| p.raw_lake_pruning)
    }

    /// Filters log batches may be skipped by.
    pub fn log(&self) -> Vec<Expr> {
        self.select(|p| p.log_batch_skipping)
    }

    /// Whether the scan makes every filter exact (then LIMIT may be pushed).
    pub fn all_exact(&self) -> bool {
        self.filters.iter().all(|(_, p)| p.exact)
    }

    /// The values the filters fix for each bucket key, in bucket-key order, when they
    /// fix every bucket key; `None` otherwise.
    pub fn bucket_values(&self) -> Option<Vec<Vec<ScalarValue>>> {
        if self.bucket_keys.is_empty() {
            return None;
        }
        let mut values: Vec<Option<Vec<ScalarValue>>> = vec![None; self.bucket_keys.len()];
        for (filter, placement) in &self.filters {
            if !placement.bucket_pruning {
                continue;
            }
            for (column, literals) in key_literals(filter) {
                if let Some(i) = self.bucket_keys.iter().position(|k| *k == column) {
                    values[i] = Some(literals);
                }
            }
        }
        values.into_iter().collect()
    }

    /// The values the filters fix for each of `columns` (`=` or `IN` on the bare
    /// column), in `columns` order, when they fix every one; `None` otherwise. Every
    /// filter must hold, so the values one filter fixes cover every row that passes.
    pub fn fixed_values(&self, columns: &[String]) -> Option<Vec<Vec<ScalarValue>>> {
        if columns.is_empty() {
            return None;
        }
        let mut values: Vec<Option<Vec<ScalarValue>>> = vec![None; columns.len()];
        for (filter, _) in &self.filters {
            for (column, literals) in key_literals(filter) {
                if let Some(i) = columns.iter().position(|k| *k == column) {
                    values[i] = Some(literals);
                }
            }
        }
        values.into_iter().collect()
    }

    /// The distinct values [`Self::fixed_values`] gives each of `columns`, when they
    /// make at most `max` keys (every combination of one value per column): the one
    /// test of whether a scan reads the keys as lookups.
    pub fn fixed_keys_within(
        &self,
        columns: &[String],
        max: usize,
    ) -> Option<Vec<Vec<ScalarValue>>> {
        let mut values = self.fixed_values(columns)?;
        for column in &mut values {
            let mut seen = std::collections::HashSet::new();
            column.retain(|v| seen.insert(v.clone()));
        }
        let keys = values
            .iter()
            .try_fold(1usize, |keys, column| keys.checked_mul(column.len()))?;
        (keys <= max).then_some(values)
    }

    /// `filter (exact|inexact)` for each filter, as EXPLAIN shows them.
    pub fn describe(&self) -> Vec<String> {
        self.filters
            .iter()
            .map(|(f, p)| format!("{f} ({})", if p.exact { "exact" } else { "inexact" }))
            .collect()
    }
}

/// A column, possibly under casts (`CAST(c AS ..)` compares the column's values).
fn column_of(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Column(c) => Some(c.name.clone()),
        Expr::Cast(c) => column_of(&c.expr),
        _ => None,
    }
}

fn literal_of(expr: &Expr) -> Option<&ScalarValue> {
    match expr {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

/// `column op literal` or `literal op column` (turned around).
pub fn comparison(expr: &Expr) -> Option<Comparison> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = expr else {
        return None;
    };
    let (column, value, op) = match (column_of(left), literal_of(right)) {
        (Some(c), Some(v)) => (c, v, *op),
        _ => match (literal_of(left), column_of(right)) {
            (Some(v), Some(c)) => (c, v, op.swap()?),
            _ => return None,
        },
    };
    let op = match op {
        Operator::Eq => CompareOp::Eq,
        Operator::NotEq => CompareOp::NotEq,
        Operator::Lt => CompareOp::Lt,
        Operator::LtEq => CompareOp::LtEq,
        Operator::Gt => CompareOp::Gt,
        Operator::GtEq => CompareOp::GtEq,
        _ => return None,
    };
    Some(Comparison {
        column,
        op,
        value: value.clone(),
    })
}

/// `(column, literal values)` fixed by a filter: `c = v`, `v = c`, `c IN (v, ...)`,
/// conjunctions of those, and disjunctions (DataFusion writes a short `IN` list as
/// `c = a OR c = b`): a column every branch fixes takes the union of their values.
/// Null literals fix nothing.
pub fn key_literals(filter: &Expr) -> Vec<(String, Vec<ScalarValue>)> {
    match filter {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => {
            let mut out = key_literals(left);
            out.extend(key_literals(right));
            out
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let (left, right) = (key_literals(left), key_literals(right));
            left.into_iter()
                .filter_map(|(column, mut values)| {
                    // a branch fixing a column twice (`c = 1 AND c = 2`) fixes it to
                    // the values of either: their union is still a superset
                    let more: Vec<ScalarValue> = right
                        .iter()
                        .filter(|(c, _)| *c == column)
                        .flat_map(|(_, v)| v.iter().cloned())
                        .collect();
                    if more.is_empty() {
                        return None;
                    }
                    for value in more {
                        if !values.contains(&value) {
                            values.push(value);
                        }
                    }
                    Some((column, values))
                })
                .collect()
        }
        Expr::InList(list) if !list.negated => match list.expr.as_ref() {
            Expr::Column(c) => list
                .list
                .iter()
                .map(|e| literal_of(e).filter(|v| !v.is_null()).cloned())
                .collect::<Option<Vec<_>>>()
                .map(|v| vec![(c.name.clone(), v)])
                .unwrap_or_default(),
            _ => Vec::new(),
        },
        _ => match comparison(filter) {
            // only a bare column: a cast may map several values to one
            Some(c)
                if c.op == CompareOp::Eq
                    && !c.value.is_null()
                    && matches!(filter, Expr::BinaryExpr(b)
                        if matches!(*b.left, Expr::Column(_)) || matches!(*b.right, Expr::Column(_))) =>
            {
                vec![(c.column, vec![c.value])]
            }
            _ => Vec::new(),
        },
    }
}

/// Every combination of one value per column (the keys a set of `k IN (...)`
/// filters fixes), in column order.
pub(crate) fn combinations(values: &[Vec<ScalarValue>]) -> Vec<Vec<ScalarValue>> {
    let mut rows: Vec<Vec<ScalarValue>> = vec![Vec::new()];
    for column in values {
        rows = rows
            .into_iter()
            .flat_map(|r| {
                column.iter().map(move |v| {
                    let mut r = r.clone();
                    r.push(v.clone());
                    r
                })
            })
            .collect();
    }
    rows
}

/// The conjunction of what can be expressed of `filters` over `columns` (others are
/// left out, which only widens the pruning).
pub fn lake_predicate(filters: &[Expr], columns: &[String]) -> Option<LakePredicate> {
    let mut parts: Vec<LakePredicate> = filters
        .iter()
        .filter_map(|f| lake_part(f, columns))
        .collect();
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(LakePredicate::And(parts)),
    }
}

fn lake_part(expr: &Expr, columns: &[String]) -> Option<LakePredicate> {
    let allowed = |c: String| columns.contains(&c).then_some(c);
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => match (lake_part(left, columns), lake_part(right, columns)) {
            (Some(l), Some(r)) => Some(LakePredicate::And(vec![l, r])),
            (Some(x), None) | (None, Some(x)) => Some(x),
            (None, None) => None,
        },
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => Some(LakePredicate::Or(vec![
            lake_part(left, columns)?,
            lake_part(right, columns)?,
        ])),
        Expr::IsNull(e) => Some(LakePredicate::IsNull(allowed(column_of(e)?)?)),
        Expr::IsNotNull(e) => Some(LakePredicate::IsNotNull(allowed(column_of(e)?)?)),
        Expr::InList(list) if !list.negated => Some(LakePredicate::In {
            column: allowed(column_of(&list.expr)?)?,
            values: list
                .list
                .iter()
                .map(|e| literal_of(e).cloned())
                .collect::<Option<Vec<_>>>()?,
        }),
        _ => {
            let c = comparison(expr)?;
            allowed(c.column.clone())?;
            Some(LakePredicate::Compare(c))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{cast, col, lit};

    /// Columns `id, name, score, dt`; partitioned by `dt`, bucketed by `id`; the PK
    /// table's key is `(id, dt)`.
    fn keys(pk: bool) -> KeyColumns {
        KeyColumns {
            partition_keys: vec!["dt".into()],
            primary_keys: if pk {
                vec!["id".into(), "dt".into()]
            } else {
                vec![]
            },
            bucket_keys: vec!["id".into()],
        }
    }

    /// `(partition, lake, raw lake, log skipping, bucket, exact)`.
    type Flags = (bool, bool, bool, bool, bool, bool);

    fn flags(p: Placement) -> Flags {
        (
            p.partition_pruning,
            p.lake_pruning,
            p.raw_lake_pruning,
            p.log_batch_skipping,
            p.bucket_pruning,
            p.exact,
        )
    }

    #[test]
    fn partition_filters_are_exact_by_their_form_only() {
        use datafusion::functions::expr_fn::upper;
        let exact = [
            col("dt").eq(lit("2024-01-01")),
            col("dt").in_list(vec![lit("a"), lit("b")], false),
            !col("dt").between(lit("a"), lit("b")),
            col("dt").is_null().or(col("dt").lt(lit("c"))),
            cast(col("dt"), datafusion::arrow::datatypes::DataType::Utf8).eq(lit("x")),
        ];
        for filter in &exact {
            assert!(prunes_exactly(filter), "{filter}");
            assert!(place(filter, &keys(false)).exact, "{filter}");
        }
        let inexact = [
            upper(col("dt")).eq(lit("X")),
            col("dt").like(lit("%-01")),
            (col("dt") + lit(1)).eq(lit(2)),
            cast(col("dt"), datafusion::arrow::datatypes::DataType::Date32)
                .gt(lit(ScalarValue::Date32(Some(1)))),
        ];
        for filter in &inexact {
            assert!(!prunes_exactly(filter), "{filter}");
            let placement = place(filter, &keys(false));
            assert!(placement.partition_pruning && !placement.exact, "{filter}");
        }
    }

    #[test]
    fn placement_by_table_kind_and_filter_shape() {
        let t = true;
        let f = false;
        let cases: Vec<(&str, Expr, Flags, Flags)> = vec![
            // name, filter, log table, primary-key table
            (
                "key =",
                col("id").eq(lit(4i64)),
                (f, t, f, t, t, f),
                (f, t, t, f, t, f),
            ),
            (
                "key range",
                col("id").gt(lit(4i64)),
                (f, t, f, t, f, f),
                (f, t, t, f, f, f),
            ),
            (
                "key IN",
                col("id").in_list(vec![lit(1i64), lit(2i64)], false),
                (f, t, f, t, t, f),
                (f, t, t, f, t, f),
            ),
            (
                "partition",
                col("dt").eq(lit("2024-01-01")),
                (t, t, f, t, f, t),
                (t, t, f, f, f, t),
            ),
            (
                "non-key",
                col("score").lt(lit(10)),
                (f, t, f, t, f, f),
                (f, f, t, f, f, f),
            ),
            (
                "key AND non-key",
                col("id").eq(lit(4i64)).and(col("score").lt(lit(10))),
                (f, t, f, t, t, f),
                (f, f, t, f, t, f),
            ),
            (
                "partition AND non-key",
                col("dt").eq(lit("x")).and(col("score").lt(lit(10))),
                (f, t, f, t, f, f),
                (f, f, f, f, f, f),
            ),
            (
                "key OR non-key",
                col("id").eq(lit(4i64)).or(col("score").lt(lit(10))),
                (f, t, f, t, f, f),
                (f, f, t, f, f, f),
            ),
            (
                "partition OR partition",
                col("dt").eq(lit("a")).or(col("dt").eq(lit("b"))),
                (t, t, f, t, f, t),
                (t, t, f, f, f, t),
            ),
            (
                "NOT key",
                !col("id").eq(lit(4i64)),
                (f, t, f, t, f, f),
                (f, t, t, f, f, f),
            ),
            (
                "non-key IS NULL",
                col("name").is_null(),
                (f, t, f, t, f, f),
                (f, f, t, f, f, f),
            ),
            (
                "partition IS NULL",
                col("dt").is_null(),
                (t, t, f, t, f, t),
                (t, t, f, f, f, t),
            ),
            (
                "no column",
                lit(true),
                (f, f, f, t, f, f),
                (f, f, t, f, f, f),
            ),
        ];
        for (name, filter, log, pk) in cases {
            assert_eq!(
                flags(place(&filter, &keys(false))),
                log,
                "log table: {name}"
            );
            assert_eq!(
                flags(place(&filter, &keys(true))),
                pk,
                "primary-key table: {name}"
            );
        }
    }

    #[test]
    fn placed_filters_select_sides_and_fix_buckets() {
        let filters = vec![
            col("dt").eq(lit("a")),
            col("id").in_list(vec![lit(1i64), lit(2i64)], false),
            col("score").gt(lit(3)),
        ];
        let pk = PlacedFilters::new(&filters, &keys(true));
        assert_eq!(pk.partition(), vec![filters[0].clone()]);
        assert_eq!(pk.lake(), vec![filters[0].clone(), filters[1].clone()]);
        assert_eq!(pk.raw_lake(), vec![filters[1].clone(), filters[2].clone()]);
        assert!(pk.log().is_empty());
        assert!(!pk.all_exact());
        assert_eq!(
            pk.bucket_values(),
            Some(vec![vec![
                ScalarValue::Int64(Some(1)),
                ScalarValue::Int64(Some(2))
            ]])
        );
        let log = PlacedFilters::new(&filters, &keys(false));
        assert_eq!(log.log().len(), 3);
        assert!(PlacedFilters::new(&filters[..1], &keys(false)).all_exact());
        assert_eq!(
            PlacedFilters::new(&filters[2..], &keys(false)).bucket_values(),
            None
        );
        assert_eq!(log.describe()[0], "dt = Utf8(\"a\") (exact)");
    }

    #[test]
    fn comparisons_and_literals_are_recognised_once() {
        let c = comparison(&lit(5i64).lt(col("id"))).unwrap();
        assert_eq!((c.column.as_str(), c.op), ("id", CompareOp::Gt));
        assert!(comparison(&col("id").eq(col("score"))).is_none());
        assert_eq!(
            key_literals(&col("id").eq(lit(ScalarValue::Int64(None)))),
            vec![]
        );
        assert_eq!(
            key_literals(&lit(3i64).eq(col("id"))),
            vec![("id".to_string(), vec![ScalarValue::Int64(Some(3))])]
        );
    }

    #[test]
    fn a_disjunction_fixes_what_every_branch_fixes() {
        let v = |i: i64| ScalarValue::Int64(Some(i));
        // DataFusion's form of `id IN (1, 2, 3)`
        let or = col("id")
            .eq(lit(1i64))
            .or(col("id").eq(lit(2i64)))
            .or(col("id").eq(lit(3i64)));
        assert_eq!(
            key_literals(&or),
            vec![("id".to_string(), vec![v(1), v(2), v(3)])]
        );
        // a branch not fixing the column fixes nothing
        let partial = col("id").eq(lit(1i64)).or(col("score").eq(lit(2i64)));
        assert_eq!(key_literals(&partial), vec![]);
        // composite keys: each column's values across the branches
        let pairs = col("a")
            .eq(lit(1i64))
            .and(col("b").eq(lit(2i64)))
            .or(col("a").eq(lit(3i64)).and(col("b").eq(lit(4i64))));
        assert_eq!(
            key_literals(&pairs),
            vec![
                ("a".to_string(), vec![v(1), v(3)]),
                ("b".to_string(), vec![v(2), v(4)])
            ]
        );
        let placed = PlacedFilters::new(
            &[pairs],
            &KeyColumns {
                primary_keys: vec!["a".into(), "b".into()],
                ..Default::default()
            },
        );
        assert_eq!(
            placed.fixed_values(&["a".to_string(), "b".to_string()]),
            Some(vec![vec![v(1), v(3)], vec![v(2), v(4)]])
        );
        assert_eq!(placed.fixed_values(&["c".to_string()]), None);
    }

    #[test]
    fn lake_predicates_widen_what_they_cannot_express() {
        let columns = vec!["id".to_string(), "dt".to_string()];
        let and = col("id").gt(lit(1i64)).and(col("score").lt(lit(2)));
        assert_eq!(
            lake_predicate(&[and], &columns),
            Some(LakePredicate::Compare(Comparison {
                column: "id".into(),
                op: CompareOp::Gt,
                value: ScalarValue::Int64(Some(1))
            }))
        );
        let or = col("id").gt(lit(1i64)).or(col("score").lt(lit(2)));
        assert_eq!(lake_predicate(&[or], &columns), None);
        let not = !col("id").eq(lit(1i64));
        assert_eq!(lake_predicate(&[not], &columns), None);
        let both = lake_predicate(&[col("dt").is_null(), col("id").is_not_null()], &columns);
        assert_eq!(
            both,
            Some(LakePredicate::And(vec![
                LakePredicate::IsNull("dt".into()),
                LakePredicate::IsNotNull("id".into())
            ]))
        );
    }
}
