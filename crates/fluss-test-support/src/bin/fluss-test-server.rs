//! `fluss-test-server --store DIR [--writable]`: the RPC test server serving a
//! LocalStore, as a process, for clients that are not Rust tests (the Python package's
//! pytest suite).
//!
//! It binds 127.0.0.1 on a free port, prints `bootstrap=127.0.0.1:PORT` on stdout, and
//! serves a snapshot of the store (start it after writing) until its stdin closes or
//! `--max-seconds` (default 600) pass, so it never outlives the test that started it.
//! With `--writable` it takes appends and KV writes into that snapshot, in memory (the
//! store on disk stays as it was), as a tablet server leading every bucket would.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use fluss_datafusion::LocalStore;
use fluss_test_support::local_store::load_local_store;
use fluss_test_support::model::ClusterModel;
use fluss_test_support::server::{ServerConfig, TestServer};
use fluss_test_support::writes::WritableCluster;

const USAGE: &str = "usage: fluss-test-server --store DIR [--writable] [--max-seconds N]";

fn main() {
    let mut store = None;
    let mut max_seconds = 600u64;
    let mut writable = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--writable" {
            writable = true;
            continue;
        }
        match (arg.as_str(), args.next()) {
            ("--store", Some(value)) => store = Some(value),
            ("--max-seconds", Some(value)) => match value.parse() {
                Ok(seconds) => max_seconds = seconds,
                Err(_) => fail(&format!("--max-seconds takes a number, not '{value}'")),
            },
            _ => fail(USAGE),
        }
    }
    let Some(store) = store else {
        fail(USAGE);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("cannot start the runtime: {e}")));
    // The end of stdin (the parent is gone or done) stops the server.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            if line.is_err() {
                break;
            }
        }
        let _ = stop.send(());
    });
    runtime.block_on(async move {
        let store = LocalStore::open(&store)
            .await
            .unwrap_or_else(|e| fail(&format!("cannot open the store: {e}")));
        let cluster = load_local_store(&store)
            .await
            .unwrap_or_else(|e| fail(&format!("cannot load the store: {e}")));
        let model: Arc<dyn ClusterModel> = if writable {
            Arc::new(WritableCluster::new(cluster))
        } else {
            Arc::new(cluster)
        };
        let server = TestServer::start(model, ServerConfig::default())
            .await
            .unwrap_or_else(|e| fail(&format!("cannot start the server: {e}")));
        println!("bootstrap={}", server.bootstrap_servers());
        let _ = std::io::stdout().flush();
        tokio::select! {
            _ = stopped => {}
            _ = tokio::time::sleep(Duration::from_secs(max_seconds)) => {
                eprintln!("fluss-test-server: stopping after {max_seconds} s");
            }
        }
        drop(server);
    });
}

fn fail(message: &str) -> ! {
    eprintln!("fluss-test-server: {message}");
    std::process::exit(2)
}
