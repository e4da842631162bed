//! Embedding: an application registers the `fluss` catalog in its own DataFusion
//! `SessionContext` and runs a union read (lake snapshot + log tail).
//!
//! ```text
//! cargo run --example embed
//! ```

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::provider::FlussCatalog;
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::tier;

fn events(ids: &[i64], users: &[&str]) -> Result<RecordBatch, Box<dyn std::error::Error>> {
    Ok(RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(ids.to_vec())) as _),
        ("user", Arc::new(StringArray::from(users.to_vec())) as _),
    ])?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. A store in a temporary directory with one lake-enabled log table.
    let dir = tempfile::tempdir()?;
    let root = dir.path().to_str().ok_or("temporary path is not UTF-8")?;
    let store = Arc::new(LocalStore::open(root).await?);
    store.create_database("app", None, true).await?;
    let path = TablePath::new("app", "events");
    let schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("user", DataTypes::string())
        .build()?;
    let descriptor = TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(2), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .build()?;
    store.create_table(&path, &descriptor, true).await?;

    // 2. Three rows tiered into the Paimon lake, two more left in the log tail.
    store
        .append(&path, &events(&[1, 2, 3], &["ann", "bob", "ann"])?)
        .await?;
    let tiered = tier(&store, &path).await?;
    store
        .append(&path, &events(&[4, 5], &["cid", "ann"])?)
        .await?;
    println!(
        "tiered lake snapshot {:?} with {} records; 2 rows left in the log tail",
        tiered.snapshot_id, tiered.records
    );

    // 3. The application's own context, with the Fluss catalog registered.
    let ctx = SessionContext::new();
    ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store.clone())));
    let sql = "SELECT user, count(*) AS events, min(id) AS first, max(id) AS last \
               FROM fluss.app.events GROUP BY user ORDER BY user";
    let batches = ctx.sql(sql).await?.collect().await?;
    println!("{sql}\n{}", pretty_format_batches(&batches)?);

    let lake = ctx
        .sql("SELECT count(*) AS lake_rows FROM fluss.app.\"events$lake\"")
        .await?
        .collect()
        .await?;
    println!("{}", pretty_format_batches(&lake)?);
    Ok(())
}
