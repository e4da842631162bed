//! A local S3-compatible server for tests: moto (`tests/python/s3_server.py`, from
//! the repository's venv) on 127.0.0.1, or the one `.ci/run` started and named in
//! `FLUSS_TEST_S3_ENDPOINT`.
//!
//! A server this module starts stops by itself: when it is dropped, and, should the
//! test process die without dropping it, when its standard input (held by this
//! process) closes.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

/// The environment variable naming a running server's endpoint (set by `.ci/run`).
pub const ENDPOINT_VARIABLE: &str = "FLUSS_TEST_S3_ENDPOINT";

/// The bucket every test server has.
pub const BUCKET: &str = "fluss-lake";

/// Credentials moto accepts (it checks none); they exist so the redaction tests have
/// a secret to look for.
pub const ACCESS_KEY: &str = "fluss-test-access-key";
/// See [`ACCESS_KEY`].
pub const SECRET_KEY: &str = "fluss-test-secret-key-never-shown";

/// A running S3-compatible server.
pub struct S3Server {
    endpoint: String,
    child: Option<(Child, ChildStdin)>,
}

impl std::fmt::Debug for S3Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Server")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl S3Server {
    /// The server `.ci/run` started, or a new moto server; `Err` says why there is
    /// none (no venv, moto missing).
    pub fn start() -> Result<Self, String> {
        if let Ok(endpoint) = std::env::var(ENDPOINT_VARIABLE)
            && !endpoint.is_empty()
        {
            return Ok(Self {
                endpoint,
                child: None,
            });
        }
        let python = repo_root().join(".venv/bin/python");
        if !python.exists() {
            return Err("no Python venv".into());
        }
        let mut child = Command::new(&python)
            .arg(repo_root().join("tests/python/s3_server.py"))
            .args(["--bucket", BUCKET, "--max-seconds", "3600"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the S3 server: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| format!("the S3 server did not start: {e}"))?;
        let Some(endpoint) = line.trim().strip_prefix("endpoint=") else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the S3 server did not start (is moto installed? run tests/python/setup_venv.sh): {line:?}"
            ));
        };
        Ok(Self {
            endpoint: endpoint.to_string(),
            child: Some((child, stdin)),
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Storage options that reach this server, in the Iceberg spelling the library
    /// reads (`s3.endpoint`, `s3.access-key-id`, …).
    pub fn options(&self) -> HashMap<String, String> {
        HashMap::from([
            ("s3.endpoint".to_string(), self.endpoint.clone()),
            ("s3.access-key-id".to_string(), ACCESS_KEY.to_string()),
            ("s3.secret-access-key".to_string(), SECRET_KEY.to_string()),
            ("s3.region".to_string(), "us-east-1".to_string()),
            ("s3.path-style-access".to_string(), "true".to_string()),
        ])
    }

    /// A client of [`BUCKET`].
    pub fn bucket(&self) -> Arc<dyn ObjectStore> {
        let store = AmazonS3Builder::new()
            .with_bucket_name(BUCKET)
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .build()
            .expect("an S3 client for the test server");
        Arc::new(store)
    }

    /// Uploads every file under `local` to `s3://<BUCKET>/<prefix>/…`; returns how
    /// many files it uploaded.
    pub async fn upload_dir(&self, local: &Path, prefix: &str) -> std::io::Result<usize> {
        let store = self.bucket();
        let mut stack = vec![local.to_path_buf()];
        let mut uploaded = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                let path = entry.path();
                if entry.file_type()?.is_dir() {
                    stack.push(path);
                    continue;
                }
                let relative = path.strip_prefix(local).map_err(std::io::Error::other)?;
                let key = format!(
                    "{}/{}",
                    prefix.trim_matches('/'),
                    relative.to_string_lossy().replace('\\', "/")
                );
                let bytes = std::fs::read(&path)?;
                store
                    .put(&ObjectPath::from(key), PutPayload::from(bytes))
                    .await
                    .map_err(std::io::Error::other)?;
                uploaded += 1;
            }
        }
        Ok(uploaded)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.child.take() {
            drop(stdin);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
