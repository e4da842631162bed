//! Committed means kept: a segment that ends before its bucket's committed end (the
//! store's commit record, Fluss's `data/high-watermark-checkpoint`) has lost committed
//! batches. Reading it is an error naming the table, bucket, file and the offsets
//! lost, never fewer rows; a writer refuses to append to it and truncates nothing.
//! Only bytes past the committed end are a torn write, which readers skip and the
//! next writer truncates (Kafka's and Fluss's recovery never go below the high
//! watermark).
//!
//! The cases of the bug report: the demo store's `orders` lost 719 of 15000 rows to
//! a 10-byte cut with success, and the next writer made the loss permanent. Here the
//! cut falls on every byte of the last batch and of a batch in the middle, on log and
//! primary-key tables, over both lake formats.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::sql::FlussSession;

/// A one-bucket table: 6 rows tiered into its lake, then three statements in the
/// log tail (ids 6..9, 9..11, 11..12 on a log table; updates of tiered keys and new
/// keys on a primary-key table), each one batch of one segment.
struct Fixture {
    dir: tempfile::TempDir,
    pk: bool,
}

/// What the fixture's table holds: `count(*)` and `sum(id * 10 + length(v))`.
const WHOLE: (i64, i64) = (12, 12 * 11 / 2 * 10 + 12 * 4);
const WHOLE_PK: (i64, i64) = (9, 9 * 8 / 2 * 10 + 9 * 4);

impl Fixture {
    async fn new(format: &str, pk: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let f = Self { dir, pk };
        let key = if pk {
            ", PRIMARY KEY (id) NOT ENFORCED"
        } else {
            ""
        };
        let session = f.session().await;
        for sql in [
            format!(
                "CREATE TABLE t (id BIGINT NOT NULL, v STRING{key}) WITH ('bucket.num' = '1', \
                 'table.datalake.enabled' = 'true', 'table.datalake.format' = '{format}')"
            ),
            "INSERT INTO t SELECT value, 'lake' FROM generate_series(0, 5)".into(),
            "CALL fluss.tier('t')".into(),
        ] {
            session
                .execute(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        let tail = if pk {
            // keys 0..3 updated, 6..9 new: 9 keys
            [
                "(0,'tail'),(1,'tail'),(2,'tail')",
                "(6,'tail'),(7,'tail')",
                "(8,'tail')",
            ]
        } else {
            [
                "(6,'tail'),(7,'tail'),(8,'tail')",
                "(9,'tail'),(10,'tail')",
                "(11,'tail')",
            ]
        };
        for values in tail {
            let sql = format!("INSERT INTO t VALUES {values}");
            session
                .execute(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        f
    }

    /// A session on the store as a new process opens it.
    async fn session(&self) -> FlussSession {
        let store = LocalStore::open(self.dir.path().to_str().unwrap())
            .await
            .unwrap();
        FlussSession::new(Arc::new(store)).await.unwrap()
    }

    /// The table's only segment.
    fn segment(&self) -> PathBuf {
        let data = self.dir.path().join("data/fluss");
        let table = std::fs::read_dir(&data)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut files: Vec<PathBuf> = std::fs::read_dir(table.join("log-0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        assert_eq!(files.len(), 1, "one segment: {files:?}");
        files.pop().unwrap()
    }

    fn whole(&self) -> (i64, i64) {
        if self.pk { WHOLE_PK } else { WHOLE }
    }
}

const SUMMARY: &str = "SELECT count(*), sum(id * 10 + length(v)) FROM t";

/// Each batch of a segment: `(byte position, byte length)`.
fn batches(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let length = i32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push((at, length + 12));
        at += length + 12;
    }
    assert_eq!(at, bytes.len(), "the segment is whole batches");
    out
}

fn pair(batches: &[RecordBatch]) -> (i64, i64) {
    let b = &batches[0];
    (
        b.column(0).as_primitive::<Int64Type>().value(0),
        b.column(1).as_primitive::<Int64Type>().value(0),
    )
}

async fn error_of(session: &FlussSession, sql: &str) -> String {
    match session.execute(sql).await {
        Err(e) => e.to_string(),
        Ok(rows) => panic!("{sql}: expected an error, got {:?}", pair(&rows)),
    }
}

/// The read error of a log cut to `cut` bytes, which lost offsets `[end, committed)`.
fn assert_names_the_loss(e: &str, segment: &Path, lost: &str) {
    assert!(e.contains("lost"), "{e}");
    assert!(e.contains(&format!("lost_offsets: {lost}")), "{e}");
    assert!(e.contains("table: fluss.t"), "{e}");
    assert!(e.contains("bucket: 0"), "{e}");
    let file = segment.file_name().unwrap().to_str().unwrap();
    assert!(e.contains(file), "{e}");
}

/// The log end after the first `k` whole batches of a segment, for each `k`: the
/// next batch's base offset (the header's first 8 bytes, little-endian), and after the
/// last batch the bucket's committed end.
fn log_ends(bytes: &[u8], frames: &[(usize, usize)], committed: i64) -> Vec<i64> {
    let mut ends: Vec<i64> = frames
        .iter()
        .map(|(at, _)| i64::from_le_bytes(bytes[*at..at + 8].try_into().unwrap()))
        .collect();
    ends.push(committed);
    ends
}

/// The committed end of the store's only bucket, from its commit record (Fluss's
/// `OffsetCheckpointFile` text: version, count, `table_id bucket offset`).
fn committed_end(root: &Path) -> i64 {
    let text = std::fs::read_to_string(root.join("data/high-watermark-checkpoint")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..2], ["0", "1"], "{text}");
    lines[2].split_whitespace().last().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_cut_inside_any_committed_batch_fails_reads_and_writes_and_keeps_the_bytes() {
    for format in ["paimon", "iceberg"] {
        for pk in [false, true] {
            let f = Fixture::new(format, pk).await;
            let label = format!("{format}, pk: {pk}");
            let session = f.session().await;
            assert_eq!(
                pair(&session.execute(SUMMARY).await.unwrap()),
                f.whole(),
                "{label}"
            );
            let segment = f.segment();
            let whole = std::fs::read(&segment).unwrap();
            let frames = batches(&whole);
            // the lake's batch(es), then the three tail statements
            assert!(frames.len() >= 4, "{label}: {frames:?}");
            // log: 6 rows, then 3 + 2 + 1; primary key: 6 inserts, then 3 updates
            // (-U and +U each), 2 and 1 inserts
            let committed = committed_end(f.dir.path());
            assert_eq!(committed, if pk { 15 } else { 12 }, "{label}");
            let ends = log_ends(&whole, &frames, committed);
            let (last_at, last_len) = *frames.last().unwrap();
            let (mid_at, mid_len) = frames[frames.len() - 2];
            // every byte of the last batch and of the one before it on the first
            // combination; a few of each elsewhere (each cut is a new process's read)
            let every = format == "paimon" && !pk;
            let cuts: Vec<usize> = [(last_at, last_len), (mid_at, mid_len)]
                .iter()
                .flat_map(|&(at, len)| {
                    let all: Vec<usize> = (at..at + len).collect();
                    if every {
                        all
                    } else {
                        vec![at, at + 1, at + len / 2, at + len - 1]
                    }
                })
                .collect();
            for cut in cuts {
                std::fs::write(&segment, &whole[..cut]).unwrap();
                let whole_batches = frames.iter().filter(|(at, len)| at + len <= cut).count();
                let end = ends[whole_batches];
                let lost = format!("[{end}, {committed})");
                let session = f.session().await;
                let e = error_of(&session, SUMMARY).await;
                assert_names_the_loss(&e, &segment, &lost);
                if cut % 7 == 0 || cut == last_at {
                    let e = error_of(&session, "SELECT * FROM t").await;
                    assert_names_the_loss(&e, &segment, &lost);
                    // the writer refuses with the same error and truncates nothing
                    let e = error_of(&session, "INSERT INTO t VALUES (100, 'new')").await;
                    assert_names_the_loss(&e, &segment, &lost);
                    assert_eq!(std::fs::read(&segment).unwrap(), &whole[..cut], "{label}");
                }
            }
            // restored, the table reads whole again and takes writes
            std::fs::write(&segment, &whole).unwrap();
            let session = f.session().await;
            assert_eq!(
                pair(&session.execute(SUMMARY).await.unwrap()),
                f.whole(),
                "{label}"
            );
            session
                .execute("INSERT INTO t VALUES (100, 'new')")
                .await
                .unwrap();
            let (count, _) = pair(&session.execute(SUMMARY).await.unwrap());
            assert_eq!(count, f.whole().0 + 1, "{label}");
        }
    }
}

/// The commit record is a file a read trusts like the others: damaged, it fails
/// reads and writes naming it and the line, and nothing is truncated; restored, the
/// table reads whole.
#[tokio::test]
async fn a_damaged_commit_record_is_an_error_naming_it() {
    let f = Fixture::new("paimon", false).await;
    let record = f.dir.path().join("data/high-watermark-checkpoint");
    let whole = std::fs::read_to_string(&record).unwrap();
    let segment = f.segment();
    let bytes = std::fs::read(&segment).unwrap();
    for damaged in [
        whole.replace("0\n1\n", "0\n2\n"),
        whole.replace(" 12\n", " twelve\n"),
        whole[..whole.len() - 4].to_string(),
    ] {
        std::fs::write(&record, &damaged).unwrap();
        let session = f.session().await;
        for sql in [SUMMARY, "INSERT INTO t VALUES (100, 'new')"] {
            let e = error_of(&session, sql).await;
            assert!(e.contains("commit record is damaged"), "{damaged:?}: {e}");
            assert!(e.contains("file: data/high-watermark-checkpoint"), "{e}");
            assert!(e.contains("line: "), "{e}");
        }
        assert_eq!(std::fs::read(&segment).unwrap(), bytes);
    }
    std::fs::write(&record, &whole).unwrap();
    let session = f.session().await;
    assert_eq!(pair(&session.execute(SUMMARY).await.unwrap()), WHOLE);
}

/// A store written before the commit record (or by a tool that keeps none) is checked
/// by its framing alone until a write: the first write to a table records every one of
/// its buckets' ends, written to or not, and a cut from then on is caught.
#[tokio::test]
async fn a_store_without_a_commit_record_is_protected_from_its_first_write_on() {
    let f = Fixture::new("paimon", false).await;
    let session = f.session().await;
    session
        .execute("CREATE TABLE other (id BIGINT, v STRING) WITH ('bucket.num' = '2')")
        .await
        .unwrap();
    session
        .execute("INSERT INTO other VALUES (1, 'x')")
        .await
        .unwrap();
    let record = f.dir.path().join("data/high-watermark-checkpoint");
    std::fs::remove_file(&record).unwrap();
    let segment = f.segment();
    let whole = std::fs::read(&segment).unwrap();
    // unrecorded: a cut is what the framing shows (a torn tail), as before
    std::fs::write(&segment, &whole[..whole.len() - 10]).unwrap();
    let (count, _) = pair(&f.session().await.execute(SUMMARY).await.unwrap());
    assert_eq!(count, WHOLE.0 - 1);
    std::fs::write(&segment, &whole).unwrap();
    // each table is recorded at its own first write, not at another table's
    let session = f.session().await;
    session
        .execute("INSERT INTO other VALUES (2, 'y')")
        .await
        .unwrap();
    assert!(
        !std::fs::read_to_string(&record)
            .unwrap()
            .contains(" 0 12\n")
    );
    session
        .execute("INSERT INTO t VALUES (100, 'new')")
        .await
        .unwrap();
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(text.contains(" 0 13\n"), "{text}");
    let whole = std::fs::read(&segment).unwrap();
    std::fs::write(&segment, &whole[..whole.len() - 10]).unwrap();
    let e = error_of(&f.session().await, SUMMARY).await;
    assert_names_the_loss(&e, &segment, "[12, 13)");
}
