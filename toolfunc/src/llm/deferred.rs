//! Exports for a provider's own tool search: every tool marked for deferred loading
//! (save those kept loaded), the provider's search tool, and for OpenAI namespaces.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use super::{Target, export_error, method_functions, tool, visible_definitions};
use crate::error::ToolError;
use crate::exec::runner::Runner;
use crate::registry::Registry;
use crate::tool::ToolDefinition;

/// How [`tools_deferred`] defers a catalogue: which tools stay loaded, which search
/// the model gets, and (for OpenAI) how functions group into namespaces.
///
/// The default defers every tool, gives Anthropic the regex search and OpenAI no
/// namespaces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deferral {
    keep: BTreeSet<String>,
    search: SearchKind,
    namespaces: Namespaces,
}

impl Deferral {
    /// Every tool deferred, the regex search, no namespaces.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `name` loaded (sent whole, not deferred): a tool, a service (all its
    /// methods) or one method's function (`invoices_get`). A name that matches
    /// nothing the export holds is ignored.
    #[must_use]
    pub fn keep(mut self, name: impl Into<String>) -> Self {
        self.keep.insert(name.into());
        self
    }

    /// Which search tool Anthropic gets (OpenAI has one, `tool_search`).
    #[must_use]
    pub fn search(mut self, search: SearchKind) -> Self {
        self.search = search;
        self
    }

    /// How OpenAI functions group into namespaces (Anthropic has none: each of its
    /// tools is deferred on its own).
    #[must_use]
    pub fn namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = namespaces;
        self
    }

    fn kept(&self, function: &str, tool: &str) -> bool {
        self.keep.contains(function) || self.keep.contains(tool)
    }
}

/// The search tool Anthropic's model is given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SearchKind {
    /// `tool_search_tool_regex_20251119`: the model writes a regular expression.
    #[default]
    Regex,
    /// `tool_search_tool_bm25_20251119`: the model writes a natural-language query.
    Bm25,
}

impl SearchKind {
    fn anthropic_tool(self) -> Value {
        match self {
            Self::Regex => json!({
                "type": "tool_search_tool_regex_20251119",
                "name": "tool_search_tool_regex",
            }),
            Self::Bm25 => json!({
                "type": "tool_search_tool_bm25_20251119",
                "name": "tool_search_tool_bm25",
            }),
        }
    }
}

/// How OpenAI functions group into namespaces, whose name and description the model
/// sees before it searches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Namespaces {
    /// Every function at the top level, deferred on its own.
    #[default]
    None,
    /// A namespace per tag, named after it: a tool goes in the namespace of its
    /// first tag; an untagged tool stays at the top level.
    Tags,
    /// A namespace per service, named after it and described by its description:
    /// its methods' functions go in it; a plain tool stays at the top level.
    Services,
}

/// The tools of `registry` for a provider's own tool search, as the JSON array to
/// put in a request to `target`: every tool marked `"defer_loading": true` except
/// those `deferral` keeps loaded, and the provider's search tool.
///
/// * Anthropic (`Anthropic`, `AnthropicStrict`): the search tool of
///   [`Deferral::search`] first, then each tool as [`tools`](super::tools) exports
///   it, with `defer_loading`.
/// * OpenAI (`OpenAi`, `OpenAiStrict`), in the Responses API's shape: flat function
///   tools (`{type: "function", name, description, parameters}`) with
///   `defer_loading`, grouped into `{type: "namespace", name, description, tools}`
///   entries by [`Deferral::namespaces`], then `{type: "tool_search"}`.
///
/// A deferred tool keeps its name, so a call the model makes once its search found
/// it runs through [`run_tool_calls`](super::run_tool_calls) like any other (for
/// OpenAI, pass the Responses API `output` items or the whole response).
///
/// Unlike [`tools`](super::tools), the export is made on each call, not kept.
///
/// Gemini and MCP have no such search: asking for them is a
/// [`ToolError::Definition`] error, and so is a namespace whose name OpenAI refuses
/// or that a top-level function already has.
///
/// ```rust,standalone_crate
/// use toolfunc::llm::{tools_deferred, Deferral, Namespaces, Target};
/// use toolfunc::{Registry, ToolFunc};
///
/// let registry = Registry::new();
/// for (name, tag) in [("invoice_get", "billing"), ("invoice_void", "billing"), ("help", "")] {
///     let mut builder = ToolFunc::builder(name).description("Does a thing.");
///     if !tag.is_empty() {
///         builder = builder.tag(tag);
///     }
///     let tool = builder.handler_sync(|_, _| Ok(serde_json::Value::Null)).build().unwrap();
///     registry.register(tool).unwrap();
/// }
/// let deferral = Deferral::new().keep("help").namespaces(Namespaces::Tags);
///
/// let anthropic = tools_deferred(&registry, Target::Anthropic, &deferral).unwrap();
/// assert_eq!(anthropic[0]["type"], "tool_search_tool_regex_20251119");
/// assert_eq!(anthropic[2]["name"], "invoice_get");
/// assert_eq!(anthropic[2]["defer_loading"], true);
///
/// let openai = tools_deferred(&registry, Target::OpenAi, &deferral).unwrap();
/// assert_eq!(openai[0]["name"], "help");
/// assert!(openai[0].get("defer_loading").is_none());
/// assert_eq!(openai[1]["type"], "namespace");
/// assert_eq!(openai[1]["name"], "billing");
/// assert_eq!(openai[1]["tools"][1]["name"], "invoice_void");
/// assert_eq!(openai[2], serde_json::json!({"type": "tool_search"}));
/// ```
pub fn tools_deferred(
    registry: &Registry,
    target: Target,
    deferral: &Deferral,
) -> Result<Value, ToolError> {
    deferred(registry.definitions(), target, deferral)
}

/// [`tools_deferred`] as the caller of `runner` may see them, as
/// [`tools_for`](super::tools_for) leaves tools out: a tool a layer hides from that
/// caller, and for a caller with a verified identity, one whose scopes it lacks.
pub fn tools_deferred_for(
    runner: &Runner,
    target: Target,
    deferral: &Deferral,
) -> Result<Value, ToolError> {
    let definitions =
        visible_definitions(runner).unwrap_or_else(|| runner.registry().definitions());
    deferred(definitions, target, deferral)
}

fn deferred(
    definitions: Vec<ToolDefinition>,
    target: Target,
    deferral: &Deferral,
) -> Result<Value, ToolError> {
    let openai = match target {
        Target::OpenAi | Target::OpenAiStrict => true,
        Target::Anthropic | Target::AnthropicStrict => false,
        Target::Gemini | Target::Mcp => {
            return Err(ToolError::Definition {
                name: String::new(),
                message: format!("{target:?} has no tool search to defer tools to"),
            });
        }
    };
    let mut top = Vec::new();
    if !openai {
        top.push(deferral.search.anthropic_tool());
    }
    // Namespaces in the order their first function comes, each with its functions.
    let mut groups: Vec<(String, String, Vec<Value>)> = Vec::new();
    let mut group_at: HashMap<String, usize> = HashMap::new();
    for definition in definitions {
        let functions = if definition.acts.is_empty() {
            vec![definition.clone()]
        } else {
            method_functions(&definition)
        };
        let group = if openai {
            namespace_of(&definition, deferral.namespaces)
        } else {
            None
        };
        for function in &functions {
            let exported = tool(function, target)?;
            let mut entry = if openai {
                flat_function(exported)
            } else {
                exported
            };
            if !deferral.kept(&function.name, &definition.name)
                && let Value::Object(map) = &mut entry
            {
                map.insert("defer_loading".into(), Value::Bool(true));
            }
            match &group {
                Some((name, description)) => {
                    let at = *group_at.entry(name.clone()).or_insert_with(|| {
                        groups.push((name.clone(), description.clone(), Vec::new()));
                        // Holds the namespace's place among the top-level entries.
                        top.push(Value::Null);
                        groups.len() - 1
                    });
                    groups[at].2.push(entry);
                }
                None => top.push(entry),
            }
        }
    }
    if !openai {
        return Ok(Value::Array(top));
    }
    let top_names: BTreeSet<&str> = top
        .iter()
        .filter_map(|entry| entry.get("name").and_then(Value::as_str))
        .collect();
    let mut namespaces = Vec::with_capacity(groups.len());
    for (name, description, tools) in &groups {
        if !target.valid_name(name) {
            return Err(export_error(
                name,
                "",
                "the namespace name is not accepted by OpenAI; rename the tag or service",
            ));
        }
        if top_names.contains(name.as_str()) {
            return Err(export_error(
                name,
                "",
                "a function at the top level has the namespace's name",
            ));
        }
        namespaces.push(json!({
            "type": "namespace",
            "name": name,
            "description": description,
            "tools": tools,
        }));
    }
    // Each namespace takes the place its first function held.
    let mut namespaces = namespaces.into_iter();
    let mut out: Vec<Value> = top
        .into_iter()
        .filter_map(|entry| {
            if entry.is_null() {
                namespaces.next()
            } else {
                Some(entry)
            }
        })
        .collect();
    out.push(json!({"type": "tool_search"}));
    Ok(Value::Array(out))
}

/// The namespace (name, description) a definition's functions go in under `rule`.
fn namespace_of(definition: &ToolDefinition, rule: Namespaces) -> Option<(String, String)> {
    match rule {
        Namespaces::None => None,
        Namespaces::Tags => definition
            .tags
            .first()
            .map(|tag| (tag.clone(), format!("Tools tagged {tag}."))),
        Namespaces::Services => (!definition.acts.is_empty()).then(|| {
            let description = definition
                .description
                .clone()
                .filter(|d| !d.trim().is_empty())
                .unwrap_or_else(|| format!("The {} service.", definition.name));
            (definition.name.clone(), description)
        }),
    }
}

/// A Chat Completions function tool (`{type, function: {..}}`) in the Responses
/// API's flat shape (`{type, name, description, parameters, strict}`).
fn flat_function(exported: Value) -> Value {
    let Value::Object(mut outer) = exported else {
        return exported;
    };
    let mut flat = Map::new();
    flat.insert("type".into(), json!("function"));
    if let Some(Value::Object(function)) = outer.remove("function") {
        flat.extend(function);
    }
    Value::Object(flat)
}
