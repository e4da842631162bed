//! [`FlussPhysicalCodec`]: the Fluss scan nodes as bytes, so a physical plan planned
//! once (its cut pinned) runs in other processes (datafusion-distributed workers).
//!
//! A node carries plan values only: the source's [`SourceSpec`], the table's
//! metadata ([`table_wire`]), the snapshot id and the cut, projection, limit and
//! schemas, and predicates as DataFusion's protobuf expressions. Never a built
//! pruning predicate, a lake table, a cache or a credential: the decoding process
//! reopens its sources and lakes through its own [`PlanSources`]. Lake parquet scans
//! a node holds (a primary-key bucket's files) travel as their files and column
//! mapping ([`BucketScanSpec`]) and are planned again on decoding, since
//! DataFusion's serialized parquet scan loses the field-id adapter and the
//! row-number column.

mod frame;
mod sources;
pub(crate) mod split;
mod table_wire;

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::TableOptions;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use serde::{Deserialize, Serialize};

use self::frame::{FrameReader, FrameWriter, Part};
pub use self::sources::PlanSources;
use self::table_wire::TableWire;
use super::changelog::ChangelogExec;
use super::field_id_scan::{FlussFieldIdScanExec, with_field_ids};
use super::filter_estimate::FilterEstimateExec;
use super::kv_scan_exec::{FlussKvScanExec, KvScanReason};
use super::lake_exec::{
    BucketScanOptions, BucketScanSpec, FlussLakeMergeExec, parquet_bucket_scan,
};
use super::log_exec::{BatchSkipping, FlussLogScanExec};
use super::partition_pruner::PartitionsRead;
use super::pk_exec::{
    BucketParquetScan, FileKeyScan, FlussPrimaryKeyScanExec, NewerRunScan, PrimaryKeyBucketTask,
    PrimaryKeyMergeInputs,
};
use super::statistics::ColumnEstimates;
use crate::error::{Error, Result};
use crate::lake::{ColumnMapping, LakeFile, MergeTask};
use crate::source::{BucketLocation, FlussSource, SourceSpec};
use crate::union::BucketCut;
use crate::union::lake_keys::LakeFileId;

/// Encodes and decodes the Fluss scan nodes (`FlussLogScanExec`,
/// `FlussLakeMergeExec`, `FlussPrimaryKeyScanExec`, `FlussChangelogExec`,
/// `FlussKvScanExec`, and the pass-through `FlussFilterEstimateExec` and
/// `FlussFieldIdScanExec`) for DataFusion's physical plan serialization.
///
/// Both ends register it (the same codecs, in the same order); a decoding process
/// runs the nodes against the sources of its [`PlanSources`] only. Nodes of other
/// kinds are left to the other codecs (an error here). Key lookups
/// (`FlussKeyLookupExec`, `FlussLookupJoinExec`) do not travel: plan distributed
/// queries without the lookup-join rule.
#[derive(Debug, Clone)]
pub struct FlussPhysicalCodec {
    sources: Arc<PlanSources>,
}

impl FlussPhysicalCodec {
    /// A codec decoding nodes against `sources`.
    pub fn new(sources: Arc<PlanSources>) -> Self {
        Self { sources }
    }

    /// The sources decoded nodes read.
    pub fn sources(&self) -> &Arc<PlanSources> {
        &self.sources
    }
}

/// The JSON header of an encoded node.
#[derive(Debug, Serialize, Deserialize)]
enum NodeWire {
    LogScan(Box<LogScanWire>),
    LakeMerge(Box<LakeMergeWire>),
    PrimaryKeyScan(Box<PrimaryKeyScanWire>),
    Changelog(Box<ChangelogWire>),
    KvScan(Box<KvScanWire>),
    FilterEstimate { predicate: Part },
    FieldIdScan { columns: Vec<(String, i32)> },
}

/// Column estimates, less the lake files' statistics (a worker plans nothing by them).
#[derive(Debug, Serialize, Deserialize)]
struct EstimatesWire {
    schema: Part,
    covers_lake: bool,
    filter_share: f64,
}

#[derive(Debug, Serialize, Deserialize)]
struct LogScanWire {
    source: SourceSpec,
    table: TableWire,
    groups: Vec<Vec<BucketCut>>,
    projection: Option<Vec<usize>>,
    schema: Part,
    skipping_schema: Part,
    skipping: Option<Part>,
    /// Dynamic filters (hash joins', TopK's): the plan's converter keeps one filter
    /// one expression, so a join shipped in the same plan still fills it.
    dynamic: Vec<Part>,
    filters: Vec<String>,
    snapshot_id: Option<i64>,
    limit: Option<usize>,
    estimates: EstimatesWire,
    partitions: Option<PartitionsRead>,
    lake_files_pruned: usize,
    exact_rows: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct LakeMergeWire {
    source: SourceSpec,
    table: TableWire,
    groups: Vec<Vec<MergeTask>>,
    schema: Part,
    snapshot_id: i64,
    limit: Option<usize>,
    projection: Option<Vec<usize>>,
    estimates: EstimatesWire,
}

#[derive(Debug, Serialize, Deserialize)]
struct BucketScanWire {
    files: Vec<LakeFile>,
    mapping: ColumnMapping,
    table_schema: Part,
    projection: Vec<usize>,
    predicate: Option<Part>,
    row_numbers: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct BucketParquetWire {
    scan: BucketScanWire,
    keys: Vec<BucketScanWire>,
    splits: usize,
    run_splits: usize,
    rows: u64,
    drops_deletes: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct NewerRunWire {
    scan: BucketScanWire,
    row_count: u64,
    keys: Option<BucketScanWire>,
}

#[derive(Debug, Serialize, Deserialize)]
struct BucketTaskWire {
    partition_name: Option<String>,
    bucket: i32,
    lake_splits: Vec<MergeTask>,
    lake_parquet: Option<BucketParquetWire>,
    lake_newer_runs: Vec<NewerRunWire>,
    tail: Option<BucketCut>,
}

#[derive(Debug, Serialize, Deserialize)]
struct PrimaryKeyScanWire {
    source: SourceSpec,
    table: TableWire,
    lake_snapshot: Option<i64>,
    scan_columns: Vec<usize>,
    scan_schema: Part,
    key_positions: Vec<usize>,
    output_positions: Vec<usize>,
    estimates: EstimatesWire,
    key_lookup: Option<Part>,
    groups: Vec<Vec<BucketTaskWire>>,
    limit: Option<usize>,
    filters: Vec<String>,
    partitions: Option<PartitionsRead>,
    lake_files_pruned: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct ChangelogWire {
    source: SourceSpec,
    table: TableWire,
    buckets: Vec<BucketCut>,
    full_schema: Part,
    projection: Option<Vec<usize>>,
    schema: Part,
    limit: Option<usize>,
    binlog: bool,
    data: Option<Vec<usize>>,
    commit_time: Option<(i64, i64)>,
}

#[derive(Debug, Serialize, Deserialize)]
struct KvScanWire {
    source: SourceSpec,
    table: TableWire,
    groups: Vec<Vec<BucketLocation>>,
    table_schema: Part,
    predicate: Option<Part>,
    projection: Vec<usize>,
    filters: Vec<String>,
    reason: KvScanReason,
    schema: Part,
}

/// The spec of a node's source, or an error saying why its plan cannot travel.
fn spec_of(source: &Arc<dyn FlussSource>) -> Result<SourceSpec> {
    source.spec().ok_or_else(|| {
        Error::unsupported(format!(
            "{} cannot be opened by another process, so its plans do not travel",
            source.name()
        ))
    })
}

impl FlussPhysicalCodec {
    fn encode_node(
        &self,
        node: &Arc<dyn ExecutionPlan>,
        frame: &mut FrameWriter<'_>,
    ) -> DfResult<Option<NodeWire>> {
        if let Some(scan) = node.downcast_ref::<FlussLogScanExec>() {
            return Ok(Some(NodeWire::LogScan(Box::new(encode_log(scan, frame)?))));
        }
        if let Some(merge) = node.downcast_ref::<FlussLakeMergeExec>() {
            return Ok(Some(NodeWire::LakeMerge(Box::new(LakeMergeWire {
                source: spec_of(&merge.source)?,
                table: TableWire::of(&merge.table),
                groups: merge.groups.clone(),
                schema: frame.schema(&merge.schema)?,
                snapshot_id: merge.snapshot_id,
                limit: merge.limit,
                projection: merge.projection.clone(),
                estimates: encode_estimates(&merge.estimates, frame)?,
            }))));
        }
        if let Some(scan) = node.downcast_ref::<FlussPrimaryKeyScanExec>() {
            return Ok(Some(NodeWire::PrimaryKeyScan(Box::new(encode_pk(
                scan, frame,
            )?))));
        }
        if let Some(scan) = node.downcast_ref::<ChangelogExec>() {
            return Ok(Some(NodeWire::Changelog(Box::new(ChangelogWire {
                source: spec_of(&scan.source)?,
                table: TableWire::of(&scan.table),
                buckets: scan.buckets.clone(),
                full_schema: frame.schema(&scan.full_schema)?,
                projection: scan.projection.clone(),
                schema: frame.schema(&scan.schema)?,
                limit: scan.limit,
                binlog: scan.binlog,
                data: scan.data.clone(),
                commit_time: scan.commit_time,
            }))));
        }
        if let Some(scan) = node.downcast_ref::<FlussKvScanExec>() {
            return Ok(Some(NodeWire::KvScan(Box::new(KvScanWire {
                source: spec_of(&scan.source)?,
                table: TableWire::of(&scan.table),
                groups: scan.groups.clone(),
                table_schema: frame.schema(&scan.table_schema)?,
                predicate: scan.predicate.as_ref().map(|p| frame.expr(p)).transpose()?,
                projection: scan.projection.clone(),
                filters: scan.filters.clone(),
                reason: scan.reason,
                schema: frame.schema(&scan.schema)?,
            }))));
        }
        if let Some(estimate) = node.downcast_ref::<FilterEstimateExec>() {
            return Ok(Some(NodeWire::FilterEstimate {
                predicate: frame.expr(&estimate.predicate)?,
            }));
        }
        if let Some(scan) = node.downcast_ref::<FlussFieldIdScanExec>() {
            return Ok(Some(NodeWire::FieldIdScan {
                columns: scan.columns.clone(),
            }));
        }
        Ok(None)
    }

    fn decode_node(
        &self,
        wire: NodeWire,
        frame: &FrameReader<'_>,
        inputs: &[Arc<dyn ExecutionPlan>],
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let only_input = || match inputs {
            [input] => Ok(input.clone()),
            _ => Err(DataFusionError::Internal(format!(
                "a shipped pass-through node has {} inputs, not one",
                inputs.len()
            ))),
        };
        Ok(match wire {
            NodeWire::LogScan(wire) => Arc::new(self.decode_log(*wire, frame)?),
            NodeWire::LakeMerge(wire) => {
                let table = wire.table.into_table()?;
                let lake = self.sources.lake(&wire.source, &table, wire.snapshot_id)?;
                let schema = frame.schema(wire.schema)?;
                let properties = super::describe::leaf_properties(&schema, wire.groups.len());
                Arc::new(FlussLakeMergeExec {
                    lake,
                    source: self.sources.source(&wire.source)?,
                    table,
                    groups: wire.groups,
                    schema,
                    snapshot_id: wire.snapshot_id,
                    limit: wire.limit,
                    projection: wire.projection,
                    estimates: decode_estimates(&wire.estimates, frame)?,
                    properties,
                    metrics: ExecutionPlanMetricsSet::new(),
                })
            }
            NodeWire::PrimaryKeyScan(wire) => Arc::new(self.decode_pk(*wire, frame)?),
            NodeWire::Changelog(wire) => {
                let schema = frame.schema(wire.schema)?;
                let properties = super::describe::leaf_properties(&schema, wire.buckets.len());
                Arc::new(ChangelogExec {
                    source: self.sources.source(&wire.source)?,
                    table: wire.table.into_table()?,
                    buckets: wire.buckets,
                    full_schema: frame.schema(wire.full_schema)?,
                    projection: wire.projection,
                    schema,
                    limit: wire.limit,
                    binlog: wire.binlog,
                    data: wire.data,
                    commit_time: wire.commit_time,
                    metrics: ExecutionPlanMetricsSet::new(),
                    properties,
                })
            }
            NodeWire::KvScan(wire) => {
                let table_schema = frame.schema(wire.table_schema)?;
                let schema = frame.schema(wire.schema)?;
                let properties = super::describe::leaf_properties(&schema, wire.groups.len());
                Arc::new(FlussKvScanExec {
                    source: self.sources.source(&wire.source)?,
                    table: wire.table.into_table()?,
                    groups: wire.groups,
                    predicate: wire
                        .predicate
                        .map(|p| frame.expr(p, &table_schema))
                        .transpose()?,
                    table_schema,
                    projection: wire.projection,
                    filters: wire.filters,
                    reason: wire.reason,
                    schema,
                    properties,
                    metrics: ExecutionPlanMetricsSet::new(),
                })
            }
            NodeWire::FilterEstimate { predicate } => {
                let input = only_input()?;
                let predicate = frame.expr(predicate, &input.schema())?;
                Arc::new(FilterEstimateExec::new(input, predicate))
            }
            NodeWire::FieldIdScan { columns } => {
                let input = with_field_ids(only_input()?, &columns)?;
                Arc::new(FlussFieldIdScanExec::new(input, columns))
            }
        })
    }

    fn decode_log(&self, wire: LogScanWire, frame: &FrameReader<'_>) -> DfResult<FlussLogScanExec> {
        let schema = frame.schema(wire.schema)?;
        let skipping_schema = frame.schema(wire.skipping_schema)?;
        let fixed = wire
            .skipping
            .map(|p| frame.expr(p, &skipping_schema))
            .transpose()?;
        let mut skipping = BatchSkipping::new(skipping_schema.clone(), fixed);
        skipping.dynamic = wire
            .dynamic
            .into_iter()
            .map(|p| frame.expr(p, &skipping_schema))
            .collect::<DfResult<_>>()?;
        let properties = super::describe::leaf_properties(&schema, wire.groups.len());
        let metrics = ExecutionPlanMetricsSet::new();
        super::describe::lake_files_pruned(&metrics, wire.lake_files_pruned);
        Ok(FlussLogScanExec {
            source: self.sources.source(&wire.source)?,
            table: wire.table.into_table()?,
            groups: wire.groups,
            projection: wire.projection,
            schema,
            skipping,
            filters: wire.filters,
            snapshot_id: wire.snapshot_id,
            limit: wire.limit,
            estimates: decode_estimates(&wire.estimates, frame)?,
            properties,
            metrics,
            partitions: wire.partitions,
            lake_files_pruned: wire.lake_files_pruned,
            exact_rows: wire.exact_rows,
        })
    }

    fn decode_pk(
        &self,
        wire: PrimaryKeyScanWire,
        frame: &FrameReader<'_>,
    ) -> DfResult<FlussPrimaryKeyScanExec> {
        let table = wire.table.into_table()?;
        let lake = match wire.lake_snapshot {
            Some(snapshot) => Some((self.sources.lake(&wire.source, &table, snapshot)?, snapshot)),
            None => None,
        };
        let scan_schema = frame.schema(wire.scan_schema)?;
        let (tail_cache, lake_keys) = self.sources.caches(&wire.source)?;
        let inputs = PrimaryKeyMergeInputs {
            source: self.sources.source(&wire.source)?,
            table,
            lake,
            scan_columns: wire.scan_columns,
            scan_schema: scan_schema.clone(),
            key_positions: wire.key_positions,
            output_positions: wire.output_positions,
            estimates: decode_estimates(&wire.estimates, frame)?,
            tail_cache: Some(tail_cache),
            lake_keys: Some(lake_keys),
            key_lookup: wire.key_lookup.map(|p| frame.arrays(p)).transpose()?,
        };
        let key_types = inputs.key_types();
        let planner = BucketScanPlanner::new(frame)?;
        let mut groups = Vec::with_capacity(wire.groups.len());
        for group in wire.groups {
            let mut tasks = Vec::with_capacity(group.len());
            for task in group {
                tasks.push(planner.task(task, &key_types)?);
            }
            groups.push(tasks);
        }
        let schema = Arc::new(scan_schema.project(&inputs.output_positions)?);
        let properties = super::describe::leaf_properties(&schema, groups.len());
        let metrics = ExecutionPlanMetricsSet::new();
        super::describe::lake_files_pruned(&metrics, wire.lake_files_pruned);
        Ok(FlussPrimaryKeyScanExec {
            inputs: Arc::new(inputs),
            groups,
            schema,
            limit: wire.limit,
            filters: wire.filters,
            properties,
            metrics,
            join_lookup: None,
            partitions: wire.partitions,
            lake_files_pruned: wire.lake_files_pruned,
        })
    }
}

fn encode_estimates(
    estimates: &ColumnEstimates,
    frame: &mut FrameWriter<'_>,
) -> DfResult<EstimatesWire> {
    Ok(EstimatesWire {
        schema: frame.schema(&estimates.schema)?,
        covers_lake: estimates.covers_lake,
        filter_share: estimates.filter_share,
    })
}

fn decode_estimates(wire: &EstimatesWire, frame: &FrameReader<'_>) -> DfResult<ColumnEstimates> {
    let mut estimates = ColumnEstimates::new(frame.schema(wire.schema)?, &[], wire.covers_lake);
    estimates.filter_share = wire.filter_share;
    Ok(estimates)
}

fn encode_log(scan: &FlussLogScanExec, frame: &mut FrameWriter<'_>) -> DfResult<LogScanWire> {
    Ok(LogScanWire {
        source: spec_of(&scan.source)?,
        table: TableWire::of(&scan.table),
        groups: scan.groups.clone(),
        projection: scan.projection.clone(),
        schema: frame.schema(&scan.schema)?,
        skipping_schema: frame.schema(&scan.skipping.table_schema)?,
        skipping: scan
            .skipping
            .fixed
            .as_ref()
            .map(|f| frame.expr(f))
            .transpose()?,
        dynamic: scan
            .skipping
            .dynamic
            .iter()
            .map(|f| frame.expr(f))
            .collect::<DfResult<_>>()?,
        filters: scan.filters.clone(),
        snapshot_id: scan.snapshot_id,
        limit: scan.limit,
        estimates: encode_estimates(&scan.estimates, frame)?,
        partitions: scan.partitions,
        lake_files_pruned: scan.lake_files_pruned,
        exact_rows: scan.exact_rows,
    })
}

fn encode_bucket_scan(
    spec: &BucketScanSpec,
    frame: &mut FrameWriter<'_>,
) -> DfResult<BucketScanWire> {
    Ok(BucketScanWire {
        files: spec.files.clone(),
        mapping: spec.mapping.clone(),
        table_schema: frame.schema(&spec.table_schema)?,
        projection: spec.projection.clone(),
        predicate: spec
            .options
            .predicate
            .as_ref()
            .map(|p| frame.expr(p))
            .transpose()?,
        row_numbers: spec.options.row_numbers,
    })
}

fn encode_pk(
    scan: &FlussPrimaryKeyScanExec,
    frame: &mut FrameWriter<'_>,
) -> DfResult<PrimaryKeyScanWire> {
    let inputs = &scan.inputs;
    let mut groups = Vec::with_capacity(scan.groups.len());
    for group in &scan.groups {
        let mut tasks = Vec::with_capacity(group.len());
        for task in group {
            let lake_parquet = match &task.lake_parquet {
                Some(p) => Some(BucketParquetWire {
                    scan: encode_bucket_scan(&p.spec, frame)?,
                    keys: p
                        .keys
                        .iter()
                        .map(|k| encode_bucket_scan(&k.spec, frame))
                        .collect::<DfResult<_>>()?,
                    splits: p.splits,
                    run_splits: p.run_splits,
                    rows: p.rows,
                    drops_deletes: p.drops_deletes,
                }),
                None => None,
            };
            let mut newer = Vec::with_capacity(task.lake_newer_runs.len());
            for run in &task.lake_newer_runs {
                newer.push(NewerRunWire {
                    scan: encode_bucket_scan(&run.spec, frame)?,
                    row_count: run.row_count,
                    keys: run
                        .keys
                        .as_ref()
                        .map(|k| encode_bucket_scan(&k.spec, frame))
                        .transpose()?,
                });
            }
            tasks.push(BucketTaskWire {
                partition_name: task.partition_name.clone(),
                bucket: task.bucket,
                lake_splits: task.lake_splits.clone(),
                lake_parquet,
                lake_newer_runs: newer,
                tail: task.tail.clone(),
            });
        }
        groups.push(tasks);
    }
    Ok(PrimaryKeyScanWire {
        source: spec_of(&inputs.source)?,
        table: TableWire::of(&inputs.table),
        lake_snapshot: inputs.lake.as_ref().map(|(_, s)| *s),
        scan_columns: inputs.scan_columns.clone(),
        scan_schema: frame.schema(&inputs.scan_schema)?,
        key_positions: inputs.key_positions.clone(),
        output_positions: inputs.output_positions.clone(),
        estimates: encode_estimates(&inputs.estimates, frame)?,
        key_lookup: inputs
            .key_lookup
            .as_ref()
            .map(|k| frame.arrays(k))
            .transpose()?,
        groups,
        limit: scan.limit,
        filters: scan.filters.clone(),
        partitions: scan.partitions,
        lake_files_pruned: scan.lake_files_pruned,
    })
}

/// Plans a primary-key bucket's parquet scans again from their plan values, in the
/// decoding task's runtime (its object stores) and parquet options.
struct BucketScanPlanner<'a, 'f> {
    frame: &'a FrameReader<'f>,
    task: &'a TaskContext,
    parquet: datafusion::common::config::TableParquetOptions,
}

impl<'a, 'f> BucketScanPlanner<'a, 'f> {
    fn new(frame: &'a FrameReader<'f>) -> DfResult<Self> {
        let task = frame.task();
        let parquet =
            TableOptions::default_from_session_config(task.session_config().options()).parquet;
        Ok(Self {
            frame,
            task,
            parquet,
        })
    }

    fn scan(&self, wire: BucketScanWire) -> DfResult<(BucketScanSpec, Arc<dyn ExecutionPlan>)> {
        let table_schema: SchemaRef = self.frame.schema(wire.table_schema)?;
        let predicate = wire
            .predicate
            .map(|p| self.frame.expr(p, &table_schema))
            .transpose()?;
        let spec = BucketScanSpec {
            files: wire.files,
            mapping: wire.mapping,
            table_schema,
            projection: wire.projection,
            options: BucketScanOptions {
                predicate,
                row_numbers: wire.row_numbers,
            },
        };
        let plan = parquet_bucket_scan(&self.task.runtime_env(), &self.parquet, &spec)?;
        Ok((spec, plan))
    }

    fn key_scan(
        &self,
        wire: BucketScanWire,
        key_types: &[datafusion::arrow::datatypes::DataType],
    ) -> DfResult<FileKeyScan> {
        let (spec, plan) = self.scan(wire)?;
        let file = spec.files.first().ok_or_else(|| {
            DataFusionError::Internal("a shipped key scan reads no file".to_string())
        })?;
        Ok(FileKeyScan {
            file: LakeFileId {
                path: file.path.clone(),
                size: file.size,
                key_types: key_types.to_vec(),
            },
            plan,
            spec,
        })
    }

    fn task(
        &self,
        wire: BucketTaskWire,
        key_types: &[datafusion::arrow::datatypes::DataType],
    ) -> DfResult<PrimaryKeyBucketTask> {
        let lake_parquet = match wire.lake_parquet {
            Some(p) => {
                let (spec, plan) = self.scan(p.scan)?;
                let keys = p
                    .keys
                    .into_iter()
                    .map(|k| self.key_scan(k, key_types))
                    .collect::<DfResult<_>>()?;
                Some(BucketParquetScan {
                    plan,
                    spec,
                    keys,
                    splits: p.splits,
                    run_splits: p.run_splits,
                    rows: p.rows,
                    drops_deletes: p.drops_deletes,
                })
            }
            None => None,
        };
        let mut newer = Vec::with_capacity(wire.lake_newer_runs.len());
        for run in wire.lake_newer_runs {
            let (spec, rows) = self.scan(run.scan)?;
            newer.push(NewerRunScan {
                rows,
                spec,
                row_count: run.row_count,
                keys: run.keys.map(|k| self.key_scan(k, key_types)).transpose()?,
            });
        }
        Ok(PrimaryKeyBucketTask {
            partition_name: wire.partition_name,
            bucket: wire.bucket,
            lake_splits: wire.lake_splits,
            lake_parquet,
            lake_newer_runs: newer,
            tail: wire.tail,
        })
    }
}

impl PhysicalExtensionCodec for FlussPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let Some(frame) = FrameReader::open(buf, ctx, self, proto_converter)? else {
            return Err(DataFusionError::NotImplemented(
                "not a Fluss plan node".to_string(),
            ));
        };
        let wire: NodeWire = frame.header()?;
        self.decode_node(wire, &frame, inputs)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        let mut frame = FrameWriter::new(self, proto_converter);
        match self.encode_node(&node, &mut frame)? {
            Some(wire) => Ok(frame.finish(&wire, buf)?),
            None => Err(DataFusionError::NotImplemented(format!(
                "{} is not a Fluss plan node",
                node.name()
            ))),
        }
    }
}
