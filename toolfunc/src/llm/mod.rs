//! LLM function calling: a registry's tools in each provider's dialect
//! ([`tools`]), a provider's tool-call message executed into the message that
//! goes back ([`run_tool_calls`]), and a prompt's messages in the provider's
//! format ([`prompt_messages`]).
#![doc = include_str!("../docs/llm.md")]

use serde_json::{Map, Value, json};

use crate::error::ToolError;
use crate::registry::{Registry, SearchHit};
use crate::tool::ToolDefinition;

mod deferred;
mod lower;
mod messages;
mod prompts;

pub use deferred::{Deferral, Namespaces, SearchKind, tools_deferred, tools_deferred_for};
use lower::lower_root;
pub use messages::run_tool_calls;
pub use prompts::prompt_messages;

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
    export(registry, target)
}

/// [`tools`] as the caller of `runner` may see them: a tool a call middleware layer
/// hides from that caller is left out (see [`crate::layer`]), and so is, for a
/// caller with a verified [`Identity`](crate::identity::Identity), a tool or act
/// whose scopes it lacks. Without layers or identity this is [`tools`] of the
/// runner's registry, kept; with them the export is made per call.
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
pub fn tools_for(runner: &crate::exec::runner::Runner, target: Target) -> Result<Value, ToolError> {
    match visible_definitions(runner) {
        None => tools(runner.registry(), target),
        Some(definitions) => lower_all(definitions, target),
    }
}

/// The definitions the caller of `runner` may see, as that caller sees them; `None`
/// when the runner has neither layers nor an identity (it sees the whole registry).
fn visible_definitions(runner: &crate::exec::runner::Runner) -> Option<Vec<ToolDefinition>> {
    let sight = crate::remote::Sight::of_runner(runner);
    if !sight.judges() {
        return None;
    }
    Some(
        runner
            .registry()
            .definitions()
            .iter()
            .filter_map(|def| sight.view(def).map(std::borrow::Cow::into_owned))
            .collect(),
    )
}

/// The tools that best match `query` among those the caller of `runner` may see,
/// best first, at most `limit`: [`Registry::search`] less what [`tools_for`] leaves
/// out (a tool a layer hides from that caller; for a caller with a verified
/// [`Identity`](crate::identity::Identity), a tool it lacks the scopes for), each
/// hit's definition as that caller sees it (a service's acts it may not run left
/// out). Hidden tools do not count against `limit`.
///
/// With thousands of tools, give a model this search (as a tool of its own) instead
/// of every definition, and [`tool`] the hits it asks for into its next request.
///
/// ```rust,standalone_crate
/// use toolfunc::llm::{search_for, tool, Target};
/// use toolfunc::{layer, CallOptions, Registry, ToolFunc};
///
/// let registry = Registry::new();
/// for (name, description) in [
///     ("invoice_get", "Fetches an invoice by number."),
///     ("invoice_void", "Voids an invoice; finance staff only."),
///     ("customer_get", "Fetches a customer."),
/// ] {
///     let tool = ToolFunc::builder(name)
///         .description(description)
///         .handler_sync(|_, _| Ok(serde_json::Value::Null))
///         .build()
///         .unwrap();
///     registry.register(tool).unwrap();
/// }
/// let registry = registry.layer(layer::visibility(|tool, viewer| {
///     tool.name != "invoice_void" || viewer.caller() == Some("finance")
/// }));
/// let guest = registry.with(CallOptions::new().caller("guest"));
/// let hits = search_for(&guest, "invoice", 10);
/// assert_eq!(hits.len(), 1);
/// assert_eq!(hits[0].name(), "invoice_get");
/// let finance = registry.with(CallOptions::new().caller("finance"));
/// assert_eq!(search_for(&finance, "void an invoice", 10)[0].name(), "invoice_void");
/// // The hits, in a provider's dialect, for the model's next request.
/// let exported = tool(hits[0].definition(), Target::Anthropic).unwrap();
/// assert_eq!(exported["name"], "invoice_get");
/// ```
pub fn search_for(
    runner: &crate::exec::runner::Runner,
    query: &str,
    limit: usize,
) -> Vec<SearchHit> {
    let sight = crate::remote::Sight::of_runner(runner);
    runner
        .registry()
        .search_by(query, limit, |found| {
            sight.view(found.definition()).map(|def| def.advertised())
        })
        .into_iter()
        .map(|ranked| SearchHit::new(ranked.item, ranked.score, ranked.exact))
        .collect()
}

/// The key an export is kept under in its registry.
#[derive(PartialEq)]
struct Export {
    target: Target,
}

/// [`tools`]: every tool's functions lowered for `target`, made once per registry
/// generation and kept in the registry.
pub(crate) fn export(registry: &Registry, target: Target) -> Result<Value, ToolError> {
    registry.derived(Export { target }, || {
        lower_all(registry.definitions(), target)
    })
}

/// Lowers `definitions` for `target` (see [`export`]): a service as one function
/// per method.
fn lower_all(definitions: Vec<ToolDefinition>, target: Target) -> Result<Value, ToolError> {
    let mut out = Vec::new();
    for definition in definitions {
        let functions = if definition.acts.is_empty() {
            vec![definition]
        } else {
            method_functions(&definition)
        };
        for function in &functions {
            out.push(tool(function, target)?);
        }
    }
    Ok(Value::Array(out))
}

/// The functions a service is offered as: one per method, named
/// `{service}_{method}` (`users_get`, `greeter_hello`), with the method's own
/// parameters, result, description (the service's when the method has none) and
/// hints.
pub fn method_functions(service: &ToolDefinition) -> Vec<ToolDefinition> {
    service
        .acts
        .iter()
        .map(|act| act.as_function(service))
        .collect()
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
    // A schema made at its first read is checked here, as a call checks it.
    crate::schema::check_params_root(&definition.params)
        .map_err(|message| export_error(name, "", &message))?;
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
        Target::Mcp => mcp_tool(definition, params, McpListing::Portable)?,
    })
}

/// Which schemas an MCP tool entry lists, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum McpListing {
    /// For a client of any revision (an export made ahead of time): schemas lowered
    /// for MCP, an output schema only where the result is an object.
    Portable,
    /// What this server's `tools/list` sends: schemas as the tools wrote them, and
    /// every output schema (the SDK drops those that do not describe an object for
    /// clients older than 2026-07-28, which take only objects).
    #[cfg_attr(
        not(feature = "mcp"),
        expect(dead_code, reason = "listed by the MCP server only")
    )]
    Served,
}

/// The `_meta` key of a tool's task support (`"optional"` or `"required"`).
pub(crate) const TASK_SUPPORT_KEY: &str = "io.github.toolfunc/taskSupport";

/// The one writer of an MCP tool entry (`tools/list`), from its definition and its
/// input schema as `listing` wants it.
pub(crate) fn mcp_tool(
    definition: &ToolDefinition,
    input: Value,
    listing: McpListing,
) -> Result<Value, ToolError> {
    let mut tool = Map::new();
    tool.insert("name".into(), json!(definition.name));
    if let Some(title) = &definition.title {
        tool.insert("title".into(), json!(title));
    }
    if let Some(description) = &definition.description {
        tool.insert("description".into(), json!(description));
    }
    tool.insert("inputSchema".into(), input);
    // An output schema says what `structuredContent` holds. A streaming tool's result
    // is the array of its items, which its schema does not describe; a `Content`
    // result's blocks are the content itself, and its structured value's schema
    // (an MCP server's output schema, mounted) is the output schema.
    let result = match &definition.result {
        Some(result) if crate::content::is_content_schema(Some(result)) => result
            .pointer("/properties/structuredContent")
            .filter(|structured| structured.get("type").and_then(Value::as_str) == Some("object")),
        other => other.as_ref(),
    };
    if let Some(result @ Value::Object(_)) = result
        && !definition.stream
    {
        match listing {
            McpListing::Served => {
                tool.insert("outputSchema".into(), result.clone());
            }
            McpListing::Portable
                if result.get("type").and_then(Value::as_str) == Some("object") =>
            {
                tool.insert(
                    "outputSchema".into(),
                    lower_root(&definition.name, result, Target::Mcp)?,
                );
            }
            McpListing::Portable => {}
        }
    }
    if let Some(annotations) = mcp_annotations(definition) {
        tool.insert("annotations".into(), annotations);
    }
    if definition.background {
        let support = if definition.background_only {
            "required"
        } else {
            "optional"
        };
        tool.insert("_meta".into(), json!({ TASK_SUPPORT_KEY: support }));
    }
    Ok(Value::Object(tool))
}

/// Whether `name` is an MCP tool name: 1 to 128 of `[A-Za-z0-9_.-]`.
#[cfg_attr(
    not(feature = "mcp"),
    expect(dead_code, reason = "read by the MCP server only")
)]
pub(crate) fn mcp_name(name: &str) -> bool {
    Target::Mcp.valid_name(name)
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
