//! Prompts: functions with typed arguments that return messages for a model, listed
//! and got by name (MCP `prompts/list`, `prompts/get`), beside tools.
//!
//! A prompt is declared with [`#[prompt]`](macro@crate::prompt) on a function (its
//! doc comment the description, its parameters the arguments) or built at run time with
//! [`PromptFunc::builder`]. It lives in the same [`Registry`](crate::Registry) as the
//! tools, as a kind of its own: [`Registry::prompt`](crate::Registry::prompt) gets
//! it in process, and MCP and HTTP list it and get it through the same rules
//! (visibility, scopes, call middleware) as a tool.
//!
//! A prompt answers with a [`PromptResult`]: its messages and an optional
//! description. Its function may return one, a list of [`PromptMessage`]s, one
//! message, or a plain string (one user message of that text).
//!
//! ```
//! use toolfunc::prompt::{PromptFunc, PromptMessage};
//! use toolfunc::Registry;
//!
//! let review = PromptFunc::builder("review")
//!     .description("Ask for a code review.")
//!     .argument("code", "The code to review.", true)
//!     .handler_sync(|_ctx, args| {
//!         let code = args["code"].as_str().unwrap_or_default();
//!         Ok(vec![PromptMessage::user(format!("Please review:\n{code}"))])
//!     })
//!     .build()
//!     .unwrap();
//! let registry = Registry::new();
//! registry.register_prompt(review).unwrap();
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let args = serde_json::json!({"code": "fn main() {}"});
//! let got = registry.prompt("review", args).await.unwrap();
//! assert_eq!(got.messages[0].content.text(), Some("Please review:\nfn main() {}"));
//! # });
//! ```

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::complete::{Completer, CompleterSpec, Completers};
use crate::content::Block;
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::tool::kind_builder::{KindBuilder, kind_builder_methods};
use crate::tool::{Kind, ToolFunc, ToolRef, ToolSpec};

/// The serialisable metadata of a prompt: what `prompts/list` and discovery show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptDefinition {
    /// The unique name the prompt is got by.
    pub name: String,
    /// A short human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Free-form grouping labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The OAuth scopes a caller from outside needs to see and get it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Whether remote callers are offered it (`false`: in process only).
    #[serde(
        rename = "isApi",
        default = "crate::tool::definition::yes",
        skip_serializing_if = "crate::tool::definition::is_true"
    )]
    pub api: bool,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A short human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

/// Who a message of a prompt speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a prompt: a role and one content block (text, an image, audio, a
/// resource link or an embedded resource).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Block,
}

impl PromptMessage {
    /// A message of `role` with `content`.
    pub fn new(role: Role, content: impl Into<Block>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }

    /// A user message (text, or any block).
    pub fn user(content: impl Into<Block>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message (text, or any block).
    pub fn assistant(content: impl Into<Block>) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// What a prompt answers: its messages, and a description of this rendering.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct PromptResult {
    /// A description of the prompt as rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// These messages.
    pub fn new(messages: impl IntoIterator<Item = PromptMessage>) -> Self {
        Self {
            description: None,
            messages: messages.into_iter().collect(),
        }
    }

    /// With a description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Reads what a prompt's function returned: a `PromptResult`, a list of
    /// messages, one message, or a string (one user message of that text).
    /// `OUTPUT` when the value is none of these.
    ///
    /// ```
    /// use toolfunc::prompt::{PromptResult, Role};
    ///
    /// let got = PromptResult::from_value(serde_json::json!("Say hello.")).unwrap();
    /// assert_eq!(got.messages[0].role, Role::User);
    /// ```
    pub fn from_value(value: Value) -> Result<Self, ToolError> {
        let read = match value {
            Value::String(text) => Ok(Self::new([PromptMessage::user(text)])),
            Value::Array(_) => serde_json::from_value::<Vec<PromptMessage>>(value).map(Self::new),
            Value::Object(ref object) if object.contains_key("role") => {
                serde_json::from_value::<PromptMessage>(value).map(|m| Self::new([m]))
            }
            other => serde_json::from_value::<Self>(other),
        };
        read.map_err(|err| ToolError::Output {
            path: None,
            message: format!("a prompt answered with something that is not messages: {err}"),
        })
    }
}

/// A registered prompt: its definition, the function that renders it, and the
/// completers of its arguments. Cloning it shares them.
#[derive(Clone)]
pub struct PromptFunc {
    pub(crate) definition: Arc<PromptDefinition>,
    pub(crate) tool: ToolRef,
    pub(crate) completers: Completers,
}

impl fmt::Debug for PromptFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptFunc")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

impl PromptFunc {
    /// Starts a prompt made at run time.
    pub fn builder(name: impl Into<String>) -> PromptBuilder {
        PromptBuilder {
            parts: KindBuilder::new(name.into()),
            arguments: Vec::new(),
        }
    }

    /// A prompt rendered by `tool`: its name, description, tags, scopes and
    /// parameters (the prompt's arguments) are the tool's; its result is read as
    /// [`PromptResult::from_value`] reads it. How `#[prompt]` is built, and the way
    /// to give a prompt typed arguments at run time
    /// ([`ToolBuilder::typed`](crate::ToolBuilder::typed)).
    pub fn from_tool(tool: ToolFunc) -> Result<Self, ToolError> {
        Self::with_completers(tool, Completers::default())
    }

    pub(crate) fn with_completers(
        mut tool: ToolFunc,
        completers: Completers,
    ) -> Result<Self, ToolError> {
        let def = tool.definition();
        let arguments = arguments_of(&def.params, tool.positional());
        for name in completers.names() {
            if !arguments.iter().any(|a| a.name == name) {
                return Err(ToolError::Definition {
                    name: def.name.clone(),
                    message: format!("a completer is given for `{name}`, which is not an argument"),
                });
            }
        }
        let definition = PromptDefinition {
            name: def.name.clone(),
            title: def.title.clone(),
            description: def.description.clone(),
            arguments,
            tags: def.tags.clone(),
            scopes: def.scopes.clone(),
            api: def.api,
        };
        tool.kind = Kind::Prompt;
        Ok(Self {
            definition: Arc::new(definition),
            tool: ToolRef::shared(tool),
            completers,
        })
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The prompt's definition.
    pub fn definition(&self) -> &PromptDefinition {
        &self.definition
    }

    /// The function that renders it, as a tool (what call middleware sees).
    pub(crate) fn tool(&self) -> &ToolRef {
        &self.tool
    }

    /// The completer of `argument`, when it has one.
    pub fn completer(&self, argument: &str) -> Option<&Completer> {
        self.completers.get(argument)
    }

    /// The arguments as the function takes them: MCP sends every argument as a
    /// string, so one whose schema is not a string is read as JSON when it can be
    /// (`"3"` for a number), and left as it is otherwise (the check then says why).
    pub(crate) fn arguments(&self, args: Value) -> Value {
        coerce(&self.tool.definition().params, args)
    }
}

/// The arguments of a prompt, from its parameters schema: in declaration order,
/// each with its description and whether it is required.
fn arguments_of(params: &Value, order: &[String]) -> Vec<PromptArgument> {
    let Some(properties) = params.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required = |name: &str| {
        params
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|n| n.as_str() == Some(name)))
    };
    let mut names: Vec<&String> = order
        .iter()
        .filter(|n| properties.contains_key(*n))
        .collect();
    for name in properties.keys() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let schema = &properties[name];
            let text = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_owned);
            PromptArgument {
                name: name.clone(),
                title: text("title"),
                description: text("description"),
                required: required(name),
            }
        })
        .collect()
}

/// Reads as JSON each string argument whose schema does not take a string.
pub(crate) fn coerce(params: &Value, args: Value) -> Value {
    let Value::Object(mut args) = args else {
        return args;
    };
    let Some(properties) = params.get("properties").and_then(Value::as_object) else {
        return Value::Object(args);
    };
    for (name, value) in &mut args {
        let Value::String(text) = value else { continue };
        let Some(schema) = properties.get(name) else {
            continue;
        };
        if takes_string(schema) {
            continue;
        }
        if let Ok(read) = serde_json::from_str::<Value>(text) {
            *value = read;
        }
    }
    Value::Object(args)
}

/// Whether a schema may take a string as it is (no `type`, or one that names
/// `string`).
fn takes_string(schema: &Value) -> bool {
    match schema.get("type") {
        None => schema.get("$ref").is_none() && schema.get("enum").is_none(),
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        Some(_) => false,
    }
}

/// Builds a [`PromptFunc`] at run time. Start with [`PromptFunc::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct PromptBuilder {
    parts: KindBuilder,
    arguments: Vec<PromptArgument>,
}

impl fmt::Debug for PromptBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptBuilder")
            .field("name", &self.parts.name)
            .finish_non_exhaustive()
    }
}

impl PromptBuilder {
    kind_builder_methods! {
        for: "What the prompt is for.",
        caller: "The OAuth scopes a caller from outside needs to see and get it.",
        complete: "Completes `argument` with `completer`.",
        handler: "Renders the prompt with an async function of the arguments object; it \
                  returns what [`PromptResult::from_value`] reads (a string, messages, a \
                  `PromptResult`).",
        handler_sync: "Renders the prompt with a sync function of the arguments object.",
    }

    /// Adds a string argument.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.arguments.push(PromptArgument {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            required,
        });
        self
    }

    /// Builds the prompt. `DEFINITION` when it has no handler, no name, or a
    /// completer for an argument it does not have.
    pub fn build(self) -> Result<PromptFunc, ToolError> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for argument in &self.arguments {
            let mut schema = json!({"type": "string"});
            if let Some(description) = &argument.description {
                schema["description"] = json!(description);
            }
            if let Some(title) = &argument.title {
                schema["title"] = json!(title);
            }
            properties.insert(argument.name.clone(), schema);
            if argument.required {
                required.push(json!(argument.name));
            }
        }
        let params = json!({
            "type": "object",
            "properties": properties,
            "required": required,
        });
        let order = self.arguments.iter().map(|a| a.name.clone()).collect();
        let (tool, completers) = self.parts.build("prompt", params, order)?;
        PromptFunc::with_completers(tool, completers)
    }
}

/// What `#[prompt]` submits to the global registry: the function's tool, and the
/// completers of its arguments.
#[doc(hidden)]
pub struct PromptSpec {
    pub tool: ToolSpec,
    pub completers: &'static [CompleterSpec],
}

inventory::collect!(PromptSpec);

impl PromptSpec {
    pub(crate) fn build(&self) -> Result<PromptFunc, ToolError> {
        PromptFunc::with_completers(self.tool.build()?, Completers::of(self.completers))
    }
}
