//! LLM function calling: a registry's tools in each provider's dialect
//! ([`tools`]), and a provider's tool-call message executed into the message that
//! goes back ([`run_tool_calls`]).
//!
//! Each export is lowered from the tool's JSON Schema to what the target accepts:
//! local `$ref`s are inlined (recursive types keep their `$defs` where the target can
//! say recursion, and are an error where it cannot), strict targets get
//! `additionalProperties: false` everywhere, OpenAI strict makes every property
//! required and the optional ones nullable, Gemini gets its OpenAPI subset. A schema a
//! target cannot express is an error naming the tool and the JSON path, never an
//! export the provider would refuse.

use serde_json::{Map, Value, json};

use crate::{ActDefinition, Registry, ToolDefinition, ToolError, ToolRef};

mod lower;
mod messages;

use lower::lower_root;
pub use messages::run_tool_calls;

/// A provider dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// OpenAI function calling (`tools: [{type: "function", function}]`).
    OpenAi,
    /// OpenAI with `strict: true`: every property required, optional ones nullable,
    /// `additionalProperties: false` everywhere.
    OpenAiStrict,
    /// Anthropic tool use (`tools: [{name, description, input_schema}]`).
    Anthropic,
    /// Anthropic strict tool use: `additionalProperties: false` everywhere, no
    /// recursion, numeric and length constraints moved into descriptions.
    AnthropicStrict,
    /// Gemini `functionDeclarations` with `parameters` in its OpenAPI subset.
    Gemini,
    /// MCP `tools/list` entries (`inputSchema`, `outputSchema`, `annotations`).
    Mcp,
}

impl Target {
    fn strict(self) -> bool {
        matches!(self, Self::OpenAiStrict | Self::AnthropicStrict)
    }

    /// Whether the target can say a recursive type (`$ref` into `$defs`).
    fn recursion(self) -> bool {
        matches!(
            self,
            Self::OpenAi | Self::OpenAiStrict | Self::Anthropic | Self::Mcp
        )
    }

    fn valid_name(self, name: &str) -> bool {
        let ok = |c: char, extra: &str| c.is_ascii_alphanumeric() || c == '_' || extra.contains(c);
        match self {
            Self::OpenAi | Self::OpenAiStrict | Self::Anthropic | Self::AnthropicStrict => {
                (1..=64).contains(&name.len()) && name.chars().all(|c| ok(c, "-"))
            }
            Self::Gemini => {
                (1..=64).contains(&name.len())
                    && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| ok(c, ".:-"))
            }
            Self::Mcp => (1..=128).contains(&name.len()) && name.chars().all(|c| ok(c, ".-")),
        }
    }
}

/// The tools of `registry` (every tool reachable from it), as the JSON array to put in
/// a request to `target`.
///
/// ```rust,standalone_crate
/// use toolfunc::llm::{tools, Target};
/// use toolfunc::{tool, Registry};
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: f64, b: Option<f64>) -> f64 {
///     a + b.unwrap_or(0.0)
/// }
///
/// let exported = tools(Registry::global(), Target::OpenAiStrict).unwrap();
/// let parameters = &exported[0]["function"]["parameters"];
/// assert_eq!(parameters["required"], serde_json::json!(["a", "b"]));
/// assert_eq!(parameters["properties"]["b"]["type"], serde_json::json!(["number", "null"]));
/// assert_eq!(parameters["additionalProperties"], false);
/// ```
///
/// The export is made once and kept until a registry changes: asking again costs a
/// copy of the JSON, not a new lowering.
pub fn tools(registry: &Registry, target: Target) -> Result<Value, ToolError> {
    export(registry, target, false)
}

/// [`tools`] as the caller of `runner` may see them: a tool a call middleware layer
/// hides from that caller is left out (see [`crate::layer`]). Without layers this is
/// [`tools`] of the runner's registry, kept; with them the export is made per call.
///
/// ```rust,standalone_crate
/// use toolfunc::llm::{tools_for, Target};
/// use toolfunc::{layer, tool, CallOptions, Registry};
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: f64, b: f64) -> f64 {
///     a + b
/// }
///
/// /// Reads the audit log.
/// #[tool]
/// fn audit_log() -> Vec<String> {
///     Vec::new()
/// }
///
/// let registry = Registry::global().isolate().layer(layer::visibility(|tool, viewer| {
///     tool.name != "audit_log" || viewer.caller() == Some("auditor")
/// }));
/// let guest = tools_for(&registry.with(CallOptions::new()), Target::Anthropic).unwrap();
/// assert!(guest.as_array().unwrap().iter().all(|t| t["name"] != "audit_log"));
/// let auditor = registry.with(CallOptions::new().caller("auditor"));
/// let theirs = tools_for(&auditor, Target::Anthropic).unwrap();
/// assert!(theirs.as_array().unwrap().iter().any(|t| t["name"] == "audit_log"));
/// ```
pub fn tools_for(runner: &crate::Runner, target: Target) -> Result<Value, ToolError> {
    if !runner.has_layers() {
        return tools(runner.registry(), target);
    }
    lower_all(runner.definitions(), target, false)
}

/// [`tools`], or with `served` what a server offers remote callers: no `api = false`
/// tool, and a tool the target cannot express left out with a warning (one bad tool
/// does not take the whole catalog down).
pub(crate) fn export(
    registry: &Registry,
    target: Target,
    served: bool,
) -> Result<Value, ToolError> {
    let key = target as u8 | if served { 0x80 } else { 0 };
    registry.derived(key, || lower_all(registry.definitions(), target, served))
}

/// Lowers `definitions` for `target` (see [`export`]).
fn lower_all(
    definitions: Vec<ToolDefinition>,
    target: Target,
    served: bool,
) -> Result<Value, ToolError> {
    {
        let mut out = Vec::new();
        for definition in definitions {
            if served && !definition.api {
                continue;
            }
            let functions = if definition.acts.is_empty() {
                vec![definition]
            } else {
                method_functions(&definition)
            };
            for function in &functions {
                match tool(function, target) {
                    Ok(exported) => out.push(exported),
                    Err(err) if served => {
                        tracing::warn!(tool = %function.name, error = %err, "tool left out of the {target:?} export");
                    }
                    Err(err) => return Err(err),
                }
            }
        }
        Ok(Value::Array(out))
    }
}

/// The functions a service is offered as: one per method, named
/// `{service}_{method}` (`users_get`, `greeter_hello`), with the method's own
/// parameters, result, description (the service's when the method has none) and
/// hints.
pub fn method_functions(service: &ToolDefinition) -> Vec<ToolDefinition> {
    service
        .acts
        .iter()
        .map(|act| method_function(service, act))
        .collect()
}

/// The function one method of a service is offered as (see [`method_functions`]).
pub(crate) fn method_function(service: &ToolDefinition, act: &ActDefinition) -> ToolDefinition {
    let mut def = service.clone();
    def.name = format!("{}_{}", service.name, act.method());
    def.title.clone_from(&act.title);
    if act.description.is_some() {
        def.description.clone_from(&act.description);
        def.summary = None;
    }
    def.params = act.params.clone();
    def.result.clone_from(&act.result);
    def.stream = act.stream;
    if !act.annotations.is_empty() {
        def.annotations = act.annotations.clone();
    }
    def.alias.clear();
    def.action = None;
    def.methods.clear();
    def.acts.clear();
    def
}

/// The service, and the index of its act, a `{service}_{method}` function name
/// stands for. Callers look the name itself up first: a tool of that name wins.
pub(crate) fn method_of(registry: &Registry, name: &str) -> Option<(ToolRef, usize)> {
    let mut split = name.len();
    while let Some(at) = name[..split].rfind('_') {
        let (service, method) = (&name[..at], &name[at + 1..]);
        if let Some(tool) = registry.get(service)
            && let Some(index) = tool
                .definition()
                .acts
                .iter()
                .position(|a| a.method() == method)
        {
            return Some((tool, index));
        }
        split = at;
    }
    None
}

/// One tool definition in `target`'s dialect.
pub fn tool(definition: &ToolDefinition, target: Target) -> Result<Value, ToolError> {
    let name = definition.name.as_str();
    if !target.valid_name(name) {
        return Err(export_error(
            name,
            "",
            &format!("the name is not accepted by {target:?}; rename the tool"),
        ));
    }
    let params = lower_root(name, &definition.params, target)?;
    let description = definition.description.clone().unwrap_or_default();
    Ok(match target {
        Target::OpenAi | Target::OpenAiStrict => {
            let mut function = json!({
                "name": name,
                "description": description,
                "parameters": params,
            });
            if target == Target::OpenAiStrict {
                function["strict"] = json!(true);
            }
            json!({"type": "function", "function": function})
        }
        Target::Anthropic | Target::AnthropicStrict => {
            let mut tool = json!({
                "name": name,
                "description": description,
                "input_schema": params,
            });
            if target == Target::AnthropicStrict {
                tool["strict"] = json!(true);
            }
            tool
        }
        Target::Gemini => {
            let mut declaration = json!({"name": name, "description": description});
            // A tool without parameters sends none: Gemini refuses an empty object.
            if params["properties"]
                .as_object()
                .is_some_and(|p| !p.is_empty())
            {
                declaration["parameters"] = params;
            }
            declaration
        }
        Target::Mcp => mcp_tool(definition, params)?,
    })
}

fn mcp_tool(definition: &ToolDefinition, input: Value) -> Result<Value, ToolError> {
    let mut tool = Map::new();
    tool.insert("name".into(), json!(definition.name));
    if let Some(title) = &definition.title {
        tool.insert("title".into(), json!(title));
    }
    if let Some(description) = &definition.description {
        tool.insert("description".into(), json!(description));
    }
    tool.insert("inputSchema".into(), input);
    // An output schema says what `structuredContent` holds: only for object results.
    // A streaming tool's result is the array of its items: no object to describe.
    // A `Content` result's blocks are the content itself; it describes no
    // `structuredContent`.
    if let Some(result) = &definition.result
        && !definition.stream
        && result.get("type").and_then(Value::as_str) == Some("object")
        && !crate::content::is_content_schema(Some(result))
    {
        tool.insert(
            "outputSchema".into(),
            lower_root(&definition.name, result, Target::Mcp)?,
        );
    }
    if let Some(annotations) = mcp_annotations(definition) {
        tool.insert("annotations".into(), annotations);
    }
    Ok(Value::Object(tool))
}

/// The MCP `annotations` of a tool: its title and behaviour hints; `None` when it
/// has neither.
pub(crate) fn mcp_annotations(definition: &ToolDefinition) -> Option<Value> {
    let hints = &definition.annotations;
    let mut annotations = Map::new();
    if let Some(title) = &definition.title {
        annotations.insert("title".into(), json!(title));
    }
    for (key, value) in [
        ("readOnlyHint", hints.read_only),
        ("destructiveHint", hints.destructive),
        ("idempotentHint", hints.idempotent),
        ("openWorldHint", hints.open_world),
    ] {
        if let Some(value) = value {
            annotations.insert(key.into(), json!(value));
        }
    }
    (!annotations.is_empty()).then_some(Value::Object(annotations))
}

fn export_error(tool: &str, path: &str, message: &str) -> ToolError {
    let at = if path.is_empty() { "/" } else { path };
    ToolError::Definition {
        name: tool.to_owned(),
        message: format!("cannot export at {at}: {message}"),
    }
}
