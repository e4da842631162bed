//! [`SourceSpec`]: a source as another process names it to open it again.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which source a plan reads, as a plan shipped to another process (a distributed
/// worker) names it: the LocalStore's root, or the cluster's bootstrap servers.
/// Never credentials: a worker takes them (and the lake options) from its own
/// configuration, and serves only the sources it was started with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SourceSpec {
    /// A LocalStore at this root (a local directory or an object-store URL, shown
    /// without credentials).
    LocalStore {
        /// The store root.
        root: String,
    },
    /// A live Fluss cluster.
    Cluster {
        /// `host:port[,host:port…]` of its coordinator.
        bootstrap_servers: String,
    },
}

impl fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LocalStore { root } => write!(f, "LocalStore {root}"),
            Self::Cluster { bootstrap_servers } => write!(f, "fluss cluster {bootstrap_servers}"),
        }
    }
}
