//! `fluss-worker`: runs the tasks of distributed union reads (datafusion-distributed
//! over gRPC) against one source, the LocalStore at `--store` or the cluster at
//! `--bootstrap-servers`, with the shell's source and lake options. Credentials come
//! from its own options and environment, never from the plans it is sent.

use std::collections::HashMap;
use std::sync::Arc;

use clap::Parser;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use fluss_datafusion::distributed::PlanSources;
use fluss_datafusion::source::{ClusterOptions, ClusterSource, LocalStoreOptions};
use fluss_datafusion::storage::registry::SessionObjectStores;
use fluss_datafusion::{Error, FlussSource, LocalStore, Result};

/// mimalloc, as the shell.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(name = "fluss-worker", version, about)]
struct Args {
    /// Address to serve on, e.g. 127.0.0.1:7001 (port 0: any free port; the address
    /// taken is printed as `listening on <address>`).
    #[arg(long)]
    listen: String,
    /// LocalStore root: a directory or an object-store URL.
    #[arg(long, conflicts_with = "bootstrap_servers")]
    store: Option<String>,
    /// A live Fluss cluster (`host:port[,host:port]`).
    #[arg(long)]
    bootstrap_servers: Option<String>,
    /// SASL/PLAIN user for the cluster (or `FLUSS_SASL_USERNAME`).
    #[arg(long)]
    sasl_username: Option<String>,
    /// SASL/PLAIN password (better: `FLUSS_SASL_PASSWORD`).
    #[arg(long)]
    sasl_password: Option<String>,
    /// A lake catalog or storage option for every table, `key=value` (repeatable).
    #[arg(long = "lake-option", value_parser = fluss_distributed::parse_key_value)]
    lake_option: Vec<(String, String)>,
    /// Memory limit of the tasks' engine, e.g. 512m, 1g, or plain bytes (as the shell
    /// takes it).
    #[arg(long, value_parser = fluss_distributed::parse_size)]
    memory_limit: Option<usize>,
    /// Stop when standard input closes: a parent (a test, a benchmark) that dies
    /// takes its workers with it.
    #[arg(long)]
    stop_with_stdin: bool,
}

async fn open_source(args: &Args) -> Result<Arc<dyn FlussSource>> {
    let lake_options: HashMap<String, String> = args.lake_option.iter().cloned().collect();
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (&args.store, &args.bootstrap_servers) {
        (Some(root), None) => {
            if !LocalStore::is_store_at(root).await? {
                return Err(Error::not_found(format!("no Fluss store at {root}")));
            }
            let options = LocalStoreOptions {
                lake_options,
                ..LocalStoreOptions::default()
            };
            Ok(Arc::new(
                LocalStore::open_with_options(root, options).await?,
            ))
        }
        (None, Some(servers)) => Ok(Arc::new(
            ClusterSource::connect(ClusterOptions {
                bootstrap_servers: servers.clone(),
                sasl_username: args
                    .sasl_username
                    .clone()
                    .or_else(|| env("FLUSS_SASL_USERNAME")),
                sasl_password: args
                    .sasl_password
                    .clone()
                    .or_else(|| env("FLUSS_SASL_PASSWORD")),
                lake_options,
                max_fetch_bytes: None,
                client_options: HashMap::new(),
            })
            .await?,
        )),
        _ => Err(Error::invalid_input(
            "name the source the worker reads: --store <root> or --bootstrap-servers <host:port>",
        )),
    }
}

async fn run(args: Args) -> Result<()> {
    let source = open_source(&args).await?;
    let sources = Arc::new(PlanSources::new([source])?);
    let mut env = RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(
        SessionObjectStores::new(args.lake_option.iter().cloned().collect()),
    ));
    if let Some(limit) = args.memory_limit {
        env = env.with_memory_limit(limit, 1.0);
    }
    let env = env.build_arc().map_err(Error::from)?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| Error::from(e).with_context("listen", &args.listen))?;
    let address = listener.local_addr().map_err(Error::from)?;
    println!("listening on {address}");
    let worker = fluss_distributed::worker(sources, env);
    let stop_with_stdin = args.stop_with_stdin;
    let shutdown = async move {
        let stdin_closed = async {
            if !stop_with_stdin {
                return std::future::pending().await;
            }
            // reads until end of input, then the worker stops
            let _ = tokio::task::spawn_blocking(|| {
                std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink())
            })
            .await;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = stdin_closed => {}
        }
    };
    fluss_distributed::serve(worker, listener, shutdown).await
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fluss-worker: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fluss-worker: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
