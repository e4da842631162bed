//! The wire protocol seen by a raw client: framing, error responses, fetch semantics.

use crate::common;

use common::*;
use fluss_test_support::errors;
use fluss_test_support::frame::api_key;
use fluss_test_support::log::ServedLog;
use fluss_test_support::proto::*;
use fluss_test_support::server::ServerConfig;

fn fetch(table_id: i64, offset: i64, max_bytes: i32, bucket_max: i32) -> FetchLogRequest {
    FetchLogRequest {
        follower_server_id: -1,
        max_bytes,
        tables_req: vec![PbFetchLogReqForTable {
            table_id,
            projection_pushdown_enabled: false,
            projected_fields: vec![],
            buckets_req: vec![PbFetchLogReqForBucket {
                partition_id: None,
                bucket_id: 0,
                fetch_offset: offset,
                max_fetch_bytes: bucket_max,
            }],
            filter_predicate: None,
            filter_schema_id: None,
        }],
        max_wait_ms: Some(0),
        min_bytes: Some(1),
        read_preference: None,
    }
}

fn bucket(resp: &FetchLogResponse) -> &PbFetchLogRespForBucket {
    &resp.tables_resp[0].buckets_resp[0]
}

/// Base offsets of the batches in `records`.
fn base_offsets(records: &[u8]) -> Vec<i64> {
    let log = ServedLog::new(records.to_vec()).expect("whole batches");
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < records.len() {
        out.push(i64::from_le_bytes(
            records[pos..pos + 8].try_into().unwrap(),
        ));
        pos += 12 + i32::from_le_bytes(records[pos + 8..pos + 12].try_into().unwrap()) as usize;
    }
    assert_eq!(log.batch_count(), out.len());
    out
}

const FIRST_BATCH: usize = 336; // bytes of the first batch of logs-bucket0.log

#[tokio::test]
async fn api_versions_lists_the_served_keys() {
    let server = start(ServerConfig::default()).await;
    let mut client = RawClient::connect(&server).await;
    let resp: ApiVersionsResponse = client
        .request(
            api_key::API_VERSIONS,
            0,
            &ApiVersionsRequest {
                client_software_name: "raw".into(),
                client_software_version: "0".into(),
            },
        )
        .await
        .decode();
    let keys: Vec<i32> = resp.api_versions.iter().map(|v| v.api_key).collect();
    for key in [1000, 1003, 1007, 1012, 1015, 1021, 1032, 1038] {
        assert!(keys.contains(&key), "{key} advertised");
    }
}

#[tokio::test]
async fn unsupported_requests_get_an_error_response() {
    let server = start(ServerConfig::default()).await;
    let mut client = RawClient::connect(&server).await;
    let resp = client
        .request(9999, 0, &ListDatabasesRequest::default())
        .await;
    assert_eq!(resp.response_type, 1);
    assert_eq!(resp.error().error_code, errors::UNSUPPORTED_VERSION);
    let resp = client
        .request(api_key::LIST_DATABASES, 7, &ListDatabasesRequest::default())
        .await;
    assert_eq!(resp.error().error_code, errors::UNSUPPORTED_VERSION);
    // a body that is not the request message
    let resp = client
        .request(
            api_key::LIST_TABLES,
            0,
            &ListDatabasesRequest {
                include_summary: Some(true),
            },
        )
        .await;
    assert_eq!(resp.error().error_code, errors::UNKNOWN_SERVER_ERROR);
    // the connection is still usable, responses in order
    let dbs: ListDatabasesResponse = client
        .request(api_key::LIST_DATABASES, 0, &ListDatabasesRequest::default())
        .await
        .decode();
    assert_eq!(dbs.database_name, vec!["db"]);
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let server = start(ServerConfig::default()).await;
    let mut client = RawClient::connect(&server).await;
    let mut wire = Vec::new();
    for id in 0..5i32 {
        wire.extend_from_slice(&8i32.to_be_bytes());
        wire.extend_from_slice(&api_key::LIST_DATABASES.to_be_bytes());
        wire.extend_from_slice(&0i16.to_be_bytes());
        wire.extend_from_slice(&(100 + id).to_be_bytes());
    }
    client.send_raw(&wire).await;
    for id in 0..5 {
        let resp = client.read().await.unwrap();
        assert_eq!(resp.request_id, Some(100 + id));
        assert_eq!(resp.response_type, 0);
    }
}

#[tokio::test]
async fn broken_frames_close_the_connection() {
    let server = start(ServerConfig {
        max_frame_size: 1024,
        ..ServerConfig::default()
    })
    .await;
    let mut client = RawClient::connect(&server).await;
    client.send_raw(&(-5i32).to_be_bytes()).await;
    let failure = client.read().await.expect("a server failure");
    assert_eq!(failure.response_type, 2);
    assert!(client.read().await.is_none(), "closed");

    let mut client = RawClient::connect(&server).await;
    client.send_raw(&(1i32 << 20).to_be_bytes()).await;
    assert_eq!(client.read().await.unwrap().response_type, 2);
    assert!(client.read().await.is_none(), "closed");
}

#[tokio::test]
async fn fetch_returns_whole_batches_within_the_limits() {
    let server = start(ServerConfig::default()).await;
    let mut client = RawClient::connect(&server).await;
    let mut fetch_log = async |offset, max, bucket_max| -> FetchLogResponse {
        client
            .request(
                api_key::FETCH_LOG,
                0,
                &fetch(LOGS_TABLE_ID, offset, max, bucket_max),
            )
            .await
            .decode()
    };

    let all = fetch_log(0, 1 << 20, 1 << 20).await;
    let b = bucket(&all);
    assert_eq!(b.error_code, None);
    assert_eq!(b.high_watermark, Some(3));
    assert_eq!(b.log_start_offset, Some(0));
    assert_eq!(
        b.records.as_deref(),
        Some(fixture("logs-bucket0.log").as_slice())
    );

    // mid-batch offset: the batch holding it is served whole
    let mid = fetch_log(1, 1 << 20, 1 << 20).await;
    assert_eq!(
        base_offsets(bucket(&mid).records.as_ref().unwrap()),
        vec![0, 2]
    );

    // a limit below one batch still gets the first whole batch
    for (max, bucket_max) in [
        (1, 1 << 20),
        (1 << 20, 1),
        (FIRST_BATCH as i32 + 10, 1 << 20),
    ] {
        let one = fetch_log(0, max, bucket_max).await;
        let records = bucket(&one).records.clone().unwrap();
        assert_eq!(
            records.len(),
            FIRST_BATCH,
            "max {max} bucket max {bucket_max}"
        );
        assert_eq!(base_offsets(&records), vec![0]);
    }

    let last = fetch_log(2, 1, 1).await;
    assert_eq!(
        base_offsets(bucket(&last).records.as_ref().unwrap()),
        vec![2]
    );

    // at the high watermark: no records, no error
    let end = fetch_log(3, 1 << 20, 1 << 20).await;
    assert_eq!(bucket(&end).error_code, None);
    assert_eq!(bucket(&end).records.as_deref(), Some(&[][..]));
    assert_eq!(bucket(&end).high_watermark, Some(3));

    // earliest
    let earliest = fetch_log(-2, 1 << 20, 1 << 20).await;
    assert_eq!(
        base_offsets(bucket(&earliest).records.as_ref().unwrap()),
        vec![0, 2]
    );

    for offset in [4, -1] {
        let out = fetch_log(offset, 1 << 20, 1 << 20).await;
        assert_eq!(
            bucket(&out).error_code,
            Some(errors::LOG_OFFSET_OUT_OF_RANGE),
            "{offset}"
        );
        assert!(bucket(&out).records.is_none());
    }
}

#[tokio::test]
async fn request_limit_spans_buckets_and_tables() {
    let server = start(ServerConfig::default()).await;
    let mut client = RawClient::connect(&server).await;
    let mut req = fetch(LOGS_TABLE_ID, 0, FIRST_BATCH as i32, 1 << 20);
    req.tables_req
        .push(fetch(KV_TABLE_ID, 0, 0, 1 << 20).tables_req.remove(0));
    let resp: FetchLogResponse = client.request(api_key::FETCH_LOG, 0, &req).await.decode();
    // the first bucket used the whole request budget; the second gets nothing (no
    // minimum-one-batch once something was read)
    assert_eq!(bucket(&resp).records.as_ref().unwrap().len(), FIRST_BATCH);
    let kv = &resp.tables_resp[1].buckets_resp[0];
    assert_eq!(kv.error_code, None);
    assert_eq!(kv.records.as_deref(), Some(&[][..]));
    assert_eq!(kv.high_watermark, Some(5));
}

#[tokio::test]
async fn unknown_tables_and_buckets() {
    let server = start(ServerConfig::default()).await;
    let mut client = RawClient::connect(&server).await;
    let resp: FetchLogResponse = client
        .request(api_key::FETCH_LOG, 0, &fetch(42, 0, 1 << 20, 1 << 20))
        .await
        .decode();
    assert_eq!(
        bucket(&resp).error_code,
        Some(errors::UNKNOWN_TABLE_OR_BUCKET)
    );

    let resp: ListOffsetsResponse = client
        .request(
            api_key::LIST_OFFSETS,
            0,
            &ListOffsetsRequest {
                follower_server_id: -1,
                offset_type: 1,
                table_id: LOGS_TABLE_ID,
                partition_id: None,
                bucket_id: vec![0, 5],
                start_timestamp: None,
            },
        )
        .await
        .decode();
    assert_eq!(resp.buckets_resp[0].offset, Some(3));
    assert_eq!(
        resp.buckets_resp[1].error_code,
        Some(errors::UNKNOWN_TABLE_OR_BUCKET)
    );

    let path = PbTablePath {
        database_name: "db".into(),
        table_name: "nope".into(),
    };
    let resp = client
        .request(
            api_key::GET_TABLE_INFO,
            0,
            &GetTableInfoRequest {
                table_path: path.clone(),
            },
        )
        .await;
    assert_eq!(resp.error().error_code, errors::TABLE_NOT_EXIST);
    let resp = client
        .request(
            api_key::GET_METADATA,
            0,
            &MetadataRequest {
                table_path: vec![path],
                ..Default::default()
            },
        )
        .await;
    assert_eq!(resp.error().error_code, errors::TABLE_NOT_EXIST);
}

#[tokio::test]
async fn invalid_projection() {
    let server = start(ServerConfig::default()).await;
    let mut client = RawClient::connect(&server).await;
    for fields in [vec![1, 0], vec![0, 0], vec![5], vec![]] {
        let mut req = fetch(LOGS_TABLE_ID, 0, 1 << 20, 1 << 20);
        req.tables_req[0].projection_pushdown_enabled = true;
        req.tables_req[0].projected_fields = fields.clone();
        let resp: FetchLogResponse = client.request(api_key::FETCH_LOG, 0, &req).await.decode();
        assert_eq!(
            bucket(&resp).error_code,
            Some(errors::INVALID_COLUMN_PROJECTION),
            "{fields:?}"
        );
    }
}

#[tokio::test]
async fn metadata_of_partitions() {
    let server = start(ServerConfig::default()).await;
    let mut client = RawClient::connect(&server).await;
    let resp: MetadataResponse = client
        .request(
            api_key::GET_METADATA,
            0,
            &MetadataRequest {
                table_path: vec![PbTablePath {
                    database_name: "db".into(),
                    table_name: "parted".into(),
                }],
                partitions_path: vec![PbPhysicalTablePath {
                    database_name: "db".into(),
                    table_name: "parted".into(),
                    partition_name: Some("2024-01-02".into()),
                }],
                partitions_id: vec![10],
            },
        )
        .await
        .decode();
    assert_eq!(
        resp.coordinator_server.as_ref().unwrap().port,
        server.addr().port() as i32
    );
    assert!(resp.table_metadata[0].bucket_metadata.is_empty());
    let ids: Vec<i64> = resp
        .partition_metadata
        .iter()
        .map(|p| p.partition_id)
        .collect();
    assert_eq!(ids, vec![11, 10]);
    assert_eq!(resp.partition_metadata[0].bucket_metadata.len(), 2);
}

#[tokio::test]
async fn sasl_state_machine() {
    let server = start(ServerConfig::with_sasl_plain("admin", "secret")).await;
    let mut client = RawClient::connect(&server).await;
    let resp = client
        .request(api_key::LIST_DATABASES, 0, &ListDatabasesRequest::default())
        .await;
    assert_eq!(resp.error().error_code, errors::AUTHENTICATE_EXCEPTION);
    let auth = |token: &[u8]| AuthenticateRequest {
        protocol: "PLAIN".into(),
        token: token.to_vec(),
    };
    let resp = client
        .request(api_key::AUTHENTICATE, 0, &auth(b"\0admin\0nope"))
        .await;
    assert_eq!(resp.error().error_code, errors::AUTHENTICATE_EXCEPTION);
    let resp = client
        .request(api_key::AUTHENTICATE, 0, &auth(b"garbage"))
        .await;
    assert_eq!(resp.error().error_code, errors::AUTHENTICATE_EXCEPTION);
    let ok: AuthenticateResponse = client
        .request(api_key::AUTHENTICATE, 0, &auth(b"\0admin\0secret"))
        .await
        .decode();
    assert_eq!(ok.challenge, None);
    let dbs: ListDatabasesResponse = client
        .request(api_key::LIST_DATABASES, 0, &ListDatabasesRequest::default())
        .await
        .decode();
    assert_eq!(dbs.database_name, vec!["db"]);
}

#[tokio::test]
async fn dropping_the_server_closes_everything() {
    let server = start(ServerConfig::default()).await;
    let addr = server.addr();
    let mut client = RawClient::connect(&server).await;
    drop(server);
    // the open connection is closed...
    assert!(client.read().await.is_none());
    // ...and nobody listens any more
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());

    let server = start(ServerConfig::default()).await;
    let addr = server.addr();
    server.shutdown().await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
