//! Writes to a live cluster, through fluss-rs's writers as any Fluss client writes:
//! DDL through `FlussAdmin`, rows through `AppendWriter` (log tables) and
//! `UpsertWriter` (primary-key tables: upserts, partial updates with target columns,
//! deletes). Batching and acknowledgement follow the client options the source was
//! connected with (`client.writer.*`, [`super::ClusterOptions::client_options`]).
//!
//! A cluster has no statement transactions: a statement's rows are acknowledged
//! bucket by bucket. Every row is awaited before the statement answers, and a failed
//! write says how many rows were acknowledged before it and which rows (by their
//! position in the statement) were not.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, BooleanArray, RecordBatch};
use datafusion::execution::memory_pool::MemoryPool;
use fluss::client::{AppendWriter, UpsertWriter, WriteResultFuture};
use fluss::metadata::{
    AddColumn, AlterConfig, AlterConfigOpType, AlterTableChanges, ColumnPositionType,
    DatabaseDescriptor, JsonSerde, RowType, TableDescriptor, TablePath,
};
use fluss::row::ColumnarRow;
use futures::TryStreamExt;
use futures::stream::BoxStream;

use super::{ClusterSource, client_error};
use crate::error::{Error, Result};
use crate::lake::tiering::TieringResult;
use crate::source::bucketing::BucketAssigner;
use crate::source::conform::{conform_batch, conform_keys, partial_columns};
use crate::source::{FlussSource, FlussWriter, NewColumn, WriteKind, WriteResult};

/// The fluss-rs writer of one statement.
enum RowWriter {
    Append(AppendWriter),
    Upsert(UpsertWriter),
}

/// One queued write and the rows of the statement it carries (their positions in the
/// statement, ascending).
struct Pending {
    ack: WriteResultFuture,
    rows: Vec<usize>,
}

impl ClusterSource {
    /// Opens the fluss-rs writer `kind` needs for `path` (on the client's runtime,
    /// where fluss-rs spawns its sender task); `columns` names a partial update's.
    async fn row_writer(
        &self,
        path: &TablePath,
        kind: WriteKind,
        columns: Option<Vec<String>>,
    ) -> Result<RowWriter> {
        let (connection, owned) = (self.connection.clone(), path.clone());
        self.on_client(async move {
            let table = connection.get_table(&owned).await?;
            match kind {
                WriteKind::Append => Ok(RowWriter::Append(table.new_append()?.create_writer()?)),
                _ => {
                    let mut upsert = table.new_upsert()?;
                    if let Some(columns) = &columns {
                        let names: Vec<&str> = columns.iter().map(String::as_str).collect();
                        upsert = upsert.partial_update_with_column_names(&names)?;
                    }
                    Ok(RowWriter::Upsert(upsert.create_writer()?))
                }
            }
        })
        .await?
        .map_err(client_error(
            &format!("cannot open a writer for '{path}'"),
            &self.options.bootstrap_servers,
        ))
    }

    /// Runs one DDL call of fluss-rs's admin on the client's runtime (never retried:
    /// DDL is not idempotent); a failure reads "`what`: <the cluster's error>".
    async fn on_admin<Fut>(
        &self,
        what: String,
        call: impl FnOnce(Arc<fluss::client::FlussAdmin>) -> Fut,
    ) -> Result<()>
    where
        Fut: std::future::Future<Output = fluss::error::Result<()>> + Send + 'static,
    {
        self.on_client(call(self.admin.clone()))
            .await?
            .map_err(client_error(&what, &self.options.bootstrap_servers))
    }

    /// Queues `batch` ([`queue_rows`]) and awaits what was queued, even when queueing
    /// the rest failed; `done` counts the rows acknowledged.
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        path: &TablePath,
        writer: &RowWriter,
        batch: RecordBatch,
        row_type: &Arc<RowType>,
        op: RowOp<'_>,
        split: Split<'_>,
        first: usize,
        done: &mut usize,
    ) -> Result<()> {
        let mut pending = Vec::new();
        // an append split by bucket here is acknowledged bucket by bucket: fluss-rs
        // joins the acknowledgements of the buckets it splits a batch into
        let queue = match split {
            Split::Whole => Queue::Whole,
            Split::ByBucket(assigner) => Queue::Groups(bucket_groups(assigner, &batch)?),
            Split::RowByRow => Queue::RowByRow,
        };
        let queued = queue_rows(writer, batch, row_type, op, queue, first, &mut pending);
        self.acknowledged(path, pending, done).await?;
        queued.map_err(client_error(
            &format!("cannot queue rows for '{path}'"),
            &self.options.bootstrap_servers,
        ))
    }

    /// Awaits every queued write, counting the rows acknowledged in `done`; the
    /// first failure names the rows that were not.
    async fn acknowledged(
        &self,
        path: &TablePath,
        pending: Vec<Pending>,
        done: &mut usize,
    ) -> Result<()> {
        let mut failed: Option<(fluss::error::Error, Vec<usize>)> = None;
        for write in pending {
            match write.ack.await {
                Ok(()) => *done += write.rows.len(),
                Err(e) => match &mut failed {
                    Some((_, rows)) => rows.extend(write.rows),
                    None => failed = Some((e, write.rows)),
                },
            }
        }
        let Some((error, mut rows)) = failed else {
            return Ok(());
        };
        rows.sort_unstable();
        let lost = rows.len();
        let ranges = ranges_of(&rows);
        let shown: Vec<String> = ranges
            .iter()
            .take(8)
            .map(|&(first, n)| match n {
                1 => format!("{first}"),
                _ => format!("{first}..{}", first + n - 1),
            })
            .collect();
        let more = if ranges.len() > shown.len() {
            ", ..."
        } else {
            ""
        };
        let what = format!(
            "{lost} row(s) written to '{path}' were not acknowledged (rows {}{more} of the \
             statement, counted from 0); the {done} row(s) acknowledged stay written (a write \
             to a cluster is not one transaction)",
            shown.join(", ")
        );
        Err(client_error(&what, &self.options.bootstrap_servers)(error))
    }
}

/// How the rows of a batch are written.
#[derive(Clone, Copy)]
enum RowOp<'a> {
    /// Appended (log table) or upserted (primary-key table).
    Write,
    /// Deleted by key.
    Delete,
    /// Deleted where the flag is set, upserted otherwise (MERGE).
    Mixed(&'a BooleanArray),
}

/// How [`queue_rows`] hands a batch's rows to fluss-rs.
enum Queue {
    /// An append of the whole batch.
    Whole,
    /// One append per group of rows (indices, one bucket each).
    Groups(Vec<Vec<u32>>),
    /// Row by row: an upsert writer's rows, or any partitioned table's (fluss-rs
    /// takes a batch's partition from its first row).
    RowByRow,
}

/// Queues every row of `batch` (the table's full row layout) on `writer` as `queue`
/// says, noting each queued write in `pending` with the rows it carries (from
/// `first`).
fn queue_rows(
    writer: &RowWriter,
    batch: RecordBatch,
    row_type: &Arc<RowType>,
    op: RowOp<'_>,
    queue: Queue,
    first: usize,
    pending: &mut Vec<Pending>,
) -> fluss::error::Result<()> {
    let rows = batch.num_rows();
    if rows == 0 {
        return Ok(());
    }
    match (writer, queue) {
        (RowWriter::Append(append), Queue::Whole) => {
            let ack = append.append_arrow_batch(batch)?;
            pending.push(Pending {
                ack,
                rows: (first..first + rows).collect(),
            });
            return Ok(());
        }
        (RowWriter::Append(append), Queue::Groups(groups)) => {
            for indices in groups {
                let rows = indices.iter().map(|&i| first + i as usize).collect();
                let picked = datafusion::arrow::compute::take_record_batch(
                    &batch,
                    &datafusion::arrow::array::UInt32Array::from(indices),
                )
                .map_err(|e| fluss::error::Error::IllegalArgument {
                    message: format!("cannot split the rows by bucket: {e}"),
                })?;
                let ack = append.append_arrow_batch(picked)?;
                pending.push(Pending { ack, rows });
            }
            return Ok(());
        }
        _ => {}
    }
    let mut row = ColumnarRow::new(Arc::new(batch), row_type.clone(), 0, None)?;
    for i in 0..rows {
        row.set_row_id(i);
        let delete = match op {
            RowOp::Write => false,
            RowOp::Delete => true,
            RowOp::Mixed(flags) => flags.is_valid(i) && flags.value(i),
        };
        let ack = match writer {
            RowWriter::Append(append) => append.append(&row)?,
            RowWriter::Upsert(upsert) if delete => upsert.delete(&row)?,
            RowWriter::Upsert(upsert) => upsert.upsert(&row)?,
        };
        pending.push(Pending {
            ack,
            rows: vec![first + i],
        });
    }
    Ok(())
}

/// How a statement's batches go to fluss-rs ([`Queue`] once a batch's buckets are
/// known).
enum Split<'a> {
    /// Whole (a log table without a bucket key; an upsert writer's rows go row by
    /// row anyway).
    Whole,
    /// One append per bucket, by the table's bucket key (`assigner`).
    ByBucket(&'a mut BucketAssigner),
    /// Row by row: fluss-rs takes a batch's partition from its first row.
    RowByRow,
}

/// The rows of `batch` by bucket, as Fluss buckets them (indices, ascending).
fn bucket_groups(assigner: &mut BucketAssigner, batch: &RecordBatch) -> Result<Vec<Vec<u32>>> {
    let mut groups: std::collections::BTreeMap<i32, Vec<u32>> = Default::default();
    for (row, bucket) in assigner.assign(batch)?.into_iter().enumerate() {
        groups.entry(bucket).or_default().push(row as u32);
    }
    Ok(groups.into_values().collect())
}

/// Ascending row positions as ranges `(first, count)`.
fn ranges_of(rows: &[usize]) -> Vec<(usize, usize)> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &row in rows {
        match ranges.last_mut() {
            Some((first, n)) if *first + *n == row => *n += 1,
            _ => ranges.push((row, 1)),
        }
    }
    ranges
}

#[async_trait]
impl FlussWriter for ClusterSource {
    async fn create_database(
        &self,
        name: &str,
        comment: Option<&str>,
        if_not_exists: bool,
    ) -> Result<()> {
        let descriptor = comment.map(|c| DatabaseDescriptor::builder().comment(c).build());
        let owned = name.to_string();
        self.on_admin(
            format!("cannot create database '{name}'"),
            |admin| async move {
                admin
                    .create_database(&owned, descriptor.as_ref(), if_not_exists)
                    .await
            },
        )
        .await
    }

    async fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
        let owned = name.to_string();
        self.on_admin(
            format!("cannot drop database '{name}'"),
            |admin| async move { admin.drop_database(&owned, if_exists, cascade).await },
        )
        .await
    }

    async fn create_table(
        &self,
        path: &TablePath,
        descriptor: &TableDescriptor,
        if_not_exists: bool,
    ) -> Result<()> {
        let (owned, descriptor) = (path.clone(), descriptor.clone());
        self.on_admin(
            format!("cannot create table '{path}'"),
            |admin| async move { admin.create_table(&owned, &descriptor, if_not_exists).await },
        )
        .await
    }

    async fn drop_table(&self, path: &TablePath, if_exists: bool) -> Result<()> {
        let owned = path.clone();
        self.on_admin(format!("cannot drop table '{path}'"), |admin| async move {
            admin.drop_table(&owned, if_exists).await
        })
        .await
    }

    async fn write(
        &self,
        path: &TablePath,
        kind: WriteKind,
        mut rows: BoxStream<'_, Result<RecordBatch>>,
        _memory: Option<&Arc<dyn MemoryPool>>,
    ) -> Result<WriteResult> {
        let table = self.get_table(path).await?;
        crate::source::writer::check_write_kind(&table, kind)?;
        let version = table.schemas.latest()?;
        let row_type = Arc::new(table.info.row_type().clone());
        let keys = table.info.get_schema().primary_key_indexes();
        let partitioned = table.info.is_partitioned();
        let op = match kind {
            WriteKind::Delete => RowOp::Delete,
            _ => RowOp::Write,
        };
        let mut assigner = match (kind, partitioned) {
            (WriteKind::Append, false) if !table.info.get_bucket_keys().is_empty() => {
                Some(BucketAssigner::new(
                    table.info.get_row_type(),
                    table.info.get_bucket_keys(),
                    table.info.get_num_buckets(),
                    table.configured_lake_format(),
                )?)
            }
            _ => None,
        };
        let mut writer: Option<RowWriter> = None;
        let mut result = WriteResult::default();
        let mut done = 0;
        while let Some(batch) = rows.try_next().await? {
            let full = match kind {
                WriteKind::Delete => conform_keys(&batch, &version, &keys)?,
                WriteKind::PartialUpdate => {
                    partial_columns(&table, &batch)?;
                    conform_batch(&batch, &version)?
                }
                WriteKind::Append | WriteKind::Upsert => conform_batch(&batch, &version)?,
            };
            let writer = match &mut writer {
                Some(writer) => writer,
                None => {
                    let columns = (kind == WriteKind::PartialUpdate).then(|| {
                        let schema = batch.schema();
                        schema.fields().iter().map(|f| f.name().clone()).collect()
                    });
                    writer.insert(self.row_writer(path, kind, columns).await?)
                }
            };
            let first = result.rows;
            result.rows += batch.num_rows();
            result.batches += 1;
            let split = match (&mut assigner, partitioned) {
                (_, true) => Split::RowByRow,
                (Some(assigner), false) => Split::ByBucket(assigner),
                (None, false) => Split::Whole,
            };
            self.send(path, writer, full, &row_type, op, split, first, &mut done)
                .await?;
        }
        // the cluster decides which rows update existing keys: rows, not records
        result.records = result.rows;
        Ok(result)
    }

    async fn alter_table_options(
        &self,
        path: &TablePath,
        set: &[(String, String)],
        reset: &[String],
    ) -> Result<()> {
        crate::source::writer::check_alterable(path, set, reset)?;
        let info = self.table_info(path).await?;
        let set = &crate::source::writer::without_bucket_count(path, &info, set, reset)?;
        let mut changes = AlterTableChanges::default();
        for (key, value) in set {
            changes.config_changes.push(AlterConfig::new(
                key.clone(),
                Some(value.clone()),
                AlterConfigOpType::Set,
            ));
        }
        for key in reset {
            changes.config_changes.push(AlterConfig::new(
                key.clone(),
                None,
                AlterConfigOpType::Delete,
            ));
        }
        let owned = path.clone();
        self.on_admin(format!("cannot alter table '{path}'"), |admin| async move {
            admin.alter_table(&owned, false, changes).await
        })
        .await
    }

    /// The cluster's coordinator applies Fluss's rules and evolves the lake first.
    async fn add_columns(&self, path: &TablePath, columns: &[NewColumn]) -> Result<()> {
        let mut changes = AlterTableChanges::default();
        for column in columns {
            let data_type_json = serde_json::to_vec(&column.data_type.serialize_json()?)?;
            changes.add_columns.push(AddColumn {
                column_name: column.name.clone(),
                data_type_json,
                comment: column.comment.clone(),
                position: ColumnPositionType::Last,
            });
        }
        let owned = path.clone();
        self.on_admin(
            format!("cannot add columns to table '{path}'"),
            |admin| async move { admin.alter_table(&owned, false, changes).await },
        )
        .await
    }

    async fn create_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_not_exists: bool,
    ) -> Result<()> {
        let (owned, spec) = (path.clone(), partition_spec(spec));
        self.on_admin(
            format!("cannot add a partition to table '{path}'"),
            |admin| async move { admin.create_partition(&owned, &spec, if_not_exists).await },
        )
        .await
    }

    async fn drop_partition(
        &self,
        path: &TablePath,
        spec: &[(String, String)],
        if_exists: bool,
    ) -> Result<()> {
        let (owned, spec) = (path.clone(), partition_spec(spec));
        self.on_admin(
            format!("cannot drop a partition of table '{path}'"),
            |admin| async move { admin.drop_partition(&owned, &spec, if_exists).await },
        )
        .await
    }

    async fn tier(&self, path: &TablePath) -> Result<TieringResult> {
        Err(Error::unsupported(format!(
            "CALL fluss.tier needs a LocalStore: {} is a Fluss deployment, whose own \
             tiering service tiers its tables ('{path}' among them)",
            self.name()
        )))
    }

    async fn write_changes(
        &self,
        path: &TablePath,
        rows: &RecordBatch,
        deletes: &BooleanArray,
    ) -> Result<WriteResult> {
        let table = self.get_table(path).await?;
        crate::source::writer::check_write_kind(&table, WriteKind::Upsert)?;
        let full = conform_batch(rows, table.schemas.latest()?.as_ref())?;
        let row_type = Arc::new(table.info.row_type().clone());
        let writer = self.row_writer(path, WriteKind::Upsert, None).await?;
        let split = if table.info.is_partitioned() {
            Split::RowByRow
        } else {
            Split::Whole
        };
        let op = RowOp::Mixed(deletes);
        let mut done = 0;
        self.send(path, &writer, full, &row_type, op, split, 0, &mut done)
            .await?;
        Ok(WriteResult {
            rows: rows.num_rows(),
            records: rows.num_rows(),
            batches: 1,
        })
    }
}

/// A partition spec as fluss-rs takes it.
fn partition_spec(spec: &[(String, String)]) -> fluss::metadata::PartitionSpec {
    fluss::metadata::PartitionSpec::new(
        spec.iter()
            .cloned()
            .collect::<std::collections::HashMap<_, _>>(),
    )
}
