//! Backfill: read a time range of a Fluss table (lake snapshot + log tail) and write
//! it to parquet, once with SQL `COPY` and once with `DataFrame::write_parquet`.
//!
//! ```text
//! cargo run --example backfill
//! ```

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::logical_expr::cast;
use datafusion::prelude::{ParquetReadOptions, col, lit};
use fluss_datafusion::demo::create_demo;
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::sql::FlussSession;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("store");
    let root = root.to_str().ok_or("temporary path is not UTF-8")?;
    let session = FlussSession::new(Arc::new(LocalStore::open(root).await?)).await?;
    let demo = create_demo(&session, 0.05).await?;
    println!(
        "demo store: {} orders (80% in the lake, 20% in the log tail)",
        demo.orders
    );

    // 1. SQL: COPY (SELECT ...) TO 'file.parquet' over the union of lake and tail.
    let out_sql = dir.path().join("orders_1995_sql.parquet");
    let copy = format!(
        "COPY (SELECT * FROM orders WHERE o_orderdate >= DATE '1995-01-01' \
         AND o_orderdate < DATE '1996-01-01' ORDER BY o_orderkey) TO '{}'",
        out_sql.display()
    );
    let written = session.execute(&copy).await?;
    println!(
        "COPY to {}:\n{}",
        out_sql.display(),
        datafusion::arrow::util::pretty::pretty_format_batches(&written)?
    );

    // 2. DataFrame API: the same range written with write_parquet.
    let ctx = session.context();
    let out_df = dir.path().join("orders_1995_df.parquet");
    let date = |d: &str| cast(lit(d.to_string()), DataType::Date32);
    let range = ctx.table("fluss.fluss.orders").await?.filter(
        col("o_orderdate")
            .gt_eq(date("1995-01-01"))
            .and(col("o_orderdate").lt(date("1996-01-01"))),
    )?;
    range
        .write_parquet(
            out_df.to_str().ok_or("path is not UTF-8")?,
            DataFrameWriteOptions::new().with_single_file_output(true),
            None,
        )
        .await?;

    // Both files hold the same rows as the union read.
    let expected = session
        .execute(
            "SELECT count(*) FROM orders WHERE o_orderdate >= DATE '1995-01-01' \
             AND o_orderdate < DATE '1996-01-01'",
        )
        .await?;
    let expected = datafusion::arrow::util::pretty::pretty_format_batches(&expected)?;
    for file in [&out_sql, &out_df] {
        let n = ctx
            .read_parquet(
                file.to_str().ok_or("path is not UTF-8")?,
                ParquetReadOptions::default(),
            )
            .await?
            .count()
            .await?;
        println!("{}: {n} rows", file.display());
    }
    println!("union read of 1995:\n{expected}");
    Ok(())
}
