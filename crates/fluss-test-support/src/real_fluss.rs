//! The real Apache Fluss, driven from Rust tests: `tests/real-fluss/` (a Maven project)
//! runs a Fluss cluster (ZooKeeper, a coordinator, two tablet servers), Fluss's own
//! tiering service and Flink's batch union read in one JVM, and answers JSON commands
//! on stdin with one JSON line each on stdout (`tests/real-fluss/README.md`).
//!
//! [`RealFluss::start`] starts one harness for a lake format; it stops when dropped,
//! when this process exits (its stdin closes) or after its own time limit. Without
//! `tests/real-fluss/setup.sh` having run, [`RealFluss::available`] says so: tests then
//! skip, unless `FLUSS_REQUIRE_REAL_FLUSS=1` (CI) makes that a failure.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// Longest wait for a harness to start (JVM, cluster, Flink mini cluster).
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// Longest wait for a command without a `timeout_s` of its own.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// The Fluss release the harness runs (the newest Maven Central serves here; see
/// `tests/real-fluss/pom.xml`).
pub const FLUSS_VERSION: &str = "0.9.1-incubating";

/// `table.datalake.freshness` every lake table of the tests is created with: a day,
/// so the coordinator never offers it to the tiering service on its own. The harness's
/// one tiering job tiers a table on `tier` by giving it a short freshness and pauses it
/// again with this one (`tests/real-fluss/README.md`).
pub const PAUSED_FRESHNESS: &str = "1d";

/// One running harness: a real Fluss cluster with one lake format.
pub struct RealFluss {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The harness's stdout, line by line, from a reader thread: every wait for an
    /// answer is bounded, so a harness that hangs fails the test instead of hanging it.
    lines: std::sync::mpsc::Receiver<std::io::Result<String>>,
    format: String,
    bootstrap_servers: String,
    warehouse: String,
    remote_data_dir: String,
    work_dir: tempfile::TempDir,
}

impl std::fmt::Debug for RealFluss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealFluss")
            .field("format", &self.format)
            .field("bootstrap_servers", &self.bootstrap_servers)
            .finish()
    }
}

/// An answer of the harness that says the command failed, or a broken exchange.
#[derive(Debug, Clone)]
pub struct HarnessError(pub String);

impl std::fmt::Display for HarnessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HarnessError {}

fn harness_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real-fluss")
}

impl RealFluss {
    /// Whether the harness is set up (`tests/real-fluss/setup.sh` ran). When it is
    /// not, this prints why and returns false, or panics under
    /// `FLUSS_REQUIRE_REAL_FLUSS=1`.
    pub fn available(format: &str) -> bool {
        let classpath = harness_dir().join(format!("target/classpath-{format}.txt"));
        if classpath.exists() {
            return true;
        }
        if std::env::var("FLUSS_REQUIRE_REAL_FLUSS").is_ok_and(|v| v == "1") {
            panic!(
                "the real-Fluss harness is required: run tests/real-fluss/setup.sh ({} is missing)",
                classpath.display()
            );
        }
        eprintln!("skipping: the real-Fluss harness is not set up (run tests/real-fluss/setup.sh)");
        false
    }

    /// Starts a harness whose cluster tiers to `format` (`paimon` or `iceberg`), and
    /// waits until its cluster is up. `max_seconds` bounds the harness's whole life.
    pub fn start(format: &str, max_seconds: u64) -> Result<Self, HarnessError> {
        Self::start_with_env(format, max_seconds, &[])
    }

    /// [`Self::start`] with environment variables for the harness: benchmarks set
    /// `REAL_FLUSS_JVM_FLAGS` (the JVM's flags; tests' default limits the JIT to C1
    /// for a fast start) and `FLUSS_HARNESS_FLINK_MANAGED_MEMORY` (Flink's managed
    /// memory, split among its 4 slots; default `128m`).
    pub fn start_with_env(
        format: &str,
        max_seconds: u64,
        env: &[(&str, &str)],
    ) -> Result<Self, HarnessError> {
        let mut work_dir = tempfile::Builder::new()
            .prefix(&format!("real-fluss-{format}-"))
            .tempdir()
            .map_err(|e| HarnessError(format!("cannot make the work dir: {e}")))?;
        // FLUSS_KEEP_REAL_FLUSS=1 keeps the work dir (cluster data, lake, log) to look into
        if std::env::var("FLUSS_KEEP_REAL_FLUSS").is_ok_and(|v| v == "1") {
            work_dir.disable_cleanup(true);
            eprintln!("real-Fluss work dir kept: {}", work_dir.path().display());
        }
        let mut child = Command::new("bash")
            .arg(harness_dir().join("run.sh"))
            .arg(format)
            .arg(work_dir.path())
            .arg(max_seconds.to_string())
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| HarnessError(format!("cannot start the harness: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| HarnessError("the harness has no stdout".to_string()))?,
        );
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("real-fluss-stdout".into())
            .spawn(move || {
                for line in stdout.lines() {
                    if sender.send(line).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| HarnessError(format!("cannot start the reader thread: {e}")))?;
        let mut harness = Self {
            child,
            stdin,
            lines,
            format: format.to_string(),
            bootstrap_servers: String::new(),
            warehouse: String::new(),
            remote_data_dir: String::new(),
            work_dir,
        };
        let ready = harness.read_line(READY_TIMEOUT)?;
        if ready["ready"] != json!(true) {
            return Err(HarnessError(format!(
                "the harness did not start: {} (log: {})",
                ready["error"],
                harness.log_path().display()
            )));
        }
        harness.bootstrap_servers = text(&ready, "bootstrap_servers")?;
        harness.warehouse = text(&ready, "warehouse")?;
        harness.remote_data_dir = text(&ready, "remote_data_dir")?;
        Ok(harness)
    }

    /// The lake format of this cluster.
    pub fn format(&self) -> &str {
        &self.format
    }

    /// `host:port` of the coordinator.
    pub fn bootstrap_servers(&self) -> &str {
        &self.bootstrap_servers
    }

    /// The lake warehouse the cluster tiers into (a local path).
    pub fn warehouse(&self) -> &str {
        &self.warehouse
    }

    /// The cluster's `remote.data.dir` (a `file://` URL).
    pub fn remote_data_dir(&self) -> &str {
        &self.remote_data_dir
    }

    /// The harness's work directory (cluster data, lake, log).
    pub fn work_dir(&self) -> &Path {
        self.work_dir.path()
    }

    /// The harness's log (the cluster's, Flink's and the tiering service's logs).
    pub fn log_path(&self) -> PathBuf {
        self.work_dir.path().join("harness.log")
    }

    /// The next line of the harness as JSON, waiting at most `timeout`; a harness that
    /// does not answer in time is killed.
    fn read_line(&mut self, timeout: Duration) -> Result<Value, HarnessError> {
        use std::sync::mpsc::RecvTimeoutError;
        let line = match self.lines.recv_timeout(timeout) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => return Err(HarnessError(format!("reading from the harness: {e}"))),
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                return Err(HarnessError(format!(
                    "the harness did not answer within {timeout:?} (killed); its log: {}",
                    self.log_path().display()
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.try_wait().ok().flatten();
                return Err(HarnessError(format!(
                    "the harness exited ({status:?}); its log: {}",
                    self.log_path().display()
                )));
            }
        };
        serde_json::from_str(&line)
            .map_err(|e| HarnessError(format!("the harness answered '{line}': {e}")))
    }

    /// Sends one command and returns its answer; an answer with `"ok": false` is an
    /// error carrying the harness's message.
    pub fn call(&mut self, command: Value) -> Result<Value, HarnessError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| HarnessError("the harness is shut down".to_string()))?;
        writeln!(stdin, "{command}")
            .and_then(|_| stdin.flush())
            .map_err(|e| HarnessError(format!("writing to the harness: {e}")))?;
        // a command's own timeout (tiering, a query) and then some
        let timeout = command["timeout_s"]
            .as_u64()
            .map_or(COMMAND_TIMEOUT, |s| Duration::from_secs(s + 60));
        let reply = self.read_line(timeout)?;
        if reply["ok"] == json!(true) {
            Ok(reply)
        } else {
            Err(HarnessError(format!(
                "{} failed: {}",
                command["cmd"],
                reply["error"].as_str().unwrap_or("(no message)")
            )))
        }
    }

    /// A statement through Flink's Fluss catalog `fc` (DDL).
    pub fn sql(&mut self, sql: &str) -> Result<(), HarnessError> {
        self.call(json!({"cmd": "sql", "sql": sql})).map(drop)
    }

    /// The first `rows` rows of a streaming query through Flink (which reads
    /// `$changelog` and `$binlog` only as streams), as [`RealFluss::query`] gives rows.
    pub fn stream_query(
        &mut self,
        sql: &str,
        rows: usize,
    ) -> Result<Vec<Vec<Option<String>>>, HarnessError> {
        let reply = self.call(json!({"cmd": "stream_query", "sql": sql, "rows": rows}))?;
        reply_rows(&reply)
    }

    /// A batch query through Flink: each row's values as canonical text (None = NULL).
    pub fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, HarnessError> {
        let reply = self.call(json!({"cmd": "query", "sql": sql}))?;
        reply_rows(&reply)
    }

    /// Writes rows with the Java client: `op` is `append`, `upsert` or `delete`;
    /// `columns` (for a partial update) names each row's values.
    pub fn write(
        &mut self,
        table: &str,
        op: &str,
        columns: Option<&[&str]>,
        rows: Vec<Value>,
    ) -> Result<(), HarnessError> {
        let mut command = json!({"cmd": "write", "table": table, "op": op, "rows": rows});
        if let Some(columns) = columns {
            command["columns"] = json!(columns);
        }
        self.call(command).map(drop)
    }

    /// Runs the tiering service until the latest lake snapshot of every table covers
    /// what its buckets hold now, then stops it. Returns each table's snapshot id.
    pub fn tier(&mut self, tables: &[&str]) -> Result<Value, HarnessError> {
        self.call(json!({"cmd": "tier", "tables": tables, "timeout_s": 300}))
            .map(|r| r["snapshots"].clone())
    }

    /// Copies what the cluster holds into a LocalStore layout at `root` (DESIGN.md
    /// "LocalStore"): every znode under `/metadata/databases` and each table's
    /// `laketable` znode as `zk/<path>.json` (the data Fluss wrote, unchanged), and the
    /// `.log` segments each bucket's replica on the tablet servers holds (the larger
    /// copy of the two) under `data/`. The lake warehouse and the offsets files stay
    /// where the cluster wrote them: metadata names them by absolute path.
    pub fn copy_to_local_store(&mut self, root: &Path) -> Result<(), HarnessError> {
        let io = |what: &str, e: std::io::Error| HarnessError(format!("{what}: {e}"));
        let zk_root = self.zk_root()?;
        let mut stack = vec!["/metadata/databases".to_string()];
        let mut table_ids = Vec::new();
        while let Some(node) = stack.pop() {
            let full = format!("{zk_root}{node}");
            let data = self.call(json!({"cmd": "zk_get", "path": full}))?;
            if let Some(text) = data["data"].as_str().filter(|t| !t.is_empty()) {
                let file = root.join(format!("zk{node}.json"));
                if let Some(dir) = file.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| io("mkdir", e))?;
                }
                std::fs::write(&file, text).map_err(|e| io("write znode", e))?;
                // a table registration names its table id
                if let Ok(v) = serde_json::from_str::<Value>(text)
                    && node.matches('/').count() == 5
                    && node.contains("/tables/")
                    && let Some(id) = v["table_id"].as_i64()
                {
                    table_ids.push(id);
                }
            }
            let children = self.call(json!({"cmd": "zk_children", "path": full}))?;
            for child in children["children"].as_array().into_iter().flatten() {
                if let Some(c) = child.as_str() {
                    stack.push(format!("{node}/{c}"));
                }
            }
        }
        for id in table_ids {
            let node = format!("/tabletservers/tables/{id}/laketable");
            if let Ok(data) =
                self.call(json!({"cmd": "zk_get", "path": format!("{zk_root}{node}")}))
                && let Some(text) = data["data"].as_str()
            {
                let file = root.join(format!("zk{node}.json"));
                std::fs::create_dir_all(file.parent().unwrap_or(root))
                    .map_err(|e| io("mkdir", e))?;
                std::fs::write(&file, text).map_err(|e| io("write znode", e))?;
            }
        }
        // segments: <server data dir>/<db>/<table>-<id>/[<partition>-p<id>/]log-<bucket>/
        let mut best: std::collections::BTreeMap<PathBuf, (u64, PathBuf)> = Default::default();
        for server in 0..2 {
            let reply = self.call(json!({"cmd": "tablet_server_dir", "id": server}))?;
            let Some(dir) = reply["dir"].as_str().map(PathBuf::from) else {
                continue;
            };
            for log_dir in log_dirs(&dir).map_err(|e| io("list segments", e))? {
                let relative = log_dir.strip_prefix(&dir).unwrap_or(&log_dir).to_path_buf();
                let size = segment_bytes(&log_dir).map_err(|e| io("size segments", e))?;
                let entry = best.entry(relative).or_insert((0, log_dir.clone()));
                if size >= entry.0 {
                    *entry = (size, log_dir);
                }
            }
        }
        for (relative, (_, from)) in best {
            let to = root.join("data").join(relative);
            std::fs::create_dir_all(&to).map_err(|e| io("mkdir", e))?;
            for entry in std::fs::read_dir(&from).map_err(|e| io("list segments", e))? {
                let path = entry.map_err(|e| io("list segments", e))?.path();
                if path.extension().is_some_and(|x| x == "log") {
                    std::fs::copy(&path, to.join(path.file_name().unwrap_or_default()))
                        .map_err(|e| io("copy a segment", e))?;
                }
            }
        }
        Ok(())
    }

    /// The ZooKeeper root Fluss keeps its znodes under (`zookeeper.path.root`).
    fn zk_root(&mut self) -> Result<String, HarnessError> {
        let top = self.call(json!({"cmd": "zk_children", "path": "/"}))?;
        let has = |name: &str| {
            top["children"]
                .as_array()
                .is_some_and(|c| c.iter().any(|x| x.as_str() == Some(name)))
        };
        if has("metadata") {
            Ok(String::new())
        } else if has("fluss") {
            Ok("/fluss".to_string())
        } else {
            Err(HarnessError(format!("no Fluss znodes in ZooKeeper: {top}")))
        }
    }

    /// Asks the harness to stop and waits for it.
    pub fn shutdown(&mut self) {
        if self.stdin.is_some() {
            // (`timeout_s` bounds the wait for its answer)
            let _ = self.call(json!({"cmd": "shutdown", "timeout_s": 20}));
            self.stdin = None;
        }
        for _ in 0..300 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RealFluss {
    fn drop(&mut self) {
        self.shutdown();
        // The work directory goes with this value; a failing test's harness log is
        // what explains it, so it is kept beside the directory.
        if std::thread::panicking() {
            let name = self
                .work_dir
                .path()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "real-fluss".into());
            let kept = std::env::temp_dir().join(format!("{name}-harness.log"));
            if std::fs::copy(self.log_path(), &kept).is_ok() {
                eprintln!("the real-Fluss harness log is kept at {}", kept.display());
            }
        }
    }
}

fn text(v: &Value, key: &str) -> Result<String, HarnessError> {
    v[key]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| HarnessError(format!("the harness did not say its {key}")))
}

/// The `log-<bucket>` directories under a tablet server's data directory.
fn log_dirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if !path.is_dir() {
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("log-") {
                found.push(path);
            } else if !name.starts_with("kv-") && !name.starts_with("remote-log") {
                stack.push(path);
            }
        }
    }
    Ok(found)
}

/// The bytes of a bucket directory's `.log` segments.
fn segment_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "log") {
            total += path.metadata()?.len();
        }
    }
    Ok(total)
}

/// The rows of a query's reply: each row's values as canonical text (None = NULL).
fn reply_rows(reply: &Value) -> Result<Vec<Vec<Option<String>>>, HarnessError> {
    let rows = reply["rows"]
        .as_array()
        .ok_or_else(|| HarnessError("a query answer without rows".to_string()))?;
    Ok(rows
        .iter()
        .map(|row| {
            row.as_array()
                .map(|cells| {
                    cells
                        .iter()
                        .map(|c| c.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect())
}
