//! Statistics of union scans, so DataFusion orders joins and sizes filters as it does
//! for plain parquet.
//!
//! DataFusion picks a hash join's build side by `total_byte_size`, then `num_rows`
//! (`JoinSelection`), and estimates filters from column min/max. A `ListingTable`
//! reads them from every file's footer; the lake side here reads the same footers
//! through the session's file-metadata cache (which the parquet scan then reads them
//! from), so lake files report exactly what `ListingTable` would. The log tail has no
//! footers: its sizes and null counts are estimated from the lake's per-row figures
//! (its values resemble the tiered ones), `Inexact`, and so is everything of a
//! primary-key table, whose updates and deletes make the merged row count smaller
//! than the rows read. Min/max are reported only for rows the footers cover: DataFusion
//! takes even inexact min/max as bounds (a filter's interval analysis narrowing them to
//! one value makes the column a constant, and a sort on it is dropped), so a tail
//! whose values nobody has seen has none; its rows are instead estimated as filtered
//! like the lake's ([`ColumnEstimates::with_filter`]).

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, Statistics, TableReference};
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::execution::cache::cache_manager::CachedFileMetadata;
use datafusion::execution::cache::{SchemaFingerprint, TableScopedPath};
use datafusion::logical_expr::interval_arithmetic::Interval;
use datafusion::physical_expr::intervals::utils::check_support;
use datafusion::physical_expr::{AnalysisContext, PhysicalExpr, analyze};
use futures::{FutureExt, StreamExt, TryStreamExt};

use super::lake_exec::{lake_file, object_location};
use crate::error::{Error, Result};
use crate::lake::LakeFile;

/// Bytes a value of a variable-width column is assumed to take when no lake file
/// says better (a never-tiered table).
const VARIABLE_WIDTH_BYTES: usize = 24;

/// The scope our lake files' statistics are kept under in the session's statistics
/// cache.
const STATISTICS_SCOPE: &str = "fluss union read lake files";

/// Footers read at once while planning.
const FOOTER_READS: usize = 16;

/// Statistics of lake parquet files from their footers, in `files` order, over
/// `schema` (columns by name; a column a file lacks counts as all NULL, as the scan
/// reads it).
pub async fn lake_file_statistics(
    state: &dyn Session,
    files: &[LakeFile],
    schema: &SchemaRef,
) -> Result<Vec<Arc<Statistics>>> {
    let cache = state.runtime_env().cache_manager.get_file_metadata_cache();
    let computed = state.runtime_env().cache_manager.get_file_statistic_cache();
    let fingerprint = Arc::new(SchemaFingerprint::from_schema(schema));
    // Futures owning what they read (a closure over borrowed files is not general
    // enough for the `Send` future an async trait method needs).
    let mut reads = Vec::with_capacity(files.len());
    for file in files {
        let (url, path) = object_location(&file.path)?;
        let store = state.runtime_env().object_store(url).map_err(|e| {
            Error::invalid_input("no object store for the lake files").with_source(e)
        })?;
        // the object meta the scan's reader caches the footer under
        let meta = lake_file(path, file.size).object_meta;
        // A lake file is written once under its name: statistics computed from its
        // footer for this schema are kept in the session's statistics cache, apart
        // from a `ListingTable`'s entries for the same path (ours add distinct counts).
        let key = TableScopedPath {
            table: Some(TableReference::bare(STATISTICS_SCOPE)),
            path: meta.location.clone(),
        };
        if let Some(kept) = computed.as_ref().and_then(|c| c.get(&key))
            && kept.is_valid_for(&meta, &fingerprint)
        {
            reads.push(futures::future::ready(Ok(kept.statistics)).boxed());
            continue;
        }
        let (cache, schema, name) = (cache.clone(), schema.clone(), file.path.clone());
        let (computed, fingerprint) = (computed.clone(), fingerprint.clone());
        reads.push(
            async move {
                let stats = DFParquetMetadata::new(store.as_ref(), &meta)
                    .with_file_metadata_cache(Some(cache))
                    .fetch_statistics(&schema)
                    .await
                    .map_err(|e| {
                        Error::data_invalid("cannot read the footer of a lake file")
                            .with_context("file", name)
                            .with_source(e)
                    })?;
                let stats = Arc::new(with_range_distinct(stats));
                if let Some(computed) = computed {
                    let kept = CachedFileMetadata::new(meta, fingerprint, stats.clone(), None);
                    computed.put(&key, kept);
                }
                Ok::<_, Error>(stats)
            }
            .boxed(),
        );
    }
    futures::stream::iter(reads)
        .buffered(FOOTER_READS)
        .try_collect()
        .await
}

/// `stats` with an `Inexact` distinct count, from the value range, on every column
/// that has min and max but no distinct count: what DataFusion's join estimates
/// derive from the bounds themselves, kept when a union with a tail (no bounds)
/// merges them away (`Statistics::try_merge_iter` keeps a distinct count only when
/// every input has one). TPC-H Q21: `supplier` x `lineitem` was estimated at 11 K
/// rows instead of 5.9 M.
fn with_range_distinct(mut stats: Statistics) -> Statistics {
    let rows = stats.num_rows.get_value().copied();
    for column in &mut stats.column_statistics {
        if column.distinct_count == Precision::Absent
            && let Some(range) = range_cardinality(column)
        {
            column.distinct_count = Precision::Inexact(rows.map_or(range, |r| range.min(r)));
        }
    }
    stats
}

/// Per-column estimates for any number of a table's rows, from what its lake files
/// hold (or from the column types alone, when nothing is tiered).
#[derive(Debug, Clone)]
pub struct ColumnEstimates {
    /// The table's columns.
    pub(super) schema: SchemaRef,
    /// The lake files' statistics summed, over `schema`.
    pub(super) lake: Option<Arc<Statistics>>,
    /// Whether those files are every lake file of the scan.
    pub(super) covers_lake: bool,
    /// The share of rows reported without min/max that DataFusion's filter above
    /// the scan cannot estimate itself ([`Self::with_filter`]).
    pub(super) filter_share: f64,
}

impl ColumnEstimates {
    /// Estimates over `schema` from the statistics of some of the table's lake files
    /// (`covers_lake`: all the scan reads).
    pub fn new(schema: SchemaRef, files: &[Arc<Statistics>], covers_lake: bool) -> Self {
        let lake = (!files.is_empty())
            .then(|| Statistics::try_merge_iter(files.iter().map(|s| s.as_ref()), &schema).ok())
            .flatten()
            .filter(|s| s.num_rows.get_value().is_some_and(|r| *r > 0))
            .map(Arc::new);
        Self {
            schema,
            lake,
            covers_lake,
            filter_share: 1.0,
        }
    }

    /// Estimates without lake files.
    pub fn without_lake(schema: SchemaRef) -> Self {
        Self {
            schema,
            lake: None,
            covers_lake: true,
            filter_share: 1.0,
        }
    }

    /// Whether the estimates were made from every lake file of the scan (so the
    /// files' min/max bound every lake row).
    pub fn covers_lake(&self) -> bool {
        self.covers_lake
    }

    /// These estimates for scans under `predicate` (the filters DataFusion applies
    /// again above the scan, over the table's columns).
    ///
    /// DataFusion estimates a filter from its input's min/max; rows reported without
    /// them (a tail's, a merged primary-key table's) keep every row but for equalities
    /// on columns with a distinct count, so a range filter on the table's date column
    /// let a 10% tail outweigh the lake's filtered 90% and turned TPC-H Q14's join
    /// around. Such rows are taken to be filtered as the lake's values would be (the
    /// same estimate DataFusion makes from the lake's min/max), less what DataFusion
    /// still applies without min/max: the share is the lake's selectivity over
    /// DataFusion's on the unbounded figures. An estimate only; no bound is reported.
    pub fn with_filter(mut self, predicate: Option<&Arc<dyn PhysicalExpr>>) -> Self {
        self.filter_share = predicate
            .and_then(|p| self.lake_filter_share(p))
            .unwrap_or(1.0);
        self
    }

    /// The lake's selectivity of `predicate` over DataFusion's on unbounded figures.
    fn lake_filter_share(&self, predicate: &Arc<dyn PhysicalExpr>) -> Option<f64> {
        let lake = self.lake.as_ref()?;
        if !check_support(predicate, &self.schema) {
            return None;
        }
        let lake_rows = *lake.num_rows.get_value()?;
        let selectivity = |columns: &[ColumnStatistics]| -> Option<f64> {
            let context = AnalysisContext::try_from_statistics(&self.schema, columns).ok()?;
            analyze(predicate, context, &self.schema).ok()?.selectivity
        };
        let bounded = selectivity(&lake.column_statistics)?;
        let unbounded = selectivity(&self.estimate(lake_rows, None, false).column_statistics)?;
        (unbounded > 0.0).then(|| (bounded / unbounded).clamp(0.0, 1.0))
    }

    /// Inexact statistics of `rows` rows of the table, projected to `projection`
    /// (indexes into the table's columns; all of them when `None`): null counts and
    /// byte sizes in the lake's proportion per row, and min/max as the lake files have
    /// them when `bounded`: when every one of the rows is in the files the
    /// estimates were made from.
    pub fn for_rows(&self, rows: usize, projection: Option<&[usize]>, bounded: bool) -> Statistics {
        let rows = if bounded {
            rows
        } else {
            ((rows as f64) * self.filter_share).round() as usize
        };
        self.estimate(rows, projection, bounded)
    }

    /// [`Self::for_rows`] of exactly `rows` rows, whatever the filter.
    fn estimate(&self, rows: usize, projection: Option<&[usize]>, bounded: bool) -> Statistics {
        let all: Vec<usize>;
        let columns = match projection {
            Some(p) => p,
            None => {
                all = (0..self.schema.fields().len()).collect();
                &all
            }
        };
        let lake_rows = self
            .lake
            .as_ref()
            .and_then(|s| s.num_rows.get_value().copied())
            .unwrap_or(0);
        let scale = |n: usize| -> usize {
            if lake_rows == 0 {
                0
            } else {
                ((n as f64) * (rows as f64) / (lake_rows as f64)).round() as usize
            }
        };
        // As DataFusion's parquet scans report it: a projection holding a
        // variable-width column has no total size (`Statistics::calculate_total_byte_size`
        // keeps a file's total, which parquet footers do not give), so joins of such
        // sides compare rows. A size only ours reported turned TPC-H Q14's join around.
        let mut total = Some(0usize);
        let column_statistics: Vec<ColumnStatistics> = columns
            .iter()
            .map(|&i| {
                let field = self.schema.field(i);
                let lake = self
                    .lake
                    .as_ref()
                    .and_then(|s| s.column_statistics.get(i))
                    .filter(|_| lake_rows > 0);
                let byte_size = match lake.and_then(|c| c.byte_size.get_value()) {
                    Some(bytes) => scale(*bytes),
                    None => match field.data_type().primitive_width() {
                        Some(width) => width * rows,
                        None => VARIABLE_WIDTH_BYTES * rows,
                    },
                };
                total = total
                    .zip(field.data_type().primitive_width())
                    .map(|(t, width)| t + width * rows);
                let mut column = ColumnStatistics::new_unknown();
                column.byte_size = Precision::Inexact(byte_size);
                if let Some(lake) = lake {
                    if bounded {
                        column.min_value = lake.min_value.clone().to_inexact();
                        column.max_value = lake.max_value.clone().to_inexact();
                    }
                    column.null_count = match lake.null_count.get_value() {
                        Some(nulls) => Precision::Inexact(scale(*nulls).min(rows)),
                        None => Precision::Absent,
                    };
                    column.distinct_count = match lake.distinct_count.get_value() {
                        Some(distinct) => Precision::Inexact((*distinct).min(rows)),
                        // Without bounds DataFusion takes every row for a distinct
                        // value; the lake's value range estimates it as its min/max
                        // would (TPC-H Q18: `o_custkey` then joins `customer` as
                        // 1.5 M rows, not 0.17 M, and the semi join builds on the
                        // small side). An estimate only: never a bound.
                        None if !bounded => range_cardinality(lake)
                            .map_or(Precision::Absent, |d| Precision::Inexact(d.min(rows))),
                        None => Precision::Absent,
                    };
                }
                column
            })
            .collect();
        Statistics {
            num_rows: Precision::Inexact(rows),
            total_byte_size: total.map_or(Precision::Absent, Precision::Inexact),
            column_statistics,
        }
    }
}

/// Values between a column's min and max (integers, dates, ...), if it has both and
/// they are countable.
fn range_cardinality(column: &ColumnStatistics) -> Option<usize> {
    let (min, max) = (column.min_value.get_value()?, column.max_value.get_value()?);
    Interval::try_new(min.clone(), max.clone())
        .ok()?
        .cardinality()
        .map(|c| usize::try_from(c).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::scalar::ScalarValue;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]))
    }

    fn lake_file(rows: usize, name_bytes: usize, nulls: usize) -> Arc<Statistics> {
        let id = ColumnStatistics::new_unknown()
            .with_min_value(Precision::Exact(ScalarValue::Int64(Some(1))))
            .with_max_value(Precision::Exact(ScalarValue::Int64(Some(rows as i64))))
            .with_null_count(Precision::Exact(0))
            .with_byte_size(Precision::Exact(8 * rows));
        let name = ColumnStatistics::new_unknown()
            .with_null_count(Precision::Exact(nulls))
            .with_byte_size(Precision::Inexact(name_bytes));
        Arc::new(Statistics {
            num_rows: Precision::Exact(rows),
            total_byte_size: Precision::Inexact(8 * rows + name_bytes),
            column_statistics: vec![id, name],
        })
    }

    #[test]
    fn rows_are_estimated_in_the_lakes_proportions() {
        let estimates = ColumnEstimates::new(schema(), &[lake_file(100, 1000, 10)], true);
        let stats = estimates.for_rows(50, None, true);
        assert_eq!(stats.num_rows, Precision::Inexact(50));
        // a variable-width column: no total, as DataFusion's parquet scans report it
        assert_eq!(stats.total_byte_size, Precision::Absent);
        assert_eq!(
            stats.column_statistics[1].byte_size,
            Precision::Inexact(500)
        );
        assert_eq!(
            estimates.for_rows(50, Some(&[0]), true).total_byte_size,
            Precision::Inexact(400)
        );
        let id = &stats.column_statistics[0];
        assert_eq!(
            id.min_value,
            Precision::Inexact(ScalarValue::Int64(Some(1)))
        );
        assert_eq!(
            id.max_value,
            Precision::Inexact(ScalarValue::Int64(Some(100)))
        );
        assert_eq!(stats.column_statistics[1].null_count, Precision::Inexact(5));
        let projected = estimates.for_rows(50, Some(&[1]), true);
        // rows the footers do not cover have no bounds
        let tail = estimates.for_rows(50, None, false);
        assert_eq!(tail.column_statistics[0].min_value, Precision::Absent);
        assert_eq!(tail.column_statistics[0].max_value, Precision::Absent);
        // ... but the lake's range still estimates distinct values (never above rows)
        assert_eq!(
            tail.column_statistics[0].distinct_count,
            Precision::Inexact(50)
        );
        let wide = estimates.for_rows(500, None, false);
        assert_eq!(
            wide.column_statistics[0].distinct_count,
            Precision::Inexact(100)
        );
        assert_eq!(wide.column_statistics[1].distinct_count, Precision::Absent);
        assert_eq!(projected.column_statistics.len(), 1);
        assert_eq!(
            projected.column_statistics[0].byte_size,
            Precision::Inexact(500)
        );
    }

    #[test]
    fn rows_without_bounds_are_filtered_as_the_lakes_values_would_be() {
        use datafusion::logical_expr::Operator;
        use datafusion::physical_expr::expressions::{Column, binary, lit};
        let schema = schema();
        let id: Arc<dyn PhysicalExpr> = Arc::new(Column::new("id", 0));
        let range = |lo: i64, hi: i64| -> Arc<dyn PhysicalExpr> {
            let above = binary(id.clone(), Operator::GtEq, lit(lo), &schema).unwrap();
            let below = binary(id.clone(), Operator::Lt, lit(hi), &schema).unwrap();
            binary(above, Operator::And, below, &schema).unwrap()
        };
        let estimates = ColumnEstimates::new(schema.clone(), &[lake_file(100, 1000, 10)], true);
        // ids 1..=100 in the lake: [11, 21) keeps about a tenth
        let filtered = estimates.clone().with_filter(Some(&range(11, 21)));
        let rows = filtered.for_rows(1000, None, false).num_rows;
        assert!(
            matches!(rows, Precision::Inexact(n) if (90..=110).contains(&n)),
            "{rows:?}"
        );
        // rows reported with the lake's bounds are left to DataFusion's own estimate
        assert_eq!(
            filtered.for_rows(1000, None, true).num_rows,
            Precision::Inexact(1000)
        );
        // no filter, or one DataFusion cannot analyze: every row
        assert_eq!(
            estimates
                .with_filter(None)
                .for_rows(1000, None, false)
                .num_rows,
            Precision::Inexact(1000)
        );
        let without_lake = ColumnEstimates::without_lake(schema.clone());
        assert_eq!(
            without_lake
                .with_filter(Some(&range(11, 21)))
                .for_rows(1000, None, false)
                .num_rows,
            Precision::Inexact(1000)
        );
    }

    #[test]
    fn bounded_columns_estimate_their_distinct_values() {
        let stats = with_range_distinct(lake_file(100, 1000, 10).as_ref().clone());
        assert_eq!(
            stats.column_statistics[0].distinct_count,
            Precision::Inexact(100)
        );
        // no bounds, no estimate
        assert_eq!(stats.column_statistics[1].distinct_count, Precision::Absent);
        // never more than the rows
        let mut few = lake_file(100, 1000, 10).as_ref().clone();
        few.num_rows = Precision::Exact(40);
        assert_eq!(
            with_range_distinct(few).column_statistics[0].distinct_count,
            Precision::Inexact(40)
        );
    }

    #[test]
    fn without_a_lake_sizes_come_from_the_types() {
        let stats = ColumnEstimates::without_lake(schema()).for_rows(10, None, true);
        assert_eq!(
            stats.column_statistics[1].byte_size,
            Precision::Inexact(10 * VARIABLE_WIDTH_BYTES)
        );
        assert_eq!(stats.total_byte_size, Precision::Absent);
        assert_eq!(stats.column_statistics[0].min_value, Precision::Absent);
        // an empty lake file says nothing
        let empty = ColumnEstimates::new(schema(), &[lake_file(0, 0, 0)], true);
        assert!(empty.lake.is_none());
    }
}
