//! [`RealClusterSource`]: a source over a real Fluss cluster ([`RealFluss`]) that
//! also takes writes, so SQL written for the LocalStore (the sqllogictest files) runs
//! unchanged against the real thing.
//!
//! Reads go through the library's [`ClusterSource`], as any user's would. Writes go
//! through the harness, as a Fluss user's would: DDL through Flink's Fluss catalog,
//! rows through the Java client (appends, upserts, partial updates, deletes), and
//! `CALL fluss.tier` runs the real tiering service until the lake covers the table.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::execution::memory_pool::MemoryPool;
use fluss::metadata::{PartitionInfo, TableDescriptor, TableInfo, TablePath};
use fluss_datafusion::lake::LakeLocation;
use fluss_datafusion::lake::tiering::TieringResult;
use fluss_datafusion::log::{ChangelogBatch, LogRange, LogReadOptions};
use fluss_datafusion::source::{
    BucketLocation, BucketOffsets, ClusterOptions, ClusterSource, FlussSource, FlussTable,
    FlussWriter, LookedUp, NewColumn, ReadableSnapshot, WriteKind, WriteResult,
};
use fluss_datafusion::{Error, Result};
use futures::TryStreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use crate::real_fluss::{HarnessError, RealFluss};

/// Reads through a [`ClusterSource`] connected to a real cluster; writes through the
/// cluster's own Java client and Flink catalog (the harness).
pub struct RealClusterSource {
    harness: Arc<Mutex<RealFluss>>,
    cluster: ClusterSource,
}

impl std::fmt::Debug for RealClusterSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealClusterSource")
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

fn harness_error(what: &str, e: HarnessError) -> Error {
    Error::internal(format!("the real Fluss refused {what}: {}", e.0))
}

impl RealClusterSource {
    /// Connects a cluster source to the harness's cluster.
    pub async fn connect(harness: Arc<Mutex<RealFluss>>) -> Result<Self> {
        let bootstrap_servers = harness
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bootstrap_servers()
            .to_string();
        let cluster = ClusterSource::connect(ClusterOptions {
            bootstrap_servers,
            ..Default::default()
        })
        .await?;
        Ok(Self { harness, cluster })
    }

    /// Runs `f` on the harness off the async runtime (its calls block on the JVM).
    async fn with_harness<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut RealFluss) -> std::result::Result<T, HarnessError> + Send + 'static,
        what: String,
    ) -> Result<T> {
        let harness = self.harness.clone();
        tokio::task::spawn_blocking(move || {
            let mut harness = harness.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut harness).map_err(|e| harness_error(&what, e))
        })
        .await
        .map_err(|e| Error::internal("the harness call panicked").with_source(e))?
    }

    async fn flink_sql(&self, sql: String) -> Result<()> {
        let what = sql.clone();
        self.with_harness(move |h| h.sql(&sql), what).await
    }
}

/// Flink DDL creating what `descriptor` describes, in Flink's Fluss catalog: the
/// statement a Flink SQL user would write for the same table.
pub fn flink_create_table(
    path: &TablePath,
    descriptor: &TableDescriptor,
    if_not_exists: bool,
) -> String {
    let mut sql = format!(
        "CREATE TABLE {}`{}`.`{}` (",
        if if_not_exists { "IF NOT EXISTS " } else { "" },
        path.database(),
        path.table()
    );
    let schema = descriptor.schema();
    let columns: Vec<String> = schema
        .columns()
        .iter()
        .map(|c| format!("`{}` {}", c.name(), c.data_type()))
        .collect();
    sql.push_str(&columns.join(", "));
    if let Some(pk) = schema.primary_key() {
        let keys: Vec<String> = pk.column_names().iter().map(|k| format!("`{k}`")).collect();
        let _ = write!(sql, ", PRIMARY KEY ({}) NOT ENFORCED", keys.join(", "));
    }
    sql.push(')');
    if let Some(comment) = descriptor.comment() {
        let _ = write!(sql, " COMMENT '{}'", comment.replace('\'', "''"));
    }
    if descriptor.is_partitioned() {
        let keys: Vec<String> = descriptor
            .partition_keys()
            .iter()
            .map(|k| format!("`{k}`"))
            .collect();
        let _ = write!(sql, " PARTITIONED BY ({})", keys.join(", "));
    }
    let mut options: Vec<(String, String)> = Vec::new();
    if let Some(distribution) = descriptor.table_distribution() {
        if let Some(n) = distribution.bucket_count() {
            options.push(("bucket.num".to_string(), n.to_string()));
        }
        if !distribution.bucket_keys().is_empty() && !descriptor.has_primary_key() {
            options.push((
                "bucket.key".to_string(),
                distribution.bucket_keys().join(","),
            ));
        }
    }
    for (k, v) in descriptor
        .properties()
        .iter()
        .chain(descriptor.custom_properties())
    {
        options.push((k.clone(), v.clone()));
    }
    // Fluss tiers a table once per `table.datalake.freshness` (3 minutes by
    // default); the harness tiers on demand, by freshness, so tables start paused.
    let lake_enabled = options
        .iter()
        .any(|(k, v)| k == "table.datalake.enabled" && v == "true");
    if lake_enabled && !options.iter().any(|(k, _)| k == "table.datalake.freshness") {
        options.push((
            "table.datalake.freshness".to_string(),
            crate::real_fluss::PAUSED_FRESHNESS.to_string(),
        ));
    }
    options.sort();
    if !options.is_empty() {
        let options: Vec<String> = options
            .iter()
            .map(|(k, v)| format!("'{}' = '{}'", k, v.replace('\'', "''")))
            .collect();
        let _ = write!(sql, " WITH ({})", options.join(", "));
    }
    sql
}

/// One cell as the harness's JSON protocol takes it (`tests/real-fluss/README.md`):
/// numbers as JSON numbers, decimals, dates and times as text, timestamps in ISO form,
/// bytes as hex.
fn cell_json(array: &ArrayRef, formatter: &ArrayFormatter, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Boolean => json!(array.as_boolean().value(row)),
        DataType::Int8 => json!(array.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => json!(array.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => json!(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(row)),
        DataType::Float32 => json!(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => json!(array.as_primitive::<Float64Type>().value(row)),
        DataType::Binary | DataType::LargeBinary | DataType::FixedSizeBinary(_) => {
            let bytes: &[u8] = match array.data_type() {
                DataType::Binary => array.as_binary::<i32>().value(row),
                DataType::LargeBinary => array.as_binary::<i64>().value(row),
                _ => array.as_fixed_size_binary().value(row),
            };
            json!(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
        }
        DataType::Timestamp(_, Some(_)) => {
            // Instant.parse wants a `Z` instant
            let text = formatter.value(row).to_string();
            json!(text.replace("+00:00", "Z"))
        }
        _ => json!(formatter.value(row).to_string()),
    }
}

/// The rows of `batch` as JSON arrays, in column order.
fn batch_rows(batch: &RecordBatch) -> Result<Vec<Value>> {
    let options = FormatOptions::default();
    let formatters = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((0..batch.num_rows())
        .map(|row| {
            Value::Array(
                batch
                    .columns()
                    .iter()
                    .zip(&formatters)
                    .map(|(c, f)| cell_json(c, f, row))
                    .collect(),
            )
        })
        .collect())
}

#[async_trait]
impl FlussSource for RealClusterSource {
    fn name(&self) -> String {
        self.cluster.name()
    }

    async fn list_databases(&self) -> Result<Vec<String>> {
        self.cluster.list_databases().await
    }

    async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        self.cluster.list_tables(database).await
    }

    async fn get_table(&self, path: &TablePath) -> Result<FlussTable> {
        self.cluster.get_table(path).await
    }

    async fn list_partitions(&self, table: &FlussTable) -> Result<Vec<PartitionInfo>> {
        self.cluster.list_partitions(table).await
    }

    async fn readable_lake_snapshot(&self, table: &FlussTable) -> Result<Option<ReadableSnapshot>> {
        self.cluster.readable_lake_snapshot(table).await
    }

    async fn lake_snapshot(
        &self,
        table: &FlussTable,
        snapshot_id: i64,
    ) -> Result<Option<ReadableSnapshot>> {
        self.cluster.lake_snapshot(table, snapshot_id).await
    }

    async fn offsets_after(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
        offsets: &[BucketOffsets],
        timestamp_ms: i64,
    ) -> Result<Vec<i64>> {
        self.cluster
            .offsets_after(table, buckets, offsets, timestamp_ms)
            .await
    }

    async fn bucket_offsets(
        &self,
        table: &FlussTable,
        buckets: &[BucketLocation],
    ) -> Result<Vec<BucketOffsets>> {
        self.cluster.bucket_offsets(table, buckets).await
    }

    async fn read_log(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
        range: LogRange,
        options: LogReadOptions,
    ) -> Result<BoxStream<'static, Result<ChangelogBatch>>> {
        self.cluster.read_log(table, bucket, range, options).await
    }

    async fn lake_location(&self, table: &FlussTable) -> Result<LakeLocation> {
        self.cluster.lake_location(table).await
    }

    async fn registered_lake_snapshots(&self, table: &FlussTable) -> Result<Option<Vec<i64>>> {
        self.cluster.registered_lake_snapshots(table).await
    }

    async fn buckets(&self, table: &FlussTable) -> Result<Vec<BucketLocation>> {
        self.cluster.buckets(table).await
    }

    fn writer(&self) -> Option<&dyn FlussWriter> {
        Some(self)
    }

    fn serves_key_lookups(&self, table: &FlussTable) -> bool {
        self.cluster.serves_key_lookups(table)
    }

    fn serves_kv_scans(&self, table: &FlussTable) -> bool {
        self.cluster.serves_kv_scans(table)
    }

    async fn scan_kv(
        &self,
        table: &FlussTable,
        bucket: &BucketLocation,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        self.cluster.scan_kv(table, bucket).await
    }

    async fn prefetch_tables(&self, paths: &[TablePath]) -> Result<HashMap<TablePath, TableInfo>> {
        self.cluster.prefetch_tables(paths).await
    }

    fn last_seen_tables(&self, paths: &[TablePath]) -> Option<HashMap<TablePath, TableInfo>> {
        self.cluster.last_seen_tables(paths)
    }

    fn last_seen_age(&self, paths: &[TablePath]) -> Option<std::time::Duration> {
        self.cluster.last_seen_age(paths)
    }

    async fn lookup_keys(&self, table: &FlussTable, keys: &RecordBatch) -> Result<LookedUp> {
        self.cluster.lookup_keys(table, keys).await
    }
}

#[async_trait]
impl FlussWriter for RealClusterSource {
    async fn create_database(
        &self,
        name: &str,
        comment: Option<&str>,
        if_not_exists: bool,
    ) -> Result<()> {
        let mut sql = format!(
            "CREATE DATABASE {}`{name}`",
            if if_not_exists { "IF NOT EXISTS " } else { "" }
        );
        if let Some(comment) = comment {
            let _ = write!(sql, " COMMENT '{}'", comment.replace('\'', "''"));
        }
        self.flink_sql(sql).await
    }

    async fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
        self.flink_sql(format!(
            "DROP DATABASE {}`{name}` {}",
            if if_exists { "IF EXISTS " } else { "" },
            if cascade { "CASCADE" } else { "RESTRICT" }
        ))
        .await
    }

    async fn create_table(
        &self,
        path: &TablePath,
        descriptor: &TableDescriptor,
        if_not_exists: bool,
    ) -> Result<()> {
        self.flink_sql(flink_create_table(path, descriptor, if_not_exists))
            .await
    }

    async fn create_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_not_exists: bool,
    ) -> Result<()> {
        FlussWriter::create_partition(&self.cluster, path, spec, if_not_exists).await
    }

    async fn drop_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_exists: bool,
    ) -> Result<()> {
        FlussWriter::drop_partition(&self.cluster, path, spec, if_exists).await
    }

    async fn drop_table(&self, path: &TablePath, if_exists: bool) -> Result<()> {
        self.flink_sql(format!(
            "DROP TABLE {}`{}`.`{}`",
            if if_exists { "IF EXISTS " } else { "" },
            path.database(),
            path.table()
        ))
        .await
    }

    async fn write(
        &self,
        path: &TablePath,
        kind: WriteKind,
        rows: BoxStream<'_, Result<RecordBatch>>,
        _memory: Option<&Arc<dyn MemoryPool>>,
    ) -> Result<WriteResult> {
        let batches: Vec<RecordBatch> = rows.try_collect().await?;
        let table = self.cluster.get_table(path).await?;
        let table_columns: Vec<String> = table
            .info
            .get_schema()
            .column_names()
            .iter()
            .map(|c| c.to_string())
            .collect();
        let op = match kind {
            WriteKind::Append => "append",
            WriteKind::Upsert | WriteKind::PartialUpdate => "upsert",
            WriteKind::Delete => "delete",
        };
        let mut result = WriteResult {
            rows: 0,
            records: 0,
            batches: 0,
        };
        for batch in batches.into_iter().filter(|b| b.num_rows() > 0) {
            let columns: Vec<String> = batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            // the batch names its columns: all of them (in table order) is a full row
            let named = (columns != table_columns).then_some(columns);
            let rows = batch_rows(&batch)?;
            result.rows += rows.len();
            result.records += rows.len();
            result.batches += 1;
            let table_name = format!("{}.{}", path.database(), path.table());
            self.with_harness(
                move |h| {
                    let columns: Option<Vec<&str>> = named
                        .as_ref()
                        .map(|c| c.iter().map(String::as_str).collect());
                    h.write(&table_name, op, columns.as_deref(), rows)
                },
                format!("a write to {path}"),
            )
            .await?;
        }
        Ok(result)
    }

    /// Through Flink's catalog, as a Flink SQL user alters a Fluss table.
    async fn alter_table_options(
        &self,
        path: &TablePath,
        set: &[(String, String)],
        reset: &[String],
    ) -> Result<()> {
        let quote = |v: &str| format!("'{}'", v.replace('\'', "''"));
        let table = format!("`{}`.`{}`", path.database(), path.table());
        if !set.is_empty() {
            let options: Vec<String> = set
                .iter()
                .map(|(k, v)| format!("{} = {}", quote(k), quote(v)))
                .collect();
            self.flink_sql(format!("ALTER TABLE {table} SET ({})", options.join(", ")))
                .await?;
        }
        if !reset.is_empty() {
            let keys: Vec<String> = reset.iter().map(|k| quote(k)).collect();
            self.flink_sql(format!("ALTER TABLE {table} RESET ({})", keys.join(", ")))
                .await?;
        }
        Ok(())
    }

    /// Through Flink's catalog: `ALTER TABLE t ADD (c TYPE [COMMENT '...'], ...)`.
    async fn add_columns(&self, path: &TablePath, columns: &[NewColumn]) -> Result<()> {
        let quote = |v: &str| format!("'{}'", v.replace('\'', "''"));
        let listed: Vec<String> = columns
            .iter()
            .map(|c| {
                let comment = c
                    .comment
                    .as_deref()
                    .map(|t| format!(" COMMENT {}", quote(t)))
                    .unwrap_or_default();
                format!("`{}` {}{comment}", c.name, c.data_type)
            })
            .collect();
        self.flink_sql(format!(
            "ALTER TABLE `{}`.`{}` ADD ({})",
            path.database(),
            path.table(),
            listed.join(", ")
        ))
        .await
    }

    async fn tier(&self, path: &TablePath) -> Result<TieringResult> {
        let table_name = format!("{}.{}", path.database(), path.table());
        let key = table_name.clone();
        let snapshots = self
            .with_harness(
                move |h| h.tier(&[table_name.as_str()]),
                format!("tiering {path}"),
            )
            .await?;
        // The tiering service does not report what it tiered: only the snapshot id is
        // known, the counts stay 0.
        Ok(TieringResult {
            snapshot_id: snapshots[&key].as_i64(),
            records: 0,
            buckets: 0,
            recovered: false,
        })
    }
}
