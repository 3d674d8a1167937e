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

use std::sync::{Arc, OnceLock};

use rmcp::model::{Cursor, Tool};
use serde_json::{Map, Value};

use crate::llm::{McpListing, mcp_name, mcp_tool};
use crate::registry::Registry;
use crate::remote::Catalog as Offered;
use crate::tool::ToolDefinition;

/// The MCP tools of one registry generation, sorted by name.
///
/// Each tool is made when a page or a lookup first needs it, then kept: a server of
/// thousands of tools answers its first `tools/list` after making one page.
pub(super) struct ToolList {
    entries: Vec<Entry>,
}

/// One function MCP may list, and its `tools/list` entry once made.
struct Entry {
    definition: Arc<ToolDefinition>,
    /// `None`: MCP cannot take it (warned about once, when made).
    tool: OnceLock<Option<Tool>>,
}

impl Entry {
    fn name(&self) -> &str {
        &self.definition.name
    }

    fn tool(&self) -> Option<&Tool> {
        self.tool
            .get_or_init(|| match tool(&self.definition) {
                Ok(tool) => Some(tool),
                Err(reason) => {
                    tracing::warn!(tool = %self.definition.name, "tool left out of the MCP tool list: {reason}");
                    None
                }
            })
            .as_ref()
    }
}

/// The key the MCP tool list is kept under in its registry.
#[derive(PartialEq)]
struct Key;

impl ToolList {
    /// The MCP tool list of `registry` as it is now.
    pub(super) fn of(registry: &Registry) -> Arc<Self> {
        match registry.derived(Key, || Ok(Arc::new(Self::new(registry)))) {
            Ok(catalog) => catalog,
            // `make` above cannot fail; an empty list offers nothing.
            Err(_) => Arc::new(Self {
                entries: Vec::new(),
            }),
        }
    }

    /// The functions remote callers may reach whose names MCP takes; one whose name
    /// it cannot take is left out with a warning naming it.
    fn new(registry: &Registry) -> Self {
        let offered = Offered::of(registry);
        let entries = offered
            .functions()
            .filter(|function| {
                let fits = mcp_name(&function.name);
                if !fits {
                    tracing::warn!(
                        tool = %function.name,
                        "tool left out of the MCP tool list: MCP tool names are 1 to 128 of \
                         A-Z a-z 0-9 _ . -; rename the tool"
                    );
                }
                fits
            })
            .map(|function| Entry {
                definition: Arc::clone(&function.definition),
                tool: OnceLock::new(),
            })
            .collect();
        Self { entries }
    }

    pub(super) fn get(&self, name: &str) -> Option<&Tool> {
        let at = self
            .entries
            .binary_search_by(|entry| entry.name().cmp(name))
            .ok()?;
        self.entries.get(at)?.tool()
    }

    /// The page after `cursor` (from the start without one) of at most `size` tools,
    /// and the cursor of the next page when there is one. `None`: not a cursor this
    /// server gives.
    pub(super) fn page(
        &self,
        cursor: Option<&str>,
        size: usize,
    ) -> Option<(Vec<Tool>, Option<Cursor>)> {
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                let after = decode_cursor(cursor)?;
                self.entries
                    .partition_point(|entry| entry.name() <= after.as_str())
            }
        };
        let end = start.saturating_add(size.max(1)).min(self.entries.len());
        let page = &self.entries[start..end];
        let next = (end < self.entries.len())
            .then(|| page.last().map(|last| encode_cursor(last.name())))
            .flatten();
        Some((page.iter().filter_map(Entry::tool).cloned().collect(), next))
    }
}

/// One `tools/list` entry, or why MCP cannot take the tool.
fn tool(definition: &ToolDefinition) -> Result<Tool, String> {
    let params = definition.params.value();
    crate::schema::check_params_root(params)?;
    let entry =
        mcp_tool(definition, params.clone(), McpListing::Served).map_err(|err| err.to_string())?;
    let Value::Object(mut entry) = entry else {
        return Err("not an MCP tool: not an object".into());
    };
    // The schemas, most of an entry, move into the SDK's type as they are; read
    // through serde they would be rebuilt node by node.
    let input = entry.insert("inputSchema".into(), Value::Object(Map::new()));
    let output = entry.remove("outputSchema");
    let mut tool: Tool = serde_json::from_value(Value::Object(entry))
        .map_err(|err| format!("not an MCP tool: {err}"))?;
    if let Some(Value::Object(input)) = input {
        tool.input_schema = Arc::new(input);
    }
    match output {
        None => {}
        Some(Value::Object(output)) => tool.output_schema = Some(Arc::new(output)),
        Some(_) => return Err("not an MCP tool: its output schema is not an object".into()),
    }
    Ok(tool)
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
