//! Faults of a real cluster while the cluster source reads it: a tablet server stopped
//! during a read, the coordinator restarted, a table dropped and created again
//! between planning and execution. Each read ends in the full answer or in an error
//! naming what failed (server, table, bucket), never in fewer rows; and once the
//! cluster is whole again, the same source reads everything.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int32Type;
use fluss_datafusion::source::{ClusterOptions, ClusterSource};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::real_fluss::RealFluss;
use futures::StreamExt;
use serde_json::json;

const TABLE: &str = "db.big";
/// Rows tiered, then as many again in the log tail.
const ROWS: i32 = 6000;

fn ids(batches: &[RecordBatch]) -> Vec<i32> {
    batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec())
        .collect()
}

fn write(fluss: &mut RealFluss, table: &str, range: std::ops::Range<i32>) {
    for chunk in range.collect::<Vec<_>>().chunks(2000) {
        let rows = chunk
            .iter()
            .map(|&i| json!([i, format!("row {i} {}", "x".repeat(40))]))
            .collect();
        fluss.write(table, "append", None, rows).expect("append");
    }
}

/// The answer is every id once, or the error names what failed.
fn full_or_named(what: &str, answer: Result<Vec<i32>, String>, expected: &BTreeSet<i32>) {
    match answer {
        Ok(ids) => {
            let got: BTreeSet<i32> = ids.iter().copied().collect();
            assert_eq!(ids.len(), got.len(), "{what}: rows repeated");
            assert_eq!(&got, expected, "{what}: not the full answer");
        }
        Err(e) => {
            assert!(
                e.contains("big") && (e.contains("bucket") || e.contains("server")),
                "{what}: an error that does not say what failed: {e}"
            );
            eprintln!("{what}: {e}");
        }
    }
}

fn read_all(runtime: &tokio::runtime::Runtime, session: &FlussSession) -> Result<Vec<i32>, String> {
    runtime
        .block_on(session.execute(&format!("SELECT id FROM {TABLE}")))
        .map(|b| ids(&b))
        .map_err(|e| e.to_string())
}

/// Reads until the cluster answers in full (leaders move after a restart), at most
/// a minute; the last answer.
fn read_when_whole(
    runtime: &tokio::runtime::Runtime,
    session: &FlussSession,
    expected: &BTreeSet<i32>,
) -> Result<Vec<i32>, String> {
    let mut answer = read_all(runtime, session);
    for _ in 0..30 {
        if answer
            .as_ref()
            .is_ok_and(|ids| ids.iter().copied().collect::<BTreeSet<_>>() == *expected)
        {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
        answer = read_all(runtime, session);
    }
    answer
}

pub fn run(fluss: &mut RealFluss) {
    fluss
        .sql("CREATE DATABASE IF NOT EXISTS fc.db")
        .expect("db");
    fluss
        .sql(&format!(
            "CREATE TABLE fc.db.big (id INT, name STRING) WITH ('bucket.num' = '4', \
             'bucket.key' = 'id', 'table.datalake.enabled' = 'true', \
             'table.datalake.freshness' = '{}')",
            fluss_test_support::real_fluss::PAUSED_FRESHNESS
        ))
        .expect("create");
    write(fluss, TABLE, 0..ROWS);
    fluss.tier(&[TABLE]).expect("tier");
    write(fluss, TABLE, ROWS..2 * ROWS);
    let expected: BTreeSet<i32> = (0..2 * ROWS).collect();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // small fetches: the tail takes many round trips, so a fault lands inside a read
    let session = runtime.block_on(async {
        let source = ClusterSource::connect(ClusterOptions {
            bootstrap_servers: fluss.bootstrap_servers().to_string(),
            max_fetch_bytes: Some(2048),
            ..Default::default()
        })
        .await
        .expect("connects")
        .with_request_timeout(Duration::from_secs(20));
        FlussSession::new(Arc::new(source)).await.expect("session")
    });
    full_or_named("before any fault", read_all(&runtime, &session), &expected);

    // 1. a tablet server stopped while the read is under way
    let answer = runtime.block_on(async {
        let df = session
            .context()
            .sql(&format!("SELECT id FROM {TABLE}"))
            .await
            .map_err(|e| e.to_string())?;
        let mut stream = df.execute_stream().await.map_err(|e| e.to_string())?;
        let mut batches = Vec::new();
        if let Some(first) = stream.next().await {
            batches.push(first.map_err(|e| e.to_string())?);
        }
        fluss
            .call(json!({"cmd": "stop_tablet_server", "id": 1}))
            .expect("stop a tablet server");
        while let Some(batch) = stream.next().await {
            batches.push(batch.map_err(|e| e.to_string())?);
        }
        Ok::<_, String>(ids(&batches))
    });
    full_or_named("a tablet server stopped during the read", answer, &expected);
    // with one of two replicas left, the other server leads every bucket
    full_or_named(
        "reading with one tablet server",
        read_when_whole(&runtime, &session, &expected),
        &expected,
    );
    fluss
        .call(json!({"cmd": "start_tablet_server", "id": 1}))
        .expect("start the tablet server again");
    full_or_named(
        "after the tablet server is back",
        read_when_whole(&runtime, &session, &expected),
        &expected,
    );

    // 2. the coordinator restarted (same address): the same source reads on
    fluss
        .call(json!({"cmd": "restart_coordinator"}))
        .expect("restart the coordinator");
    full_or_named(
        "right after the coordinator restarted",
        read_all(&runtime, &session),
        &expected,
    );
    let after = read_when_whole(&runtime, &session, &expected);
    assert!(after.is_ok(), "the source never recovered: {after:?}");
    full_or_named("after the coordinator restarted", after, &expected);

    // 3. the table dropped and created again between planning and execution: the
    // plan pinned the old table (its id, lake snapshot and offsets), and must not
    // read the new table's rows in their place
    let plan = runtime.block_on(async {
        session
            .context()
            .sql(&format!("SELECT id FROM {TABLE}"))
            .await
            .expect("plans")
            .create_physical_plan()
            .await
            .expect("physical plan")
    });
    fluss.sql("DROP TABLE fc.db.big").expect("drop");
    fluss
        .sql("CREATE TABLE fc.db.big (id INT, name STRING) WITH ('bucket.num' = '4', 'bucket.key' = 'id')")
        .expect("create again");
    write(fluss, TABLE, 100_000..100_010);
    let answer = runtime.block_on(async {
        let ctx = session.context().task_ctx();
        datafusion::physical_plan::collect(plan, ctx)
            .await
            .map(|b| ids(&b))
            .map_err(|e| e.to_string())
    });
    full_or_named(
        "the table dropped and created again after planning",
        answer,
        &expected,
    );
    // and a new query reads the new table
    let new: BTreeSet<i32> = (100_000..100_010).collect();
    full_or_named_set(
        "a query after the table was created again",
        read_all(&runtime, &session),
        &new,
    );
}

fn full_or_named_set(what: &str, answer: Result<Vec<i32>, String>, expected: &BTreeSet<i32>) {
    let ids = answer.unwrap_or_else(|e| panic!("{what}: {e}"));
    let got: BTreeSet<i32> = ids.iter().copied().collect();
    assert_eq!(&got, expected, "{what}");
}
