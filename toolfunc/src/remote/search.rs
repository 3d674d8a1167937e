//! Search for a caller from outside: the registry's ranking, kept to what the
//! catalogue offers remote callers and to what the caller's [`Sight`] shows.

use super::catalog::offered;
use super::find::Sight;
use crate::registry::Registry;
use crate::tool::ToolDefinition;

/// The tools offered to remote callers that best match `query`, best first, at
/// most `limit`, each as the caller of `sight` sees it and as listings advertise it
/// (an authored `summary` in place of the description). A tool the caller may not
/// see is not ranked, and so does not count against `limit`.
pub(crate) fn search(
    registry: &Registry,
    query: &str,
    limit: usize,
    sight: &Sight<'_>,
) -> Vec<ToolDefinition> {
    registry
        .search_by(query, limit, |tool| {
            let def = tool.definition();
            if !offered(def) {
                return None;
            }
            sight.view(def).map(|def| def.advertised())
        })
        .into_iter()
        .map(|ranked| ranked.item)
        .collect()
}
