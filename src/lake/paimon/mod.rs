//! The Paimon side of a Fluss table: its filesystem-catalog warehouse, table creation
//! with Fluss's conventions, snapshot metadata, and [`PaimonLakeTable`], the
//! [`LakeTable`] the provider plans and reads through.
//!
//! Conventions follow apache/fluss `PaimonLakeCatalog` / `PaimonConversions.toPaimonSchema`
//! as Fluss 1.0 creates new tables (`docs/reference/fluss-formats.md` §3.2): same
//! database and table names, the Fluss columns with no system columns (FIP-27),
//! `bucket` = bucket count with `bucket-key` (or `-1`, bucket-unaware, without bucket
//! key), primary key with `changelog-producer=input`, `partition.legacy-name=false` on
//! every table, `paimon.X` properties passed as `X` and every other property (but
//! `table.datalake.paimon.*`) as `fluss.<key>`; nothing else (Paimon's default file
//! format is parquet).

use std::collections::HashMap;

use fluss::metadata::DataType as FlussType;
use paimon::catalog::{Catalog, Identifier};
use paimon::spec::{
    BigIntType, BinaryType, BooleanType, CharType, DataType, DateType, DecimalType, DoubleType,
    FloatType, IntType, LocalZonedTimestampType, Schema, SmallIntType, TimeType, TimestampType,
    TinyIntType, VarBinaryType, VarCharType,
};
use paimon::{CatalogOptions, FileSystemCatalog, Options};

pub(crate) mod scan;
mod sections;
mod system;
pub(crate) mod tiering;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use futures::stream::BoxStream;

use crate::error::{Error, ErrorKind, Result};
use crate::lake::columns::{ValueKind, check_lake_columns};
use crate::lake::{LakeLocation, LakePlan, LakeScanRequest, LakeSnapshot, LakeTable, MergeTask};
use crate::table::FlussTable;

/// Table property naming the Paimon warehouse.
pub const WAREHOUSE_PROPERTY: &str = "table.datalake.paimon.warehouse";

/// A Paimon warehouse opened as a filesystem catalog.
pub struct PaimonLake {
    catalog: FileSystemCatalog,
    warehouse: String,
}

impl std::fmt::Debug for PaimonLake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaimonLake")
            .field("warehouse", &self.warehouse)
            .finish()
    }
}

fn lake_error(message: impl Into<String>, table: &str) -> impl FnOnce(paimon::Error) -> Error {
    let message = message.into();
    let table = table.to_string();
    move |e| {
        Error::new(ErrorKind::Lake, message)
            .with_context("table", table)
            .with_source(e)
    }
}

impl PaimonLake {
    /// Opens a warehouse at an absolute path or URL.
    pub fn open(warehouse: &str) -> Result<Self> {
        Self::open_with_options(warehouse, &HashMap::new())
    }

    /// Opens a warehouse with catalog and storage options (`s3.endpoint`, ...).
    pub fn open_with_options(warehouse: &str, extra: &HashMap<String, String>) -> Result<Self> {
        Self::open_with(warehouse, extra, &[])
    }

    /// Opens a warehouse to read its tables: the immutable metadata files (schemas,
    /// snapshots, manifests) are kept in memory, up to 8 MiB, least recently used
    /// evicted first, for as long as a table opened from it lives (the lake plan cache
    /// keeps up to 128 such tables). Besides reading each once, this makes the crate
    /// read them at their size: without a cache, `paimon::io::InputFile::read` reads
    /// through opendal without a size, and opendal's filesystem reader then zero-fills
    /// a 2 MiB buffer for every file (`PositionReadStream`,
    /// `DEFAULT_POSITION_READ_MAX_BUF_SIZE`), which was most of the page faults of
    /// planning a table in a fresh process.
    pub(crate) fn open_for_reads(warehouse: &str, extra: &HashMap<String, String>) -> Result<Self> {
        Self::open_with(
            warehouse,
            extra,
            &[
                (CatalogOptions::LOCAL_CACHE_ENABLED, "true"),
                (CatalogOptions::LOCAL_CACHE_WHITELIST, "meta"),
                (CatalogOptions::LOCAL_CACHE_MAX_SIZE, "8mb"),
            ],
        )
    }

    fn open_with(
        warehouse: &str,
        extra: &HashMap<String, String>,
        catalog: &[(&str, &str)],
    ) -> Result<Self> {
        let mut options = Options::new();
        for (key, value) in &crate::storage::remote::paimon_storage_options(extra) {
            options.set(key.as_str(), value.as_str());
        }
        for (key, value) in catalog {
            options.set(*key, *value);
        }
        options.set(CatalogOptions::WAREHOUSE, warehouse);
        let catalog = FileSystemCatalog::new(options).map_err(|e| {
            Error::new(ErrorKind::Lake, "cannot open the Paimon warehouse")
                .with_context("warehouse", crate::storage::redact(warehouse))
                .with_source(e)
        })?;
        Ok(Self {
            catalog,
            warehouse: warehouse.to_string(),
        })
    }

    /// The warehouse location.
    pub fn warehouse(&self) -> &str {
        &self.warehouse
    }

    /// Loads a Paimon table; `None` if it does not exist yet.
    pub async fn table(&self, database: &str, table: &str) -> Result<Option<paimon::table::Table>> {
        let ident = Identifier::new(database, table);
        match self.catalog.get_table(&ident).await {
            Ok(t) => Ok(Some(t)),
            Err(paimon::Error::TableNotExist { .. })
            | Err(paimon::Error::DatabaseNotExist { .. }) => Ok(None),
            Err(e) => Err(lake_error(
                "cannot load the Paimon table",
                &format!("{database}.{table}"),
            )(e)),
        }
    }

    /// Loads the lake table of a Fluss table, creating it on first use.
    pub async fn ensure_table(&self, table: &FlussTable) -> Result<paimon::table::Table> {
        let (db, name) = (table.path.database(), table.path.table());
        if let Some(t) = self.table(db, name).await? {
            return self.sync_columns(t, table).await;
        }
        let full = table.path.to_string();
        self.catalog
            .create_database(db, true, HashMap::new())
            .await
            .map_err(lake_error("cannot create the Paimon database", &full))?;
        let schema = paimon_schema(table)?;
        self.catalog
            .create_table(&Identifier::new(db, name), schema, true)
            .await
            .map_err(lake_error("cannot create the Paimon table", &full))?;
        self.table(db, name).await?.ok_or_else(|| {
            Error::internal("Paimon table missing after create").with_context("table", full)
        })
    }
}

impl PaimonLake {
    /// Adds to `lake` the columns of `table`'s Fluss schema it lacks (`ALTER TABLE ...
    /// ADD`), nullable and after the last user column (before the legacy system
    /// columns), as Fluss's `PaimonLakeCatalog.alterTable` does; returns the table as
    /// altered. Paimon gives each a new field id, so older data files read it as NULL.
    pub async fn sync_columns(
        &self,
        lake: paimon::table::Table,
        table: &FlussTable,
    ) -> Result<paimon::table::Table> {
        let fields = lake.schema().fields();
        // the user's columns, then (legacy tables) the system columns
        let user = fields
            .iter()
            .take_while(|f| !crate::lake::LEGACY_SYSTEM_COLUMNS.contains(&f.name()))
            .count();
        let legacy = user < fields.len();
        let mut last_user = fields[..user].last().map(|f| f.name().to_string());
        let mut changes = Vec::new();
        for column in table.info.get_schema().columns() {
            if fields.iter().any(|f| f.name() == column.name()) {
                continue;
            }
            let name = column.name().to_string();
            changes.push(paimon::spec::SchemaChange::AddColumn {
                field_names: vec![name.clone()],
                data_type: paimon_type(column.data_type(), true)?,
                comment: column.comment().map(str::to_string),
                column_move: match (&last_user, legacy) {
                    (Some(after), true) => Some(paimon::spec::ColumnMove::move_after(
                        name.clone(),
                        after.clone(),
                    )),
                    _ => None,
                },
            });
            last_user = Some(name);
        }
        if changes.is_empty() {
            return Ok(lake);
        }
        let (db, name) = (table.path.database(), table.path.table());
        let full = table.path.to_string();
        self.catalog
            .alter_table(&Identifier::new(db, name), changes, false)
            .await
            .map_err(lake_error(
                "cannot add the columns to the Paimon table",
                &full,
            ))?;
        self.table(db, name).await?.ok_or_else(|| {
            Error::internal("Paimon table missing after alter").with_context("table", full)
        })
    }
}

/// The Paimon schema Fluss creates for a table.
pub fn paimon_schema(table: &FlussTable) -> Result<Schema> {
    let info = &table.info;
    let schema = info.get_schema();
    let pk: Vec<String> = info.get_primary_keys().clone();
    let mut builder = Schema::builder();
    for column in schema.columns() {
        let nullable = !pk.iter().any(|k| k == column.name()) && column.data_type().is_nullable();
        builder = builder.column(column.name(), paimon_type(column.data_type(), nullable)?);
    }
    if !pk.is_empty() {
        builder = builder
            .primary_key(pk)
            .option("changelog-producer", "input");
    }
    let partition_keys: Vec<String> = info.get_partition_keys().to_vec();
    if !partition_keys.is_empty() {
        builder = builder.partition_keys(partition_keys);
    }
    // set on every table (`PaimonConversions.setPaimonDefaultProperties`)
    builder = builder.option("partition.legacy-name", "false");
    let bucket_keys = info.get_bucket_keys();
    if bucket_keys.is_empty() {
        builder = builder.option("bucket", "-1");
    } else {
        builder = builder
            .option("bucket", info.get_num_buckets().to_string())
            .option("bucket-key", bucket_keys.join(","));
    }
    // table and custom properties alike (`setFlussPropertyToPaimon` takes both)
    for (key, value) in info
        .get_properties()
        .iter()
        .chain(info.get_custom_properties())
    {
        if let Some(paimon_key) = key.strip_prefix("paimon.") {
            builder = builder.option(paimon_key, value.clone());
        } else if !key.starts_with("table.datalake.paimon.") {
            builder = builder.option(format!("fluss.{key}"), value.clone());
        }
    }
    builder.build().map_err(|e| {
        Error::new(
            ErrorKind::Lake,
            "Fluss schema cannot be expressed in Paimon",
        )
        .with_context("table", table.path.to_string())
        .with_source(e)
    })
}

/// Fluss type -> Paimon type (`FlussDataTypeToPaimonDataType`).
pub fn paimon_type(ty: &FlussType, nullable: bool) -> Result<DataType> {
    let invalid = |e: paimon::Error| Error::invalid_input("invalid Paimon type").with_source(e);
    Ok(match ty {
        FlussType::Boolean(_) => DataType::Boolean(BooleanType::with_nullable(nullable)),
        FlussType::TinyInt(_) => DataType::TinyInt(TinyIntType::with_nullable(nullable)),
        FlussType::SmallInt(_) => DataType::SmallInt(SmallIntType::with_nullable(nullable)),
        FlussType::Int(_) => DataType::Int(IntType::with_nullable(nullable)),
        FlussType::BigInt(_) => DataType::BigInt(BigIntType::with_nullable(nullable)),
        FlussType::Float(_) => DataType::Float(FloatType::with_nullable(nullable)),
        FlussType::Double(_) => DataType::Double(DoubleType::with_nullable(nullable)),
        FlussType::Char(c) => {
            DataType::Char(CharType::with_nullable(nullable, c.length() as usize).map_err(invalid)?)
        }
        FlussType::String(_) => DataType::VarChar(
            VarCharType::with_nullable(nullable, VarCharType::MAX_LENGTH).map_err(invalid)?,
        ),
        FlussType::Decimal(d) => DataType::Decimal(
            DecimalType::with_nullable(nullable, d.precision(), d.scale()).map_err(invalid)?,
        ),
        FlussType::Date(_) => DataType::Date(DateType::with_nullable(nullable)),
        FlussType::Time(_) => {
            DataType::Time(TimeType::with_nullable(nullable, 0).map_err(invalid)?)
        }
        FlussType::Timestamp(t) => DataType::Timestamp(
            TimestampType::with_nullable(nullable, t.precision()).map_err(invalid)?,
        ),
        FlussType::TimestampLTz(t) => DataType::LocalZonedTimestamp(
            LocalZonedTimestampType::with_nullable(nullable, t.precision()).map_err(invalid)?,
        ),
        FlussType::Bytes(_) => DataType::VarBinary(
            VarBinaryType::try_new(nullable, VarBinaryType::MAX_LENGTH).map_err(invalid)?,
        ),
        FlussType::Binary(b) => {
            DataType::Binary(BinaryType::with_nullable(nullable, b.length()).map_err(invalid)?)
        }
        other => {
            return Err(Error::unsupported(format!(
                "type {other} cannot be tiered to Paimon by this crate yet"
            )));
        }
    })
}

impl PaimonLake {
    /// Reads a whole table (merged: PK levels deduplicated, deletes applied) at a
    /// snapshot or the latest, as arrow-59 batches (tests compare it with pypaimon;
    /// `test-support` feature: not public API).
    #[cfg(any(test, feature = "test-support"))]
    pub async fn read_all(
        &self,
        database: &str,
        table: &str,
        snapshot_id: Option<i64>,
    ) -> Result<Vec<datafusion::arrow::array::RecordBatch>> {
        use futures::TryStreamExt;
        let full = format!("{database}.{table}");
        let Some(mut t) = self.table(database, table).await? else {
            return Err(Error::not_found("lake table does not exist").with_context("table", full));
        };
        if let Some(id) = snapshot_id {
            t = scan::pin_snapshot(&t, id).await?;
        }
        let plan = t
            .new_read_builder()
            .new_scan()
            .plan()
            .await
            .map_err(lake_error("cannot plan the Paimon scan", &full))?;
        let columns: Vec<String> = t
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        scan::read_merged(&t, plan.splits().to_vec(), &columns)?
            .try_collect()
            .await
    }
}

/// A Paimon table as the provider reads it: plans pinned snapshots, reads their
/// merge-on-read splits with the paimon crate's reader.
pub struct PaimonLakeTable {
    table: paimon::table::Table,
    name: String,
    /// Tables pinned to a snapshot, by snapshot id (pinning reads the snapshot file).
    pinned: std::sync::Mutex<HashMap<i64, paimon::table::Table>>,
}

impl std::fmt::Debug for PaimonLakeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaimonLakeTable")
            .field("table", &self.name)
            .finish()
    }
}

impl PaimonLakeTable {
    /// The lake table of `table` in the warehouse at `location`; `None` if it does
    /// not exist yet.
    pub async fn open(location: &LakeLocation, table: &FlussTable) -> Result<Option<Self>> {
        let lake = PaimonLake::open_for_reads(&location.warehouse, &location.options)?;
        let name = table.path.to_string();
        Ok(lake
            .table(table.path.database(), table.path.table())
            .await?
            .map(|table| Self {
                table,
                name,
                pinned: Default::default(),
            }))
    }

    async fn pinned(&self, snapshot_id: i64) -> Result<paimon::table::Table> {
        if let Some(t) = self
            .pinned
            .lock()
            .ok()
            .and_then(|p| p.get(&snapshot_id).cloned())
        {
            return Ok(t);
        }
        let pinned = scan::pin_snapshot(&self.table, snapshot_id)
            .await
            .map_err(|e| e.with_context("table", &self.name))?;
        if let Ok(mut p) = self.pinned.lock() {
            p.insert(snapshot_id, pinned.clone());
        }
        Ok(pinned)
    }
}

/// The kind of values a Paimon column holds.
fn value_kind(ty: &paimon::spec::DataType) -> ValueKind {
    use paimon::spec::DataType as P;
    match ty {
        P::Boolean(_) => ValueKind::Boolean,
        P::TinyInt(_) | P::SmallInt(_) | P::Int(_) | P::BigInt(_) => ValueKind::Integer,
        P::Float(_) | P::Double(_) => ValueKind::Float,
        P::Decimal(d) => ValueKind::Decimal {
            scale: d.scale() as i32,
        },
        P::Char(_) | P::VarChar(_) => ValueKind::String,
        P::Binary(_) | P::VarBinary(_) => ValueKind::Binary,
        P::Date(_) => ValueKind::Date,
        P::Time(_) => ValueKind::Time,
        P::Timestamp(_) => ValueKind::Timestamp,
        P::LocalZonedTimestamp(_) => ValueKind::TimestampWithZone,
        P::Array(_) | P::Map(_) | P::Multiset(_) | P::Row(_) => ValueKind::Nested,
        _ => ValueKind::Other,
    }
}

#[async_trait::async_trait]
impl LakeTable for PaimonLakeTable {
    fn format_name(&self) -> &'static str {
        "paimon"
    }

    /// Every Fluss column must exist in the lake table.
    fn check_schema(&self, fluss: &SchemaRef) -> Result<()> {
        let lake_fields = self.table.schema().fields();
        check_lake_columns(fluss, |name| {
            let field = lake_fields.iter().find(|f| f.name() == name)?;
            Some((value_kind(field.data_type()), field.data_type().to_string()))
        })
    }

    fn system_columns(&self) -> Vec<datafusion::arrow::datatypes::Field> {
        use datafusion::arrow::datatypes::TimeUnit;
        self.table
            .schema()
            .fields()
            .iter()
            .filter_map(|f| {
                let unit = match f.data_type() {
                    paimon::spec::DataType::LocalZonedTimestamp(t) if t.precision() > 3 => {
                        TimeUnit::Microsecond
                    }
                    _ => TimeUnit::Millisecond,
                };
                crate::lake::system_column(f.name(), unit)
            })
            .collect()
    }

    async fn plan(&self, request: &LakeScanRequest) -> Result<LakePlan> {
        let pinned = self.pinned(request.snapshot_id).await?;
        let predicate = request
            .filter
            .as_ref()
            .and_then(|f| scan::to_paimon_predicate(&pinned, f));
        scan::plan_snapshot(&pinned, request.snapshot_id, predicate, request.primary_key).await
    }

    /// Reads with the table's latest schema, not the snapshot's: a snapshot written
    /// before `ALTER TABLE … ADD COLUMN` reads the added column as NULL (paimon maps each
    /// data file's schema by field id), as Fluss's own reader does (`PaimonLakeSource`
    /// reads with `catalog.getTable`; the pinned table only plans).
    async fn read(
        &self,
        _snapshot_id: i64,
        tasks: Vec<MergeTask>,
        columns: Vec<String>,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let splits = tasks
            .iter()
            .map(|t| {
                paimon::table::DataSplit::deserialize(&t.payload).map_err(|e| {
                    Error::new(ErrorKind::Lake, "a Paimon split does not deserialize")
                        .with_context("table", &self.name)
                        .with_source(e)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        scan::read_merged(&self.table, splits, &columns)
    }

    async fn system_table(&self, name: &str) -> Result<Option<RecordBatch>> {
        system::system_table(&self.table, name).await
    }

    fn system_tables(&self) -> &'static [&'static str] {
        system::SYSTEM_TABLES
    }

    async fn snapshots(&self) -> Result<Vec<LakeSnapshot>> {
        let snapshots = self
            .table
            .snapshot_manager()
            .list_all()
            .await
            .map_err(|e| {
                Error::new(ErrorKind::Lake, "cannot list Paimon snapshots")
                    .with_context("table", &self.name)
                    .with_source(e)
            })?;
        Ok(snapshots
            .iter()
            .map(|s| LakeSnapshot {
                snapshot_id: s.id(),
                schema_id: s.schema_id(),
                commit_user: s.commit_user().to_string(),
                commit_kind: format!("{:?}", s.commit_kind()).to_uppercase(),
                commit_time_millis: s.time_millis() as i64,
                total_record_count: s.total_record_count(),
                fluss_offsets: s
                    .properties()
                    .and_then(|p| p.get(crate::lake::FLUSS_OFFSETS_PROPERTY).cloned()),
            })
            .collect())
    }
}
