//! Opening a source from the keyword arguments the Python classes share: a
//! LocalStore (`store=`) or a cluster (`bootstrap_servers=`), with lake options.

use std::collections::HashMap;
use std::sync::Arc;

use fluss_datafusion::source::{ClusterOptions, ClusterSource, LocalStoreOptions};
use fluss_datafusion::{Error, FlussSource, LocalStore, Result};

/// Where to read: one of a store or a cluster. No `Debug`: the password and lake
/// options may be credentials.
pub struct SourceSpec {
    /// A LocalStore root (directory or object-store URL).
    pub store: Option<String>,
    /// A cluster's `host:port[,host:port]`.
    pub bootstrap_servers: Option<String>,
    /// Lake catalog and storage options for every table (`s3.endpoint`, ...).
    pub lake_options: HashMap<String, String>,
    /// SASL/PLAIN user of the cluster.
    pub sasl_username: Option<String>,
    /// SASL/PLAIN password of the cluster.
    pub sasl_password: Option<String>,
    /// Create the store if there is none at `store` (otherwise that is an error, as a
    /// mistyped path should be).
    pub create: bool,
}

impl SourceSpec {
    /// The source the Python keyword arguments name (an existing store, if a store).
    pub fn new(
        store: Option<String>,
        bootstrap_servers: Option<String>,
        lake_options: Option<HashMap<String, String>>,
        sasl_username: Option<String>,
        sasl_password: Option<String>,
    ) -> Self {
        Self {
            store,
            bootstrap_servers,
            lake_options: lake_options.unwrap_or_default(),
            sasl_username,
            sasl_password,
            create: false,
        }
    }

    /// Opens the source.
    pub async fn open(self) -> Result<Arc<dyn FlussSource>> {
        match (self.store, self.bootstrap_servers) {
            (Some(_), Some(_)) => Err(Error::invalid_input(
                "give either store= (a LocalStore) or bootstrap_servers= (a cluster), not both",
            )),
            (None, None) => Err(Error::invalid_input(
                "give store= (a LocalStore path or URL) or bootstrap_servers= (a cluster)",
            )),
            (Some(store), None) => {
                if !self.create && !LocalStore::is_store_at(&store).await? {
                    return Err(Error::not_found(format!(
                        "no Fluss store at '{store}' (create=True makes a new one)"
                    )));
                }
                let options = LocalStoreOptions {
                    lake_options: self.lake_options,
                    ..LocalStoreOptions::default()
                };
                Ok(Arc::new(
                    LocalStore::open_with_options(&store, options).await?,
                ))
            }
            (None, Some(servers)) => {
                let options = ClusterOptions {
                    bootstrap_servers: servers,
                    sasl_username: self.sasl_username,
                    sasl_password: self.sasl_password,
                    lake_options: self.lake_options,
                    max_fetch_bytes: None,
                    client_options: HashMap::new(),
                };
                Ok(Arc::new(ClusterSource::connect(options).await?))
            }
        }
    }
}
