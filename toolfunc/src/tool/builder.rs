//! `ToolBuilder`: tools made at run time, and what the macros' tools are built with.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::definition::{Annotations, ToolDefinition};
use super::func::{
    Answer, ArgCheck, Dependency, DependencyTarget, Handler, Hook, Kind, SyncHandler, ToolFunc,
    ToolRef, failed_future, property_names, to_output,
};
use super::service::{ActDefinition, Acts};
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
#[cfg(feature = "validate")]
use crate::schema::Validator;
use crate::schema::{
    Schema, check_params_root, field_order, parse_args_of, result_schema_of, schema_of,
};

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
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) summary: Option<String>,
    pub(crate) alias: Vec<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) params: Option<Schema>,
    pub(crate) result: Option<Value>,
    pub(crate) param_order: Option<Vec<String>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) background: bool,
    pub(crate) background_only: bool,
    /// Whether each result is checked against the result schema.
    pub(crate) check_output: bool,
    /// Compile the parameters schema at the first call instead of in `build`.
    pub(crate) defer_schema: bool,
    pub(crate) needs_client: Vec<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) annotations: Annotations,
    /// Derives the positional order from the typed handler's argument type.
    pub(crate) typed_order: Option<fn(&Value) -> Vec<String>>,
    pub(crate) handler: Option<Handler>,
    /// Whether the handler deserialises into a Rust type (which checks the arguments).
    pub(crate) typed: bool,
    /// Whether the parameters schema was given rather than derived.
    pub(crate) schema_given: bool,
    /// Whether the given schema is one the crate wrote itself (a prompt's or a
    /// resource template's arguments), checked without the `validate` feature.
    pub(crate) own_schema: bool,
    pub(crate) depends: Vec<Dependency>,
    pub(crate) setup: Option<Hook>,
    pub(crate) dispose: Option<Hook>,
    pub(crate) concurrency: Option<usize>,
    pub(crate) api: bool,
    pub(crate) action: Option<String>,
    pub(crate) methods: Vec<String>,
    pub(crate) act_definitions: Vec<ActDefinition>,
}

impl fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ToolBuilder {
    pub(crate) fn new(name: String) -> Self {
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
            background_only: false,
            check_output: false,
            defer_schema: false,
            needs_client: Vec::new(),
            scopes: Vec::new(),
            annotations: Annotations::default(),
            typed_order: None,
            handler: None,
            typed: false,
            own_schema: false,
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
    #[cfg_attr(
        not(any(feature = "http-client", feature = "nats")),
        expect(dead_code, reason = "the HTTP and NATS clients' remote tools only")
    )]
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

    /// Adds OAuth scopes a caller from outside needs, all of them, to see and call
    /// the tool: over HTTP, MCP and NATS, a caller whose verified
    /// [`Identity`](crate::identity::Identity) lacks one does not find the tool in
    /// listings, and a call by its name is refused with 403 `INSUFFICIENT_SCOPE`
    /// naming the scopes to ask for. Surfaces without an authenticator and the
    /// program's own calls are not checked. A scope is a non-empty run of visible
    /// ASCII without `"` or `\` (RFC 6749 §3.3).
    ///
    /// ```
    /// use toolfunc::ToolFunc;
    ///
    /// let tool = ToolFunc::builder("delete_file")
    ///     .scopes(["files:write"])
    ///     .handler_sync(|_ctx, _args| Ok(serde_json::Value::Null))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(tool.definition().scopes, ["files:write"]);
    /// ```
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        for scope in scopes {
            let scope = scope.into();
            if !self.scopes.contains(&scope) {
                self.scopes.push(scope);
            }
        }
        self
    }

    /// Sets the parameters schema (its root must be `"type": "object"`). Arguments are
    /// checked against it before the handler runs, typed handlers included (whose
    /// deserialisation alone would not enforce bounds such as `minimum`).
    ///
    /// The check needs the `validate` feature; without it, [`build`](Self::build)
    /// refuses with `DEFINITION` a schema that could refuse any object, rather than
    /// leave the arguments unchecked.
    pub fn params_schema(mut self, schema: Value) -> Self {
        self.params = Some(schema.into());
        self.schema_given = true;
        self
    }

    /// The parameters schema of a prompt or a resource template made at run time:
    /// string arguments, some required, checked by the crate's own reader of the
    /// schemas it writes.
    pub(crate) fn params_own(mut self, schema: Value) -> Self {
        self.params = Some(schema.into());
        self.schema_given = true;
        self.own_schema = true;
        self
    }

    /// Sets the parameters schema as a function that makes it the first time
    /// anything reads it (a listing, a search, a call), instead of now: a catalogue
    /// of thousands of tools built at run time starts without making their schemas.
    ///
    /// It is [`params_schema`](Self::params_schema) with
    /// [`defer_schema`](Self::defer_schema) in all else: the schema is checked and
    /// compiled at the first call, and one that cannot be used (a root that is not
    /// `"type": "object"`, invalid JSON Schema) fails each call with `DEFINITION`
    /// and is left out of MCP's tool list. Positional arguments follow
    /// [`param_order`](Self::param_order) if set, else the schema's `properties`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolfunc::{Registry, ToolFunc};
    ///
    /// let registry = Registry::new();
    /// let tool = ToolFunc::builder("shout")
    ///     .description("Upper-cases a text.")
    ///     .params_schema_with(|| json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
    ///     .handler_sync(|_ctx, args| Ok(json!(args["text"].as_str().unwrap_or_default().to_uppercase())))
    ///     .build()
    ///     .unwrap();
    /// assert!(!tool.definition().params.is_made());
    /// registry.register(tool).unwrap();
    /// assert_eq!(registry.run_sync("shout", json!({"text": "hi"})).unwrap(), json!("HI"));
    /// assert_eq!(registry.run_sync("shout", json!({})).unwrap_err().code(), "ARGUMENTS");
    /// ```
    pub fn params_schema_with(mut self, make: impl Fn() -> Value + Send + Sync + 'static) -> Self {
        self.params = Some(Schema::with(move || with_properties(make())));
        self.schema_given = true;
        self
    }

    /// Sets the result schema.
    pub fn result_schema(mut self, schema: Value) -> Self {
        self.result = Some(schema);
        self
    }

    /// Sets the order in which positional arguments ([`Args::positional`](crate::Args::positional)) map onto parameter
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

    /// Checks every result against the result schema (FEATURES C3): a value the
    /// schema refuses ends the call with `OUTPUT`, whose `data.path` is the JSON
    /// Pointer of the first refused value. A streaming tool's items are checked one
    /// by one. Building fails with `DEFINITION` when the tool has no result schema
    /// ([`result_schema`](Self::result_schema), or derived by [`typed`](Self::typed))
    /// or is a service (its methods have schemas of their own).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolfunc::{Registry, ToolFunc};
    ///
    /// let registry = Registry::new();
    /// registry.register(
    ///     ToolFunc::builder("total")
    ///         .result_schema(json!({"type": "object", "properties": {"sum": {"type": "number"}}}))
    ///         .check_output(true)
    ///         .handler_sync(|_ctx, args| Ok(json!({"sum": args["as_text"].as_bool().map_or(json!(3), |_| json!("3"))})))
    ///         .build()
    ///         .unwrap(),
    /// ).unwrap();
    /// assert_eq!(registry.run_sync("total", json!({})).unwrap(), json!({"sum": 3}));
    /// let err = registry.run_sync("total", json!({"as_text": true})).unwrap_err();
    /// assert_eq!(err.code(), "OUTPUT");
    /// assert_eq!(err.data().unwrap()["path"], "/sum");
    /// ```
    ///
    /// The check needs the `validate` feature; without it, [`build`](Self::build)
    /// refuses the tool with `DEFINITION` (and `#[tool(check_output)]` does not
    /// compile).
    pub fn check_output(mut self, yes: bool) -> Self {
        self.check_output = yes;
        self
    }

    /// Compiles the parameters schema at the tool's first call instead of in
    /// [`build`](Self::build): for catalogues of thousands of tools made at run time
    /// (from a spec, another server's list), whose start should not wait for every
    /// schema. A server of 10,000 such tools answers its first `tools/list` in a
    /// fraction of the time (`benches/cold_start.rs`).
    ///
    /// `build` still refuses a root that is not an object; a schema that cannot be
    /// used otherwise (not valid JSON Schema, a dangling `$ref`, unbounded work) then
    /// fails each call with `DEFINITION` instead of `build`. Tools whose typed
    /// arguments are the check compile nothing either way.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolfunc::{Registry, ToolFunc};
    ///
    /// let registry = Registry::new();
    /// let lazy = ToolFunc::builder("lazy")
    ///     .params_schema(json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "(["}}}))
    ///     .defer_schema(true)
    ///     .handler_sync(|_ctx, _args| Ok(json!(null)))
    ///     .build()
    ///     .unwrap(); // an eager build would refuse the bad pattern here
    /// registry.register(lazy).unwrap();
    /// let err = registry.run_sync("lazy", json!({"s": "x"})).unwrap_err();
    /// assert_eq!(err.code(), "DEFINITION");
    /// ```
    pub fn defer_schema(mut self, yes: bool) -> Self {
        self.defer_schema = yes;
        self
    }

    /// Sets the tool's own timeout: a call still running after it ends with `TIMEOUT`
    /// (a caller's shorter timeout wins). Enforced for async and streaming tools; a
    /// sync handler runs to its end once started, and a value it returns late is
    /// dropped for `TIMEOUT`.
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

    /// A [`background`](Self::background) tool whose every remote call is tracked,
    /// however soon it ends: over MCP a `tools/call` always answers with a task (a
    /// client that did not declare the tasks extension is refused with `-32021`);
    /// over HTTP it is a `background` tool. Implies `background`.
    pub fn background_only(mut self, yes: bool) -> Self {
        self.background_only = yes;
        if yes {
            self.background = true;
        }
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
            let opening = f(ctx, args.into_owned());
            Box::pin(async move { Ok(opening.await?.boxed()) })
        })));
        self.typed = false;
        self
    }

    /// Sets the handler of a tool that streams when asked to and may otherwise answer
    /// with one value (the seed's `run(name, {stream: false})`, "Completed in one
    /// go"): it reads [`Ctx::is_stream`] and returns an [`Answer`]. Items given to a
    /// caller that wants one value are collected into an array, and a value given to
    /// one that asked for a stream is its single item. The definition says
    /// `"stream": true`.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use serde_json::json;
    /// use toolfunc::stream::Answer;
    /// use toolfunc::{Registry, ToolFunc};
    ///
    /// let registry = Registry::new();
    /// registry.register(
    ///     ToolFunc::builder("ticks")
    ///         .stream_or_value_handler(|ctx, _args| async move {
    ///             if ctx.is_stream() {
    ///                 let items = futures::stream::iter([1, 2].map(|n| Ok(json!({"tick": n}))));
    ///                 Ok(Answer::Items(items.boxed()))
    ///             } else {
    ///                 Ok(Answer::Value(json!([1, 2])))
    ///             }
    ///         })
    ///         .build()
    ///         .unwrap(),
    /// ).unwrap();
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// assert_eq!(registry.run("ticks", json!({})).await.unwrap(), json!([1, 2]));
    /// let items: Vec<_> = registry.run_stream("ticks", json!({})).map(Result::unwrap).collect().await;
    /// assert_eq!(items, [json!({"tick": 1}), json!({"tick": 2})]);
    /// # });
    /// ```
    pub fn stream_or_value_handler<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Answer, ToolError>> + Send + 'static,
    {
        self.handler = Some(Handler::Either(Box::new(move |ctx, args| {
            Box::pin(f(ctx, args.into_owned()))
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
            Box::pin(f(ctx, args.into_owned()))
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
            let args = args.into_owned();
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
        self.handler = Some(Handler::Sync(SyncHandler::closure(move |ctx, args| {
            f(ctx, args.into_owned())
        })));
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
            // Parsed before the future: read in place when the caller lent them.
            let args = match parse_args_of::<A>(&args, schema_of::<A>) {
                Ok(args) => args,
                Err(err) => return failed_future(err),
            };
            let f = Arc::clone(&f);
            Box::pin(async move { to_output(&f(ctx, args).await?) })
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
        self.handler = Some(Handler::Sync(SyncHandler::closure(move |ctx, args| {
            to_output(&f(ctx, parse_args_of::<A>(&args, schema_of::<A>)?)?)
        })));
        self
    }

    pub(crate) fn set_typed_schemas<A: DeserializeOwned + JsonSchema, R: JsonSchema>(&mut self) {
        if !self.schema_given {
            self.params = Some(schema_of::<A>().into());
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
    pub fn build(mut self) -> Result<ToolFunc, ToolError> {
        let definition_error = |message: String| ToolError::Definition {
            name: self.name.clone(),
            message,
        };
        if self.name.is_empty() {
            return Err(definition_error("the tool name is empty".into()));
        }
        let params = self.params.take().unwrap_or_default();
        // A schema made at its first read is checked then (`check_deferred`).
        let lazy = !params.is_made();
        let (params, positional) = if lazy {
            (
                params,
                self.param_order
                    .clone()
                    .map_or_else(OnceLock::new, OnceLock::from),
            )
        } else {
            let params = with_properties(params.into_value());
            check_params_root(&params).map_err(definition_error)?;
            let positional = match (self.param_order.clone(), self.typed_order) {
                (Some(names), _) => names,
                (None, Some(order)) => order(&params),
                (None, None) => property_names(&params),
            };
            (params.into(), OnceLock::from(positional))
        };
        // Typed handlers check by deserialising; a given schema is checked as well.
        let check = if self.typed && !self.schema_given {
            ArgCheck::Nothing
        } else if self.own_schema {
            ArgCheck::Own
        } else {
            schema_check(&params, self.defer_schema || lazy).map_err(definition_error)?
        };
        self.check_needs().map_err(definition_error)?;
        if let Some(bad) = self.scopes.iter().find(|s| !crate::identity::is_scope(s)) {
            return Err(definition_error(format!(
                "`{bad}` is not an OAuth scope: a scope is a non-empty run of visible \
                 ASCII characters without `\"` or `\\`"
            )));
        }
        let Some(handler) = self.handler else {
            return Err(definition_error("no handler was set".into()));
        };
        let handler = if self.check_output {
            checked(handler, self.result.as_ref()).map_err(definition_error)?
        } else {
            handler
        };
        if self.concurrency == Some(0) {
            return Err(definition_error(
                "the concurrency limit must be at least 1".into(),
            ));
        }
        Ok(ToolFunc {
            definition: Arc::new(ToolDefinition {
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
                background_only: self.background_only,
                needs_client: self.needs_client,
                scopes: self.scopes,
                annotations: self.annotations,
                action: self.action,
                methods: self.methods,
                acts: self.act_definitions,
                api: self.api,
            }),
            // A background tool's timeout is a soft deadline, not the call's end.
            timeout: if self.background { None } else { self.timeout },
            handler,
            check,
            positional,
            positional_from: self.typed_order,
            concurrency_limit: self.concurrency.unwrap_or(0),
            concurrency: self
                .concurrency
                .map(|n| Arc::new(tokio::sync::Semaphore::new(n))),
            depends: self.depends,
            setup: self.setup,
            dispose: self.dispose,
            kind: Kind::Tool,
        })
    }
}

impl ToolBuilder {
    /// What the tool asks of its callers and of other tools is well formed.
    fn check_needs(&self) -> Result<(), String> {
        if let Some(unknown) = self
            .needs_client
            .iter()
            .find(|c| !["sampling", "elicitation", "roots"].contains(&c.as_str()))
        {
            return Err(format!(
                "`needs_client` names what a caller answers (\"sampling\", \"elicitation\" \
                 or \"roots\"), not `{unknown}`"
            ));
        }
        let mut aliases = std::collections::HashSet::new();
        for dependency in &self.depends {
            if !aliases.insert(dependency.alias.as_str()) {
                return Err(format!(
                    "two dependencies share the alias `{}`",
                    dependency.alias
                ));
            }
        }
        Ok(())
    }
}

/// How the arguments of a tool given `params` as JSON are checked: compiled now, or
/// at the first call when `deferred`.
#[cfg(feature = "validate")]
fn schema_check(params: &Schema, deferred: bool) -> Result<ArgCheck, String> {
    if deferred {
        return Ok(ArgCheck::Deferred(OnceLock::new()));
    }
    let validator = Validator::compile(params);
    if let Some(message) = validator.definition_error() {
        return Err(message);
    }
    Ok(if validator.accepts_any_object() {
        ArgCheck::Nothing
    } else {
        ArgCheck::Schema(validator)
    })
}

/// Without the `validate` feature, only a schema that accepts every object can be
/// given as JSON: any other would go unchecked.
#[cfg(not(feature = "validate"))]
fn schema_check(params: &Schema, deferred: bool) -> Result<ArgCheck, String> {
    if !deferred && crate::schema::accepts_any_object(params) {
        return Ok(ArgCheck::Nothing);
    }
    Err(NEEDS_VALIDATE.to_owned())
}

/// Why a tool given its parameters schema as JSON does not build without the
/// `validate` feature.
#[cfg(not(feature = "validate"))]
const NEEDS_VALIDATE: &str = "its arguments are to be checked against the JSON Schema given \
     with `params_schema`, which needs toolfunc's `validate` feature: turn it on, or take \
     the arguments as a type (`typed`, `#[tool]`), which is checked by deserialising";

/// Without the `validate` feature, results cannot be checked against their schema.
#[cfg(not(feature = "validate"))]
fn checked(_handler: Handler, _schema: Option<&Value>) -> Result<Handler, String> {
    Err(
        "`check_output` checks each result against its JSON Schema, which needs \
         toolfunc's `validate` feature"
            .to_owned(),
    )
}

/// `handler` with each result (each item, for a stream) checked against `schema`.
#[cfg(feature = "validate")]
fn checked(handler: Handler, schema: Option<&Value>) -> Result<Handler, String> {
    let Some(schema) = schema else {
        return Err("`check_output` needs a result schema to check against".into());
    };
    let validator = Validator::compile(schema);
    if let Some(message) = validator.definition_error() {
        return Err(format!("its result schema: {message}"));
    }
    let check = move |value: Value| match validator.validate(&value) {
        Ok(()) => Ok(value),
        Err(ToolError::Arguments { path, message }) => Err(ToolError::Output {
            path: Some(path),
            message,
        }),
        Err(other) => Err(other),
    };
    Ok(match handler {
        Handler::Sync(f) => Handler::Sync(SyncHandler::closure(move |ctx, args| {
            f.call(ctx, args).and_then(&check)
        })),
        Handler::Async(f) => {
            let check = Arc::new(check);
            Handler::Async(Box::new(move |ctx, args| {
                let (call, check) = (f(ctx, args), Arc::clone(&check));
                Box::pin(async move { call.await.and_then(|v| check(v)) })
            }))
        }
        Handler::Stream(f) => {
            let check = Arc::new(check);
            Handler::Stream(Box::new(move |ctx, args| {
                let (opening, check) = (f(ctx, args), Arc::clone(&check));
                Box::pin(async move {
                    let items = opening.await?;
                    Ok(items.map(move |item| item.and_then(|v| check(v))).boxed())
                })
            }))
        }
        Handler::Either(f) => {
            let check = Arc::new(check);
            Handler::Either(Box::new(move |ctx, args| {
                let (answering, check) = (f(ctx, args), Arc::clone(&check));
                Box::pin(async move {
                    Ok(match answering.await? {
                        Answer::Value(value) => Answer::Value(check(value)?),
                        Answer::Items(items) => Answer::Items(
                            items.map(move |item| item.and_then(|v| check(v))).boxed(),
                        ),
                    })
                })
            }))
        }
        Handler::Acts(_) => {
            return Err(
                "`check_output` applies to tools; a service's methods have result schemas \
                 of their own"
                    .into(),
            );
        }
    })
}

/// `schema` with `properties` on its object root: providers expect it, even empty.
pub(crate) fn with_properties(mut schema: Value) -> Value {
    if let Some(map) = schema.as_object_mut() {
        map.entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    schema
}

/// Where a tool's builder starts.
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
            background_only,
            needs_client,
            scopes,
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
            background_only,
            needs_client,
            scopes,
            annotations,
            api,
            action,
            methods,
            act_definitions: acts,
            schema_given: true,
            ..ToolBuilder::new(name)
        }
    }
}
