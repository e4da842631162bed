//! The lakes the LocalStore's own tiering writes, read by the official Java readers:
//! Paimon's and Iceberg's own Flink connectors (in the harness, a Flink catalog on the
//! LocalStore's warehouse) must read every tiered table as our `t$lake` does, and see
//! the layout Fluss 1.0 creates for new tables: the table's columns only, no
//! `__bucket`, `__offset`, `__timestamp` (FIP-27).

use fluss_test_support::local_store::store_from_sql;
use fluss_test_support::real_fluss::RealFluss;

use super::canonical::{self, sorted};

/// The tables, built and tiered through SQL (two tiering rounds each).
fn statements(format: &str) -> Vec<String> {
    let lake = format!("'table.datalake.enabled' = 'true', 'table.datalake.format' = '{format}'");
    vec![
        "CREATE DATABASE db".to_string(),
        format!(
            "CREATE TABLE db.ours_log (id BIGINT, name STRING, price DECIMAL(10, 2), day DATE, \
             ts TIMESTAMP(3), p STRING) PARTITIONED BY (p) \
             WITH ('bucket.num' = '2', 'bucket.key' = 'id', {lake})"
        ),
        "INSERT INTO db.ours_log VALUES (1, 'a', 1.50, DATE '2024-01-01', \
         TIMESTAMP '2024-01-01 10:00:00.123', 'x'), (2, NULL, 2.25, DATE '2024-01-02', \
         TIMESTAMP '2024-01-02 11:00:00', 'y'), (3, 'c', NULL, NULL, NULL, 'x')"
            .to_string(),
        "CALL fluss.tier('db.ours_log')".to_string(),
        "INSERT INTO db.ours_log VALUES (4, 'd', 4.00, DATE '2024-01-04', \
         TIMESTAMP '2024-01-04 00:00:00.5', 'y')"
            .to_string(),
        "CALL fluss.tier('db.ours_log')".to_string(),
        format!(
            "CREATE TABLE db.ours_nokey (id BIGINT, name STRING) WITH ('bucket.num' = '3', {lake})"
        ),
        "INSERT INTO db.ours_nokey VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')".to_string(),
        "CALL fluss.tier('db.ours_nokey')".to_string(),
        format!(
            "CREATE TABLE db.ours_pk (id BIGINT, name STRING, score INT, \
             PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket.num' = '2', {lake})"
        ),
        "INSERT INTO db.ours_pk VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)"
            .to_string(),
        "CALL fluss.tier('db.ours_pk')".to_string(),
        "INSERT INTO db.ours_pk VALUES (1, 'a2', 11), (5, 'e', 50)".to_string(),
        "DELETE FROM db.ours_pk WHERE id = 3".to_string(),
        "INSERT INTO db.ours_pk (id, score) VALUES (2, 22)".to_string(),
        "CALL fluss.tier('db.ours_pk')".to_string(),
    ]
}

/// Compares each table; returns the disagreements.
pub fn check(fluss: &mut RealFluss) -> Vec<String> {
    let format = fluss.format().to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let statements = statements(&format);
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    let (dir, _store, session) = runtime.block_on(store_from_sql(&statements));
    // the store's own warehouse (relative paths resolve against its root)
    let warehouse = dir.path().join("lake").join(&format);
    let catalog = match format.as_str() {
        "paimon" => format!(
            "CREATE CATALOG ours WITH ('type' = 'paimon', 'warehouse' = '{}')",
            warehouse.display()
        ),
        _ => format!(
            "CREATE CATALOG ours WITH ('type' = 'iceberg', 'catalog-type' = 'hadoop', \
             'warehouse' = '{}')",
            warehouse.display()
        ),
    };
    let mut failures = Vec::new();
    if let Err(e) = fluss.sql(&catalog) {
        return vec![format!("{catalog}: {e}")];
    }
    for table in ["ours_log", "ours_nokey", "ours_pk"] {
        let (names, ours) = match runtime
            .block_on(session.execute(&format!("SELECT * FROM db.\"{table}$lake\"")))
        {
            Ok(batches) => canonical::rows(&batches),
            Err(e) => {
                failures.push(format!("our lakes: {table}$lake: {e}"));
                continue;
            }
        };
        let reply = match fluss.call(serde_json::json!({
            "cmd": "query",
            "sql": format!("SELECT * FROM ours.db.`{table}`"),
        })) {
            Ok(reply) => reply,
            Err(e) => {
                failures.push(format!("our lakes: {format}'s own reader of {table}: {e}"));
                continue;
            }
        };
        let columns: Vec<String> = reply["columns"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_str().map(str::to_string))
            .collect();
        if columns != names {
            failures.push(format!(
                "our lakes: {table}: {format}'s own reader sees columns {columns:?}, t$lake {names:?} \
                 (a clean table has the table's columns only)"
            ));
        }
        let theirs: canonical::Rows = reply["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|row| {
                row.as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c.as_str().map(str::to_string))
                    .collect()
            })
            .collect();
        if sorted(theirs.clone()) != sorted(ours.clone()) {
            failures.push(format!(
                "our lakes: {table}: {format}'s own reader: {theirs:?}\n t$lake: {ours:?}"
            ));
        }
    }
    failures
}
