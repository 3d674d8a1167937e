//! Services: a type whose methods are the acts of one tool (`#[tool_service]`).
//!
//! A service is registered as one tool. A call names the method to run with an
//! `act` argument: `{"act": "$hello", "name": "Ann"}` runs `hello`. Methods named
//! `get`, `list`, `post`, `put`, `delete` or `patch` are REST verbs (their act is the
//! bare verb) and make the service a REST resource, which the HTTP layer maps onto
//! `GET /prefix/users/1`, `PUT /prefix/users/1` and so on.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::complete::CompleterSpec;
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::tool::{Annotations, ToolDefinition, ToolFunc};
use crate::tool::{Handler, ItemStream};

/// The REST verbs a method may be named after, in the order discovery lists them.
pub const REST_VERBS: [&str; 6] = ["get", "post", "put", "delete", "patch", "list"];

/// A type whose methods are the acts of one tool. Implemented by `#[tool_service]`;
/// register a value with [`Registry::register_service`](crate::Registry::register_service)
/// or turn it into a tool with [`ToolFunc::from_service`].
pub trait ToolService: Send + Sync + 'static {
    /// The service's definition, as `#[tool_service]` wrote it.
    #[doc(hidden)]
    fn __spec() -> &'static ServiceSpec<Self>
    where
        Self: Sized;
}

/// The definition of one method (act) of a service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ActDefinition {
    /// The act that selects the method: `"$hello"`, or a REST verb such as `"get"`.
    pub name: String,
    /// A short human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The method's description (its doc comment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the method's arguments (without `act`).
    #[serde(default = "crate::schema::empty_object")]
    pub params: Value,
    /// JSON Schema of the method's result; absent when it returns nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Whether the method streams its result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// The method's own timeout, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Hints about the method's behaviour.
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    /// The OAuth scopes a caller needs for this act, besides the service's own
    /// ([`ToolDefinition::scopes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// The OAuth scopes a call of `tool` needs: the tool's own, then those of `act`
/// (one of its acts, when the call runs one), each once.
pub(crate) fn needed_scopes(tool: &ToolDefinition, act: Option<&ActDefinition>) -> Vec<String> {
    let mut needed = tool.scopes.clone();
    for scope in act.iter().flat_map(|act| &act.scopes) {
        if !needed.contains(scope) {
            needed.push(scope.clone());
        }
    }
    needed
}

/// Which of the acts named `names` (canonical names, in order) the name `sent`
/// stands for: the act of that very name, else the RPC act whose method it is
/// without its `$` (`hello` for `$hello`). The one rule every surface reads an act
/// by.
pub(crate) fn act_index<'a, I>(mut names: I, sent: &str) -> Option<usize>
where
    I: Iterator<Item = &'a str> + Clone,
{
    names
        .clone()
        .position(|name| name == sent)
        .or_else(|| names.position(|name| name.strip_prefix('$') == Some(sent)))
}

impl ActDefinition {
    /// The method's name without the `$` of an RPC act (`"$hello"` → `"hello"`).
    pub fn method(&self) -> &str {
        self.name.strip_prefix('$').unwrap_or(&self.name)
    }

    /// The act of `service` as a function of its own, named `{service}_{method}`:
    /// its title, description, schemas, stream flag and (when it has any) hints,
    /// the rest of the service's definition kept. Providers call functions, not acts,
    /// so this is how every function-speaking surface (MCP, LLM exports) lists it.
    pub(crate) fn as_function(&self, service: &ToolDefinition) -> ToolDefinition {
        let mut def = service.clone();
        def.name = format!("{}_{}", service.name, self.method());
        def.title.clone_from(&self.title);
        if self.description.is_some() {
            def.description.clone_from(&self.description);
            def.summary = None;
        }
        def.params = self.params.clone().into();
        def.result.clone_from(&self.result);
        def.stream = self.stream;
        if !self.annotations.is_empty() {
            def.annotations = self.annotations.clone();
        }
        def.scopes = needed_scopes(service, Some(self));
        def.alias.clear();
        def.action = None;
        def.methods.clear();
        def.acts.clear();
        def
    }

    /// Whether the act is a REST verb.
    pub fn is_verb(&self) -> bool {
        REST_VERBS.contains(&self.name.as_str())
    }
}

/// What `#[tool_service]` writes for a service type.
#[doc(hidden)]
pub struct ServiceSpec<S: 'static> {
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: Option<&'static str>,
    pub summary: Option<&'static str>,
    pub alias: &'static [&'static str],
    pub tags: &'static [&'static str],
    pub timeout_ms: Option<u64>,
    pub concurrency: Option<usize>,
    pub annotations: Annotations,
    /// `scopes = [...]`: the OAuth scopes every method needs.
    pub scopes: &'static [&'static str],
    pub api: bool,
    pub methods: &'static [MethodSpec<S>],
    /// The `#[prompt]` and `#[resource]` methods: registered beside the tool,
    /// bound to the same state.
    pub kinds: &'static [KindSpec<S>],
    /// The `#[tool(setup)]` method: run when the service tool is placed in a registry.
    pub setup: Option<HookHandler<S>>,
    /// The `#[tool(dispose)]` method: run when the service tool is removed.
    pub dispose: Option<HookHandler<S>>,
    pub location: &'static str,
}

/// A `#[prompt]` or `#[resource]` method of a [`ServiceSpec`].
#[doc(hidden)]
pub struct KindSpec<S: 'static> {
    /// The prompt's or resource's name.
    pub name: &'static str,
    /// The resource's URI (or template); `None` for a prompt.
    pub uri: Option<&'static str>,
    pub mime_type: Option<&'static str>,
    pub tags: &'static [&'static str],
    pub api: bool,
    /// Parameter names in declaration order, from the parameters schema.
    pub param_order: fn(&Value) -> Vec<String>,
    /// The method, as an act would be (its `act` is the name).
    pub method: MethodSpec<S>,
    pub completers: &'static [CompleterSpec],
}

/// A `#[prompt]` or `#[resource]` method of a service bound to the service's
/// state, as a tool: made into a prompt or a resource by the registry.
pub(crate) struct KindTool {
    pub(crate) tool: ToolFunc,
    /// The resource's URI (or template); `None` for a prompt.
    pub(crate) uri: Option<&'static str>,
    pub(crate) mime_type: Option<&'static str>,
    pub(crate) completers: &'static [CompleterSpec],
}

/// A service's `#[tool(setup)]` or `#[tool(dispose)]` method, bound to its state by
/// [`ServiceSpec::build`] as the tool's lifecycle hook.
#[doc(hidden)]
pub enum HookHandler<S: 'static> {
    Sync(fn(&Arc<S>) -> Result<(), ToolError>),
    Async(fn(Arc<S>) -> BoxFuture<'static, Result<(), ToolError>>),
}

/// One method of a [`ServiceSpec`].
#[doc(hidden)]
pub struct MethodSpec<S: 'static> {
    /// `"$hello"` or a REST verb.
    pub act: &'static str,
    pub title: Option<&'static str>,
    pub description: Option<&'static str>,
    pub params: fn() -> Value,
    pub result: Option<fn() -> Value>,
    pub handler: MethodHandler<S>,
    pub timeout_ms: Option<u64>,
    pub annotations: Annotations,
    /// `scopes = [...]`: the OAuth scopes the method needs, besides the service's.
    pub scopes: &'static [&'static str],
}

type ValueFuture = BoxFuture<'static, Result<Value, ToolError>>;
/// The arguments of a method: read in place, or owned.
type MethodArgs<'a> = Cow<'a, Value>;
type StreamFuture = BoxFuture<'static, Result<ItemStream, ToolError>>;
type AnswerFuture = BoxFuture<'static, Result<super::Answer, ToolError>>;

/// The handler of a [`MethodSpec`].
#[doc(hidden)]
pub enum MethodHandler<S: 'static> {
    Sync(fn(&Arc<S>, &Ctx, MethodArgs<'_>) -> Result<Value, ToolError>),
    Async(fn(Arc<S>, Ctx, MethodArgs<'_>) -> ValueFuture),
    Stream(fn(Arc<S>, Ctx, MethodArgs<'_>) -> StreamFuture),
    /// A method answering a stream or one value, as the caller asked.
    Either(fn(Arc<S>, Ctx, MethodArgs<'_>) -> AnswerFuture),
}

/// A service that registers itself in the global registry (one whose type is
/// `Default`). Submitted by `#[tool_service]`.
#[doc(hidden)]
pub struct ServiceEntry {
    pub name: &'static str,
    pub location: &'static str,
    /// `None` when the type is not `Default`: it is registered by hand.
    pub build: fn() -> Option<Result<ServiceParts, ToolError>>,
}

inventory::collect!(ServiceEntry);

/// The error for a name no tool answers to. A `#[tool_service]` declared under that
/// name but not registered (a type that is not `Default` never registers itself)
/// says so and how to register it, rather than looking like a typo. Only runs on a
/// miss, so the scan costs nothing on the call path.
pub(crate) fn not_found(name: &str) -> ToolError {
    let declared = inventory::iter::<ServiceEntry>
        .into_iter()
        .find(|entry| entry.name == name);
    match declared {
        None => ToolError::not_found(name),
        Some(entry) => ToolError::not_found_because(
            name,
            format!(
                "the #[tool_service] declared at {} is not registered in this registry: \
                 a service whose type is not `Default` is registered with \
                 `registry.register_service(value)`",
                entry.location
            ),
        ),
    }
}

/// The methods of a service tool, as its handler.
pub(crate) struct Acts {
    pub(crate) acts: Vec<Act>,
}

pub(crate) struct Act {
    pub(crate) name: String,
    pub(crate) handler: Handler,
    /// The method's own timeout: it shortens the call's deadline once the method is
    /// picked, so it fires the call's token and bounds streams as a tool's does.
    pub(crate) timeout: Option<Duration>,
}

impl Acts {
    /// Takes `act` out of the arguments and finds the method it names (`"hello"`
    /// finds `"$hello"` too).
    pub(crate) fn select(&self, tool: &str, args: &mut Value) -> Result<usize, ToolError> {
        let act = match args.as_object_mut().and_then(|map| map.remove("act")) {
            Some(Value::String(act)) => act,
            None | Some(Value::Null) => {
                let acts: Vec<&str> = self.acts.iter().map(|a| a.name.as_str()).collect();
                return Err(ToolError::arguments(
                    "/act",
                    format!(
                        "`{tool}` is a service: name the method to run with `act`, one of {}",
                        acts.join(", ")
                    ),
                ));
            }
            Some(_) => {
                return Err(ToolError::arguments(
                    "/act",
                    "expected a string naming one of the service's methods",
                ));
            }
        };
        self.position(&act).ok_or_else(|| ToolError::UnknownAct {
            tool: tool.to_owned(),
            act,
        })
    }

    /// The index of the method `act` names, with or without its `$`.
    pub(crate) fn position(&self, act: &str) -> Option<usize> {
        act_index(self.acts.iter().map(|a| a.name.as_str()), act)
    }

    pub(crate) fn any_async(&self) -> bool {
        self.acts
            .iter()
            .any(|a| !matches!(a.handler, Handler::Sync(_)))
    }

    pub(crate) fn any_stream(&self) -> bool {
        self.acts
            .iter()
            .any(|a| matches!(a.handler, Handler::Stream(_) | Handler::Either(_)))
    }
}

/// The act names of a service, in the order discovery lists them: the REST verbs
/// first, then the `$` methods in declaration order.
fn ordered_methods<S>(methods: &[MethodSpec<S>]) -> Vec<String> {
    let mut names: Vec<String> = REST_VERBS
        .iter()
        .filter(|verb| methods.iter().any(|m| m.act == **verb))
        .map(|verb| (*verb).to_owned())
        .collect();
    names.extend(
        methods
            .iter()
            .filter(|m| !REST_VERBS.contains(&m.act))
            .map(|m| m.act.to_owned()),
    );
    names
}

/// A method's handler bound to the service's state.
fn bind<S: Send + Sync + 'static>(state: &Arc<S>, handler: &MethodHandler<S>) -> Handler {
    match *handler {
        MethodHandler::Sync(f) => {
            let state = Arc::clone(state);
            Handler::Sync(super::SyncHandler::closure(move |ctx, args| {
                f(&state, ctx, args)
            }))
        }
        MethodHandler::Async(f) => {
            let state = Arc::clone(state);
            Handler::Async(Box::new(move |ctx, args| f(Arc::clone(&state), ctx, args)))
        }
        MethodHandler::Stream(f) => {
            let state = Arc::clone(state);
            Handler::Stream(Box::new(move |ctx, args| f(Arc::clone(&state), ctx, args)))
        }
        MethodHandler::Either(f) => {
            let state = Arc::clone(state);
            Handler::Either(Box::new(move |ctx, args| f(Arc::clone(&state), ctx, args)))
        }
    }
}

/// The service's own setup and dispose as the tool's lifecycle hooks: they run when
/// the tool is placed in and removed from a registry, like any builder's.
fn bind_hooks<S: Send + Sync + 'static>(
    mut builder: crate::tool::ToolBuilder,
    state: &Arc<S>,
    setup: Option<&HookHandler<S>>,
    dispose: Option<&HookHandler<S>>,
) -> crate::tool::ToolBuilder {
    if let Some(setup) = setup {
        let state = Arc::clone(state);
        builder = match *setup {
            HookHandler::Sync(f) => builder.setup(move || f(&state)),
            HookHandler::Async(f) => builder.setup_async(move || f(Arc::clone(&state))),
        };
    }
    if let Some(dispose) = dispose {
        let state = Arc::clone(state);
        builder = match *dispose {
            HookHandler::Sync(f) => builder.dispose(move || f(&state)),
            HookHandler::Async(f) => builder.dispose_async(move || f(Arc::clone(&state))),
        };
    }
    builder
}

fn owned(s: Option<&'static str>) -> Option<String> {
    s.map(str::to_owned)
}

impl<S: Send + Sync + 'static> ServiceSpec<S> {
    /// The service tool over `state`.
    pub(crate) fn build(&self, state: &Arc<S>) -> Result<ToolFunc, ToolError> {
        let names = ordered_methods(self.methods);
        let is_resource = self.methods.iter().any(|m| REST_VERBS.contains(&m.act));
        let mut properties = Map::new();
        properties.insert(
            "act".to_owned(),
            json!({
                "type": "string",
                "description": "The method to run.",
                "enum": names,
            }),
        );
        if is_resource {
            properties.insert(
                "id".to_owned(),
                json!({"description": "The resource id (REST verbs)."}),
            );
            properties.insert(
                "val".to_owned(),
                json!({"description": "The resource value (REST post and put)."}),
            );
        }
        let mut acts = Vec::with_capacity(self.methods.len());
        let mut definitions = Vec::with_capacity(self.methods.len());
        for method in self.methods {
            let timeout = method.timeout_ms.map(Duration::from_millis);
            acts.push(Act {
                name: method.act.to_owned(),
                handler: bind(state, &method.handler),
                timeout,
            });
            let mut params = (method.params)();
            if let Some(map) = params.as_object_mut() {
                map.entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            definitions.push(ActDefinition {
                name: method.act.to_owned(),
                title: owned(method.title),
                description: owned(method.description),
                params,
                result: method.result.map(|f| f()),
                stream: matches!(
                    method.handler,
                    MethodHandler::Stream(_) | MethodHandler::Either(_)
                ),
                timeout: method.timeout_ms,
                annotations: method.annotations.clone(),
                scopes: method.scopes.iter().map(|s| (*s).to_owned()).collect(),
            });
        }
        // Declaration order for the definitions too: the same order as `methods`.
        definitions.sort_by_key(|d| names.iter().position(|n| *n == d.name));
        let mut builder = ToolFunc::builder(self.name)
            .params_schema(json!({"type": "object", "properties": properties}))
            .annotations(self.annotations.clone())
            .api(self.api);
        builder = builder.acts(
            Acts { acts },
            names,
            definitions,
            is_resource.then(|| "res".to_owned()),
        );
        if let Some(title) = self.title {
            builder = builder.title(title);
        }
        if let Some(description) = self.description {
            builder = builder.description(description);
        }
        if let Some(summary) = self.summary {
            builder = builder.summary(summary);
        }
        for alias in self.alias {
            builder = builder.alias(*alias);
        }
        for tag in self.tags {
            builder = builder.tag(*tag);
        }
        builder = builder.scopes(self.scopes.iter().copied());
        if let Some(ms) = self.timeout_ms {
            builder = builder.timeout(Duration::from_millis(ms));
        }
        if let Some(limit) = self.concurrency {
            builder = builder.concurrency(limit);
        }
        bind_hooks(builder, state, self.setup.as_ref(), self.dispose.as_ref()).build()
    }

    /// The `#[prompt]` and `#[resource]` methods over `state`, each as a tool of
    /// its own (the service's scopes and `api` apply to them too).
    pub(crate) fn build_kinds(&self, state: &Arc<S>) -> Result<Vec<KindTool>, ToolError> {
        self.kinds
            .iter()
            .map(|kind| {
                let method = &kind.method;
                let params = (method.params)();
                let mut builder = ToolFunc::builder(kind.name);
                builder.param_order = Some((kind.param_order)(&params));
                builder.params = Some(params.into());
                builder.result = method.result.map(|f| f());
                builder.title = owned(method.title);
                builder.description = owned(method.description);
                builder.tags = kind.tags.iter().map(|t| (*t).to_owned()).collect();
                builder.scopes = self
                    .scopes
                    .iter()
                    .chain(method.scopes)
                    .map(|s| (*s).to_owned())
                    .collect();
                builder.api = self.api && kind.api;
                builder.annotations = method.annotations.clone();
                builder.timeout = method.timeout_ms.map(Duration::from_millis);
                builder.handler = Some(bind(state, &method.handler));
                // The handler deserialises into the parameters struct: that is the check.
                builder.typed = true;
                Ok(KindTool {
                    tool: builder.build()?,
                    uri: kind.uri,
                    mime_type: kind.mime_type,
                    completers: kind.completers,
                })
            })
            .collect()
    }
}

/// A service's tool and its `#[prompt]` and `#[resource]` methods, over one state.
#[doc(hidden)]
pub struct ServiceParts {
    pub(crate) tool: ToolFunc,
    pub(crate) kinds: Vec<KindTool>,
}

impl ServiceParts {
    /// The parts of the service `service`.
    pub(crate) fn of<S: ToolService>(service: impl Into<Arc<S>>) -> Result<Self, ToolError> {
        let state = service.into();
        let spec = S::__spec();
        Ok(Self {
            tool: spec.build(&state)?,
            kinds: spec.build_kinds(&state)?,
        })
    }
}

impl ToolFunc {
    /// The tool of a `#[tool_service]` value: one tool whose methods are its acts.
    ///
    /// Takes the service by value or as an `Arc` (keep a clone to reach its state).
    pub fn from_service<S: ToolService>(service: impl Into<Arc<S>>) -> Result<ToolFunc, ToolError> {
        S::__spec().build(&service.into())
    }
}
