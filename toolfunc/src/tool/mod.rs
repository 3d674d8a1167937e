//! `ToolFunc` (a tool: definition + handler), `ToolDefinition` (its serialisable
//! metadata) and `ToolBuilder` (tools made at run time).

pub mod service;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::schema::{
    Validator, check_params_root, empty_object, field_order, parse_args, result_schema_of,
    schema_of,
};
use crate::{Ctx, ToolError};
use service::{ActDefinition, Acts};

/// The serialisable metadata of a tool: what discovery, LLM exports and remote
/// clients see.
///
/// Fields left unset are omitted from the JSON. `params` is always a JSON Schema whose
/// root is `"type": "object"`.
///
/// ```
/// let def: toolfunc::ToolDefinition = serde_json::from_value(serde_json::json!({
///     "name": "echo",
///     "description": "Echo the input.",
///     "params": {"type": "object", "properties": {"text": {"type": "string"}}}
/// })).unwrap();
/// assert_eq!(def.name, "echo");
/// assert!(def.alias.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The unique name the tool is run by.
    pub name: String,
    /// A short human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The full description (from the doc comment or the `description` key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A concise description, advertised in place of `description` by
    /// [`Registry::definitions`](crate::Registry::definitions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// JSON Schema of the arguments object.
    #[serde(default = "empty_object")]
    pub params: Value,
    /// JSON Schema of the result; absent for tools that return nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Other names the tool can be run by.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "one_or_many")]
    pub alias: Vec<String>,
    /// Free-form grouping labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "one_or_many")]
    pub tags: Vec<String>,
    /// Whether the tool streams its result (`run_stream` yields its items one by one;
    /// `run` collects them into an array).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// The tool's own timeout, in milliseconds: a soft deadline when `background`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Whether the tool's `timeout` is a soft deadline: a remote call still running
    /// past it moves to the background (HTTP answers `202`, and the caller polls);
    /// in process the call runs on. Bounded by the ledger's maximum run time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// What the tool needs its caller to be able to answer (`"sampling"`,
    /// `"elicitation"`, `"roots"`): an MCP client that did not declare one of these
    /// capabilities is refused before the tool runs (`-32021`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs_client: Vec<String>,
    /// Hints about the tool's behaviour, carried to every export.
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    /// `"res"` for a REST resource (a service with REST verb methods); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The acts of a service (`"$hello"`, REST verbs such as `"get"`); empty for a
    /// plain tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// The definition of each act of a service, in the order of `methods`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acts: Vec<ActDefinition>,
    /// Whether the tool is offered to remote callers (HTTP, MCP). A tool with
    /// `api = false` runs only in process: remote discovery leaves it out and remote
    /// calls get `NOT_FOUND`.
    #[serde(rename = "isApi", default = "yes", skip_serializing_if = "is_true")]
    pub api: bool,
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_true(value: &bool) -> bool {
    *value
}

/// Hints about what a tool does, for clients deciding how to call it (an LLM host
/// asking for confirmation, a scheduler retrying). Hints, not guarantees: toolfunc
/// carries them and enforces none. Unset hints are left out of every export.
///
/// ```
/// let hints = toolfunc::Annotations::new().read_only(true).open_world(false);
/// assert_eq!(hints.read_only, Some(true));
/// assert_eq!(
///     serde_json::to_value(&hints).unwrap(),
///     serde_json::json!({"readOnly": true, "openWorld": false})
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// The tool changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches outside entities (the web, other systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// Its output may carry untrusted content (treat it as data, not instructions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted_output: Option<bool>,
    /// A person should confirm each call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_confirmation: Option<bool>,
}

/// The hints of `annotations(...)` as the macros write them, by name, in a `static`
/// (`Annotations` is `#[non_exhaustive]`, so expansions cannot build it).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub untrusted_output: Option<bool>,
    pub needs_confirmation: Option<bool>,
}

impl Hints {
    /// No hints; expansions write `Hints { read_only: Some(true), ..Hints::NONE }`.
    pub const NONE: Self = Self {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
        untrusted_output: None,
        needs_confirmation: None,
    };
}

/// One builder method per hint: `hint(true)` sets `hint` to `Some(true)`.
macro_rules! hint_setters {
    ($($(#[$doc:meta])* $hint:ident,)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $hint(mut self, value: bool) -> Self {
            self.$hint = Some(value);
            self
        }
    )*};
}

impl Annotations {
    /// The hints the macros write.
    pub(crate) fn from_hints(hints: Hints) -> Self {
        let Hints {
            read_only,
            destructive,
            idempotent,
            open_world,
            untrusted_output,
            needs_confirmation,
        } = hints;
        Self {
            read_only,
            destructive,
            idempotent,
            open_world,
            untrusted_output,
            needs_confirmation,
        }
    }

    /// No hints.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    hint_setters! {
        /// Sets the read-only hint.
        read_only,
        /// Sets the destructive hint.
        destructive,
        /// Sets the idempotent hint.
        idempotent,
        /// Sets the open-world hint.
        open_world,
        /// Sets the untrusted-output hint.
        untrusted_output,
        /// Sets the needs-confirmation hint.
        needs_confirmation,
    }
}

impl ToolDefinition {
    /// The definition as advertised to a caller: an authored `summary` replaces the
    /// full `description` (which stays on the tool for direct lookup).
    #[must_use]
    pub fn advertised(&self) -> Self {
        let mut def = self.clone();
        if let Some(summary) = def.summary.take() {
            def.description = Some(summary);
        }
        def
    }
}

/// `alias` and `tags` are a string or a list of strings in the definitions of the
/// reference RPC library; accept both, always write a list.
mod one_or_many {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }

    pub(super) fn serialize<S: Serializer>(v: &[String], s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        Ok(match OneOrMany::deserialize(d)? {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        })
    }
}

pub(crate) type SyncFn = dyn Fn(&Ctx, Value) -> Result<Value, ToolError> + Send + Sync;
type AsyncFn = dyn Fn(Ctx, Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;
/// The stream of a streaming tool's items.
pub type ItemStream = BoxStream<'static, Result<Value, ToolError>>;
type StreamFn =
    dyn Fn(Ctx, Value) -> BoxFuture<'static, Result<ItemStream, ToolError>> + Send + Sync;

pub(crate) enum Handler {
    Sync(Box<SyncFn>),
    Async(Box<AsyncFn>),
    Stream(Box<StreamFn>),
    /// A service: the `act` argument picks one of its methods' handlers (never
    /// `Acts` themselves).
    Acts(Box<Acts>),
}

impl Handler {
    fn can_stream(&self) -> bool {
        match self {
            Handler::Stream(_) => true,
            Handler::Acts(acts) => acts.any_stream(),
            _ => false,
        }
    }
}

/// How the arguments are checked before the handler runs.
#[derive(Debug)]
enum ArgCheck {
    /// The handler deserialises into a Rust type; that is the check (no double work),
    /// or the schema accepts any object.
    Nothing,
    /// The arguments are checked against the definition's `params` schema, compiled.
    Schema(Validator),
}

/// A registered tool, as [`Registry::get`](crate::Registry::get) returns it: a cheap,
/// shareable handle that derefs to the [`ToolFunc`].
///
/// Tools of the global registry live as long as the program, so their handles are
/// plain references and copying one costs nothing; others are reference-counted.
#[derive(Clone)]
pub struct ToolRef(ToolRepr);

#[derive(Clone)]
enum ToolRepr {
    Static(&'static ToolFunc),
    Shared(Arc<ToolFunc>),
}

impl From<ToolFunc> for ToolRef {
    fn from(tool: ToolFunc) -> Self {
        Self::shared(tool)
    }
}

impl From<Arc<ToolFunc>> for ToolRef {
    fn from(tool: Arc<ToolFunc>) -> Self {
        Self(ToolRepr::Shared(tool))
    }
}

impl ToolRef {
    /// Whether two handles point at the same tool.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        std::ptr::eq::<ToolFunc>(&raw const **a, &raw const **b)
    }

    pub(crate) fn from_static(tool: &'static ToolFunc) -> Self {
        Self(ToolRepr::Static(tool))
    }

    /// The tool, when it lives as long as the program.
    pub(crate) fn as_static(&self) -> Option<&'static ToolFunc> {
        match self.0 {
            ToolRepr::Static(tool) => Some(tool),
            ToolRepr::Shared(_) => None,
        }
    }

    pub(crate) fn shared(tool: ToolFunc) -> Self {
        Self(ToolRepr::Shared(Arc::new(tool)))
    }

    /// For tools that live as long as the program (the global registry's).
    pub(crate) fn leaked(tool: ToolFunc) -> Self {
        Self(ToolRepr::Static(Box::leak(Box::new(tool))))
    }
}

impl std::ops::Deref for ToolRef {
    type Target = ToolFunc;

    fn deref(&self) -> &ToolFunc {
        match &self.0 {
            ToolRepr::Static(tool) => tool,
            ToolRepr::Shared(tool) => tool,
        }
    }
}

impl fmt::Debug for ToolRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// One tool: its [`ToolDefinition`] and its handler.
///
/// `#[tool]` functions become `ToolFunc`s in the global registry; tools made at run
/// time come from [`ToolFunc::builder`] or [`ToolFunc::from_definition`].
pub struct ToolFunc {
    pub(crate) definition: ToolDefinition,
    pub(crate) handler: Handler,
    timeout: Option<Duration>,
    check: ArgCheck,
    /// `run_with_pos` maps the i-th value onto the argument named `positional[i]`.
    positional: Vec<String>,
    concurrency_limit: usize,
    pub(crate) depends: Vec<Dependency>,
    pub(crate) setup: Option<Hook>,
    pub(crate) dispose: Option<Hook>,
    /// At most this many calls at once, shared by every registry holding the tool.
    pub(crate) concurrency: Option<Arc<tokio::sync::Semaphore>>,
}

/// A lifecycle hook (`setup` or `dispose`): sync hooks return a finished future.
pub(crate) type Hook = Arc<dyn Fn() -> BoxFuture<'static, Result<(), ToolError>> + Send + Sync>;

/// A tool's dependency, under the local alias the tool calls it by.
#[derive(Clone)]
pub(crate) struct Dependency {
    pub(crate) alias: String,
    pub(crate) target: DependencyTarget,
}

#[derive(Clone)]
pub(crate) enum DependencyTarget {
    /// A tool instance: registered (counted) with the tool, released with it.
    Tool(ToolRef),
    /// A tool by name, registered by someone else; it must exist when the tool is.
    Name(String),
}

impl Dependency {
    /// The name the dependency is registered under.
    pub(crate) fn name(&self) -> &str {
        match &self.target {
            DependencyTarget::Tool(tool) => tool.name(),
            DependencyTarget::Name(name) => name,
        }
    }
}

impl fmt::Debug for ToolFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolFunc")
            .field("definition", &self.definition)
            .field("async", &self.is_async())
            .finish_non_exhaustive()
    }
}

impl ToolFunc {
    /// Starts a tool made at run time.
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolfunc::{Registry, ToolFunc};
    ///
    /// let echo = ToolFunc::builder("echo")
    ///     .description("Return the arguments unchanged.")
    ///     .params_schema(json!({
    ///         "type": "object",
    ///         "properties": {"text": {"type": "string"}},
    ///         "required": ["text"]
    ///     }))
    ///     .handler_sync(|_ctx, args: Value| Ok(args))
    ///     .build()
    ///     .unwrap();
    ///
    /// let registry = Registry::new();
    /// registry.register(echo).unwrap();
    /// assert_eq!(registry.run_sync("echo", json!({"text": "hi"})).unwrap(), json!({"text": "hi"}));
    /// // The given schema is enforced before the handler runs.
    /// assert_eq!(registry.run_sync("echo", json!({"text": 1})).unwrap_err().code(), "ARGUMENTS");
    /// ```
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder::new(name.into())
    }

    /// Starts a tool from a definition (for example one loaded from JSON); add a
    /// handler and build.
    pub fn from_definition(definition: ToolDefinition) -> ToolBuilder {
        let ToolDefinition {
            name,
            title,
            description,
            summary,
            params,
            result,
            alias,
            tags,
            stream: _,
            timeout,
            background,
            needs_client,
            annotations,
            action,
            methods,
            acts,
            api,
        } = definition;
        ToolBuilder {
            title,
            description,
            summary,
            params: Some(params),
            result,
            alias,
            tags,
            timeout: timeout.map(Duration::from_millis),
            background,
            needs_client,
            annotations,
            api,
            action,
            methods,
            act_definitions: acts,
            schema_given: true,
            ..ToolBuilder::new(name)
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The tool's full definition.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Whether the tool only runs asynchronously (`run_sync` refuses it).
    pub fn is_async(&self) -> bool {
        match &self.handler {
            Handler::Sync(_) => false,
            Handler::Acts(acts) => acts.any_async(),
            _ => true,
        }
    }

    /// Whether a call runs at once on the caller's thread (a sync tool with no
    /// concurrency limit to wait for).
    pub(crate) fn runs_inline(&self) -> bool {
        matches!(self.handler, Handler::Sync(_)) && self.concurrency.is_none()
    }

    /// Whether the tool streams its result.
    pub fn is_stream(&self) -> bool {
        self.handler.can_stream()
    }

    /// Whether remote callers may see and run the tool (`api = false` says no).
    pub fn is_api(&self) -> bool {
        self.definition.api
    }

    /// The tool's own timeout: the deadline its calls end at with `TIMEOUT`. `None`
    /// for a `background` tool, whose timeout is a soft deadline instead
    /// ([`soft_deadline`](Self::soft_deadline)).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// For a `background` tool, how long a remote caller waits before the call moves
    /// to the background; `None` for other tools.
    pub fn soft_deadline(&self) -> Option<Duration> {
        if self.definition.background {
            self.definition.timeout.map(Duration::from_millis)
        } else {
            None
        }
    }

    /// How many calls of the tool may run at once, when limited.
    pub fn concurrency(&self) -> Option<usize> {
        self.concurrency.as_ref().map(|_| self.concurrency_limit)
    }

    /// The names of the tools this one depends on, with the local alias of each.
    pub fn dependencies(&self) -> impl Iterator<Item = (&str, &str)> {
        self.depends.iter().map(|d| (d.alias.as_str(), d.name()))
    }

    /// Normalises and checks the arguments: `null` means no arguments; anything else
    /// must be an object.
    pub(crate) fn prepare(&self, args: Value) -> Result<Value, ToolError> {
        let args = match args {
            Value::Null => Value::Object(serde_json::Map::new()),
            Value::Object(_) => args,
            other => {
                return Err(ToolError::arguments(
                    "",
                    format!(
                        "expected an object of named arguments, found {}",
                        kind_of(&other)
                    ),
                ));
            }
        };
        if let ArgCheck::Schema(validator) = &self.check {
            validator.validate(&args)?;
        }
        Ok(args)
    }

    /// Maps positional arguments onto named ones.
    pub(crate) fn positional_to_named(&self, values: Vec<Value>) -> Result<Value, ToolError> {
        let names = &self.positional;
        if values.len() > names.len() {
            return Err(ToolError::arguments(
                format!("/{}", names.len()),
                format!(
                    "expected at most {} positional argument{}, found {}",
                    names.len(),
                    if names.len() == 1 { "" } else { "s" },
                    values.len()
                ),
            ));
        }
        Ok(Value::Object(
            names
                .iter()
                .zip(values)
                .map(|(name, value)| (name.clone(), value))
                .collect(),
        ))
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Serialises a handler's output (`OUTPUT` error when it cannot be).
#[doc(hidden)]
pub fn to_output<T: Serialize + ?Sized>(value: &T) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::Output {
        message: e.to_string(),
    })
}

/// Builds a [`ToolFunc`] at run time. Start with [`ToolFunc::builder`].
///
/// Handlers come in four forms: over raw JSON ([`handler`](Self::handler),
/// [`handler_sync`](Self::handler_sync)) — the arguments are then checked against
/// [`params_schema`](Self::params_schema) before the handler runs — or over typed
/// arguments ([`typed`](Self::typed), [`typed_sync`](Self::typed_sync)), whose
/// parameter and result schemas are derived from the types unless given.
#[must_use = "a builder does nothing until `build` is called"]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each flag is one switch of the definition being built"
)]
pub struct ToolBuilder {
    name: String,
    title: Option<String>,
    description: Option<String>,
    summary: Option<String>,
    alias: Vec<String>,
    tags: Vec<String>,
    params: Option<Value>,
    result: Option<Value>,
    param_order: Option<Vec<String>>,
    timeout: Option<Duration>,
    background: bool,
    needs_client: Vec<String>,
    annotations: Annotations,
    /// Derives the positional order from the typed handler's argument type.
    typed_order: Option<fn(&Value) -> Vec<String>>,
    handler: Option<Handler>,
    /// Whether the handler deserialises into a Rust type (which checks the arguments).
    typed: bool,
    /// Whether the parameters schema was given rather than derived.
    schema_given: bool,
    depends: Vec<Dependency>,
    setup: Option<Hook>,
    dispose: Option<Hook>,
    concurrency: Option<usize>,
    api: bool,
    action: Option<String>,
    methods: Vec<String>,
    act_definitions: Vec<ActDefinition>,
}

impl fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ToolBuilder {
    fn new(name: String) -> Self {
        Self {
            name,
            title: None,
            description: None,
            summary: None,
            alias: Vec::new(),
            tags: Vec::new(),
            params: None,
            result: None,
            param_order: None,
            timeout: None,
            background: false,
            needs_client: Vec::new(),
            annotations: Annotations::default(),
            typed_order: None,
            handler: None,
            typed: false,
            schema_given: false,
            depends: Vec::new(),
            setup: None,
            dispose: None,
            concurrency: None,
            api: true,
            action: None,
            methods: Vec::new(),
            act_definitions: Vec::new(),
        }
    }

    /// Whether remote callers (HTTP, MCP) may see and run the tool; `true` unless
    /// set. A tool with `api(false)` still runs in process.
    pub fn api(mut self, api: bool) -> Self {
        self.api = api;
        self
    }

    /// Leaves the arguments unchecked before the handler runs (a remote tool: the
    /// server checks them).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn unchecked(mut self) -> Self {
        self.typed = true;
        self.schema_given = false;
        self
    }

    /// Makes the tool a service over `acts` (see [`crate::service`]).
    pub(crate) fn acts(
        mut self,
        acts: Acts,
        methods: Vec<String>,
        definitions: Vec<ActDefinition>,
        action: Option<String>,
    ) -> Self {
        self.handler = Some(Handler::Acts(Box::new(acts)));
        self.methods = methods;
        self.act_definitions = definitions;
        self.action = action;
        // Each method checks its own arguments; the service schema only lists them.
        self.typed = true;
        self.schema_given = false;
        self
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the summary advertised in place of the description.
    pub fn summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }

    /// Adds an alias.
    pub fn alias(mut self, alias: impl Into<String>) -> Self {
        self.alias.push(alias.into());
        self
    }

    /// Adds a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Sets the parameters schema (its root must be `"type": "object"`). Arguments are
    /// checked against it before the handler runs, typed handlers included (whose
    /// deserialisation alone would not enforce bounds such as `minimum`).
    pub fn params_schema(mut self, schema: Value) -> Self {
        self.params = Some(schema);
        self.schema_given = true;
        self
    }

    /// Sets the result schema.
    pub fn result_schema(mut self, schema: Value) -> Self {
        self.result = Some(schema);
        self
    }

    /// Sets the order in which `run_with_pos` maps positional values onto parameter
    /// names. Without it, typed handlers use their argument struct's field order and
    /// raw handlers the order of the schema's `properties` (alphabetical, as
    /// `serde_json` keeps object keys sorted).
    pub fn param_order<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.param_order = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the tool's behaviour hints (read-only, destructive, ...).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Declares a dependency on a tool instance, called as `alias` from inside this
    /// tool (`ctx.run(alias, ..)`). Registering this tool registers the dependency too
    /// (counted); removing it releases the dependency, last declared first.
    pub fn depends(mut self, alias: impl Into<String>, tool: impl Into<ToolRef>) -> Self {
        self.depends.push(Dependency {
            alias: alias.into(),
            target: DependencyTarget::Tool(tool.into()),
        });
        self
    }

    /// Declares a dependency on a tool by name, called as `alias` from inside this
    /// tool. The named tool must be registered (here or in a parent registry) before
    /// this one is: a missing dependency is a registration error, not a call-time one.
    pub fn depends_on(mut self, alias: impl Into<String>, name: impl Into<String>) -> Self {
        self.depends.push(Dependency {
            alias: alias.into(),
            target: DependencyTarget::Name(name.into()),
        });
        self
    }

    /// Runs `setup` each time the tool is placed in a registry; an error refuses the
    /// registration. It is undone by [`dispose`](Self::dispose).
    pub fn setup<F>(mut self, setup: F) -> Self
    where
        F: Fn() -> Result<(), ToolError> + Send + Sync + 'static,
    {
        self.setup = Some(Arc::new(move || Box::pin(std::future::ready(setup()))));
        self
    }

    /// Like [`setup`](Self::setup), asynchronous: the tool is *pending* until it
    /// finishes. `run` waits for it, `run_sync` refuses with `NOT_READY`, and
    /// [`Registry::ready`](crate::Registry::ready) awaits it. A failure makes calls
    /// fail with the setup's error.
    pub fn setup_async<F, Fut>(mut self, setup: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.setup = Some(Arc::new(move || Box::pin(setup())));
        self
    }

    /// Runs `dispose` when the tool is physically removed from a registry (its last
    /// registration taken back, a forced removal, a replacement, `clear`). A later
    /// registration runs `setup` again.
    pub fn dispose<F>(mut self, dispose: F) -> Self
    where
        F: Fn() -> Result<(), ToolError> + Send + Sync + 'static,
    {
        self.dispose = Some(Arc::new(move || Box::pin(std::future::ready(dispose()))));
        self
    }

    /// Like [`dispose`](Self::dispose), asynchronous.
    pub fn dispose_async<F, Fut>(mut self, dispose: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.dispose = Some(Arc::new(move || Box::pin(dispose())));
        self
    }

    /// Allows at most `limit` calls of the tool at once; further calls wait for a
    /// slot (and can be cancelled or time out while waiting). The limit is the tool's:
    /// shared by every runner and registry that reaches it.
    pub fn concurrency(mut self, limit: usize) -> Self {
        self.concurrency = Some(limit);
        self
    }

    /// Sets the tool's own timeout: a call still running after it ends with `TIMEOUT`
    /// (a caller's shorter timeout wins). Enforced for async and streaming tools; a
    /// sync handler runs to its end once started.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Makes the timeout a soft deadline: a remote call (HTTP) still running past it
    /// moves to the background, answered `202` and polled for, instead of ending
    /// with `TIMEOUT`; in process the call runs on. Without a timeout, a remote call
    /// waits as long as the call runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// let report = toolfunc::ToolFunc::builder("report")
    ///     .timeout(Duration::from_secs(1))
    ///     .background(true)
    ///     .handler_sync(|_ctx, _args| Ok(serde_json::json!("done")))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(report.soft_deadline(), Some(Duration::from_secs(1)));
    /// assert_eq!(report.timeout(), None);
    /// ```
    pub fn background(mut self, yes: bool) -> Self {
        self.background = yes;
        self
    }

    /// Declares a capability the tool needs of its caller (`"sampling"`,
    /// `"elicitation"`, `"roots"`), because it asks for it: an MCP client that did
    /// not declare it is refused with `-32021` before the tool runs, rather than the
    /// tool failing half way.
    pub fn needs_client(mut self, capability: impl Into<String>) -> Self {
        self.needs_client.push(capability.into());
        self
    }

    /// Sets a streaming handler over the raw JSON arguments object: it returns a
    /// stream of items, which `run_stream` yields one by one and `run` collects into
    /// an array. Items are produced only as fast as the caller consumes them.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use serde_json::{json, Value};
    /// use toolfunc::{Registry, ToolError, ToolFunc};
    ///
    /// let countdown = ToolFunc::builder("countdown")
    ///     .params_schema(json!({"type": "object", "properties": {"from": {"type": "integer"}}}))
    ///     .stream_handler(|_ctx, args: Value| async move {
    ///         let from = args["from"].as_u64().unwrap_or(3);
    ///         Ok(futures::stream::iter((0..=from).rev()).map(|n| Ok::<_, ToolError>(json!(n))))
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let registry = Registry::new();
    /// registry.register(countdown).unwrap();
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// assert_eq!(registry.run("countdown", json!({"from": 2})).await.unwrap(), json!([2, 1, 0]));
    /// let items: Vec<_> = registry.run_stream("countdown", json!({"from": 1})).collect().await;
    /// assert_eq!(items.len(), 2);
    /// # });
    /// ```
    pub fn stream_handler<F, Fut, S>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<S, ToolError>> + Send + 'static,
        S: futures::Stream<Item = Result<Value, ToolError>> + Send + 'static,
    {
        self.handler = Some(Handler::Stream(Box::new(move |ctx, args| {
            let opening = f(ctx, args);
            Box::pin(async move { Ok(opening.await?.boxed()) })
        })));
        self.typed = false;
        self
    }

    /// Sets an async handler over the raw JSON arguments object.
    pub fn handler<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.handler = Some(Handler::Async(Box::new(move |ctx, args| {
            Box::pin(f(ctx, args))
        })));
        self.typed = false;
        self
    }

    /// Sets an async handler whose future need not be `Send` (it holds an `Rc`, a
    /// `RefCell` or a `!Send` handle across an `.await`): each call runs on
    /// toolfunc's local executor, one thread of its own, while callers on any
    /// thread and surface run the tool by name as usual, with its deadline,
    /// cancellation and cleanups. The `#[tool(local)]` form of the same.
    ///
    /// ```
    /// use std::rc::Rc;
    /// use serde_json::{json, Value};
    /// use toolfunc::{Registry, ToolFunc};
    ///
    /// let shout = ToolFunc::builder("shout")
    ///     .local_handler(|_, args: Value| async move {
    ///         let text = Rc::new(args["text"].as_str().unwrap_or("").to_uppercase());
    ///         tokio::task::yield_now().await; // `text` lives across the await
    ///         Ok(json!(*text))
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let registry = Registry::new();
    /// registry.register(shout).unwrap();
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// assert_eq!(registry.run("shout", json!({"text": "hi"})).await.unwrap(), json!("HI"));
    /// # });
    /// ```
    pub fn local_handler<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + 'static,
    {
        let f = Arc::new(f);
        self.handler = Some(Handler::Async(Box::new(move |ctx, args| {
            let f = Arc::clone(&f);
            crate::local::run(ctx, args, Box::new(move |ctx, args| Box::pin(f(ctx, args))))
        })));
        self.typed = false;
        self
    }

    /// Sets a sync handler over the raw JSON arguments object.
    pub fn handler_sync<F>(mut self, f: F) -> Self
    where
        F: Fn(&Ctx, Value) -> Result<Value, ToolError> + Send + Sync + 'static,
    {
        self.handler = Some(Handler::Sync(Box::new(f)));
        self.typed = false;
        self
    }

    /// Sets an async handler over typed arguments. The parameters schema comes from
    /// `A` and the result schema from `R` unless they were set.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use toolfunc::{Registry, ToolError, ToolFunc};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Greet { name: String }
    ///
    /// let registry = Registry::new();
    /// registry.register(
    ///     ToolFunc::builder("greet")
    ///         .typed(|_ctx, args: Greet| async move { Ok::<_, ToolError>(format!("hello {}", args.name)) })
    ///         .build()
    ///         .unwrap(),
    /// ).unwrap();
    /// let out = registry.run("greet", serde_json::json!({"name": "Ann"})).await.unwrap();
    /// assert_eq!(out, "hello Ann");
    /// # });
    /// ```
    pub fn typed<A, R, F, Fut>(mut self, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: Serialize + JsonSchema + 'static,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        self.set_typed_schemas::<A, R>();
        let f = Arc::new(f);
        self.handler = Some(Handler::Async(Box::new(move |ctx, args| {
            let f = Arc::clone(&f);
            Box::pin(async move {
                let args = parse_args::<A>(args)?;
                to_output(&f(ctx, args).await?)
            })
        })));
        self
    }

    /// Sets a sync handler over typed arguments. The parameters schema comes from `A`
    /// and the result schema from `R` unless they were set.
    pub fn typed_sync<A, R, F>(mut self, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: Serialize + JsonSchema + 'static,
        F: Fn(&Ctx, A) -> Result<R, ToolError> + Send + Sync + 'static,
    {
        self.set_typed_schemas::<A, R>();
        self.handler = Some(Handler::Sync(Box::new(move |ctx, args| {
            to_output(&f(ctx, parse_args::<A>(args)?)?)
        })));
        self
    }

    fn set_typed_schemas<A: DeserializeOwned + JsonSchema, R: JsonSchema>(&mut self) {
        if !self.schema_given {
            self.params = Some(schema_of::<A>());
        }
        if self.result.is_none() {
            // A result is serialised: its schema is serde's serialize contract.
            let result = result_schema_of::<R>();
            // `()` has the schema `{"type": "null"}`: a tool that returns nothing.
            if result != serde_json::json!({"type": "null"}) {
                self.result = Some(result);
            }
        }
        self.typed_order = Some(field_order::<A>);
        self.typed = true;
    }

    /// Builds the tool. Fails with `DEFINITION` when there is no handler, the name
    /// is empty, or the parameters schema's root is not an object.
    pub fn build(self) -> Result<ToolFunc, ToolError> {
        let definition_error = |message: String| ToolError::Definition {
            name: self.name.clone(),
            message,
        };
        if self.name.is_empty() {
            return Err(definition_error("the tool name is empty".into()));
        }
        let mut params = self.params.clone().unwrap_or_else(empty_object);
        check_params_root(&params).map_err(definition_error)?;
        // Providers expect `properties` on every object root, even an empty one.
        if let Some(map) = params.as_object_mut() {
            map.entry("properties")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
        }
        let positional = match (self.param_order.clone(), self.typed_order) {
            (Some(names), _) => names,
            (None, Some(order)) => order(&params),
            (None, None) => params
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default(),
        };
        // Typed handlers check by deserialising; a given schema is checked as well.
        let check = if self.typed && !self.schema_given {
            ArgCheck::Nothing
        } else {
            let validator = Validator::compile(&params);
            if let Some(message) = validator.definition_error() {
                return Err(definition_error(message));
            }
            if validator.accepts_any_object() {
                ArgCheck::Nothing
            } else {
                ArgCheck::Schema(validator)
            }
        };
        let Some(handler) = self.handler else {
            return Err(definition_error("no handler was set".into()));
        };
        if self.concurrency == Some(0) {
            return Err(definition_error(
                "the concurrency limit must be at least 1".into(),
            ));
        }
        if let Some(unknown) = self
            .needs_client
            .iter()
            .find(|c| !["sampling", "elicitation", "roots"].contains(&c.as_str()))
        {
            return Err(definition_error(format!(
                "`needs_client` names what a caller answers (\"sampling\", \"elicitation\" \
                 or \"roots\"), not `{unknown}`"
            )));
        }
        let mut aliases = std::collections::HashSet::new();
        for dependency in &self.depends {
            if !aliases.insert(dependency.alias.as_str()) {
                return Err(definition_error(format!(
                    "two dependencies share the alias `{}`",
                    dependency.alias
                )));
            }
        }
        Ok(ToolFunc {
            definition: ToolDefinition {
                name: self.name,
                title: self.title,
                description: self.description,
                summary: self.summary,
                params,
                result: self.result,
                alias: self.alias,
                tags: self.tags,
                stream: handler.can_stream(),
                timeout: self
                    .timeout
                    .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
                background: self.background,
                needs_client: self.needs_client,
                annotations: self.annotations,
                action: self.action,
                methods: self.methods,
                acts: self.act_definitions,
                api: self.api,
            },
            // A background tool's timeout is a soft deadline, not the call's end.
            timeout: if self.background { None } else { self.timeout },
            handler,
            check,
            positional,
            concurrency_limit: self.concurrency.unwrap_or(0),
            concurrency: self
                .concurrency
                .map(|n| Arc::new(tokio::sync::Semaphore::new(n))),
            depends: self.depends,
            setup: self.setup,
            dispose: self.dispose,
        })
    }
}

/// What `#[tool]` submits to the global registry: const data only, turned into a
/// [`ToolFunc`] through [`ToolBuilder`] when the global registry is first used.
#[doc(hidden)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: Option<&'static str>,
    pub summary: Option<&'static str>,
    pub alias: &'static [&'static str],
    pub tags: &'static [&'static str],
    /// Parameter names in declaration order, from the parameters schema.
    pub param_order: fn(&Value) -> Vec<String>,
    pub params: fn() -> Value,
    pub result: Option<fn() -> Value>,
    pub handler: SpecHandler,
    pub timeout_ms: Option<u64>,
    /// `background`: the timeout is a soft deadline.
    pub background: bool,
    /// `needs_client`: what the caller must be able to answer.
    pub needs_client: &'static [&'static str],
    /// `(alias, tool name)` of each dependency.
    pub depends: &'static [(&'static str, &'static str)],
    pub concurrency: Option<usize>,
    /// `[read_only, destructive, idempotent, open_world, untrusted_output,
    /// needs_confirmation]`.
    pub annotations: Hints,
    /// `false` for `api = false`: not offered to remote callers.
    pub api: bool,
    /// `file:line` of the function, for startup diagnostics.
    pub location: &'static str,
}

/// The handler of a [`ToolSpec`].
#[doc(hidden)]
pub enum SpecHandler {
    Sync(fn(&Ctx, Value) -> Result<Value, ToolError>),
    Async(fn(Ctx, Value) -> BoxFuture<'static, Result<Value, ToolError>>),
    Stream(fn(Ctx, Value) -> BoxFuture<'static, Result<ItemStream, ToolError>>),
}

inventory::collect!(ToolSpec);

impl ToolSpec {
    pub(crate) fn build(&self) -> Result<ToolFunc, ToolError> {
        let mut builder = ToolFunc::builder(self.name);
        builder.title = self.title.map(str::to_owned);
        builder.description = self.description.map(str::to_owned);
        builder.summary = self.summary.map(str::to_owned);
        builder.alias = self.alias.iter().map(|s| (*s).to_owned()).collect();
        builder.tags = self.tags.iter().map(|s| (*s).to_owned()).collect();
        builder.params = Some((self.params)());
        builder.result = self.result.map(|f| f());
        builder.typed_order = Some(self.param_order);
        builder.handler = Some(match self.handler {
            SpecHandler::Sync(f) => Handler::Sync(Box::new(f)),
            SpecHandler::Async(f) => Handler::Async(Box::new(f)),
            SpecHandler::Stream(f) => Handler::Stream(Box::new(f)),
        });
        builder.timeout = self.timeout_ms.map(Duration::from_millis);
        builder.background = self.background;
        builder.needs_client = self.needs_client.iter().map(|s| (*s).to_owned()).collect();
        builder.concurrency = self.concurrency;
        builder.api = self.api;
        builder.annotations = Annotations::from_hints(self.annotations);
        for (alias, name) in self.depends {
            builder = builder.depends_on(*alias, *name);
        }
        // The generated handler deserialises into the parameters struct: that is the check.
        builder.typed = true;
        builder.build()
    }
}
