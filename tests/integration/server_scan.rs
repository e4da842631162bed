//! A primary-key table whose changelog log retention has cut: with no lake snapshot
//! (or one behind the cut), folding what is left of the changelog would lose every
//! key written only before it. Through a cluster the read asks each bucket's tablet
//! server for its current rows instead (ScanKv, `server-scan`), which hold every key;
//! through a LocalStore, which has no such state, it is an error naming the offsets
//! lost. The RPC test server expires the log as a tablet server's retention does,
//! keeping the key-value state whole ([`MirroredSource::expire_log`]).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use fluss::metadata::TablePath;
use fluss_datafusion::source::{LocalStore, LocalStoreOptions};
use fluss_datafusion::sql::FlussSession;
use fluss_test_support::mirror::MirroredSource;

/// A store whose log rolls a segment per batch, with `db.t` (a primary-key table of
/// one bucket, lake enabled) written in three statements, one batch each: offsets
/// [0, 3) insert 1..3, [3, 5) update 2, [5, 6) insert 4.
async fn store(tier_first: bool) -> (tempfile::TempDir, Arc<LocalStore>) {
    let dir = tempfile::tempdir().unwrap();
    let options = LocalStoreOptions {
        segment_roll_bytes: 1,
        ..Default::default()
    };
    let store = Arc::new(
        LocalStore::open_with_options(dir.path().to_str().unwrap(), options)
            .await
            .unwrap(),
    );
    let session = FlussSession::new(store.clone()).await.unwrap();
    for sql in [
        "CREATE DATABASE db",
        "CREATE TABLE db.t (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
         WITH ('bucket.num' = '1', 'table.datalake.enabled' = 'true')",
        "INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
    ] {
        session.execute(sql).await.unwrap();
    }
    if tier_first {
        session.execute("CALL fluss.tier('db.t')").await.unwrap();
    }
    for sql in [
        "INSERT INTO db.t VALUES (2, 'b2')",
        "INSERT INTO db.t VALUES (4, 'd')",
    ] {
        session.execute(sql).await.unwrap();
    }
    (dir, store)
}

async fn text(session: &FlussSession, sql: &str) -> String {
    let batches: Vec<RecordBatch> = session.execute(sql).await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

const CURRENT: &str = "\
+----+----+
| id | v  |
+----+----+
| 1  | a  |
| 2  | b2 |
| 3  | c  |
| 4  | d  |
+----+----+";

#[tokio::test]
async fn a_changelog_cut_by_retention_is_read_from_the_servers_key_value_state() {
    // no lake at all, and a lake behind the cut (it holds [0, 3), the log starts at 5)
    for tier_first in [false, true] {
        let (_dir, store) = store(tier_first).await;
        let mirror = Arc::new(MirroredSource::start(store.clone()).await.unwrap());
        mirror
            .expire_log(&TablePath::new("db", "t"), 0, 5)
            .await
            .unwrap();
        let session = FlussSession::new(mirror.clone()).await.unwrap();
        let sql = "SELECT id, v FROM db.t ORDER BY id";
        assert_eq!(
            text(&session, sql).await,
            CURRENT,
            "tier_first={tier_first}"
        );
        let plan = text(&session, &format!("EXPLAIN {sql}")).await;
        assert!(
            plan.contains(
                "FlussKvScanExec: table=db.t, buckets=1, reads=current state \
                           (server-scan, changelog expired before the lake's offsets"
            ),
            "{plan}"
        );
        // a filter is applied to the scanned rows
        let filtered = text(&session, "SELECT id FROM db.t WHERE v > 'b' ORDER BY id").await;
        assert_eq!(
            filtered,
            "+----+\n| id |\n+----+\n| 2  |\n| 3  |\n| 4  |\n+----+"
        );
    }
}

#[tokio::test]
async fn a_local_store_without_the_changelog_start_is_an_error_not_fewer_keys() {
    let (dir, store) = store(false).await;
    // retention on the store itself: the first two segments (offsets [0, 5)) go
    let log_dir = std::fs::read_dir(dir.path().join("data/db"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("t-"))
        .unwrap()
        .join("log-0");
    let mut segments: Vec<_> = std::fs::read_dir(&log_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segments.sort();
    assert_eq!(segments.len(), 3, "{segments:?}");
    std::fs::remove_file(&segments[0]).unwrap();
    std::fs::remove_file(&segments[1]).unwrap();
    let session = FlussSession::new(store).await.unwrap();
    let e = session
        .execute("SELECT id, v FROM db.t")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing_offsets: [0, 5)"), "{e}");
    assert!(e.contains("key-value state"), "{e}");
    assert!(e.contains("table: db.t"), "{e}");
    // the changelog itself is what is left of it
    let left = text(&session, "SELECT count(*) AS n FROM db.\"t$changelog\"").await;
    assert!(left.contains("| 1 |"), "{left}");
}
