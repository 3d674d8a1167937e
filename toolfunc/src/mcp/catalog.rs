//! The tool list MCP clients see: the remote catalogue's functions as MCP tools,
//! made once per registry generation and kept in the registry: `tools/list` pages
//! are cut from it and `get_tool` (which the SDK's HTTP server asks on every
//! sessionless request) looks names up in it.
//!
//! Schemas are passed through as the tools wrote them (JSON Schema 2020-12:
//! `$schema`, `$defs`, `$ref`, `$anchor`, `allOf`, `if`/`then`/`else` are kept);
//! every output schema is listed ([`McpListing::Served`]). Tools are in name order,
//! one entry per name (a tool wins over a service method of the same name, as
//! `tools/call` picks it), so a cursor is the last name of a page and stays good
//! across changes.

use std::sync::Arc;

use rmcp::model::{Cursor, Tool};

use crate::llm::{McpListing, mcp_name, mcp_tool};
use crate::registry::Registry;
use crate::remote::Catalog as Offered;
use crate::tool::ToolDefinition;

/// The MCP tools of one registry generation, sorted by name.
pub(super) struct Catalog {
    tools: Vec<Tool>,
}

/// The key the MCP tool list is kept under in its registry.
#[derive(PartialEq)]
struct Key;

impl Catalog {
    /// The MCP tool list of `registry` as it is now.
    pub(super) fn of(registry: &Registry) -> Arc<Self> {
        match registry.derived(Key, || Ok(Arc::new(Self::new(registry)))) {
            Ok(catalog) => catalog,
            // `make` above cannot fail; an empty list offers nothing.
            Err(_) => Arc::new(Self { tools: Vec::new() }),
        }
    }

    /// Exports the functions remote callers may reach; one MCP cannot take is left
    /// out with a warning naming it.
    fn new(registry: &Registry) -> Self {
        let offered = Offered::of(registry);
        let tools = offered
            .functions()
            .filter_map(|function| match tool(&function.definition) {
                Ok(tool) => Some(tool),
                Err(reason) => {
                    tracing::warn!(tool = %function.name, "tool left out of the MCP tool list: {reason}");
                    None
                }
            })
            .collect();
        Self { tools }
    }

    pub(super) fn get(&self, name: &str) -> Option<&Tool> {
        let at = self
            .tools
            .binary_search_by(|tool| tool.name.as_ref().cmp(name))
            .ok()?;
        self.tools.get(at)
    }

    /// The page after `cursor` (from the start without one) of at most `size` tools,
    /// and the cursor of the next page when there is one. `None`: not a cursor this
    /// server gives.
    pub(super) fn page(
        &self,
        cursor: Option<&str>,
        size: usize,
    ) -> Option<(&[Tool], Option<Cursor>)> {
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                let after = decode_cursor(cursor)?;
                self.tools.partition_point(|tool| *tool.name <= *after)
            }
        };
        let end = start.saturating_add(size.max(1)).min(self.tools.len());
        let page = &self.tools[start..end];
        let next = (end < self.tools.len())
            .then(|| page.last().map(|last| encode_cursor(&last.name)))
            .flatten();
        Some((page, next))
    }
}

/// One `tools/list` entry, or why MCP cannot take the tool.
fn tool(definition: &ToolDefinition) -> Result<Tool, String> {
    if !mcp_name(&definition.name) {
        return Err("MCP tool names are 1 to 128 of A-Z a-z 0-9 _ . -; rename the tool".into());
    }
    crate::schema::check_params_root(&definition.params)?;
    let entry = mcp_tool(definition, definition.params.clone(), McpListing::Served)
        .map_err(|err| err.to_string())?;
    serde_json::from_value(entry).map_err(|err| format!("not an MCP tool: {err}"))
}

/// A cursor: the hex of the last name of a page, behind a version letter.
fn encode_cursor(name: &str) -> Cursor {
    use std::fmt::Write as _;
    let mut cursor = String::with_capacity(1 + 2 * name.len());
    cursor.push('n');
    for byte in name.bytes() {
        let _ = write!(cursor, "{byte:02x}");
    }
    cursor
}

fn decode_cursor(cursor: &str) -> Option<String> {
    let hex = cursor.strip_prefix('n')?.as_bytes();
    if hex.len() % 2 != 0 || hex.len() > 256 {
        return None;
    }
    let digit = |b: u8| char::from(b).to_digit(16);
    let bytes = hex
        .chunks_exact(2)
        .map(|pair| u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok())
        .collect::<Option<Vec<u8>>>()?;
    let name = String::from_utf8(bytes).ok()?;
    mcp_name(&name).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::{decode_cursor, encode_cursor};

    #[test]
    fn cursors_round_trip_and_junk_is_refused() {
        for name in ["a", "users_get", "x.y-z_0", &"n".repeat(128)] {
            assert_eq!(decode_cursor(&encode_cursor(name)).as_deref(), Some(name));
        }
        for junk in ["", "n", "x61", "n6", "n6g", "n2020", "nff", "é", "n00"] {
            assert!(decode_cursor(junk).is_none(), "{junk:?}");
        }
    }
}
