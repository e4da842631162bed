//! [`SessionObjectStores`]: the object stores of a SQL session. DataFusion reads and
//! writes files at URLs (`CREATE EXTERNAL TABLE ... LOCATION 's3://…'`, `COPY ... TO
//! 's3://…'`, `SELECT * FROM 's3://…/f.parquet'`); as in datafusion-cli, a store for
//! a URL nobody registered is built on first use, here from the session's options
//! (the shell's `--lake-option`, with the same spellings the lakes take) and the
//! environment (`AWS_*`, `GOOGLE_*`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::ObjectStore;
use url::Url;

use super::remote::{is_remote, remote_store};

/// DataFusion's registry, with stores for object-store URLs built on demand from the
/// session's options. The options may hold credentials: `Debug` lists their keys only,
/// and a store built here serves this session alone.
pub struct SessionObjectStores {
    registered: DefaultObjectStoreRegistry,
    options: HashMap<String, String>,
}

impl SessionObjectStores {
    /// A registry building stores from `options` (and the environment).
    pub fn new(options: HashMap<String, String>) -> Self {
        Self {
            registered: DefaultObjectStoreRegistry::new(),
            options,
        }
    }
}

impl fmt::Debug for SessionObjectStores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<&String> = self.options.keys().collect();
        keys.sort();
        f.debug_struct("SessionObjectStores")
            .field("option_keys", &keys)
            .finish_non_exhaustive()
    }
}

impl ObjectStoreRegistry for SessionObjectStores {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.registered.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        self.registered.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        match self.registered.get_store(url) {
            Ok(store) => Ok(store),
            Err(_) if is_remote(url.as_str()) && url.scheme() != "memory" => {
                let (store, _) =
                    remote_store(url.as_str(), &self.options).map_err(DataFusionError::from)?;
                self.registered.register_store(url, store.clone());
                Ok(store)
            }
            Err(e) => Err(e),
        }
    }
}
