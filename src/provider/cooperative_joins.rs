//! Joins that yield: a join can turn one input batch into a great many output
//! batches (a nested-loop or cross join, a hash join on a skewed key), and a parent
//! that drains it (an aggregate) then loops without ever returning `Pending`, so a
//! cancelled query keeps its thread busy until the join asks its input for the next
//! batch.
//!
//! DataFusion's `EnsureCooperative` rule puts a [`CooperativeExec`] above leaves and
//! exchanges only: the Tokio budget is spent per batch a scan produces, not per
//! batch a join produces. [`CooperativeJoinsRule`] puts one above every join as well,
//! so each batch a join emits spends a unit of budget, and a task draining it
//! yields (and can be aborted) every 128 batches.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result as DfResult;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::joins::{
    CrossJoinExec, HashJoinExec, NestedLoopJoinExec, PiecewiseMergeJoinExec, SortMergeJoinExec,
    SymmetricHashJoinExec,
};

/// Puts a [`CooperativeExec`] above every join (see the module docs). Sessions built
/// by [`crate::sql::FlussSession`] have it; register it with
/// `SessionStateBuilder::with_physical_optimizer_rule` elsewhere, after DataFusion's
/// own rules.
#[derive(Debug, Default)]
pub struct CooperativeJoinsRule;

impl PhysicalOptimizerRule for CooperativeJoinsRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if is_join(&node) {
                return Ok(Transformed::yes(
                    Arc::new(CooperativeExec::new(node)) as Arc<dyn ExecutionPlan>
                ));
            }
            // a join wrapped by an earlier pass, wrapped again just now: once is enough
            if let Some(outer) = node.downcast_ref::<CooperativeExec>()
                && let Some(inner) = outer.input().downcast_ref::<CooperativeExec>()
                && is_join(inner.input())
            {
                return Ok(Transformed::yes(outer.input().clone()));
            }
            Ok(Transformed::no(node))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "fluss_cooperative_joins"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether `plan` is one of DataFusion's joins.
fn is_join(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.is::<NestedLoopJoinExec>()
        || plan.is::<CrossJoinExec>()
        || plan.is::<HashJoinExec>()
        || plan.is::<SortMergeJoinExec>()
        || plan.is::<SymmetricHashJoinExec>()
        || plan.is::<PiecewiseMergeJoinExec>()
}

#[cfg(test)]
mod tests {
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::SessionContext;

    use super::*;

    /// A cross join gets one `CooperativeExec` above it, however often the rule runs.
    #[tokio::test]
    async fn a_join_is_wrapped_once() {
        let ctx = SessionContext::new();
        let df = ctx
            .sql("SELECT count(*) FROM range(10) a CROSS JOIN range(10) b WHERE a.value < b.value")
            .await
            .unwrap();
        let plan = df.create_physical_plan().await.unwrap();
        let rule = CooperativeJoinsRule;
        let once = rule.optimize(plan, &ConfigOptions::default()).unwrap();
        let twice = rule
            .optimize(once.clone(), &ConfigOptions::default())
            .unwrap();
        let shown = displayable(twice.as_ref()).indent(false).to_string();
        let lines: Vec<&str> = shown.lines().map(str::trim).collect();
        let join = lines
            .iter()
            .position(|l| l.contains("JoinExec"))
            .unwrap_or_else(|| panic!("{shown}"));
        assert_eq!(lines[join - 1], "CooperativeExec", "{shown}");
        assert_ne!(lines[join - 2], "CooperativeExec", "{shown}");
        assert_eq!(
            shown,
            displayable(once.as_ref()).indent(false).to_string(),
            "a second pass changes nothing"
        );
    }
}
