//! The cluster source's log read (raw FetchLog, batches decoded and CRC-checked by
//! the library's codec) against fluss-rs's own bounded Arrow reader
//! (`RecordBatchLogReader::new_from_ranges`), both reading every bucket of one log
//! table from the Fluss RPC test server, in one process.
//!
//! ```text
//! cargo bench --bench cluster_fetch   # prints the ratio
//! ```
//!
//! Under `cargo test` (no `--bench` argument) it runs once on a small table, so CI
//! keeps it working; only `--bench` runs measure.

use std::sync::Arc;
use std::time::Instant;

use fluss::client::{BoundedLogReadRange, FlussConnection, RecordBatchLogReader};
use fluss::config::Config;
use fluss::metadata::{TableBucket, TablePath};
use fluss_datafusion::LocalStore;
use fluss_datafusion::log::{LogRange, LogReadOptions};
use fluss_datafusion::source::{ClusterOptions, ClusterSource, FlussSource};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::server::{ServerConfig, TestServer};
use futures::TryStreamExt;

const BUCKETS: i32 = 4;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let measure = std::env::args().any(|a| a == "--bench");
    let (rows, runs) = if measure { (400_000, 7) } else { (2_000, 1) };
    let dir = tempfile::tempdir()?;
    let store = Arc::new(LocalStore::open(dir.path().to_str().ok_or("path")?).await?);
    let session = FlussSession::new(store.clone()).await?;
    session
        .execute(&format!(
            "CREATE TABLE fluss.events (id BIGINT, name STRING, score INT, ts BIGINT) \
             WITH ('bucket.num' = '{BUCKETS}')"
        ))
        .await?;
    // many batches per bucket, as a stream of small produce requests makes
    let per_insert = rows / 40;
    for chunk in 0..40 {
        let start = chunk * per_insert;
        session
            .execute(&format!(
                "INSERT INTO fluss.events SELECT value AS id, concat('name-', CAST(value % 997 AS VARCHAR)) AS name, \
                 CAST(value % 100 AS INT) AS score, value * 1000 AS ts \
                 FROM generate_series({start}, {}) ",
                start + per_insert - 1
            ))
            .await?;
    }
    let server = TestServer::start(
        Arc::new(load_local_store(&store).await?),
        ServerConfig::default(),
    )
    .await?;
    let path = TablePath::new("fluss", "events");

    let source = ClusterSource::connect(ClusterOptions {
        bootstrap_servers: server.bootstrap_servers(),
        ..Default::default()
    })
    .await?;
    let table = source.get_table(&path).await?;
    let buckets = source.buckets(&table).await?;
    let offsets = source.bucket_offsets(&table, &buckets).await?;

    let connection = FlussConnection::new(Config {
        bootstrap_servers: server.bootstrap_servers(),
        ..Default::default()
    })
    .await?;
    let fluss_table = connection.get_table(&path).await?;

    let (mut ours, mut peer) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let started = Instant::now();
        let mut read = 0usize;
        for (bucket, o) in buckets.iter().zip(&offsets) {
            let stream = source
                .read_log(
                    &table,
                    bucket,
                    LogRange::new(o.earliest, o.high_watermark),
                    LogReadOptions::verified(),
                )
                .await?;
            let batches: Vec<_> = stream.try_collect().await?;
            read += batches.iter().map(|b| b.batch.num_rows()).sum::<usize>();
        }
        ours.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(read, rows, "cluster source rows");

        let started = Instant::now();
        let ranges = buckets
            .iter()
            .zip(&offsets)
            .map(|(b, o)| BoundedLogReadRange {
                bucket: TableBucket::new(table.table_id(), b.bucket),
                starting_offset: o.earliest,
                stopping_offset: o.high_watermark,
            })
            .collect();
        let scanner = fluss_table.new_scan().create_record_batch_log_scanner()?;
        let mut reader = RecordBatchLogReader::new_from_ranges(scanner, ranges).await?;
        let batches = reader.collect_all_batches().await?;
        peer.push(started.elapsed().as_secs_f64() * 1e3);
        let read: usize = batches.iter().map(|b| b.num_records()).sum();
        assert_eq!(read, rows, "fluss-rs rows");
    }
    let (ours, peer) = (median(ours), median(peer));
    println!(
        "cluster log read, {rows} rows in {BUCKETS} buckets, median of {runs}: \
         raw FetchLog + fluss-datafusion codec {ours:.1} ms, fluss-rs RecordBatchLogReader \
         {peer:.1} ms; time ratio ours / fluss-rs = {:.2}",
        ours / peer
    );
    drop(server);
    Ok(())
}
