//! What the server serves: the [`ClusterModel`] trait and the plain data it hands out.
//!
//! The server never owns data; every request is answered from a `ClusterModel`, so an
//! in-memory fixture ([`crate::memory::MemoryCluster`]) and, later, a real store can be plugged
//! in behind the same protocol layer. Everything is keyed the way Fluss keys it: databases and
//! tables by name, logs by `(table_id, partition_id, bucket)`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use crate::log::{LogError, ServedLog};

/// The data source of a [`crate::server::TestServer`].
///
/// Implementations must be cheap to call: the server calls them on every request, from the
/// connection tasks, and does not cache anything.
pub trait ClusterModel: Send + Sync + 'static {
    /// All database names, in the order `ListDatabases` returns them.
    fn databases(&self) -> Vec<String>;

    /// The table names of `database`, or `None` if the database does not exist.
    fn tables(&self, database: &str) -> Option<Vec<String>>;

    /// The table `database.table`, or `None` if it does not exist.
    fn table(&self, database: &str, table: &str) -> Option<ServedTable>;

    /// The path (`database`, `table`) and description of the table with id `table_id`.
    ///
    /// The default implementation scans [`Self::databases`] and [`Self::tables`].
    fn table_by_id(&self, table_id: i64) -> Option<(String, String, ServedTable)> {
        for database in self.databases() {
            for name in self.tables(&database).unwrap_or_default() {
                if let Some(table) = self.table(&database, &name)
                    && table.table_id == table_id
                {
                    return Some((database, name, table));
                }
            }
        }
        None
    }

    /// The lake snapshots of the table, oldest first (empty if the table was never tiered).
    fn lake_snapshots(&self, table_id: i64) -> Vec<ServedLakeSnapshot>;

    /// The log of one bucket (`partition_id` is `None` for a non-partitioned table), or `None`
    /// if the table has no such bucket.
    fn log(&self, table_id: i64, partition_id: Option<i64>, bucket: i32) -> Option<ServedLog>;

    /// Appends the batches a client produced to one bucket's log (`ProduceLog`), as its
    /// leader would, and returns the base offset they got. The default refuses: a fixed
    /// model takes no writes ([`crate::writes::WritableCluster`] does).
    fn append(
        &self,
        table_id: i64,
        partition_id: Option<i64>,
        bucket: i32,
        records: &[u8],
    ) -> Result<i64, crate::errors::ApiError> {
        let _ = (table_id, partition_id, bucket, records);
        Err(crate::errors::ApiError::new(
            crate::errors::UNKNOWN_SERVER_ERROR,
            "This test cluster serves a fixed snapshot and takes no writes.",
        ))
    }

    /// Applies a client's KV record batch to one bucket of a primary-key table
    /// (`PutKv`; `target_columns`: a partial update's), appending the changelog it
    /// writes, and returns the log's end offset after it. The default refuses, as
    /// [`ClusterModel::append`] does.
    fn put_kv(
        &self,
        table_id: i64,
        partition_id: Option<i64>,
        bucket: i32,
        records: &[u8],
        target_columns: &[i32],
    ) -> Result<i64, crate::errors::ApiError> {
        let _ = target_columns;
        self.append(table_id, partition_id, bucket, records)
    }
}

/// One table as the coordinator describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedTable {
    /// The table id.
    pub table_id: i64,
    /// The id of the latest schema (the one `table_json` embeds).
    pub schema_id: i32,
    /// Every schema of the table by id, as Fluss Schema JSON (`Schema.toJsonBytes()`, the form
    /// ZooKeeper stores under `/metadata/databases/<db>/tables/<table>/schemas/<id>`).
    pub schemas: BTreeMap<i32, Vec<u8>>,
    /// The Fluss `TableDescriptor` JSON served as `table_json` by `GetTableInfo` and
    /// `MetaData` (Java's `TableInfo.toTableDescriptor().toJsonBytes()`).
    pub table_json: Vec<u8>,
    /// The number of buckets (of each partition, for a partitioned table).
    pub bucket_count: i32,
    /// The partition keys; empty for a non-partitioned table.
    pub partition_keys: Vec<String>,
    /// The partitions of a partitioned table.
    pub partitions: Vec<ServedPartition>,
    /// Creation time, epoch milliseconds.
    pub created_time: i64,
    /// Last modification time, epoch milliseconds.
    pub modified_time: i64,
    /// The table's remote data directory, if any.
    pub remote_data_dir: Option<String>,
}

/// One partition of a partitioned table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedPartition {
    /// The partition id.
    pub partition_id: i64,
    /// The partition name as Fluss spells it (values joined by `$`, e.g. `2024-01-01`).
    pub name: String,
    /// The partition spec: `(partition key, value)` in partition-key order.
    pub spec: Vec<(String, String)>,
}

/// One lake snapshot: up to which log offset each bucket has been tiered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedLakeSnapshot {
    /// The lake snapshot id.
    pub snapshot_id: i64,
    /// Whether the snapshot is readable (`GetLakeSnapshot` with `readable = true` returns the
    /// latest readable one).
    pub readable: bool,
    /// The tiered offset of each bucket.
    pub buckets: Vec<ServedLakeBucket>,
}

/// The tiered log offset of one bucket in a lake snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedLakeBucket {
    /// The partition id, for a partitioned table.
    pub partition_id: Option<i64>,
    /// The partition name, for a partitioned table.
    pub partition_name: Option<String>,
    /// The bucket id.
    pub bucket: i32,
    /// The log offset up to which (exclusive) the bucket is in the lake.
    pub log_offset: i64,
}

/// Why a [`ServedTable`] could not be built from Fluss JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

fn parse_object(json: &[u8], what: &str) -> Result<Map<String, Value>, ModelError> {
    match serde_json::from_slice::<Value>(json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ModelError(format!("{what} is not a JSON object"))),
        Err(e) => Err(ModelError(format!("{what} is not valid JSON: {e}"))),
    }
}

fn string_list(map: &Map<String, Value>, key: &str) -> Result<Vec<String>, ModelError> {
    match map.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ModelError(format!("`{key}` must hold strings")))
            })
            .collect(),
        Some(_) => Err(ModelError(format!("`{key}` must be an array"))),
    }
}

fn int_field(map: &Map<String, Value>, key: &str) -> Result<i64, ModelError> {
    map.get(key)
        .and_then(Value::as_i64)
        .ok_or_else(|| ModelError(format!("missing integer field `{key}`")))
}

impl ServedTable {
    /// Builds a table from the two JSON documents Fluss keeps in ZooKeeper: the
    /// `TableRegistration` JSON (`TableRegistrationJsonSerde`: `table_id`, `bucket_key`,
    /// `bucket_count`, `partition_key`, `properties`, `custom_properties`, `created_time`,
    /// `modified_time`, ...) and the schema JSON of every schema id.
    ///
    /// `table_json` is derived the way the Java coordinator derives it
    /// (`TableRegistration.toTableInfo(..).toTableDescriptor()` serialized by
    /// `TableDescriptorJsonSerde`): `version`, `schema` (the latest one), `comment` if any,
    /// `partition_key` (always present), `bucket_key` and `bucket_count`, `properties`,
    /// `custom_properties`.
    pub fn from_zk_json(
        registration_json: &[u8],
        schemas: impl IntoIterator<Item = (i32, Vec<u8>)>,
    ) -> Result<Self, ModelError> {
        let reg = parse_object(registration_json, "table registration")?;
        let schemas: BTreeMap<i32, Vec<u8>> = schemas.into_iter().collect();
        let (&schema_id, latest) = schemas
            .iter()
            .next_back()
            .ok_or_else(|| ModelError("a table needs at least one schema".into()))?;
        let schema: Value = serde_json::from_slice(latest)
            .map_err(|e| ModelError(format!("schema {schema_id} is not valid JSON: {e}")))?;

        let table_id = int_field(&reg, "table_id")?;
        let bucket_count = i32::try_from(int_field(&reg, "bucket_count")?)
            .map_err(|_| ModelError("`bucket_count` out of range".into()))?;
        let partition_keys = string_list(&reg, "partition_key")?;
        let bucket_keys = string_list(&reg, "bucket_key")?;
        let created_time = int_field(&reg, "created_time")?;
        let modified_time = int_field(&reg, "modified_time")?;
        let empty = Value::Object(Map::new());

        let mut descriptor = Map::new();
        descriptor.insert("version".into(), Value::from(1));
        descriptor.insert("schema".into(), schema);
        if let Some(comment) = reg.get("comment") {
            descriptor.insert("comment".into(), comment.clone());
        }
        descriptor.insert("partition_key".into(), Value::from(partition_keys.clone()));
        descriptor.insert("bucket_key".into(), Value::from(bucket_keys));
        descriptor.insert("bucket_count".into(), Value::from(bucket_count));
        for key in ["properties", "custom_properties"] {
            descriptor.insert(key.into(), reg.get(key).unwrap_or(&empty).clone());
        }
        let table_json = serde_json::to_vec(&Value::Object(descriptor))
            .map_err(|e| ModelError(format!("cannot serialize the table descriptor: {e}")))?;

        Ok(Self {
            table_id,
            schema_id,
            schemas,
            table_json,
            bucket_count,
            partition_keys,
            partitions: Vec::new(),
            created_time,
            modified_time,
            remote_data_dir: reg
                .get("remote_data_dir")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// The same table with these partitions.
    pub fn with_partitions(mut self, partitions: Vec<ServedPartition>) -> Self {
        self.partitions = partitions;
        self
    }

    /// Whether the table is partitioned.
    pub fn is_partitioned(&self) -> bool {
        !self.partition_keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_json_from_zookeeper_json() {
        let table = ServedTable::from_zk_json(
            br#"{"version":1,"table_id":3,"bucket_key":["id"],"bucket_count":4,"properties":{"a":"b"},"custom_properties":{},"created_time":10,"modified_time":11}"#,
            [
                (1, br#"{"version":1,"columns":[]}"#.to_vec()),
                (2, br#"{"version":1,"columns":[{"name":"id","data_type":{"type":"INTEGER"}}]}"#.to_vec()),
            ],
        )
        .unwrap();
        assert_eq!(
            (table.table_id, table.schema_id, table.bucket_count),
            (3, 2, 4)
        );
        assert_eq!((table.created_time, table.modified_time), (10, 11));
        assert!(!table.is_partitioned());
        let json: Value = serde_json::from_slice(&table.table_json).unwrap();
        assert_eq!(json["partition_key"], serde_json::json!([]));
        assert_eq!(json["bucket_key"], serde_json::json!(["id"]));
        assert_eq!(json["bucket_count"], 4);
        assert_eq!(json["properties"]["a"], "b");
        assert_eq!(json["schema"]["columns"][0]["name"], "id");
        assert!(ServedTable::from_zk_json(b"{}", [(1, b"{}".to_vec())]).is_err());
        assert!(ServedTable::from_zk_json(b"[", [(1, b"{}".to_vec())]).is_err());
    }
}
