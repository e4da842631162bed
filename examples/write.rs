//! Writing through DataFusion: an application's own `SessionContext`, with the
//! `fluss` catalog registered by `FlussCatalog::register_with`, runs `INSERT`,
//! `UPDATE`, `DELETE` and `MERGE INTO` on a primary-key table, and writes a
//! `DataFrame` with `write_table`. No `FlussSession` is involved.
//!
//! ```text
//! cargo run --example write
//! ```

use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{SessionConfig, SessionContext};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::provider::FlussCatalog;
use fluss_datafusion::source::LocalStore;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. A store with a lake-enabled primary-key table (DDL goes through the store).
    let dir = tempfile::tempdir()?;
    let root = dir.path().to_str().ok_or("temporary path is not UTF-8")?;
    let store = Arc::new(LocalStore::open(root).await?);
    store.create_database("shop", None, true).await?;
    let schema = Schema::builder()
        .column("id", DataTypes::bigint().as_non_nullable())
        .column("name", DataTypes::string())
        .column("price", DataTypes::decimal(10, 2))
        .column("stock", DataTypes::int())
        .primary_key(vec!["id".to_string()])?
        .build()?;
    let descriptor = TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(2), vec![])
        .property("table.datalake.enabled", "true")
        .build()?;
    store
        .create_table(&TablePath::new("shop", "product"), &descriptor, true)
        .await?;

    // 2. The application's context. Numeric literals as exact decimals (as in Flink
    //    and Fluss), and the catalog registered with its write rule.
    let mut config = SessionConfig::new();
    config.options_mut().sql_parser.parse_float_as_decimal = true;
    let ctx = SessionContext::new_with_config(config);
    FlussCatalog::new(store.clone()).register_with(&ctx, "fluss");

    let run = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            let batches = ctx.sql(sql).await?.collect().await?;
            println!("{sql}\n{}", pretty_format_batches(&batches)?);
            Ok::<_, datafusion::error::DataFusionError>(batches)
        }
    };
    run("INSERT INTO fluss.shop.product VALUES \
         (1, 'bolt', 0.25, 100), (2, 'nut', 0.10, 500), (3, 'gear', 12.50, 7)")
    .await?;
    // a partial update: `price` and `name` keep their values
    run("INSERT INTO fluss.shop.product (id, stock) VALUES (2, 450)").await?;
    run("UPDATE fluss.shop.product SET price = price * 2 WHERE stock < 10").await?;
    // a subquery in WHERE selects the keys to delete (never a dropped filter)
    run("DELETE FROM fluss.shop.product WHERE id IN (SELECT 1)").await?;
    run("MERGE INTO fluss.shop.product AS p \
         USING (VALUES (3, 1), (4, 20)) AS d(id, stock) ON p.id = d.id \
         WHEN MATCHED THEN UPDATE SET stock = p.stock + d.stock \
         WHEN NOT MATCHED THEN INSERT VALUES (d.id, 'axle', 3.75, d.stock)")
    .await?;

    // a DataFrame written into the table: upserted by key
    let frame = ctx
        .sql("SELECT CAST(5 AS BIGINT) AS id, 'cog' AS name, 1.20 AS price, 60 AS stock")
        .await?;
    frame
        .write_table("fluss.shop.product", DataFrameWriteOptions::new())
        .await?;

    // a value that does not fit its column is refused, never rounded
    let rounded = run("UPDATE fluss.shop.product SET price = 1.005 WHERE id = 2").await;
    println!(
        "UPDATE ... SET price = 1.005: {}",
        rounded.err().ok_or("not refused")?
    );

    let rows = run("SELECT * FROM fluss.shop.product ORDER BY id").await?;
    let shown = pretty_format_batches(&rows)?.to_string();
    for expected in [
        "| 2  | nut  | 0.10  | 450   |",
        "| 3  | gear | 25.00 | 8     |",
    ] {
        if !shown.contains(expected) {
            return Err(format!("expected the row {expected}").into());
        }
    }
    Ok(())
}
