//! Search for a caller from outside: the registry's ranking, kept to what the
//! catalogue offers remote callers and to what the caller's [`Sight`] shows, and
//! the bounds of what a caller may ask ([`SearchBounds`]), the same for HTTP
//! discovery's `?q=` and MCP's `search_tools`.

#[cfg(any(feature = "http-server", feature = "mcp"))]
use super::catalog::offered;
#[cfg(any(feature = "http-server", feature = "mcp"))]
use super::find::Sight;
#[cfg(any(feature = "http-server", feature = "mcp"))]
use crate::error::ToolError;
#[cfg(any(feature = "http-server", feature = "mcp"))]
use crate::registry::Registry;
#[cfg(any(feature = "http-server", feature = "mcp"))]
use crate::tool::ToolDefinition;

/// The tools offered to remote callers that best match `query`, best first, at
/// most `limit`, each as the caller of `sight` sees it and as listings advertise it
/// (an authored `summary` in place of the description). A tool the caller may not
/// see is not ranked, and so does not count against `limit`.
#[cfg(any(feature = "http-server", feature = "mcp"))]
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

/// How many tools a search answers when it names no `limit`: 10 (or the largest
/// `limit`, when that is smaller).
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub const DEFAULT_SEARCH_RESULTS: usize = 10;

/// The largest `limit` a search accepts by default: 100.
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub const DEFAULT_MAX_SEARCH_RESULTS: usize = 100;

/// The longest query a search accepts by default, in characters: 1,024 (at most
/// 4 KiB of UTF-8).
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub const DEFAULT_MAX_SEARCH_QUERY: usize = 1024;

/// What a caller may ask of a search: its largest `limit` and its longest query.
#[cfg(any(feature = "http-server", feature = "mcp"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SearchBounds {
    /// The largest `limit`, at least 1.
    pub(crate) max_results: usize,
    /// The longest query, in characters.
    pub(crate) max_query: usize,
}

#[cfg(any(feature = "http-server", feature = "mcp"))]
impl Default for SearchBounds {
    fn default() -> Self {
        Self {
            max_results: DEFAULT_MAX_SEARCH_RESULTS,
            max_query: DEFAULT_MAX_SEARCH_QUERY,
        }
    }
}

#[cfg(any(feature = "http-server", feature = "mcp"))]
impl SearchBounds {
    /// The `limit` a search takes when it names none.
    pub(crate) fn default_limit(&self) -> usize {
        DEFAULT_SEARCH_RESULTS.min(self.max_results)
    }

    /// The `limit` asked for: the default when none is `named`, else `asked` (`None`
    /// when what is named is no whole number). `ARGUMENTS` at `/limit` past the
    /// bounds.
    pub(crate) fn limit(&self, named: bool, asked: Option<u64>) -> Result<usize, ToolError> {
        let max = self.max_results;
        if !named {
            return Ok(self.default_limit());
        }
        match asked.and_then(|n| usize::try_from(n).ok()) {
            Some(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(ToolError::arguments(
                "/limit",
                format!("`limit` must be a whole number from 1 to {max}"),
            )),
        }
    }

    /// Checks the query given as `field` (`q`, `query`): not blank, and no longer
    /// than the bounds say, in characters (as a JSON Schema `maxLength` counts).
    pub(crate) fn query(&self, field: &str, query: &str) -> Result<(), ToolError> {
        if query.trim().is_empty() {
            return Err(ToolError::arguments(
                format!("/{field}"),
                format!("the search `{field}` is empty"),
            ));
        }
        if query.chars().count() > self.max_query {
            return Err(ToolError::arguments(
                format!("/{field}"),
                format!(
                    "the search `{field}` is longer than {} characters",
                    self.max_query
                ),
            ));
        }
        Ok(())
    }
}
