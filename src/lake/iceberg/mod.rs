//! The Iceberg side of a Fluss table: its catalog, snapshot metadata, and
//! [`IcebergLakeTable`], the [`LakeTable`] the provider plans and reads through.
//!
//! Conventions follow apache/fluss's Iceberg tiering (`docs/reference/fluss-formats.md`
//! §3.3): the lake table is `<database>.<table>`, carries the Fluss columns (and, on
//! legacy tables created before Fluss 1.0, the system columns `__bucket`, `__offset`,
//! `__timestamp`), and is partitioned by `identity(<partition keys>)` then
//! `bucket(<bucket key>, N)` (legacy tables without a bucket key: `identity(__bucket)`),
//! so a file's partition names its Fluss partition and, where the spec has a bucket
//! field, its bucket.
//!
//! Metadata and planning use the `iceberg` crate; tasks with delete files are read by
//! its arrow reader (arrow 58, bridged) with the deletes applied by this crate
//! (`delete_reader.rs` says why), the rest by DataFusion's parquet source.

mod catalog;
mod delete_reader;
mod deletes;
pub(crate) mod evolve;
mod hadoop;
mod predicate;
mod row_delta;
mod scan;
mod schema;
mod storage;
mod system;
pub(crate) mod tiering;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use futures::stream::BoxStream;
use iceberg::table::Table;

pub use self::catalog::{CATALOG_TYPE_OPTION, IcebergCatalogType};
use crate::error::Result;
use crate::lake::columns::{ValueKind, check_lake_columns};
use crate::lake::lake_error;
use crate::lake::{LakeLocation, LakePlan, LakeScanRequest, LakeSnapshot, LakeTable, MergeTask};
use crate::table::FlussTable;

/// Table property naming the Iceberg warehouse.
pub const WAREHOUSE_PROPERTY: &str = "table.datalake.iceberg.warehouse";

/// The Iceberg lake table of one Fluss table.
pub struct IcebergLakeTable {
    table: Table,
    name: String,
}

impl std::fmt::Debug for IcebergLakeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcebergLakeTable")
            .field("table", &self.name)
            .finish()
    }
}

impl IcebergLakeTable {
    /// The lake table of `table` at `location`; `None` if it does not exist yet.
    pub async fn open(location: &LakeLocation, table: &FlussTable) -> Result<Option<Self>> {
        let name = table.path.to_string();
        let loaded = catalog::load_table(location, table.path.database(), table.path.table())
            .await
            .map_err(|e| e.with_context("table", &name))?;
        Ok(loaded.map(|table| Self { table, name }))
    }

    /// The `iceberg` crate's table (metadata, scans), for callers that need more than
    /// the [`LakeTable`] surface.
    pub fn table(&self) -> &Table {
        &self.table
    }
}

/// The kind of values an Iceberg column holds.
fn value_kind(ty: &iceberg::spec::Type) -> ValueKind {
    use iceberg::spec::{PrimitiveType as P, Type};
    match ty {
        Type::Primitive(p) => match p {
            P::Boolean => ValueKind::Boolean,
            P::Int | P::Long => ValueKind::Integer,
            P::Float | P::Double => ValueKind::Float,
            P::Decimal { scale, .. } => ValueKind::Decimal {
                scale: *scale as i32,
            },
            P::Date => ValueKind::Date,
            P::Time => ValueKind::Time,
            P::Timestamp | P::TimestampNs => ValueKind::Timestamp,
            P::Timestamptz | P::TimestamptzNs => ValueKind::TimestampWithZone,
            P::String => ValueKind::String,
            P::Fixed(_) | P::Binary => ValueKind::Binary,
            P::Uuid => ValueKind::Other,
        },
        _ => ValueKind::Nested,
    }
}

#[async_trait::async_trait]
impl LakeTable for IcebergLakeTable {
    async fn system_table(&self, name: &str) -> Result<Option<RecordBatch>> {
        system::system_table(&self.table, name).await
    }

    fn system_tables(&self) -> &'static [&'static str] {
        system::SYSTEM_TABLES
    }

    fn format_name(&self) -> &'static str {
        "iceberg"
    }

    /// Every Fluss column must exist in the lake table's current schema.
    fn check_schema(&self, fluss: &SchemaRef) -> Result<()> {
        let schema = self.table.metadata().current_schema().clone();
        check_lake_columns(fluss, |name| {
            let field = schema.field_by_name(name)?;
            Some((value_kind(&field.field_type), field.field_type.to_string()))
        })
    }

    fn system_columns(&self) -> Vec<datafusion::arrow::datatypes::Field> {
        use datafusion::arrow::datatypes::TimeUnit;
        let schema = self.table.metadata().current_schema();
        let unit = |ty: &iceberg::spec::Type| match ty {
            iceberg::spec::Type::Primitive(iceberg::spec::PrimitiveType::TimestamptzNs) => {
                TimeUnit::Nanosecond
            }
            _ => TimeUnit::Microsecond,
        };
        schema
            .as_struct()
            .fields()
            .iter()
            .filter_map(|f| crate::lake::system_column(&f.name, unit(&f.field_type)))
            .collect()
    }

    async fn plan(&self, request: &LakeScanRequest) -> Result<LakePlan> {
        scan::plan_snapshot(&self.table, request)
            .await
            .map_err(|e| e.with_context("table", &self.name))
    }

    /// The tasks as planned (merge tasks carry theirs whole), on any process.
    async fn read(
        &self,
        _snapshot_id: i64,
        tasks: Vec<MergeTask>,
        columns: Vec<String>,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let planned = tasks
            .iter()
            .map(|task| scan::merge_task(task, &self.table))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| e.with_context("table", &self.name))?;
        scan::read_tasks(&self.table, planned, &columns)
            .map_err(|e| e.with_context("table", &self.name))
    }

    async fn snapshots(&self) -> Result<Vec<LakeSnapshot>> {
        let metadata = self.table.metadata();
        let mut snapshots: Vec<_> = metadata.snapshots().collect();
        // `snapshots()` is not in commit order.
        snapshots.sort_by_key(|s| (s.sequence_number(), s.timestamp_ms()));
        Ok(snapshots
            .into_iter()
            .map(|s| {
                let properties = &s.summary().additional_properties;
                LakeSnapshot {
                    snapshot_id: s.snapshot_id(),
                    schema_id: s.schema_id().map_or(-1, i64::from),
                    commit_user: properties.get("commit-user").cloned().unwrap_or_default(),
                    commit_kind: s.summary().operation.as_str().to_uppercase(),
                    commit_time_millis: s.timestamp_ms(),
                    total_record_count: properties
                        .get("total-records")
                        .and_then(|v| v.parse().ok()),
                    fluss_offsets: properties.get(crate::lake::FLUSS_OFFSETS_PROPERTY).cloned(),
                }
            })
            .collect())
    }
}
