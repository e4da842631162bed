//! The key-value store a tablet server answers `Lookup` from, rebuilt from a bucket's
//! served changelog.
//!
//! A Fluss tablet server keeps each primary-key bucket's latest rows in RocksDB, keyed
//! by the primary key as its `KeyEncoder` writes it, each value the row's schema id
//! (2 bytes, little endian) followed by the row in the table's KV format
//! (`ValueEncoder.encodeValue`, `KvTablet`). The server here replays the bucket's
//! changelog (`+I`/`+U` put, `-D` removes, `-U` is the previous image and changes
//! nothing) with fluss-rs's own key and row encoders, so a `Lookuper` reads exactly
//! what it would read from a real tablet server.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use fluss::metadata::{JsonSerde, Schema, TableDescriptor, TableInfo, TablePath};
use fluss::record::ChangeType;
use fluss::row::ColumnarRow;
use fluss::row::encode::{KeyEncoder, KeyEncoderFactory, RowEncoder, RowEncoderFactory};
use fluss::row::field_getter::FieldGetter;
use fluss_datafusion::log::BatchIterator;

use crate::log::ServedLog;
use crate::model::ServedTable;

/// The live rows of one bucket: encoded primary key -> encoded value.
pub type BucketKv = HashMap<Bytes, Bytes>;

/// Rebuilds the key-value state of one bucket of `table` from its log.
///
/// Fails (with the reason a server would give) when the log does not start at offset 0:
/// the state of the keys written before the log's start is not in it.
pub fn bucket_kv(
    database: &str,
    name: &str,
    table: &ServedTable,
    log: &ServedLog,
) -> Result<BucketKv, String> {
    // A tablet server's KV store holds every key ever written, however much of the
    // log it has moved to remote storage or deleted: replay the remote segments,
    // then the local log.
    if log.log_start_offset() != 0 && log.expired().is_none() {
        return Err(format!(
            "the test server answers lookups only for buckets whose log starts at \
             offset 0 (this one starts at {})",
            log.log_start_offset()
        ));
    }
    let mut changelog: Vec<Bytes> = log.expired().cloned().into_iter().collect();
    changelog.extend(
        log.remote()
            .map(|r| {
                r.segments
                    .iter()
                    .map(|s| s.bytes.clone())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default(),
    );
    changelog.push(log.records().clone());
    let info = table_info(database, name, table)?;
    let config = info.get_table_config();
    let kv_format = config.get_kv_format().map_err(|e| e.to_string())?;
    let lake_format = config.get_datalake_format().map_err(|e| e.to_string())?;
    let kv_version = config.get_kv_format_version().map_err(|e| e.to_string())?;
    let physical_keys = info.get_physical_primary_keys().to_vec();
    let mut encoders: BTreeMap<i16, SchemaEncoders> = BTreeMap::new();
    let mut kv = BucketKv::new();
    for batch in changelog.into_iter().flat_map(BatchIterator::new) {
        let batch = batch.map_err(|e| e.to_string())?;
        let schema_id = batch.schema_id();
        let encoders = match encoders.entry(schema_id) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let json = table.schemas.get(&i32::from(schema_id)).ok_or_else(|| {
                    format!("schema {schema_id} of table {database}.{name} unknown")
                })?;
                e.insert(SchemaEncoders::new(
                    json,
                    &physical_keys,
                    (kv_format, &lake_format, kv_version),
                    info.is_default_bucket_key(),
                )?)
            }
        };
        let rows = batch
            .decode(&encoders.arrow, None)
            .map_err(|e| e.to_string())?;
        let change_types = batch.change_types().map_err(|e| e.to_string())?;
        encoders.apply(schema_id, Arc::new(rows), &change_types, &mut kv)?;
    }
    Ok(kv)
}

/// The fluss-rs `TableInfo` of a served table, as a client would build it.
pub(crate) fn table_info(
    database: &str,
    name: &str,
    table: &ServedTable,
) -> Result<TableInfo, String> {
    let json: serde_json::Value =
        serde_json::from_slice(&table.table_json).map_err(|e| e.to_string())?;
    let descriptor = TableDescriptor::deserialize_json(&json).map_err(|e| e.to_string())?;
    Ok(TableInfo::of(
        TablePath::new(database, name),
        table.table_id,
        table.schema_id,
        descriptor,
        table.created_time,
        table.modified_time,
    ))
}

/// How the rows of one schema version are keyed and stored.
struct SchemaEncoders {
    arrow: datafusion::arrow::datatypes::SchemaRef,
    row_type: Arc<fluss::metadata::RowType>,
    key: Box<dyn KeyEncoder>,
    value: Box<dyn RowEncoder>,
    getters: Box<[FieldGetter]>,
}

impl SchemaEncoders {
    fn new(
        schema_json: &[u8],
        physical_keys: &[String],
        (kv_format, lake_format, kv_version): (
            fluss::metadata::KvFormat,
            &Option<fluss::metadata::DataLakeFormat>,
            i32,
        ),
        default_bucket_key: bool,
    ) -> Result<Self, String> {
        let json: serde_json::Value =
            serde_json::from_slice(schema_json).map_err(|e| e.to_string())?;
        let schema = Schema::deserialize_json(&json).map_err(|e| e.to_string())?;
        let row_type = schema.row_type().clone();
        let arrow = fluss::record::to_arrow_schema(&row_type).map_err(|e| e.to_string())?;
        // Keyed by name in the whole row, as `KvTablet` keys the rows it writes; a
        // `Lookuper` encodes the same fields of its key-only row to the same bytes.
        let key = KeyEncoderFactory::of_primary_key_encoder(
            &row_type,
            physical_keys,
            lake_format,
            kv_version,
            default_bucket_key,
        )
        .map_err(|e| e.to_string())?;
        let value =
            RowEncoderFactory::create(kv_format, row_type.clone()).map_err(|e| e.to_string())?;
        Ok(Self {
            arrow,
            getters: FieldGetter::create_field_getters(&row_type),
            row_type: Arc::new(row_type),
            key,
            value: Box::new(value),
        })
    }

    /// Replays one decoded changelog batch into `kv`.
    fn apply(
        &mut self,
        schema_id: i16,
        rows: Arc<RecordBatch>,
        change_types: &fluss_datafusion::log::ChangeTypes,
        kv: &mut BucketKv,
    ) -> Result<(), String> {
        let mut row = ColumnarRow::new(rows.clone(), self.row_type.clone(), 0, None)
            .map_err(|e| e.to_string())?;
        for i in 0..rows.num_rows() {
            row.set_row_id(i);
            let change = if change_types.is_empty() {
                ChangeType::AppendOnly
            } else {
                change_types.get(i)
            };
            if change == ChangeType::UpdateBefore {
                continue;
            }
            let key = self.key.encode_key(&row).map_err(|e| e.to_string())?;
            if change == ChangeType::Delete {
                kv.remove(&key);
                continue;
            }
            self.value.start_new_row().map_err(|e| e.to_string())?;
            for (pos, getter) in self.getters.iter().enumerate() {
                let datum = getter.get_field(&row).map_err(|e| e.to_string())?;
                self.value
                    .encode_field(pos, datum)
                    .map_err(|e| e.to_string())?;
            }
            let encoded = self.value.finish_row().map_err(|e| e.to_string())?;
            let mut value = Vec::with_capacity(2 + encoded.len());
            value.extend_from_slice(&schema_id.to_le_bytes());
            value.extend_from_slice(&encoded);
            kv.insert(key, Bytes::from(value));
        }
        Ok(())
    }
}
