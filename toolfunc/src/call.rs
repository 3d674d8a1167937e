//! `ToolCall` and `ToolResult`: correlated calls for batch execution with per-call
//! error isolation.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::ToolError;

/// One call of a tool by name, with an id that its [`ToolResult`] carries back.
///
/// ```
/// let call = toolfunc::ToolCall::new("c1", "add", serde_json::json!({"a": 1, "b": 2}));
/// assert_eq!(call.name, "add");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// Correlates the call with its result.
    pub id: String,
    /// The tool's name or alias.
    pub name: String,
    /// The arguments object (`null` means no arguments).
    #[serde(default)]
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `name` with `arguments`, correlated by `id`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The outcome of one [`ToolCall`]: its id and either the tool's output or the error.
///
/// Serialises as `{"id": .., "name": .., "ok": <output>}` or
/// `{"id": .., "name": .., "error": {"code": .., "message": .., "data": ..}}`.
#[derive(Debug, Clone)]
pub struct ToolResult {
    id: String,
    name: String,
    output: Result<Value, ToolError>,
}

impl ToolResult {
    /// A result for the call `id` of tool `name`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        output: Result<Value, ToolError>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            output,
        }
    }

    /// The id of the call this result answers.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The name the tool was called by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's output, or the error that ended the call.
    pub fn output(&self) -> Result<&Value, &ToolError> {
        self.output.as_ref()
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.output.is_ok()
    }

    /// Takes the output.
    pub fn into_output(self) -> Result<Value, ToolError> {
        self.output
    }
}

#[derive(Serialize)]
struct WireRef<'a> {
    id: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ToolError>,
}

#[derive(Deserialize)]
struct Wire {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    ok: Option<Value>,
    #[serde(default)]
    error: Option<ToolError>,
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (ok, error) = match &self.output {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        WireRef {
            id: &self.id,
            name: &self.name,
            ok,
            error,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        let output = match wire.error {
            Some(error) => Err(error),
            // A successful call whose output is `null` serialises without `ok`.
            None => Ok(wire.ok.unwrap_or(Value::Null)),
        };
        Ok(Self {
            id: wire.id,
            name: wire.name,
            output,
        })
    }
}
