//! Shared test setup: the fixture cluster, a raw protocol client, and LocalStores built
//! by SQL for tests that read a served store through the library's cluster source.

#![allow(dead_code)] // each test module uses a part of it

use std::path::PathBuf;
use std::sync::Arc;

use fluss_datafusion::LocalStore;
use fluss_test_support::memory::MemoryCluster;
use fluss_test_support::model::{
    ServedLakeBucket, ServedLakeSnapshot, ServedLog, ServedPartition, ServedTable,
};
use fluss_test_support::server::{ServerConfig, TestServer};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const LOGS_TABLE_ID: i64 = 0;
pub const KV_TABLE_ID: i64 = 1;
pub const PARTED_TABLE_ID: i64 = 2;

pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `db.logs` (log table, 3 rows in 2 batches), `db.kv` (PK table, 5 changelog records),
/// `db.parted` (partitioned, no data), and lake snapshots 7 (readable) and 8 (not) of
/// `db.logs`.
pub fn fixture_cluster() -> MemoryCluster {
    let mut cluster = MemoryCluster::new();
    let logs = ServedTable::from_zk_json(
        &fixture("logs.table.json"),
        [(1, fixture("logs.schema.json"))],
    )
    .expect("logs table");
    let kv = ServedTable::from_zk_json(&fixture("kv.table.json"), [(1, fixture("kv.schema.json"))])
        .expect("kv table");
    let parted = ServedTable::from_zk_json(
        br#"{"version":1,"table_id":2,"partition_key":["dt"],"bucket_count":2,"properties":{},"custom_properties":{},"created_time":1,"modified_time":2}"#,
        [(
            1,
            br#"{"version":1,"columns":[{"name":"id","data_type":{"type":"BIGINT"},"id":0},{"name":"dt","data_type":{"type":"STRING"},"id":1}],"highest_field_id":1}"#.to_vec(),
        )],
    )
    .expect("parted table")
    .with_partitions(vec![
        ServedPartition {
            partition_id: 10,
            name: "2024-01-01".into(),
            spec: vec![("dt".into(), "2024-01-01".into())],
        },
        ServedPartition {
            partition_id: 11,
            name: "2024-01-02".into(),
            spec: vec![("dt".into(), "2024-01-02".into())],
        },
    ]);
    cluster
        .add_table("db", "logs", logs)
        .add_table("db", "kv", kv)
        .add_table("db", "parted", parted)
        .add_log(
            LOGS_TABLE_ID,
            None,
            0,
            ServedLog::new(fixture("logs-bucket0.log")).expect("logs log"),
        )
        .add_log(
            KV_TABLE_ID,
            None,
            0,
            ServedLog::new(fixture("kv-bucket0.log")).expect("kv log"),
        );
    for (id, readable, offset) in [(7, true, 2), (8, false, 3)] {
        cluster.add_lake_snapshot(
            LOGS_TABLE_ID,
            ServedLakeSnapshot {
                snapshot_id: id,
                readable,
                buckets: vec![ServedLakeBucket {
                    partition_id: None,
                    partition_name: None,
                    bucket: 0,
                    log_offset: offset,
                }],
            },
        );
    }
    cluster
}

pub async fn start(config: ServerConfig) -> TestServer {
    TestServer::start(Arc::new(fixture_cluster()), config)
        .await
        .expect("server starts")
}

/// A response frame as read off the wire.
#[derive(Debug)]
pub struct RawResponse {
    pub response_type: u8,
    pub request_id: Option<i32>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn decode<M: Message + Default>(&self) -> M {
        assert_eq!(self.response_type, 0, "not a success response: {self:?}");
        M::decode(self.body.as_slice()).expect("decodes")
    }

    pub fn error(&self) -> fluss_test_support::proto::ErrorResponse {
        assert_ne!(self.response_type, 0, "not an error response");
        fluss_test_support::proto::ErrorResponse::decode(self.body.as_slice()).expect("decodes")
    }
}

/// A minimal Fluss protocol client speaking raw frames.
pub struct RawClient {
    stream: TcpStream,
    next_id: i32,
}

impl RawClient {
    pub async fn connect(server: &TestServer) -> Self {
        Self {
            stream: TcpStream::connect(server.addr()).await.expect("connects"),
            next_id: 0,
        }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("writes");
    }

    pub async fn request(
        &mut self,
        api_key: i16,
        version: i16,
        body: &impl Message,
    ) -> RawResponse {
        let id = self.next_id;
        self.next_id += 1;
        let payload = body.encode_to_vec();
        let mut frame = Vec::new();
        frame.extend_from_slice(&((8 + payload.len()) as i32).to_be_bytes());
        frame.extend_from_slice(&api_key.to_be_bytes());
        frame.extend_from_slice(&version.to_be_bytes());
        frame.extend_from_slice(&id.to_be_bytes());
        frame.extend_from_slice(&payload);
        self.send_raw(&frame).await;
        let response = self.read().await.expect("a response");
        assert_eq!(response.request_id, Some(id));
        response
    }

    /// Reads one response frame; `None` if the server closed the connection.
    pub async fn read(&mut self) -> Option<RawResponse> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).await.ok()?;
        let mut frame = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut frame).await.ok()?;
        let response_type = frame[0];
        let (request_id, body) = if response_type == 2 {
            (None, frame[1..].to_vec())
        } else {
            (
                Some(i32::from_be_bytes(frame[1..5].try_into().unwrap())),
                frame[5..].to_vec(),
            )
        };
        Some(RawResponse {
            response_type,
            request_id,
            body,
        })
    }
}

/// A LocalStore in a fresh directory after running `statements` (SQL) on it.
pub async fn sql_store(statements: &[&str]) -> (tempfile::TempDir, Arc<LocalStore>) {
    let (dir, store, _) = fluss_test_support::local_store::store_from_sql(statements).await;
    (dir, store)
}

/// Rows as `| a | b |` lines, nulls as `NULL`.
pub fn render(batches: &[arrow::array::RecordBatch]) -> String {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let options = FormatOptions::default().with_null("NULL");
    let mut out = String::new();
    for batch in batches {
        let columns: Vec<ArrayFormatter> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            out.push('|');
            for c in &columns {
                out.push_str(&format!(" {} |", c.value(row)));
            }
            out.push('\n');
        }
    }
    out
}
