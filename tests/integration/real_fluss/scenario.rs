//! The scenario matrix: tables, what is written to them and when they are tiered, and
//! the comparisons of every read.

use std::sync::Arc;

use std::collections::HashMap;

use fluss_datafusion::source::{ClusterOptions, ClusterSource, LocalStore, LocalStoreOptions};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::real_fluss::RealFluss;
use serde_json::Value;

use super::canonical::{self, Rows, sorted};
use super::data::{
    ADDED_COLUMN, Column, Kind, Model, Partitioning, VALUE_COLUMNS, json_value, values,
};

/// When a table's rows reach the lake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tiering {
    /// Created and written after the last tiering.
    Never,
    /// The first rows tiered, the later ones in the log tail.
    Tail,
    /// Every row tiered.
    Full,
}

/// What is special about a table beyond the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    None,
    /// A log table with a bucket key (a bucket-aware lake table).
    BucketKey,
    /// Four buckets, three rows: buckets without lake rows, without log, without both.
    Sparse,
    /// ALTER TABLE … ADD COLUMN after tiering; the tail holds both schemas.
    AddColumn,
    /// A partition dropped from Fluss after tiering: read from the lake only.
    ExpiredPartition,
    /// Auto-partitioned by day (STRING `p`, Fluss names `yyyyMMdd`).
    AutoPartition,
    /// A delete of a key that does not exist in the tail: Fluss logs an empty batch.
    EmptyBatch,
}

struct Table {
    name: String,
    /// The lake format: `paimon` or `iceberg`.
    format: String,
    primary_key: bool,
    partitioning: Partitioning,
    /// The partition values (canonical text), when partitioned.
    partitions: [String; 2],
    tiering: Tiering,
    special: Special,
    columns: Vec<Column>,
    model: Model,
    /// Why Flink's union read is not the oracle for this table, if it is not.
    flink_not_oracle: Option<&'static str>,
}

impl Table {
    fn new(
        format: &str,
        primary_key: bool,
        partitioning: Partitioning,
        tiering: Tiering,
        special: Special,
    ) -> Self {
        let kind = if primary_key { "pk" } else { "log" };
        let name = match special {
            Special::None => format!(
                "{kind}_{}_{}",
                partitioning.label(),
                format!("{tiering:?}").to_lowercase()
            ),
            other => format!("{kind}_{}", format!("{other:?}").to_lowercase()),
        };
        let mut columns = vec![Column {
            name: "id",
            sql_type: if primary_key { "INT NOT NULL" } else { "INT" },
            kind: Kind::Int,
        }];
        columns.extend(VALUE_COLUMNS.iter().cloned());
        columns.extend(partitioning.column());
        let partitions = if special == Special::AutoPartition {
            let today = chrono::Utc::now().date_naive();
            [today, today + chrono::Duration::days(1)].map(|d| d.format("%Y%m%d").to_string())
        } else {
            partitioning.values().map(str::to_string)
        };
        let flink_not_oracle = if primary_key && format == "iceberg" {
            Some("Flink cannot batch-read Iceberg primary-key tables (apache/fluss #3048)")
        } else if tiering == Tiering::Never {
            Some(
                "Fluss 0.9.1's Flink batch reader refuses a lake-enabled table without a lake \
                 snapshot (FlinkSourceEnumerator.startInBatchMode: 'Batch mode can only be \
                 supported if one lake snapshot exists'; gone upstream)",
            )
        } else if primary_key && special == Special::AddColumn {
            Some(
                "Fluss 0.9.1's server-side projection fails on log batches older than the \
                 projected schema (INVALID_COLUMN_PROJECTION, FileLogProjection)",
            )
        } else if special == Special::EmptyBatch {
            Some(
                "Fluss 0.9.1's log scanner never gets past an empty batch at the end of a \
                 bucket (fixed upstream by apache/fluss #3242)",
            )
        } else if format == "paimon"
            && matches!(
                partitioning,
                Partitioning::Int
                    | Partitioning::Date
                    | Partitioning::Bool
                    | Partitioning::Timestamp
            )
        {
            Some(
                "Fluss 0.9.1's Flink reader names Paimon lake partitions by getString \
                 (PaimonSplit.partition; fixed upstream in 8cd8d1628)",
            )
        } else {
            None
        };
        Self {
            name,
            format: format.to_string(),
            primary_key,
            partitioning,
            partitions,
            tiering,
            special,
            columns,
            model: Model::new(primary_key),
            flink_not_oracle,
        }
    }

    fn has_bucket_key(&self) -> bool {
        self.primary_key || matches!(self.special, Special::BucketKey | Special::Sparse)
    }

    fn path(&self) -> String {
        format!("db.{}", self.name)
    }

    fn create_sql(&self) -> String {
        let mut parts: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("`{}` {}", c.name, c.sql_type))
            .collect();
        let partitioned = self.partitioning != Partitioning::None;
        if self.primary_key {
            parts.push(if partitioned {
                "PRIMARY KEY (id, p) NOT ENFORCED".to_string()
            } else {
                "PRIMARY KEY (id) NOT ENFORCED".to_string()
            });
        }
        let buckets = if self.special == Special::Sparse {
            4
        } else {
            3
        };
        let mut options = vec![
            format!("'bucket.num' = '{buckets}'"),
            "'table.datalake.enabled' = 'true'".to_string(),
            format!(
                "'table.datalake.freshness' = '{}'",
                fluss_test_support::real_fluss::PAUSED_FRESHNESS
            ),
        ];
        if !self.primary_key && self.has_bucket_key() {
            options.push("'bucket.key' = 'id'".to_string());
        }
        if self.special == Special::AutoPartition {
            options.push("'table.auto-partition.enabled' = 'true'".to_string());
            options.push("'table.auto-partition.time-unit' = 'DAY'".to_string());
        }
        format!(
            "CREATE TABLE fc.db.{} ({}){} WITH ({})",
            self.name,
            parts.join(", "),
            if partitioned {
                " PARTITIONED BY (p)"
            } else {
                ""
            },
            options.join(", ")
        )
    }

    fn partition_of(&self, id: i32) -> String {
        if self.partitioning == Partitioning::None {
            String::new()
        } else {
            self.partitions[(id as usize) % 2].clone()
        }
    }

    /// The full row of `id` in `version` (canonical text, table column order).
    fn row(&self, id: i32, version: i32) -> Vec<Option<String>> {
        let mut row = vec![Some(id.to_string())];
        row.extend(values(id, version));
        if self.partitioning != Partitioning::None {
            row.push(Some(self.partition_of(id)));
        }
        if self.columns.iter().any(|c| c.name == ADDED_COLUMN.name) {
            row.push(Some(format!("e{id}v{version}")));
        }
        row
    }

    fn json_row(&self, row: &[Option<String>], columns: &[&Column]) -> Value {
        Value::Array(
            columns
                .iter()
                .zip(row)
                .map(|(c, v)| json_value(c.kind, v))
                .collect(),
        )
    }

    fn key_columns(&self) -> Vec<&Column> {
        self.columns
            .iter()
            .filter(|c| {
                c.name == "id" || (c.name == "p" && self.partitioning != Partitioning::None)
            })
            .collect()
    }
}

/// Writes through the harness and keeps each table's model in step.
struct Writer<'a> {
    fluss: &'a mut RealFluss,
}

impl Writer<'_> {
    fn append(&mut self, t: &mut Table, ids: impl IntoIterator<Item = i32>, version: i32) {
        let ids: Vec<i32> = ids.into_iter().collect();
        let rows: Vec<_> = ids.iter().map(|&id| t.row(id, version)).collect();
        let all: Vec<&Column> = t.columns.iter().collect();
        let json = rows.iter().map(|r| t.json_row(r, &all)).collect();
        self.fluss
            .write(&t.path(), "append", None, json)
            .unwrap_or_else(|e| panic!("append to {}: {e}", t.name));
        for (id, r) in ids.into_iter().zip(rows) {
            t.model.append(t.partition_of(id), r);
        }
    }

    fn upsert(&mut self, t: &mut Table, ids: impl IntoIterator<Item = i32>, version: i32) {
        let ids: Vec<i32> = ids.into_iter().collect();
        let rows: Vec<_> = ids.iter().map(|&id| t.row(id, version)).collect();
        let all: Vec<&Column> = t.columns.iter().collect();
        let json = rows.iter().map(|r| t.json_row(r, &all)).collect();
        self.fluss
            .write(&t.path(), "upsert", None, json)
            .unwrap_or_else(|e| panic!("upsert into {}: {e}", t.name));
        for (id, r) in ids.into_iter().zip(rows) {
            let key = (id, t.partition_of(id));
            t.model.upsert(key, r);
        }
    }

    fn delete(&mut self, t: &mut Table, ids: impl IntoIterator<Item = i32>) {
        let ids: Vec<i32> = ids.into_iter().collect();
        let keys = t.key_columns();
        let names: Vec<&str> = keys.iter().map(|c| c.name).collect();
        let json = ids
            .iter()
            .map(|&id| {
                let row = [Some(id.to_string()), Some(t.partition_of(id))];
                t.json_row(&row[..keys.len()], &keys)
            })
            .collect();
        self.fluss
            .write(&t.path(), "delete", Some(&names), json)
            .unwrap_or_else(|e| panic!("delete from {}: {e}", t.name));
        for id in ids {
            t.model.delete(&(id, t.partition_of(id)));
        }
    }

    /// A partial update of `score` (with the key columns) to `1000 + id`.
    fn update_score(&mut self, t: &mut Table, ids: impl IntoIterator<Item = i32>) {
        let mut cols = t.key_columns();
        let score = t.columns.iter().find(|c| c.name == "score").expect("score");
        cols.push(score);
        let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
        let positions: Vec<usize> = names
            .iter()
            .map(|n| t.columns.iter().position(|c| c.name == *n).expect("column"))
            .collect();
        let ids: Vec<i32> = ids.into_iter().collect();
        let rows: Vec<Vec<Option<String>>> = ids
            .iter()
            .map(|&id| {
                let mut r = vec![Some(id.to_string())];
                if t.partitioning != Partitioning::None {
                    r.push(Some(t.partition_of(id)));
                }
                r.push(Some((1000 + id).to_string()));
                r
            })
            .collect();
        let json = rows.iter().map(|r| t.json_row(r, &cols)).collect();
        self.fluss
            .write(&t.path(), "upsert", Some(&names), json)
            .unwrap_or_else(|e| panic!("partial update of {}: {e}", t.name));
        let width = t.columns.len();
        for (id, r) in ids.into_iter().zip(rows) {
            t.model
                .partial_update((id, t.partition_of(id)), width, &positions, &r);
        }
    }

    /// The first rows of a table (version 0).
    fn first(&mut self, t: &mut Table) {
        let ids: Vec<i32> = match t.special {
            Special::Sparse => vec![0],
            _ => (0..10).collect(),
        };
        if t.primary_key {
            self.upsert(t, ids, 0);
        } else if t.has_bucket_key() {
            self.append(t, ids, 0);
        } else {
            // Without a bucket key the client puts a whole batch in one bucket (the
            // next batch in another): one row per batch, then more until every bucket
            // has rows, so that no bucket is left without lake data and without log
            // (Fluss 0.9.1's Flink reader waits forever on one, apache/fluss #2958).
            for id in ids {
                self.append(t, [id], 0);
            }
            self.fill_empty_buckets(t);
        }
    }

    /// Appends rows (ids from 1000, one per batch) into partitions with empty buckets
    /// until every bucket has rows.
    fn fill_empty_buckets(&mut self, t: &mut Table) {
        let mut next = 1000;
        for _ in 0..40 {
            let reply = self
                .fluss
                .call(serde_json::json!({"cmd": "buckets", "table": t.path()}))
                .unwrap_or_else(|e| panic!("buckets of {}: {e}", t.name));
            let empty = reply["buckets"].as_array().and_then(|buckets| {
                buckets
                    .iter()
                    .map(|b| (b, b["partition"].as_str().unwrap_or("").to_string()))
                    .find(|(b, p)| {
                        // partitions the table's rows can reach (an auto-partitioned
                        // table may have created more)
                        b["end_offset"] == serde_json::json!(0)
                            && (t.partitioning == Partitioning::None || t.partitions.contains(p))
                    })
                    .map(|(_, p)| p)
            });
            let Some(partition) = empty else {
                return;
            };
            // an id whose row lands in that partition
            while t.partition_of(next) != partition {
                next += 1;
            }
            self.append(t, [next], 0);
            next += 1;
        }
        panic!("{}: some bucket stayed empty after 40 rows", t.name);
    }

    /// The later changes: appends, or upserts, deletes, a delete then re-insert and
    /// partial updates.
    fn later(&mut self, t: &mut Table) {
        if t.special == Special::Sparse {
            if t.primary_key {
                self.upsert(t, [1, 2], 1);
            } else {
                self.append(t, [1, 2], 1);
            }
            return;
        }
        if t.special == Special::ExpiredPartition {
            // only the partition still in Fluss
            let ids: Vec<i32> = (10..16).filter(|id| id % 2 == 1).collect();
            if t.primary_key {
                self.upsert(t, [1, 5], 1);
                self.upsert(t, ids, 1);
                self.delete(t, [3]);
            } else {
                self.append(t, ids, 1);
            }
            return;
        }
        if t.primary_key {
            self.upsert(t, [1, 5, 12], 1);
            self.delete(t, [2]);
            if t.special == Special::EmptyBatch {
                // a key that does not exist: Fluss writes an empty batch
                self.delete(t, [99]);
            }
            self.delete(t, [3]);
            self.upsert(t, [3], 2);
            self.update_score(t, [4, 13]);
        } else {
            self.append(t, 10..15, 1);
        }
    }
}

fn create(fluss: &mut RealFluss, t: &Table) -> Result<(), String> {
    fluss.sql(&t.create_sql()).map_err(|e| e.to_string())?;
    if t.partitioning != Partitioning::None && t.special != Special::AutoPartition {
        for value in &t.partitions {
            fluss
                .call(serde_json::json!({
                    "cmd": "create_partition", "table": t.path(),
                    "spec": {"p": t.partitioning.name_of(value)}
                }))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Builds every table of the matrix on `fluss`, reads each through the cluster source
/// and compares; returns the disagreements (empty when everything matches).
pub fn run_matrix(fluss: &mut RealFluss) -> Vec<String> {
    let format = fluss.format().to_string();
    let mut failures = Vec::new();
    fluss
        .sql("CREATE DATABASE IF NOT EXISTS fc.db")
        .expect("create database");

    let mut tables = Vec::new();
    for primary_key in [false, true] {
        for partitioning in [
            Partitioning::None,
            Partitioning::Str,
            Partitioning::Int,
            Partitioning::Date,
        ] {
            for tiering in [Tiering::Never, Tiering::Tail, Tiering::Full] {
                tables.push(Table::new(
                    &format,
                    primary_key,
                    partitioning,
                    tiering,
                    Special::None,
                ));
            }
        }
        // every other partition key type Fluss allows names its partitions its own way
        for partitioning in [Partitioning::Bool, Partitioning::Timestamp] {
            tables.push(Table::new(
                &format,
                primary_key,
                partitioning,
                Tiering::Tail,
                Special::None,
            ));
        }
        for special in [
            Special::Sparse,
            Special::AddColumn,
            Special::ExpiredPartition,
        ] {
            let partitioning = if special == Special::ExpiredPartition {
                Partitioning::Str
            } else {
                Partitioning::None
            };
            tables.push(Table::new(
                &format,
                primary_key,
                partitioning,
                Tiering::Tail,
                special,
            ));
        }
    }
    tables.push(Table::new(
        &format,
        false,
        Partitioning::None,
        Tiering::Tail,
        Special::BucketKey,
    ));
    tables.push(Table::new(
        &format,
        true,
        Partitioning::None,
        Tiering::Tail,
        Special::EmptyBatch,
    ));
    tables.push(Table::new(
        &format,
        false,
        Partitioning::Str,
        Tiering::Tail,
        Special::AutoPartition,
    ));

    // Fluss 0.9.1 refuses what it cannot tier: Iceberg partition keys other than STRING.
    let mut refused = Vec::new();
    let mut live = Vec::new();
    for t in tables {
        if t.tiering == Tiering::Never {
            live.push(t);
            continue;
        }
        match create(fluss, &t) {
            Ok(()) => live.push(t),
            Err(e) => refused.push((t, e)),
        }
    }
    for (t, e) in &refused {
        let expected = format == "iceberg"
            && t.partitioning != Partitioning::Str
            && e.contains("Partition key only support string type for iceberg");
        if !expected {
            failures.push(format!(
                "{}: the real cluster refused the table: {e}",
                t.name
            ));
        }
    }
    let mut tables = live;

    // first rows, then everything for fully tiered tables, then tier
    let mut writer = Writer { fluss };
    for t in tables.iter_mut().filter(|t| t.tiering != Tiering::Never) {
        writer.first(t);
        if t.tiering == Tiering::Full {
            writer.later(t);
        }
    }
    let tiered: Vec<String> = tables
        .iter()
        .filter(|t| t.tiering != Tiering::Never)
        .map(|t| t.path())
        .collect();
    let names: Vec<&str> = tiered.iter().map(String::as_str).collect();
    writer
        .fluss
        .tier(&names)
        .expect("tiering covers the written rows");
    // a second tiering round of the ADD COLUMN tables, so that their primary-key lake
    // splits need merging (more than one sorted run) when read with the newer schema
    let mut second: Vec<String> = Vec::new();
    for t in tables
        .iter_mut()
        .filter(|t| t.special == Special::AddColumn)
    {
        if t.primary_key {
            writer.upsert(t, [0, 6], 1);
        } else {
            writer.append(t, [20, 21], 1);
        }
        second.push(t.path());
    }
    let names: Vec<&str> = second.iter().map(String::as_str).collect();
    writer
        .fluss
        .tier(&names)
        .expect("tiering covers the second round");

    // the tails
    for t in tables.iter_mut().filter(|t| t.tiering == Tiering::Tail) {
        match t.special {
            Special::AddColumn => add_column(&mut writer, t, &format, &mut failures),
            Special::ExpiredPartition => {
                let expired = t.partitions[0].clone();
                writer
                    .fluss
                    .call(serde_json::json!({
                        "cmd": "drop_partition", "table": t.path(), "spec": {"p": expired}
                    }))
                    .expect("drop partition");
                t.model.drop_partition_log(&expired);
                writer.later(t);
            }
            _ => writer.later(t),
        }
    }
    // tables never tiered: created after the tiering service stopped
    let mut never = Vec::new();
    for t in tables.iter_mut().filter(|t| t.tiering == Tiering::Never) {
        match create(writer.fluss, t) {
            Ok(()) => {
                writer.first(t);
                writer.later(t);
            }
            Err(e) => never.push((t.name.clone(), e)),
        }
    }
    for (name, e) in never {
        let expected = format == "iceberg"
            && (name.contains("_int_") || name.contains("_date_"))
            && e.contains("Partition key only support string type for iceberg");
        if expected {
            tables.retain(|t| t.name != name);
        } else {
            failures.push(format!("{name}: the real cluster refused the table: {e}"));
        }
    }

    // read everything
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let session = runtime.block_on(async {
        let source = ClusterSource::connect(ClusterOptions {
            bootstrap_servers: writer.fluss.bootstrap_servers().to_string(),
            ..Default::default()
        })
        .await
        .expect("the cluster source connects to the real cluster");
        FlussSession::new(Arc::new(source)).await.expect("session")
    });
    for t in &tables {
        compare(
            writer.fluss,
            &runtime,
            &session,
            t,
            Reference::Flink,
            &mut failures,
        );
    }
    // t$binlog against Flink's (a stream there), on primary-key tables with a tail
    for t in tables.iter().filter(|t| {
        t.primary_key
            && t.tiering == Tiering::Tail
            && t.special == Special::None
            && matches!(t.partitioning, Partitioning::None | Partitioning::Str)
    }) {
        binlog_vs_flink(writer.fluss, &runtime, &session, t, &mut failures);
    }
    // t$changelog against Flink's (a stream there too), on log and primary-key tables
    // with a tail
    for t in tables.iter().filter(|t| {
        t.tiering == Tiering::Tail
            && t.special == Special::None
            && matches!(t.partitioning, Partitioning::None | Partitioning::Str)
    }) {
        changelog_vs_flink(writer.fluss, &runtime, &session, t, &mut failures);
    }

    // server-scan asks the tablet servers for ScanKv, which Fluss 0.9.1 does not
    // serve: the read must say so (Fluss 1.0 needed), not fail some other way
    if let Some(t) = tables
        .iter()
        .find(|t| t.primary_key && t.special == Special::None)
    {
        let sql = format!(
            "SELECT /*+ OPTIONS('client.scanner.kv.batch-strategy' = 'server-scan') */ * \
             FROM db.{}",
            t.name
        );
        match runtime.block_on(session.execute(&sql)) {
            Err(e) if e.kind() == fluss_datafusion::ErrorKind::FeatureUnsupported => {
                if !e.to_string().contains("needs Fluss 1.0") {
                    failures.push(format!("{}: server-scan on 0.9.1: {e}", t.name));
                }
            }
            Err(e) => failures.push(format!(
                "{}: server-scan on 0.9.1 failed other than as unsupported: {e}",
                t.name
            )),
            Ok(_) => failures.push(format!(
                "{}: server-scan answered on a cluster that has no ScanKv",
                t.name
            )),
        }
    }

    // The same files read as a LocalStore: the metadata and log segments the real
    // cluster wrote copied into the LocalStore layout (the lakes stay where tiering
    // wrote them), read with the LocalStore's own codec and planner.
    let copy = tempfile::tempdir().expect("temp dir");
    writer
        .fluss
        .copy_to_local_store(copy.path())
        .expect("the cluster's files copy into a LocalStore layout");
    // What a real cluster keeps in its own configuration rather than in each table's
    // registration (`datalake.format`, `datalake.<format>.*`) is the store's options.
    let options = LocalStoreOptions {
        datalake_format: format.clone(),
        lake_options: HashMap::from([
            (
                "warehouse".to_string(),
                writer.fluss.warehouse().to_string(),
            ),
            (
                if format == "paimon" {
                    "metastore"
                } else {
                    "type"
                }
                .to_string(),
                if format == "paimon" {
                    "filesystem"
                } else {
                    "hadoop"
                }
                .to_string(),
            ),
        ]),
        ..LocalStoreOptions::default()
    };
    let local = runtime.block_on(async {
        let store = LocalStore::open_with_options(&copy.path().to_string_lossy(), options)
            .await
            .expect("the copied store opens");
        FlussSession::new(Arc::new(store)).await.expect("session")
    });
    for t in &tables {
        let mut found = Vec::new();
        compare(
            writer.fluss,
            &runtime,
            &local,
            t,
            Reference::Session(&session),
            &mut found,
        );
        failures.extend(found.into_iter().map(|f| format!("[LocalStore copy] {f}")));
    }
    failures.extend(distributed_reads(&*writer.fluss, &runtime, &tables));
    if SNAPSHOT_READS.swap(0, std::sync::atomic::Ordering::Relaxed) == 0 {
        failures.push("no table had a lake snapshot with Fluss's offsets to read at".into());
    }
    failures
}

/// Every table's union read distributed over two datafusion-distributed workers, each
/// with its own connection to the real cluster, against the rows written: the plans
/// travel with the cluster's offsets pinned by the coordinator, and each worker reads
/// its buckets' lake files and log tails itself.
fn distributed_reads(
    fluss: &RealFluss,
    runtime: &tokio::runtime::Runtime,
    tables: &[Table],
) -> Vec<String> {
    let connect = || async {
        let source = ClusterSource::connect(ClusterOptions {
            bootstrap_servers: fluss.bootstrap_servers().to_string(),
            ..Default::default()
        })
        .await
        .expect("the cluster source connects to the real cluster");
        Arc::new(source) as Arc<dyn fluss_datafusion::FlussSource>
    };
    let distributed = runtime.block_on(async {
        let workers = vec![connect().await, connect().await];
        crate::distributed_workers::over_workers(connect().await, workers).await
    });
    let mut failures = Vec::new();
    let mut distributed_plans = 0;
    for t in tables {
        let select = t
            .columns
            .iter()
            .map(|c| format!("\"{}\"", c.name))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!("SELECT {select} FROM db.{}", t.name);
        match ours(runtime, &distributed.session, &sql) {
            Ok((_, got)) => expect_same(
                &mut failures,
                format!(
                    "{}: union read over two workers vs the rows written",
                    t.name
                ),
                got,
                t.model.rows(),
            ),
            Err(e) => failures.push(format!("{}: {sql} over two workers: {e}", t.name)),
        }
        if let Ok((_, plan)) = ours(runtime, &distributed.session, &format!("EXPLAIN {sql}"))
            && show(&plan).contains("DistributedExec")
        {
            distributed_plans += 1;
        }
    }
    if distributed_plans == 0 {
        failures.push("no read of the real cluster was planned distributed".into());
    }
    failures
}

/// How many `VERSION AS OF` reads `compare` made: the matrix must make some, or
/// the check of them checked nothing (no tiered snapshot with Fluss's offsets).
static SNAPSHOT_READS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `t$binlog` against Flink's: the change type, offset, and the key and `name` before
/// and after of every change.
fn binlog_vs_flink(
    fluss: &mut RealFluss,
    runtime: &tokio::runtime::Runtime,
    session: &FlussSession,
    t: &Table,
    failures: &mut Vec<String>,
) {
    let ours = "\"_change_type\", \"_log_offset\", \"before\"['id'], \"before\"['name'], \
                \"after\"['id'], \"after\"['name']";
    let flink = "`_change_type`, `_log_offset`, `before`.`id`, `before`.`name`, `after`.`id`, \
                 `after`.`name`";
    virtual_table_vs_flink(
        fluss,
        runtime,
        session,
        t,
        "binlog",
        (ours, flink),
        failures,
    );
}

/// `t$changelog` against Flink's: the change type, offset, key and `name` of every
/// change in the log.
fn changelog_vs_flink(
    fluss: &mut RealFluss,
    runtime: &tokio::runtime::Runtime,
    session: &FlussSession,
    t: &Table,
    failures: &mut Vec<String>,
) {
    let ours = "\"_change_type\", \"_log_offset\", id, name";
    let flink = "`_change_type`, `_log_offset`, `id`, `name`";
    virtual_table_vs_flink(
        fluss,
        runtime,
        session,
        t,
        "changelog",
        (ours, flink),
        failures,
    );
}

/// `t$<suffix>` read by us and by Flink, each with its spelling of the same columns.
/// Flink reads these tables only as a stream: its first rows, as many as ours has,
/// read from the earliest offset.
fn virtual_table_vs_flink(
    fluss: &mut RealFluss,
    runtime: &tokio::runtime::Runtime,
    session: &FlussSession,
    t: &Table,
    suffix: &str,
    (our_columns, flink_columns): (&str, &str),
    failures: &mut Vec<String>,
) {
    let ours_sql = format!("SELECT {our_columns} FROM db.\"{}${suffix}\"", t.name);
    let ours = match ours(runtime, session, &ours_sql) {
        Ok((_, rows)) => rows,
        Err(e) => {
            failures.push(format!("{}: {ours_sql}: {e}", t.name));
            return;
        }
    };
    let flink_sql = format!(
        "SELECT {flink_columns} FROM fc.db.`{}${suffix}` \
         /*+ OPTIONS('scan.startup.mode' = 'earliest') */",
        t.name
    );
    match fluss.stream_query(&flink_sql, ours.len()) {
        Ok(flink) => expect_same(
            failures,
            format!("{}: t${suffix} vs Flink's", t.name),
            ours,
            flink,
        ),
        Err(e) => failures.push(format!("{}: Flink: {flink_sql}: {e}", t.name)),
    }
}

/// What `t$lake` and the union read are compared with besides the model.
#[derive(Clone, Copy)]
enum Reference<'a> {
    /// Flink's union read and `t$lake` (queries to the harness).
    Flink,
    /// Another session's answers (the cluster source, already compared with Flink).
    Session(&'a FlussSession),
}

fn add_column(writer: &mut Writer<'_>, t: &mut Table, format: &str, failures: &mut Vec<String>) {
    // rows of the old schema in the tail
    if t.primary_key {
        writer.upsert(t, [1, 11], 1);
    } else {
        writer.append(t, 10..13, 1);
    }
    let alter = format!(
        "ALTER TABLE fc.db.{} ADD `{}` {}",
        t.name, ADDED_COLUMN.name, ADDED_COLUMN.sql_type
    );
    match writer.fluss.sql(&alter) {
        Ok(()) => {}
        Err(e) if format == "iceberg" && e.0.contains("Unsupported table change") => {
            // Fluss 0.9.1's IcebergLakeCatalog.alterTable takes options only
            // (apache/fluss 5d1e18f1f adds columns later): the table keeps its schema.
            return;
        }
        Err(e) => {
            failures.push(format!("{}: {alter}: {e}", t.name));
            return;
        }
    }
    t.columns.push(ADDED_COLUMN);
    t.model.add_column();
    // rows of the new schema, updating keys in the lake and in the tail
    if t.primary_key {
        writer.upsert(t, [2, 11, 14], 2);
        writer.delete(t, [5]);
    } else {
        writer.append(t, 13..16, 2);
    }
}

/// Which rows of the model a predicate keeps.
type RowFilter = Box<dyn Fn(&[Option<String>]) -> bool>;

/// Whether a bucket of `t` has neither rows in the log nor an offset in the lake.
fn empty_bucket_without_lake(fluss: &mut RealFluss, t: &Table) -> bool {
    let reply = fluss
        .call(serde_json::json!({"cmd": "buckets", "table": t.path()}))
        .unwrap_or_else(|e| panic!("buckets of {}: {e}", t.name));
    reply["buckets"].as_array().is_some_and(|buckets| {
        buckets
            .iter()
            .any(|b| b["end_offset"] == serde_json::json!(0) && b["lake_offset"].is_null())
    })
}

fn ours(
    runtime: &tokio::runtime::Runtime,
    session: &FlussSession,
    sql: &str,
) -> Result<(Vec<String>, Rows), String> {
    runtime
        .block_on(session.execute(sql))
        .map(|b| canonical::rows(&b))
        .map_err(|e| e.to_string())
}

fn show(rows: &Rows) -> String {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|c| c.as_deref().unwrap_or("NULL"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

fn expect_same(failures: &mut Vec<String>, what: String, got: Rows, want: Rows) {
    let (got, want) = (sorted(got), sorted(want));
    if got != want {
        failures.push(format!(
            "{what}:\n got ({} rows)\n  {}\n want ({} rows)\n  {}",
            got.len(),
            show(&got),
            want.len(),
            show(&want)
        ));
    }
}

/// Every read of one table: the union read against Flink's and the model, `t$lake`
/// against Flink's, and filters, projections, LIMIT and count(*) against the model.
fn compare(
    fluss: &mut RealFluss,
    runtime: &tokio::runtime::Runtime,
    session: &FlussSession,
    t: &Table,
    reference: Reference<'_>,
    failures: &mut Vec<String>,
) {
    let columns: Vec<String> = t.columns.iter().map(|c| format!("`{}`", c.name)).collect();
    let select = columns.join(", ").replace('`', "\"");
    let want = t.model.rows();

    // the union read
    let union_sql = format!("SELECT {select} FROM db.{}", t.name);
    match ours(runtime, session, &union_sql) {
        Ok((_, got)) => expect_same(
            failures,
            format!("{}: union read vs the rows written", t.name),
            got.clone(),
            want.clone(),
        ),
        Err(e) => failures.push(format!("{}: {union_sql}: {e}", t.name)),
    }
    let flink_sql = format!("SELECT {} FROM fc.db.`{}`", columns.join(", "), t.name);
    let not_oracle = t.flink_not_oracle.or_else(|| {
        if !matches!(reference, Reference::Flink) {
            return None;
        }
        empty_bucket_without_lake(fluss, t).then_some(
            "Fluss 0.9.1's Flink batch reader waits forever on a bucket with neither lake \
             data nor log (fixed upstream by apache/fluss #2958)",
        )
    });
    if not_oracle.is_none() && matches!(reference, Reference::Flink) {
        match fluss.query(&flink_sql) {
            Ok(flink) => {
                expect_same(
                    failures,
                    format!("{}: Flink's union read vs the rows written", t.name),
                    flink.clone(),
                    want.clone(),
                );
                if let Ok((_, got)) = ours(runtime, session, &union_sql) {
                    expect_same(
                        failures,
                        format!("{}: union read vs Flink's", t.name),
                        got,
                        flink,
                    );
                }
            }
            Err(e) => failures.push(format!("{}: Flink: {flink_sql}: {e}", t.name)),
        }
    }

    // time travel on the real cluster: as of now, the rows now; at the newest snapshot
    // Fluss's tiering committed (registered by Fluss, so readable for these tables),
    // the table as that snapshot recorded it: its lake rows, none of the log after it
    // (the offsets come from GetLakeSnapshot by id)
    let as_of_now = format!(
        "SELECT {select} FROM db.{} FOR SYSTEM_TIME AS OF now()",
        t.name
    );
    match ours(runtime, session, &as_of_now) {
        Ok((_, got)) => expect_same(
            failures,
            format!("{}: {as_of_now}", t.name),
            got,
            want.clone(),
        ),
        Err(e) => failures.push(format!("{}: {as_of_now}: {e}", t.name)),
    }
    let newest_tiered = format!(
        "SELECT snapshot_id FROM db.\"{}$lake$snapshots\" WHERE fluss_offsets IS NOT NULL \
         ORDER BY commit_time DESC LIMIT 1",
        t.name
    );
    // (a table never tiered has no lake table: no snapshot to read at)
    if let Ok((_, rows)) = ours(runtime, session, &newest_tiered)
        && let Some(Some(id)) = rows.first().map(|r| r[0].clone())
    {
        SNAPSHOT_READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let at = format!("SELECT {select} FROM db.{} VERSION AS OF {id}", t.name);
        // the reference: Flink's lake table at that snapshot (the lake's own
        // connector: Paimon's `scan.snapshot-id`, Iceberg's `snapshot-id`), else the
        // other session's
        let reference_rows = match reference {
            Reference::Flink => {
                let option = if t.format == "paimon" {
                    "scan.snapshot-id"
                } else {
                    "snapshot-id"
                };
                let flink = format!(
                    "SELECT {} FROM fc.db.`{}$lake` /*+ OPTIONS('{option}' = '{id}') */",
                    columns.join(", "),
                    t.name
                );
                fluss
                    .query(&flink)
                    .map_err(|e| format!("Flink: {flink}: {e}"))
            }
            Reference::Session(other) => ours(runtime, other, &at).map(|(_, rows)| rows),
        };
        match (ours(runtime, session, &at), reference_rows) {
            (Ok((_, got)), Ok(reference)) => expect_same(
                failures,
                format!("{}: {at} vs the reference's lake at {id}", t.name),
                got,
                reference,
            ),
            (Err(e), _) => failures.push(format!("{}: {at}: {e}", t.name)),
            (_, Err(e)) => failures.push(format!("{}: {e}", t.name)),
        }
    }

    // t$lake: the physical lake table, against Flink's (the lake's own connector)
    let lake_ours = format!("SELECT * FROM db.\"{}$lake\"", t.name);
    let lake_flink = format!("SELECT * FROM fc.db.`{}$lake`", t.name);
    let lake_reference = match reference {
        Reference::Flink => fluss.query(&lake_flink).map_err(|e| e.to_string()),
        Reference::Session(other) => ours(runtime, other, &lake_ours).map(|(_, rows)| rows),
    };
    match (ours(runtime, session, &lake_ours), lake_reference) {
        (Ok((names, got)), Ok(flink)) => {
            expect_same(
                failures,
                format!(
                    "{}: t$lake vs the reference's (our columns {names:?})",
                    t.name
                ),
                got,
                flink,
            );
        }
        (Err(e), Ok(flink)) => failures.push(format!(
            "{}: {lake_ours}: {e} (Flink: {} rows)",
            t.name,
            flink.len()
        )),
        (Ok((_, got)), Err(e)) => {
            if !got.is_empty() {
                failures.push(format!(
                    "{}: the reference's t$lake failed ({e}) but ours has {} rows",
                    t.name,
                    got.len()
                ));
            }
        }
        (Err(_), Err(_)) => {}
    }

    // count(*), filters, projection, LIMIT against the model
    let checks: Vec<(String, RowFilter)> = {
        let score = t
            .columns
            .iter()
            .position(|c| c.name == "score")
            .expect("score");
        let name = t
            .columns
            .iter()
            .position(|c| c.name == "name")
            .expect("name");
        let mut v: Vec<(String, RowFilter)> = vec![
            (
                "score > 40".to_string(),
                Box::new(move |r: &[Option<String>]| {
                    r[score]
                        .as_deref()
                        .and_then(|s| s.parse::<i64>().ok())
                        .is_some_and(|s| s > 40)
                }),
            ),
            (
                "id = 3".to_string(),
                Box::new(|r: &[Option<String>]| r[0].as_deref() == Some("3")),
            ),
            (
                "name IS NULL OR score < 20".to_string(),
                Box::new(move |r: &[Option<String>]| {
                    r[name].is_none()
                        || r[score]
                            .as_deref()
                            .and_then(|s| s.parse::<i64>().ok())
                            .is_some_and(|s| s < 20)
                }),
            ),
        ];
        if t.partitioning != Partitioning::None {
            let p = t.columns.iter().position(|c| c.name == "p").expect("p");
            let value = t.partitions[1].clone();
            let literal = t.partitioning.literal(&value);
            v.push((
                format!("p = {literal}"),
                Box::new(move |r: &[Option<String>]| r[p].as_deref() == Some(value.as_str())),
            ));
        }
        v
    };
    for (predicate, keep) in checks {
        let sql = format!("SELECT {select} FROM db.{} WHERE {predicate}", t.name);
        let expected: Rows = want.iter().filter(|r| keep(r)).cloned().collect();
        match ours(runtime, session, &sql) {
            Ok((_, got)) => expect_same(failures, format!("{}: {sql}", t.name), got, expected),
            Err(e) => failures.push(format!("{}: {sql}: {e}", t.name)),
        }
    }
    // t$changelog: every change Fluss logged (the log is never cut here), as the model
    // says the writes made them
    let sql = format!(
        "SELECT \"_change_type\", {select} FROM db.\"{}$changelog\"",
        t.name
    );
    match ours(runtime, session, &sql) {
        Ok((_, got)) => expect_same(
            failures,
            format!("{}: {sql}", t.name),
            got,
            t.model.changelog(),
        ),
        Err(e) => failures.push(format!("{}: {sql}: {e}", t.name)),
    }
    let sql = format!("SELECT count(*) FROM db.{}", t.name);
    match ours(runtime, session, &sql) {
        Ok((_, got)) => {
            let n = got.first().and_then(|r| r[0].clone());
            if n != Some(want.len().to_string()) {
                failures.push(format!("{}: {sql} = {n:?}, want {}", t.name, want.len()));
            }
        }
        Err(e) => failures.push(format!("{}: {sql}: {e}", t.name)),
    }
    let sql = format!("SELECT name, id FROM db.{}", t.name);
    let expected: Rows = want
        .iter()
        .map(|r| vec![r[1].clone(), r[0].clone()])
        .collect();
    match ours(runtime, session, &sql) {
        Ok((_, got)) => expect_same(failures, format!("{}: {sql}", t.name), got, expected),
        Err(e) => failures.push(format!("{}: {sql}: {e}", t.name)),
    }
    let sql = format!("SELECT {select} FROM db.{} LIMIT 4", t.name);
    match ours(runtime, session, &sql) {
        Ok((_, got)) => {
            let mut pool = want.clone();
            let fits = got.len() == want.len().min(4)
                && got.iter().all(|r| match pool.iter().position(|w| w == r) {
                    Some(i) => {
                        pool.swap_remove(i);
                        true
                    }
                    None => false,
                });
            if !fits {
                failures.push(format!(
                    "{}: {sql} gave rows not in the table:\n  {}",
                    t.name,
                    show(&got)
                ));
            }
        }
        Err(e) => failures.push(format!("{}: {sql}: {e}", t.name)),
    }
}
