//! Primary-key lookups on a cluster: the tablet servers answer each key from their KV
//! store (the Lookup RPC), through fluss-rs's `Lookuper`, which encodes the key as the
//! server keys its rows, finds the key's bucket and batches the keys of concurrent
//! lookups per server (`client/table/lookup.rs`, `client/lookup/lookup_sender.rs`).
//!
//! A `Lookuper` costs a metadata request to make and holds the table's schema, so the
//! source keeps a pool of them per (table id, schema id) (they cost no request once
//! the table is known); a lookup of many keys runs up to [`CONCURRENT_LOOKUPS`] of
//! them at once, so the client sends the keys in a few batched requests instead of
//! one round trip each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use fluss::client::{FlussConnection, Lookuper};
use fluss::metadata::{RowType, TableInfo, TablePath};
use fluss::row::ColumnarRow;
use fluss::row::encode::KeyEncoderFactory;
use futures::future::try_join_all;

use super::ClientResult;

/// Most lookups in flight at once for one statement. A `Lookuper` has one key in
/// flight (`lookup` takes it mutably), and the client sends the keys queued within
/// one batch window together, so a statement's keys go out in
/// `keys / CONCURRENT_LOOKUPS` rounds of batched requests: 1,000 keys with 32
/// lookupers took 32 rounds (111 ms on loopback), with 512 two.
pub(super) const CONCURRENT_LOOKUPS: usize = 512;

/// Idle lookupers by (table id, schema id).
#[derive(Default)]
pub(super) struct LookuperPool {
    idle: Mutex<HashMap<(i64, i32), Vec<Lookuper>>>,
}

impl LookuperPool {
    fn take(&self, table: (i64, i32), n: usize) -> Vec<Lookuper> {
        let Ok(mut idle) = self.idle.lock() else {
            return Vec::new();
        };
        let pool = idle.entry(table).or_default();
        let keep = pool.len().saturating_sub(n);
        pool.split_off(keep)
    }

    fn give_back(&self, table: (i64, i32), lookupers: Vec<Lookuper>) {
        if let Ok(mut idle) = self.idle.lock() {
            let pool = idle.entry(table).or_default();
            pool.extend(lookupers);
            pool.truncate(CONCURRENT_LOOKUPS);
        }
    }
}

/// Whether fluss-rs can encode the primary keys of `table` for a lookup, checked
/// as `TableLookup::create_lookuper` builds its encoder: some layouts have no key
/// encoding (an Iceberg table's key encoder takes one column, so a composite key of
/// a table of kv format version 1 has none), and their keys are scanned instead.
pub(super) fn keys_encodable(table: &TableInfo) -> bool {
    let config = table.get_table_config();
    let (Ok(lake_format), Ok(version)) =
        (config.get_datalake_format(), config.get_kv_format_version())
    else {
        return false;
    };
    table
        .row_type()
        .project_with_field_names(table.get_primary_keys())
        .and_then(|key_type| {
            KeyEncoderFactory::of_primary_key_encoder(
                &key_type,
                table.get_physical_primary_keys(),
                &lake_format,
                version,
                table.is_default_bucket_key(),
            )?;
            if !table.is_default_bucket_key() {
                KeyEncoderFactory::of_bucket_key_encoder(
                    &key_type,
                    table.get_bucket_keys(),
                    &lake_format,
                )?;
            }
            Ok(())
        })
        .is_ok()
}

/// What one statement's lookups need, moved onto the client's runtime.
#[derive(Clone)]
pub(super) struct LookupCall {
    pub connection: Arc<FlussConnection>,
    pub pool: Arc<LookuperPool>,
    pub path: TablePath,
    /// (table id, schema id): lookupers are kept per schema they decode to.
    pub table: (i64, i32),
    /// The primary-key columns of the table's latest schema.
    pub key_type: Arc<RowType>,
    pub keys: Arc<RecordBatch>,
}

/// The rows of `call.keys` as the tablet servers hold them now, as batches of the
/// client's Arrow layout of the table's latest schema (keys without a row yield none).
pub(super) async fn lookup(call: LookupCall) -> ClientResult<Vec<RecordBatch>> {
    let keys = call.keys.num_rows();
    if keys == 0 {
        return Ok(Vec::new());
    }
    let wanted = keys.min(CONCURRENT_LOOKUPS);
    let mut lookupers = call.pool.take(call.table, wanted);
    if lookupers.len() < wanted {
        let table = call.connection.get_table(&call.path).await?;
        while lookupers.len() < wanted {
            lookupers.push(table.new_lookup()?.create_lookuper()?);
        }
    }
    // Lookuper i answers keys i, i + n, i + 2n, …
    let n = lookupers.len();
    let runs = lookupers.into_iter().enumerate().map(|(i, mut lookuper)| {
        let (keys, key_type) = (call.keys.clone(), call.key_type.clone());
        async move {
            let mut row = ColumnarRow::new(keys.clone(), key_type, i, None)?;
            let mut found = Vec::new();
            for at in (i..keys.num_rows()).step_by(n) {
                row.set_row_id(at);
                // decoded once: a key without a row gives an empty batch
                let rows = lookuper.lookup(&row).await?.to_record_batch()?;
                if rows.num_rows() > 0 {
                    found.push(rows);
                }
            }
            Ok::<_, fluss::error::Error>((lookuper, found))
        }
    });
    let done = try_join_all(runs).await?;
    let mut batches = Vec::new();
    let mut idle = Vec::with_capacity(n);
    for (lookuper, found) in done {
        idle.push(lookuper);
        batches.extend(found);
    }
    call.pool.give_back(call.table, idle);
    Ok(batches)
}

/// The client's batches as one batch of `schema` (the table's Arrow schema as this
/// crate reads it), columns matched by position and cast where the client's Arrow
/// types differ.
pub(super) fn as_table_batch(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> crate::error::Result<RecordBatch> {
    let converted = batches
        .iter()
        .map(|b| crate::cast::by_position(b.clone(), schema))
        .collect::<crate::error::Result<Vec<_>>>()?;
    Ok(concat_batches(schema, &converted)?)
}
