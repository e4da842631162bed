//! The suite's queries, written once with `{table}` placeholders so every engine
//! (union read, lake-only, ListingTable, DuckDB, pypaimon + DuckDB) runs the same SQL.

/// One benchmark query.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Query {
    /// Short id (used in JSON, charts and the Python peers).
    pub name: &'static str,
    /// What it stands for.
    pub title: &'static str,
    /// SQL with `{lineitem}`, `{orders}`, `{customer}`, `{part}` placeholders.
    pub sql: &'static str,
    /// Tables read, with the columns read from each (pypaimon projection).
    pub tables: &'static [(&'static str, &'static [&'static str])],
    /// Whether it reads every row of its tables (used by the scaling targets).
    pub full_scan: bool,
}

/// The TPC-H tables the suite generates.
pub const TABLES: [&str; 4] = ["lineitem", "orders", "customer", "part"];

/// Primary-key tables among [`TABLES`].
pub fn is_pk_table(table: &str) -> bool {
    matches!(table, "customer" | "part")
}

/// Every query of the suite.
pub fn all() -> Vec<Query> {
    vec![
        Query {
            name: "q1_scan_agg",
            title: "full scan aggregate (TPC-H Q1 shape) on lineitem",
            sql: "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, \
                  sum(l_extendedprice) AS sum_base_price, \
                  sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, \
                  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, \
                  avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, \
                  avg(l_discount) AS avg_disc, count(*) AS count_order \
                  FROM {lineitem} WHERE l_shipdate <= DATE '1998-09-02' \
                  GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus",
            tables: &[(
                "lineitem",
                &[
                    "l_returnflag",
                    "l_linestatus",
                    "l_quantity",
                    "l_extendedprice",
                    "l_discount",
                    "l_tax",
                    "l_shipdate",
                ],
            )],
            full_scan: true,
        },
        Query {
            name: "q6_filter_agg",
            title: "filtered aggregate (TPC-H Q6 shape) on lineitem",
            sql: "SELECT sum(l_extendedprice * l_discount) AS revenue FROM {lineitem} \
                  WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' \
                  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
            tables: &[(
                "lineitem",
                &["l_extendedprice", "l_discount", "l_shipdate", "l_quantity"],
            )],
            full_scan: true,
        },
        Query {
            name: "selective_filter",
            title: "selective filter (~0.1% of parts) on lineitem",
            sql: "SELECT l_orderkey, l_linenumber, l_extendedprice FROM {lineitem} \
                  WHERE l_partkey BETWEEN 1000 AND 1019 ORDER BY l_orderkey, l_linenumber",
            tables: &[(
                "lineitem",
                &["l_orderkey", "l_linenumber", "l_extendedprice", "l_partkey"],
            )],
            full_scan: false,
        },
        Query {
            name: "count_star",
            title: "COUNT(*) on lineitem",
            sql: "SELECT count(*) AS n FROM {lineitem}",
            tables: &[("lineitem", &["l_orderkey"])],
            // Answered from exact row counts (lake manifests, log offsets) without a
            // scan: it measures planning, so the scan-scaling targets leave it out.
            full_scan: false,
        },
        Query {
            name: "top_n",
            title: "top-N (10 largest orders)",
            sql: "SELECT o_orderkey, o_custkey, o_totalprice FROM {orders} \
                  ORDER BY o_totalprice DESC, o_orderkey LIMIT 10",
            tables: &[("orders", &["o_orderkey", "o_custkey", "o_totalprice"])],
            full_scan: true,
        },
        Query {
            name: "point_lookup",
            title: "point lookup by primary key on customer",
            sql: "SELECT * FROM {customer} WHERE c_custkey = 42",
            tables: &[(
                "customer",
                &[
                    "c_custkey",
                    "c_name",
                    "c_address",
                    "c_nationkey",
                    "c_phone",
                    "c_acctbal",
                    "c_mktsegment",
                    "c_comment",
                ],
            )],
            full_scan: false,
        },
        Query {
            name: "enrichment_join",
            title: "enrichment join orders ⋈ customer (PK table)",
            sql: "SELECT c_mktsegment, count(*) AS orders, sum(o_totalprice) AS revenue \
                  FROM {orders} JOIN {customer} ON o_custkey = c_custkey \
                  GROUP BY c_mktsegment ORDER BY c_mktsegment",
            tables: &[
                ("orders", &["o_custkey", "o_totalprice"]),
                ("customer", &["c_custkey", "c_mktsegment"]),
            ],
            full_scan: true,
        },
        Query {
            name: "pk_scan_customer",
            title: "PK table scan aggregate on customer",
            sql: "SELECT c_mktsegment, count(*) AS n, sum(c_acctbal) AS balance \
                  FROM {customer} GROUP BY c_mktsegment ORDER BY c_mktsegment",
            tables: &[("customer", &["c_mktsegment", "c_acctbal"])],
            full_scan: true,
        },
        Query {
            name: "pk_scan_part",
            title: "PK table scan aggregate on part",
            sql: "SELECT p_brand, count(*) AS n, sum(p_retailprice) AS price \
                  FROM {part} GROUP BY p_brand ORDER BY p_brand",
            tables: &[("part", &["p_brand", "p_retailprice"])],
            full_scan: true,
        },
    ]
}

impl Query {
    /// The SQL with each table placeholder replaced by `name(table)`.
    pub fn render(&self, name: impl Fn(&str) -> String) -> String {
        let mut sql = self.sql.to_string();
        for table in TABLES {
            sql = sql.replace(&format!("{{{table}}}"), &name(table));
        }
        sql
    }

    /// Whether it reads a primary-key table.
    pub fn reads_pk_table(&self) -> bool {
        self.tables.iter().any(|(t, _)| is_pk_table(t))
    }
}
