//! The data generator: TPC-H-shaped tables (tpchgen-arrow) loaded into a LocalStore
//! with a chosen share of every table left in the Fluss log tail.
//!
//! | table      | kind        | bucket key   | lake part                 | log tail                                  |
//! |------------|-------------|--------------|---------------------------|-------------------------------------------|
//! | `lineitem` | log         | `l_orderkey` | first (1 - share) of rows | the remaining share                       |
//! | `orders`   | log         | `o_orderkey` | first (1 - share) of rows | the remaining share                       |
//! | `customer` | primary key | `c_custkey`  | first (1 - share) of keys | the remaining keys (new keys) + updates + deletes |
//! | `part`     | primary key | `p_partkey`  | first (1 - share) of keys | the remaining keys (new keys) + updates + deletes |
//!
//! Everything is written through the LocalStore (the same log batches a Fluss tablet
//! server writes); the table is tiered once, right after its lake part. TPC-H rows are
//! deterministic by construction; the primary-key tail (which keys are updated or
//! deleted, and the new values) is deterministic by `seed`.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Decimal128Array, RecordBatch, StringArray, UInt32Array,
};
use datafusion::arrow::compute::{cast, concat_batches, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use fluss::metadata::{DataType as FlussType, DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::tier;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

/// Errors of the bench binary: any error, with its context in the message.
pub type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// Adds context to an error.
pub trait Context<T> {
    /// Wraps the error with `what`.
    fn context(self, what: impl FnOnce() -> String) -> BenchResult<T>;
}

impl<T, E: std::fmt::Display> Context<T> for Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> BenchResult<T> {
        self.map_err(|e| format!("{}: {e}", what()).into())
    }
}

/// The database every bench table lives in.
pub const DATABASE: &str = "bench";

/// Parts the TPC-H generators are split into; the tail share is rounded to 1 / PARTS.
pub(crate) const PARTS: i32 = 100;

/// Rows gathered before one append (one log batch per bucket touched).
const APPEND_ROWS: usize = 64 * 1024;

/// A lake format the suite runs on. Every format the library can tier into joins the
/// suite by adding a variant here: each dataset is generated once per format (same
/// generator, same seed) and every measurement is made for each.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum LakeFormat {
    /// Apache Paimon (filesystem catalog, parquet).
    Paimon,
    /// Apache Iceberg (hadoop layout: `version-hint.text`, `v<N>.metadata.json`).
    Iceberg,
}

impl LakeFormat {
    /// Every format the library supports today.
    pub const ALL: &'static [LakeFormat] = &[LakeFormat::Paimon, LakeFormat::Iceberg];

    /// The `table.datalake.format` value (also its name in the report and JSON).
    pub fn name(self) -> &'static str {
        match self {
            LakeFormat::Paimon => "paimon",
            LakeFormat::Iceberg => "iceberg",
        }
    }

    /// The name in prose (`Paimon`, `Iceberg`).
    pub fn title(self) -> &'static str {
        match self {
            LakeFormat::Paimon => "Paimon",
            LakeFormat::Iceberg => "Iceberg",
        }
    }

    /// The format's own Python reader, the peer a Python user would pick
    /// (`peer_<name>.py`; its engine name in the measurements).
    pub fn python_peer(self) -> &'static str {
        match self {
            LakeFormat::Paimon => "pypaimon",
            LakeFormat::Iceberg => "pyiceberg",
        }
    }

    /// The LocalStore's warehouse of the format, relative to the store root.
    pub fn warehouse(self) -> &'static str {
        match self {
            LakeFormat::Paimon => "lake/paimon",
            LakeFormat::Iceberg => "lake/iceberg",
        }
    }
}

impl std::fmt::Display for LakeFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// TPC-H scale factor.
    pub sf: f64,
    /// Share of each table left in the log tail (0..=1).
    pub tail_share: f64,
    /// PK tables: updates of existing keys in the tail, as a share of the tail's size
    /// (table rows x `tail_share`).
    pub update_rate: f64,
    /// PK tables: deletes of existing keys in the tail, relative like `update_rate`.
    pub delete_rate: f64,
    /// Seed of the PK tail.
    pub seed: u64,
    /// Lake format.
    pub lake: LakeFormat,
    /// Log compression (`ZSTD`, `LZ4_FRAME`).
    pub compression: &'static str,
    /// PK tables: tierings of the lake part (each one more sorted run in the lake,
    /// as a real table tiered over time has).
    pub lake_rounds: usize,
}

impl GenConfig {
    /// Buckets per table: 4, or 2 at small scale.
    pub fn buckets(&self) -> i32 {
        if self.sf < 0.05 { 2 } else { 4 }
    }
}

/// Rows of one generated table.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TableStats {
    /// Table name.
    pub table: String,
    /// Whether it has a primary key.
    pub primary_key: bool,
    /// Rows (log tables) or keys (PK tables) written before tiering.
    pub lake_rows: usize,
    /// Rows appended after tiering (log tables) or changes written (PK tables:
    /// new keys + updates + deletes).
    pub tail_rows: usize,
    /// PK tables: updates in the tail.
    pub tail_updates: usize,
    /// PK tables: deletes in the tail.
    pub tail_deletes: usize,
    /// Rows a union read returns.
    pub live_rows: usize,
    /// Lake snapshot committed by the tiering, if any.
    pub snapshot_id: Option<i64>,
}

/// A generated store.
#[derive(Debug)]
pub struct Dataset {
    /// Store directory.
    pub root: PathBuf,
    /// The open store.
    pub store: Arc<LocalStore>,
    /// Per table.
    pub tables: Vec<TableStats>,
    /// Seconds spent generating and writing.
    pub seconds: f64,
}

impl Dataset {
    /// Stats of one table.
    pub fn table(&self, name: &str) -> Option<&TableStats> {
        self.tables.iter().find(|t| t.table == name)
    }
}

/// The splitmix64 generator (same sequence everywhere).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Fluss type of a tpchgen-arrow column.
fn fluss_type(dt: &DataType) -> BenchResult<FlussType> {
    Ok(match dt {
        DataType::Int64 => DataTypes::bigint(),
        DataType::Int32 => DataTypes::int(),
        DataType::Decimal128(p, s) => DataTypes::decimal(*p as u32, *s as u32),
        DataType::Date32 => DataTypes::date(),
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => DataTypes::string(),
        other => return Err(format!("no Fluss type for tpchgen column type {other}").into()),
    })
}

/// The tpchgen schema with strings as Utf8 (what the Fluss schema maps to).
fn writable_schema(schema: &SchemaRef) -> SchemaRef {
    Arc::new(ArrowSchema::new(
        schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8View => Field::new(f.name(), DataType::Utf8, f.is_nullable()),
                _ => f.as_ref().clone(),
            })
            .collect::<Vec<_>>(),
    ))
}

/// Casts Utf8View columns to Utf8.
fn to_writable(batch: &RecordBatch) -> BenchResult<RecordBatch> {
    let schema = writable_schema(&batch.schema());
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| cast(c, f.data_type()))
        .collect::<Result<Vec<_>, _>>()
        .context(|| "casting tpchgen columns".into())?;
    RecordBatch::try_new(schema, columns).context(|| "rebuilding a tpchgen batch".into())
}

/// The Fluss table descriptor of a tpchgen table.
pub fn descriptor(
    arrow: &SchemaRef,
    keys: &[&str],
    bucket_keys: &[&str],
    primary_key: bool,
    config: &GenConfig,
) -> BenchResult<TableDescriptor> {
    let mut schema = Schema::builder();
    for field in arrow.fields() {
        schema = schema.column(field.name(), fluss_type(field.data_type())?);
    }
    if primary_key {
        schema = schema
            .primary_key(keys.to_vec())
            .context(|| format!("primary key {keys:?}"))?;
    }
    let schema = schema
        .build()
        .context(|| "building a Fluss schema".into())?;
    TableDescriptor::builder()
        .schema(schema)
        .distributed_by(
            Some(config.buckets()),
            bucket_keys.iter().map(|k| k.to_string()).collect(),
        )
        .property("table.datalake.enabled", "true")
        .property("table.datalake.format", config.lake.name())
        .property("table.log.arrow.compression.type", config.compression)
        .build()
        .context(|| "building a table descriptor".into())
}

/// One TPC-H table's batches for generator part `part` (1-based) of [`PARTS`].
pub(crate) fn part_batches(table: &str, sf: f64, part: i32) -> BenchResult<Vec<RecordBatch>> {
    fn all<E, I: Iterator<Item = Result<RecordBatch, E>>>(
        batches: I,
    ) -> Result<Vec<RecordBatch>, E> {
        batches.collect()
    }
    let batches: Vec<RecordBatch> = match table {
        "lineitem" => all(LineItemArrow::new(LineItemGenerator::new(sf, part, PARTS))
            .with_batch_size(APPEND_ROWS)),
        "orders" => {
            all(OrderArrow::new(OrderGenerator::new(sf, part, PARTS)).with_batch_size(APPEND_ROWS))
        }
        "customer" => all(CustomerArrow::new(CustomerGenerator::new(sf, part, PARTS))
            .with_batch_size(APPEND_ROWS)),
        "part" => {
            all(PartArrow::new(PartGenerator::new(sf, part, PARTS)).with_batch_size(APPEND_ROWS))
        }
        "partsupp" => all(PartSuppArrow::new(PartSuppGenerator::new(sf, part, PARTS))
            .with_batch_size(APPEND_ROWS)),
        "supplier" => all(SupplierArrow::new(SupplierGenerator::new(sf, part, PARTS))
            .with_batch_size(APPEND_ROWS)),
        // fixed tables: the generators ignore parts, so all of it in part 1
        "nation" if part == 1 => all(NationArrow::new(NationGenerator::new(sf, 1, 1))),
        "region" if part == 1 => all(RegionArrow::new(RegionGenerator::new(sf, 1, 1))),
        "nation" | "region" => Ok(Vec::new()),
        other => return Err(format!("unknown TPC-H table {other}").into()),
    }
    .context(|| format!("generating {table}"))?;
    batches.iter().map(to_writable).collect()
}

/// The arrow schema of a TPC-H table (strings as Utf8).
pub fn table_schema(table: &str) -> BenchResult<SchemaRef> {
    Ok(writable_schema(&match table {
        "lineitem" => LineItemArrow::schema_ref(),
        "orders" => OrderArrow::schema_ref(),
        "customer" => CustomerArrow::schema_ref(),
        "part" => PartArrow::schema_ref(),
        "partsupp" => PartSuppArrow::schema_ref(),
        "supplier" => SupplierArrow::schema_ref(),
        "nation" => NationArrow::schema_ref(),
        "region" => RegionArrow::schema_ref(),
        other => return Err(format!("unknown TPC-H table {other}").into()),
    }))
}

/// Parts (of [`PARTS`]) that go to the lake for a tail share.
pub(crate) fn lake_parts(tail_share: f64) -> i32 {
    ((1.0 - tail_share.clamp(0.0, 1.0)) * PARTS as f64).round() as i32
}

/// Buffers batches and appends them in chunks of about [`APPEND_ROWS`] rows.
struct Appender<'a> {
    store: &'a LocalStore,
    path: TablePath,
    pending: Vec<RecordBatch>,
    rows: usize,
    written: usize,
}

impl Appender<'_> {
    async fn push(&mut self, batch: RecordBatch) -> BenchResult<()> {
        self.rows += batch.num_rows();
        self.pending.push(batch);
        if self.rows >= APPEND_ROWS {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> BenchResult<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let schema = self.pending[0].schema();
        let batch = concat_batches(&schema, &self.pending).context(|| "concat".into())?;
        self.store
            .append(&self.path, &batch)
            .await
            .context(|| format!("appending to {}", self.path))?;
        self.written += batch.num_rows();
        self.pending.clear();
        self.rows = 0;
        Ok(())
    }
}

/// Creates TPC-H table `table` in the bench database; returns its path.
async fn create_bench_table(
    store: &LocalStore,
    table: &str,
    keys: &[&str],
    bucket_keys: &[&str],
    primary_key: bool,
    config: &GenConfig,
) -> BenchResult<TablePath> {
    let path = TablePath::new(DATABASE, table);
    let schema = table_schema(table)?;
    store
        .create_table(
            &path,
            &descriptor(&schema, keys, bucket_keys, primary_key, config)?,
            false,
        )
        .await
        .context(|| format!("creating {path}"))?;
    Ok(path)
}

/// Writes a log table: lake part, tier, tail.
pub(crate) async fn load_log_table(
    store: &LocalStore,
    table: &str,
    key: &str,
    config: &GenConfig,
) -> BenchResult<TableStats> {
    let path = create_bench_table(store, table, &[key], &[key], false, config).await?;
    let mut appender = Appender {
        store,
        path: path.clone(),
        pending: Vec::new(),
        rows: 0,
        written: 0,
    };
    let lake_parts = lake_parts(config.tail_share);
    let mut stats = TableStats {
        table: table.to_string(),
        ..Default::default()
    };
    for part in 1..=PARTS {
        for batch in part_batches(table, config.sf, part)? {
            appender.push(batch).await?;
        }
        if part == lake_parts {
            appender.flush().await?;
            stats.lake_rows = appender.written;
            stats.snapshot_id = tier(store, &path)
                .await
                .context(|| format!("tiering {path}"))?
                .snapshot_id;
        }
    }
    appender.flush().await?;
    stats.tail_rows = appender.written - stats.lake_rows;
    stats.live_rows = appender.written;
    Ok(stats)
}

/// Rows of `batch` at `rows` (indexes).
fn take(batch: &RecordBatch, rows: &[u32]) -> BenchResult<RecordBatch> {
    take_record_batch(batch, &UInt32Array::from(rows.to_vec())).context(|| "take".into())
}

/// A copy of `batch` with decimal column `column` (if any) replaced by new
/// deterministic values and the string column `comment` marked as updated.
fn updated_values(
    batch: &RecordBatch,
    column: Option<&str>,
    comment: &str,
    rng: &mut SplitMix64,
) -> BenchResult<RecordBatch> {
    let schema = batch.schema();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    if let Some(column) = column {
        let i = schema.index_of(column).context(|| column.to_string())?;
        let values: Vec<i128> = (0..batch.num_rows())
            .map(|_| rng.below(1_000_000) as i128 - 99_999)
            .collect();
        columns[i] = Arc::new(
            Decimal128Array::from(values)
                .with_precision_and_scale(15, 2)
                .context(|| "decimal".into())?,
        );
    }
    let j = schema.index_of(comment).context(|| comment.to_string())?;
    columns[j] = Arc::new(StringArray::from_iter_values(
        (0..batch.num_rows()).map(|k| format!("updated by the bench tail #{k}")),
    ));
    RecordBatch::try_new(schema, columns).context(|| "updated batch".into())
}

/// One write of a generated primary-key table's history, in order.
pub(crate) enum PkWrite {
    /// Rows upserted.
    Upsert(RecordBatch),
    /// Everything written so far tiered (one more sorted run in the lake).
    Tier,
    /// One KV batch: its first `upserts` rows upserted, the rest deleted.
    Changes { batch: RecordBatch, upserts: usize },
}

/// The history of a PK table: the lake's keys upserted in `config.lake_rounds`
/// rounds, each tiered, then new keys + updates (of `value` and `comment`) + deletes
/// in the tail. Every source that writes it (the LocalStore, a real cluster) holds
/// the same rows. `stats.snapshot_id` is left for the writer.
pub(crate) fn pk_history(
    table: &str,
    value: Option<&str>,
    comment: &str,
    config: &GenConfig,
    seed: u64,
) -> BenchResult<(Vec<PkWrite>, TableStats)> {
    let schema = table_schema(table)?;
    let lake_parts = lake_parts(config.tail_share);
    let mut lake = Vec::new();
    let mut tail = Vec::new();
    for part in 1..=PARTS {
        let batches = part_batches(table, config.sf, part)?;
        if part <= lake_parts {
            lake.extend(batches);
        } else {
            tail.extend(batches);
        }
    }
    let all =
        concat_batches(&schema, lake.iter().chain(tail.iter())).context(|| "concat".into())?;
    let lake_rows: usize = lake.iter().map(|b| b.num_rows()).sum();
    let total = all.num_rows();
    let mut stats = TableStats {
        table: table.to_string(),
        primary_key: true,
        lake_rows,
        ..Default::default()
    };
    let mut writes = Vec::new();
    // round r upserts its share of the lake part's batches, then tiers
    let rounds = config.lake_rounds.max(1);
    for round in 0..rounds {
        let (lo, hi) = (
            lake.len() * round / rounds,
            lake.len() * (round + 1) / rounds,
        );
        for chunk in lake[lo..hi].chunks(4) {
            writes.push(PkWrite::Upsert(
                concat_batches(&schema, chunk).context(|| "concat".into())?,
            ));
        }
        if hi > lo {
            writes.push(PkWrite::Tier);
        }
    }
    // The tail: the remaining keys as inserts, interleaved with updates and deletes of
    // keys written before them, in rounds so the changelog mixes all three. Each round
    // is one KV write (its new keys, updated keys and deletes together, as a Fluss
    // client batches a bucket's upserts and deletes into one KV batch), so one
    // changelog batch per bucket and round.
    let new_rows = total - lake_rows;
    let tail_size = ((total as f64) * config.tail_share).round() as usize;
    let updates = ((tail_size as f64) * config.update_rate).round() as usize;
    let deletes = ((tail_size as f64) * config.delete_rate).round() as usize;
    let mut rng = SplitMix64::new(seed);
    let chunks = 8usize;
    let mut deleted = std::collections::HashSet::new();
    let mut written = lake_rows;
    for c in 0..chunks {
        let mut changes = Vec::new();
        let lo = lake_rows + new_rows * c / chunks;
        let hi = lake_rows + new_rows * (c + 1) / chunks;
        if hi > lo {
            let rows: Vec<u32> = (lo as u32..hi as u32).collect();
            changes.push(take(&all, &rows)?);
            written = hi;
            stats.tail_rows += rows.len();
        }
        if written == 0 {
            continue;
        }
        let n_upd = updates * (c + 1) / chunks - updates * c / chunks;
        let rows: Vec<u32> = (0..n_upd)
            .map(|_| rng.below(written as u64) as u32)
            .filter(|r| !deleted.contains(r))
            .collect();
        if !rows.is_empty() {
            changes.push(updated_values(
                &take(&all, &rows)?,
                value,
                comment,
                &mut rng,
            )?);
            stats.tail_rows += rows.len();
            stats.tail_updates += rows.len();
        }
        let n_del = deletes * (c + 1) / chunks - deletes * c / chunks;
        let mut rows: Vec<u32> = (0..n_del)
            .map(|_| rng.below(written as u64) as u32)
            .collect();
        rows.sort_unstable();
        rows.dedup();
        let upserts: usize = changes.iter().map(RecordBatch::num_rows).sum();
        if !rows.is_empty() {
            changes.push(take(&all, &rows)?);
            stats.tail_rows += rows.len();
            stats.tail_deletes += rows.len();
            deleted.extend(rows.iter().copied());
        }
        if !changes.is_empty() {
            let batch = concat_batches(&schema, &changes).context(|| "concat".into())?;
            writes.push(PkWrite::Changes { batch, upserts });
        }
    }
    stats.live_rows = total - deleted.len();
    Ok((writes, stats))
}

/// Writes a PK table (primary key `keys`, distributed by `bucket_keys`) into the
/// LocalStore: its [`pk_history`].
#[allow(clippy::too_many_arguments)]
pub(crate) async fn load_pk_table(
    store: &LocalStore,
    table: &str,
    keys: &[&str],
    bucket_keys: &[&str],
    value: Option<&str>,
    comment: &str,
    config: &GenConfig,
    seed: u64,
) -> BenchResult<TableStats> {
    let path = create_bench_table(store, table, keys, bucket_keys, true, config).await?;
    let (writes, mut stats) = pk_history(table, value, comment, config, seed)?;
    for write in writes {
        match write {
            PkWrite::Upsert(batch) => {
                store
                    .upsert(&path, &batch)
                    .await
                    .context(|| format!("upserting into {path}"))?;
            }
            PkWrite::Tier => {
                stats.snapshot_id = tier(store, &path)
                    .await
                    .context(|| format!("tiering {path}"))?
                    .snapshot_id
            }
            PkWrite::Changes { batch, upserts } => {
                let flags =
                    BooleanArray::from_iter((0..batch.num_rows()).map(|i| Some(i >= upserts)));
                store
                    .write_changes(&path, &batch, &flags)
                    .await
                    .context(|| format!("writing to {path}"))?;
            }
        }
    }
    Ok(stats)
}

/// Opens (creating) a LocalStore at `root` with the bench database.
pub(crate) async fn open_bench_store(root: &Path) -> BenchResult<Arc<LocalStore>> {
    std::fs::create_dir_all(root).context(|| format!("creating {}", root.display()))?;
    let location = root
        .to_str()
        .ok_or_else(|| format!("non-UTF-8 path {}", root.display()))?;
    let store = Arc::new(
        LocalStore::open(location)
            .await
            .context(|| format!("opening a LocalStore at {location}"))?,
    );
    store
        .create_database(DATABASE, None, true)
        .await
        .context(|| "creating the bench database".into())?;
    Ok(store)
}

/// Generates a store at `root` (which must not exist yet or be empty).
pub async fn generate(root: &Path, config: &GenConfig) -> BenchResult<Dataset> {
    let start = Instant::now();
    let store = open_bench_store(root).await?;
    let mut tables = vec![
        load_log_table(&store, "lineitem", "l_orderkey", config).await?,
        load_log_table(&store, "orders", "o_orderkey", config).await?,
    ];
    tables.push(
        load_pk_table(
            &store,
            "customer",
            &["c_custkey"],
            &["c_custkey"],
            Some("c_acctbal"),
            "c_comment",
            config,
            config.seed,
        )
        .await?,
    );
    tables.push(
        load_pk_table(
            &store,
            "part",
            &["p_partkey"],
            &["p_partkey"],
            Some("p_retailprice"),
            "p_comment",
            config,
            config.seed ^ 0x9A47,
        )
        .await?,
    );
    Ok(Dataset {
        root: root.to_path_buf(),
        store,
        tables,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Writes `rows` lineitem rows (the first generator parts at `sf`) into two tail-only
/// log tables, `lineitem_zstd` and `lineitem_lz4`, for the log decode benchmark.
pub async fn generate_decode_tables(
    root: &Path,
    sf: f64,
    rows: usize,
) -> BenchResult<(Arc<LocalStore>, usize)> {
    let store = open_bench_store(root).await?;
    let schema = table_schema("lineitem")?;
    let mut written = 0;
    for (name, compression) in [("lineitem_zstd", "ZSTD"), ("lineitem_lz4", "LZ4_FRAME")] {
        let config = GenConfig {
            sf,
            tail_share: 1.0,
            update_rate: 0.0,
            delete_rate: 0.0,
            seed: 0,
            lake: LakeFormat::Paimon,
            compression,
            lake_rounds: 1,
        };
        let path = TablePath::new(DATABASE, name);
        store
            .create_table(
                &path,
                &descriptor(&schema, &["l_orderkey"], &["l_orderkey"], false, &config)?,
                false,
            )
            .await
            .context(|| format!("creating {path}"))?;
        let mut appender = Appender {
            store: &store,
            path,
            pending: Vec::new(),
            rows: 0,
            written: 0,
        };
        'parts: for part in 1..=PARTS {
            for batch in part_batches("lineitem", sf, part)? {
                let left = rows - appender.written - appender.rows;
                if left == 0 {
                    break 'parts;
                }
                appender
                    .push(batch.slice(0, batch.num_rows().min(left)))
                    .await?;
            }
        }
        appender.flush().await?;
        written = appender.written;
    }
    Ok((store, written))
}
