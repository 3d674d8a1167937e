//! The tool list MCP clients see, made once per registry generation and kept:
//! `tools/list` pages are cut from it and `get_tool` (which the SDK's HTTP server
//! asks on every sessionless request) looks names up in it.
//!
//! Schemas are passed through as the tools wrote them (JSON Schema 2020-12:
//! `$schema`, `$defs`, `$ref`, `$anchor`, `allOf`, `if`/`then`/`else` are kept);
//! every output schema is listed, and the SDK drops the ones that do not describe an
//! object for clients older than 2026-07-28. Tools are in name order, one entry per
//! name (a tool wins over a service method of the same name, as `tools/call` picks
//! it), so a cursor is the last name of a page and stays good across changes.

use rmcp::model::{Cursor, Tool};
use serde_json::{Map, Value, json};

use crate::{Registry, ToolDefinition};

/// The tools of one registry generation, sorted by name.
pub(super) struct Catalog {
    pub(super) generation: u64,
    tools: Vec<Tool>,
}

impl Catalog {
    /// Exports the tools remote callers may see; a tool MCP cannot take is left out
    /// with a warning naming it.
    pub(super) fn new(registry: &Registry, generation: u64) -> Self {
        let mut entries: Vec<(bool, Tool)> = Vec::new();
        let mut add = |definition: &ToolDefinition, method: bool| match tool(definition) {
            Ok(tool) => entries.push((method, tool)),
            Err(reason) => {
                tracing::warn!(tool = %definition.name, "tool left out of the MCP tool list: {reason}");
            }
        };
        for definition in registry.definitions() {
            if !definition.api {
                continue;
            }
            if definition.acts.is_empty() {
                add(&definition, false);
            }
            for act in &definition.acts {
                add(&crate::llm::method_function(&definition, act), true);
            }
        }
        // Same name: the tool (`false`) before the method, and only it is kept.
        entries.sort_by(|(a_method, a), (b_method, b)| {
            a.name.cmp(&b.name).then(a_method.cmp(b_method))
        });
        entries.dedup_by(|(_, later), (_, kept)| later.name == kept.name);
        Self {
            generation,
            tools: entries.into_iter().map(|(_, tool)| tool).collect(),
        }
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

/// Whether MCP takes `name`: 1 to 128 of `[A-Za-z0-9_.-]`.
fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// One `tools/list` entry, or why MCP cannot take the tool.
fn tool(definition: &ToolDefinition) -> Result<Tool, String> {
    if !valid_name(&definition.name) {
        return Err("MCP tool names are 1 to 128 of A-Z a-z 0-9 _ . -; rename the tool".into());
    }
    crate::schema::check_params_root(&definition.params)?;
    let mut tool = Map::new();
    tool.insert("name".into(), json!(definition.name));
    if let Some(title) = &definition.title {
        tool.insert("title".into(), json!(title));
    }
    if let Some(description) = &definition.description {
        tool.insert("description".into(), json!(description));
    }
    tool.insert("inputSchema".into(), definition.params.clone());
    // What `structuredContent` holds. A streaming tool's result is the array of its
    // items, which its schema does not describe; a `Content` result's blocks are the
    // content itself.
    if let Some(result @ Value::Object(_)) = &definition.result
        && !definition.stream
        && !crate::content::is_content_schema(Some(result))
    {
        tool.insert("outputSchema".into(), result.clone());
    }
    if let Some(annotations) = crate::llm::mcp_annotations(definition) {
        tool.insert("annotations".into(), annotations);
    }
    if definition.background {
        let support = if definition.background_only {
            "required"
        } else {
            "optional"
        };
        tool.insert(
            "_meta".into(),
            json!({ super::tasks::TASK_SUPPORT_KEY: support }),
        );
    }
    serde_json::from_value(Value::Object(tool)).map_err(|err| format!("not an MCP tool: {err}"))
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
    valid_name(&name).then_some(name)
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
