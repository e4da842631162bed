//! Plans that travel: what a distributed engine needs to run a union read in other
//! processes (`distributed` feature).
//!
//! The planning process runs the provider's `scan()` once, so the cut (lake
//! snapshot and log offsets) is pinned there; physical plans then travel as bytes.
//! [`FlussPhysicalCodec`] encodes the Fluss scan nodes as plan values only (source
//! spec, table, cut, projection, predicates), and a receiving process runs them
//! against the sources it was started with ([`PlanSources`]). [`scan_size`] and
//! [`split_scan`] size a scan leaf and split it over a stage's tasks, each task
//! reading disjoint buckets or splits. The crate `fluss-distributed` wires all three
//! into datafusion-distributed.

pub use crate::provider::codec::split::{ScanSize, scan_size, split_scan};
pub use crate::provider::codec::{FlussPhysicalCodec, PlanSources};
pub use crate::source::SourceSpec;
