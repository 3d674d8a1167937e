//! The search mode's settings ([`Server::search_mode`](super::Server::search_mode)) and
//! the two tools it lists in place of the catalogue.

use rmcp::model::Tool;
use serde_json::json;

use crate::remote::search::SearchBounds;

/// The name of the tool that searches the catalogue in search mode.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The name of the tool that calls a function by name in search mode.
pub const CALL_TOOL: &str = "call_tool";

/// The search mode's settings.
#[derive(Clone, Default)]
pub(super) struct SearchMode {
    /// Whether `tools/list` offers the two tools in place of the catalogue.
    pub(super) on: bool,
    /// The functions listed with the two tools, when the caller may see them.
    pub(super) always_listed: Vec<String>,
    /// The largest `limit` and the longest `query` a search takes.
    pub(super) bounds: SearchBounds,
}

impl SearchMode {
    /// The two tools, as `tools/list` lists them.
    pub(super) fn tools(&self) -> Vec<Tool> {
        let search = json!({
            "name": SEARCH_TOOLS,
            "title": "Search tools",
            "description": format!(
                "Searches this server's tools by what they do. Answers the best matches, best first: \
                 each tool's name, description and inputSchema. Run one with `{CALL_TOOL}`."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": self.bounds.max_query,
                        "description": "Words that say what the tool should do",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": self.bounds.max_results,
                        "default": self.bounds.default_limit(),
                        "description": "How many tools to answer at most",
                    },
                },
                "required": ["query"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
                "required": ["tools"],
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        });
        let call = json!({
            "name": CALL_TOOL,
            "title": "Call a tool",
            "description": format!(
                "Runs a tool `{SEARCH_TOOLS}` found, by its name, with arguments matching its \
                 inputSchema. Answers what the tool answers."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name"},
                    "arguments": {"type": "object", "description": "The tool's arguments"},
                },
                "required": ["name", "arguments"],
            },
        });
        // Both are MCP tools as written; one that were not would be left out.
        [search, call]
            .into_iter()
            .filter_map(|tool| serde_json::from_value(tool).ok())
            .collect()
    }

    /// One of the two tools, by name, when the mode is on.
    pub(super) fn tool(&self, name: &str) -> Option<Tool> {
        // Asked on every sessionless HTTP request: made only for their names.
        if !self.on || (name != SEARCH_TOOLS && name != CALL_TOOL) {
            return None;
        }
        self.tools().into_iter().find(|tool| tool.name == name)
    }
}
