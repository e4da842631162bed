//! Union read logic, independent of DataFusion's plan types: the pinned cut
//! ([`cut`]) and the primary-key merge of lake rows with the log tail ([`fold`]).

pub mod cut;
pub mod filters;
pub mod fold;

pub use cut::{BucketCut, UnionCut, plan_cut};
pub use fold::ChangelogFold;
