//! Union read logic, independent of DataFusion's plan types: the pinned cut
//! (`cut`), the primary-key merge of lake rows with the log tail (`fold`), and the
//! keys of a bucket's newer lake runs (`runs`), folds kept between queries
//! (`tail_cache`) and lake files' keys kept between queries (`lake_keys`).

pub(crate) mod cut;
pub mod filters;
pub(crate) mod fold;
mod key;
pub mod lake_keys;
pub(crate) mod runs;
pub mod tail_cache;

pub(crate) use cut::{BucketCut, CommitTimes, CutLake, UnionCut, plan_cut};
pub(crate) use fold::ChangelogFold;
pub use lake_keys::LakeKeyCache;
pub(crate) use runs::RunKeys;
pub use tail_cache::TailCache;
