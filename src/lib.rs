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
//! Modules (one concept each):
//! - [`log`]: the Fluss log batch codec (V0/V1/V2, CRC-32C, V1 statistics) and segments
//!   (fluss-rs keeps its codec private).
//! - [`source`]: the [`FlussSource`] trait (what a union read needs from Fluss) and the
//!   embedded [`LocalStore`], laid out exactly as a Fluss deployment lays out its data.
//! - [`lake`]: Paimon planning/reading, the arrow 58 -> 59 bridge, and [`tier`]ing.
//! - [`union`]: the pinned cut and the primary-key changelog fold.
//! - [`provider`]: [`FlussCatalog`], [`FlussTableProvider`] and the scan nodes.
//! - [`storage`], [`error`]: the store root and the crate's error type.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use datafusion::prelude::SessionContext;
//! use fluss_datafusion::{FlussCatalog, LocalStore};
//!
//! let store = Arc::new(LocalStore::open("./fluss-data").await?);
//! let ctx = SessionContext::new();
//! ctx.register_catalog("fluss", Arc::new(FlussCatalog::new(store)));
//! ctx.sql("SELECT count(*) FROM fluss.fluss.orders").await?.show().await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod error;
pub mod lake;
pub mod log;
pub mod provider;
pub mod source;
pub mod storage;
pub mod union;

/// SQL over a LocalStore: DDL, DML, `CALL tier`, output formats ([`sql::FlussSession`]).
pub mod sql;

#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzz;

pub use error::{Error, ErrorKind, Result};
pub use lake::tiering::tier;
pub use provider::{FlussCatalog, FlussTableProvider};
pub use source::{FlussSource, LocalStore};
