//! Serving a real [`LocalStore`]: a snapshot of every database, table, log and lake snapshot
//! of the store, loaded once into a [`MemoryCluster`].
//!
//! What is served is what a Fluss cluster holding the same files would serve:
//!
//! * table metadata from the store's own ZooKeeper-layout files (the `TableRegistration`
//!   JSON and every schema version, byte for byte), through [`ServedTable::from_zk_json`];
//! * each bucket's log: the segment files of the bucket in offset order, concatenated,
//!   with the earliest offset and high watermark the store reports
//!   ([`FlussSource::bucket_offsets`]): a torn tail of the newest segment (a crash
//!   mid-append) and batches of a statement still in progress are not served;
//! * partitions as the store lists them ([`FlussSource::list_partitions`]);
//! * lake snapshots: the readable one ([`FlussSource::readable_lake_snapshot`]), and the
//!   latest tiered one ([`LocalStore::latest_tiered_snapshot`]) when it is another.
//!
//! Table properties follow what a coordinator hands out: a LocalStore keeps its lake
//! warehouse implicit or relative to the store root, while a Fluss coordinator puts its
//! `datalake.<format>.*` catalog options, with an absolute warehouse, into the table
//! properties. So a lake-enabled table is served with `table.datalake.<format>.warehouse`
//! set to the absolute warehouse ([`FlussSource::lake_location`]). Credential-like
//! properties ([`is_sensitive_property`]) are never served.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use fluss_datafusion::LocalStore;
//! use fluss_test_support::local_store::load_local_store;
//! use fluss_test_support::server::{ServerConfig, TestServer};
//!
//! let store = LocalStore::open("/path/to/store").await?;
//! let cluster = load_local_store(&store).await?;
//! let server = TestServer::start(Arc::new(cluster), ServerConfig::default()).await?;
//! # drop(server); Ok(()) }
//! ```

use std::collections::BTreeMap;

use fluss::metadata::TablePath;
use fluss_datafusion::source::{FlussTable, ReadableSnapshot};
use fluss_datafusion::{Error, ErrorKind, FlussSource, LocalStore};
use serde_json::{Map, Value};

use crate::log::{ServedLog, complete_batches_len};
use crate::memory::MemoryCluster;
use crate::model::{ServedLakeBucket, ServedLakeSnapshot, ServedPartition, ServedTable};

/// `zk/metadata/databases/<db>/tables`: where the LocalStore keeps table znodes
/// (`src/source/layout.rs` of the library, Fluss's `ZkData.TableZNode`).
fn tables_dir(database: &str) -> String {
    format!("zk/metadata/databases/{database}/tables")
}

/// Whether a table property is credential-like; such properties are left out of
/// what the server serves (the library's rule, which shipped plans follow too).
pub use fluss_datafusion::table::is_sensitive_property;

/// Loads everything `store` holds into a [`MemoryCluster`] for a
/// [`crate::server::TestServer`]: a snapshot taken now (later writes to the store are not
/// seen; load again for them).
///
/// A table whose registration is still being written (an empty znode) is left out, as it
/// is not readable yet. Anything the store cannot read, or that is inconsistent (a log
/// whose batches do not match the offsets the store reports), fails the load with an
/// error naming the table and the file or bucket.
pub async fn load_local_store(store: &LocalStore) -> Result<MemoryCluster, Error> {
    let mut cluster = MemoryCluster::new();
    for database in store.list_databases().await? {
        cluster.add_database(database.clone());
        for name in LocalStore::list_tables(store, &database).await? {
            let path = TablePath::new(database.clone(), name.clone());
            let table = match store.get_table(&path).await {
                Ok(table) => table,
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    log::debug!("fluss test server: not serving {path}: {e}");
                    continue;
                }
                Err(e) => return Err(e),
            };
            load_table(store, &mut cluster, &table)
                .await
                .map_err(|e| e.with_context("table", &path))?;
        }
    }
    Ok(cluster)
}

async fn load_table(
    store: &LocalStore,
    cluster: &mut MemoryCluster,
    table: &FlussTable,
) -> Result<(), Error> {
    let path = &table.path;
    let table_id = table.table_id();
    let dir = tables_dir(path.database());
    let node = format!("{dir}/{}.json", path.table());
    let registration = store.storage().read(&node).await?;
    let warehouse = match table.lake_format() {
        Some(_) => {
            let location = store.lake_location(table).await?;
            (!location.warehouse.is_empty()).then(|| {
                (
                    format!("table.datalake.{}.warehouse", location.format.name()),
                    location.warehouse,
                )
            })
        }
        None => None,
    };
    let registration =
        served_registration(&registration, warehouse).map_err(|e| e.with_context("file", &node))?;

    let schemas_dir = format!("{dir}/{}/schemas", path.table());
    let mut schemas = BTreeMap::new();
    for name in store.storage().list_dir(&schemas_dir).await? {
        let Some(id) = name
            .strip_suffix(".json")
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let file = format!("{schemas_dir}/{name}");
        schemas.insert(id, store.storage().read(&file).await?.to_vec());
    }

    let mut served = ServedTable::from_zk_json(&registration, schemas)
        .map_err(|e| Error::data_invalid(e.to_string()).with_context("file", &node))?;
    if served.table_id != table_id || served.schema_id != table.info.get_schema_id() {
        return Err(Error::data_invalid(format!(
            "the files say table id {} at schema {}, the store says table id {table_id} at \
             schema {}",
            served.table_id,
            served.schema_id,
            table.info.get_schema_id()
        ))
        .with_context("file", &node));
    }

    let partitions = if table.info.is_partitioned() {
        store.list_partitions(table).await?
    } else {
        Vec::new()
    };
    served.partitions = partitions
        .iter()
        .map(|p| {
            let spec = p.get_resolved_partition_spec();
            ServedPartition {
                partition_id: p.get_partition_id(),
                name: p.get_partition_name(),
                spec: spec
                    .get_partition_keys()
                    .iter()
                    .cloned()
                    .zip(spec.get_partition_values().iter().cloned())
                    .collect(),
            }
        })
        .collect();
    let partition_names: BTreeMap<i64, String> = served
        .partitions
        .iter()
        .map(|p| (p.partition_id, p.name.clone()))
        .collect();

    let buckets = store.buckets(table).await?;
    let offsets = store.bucket_offsets(table, &buckets).await?;
    if offsets.len() != buckets.len() {
        return Err(Error::data_invalid(format!(
            "{} buckets but {} bucket offsets",
            buckets.len(),
            offsets.len()
        )));
    }
    for (bucket, offsets) in buckets.iter().zip(offsets) {
        let dir = store.bucket_dir(table, bucket);
        let log = load_log(store, &dir, offsets.earliest, offsets.high_watermark)
            .await
            .map_err(|e| {
                e.with_context("bucket", bucket.bucket)
                    .with_context("dir", &dir)
            })?;
        cluster.add_log(table_id, bucket.partition_id(), bucket.bucket, log);
    }

    // every registered snapshot in the order Fluss registered them (time travel reads
    // older ones by id), the readable one marked, the latest tiered one last
    let readable = store.readable_lake_snapshot(table).await?;
    let latest = store.latest_tiered_snapshot(table).await?;
    let mut snapshots: Vec<ServedLakeSnapshot> = Vec::new();
    for id in store
        .registered_lake_snapshots(table)
        .await?
        .unwrap_or_default()
    {
        let is_readable = readable.as_ref().is_some_and(|r| r.snapshot_id == id);
        let snapshot = match &readable {
            Some(r) if is_readable => Some(r.clone()),
            _ => store.lake_snapshot(table, id).await?,
        };
        if let Some(snapshot) = snapshot {
            snapshots.retain(|s| s.snapshot_id != id);
            snapshots.push(lake_snapshot(&snapshot, is_readable, &partition_names));
        }
    }
    if let Some(r) = &readable
        && !snapshots.iter().any(|s| s.snapshot_id == r.snapshot_id)
    {
        snapshots.push(lake_snapshot(r, true, &partition_names));
    }
    if let Some(l) =
        latest.filter(|l| snapshots.last().map(|s| s.snapshot_id) != Some(l.snapshot_id))
    {
        snapshots.retain(|s| s.snapshot_id != l.snapshot_id);
        snapshots.push(lake_snapshot(&l, false, &partition_names));
    }
    for snapshot in snapshots {
        cluster.add_lake_snapshot(table_id, snapshot);
    }
    cluster.add_table(path.database(), path.table(), served);
    Ok(())
}

/// The registration JSON as served: credential-like properties removed, the lake warehouse
/// (key, absolute location) set.
fn served_registration(raw: &[u8], warehouse: Option<(String, String)>) -> Result<Vec<u8>, Error> {
    let mut registration: Map<String, Value> = serde_json::from_slice(raw).map_err(|e| {
        Error::data_invalid(format!("table registration is not a JSON object: {e}"))
    })?;
    for key in ["properties", "custom_properties"] {
        if let Some(Value::Object(properties)) = registration.get_mut(key) {
            properties.retain(|k, _| !is_sensitive_property(k));
        }
    }
    if let Some((key, location)) = warehouse {
        match registration
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()))
        {
            Value::Object(properties) => {
                properties.insert(key, Value::String(location));
            }
            _ => {
                return Err(Error::data_invalid(
                    "table registration `properties` is not an object",
                ));
            }
        }
    }
    serde_json::to_vec(&Value::Object(registration))
        .map_err(|e| Error::data_invalid(format!("cannot serialize the registration: {e}")))
}

/// The log of one bucket: its segments in offset order, concatenated, without a torn tail,
/// cut at the high watermark the store reports.
async fn load_log(
    store: &LocalStore,
    dir: &str,
    earliest: i64,
    high_watermark: i64,
) -> Result<ServedLog, Error> {
    let names = match store.storage().list_dir(dir).await {
        Ok(names) => names,
        Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    // Segment files are named by their 20-digit base offset (Fluss's `LogSegment` naming).
    let mut segments: Vec<(i64, String)> = names
        .into_iter()
        .filter_map(|name| {
            let stem = name.strip_suffix(".log")?;
            if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((stem.parse().ok()?, name))
        })
        .collect();
    segments.sort();
    let mut records = Vec::new();
    let last = segments.len().saturating_sub(1);
    for (i, (_, name)) in segments.iter().enumerate() {
        let file = format!("{dir}/{name}");
        let bytes = store.storage().read(&file).await?;
        let whole = complete_batches_len(&bytes);
        if whole < bytes.len() && i != last {
            // only the newest segment may end in an incomplete (torn) batch
            return Err(Error::data_invalid(format!(
                "incomplete batch at byte {whole} of a segment that is not the newest"
            ))
            .with_context("file", &file));
        }
        records.extend_from_slice(&bytes[..whole]);
    }
    let log = ServedLog::new(records).map_err(|e| Error::data_invalid(e.to_string()))?;
    let log = if log.batch_count() == 0 {
        ServedLog::empty(earliest)
    } else {
        log.truncated_before(high_watermark)
            .map_err(|e| Error::data_invalid(e.to_string()))?
    };
    if (log.log_start_offset(), log.high_watermark()) != (earliest, high_watermark) {
        return Err(Error::data_invalid(format!(
            "the segments hold offsets {}..{}, the store reports {earliest}..{high_watermark}",
            log.log_start_offset(),
            log.high_watermark()
        )));
    }
    Ok(log)
}

fn lake_snapshot(
    snapshot: &ReadableSnapshot,
    readable: bool,
    partition_names: &BTreeMap<i64, String>,
) -> ServedLakeSnapshot {
    let mut buckets = Vec::new();
    for (&partition_id, offsets) in &snapshot.offsets.offsets {
        for (bucket, &log_offset) in offsets.iter().enumerate() {
            // -1: the bucket's offset is unknown (never tiered); Fluss lists no entry
            let Ok(bucket) = i32::try_from(bucket) else {
                continue;
            };
            if log_offset < 0 {
                continue;
            }
            buckets.push(ServedLakeBucket {
                partition_id,
                partition_name: partition_id.and_then(|id| partition_names.get(&id).cloned()),
                bucket,
                log_offset,
            });
        }
    }
    ServedLakeSnapshot {
        snapshot_id: snapshot.snapshot_id,
        readable,
        buckets,
    }
}

/// SQL building a store with a tiered log table `db.logs` and a tiered primary-key
/// table `db.kv`, each with a tail not tiered yet (an update and a delete in `db.kv`),
/// and a log table without a lake, `db.plain`: the store the cluster-source tests serve.
pub const TIERED_TABLES_SQL: &[&str] = &[
    "CREATE DATABASE db",
    "CREATE TABLE db.logs (id BIGINT, name STRING, score INT) \
     WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
    "INSERT INTO db.logs VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)",
    "CALL fluss.tier('db.logs')",
    "INSERT INTO db.logs VALUES (5, 'e', 50), (6, NULL, 60)",
    "INSERT INTO db.logs VALUES (7, 'g', NULL)",
    "CREATE TABLE db.kv (id BIGINT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) \
     WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
    "INSERT INTO db.kv VALUES (1, 'x', 1), (2, 'y', 2), (3, 'z', 3)",
    "CALL fluss.tier('db.kv')",
    "INSERT INTO db.kv VALUES (1, 'x2', 10), (4, 'w', 4)",
    "DELETE FROM db.kv WHERE id = 2",
    "CREATE TABLE db.plain (id BIGINT, tag STRING) WITH ('bucket.num' = '3')",
    "INSERT INTO db.plain VALUES (1, 'p'), (2, 'q'), (3, 'r'), (4, 's')",
];

/// A LocalStore in a fresh temporary directory after running `statements` (SQL) on
/// it, with the session that ran them. Panics on a failed statement (tests only).
pub async fn store_from_sql(
    statements: &[&str],
) -> (
    tempfile::TempDir,
    std::sync::Arc<LocalStore>,
    fluss_datafusion::sql::FlussSession,
) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().to_str().expect("a UTF-8 path");
    let store = std::sync::Arc::new(LocalStore::open(root).await.expect("the store opens"));
    let session = fluss_datafusion::sql::FlussSession::new(store.clone())
        .await
        .expect("a session on the store");
    for sql in statements {
        session
            .execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    (dir, store, session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitive_properties() {
        for key in [
            "table.datalake.paimon.s3.secret-key",
            "table.datalake.paimon.s3.access-key",
            "table.datalake.iceberg.token",
            "client.security.sasl.password",
            "fs.azure.account.key.x.dfs.core.windows.net",
            "table.datalake.iceberg.credential",
        ] {
            assert!(is_sensitive_property(key), "{key}");
        }
        for key in [
            "table.datalake.paimon.warehouse",
            "table.datalake.enabled",
            "bucket.num",
        ] {
            assert!(!is_sensitive_property(key), "{key}");
        }
    }

    #[test]
    fn registration_as_served() {
        let raw = br#"{"table_id":1,"properties":{"table.datalake.enabled":"true","table.datalake.paimon.warehouse":"lake/paimon","table.datalake.paimon.s3.secret-key":"x"},"custom_properties":{"my.password":"p","k":"v"}}"#;
        let served = served_registration(
            raw,
            Some((
                "table.datalake.paimon.warehouse".into(),
                "/abs/lake/paimon".into(),
            )),
        )
        .unwrap();
        let json: Value = serde_json::from_slice(&served).unwrap();
        assert_eq!(
            json["properties"],
            serde_json::json!({"table.datalake.enabled":"true","table.datalake.paimon.warehouse":"/abs/lake/paimon"})
        );
        assert_eq!(json["custom_properties"], serde_json::json!({"k":"v"}));
        assert!(served_registration(b"[1]", None).is_err());
    }
}
