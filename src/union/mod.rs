//! Union read logic, independent of DataFusion's plan types: the pinned cut
//! (`cut`) and the primary-key merge of lake rows with the log tail (`fold`).

pub(crate) mod cut;
pub mod filters;
pub(crate) mod fold;

pub(crate) use cut::{BucketCut, UnionCut, plan_cut};
pub(crate) use fold::ChangelogFold;
