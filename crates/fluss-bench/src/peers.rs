//! The peers union read is compared with, all on the same files:
//!
//! - DataFusion `ListingTable` over the lake snapshot's parquet files (the lower bound
//!   of the lake part, meaningful at tail share 0), for every lake format: the files
//!   come from the library's own plan of the snapshot ([`lake_files`]);
//! - DuckDB reading the same parquet files (`crates/fluss-bench/python/peer_duckdb.py`);
//! - the format's Python reader, with DuckDB running the SQL over its Arrow output:
//!   what a Python user would pick. pypaimon for Paimon
//!   (`crates/fluss-bench/python/peer_pypaimon.py`), pyiceberg for Iceberg
//!   (`crates/fluss-bench/python/peer_pyiceberg.py`, which reports tables with
//!   equality deletes as not supported: pyiceberg cannot read them);
//! - raw arrow-ipc decode of the log segments (`read_record_batch` on every batch's
//!   Arrow message), the limit for the log tail, against this crate's `BucketLogReader`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::read_record_batch;
use datafusion::arrow::ipc::root_as_message;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::SessionContext;
use fluss::metadata::TablePath;
use fluss_datafusion::lake::iceberg::IcebergLakeTable;
use fluss_datafusion::lake::{LakeLocation, LakeScanRequest};
use fluss_datafusion::log::{
    BatchIterator, BucketLogReader, LogRange, LogReadOptions, list_segments,
};
use fluss_datafusion::source::{FlussSource, FlussTable, LocalStore, ReadableSnapshot};
use serde_json::Value;

use crate::generate::{BenchResult, Context, DATABASE};

/// A local path from a lake file URL (`file:///x`, `file:/x` or `/x`).
fn local_file(url: &str) -> String {
    let path = url
        .strip_prefix("file://")
        .or_else(|| url.strip_prefix("file:"))
        .unwrap_or(url);
    path.to_string()
}

/// A table of the benchmark database with its readable lake snapshot and its lake;
/// `None` when nothing is tiered.
async fn readable_lake(
    store: &LocalStore,
    table: &str,
) -> BenchResult<Option<(TablePath, FlussTable, ReadableSnapshot, LakeLocation)>> {
    let path = TablePath::new(DATABASE, table);
    let table_meta = store
        .get_table(&path)
        .await
        .context(|| format!("loading {path}"))?;
    let Some(snapshot) = store
        .readable_lake_snapshot(&table_meta)
        .await
        .context(|| format!("readable snapshot of {path}"))?
    else {
        return Ok(None);
    };
    let location = store
        .lake_location(&table_meta)
        .await
        .context(|| format!("lake of {path}"))?;
    Ok(Some((path, table_meta, snapshot, location)))
}

/// The parquet data files of a table's readable lake snapshot (empty when nothing is
/// tiered), for any lake format: the files of the library's own plan of that snapshot
/// (no filter), so the peers read exactly what the lake-only read reads. For Iceberg
/// the plan is the `iceberg` crate's `plan_files` of the snapshot: every live data file
/// of its manifests (files a later snapshot removed are not in it); delete files are
/// not data files and are not listed.
pub async fn lake_files(store: &LocalStore, table: &str) -> BenchResult<Vec<String>> {
    let Some((path, table_meta, snapshot, location)) = readable_lake(store, table).await? else {
        return Ok(Vec::new());
    };
    let lake = fluss_datafusion::lake::open(&location, &table_meta)
        .await
        .context(|| format!("opening the lake table of {path}"))?
        .ok_or_else(|| format!("no lake table for {path}"))?;
    let plan = lake
        .plan(&LakeScanRequest {
            snapshot_id: snapshot.snapshot_id,
            filter: None,
            primary_key: table_meta.info.has_primary_key(),
        })
        .await
        .context(|| format!("planning the lake scan of {path}"))?;
    Ok(plan
        .splits
        .iter()
        .flat_map(|s| s.files.iter())
        .map(|f| local_file(&f.path))
        .collect())
}

/// The Iceberg metadata file a table's readable lake snapshot is read from, and that
/// snapshot, for the pyiceberg peer (`StaticTable.from_metadata`); `None` when nothing
/// is tiered. The file is the one the library itself loaded (the hadoop layout's
/// `version-hint.text` resolved to `v<N>.metadata.json`), so both read one metadata.
pub async fn iceberg_metadata(
    store: &LocalStore,
    table: &str,
) -> BenchResult<Option<(String, i64)>> {
    let Some((path, table_meta, snapshot, location)) = readable_lake(store, table).await? else {
        return Ok(None);
    };
    let lake = IcebergLakeTable::open(&location, &table_meta)
        .await
        .context(|| format!("opening the Iceberg table of {path}"))?
        .ok_or_else(|| format!("no Iceberg table for {path}"))?;
    let metadata = lake
        .table()
        .metadata_location()
        .ok_or_else(|| format!("the Iceberg table of {path} has no metadata file"))?;
    Ok(Some((local_file(metadata), snapshot.snapshot_id)))
}

/// Registers a ListingTable `name` over `files` with the Fluss table's Arrow schema
/// (value columns are matched by name; the lake's system columns, Paimon's
/// `_KEY_*`/`_SEQUENCE_NUMBER`/`_VALUE_KIND` and Iceberg's `__bucket`/`__offset`/
/// `__timestamp`, are not read).
pub fn register_listing(
    ctx: &SessionContext,
    name: &str,
    files: &[String],
    schema: SchemaRef,
) -> BenchResult<()> {
    let urls = files
        .iter()
        .map(|f| ListingTableUrl::parse(f).context(|| format!("parsing {f}")))
        .collect::<BenchResult<Vec<_>>>()?;
    let options =
        ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(schema);
    let table = ListingTable::try_new(config).context(|| format!("ListingTable {name}"))?;
    ctx.register_table(name, Arc::new(table))
        .context(|| format!("registering {name}"))?;
    Ok(())
}

/// The project's Python (the venv of `tests/python/setup_venv.sh`), or why there is none.
pub fn python() -> Result<PathBuf, String> {
    let venv = Path::new(crate::WORKSPACE_ROOT).join(".venv/bin/python");
    if !venv.exists() {
        return Err(format!(
            "{} is missing (create it with `bash tests/python/setup_venv.sh`)",
            venv.display()
        ));
    }
    let probe = Command::new(&venv)
        .args(["-c", "import duckdb, pypaimon, pyiceberg, pyarrow"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", venv.display()))?;
    if !probe.status.success() {
        return Err(format!(
            "the venv lacks duckdb/pypaimon/pyiceberg/pyarrow: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        ));
    }
    Ok(venv)
}

/// Runs a peer script with a JSON spec file; returns its JSON output.
pub fn run_python(python: &Path, script: &str, spec: &Value, work: &Path) -> BenchResult<Value> {
    let script_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("python")
        .join(script);
    std::fs::create_dir_all(work).context(|| format!("creating {}", work.display()))?;
    let spec_path = work.join(format!("{script}.spec.json"));
    std::fs::write(
        &spec_path,
        serde_json::to_vec_pretty(spec).context(|| "spec".into())?,
    )
    .context(|| format!("writing {}", spec_path.display()))?;
    let output = Command::new(python)
        .arg(&script_path)
        .arg(&spec_path)
        .output()
        .context(|| format!("running {}", script_path.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{script} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into());
    }
    serde_json::from_slice(&output.stdout).context(|| {
        format!(
            "{script} printed no JSON: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// One codec's decode measurement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DecodeResult {
    /// Table (and codec) measured.
    pub table: String,
    /// `ZSTD` / `LZ4_FRAME`.
    pub codec: String,
    /// Rows decoded per pass.
    pub rows: usize,
    /// Log batches per pass.
    pub batches: usize,
    /// Bytes of segments per pass.
    pub bytes: u64,
    /// Median seconds of arrow-ipc `read_record_batch` over every batch (incl. file read).
    pub arrow_ipc_secs: f64,
    /// Median seconds of `BucketLogReader` (framing, CRC-32C, change types, decode).
    pub fluss_reader_secs: f64,
    /// Samples (seconds) of the raw decode.
    pub arrow_ipc_samples: Vec<f64>,
    /// Samples (seconds) of the reader.
    pub fluss_reader_samples: Vec<f64>,
}

impl DecodeResult {
    /// Throughput of the reader as a share of arrow-ipc's.
    pub fn throughput_ratio(&self) -> f64 {
        self.arrow_ipc_secs / self.fluss_reader_secs
    }

    /// Reader nanoseconds per row.
    pub fn ns_per_row(&self) -> f64 {
        self.fluss_reader_secs * 1e9 / self.rows.max(1) as f64
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Decodes one Arrow IPC message the way arrow's own reader does.
fn decode_message(message: &Bytes, schema: &SchemaRef) -> BenchResult<usize> {
    if message.len() < 8 {
        return Ok(0);
    }
    let meta_len = i32::from_le_bytes([message[4], message[5], message[6], message[7]]) as usize;
    let meta = message
        .get(8..8 + meta_len)
        .ok_or("arrow message shorter than its metadata")?;
    let ipc = root_as_message(meta).map_err(|e| format!("arrow message: {e}"))?;
    let header = ipc
        .header_as_record_batch()
        .ok_or("arrow message is not a record batch")?;
    let body = Buffer::from(message.slice(8 + meta_len..));
    let batch = read_record_batch(
        &body,
        header,
        schema.clone(),
        &HashMap::new(),
        None,
        &ipc.version(),
    )
    .context(|| "read_record_batch".into())?;
    Ok(batch.num_rows())
}

/// Log decode of a tail-only table: arrow-ipc's reader vs `BucketLogReader`, every
/// bucket read in turn on one thread.
pub async fn decode_bench(
    store: &LocalStore,
    table: &str,
    codec: &str,
    runs: usize,
    warmup: usize,
) -> BenchResult<DecodeResult> {
    let path = TablePath::new(DATABASE, table);
    let meta = store
        .get_table(&path)
        .await
        .context(|| format!("loading {path}"))?;
    let target = meta.schemas.latest().context(|| "schema".into())?;
    let schema = target.arrow.clone();
    let mut buckets = Vec::new();
    let locations = store.buckets(&meta).await.context(|| "buckets".into())?;
    let all_offsets = store
        .bucket_offsets(&meta, &locations)
        .await
        .context(|| format!("offsets of {path}"))?;
    for (bucket, offsets) in locations.into_iter().zip(all_offsets) {
        let dir = store.bucket_dir(&meta, &bucket);
        let files = list_segments(store.storage(), &dir)
            .await
            .context(|| format!("segments of {dir}"))?
            .into_iter()
            .map(|s| {
                store
                    .storage()
                    .local_path(&s.path)
                    .ok_or_else(|| format!("{} is not local", s.path))
            })
            .collect::<Result<Vec<_>, _>>()?;
        buckets.push((dir, offsets, files));
    }
    let raw_pass = || -> BenchResult<(usize, usize, u64)> {
        let (mut rows, mut batches, mut bytes) = (0, 0, 0u64);
        for (_, _, files) in &buckets {
            for file in files {
                let data = Bytes::from(
                    std::fs::read(file).context(|| format!("reading {}", file.display()))?,
                );
                bytes += data.len() as u64;
                for batch in BatchIterator::new(data) {
                    let batch = batch.context(|| format!("framing {}", file.display()))?;
                    rows += decode_message(&batch.arrow_message(), &schema)?;
                    batches += 1;
                }
            }
        }
        Ok((rows, batches, bytes))
    };
    let mut raw = Vec::new();
    let mut counts = (0, 0, 0);
    for i in 0..warmup + runs {
        let start = Instant::now();
        counts = raw_pass()?;
        if i >= warmup {
            raw.push(start.elapsed().as_secs_f64());
        }
    }
    let mut ours = Vec::new();
    for i in 0..warmup + runs {
        let start = Instant::now();
        let mut rows = 0;
        for (dir, offsets, _) in &buckets {
            let reader = BucketLogReader::new(
                store.storage().clone(),
                dir.clone(),
                LogRange::new(offsets.earliest, offsets.high_watermark),
                meta.schemas.clone(),
                target.clone(),
                LogReadOptions::verified(),
            )
            .context(|| format!("reader of {dir}"))?;
            let (batches, _) = reader
                .collect()
                .await
                .context(|| format!("reading {dir}"))?;
            rows += batches.iter().map(|b| b.batch.num_rows()).sum::<usize>();
        }
        if rows != counts.0 {
            return Err(format!(
                "{table}: BucketLogReader produced {rows} rows, arrow-ipc {}",
                counts.0
            )
            .into());
        }
        if i >= warmup {
            ours.push(start.elapsed().as_secs_f64());
        }
    }
    Ok(DecodeResult {
        table: table.to_string(),
        codec: codec.to_string(),
        rows: counts.0,
        batches: counts.1,
        bytes: counts.2,
        arrow_ipc_secs: median(raw.clone()),
        fluss_reader_secs: median(ours.clone()),
        arrow_ipc_samples: raw,
        fluss_reader_samples: ours,
    })
}
