//! The `fluss-sql` binary end to end: output formats, meta-commands, DDL/DML, errors,
//! COPY backfill, the demo, and an interactive session in a pseudo-terminal.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_fluss-sql");

/// Output of one run of the binary.
struct Run {
    stdout: String,
    stderr: String,
    ok: bool,
}

fn run(store: &Path, args: &[&str]) -> Run {
    let output = Command::new(BIN)
        .arg("--store")
        .arg(store)
        .args(args)
        .env("FLUSS_SQL_HISTORY", store.join("history"))
        .output()
        .expect("the binary runs");
    Run {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        ok: output.status.success(),
    }
}

/// Runs SQL that must succeed, quietly (creating the store if it is new).
fn sql(store: &Path, statements: &str) -> String {
    let r = run(store, &["--create", "-q", "-c", statements]);
    assert!(r.ok, "{statements} failed: {}", r.stderr);
    r.stdout
}

/// A store with a primary-key table and a log table, each with a lake snapshot and a
/// log tail (updates and deletes on the PK table).
fn small_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    sql(
        dir.path(),
        "CREATE TABLE items (id BIGINT, name STRING, price DECIMAL(10, 2), \
           PRIMARY KEY (id) NOT ENFORCED) \
           WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true');
         INSERT INTO items VALUES (1, 'apple', 1.50), (2, 'pear', 2.25), (3, 'fig', 3.00);
         CALL fluss.tier('items');
         INSERT INTO items VALUES (2, 'pear', 2.40), (4, 'kiwi', 0.99);
         DELETE FROM items WHERE id = 3;
         CREATE TABLE events (id BIGINT NOT NULL, kind STRING, day DATE) \
           WITH ('bucket.num' = '2', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true');
         INSERT INTO events VALUES (1, 'click', DATE '2024-01-01'), (2, 'view', DATE '2024-01-02'), \
           (3, 'click', DATE '2024-01-03');
         CALL fluss.tier('fluss.events');
         INSERT INTO events VALUES (4, 'buy', DATE '2024-01-04'), (5, 'click', DATE '2024-01-05');",
    );
    dir
}

const ITEMS: &str = "SELECT id, name, price FROM items ORDER BY id";

#[test]
fn formats() {
    let store = small_store();
    for format in ["table", "csv", "tsv", "json", "ndjson"] {
        let r = run(store.path(), &["-q", "--format", format, "-c", ITEMS]);
        assert!(r.ok, "{}", r.stderr);
        insta::assert_snapshot!(format!("format_{format}"), r.stdout);
    }
}

#[test]
fn maxrows_limits_the_table() {
    let store = small_store();
    let r = run(store.path(), &["-q", "--maxrows", "2", "-c", ITEMS]);
    assert!(r.ok, "{}", r.stderr);
    insta::assert_snapshot!("maxrows", r.stdout);
}

#[test]
fn describe() {
    let store = small_store();
    let r = run(store.path(), &["-q", "-c", "\\d"]);
    assert!(r.ok, "{}", r.stderr);
    insta::assert_snapshot!("describe_all", r.stdout);
    let r = run(store.path(), &["-q", "-c", "\\d items", "-c", "\\d events"]);
    assert!(r.ok, "{}", r.stderr);
    insta::assert_snapshot!("describe_tables", r.stdout);
}

#[test]
fn ddl_and_dml() {
    let store = small_store();
    let out = sql(
        store.path(),
        "CREATE DATABASE IF NOT EXISTS shop;
         USE shop;
         CREATE TABLE IF NOT EXISTS t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket.num' = '3');
         INSERT INTO t (k, v) SELECT id, name FROM fluss.fluss.items;
         DELETE FROM t WHERE v LIKE 'p%';
         SELECT * FROM t ORDER BY k;
         SHOW DATABASES;",
    );
    insta::assert_snapshot!("ddl_and_dml", out);
    let out = sql(
        store.path(),
        "DROP TABLE shop.t; DROP DATABASE shop CASCADE; SHOW DATABASES",
    );
    assert!(!out.contains("shop"), "{out}");
    // information_schema works through DataFusion
    let out = sql(store.path(), "SHOW TABLES");
    assert!(
        out.contains("| fluss         | fluss              | items "),
        "{out}"
    );
}

#[test]
fn union_reads_and_lake_only() {
    let store = small_store();
    let out = sql(
        store.path(),
        "SELECT (SELECT count(*) FROM events) AS union_rows, \
                (SELECT count(*) FROM \"events$lake\") AS lake_rows, \
                (SELECT sum(price) FROM items) AS total",
    );
    insta::assert_snapshot!("union_counts", out);
}

fn assert_one_line_error(r: &Run) -> String {
    assert!(!r.ok, "expected failure, got: {}", r.stdout);
    let line = r.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "not one line: {line}");
    assert!(line.starts_with("Error: "), "{line}");
    assert!(
        !line.contains("backtrace") && !line.contains("{ "),
        "{line}"
    );
    line.to_string()
}

#[test]
fn errors_are_one_line_and_fail() {
    let store = small_store();
    let bad_sql = assert_one_line_error(&run(store.path(), &["-q", "-c", "SELEC 1"]));
    let unknown = assert_one_line_error(&run(store.path(), &["-q", "-c", "SELECT * FROM nope"]));
    let log_delete = assert_one_line_error(&run(
        store.path(),
        &["-q", "-c", "DELETE FROM events WHERE id = 1"],
    ));
    let bad_type = assert_one_line_error(&run(
        store.path(),
        &["-q", "-c", "CREATE TABLE g (a GEOMETRY)"],
    ));
    let bad_cast = assert_one_line_error(&run(
        store.path(),
        &["-q", "-c", "INSERT INTO items VALUES ('x', 'y', 1)"],
    ));
    insta::assert_snapshot!(
        "errors",
        [bad_sql, unknown, log_delete, bad_type, bad_cast].join("\n")
    );
    // the statements after a failing one do not run
    let r = run(store.path(), &["-q", "-c", "SELECT nope", "-c", "SELECT 1"]);
    assert!(!r.ok && r.stdout.is_empty(), "{}", r.stdout);
}

#[test]
fn unreachable_store_fails() {
    let store = tempfile::tempdir().expect("temp dir");
    let file = store.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let r = run(&file.join("store"), &["-q", "-c", "SELECT 1"]);
    let line = assert_one_line_error(&r);
    assert!(line.contains("store"), "{line}");
}

#[test]
fn copy_backfills_union_tables_to_parquet() {
    let store = small_store();
    let out = store.path().join("events.parquet");
    let out = out.to_str().expect("utf-8 path");
    let copied = sql(
        store.path(),
        &format!("COPY (SELECT * FROM events WHERE day >= DATE '2024-01-02') TO '{out}'"),
    );
    assert!(copied.contains("| 4     |"), "{copied}");
    let read = sql(
        store.path(),
        &format!("SELECT id, kind, day FROM '{out}' ORDER BY id"),
    );
    insta::assert_snapshot!("copy_parquet", read);
}

#[test]
fn demo_runs_commands() {
    let store = tempfile::tempdir().expect("temp dir");
    let args = [
        "-q",
        "--demo",
        "--demo-scale",
        "0.01",
        "-c",
        "SELECT count(*) FROM orders",
    ];
    let r = run(store.path(), &args);
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stdout.contains("| 150      |"), "{}", r.stdout);
    // idempotent: a second run leaves the dataset alone
    let r = run(store.path(), &args);
    assert!(r.ok && r.stdout.contains("| 150      |"), "{}", r.stdout);
    let r = run(
        store.path(),
        &[
            "-q",
            "--format",
            "csv",
            "-c",
            "SELECT (SELECT count(*) FROM customer) AS customers, \
                    (SELECT count(*) FROM \"customer$lake\") AS lake_customers, \
                    (SELECT count(*) FROM nation) AS nations",
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    insta::assert_snapshot!("demo_counts", r.stdout);
}

#[test]
fn demo_orders_on_iceberg() {
    let store = tempfile::tempdir().expect("temp dir");
    let r = run(
        store.path(),
        &[
            "-q",
            "--demo",
            "--demo-scale",
            "0.01",
            "--demo-orders-lake",
            "iceberg",
            "--format",
            "csv",
            "-c",
            "SELECT (SELECT count(*) FROM orders) AS orders, \
                    (SELECT count(*) FROM \"orders$lake\") AS lake_orders, \
                    (SELECT count(*) FROM customer) AS customers",
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "orders,lake_orders,customers\n150,120,15");
    assert!(
        store
            .path()
            .join("lake/iceberg/fluss/orders/metadata/version-hint.text")
            .exists(),
        "orders is tiered into the Iceberg warehouse"
    );
}

#[test]
fn interactive_shell_in_a_pty() {
    let store = small_store();
    let mut command = Command::new(BIN);
    command
        .arg("--store")
        .arg(store.path())
        .env("FLUSS_SQL_HISTORY", store.path().join("history"))
        .env("TERM", "dumb");
    let start = Instant::now();
    let mut shell = rexpect::session::spawn_command(command, Some(30_000)).expect("spawn");
    shell.exp_string("fluss:fluss> ").expect("prompt");
    eprintln!(
        "start-up to prompt (debug build, existing store): {:?}",
        start.elapsed()
    );
    shell.send_line("SELECT 40 + 2 AS answer;").expect("send");
    shell.exp_string("42").expect("result");
    shell.exp_string("1 row").expect("row count");
    // a statement over two lines runs once the `;` arrives
    shell.send_line("SELECT name FROM items").expect("send");
    shell.send_line("WHERE id = 4;").expect("send");
    shell.exp_string("kiwi").expect("multi-line result");
    // errors keep the shell running
    shell.send_line("SELECT * FROM nope;").expect("send");
    shell.exp_string("Error: ").expect("error");
    shell.send_line("\\q").expect("quit");
    shell.exp_eof().expect("exit");
    assert!(
        store.path().join("history").exists(),
        "history file written"
    );
}

#[test]
fn ctrl_c_cancels_the_statement_and_keeps_the_shell() {
    let store = small_store();
    let history = store.path().join("history");
    let mut command = Command::new(BIN);
    command
        .arg("--store")
        .arg(store.path())
        .env("FLUSS_SQL_HISTORY", &history)
        .env("TERM", "dumb");
    let mut shell = rexpect::session::spawn_command(command, Some(60_000)).expect("spawn");
    shell.exp_string("fluss:fluss> ").expect("prompt");
    // far too long to finish: still running when Ctrl-C comes
    shell
        .send_line("SELECT count(*) FROM range(1000000000000) WHERE value % 7 = 3;")
        .expect("send");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    shell.send_control('c').expect("Ctrl-C");
    shell
        .exp_string("cancelled")
        .expect("the statement is cancelled");
    shell.exp_string("fluss:fluss> ").expect("the prompt again");
    // the history holds the statement already: appended as it ran, not at exit
    let kept = std::fs::read_to_string(&history).unwrap_or_default();
    assert!(kept.contains("range(1000000000000)"), "history: {kept}");
    shell.send_line("SELECT 40 + 2 AS answer;").expect("send");
    shell.exp_string("42").expect("the same shell answers");
    shell.send_line("\\q").expect("quit");
    shell.exp_eof().expect("exit");
}

#[test]
fn statements_piped_on_stdin_run_as_a_script() {
    use std::io::Write;
    let dir = small_store();
    let mut child = Command::new(BIN)
        .arg("--store")
        .arg(dir.path())
        .args(["-q", "--format", "csv"])
        .env("FLUSS_SQL_HISTORY", dir.path().join("history"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"SELECT 41 + 1 AS answer;\n")
        .expect("write stdin");
    let output = child.wait_with_output().expect("the binary exits");
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "answer\n42\n");
}

#[test]
fn external_tables_and_views_live_beside_fluss_tables() {
    // CREATE EXTERNAL TABLE / CREATE VIEW register session tables in the current
    // database: they join with Fluss tables, are listed, never shadow a Fluss table and
    // are dropped without touching the store.
    let store = small_store();
    let csv = store.path().join("prices.csv");
    std::fs::write(&csv, "id,tag\n1,red\n2,green\n4,brown\n").unwrap();
    let out = sql(
        store.path(),
        &format!(
            "CREATE EXTERNAL TABLE tags STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true');
             CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 2;
             SELECT i.id, i.name, t.tag FROM items i JOIN tags t ON i.id = t.id ORDER BY i.id;
             SELECT * FROM cheap ORDER BY id;
             SHOW TABLES;
             DROP VIEW cheap;
             DROP TABLE tags;
             SELECT count(*) AS n FROM items",
            csv.display()
        ),
    );
    assert!(out.contains("| 1  | apple | red   |"), "{out}");
    assert!(out.contains("| 2  | pear  | green |"), "{out}");
    assert!(out.contains("| 4  | kiwi  | brown |"), "{out}");
    assert!(out.contains("| 1  | apple |\n| 4  | kiwi  |"), "{out}");
    assert!(out.contains("| tags ") && out.contains("| cheap "), "{out}");
    assert!(out.contains("| 3 |"), "{out}");
    // a session table cannot take a Fluss table's name
    let r = run(
        store.path(),
        &["-q", "-c", "CREATE VIEW items AS SELECT 1 AS x"],
    );
    assert!(!r.ok && r.stderr.contains("items"), "{}", r.stderr);
    // \d lists them beside the Fluss tables, and each Fluss table's virtual tables
    let r = run(
        store.path(),
        &[
            "-q",
            "--format",
            "csv",
            "-c",
            "CREATE VIEW cheap AS SELECT id FROM items WHERE price < 2",
            "-c",
            "\\d",
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("fluss,cheap,view (this session),"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("items$changelog, items$binlog, items$lake, items$lake$snapshots"),
        "{}",
        r.stdout
    );
}

#[test]
fn views_say_they_last_for_the_session() {
    let store = small_store();
    let r = run(
        store.path(),
        &[
            "-q",
            "-c",
            "CREATE VIEW cheap AS SELECT id FROM items WHERE price < 2",
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("Notice: the view lasts for this session only"),
        "{}",
        r.stderr
    );
}

#[test]
fn nothing_is_created_by_accident() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.txt"), b"x").expect("write");
    let listing = |path: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    // a folder that is not a store is refused, even for a plain SELECT, and left alone
    let line = assert_one_line_error(&run(dir.path(), &["-q", "-c", "SELECT 1"]));
    assert!(line.contains("is not a Fluss store"), "{line}");
    assert!(line.contains("--create"), "{line}");
    assert_eq!(listing(dir.path()), ["notes.txt"]);
    // ... and points at the store inside it when there is one
    sql(&dir.path().join("fluss-data"), "SELECT 1");
    let line = assert_one_line_error(&run(dir.path(), &["-q", "-c", "SELECT 1"]));
    let inside = format!("did you mean --store {}/fluss-data?", dir.path().display());
    assert!(line.contains(&inside), "{line}");
    assert_eq!(listing(dir.path()), ["fluss-data", "notes.txt"]);
    // a database named with -d must exist: `-d 1g` (a mistyped memory limit) creates none
    let store = dir.path().join("fluss-data");
    let line = assert_one_line_error(&run(&store, &["-q", "-d", "1g", "-c", "SELECT 1"]));
    assert!(line.contains("database '1g' does not exist"), "{line}");
    assert!(line.contains("its databases: fluss"), "{line}");
    let databases = sql(&store, "SHOW DATABASES");
    assert!(!databases.contains("1g"), "{databases}");
    // --create makes it
    let r = run(&store, &["--create", "-q", "-d", "sales", "-c", "SELECT 1"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(sql(&store, "SHOW DATABASES").contains("sales"));
}

#[test]
fn demo_scale_on_an_existing_demo_is_said_to_be_ignored() {
    let store = tempfile::tempdir().expect("temp dir");
    let demo = ["-q", "--demo", "--demo-scale", "0.01", "-c", "SELECT 1"];
    let r = run(store.path(), &demo);
    assert!(r.ok && !r.stderr.contains("ignored"), "{}", r.stderr);
    let r = run(
        store.path(),
        &["-q", "--demo", "--demo-scale", "2", "-c", "SELECT 1"],
    );
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stderr.contains("--demo-scale is ignored"), "{}", r.stderr);
    let r = run(store.path(), &["-q", "--demo", "-c", "SELECT 1"]);
    assert!(r.ok && !r.stderr.contains("ignored"), "{}", r.stderr);
}

#[test]
fn a_store_that_is_a_file_or_a_dangling_link_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let line = assert_one_line_error(&run(&file, &["-q", "-c", "SELECT 1"]));
    assert!(line.contains("the store location is a file"), "{line}");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path().join("gone"), &link).expect("symlink");
    let line = assert_one_line_error(&run(&link, &["-q", "-c", "SELECT 1"]));
    assert!(
        line.contains("symbolic link to something that does not exist"),
        "{line}"
    );
}

#[test]
fn a_deeply_nested_expression_is_answered_or_refused_never_a_crash() {
    let store = tempfile::tempdir().expect("temp dir");
    let sum = vec!["1"; 800].join("+");
    let out = sql(store.path(), &format!("SELECT {sum} AS total"));
    assert!(out.contains("800"), "{out}");
    let too_deep = vec!["1"; 2_002].join("+");
    let r = run(store.path(), &["-q", "-c", &format!("SELECT {too_deep}")]);
    let line = assert_one_line_error(&r);
    assert!(line.contains("levels deep"), "{line}");
}

/// `--bootstrap-servers`: the shell on a cluster (the Fluss RPC test server serving
/// `small_store`, with SASL/PLAIN) answers as on the store itself; `\d` describes a
/// table from the cluster's offsets; writes and tiering are refused with a one-line
/// error; the password (given through `FLUSS_SASL_PASSWORD`) is never printed, and a
/// wrong one fails the run.
#[test]
fn a_cluster_answers_as_the_store_does() {
    let dir = small_store();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let server = runtime.block_on(async {
        let store = fluss_datafusion::LocalStore::open(dir.path().to_str().unwrap())
            .await
            .unwrap();
        let model = fluss_test_support::local_store::load_local_store(&store)
            .await
            .unwrap();
        fluss_test_support::server::TestServer::start(
            std::sync::Arc::new(model),
            fluss_test_support::server::ServerConfig::with_sasl_plain("bob", "pw-123"),
        )
        .await
        .unwrap()
    });
    let servers = server.bootstrap_servers();
    let cluster = |password: &str, args: &[&str]| {
        let output = Command::new(BIN)
            .args(["--bootstrap-servers", &servers, "--sasl-username", "bob"])
            .args(args)
            .env("FLUSS_SASL_PASSWORD", password)
            .env("FLUSS_SQL_HISTORY", dir.path().join("history"))
            .output()
            .expect("the binary runs");
        Run {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            ok: output.status.success(),
        }
    };
    for query in [
        "SELECT * FROM items ORDER BY id",
        "SELECT * FROM events ORDER BY id",
        "SELECT count(*) AS n FROM \"items$lake\"",
        "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind",
    ] {
        let got = cluster("pw-123", &["-q", "--format", "csv", "-c", query]);
        assert!(got.ok, "{query}: {}", got.stderr);
        let want = run(dir.path(), &["-q", "--format", "csv", "-c", query]);
        assert_eq!(got.stdout, want.stdout, "{query}");
    }
    // per-bucket lake offset, high watermark and lag, from the cluster's offsets
    let described = cluster("pw-123", &["-q", "-c", "\\d items"]);
    assert!(described.ok, "{}", described.stderr);
    assert!(described.stdout.contains("bucket"), "{}", described.stdout);
    assert_eq!(
        described.stdout,
        run(dir.path(), &["-q", "-c", "\\d items"]).stdout,
        "\\d on the cluster"
    );

    for statement in [
        "CALL fluss.tier('items')",
        "INSERT INTO items VALUES (9, 'x', 1.00)",
    ] {
        let refused = cluster("pw-123", &["-q", "-c", statement]);
        assert!(!refused.ok, "{statement} ran on a cluster");
        let error = assert_one_line_error(&refused);
        assert!(!error.contains("internal"), "{statement}: {error}");
    }
    let wrong = cluster("wrong-pw-9", &["-q", "-c", "SELECT * FROM items"]);
    assert!(!wrong.ok);
    for output in [
        &wrong.stdout,
        &wrong.stderr,
        &described.stdout,
        &described.stderr,
    ] {
        assert!(
            !output.contains("pw-123") && !output.contains("wrong-pw-9"),
            "{output}"
        );
    }
    drop(server);
}

#[test]
fn script_errors_name_the_file_and_line() {
    let store = small_store();
    let script = store.path().join("load.sql");
    std::fs::write(
        &script,
        "SELECT 1;\n\nSELECT\n  nope\nFROM items;\nSELECT 2;\n",
    )
    .unwrap();
    let r = run(store.path(), &["-q", "-f", script.to_str().unwrap()]);
    let line = assert_one_line_error(&r);
    assert!(
        line.contains(&format!("file: {}, line: 3", script.display())),
        "{line}"
    );
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let store = small_store();
    let mut child = Command::new(BIN)
        .arg("--store")
        .arg(store.path())
        .args(["-q", "--format", "csv", "-c"])
        .arg("SELECT * FROM generate_series(1, 2000000)")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // read a little, then close the pipe, as `| head -1` does
    let mut first = [0u8; 16];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("read");
    let output = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn datafusion_cli_format_names_and_unlimited_plans() {
    let store = small_store();
    for (format, expected) in [("nd-json", "{\"id\":1}\n"), ("automatic", "| 1  |")] {
        let r = run(
            store.path(),
            &[
                "-q",
                "--format",
                format,
                "-c",
                "SELECT id FROM items WHERE id = 1",
            ],
        );
        assert!(
            r.ok && r.stdout.contains(expected),
            "{format}: {}",
            r.stdout
        );
    }
    // --maxrows limits results, never a plan or \d
    let r = run(
        store.path(),
        &["-q", "--maxrows", "1", "-c", "EXPLAIN SELECT * FROM items"],
    );
    assert!(r.ok && r.stdout.contains("physical_plan"), "{}", r.stdout);
    assert!(!r.stdout.contains("rows shown"), "{}", r.stdout);
    let r = run(store.path(), &["-q", "--maxrows", "1", "-c", "\\d"]);
    assert!(
        r.stdout.contains("items") && r.stdout.contains("events"),
        "{}",
        r.stdout
    );
}

#[test]
fn meta_commands_and_start_up_files() {
    let store = small_store();
    let out = store.path().join("out.csv");
    let rc = store.path().join("rc.sql");
    std::fs::write(&rc, "\\pset format csv\n").unwrap();
    let included = store.path().join("more.sql");
    std::fs::write(&included, "SELECT 'included' AS what;\n").unwrap();
    let script = format!(
        "SELECT 1 AS a;\n\\x\nSELECT 2 AS b, 3 AS c;\n\\x off\n\\o {}\nSELECT 4 AS d;\n\\o\n\
         \\i {}\n\\timing off\n\\quiet on\n\\h abs\n",
        out.display(),
        included.display()
    );
    let file = store.path().join("script.sql");
    std::fs::write(&file, script).unwrap();
    let r = run(
        store.path(),
        &["-r", rc.to_str().unwrap(), "-f", file.to_str().unwrap()],
    );
    assert!(r.ok, "{}", r.stderr);
    // csv from the start-up file, then expanded rows, then csv again
    assert!(r.stdout.starts_with("a\n1\n"), "{}", r.stdout);
    assert!(
        r.stdout.contains("-[ RECORD 1 ]-\nb | 2\nc | 3\n"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("what\nincluded\n"), "{}", r.stdout);
    assert!(r.stdout.contains("function_name"), "{}", r.stdout);
    assert!(!r.stdout.contains("d\n4"), "{}", r.stdout);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "d\n4\n");
    assert!(r.stderr.contains("Timing is off."), "{}", r.stderr);
    let r = run(store.path(), &["-q", "-c", "\\timing maybe"]);
    assert!(assert_one_line_error(&r).contains("takes on or off"));
}

/// `SHOW CREATE TABLE` prints Fluss DDL that creates the same table again: run it
/// after a DROP, and SHOW CREATE TABLE prints the same text.
#[test]
fn show_create_table_round_trips() {
    let store = tempfile::tempdir().expect("temp dir");
    sql(
        store.path(),
        "CREATE TABLE orders (o_id BIGINT, \"Cust\" BIGINT NOT NULL COMMENT 'the buyer''s id', \
           price DECIMAL(15, 2), ts TIMESTAMP_LTZ(3), dt STRING, \
           PRIMARY KEY (o_id, dt) NOT ENFORCED) COMMENT 'all orders' PARTITIONED BY (dt) \
         WITH ('bucket.num' = '4', 'bucket.key' = 'o_id', 'table.datalake.enabled' = 'true', \
           'table.log.ttl' = '7 d')",
    );
    let show = |store: &Path| {
        let r = run(
            store,
            &["-q", "--format", "json", "-c", "SHOW CREATE TABLE orders"],
        );
        assert!(r.ok, "{}", r.stderr);
        let rows: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
        rows[0]["create_statement"]
            .as_str()
            .expect("a statement")
            .to_string()
    };
    let ddl = show(store.path());
    for expected in [
        "CREATE TABLE fluss.orders (\n  o_id BIGINT NOT NULL,",
        "\"Cust\" BIGINT NOT NULL COMMENT 'the buyer''s id',",
        "  price DECIMAL(15, 2),\n  ts TIMESTAMP_LTZ(3),",
        "PRIMARY KEY (o_id, dt) NOT ENFORCED\n)",
        "COMMENT 'all orders'\nPARTITIONED BY (dt)\nWITH (\n  'bucket.num' = '4',",
        "'table.log.ttl' = '7 d'",
    ] {
        assert!(ddl.contains(expected), "{expected:?} in\n{ddl}");
    }
    sql(store.path(), "DROP TABLE orders");
    sql(store.path(), &ddl);
    assert_eq!(show(store.path()), ddl);
}

/// The README's SQL block runs as it is, in a fresh folder (its relative file names
/// land there).
#[test]
fn the_readme_sql_block_runs_verbatim() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README");
    let start = readme
        .find("SQL specific to Fluss tables")
        .and_then(|i| {
            readme[i..]
                .find("```sql\n")
                .map(|j| i + j + "```sql\n".len())
        })
        .expect("the README's SQL block");
    let block = &readme[start..start + readme[start..].find("```").expect("its end")];
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("block.sql");
    std::fs::write(&file, block).unwrap();
    let output = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "--store",
            "./fluss-data",
            "--create",
            "-q",
            "--format",
            "csv",
            "-f",
        ])
        .arg(&file)
        .env("FLUSS_SQL_HISTORY", dir.path().join("history"))
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}\n{stdout}");
    assert!(stdout.contains("name,tag\na,vip\n"), "{stdout}");
    assert!(dir.path().join("users.parquet").exists());
}

/// EXPLAIN FORMAT TREE shows a Fluss node's details a `key: value` each, wrapped
/// at spaces and punctuation, never inside a word.
#[test]
fn explain_tree_keeps_words_whole() {
    let store = small_store();
    let r = run(
        store.path(),
        &[
            "-q",
            "-c",
            "EXPLAIN FORMAT TREE SELECT name FROM items WHERE price > 1",
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    for whole in [
        "changelog_fold_by_key",
        "lake_snapshot: 1",
        "table: fluss.items",
    ] {
        assert!(r.stdout.contains(whole), "{whole} in\n{}", r.stdout);
    }
}

/// `-v`/`-vv` log the library's events on stderr (`--log-file` in a file instead),
/// none with a credential: a lake option's secret never shows.
#[test]
fn verbose_logs_tiering_and_planning_without_credentials() {
    let dir = tempfile::tempdir().expect("temp dir");
    let secret = "s3.secret-access-key=NOT-A-LOG-LINE-4711";
    let statements = "CREATE TABLE t (id BIGINT) \
                        WITH ('bucket.num' = '2', 'bucket.key' = 'id', 'table.datalake.enabled' = 'true');
                      INSERT INTO t VALUES (1), (2);
                      CALL fluss.tier('t');
                      INSERT INTO t VALUES (3);
                      SELECT count(*) FROM t WHERE id > 0;";
    let r = run(
        dir.path(),
        &[
            "--create",
            "-q",
            "-vv",
            "--lake-option",
            secret,
            "-c",
            statements,
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr.contains("tiered the log tail into the lake"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("table=fluss.t"), "{}", r.stderr);
    assert!(
        r.stderr.contains("planned the cut and the lake"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("NOT-A-LOG-LINE-4711"), "{}", r.stderr);
    assert!(
        !r.stdout.contains("planned the cut"),
        "logs go to stderr: {}",
        r.stdout
    );

    // without -v only warnings: a quiet read logs nothing
    let quiet = run(dir.path(), &["-q", "-c", "SELECT count(*) FROM t"]);
    assert!(quiet.ok, "{}", quiet.stderr);
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);

    // --log-file: the log there, not on stderr
    let log = dir.path().join("fluss.log");
    let to_file = run(
        dir.path(),
        &[
            "-q",
            "-v",
            "--log-file",
            log.to_str().unwrap(),
            "-c",
            "CALL fluss.tier('t')",
        ],
    );
    assert!(to_file.ok, "{}", to_file.stderr);
    let written = std::fs::read_to_string(&log).expect("the log file");
    assert!(
        written.contains("tiered the log tail into the lake"),
        "{written}"
    );
    assert!(
        !to_file.stderr.contains("tiered the log tail"),
        "{}",
        to_file.stderr
    );
}

/// With `RUST_BACKTRACE=1` and `-v` an error shows where the library made it, as
/// iceberg-rust's errors carry it; without `-v` it is one line, whatever the
/// environment asks.
#[test]
fn an_error_carries_a_backtrace_when_rust_backtrace_asks() {
    let dir = tempfile::tempdir().expect("temp dir");
    sql(
        dir.path(),
        "CREATE TABLE t (id INT) WITH ('bucket.num' = '1')",
    );
    let stderr = |verbose: bool| {
        let mut command = Command::new(BIN);
        command
            .arg("--store")
            .arg(dir.path())
            .env("RUST_BACKTRACE", "1");
        if verbose {
            command.arg("-v");
        }
        let output = command
            .args(["-q", "-c", "SELECT * FROM t$nope"])
            .output()
            .expect("the binary runs");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let plain = stderr(false);
    assert_eq!(plain.lines().count(), 1, "{plain}");
    let traced = stderr(true);
    assert!(traced.starts_with("Error: "), "{traced}");
    assert!(
        traced.contains("fluss_datafusion::error::Error::new"),
        "{traced}"
    );
}

/// `--workers`: the shell's queries run on two workers (served here, in this test's
/// process) and answer as without them; EXPLAIN shows the stages and tasks.
#[test]
fn workers_run_the_shells_queries() {
    let store = small_store();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let root = store.path().to_str().expect("a UTF-8 path").to_string();
    let urls: Vec<String> = runtime.block_on(async {
        let source: std::sync::Arc<dyn fluss_datafusion::FlussSource> = std::sync::Arc::new(
            fluss_datafusion::LocalStore::open(&root)
                .await
                .expect("the store opens"),
        );
        let mut urls = Vec::new();
        for _ in 0..2 {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a port");
            urls.push(format!(
                "127.0.0.1:{}",
                listener.local_addr().expect("bound").port()
            ));
            let sources = std::sync::Arc::new(
                fluss_datafusion::distributed::PlanSources::new([source.clone()])
                    .expect("plan sources"),
            );
            let worker = fluss_distributed::worker(
                sources,
                std::sync::Arc::new(datafusion::execution::runtime_env::RuntimeEnv::default()),
            );
            tokio::spawn(fluss_distributed::serve(
                worker,
                listener,
                std::future::pending(),
            ));
        }
        urls
    });
    let workers = urls.join(",");
    // every scan split as far as it goes (the tables are small)
    let workers = [workers.as_str(), "--worker-task-bytes", "1"];
    for query in [
        ITEMS,
        "SELECT kind, count(*) FROM events GROUP BY kind ORDER BY kind",
    ] {
        let alone = run(store.path(), &["-q", "--format", "csv", "-c", query]);
        let spread = run(
            store.path(),
            &[
                &["-q", "--format", "csv", "--workers"],
                &workers[..],
                &["-c", query],
            ]
            .concat(),
        );
        assert!(alone.ok && spread.ok, "{}{}", alone.stderr, spread.stderr);
        assert_eq!(spread.stdout, alone.stdout, "{query}");
    }
    let explain = run(
        store.path(),
        &[
            &["-q", "--workers"],
            &workers[..],
            &["-c", &format!("EXPLAIN {ITEMS}")],
        ]
        .concat(),
    );
    assert!(explain.ok, "{}", explain.stderr);
    assert!(
        explain.stdout.contains("DistributedExec"),
        "{}",
        explain.stdout
    );
    drop(runtime);
}

/// The pid of the `fluss-sql` whose command line names `store` (a pty test's shell,
/// which rexpect does not name).
fn shell_pid(store: &Path) -> u32 {
    let store = store.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.starts_with(BIN) && cmdline.contains(&store) {
            return pid;
        }
    }
    panic!("no fluss-sql runs on {store}");
}

/// How many of process `pid`'s threads are running (state R) now.
fn running_threads(pid: u32) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the process runs");
    tasks
        .flatten()
        .filter(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // `pid (comm) S ...`: the state follows the command's closing parenthesis
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('R'))
        })
        .count()
}

/// Waits (a minute at most) until `pid` has a thread running, or none.
fn until_threads(pid: u32, running: bool) -> bool {
    for _ in 0..600 {
        if (running_threads(pid) > 0) == running {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

/// A store with a table whose cross join with itself runs for hours: 20,000 rows of
/// strings compared pairwise, then against every nation.
fn cross_join_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    sql(
        dir.path(),
        "CREATE TABLE orders (o_orderkey BIGINT, o_comment STRING) WITH ('bucket.num' = '2');
         INSERT INTO orders SELECT value, 'comment number ' || value FROM generate_series(1, 20000);
         CREATE TABLE nation (n_nationkey BIGINT) WITH ('bucket.num' = '1');
         INSERT INTO nation SELECT value FROM generate_series(1, 25);",
    );
    dir
}

/// The finding's query: an aggregate over nested-loop joins, CPU-bound for hours.
const CROSS_JOIN: &str = "SELECT count(*) FROM orders a CROSS JOIN orders b CROSS JOIN nation c \
                          WHERE a.o_comment < b.o_comment;";

/// A shell running [`CROSS_JOIN`] on one partition: the join and the aggregate that
/// drains it share one task, which yields only where an operator spends Tokio
/// budget. Without a yield above the join (the library's `CooperativeJoinsRule`)
/// that is once per 128 probe batches, minutes here: an abort never lands and the
/// prompt never comes back (as measured before the rule).
fn cross_join_shell(store: &Path) -> (rexpect::session::PtySession, u32) {
    let mut command = Command::new(BIN);
    command
        .arg("--store")
        .arg(store)
        .args(["--target-partitions", "1"])
        .env("FLUSS_SQL_HISTORY", store.join("history"))
        .env("TERM", "dumb");
    let mut shell = rexpect::session::spawn_command(command, Some(120_000)).expect("spawn");
    shell.exp_string("fluss:fluss> ").expect("prompt");
    let pid = shell_pid(store);
    shell.send_line(CROSS_JOIN).expect("send");
    assert!(until_threads(pid, true), "the cross join never ran");
    // at work in the join, past planning
    std::thread::sleep(std::time::Duration::from_millis(1500));
    (shell, pid)
}

/// Ctrl-C stops a CPU-bound join under an aggregate: the prompt comes back, and the
/// query's threads stop running (they are not left burning the cores).
#[test]
fn ctrl_c_stops_a_cpu_bound_cross_join() {
    let store = cross_join_store();
    let (mut shell, pid) = cross_join_shell(store.path());
    assert!(running_threads(pid) > 0, "the query is running");
    shell.send_control('c').expect("Ctrl-C");
    shell
        .exp_string("cancelled")
        .expect("the statement is cancelled");
    shell.exp_string("fluss:fluss> ").expect("the prompt again");
    assert!(
        until_threads(pid, false),
        "the cancelled query's threads keep running"
    );
    shell
        .send_line("SELECT count(*) FROM nation;")
        .expect("send");
    shell.exp_string("25").expect("the same shell answers");
    shell.send_line("\\q").expect("quit");
    shell.exp_eof().expect("exit");
}

/// Two Ctrl-C in a row end the shell with status 130, as psql's; the history holds
/// the statement.
#[test]
fn a_second_ctrl_c_quits_with_130() {
    let store = cross_join_store();
    let (mut shell, _) = cross_join_shell(store.path());
    shell.send_control('c').expect("Ctrl-C");
    // apart, as a hand presses them: signals sent together merge into one
    std::thread::sleep(std::time::Duration::from_millis(300));
    shell.send_control('c').expect("Ctrl-C again");
    shell.exp_eof().expect("the shell ends");
    let status = shell.process().wait().expect("its status");
    assert!(
        matches!(status, rexpect::process::WaitStatus::Exited(_, 130)),
        "{status:?}"
    );
    let history = std::fs::read_to_string(store.path().join("history")).unwrap_or_default();
    assert!(history.contains("CROSS JOIN nation"), "history: {history}");
}

/// The peak resident memory (VmHWM) of process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process runs");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("a VmHWM line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmHWM in kB");
    kib << 10
}

/// A result far larger than memory streams into a reader that stops early (`|
/// head`): its first rows come while the query still runs, the shell holds a few
/// batches at a time (collected, 400 million rows would take gigabytes before the
/// first printed), and it ends quietly when the reader goes.
#[test]
fn a_large_result_streams_into_head() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let store = small_store();
    for format in ["csv", "table", "json"] {
        let mut child = Command::new(BIN)
            .arg("--store")
            .arg(store.path())
            .args(["-q", "--format", format, "-c"])
            .arg("SELECT value, value * 2 AS twice FROM generate_series(1, 400000000)")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        out.read_line(&mut first).expect("a first line");
        // 16 MiB more of rows, far past what a sized table holds back
        let mut streamed = vec![0u8; 16 << 20];
        out.read_exact(&mut streamed).expect("more rows");
        assert!(
            child.try_wait().expect("status").is_none(),
            "{format}: the query had finished before its first rows were read"
        );
        let peak = peak_rss(child.id());
        assert!(
            peak < 1 << 30,
            "{format}: the shell holds {} MiB while streaming",
            peak >> 20
        );
        drop(out);
        let output = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{format}: {:?}: {stderr}",
            output.status
        );
        assert!(stderr.is_empty(), "{format}: {stderr}");
        let expected_first = match format {
            "csv" => "value,twice\n",
            "table" => "+",
            _ => "[{\"value\":1,\"twice\":2},\n",
        };
        assert!(first.starts_with(expected_first), "{format}: {first}");
    }
}

/// JSON keeps NULL keys (`null`) and decimals' every digit.
#[test]
fn json_writes_nulls_and_exact_decimals() {
    let store = small_store();
    let query = "SELECT id, CASE WHEN id = 1 THEN NULL ELSE name END AS name, price \
                 FROM items WHERE id <= 2 ORDER BY id";
    let r = run(store.path(), &["-q", "--format", "ndjson", "-c", query]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "{\"id\":1,\"name\":null,\"price\":1.50}\n{\"id\":2,\"name\":\"pear\",\"price\":2.40}\n"
    );
    let r = run(store.path(), &["-q", "--format", "json", "-c", query]);
    assert_eq!(
        r.stdout,
        "[{\"id\":1,\"name\":null,\"price\":1.50},\n{\"id\":2,\"name\":\"pear\",\"price\":2.40}]\n"
    );
}

/// `--maxrows` stops the reading: the rows past it are neither read nor counted,
/// and the summary says how many were shown, not a total it does not know.
#[test]
fn maxrows_stops_reading_and_says_so() {
    let store = small_store();
    let r = run(
        store.path(),
        &[
            "--maxrows",
            "3",
            "-c",
            "SELECT value FROM generate_series(1, 1000000000000)",
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("(first 3 rows shown; the rest was not read"),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("3 rows shown"), "{}", r.stderr);
    let r = run(store.path(), &["--maxrows", "3", "-c", ITEMS]);
    assert!(!r.stdout.contains("shown"), "{}", r.stdout);
    assert!(r.stderr.contains("3 rows"), "{}", r.stderr);
}

/// EXPLAIN in the table format pads no line past its content.
#[test]
fn explain_lines_are_no_wider_than_their_content() {
    let store = small_store();
    let r = run(
        store.path(),
        &["-q", "-c", "EXPLAIN SELECT name FROM items WHERE price > 1"],
    );
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stdout.contains("physical_plan"), "{}", r.stdout);
    for line in r.stdout.lines() {
        assert_eq!(line, line.trim_end(), "padded: {line:?}");
        assert!(!line.ends_with(" |"), "padded to a border: {line:?}");
    }
}

/// `--workers` refuses an address where no worker answers, one or among many,
/// naming it; the sizes take units everywhere.
#[test]
fn workers_that_do_not_answer_are_refused_by_name() {
    let store = small_store();
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = nobody.local_addr().expect("bound").to_string();
    drop(nobody);
    let listening = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let alive = listening.local_addr().expect("bound").to_string();
    for workers in [address.clone(), format!("{alive},{address}")] {
        let r = run(
            store.path(),
            &["-q", "--workers", &workers, "-c", "SELECT 1"],
        );
        let line = assert_one_line_error(&r);
        assert!(
            line.contains(&format!("no worker answers at {address}")),
            "{line}"
        );
        assert!(line.starts_with("Error: io error"), "{line}");
    }
    // one worker alone is accepted, and said to leave queries in the shell
    let r = run(store.path(), &["-q", "--workers", &alive, "-c", "SELECT 1"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("with one worker queries run in this shell"),
        "{}",
        r.stderr
    );
    drop(listening);
    let r = run(
        store.path(),
        &[
            "-q",
            "--memory-limit",
            "1.5g",
            "--worker-task-bytes",
            "64MiB",
            "-c",
            "SELECT 1",
        ],
    );
    assert!(r.ok, "{}", r.stderr);
}
