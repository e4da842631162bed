//! # fluss-datafusion
//!
//! Union read of Apache Fluss tables in Apache DataFusion: one scan that merges a
//! table's tiered lake snapshot (Apache Paimon parquet) with the Fluss log tail that
//! has not been tiered yet.
//!
//! ```text
//!                 SQL / DataFusion SessionContext
//!                               |
//!          FlussCatalog -> FlussTableProvider (plans the cut)
//!                 /                                  \
//!   lake side (src/lake): snapshot S            log side (src/log, src/source):
//!   paimon splits -> parquet                    per bucket [offset_b(S), high watermark)
//!                 \                                  /
//!           log tables: concatenate; PK tables: fold the tail by key (src/union)
//! ```
//!
//! Modules:
//! - [`log`]: the Fluss log batch codec (V0/V1/V2, CRC-32C, statistics) and segments.
//! - [`source`]: the [`source::FlussSource`] trait and the embedded [`source::LocalStore`].
//! - [`lake`]: lake formats (Paimon) and tiering.
//! - [`storage`]: local directory or object-store root.
//! - [`error`]: the crate's error type.

pub mod error;
pub mod lake;
pub mod log;
pub mod provider;
pub mod source;
pub mod storage;
pub mod union;

pub use error::{Error, ErrorKind, Result};
