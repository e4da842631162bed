//! Lake formats: reading and writing the tiered snapshot of a Fluss table.
//!
//! Paimon is supported through the `paimon` crate (arrow 58, bridged zero-copy by
//! [`arrow_bridge`]); tiering of the LocalStore's log into the lake is in [`tiering`].

pub mod arrow_bridge;
pub mod paimon;
pub mod paimon_scan;
pub mod tiering;

/// Commit user of every snapshot written by Fluss tiering
/// (`LakeTieringFactory.FLUSS_LAKE_TIERING_COMMIT_USER`).
pub const TIERING_COMMIT_USER: &str = "__fluss_lake_tiering";

/// Snapshot property holding the path of the tiered offsets file
/// (`LakeCommitter.FLUSS_LAKE_SNAP_BUCKET_OFFSET_PROPERTY`).
pub const FLUSS_OFFSETS_PROPERTY: &str = "fluss-offsets";

/// Legacy system columns some lake tables carry; the union table hides them.
pub const LEGACY_SYSTEM_COLUMNS: [&str; 3] = ["__bucket", "__offset", "__timestamp"];
