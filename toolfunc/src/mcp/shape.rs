//! How a tool's outcome answers its `tools/call`: the result's [`Shape`] for the
//! request's client, and the MCP result made of it.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Map, Value, json};

use crate::error::ToolError;
use crate::remote::Found;

/// Whether the found call streams, and how its result is answered to this
/// request's client.
pub(super) fn shape_of(found: &Found, sessionless: bool) -> (bool, Shape) {
    let (stream, result) = (found.streams(), found.result());
    let shape = Shape {
        content: crate::content::is_content_schema(result),
        // A listed output schema: 2026-07-28 clients take a value of any type.
        any_structured: sessionless && !stream && matches!(result, Some(Value::Object(_))),
    };
    (stream, shape)
}

/// What a tool's result is, for its `tools/call` answer.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    /// [`Content`](crate::Content): its blocks are the answer.
    pub(super) content: bool,
    /// Any value is also `structuredContent` (a 2026-07-28 client, a tool with an
    /// output schema).
    pub(super) any_structured: bool,
}

/// A tool's outcome as MCP answers it.
pub(super) fn into_result(outcome: Result<Value, ToolError>, shape: Shape) -> CallToolResult {
    match outcome {
        Ok(value) if shape.content => match serde_json::from_value::<CallToolResult>(value) {
            Ok(blocks) => {
                let mut result = CallToolResult::success(blocks.content);
                result.structured_content = blocks.structured_content;
                result
            }
            Err(err) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the tool's content blocks are not MCP content: {err}"
            ))]),
        },
        Ok(Value::Object(object)) => CallToolResult::structured(Value::Object(object)),
        Ok(value) if shape.any_structured => {
            let text = match &value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(value);
            result
        }
        Ok(Value::String(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Ok(value) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
        Err(err) => {
            let mut meta = Map::new();
            meta.insert("io.github.toolfunc/error".into(), error_data(&err));
            CallToolResult::error(vec![ContentBlock::text(err.to_string())])
                .with_meta(Some(MetaObject(meta)))
        }
    }
}

pub(super) fn error_data(err: &ToolError) -> Value {
    json!({"code": err.code(), "data": err.data()})
}
