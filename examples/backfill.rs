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
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::sql::FlussSession;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("store");
    let root = root.to_str().ok_or("temporary path is not UTF-8")?;
    let session = FlussSession::new(Arc::new(LocalStore::open(root).await?)).await?;

    // An orders table with four years of orders: three tiered to the lake, the last
    // one still in the log tail.
    session
        .execute(
            "CREATE TABLE orders (o_orderkey BIGINT, o_orderdate DATE, o_totalprice DOUBLE) \
             WITH ('bucket.num' = '4', 'bucket.key' = 'o_orderkey', \
                   'table.datalake.enabled' = 'true')",
        )
        .await?;
    let orders = |from: i64, to: i64| {
        format!(
            "INSERT INTO orders SELECT value, \
             CAST(CAST(value + 8766 AS INT) AS DATE), value * 1.5 \
             FROM generate_series({from}, {to})"
        )
    };
    session.execute(&orders(0, 1094)).await?;
    session.execute("CALL fluss.tier('orders')").await?;
    session.execute(&orders(1095, 1460)).await?;
    println!("orders: 1095 days in the lake, 366 in the log tail");

    // 1. SQL: COPY (SELECT ...) TO 'file.parquet' over the union of lake and tail.
    let out_sql = dir.path().join("orders_1995_sql.parquet");
    let copy = format!(
        "COPY (SELECT * FROM orders WHERE o_orderdate >= DATE '1995-01-01' \
         AND o_orderdate < DATE '1998-01-01' ORDER BY o_orderkey) TO '{}'",
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
            .and(col("o_orderdate").lt(date("1998-01-01"))),
    )?;
    range
        .write_parquet(
            out_df.to_str().ok_or("path is not UTF-8")?,
            DataFrameWriteOptions::new().with_single_file_output(true),
            None,
        )
        .await?;

    // Both files hold the same rows as the union read (lake rows of 1995-1996 and
    // the tail's 1997).
    let expected = session
        .execute(
            "SELECT count(*) FROM orders WHERE o_orderdate >= DATE '1995-01-01' \
             AND o_orderdate < DATE '1998-01-01'",
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
        if n != 1096 {
            return Err(format!("{}: expected 1096 rows, found {n}", file.display()).into());
        }
    }
    println!("union read of 1995-1997:\n{expected}");
    Ok(())
}
