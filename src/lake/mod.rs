//! Lake formats: the tiered snapshot of a Fluss table, behind one trait.
//!
//! ```text
//!  FlussSource::lake_location(table) ──> LakeLocation (format, warehouse, options)
//!                                              │ open()
//!                                              v
//!                                  dyn LakeTable  (paimon::PaimonLakeTable, ...)
//!        plan(snapshot, filter) ──> LakePlan { LakeSplit { files, Parquet | MergeOnRead } }
//!        read(merge tasks)      ──> arrow-59 batches (the format's merge reader)
//!        snapshots()            ──> `t$lake$snapshots`
//! ```
//!
//! The provider never names a format: plain data files go to DataFusion's parquet
//! source, merge-on-read tasks back to the [`LakeTable`] that planned them. Paimon is
//! read with the `paimon` crate (arrow 58, bridged zero-copy by `arrow_bridge`);
//! tiering the LocalStore's log into the lake is in [`tiering`].

#[cfg(any(feature = "paimon", feature = "iceberg"))]
pub(crate) mod arrow_bridge;
#[cfg(any(feature = "paimon", feature = "iceberg"))]
mod columns;
#[cfg(feature = "iceberg")]
pub mod iceberg;
#[cfg(feature = "paimon")]
pub mod paimon;
mod plan;
pub mod predicate;
pub mod tiering;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use fluss::metadata::DataLakeFormat;
use futures::stream::BoxStream;
use object_store::ObjectStore;

pub use self::plan::{
    ColumnMapping, KeyedRuns, LakeFile, LakePlan, LakeRead, LakeScanRequest, LakeSplit, MergeTask,
};
use crate::error::{Error, Result};
use crate::storage::redact;
use crate::table::FlussTable;

/// Commit user of every snapshot written by Fluss tiering
/// (`LakeTieringFactory.FLUSS_LAKE_TIERING_COMMIT_USER`).
pub const TIERING_COMMIT_USER: &str = "__fluss_lake_tiering";

/// Snapshot property holding the path of the tiered offsets file
/// (`LakeCommitter.FLUSS_LAKE_SNAP_BUCKET_OFFSET_PROPERTY`).
pub const FLUSS_OFFSETS_PROPERTY: &str = "fluss-offsets";

/// Legacy system columns some lake tables carry; the union table hides them.
///
/// Fluss 1.0 (FIP-27) creates "clean" lake tables without them; tables created
/// earlier keep them, and a table is legacy iff its lake schema has `__timestamp`
/// (apache/fluss `PaimonUtils.isLegacyTable`).
pub const LEGACY_SYSTEM_COLUMNS: [&str; 3] = ["__bucket", "__offset", "__timestamp"];

/// A lake format Fluss tiers to (`table.datalake.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LakeFormat {
    /// Apache Paimon.
    Paimon,
    /// Apache Iceberg.
    Iceberg,
    /// Lance.
    Lance,
}

impl LakeFormat {
    /// The format of a table's `table.datalake.format`.
    pub fn of(format: &DataLakeFormat) -> Self {
        match format {
            DataLakeFormat::Paimon => Self::Paimon,
            DataLakeFormat::Iceberg => Self::Iceberg,
            DataLakeFormat::Lance => Self::Lance,
        }
    }

    /// Its name in table properties (`table.datalake.<name>.*`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Paimon => "paimon",
            Self::Iceberg => "iceberg",
            Self::Lance => "lance",
        }
    }

    /// The error for `table`, whose lake is of this format, where nothing here
    /// serves it: the Cargo feature to enable when this build was compiled without
    /// the format, else `unsupported` (what the library cannot do with it at all).
    pub(crate) fn unavailable(self, table: &FlussTable, unsupported: &str) -> Error {
        let message = match self {
            Self::Paimon if !cfg!(feature = "paimon") => Some("paimon"),
            Self::Iceberg if !cfg!(feature = "iceberg") => Some("iceberg"),
            _ => None,
        }
        .map_or_else(
            || unsupported.to_string(),
            |feature| {
                format!(
                    "the table's lake is {}, which this build of fluss-datafusion was \
                     compiled without: enable its `{feature}` feature",
                    self.name()
                )
            },
        );
        Error::unsupported(message).with_context("table", table.path.to_string())
    }
}

/// A legacy system column as `t$lake` shows it: `__bucket` INT, `__offset` BIGINT,
/// `__timestamp` a UTC timestamp of the lake's precision (`timestamp_unit`: Paimon
/// `TIMESTAMP_LTZ(3)`, or 6 on tables of Fluss 0.8; Iceberg `timestamptz`, µs).
/// `None` for other names.
#[cfg(any(feature = "paimon", feature = "iceberg"))]
pub(crate) fn system_column(
    name: &str,
    timestamp_unit: datafusion::arrow::datatypes::TimeUnit,
) -> Option<datafusion::arrow::datatypes::Field> {
    use datafusion::arrow::datatypes::{DataType, Field};
    let data_type = match name {
        "__bucket" => DataType::Int32,
        "__offset" => DataType::Int64,
        "__timestamp" => DataType::Timestamp(timestamp_unit, Some("+00:00".into())),
        _ => return None,
    };
    Some(Field::new(name, data_type, true))
}

/// Where a table's lake lives, as its source resolves it (from the table's
/// `table.datalake.<format>.*` properties and the source's own options).
#[derive(Clone)]
pub struct LakeLocation {
    /// The lake format.
    pub format: LakeFormat,
    /// The warehouse: an absolute path or URL.
    pub warehouse: String,
    /// Catalog and storage options (`table.datalake.<format>.*` without the prefix,
    /// plus the source's). They may hold credentials: never shown.
    pub options: HashMap<String, String>,
}

impl LakeLocation {
    /// The lake of `table` from its `table.datalake.<format>.*` properties, with the
    /// warehouse passed through `resolve` (a LocalStore resolves relative paths against
    /// its root) and the source's `extra` options over the table's.
    ///
    /// A table without a warehouse property takes the source's `warehouse` option: a
    /// real cluster keeps the lake catalog options in its own configuration
    /// (`datalake.<format>.*`) and adds them to a table's properties only when it
    /// serves them (`TableRegistration.toTableInfo`), so the registrations it stores in
    /// ZooKeeper, copied into a LocalStore, name no warehouse.
    pub fn of_table(
        table: &FlussTable,
        extra: &HashMap<String, String>,
        resolve: impl FnOnce(&str) -> String,
    ) -> Result<Self> {
        let format = table.lake_format().ok_or_else(|| {
            Error::invalid_input("table has no lake ('table.datalake.enabled' is not true)")
                .with_context("table", table.path.to_string())
        })?;
        let format = LakeFormat::of(&format);
        let name = format.name();
        let mut options = lake_catalog_properties(table.info.get_properties(), name);
        let warehouse = match (options.get("warehouse").or(extra.get("warehouse")), format) {
            (Some(w), _) => resolve(w),
            (None, LakeFormat::Paimon | LakeFormat::Iceberg) => {
                return Err(Error::invalid_input(format!(
                    "table has no 'table.datalake.{name}.warehouse' property (and the source \
                     no 'warehouse' lake option)"
                ))
                .with_context("table", table.path.to_string()));
            }
            // other formats say they are unsupported when opened, before anything
            // else about them matters
            (None, _) => String::new(),
        };
        options.extend(extra.clone());
        Ok(Self {
            format,
            warehouse,
            options,
        })
    }

    /// The object store holding the warehouse, built from the storage options (and
    /// the standard environment); `None` for a local warehouse.
    pub fn object_store(&self) -> Result<Option<Arc<dyn ObjectStore>>> {
        if !crate::storage::remote::is_remote(&self.warehouse) {
            return Ok(None);
        }
        crate::storage::remote::remote_store(&self.warehouse, &self.options)
            .map(|(store, _)| Some(store))
    }
}

impl fmt::Debug for LakeLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<&String> = self.options.keys().collect();
        keys.sort();
        f.debug_struct("LakeLocation")
            .field("format", &self.format)
            .field("warehouse", &redact(&self.warehouse))
            .field("option_keys", &keys)
            .finish()
    }
}

/// One snapshot of a lake table, with what Fluss tiering recorded in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LakeSnapshot {
    /// Snapshot id.
    pub snapshot_id: i64,
    /// Schema id it was written with.
    pub schema_id: i64,
    /// Commit user (`__fluss_lake_tiering` for tiering).
    pub commit_user: String,
    /// Commit kind (APPEND, COMPACT, OVERWRITE, ...).
    pub commit_kind: String,
    /// Commit time, epoch milliseconds.
    pub commit_time_millis: i64,
    /// Rows in the snapshot, if the format records it.
    pub total_record_count: Option<i64>,
    /// The `fluss-offsets` property: the tiered offsets file.
    pub fluss_offsets: Option<String>,
}

/// One lake table: plans its snapshots and reads what only it can read.
///
/// Implementations hold the format crate's table; plans and tasks are plain values
/// ([`LakePlan`]), so the provider reads plain files itself.
#[async_trait]
pub trait LakeTable: fmt::Debug + Send + Sync {
    /// The format's name (`paimon`), for EXPLAIN and errors.
    fn format_name(&self) -> &'static str;

    /// Checks that the lake table can serve the Fluss schema: every Fluss column
    /// exists in it, with values of the same kind (`columns`).
    fn check_schema(&self, fluss: &SchemaRef) -> Result<()>;

    /// The legacy system columns (`__bucket`, `__offset`, `__timestamp`) the lake
    /// table physically has, in its order, typed as `t$lake` shows them: none for the
    /// clean tables Fluss 1.0 creates.
    fn system_columns(&self) -> Vec<datafusion::arrow::datatypes::Field>;

    /// Plans the files of a snapshot: metadata only, pruned by the request's filter.
    async fn plan(&self, request: &LakeScanRequest) -> Result<LakePlan>;

    /// Reads merge-on-read tasks of a snapshot, projected to `columns` (lake column
    /// names), as arrow-59 batches in the lake's types.
    async fn read(
        &self,
        snapshot_id: i64,
        tasks: Vec<MergeTask>,
        columns: Vec<String>,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>>;

    /// The table's snapshots, oldest first.
    async fn snapshots(&self) -> Result<Vec<LakeSnapshot>>;

    /// The format's own system table `name` (`t$lake$<name>`) as its catalog shows it;
    /// `None` for a name the format has none of here.
    async fn system_table(&self, name: &str) -> Result<Option<RecordBatch>>;

    /// The names [`LakeTable::system_table`] answers, besides `snapshots`.
    fn system_tables(&self) -> &'static [&'static str];
}

/// Opens the lake table of `table` at `location`; `None` when it does not exist yet
/// (nothing was tiered).
pub async fn open(
    location: &LakeLocation,
    table: &FlussTable,
) -> Result<Option<Arc<dyn LakeTable>>> {
    match location.format {
        #[cfg(feature = "paimon")]
        LakeFormat::Paimon => Ok(paimon::PaimonLakeTable::open(location, table)
            .await?
            .map(|t| Arc::new(t) as Arc<dyn LakeTable>)),
        #[cfg(feature = "iceberg")]
        LakeFormat::Iceberg => Ok(iceberg::IcebergLakeTable::open(location, table)
            .await?
            .map(|t| Arc::new(t) as Arc<dyn LakeTable>)),
        other => Err(other.unavailable(
            table,
            &format!(
                "lake format {} is not supported yet (paimon and iceberg are)",
                other.name()
            ),
        )),
    }
}

/// Adds the columns of `table`'s (new) Fluss schema that its lake table lacks, before
/// that schema is written: "lake first", as Fluss's coordinator orders an `ALTER
/// TABLE ... ADD` (`MetadataManager.alterTableSchema`), so no reader finds a Fluss
/// column its lake has not got. A lake table not created yet gets every column when it
/// is; a crash between the two steps leaves the lake a column ahead, which a retried
/// ALTER finds there and skips.
pub async fn add_lake_columns(location: &LakeLocation, table: &FlussTable) -> Result<()> {
    match location.format {
        #[cfg(feature = "paimon")]
        LakeFormat::Paimon => {
            let lake =
                paimon::PaimonLake::open_with_options(&location.warehouse, &location.options)?;
            if let Some(existing) = lake
                .table(table.path.database(), table.path.table())
                .await?
            {
                lake.sync_columns(existing, table).await?;
            }
            Ok(())
        }
        #[cfg(feature = "iceberg")]
        LakeFormat::Iceberg => iceberg::evolve::add_lake_columns(table, location).await,
        other => Err(other.unavailable(
            table,
            &format!(
                "lake format {} cannot take new columns here (paimon and iceberg can)",
                other.name()
            ),
        )),
    }
}

/// What a cached plan was made from, but its filter. A snapshot never changes once
/// committed, but a table dropped and created again under its name starts a new lake
/// table whose snapshot ids repeat the old ones (hence the Fluss table id), and a lake
/// opened with one source's credentials must never be served to another source
/// (hence every storage option: two sources reading the same warehouse with different
/// keys get different entries). Holds credentials: no `Debug`, never shown.
#[derive(PartialEq, Eq, Hash)]
struct SnapshotKey {
    format: LakeFormat,
    warehouse: String,
    options: Vec<(String, String)>,
    table: String,
    table_id: i64,
    fluss_fields: String,
    snapshot_id: i64,
    primary_key: bool,
}

/// A snapshot's lake table, opened and checked once, and its plans by the filter
/// they were pruned with.
struct SnapshotPlans {
    lake: Arc<dyn LakeTable>,
    plans: HashMap<Option<String>, LakePlan>,
}

/// Plans of immutable snapshots and the lake tables that made them (see
/// [`SnapshotKey`]).
static PLANS: LazyLock<Mutex<HashMap<SnapshotKey, SnapshotPlans>>> =
    LazyLock::new(Default::default);

/// Most snapshots, and most filters of one snapshot, whose plans are kept; a map is
/// emptied when it would grow past this.
const PLAN_CACHE_ENTRIES: usize = 128;

/// The plan of `request` on the lake table of `table`, and the table (for its
/// merge-on-read tasks): opened, its schema checked against `fluss`, and planned, or
/// taken from the plans made before in this process from the same lake, options and
/// request.
///
/// A new filter on a snapshot planned before is planned again, with its own pruning
/// (a file pruned by its key range can leave a split that needs no merge), on the
/// lake table already open: the formats keep the metadata files they read (Paimon's
/// metadata cache of `PaimonLake::open_for_reads`, iceberg-rust's manifest
/// cache), so a point lookup per key does not read the snapshot's manifests again.
pub async fn plan_snapshot(
    location: &LakeLocation,
    table: &FlussTable,
    fluss: &SchemaRef,
    request: &LakeScanRequest,
) -> Result<(Arc<dyn LakeTable>, LakePlan)> {
    let name = table.path.to_string();
    let mut options: Vec<(String, String)> = location
        .options
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    options.sort();
    let key = SnapshotKey {
        format: location.format,
        warehouse: location.warehouse.clone(),
        options,
        table: name.clone(),
        table_id: table.table_id(),
        fluss_fields: format!("{:?}", fluss.fields()),
        snapshot_id: request.snapshot_id,
        primary_key: request.primary_key,
    };
    let filter = request.filter.as_ref().map(|f| format!("{f:?}"));
    let cached = PLANS.lock().ok().and_then(|c| {
        c.get(&key)
            .map(|s| (s.lake.clone(), s.plans.get(&filter).cloned()))
    });
    let started = std::time::Instant::now();
    let lake = match cached {
        Some((lake, Some(plan))) => {
            tracing::trace!(table = %name, snapshot = request.snapshot_id, "lake plan cached");
            return Ok((lake, plan));
        }
        Some((lake, None)) => lake,
        None => {
            let lake = open(location, table).await?.ok_or_else(|| {
                Error::not_found(
                    "the table's lake snapshot is registered but the lake table is missing",
                )
                .with_context("table", &name)
                .with_context("snapshot", request.snapshot_id)
            })?;
            lake.check_schema(fluss)
                .map_err(|e| e.with_context("table", &name))?;
            lake
        }
    };
    let plan = lake
        .plan(request)
        .await
        .map_err(|e| e.with_context("table", &name))?;
    tracing::debug!(
        table = %name,
        snapshot = request.snapshot_id,
        filtered = request.filter.is_some(),
        splits = plan.splits.len(),
        files = plan.file_count(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "planned a lake snapshot (manifests read)"
    );
    if let Ok(mut cache) = PLANS.lock() {
        if cache.len() >= PLAN_CACHE_ENTRIES && !cache.contains_key(&key) {
            cache.clear();
        }
        let entry = cache.entry(key).or_insert_with(|| SnapshotPlans {
            lake: lake.clone(),
            plans: HashMap::new(),
        });
        if entry.plans.len() >= PLAN_CACHE_ENTRIES {
            entry.plans.clear();
        }
        entry.plans.insert(filter, plan.clone());
    }
    Ok((lake, plan))
}

/// A lake error from a format crate (`paimon`, `iceberg`), naming the table.
#[cfg(any(feature = "paimon", feature = "iceberg"))]
pub(crate) fn lake_error<E>(message: &str, table: &str) -> impl FnOnce(E) -> Error + use<E>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let message = message.to_string();
    let table = table.to_string();
    move |e| {
        Error::new(crate::error::ErrorKind::Lake, message)
            .with_context("table", table)
            .with_source(e)
    }
}

/// Options of the lake catalog from table properties (`table.datalake.<fmt>.*`,
/// prefix stripped), as Fluss's readers build them.
pub fn lake_catalog_properties(
    properties: &HashMap<String, String>,
    format: &str,
) -> HashMap<String, String> {
    let prefix = format!("table.datalake.{format}.");
    properties
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|k| (k.to_string(), v.clone())))
        .collect()
}

/// The directory, relative to its warehouse, of the lake table a store-managed catalog
/// keeps for `path`: Paimon's filesystem catalog uses `<db>.db/<table>`, Iceberg's
/// hadoop catalog `<db>/<table>`. `None` for formats kept elsewhere.
pub(crate) fn lake_table_dir(
    format: LakeFormat,
    path: &fluss::metadata::TablePath,
) -> Option<String> {
    match format {
        LakeFormat::Paimon => Some(format!("{}.db/{}", path.database(), path.table())),
        LakeFormat::Iceberg => Some(format!("{}/{}", path.database(), path.table())),
        _ => None,
    }
}

/// A build with a lake format compiled out (`cargo test --lib --no-default-features
/// --features paimon`, or `iceberg`): its tables still take writes and read their
/// log, and tiering them is an error naming the feature to enable.
#[cfg(all(test, not(all(feature = "paimon", feature = "iceberg"))))]
mod compiled_out_tests {
    use std::sync::Arc;

    use crate::ErrorKind;
    use crate::source::LocalStore;
    use crate::sql::FlussSession;

    #[tokio::test]
    async fn a_table_of_a_format_compiled_out_names_the_missing_feature() {
        let missing = if cfg!(feature = "paimon") {
            "iceberg"
        } else {
            "paimon"
        };
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap();
        let session = FlussSession::new(Arc::new(store)).await.unwrap();
        session
            .execute(&format!(
                "CREATE TABLE t (id INT, name STRING) WITH ('bucket.num' = '1', \
                 'table.datalake.enabled' = 'true', 'table.datalake.format' = '{missing}')"
            ))
            .await
            .unwrap();
        session
            .execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
            .await
            .unwrap();

        let err = session.execute("CALL fluss.tier('t')").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FeatureUnsupported, "{err}");
        assert!(
            err.to_string().contains(&format!("`{missing}` feature")),
            "{err}"
        );
        assert_eq!(err.context_value("table"), Some("fluss.t"), "{err}");

        // Nothing was tiered: the union read is the log, complete.
        let rows = session.execute("SELECT count(*) FROM t").await.unwrap();
        let count = datafusion::arrow::util::pretty::pretty_format_batches(&rows).unwrap();
        assert!(count.to_string().contains("| 2 "), "{count}");
    }
}
