//! [`FlussWriter`]: the write side of a source (DDL, DML, tiering), which SQL
//! sessions and embedding apps use without naming a concrete store.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{BooleanArray, RecordBatch};
use datafusion::execution::memory_pool::MemoryPool;
use fluss::metadata::{Column, DataType, Schema, TableDescriptor, TablePath};
use futures::stream::BoxStream;

use crate::error::Result;
use crate::lake::tiering::TieringResult;

/// How a write statement applies its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Append rows to a log table.
    Append,
    /// Upsert full rows into a primary-key table.
    Upsert,
    /// Upsert the columns each batch holds (it must hold the primary key); the other
    /// columns keep their values (Fluss partial update).
    PartialUpdate,
    /// Delete the keys each batch holds from a primary-key table.
    Delete,
}

/// What a write did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteResult {
    /// Input rows accepted.
    pub rows: usize,
    /// Changelog records written (an update writes two).
    pub records: usize,
    /// Log batches appended.
    pub batches: usize,
}

/// `source`'s writer, or an error naming the statement (`what`) that needs one.
pub(crate) fn writer_of<'a>(
    source: &'a dyn super::FlussSource,
    what: &str,
) -> Result<&'a dyn FlussWriter> {
    source.writer().ok_or_else(|| {
        crate::error::Error::unsupported(format!(
            "{what} writes, and {} is read-only (statements that write need a source that \
             takes writes)",
            source.name()
        ))
    })
}

/// Refuses a write `kind` the table cannot take: appends to a primary-key table,
/// upserts and deletes to a log table.
pub(crate) fn check_write_kind(table: &super::FlussTable, kind: WriteKind) -> Result<()> {
    let path = &table.path;
    match (kind, table.info.has_primary_key()) {
        (WriteKind::Append, true) => Err(crate::error::Error::invalid_input(format!(
            "table '{path}' has a primary key: use upsert/delete instead of append"
        ))),
        (WriteKind::Append, false) | (_, true) => Ok(()),
        (_, false) => Err(crate::error::Error::invalid_input(format!(
            "table '{path}' has no primary key: upsert and delete need one (use append)"
        ))),
    }
}

/// The `table.*` options an ALTER TABLE may change, as Fluss's
/// `FlussConfigUtils.ALTERABLE_TABLE_OPTIONS` lists them (apache/fluss,
/// `fluss-common/.../config/FlussConfigUtils.java`): enabling or disabling the lake,
/// its freshness, and how many log segments stay local once tiered.
pub const ALTERABLE_TABLE_OPTIONS: &[&str] = &[
    "table.datalake.enabled",
    "table.datalake.freshness",
    "table.tiered-log.local-segments",
];

/// Refuses an ALTER TABLE that sets or resets options Fluss does not let it change.
pub(crate) fn check_alterable(
    path: &TablePath,
    set: &[(String, String)],
    reset: &[String],
) -> Result<()> {
    let refused: Vec<&str> = set
        .iter()
        .map(|(k, _)| k.as_str())
        .chain(reset.iter().map(String::as_str))
        .filter(|k| k.starts_with("table.") && !ALTERABLE_TABLE_OPTIONS.contains(k))
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(crate::error::Error::invalid_input(format!(
        "ALTER TABLE '{path}' cannot change {} (Fluss lets an ALTER TABLE change {} and \
         options outside 'table.*')",
        refused.join(", "),
        ALTERABLE_TABLE_OPTIONS.join(", ")
    )))
}

/// The option that sets a table's bucket count.
const BUCKET_NUM: &str = "bucket.num";

/// `set` without a `bucket.num` that keeps the table's bucket count; any other change
/// of the bucket count is refused, never stored as a user option that changes nothing.
/// Fluss 1.0 lets `SET ('bucket.num' = 'N')` give a partitioned table's new partitions
/// N buckets (old ones keep theirs; `MetadataManager.validateBucketNumRescale`, whose
/// refusal of non-partitioned tables and of RESET is worded here as there); this
/// crate does not plan partitions of differing bucket counts yet, and fluss-rs 1.0
/// cannot send the change (`AlterTableRequest.modify_bucket_count`).
pub(crate) fn without_bucket_count(
    path: &TablePath,
    info: &fluss::metadata::TableInfo,
    set: &[(String, String)],
    reset: &[String],
) -> Result<Vec<(String, String)>> {
    use crate::error::Error;
    if reset.iter().any(|k| k == BUCKET_NUM) {
        return Err(Error::invalid_input(format!(
            "Cannot reset '{BUCKET_NUM}' of table '{path}': a table always has a bucket \
             count; SET ('{BUCKET_NUM}' = '<bucket count>') changes it"
        )));
    }
    let current = info.get_num_buckets();
    let mut kept = Vec::with_capacity(set.len());
    for (key, value) in set {
        if key != BUCKET_NUM {
            kept.push((key.clone(), value.clone()));
            continue;
        }
        let count: i32 = value.trim().parse().map_err(|_| {
            Error::invalid_input(format!("Invalid value for '{BUCKET_NUM}': {value}"))
        })?;
        if count == current {
            continue;
        }
        if !info.is_partitioned() {
            return Err(Error::invalid_input(format!(
                "Cannot alter '{BUCKET_NUM}' on non-partitioned table {path}. \
                 Non-partitioned table rescale is not yet supported."
            )));
        }
        return Err(Error::unsupported(format!(
            "changing the bucket count of partitioned table {path} from {current} to {count} \
             (Fluss 1.0: partitions created from then on get {count} buckets, existing ones \
             keep theirs) is not supported yet; the table keeps {current} buckets"
        )));
    }
    Ok(kept)
}

/// A column `ALTER TABLE ... ADD` appends to a table.
#[derive(Debug, Clone, PartialEq)]
pub struct NewColumn {
    /// Its name.
    pub name: String,
    /// Its type; Fluss adds nullable columns only.
    pub data_type: DataType,
    /// Its comment.
    pub comment: Option<String>,
}

/// `schema` with `columns` appended, by Fluss's rules and in its words
/// (`SchemaUpdate.addColumn`, apache/fluss `fluss-server/.../coordinator/SchemaUpdate.java`):
/// a new name, nullable, at the end. Each new column gets the next field id after the
/// schema's highest, as Fluss's `Schema.Builder.fromSchema(...).column(...)` gives it,
/// so the lake formats that map by field id keep finding old columns.
pub(crate) fn schema_with_columns(
    path: &TablePath,
    schema: &Schema,
    columns: &[NewColumn],
) -> Result<Schema> {
    let invalid = |message: String| {
        crate::error::Error::invalid_input(message).with_context("table", path.to_string())
    };
    if columns.is_empty() {
        return Err(invalid("ALTER TABLE ... ADD names no column".to_string()));
    }
    let mut all: Vec<Column> = schema.columns().to_vec();
    let mut next_id = schema.highest_field_id();
    for column in columns {
        if all.iter().any(|c| c.name() == column.name) {
            return Err(invalid(format!("Column {} already exists.", column.name)));
        }
        if !column.data_type.is_nullable() {
            return Err(invalid(format!("Column {} must be nullable.", column.name)));
        }
        next_id += 1;
        let mut added = Column::new(&column.name, column.data_type.clone()).with_id(next_id);
        if let Some(comment) = &column.comment {
            added = added.with_comment(comment);
        }
        all.push(added);
    }
    let mut builder = Schema::builder().with_columns(all);
    if let Some(pk) = schema.primary_key() {
        builder = builder
            .primary_key_named(pk.constraint_name(), pk.column_names().to_vec())
            .map_err(|e| invalid(e.to_string()))?;
    }
    for name in schema.auto_increment_col_names() {
        builder = builder
            .enable_auto_increment(name.as_str())
            .map_err(|e| invalid(e.to_string()))?;
    }
    builder.build().map_err(|e| invalid(e.to_string()))
}

/// What a source that takes writes offers.
#[async_trait]
pub trait FlussWriter: Send + Sync {
    /// Creates a database.
    async fn create_database(
        &self,
        name: &str,
        comment: Option<&str>,
        if_not_exists: bool,
    ) -> Result<()>;

    /// Drops a database; with `cascade` its tables too.
    async fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()>;

    /// Creates a table.
    async fn create_table(
        &self,
        path: &TablePath,
        descriptor: &TableDescriptor,
        if_not_exists: bool,
    ) -> Result<()>;

    /// Drops a table.
    async fn drop_table(&self, path: &TablePath, if_exists: bool) -> Result<()>;

    /// Writes a stream of batches as one all-or-nothing statement, accounting its
    /// memory in `memory` when given.
    async fn write(
        &self,
        path: &TablePath,
        kind: WriteKind,
        rows: BoxStream<'_, Result<RecordBatch>>,
        memory: Option<&Arc<dyn MemoryPool>>,
    ) -> Result<WriteResult>;

    /// Tiers the table's log into its lake (one lake snapshot).
    async fn tier(&self, path: &TablePath) -> Result<TieringResult>;

    /// `ALTER TABLE path SET ('k' = 'v', ...)` / `RESET ('k', ...)`: changes the
    /// table's options Fluss lets users change ([`ALTERABLE_TABLE_OPTIONS`]; options
    /// outside `table.*` are the user's own and always change). Writers that cannot
    /// refuse it.
    async fn alter_table_options(
        &self,
        path: &TablePath,
        set: &[(String, String)],
        reset: &[String],
    ) -> Result<()> {
        let _ = (set, reset);
        Err(crate::error::Error::unsupported(format!(
            "ALTER TABLE '{path}' is not supported here"
        )))
    }

    /// `ALTER TABLE path ADD ...`: appends nullable columns (`schema_with_columns`'s
    /// rules), evolving the table's lake first when it has one, as Fluss's coordinator
    /// does. Writers that cannot refuse it.
    async fn add_columns(&self, path: &TablePath, columns: &[NewColumn]) -> Result<()> {
        let _ = columns;
        Err(crate::error::Error::unsupported(format!(
            "ALTER TABLE '{path}' ADD is not supported here"
        )))
    }

    /// `ALTER TABLE path ADD PARTITION (k = 'v', ...)`: creates a partition of a
    /// partitioned table (`spec`: each partition key's value as Fluss spells it in
    /// partition names). Writers that cannot refuse it.
    async fn create_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_not_exists: bool,
    ) -> Result<()> {
        let _ = (spec, if_not_exists);
        Err(crate::error::Error::unsupported(format!(
            "ALTER TABLE '{path}' ADD PARTITION is not supported here"
        )))
    }

    /// `ALTER TABLE path DROP PARTITION (k = 'v', ...)`: drops a partition; its log
    /// goes, what was tiered of it stays in the lake (read as a lake-only partition).
    /// Writers that cannot refuse it.
    async fn drop_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_exists: bool,
    ) -> Result<()> {
        let _ = (spec, if_exists);
        Err(crate::error::Error::unsupported(format!(
            "ALTER TABLE '{path}' DROP PARTITION is not supported here"
        )))
    }

    /// Applies upserts and deletes to a primary-key table as one all-or-nothing
    /// statement, in row order: `rows` are full rows, and a row whose `deletes` flag is
    /// set deletes its key instead (`MERGE INTO`). Writers that cannot refuse it.
    async fn write_changes(
        &self,
        path: &TablePath,
        rows: &RecordBatch,
        deletes: &BooleanArray,
    ) -> Result<WriteResult> {
        let _ = (rows, deletes);
        Err(crate::error::Error::unsupported(format!(
            "writing upserts and deletes together into '{path}' is not supported here"
        )))
    }
}
