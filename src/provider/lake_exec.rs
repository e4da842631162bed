//! Lake-side scan nodes: `FlussLakeMergeExec` reads merge-on-read tasks through the
//! [`LakeTable`] that planned them; plain parquet splits are planned as DataFusion's
//! own parquet `DataSourceExec` ([`parquet_scan`]).

use object_store::path::Path as ObjectPath;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::config::ConfigOptions;
use datafusion::common::config::TableParquetOptions;
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::{
    CachedParquetFileReaderFactory, ParquetRowSelection,
};
use datafusion::datasource::physical_plan::{
    FileGroup, FileScanConfig, FileScanConfigBuilder, ParquetSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchemaBuilder;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::parquet::arrow::RowNumber;
use datafusion::parquet::arrow::arrow_reader::RowSelection;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::utils::reassign_expr_columns;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::field_id_scan::FlussFieldIdScanExec;
use super::field_ids::FieldIdAdapterFactory;
use super::statistics::ColumnEstimates;
use crate::cast::{batch_of, column_as};
use crate::error::{Error, ErrorKind, Result};
use crate::lake::{ColumnMapping, LakeFile, LakeTable, MergeTask};
use crate::source::{FlussSource, FlussTable};

/// Casts a lake batch to the Fluss schema: columns by name, types cast (e.g. lake
/// timestamps in another unit), lake-only columns (`__bucket`, ...) dropped.
pub fn to_fluss_schema(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let source = batch.schema();
    let mut columns = Vec::with_capacity(target.fields().len());
    for field in target.fields() {
        let index = source.index_of(field.name()).map_err(|_| {
            Error::data_invalid(format!(
                "lake data has no column '{}' (lake schema does not match the Fluss schema)",
                field.name()
            ))
        })?;
        let column = batch.column(index);
        columns.push(column_as(
            column,
            field,
            ErrorKind::DataInvalid,
            "read from the lake",
        )?);
    }
    batch_of(target, columns, batch.num_rows())
}

/// Reads merge-on-read tasks of a snapshot, casting to `schema` (a projection of the
/// Fluss schema). The lake opens its reader when the stream is first polled.
pub fn merged_stream(
    lake: Arc<dyn LakeTable>,
    snapshot_id: i64,
    tasks: Vec<MergeTask>,
    schema: SchemaRef,
    table_name: String,
) -> BoxStream<'static, Result<RecordBatch>> {
    let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let name = table_name.clone();
    futures::stream::once(async move { lake.read(snapshot_id, tasks, columns).await })
        .try_flatten()
        .map(move |b| {
            b.and_then(|b| to_fluss_schema(&b, &schema))
                .map_err(|e| e.with_context("table", &name))
        })
        .boxed()
}

/// Merge-on-read lake tasks, one output partition per group of tasks.
#[derive(Debug)]
pub struct FlussLakeMergeExec {
    pub(super) lake: Arc<dyn LakeTable>,
    /// The source the table is read from (a shipped plan opens the lake through it).
    pub(super) source: Arc<dyn FlussSource>,
    pub(super) table: FlussTable,
    pub(super) groups: Vec<Vec<MergeTask>>,
    pub(super) schema: SchemaRef,
    pub(super) snapshot_id: i64,
    pub(super) limit: Option<usize>,
    /// Table columns of `schema` (all when `None`), for the statistics.
    pub(super) projection: Option<Vec<usize>>,
    pub(super) estimates: ColumnEstimates,
    pub(super) properties: Arc<PlanProperties>,
    pub(super) metrics: ExecutionPlanMetricsSet,
}

impl FlussLakeMergeExec {
    /// A scan of `groups` of tasks producing `schema` (the table's `projection`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        lake: Arc<dyn LakeTable>,
        source: Arc<dyn FlussSource>,
        table: FlussTable,
        groups: Vec<Vec<MergeTask>>,
        schema: SchemaRef,
        snapshot_id: i64,
        limit: Option<usize>,
        projection: Option<Vec<usize>>,
        estimates: ColumnEstimates,
    ) -> Self {
        let properties = super::describe::leaf_properties(&schema, groups.len());
        Self {
            lake,
            source,
            table,
            groups,
            schema,
            snapshot_id,
            limit,
            projection,
            estimates,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for FlussLakeMergeExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        super::describe::as_format(t, f, |f| {
            let splits: usize = self.groups.iter().map(Vec::len).sum();
            write!(
                f,
                "FlussLakeMergeExec: table={}, lake_snapshot={}, merge_on_read_splits={}, projection=[{}]",
                self.table.path,
                self.snapshot_id,
                splits,
                super::describe::describe_projection(&self.schema)
            )
        })
    }
}

impl ExecutionPlan for FlussLakeMergeExec {
    fn name(&self) -> &str {
        "FlussLakeMergeExec"
    }

    super::describe::leaf_node_methods!();
    super::describe::no_expressions!();

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let splits = self.groups.get(partition).cloned().unwrap_or_default();
        let rows = MetricBuilder::new(&self.metrics).counter("lake_rows", partition);
        let stream = if splits.is_empty() {
            futures::stream::empty().boxed()
        } else {
            merged_stream(
                self.lake.clone(),
                self.snapshot_id,
                splits,
                self.schema.clone(),
                self.table.path.to_string(),
            )
            .map(move |b| {
                b.inspect(|b| rows.add(b.num_rows()))
                    .map_err(DataFusionError::from)
            })
            .boxed()
        };
        let stream = super::describe::limit_stream(stream, self.limit);
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// Inexact: the tasks' rows before merging, columns estimated from the lake's.
    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let rows = |g: &Vec<MergeTask>| g.iter().map(|t| t.rows.max(0) as usize).sum::<usize>();
        let rows = match partition {
            Some(p) => self.groups.get(p).map_or(0, rows),
            None => self.groups.iter().map(rows).sum(),
        };
        let rows = self.limit.map_or(rows, |l| rows.min(l));
        Ok(Arc::new(self.estimates.for_rows(
            rows,
            self.projection.as_deref(),
            false,
        )))
    }
}

/// `(object store URL, path within it)` of a lake file path or URL. The path is the
/// file's key exactly as the lake names it: the lake formats escape characters of
/// partition values themselves (Paimon writes `ts=2024-05-01 10%3A30%3A00`, a `%` in
/// the file's name), so the key is neither decoded nor escaped again.
pub fn object_location(path: &str) -> Result<(ObjectStoreUrl, ObjectPath)> {
    let bad = |e: object_store::path::Error| {
        Error::invalid_input("lake file path is not an object path")
            .with_context("file", path)
            .with_source(e)
    };
    let local = path
        .strip_prefix("file://")
        .or_else(|| path.strip_prefix("file:"))
        .unwrap_or(path);
    if local.starts_with('/') {
        return Ok((
            ObjectStoreUrl::local_filesystem(),
            ObjectPath::parse(local).map_err(bad)?,
        ));
    }
    let url = url::Url::parse(path).map_err(|e| {
        Error::invalid_input("lake file path is not a URL")
            .with_context("file", path)
            .with_source(e)
    })?;
    let base = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    let store = ObjectStoreUrl::parse(&base).map_err(|e| {
        Error::invalid_input("bad object store URL")
            .with_context("file", path)
            .with_source(e)
    })?;
    // the key as written after `scheme://host/`, not the URL's (re-escaped) path
    let key = path
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map_or("", |(_, key)| key);
    Ok((store, ObjectPath::parse(key).map_err(bad)?))
}

/// A lake file as DataFusion's parquet source reads it: at its exact key, with the
/// size the lake recorded (the footer is found from the end without a HEAD request).
pub fn lake_file(path: ObjectPath, size: u64) -> PartitionedFile {
    PartitionedFile::new_from_meta(object_store::ObjectMeta {
        location: path,
        last_modified: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        size,
        e_tag: None,
        version: None,
    })
}

/// Cuts `files` (kept in order) into at most `target` non-empty runs of about equal
/// total size.
fn contiguous_groups(files: Vec<PartitionedFile>, target: usize) -> Vec<Vec<PartitionedFile>> {
    let total: u64 = files.iter().map(|f| f.object_meta.size.max(1)).sum();
    let target = target.clamp(1, files.len().max(1)) as u64;
    let mut groups: Vec<Vec<PartitionedFile>> = Vec::new();
    let mut current = Vec::new();
    let mut filled = 0u64;
    for file in files {
        filled += file.object_meta.size.max(1);
        current.push(file);
        // Close the group once it reaches its share of the total.
        let closed = groups.len() as u64 + 1;
        if filled * target >= total * closed && closed < target {
            groups.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// Statistics of lake files by path, from their footers (`statistics::lake_file_statistics`).
pub type FileStatistics = std::collections::HashMap<String, Arc<Statistics>>;

/// Plans plain lake parquet files as DataFusion's parquet scan: `table_schema` is the
/// Fluss schema (the schema adapter casts file types and ignores lake-only columns),
/// file columns matched to it by `mapping`, files in path order cut into
/// `target_partitions` contiguous groups, the predicate used for row-group and page
/// pruning. Files with footer statistics in `statistics` report them (as a
/// `ListingTable` does) when their columns map by name; by field id, a footer's
/// names may be a renamed column's, so only row counts are reported.
#[allow(clippy::too_many_arguments)]
pub fn parquet_scan(
    state: &dyn Session,
    files: &[LakeFile],
    mapping: &ColumnMapping,
    table_schema: SchemaRef,
    projection: Option<Vec<usize>>,
    predicate: Option<Arc<dyn PhysicalExpr>>,
    limit: Option<usize>,
    statistics: &FileStatistics,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if files.is_empty() {
        return Ok(None);
    }
    let (store_url, mut partitioned) = partitioned_files(files)?;
    let by_name = matches!(mapping, ColumnMapping::ByName);
    let all_known = files.iter().all(|f| statistics.contains_key(&f.path));
    if by_name && all_known {
        for (file, partitioned) in files.iter().zip(partitioned.iter_mut()) {
            if let Some(stats) = statistics.get(&file.path) {
                partitioned.statistics = Some(stats.clone());
            }
        }
    }
    // Files in path order, cut into target_partitions contiguous groups of about equal
    // bytes. DataFusion's file-scan repartitioning then re-splits large files by byte
    // range in this same order, giving the row-group split a ListingTable over the
    // same files gets (measured: largest-first bin packing left one partition ~15%
    // more work on TPC-H lineitem).
    partitioned.sort_by(|a, b| a.object_meta.location.cmp(&b.object_meta.location));
    let target = state.config().target_partitions().max(1);
    let groups = contiguous_groups(partitioned, target);
    let field_ids = match mapping {
        ColumnMapping::ByFieldId(columns) => Some(columns.clone()),
        ColumnMapping::ByName => None,
    };
    let config = ParquetScanConfig {
        table_schema,
        mapping: mapping.clone(),
        projection,
        predicate,
        limit,
        rows: files.iter().map(|f| f.rows).sum(),
        row_numbers: false,
        file_per_partition: false,
    };
    let scan = config.build(
        state.runtime_env(),
        &state.table_options().parquet,
        store_url,
        groups,
    )?;
    // the field ids travel with the scan when it is shipped
    Ok(Some(match field_ids {
        Some(columns) => Arc::new(FlussFieldIdScanExec::new(scan, columns)),
        None => scan,
    }))
}

/// How a primary-key bucket's lake files are scanned.
#[derive(Debug, Clone, Default)]
pub struct BucketScanOptions {
    /// Prunes row groups and pages (never needed for correctness: the merge's parent
    /// re-applies every filter).
    pub predicate: Option<Arc<dyn PhysicalExpr>>,
    /// Adds each row's position in its file as a last column,
    /// [`LAKE_ROW_NUMBER_COLUMN`] (parquet's `row_number` virtual column, which costs
    /// no read).
    pub row_numbers: bool,
}

/// The name of the row-number column a bucket scan adds (chosen to collide with no
/// Fluss column: Fluss column names never start with `__fluss`).
pub const LAKE_ROW_NUMBER_COLUMN: &str = "__fluss_lake_row_number";

/// A primary-key bucket's parquet scan as plan values (files, column mapping,
/// columns, pruning predicate): the scan is planned from them here and planned again
/// from them wherever the plan is shipped, since DataFusion's serialized parquet scan
/// drops the field-id adapter and the row-number column.
#[derive(Debug, Clone)]
pub struct BucketScanSpec {
    /// The files, one output partition each, in this order.
    pub files: Vec<LakeFile>,
    /// How their columns map to the table's.
    pub mapping: ColumnMapping,
    /// The schema the files are read as (the Fluss schema, perhaps with a row kind).
    pub table_schema: SchemaRef,
    /// Columns of `table_schema` read.
    pub projection: Vec<usize>,
    /// Pruning and row numbers.
    pub options: BucketScanOptions,
}

impl BucketScanSpec {
    /// Plans the scan in `state` ([`parquet_bucket_scan`]).
    pub fn plan(&self, state: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        parquet_bucket_scan(state.runtime_env(), &state.table_options().parquet, self)
    }
}

/// Plans the plain parquet files of one primary-key bucket (raw-convertible splits,
/// base runs, newer runs) as a parquet scan with one output partition per file, in
/// `files` order, which the bucket's merge executes itself: partition `i` reads file
/// `i`, so each batch's file is known. Files are read through `env`'s object stores.
pub fn parquet_bucket_scan(
    env: &RuntimeEnv,
    parquet: &TableParquetOptions,
    spec: &BucketScanSpec,
) -> Result<Arc<dyn ExecutionPlan>> {
    let (store_url, partitioned) = partitioned_files(&spec.files)?;
    let config = ParquetScanConfig {
        table_schema: spec.table_schema.clone(),
        mapping: spec.mapping.clone(),
        projection: Some(spec.projection.clone()),
        predicate: spec.options.predicate.clone(),
        limit: None,
        rows: spec.files.iter().map(|f| f.rows).sum(),
        row_numbers: spec.options.row_numbers,
        file_per_partition: true,
    };
    let groups = partitioned.into_iter().map(|f| vec![f]).collect();
    config.build(env, parquet, store_url, groups)
}

/// Offers `filters` (hash-join and TopK dynamic filters over columns named as the
/// table's) to a lake parquet scan, matched to its table schema by name rather than
/// through its projection: a bucket scan that reads keys from the key cache does not
/// project the key columns, yet a filter on a key should still prune its row groups
/// and pages. A filter naming a column the scan's table lacks is not offered. The
/// updated scan, if its parquet source took any filter.
pub fn push_filters_by_name(
    plan: &Arc<dyn ExecutionPlan>,
    filters: &[Arc<dyn PhysicalExpr>],
    config: &ConfigOptions,
) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
    let Some(exec) = plan.downcast_ref::<DataSourceExec>() else {
        return Ok(None);
    };
    let Some(scan) = exec.data_source().downcast_ref::<FileScanConfig>() else {
        return Ok(None);
    };
    let table_schema = scan.file_source.table_schema().table_schema();
    let offered: Vec<_> = filters
        .iter()
        .filter_map(|f| reassign_expr_columns(f.clone(), table_schema).ok())
        .collect();
    if offered.is_empty() {
        return Ok(None);
    }
    let result = scan.file_source.try_pushdown_filters(offered, config)?;
    let Some(source) = result.updated_node else {
        return Ok(None);
    };
    let config = FileScanConfigBuilder::from(scan.clone())
        .with_source(source)
        .build();
    Ok(Some(DataSourceExec::from_data_source(config)))
}

/// A scan of only the `wanted` rows (by position in the file) of file `file` of a
/// bucket scan ([`parquet_bucket_scan`]): its parquet reader is given the rows as a
/// row selection (`ParquetRowSelection`), so it reads only the pages holding them and
/// decodes only them. `None` when `plan` is not such a scan.
pub fn scan_rows_of_file(
    plan: &Arc<dyn ExecutionPlan>,
    file: usize,
    wanted: &BooleanBuffer,
) -> Option<Arc<dyn ExecutionPlan>> {
    let scan = plan
        .downcast_ref::<DataSourceExec>()?
        .data_source()
        .downcast_ref::<FileScanConfig>()?;
    let partitioned = scan.file_groups.get(file)?.files().first()?.clone();
    let rows = wanted
        .set_indices()
        .map(|row| row..row + 1)
        .collect::<Vec<_>>();
    let selection = RowSelection::from_consecutive_ranges(rows.into_iter(), wanted.len());
    let partitioned = partitioned.with_extension(ParquetRowSelection::new(selection));
    let config = FileScanConfigBuilder::from(scan.clone())
        .with_file_groups(vec![FileGroup::new(vec![partitioned])])
        .build();
    Some(DataSourceExec::from_data_source(config))
}

/// The files as DataFusion `PartitionedFile`s of one object store.
fn partitioned_files(files: &[LakeFile]) -> Result<(ObjectStoreUrl, Vec<PartitionedFile>)> {
    let first = files
        .first()
        .ok_or_else(|| Error::internal("a parquet scan needs at least one file"))?;
    let (store_url, _) = object_location(&first.path)?;
    let mut partitioned = Vec::with_capacity(files.len());
    for file in files {
        let (url, path) = object_location(&file.path)?;
        if url != store_url {
            return Err(Error::unsupported("lake files span several object stores"));
        }
        partitioned.push(lake_file(path, file.size));
    }
    Ok((store_url, partitioned))
}

/// What a parquet scan of lake files reads, shared by both scan shapes.
struct ParquetScanConfig {
    table_schema: SchemaRef,
    mapping: ColumnMapping,
    projection: Option<Vec<usize>>,
    predicate: Option<Arc<dyn PhysicalExpr>>,
    limit: Option<usize>,
    rows: i64,
    /// Projects [`LAKE_ROW_NUMBER_COLUMN`] last.
    row_numbers: bool,
    /// Each partition reads its own files, in order: no partition takes another's
    /// files (DataFusion's `enable_file_stream_work_stealing`), so a bucket's merge
    /// knows which file each batch came from.
    file_per_partition: bool,
}

impl ParquetScanConfig {
    fn build(
        self,
        env: &RuntimeEnv,
        parquet: &TableParquetOptions,
        store_url: ObjectStoreUrl,
        groups: Vec<Vec<PartitionedFile>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Footers are cached across queries as ListingTable does (lake files never change).
        let store = env.object_store(store_url.clone()).map_err(|e| {
            Error::invalid_input("no object store for the lake files").with_source(e)
        })?;
        let reader_factory =
            CachedParquetFileReaderFactory::new(store, env.cache_manager.get_file_metadata_cache());
        let mut projection = self.projection;
        let mut table_schema = TableSchemaBuilder::new(self.table_schema.clone());
        if self.row_numbers {
            let field = Field::new(LAKE_ROW_NUMBER_COLUMN, DataType::Int64, false)
                .with_extension_type(RowNumber);
            table_schema = table_schema.with_virtual_columns(vec![Arc::new(field)]);
            let at = self.table_schema.fields().len();
            projection = Some(match projection {
                Some(mut p) => {
                    p.push(at);
                    p
                }
                None => (0..=at).collect(),
            });
        }
        let mut source = ParquetSource::new(table_schema.build())
            .with_table_parquet_options(parquet.clone())
            .with_parquet_file_reader_factory(Arc::new(reader_factory));
        if let Some(p) = self.predicate {
            source = source.with_predicate(p);
        }
        let with_files = groups.iter().flatten().all(|f| f.statistics.is_some());
        let merge = |files: &[PartitionedFile]| {
            Statistics::try_merge_iter(
                files.iter().filter_map(|f| f.statistics.as_deref()),
                &self.table_schema,
            )
            .map_err(|e| Error::internal("lake file statistics").with_source(e))
        };
        let (groups, stats) = if with_files && !groups.is_empty() {
            let all: Vec<PartitionedFile> = groups.iter().flatten().cloned().collect();
            let summary = merge(&all)?;
            let groups = groups
                .into_iter()
                .map(|g| Ok(FileGroup::new(g.clone()).with_statistics(Arc::new(merge(&g)?))))
                .collect::<Result<Vec<_>>>()?;
            (groups, summary)
        } else {
            let mut stats = Statistics::new_unknown(&self.table_schema);
            stats.num_rows = Precision::Exact(self.rows.max(0) as usize);
            (groups.into_iter().map(FileGroup::new).collect(), stats)
        };
        let adapter = match &self.mapping {
            ColumnMapping::ByName => None,
            ColumnMapping::ByFieldId(columns) => {
                Some(Arc::new(FieldIdAdapterFactory::new(columns))
                    as Arc<
                        dyn datafusion::physical_expr_adapter::PhysicalExprAdapterFactory,
                    >)
            }
        };
        let config = FileScanConfigBuilder::new(store_url, Arc::new(source))
            .with_expr_adapter(adapter)
            .with_file_groups(groups)
            .with_statistics(stats)
            .with_limit(self.limit)
            .with_preserve_order(self.file_per_partition)
            .with_projection_indices(projection)
            .map_err(|e| Error::internal("parquet projection").with_source(e))?
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sizes: &[u64]) -> Vec<PartitionedFile> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, s)| PartitionedFile::new(format!("f{i}"), *s))
            .collect()
    }

    #[test]
    fn contiguous_groups_keep_order_and_balance_bytes() {
        let sizes = |g: &Vec<Vec<PartitionedFile>>| -> Vec<Vec<u64>> {
            g.iter()
                .map(|g| g.iter().map(|f| f.object_meta.size).collect())
                .collect()
        };
        assert_eq!(
            sizes(&contiguous_groups(files(&[4, 4, 4, 4]), 2)),
            vec![vec![4, 4], vec![4, 4]]
        );
        assert_eq!(
            sizes(&contiguous_groups(files(&[1, 1, 1]), 8)),
            vec![vec![1], vec![1], vec![1]]
        );
        assert_eq!(
            sizes(&contiguous_groups(files(&[9, 1, 1, 1]), 2)),
            vec![vec![9], vec![1, 1, 1]]
        );
        assert_eq!(contiguous_groups(files(&[5, 5]), 1).len(), 1);
        assert!(contiguous_groups(files(&[]), 2).is_empty());
    }
}
