//! Tiering a log table into Iceberg, as Fluss's Iceberg tiering does
//! (`IcebergLakeWriter` / `IcebergLakeCommitter`): one data file per (partition,
//! bucket) with the system columns, committed as one append snapshot whose summary
//! has `fluss-offsets` = the offsets file and `commit-user` = `__fluss_lake_tiering`.
//!
//! Order, as for Paimon (`paimon/tiering.rs`): data files (invisible until
//! committed), then the offsets file and a pending marker, then the commit (creating
//! `v<N+1>.metadata.json`), then registration in `laketable.json`. A re-run first
//! resolves a pending marker: a committed snapshot that carries its offsets file is
//! registered, otherwise the offsets file is discarded.
//!
//! Primary-key tables need equality-delete files, which iceberg 0.10.1 can write but
//! not commit: not supported yet.

use futures::TryStreamExt;
use iceberg::TableIdent;
use iceberg::spec::{DataFile, DataFileFormat, Literal, PartitionKey, Struct, Transform};
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use parquet58::basic::{Compression, ZstdLevel};
use parquet58::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};

use super::hadoop::HadoopCatalog;
use super::schema::{IcebergTableLayout, lake_rows, table_layout};
use super::{IcebergCatalogType, lake_error};
use crate::error::{Error, ErrorKind, Result};
use crate::lake::arrow_bridge::to_arrow58;
use crate::lake::tiering::{
    PendingBucket, TieringResult, check_lake_table_is_ours, discard_pending, new_offsets_path,
    pending_buckets, read_pending_marker, register_and_finish, write_offsets_and_marker,
};
use crate::lake::{FLUSS_OFFSETS_PROPERTY, LakeLocation, TIERING_COMMIT_USER};
use crate::log::LogReadOptions;
use crate::source::local_store::WriteGuard;
use crate::source::{BucketLocation, FlussSource, FlussTable, LocalStore};

/// Snapshot summary key of the committing user (`IcebergLakeCommitter.COMMITTER_USER`).
const COMMIT_USER_PROPERTY: &str = "commit-user";

#[derive(Debug, Serialize, Deserialize)]
struct PendingTiering {
    offsets: String,
}

/// The tiering snapshot of the table that recorded `offsets`, if committed.
fn find_tiering_snapshot(table: &Table, offsets: &str) -> Option<i64> {
    table.metadata().snapshots().find_map(|s| {
        let p = &s.summary().additional_properties;
        (p.get(COMMIT_USER_PROPERTY).map(String::as_str) == Some(TIERING_COMMIT_USER)
            && p.get(FLUSS_OFFSETS_PROPERTY).map(String::as_str) == Some(offsets))
        .then(|| s.snapshot_id())
    })
}

/// Finishes or discards an interrupted run; returns the snapshot it registered.
async fn recover(
    store: &LocalStore,
    guard: &WriteGuard<'_>,
    table: &FlussTable,
    catalog: &HadoopCatalog,
    ident: &TableIdent,
) -> Result<Option<i64>> {
    let Some(pending) = read_pending_marker::<PendingTiering>(store, table).await? else {
        return Ok(None);
    };
    let committed = match catalog.load(ident).await {
        Ok(t) => find_tiering_snapshot(&t, &pending.offsets),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    match committed {
        Some(snapshot_id) => {
            register_and_finish(store, guard, table, snapshot_id, &pending.offsets).await?
        }
        // Never committed: the offsets file is an orphan.
        None => {
            discard_pending(store, table, &pending.offsets).await?;
        }
    }
    Ok(committed)
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

/// Writes one bucket's log range as data files of `partition`.
async fn write_bucket(
    table: &Table,
    layout: &IcebergTableLayout,
    partition: Struct,
    mut batches: impl futures::Stream<Item = Result<crate::log::ChangelogBatch>> + Unpin,
    bucket: i32,
) -> Result<(Vec<DataFile>, usize)> {
    let name = table.identifier().to_string();
    let metadata = table.metadata();
    let schema = metadata.current_schema().clone();
    let key = PartitionKey::new(
        metadata.default_partition_spec().as_ref().clone(),
        schema.clone(),
        partition,
    );
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let rolling = RollingFileWriterBuilder::new_with_default_file_size(
        ParquetWriterBuilder::new(props, schema),
        table.file_io().clone(),
        DefaultLocationGenerator::new(metadata)
            .map_err(lake_error("cannot place data files", &name))?,
        DefaultFileNameGenerator::new(
            format!("fluss-{}", uuid::Uuid::new_v4()),
            None,
            DataFileFormat::Parquet,
        ),
    );
    let mut writer = DataFileWriterBuilder::new(rolling)
        .build(Some(key))
        .await
        .map_err(lake_error("cannot start an Iceberg data file", &name))?;
    let mut records = 0;
    while let Some(batch) = batches.try_next().await? {
        records += batch.batch.num_rows();
        let rows = to_arrow58(&lake_rows(&batch, bucket, &layout.arrow)?)?;
        writer
            .write(rows)
            .await
            .map_err(lake_error("cannot write an Iceberg data file", &name))?;
    }
    let files = writer
        .close()
        .await
        .map_err(lake_error("cannot finish an Iceberg data file", &name))?;
    Ok((files, records))
}

/// Tiers every bucket of a log table from its last tiered offset to its end into the
/// table's Iceberg lake, committing one snapshot.
pub(in crate::lake) async fn tier(
    store: &LocalStore,
    guard: &WriteGuard<'_>,
    table: &FlussTable,
    location: &LakeLocation,
) -> Result<TieringResult> {
    let path = &table.path;
    if table.info.has_primary_key() {
        return Err(Error::unsupported(
            "tiering primary-key tables to Iceberg is not supported yet (log tables are)",
        )
        .with_context("table", path.to_string()));
    }
    if IcebergCatalogType::of(location)? != IcebergCatalogType::Hadoop {
        return Err(
            Error::unsupported("the LocalStore tiers to Iceberg hadoop catalogs only")
                .with_context("table", path.to_string()),
        );
    }
    let catalog = HadoopCatalog::new(&location.warehouse)?;
    let ident = TableIdent::from_strs([path.database(), path.table()])
        .map_err(|e| Error::invalid_input("bad Iceberg table name").with_source(e))?;
    let mut result = TieringResult::default();
    if let Some(id) = recover(store, guard, table, &catalog, &ident).await? {
        result.snapshot_id = Some(id);
        result.recovered = true;
    }

    let (mut offsets, pending) = pending_buckets(store, table).await?;
    if pending.is_empty() {
        return Ok(result);
    }
    let layout = table_layout(table)?;
    let lake = catalog.ensure_table(&ident, &layout).await?;
    check_lake_table_is_ours(store, table, async || {
        Ok(lake.metadata().current_snapshot().is_some())
    })
    .await?;
    check_field_ids(&lake, &layout)?;

    let mut data_files = Vec::new();
    for PendingBucket {
        bucket,
        range,
        high_watermark,
    } in pending
    {
        let partition = partition_of(&lake, &bucket)?;
        let stream = store
            .read_log(table, &bucket, range, LogReadOptions::verified())
            .await?;
        let (files, records) = write_bucket(&lake, &layout, partition, stream, bucket.bucket)
            .await
            .map_err(|e| e.with_context("table", path.to_string()))?;
        data_files.extend(files);
        result.records += records;
        offsets.set(bucket.partition_id(), bucket.bucket, high_watermark);
        result.buckets += 1;
    }

    let offsets_path = new_offsets_path(table);
    let marker = PendingTiering {
        offsets: offsets_path.clone(),
    };
    write_offsets_and_marker(store, table, &offsets_path, &offsets, &marker).await?;

    // commit, with the offsets file in the snapshot summary
    let name = path.to_string();
    let tx = Transaction::new(&lake);
    let append = tx
        .fast_append()
        .add_data_files(data_files)
        .set_snapshot_properties(
            [
                (FLUSS_OFFSETS_PROPERTY.to_string(), offsets_path.clone()),
                (
                    COMMIT_USER_PROPERTY.to_string(),
                    TIERING_COMMIT_USER.to_string(),
                ),
            ]
            .into(),
        );
    let committed = append
        .apply(tx)
        .map_err(lake_error("cannot commit the Iceberg snapshot", &name))?
        .commit(&catalog)
        .await
        .map_err(lake_error("cannot commit the Iceberg snapshot", &name))?;
    let snapshot_id = find_tiering_snapshot(&committed, &offsets_path).ok_or_else(|| {
        Error::internal("committed Iceberg snapshot not found").with_context("table", &name)
    })?;

    register_and_finish(store, guard, table, snapshot_id, &offsets_path).await?;
    result.snapshot_id = Some(snapshot_id);
    Ok(result)
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
