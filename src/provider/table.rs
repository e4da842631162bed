//! [`FlussTableProvider`]: a Fluss table as a DataFusion table, read with union read.
//!
//! `scan` pins the cut (readable lake snapshot + per-bucket log ranges), plans the lake
//! splits of that snapshot, and builds:
//!
//! ```text
//! log table:  UnionExec ─┬─ DataSourceExec (lake parquet, file groups)   [+ FlussLakeMergeExec for DV splits]
//!                        └─ FlussLogScanExec (buckets' [tiered offset, hw) over target_partitions)
//! PK table:   FlussPrimaryKeyScanExec (per bucket: merged lake rows anti-joined with the
//!                                      folded changelog tail, plus live tail rows; buckets
//!                                      over target_partitions)
//! ```
//!
//! Filters: those on partition columns the partition pruner evaluates for every
//! partition by their form (`union::filters::prunes_exactly`) are `Exact` (partitions
//! are pruned on both sides exactly, and a partition an exact filter cannot be
//! evaluated for fails the scan); all others are `Inexact` and DataFusion re-applies
//! them. They are still used to skip data: lake partition/bucket/file/row-group
//! pruning and log batch skipping by V1 statistics. On PK tables only key and partition filters reach the
//! lake planner and none skips log batches, so a stale row version can never surface.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{DFSchema, Statistics};
use datafusion::datasource::TableType;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::utils::{conjunction, disjunction};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::scalar::ScalarValue;

use super::filter_estimate::FilterEstimateExec;
use super::kv_scan_exec::{FlussKvScanExec, KvScanReason};
use super::lake_exec::{
    BucketScanOptions, BucketScanSpec, FileStatistics, FlussLakeMergeExec, object_location,
    parquet_scan,
};
use super::log_exec::{BatchSkipping, FlussLogScanExec};
use super::lookup_exec::{
    DeferredScan, FlussKeyLookupExec, KeyLookupPlan, LookupFallback, LookupKeys,
};
use super::options::{FlussOptions, SERVER_SCAN};
use super::partition_pruner::{PartitionPruner, PartitionsRead};
use super::pk_exec::{
    BucketParquetScan, FileKeyScan, FlussPrimaryKeyScanExec, NewerRunScan, PrimaryKeyBucketTask,
    PrimaryKeyMergeInputs,
};
use super::statistics::{ColumnEstimates, lake_file_statistics};
use super::time_travel::{TimeTravel, lake_at, union_at};
use super::view_types::with_view_types;
use crate::error::{Error, Result};
use crate::lake::{
    ColumnMapping, LakeFile, LakeLocation, LakePlan, LakeRead, LakeScanRequest, LakeSplit,
    LakeTable, MergeTask,
};
use crate::source::{BucketLocation, FlussSource, FlussTable};
use crate::union::filters::{KeyColumns, PlacedFilters, combinations, lake_predicate, place};
use crate::union::lake_keys::LakeFileId;
use crate::union::{BucketCut, CommitTimes, CutLake, LakeKeyCache, TailCache, UnionCut, plan_cut};

/// Which side(s) of a table a provider reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// Lake snapshot + log tail (the table itself).
    Union,
    /// The lake snapshot only (`t$lake`).
    LakeOnly,
    /// The log tail of the cut only (`t$log`, as Doris names it): a log table's rows
    /// not yet tiered; a primary-key table's keys changed since the lake snapshot,
    /// with their current rows (keys deleted since drop out).
    LogOnly,
}

/// A Fluss table read through DataFusion.
#[derive(Debug, Clone)]
pub struct FlussTableProvider {
    source: Arc<dyn FlussSource>,
    table: FlussTable,
    schema: SchemaRef,
    mode: ReadMode,
    /// When the provider reads the table (time travel); `None`: as it is now.
    as_of: Option<TimeTravel>,
    /// Where primary-key tails folded by its scans are kept between queries.
    tail_cache: Option<Arc<TailCache>>,
    /// Where the keys of lake files its primary-key scans read are kept between
    /// queries.
    lake_keys: Option<Arc<LakeKeyCache>>,
    /// Partitions left out of the scan: those a `server-scan` reads from the tablet
    /// servers, when the rest (partitions only the lake has) is read as usual.
    skip_partitions: Option<Arc<HashSet<String>>>,
}

/// The lake side of a scan: the lake table and its plan of the cut's snapshot.
struct LakeScan {
    lake: Arc<dyn LakeTable>,
    plan: LakePlan,
    /// Files of the snapshot the plan never opens: pruned by the lake's planning
    /// (partitions, manifest statistics), the partition filters and the buckets.
    files_pruned: usize,
}

/// What the scan nodes report: as statistics, the lake files' footers and column
/// estimates for the rows nothing describes (tail, merged splits); in EXPLAIN, how
/// many partitions they read and pruned.
struct ScanStatistics {
    files: FileStatistics,
    estimates: ColumnEstimates,
    partitions: Option<PartitionsRead>,
}

impl FlussTableProvider {
    /// A provider of `table` from `source`: the Fluss columns of its latest schema.
    /// Strings and bytes are views (`Utf8View`, `BinaryView`), as a `ListingTable`
    /// reads them.
    pub fn new(source: Arc<dyn FlussSource>, table: FlussTable, mode: ReadMode) -> Result<Self> {
        let schema = with_view_types(&table.schemas.latest()?.arrow);
        Ok(Self {
            source,
            table,
            schema,
            mode,
            as_of: None,
            tail_cache: None,
            lake_keys: None,
            skip_partitions: None,
        })
    }

    /// The same table read at `when` (`VERSION AS OF`, `TIMESTAMP AS OF`,
    /// `fluss_log_between`): see [`TimeTravel`] for what each reads. Key lookups,
    /// which read the current rows, are not used.
    pub fn at(mut self, when: TimeTravel) -> Self {
        self.as_of = Some(when);
        self
    }

    /// When the provider reads the table; `None`: as it is now.
    pub fn time_travel(&self) -> Option<TimeTravel> {
        self.as_of
    }

    /// Keeps the primary-key tails its scans fold in `cache`, and reuses those kept
    /// there ([`TailCache`]); without one, every scan folds its tails anew.
    pub fn with_tail_cache(mut self, cache: Arc<TailCache>) -> Self {
        self.tail_cache = Some(cache);
        self
    }

    /// Keeps the keys of the lake files its primary-key scans read in `cache`, and
    /// reuses those kept there ([`LakeKeyCache`]); without one, every scan reads the
    /// keys of its files anew.
    pub fn with_lake_key_cache(mut self, cache: Arc<LakeKeyCache>) -> Self {
        self.lake_keys = Some(cache);
        self
    }

    /// The provider of `t$lake`: the lake snapshot only, showing the Fluss columns and
    /// then the lake's physical system columns (`system`, from
    /// [`LakeTable::system_columns`]: legacy tables' `__bucket`, `__offset`,
    /// `__timestamp`, which the union table hides; none for clean tables).
    pub fn lake_only(
        source: Arc<dyn FlussSource>,
        table: FlussTable,
        system: Vec<Field>,
    ) -> Result<Self> {
        let mut provider = Self::new(source, table, ReadMode::LakeOnly)?;
        if !system.is_empty() {
            let schema = &provider.schema;
            let mut fields: Vec<Field> =
                schema.fields().iter().map(|f| f.as_ref().clone()).collect();
            fields.extend(system);
            provider.schema =
                Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        }
        Ok(provider)
    }

    /// The Fluss table.
    pub fn table(&self) -> &FlussTable {
        &self.table
    }

    /// The source the table is read from (and written to).
    pub(crate) fn source(&self) -> &Arc<dyn FlussSource> {
        &self.source
    }

    /// What the provider reads: the union, or the lake only.
    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    fn placed(&self, filters: &[Expr]) -> PlacedFilters {
        PlacedFilters::new(filters, &KeyColumns::of(&self.table))
    }

    /// Compiles the partition filters into predicates on partition names.
    fn partition_pruner(
        &self,
        state: &dyn Session,
        filters: &PlacedFilters,
    ) -> Result<PartitionPruner> {
        PartitionPruner::new(
            state,
            filters,
            &self.schema,
            self.table.info.get_partition_keys(),
        )
    }

    fn physical_predicate(
        &self,
        state: &dyn Session,
        filters: &[Expr],
    ) -> Option<Arc<dyn PhysicalExpr>> {
        physical_predicate_over(state, filters, &self.schema)
    }

    /// The lake splits of the cut's snapshot, in the kept partitions and `buckets`
    /// (all when `None`).
    async fn plan_lake(
        &self,
        state: &dyn Session,
        cut: &UnionCut,
        filters: &PlacedFilters,
        keep_partition: &(dyn Fn(&str) -> bool + Send + Sync),
        buckets: Option<&HashSet<i32>>,
    ) -> Result<Option<LakeScan>> {
        let Some(snapshot) = &cut.snapshot else {
            return Ok(None);
        };
        let name = self.table.path.to_string();
        let location = self.source.lake_location(&self.table).await?;
        register_lake_store(state, &location)?;
        let columns: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        // Filters fixing a primary-key table's whole key (a point lookup) do not go to
        // the lake's planning: planned without them, the snapshot's plan is the one
        // cached for every lookup, not one per key, and the key's bucket, the files'
        // kept keys or their footers then find the files holding it.
        let primary_keys = self.table.info.get_primary_keys();
        let fixes_key = self.table.info.has_primary_key()
            && filters
                .fixed_keys_within(primary_keys, MAX_LOOKUP_KEYS)
                .is_some();
        let request = LakeScanRequest {
            snapshot_id: snapshot.snapshot_id,
            filter: if fixes_key {
                None
            } else {
                lake_predicate(&filters.lake(), &columns)
            },
            primary_key: self.table.info.has_primary_key(),
        };
        // checked against the Fluss types (`Utf8`, not the scans' views), as errors name them
        let fluss = self.table.schemas.latest()?.arrow.clone();
        let (lake, mut plan) =
            crate::lake::plan_snapshot(&location, &self.table, &fluss, &request).await?;
        // the snapshot's files, from its unfiltered plan (cached for the next scans)
        let files_in_snapshot = if request.filter.is_some() {
            let everything = LakeScanRequest {
                filter: None,
                ..request
            };
            let (_, all) =
                crate::lake::plan_snapshot(&location, &self.table, &fluss, &everything).await?;
            all.file_count()
        } else {
            plan.file_count()
        };
        plan.splits.retain(|s| {
            s.partition_name.as_deref().is_none_or(keep_partition)
                && (s.bucket < 0 || buckets.is_none_or(|b| b.contains(&s.bucket)))
        });
        let files_pruned = files_in_snapshot.saturating_sub(plan.file_count());
        for split in &plan.splits {
            for file in &split.files {
                check_file_exists(&file.path).map_err(|e| {
                    e.with_context("table", &name)
                        .with_context("snapshot", snapshot.snapshot_id)
                })?;
            }
        }
        Ok(Some(LakeScan {
            lake,
            plan,
            files_pruned,
        }))
    }

    /// The statistics of the plan's lake files from their footers (those DataFusion's
    /// parquet source reads; the merge-on-read splits' files only when there are no
    /// others), and the table's column estimates made from them.
    async fn scan_statistics(
        &self,
        state: &dyn Session,
        lake: Option<&LakeScan>,
    ) -> Result<ScanStatistics> {
        let Some(lake) = lake else {
            return Ok(ScanStatistics {
                files: FileStatistics::new(),
                estimates: ColumnEstimates::without_lake(self.schema.clone()),
                partitions: None,
            });
        };
        let mut files: Vec<LakeFile> = lake
            .plan
            .splits
            .iter()
            .filter(|s| s.merge_task().is_none())
            .flat_map(|s| s.files.iter().cloned())
            .collect();
        if files.is_empty() {
            files = lake
                .plan
                .splits
                .iter()
                .flat_map(|s| s.files.iter().cloned())
                .collect();
        }
        let stats = lake_file_statistics(state, &files, &self.schema)
            .await
            .map_err(|e| e.with_context("table", self.table.path.to_string()))?;
        // the footers read describe the whole lake when they are every file's
        let lake_files: usize = lake.plan.splits.iter().map(|s| s.files.len()).sum();
        let covers_lake = files.len() == lake_files;
        let estimates = ColumnEstimates::new(self.schema.clone(), &stats, covers_lake);
        Ok(ScanStatistics {
            files: files.into_iter().map(|f| f.path).zip(stats).collect(),
            estimates,
            partitions: None,
        })
    }

    /// The buckets that can hold rows matching `filters`, when they fix every bucket
    /// key to literal values (`k = v`, `k IN (...)`); `None` when they do not.
    fn buckets_for_filters(&self, filters: &PlacedFilters) -> Result<Option<HashSet<i32>>> {
        let bucket_keys = self.table.info.get_bucket_keys().to_vec();
        let Some(values) = filters.bucket_values() else {
            return Ok(None);
        };
        let rows = combinations(&values);
        // the Fluss columns only (a lake-only table may show system columns after them)
        let fluss = self.table.schemas.latest()?.arrow.clone();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(fluss.fields().len());
        for field in fluss.fields() {
            let column = match bucket_keys.iter().position(|k| k == field.name()) {
                Some(i) => {
                    let array = ScalarValue::iter_to_array(rows.iter().map(|r| r[i].clone()))?;
                    match cast(&array, field.data_type()) {
                        Ok(a) => a,
                        Err(_) => return Ok(None),
                    }
                }
                None => datafusion::arrow::array::new_null_array(field.data_type(), rows.len()),
            };
            columns.push(column);
        }
        let relaxed = Arc::new(Schema::new(
            fluss
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(relaxed, columns)?;
        let mut assigner = crate::source::bucketing::BucketAssigner::new(
            self.table.info.get_row_type(),
            &bucket_keys,
            self.table.info.get_num_buckets(),
            self.table.configured_lake_format(),
        )?;
        Ok(Some(assigner.assign(&batch)?.into_iter().collect()))
    }

    #[allow(clippy::too_many_arguments)]
    async fn scan_log_table(
        &self,
        state: &dyn Session,
        projection: Option<Vec<usize>>,
        output_schema: SchemaRef,
        filters: &PlacedFilters,
        limit: Option<usize>,
        cut: UnionCut,
        lake: Option<LakeScan>,
        statistics: ScanStatistics,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let predicate = self.physical_predicate(state, &filters.log());
        let lake_files_pruned = lake.as_ref().map_or(0, |l| l.files_pruned);
        let mut inputs: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
        let mut parquet_input = None;
        let snapshot_id = cut.snapshot_id();
        if let Some(LakeScan { lake, plan, .. }) = &lake {
            if plan.splits.iter().any(|s| s.keyed_runs().is_some()) {
                // only primary-key tables have runs to merge: never drop them silently
                return Err(Error::internal("a log table's lake plan has keyed runs")
                    .with_context("table", self.table.path.to_string()));
            }
            let parquet_files: Vec<_> = plan
                .splits
                .iter()
                .filter(|s| s.is_plain())
                .flat_map(|s| s.files.clone())
                .collect();
            if let Some(scan) = parquet_scan(
                state,
                &parquet_files,
                &plan.parquet_mapping()?,
                self.schema.clone(),
                projection.clone(),
                // DataFusion's filter pushdown hands the (inexact) filters to the
                // parquet source itself; passing them here too would apply them twice.
                None,
                limit,
                &statistics.files,
            )? {
                parquet_input = Some(inputs.len());
                inputs.push(scan);
            }
            let merge_groups = group_merge_tasks(&plan.splits, state.config().target_partitions());
            if !merge_groups.is_empty() {
                inputs.push(Arc::new(FlussLakeMergeExec::new(
                    lake.clone(),
                    self.source.clone(),
                    self.table.clone(),
                    merge_groups,
                    output_schema.clone(),
                    plan.snapshot_id,
                    limit,
                    projection.clone(),
                    statistics.estimates.clone(),
                )));
            }
        }
        if self.mode != ReadMode::LakeOnly {
            let skipping = BatchSkipping::new(self.schema.clone(), predicate.clone());
            let buckets: Vec<_> = cut
                .buckets
                .into_iter()
                .filter(|b| !b.range.is_empty())
                .collect();
            // `count(*)`: rows counted from the log's validated batch headers make the
            // scan's row count exact, so DataFusion answers it without reading
            let exact_rows = projection.as_ref().is_some_and(Vec::is_empty)
                && filters.all_exact()
                && self.count_log_rows(&buckets).await?.is_some_and(|counts| {
                    counts
                        .iter()
                        .zip(&buckets)
                        .all(|(rows, b)| *rows == b.range.offsets())
                });
            // a partitioned table's scan keeps its node (empty when every partition
            // read is in the lake) to say in EXPLAIN what it read and pruned, and
            // any scan keeps it to count the lake files it never opens
            if !buckets.is_empty()
                || inputs.is_empty()
                || statistics.partitions.is_some()
                || lake_files_pruned > 0
            {
                inputs.push(Arc::new(
                    FlussLogScanExec::new(
                        self.source.clone(),
                        self.table.clone(),
                        buckets,
                        state.config().target_partitions(),
                        projection,
                        output_schema.clone(),
                        skipping,
                        filters.describe(),
                        snapshot_id,
                        limit,
                        statistics.estimates.clone(),
                    )
                    .with_partitions(statistics.partitions)
                    .with_lake_files_pruned(lake_files_pruned)
                    .with_exact_rows(exact_rows),
                ));
            }
        }
        if inputs.is_empty() {
            return Ok(Arc::new(EmptyExec::new(output_schema)));
        }
        // Beside rows without bounds, the lake's filtered estimate is lost in the
        // union's: the lake branch reports it itself (`FilterEstimateExec`).
        if let Some(i) = parquet_input.filter(|_| inputs.len() > 1)
            && let Some(predicate) =
                physical_predicate_over(state, &filters.inexact(), &output_schema)
        {
            inputs[i] = Arc::new(FilterEstimateExec::new(inputs[i].clone(), predicate));
        }
        Ok(UnionExec::try_new(inputs)?)
    }

    /// A read of the keys the filters fix from the source's key-value store, when it
    /// serves lookups, the session allows them (`fluss.key_lookups`) and the filters
    /// fix the whole primary key with no more keys than `fluss.max_lookup_keys`.
    fn plan_key_lookup(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &PlacedFilters,
    ) -> Result<Option<FlussKeyLookupExec>> {
        let Some(lookup) = self.lookup_plan(state, projection, filters) else {
            return Ok(None);
        };
        let options = fluss_options(state);
        let key_schema = lookup.key_schema()?;
        let primary_keys = self.table.info.get_primary_keys().clone();
        let types: Vec<DataType> = key_schema
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let Some(columns) = fixed_keys(filters, &primary_keys, &types, options.max_lookup_keys)
        else {
            return Ok(None);
        };
        let keys = RecordBatch::try_new(key_schema, columns)?;
        Ok(Some(lookup.exec(LookupKeys::Fixed(keys))?))
    }

    /// What a lookup of this table's keys would read, when the source serves lookups
    /// of its keys and the session allows them (`fluss.key_lookups`).
    fn lookup_plan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &PlacedFilters,
    ) -> Option<KeyLookupPlan> {
        if self.mode != ReadMode::Union
            || self.as_of.is_some()
            || !self.table.info.has_primary_key()
            || !fluss_options(state).key_lookups
            || !self.source.serves_key_lookups(&self.table)
        {
            return None;
        }
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        Some(KeyLookupPlan::new(
            self.source.clone(),
            self.table.clone(),
            self.schema.clone(),
            self.physical_predicate(state, &filters.all()),
            projection,
            filters.describe(),
        ))
    }

    /// Why the current rows of this primary-key table must be asked of the tablet
    /// servers (`server-scan`), if they must: the session asks for it, or a bucket's
    /// changelog starts after what the lake holds of it (retention removed the
    /// rest), so folding it would lose keys. The latter is an error where the source
    /// cannot scan its servers.
    fn kv_scan_reason(&self, state: &dyn Session, cut: &UnionCut) -> Result<Option<KvScanReason>> {
        if !self.reads_current_pk_rows() {
            return Ok(None);
        }
        let strategy = fluss_options(state).kv_batch_strategy;
        let asked = match strategy.as_str() {
            SERVER_SCAN => true,
            "snapshot-merge" => false,
            other => {
                return Err(Error::invalid_input(format!(
                    "unknown client.scanner.kv.batch-strategy '{other}' (snapshot-merge or \
                     server-scan)"
                )));
            }
        };
        let expired = cut.buckets.iter().find(|b| {
            let tiered = cut
                .snapshot
                .as_ref()
                .and_then(|s| s.offsets.get(b.location.partition_id(), b.location.bucket));
            tiered.is_none() && b.range.start > 0
        });
        let reason = match (asked, expired) {
            (true, _) => KvScanReason::Asked,
            (false, Some(_)) => KvScanReason::ChangelogExpired,
            (false, None) => return Ok(None),
        };
        if self.may_scan_kv() {
            return Ok(Some(reason));
        }
        let e = match expired {
            Some(b) if !asked => Error::data_invalid(format!(
                "the changelog starts at offset {}: offsets [0, {}) were removed and no lake \
                 snapshot holds them, so the current rows of keys written there are only in \
                 the tablet servers' key-value state, which {} cannot scan",
                b.range.start,
                b.range.start,
                self.source.name()
            ))
            .with_context("missing_offsets", format!("[0, {})", b.range.start))
            .with_context("bucket", b.location.bucket),
            _ => Error::unsupported(format!(
                "client.scanner.kv.batch-strategy = server-scan reads a cluster's tablet \
                 servers; {} has none",
                self.source.name()
            )),
        };
        Err(e.with_context("table", self.table.path.to_string()))
    }

    /// Whether this scan reads a primary-key table's rows as they are now, whole (the
    /// union, not at a past time, and not the lake-only rest of a `server-scan`):
    /// the reads whose rows the tablet servers' key-value state holds.
    fn reads_current_pk_rows(&self) -> bool {
        self.mode == ReadMode::Union
            && self.as_of.is_none()
            && self.skip_partitions.is_none()
            && self.table.info.has_primary_key()
    }

    /// Whether this scan may read the tablet servers' current rows (ScanKv) instead
    /// of folding the changelog: [`Self::reads_current_pk_rows`], from a source that
    /// scans its servers.
    fn may_scan_kv(&self) -> bool {
        self.reads_current_pk_rows() && self.source.serves_kv_scans(&self.table)
    }

    /// The current rows of the cut's buckets by ScanKv, and, beside them, the
    /// partitions only the lake still has, read from the lake as usual.
    async fn scan_kv_of_cut(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        placed: &PlacedFilters,
        cut: &UnionCut,
        reason: KvScanReason,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let fluss = match self.table.info.is_partitioned() {
            true => self.source.list_partitions(&self.table).await?,
            false => Vec::new(),
        };
        let buckets: Vec<BucketLocation> = cut.buckets.iter().map(|b| b.location.clone()).collect();
        let projection: Vec<usize> = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let servers: Arc<dyn ExecutionPlan> = Arc::new(FlussKvScanExec::new(
            self.source.clone(),
            self.table.clone(),
            buckets,
            state.config().target_partitions(),
            self.schema.clone(),
            self.physical_predicate(state, &placed.all()),
            projection.clone(),
            placed.describe(),
            reason,
        )?);
        if !self.table.info.is_partitioned() || self.table.lake_format().is_none() {
            return Ok(servers);
        }
        let lake_only = Self {
            skip_partitions: Some(Arc::new(
                fluss.iter().map(|p| p.get_partition_name()).collect(),
            )),
            ..self.clone()
        };
        let lake =
            Box::pin(lake_only.scan_reading(state, Some(&projection), filters, None)).await?;
        UnionExec::try_new(vec![servers, lake])
    }

    /// The rows of the buckets' ranges, counted by the source from validated
    /// metadata without reading them (`None` where it cannot count one of them).
    async fn count_log_rows(&self, buckets: &[BucketCut]) -> Result<Option<Vec<u64>>> {
        let counts = buckets.iter().map(|b| {
            self.source
                .count_log_rows(&self.table, &b.location, b.range)
        });
        let counts = futures::future::try_join_all(counts).await?;
        Ok(counts.into_iter().collect())
    }

    #[allow(clippy::too_many_arguments)]
    async fn scan_pk_table(
        &self,
        state: &dyn Session,
        projection: Option<Vec<usize>>,
        filters: &PlacedFilters,
        limit: Option<usize>,
        cut: UnionCut,
        lake: Option<LakeScan>,
        statistics: ScanStatistics,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let key_indexes = self.table.info.get_schema().primary_key_indexes();
        let projected: Vec<usize> =
            projection.unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let lake_mode = self.mode == ReadMode::LakeOnly;
        // Keys are read only to merge: against a tail, or across newer sorted runs. A
        // lake of files that share no key, with no tail, is read as it is.
        let has_tail = !lake_mode && cut.buckets.iter().any(|b| !b.range.is_empty());
        let has_newer_runs = lake.as_ref().is_some_and(|l| {
            l.plan
                .splits
                .iter()
                .any(|s| s.keyed_runs().is_some_and(|r| !r.newer.is_empty()))
        });
        let merges_by_key = has_tail || has_newer_runs;
        let mut scan_columns = projected.clone();
        if merges_by_key {
            for k in &key_indexes {
                if !scan_columns.contains(k) {
                    scan_columns.push(*k);
                }
            }
        }
        let scan_schema = Arc::new(self.schema.project(&scan_columns)?);
        let key_positions: Vec<usize> = if merges_by_key {
            key_indexes
                .iter()
                .map(|k| scan_columns.iter().position(|c| c == k).unwrap_or_default())
                .collect()
        } else {
            Vec::new()
        };
        let output_positions: Vec<usize> = (0..projected.len()).collect();
        let key_types: Vec<DataType> = key_positions
            .iter()
            .map(|&p| scan_schema.field(p).data_type().clone())
            .collect();
        let key_lookup = if merges_by_key {
            fixed_keys(
                filters,
                self.table.info.get_primary_keys(),
                &key_types,
                MAX_LOOKUP_KEYS,
            )
        } else {
            None
        };
        // one task per (partition, bucket) of the lake or of Fluss
        let mut tasks: Vec<PrimaryKeyBucketTask> = Vec::new();
        let task_index =
            |tasks: &mut Vec<PrimaryKeyBucketTask>, partition: Option<String>, bucket: i32| {
                if let Some(i) = tasks
                    .iter()
                    .position(|t| t.partition_name == partition && t.bucket == bucket)
                {
                    return i;
                }
                tasks.push(PrimaryKeyBucketTask {
                    partition_name: partition,
                    bucket,
                    lake_splits: Vec::new(),
                    lake_parquet: None,
                    lake_newer_runs: Vec::new(),
                    tail: None,
                });
                tasks.len() - 1
            };
        if !lake_mode {
            for b in &cut.buckets {
                let name = b.location.partition.as_ref().map(|(_, n)| n.clone());
                let i = task_index(&mut tasks, name, b.location.bucket);
                tasks[i].tail = (!b.range.is_empty()).then(|| b.clone());
            }
        }
        if let Some(LakeScan { plan, .. }) = &lake {
            let mapping = plan.parquet_mapping()?;
            // Raw-convertible splits and the base runs of keyed-run splits hold each key
            // once and nothing to merge, so any filter may prune their row groups (a
            // lake row a filter rejects is never output, whether or not a newer run or
            // the tail overrides its key). Partition filters are left out: they are
            // exact already, and a partition column need not be stored in the data
            // files. The newer runs are folded like the tail: never filtered.
            let predicate = self.physical_predicate(state, &filters.raw_lake());
            let looked_up_keys = key_lookup
                .as_deref()
                .and_then(|keys| keys_predicate(self.table.info.get_primary_keys(), keys))
                .and_then(|keys| self.physical_predicate(state, &[keys]));
            // a read of one file's key columns and row numbers, its keys kept by file
            let key_scan = |file: &LakeFile, mapping: &ColumnMapping| {
                let spec = BucketScanSpec {
                    files: vec![file.clone()],
                    mapping: mapping.clone(),
                    table_schema: self.schema.clone(),
                    projection: key_indexes.clone(),
                    options: BucketScanOptions {
                        row_numbers: true,
                        ..BucketScanOptions::default()
                    },
                };
                Ok::<_, Error>(FileKeyScan {
                    file: LakeFileId {
                        path: file.path.clone(),
                        size: file.size,
                        key_types: key_types.clone(),
                    },
                    plan: spec.plan(state)?,
                    spec,
                })
            };
            let mut reads: Vec<BucketLakeFiles> = Vec::new();
            for split in &plan.splits {
                let i = task_index(&mut tasks, split.partition_name.clone(), split.bucket);
                reads.resize_with(tasks.len(), BucketLakeFiles::default);
                let read = &mut reads[i];
                match &split.read {
                    LakeRead::MergeOnRead(task) => tasks[i].lake_splits.push(task.clone()),
                    LakeRead::Parquet(_) => {
                        read.splits += 1;
                        read.base.extend(split.files.iter().cloned());
                    }
                    LakeRead::KeyedRuns(runs) => {
                        read.splits += 1;
                        read.run_splits += 1;
                        read.base.extend(runs.base.iter().cloned());
                        read.newer.extend(runs.newer.iter().cloned());
                        read.base_has_deletes |= runs.base_has_deletes;
                        read.row_kind = Some(runs.row_kind_column.clone());
                    }
                }
            }
            // Merging by key, the base files are read without their key columns: each
            // row's key comes from the file's keys, read once and cached, by its row
            // number.
            let base_columns: Vec<usize> = scan_columns
                .iter()
                .copied()
                .filter(|c| !merges_by_key || !key_indexes.contains(c))
                .collect();
            for (task, read) in tasks.iter_mut().zip(reads) {
                let row_kind = read.row_kind.as_deref().unwrap_or("_VALUE_KIND");
                if !read.base.is_empty() {
                    let (schema, columns) = if read.base_has_deletes {
                        with_row_kind(&self.schema, &base_columns, row_kind)
                    } else {
                        (self.schema.clone(), base_columns.clone())
                    };
                    // A key lookup reads the rows its keys' positions select (found
                    // in the files' keys), so no predicate needs evaluating.
                    let options = BucketScanOptions {
                        predicate: predicate.clone().filter(|_| key_lookup.is_none()),
                        row_numbers: merges_by_key,
                    };
                    let keys = if merges_by_key {
                        read.base
                            .iter()
                            .map(|file| key_scan(file, &mapping))
                            .collect::<Result<Vec<_>>>()?
                    } else {
                        Vec::new()
                    };
                    let spec = BucketScanSpec {
                        files: read.base.clone(),
                        mapping: mapping.clone(),
                        table_schema: schema,
                        projection: columns,
                        options,
                    };
                    task.lake_parquet = Some(BucketParquetScan {
                        plan: spec.plan(state)?,
                        spec,
                        keys,
                        splits: read.splits,
                        run_splits: read.run_splits,
                        rows: read.base.iter().map(|f| f.rows.max(0) as u64).sum(),
                        drops_deletes: read.base_has_deletes,
                    });
                }
                let (schema, columns) = with_row_kind(&self.schema, &scan_columns, row_kind);
                // A key lookup needs only the looked-up keys' versions, so a newer run
                // may skip files and row groups by the key alone (never by another
                // filter: a newer version it rejects must still hide older ones).
                let newer_options = BucketScanOptions {
                    predicate: looked_up_keys.clone(),
                    ..BucketScanOptions::default()
                };
                for file in &read.newer {
                    let files = std::slice::from_ref(file);
                    // A key lookup finds its keys' rows in the file's kept keys.
                    let keys = match key_lookup {
                        Some(_) => Some(key_scan(file, &ColumnMapping::ByName)?),
                        None => None,
                    };
                    let spec = BucketScanSpec {
                        files: files.to_vec(),
                        mapping: ColumnMapping::ByName,
                        table_schema: schema.clone(),
                        projection: columns.clone(),
                        options: newer_options.clone(),
                    };
                    task.lake_newer_runs.push(NewerRunScan {
                        rows: spec.plan(state)?,
                        spec,
                        row_count: file.rows.max(0) as u64,
                        keys,
                    });
                }
            }
        }
        tasks.retain(|t| t.tail.is_some() || t.lake_split_count() > 0);
        let inputs = PrimaryKeyMergeInputs {
            source: self.source.clone(),
            table: self.table.clone(),
            lake: lake.as_ref().map(|l| (l.lake.clone(), l.plan.snapshot_id)),
            scan_columns,
            scan_schema,
            key_positions,
            output_positions,
            estimates: statistics.estimates,
            tail_cache: self.tail_cache.clone(),
            lake_keys: self.lake_keys.clone(),
            key_lookup,
        };
        let mut exec = FlussPrimaryKeyScanExec::new(
            inputs,
            tasks,
            state.config().target_partitions(),
            limit,
            filters.describe(),
        )?
        .with_partitions(statistics.partitions)
        .with_lake_files_pruned(lake.as_ref().map_or(0, |l| l.files_pruned));
        if let Some(lookup) = self.lookup_plan(state, Some(&projected), filters) {
            exec = exec.with_join_lookup(lookup);
        }
        Ok(Arc::new(exec))
    }
}

/// The session's Fluss options (the defaults where it has none).
fn fluss_options(state: &dyn Session) -> FlussOptions {
    state
        .config_options()
        .extensions
        .get::<FlussOptions>()
        .cloned()
        .unwrap_or_default()
}

/// Most keys a scan looks up in the tail's key index instead of projecting its live
/// rows (an `IN` list of more keys reads the tail as a scan would).
const MAX_LOOKUP_KEYS: usize = 4096;

/// `columns` (the primary key) equal to one of `keys` (one array per column, one
/// row per key).
fn keys_predicate(columns: &[String], keys: &[ArrayRef]) -> Option<Expr> {
    let count = keys.first()?.len();
    let mut alternatives = Vec::with_capacity(count);
    for row in 0..count {
        let mut equal = Vec::with_capacity(columns.len());
        for (name, values) in columns.iter().zip(keys) {
            let value = ScalarValue::try_from_array(values, row).ok()?;
            let column = Expr::Column(datafusion::common::Column::from_name(name.clone()));
            equal.push(column.eq(Expr::Literal(value, None)));
        }
        alternatives.push(conjunction(equal)?);
    }
    disjunction(alternatives)
}

/// The distinct keys of `columns` the filters fix, as one array per column of
/// `types`, one row per key; `None` when they do not fix every column, fix more than
/// `max` keys, or a literal does not fit its column.
fn fixed_keys(
    filters: &PlacedFilters,
    columns: &[String],
    types: &[DataType],
    max: usize,
) -> Option<Vec<ArrayRef>> {
    let values = filters.fixed_keys_within(columns, max)?;
    let keys = combinations(&values);
    types
        .iter()
        .enumerate()
        .map(|(column, wanted)| {
            let scalars = keys.iter().map(|k| k[column].clone());
            let array = ScalarValue::iter_to_array(scalars).ok()?;
            let cast = cast(&array, wanted).ok()?;
            // a literal the cast changed (or nulled) is not a key of the column
            let back = datafusion::arrow::compute::cast(&cast, array.data_type()).ok()?;
            (back.as_ref() == array.as_ref() && cast.null_count() == 0).then_some(cast)
        })
        .collect()
}

/// The lake files of one primary-key bucket read through DataFusion's parquet source.
#[derive(Default)]
struct BucketLakeFiles {
    /// Raw-convertible files and the base runs of keyed-run splits: one row per key.
    base: Vec<LakeFile>,
    /// Whether a base file may hold delete rows.
    base_has_deletes: bool,
    /// The newer runs' files, in the order their rows apply.
    newer: Vec<LakeFile>,
    /// Lake splits read so, and how many of them are keyed runs.
    splits: usize,
    run_splits: usize,
    /// The row-kind column of the keyed runs.
    row_kind: Option<String>,
}

/// `schema` with the lake's row-kind column (`Int8`) after its columns, and
/// `columns` with that column's index added last: what a scan of key-value files
/// reads when it needs each row's kind.
fn with_row_kind(schema: &SchemaRef, columns: &[usize], name: &str) -> (SchemaRef, Vec<usize>) {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(
        name,
        datafusion::arrow::datatypes::DataType::Int8,
        false,
    ));
    let mut columns = columns.to_vec();
    columns.push(fields.len() - 1);
    (
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())),
        columns,
    )
}

/// Groups merge-on-read tasks into at most `target` output partitions.
fn group_merge_tasks(splits: &[LakeSplit], target: usize) -> Vec<Vec<MergeTask>> {
    let merge: Vec<MergeTask> = splits
        .iter()
        .filter_map(|s| s.merge_task().cloned())
        .collect();
    if merge.is_empty() {
        return Vec::new();
    }
    let n = target.max(1).min(merge.len());
    let mut groups = vec![Vec::new(); n];
    for (i, s) in merge.into_iter().enumerate() {
        groups[i % n].push(s);
    }
    groups
}

/// Makes the lake's object store (when its source has one ready) the store
/// DataFusion's parquet source reads the warehouse's files through.
fn register_lake_store(state: &dyn Session, location: &LakeLocation) -> Result<()> {
    let Some(store) = location.object_store()? else {
        return Ok(());
    };
    let (url, _) = object_location(&location.warehouse)?;
    state
        .runtime_env()
        .register_object_store(url.as_ref(), store);
    Ok(())
}

/// Fails with the file named if a local lake file is missing (better than a parquet
/// error mid-query, and no partial result is produced).
fn check_file_exists(path: &str) -> Result<()> {
    let local = path
        .strip_prefix("file://")
        .or_else(|| path.strip_prefix("file:"))
        .unwrap_or(path);
    if local.starts_with('/') && !std::path::Path::new(local).exists() {
        return Err(Error::not_found("lake data file is missing").with_context("file", path));
    }
    Ok(())
}

#[async_trait]
impl datafusion::catalog::TableProvider for FlussTableProvider {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        let keys = KeyColumns::of(&self.table);
        Ok(filters
            .iter()
            .map(|f| {
                if place(f, &keys).exact {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Inexact
                }
            })
            .collect())
    }

    /// Every column of a primary-key table defaults to `provider::write::unlisted_column`,
    /// so that [`super::write::FlussWriteRule`] writes an INSERT that leaves columns out
    /// as a Fluss partial update (the columns keep their values).
    fn get_column_default(&self, _column: &str) -> Option<&Expr> {
        (self.mode == ReadMode::Union && self.table.info.has_primary_key())
            .then(super::write::unlisted_column)
    }

    /// Writes are planned by [`super::write::FlussWriteRule`]; without it in the
    /// session, refused.
    async fn insert_into(
        &self,
        _state: &dyn Session,
        _input: Arc<dyn ExecutionPlan>,
        _insert_op: datafusion::logical_expr::dml::InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(super::write::refusal("INSERT", &self.table.path))
    }

    /// See `insert_into`.
    async fn delete_from(
        &self,
        _state: &dyn Session,
        _filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(super::write::refusal("DELETE", &self.table.path))
    }

    /// See `insert_into`.
    async fn update(
        &self,
        _state: &dyn Session,
        _assignments: Vec<(String, Expr)>,
        _filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(super::write::refusal("UPDATE", &self.table.path))
    }

    /// See `insert_into`.
    async fn merge_into(
        &self,
        _state: &dyn Session,
        _source: Arc<dyn ExecutionPlan>,
        _merge_schema: datafusion::common::DFSchemaRef,
        _on: Expr,
        _clauses: Vec<datafusion::logical_expr::dml::MergeIntoClause>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(super::write::refusal("MERGE", &self.table.path))
    }

    /// Refused, as Fluss's own connectors refuse it (its Flink sink offers no
    /// truncation): a log is only ever appended to.
    async fn truncate(&self, _state: &dyn Session) -> DfResult<Arc<dyn ExecutionPlan>> {
        let path = &self.table.path;
        let remedy = if self.table.info.has_primary_key() {
            format!("DELETE FROM {path} removes every row; ")
        } else {
            String::new()
        };
        Err(Error::unsupported(format!(
            "TRUNCATE TABLE is not supported for Fluss table {path}, as in Fluss itself: \
             {remedy}DROP TABLE, then CREATE TABLE ... LIKE, makes an empty table"
        ))
        .into())
    }

    fn statistics(&self) -> Option<Statistics> {
        let mut stats = Statistics::new_unknown(&self.schema);
        stats.num_rows = Precision::Absent;
        Some(stats)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let placed = self.placed(filters);
        if let Some(lookup) = self.plan_key_lookup(state, projection, &placed)? {
            // keys in partitions Fluss no longer has are read by the scan this replaced
            let provider = self.clone();
            let (projection, filters) = (projection.cloned(), filters.to_vec());
            let scan: DeferredScan = Arc::new(move |context: Arc<TaskContext>| {
                let (provider, projection, filters) =
                    (provider.clone(), projection.clone(), filters.clone());
                Box::pin(async move {
                    let state = SessionStateBuilder::new()
                        .with_config(context.session_config().clone())
                        .with_runtime_env(context.runtime_env())
                        .build();
                    provider
                        .scan_reading(&state, projection.as_ref(), &filters, limit)
                        .await
                })
            });
            return Ok(Arc::new(
                lookup.with_fallback(LookupFallback::Deferred(scan)),
            ));
        }
        self.scan_reading(state, projection, filters, limit).await
    }
}

impl FlussTableProvider {
    /// The scan of lake and log (every read but a key lookup).
    async fn scan_reading(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let started = std::time::Instant::now();
        let placed = self.placed(filters);
        // LIMIT is pushed only when every filter is exact (docs/DESIGN.md pushdown contract).
        let limit = if placed.all_exact() { limit } else { None };
        let pruner = self.partition_pruner(state, &placed)?;
        let skip = self.skip_partitions.clone();
        let keep_partition =
            |name: &str| pruner.keep(name) && skip.as_ref().is_none_or(|s| !s.contains(name));
        // Equality on every bucket key selects the buckets those keys hash to.
        let buckets = self.buckets_for_filters(&placed)?;
        let source = self.source.as_ref();
        let (lake, times) = match (self.as_of, self.mode) {
            (None, _) => (CutLake::LatestReadable, CommitTimes::default()),
            (Some(when), ReadMode::Union) => union_at(source, &self.table, when).await?,
            (Some(when), ReadMode::LakeOnly) => (
                lake_at(source, &self.table, when).await?,
                CommitTimes::default(),
            ),
            (Some(when), ReadMode::LogOnly) => {
                return Err(Error::invalid_input(format!(
                    "{}$log is the log tail of the table's current cut; read the table \
                     itself at {when}",
                    self.table.path
                ))
                .into());
            }
        };
        let cut = match plan_cut(
            source,
            &self.table,
            &keep_partition,
            buckets.as_ref(),
            lake,
            self.mode != ReadMode::LakeOnly,
            times,
        )
        .await
        {
            // retention removed offsets the lake never got: only the tablet servers'
            // key-value state still knows the keys written there
            Err(e) if e.context_value("missing_offsets").is_some() && self.may_scan_kv() => {
                tracing::info!(
                    table = %self.table.path,
                    missing_offsets = e.context_value("missing_offsets").unwrap_or_default(),
                    "the changelog no longer reaches the lake's offsets: reading the tablet \
                     servers' current rows (server-scan)"
                );
                let cut = plan_cut(
                    source,
                    &self.table,
                    &keep_partition,
                    buckets.as_ref(),
                    CutLake::Skip,
                    true,
                    times,
                )
                .await?;
                return self
                    .scan_kv_of_cut(
                        state,
                        projection,
                        filters,
                        &placed,
                        &cut,
                        KvScanReason::ChangelogExpired,
                    )
                    .await;
            }
            cut => cut?,
        };
        if let Some(reason) = self.kv_scan_reason(state, &cut)? {
            match reason {
                KvScanReason::ChangelogExpired => tracing::info!(
                    table = %self.table.path,
                    "the changelog no longer reaches the lake's offsets: reading the tablet \
                     servers' current rows (server-scan)"
                ),
                KvScanReason::Asked => {
                    tracing::debug!(table = %self.table.path, "reading by server-scan, as asked")
                }
            }
            return self
                .scan_kv_of_cut(state, projection, filters, &placed, &cut, reason)
                .await;
        }
        // `t$log`: the ranges start where the lake snapshot ends, but it is not read
        let cut = match self.mode {
            ReadMode::LogOnly => UnionCut {
                snapshot: None,
                ..cut
            },
            _ => cut,
        };
        let lake = self
            .plan_lake(state, &cut, &placed, &keep_partition, buckets.as_ref())
            .await?;
        pruner.check(&self.table)?;
        let projection = projection.cloned();
        let output_schema = match &projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => self.schema.clone(),
        };
        // a read of no column (`count(*)`) needs no footers: the lake's manifests
        // count the rows of files read as they are
        let counts_only = projection.as_ref().is_some_and(Vec::is_empty);
        tracing::debug!(
            table = %self.table.path,
            mode = ?self.mode,
            lake_snapshot = ?cut.snapshot_id(),
            lake_files = lake.as_ref().map_or(0, |l| l.plan.file_count()),
            lake_files_pruned = lake.as_ref().map_or(0, |l| l.files_pruned),
            log_buckets = cut.buckets.iter().filter(|b| !b.range.is_empty()).count(),
            log_offsets = cut.buckets.iter().map(|b| b.range.offsets()).sum::<u64>(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "planned the cut and the lake"
        );
        let mut statistics = if counts_only {
            ScanStatistics {
                files: FileStatistics::new(),
                estimates: ColumnEstimates::without_lake(self.schema.clone()),
                partitions: None,
            }
        } else {
            self.scan_statistics(state, lake.as_ref()).await?
        };
        statistics.partitions = pruner.partitions_read();
        statistics.estimates = statistics
            .estimates
            .with_filter(self.physical_predicate(state, &placed.inexact()).as_ref());
        let plan = if self.table.info.has_primary_key() {
            self.scan_pk_table(state, projection, &placed, limit, cut, lake, statistics)
                .await?
        } else {
            self.scan_log_table(
                state,
                projection,
                output_schema,
                &placed,
                limit,
                cut,
                lake,
                statistics,
            )
            .await?
        };
        Ok(plan)
    }
}

/// The conjunction of `filters` over `schema`, when there are any and every column
/// they name is in it.
fn physical_predicate_over(
    state: &dyn Session,
    filters: &[Expr],
    schema: &SchemaRef,
) -> Option<Arc<dyn PhysicalExpr>> {
    let predicate = conjunction(filters.to_vec())?;
    let df_schema = DFSchema::try_from(schema.as_ref().clone()).ok()?;
    state.create_physical_expr(predicate, &df_schema).ok()
}
