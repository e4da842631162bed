//! "Did you mean …?" for a table or database name that does not exist: the closest
//! existing name, as DataFusion already suggests columns.

use datafusion::common::utils::datafusion_strsim::levenshtein;

/// The name among `candidates` closest to `name`, when it is close enough to be a
/// typo (edits on at most a third of the name's characters, rounded up: a swapped
/// pair in a five-letter name is two).
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let allowed = name.chars().count().div_ceil(3).max(1);
    candidates
        .into_iter()
        .map(|c| (levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|(distance, c)| *distance <= allowed && *c != name)
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_typos_only() {
        let names = ["customer", "orders", "nation"];
        assert_eq!(closest("custmer", names), Some("customer"));
        assert_eq!(closest("Orders", names), Some("orders"));
        assert_eq!(closest("ordres", names), Some("orders"));
        assert_eq!(closest("usres", ["users", "vip"]), Some("users"));
        assert_eq!(closest("lineitem", names), None);
        assert_eq!(closest("x", ["y", "zz"]), Some("y"));
    }
}
