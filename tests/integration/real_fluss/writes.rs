//! Writes made through our `ClusterSource` to the real cluster (DataFusion plans
//! them; fluss-rs's `AppendWriter` / `UpsertWriter` write them, as any Fluss client
//! would), read back by Flink's union read and by ours: appends, an
//! `INSERT ... SELECT`, upserts, a partial-update INSERT, an UPDATE with a subquery,
//! a DELETE and a MERGE, and our DDL through fluss-rs's admin.

use std::sync::Arc;

use fluss_datafusion::source::{ClusterOptions, ClusterSource};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::real_fluss::RealFluss;

use super::canonical::{self, Rows, sorted};

fn row(cells: &[Option<&str>]) -> Vec<Option<String>> {
    cells.iter().map(|c| c.map(str::to_string)).collect()
}

/// Runs the writes; returns the disagreements.
pub fn check(fluss: &mut RealFluss) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let bootstrap_servers = fluss.bootstrap_servers().to_string();
    let session = runtime.block_on(async {
        let source = ClusterSource::connect(ClusterOptions {
            bootstrap_servers,
            client_options: [("client.writer.acks".to_string(), "all".to_string())].into(),
            ..Default::default()
        })
        .await
        .expect("the cluster source connects to the real cluster");
        FlussSession::new(Arc::new(source)).await.expect("session")
    });
    let lake = format!(
        "'table.datalake.enabled' = 'true', 'table.datalake.format' = '{}'",
        fluss.format()
    );
    // one bucket each: Fluss 0.9.1's Flink batch reader waits forever on a bucket
    // with neither lake data nor log (apache/fluss #2958)
    let statements = [
        "CREATE DATABASE IF NOT EXISTS db".to_string(),
        format!(
            "CREATE TABLE db.w_log (id INT, name STRING, amount DECIMAL(10, 2)) \
             WITH ('bucket.num' = '1', {lake})"
        ),
        "INSERT INTO db.w_log VALUES (1, 'a', 1.50), (2, 'b', 2.25), (3, NULL, NULL)".to_string(),
        "INSERT INTO db.w_log SELECT id + 10, name, amount FROM db.w_log WHERE id < 3".to_string(),
        format!(
            "CREATE TABLE db.w_pk (id INT, name STRING, qty INT, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '1', {lake})"
        ),
        "INSERT INTO db.w_pk VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)"
            .to_string(),
        "INSERT INTO db.w_pk (id, qty) VALUES (1, 11)".to_string(),
        "UPDATE db.w_pk SET name = 'bb' WHERE id IN (SELECT id FROM db.w_log WHERE id = 2)"
            .to_string(),
        "DELETE FROM db.w_pk WHERE id = 3".to_string(),
        "MERGE INTO db.w_pk USING (SELECT 4 AS id, 44 AS qty UNION ALL SELECT 5, 50) AS s \
         ON w_pk.id = s.id WHEN MATCHED THEN UPDATE SET qty = s.qty \
         WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'e', s.qty)"
            .to_string(),
    ];
    let mut failures = Vec::new();
    // half the rows tiered by Fluss's tiering service, half left in the log tail
    // (Flink's batch read needs a lake snapshot)
    let (before, after) = statements.split_at(6);
    for sql in before {
        if let Err(e) = runtime.block_on(session.execute(sql)) {
            failures.push(format!("our write to the real cluster: {sql}: {e}"));
            return failures;
        }
        // Fluss 0.9.1's coordinator can miss a new table (apache/fluss #2710): the
        // harness waits until it knows the table, restarting it if it never will
        if sql.starts_with("CREATE TABLE")
            && let Err(e) = fluss.call(serde_json::json!({"cmd": "settle"}))
        {
            failures.push(format!("after {sql}: the coordinator did not settle: {e}"));
            return failures;
        }
    }
    // Flink cannot batch-read an Iceberg primary-key table at all (apache/fluss
    // #3048), so only Paimon's is tiered for it
    let tiered: &[&str] = match fluss.format() {
        "paimon" => &["db.w_log", "db.w_pk"],
        _ => &["db.w_log"],
    };
    if let Err(e) = fluss.tier(tiered) {
        failures.push(format!(
            "our writes: the tiering service did not tier them: {e}"
        ));
        return failures;
    }
    for sql in after {
        if let Err(e) = runtime.block_on(session.execute(sql)) {
            failures.push(format!("our write to the real cluster: {sql}: {e}"));
            return failures;
        }
    }
    let expected: [(&str, Rows); 2] = [
        (
            "w_log",
            vec![
                row(&[Some("1"), Some("a"), Some("1.50")]),
                row(&[Some("2"), Some("b"), Some("2.25")]),
                row(&[Some("3"), None, None]),
                row(&[Some("11"), Some("a"), Some("1.50")]),
                row(&[Some("12"), Some("b"), Some("2.25")]),
            ],
        ),
        (
            "w_pk",
            vec![
                row(&[Some("1"), Some("a"), Some("11")]),
                row(&[Some("2"), Some("bb"), Some("20")]),
                row(&[Some("4"), Some("d"), Some("44")]),
                row(&[Some("5"), Some("e"), Some("50")]),
            ],
        ),
    ];
    // an option Fluss lets an ALTER TABLE change, through fluss-rs's admin
    let alter = "ALTER TABLE db.w_log SET ('table.datalake.freshness' = '45s')";
    match runtime.block_on(async {
        session.execute(alter).await?;
        session.execute("SHOW CREATE TABLE db.w_log").await
    }) {
        Ok(batches) => {
            let (_, shown) = canonical::rows(&batches);
            let text = format!("{shown:?}");
            if !text.contains("'table.datalake.freshness' = '45s'") {
                failures.push(format!("our writes: after {alter}, the table shows {text}"));
            }
        }
        Err(e) => failures.push(format!("our writes: {alter}: {e}")),
    }
    let format = fluss.format().to_string();
    // a column added through fluss-rs's admin, then written: Fluss 0.9.1 evolves a
    // Paimon lake table first and refuses an Iceberg one (`IcebergLakeCatalog.alterTable`
    // takes options only; 1.0 adds columns). A log table: Flink's read of a
    // primary-key table fails on older log batches after an ADD COLUMN (scenario.rs).
    let mut expected = expected;
    let add = "ALTER TABLE db.w_log ADD COLUMN note STRING COMMENT 'added'";
    match (
        format.as_str(),
        runtime.block_on(async {
            session.execute(add).await?;
            session
                .execute("INSERT INTO db.w_log VALUES (21, 'z', 3.00, 'new')")
                .await
        }),
    ) {
        ("paimon", Ok(_)) => {
            for row in &mut expected[0].1 {
                row.push(None);
            }
            expected[0]
                .1
                .push(row(&[Some("21"), Some("z"), Some("3.00"), Some("new")]));
        }
        ("paimon", Err(e)) => failures.push(format!("our writes: {add}: {e}")),
        (_, Ok(_)) => failures.push(format!(
            "our writes: Fluss 0.9.1 took {add} on an Iceberg lake table"
        )),
        (_, Err(e)) if e.to_string().contains("Unsupported table change") => {}
        (_, Err(e)) => failures.push(format!("our writes: {add} failed otherwise: {e}")),
    }
    for (table, want) in expected {
        let want = sorted(want);
        // Flink cannot batch-read an Iceberg primary-key table (apache/fluss #3048):
        // there the expected rows are the only oracle
        let flink = match (format.as_str(), table) {
            ("iceberg", "w_pk") => Ok(want.clone()),
            _ => fluss.query(&format!("SELECT * FROM fc.db.`{table}`")),
        };
        match flink {
            Ok(flink) if sorted(flink.clone()) == want => {}
            Ok(flink) => failures.push(format!(
                "our writes: Flink reads {table} as {:?}, want {want:?}",
                sorted(flink)
            )),
            Err(e) => failures.push(format!("our writes: Flink cannot read {table}: {e}")),
        }
        match runtime.block_on(session.execute(&format!("SELECT * FROM db.{table}"))) {
            Ok(batches) => {
                let (_, ours) = canonical::rows(&batches);
                if sorted(ours.clone()) != want {
                    failures.push(format!(
                        "our writes: we read {table} as {:?}, want {want:?}",
                        sorted(ours)
                    ));
                }
            }
            Err(e) => failures.push(format!("our writes: we cannot read {table}: {e}")),
        }
    }
    failures.extend(partitions(fluss, &runtime, &session));
    failures
}

/// ADD and DROP PARTITION through fluss-rs's admin, against Flink's SHOW PARTITIONS.
fn partitions(
    fluss: &mut RealFluss,
    runtime: &tokio::runtime::Runtime,
    session: &FlussSession,
) -> Vec<String> {
    let mut failures = Vec::new();
    let create = "CREATE TABLE db.w_parts (id INT, dt STRING) PARTITIONED BY (dt) \
                  WITH ('bucket.num' = '1')";
    let steps = [
        create,
        "ALTER TABLE db.w_parts ADD PARTITION (dt = '2024-01-01')",
        "ALTER TABLE db.w_parts ADD IF NOT EXISTS PARTITION (dt = '2024-01-02')",
        "INSERT INTO db.w_parts VALUES (1, '2024-01-01'), (2, '2024-01-02')",
        "ALTER TABLE db.w_parts DROP PARTITION (dt = '2024-01-01')",
    ];
    for sql in steps {
        if let Err(e) = runtime.block_on(session.execute(sql)) {
            failures.push(format!("our partitions: {sql}: {e}"));
            return failures;
        }
        // the coordinator must know new tables and partitions (apache/fluss #2710)
        if !sql.starts_with("INSERT")
            && let Err(e) = fluss.call(serde_json::json!({"cmd": "settle"}))
        {
            failures.push(format!("after {sql}: the coordinator did not settle: {e}"));
            return failures;
        }
    }
    let want = vec![vec![Some("dt=2024-01-02".to_string())]];
    match runtime.block_on(session.execute("SHOW PARTITIONS db.w_parts")) {
        Ok(batches) => {
            let (_, ours) = canonical::rows(&batches);
            if ours != want {
                failures.push(format!("our partitions: we list {ours:?}, want {want:?}"));
            }
        }
        Err(e) => failures.push(format!("our partitions: SHOW PARTITIONS: {e}")),
    }
    match fluss.query("SHOW PARTITIONS fc.db.w_parts") {
        Ok(flink) if flink == want => {}
        Ok(flink) => failures.push(format!(
            "our partitions: Flink lists {flink:?}, want {want:?}"
        )),
        Err(e) => failures.push(format!("our partitions: Flink's SHOW PARTITIONS: {e}")),
    }
    match runtime.block_on(session.execute("SELECT * FROM db.w_parts")) {
        Ok(batches) => {
            let (_, rows) = canonical::rows(&batches);
            let want = vec![vec![Some("2".to_string()), Some("2024-01-02".to_string())]];
            if rows != want {
                failures.push(format!("our partitions: we read {rows:?}, want {want:?}"));
            }
        }
        Err(e) => failures.push(format!("our partitions: reading them: {e}")),
    }
    failures
}
