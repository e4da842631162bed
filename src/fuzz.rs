//! Entry points of the `cargo fuzz` targets in `fuzz/`, and a replay of their
//! corpora as a unit test (so CI catches a regression without fuzzing).
//!
//! Each entry takes arbitrary bytes and must return without panicking, whatever the
//! bytes: every failure is an [`Error`](crate::Error). Compiled only for the fuzzers
//! (`--cfg fuzzing`, set by cargo fuzz) and for tests.

use std::sync::Arc;

use bytes::Bytes;
use fluss::metadata::{DataTypes, JsonSerde, Schema};

use crate::log::schema::SchemaVersion;
use crate::log::segment::{SegmentFile, frame_segment, tail_is_torn_write};
use crate::log::statistics::BatchStatistics;
use crate::log::{BatchIterator, BucketLogReader, LogRange, LogReadOptions, SchemaHistory};
use crate::storage::Storage;

/// The schemas fuzzed batches are decoded against; the first input byte picks one.
fn schemas() -> Vec<Arc<SchemaVersion>> {
    let simple = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("score", DataTypes::int());
    let pk = Schema::builder()
        .column("id", DataTypes::bigint().as_non_nullable())
        .column("v", DataTypes::string())
        .primary_key(vec!["id"])
        .expect("key column exists");
    // every type V1 statistics cover (the Java golden fixture's columns)
    let all = Schema::builder()
        .column("b", DataTypes::boolean())
        .column("i8", DataTypes::tinyint())
        .column("i16", DataTypes::smallint())
        .column("i32", DataTypes::int())
        .column("i64", DataTypes::bigint())
        .column("f32", DataTypes::float())
        .column("f64", DataTypes::double())
        .column("s", DataTypes::string())
        .column("d52", DataTypes::decimal(5, 2))
        .column("d203", DataTypes::decimal(20, 3))
        .column("date", DataTypes::date())
        .column("time", DataTypes::time())
        .column("ts3", DataTypes::timestamp_with_precision(3))
        .column("ts6", DataTypes::timestamp_with_precision(6))
        .column("ltz3", DataTypes::timestamp_ltz_with_precision(3))
        .column("ltz6", DataTypes::timestamp_ltz_with_precision(6))
        .column("bytes", DataTypes::bytes());
    [simple, pk, all]
        .into_iter()
        .filter_map(|s| s.build().ok())
        .filter_map(|s| SchemaVersion::new(1, s).ok())
        .map(Arc::new)
        .collect()
}

fn pick_schema(selector: u8) -> Arc<SchemaVersion> {
    let schemas = schemas();
    schemas[selector as usize % schemas.len()].clone()
}

/// Log batches from raw segment bytes (first byte: the schema): framing, CRC,
/// change types, V1 statistics, Arrow decode (whole and projected).
pub fn log_batches(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let version = pick_schema(selector);
    for batch in BatchIterator::new(Bytes::copy_from_slice(bytes)) {
        let Ok(batch) = batch else { break };
        let _ = batch.verify_crc();
        if let Ok(types) = batch.change_types() {
            let _ = types.iter().count();
        }
        if let Some(stats) = batch.statistics_bytes() {
            let _ = BatchStatistics::parse(stats, version.row_type());
        }
        let _ = batch.decode(&version.arrow, None);
        let _ = batch.decode(&version.arrow, Some(&[0]));
    }
}

/// A bucket directory holding one segment made of `data` (first byte: the schema):
/// framing as the newest and as a sealed segment, torn-tail classification, the log
/// end, a bounded read of everything, and a writer opening the bucket (recovery).
pub fn segment(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let version = pick_schema(selector);
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    runtime.block_on(async {
        let Ok(storage) = Storage::open("memory:///") else {
            return;
        };
        let dir = "log-0";
        let file = SegmentFile {
            base_offset: 0,
            path: format!("{dir}/00000000000000000000.log"),
        };
        // every input is a new file: what the process-wide framing memo learnt of the
        // last one's bytes does not hold
        crate::log::segment::forget_framing(&storage, &file.path);
        let bytes = Bytes::copy_from_slice(bytes);
        for is_last in [true, false] {
            let _ = frame_segment(bytes.clone(), &file, is_last);
        }
        let _ = tail_is_torn_write(&bytes, 0);
        if storage.put_atomic(&file.path, bytes).await.is_err() {
            return;
        }
        let Ok((earliest, end)) = crate::log::reader::bucket_offsets(&storage, dir).await else {
            return;
        };
        let mut history = SchemaHistory::default();
        history.insert((*version).clone());
        let Ok(mut reader) = BucketLogReader::new(
            storage.clone(),
            dir.to_string(),
            LogRange::new(earliest, end),
            Arc::new(history),
            version,
            LogReadOptions::verified(),
        ) else {
            return;
        };
        while let Ok(Some(_)) = reader.next_batch().await {}
        // A commit record past the end readers found is lost commits: the writer
        // refuses, truncating nothing; at the end, or without a record, it opens.
        let open =
            |committed| crate::log::segment::SegmentWriter::open(&storage, dir, 1 << 20, committed);
        let before = storage.read(&file.path).await.ok();
        assert!(
            open(Some(end + 1)).await.is_err(),
            "a writer opened a log that ends before its committed end"
        );
        assert_eq!(
            storage.read(&file.path).await.ok(),
            before,
            "a refusing writer truncated"
        );
        let _ = open(Some(end)).await;
        let _ = open(None).await;
    });
}

/// Every metadata parser (first byte: which one): table, schema, partition and
/// database registrations, the lake-table znode, offsets files, a pending-write
/// intent and the commit record, and a whole table loaded from a table and a schema document (`\0`
/// between them) as a source opens it.
pub fn metadata(data: &[u8]) {
    use crate::source::metadata::{
        DatabaseRegistration, PartitionRegistration, RegisteredLakeSnapshots, TableBucketOffsets,
        TableRegistration,
    };
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    match selector % 8 {
        0 => {
            let _ = serde_json::from_slice::<TableRegistration>(bytes);
        }
        1 => {
            if let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes)
                && let Ok(schema) = Schema::deserialize_json(&value)
            {
                let _ = SchemaVersion::new(1, schema);
            }
        }
        2 => {
            let _ = serde_json::from_slice::<PartitionRegistration>(bytes);
        }
        3 => {
            let _ = serde_json::from_slice::<DatabaseRegistration>(bytes);
        }
        4 => {
            let _ = RegisteredLakeSnapshots::from_json(bytes);
        }
        5 => {
            if let Ok(offsets) = TableBucketOffsets::from_json(bytes) {
                let _ = offsets.check_table(1, 3);
                let _ = offsets.get(None, 0);
            }
        }
        6 => {
            // the two files a statement commits through
            let _ = serde_json::from_slice::<crate::source::local_store::WriteIntent>(bytes);
            if let Ok(ends) = crate::source::local_store::CommittedEnds::parse(bytes, "f") {
                let again = crate::source::local_store::CommittedEnds::parse(&ends.to_bytes(), "f");
                assert_eq!(
                    again.ok(),
                    Some(ends),
                    "a commit record does not round-trip"
                );
            }
        }
        _ => load_table(bytes),
    }
}

/// Loads `db.t` from an in-memory store holding the two documents of `bytes`.
fn load_table(bytes: &[u8]) {
    use crate::source::FlussSource;
    use fluss::metadata::TablePath;
    let mut parts = bytes.splitn(2, |b| *b == 0);
    let (table, schema) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    runtime.block_on(async {
        let Ok(store) = crate::source::LocalStore::open("memory:///").await else {
            return;
        };
        let files = [
            ("zk/metadata/databases/db.json", &b"{\"version\":1}"[..]),
            ("zk/metadata/databases/db/tables/t.json", table),
            ("zk/metadata/databases/db/tables/t/schemas/1.json", schema),
        ];
        for (path, content) in files {
            if store
                .storage()
                .put_atomic(path, Bytes::copy_from_slice(content))
                .await
                .is_err()
            {
                return;
            }
        }
        if let Ok(table) = store.get_table(&TablePath::new("db", "t")).await {
            let _ = store.readable_lake_snapshot(&table).await;
            let _ = store.list_partitions(&table).await;
            if let Ok(buckets) = store.buckets(&table).await {
                let _ = store.bucket_offsets(&table, &buckets).await;
            }
        }
    });
}

/// The SQL front end of [`FlussSession`](crate::sql::FlussSession): statement
/// splitting and classification, Fluss DDL into table descriptors, the nesting
/// guard, and DataFusion's parser for everything it hands on.
pub fn sql_statement(data: &[u8]) {
    use crate::sql::statement::{Statement, parse_statement, session_object};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = crate::sql::parse::is_complete(text);
    let Ok(statements) = crate::sql::parse::split_statements(text) else {
        return;
    };
    for sql in statements {
        let _ = crate::sql::parse::expression_depth(&sql);
        let _ = session_object(&sql);
        match parse_statement(&sql) {
            Ok(Statement::CreateTable(spec)) => {
                let _ = crate::sql::ddl::descriptor(&spec);
            }
            // depth-limited, as the session plans nothing deeper
            Ok(Statement::Query(query))
                if crate::sql::parse::expression_depth(&query)
                    .is_ok_and(|d| d <= crate::sql::MAX_EXPRESSION_DEPTH) =>
            {
                let _ = datafusion::sql::parser::DFParser::parse_sql(&query);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes the seed corpora from stores this crate writes (segments of every
    /// compression, with V1 statistics and PK changelogs; every metadata document;
    /// the statements of `sql/*.slt`). Run with `cargo test --lib
    /// fuzz::tests::write_seed_corpora -- --ignored`, then minimise with `cargo fuzz
    /// cmin`.
    #[tokio::test]
    #[ignore]
    async fn write_seed_corpora() {
        use crate::sql::FlussSession;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        let store_dir = tempfile::tempdir().unwrap();
        let store = crate::source::LocalStore::open(store_dir.path().to_str().unwrap())
            .await
            .unwrap();
        let session = FlussSession::new(Arc::new(store)).await.unwrap();
        let script = [
            // schema 0: (id, name, score), three compressions, V1 statistics on one
            "CREATE TABLE simple_zstd (id BIGINT, name STRING, score INT) \
             WITH ('bucket.num' = '1', 'table.statistics.columns' = '*', 'table.datalake.enabled' = 'true')",
            "CREATE TABLE simple_lz4 (id BIGINT, name STRING, score INT) \
             WITH ('bucket.num' = '1', 'table.log.arrow.compression.type' = 'LZ4_FRAME')",
            "CREATE TABLE simple_none (id BIGINT, name STRING, score INT) \
             WITH ('bucket.num' = '1', 'table.log.arrow.compression.type' = 'NONE')",
            "INSERT INTO simple_zstd VALUES (1, 'a', 10), (2, NULL, 20), (3, 'c', NULL)",
            "INSERT INTO simple_zstd VALUES (4, 'dddddddddddd', -4)",
            "INSERT INTO simple_lz4 VALUES (1, 'a', 10), (2, 'b', 20)",
            "INSERT INTO simple_none VALUES (1, 'a', 10), (2, 'b', 20)",
            "INSERT INTO simple_none VALUES (3, 'c', 30)",
            "CALL fluss.tier('simple_zstd')",
            // schema 1: a primary-key changelog (+I, -U/+U, -D)
            "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket.num' = '1', 'table.datalake.enabled' = 'true')",
            "INSERT INTO pk VALUES (1, 'a'), (2, 'b'), (3, 'c')",
            "INSERT INTO pk VALUES (2, 'b2')",
            "DELETE FROM pk WHERE id = 1",
            "DELETE FROM pk WHERE id = 99",
            "CALL fluss.tier('pk')",
            // schema 2: every statistics type
            "CREATE TABLE every_type (b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT, \
             f32 FLOAT, f64 DOUBLE, s STRING, d52 DECIMAL(5, 2), d203 DECIMAL(20, 3), \
             `date` DATE, `time` TIME, ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), \
             ltz3 TIMESTAMP_LTZ(3), ltz6 TIMESTAMP_LTZ(6), `bytes` BYTES) \
             WITH ('bucket.num' = '1', 'table.statistics.columns' = '*')",
            "INSERT INTO every_type VALUES (true, 1, 2, 3, 4, 1.5, -2.5, 'x', 1.25, 123456789.125, \
             DATE '2024-01-02', CAST('12:34:56' AS TIME), TIMESTAMP '2024-01-02 03:04:05.678', \
             TIMESTAMP '2024-01-02 03:04:05.678901', TIMESTAMP '2024-01-02 03:04:05.678', \
             TIMESTAMP '2024-01-02 03:04:05.678901', X'00ff'), \
             (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
             NULL, NULL, NULL)",
            // partitions
            "CREATE TABLE parts (id BIGINT, dt STRING) PARTITIONED BY (dt) \
             WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
            "INSERT INTO parts VALUES (1, '2024-01-01'), (2, '2024-01-02')",
            "CALL fluss.tier('parts')",
        ];
        for sql in script {
            session
                .execute(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        let files = |ext: &str| {
            let mut out = Vec::new();
            let mut stack = vec![store_dir.path().to_path_buf()];
            while let Some(dir) = stack.pop() {
                for entry in std::fs::read_dir(dir).unwrap() {
                    let p = entry.unwrap().path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.to_string_lossy().ends_with(ext) {
                        out.push(p);
                    }
                }
            }
            out.sort();
            out
        };
        let write = |target: &str, name: String, bytes: Vec<u8>| {
            let dir = root.join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), bytes).unwrap();
        };
        for (i, segment) in files(".log").iter().enumerate() {
            let path = segment.to_string_lossy();
            let selector = if path.contains("/pk-") {
                1u8
            } else if path.contains("/every_type-") {
                2
            } else {
                0
            };
            let bytes = std::fs::read(segment).unwrap();
            for target in ["log_batches", "segment"] {
                write(
                    target,
                    format!("seed-{i}"),
                    [&[selector], bytes.as_slice()].concat(),
                );
            }
        }
        // metadata: the selector of each document kind (see `metadata`)
        let documents: [(&str, u8); 6] = [
            ("tables/", 0),
            ("/schemas/", 1),
            ("/partitions/", 2),
            ("laketable", 4),
            (".offsets", 5),
            ("databases/", 3),
        ];
        let mut n = 0;
        for file in files(".json").iter().chain(files(".offsets").iter()) {
            let path = file.to_string_lossy();
            let Some((_, selector)) = documents.iter().find(|(p, _)| path.contains(p)) else {
                continue;
            };
            let bytes = std::fs::read(file).unwrap();
            write(
                "metadata",
                format!("seed-{n}"),
                [&[*selector], bytes.as_slice()].concat(),
            );
            n += 1;
        }
        let tables = store_dir.path().join("zk/metadata/databases/fluss/tables");
        for name in ["simple_zstd", "pk", "parts", "every_type"] {
            let table = std::fs::read(tables.join(format!("{name}.json"))).unwrap();
            let schema = std::fs::read(tables.join(format!("{name}/schemas/1.json"))).unwrap();
            let bytes = [&[7u8], table.as_slice(), &[0], schema.as_slice()].concat();
            write("metadata", format!("seed-table-{name}"), bytes);
        }
        write(
            "metadata",
            "seed-intent".into(),
            [&[6u8][..], br#"{"version":1,"buckets":[{"bucket":0,"dir":"log-0","start_offset":3,"segment":["log-0/00000000000000000000.log",120]}]}"#].concat(),
        );
        // SQL: the session's own statements and the queries of the sqllogictest files
        let mut statements: Vec<String> = script.iter().map(|s| s.to_string()).collect();
        let slt = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
        for file in std::fs::read_dir(slt).unwrap() {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            let mut lines = text.lines();
            while let Some(line) = lines.next() {
                if line.starts_with("statement") || line.starts_with("query") {
                    let sql: Vec<&str> = lines
                        .by_ref()
                        .take_while(|l| !l.is_empty() && *l != "----")
                        .collect();
                    statements.push(sql.join("\n"));
                }
            }
        }
        statements.sort();
        statements.dedup();
        for (i, sql) in statements.iter().enumerate() {
            write(
                "sql_statement",
                format!("seed-{i}"),
                sql.as_bytes().to_vec(),
            );
        }
    }

    thread_local! {
        /// Panics raised on this thread, even those caught by `catch_unwind` (the
        /// fuzzers treat every panic as a crash, so the replay does too).
        static PANICS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Runs every committed corpus input through its entry point.
    #[test]
    fn corpora_replay_without_panics() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|p| p.set(p.get() + 1));
            previous(info)
        }));
        // On a thread with a large stack: a debug build's frames are many times a
        // release build's (sqlparser's recursive descent over 20 nested parentheses
        // in a FROM clause needs more than a test thread's 2 MiB in debug, never in
        // the release fuzzers, whose inputs these are).
        let replay = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(replay_corpora)
            .unwrap();
        if let Err(panic) = replay.join() {
            std::panic::resume_unwind(panic);
        }
    }

    fn replay_corpora() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        type Entry = fn(&[u8]);
        let targets: [(&str, Entry); 4] = [
            ("log_batches", log_batches),
            ("segment", segment),
            ("metadata", metadata),
            ("sql_statement", sql_statement),
        ];
        for (name, entry) in targets {
            let dir = root.join(name);
            let mut inputs = 0;
            for file in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            {
                let path = file.unwrap().path();
                entry(&std::fs::read(&path).unwrap());
                let panics = PANICS.with(|p| p.replace(0));
                assert_eq!(panics, 0, "{name}: {} panicked", path.display());
                inputs += 1;
            }
            assert!(inputs > 0, "no corpus for {name}");
        }
    }
}
