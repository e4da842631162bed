//! What the shell's `\d` and `\d <table>` show, as Arrow batches so every output
//! format works: databases and tables; a table's columns, keys, buckets, partitions,
//! lake format and snapshot, and per bucket how far the log runs ahead of the lake.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Field, Schema};

use super::FlussSession;
use crate::error::{ErrorKind, Result};
use crate::source::FlussTable;

fn string_column(values: Vec<String>) -> ArrayRef {
    Arc::new(StringArray::from(values))
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )?)
}

fn kind(table: &FlussTable) -> &'static str {
    if table.info.has_primary_key() {
        "primary key"
    } else {
        "log"
    }
}

fn lake_name(table: &FlussTable) -> String {
    table
        .lake_format()
        .map_or_else(|| "-".to_string(), |f| f.to_string().to_lowercase())
}

/// One row of `\d`.
#[derive(Default)]
struct Listed {
    database: String,
    table: String,
    kind: String,
    buckets: Option<i64>,
    partitioned_by: String,
    lake: String,
    lake_snapshot: Option<i64>,
    virtual_tables: String,
}

/// The virtual tables a Fluss table offers (`t$changelog`, `t$binlog` for a
/// primary-key table, and `t$lake`, `t$lake$snapshots` with a lake).
fn virtual_tables(table: &FlussTable) -> String {
    let name = table.path.table();
    let mut names = vec![format!("{name}$changelog")];
    if table.info.has_primary_key() {
        names.push(format!("{name}$binlog"));
    }
    if table.lake_format().is_some() {
        names.push(format!("{name}$lake"));
        names.push(format!("{name}$lake$snapshots"));
    }
    names.join(", ")
}

/// `\d`: one row per table of every database: Fluss tables with their virtual
/// tables, then the session's views and external tables (databases without tables
/// get a row with an empty table name).
pub async fn list_tables(session: &FlussSession) -> Result<RecordBatch> {
    let store = session.source();
    let catalog = session.context().catalog(super::CATALOG);
    let mut rows = Vec::new();
    for db in store.list_databases().await? {
        let tables = store.list_tables(&db).await?;
        let schema = catalog.as_ref().and_then(|c| c.schema(&db));
        let session_tables: Vec<String> = schema
            .as_ref()
            .map(|s| s.table_names())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| !tables.contains(t))
            .collect();
        if tables.is_empty() && session_tables.is_empty() {
            rows.push(Listed {
                database: db.clone(),
                ..Default::default()
            });
        }
        for name in tables {
            let path = fluss::metadata::TablePath::new(db.as_str(), name.as_str());
            let table = match store.get_table(&path).await {
                Ok(table) => table,
                // listed as damaged, not failing the listing (SELECT says why)
                Err(e) if e.kind() == ErrorKind::DataInvalid => {
                    rows.push(Listed {
                        database: db.clone(),
                        table: name,
                        kind: "damaged".to_string(),
                        lake: "-".to_string(),
                        ..Default::default()
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            let snapshot = store.readable_lake_snapshot(&table).await?;
            rows.push(Listed {
                database: db.clone(),
                kind: kind(&table).to_string(),
                buckets: Some(i64::from(table.info.get_num_buckets())),
                partitioned_by: table.info.get_partition_keys().join(", "),
                lake: lake_name(&table),
                lake_snapshot: snapshot.map(|s| s.snapshot_id),
                virtual_tables: virtual_tables(&table),
                table: name,
            });
        }
        for name in session_tables {
            let provider = match &schema {
                Some(schema) => schema.table(&name).await?,
                None => None,
            };
            let kind = match provider.map(|p| p.table_type()) {
                Some(datafusion::datasource::TableType::View) => "view (this session)",
                _ => "external table (this session)",
            };
            rows.push(Listed {
                database: db.clone(),
                table: name,
                kind: kind.to_string(),
                lake: "-".to_string(),
                ..Default::default()
            });
        }
    }
    let column =
        |f: fn(&Listed) -> &String| string_column(rows.iter().map(|r| f(r).clone()).collect());
    batch(vec![
        ("database", column(|r| &r.database)),
        ("table", column(|r| &r.table)),
        ("kind", column(|r| &r.kind)),
        (
            "buckets",
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.buckets).collect::<Vec<_>>(),
            )),
        ),
        ("partitioned_by", column(|r| &r.partitioned_by)),
        ("lake", column(|r| &r.lake)),
        (
            "lake_snapshot",
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.lake_snapshot).collect::<Vec<_>>(),
            )),
        ),
        ("virtual_tables", column(|r| &r.virtual_tables)),
    ])
}

/// `\d <table>`: columns, table properties, and per-bucket lake/log offsets.
pub async fn describe_table(session: &FlussSession, name: &[String]) -> Result<Vec<RecordBatch>> {
    let store = session.source();
    let path = session.table_path(name)?;
    let table = store.get_table(&path).await?;
    let schema = table.info.get_schema();
    let pk = table.info.get_primary_keys().clone();

    let mut col_names = Vec::new();
    let mut col_types = Vec::new();
    let mut col_nullable = Vec::new();
    let mut col_keys = Vec::new();
    for column in schema.columns() {
        let data_type = column.data_type();
        col_names.push(column.name().to_string());
        col_types.push(
            data_type
                .to_string()
                .trim_end_matches(" NOT NULL")
                .to_string(),
        );
        col_nullable.push(if data_type.is_nullable() { "YES" } else { "NO" }.to_string());
        let mut key = Vec::new();
        if pk.iter().any(|k| k == column.name()) {
            key.push("PRI");
        }
        if table
            .info
            .get_partition_keys()
            .iter()
            .any(|k| k == column.name())
        {
            key.push("PART");
        }
        if table
            .info
            .get_bucket_keys()
            .iter()
            .any(|k| k == column.name())
        {
            key.push("BUCKET");
        }
        col_keys.push(key.join(","));
    }
    let columns = batch(vec![
        ("column", string_column(col_names)),
        ("type", string_column(col_types)),
        ("nullable", string_column(col_nullable)),
        ("key", string_column(col_keys)),
    ])?;

    let snapshot = store.readable_lake_snapshot(&table).await?;
    let partitions = if table.info.is_partitioned() {
        store
            .list_partitions(&table)
            .await?
            .iter()
            .map(|p| p.get_partition_name())
            .collect::<Vec<_>>()
    } else {
        Vec::new()
    };
    let none = || "-".to_string();
    let or_none = |v: String| if v.is_empty() { none() } else { v };
    let info: Vec<(&str, String)> = vec![
        ("table", path.to_string()),
        ("kind", kind(&table).to_string()),
        ("primary key", or_none(pk.join(", "))),
        (
            "bucket key",
            or_none(table.info.get_bucket_keys().join(", ")),
        ),
        ("buckets", table.info.get_num_buckets().to_string()),
        (
            "partitioned by",
            or_none(table.info.get_partition_keys().join(", ")),
        ),
        ("partitions", or_none(partitions.join(", "))),
        ("lake format", lake_name(&table)),
        (
            "lake snapshot",
            snapshot
                .as_ref()
                .map_or_else(none, |s| s.snapshot_id.to_string()),
        ),
    ];
    let (keys, values): (Vec<String>, Vec<String>) =
        info.into_iter().map(|(k, v)| (k.to_string(), v)).unzip();
    let properties = batch(vec![
        ("property", string_column(keys)),
        ("value", string_column(values)),
    ])?;

    let mut bucket_names = Vec::new();
    let mut lake_offsets = Vec::new();
    let mut log_ends = Vec::new();
    let mut lags = Vec::new();
    let locations = store.buckets(&table).await?;
    let all_offsets = store.bucket_offsets(&table, &locations).await?;
    for (location, offsets) in locations.into_iter().zip(all_offsets) {
        let tiered = snapshot
            .as_ref()
            .and_then(|s| s.offsets.get(location.partition_id(), location.bucket));
        let from = tiered.unwrap_or(offsets.earliest);
        bucket_names.push(match &location.partition {
            Some((_, p)) => format!("{p}/{}", location.bucket),
            None => location.bucket.to_string(),
        });
        lake_offsets.push(tiered);
        log_ends.push(offsets.high_watermark);
        lags.push((offsets.high_watermark - from).max(0));
    }
    let buckets = batch(vec![
        ("bucket", string_column(bucket_names)),
        ("lake_offset", Arc::new(Int64Array::from(lake_offsets))),
        ("log_end", Arc::new(Int64Array::from(log_ends))),
        ("tail_records", Arc::new(Int64Array::from(lags))),
    ])?;
    Ok(vec![columns, properties, buckets])
}
