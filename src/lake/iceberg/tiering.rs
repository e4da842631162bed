//! Iceberg's side of a tiering round ([`LakeWriter`]), as Fluss's
//! `IcebergLakeWriter` / `IcebergLakeCommitter` do it: data files per (partition,
//! bucket), committed as one snapshot whose summary has `fluss-offsets` = the round's
//! offsets file and `commit-user` = `__fluss_lake_tiering`, which is how a commit is
//! found again after a crash.
//!
//! Primary-key tables: each bucket's round of changes is folded by key; touched keys
//! get equality deletes (on the identifier fields), surviving keys their rows, and
//! both are committed as one row delta (`row_delta.rs`: iceberg 0.10.1 writes the
//! delete files but cannot commit them).

use std::collections::HashMap;

use async_trait::async_trait;
use datafusion::arrow::array::{BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::row::{RowConverter, SortField};
use fluss::record::ChangeType;
use futures::TryStreamExt;
use futures::stream::BoxStream;
use iceberg::TableIdent;
use iceberg::arrow::arrow_schema_to_schema;
use iceberg::spec::{DataFile, DataFileFormat, Literal, PartitionKey, Struct, Transform};
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::base_writer::equality_delete_writer::{
    EqualityDeleteFileWriterBuilder, EqualityDeleteWriterConfig,
};
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use parquet58::basic::{Compression, ZstdLevel};
use parquet58::file::properties::WriterProperties;

use super::hadoop::HadoopCatalog;
use super::row_delta::{RowDelta, commit_row_delta};
use super::schema::{IcebergTableLayout, lake_rows, table_layout};
use super::{IcebergCatalogType, lake_error};
use crate::error::{Error, ErrorKind, Result};
use crate::lake::arrow_bridge::to_arrow58;
use crate::lake::tiering::{LakeWriter, PendingCommit};
use crate::lake::{FLUSS_OFFSETS_PROPERTY, LakeLocation, TIERING_COMMIT_USER};
use crate::log::ChangelogBatch;
use crate::table::{BucketLocation, FlussTable};

/// Snapshot summary key of the committing user (`IcebergLakeCommitter.COMMITTER_USER`).
const COMMIT_USER_PROPERTY: &str = "commit-user";

/// The tiering snapshot of the table that recorded `offsets`, if committed.
fn find_tiering_snapshot(table: &Table, offsets: &str) -> Option<i64> {
    table.metadata().snapshots().find_map(|s| {
        let p = &s.summary().additional_properties;
        (p.get(COMMIT_USER_PROPERTY).map(String::as_str) == Some(TIERING_COMMIT_USER)
            && p.get(FLUSS_OFFSETS_PROPERTY).map(String::as_str) == Some(offsets))
        .then(|| s.snapshot_id())
    })
}

/// The partition value of a bucket's data file: the Fluss partition's values for the
/// `identity` fields, the bucket for `identity(__bucket)` / `bucket(key, N)` (Fluss
/// buckets Iceberg tables with Iceberg's bucket function, so they agree).
fn partition_of(table: &Table, bucket: &BucketLocation) -> Result<Struct> {
    let spec = table.metadata().default_partition_spec();
    let mut values = bucket
        .partition
        .as_ref()
        .map(|(_, name)| name.split('$').collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter();
    let mut literals = Vec::with_capacity(spec.fields().len());
    for field in spec.fields() {
        let is_bucket = matches!(field.transform, Transform::Bucket(_)) || field.name == "__bucket";
        if is_bucket {
            literals.push(Some(Literal::int(bucket.bucket)));
            continue;
        }
        let value = values.next().ok_or_else(|| {
            Error::internal(format!(
                "partition field '{}' has no Fluss partition value",
                field.name
            ))
        })?;
        literals.push(Some(Literal::string(value)));
    }
    Ok(Struct::from_iter(literals))
}

/// Writer properties of the files tiering writes (the table's `zstd` codec).
fn writer_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build()
}

/// A rolling parquet writer of `schema`'s rows into the table's data directory.
fn rolling_writer(
    table: &Table,
    schema: iceberg::spec::SchemaRef,
) -> Result<
    RollingFileWriterBuilder<
        ParquetWriterBuilder,
        DefaultLocationGenerator,
        DefaultFileNameGenerator,
    >,
> {
    let name = table.identifier().to_string();
    Ok(RollingFileWriterBuilder::new_with_default_file_size(
        ParquetWriterBuilder::new(writer_properties(), schema),
        table.file_io().clone(),
        DefaultLocationGenerator::new(table.metadata())
            .map_err(lake_error("cannot place data files", &name))?,
        DefaultFileNameGenerator::new(
            format!("fluss-{}", uuid::Uuid::new_v4()),
            None,
            DataFileFormat::Parquet,
        ),
    ))
}

fn partition_key(table: &Table, partition: Struct) -> PartitionKey {
    let metadata = table.metadata();
    PartitionKey::new(
        metadata.default_partition_spec().as_ref().clone(),
        metadata.current_schema().clone(),
        partition,
    )
}

/// Writes lake rows as data files of `partition`.
async fn write_data_files(
    table: &Table,
    partition: Struct,
    mut rows: impl futures::Stream<Item = Result<RecordBatch>> + Unpin,
) -> Result<Vec<DataFile>> {
    let name = table.identifier().to_string();
    let schema = table.metadata().current_schema().clone();
    let mut writer = DataFileWriterBuilder::new(rolling_writer(table, schema)?)
        .build(Some(partition_key(table, partition)))
        .await
        .map_err(lake_error("cannot start an Iceberg data file", &name))?;
    while let Some(batch) = rows.try_next().await? {
        writer
            .write(to_arrow58(&batch)?)
            .await
            .map_err(lake_error("cannot write an Iceberg data file", &name))?;
    }
    writer
        .close()
        .await
        .map_err(lake_error("cannot finish an Iceberg data file", &name))
}

/// Writes the key columns of lake rows as equality-delete files of `partition`.
async fn write_equality_deletes(
    table: &Table,
    partition: Struct,
    rows: Vec<RecordBatch>,
) -> Result<Vec<DataFile>> {
    let name = table.identifier().to_string();
    let schema = table.metadata().current_schema().clone();
    let equality_ids: Vec<i32> = schema.identifier_field_ids().collect();
    let config = EqualityDeleteWriterConfig::new(equality_ids, schema)
        .map_err(lake_error("cannot set up Iceberg equality deletes", &name))?;
    let delete_schema = arrow_schema_to_schema(config.projected_arrow_schema_ref())
        .map_err(lake_error("cannot set up Iceberg equality deletes", &name))?;
    let rolling = rolling_writer(table, std::sync::Arc::new(delete_schema))?;
    let mut writer = EqualityDeleteFileWriterBuilder::new(rolling, config)
        .build(Some(partition_key(table, partition)))
        .await
        .map_err(lake_error("cannot start an Iceberg delete file", &name))?;
    for batch in rows {
        writer
            .write(to_arrow58(&batch)?)
            .await
            .map_err(lake_error("cannot write an Iceberg delete file", &name))?;
    }
    writer
        .close()
        .await
        .map_err(lake_error("cannot finish an Iceberg delete file", &name))
}

/// A primary-key bucket's round of changes, folded: the last change of each key
/// wins. Every key the round touched gets an equality delete (removing its rows of
/// earlier snapshots), and a key whose last change is `+I`/`+U` also gets its row.
/// Deleting before re-inserting is how merge-on-read upserts work in Iceberg; the
/// fold keeps one row per key, so no position deletes are needed.
fn fold_changes(
    rounds: &[(RecordBatch, Vec<ChangeType>)],
    key_columns: &[usize],
) -> Result<(Vec<RecordBatch>, Vec<RecordBatch>)> {
    let Some((first, _)) = rounds.first() else {
        return Ok((Vec::new(), Vec::new()));
    };
    let fields = key_columns
        .iter()
        .map(|&i| SortField::new(first.schema().field(i).data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let mut last: HashMap<Box<[u8]>, (usize, usize)> = HashMap::new();
    for (b, (rows, _)) in rounds.iter().enumerate() {
        let keys: Vec<_> = key_columns
            .iter()
            .map(|&i| rows.column(i).clone())
            .collect();
        let keys = converter.convert_columns(&keys)?;
        for r in 0..rows.num_rows() {
            last.insert(keys.row(r).as_ref().into(), (b, r));
        }
    }
    let mut touched: Vec<Vec<bool>> = rounds
        .iter()
        .map(|(r, _)| vec![false; r.num_rows()])
        .collect();
    let mut kept = touched.clone();
    for (b, r) in last.into_values() {
        touched[b][r] = true;
        kept[b][r] = matches!(
            rounds[b].1[r],
            ChangeType::Insert | ChangeType::UpdateAfter | ChangeType::AppendOnly
        );
    }
    let mut upserts = Vec::new();
    let mut deletes = Vec::new();
    for ((rows, _), (touched, kept)) in rounds.iter().zip(touched.into_iter().zip(kept)) {
        let kept = filter_record_batch(rows, &BooleanArray::from(kept))?;
        let touched = filter_record_batch(rows, &BooleanArray::from(touched))?;
        if kept.num_rows() > 0 {
            upserts.push(kept);
        }
        if touched.num_rows() > 0 {
            deletes.push(touched);
        }
    }
    Ok((upserts, deletes))
}

/// The catalog and identifier of `table`'s Iceberg lake table: a hadoop catalog,
/// the only one the LocalStore tiers to.
fn hadoop_table(
    location: &LakeLocation,
    table: &FlussTable,
) -> Result<(HadoopCatalog, TableIdent)> {
    let path = &table.path;
    if IcebergCatalogType::of(location)? != IcebergCatalogType::Hadoop {
        return Err(
            Error::unsupported("the LocalStore tiers to Iceberg hadoop catalogs only")
                .with_context("table", path.to_string()),
        );
    }
    let catalog = HadoopCatalog::new(&location.warehouse)?;
    let ident = TableIdent::from_strs([path.database(), path.table()])
        .map_err(|e| Error::invalid_input("bad Iceberg table name").with_source(e))?;
    Ok((catalog, ident))
}

/// The round's writer: the lake table (created, or given its new columns), its
/// layout, and the files written so far.
struct IcebergTiering {
    catalog: HadoopCatalog,
    lake: Table,
    layout: IcebergTableLayout,
    path: String,
    primary_key: bool,
    key_columns: Vec<usize>,
    data_files: Vec<DataFile>,
    delete_files: Vec<DataFile>,
}

pub(in crate::lake) async fn writer(
    location: &LakeLocation,
    table: &FlussTable,
) -> Result<Box<dyn LakeWriter>> {
    let (catalog, ident) = hadoop_table(location, table)?;
    // A new lake table is clean (Fluss 1.0); one that exists keeps its layout, legacy
    // if it has `__timestamp` (as Fluss's writers decide, `PaimonUtils.isLegacyTable`).
    let existing = catalog.load_optional(&ident).await?;
    let legacy = existing.as_ref().is_some_and(super::evolve::is_legacy);
    let layout = table_layout(table, legacy)?;
    let lake = match existing {
        // columns an ALTER TABLE added and a crash kept from the lake come now
        Some(lake) => super::evolve::sync_columns(&catalog, lake, &layout).await?,
        None => catalog.ensure_table(&ident, &layout).await?,
    };
    check_field_ids(&lake, &layout)?;
    Ok(Box::new(IcebergTiering {
        catalog,
        lake,
        layout,
        path: table.path.to_string(),
        primary_key: table.info.has_primary_key(),
        // the Fluss columns come first in the lake rows, in schema order
        key_columns: table.info.get_schema().primary_key_indexes(),
        data_files: Vec::new(),
        delete_files: Vec::new(),
    }))
}

#[async_trait]
impl LakeWriter for IcebergTiering {
    async fn has_snapshots(&mut self) -> Result<bool> {
        Ok(self.lake.metadata().current_snapshot().is_some())
    }

    async fn write_bucket(
        &mut self,
        bucket: &BucketLocation,
        batches: BoxStream<'_, Result<ChangelogBatch>>,
    ) -> Result<usize> {
        let partition = partition_of(&self.lake, bucket)?;
        let (lake, layout, path) = (&self.lake, &self.layout, &self.path);
        let with_table = |e: Error| e.with_context("table", path.clone());
        let mut records = 0;
        let b = bucket.bucket;
        if self.primary_key {
            let rounds: Vec<(RecordBatch, Vec<ChangeType>)> = batches
                .and_then(|batch| {
                    records += batch.batch.num_rows();
                    let rows = lake_rows(&batch, b, layout);
                    std::future::ready(rows.map(|rows| (rows, batch.change_types)))
                })
                .try_collect()
                .await?;
            let (upserts, deletes) = fold_changes(&rounds, &self.key_columns)?;
            let rows = futures::stream::iter(upserts.into_iter().map(Ok));
            self.data_files.extend(
                write_data_files(lake, partition.clone(), rows)
                    .await
                    .map_err(with_table)?,
            );
            self.delete_files.extend(
                write_equality_deletes(lake, partition, deletes)
                    .await
                    .map_err(with_table)?,
            );
        } else {
            let rows = batches.and_then(|batch| {
                records += batch.batch.num_rows();
                std::future::ready(lake_rows(&batch, b, layout))
            });
            self.data_files.extend(
                write_data_files(lake, partition, rows)
                    .await
                    .map_err(with_table)?,
            );
        }
        Ok(records)
    }

    async fn prepare(&mut self) -> Result<Option<i64>> {
        // the data files are complete as written; the commit is found by its offsets
        Ok(None)
    }

    async fn commit(self: Box<Self>, pending: &PendingCommit) -> Result<i64> {
        let name = self.path.clone();
        let summary: HashMap<String, String> = [
            (FLUSS_OFFSETS_PROPERTY.to_string(), pending.offsets.clone()),
            (
                COMMIT_USER_PROPERTY.to_string(),
                TIERING_COMMIT_USER.to_string(),
            ),
        ]
        .into();
        if self.primary_key {
            let delta = RowDelta {
                data_files: self.data_files,
                delete_files: self.delete_files,
                properties: summary,
            };
            return Ok(commit_row_delta(&self.catalog, &self.lake, delta).await?.1);
        }
        let tx = Transaction::new(&self.lake);
        let append = tx
            .fast_append()
            .add_data_files(self.data_files)
            .set_snapshot_properties(summary);
        let committed = append
            .apply(tx)
            .map_err(lake_error("cannot commit the Iceberg snapshot", &name))?
            .commit(&self.catalog)
            .await
            .map_err(lake_error("cannot commit the Iceberg snapshot", &name))?;
        find_tiering_snapshot(&committed, &pending.offsets).ok_or_else(|| {
            Error::internal("committed Iceberg snapshot not found").with_context("table", &name)
        })
    }
}

/// The snapshot whose summary names `pending`'s offsets file, if it was committed.
pub(in crate::lake) async fn find_commit(
    location: &LakeLocation,
    table: &FlussTable,
    pending: &PendingCommit,
) -> Result<Option<i64>> {
    let (catalog, ident) = hadoop_table(location, table)?;
    match catalog.load(&ident).await {
        Ok(t) => Ok(find_tiering_snapshot(&t, &pending.offsets)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The rows written carry the field ids the layout assigned; the table (created now
/// or by an earlier run) must have the same ones.
fn check_field_ids(table: &Table, layout: &IcebergTableLayout) -> Result<()> {
    let current = table.metadata().current_schema();
    for field in layout.schema.as_struct().fields() {
        let id = current.field_by_name(&field.name).map(|f| f.id);
        if id != Some(field.id) {
            return Err(Error::data_invalid(format!(
                "the Iceberg table's column '{}' does not have the field id the Fluss schema gives it ({})",
                field.name, field.id
            ))
            .with_context("table", table.identifier().to_string()));
        }
    }
    Ok(())
}
