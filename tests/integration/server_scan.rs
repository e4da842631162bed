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
    store_with("t", tier_first).await
}

/// [`store`], its table named `db.<name>`.
async fn store_with(name: &str, tier_first: bool) -> (tempfile::TempDir, Arc<LocalStore>) {
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
    let statements = [
        "CREATE DATABASE db".to_string(),
        format!(
            "CREATE TABLE db.{name} (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '1', 'table.datalake.enabled' = 'true')"
        ),
        format!("INSERT INTO db.{name} VALUES (1, 'a'), (2, 'b'), (3, 'c')"),
    ];
    for sql in statements {
        session.execute(&sql).await.unwrap();
    }
    if tier_first {
        let tier = format!("CALL fluss.tier('db.{name}')");
        session.execute(&tier).await.unwrap();
    }
    for sql in [
        format!("INSERT INTO db.{name} VALUES (2, 'b2')"),
        format!("INSERT INTO db.{name} VALUES (4, 'd')"),
    ] {
        session.execute(&sql).await.unwrap();
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

/// What the library logs (`tracing`) of the decisions above: the read of the
/// servers' state where the changelog was cut, and the scan a lookup of a partition
/// Fluss no longer has runs instead; with names and offsets, never a credential.
#[tokio::test]
async fn the_fallbacks_are_logged_without_credentials() {
    use std::sync::{Arc as SyncArc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(SyncArc<Mutex<Vec<u8>>>);
    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // one subscriber for the whole test binary (a thread's own would miss events
    // whose callsites other tests' threads registered first)
    static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    let captured = CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let writer = captured.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new("fluss_datafusion=debug"))
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
            captured
        })
        .clone();

    let (_dir, store) = store_with("logged", false).await;
    let mirror = Arc::new(MirroredSource::start(store.clone()).await.unwrap());
    mirror
        .expire_log(&TablePath::new("db", "logged"), 0, 5)
        .await
        .unwrap();
    let session = FlussSession::new(mirror.clone()).await.unwrap();
    assert_eq!(
        text(&session, "SELECT id, v FROM db.logged ORDER BY id").await,
        CURRENT
    );

    // a partition dropped after tiering, looked up by its whole key
    for sql in [
        "CREATE TABLE db.logged_p (dt STRING, id INT, v STRING, PRIMARY KEY (dt, id) NOT ENFORCED) \
         PARTITIONED BY (dt) WITH ('bucket.num' = '1', 'table.datalake.enabled' = 'true', \
         'client.security.sasl.password' = 'NOT-A-LOG-LINE-4711')",
        "INSERT INTO db.logged_p VALUES ('a', 1, 'old')",
        "CALL fluss.tier('db.logged_p')",
        "ALTER TABLE db.logged_p DROP PARTITION (dt = 'a')",
    ] {
        session.execute(sql).await.unwrap();
    }
    let found = text(
        &session,
        "SELECT v FROM db.logged_p WHERE dt = 'a' AND id = 1",
    )
    .await;
    assert!(found.contains("old"), "{found}");

    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains(
            "the changelog no longer reaches the lake's offsets: reading the tablet servers' \
             current rows (server-scan) table=db.logged"
        ),
        "{log}"
    );
    assert!(
        log.contains("keys of partitions Fluss no longer has: scanning instead")
            && log.contains("table=db.logged_p"),
        "{log}"
    );
    assert!(log.contains("planned the cut and the lake"), "{log}");
    assert!(!log.contains("NOT-A-LOG-LINE-4711"), "{log}");
}
