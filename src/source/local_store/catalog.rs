//! The coordinator's side of the LocalStore: databases, tables, partitions, id
//! counters and lake snapshot registrations, written as Fluss's ZooKeeper znodes.
//! Every change runs under the writer lock, so two processes never hand out the same
//! table id or overwrite each other's registrations.

use std::collections::BTreeMap;

use fluss::metadata::{JsonSerde, TableDescriptor, TablePath};

use super::write::WriteGuard;
use super::{LocalStore, now_millis, to_btree, to_hash};
use crate::error::{Error, ErrorKind, Result};
use crate::lake::{LakeFormat, lake_table_dir};
use crate::log::ArrowCompression;
use crate::log::statistics::{STATISTICS_COLUMNS_PROPERTY, statistics_column_mapping};
use crate::source::layout::{self, validate_name};
use crate::source::metadata::{DatabaseRegistration, LakeSnapshotEntry, TableRegistration};
use crate::source::writer::schema_with_columns;
use crate::source::{FlussSource, FlussTable, MAX_BUCKETS, NewColumn};

impl LocalStore {
    /// The next value of an id counter (`table_seqid`, `partition_seqid`); the caller
    /// holds the writer lock, so the read-modify-write is not raced.
    pub(super) async fn next_id(&self, _guard: &WriteGuard<'_>, counter: &str) -> Result<i64> {
        let current = match self.storage.read_optional(counter).await? {
            Some(bytes) => serde_json::from_slice::<i64>(&bytes)
                .map_err(|e| Error::from(e).with_context("file", counter))?,
            None => 0,
        };
        self.put_json(counter, (current + 1).to_string().into_bytes())
            .await?;
        Ok(current)
    }

    /// Creates a database.
    pub async fn create_database(
        &self,
        name: &str,
        comment: Option<&str>,
        if_not_exists: bool,
    ) -> Result<()> {
        validate_name("database", name)?;
        let node = layout::database_node(name);
        let exists = || async {
            if self.storage.read_optional(&node).await?.is_none() {
                return Ok(false);
            }
            if if_not_exists {
                return Ok(true);
            }
            Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("database '{name}' already exists"),
            ))
        };
        // Looked up before the lock too: a session opening an existing database is a
        // reader and must not wait for writers.
        if exists().await? {
            return Ok(());
        }
        let _guard = self.write_guard().await?;
        if exists().await? {
            return Ok(());
        }
        let now = now_millis();
        let reg = DatabaseRegistration {
            version: 1,
            comment: comment.map(str::to_string),
            custom_properties: BTreeMap::new(),
            created_time: now,
            modified_time: now,
        };
        self.put_json(&node, serde_json::to_vec(&reg)?).await
    }

    /// Drops a database; with `cascade` its tables too.
    pub async fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
        let mut guard = self.write_guard().await?;
        if !self.database_exists(name).await? {
            if if_exists {
                return Ok(());
            }
            return Err(Error::not_found(format!(
                "database '{name}' does not exist"
            )));
        }
        let tables = self.list_tables(name).await?;
        if !tables.is_empty() && !cascade {
            return Err(Error::invalid_input(format!(
                "database '{name}' is not empty ({} tables); use CASCADE",
                tables.len()
            )));
        }
        for table in tables {
            self.drop_table_locked(&mut guard, &TablePath::new(name, &table), true)
                .await?;
        }
        self.storage
            .delete_dir(&format!("zk/metadata/databases/{name}"))
            .await?;
        self.storage.delete(&layout::database_node(name)).await
    }

    /// Creates a table from a fluss-rs descriptor, as the coordinator does: schema id 1,
    /// a new table id, default bucket count 1, PK tables bucketed by the PK minus the
    /// partition keys, and (when the lake is enabled) the lake location in properties.
    pub async fn create_table(
        &self,
        path: &TablePath,
        descriptor: &TableDescriptor,
        if_not_exists: bool,
    ) -> Result<FlussTable> {
        validate_name("database", path.database())?;
        validate_name("table", path.table())?;
        {
            let mut guard = self.write_guard().await?;
            if !self.database_exists(path.database()).await? {
                return Err(Error::not_found(format!(
                    "database '{}' does not exist",
                    path.database()
                )));
            }
            if self
                .storage
                .read_optional(&layout::table_node(path))
                .await?
                .is_some()
            {
                if !if_not_exists {
                    return Err(Error::new(
                        ErrorKind::AlreadyExists,
                        format!("table '{path}' already exists"),
                    ));
                }
            } else {
                self.register_table(&guard, path, descriptor).await?;
                // an auto-partitioned table starts with its pre-created partitions
                let table = self.get_table(path).await?;
                self.maintain_partitions(&mut guard, &table).await?;
            }
        }
        self.get_table(path).await
    }

    async fn register_table(
        &self,
        guard: &WriteGuard<'_>,
        path: &TablePath,
        descriptor: &TableDescriptor,
    ) -> Result<()> {
        let schema = descriptor.schema();
        for column in schema.columns() {
            if column.name().starts_with("__") {
                return Err(Error::invalid_input(format!(
                    "column name '{}' is reserved for system columns",
                    column.name()
                )));
            }
        }
        let mut properties = to_btree(descriptor.properties());
        self.with_lake_defaults(&mut properties)?;
        check_partition_key_types(schema, descriptor.partition_keys())?;
        check_lake_partition_keys(&properties, schema, descriptor.partition_keys())?;
        super::auto_partition::AutoPartitioning::from_properties(
            &to_hash(&properties),
            descriptor.partition_keys(),
            &path.to_string(),
        )?;
        if schema.primary_key().is_some() && properties.contains_key(STATISTICS_COLUMNS_PROPERTY) {
            return Err(Error::invalid_input(
                "Statistics columns are not supported for primary key tables",
            ));
        }
        // Validate the statistics and compression options up front.
        statistics_column_mapping(
            properties
                .get(STATISTICS_COLUMNS_PROPERTY)
                .map(String::as_str),
            schema.row_type(),
        )?;
        ArrowCompression::from_properties(&to_hash(&properties))?;
        let partition_keys: Vec<String> = descriptor.partition_keys().to_vec();
        let mut bucket_keys: Vec<String> = descriptor
            .bucket_keys()
            .into_iter()
            .map(str::to_string)
            .collect();
        if bucket_keys.is_empty()
            && let Some(pk) = schema.primary_key()
        {
            bucket_keys = pk
                .column_names()
                .iter()
                .filter(|c| !partition_keys.contains(c))
                .cloned()
                .collect();
        }
        let bucket_count = descriptor
            .table_distribution()
            .and_then(|d| d.bucket_count())
            .unwrap_or(1);
        if !(1..=MAX_BUCKETS).contains(&bucket_count) {
            return Err(Error::invalid_input(format!(
                "bucket count must be between 1 and {MAX_BUCKETS}, got {bucket_count}"
            )));
        }
        let table_id = self.next_id(guard, &layout::table_seqid_node()).await?;
        let now = now_millis();
        let registration = TableRegistration {
            version: 1,
            table_id,
            comment: descriptor.comment().map(str::to_string),
            partition_key: partition_keys,
            bucket_key: bucket_keys,
            bucket_count,
            properties,
            custom_properties: to_btree(descriptor.custom_properties()),
            remote_data_dir: None,
            created_time: now,
            modified_time: now,
            bucket_count_epoch: None,
        };
        // Schema first, then the table znode, as MetadataManager.createTable does.
        let schema_json = serde_json::to_vec(&schema.serialize_json()?)?;
        self.put_json(&layout::schema_node(path, 1), schema_json)
            .await?;
        self.put_json(
            &layout::table_node(path),
            serde_json::to_vec(&registration)?,
        )
        .await
    }

    /// With `table.datalake.enabled`, the lake options a table is created (or its lake
    /// enabled) with: the store's lake format and that format's warehouse and catalog
    /// in the store, unless given.
    fn with_lake_defaults(&self, properties: &mut BTreeMap<String, String>) -> Result<()> {
        let lake_enabled = properties
            .get("table.datalake.enabled")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if !lake_enabled {
            return Ok(());
        }
        let format = properties
            .entry("table.datalake.format".to_string())
            .or_insert_with(|| self.options.datalake_format.clone())
            .to_ascii_lowercase();
        let defaults: [(&str, &str); 2] = match format.as_str() {
            "paimon" => [
                (
                    "table.datalake.paimon.warehouse",
                    layout::DEFAULT_PAIMON_WAREHOUSE,
                ),
                ("table.datalake.paimon.metastore", "filesystem"),
            ],
            "iceberg" => [
                (
                    "table.datalake.iceberg.warehouse",
                    layout::DEFAULT_ICEBERG_WAREHOUSE,
                ),
                ("table.datalake.iceberg.type", "hadoop"),
            ],
            other => {
                return Err(Error::unsupported(format!(
                    "lake format '{other}' cannot be created by the LocalStore yet (paimon and iceberg are)"
                )));
            }
        };
        for (key, value) in defaults {
            properties
                .entry(key.to_string())
                .or_insert_with(|| value.to_string());
        }
        Ok(())
    }

    /// `ALTER TABLE path SET (...) / RESET (...)`: the options Fluss lets users change
    /// ([`crate::source::writer::ALTERABLE_TABLE_OPTIONS`]) and the user's own, written
    /// into the table's registration as Fluss's coordinator writes them. Enabling the
    /// lake gives the table the lake options it would have been created with.
    pub async fn alter_table_options(
        &self,
        path: &TablePath,
        set: &[(String, String)],
        reset: &[String],
    ) -> Result<()> {
        crate::source::writer::check_alterable(path, set, reset)?;
        let table = self.get_table(path).await?;
        let set = &crate::source::writer::without_bucket_count(path, &table.info, set, reset)?;
        let _guard = self.write_guard().await?;
        let node = layout::table_node(path);
        let Some(bytes) = self.storage.read_optional(&node).await? else {
            return Err(Error::not_found(format!("table '{path}' does not exist")));
        };
        let mut registration: TableRegistration = serde_json::from_slice(&bytes)
            .map_err(|e| Error::from(e).with_context("file", node.clone()))?;
        for key in reset {
            registration.properties.remove(key);
            registration.custom_properties.remove(key);
        }
        for (key, value) in set {
            let options = if key.starts_with("table.") {
                &mut registration.properties
            } else {
                &mut registration.custom_properties
            };
            options.insert(key.clone(), value.clone());
        }
        self.with_lake_defaults(&mut registration.properties)?;
        check_lake_partition_keys(
            &registration.properties,
            table.info.get_schema(),
            &registration.partition_key,
        )?;
        registration.modified_time = now_millis();
        self.put_json(&node, serde_json::to_vec(&registration)?)
            .await
    }

    /// `ALTER TABLE path ADD ...`: the next schema version, with `columns` appended by
    /// Fluss's rules, written after the table's lake table took them (lake first, as
    /// Fluss's coordinator does). Batches written from now on carry the new schema id;
    /// older batches and lake files read the new columns as NULL.
    pub async fn add_columns(&self, path: &TablePath, columns: &[NewColumn]) -> Result<()> {
        let mut guard = self.write_guard().await?;
        let table = self.get_table(path).await?;
        // the bucket assigner and key-value state kept for it know the old row type
        guard.forget_table(table.table_id());
        for column in columns {
            if column.name.starts_with("__") {
                return Err(Error::invalid_input(format!(
                    "column name '{}' is reserved for system columns",
                    column.name
                )));
            }
        }
        let schema = schema_with_columns(path, table.info.get_schema(), columns)?;
        let schema_id = table.info.get_schema_id() + 1;
        let evolved = table.with_schema(schema_id, schema.clone())?;
        if evolved.lake_format().is_some() {
            let location = self.lake_location(&evolved).await?;
            crate::lake::add_lake_columns(&location, &evolved).await?;
        }
        let node = layout::schema_node(path, schema_id);
        if self.storage.read_optional(&node).await?.is_some() {
            return Err(Error::data_invalid(format!(
                "schema {schema_id} of table '{path}' exists already"
            ))
            .with_context("file", node));
        }
        self.put_json(&node, serde_json::to_vec(&schema.serialize_json()?)?)
            .await
    }

    /// Drops a table: metadata, log and lake pointers (the lake table stays, as in Fluss).
    pub async fn drop_table(&self, path: &TablePath, if_exists: bool) -> Result<()> {
        let mut guard = self.write_guard().await?;
        self.drop_table_locked(&mut guard, path, if_exists).await
    }

    async fn drop_table_locked(
        &self,
        guard: &mut WriteGuard<'_>,
        path: &TablePath,
        if_exists: bool,
    ) -> Result<()> {
        let table = match self.get_table(path).await {
            Ok(t) => t,
            Err(e) if e.kind() == ErrorKind::NotFound && if_exists => return Ok(()),
            Err(e) if e.kind() == ErrorKind::DataInvalid => {
                return self.drop_damaged_table(path).await;
            }
            Err(e) => return Err(e),
        };
        let id = table.table_id();
        guard.forget_table(id);
        self.storage.delete(&layout::table_node(path)).await?;
        self.forget_committed(guard, id, None).await?;
        self.storage.delete_dir(&layout::table_dir(path)).await?;
        self.storage
            .delete_dir(&layout::table_data_dir(path, id))
            .await?;
        self.storage
            .delete_dir(&format!("zk/tabletservers/tables/{id}"))
            .await?;
        // The lake table goes with it when it lives in the store's own warehouse; a
        // table created again under the name must not find the old one's snapshots
        // (its first tiering would refuse them). Lakes elsewhere are left alone.
        if let Some(dir) = owned_lake_table_dir(&table) {
            self.storage.delete_dir(&dir).await?;
        }
        Ok(())
    }

    /// Drops a table whose metadata cannot be read: its metadata and its log data,
    /// found by name (`<table>-<id>` folders) as its id is unreadable. Its lake table,
    /// whose location the damaged metadata held, is left alone; a table created again
    /// under the name refuses a lake that has snapshots at its first tiering.
    async fn drop_damaged_table(&self, path: &TablePath) -> Result<()> {
        self.storage.delete(&layout::table_node(path)).await?;
        self.storage.delete_dir(&layout::table_dir(path)).await?;
        let data = layout::database_data_dir(path.database());
        let prefix = format!("{}-", path.table());
        for entry in self.storage.list_dir(&data).await? {
            let is_its_data = entry
                .strip_prefix(&prefix)
                .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()));
            if is_its_data {
                self.storage.delete_dir(&format!("{data}/{entry}")).await?;
            }
        }
        Ok(())
    }

    /// Registers a lake snapshot in the `laketable` znode (tiering's last step).
    pub(crate) async fn register_lake_snapshot(
        &self,
        _guard: &WriteGuard<'_>,
        table_id: i64,
        entry: LakeSnapshotEntry,
    ) -> Result<()> {
        let mut lake = self.lake_table(table_id).await?;
        if lake
            .snapshots
            .iter()
            .any(|s| s.snapshot_id == entry.snapshot_id)
        {
            return Ok(());
        }
        lake.snapshots.push(entry);
        self.put_json(&layout::lake_table_node(table_id), lake.to_json()?)
            .await
    }
}

/// The store-relative directory of `table`'s lake table, if its warehouse is a path
/// inside the store (the default) and its catalog keeps tables as directories there.
fn owned_lake_table_dir(table: &FlussTable) -> Option<String> {
    let format = LakeFormat::of(&table.lake_format()?);
    let properties = table.info.get_properties();
    let warehouse = properties.get(&format!("table.datalake.{}.warehouse", format.name()))?;
    let relative = !crate::storage::is_absolute(warehouse);
    let directory_catalog = match format {
        LakeFormat::Paimon => properties
            .get("table.datalake.paimon.metastore")
            .is_none_or(|m| m == "filesystem"),
        LakeFormat::Iceberg => properties
            .get("table.datalake.iceberg.type")
            .is_none_or(|t| t == "hadoop"),
        _ => false,
    };
    if !relative || !directory_catalog {
        return None;
    }
    let dir = lake_table_dir(format, &table.path)?;
    Some(format!("{}/{dir}", warehouse.trim_end_matches('/')))
}

/// Refuses partition keys of a type Fluss does not partition by, in Fluss's words
/// (`TableDescriptorValidation`, `PartitionUtils.PARTITION_KEY_SUPPORTED_TYPES`), and
/// FLOAT and DOUBLE keys, which Fluss names by Java's `Float.toString` (not rendered
/// here, so a partition could not be found again by its name).
fn check_partition_key_types(
    schema: &fluss::metadata::Schema,
    partition_keys: &[String],
) -> Result<()> {
    use fluss::metadata::DataType;
    for key in partition_keys {
        let Some(column) = schema.columns().iter().find(|c| c.name() == key) else {
            continue;
        };
        let data_type = column.data_type();
        if matches!(data_type, DataType::Float(_) | DataType::Double(_)) {
            return Err(Error::unsupported(format!(
                "partition key '{key}' has type {data_type}: Fluss names FLOAT and DOUBLE \
                 partitions by Java's Float.toString, which is not supported here"
            )));
        }
        let named = fluss::record::to_arrow_type(data_type)
            .is_ok_and(|arrow| crate::table::partition_value::names_partitions(&arrow));
        if !named {
            return Err(Error::invalid_input(format!(
                "Currently, partitioned table supported partition key type are [CHAR, STRING, \
                 BOOLEAN, BINARY, BYTES, TINYINT, SMALLINT, INTEGER, DATE, \
                 TIME_WITHOUT_TIME_ZONE, BIGINT, FLOAT, DOUBLE, TIMESTAMP_WITHOUT_TIME_ZONE, \
                 TIMESTAMP_WITH_LOCAL_TIME_ZONE], but got partition key '{key}' with data type \
                 {data_type}."
            )));
        }
    }
    Ok(())
}

/// Refuses an Iceberg lake for a table partitioned by a column that is not STRING, in
/// Fluss's words: its Iceberg tables are partitioned by `identity` of string columns
/// only (`IcebergPartitionSpecUtils`, apache/fluss `fluss-lake/fluss-lake-iceberg`).
fn check_lake_partition_keys(
    properties: &BTreeMap<String, String>,
    schema: &fluss::metadata::Schema,
    partition_keys: &[String],
) -> Result<()> {
    let enabled = properties
        .get("table.datalake.enabled")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let iceberg = properties
        .get("table.datalake.format")
        .is_some_and(|f| f.eq_ignore_ascii_case("iceberg"));
    if !(enabled && iceberg) {
        return Ok(());
    }
    for key in partition_keys {
        let string = schema.columns().iter().any(|c| {
            c.name() == key
                && matches!(
                    c.data_type(),
                    fluss::metadata::DataType::String(_) | fluss::metadata::DataType::Char(_)
                )
        });
        if !string {
            return Err(Error::invalid_input(format!(
                "Partition key only support string type for iceberg currently. Column `{key}` \
                 is not string type."
            )));
        }
    }
    Ok(())
}
