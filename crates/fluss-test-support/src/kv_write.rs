//! `PutKv` as a tablet server's `KvTablet` applies it: each record of the client's
//! `KvRecordBatch` (an encoded key, and a row in the table's KV format or none for a
//! delete) is applied to the bucket's live rows, and the changes become one changelog
//! batch appended to the bucket's log: `+I` for a new key, `-U`/`+U` for an updated
//! one, `-D` for a deleted one (a delete of a missing key changes nothing). A partial
//! update (`target_columns`) keeps the other columns of the old row.
//!
//! The live rows are the bucket's changelog replayed ([`crate::kv::bucket_kv`], what
//! `Lookup` answers from), decoded with fluss-rs's own row decoders.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use fluss::metadata::{JsonSerde, RowType, Schema};
use fluss::record::ChangeType;
use fluss::record::kv::{KvRecordBatch, KvRecordReadContext, SchemaGetter};
use fluss::row::RowDecoder;
use fluss_datafusion::log::{ArrowCompression, LogBatchBuilder};

use crate::errors::{self, ApiError};
use crate::kv::{BucketKv, bucket_kv};
use crate::log::ServedLog;
use crate::model::ServedTable;

/// The schemas of a served table by id, for fluss-rs's KV record decoding.
struct ServedSchemas(HashMap<i16, Arc<Schema>>);

impl SchemaGetter for ServedSchemas {
    fn get_schema(&self, schema_id: i16) -> fluss::error::Result<Arc<Schema>> {
        self.0
            .get(&schema_id)
            .cloned()
            .ok_or_else(|| fluss::error::Error::IllegalArgument {
                message: format!("unknown schema id {schema_id}"),
            })
    }
}

fn corrupt(what: impl std::fmt::Display) -> ApiError {
    ApiError::new(errors::CORRUPT_MESSAGE, what.to_string())
}

/// The changelog batch (Fluss log batch bytes, at offset 0) that applying `records` to
/// the bucket whose log is `log` writes; `None` when nothing changes.
pub fn changelog_of_put(
    (database, name): (&str, &str),
    table: &ServedTable,
    log: &ServedLog,
    records: &[u8],
    target_columns: &[i32],
) -> Result<Option<Bytes>, ApiError> {
    let mut schemas = HashMap::new();
    for (id, json) in &table.schemas {
        let value: serde_json::Value = serde_json::from_slice(json).map_err(corrupt)?;
        let schema = Schema::deserialize_json(&value).map_err(corrupt)?;
        let id = i16::try_from(*id).map_err(corrupt)?;
        schemas.insert(id, Arc::new(schema));
    }
    let latest_id = i16::try_from(table.schema_id).map_err(corrupt)?;
    let latest = schemas
        .get(&latest_id)
        .cloned()
        .ok_or_else(|| corrupt(format!("schema {latest_id} unknown")))?;
    let row_type = latest.row_type().clone();
    let arrow = fluss::record::to_arrow_schema(&row_type).map_err(corrupt)?;
    let kv_format = crate::kv::table_info(database, name, table)
        .map_err(corrupt)?
        .get_table_config()
        .get_kv_format()
        .map_err(corrupt)?;
    let live: BucketKv = bucket_kv(database, name, table, log)
        .map_err(|e| ApiError::new(errors::UNKNOWN_SERVER_ERROR, e))?;

    let batch = KvRecordBatch::new(Bytes::copy_from_slice(records), 0);
    let batch_schema = batch.schema_id().map_err(corrupt)?;
    let context = KvRecordReadContext::new(kv_format, Arc::new(ServedSchemas(schemas.clone())));
    let kv_records = batch.records(&context).map_err(corrupt)?;
    let decoder = kv_records.decoder_arc();
    if batch_schema != latest_id {
        return Err(corrupt(format!(
            "the test server applies writes of the latest schema ({latest_id}) only, not {batch_schema}"
        )));
    }
    // the batch's rows and the live rows are all of the latest schema: one decoder
    let rows = Rows {
        row_type: &row_type,
        arrow: arrow.clone(),
        decoder: decoder.clone(),
    };
    // what this batch has written so far, over the live rows
    let mut written: HashMap<Bytes, Option<RecordBatch>> = HashMap::new();
    let mut changes: Vec<(ChangeType, RecordBatch)> = Vec::new();
    for record in kv_records {
        let record = record.map_err(corrupt)?;
        let key = record.key().clone();
        let old = match written.get(&key) {
            Some(row) => row.clone(),
            None => match live.get(&key) {
                Some(value) => Some(rows.stored(value, &schemas)?),
                None => None,
            },
        };
        let new = match record.row(decoder.as_ref()) {
            Some(row) => Some(rows.one(&row)?),
            None => None,
        };
        let after = match (new, &old) {
            (Some(new), Some(old)) if !target_columns.is_empty() => {
                Some(merged(old, &new, target_columns)?)
            }
            (new, _) => new,
        };
        match (&old, &after) {
            (Some(old), Some(after)) => {
                changes.push((ChangeType::UpdateBefore, old.clone()));
                changes.push((ChangeType::UpdateAfter, after.clone()));
            }
            (None, Some(after)) => changes.push((ChangeType::Insert, after.clone())),
            (Some(old), None) => changes.push((ChangeType::Delete, old.clone())),
            (None, None) => {}
        }
        written.insert(key, after);
    }
    if changes.is_empty() {
        return Ok(None);
    }
    let (types, batches): (Vec<ChangeType>, Vec<RecordBatch>) = changes.into_iter().unzip();
    let rows = concat_batches(&arrow, &batches).map_err(corrupt)?;
    let bytes = LogBatchBuilder::new(latest_id, ArrowCompression::None)
        .build(0, 0, &rows, Some(&types))
        .map_err(corrupt)?;
    Ok(Some(bytes))
}

/// Rows of the latest schema as one-row Arrow batches.
struct Rows<'a> {
    row_type: &'a RowType,
    arrow: SchemaRef,
    decoder: Arc<dyn RowDecoder>,
}

impl Rows<'_> {
    /// One decoded KV row as a one-row batch.
    fn one(&self, row: &dyn fluss::row::InternalRow) -> Result<RecordBatch, ApiError> {
        let mut builder =
            fluss::record::RowAppendRecordBatchBuilder::new(self.row_type).map_err(corrupt)?;
        builder.append(row).map_err(corrupt)?;
        let batch = builder.build_arrow_record_batch().map_err(corrupt)?;
        RecordBatch::try_new(self.arrow.clone(), batch.columns().to_vec()).map_err(corrupt)
    }

    /// A live row as stored (schema id, then the row in the KV format).
    fn stored(
        &self,
        value: &Bytes,
        schemas: &HashMap<i16, Arc<Schema>>,
    ) -> Result<RecordBatch, ApiError> {
        let (id, row) = value
            .split_first_chunk::<2>()
            .ok_or_else(|| corrupt("a stored value without its schema id"))?;
        let id = i16::from_le_bytes(*id);
        let schema = schemas
            .get(&id)
            .ok_or_else(|| corrupt(format!("stored row of unknown schema {id}")))?;
        if schema.row_type() != self.row_type {
            return Err(corrupt(
                "the test server updates rows of the latest schema only",
            ));
        }
        let row = self.decoder.decode(row);
        self.one(&row)
    }
}

/// `old` with the `target` columns of `new` (a partial update).
fn merged(old: &RecordBatch, new: &RecordBatch, target: &[i32]) -> Result<RecordBatch, ApiError> {
    let columns = (0..old.num_columns())
        .map(|i| {
            if target.contains(&(i as i32)) {
                new.column(i).clone()
            } else {
                old.column(i).clone()
            }
        })
        .collect();
    RecordBatch::try_new(old.schema(), columns).map_err(corrupt)
}
