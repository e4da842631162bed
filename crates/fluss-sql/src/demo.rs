//! A TPC-H-shaped demo dataset, generated deterministically (fixed seed, splitmix64)
//! into a LocalStore so that every table has both a lake snapshot and a log tail:
//!
//! | table      | kind        | buckets | lake part                 | log tail                              |
//! |------------|-------------|---------|---------------------------|---------------------------------------|
//! | `orders`   | log         | 4       | the first 80% of orders   | the last 20%                          |
//! | `customer` | primary key | 4       | every customer            | balance updates, deletes, new rows    |
//! | `nation`   | primary key | 1       | nations 0-19              | nations 20-24                         |
//!
//! Sizes scale with `scale` (1.0 = 15,000 orders and 1,500 customers; always 25
//! nations). The lakes are Paimon; `orders` can be put on Iceberg instead
//! (`--demo-orders-lake iceberg`). Creating the demo is idempotent: a store that already has
//! `fluss.orders` is left alone.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use fluss::metadata::TablePath;

use fluss_datafusion::error::{Error, Result};
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::sql::FlussSession;
use fluss_datafusion::tier;

/// The database the demo lives in.
pub const DEMO_DATABASE: &str = "fluss";

/// Orders at scale 1.
const ORDERS_PER_SCALE: f64 = 15_000.0;
/// Customers at scale 1.
const CUSTOMERS_PER_SCALE: f64 = 1_500.0;
/// The generator's seed.
const SEED: u64 = 0x005E_EDF1;

const NATIONS: [(&str, i32); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];

const WORDS: [&str; 16] = [
    "furiously",
    "quickly",
    "carefully",
    "blithely",
    "regular",
    "final",
    "pending",
    "express",
    "ironic",
    "special",
    "deposits",
    "requests",
    "packages",
    "accounts",
    "pinto beans",
    "theodolites",
];

/// 1992-01-01 as days since the epoch.
const FIRST_ORDER_DAY: i32 = 8035;
/// Days from 1992-01-01 to 1998-08-02.
const ORDER_DAYS: u64 = 2405;
/// 1995-06-17: orders before it are finished (`F`).
const CURRENT_DAY: i32 = 9298;

/// What [`create_demo`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoSummary {
    /// False when the store already had the demo.
    pub created: bool,
    /// Orders written.
    pub orders: usize,
    /// Customers written (before the tail's deletes and inserts).
    pub customers: usize,
    /// Nations written.
    pub nations: usize,
}

/// The splitmix64 generator: tiny, fast, and the same sequence everywhere.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    fn comment(&mut self) -> String {
        let n = 3 + self.below(4) as usize;
        (0..n)
            .map(|_| WORDS[self.below(WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn decimal(values: Vec<i128>) -> Result<ArrayRef> {
    Ok(Arc::new(
        Decimal128Array::from(values).with_precision_and_scale(15, 2)?,
    ))
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_from_iter(columns)?)
}

fn scaled(per_scale: f64, scale: f64) -> usize {
    ((per_scale * scale).round() as usize).max(1)
}

fn orders(rng: &mut SplitMix64, from: usize, to: usize, customers: usize) -> Result<RecordBatch> {
    let mut keys = Vec::new();
    let mut custkeys = Vec::new();
    let mut statuses = Vec::new();
    let mut prices = Vec::new();
    let mut dates = Vec::new();
    let mut comments = Vec::new();
    for i in from..to {
        let day = FIRST_ORDER_DAY + rng.below(ORDER_DAYS) as i32;
        keys.push(i as i64 + 1);
        custkeys.push(rng.range(1, customers as i64));
        statuses.push(if day < CURRENT_DAY {
            "F"
        } else if rng.below(2) == 0 {
            "O"
        } else {
            "P"
        });
        prices.push(i128::from(rng.range(85_771, 55_528_516)));
        dates.push(day);
        comments.push(rng.comment());
    }
    batch(vec![
        ("o_orderkey", Arc::new(Int64Array::from(keys))),
        ("o_custkey", Arc::new(Int64Array::from(custkeys))),
        ("o_orderstatus", Arc::new(StringArray::from(statuses))),
        ("o_totalprice", decimal(prices)?),
        ("o_orderdate", Arc::new(Date32Array::from(dates))),
        ("o_comment", Arc::new(StringArray::from(comments))),
    ])
}

fn customers(rng: &mut SplitMix64, keys: &[i64]) -> Result<RecordBatch> {
    let mut names = Vec::new();
    let mut nations = Vec::new();
    let mut balances = Vec::new();
    let mut segments = Vec::new();
    for key in keys {
        names.push(format!("Customer#{key:09}"));
        nations.push(rng.below(NATIONS.len() as u64) as i32);
        balances.push(i128::from(rng.range(-99_999, 999_999)));
        segments.push(SEGMENTS[rng.below(SEGMENTS.len() as u64) as usize]);
    }
    batch(vec![
        ("c_custkey", Arc::new(Int64Array::from(keys.to_vec()))),
        ("c_name", Arc::new(StringArray::from(names))),
        ("c_nationkey", Arc::new(Int32Array::from(nations))),
        ("c_acctbal", decimal(balances)?),
        ("c_mktsegment", Arc::new(StringArray::from(segments))),
    ])
}

fn nations(range: std::ops::Range<usize>) -> Result<RecordBatch> {
    let keys: Vec<i32> = range.clone().map(|k| k as i32).collect();
    let names: Vec<&str> = NATIONS[range.clone()].iter().map(|(n, _)| *n).collect();
    let regions: Vec<i32> = NATIONS[range].iter().map(|(_, r)| *r).collect();
    batch(vec![
        ("n_nationkey", Arc::new(Int32Array::from(keys))),
        ("n_name", Arc::new(StringArray::from(names))),
        ("n_regionkey", Arc::new(Int32Array::from(regions))),
    ])
}

const LAKE: &str = "'table.datalake.enabled' = 'true', 'table.datalake.format' = 'paimon'";

/// Creates the demo tables in database `fluss` of the session's store (once), with
/// `orders` tiered to `orders_lake` (`paimon` or `iceberg`).
pub async fn create_demo(
    session: &FlussSession,
    store: &LocalStore,
    scale: f64,
    orders_lake: &str,
) -> Result<DemoSummary> {
    if !matches!(orders_lake, "paimon" | "iceberg") {
        return Err(Error::invalid_input(format!(
            "the demo's orders lake is paimon or iceberg, got '{orders_lake}'"
        )));
    }
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::invalid_input(format!(
            "demo scale must be a positive number, got {scale}"
        )));
    }
    store.create_database(DEMO_DATABASE, None, true).await?;
    let existing = store.list_tables(DEMO_DATABASE).await?;
    if existing.iter().any(|t| t == "orders") {
        return Ok(DemoSummary {
            created: false,
            orders: 0,
            customers: 0,
            nations: 0,
        });
    }
    let n_orders = scaled(ORDERS_PER_SCALE, scale);
    let n_customers = scaled(CUSTOMERS_PER_SCALE, scale);
    let mut rng = SplitMix64(SEED);

    // `orders` is created last: its presence marks a complete demo.
    session
        .execute(&format!(
            "CREATE TABLE {DEMO_DATABASE}.nation (n_nationkey INT, n_name STRING, \
             n_regionkey INT, PRIMARY KEY (n_nationkey) NOT ENFORCED) \
             WITH ('bucket.num' = '1', {LAKE}); \
             CREATE TABLE {DEMO_DATABASE}.customer (c_custkey BIGINT, c_name STRING, \
             c_nationkey INT, c_acctbal DECIMAL(15, 2), c_mktsegment STRING, \
             PRIMARY KEY (c_custkey) NOT ENFORCED) WITH ('bucket.num' = '4', {LAKE})"
        ))
        .await?;
    let nation = TablePath::new(DEMO_DATABASE, "nation");
    store.upsert(&nation, &nations(0..20)?).await?;
    tier(store, &nation).await?;
    store.upsert(&nation, &nations(20..NATIONS.len())?).await?;

    let customer = TablePath::new(DEMO_DATABASE, "customer");
    let keys: Vec<i64> = (1..=n_customers as i64).collect();
    store
        .upsert(&customer, &customers(&mut rng, &keys)?)
        .await?;
    tier(store, &customer).await?;
    // Tail: new balances for ~10%, deletes for ~2%, a few new customers.
    let updated: Vec<i64> = keys.iter().copied().filter(|k| k % 10 == 3).collect();
    if !updated.is_empty() {
        store
            .upsert(&customer, &customers(&mut rng, &updated)?)
            .await?;
    }
    let deleted: Vec<i64> = keys.iter().copied().filter(|k| k % 50 == 7).collect();
    if !deleted.is_empty() {
        let keys = batch(vec![("c_custkey", Arc::new(Int64Array::from(deleted)))])?;
        store.delete(&customer, &keys).await?;
    }
    let added: Vec<i64> =
        (n_customers as i64 + 1..=n_customers as i64 + (n_customers as i64 / 50).max(1)).collect();
    store
        .upsert(&customer, &customers(&mut rng, &added)?)
        .await?;

    session
        .execute(&format!(
            "CREATE TABLE {DEMO_DATABASE}.orders (o_orderkey BIGINT NOT NULL, o_custkey BIGINT, \
             o_orderstatus STRING, o_totalprice DECIMAL(15, 2), o_orderdate DATE, o_comment STRING) \
             WITH ('bucket.num' = '4', 'bucket.key' = 'o_orderkey', \
             'table.datalake.enabled' = 'true', 'table.datalake.format' = '{orders_lake}')"
        ))
        .await?;
    let orders_path = TablePath::new(DEMO_DATABASE, "orders");
    let lake_part = n_orders * 4 / 5;
    let chunk = 5_000;
    let mut from = 0;
    while from < lake_part {
        let to = (from + chunk).min(lake_part);
        store
            .append(&orders_path, &orders(&mut rng, from, to, n_customers)?)
            .await?;
        from = to;
    }
    tier(store, &orders_path).await?;
    if n_orders > lake_part {
        store
            .append(
                &orders_path,
                &orders(&mut rng, lake_part, n_orders, n_customers)?,
            )
            .await?;
    }
    Ok(DemoSummary {
        created: true,
        orders: n_orders,
        customers: n_customers,
        nations: NATIONS.len(),
    })
}

/// Queries worth trying on the demo, shown in the shell's banner.
pub const SUGGESTED_QUERIES: [&str; 4] = [
    "SELECT count(*), sum(o_totalprice) FROM orders;",
    "SELECT c_mktsegment, count(*) AS orders, sum(o_totalprice) AS revenue FROM orders JOIN customer ON o_custkey = c_custkey GROUP BY c_mktsegment ORDER BY revenue DESC;",
    "SELECT n_name, count(*) AS customers FROM customer JOIN nation ON c_nationkey = n_nationkey GROUP BY n_name ORDER BY customers DESC LIMIT 5;",
    "\\d orders",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_deterministic() {
        let mut a = SplitMix64(SEED);
        let mut b = SplitMix64(SEED);
        assert_eq!(a.next_u64(), b.next_u64());
        assert!((0..1000).all(|_| (5..=9).contains(&a.range(5, 9))));
    }
}
