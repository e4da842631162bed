//! An in-memory [`ClusterModel`] for tests.

use std::collections::{BTreeMap, HashMap};

use crate::model::{ClusterModel, ServedLakeSnapshot, ServedLog, ServedTable};

/// A fixed cluster held in memory: databases, tables, bucket logs and lake snapshots.
///
/// Build it once, then hand it to [`crate::server::TestServer::start`] in an `Arc`.
///
/// ```
/// use fluss_test_support::memory::MemoryCluster;
/// use fluss_test_support::model::{ClusterModel, ServedLog};
///
/// let mut cluster = MemoryCluster::new();
/// cluster.add_database("db");
/// assert_eq!(cluster.databases(), vec!["db".to_string()]);
/// assert!(cluster.log(0, None, 0).is_none());
/// cluster.add_log(0, None, 0, ServedLog::empty(0));
/// assert_eq!(cluster.log(0, None, 0).unwrap().high_watermark(), 0);
/// ```
#[derive(Debug, Default, Clone)]
pub struct MemoryCluster {
    databases: BTreeMap<String, BTreeMap<String, ServedTable>>,
    logs: HashMap<(i64, Option<i64>, i32), ServedLog>,
    lake_snapshots: HashMap<i64, Vec<ServedLakeSnapshot>>,
}

impl MemoryCluster {
    /// An empty cluster.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an (empty) database; does nothing if it exists.
    pub fn add_database(&mut self, name: impl Into<String>) -> &mut Self {
        self.databases.entry(name.into()).or_default();
        self
    }

    /// Adds (or replaces) the table `database.name`, creating the database if needed.
    pub fn add_table(
        &mut self,
        database: impl Into<String>,
        name: impl Into<String>,
        table: ServedTable,
    ) -> &mut Self {
        self.databases
            .entry(database.into())
            .or_default()
            .insert(name.into(), table);
        self
    }

    /// Sets property `key` of table `database.name` to `value` (as an operator would
    /// with `ALTER TABLE … SET`); `false` if there is no such table or its descriptor
    /// is not a JSON object.
    pub fn set_table_property(
        &mut self,
        database: &str,
        name: &str,
        key: &str,
        value: &str,
    ) -> bool {
        let Some(table) = self
            .databases
            .get_mut(database)
            .and_then(|tables| tables.get_mut(name))
        else {
            return false;
        };
        let Ok(serde_json::Value::Object(mut descriptor)) =
            serde_json::from_slice::<serde_json::Value>(&table.table_json)
        else {
            return false;
        };
        let properties = descriptor
            .entry("properties")
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        let serde_json::Value::Object(properties) = properties else {
            return false;
        };
        properties.insert(
            key.to_string(),
            serde_json::Value::String(value.to_string()),
        );
        match serde_json::to_vec(&descriptor) {
            Ok(json) => {
                table.table_json = json;
                true
            }
            Err(_) => false,
        }
    }

    /// Sets the log of one bucket.
    pub fn add_log(
        &mut self,
        table_id: i64,
        partition_id: Option<i64>,
        bucket: i32,
        log: ServedLog,
    ) -> &mut Self {
        self.logs.insert((table_id, partition_id, bucket), log);
        self
    }

    /// Appends a lake snapshot of a table (snapshots are kept in the order added).
    pub fn add_lake_snapshot(&mut self, table_id: i64, snapshot: ServedLakeSnapshot) -> &mut Self {
        self.lake_snapshots
            .entry(table_id)
            .or_default()
            .push(snapshot);
        self
    }
}

impl ClusterModel for MemoryCluster {
    fn databases(&self) -> Vec<String> {
        self.databases.keys().cloned().collect()
    }

    fn tables(&self, database: &str) -> Option<Vec<String>> {
        self.databases
            .get(database)
            .map(|tables| tables.keys().cloned().collect())
    }

    fn table(&self, database: &str, table: &str) -> Option<ServedTable> {
        self.databases.get(database)?.get(table).cloned()
    }

    fn table_by_id(&self, table_id: i64) -> Option<(String, String, ServedTable)> {
        self.databases.iter().find_map(|(db, tables)| {
            tables
                .iter()
                .find(|(_, t)| t.table_id == table_id)
                .map(|(name, t)| (db.clone(), name.clone(), t.clone()))
        })
    }

    fn lake_snapshots(&self, table_id: i64) -> Vec<ServedLakeSnapshot> {
        self.lake_snapshots
            .get(&table_id)
            .cloned()
            .unwrap_or_default()
    }

    fn log(&self, table_id: i64, partition_id: Option<i64>, bucket: i32) -> Option<ServedLog> {
        self.logs.get(&(table_id, partition_id, bucket)).cloned()
    }
}
