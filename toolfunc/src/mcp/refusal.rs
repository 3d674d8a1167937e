//! A call's refusal as JSON-RPC says it, written once for MCP: an unknown tool
//! (`-32602`), a token without the scopes a call needs (`-32003`, with the scopes
//! to ask for), and what the call needs of its client (`-32021`).

use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::{Map, Value, json};

use super::tasks;
use crate::error::ToolError;
use crate::remote::{Needs, Refusal, insufficient_scope};

/// The code of a refusal for missing scopes.
const LACKS_SCOPE: ErrorCode = ErrorCode(-32003);

/// A call of the function `name` refused by the remote floor.
pub(super) fn refused(name: &str, refusal: Refusal) -> ErrorData {
    match refusal {
        Refusal::NotFound(_) => ErrorData::invalid_params(
            format!("unknown tool: {name}"),
            Some(json!({"code": "NOT_FOUND", "name": name})),
        ),
        Refusal::Scope(needed) => {
            let mut what = Map::new();
            what.insert("name".into(), Value::from(name));
            lacks_scope(&insufficient_scope(&needed), what)
        }
        Refusal::Needs(needs) => needs_of_client(name, needs),
    }
}

/// `-32003` for `err` (an `INSUFFICIENT_SCOPE`): its message, and in its data the
/// error's code, the scopes to ask for (`scope`, as OAuth writes them) and `what`
/// was refused (a tool's `name`, a prompt's, a resource's `uri`).
pub(super) fn lacks_scope(err: &ToolError, what: Map<String, Value>) -> ErrorData {
    let mut data = Map::new();
    data.insert("code".into(), Value::from(err.code()));
    data.insert(
        "scope".into(),
        err.data()
            .and_then(|d| d.get("scope").cloned())
            .unwrap_or(Value::Null),
    );
    data.extend(what);
    ErrorData::new(LACKS_SCOPE, err.to_string(), Some(Value::Object(data)))
}

/// A call of `name` refused for what it needs and this client lacks (`-32021`).
fn needs_of_client(name: &str, needs: Needs) -> ErrorData {
    match needs {
        Needs::Tasks => tasks::tasks_required(name),
        Needs::Capabilities(missing) => {
            let missing: Map<String, Value> =
                missing.into_iter().map(|name| (name, json!({}))).collect();
            match serde_json::from_value(Value::Object(missing)) {
                Ok(required) => ErrorData::missing_required_client_capability(required),
                Err(err) => ErrorData::internal_error(err.to_string(), None),
            }
        }
    }
}
