//! `Args`, what a call passes; `ToolCall` and `ToolResult`: correlated calls for
//! batch execution with per-call error isolation.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::error::ToolError;

/// The arguments of a call: named (an object; `null` means none) or positional
/// (mapped onto the tool's parameters in declaration order, see
/// [`ToolBuilder::param_order`](crate::ToolBuilder::param_order)). Every run method
/// takes `impl Into<Args>`: a `serde_json::Value` or `Map` is named arguments, a
/// `&Value` named arguments the caller keeps, a `Vec<Value>` positional ones.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::{tool, Args, Registry};
///
/// /// Subtracts `b` from `a`.
/// #[tool]
/// fn sub(a: f64, b: f64) -> f64 {
///     a - b
/// }
///
/// let registry = Registry::global();
/// assert_eq!(registry.run_sync("sub", json!({"a": 5, "b": 2})).unwrap(), json!(3.0));
/// assert_eq!(registry.run_sync("sub", vec![json!(5), json!(2)]).unwrap(), json!(3.0));
/// assert_eq!(registry.run_sync("sub", Args::positional([json!(5), json!(2)])).unwrap(), json!(3.0));
/// ```
///
/// # Borrowed arguments
///
/// A caller that keeps its arguments passes them by reference: a tool with typed
/// parameters (a `#[tool]` function, sync, async or streaming, and a
/// [`typed`](crate::ToolBuilder::typed) or [`typed_sync`](crate::ToolBuilder::typed_sync)
/// handler) reads them in place before its body starts, as does a JSON Schema
/// check, and nothing is copied. A handler over the raw JSON (`handler`,
/// `handler_sync`, `stream_handler`, `local_handler`), a service (which takes `act`
/// out), a `local` tool (parsed on its executor's thread), a call through
/// [call middleware](crate::layer) and a spawned call copy them once, when they need
/// them.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::{tool, Registry};
///
/// /// Multiplies `a` by `b`.
/// #[tool]
/// fn mul(a: f64, b: f64) -> f64 {
///     a * b
/// }
///
/// let args = json!({"a": 6, "b": 7});
/// for _ in 0..3 {
///     assert_eq!(Registry::global().run_sync("mul", &args).unwrap(), json!(42.0));
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Args<'a>(Given<'a>);

#[derive(Debug, Clone, PartialEq)]
enum Given<'a> {
    Named(Cow<'a, Value>),
    Positional(Vec<Value>),
}

impl<'a> Args<'a> {
    /// Named arguments: an object (`null` is none; anything else is refused with
    /// `ARGUMENTS` when the call is checked).
    pub fn named(arguments: impl Into<Value>) -> Self {
        Self(Given::Named(Cow::Owned(arguments.into())))
    }

    /// Named arguments the caller keeps: read in place where the tool allows it (see
    /// [Borrowed arguments](Args#borrowed-arguments)).
    pub fn borrowed(arguments: &'a Value) -> Self {
        Self(Given::Named(Cow::Borrowed(arguments)))
    }

    /// Positional arguments, mapped onto the parameters in declaration order.
    pub fn positional(values: impl IntoIterator<Item = Value>) -> Self {
        Self(Given::Positional(values.into_iter().collect()))
    }

    /// These arguments, owning what they borrowed.
    #[must_use]
    pub fn into_owned(self) -> Args<'static> {
        Args(match self.0 {
            Given::Named(value) => Given::Named(Cow::Owned(value.into_owned())),
            Given::Positional(values) => Given::Positional(values),
        })
    }

    /// The arguments as an object for a tool whose parameters, in order, are
    /// `names`: positional values are named (`ARGUMENTS` when there are more values
    /// than parameters).
    #[inline]
    pub(crate) fn into_named(
        self,
        name: impl FnOnce(Vec<Value>) -> Result<Value, ToolError>,
    ) -> Result<Cow<'a, Value>, ToolError> {
        match self.0 {
            Given::Named(value) => Ok(value),
            Given::Positional(values) => name(values).map(Cow::Owned),
        }
    }
}

impl From<Value> for Args<'_> {
    fn from(arguments: Value) -> Self {
        Self(Given::Named(Cow::Owned(arguments)))
    }
}

/// Named arguments the caller keeps (see [Borrowed arguments](Args#borrowed-arguments)).
impl<'a> From<&'a Value> for Args<'a> {
    fn from(arguments: &'a Value) -> Self {
        Self::borrowed(arguments)
    }
}

impl From<serde_json::Map<String, Value>> for Args<'_> {
    fn from(arguments: serde_json::Map<String, Value>) -> Self {
        Self(Given::Named(Cow::Owned(Value::Object(arguments))))
    }
}

/// Positional arguments.
impl From<Vec<Value>> for Args<'_> {
    fn from(values: Vec<Value>) -> Self {
        Self(Given::Positional(values))
    }
}

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
