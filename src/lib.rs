//! # fluss-datafusion
//!
//! Union read of Apache Fluss tables in Apache DataFusion: one scan that merges a
//! table's tiered lake snapshot (parquet files of its Paimon lake) with the Fluss log
//! tail that has not been tiered yet, projection and filters pushed to both sides.
//!
//! ```text
//!        SQL shell / embedding app / benchmark            (DataFusion SessionContext)
//!                               |
//!   FlussCatalog ── FlussTableProvider::scan pins the cut: readable lake snapshot S
//!        |          + per bucket [offset_b(S), high watermark)       (union::cut)
//!        |          and places each filter on the sides that may use it (union::filters)
//!        v
//!   dyn FlussSource ─ metadata, snapshot pointers, offsets, bounded log reads,
//!        |            lake_location(table), writer()      LocalStore | a cluster source
//!        v
//!   lake::open(location) ─> dyn LakeTable ─ plan(S, filter) -> LakePlan (plain splits)
//!        |                                  read(merge tasks) -> arrow batches
//!        v
//!   plain lake files ──> DataFusion's parquet source          merge tasks ──> the lake's reader
//!   log ranges       ──> FlussLogScanExec (log codec: CRC-32C, V1 statistics skipping)
//!        |
//!   log tables: lake ++ tail          PK tables: per bucket, fold the tail by key (last
//!                                     change wins), anti-join the lake rows, add live
//!                                     tail rows (FlussPrimaryKeyScanExec)
//! ```
//!
//! The provider names neither a store nor a lake format: it talks to [`FlussSource`]
//! and [`lake::LakeTable`], and plan values (cut, splits, ranges) are plain data.
//!
//! Modules (one concept each):
//! - [`source`]: the [`FlussSource`] and [`source::FlussWriter`] traits and the
//!   embedded [`LocalStore`], laid out exactly as a Fluss deployment lays out its data
//!   (one writer at a time, all-or-nothing statements, durable writes).
//! - [`lake`]: the lake-format trait, its plan values, Paimon as its first
//!   implementation, and [`tier`]ing the LocalStore's log into the lake.
//! - [`union`]: filter placement (which side may use a filter, and whether it is
//!   exact); the cut and the primary-key fold are internal.
//! - [`provider`]: [`FlussCatalog`], [`FlussTableProvider`], the virtual tables.
//! - [`log`]: the Fluss log batch codec (V0/V1/V2, CRC-32C, V1 statistics) and
//!   segment files; fluss-rs keeps its own private.
//! - [`sql`]: [`sql::FlussSession`]: Fluss DDL, `CALL` and the rest through DataFusion.
//! - [`storage`], [`error`]: where a store's bytes live, and the one error type.
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
//! // the catalog, and the rule that makes INSERT/UPDATE/DELETE/MERGE DataFusion writes
//! FlussCatalog::new(store).register_with(&ctx, "fluss");
//! ctx.sql("SELECT count(*) FROM fluss.fluss.orders").await?.show().await?;
//! ctx.sql("UPDATE fluss.fluss.orders SET o_comment = 'late' WHERE o_orderkey = 1")
//!     .await?
//!     .show()
//!     .await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod cast;
pub(crate) mod checked;
pub mod error;
pub mod lake;
pub mod log;
pub mod provider;
pub mod source;
pub mod storage;
pub mod table;
pub mod union;

#[cfg(feature = "distributed")]
pub mod distributed;

/// SQL over a Fluss source: DDL, DML, `CALL fluss.tier` ([`sql::FlussSession`]).
pub mod sql;

#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzz;

pub use error::{Error, ErrorKind, Result};
pub use provider::{FlussCatalog, FlussTableProvider, FlussWriteRule};
pub use source::local_store::tiering::tier;
pub use source::{FlussSource, LocalStore};
