//! A union read is complete or it is an error: damaged logs, offsets and metadata
//! never come back as fewer, more or stale rows with success.
//!
//! The fixture is the store of the bug reports: a table with 3 buckets, tiered once,
//! then written twice more (every append is one batch, and here one segment, per
//! bucket), 120 rows in all.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use fluss_datafusion::source::{LocalStore, LocalStoreOptions};
use fluss_datafusion::sql::FlussSession;

struct Fixture {
    dir: tempfile::TempDir,
    session: FlussSession,
}

impl Fixture {
    /// A store whose log rolls a segment per batch (`roll_per_batch`) or keeps one
    /// segment per bucket.
    async fn new(roll_per_batch: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let options = LocalStoreOptions {
            segment_roll_bytes: if roll_per_batch { 1 } else { 64 << 20 },
            ..Default::default()
        };
        let store = LocalStore::open_with_options(dir.path().to_str().unwrap(), options)
            .await
            .unwrap();
        let session = FlussSession::new(Arc::new(store)).await.unwrap();
        Self { dir, session }
    }

    /// A reopened session (a new process: no writer state in memory).
    async fn reopen(&self) -> FlussSession {
        let store = LocalStore::open(self.root().to_str().unwrap())
            .await
            .unwrap();
        FlussSession::new(Arc::new(store)).await.unwrap()
    }

    /// The 3-bucket table of the reports: 72 rows tiered, then 24 and 24 more. On a
    /// primary-key table the later writes update keys 0..24 and 24..48 instead.
    async fn tiered(pk: bool) -> Self {
        let fixture = Self::new(true).await;
        let ddl = if pk {
            "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '3', 'table.datalake.enabled' = 'true')"
        } else {
            "CREATE TABLE t (id BIGINT, v STRING) \
             WITH ('bucket.num' = '3', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true')"
        };
        fixture.sql(ddl).await;
        fixture
            .sql("INSERT INTO t SELECT value, 'lake' FROM generate_series(0, 71)")
            .await;
        fixture.sql("CALL fluss.tier('t')").await;
        let (first, second) = if pk {
            ((0, 23), (24, 47))
        } else {
            ((72, 95), (96, 119))
        };
        for (from, to) in [first, second] {
            fixture
                .sql(&format!(
                    "INSERT INTO t SELECT value, 'tail' FROM generate_series({from}, {to})"
                ))
                .await;
        }
        fixture
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    async fn sql(&self, sql: &str) -> Vec<RecordBatch> {
        self.session
            .execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    async fn error(&self, sql: &str) -> String {
        error_of(&self.session, sql).await
    }

    /// The segment files of bucket `b`, by base offset.
    fn segments(&self, bucket: i32) -> Vec<PathBuf> {
        let data = self.root().join("data/fluss");
        let table = std::fs::read_dir(&data)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut files: Vec<PathBuf> = std::fs::read_dir(table.join(format!("log-{bucket}")))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        files.sort();
        files
    }

    fn offsets_file(&self) -> PathBuf {
        let mut stack = vec![self.root().join("remote")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "offsets") {
                    return p;
                }
            }
        }
        panic!("no offsets file")
    }

    fn table_json(&self) -> PathBuf {
        self.root()
            .join("zk/metadata/databases/fluss/tables/t.json")
    }
}

async fn error_of(session: &FlussSession, sql: &str) -> String {
    match session.execute(sql).await {
        Err(e) => e.to_string(),
        Ok(batches) => panic!(
            "{sql}: expected an error, got {} rows",
            batches.iter().map(RecordBatch::num_rows).sum::<usize>()
        ),
    }
}

fn single_i64(batches: &[RecordBatch]) -> i64 {
    batches[0].column(0).as_primitive::<Int64Type>().value(0)
}

fn base_offset(segment: &Path) -> i64 {
    segment
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn the_fixture_reads_120_rows() {
    let f = Fixture::tiered(false).await;
    assert_eq!(single_i64(&f.sql("SELECT count(*) FROM t").await), 120);
    assert_eq!(f.segments(0).len(), 3);
}

/// `count(*)` of a log table is answered from metadata (the lake's manifests and the
/// tail's batch headers, validated), not by reading; a tail batch whose bytes are
/// damaged makes it an error, as a read is, never a count from offsets.
#[tokio::test]
async fn count_star_from_metadata_is_exact_and_fails_on_a_damaged_tail() {
    let f = Fixture::tiered(false).await;
    let plan = f.sql("EXPLAIN SELECT count(*) FROM t").await;
    let plan = format!(
        "{}",
        datafusion::arrow::util::pretty::pretty_format_batches(&plan).unwrap()
    );
    assert!(plan.contains("120 as count(*)"), "{plan}");
    assert!(!plan.contains("FlussLogScanExec"), "{plan}");
    // the same count when read (a filter that keeps every row)
    let read = f.sql("SELECT count(*) FROM t WHERE v <> 'none'").await;
    assert_eq!(single_i64(&read), 120);

    // one byte of the newest batch of bucket 0 (in the tail) flipped
    let newest = f.segments(0).pop().unwrap();
    let mut bytes = std::fs::read(&newest).unwrap();
    let at = bytes.len() - 8;
    bytes[at] ^= 0xff;
    std::fs::write(&newest, bytes).unwrap();
    let e = f.error("SELECT count(*) FROM t").await;
    assert!(e.contains("CRC-32C mismatch"), "{e}");
    assert!(e.contains("table: fluss.t"), "{e}");
    assert!(e.contains("bucket: 0"), "{e}");
    let file = newest.file_name().unwrap().to_str().unwrap();
    assert!(
        e.contains(&format!("file: data/fluss/t-0/log-0/{file}")),
        "{e}"
    );
}

#[tokio::test]
async fn a_deleted_segment_at_the_tiered_offset_is_an_error_not_fewer_rows() {
    for pk in [false, true] {
        let f = Fixture::tiered(pk).await;
        let segments = f.segments(0);
        std::fs::remove_file(&segments[1]).unwrap();
        let e = f.error("SELECT * FROM t").await;
        assert!(e.contains("offsets are missing"), "pk={pk}: {e}");
        assert!(e.contains("bucket: 0"), "{e}");
        assert!(
            e.contains(&format!("expected_offset: {}", base_offset(&segments[1]))),
            "{e}"
        );
        assert!(
            e.contains(&format!("found_offset: {}", base_offset(&segments[2]))),
            "{e}"
        );
        // no count from offsets either
        f.error("SELECT count(*) FROM t").await;
    }
}

#[tokio::test]
async fn retention_past_the_tiered_offset_is_an_error_naming_the_missing_range() {
    let f = Fixture::tiered(false).await;
    let segments = f.segments(1);
    std::fs::remove_file(&segments[0]).unwrap();
    std::fs::remove_file(&segments[1]).unwrap();
    let e = f.error("SELECT count(*) FROM t").await;
    let missing = format!(
        "missing_offsets: [{}, {})",
        base_offset(&segments[1]),
        base_offset(&segments[2])
    );
    assert!(e.contains(&missing), "{e}");
    assert!(e.contains("table: fluss.t"), "{e}");
    assert!(e.contains("bucket: 1"), "{e}");
}

/// Time travel past what retention left: the table as of a time before any lake
/// snapshot needs the log from offset 0, and a log window whose first batch is the
/// first one left may have lost rows before it; both are errors, never fewer rows.
#[tokio::test]
async fn time_travel_past_retention_is_an_error_naming_the_missing_range() {
    let f = Fixture::tiered(false).await;
    let segments = f.segments(1);
    std::fs::remove_file(&segments[0]).unwrap();
    let missing = format!("missing_offsets: [0, {})", base_offset(&segments[1]));
    for sql in [
        "SELECT count(*) FROM t TIMESTAMP AS OF 0",
        "SELECT count(*) FROM fluss_log_between('fluss.t', 0)",
    ] {
        let e = f.error(sql).await;
        assert!(e.contains(&missing), "{sql}: {e}");
        assert!(e.contains("bucket: 1"), "{sql}: {e}");
    }
}

#[tokio::test]
async fn a_sealed_segment_truncated_at_a_batch_boundary_is_an_error() {
    let f = Fixture::tiered(false).await;
    let segments = f.segments(2);
    // the batch boundary at the start of the segment: every batch of it is gone
    std::fs::write(&segments[1], b"").unwrap();
    let e = f.error("SELECT * FROM t").await;
    assert!(e.contains("offsets are missing"), "{e}");
    f.error("SELECT count(*) FROM t").await;
}

#[tokio::test]
async fn a_stray_empty_segment_is_an_error() {
    let f = Fixture::tiered(false).await;
    let segments = f.segments(0);
    let last = base_offset(segments.last().unwrap());
    // named inside the newest segment's range: the log end would move back to it
    let stray = segments[0].with_file_name(format!("{:020}.log", last + 1));
    std::fs::write(&stray, b"").unwrap();
    let e = f.error("SELECT count(*) FROM t").await;
    assert!(e.contains("the newest segment is empty"), "{e}");
    assert!(e.contains(&format!("found_offset: {}", last + 1)), "{e}");
    // and past the end
    std::fs::remove_file(&stray).unwrap();
    let stray = segments[0].with_file_name(format!("{:020}.log", last + 1000));
    std::fs::write(&stray, b"").unwrap();
    f.error("SELECT * FROM t").await;
}

#[tokio::test]
async fn tiered_offsets_are_validated() {
    let f = Fixture::tiered(false).await;
    let file = f.offsets_file();
    let json = std::fs::read_to_string(&file).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let offsets: Vec<i64> = value["bucket_offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let with_first = |first: i64| {
        let mut v = value.clone();
        v["bucket_offsets"][0] = first.into();
        serde_json::to_string(&v).unwrap()
    };
    std::fs::write(&file, with_first(-5)).unwrap();
    let e = f.error("SELECT * FROM t").await;
    assert!(e.contains("-5"), "{e}");
    assert!(
        e.contains(file.file_name().unwrap().to_str().unwrap()),
        "{e}"
    );

    std::fs::write(&file, with_first(1000)).unwrap();
    let e = f.error("SELECT count(*) FROM t").await;
    assert!(e.contains("claims offsets up to 1000"), "{e}");

    // -1 means "nothing tiered for this bucket": the log is read from its earliest
    // offset, and the lake's rows of that bucket are read as well, so a real store
    // with -1 has no lake rows there; ours does, hence 120 + the bucket's lake rows.
    std::fs::write(&file, with_first(-1)).unwrap();
    let rows = single_i64(&f.sql("SELECT count(*) FROM t").await);
    assert_eq!(rows, 120 + offsets[0]);
}

#[tokio::test]
async fn an_unknown_lake_format_or_bucket_count_fails_at_open_naming_the_file() {
    let f = Fixture::tiered(false).await;
    let file = f.table_json();
    let json = std::fs::read_to_string(&file).unwrap();
    for format in ["delta", ""] {
        let damaged = json.replace(
            "\"table.datalake.format\":\"paimon\"",
            &format!("\"table.datalake.format\":\"{format}\""),
        );
        assert_ne!(damaged, json);
        std::fs::write(&file, damaged).unwrap();
        let e = f.error("SELECT * FROM t").await;
        assert!(e.contains("unknown 'table.datalake.format'"), "{e}");
        assert!(e.contains("t.json"), "{e}");
    }
    // a format this crate cannot read yet says so, rather than naming a property
    let lance = json.replace(
        "\"table.datalake.format\":\"paimon\"",
        "\"table.datalake.format\":\"lance\"",
    );
    std::fs::write(&file, lance).unwrap();
    let e = f.error("SELECT * FROM t").await;
    assert!(e.contains("lake format lance is not supported yet"), "{e}");
    assert!(!e.contains("warehouse"), "{e}");
    // an Iceberg table names its own warehouse property, not Paimon's
    let iceberg = json.replace(
        "\"table.datalake.format\":\"paimon\"",
        "\"table.datalake.format\":\"iceberg\"",
    );
    std::fs::write(&file, iceberg).unwrap();
    let e = f.error("SELECT * FROM t").await;
    assert!(
        e.contains("no 'table.datalake.iceberg.warehouse' property"),
        "{e}"
    );
    assert!(!e.contains("paimon"), "{e}");
    for count in ["0", "-1", "2000000000"] {
        let damaged = json.replace("\"bucket_count\":3", &format!("\"bucket_count\":{count}"));
        assert_ne!(damaged, json);
        std::fs::write(&file, damaged).unwrap();
        let e = f.error("SELECT count(*) FROM t").await;
        assert!(
            e.contains(&format!("bucket count {count} is out of range")),
            "{e}"
        );
        assert!(e.contains("t.json"), "{e}");
    }
}

/// A store whose bucket 0 holds one segment of three batches (ids 0..3, 3..5, 5..6).
async fn three_batches() -> Fixture {
    let f = Fixture::new(false).await;
    f.sql("CREATE TABLE t (id BIGINT, v STRING) WITH ('bucket.num' = '1')")
        .await;
    for values in ["(0,'a'),(1,'a'),(2,'a')", "(3,'b'),(4,'b')", "(5,'c')"] {
        f.sql(&format!("INSERT INTO t VALUES {values}")).await;
    }
    f
}

#[tokio::test]
async fn a_damaged_length_in_the_newest_segment_is_corruption_not_a_torn_tail() {
    let f = three_batches().await;
    let segment = f.segments(0).pop().unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    let first_len = i32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize + 12;
    // the second batch's length now runs past the end of the file
    bytes[first_len + 8..first_len + 12].copy_from_slice(&(1i32 << 20).to_le_bytes());
    std::fs::write(&segment, &bytes).unwrap();

    let reopened = f.reopen().await;
    let e = error_of(&reopened, "SELECT * FROM t").await;
    assert!(e.contains("the length is damaged"), "{e}");
    assert!(e.contains("00000000000000000000.log"), "{e}");
    // a writer refuses too, and truncates nothing
    let e = error_of(&reopened, "INSERT INTO t VALUES (6, 'd')").await;
    assert!(e.contains("the length is damaged"), "{e}");
    assert_eq!(std::fs::read(&segment).unwrap(), bytes);
}

#[tokio::test]
async fn a_zero_filled_tail_is_a_crash_leftover_readers_skip_and_writers_truncate() {
    let f = three_batches().await;
    let segment = f.segments(0).pop().unwrap();
    let length = std::fs::metadata(&segment).unwrap().len();
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes.extend(std::iter::repeat_n(0u8, 4096));
    std::fs::write(&segment, &bytes).unwrap();

    let reopened = f.reopen().await;
    let rows = reopened.execute("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(single_i64(&rows), 6);
    reopened
        .execute("INSERT INTO t VALUES (6, 'd')")
        .await
        .unwrap();
    let rows = reopened.execute("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(single_i64(&rows), 7);
    assert!(std::fs::metadata(&segment).unwrap().len() < length + 4096);
}

/// A write torn past the committed end (a crash mid-append, as another writer of
/// the layout leaves it: bytes of a batch the commit record never took in) is
/// invisible to readers and truncated by the next writer. Cut below the committed
/// end, the same bytes are lost commits (`committed_means_kept.rs`).
#[tokio::test]
async fn a_torn_write_past_the_committed_end_is_invisible_and_truncated() {
    let f = three_batches().await;
    let segment = f.segments(0).pop().unwrap();
    let record = f.root().join("data/high-watermark-checkpoint");
    let committed = std::fs::read(&record).unwrap();
    let length = std::fs::metadata(&segment).unwrap().len() as usize;
    // the fourth batch, written and then cut short before its commit was recorded
    f.sql("INSERT INTO t VALUES (6, 'd')").await;
    let bytes = std::fs::read(&segment).unwrap();
    std::fs::write(&segment, &bytes[..bytes.len() - 7]).unwrap();
    std::fs::write(&record, &committed).unwrap();
    let reopened = f.reopen().await;
    let rows = reopened.execute("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(single_i64(&rows), 6);
    reopened
        .execute("INSERT INTO t VALUES (6, 'd2')")
        .await
        .unwrap();
    let rows = reopened.execute("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(single_i64(&rows), 7);
    let rows = reopened
        .execute("SELECT count(*) FROM t WHERE id = 6 AND v = 'd2'")
        .await
        .unwrap();
    assert_eq!(
        single_i64(&rows),
        1,
        "the torn batch's row is gone, the new one there"
    );
    assert!(std::fs::metadata(&segment).unwrap().len() as usize > length);
}

#[tokio::test]
async fn a_partial_insert_into_a_primary_key_table_keeps_the_other_columns() {
    let f = Fixture::new(false).await;
    f.sql(
        "CREATE TABLE customer (c_custkey BIGINT, c_name STRING, c_city STRING, \
         PRIMARY KEY (c_custkey) NOT ENFORCED) WITH ('bucket.num' = '2')",
    )
    .await;
    f.sql("INSERT INTO customer VALUES (1, 'x', 'rome'), (2, 'x', 'oslo')")
        .await;
    f.sql("INSERT INTO customer (c_custkey, c_name) VALUES (2, 'y'), (3, 'z')")
        .await;
    let rows = f
        .sql("SELECT c_custkey, c_name, c_city FROM customer ORDER BY c_custkey")
        .await;
    let batch = &rows[0];
    let names = batch.column(1).as_string_view();
    let cities = batch.column(2).as_string_view();
    assert_eq!(batch.num_rows(), 3);
    assert_eq!((names.value(1), cities.value(1)), ("y", "oslo"));
    assert_eq!(names.value(2), "z");
    assert!(cities.is_null(2), "a new key has no city");
    // the changelog shows an update with both images, as Fluss writes it
    let changes = f
        .sql(
            "SELECT _change_type, c_city FROM \"customer$changelog\" \
             WHERE c_custkey = 2 ORDER BY _log_offset",
        )
        .await;
    let kinds = changes[0].column(0).as_string::<i32>();
    let kinds: Vec<&str> = (0..kinds.len()).map(|i| kinds.value(i)).collect();
    assert_eq!(kinds, vec!["insert", "update_before", "update_after"]);

    let e = f
        .error("INSERT INTO customer (c_name) VALUES ('no key')")
        .await;
    assert!(
        e.contains(
            "the target write columns [c_name] must contain the primary key columns [c_custkey]"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn damaged_table_or_schema_metadata_is_named_never_table_not_found() {
    let f = Fixture::tiered(true).await;
    let schema = f
        .root()
        .join("zk/metadata/databases/fluss/tables/t/schemas/1.json");
    let good = std::fs::read(&schema).unwrap();
    std::fs::write(&schema, b"{\"version\": 1, \"columns\": 7}").unwrap();
    let e = f.error("SELECT * FROM t").await;
    assert!(e.contains("schema JSON is not a valid Fluss schema"), "{e}");
    assert!(e.contains("schemas/1.json"), "{e}");
    assert!(!e.contains("not found"), "{e}");

    std::fs::remove_file(&schema).unwrap();
    let e = f.error("SELECT * FROM t").await;
    assert!(e.contains("table has no schema"), "{e}");
    assert!(!e.contains("not found"), "{e}");
    std::fs::write(&schema, good).unwrap();

    std::fs::write(f.table_json(), b"{\"version\": 1, \"table_id\": ").unwrap();
    let e = f.error("SELECT count(*) FROM t").await;
    assert!(e.contains("invalid JSON"), "{e}");
    assert!(e.contains("tables/t.json"), "{e}");

    // a table that is really missing is still "not found"
    let e = f.error("SELECT * FROM nope").await;
    assert!(e.contains("not found"), "{e}");
}

#[tokio::test]
async fn a_deeply_nested_statement_is_an_error_or_an_answer_never_an_abort() {
    let f = Fixture::new(false).await;
    // deep enough to leave the caller's stack for a thread of its own
    let sum = vec!["1"; 600].join("+");
    let rows = f.sql(&format!("SELECT {sum}")).await;
    assert_eq!(single_i64(&rows), 600);
    let too_deep = vec!["1"; 2_002].join("+");
    let e = f.error(&format!("SELECT {too_deep}")).await;
    assert!(e.contains("nests expressions 2001 levels deep"), "{e}");
    // a long OR of equalities is written as an IN list, which is not a chain
    let values: Vec<String> = (0..5_000).map(|i| i.to_string()).collect();
    let rows = f
        .sql(&format!(
            "SELECT count(*) FROM (VALUES (7)) v(x) WHERE x IN ({})",
            values.join(",")
        ))
        .await;
    assert_eq!(single_i64(&rows), 1);
    let e = f
        .error(&format!("INSERT INTO nope SELECT {too_deep}"))
        .await;
    assert!(e.contains("levels deep"), "{e}");
}

async fn limited(limit: usize, options: LocalStoreOptions) -> (tempfile::TempDir, FlussSession) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open_with_options(dir.path().to_str().unwrap(), options)
        .await
        .unwrap();
    let session = FlussSession::with_options(
        Arc::new(store),
        fluss_datafusion::sql::SessionOptions {
            memory_limit: Some(limit),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    (dir, session)
}

#[tokio::test]
async fn writes_are_split_into_bounded_batches_and_stream_under_a_memory_limit() {
    let options = LocalStoreOptions {
        writer_batch_bytes: 64 * 1024,
        ..Default::default()
    };
    let (dir, session) = limited(16 << 20, options).await;
    session
        .execute("CREATE TABLE t (id BIGINT, v STRING) WITH ('bucket.num' = '2')")
        .await
        .unwrap();
    let written = session
        .execute("INSERT INTO t SELECT value, 'some text' FROM generate_series(1, 300000)")
        .await
        .unwrap();
    assert_eq!(
        written[0]
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
            .value(0),
        300_000
    );
    let rows = session.execute("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(single_i64(&rows), 300_000);
    // many small batches (framed by hand: base offset, length, ...), none past the bound
    let mut batches = 0;
    let mut largest = 0;
    for table in std::fs::read_dir(dir.path().join("data/fluss")).unwrap() {
        for bucket in std::fs::read_dir(table.unwrap().path()).unwrap() {
            for segment in std::fs::read_dir(bucket.unwrap().path()).unwrap() {
                let bytes = std::fs::read(segment.unwrap().path()).unwrap();
                let mut at = 0;
                while at < bytes.len() {
                    let length = i32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap());
                    let size = length as usize + 12;
                    largest = largest.max(size);
                    batches += 1;
                    at += size;
                }
            }
        }
    }
    assert!(batches >= 2 * 10, "{batches} batches");
    assert!(largest < 128 * 1024, "largest batch {largest} bytes");
}

#[tokio::test]
async fn a_primary_key_write_or_fold_over_the_memory_limit_fails_labelled_and_changes_nothing() {
    let (_dir, session) = limited(4 << 20, LocalStoreOptions::default()).await;
    session
        .execute(
            "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '1')",
        )
        .await
        .unwrap();
    session
        .execute("INSERT INTO pk VALUES (1, 'kept')")
        .await
        .unwrap();
    let e = session
        .execute("INSERT INTO pk SELECT value, repeat('x', 100) FROM generate_series(2, 400000)")
        .await
        .unwrap_err();
    assert_eq!(
        e.kind(),
        fluss_datafusion::ErrorKind::ResourcesExhausted,
        "{e}"
    );
    assert!(e.to_string().starts_with("resources exhausted"), "{e}");
    let rows = session.execute("SELECT count(*) FROM pk").await.unwrap();
    assert_eq!(
        single_i64(&rows),
        1,
        "the failed INSERT left nothing behind"
    );

    // a union read whose tail fold outgrows the limit fails the same way
    let (_dir, big) = limited(64 << 20, LocalStoreOptions::default()).await;
    big.execute(
        "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '1')",
    )
    .await
    .unwrap();
    big.execute("INSERT INTO pk SELECT value, repeat('x', 100) FROM generate_series(1, 200000)")
        .await
        .unwrap();
    let store = big.source().clone();
    let small = FlussSession::with_options(
        store,
        fluss_datafusion::sql::SessionOptions {
            memory_limit: Some(2 << 20),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let e = small.execute("SELECT count(*) FROM pk").await.unwrap_err();
    assert_eq!(
        e.kind(),
        fluss_datafusion::ErrorKind::ResourcesExhausted,
        "{e}"
    );
}

/// A table created again under a dropped table's name, with its lake in a warehouse
/// outside the store (which DROP TABLE leaves alone): its first tiering must refuse
/// the old lake table's snapshots, never union them with its own rows.
#[tokio::test]
async fn a_recreated_table_refuses_an_old_lake_table_it_did_not_tier() {
    let f = Fixture::new(false).await;
    let lake = tempfile::tempdir().unwrap();
    let ddl = format!(
        "CREATE TABLE t (id BIGINT, v STRING) WITH ('bucket.num' = '1', \
         'table.datalake.enabled' = 'true', 'table.datalake.paimon.warehouse' = '{}')",
        lake.path().display()
    );
    f.sql(&ddl).await;
    f.sql("INSERT INTO t VALUES (1, 'old'), (2, 'old')").await;
    f.sql("CALL fluss.tier('t')").await;
    f.sql("DROP TABLE t").await;
    f.sql(&ddl).await;
    f.sql("INSERT INTO t VALUES (3, 'new')").await;
    let error = f.error("CALL fluss.tier('t')").await;
    assert!(
        error.contains("already holds snapshots this table did not tier")
            && error.contains("fluss.t"),
        "{error}"
    );
    assert_eq!(single_i64(&f.sql("SELECT count(*) FROM t").await), 1);
    assert_eq!(single_i64(&f.sql("SELECT max(id) FROM t").await), 3);
}

/// Fluss 1.0 records each partition's bucket count (`PartitionRegistration` version 2,
/// `bucket_count`): after `ALTER TABLE ... SET ('bucket.num')` old partitions keep
/// theirs and new ones get the new count. This crate writes the count into every
/// partition it creates, reads stores of either version, and refuses a partition
/// whose count differs from its table's, naming it, rather than planning it with the
/// table's count (which would read buckets it lacks and miss those it has).
#[tokio::test]
async fn a_partition_with_its_own_bucket_count_is_refused_by_name() {
    let f = Fixture::new(false).await;
    f.sql(
        "CREATE TABLE p (id BIGINT, dt STRING) PARTITIONED BY (dt) \
         WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
    )
    .await;
    f.sql("INSERT INTO p VALUES (1, 'a'), (2, 'a'), (3, 'b'), (4, 'b')")
        .await;
    f.sql("CALL fluss.tier('p')").await;
    f.sql("INSERT INTO p VALUES (5, 'a'), (6, 'b')").await;
    let partitions = f
        .root()
        .join("zk/metadata/databases/fluss/tables/p/partitions");
    let file = |name: &str| partitions.join(format!("{name}.json"));
    let json = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(file(name)).unwrap()).unwrap()
    };
    // written as Fluss 1.0 writes it
    let a = json("a");
    assert_eq!(a["version"], 2, "{a}");
    assert_eq!(a["bucket_count"], 2, "{a}");

    // a store from before 1.0 (version 1, no count) reads as before
    let mut legacy = a.clone();
    legacy["version"] = 1.into();
    legacy.as_object_mut().unwrap().remove("bucket_count");
    std::fs::write(file("a"), legacy.to_string()).unwrap();
    assert_eq!(single_i64(&f.sql("SELECT count(*) FROM p").await), 6);

    // partition b rescaled to 4 buckets by Fluss 1.0: every read and write of the
    // table is an error naming it
    let mut rescaled = json("b");
    rescaled["bucket_count"] = 4.into();
    std::fs::write(file("b"), rescaled.to_string()).unwrap();
    for sql in [
        "SELECT count(*) FROM p",
        "SELECT * FROM p WHERE dt = 'b'",
        "SELECT * FROM \"p$changelog\"",
        "INSERT INTO p VALUES (7, 'b')",
        "CALL fluss.tier('p')",
    ] {
        let e = f.error(sql).await;
        assert!(
            e.contains("partition 'b' of table fluss.p has 4 buckets and the table 2"),
            "{sql}: {e}"
        );
        assert!(e.contains("partitions/b.json"), "{sql}: {e}");
    }
    // the pre-release name of the field is read too
    let mut pre_release = json("b");
    pre_release.as_object_mut().unwrap().remove("bucket_count");
    pre_release["bucket_count_actual"] = 3.into();
    std::fs::write(file("b"), pre_release.to_string()).unwrap();
    let e = f.error("SELECT count(*) FROM p").await;
    assert!(e.contains("has 3 buckets"), "{e}");

    // its own count, equal to the table's, reads every row
    rescaled["bucket_count"] = 2.into();
    std::fs::write(file("b"), rescaled.to_string()).unwrap();
    assert_eq!(single_i64(&f.sql("SELECT count(*) FROM p").await), 6);
}
