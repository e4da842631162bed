//! A LocalStore table's partitions: created on first write or by `ALTER TABLE ... ADD
//! PARTITION`, dropped by `DROP PARTITION` or by auto-partitioning's retention. A
//! dropped partition's log goes; what was tiered of it stays in the lake, where union
//! reads still find it (a lake-only partition). A partition created again later gets
//! a new id, so nothing of the old one's log offsets is taken for it.

use datafusion::arrow::datatypes::DataType as ArrowType;
use fluss::metadata::TablePath;

use super::LocalStore;
use super::auto_partition::AutoPartitioning;
use super::write::WriteGuard;
use crate::error::{Error, ErrorKind, Result};
use crate::source::layout::{self, validate_partition_name};
use crate::source::metadata::PartitionRegistration;
use crate::source::{FlussSource, FlussTable};
use crate::table::partition_value;

impl LocalStore {
    /// The id of partition `name`, registering it on first use (an auto-partitioned
    /// table refuses a partition retention would drop, as Fluss's coordinator does).
    pub(super) async fn ensure_partition(
        &self,
        guard: &WriteGuard<'_>,
        table: &FlussTable,
        name: &str,
    ) -> Result<i64> {
        validate_partition_name(name)?;
        let node = layout::partition_node(&table.path, name);
        if let Some(bytes) = self.storage.read_optional(&node).await? {
            let reg: PartitionRegistration = serde_json::from_slice(&bytes)
                .map_err(|e| Error::from(e).with_context("file", &node))?;
            check_bucket_count(table, name, &reg, &node)?;
            return Ok(reg.partition_id);
        }
        if let Some(auto) = AutoPartitioning::of(table)? {
            auto.check_new(self.options.clock.now(), name)
                .map_err(|e| e.with_context("table", table.path.to_string()))?;
        }
        let partition_id = self.next_id(guard, &layout::partition_seqid_node()).await?;
        // stamped with its bucket count, as Fluss 1.0's coordinator stamps every new
        // partition (`registerPartitionAssignmentAndMetadata`)
        let reg = PartitionRegistration {
            version: 2,
            table_id: table.table_id(),
            partition_id,
            remote_data_dir: None,
            bucket_count: Some(table.info.get_num_buckets()),
        };
        self.put_json(&node, serde_json::to_vec(&reg)?).await?;
        Ok(partition_id)
    }

    /// Creates the partition `spec` (partition key = value, each value as Fluss spells
    /// it in partition names) of a partitioned table: `ALTER TABLE ... ADD PARTITION`.
    pub async fn create_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_not_exists: bool,
    ) -> Result<()> {
        let table = self.get_table(path).await?;
        let name = partition_name_of(&table, spec)?;
        let guard = self.write_guard().await?;
        let exists = self
            .storage
            .read_optional(&layout::partition_node(path, &name))
            .await?
            .is_some();
        if exists {
            if if_not_exists {
                return Ok(());
            }
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("Partition '{name}' already exists in table {path}."),
            ));
        }
        self.ensure_partition(&guard, &table, &name).await?;
        Ok(())
    }

    /// Drops the partition `spec` of a partitioned table (`ALTER TABLE ... DROP
    /// PARTITION`): its log goes, what was tiered of it stays in the lake.
    pub async fn drop_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_exists: bool,
    ) -> Result<()> {
        let table = self.get_table(path).await?;
        let name = partition_name_of(&table, spec)?;
        let mut guard = self.write_guard().await?;
        if !self.remove_partition(&mut guard, &table, &name).await? && !if_exists {
            return Err(Error::not_found(format!(
                "Partition '{name}' does not exist in table {path}."
            )));
        }
        Ok(())
    }

    /// Runs `table`'s auto-partitioning at the store's clock: drops the partitions
    /// retention no longer keeps and creates those to pre-create. Nothing for a table
    /// without it.
    pub(super) async fn maintain_partitions(
        &self,
        guard: &mut WriteGuard<'_>,
        table: &FlussTable,
    ) -> Result<()> {
        let Some(auto) = AutoPartitioning::of(table)? else {
            return Ok(());
        };
        let now = self.options.clock.now();
        let existing: Vec<String> = self
            .list_partitions(table)
            .await?
            .iter()
            .map(|p| p.get_partition_name())
            .collect();
        for name in auto.expired(now, &existing) {
            self.remove_partition(guard, table, name).await?;
        }
        for name in auto.to_precreate(now) {
            if !existing.contains(&name) {
                self.ensure_partition(guard, table, &name).await?;
            }
        }
        Ok(())
    }

    /// Removes partition `name`'s registration and log; `false` when there is none.
    async fn remove_partition(
        &self,
        guard: &mut WriteGuard<'_>,
        table: &FlussTable,
        name: &str,
    ) -> Result<bool> {
        validate_partition_name(name)?;
        let node = layout::partition_node(&table.path, name);
        let Some(bytes) = self.storage.read_optional(&node).await? else {
            return Ok(false);
        };
        let reg: PartitionRegistration = serde_json::from_slice(&bytes)
            .map_err(|e| Error::from(e).with_context("file", &node))?;
        // the registration first: a partition half removed is one no reader lists
        self.storage.delete(&node).await?;
        self.forget_committed(guard, table.table_id(), Some(reg.partition_id))
            .await?;
        let data =
            layout::partition_data_dir(&table.path, table.table_id(), name, reg.partition_id);
        self.storage.delete_dir(&data).await?;
        guard.forget_table(table.table_id());
        Ok(true)
    }
}

/// The partition name a spec gives (values in partition-key order, joined by `$`),
/// each value checked against its column's type.
fn partition_name_of(table: &FlussTable, spec: &[(String, String)]) -> Result<String> {
    let path = table.path.to_string();
    let keys = table.info.get_partition_keys();
    if keys.is_empty() {
        return Err(Error::invalid_input(format!(
            "Table {path} is not a partitioned table."
        )));
    }
    let schema = table.schemas.latest()?.arrow.clone();
    let mut values = Vec::with_capacity(keys.len());
    for key in keys.iter() {
        let Some((_, value)) = spec.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)) else {
            return Err(Error::invalid_input(format!(
                "the partition spec names no value of partition key '{key}' (table {path} \
                 is partitioned by {})",
                keys.join(", ")
            )));
        };
        let data_type = schema
            .field_with_name(key)
            .map(|f| f.data_type().clone())
            .unwrap_or(ArrowType::Utf8);
        if partition_value::parse(value, &data_type).is_none() {
            return Err(Error::invalid_input(format!(
                "'{value}' is no {data_type} partition value of '{key}' as Fluss names \
                 partitions (timestamps as 2024-05-01-10-30-00_, dates as 2024-05-01)"
            )));
        }
        values.push(value.clone());
    }
    partition_value::check_spec_keys(&path, keys, spec)?;
    let name = values.join("$");
    validate_partition_name(&name)?;
    Ok(name)
}

/// Refuses a partition whose own bucket count (Fluss 1.0 records one per partition)
/// differs from its table's: after Fluss 1.0's `ALTER TABLE ... SET ('bucket.num')`
/// old partitions keep their count and new ones get the new one, and planning such a
/// partition with the table's count would read buckets it does not have and miss
/// those it has.
pub(super) fn check_bucket_count(
    table: &FlussTable,
    name: &str,
    reg: &PartitionRegistration,
    file: &str,
) -> Result<()> {
    let table_count = table.info.get_num_buckets();
    match reg.bucket_count {
        Some(count) if count != table_count => Err(Error::unsupported(format!(
            "partition '{name}' of table {} has {count} buckets and the table {table_count} \
             (Fluss 1.0 changed the table's bucket count after the partition was created); \
             partitions with bucket counts of their own are not read yet, and reading it \
             with the table's count would miss rows",
            table.path
        ))
        .with_context("table", table.path.to_string())
        .with_context("file", file)),
        _ => Ok(()),
    }
}
