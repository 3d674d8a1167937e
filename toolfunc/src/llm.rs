//! LLM function calling: a registry's tools in each provider's dialect
//! ([`tools`]), and a provider's tool-call message executed into the message that
//! goes back ([`execute`]).
//!
//! Each export is lowered from the tool's JSON Schema to what the target accepts:
//! local `$ref`s are inlined (recursive types keep their `$defs` where the target can
//! say recursion, and are an error where it cannot), strict targets get
//! `additionalProperties: false` everywhere, OpenAI strict makes every property
//! required and the optional ones nullable, Gemini gets its OpenAPI subset. A schema a
//! target cannot express is an error naming the tool and the JSON path, never an
//! export the provider would refuse.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::{ActDefinition, Registry, ToolCall, ToolDefinition, ToolError, ToolRef, ToolResult};

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

/// [`tools`], or with `served` what a server offers remote callers: no `api = false`
/// tool, and a tool the target cannot express left out with a warning (one bad tool
/// does not take the whole catalog down).
pub(crate) fn export(
    registry: &Registry,
    target: Target,
    served: bool,
) -> Result<Value, ToolError> {
    let key = target as u8 | if served { 0x80 } else { 0 };
    registry.derived(key, || {
        let mut out = Vec::new();
        for definition in registry.definitions() {
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
    })
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

/// Lowers a root schema (parameters or result) for `target`.
fn lower_root(tool: &str, schema: &Value, target: Target) -> Result<Value, ToolError> {
    let mut lowering = Lowering {
        tool,
        root: schema,
        target,
        stack: Vec::new(),
        recursive: BTreeSet::new(),
    };
    lowering.stack.push(ROOT.to_owned());
    let mut lowered = lowering.node(schema, "")?;
    lowering.stack.pop();
    if let Value::Object(map) = &mut lowered {
        map.remove("title");
        map.remove("$schema");
        if target != Target::Mcp {
            map.remove("description");
        }
        if map.get("type").and_then(Value::as_str) != Some("object") {
            return Err(export_error(tool, "", "the root is not an object schema"));
        }
    }
    // Recursive types keep their definitions, lowered like the rest.
    if !lowering.recursive.is_empty() {
        let mut defs = Map::new();
        let mut done = BTreeSet::new();
        while let Some(name) = lowering
            .recursive
            .iter()
            .find(|n| !done.contains(*n))
            .cloned()
        {
            done.insert(name.clone());
            let target_schema = lowering
                .definition(&name)
                .cloned()
                .unwrap_or(Value::Bool(true));
            lowering.stack.push(name.clone());
            let lowered_def = lowering.node(&target_schema, &format!("/$defs/{name}"))?;
            lowering.stack.pop();
            defs.insert(name, lowered_def);
        }
        if let Value::Object(map) = &mut lowered {
            map.insert("$defs".into(), Value::Object(defs));
        }
    }
    Ok(lowered)
}

struct Lowering<'a> {
    tool: &'a str,
    root: &'a Value,
    target: Target,
    /// Definitions being inlined (to spot recursion).
    stack: Vec<String>,
    /// Definitions referred to recursively, kept under `$defs`.
    recursive: BTreeSet<String>,
}

/// The name under `$defs` of a root schema that refers to itself.
const ROOT: &str = "Root";

/// Keys the Gemini `Schema` proto knows; any other key is a hard error there.
const GEMINI_KEYS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "propertyOrdering",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
];

/// Formats OpenAI strict mode accepts.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Formats Anthropic strict mode accepts.
const ANTHROPIC_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "email",
    "uri",
    "uuid",
    "ipv4",
    "ipv6",
];

impl Lowering<'_> {
    fn error(&self, path: &str, message: &str) -> ToolError {
        export_error(self.tool, path, message)
    }

    fn definition(&self, name: &str) -> Option<&Value> {
        if name == ROOT {
            return Some(self.root);
        }
        self.root
            .get("$defs")
            .or_else(|| self.root.get("definitions"))
            .and_then(|defs| defs.get(name))
    }

    fn node(&mut self, schema: &Value, path: &str) -> Result<Value, ToolError> {
        let Value::Object(map) = schema else {
            return Ok(match schema {
                // `true` accepts anything: an empty schema says the same everywhere.
                Value::Bool(true) => json!({}),
                other => other.clone(),
            });
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(map, reference, path);
        }
        let mut out = Map::new();
        let mut moved = Vec::new();
        for (key, value) in map {
            match key.as_str() {
                // Dropped: document-level keys, and defaults/examples where a target
                // refuses or ignores them.
                "$schema" | "$defs" | "definitions" | "title" => {}
                "default" | "examples" if self.target.strict() || self.target == Target::Gemini => {
                }
                // Strict targets and Gemini take `anyOf` only.
                "oneOf" if self.target.strict() || self.target == Target::Gemini => {
                    out.insert("anyOf".into(), self.list(value, &format!("{path}/oneOf"))?);
                }
                "format" => {
                    let format = value.as_str().unwrap_or_default();
                    let keep = match self.target {
                        Target::OpenAiStrict => OPENAI_FORMATS.contains(&format),
                        Target::AnthropicStrict => ANTHROPIC_FORMATS.contains(&format),
                        Target::Gemini => {
                            matches!(format, "int32" | "int64" | "float" | "double" | "date-time")
                        }
                        _ => true,
                    };
                    if keep {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
                | "minLength" | "maxLength" | "pattern"
                    if self.target == Target::AnthropicStrict =>
                {
                    moved.push(format!("{key}: {value}"));
                }
                "minItems" | "maxItems" if self.target == Target::AnthropicStrict => {
                    if key == "minItems" && value.as_u64().is_some_and(|n| n <= 1) {
                        out.insert(key.clone(), value.clone());
                    } else {
                        moved.push(format!("{key}: {value}"));
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
                    if self.target == Target::Gemini => {}
                _ => {
                    out.insert(key.clone(), self.node_value(key, value, path)?);
                }
            }
        }
        if !moved.is_empty() {
            let note = format!("({})", moved.join(", "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(text) => format!("{text} {note}"),
                None => note,
            };
            out.insert("description".into(), json!(description));
        }
        self.shape_object(&mut out, path)?;
        self.nullable(&mut out, path)?;
        if self.target == Target::Gemini {
            self.gemini(&mut out, path)?;
        }
        Ok(Value::Object(out))
    }

    /// Inlines a local reference, merging what sits beside it; a recursive one stays a
    /// reference (into `$defs`) where the target can say recursion.
    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &str,
        path: &str,
    ) -> Result<Value, ToolError> {
        // `#` is the root itself (a type that contains itself directly).
        let name = if reference == "#" {
            ROOT.to_owned()
        } else {
            reference
                .strip_prefix("#/$defs/")
                .or_else(|| reference.strip_prefix("#/definitions/"))
                .ok_or_else(|| {
                    self.error(path, &format!("the reference {reference} is not local"))
                })?
                .to_owned()
        };
        if self.stack.contains(&name) {
            if !self.target.recursion() {
                return Err(self.error(
                    path,
                    &format!(
                        "`{name}` is recursive, which {:?} cannot express",
                        self.target
                    ),
                ));
            }
            self.recursive.insert(name.clone());
            let mut reference = Map::new();
            reference.insert("$ref".into(), json!(format!("#/$defs/{name}")));
            return Ok(Value::Object(reference));
        }
        let target = self.definition(&name).cloned().ok_or_else(|| {
            self.error(path, &format!("the reference {reference} points nowhere"))
        })?;
        self.stack.push(name);
        let mut inlined = self.node(&target, path)?;
        self.stack.pop();
        if let Value::Object(inlined_map) = &mut inlined {
            for (key, value) in map {
                if key != "$ref" && key != "$defs" && key != "definitions" {
                    inlined_map.insert(key.clone(), self.node_value(key, value, path)?);
                }
            }
        }
        Ok(inlined)
    }

    /// Lowers the value under `key` (sub-schemas are lowered, other values copied).
    fn node_value(&mut self, key: &str, value: &Value, path: &str) -> Result<Value, ToolError> {
        let here = format!("{path}/{key}");
        match key {
            "properties" => {
                let Value::Object(properties) = value else {
                    return Ok(value.clone());
                };
                let mut out = Map::new();
                for (name, schema) in properties {
                    out.insert(name.clone(), self.node(schema, &format!("{here}/{name}"))?);
                }
                Ok(Value::Object(out))
            }
            "items" | "not" | "additionalProperties" if value.is_object() => {
                self.node(value, &here)
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => self.list(value, &here),
            _ => Ok(value.clone()),
        }
    }

    fn list(&mut self, value: &Value, path: &str) -> Result<Value, ToolError> {
        let Value::Array(items) = value else {
            return Ok(value.clone());
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| self.node(item, &format!("{path}/{i}")))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    }

    /// Objects: closed for strict targets (maps cannot be said there), every property
    /// required (optional ones nullable) for OpenAI strict.
    fn shape_object(&mut self, out: &mut Map<String, Value>, path: &str) -> Result<(), ToolError> {
        let is_object = out.get("type").is_some_and(|t| {
            t == "object"
                || t.as_array()
                    .is_some_and(|ts| ts.iter().any(|t| t == "object"))
        }) || out.contains_key("properties");
        if !is_object {
            return Ok(());
        }
        let map_values = out
            .get("additionalProperties")
            .is_some_and(|extra| extra.is_object() || extra == &Value::Bool(true));
        if map_values && (self.target.strict() || self.target == Target::Gemini) {
            return Err(self.error(
                path,
                &format!(
                    "a map (free-form keys) cannot be expressed for {:?}; use a list of entries",
                    self.target
                ),
            ));
        }
        if self.target.strict() {
            out.insert("additionalProperties".into(), json!(false));
            out.entry("properties").or_insert_with(|| json!({}));
        }
        if self.target == Target::OpenAiStrict {
            let required: BTreeSet<String> = out
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = out.get_mut("properties") {
                let names: Vec<String> = properties.keys().cloned().collect();
                for name in &names {
                    if !required.contains(name)
                        && let Some(Value::Object(schema)) = properties.get_mut(name)
                    {
                        make_nullable(schema);
                    }
                }
                out.insert("required".into(), json!(names));
            }
        }
        Ok(())
    }

    /// `type: [T, "null"]` as each target says it.
    fn nullable(&self, out: &mut Map<String, Value>, path: &str) -> Result<(), ToolError> {
        let Some(Value::Array(types)) = out.get("type") else {
            return Ok(());
        };
        let non_null: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let has_null = non_null.len() < types.len();
        match self.target {
            Target::Gemini => {
                if non_null.len() != 1 {
                    return Err(self.error(path, "Gemini takes a single type per schema"));
                }
                out.insert("type".into(), non_null[0].clone());
                if has_null {
                    out.insert("nullable".into(), json!(true));
                }
            }
            Target::AnthropicStrict if has_null => {
                let mut value_branch = out.clone();
                value_branch.insert(
                    "type".into(),
                    if non_null.len() == 1 {
                        non_null[0].clone()
                    } else {
                        Value::Array(non_null)
                    },
                );
                value_branch.remove("description");
                let description = out.get("description").cloned();
                out.clear();
                out.insert(
                    "anyOf".into(),
                    json!([Value::Object(value_branch), {"type": "null"}]),
                );
                if let Some(description) = description {
                    out.insert("description".into(), description);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Gemini's subset: `anyOf` with a null branch becomes `nullable`, `const` an
    /// `enum`, only string enums, and only the keys its proto knows.
    fn gemini(&self, out: &mut Map<String, Value>, path: &str) -> Result<(), ToolError> {
        if let Some(Value::Array(options)) = out.get("anyOf") {
            let non_null: Vec<&Value> = options
                .iter()
                .filter(|o| o.get("type") != Some(&json!("null")))
                .collect();
            if non_null.len() < options.len() && non_null.len() == 1 {
                let mut merged = non_null[0].as_object().cloned().unwrap_or_default();
                merged.insert("nullable".into(), json!(true));
                if let Some(description) = out.get("description") {
                    merged.insert("description".into(), description.clone());
                }
                *out = merged;
            }
        }
        if let Some(constant) = out.remove("const") {
            if !constant.is_string() {
                return Err(self.error(path, "Gemini only takes string constants"));
            }
            out.insert("enum".into(), json!([constant]));
        }
        if let Some(Value::Array(values)) = out.get("enum")
            && values.iter().any(|v| !v.is_string())
        {
            return Err(self.error(path, "Gemini only takes string enums"));
        }
        out.retain(|key, _| GEMINI_KEYS.contains(&key.as_str()));
        Ok(())
    }
}

/// Makes a property accept `null` too (OpenAI strict's way of saying optional).
fn make_nullable(schema: &mut Map<String, Value>) {
    match schema.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            schema.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
        }
        _ => {
            if let Some(Value::Array(options)) = schema.get_mut("anyOf") {
                if !options
                    .iter()
                    .any(|o| o.get("type") == Some(&json!("null")))
                {
                    options.push(json!({"type": "null"}));
                }
            } else {
                let inner = std::mem::take(schema);
                schema.insert(
                    "anyOf".into(),
                    json!([Value::Object(inner), {"type": "null"}]),
                );
            }
        }
    }
}

/// Runs the tool calls of a provider's assistant message and returns what goes back
/// to the provider: for OpenAI, an array of `role: "tool"` messages; for Anthropic, one
/// `user` message of `tool_result` blocks; for Gemini, a `user` content of
/// `functionResponse` parts.
///
/// Calls run concurrently, each isolated: a failing or unknown call becomes an error
/// result the model can read (code and message), never a failed batch. A message that
/// cannot be read (no calls, a call without an id or a name) is an `ARGUMENTS` error
/// with the JSON Pointer of the problem. For OpenAI strict, `null` sent for a
/// property the tool does not require counts as leaving it out.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::llm::{execute, Target};
/// use toolfunc::{tool, Registry};
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: f64, b: f64) -> f64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let message = json!({
///     "role": "assistant",
///     "tool_calls": [{"id": "call_1", "type": "function",
///                     "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]
/// });
/// let reply = execute(Registry::global(), Target::OpenAi, &message).await.unwrap();
/// assert_eq!(reply, json!([{"role": "tool", "tool_call_id": "call_1", "content": "3.0"}]));
/// # });
/// ```
pub async fn execute(
    registry: &Registry,
    target: Target,
    message: &Value,
) -> Result<Value, ToolError> {
    let calls = read_calls(target, message)?;
    let strict_nulls = target == Target::OpenAiStrict;
    let mut bad = Vec::new();
    let mut runnable = Vec::new();
    // Calls of `{service}_{method}` functions run the service with its `act`; their
    // results keep the name the model used.
    let mut renamed = Vec::new();
    for (index, call) in calls.into_iter().enumerate() {
        match call {
            Parsed::Call(mut call) => {
                if !registry.has(&call.name)
                    && let Some((service, act)) = method_of(registry, &call.name)
                {
                    let act = service.definition().acts[act].name.clone();
                    renamed.push((
                        index,
                        std::mem::replace(&mut call.name, service.name().into()),
                    ));
                    if let Value::Object(args) = &mut call.arguments {
                        args.insert("act".into(), Value::from(act));
                    }
                }
                if strict_nulls {
                    drop_optional_nulls(registry, &mut call);
                }
                runnable.push((index, call));
            }
            Parsed::Bad { id, name, error } => {
                bad.push((index, ToolResult::new(id, name, Err(error))));
            }
        }
    }
    let order: Vec<usize> = runnable.iter().map(|(i, _)| *i).collect();
    let ran = registry
        .execute_batch(runnable.into_iter().map(|(_, call)| call))
        .await;
    let mut results: Vec<(usize, ToolResult)> = order.into_iter().zip(ran).chain(bad).collect();
    results.sort_by_key(|(i, _)| *i);
    for (index, name) in renamed {
        if let Some((_, result)) = results.iter_mut().find(|(i, _)| *i == index) {
            *result = ToolResult::new(
                result.id(),
                name,
                result.output().cloned().map_err(Clone::clone),
            );
        }
    }
    let results = results.into_iter().map(|(_, r)| {
        let content = content_of(registry, &r);
        (r, content)
    });
    Ok(match target {
        Target::OpenAi | Target::OpenAiStrict => Value::Array(
            results
                .map(|(result, content)| {
                    let text = content.map_or_else(|| text_of(&result), |c| c.to_openai());
                    json!({
                        "role": "tool",
                        "tool_call_id": result.id(),
                        "content": text,
                    })
                })
                .collect(),
        ),
        Target::Anthropic | Target::AnthropicStrict => json!({
            "role": "user",
            "content": results.map(|(result, content)| {
                let content = content
                    .map_or_else(|| Value::String(text_of(&result)), |c| c.to_anthropic());
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": result.id(),
                    "content": content,
                });
                if !result.is_ok() {
                    block["is_error"] = json!(true);
                }
                block
            }).collect::<Vec<_>>(),
        }),
        Target::Gemini => json!({
            "role": "user",
            "parts": results.map(|(result, content)| {
                let response = match (result.output(), content) {
                    (Ok(_), Some(content)) => content.to_gemini(),
                    (Ok(value), None) => json!({"result": value}),
                    (Err(err), _) => json!({"error": {"code": err.code(), "message": err.to_string()}}),
                };
                let mut part = json!({"name": result.name(), "response": response});
                if !result.id().is_empty() {
                    part["id"] = json!(result.id());
                }
                json!({"functionResponse": part})
            }).collect::<Vec<_>>(),
        }),
        Target::Mcp => unreachable!("read_calls refuses MCP"),
    })
}

/// The result as content blocks, when its tool (or the service method it ran)
/// answers with [`Content`](crate::Content).
fn content_of(registry: &Registry, result: &ToolResult) -> Option<crate::Content> {
    let value = result.output().ok()?;
    let marked = match registry.get(result.name()) {
        Some(tool) => {
            let def = tool.definition();
            crate::content::is_content_schema(def.result.as_ref())
                || def
                    .acts
                    .iter()
                    .any(|act| crate::content::is_content_schema(act.result.as_ref()))
        }
        None => method_of(registry, result.name()).is_some_and(|(service, act)| {
            crate::content::is_content_schema(service.definition().acts[act].result.as_ref())
        }),
    };
    if !marked {
        return None;
    }
    crate::Content::from_value(value.clone()).ok()
}

/// What a model reads back: the output as text (a string as it is), or the error
/// with its code.
fn text_of(result: &ToolResult) -> String {
    match result.output() {
        Ok(Value::String(text)) => text.clone(),
        Ok(value) => value.to_string(),
        Err(err) => json!({"error": {"code": err.code(), "message": err.to_string()}}).to_string(),
    }
}

enum Parsed {
    Call(ToolCall),
    /// A call the model made but that cannot run (its arguments do not parse).
    Bad {
        id: String,
        name: String,
        error: ToolError,
    },
}

fn bad_message(path: &str, message: &str) -> ToolError {
    ToolError::arguments(path, message)
}

/// The non-empty string at `value[key]`; `path` (made only on error) says where
/// `value` is.
fn str_at<'a>(
    value: &'a Value,
    key: &str,
    path: impl FnOnce() -> String,
) -> Result<&'a str, ToolError> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            bad_message(
                &format!("{}/{key}", path()),
                &format!("expected a non-empty string `{key}`"),
            )
        })
}

fn read_calls(target: Target, message: &Value) -> Result<Vec<Parsed>, ToolError> {
    match target {
        Target::OpenAi | Target::OpenAiStrict => {
            let calls = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .ok_or_else(|| bad_message("/tool_calls", "expected an array of tool calls"))?;
            calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    let path = || format!("/tool_calls/{i}");
                    let id = str_at(call, "id", path)?.to_owned();
                    let function = call.get("function").ok_or_else(|| {
                        bad_message(&format!("{}/function", path()), "expected an object")
                    })?;
                    let name =
                        str_at(function, "name", || format!("{}/function", path()))?.to_owned();
                    let arguments = match function.get("arguments") {
                        None | Some(Value::Null) => Ok(Value::Null),
                        Some(Value::String(text)) if text.trim().is_empty() => Ok(Value::Null),
                        Some(Value::String(text)) => serde_json::from_str(text).map_err(|e| {
                            ToolError::arguments(
                                "",
                                format!("the arguments are not valid JSON: {e}"),
                            )
                        }),
                        // Some gateways send the object itself.
                        Some(object @ Value::Object(_)) => Ok(object.clone()),
                        Some(_) => Err(ToolError::arguments(
                            "",
                            "the arguments must be a JSON string",
                        )),
                    };
                    Ok(match arguments {
                        Ok(arguments) => Parsed::Call(ToolCall::new(id, name, arguments)),
                        Err(error) => Parsed::Bad { id, name, error },
                    })
                })
                .collect()
        }
        Target::Anthropic | Target::AnthropicStrict => {
            let blocks = message
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| bad_message("/content", "expected an array of content blocks"))?;
            let calls: Vec<Parsed> = blocks
                .iter()
                .enumerate()
                .filter(|(_, block)| block.get("type").and_then(Value::as_str) == Some("tool_use"))
                .map(|(i, block)| {
                    let path = || format!("/content/{i}");
                    let id = str_at(block, "id", path)?.to_owned();
                    let name = str_at(block, "name", path)?.to_owned();
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    Ok(Parsed::Call(ToolCall::new(id, name, input)))
                })
                .collect::<Result<_, ToolError>>()?;
            Ok(calls)
        }
        Target::Gemini => {
            let parts = message
                .get("parts")
                .and_then(Value::as_array)
                .ok_or_else(|| bad_message("/parts", "expected an array of parts"))?;
            parts
                .iter()
                .enumerate()
                .filter_map(|(i, part)| part.get("functionCall").map(|call| (i, call)))
                .map(|(i, call)| {
                    let name =
                        str_at(call, "name", || format!("/parts/{i}/functionCall"))?.to_owned();
                    let id = call
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let args = call.get("args").cloned().unwrap_or(Value::Null);
                    Ok(Parsed::Call(ToolCall::new(id, name, args)))
                })
                .collect()
        }
        Target::Mcp => Err(ToolError::failed(
            "MCP clients call tools through an MCP server, not a chat message",
        )),
    }
}

/// OpenAI strict sends every property, `null` for the ones it leaves out: drop those
/// the schema does not require (at every depth), so the tool sees what a non-strict
/// caller would send.
fn drop_optional_nulls(registry: &Registry, call: &mut ToolCall) {
    let Some(tool) = registry.get(&call.name) else {
        return;
    };
    let def = tool.definition();
    // A service call is checked against its method's parameters.
    let act = call.arguments.get("act").and_then(Value::as_str);
    let params = act
        .and_then(|act| def.acts.iter().find(|a| a.name == act))
        .map_or(&def.params, |a| &a.params);
    strip_nulls(params, params, &mut call.arguments, 0);
}

fn strip_nulls(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    // Deep enough for real arguments, bounded for recursive schemas.
    if depth > 32 {
        return;
    }
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .unwrap_or(schema),
        None => schema,
    };
    match value {
        Value::Object(object) => {
            let required: BTreeSet<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let properties = schema.get("properties").and_then(Value::as_object);
            object.retain(|name, v| !v.is_null() || required.contains(name.as_str()));
            for (name, v) in object.iter_mut() {
                if let Some(sub) = properties.and_then(|p| p.get(name)) {
                    strip_nulls(root, sub, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for item in items {
                    strip_nulls(root, sub, item, depth + 1);
                }
            }
        }
        _ => {}
    }
    // A nullable union (`anyOf: [{..}, {type: null}]`): look inside its branches.
    if let Some(Value::Array(options)) = schema.get("anyOf") {
        for option in options {
            if option.get("type") != Some(&json!("null")) {
                strip_nulls(root, option, value, depth + 1);
            }
        }
    }
}
