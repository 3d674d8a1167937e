//! `ToolFunc`: one tool, its definition and handler; `ToolRef`, the shared handle
//! registries hold; the handler kinds and dependencies.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::Serialize;
use serde_json::Value;

use super::definition::ToolDefinition;
use super::service::Acts;
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
#[cfg(feature = "validate")]
use crate::schema::Validator;

/// A sync handler: it reads its arguments in place, or takes them when they are
/// owned (`Cow::into_owned` copies only a borrowed object).
pub(crate) type SyncFn = dyn Fn(&Ctx, Cow<'_, Value>) -> Result<Value, ToolError> + Send + Sync;

/// A sync handler as it is held: the plain function the macros submit (called
/// directly, not through a closure's shim) or a closure.
pub(crate) enum SyncHandler {
    Fn(fn(&Ctx, Cow<'_, Value>) -> Result<Value, ToolError>),
    Closure(Box<SyncFn>),
}

impl SyncHandler {
    pub(crate) fn closure(
        f: impl Fn(&Ctx, Cow<'_, Value>) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self::Closure(Box::new(f))
    }

    #[inline]
    pub(crate) fn call(&self, ctx: &Ctx, args: Cow<'_, Value>) -> Result<Value, ToolError> {
        match self {
            Self::Fn(f) => f(ctx, args),
            Self::Closure(f) => f(ctx, args),
        }
    }
}

/// An async handler: like a sync one, it reads its arguments before its future
/// starts, so the future holds only what it parsed.
pub(crate) type AsyncFn =
    dyn Fn(Ctx, Cow<'_, Value>) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;
/// The stream of a streaming tool's items.
pub type ItemStream = BoxStream<'static, Result<Value, ToolError>>;
pub(crate) type StreamFn =
    dyn Fn(Ctx, Cow<'_, Value>) -> BoxFuture<'static, Result<ItemStream, ToolError>> + Send + Sync;
pub(crate) type EitherFn =
    dyn Fn(Ctx, Cow<'_, Value>) -> BoxFuture<'static, Result<Answer, ToolError>> + Send + Sync;

/// A handler's future that fails at once (its arguments did not parse).
pub fn failed_future<T: Send + 'static>(
    err: ToolError,
) -> BoxFuture<'static, Result<T, ToolError>> {
    Box::pin(std::future::ready(Err(err)))
}

/// What a tool that can stream answers a call with: its items, or one value when
/// the caller did not ask for a stream and the tool has it at once (the seed's
/// "Completed in one go"). See
/// [`ToolBuilder::stream_or_value_handler`](crate::ToolBuilder::stream_or_value_handler).
pub enum Answer {
    /// The items, one by one (collected into an array for a caller that wants one
    /// value).
    Items(ItemStream),
    /// One value: sent as it is to a caller that wants one value, as a single item
    /// to one that asked for a stream.
    Value(Value),
}

impl Answer {
    /// One value, serialised (`OUTPUT` when serde cannot write it).
    ///
    /// ```
    /// use toolfunc::Answer;
    ///
    /// let answer = Answer::value(&[3, 2, 1]).unwrap();
    /// assert!(matches!(answer, Answer::Value(v) if v == serde_json::json!([3, 2, 1])));
    /// ```
    pub fn value<T: Serialize + ?Sized>(value: &T) -> Result<Self, ToolError> {
        to_output(value).map(Self::Value)
    }

    /// The items of `items`, each serialised as it comes (an item serde cannot write
    /// ends the stream with `OUTPUT`).
    pub fn items<S, T>(items: S) -> Self
    where
        S: futures::Stream<Item = T> + Send + 'static,
        T: Serialize,
    {
        use futures::StreamExt;
        Self::Items(items.map(|item| to_output(&item)).boxed())
    }

    /// The items of a fallible stream: each `Ok` serialised, an `Err` sent as the
    /// call's error.
    pub fn try_items<S, T>(items: S) -> Self
    where
        S: futures::Stream<Item = Result<T, ToolError>> + Send + 'static,
        T: Serialize,
    {
        use futures::StreamExt;
        Self::Items(
            items
                .map(|item| item.and_then(|item| to_output(&item)))
                .boxed(),
        )
    }
}

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Items(_) => f.debug_tuple("Items").finish_non_exhaustive(),
            Self::Value(value) => f.debug_tuple("Value").field(value).finish(),
        }
    }
}

pub(crate) enum Handler {
    Sync(SyncHandler),
    Async(Box<AsyncFn>),
    Stream(Box<StreamFn>),
    /// A streaming tool that may answer with one value instead.
    Either(Box<EitherFn>),
    /// A service: the `act` argument picks one of its methods' handlers (never
    /// `Acts` themselves).
    Acts(Box<Acts>),
}

impl Handler {
    pub(crate) fn can_stream(&self) -> bool {
        match self {
            Handler::Stream(_) | Handler::Either(_) => true,
            Handler::Acts(acts) => acts.any_stream(),
            _ => false,
        }
    }
}

/// How the arguments are checked before the handler runs.
#[derive(Debug)]
pub(crate) enum ArgCheck {
    /// The handler deserialises into a Rust type; that is the check (no double work),
    /// or the schema accepts any object.
    Nothing,
    /// The arguments are checked against the definition's `params` schema, one the
    /// crate wrote itself (a prompt's or a resource template's arguments), by
    /// [`crate::schema::check_own`].
    Own,
    /// The arguments are checked against the definition's `params` schema, compiled.
    #[cfg(feature = "validate")]
    Schema(Validator),
    /// The same, the schema compiled at the first call
    /// ([`ToolBuilder::defer_schema`]).
    #[cfg(feature = "validate")]
    Deferred(OnceLock<Validator>),
}

/// A registered tool, as [`Registry::get`](crate::Registry::get) returns it: a cheap,
/// shareable handle that derefs to the [`ToolFunc`].
///
/// Tools of the global registry live as long as the program, so their handles are
/// plain references and copying one costs nothing; others are reference-counted.
#[derive(Clone)]
pub struct ToolRef(ToolRepr);

#[derive(Clone)]
pub(crate) enum ToolRepr {
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
    pub(crate) definition: Arc<ToolDefinition>,
    pub(crate) handler: Handler,
    pub(crate) timeout: Option<Duration>,
    pub(crate) check: ArgCheck,
    /// positional arguments ([`Args::positional`](crate::Args::positional)) map the i-th value onto the argument named `positional[i]`.
    /// Made from the parameters schema at the first positional call when the
    /// schema is made at its first read ([`ToolBuilder::params_schema_with`]).
    pub(crate) positional: OnceLock<Vec<String>>,
    /// How `positional` is made from the schema when it is made late: a typed
    /// handler's field order, else the schema's `properties`.
    pub(crate) positional_from: Option<fn(&Value) -> Vec<String>>,
    pub(crate) concurrency_limit: usize,
    pub(crate) depends: Vec<Dependency>,
    pub(crate) setup: Option<Hook>,
    pub(crate) dispose: Option<Hook>,
    /// At most this many calls at once, shared by every registry holding the tool.
    pub(crate) concurrency: Option<Arc<tokio::sync::Semaphore>>,
    /// What the function serves as: a tool, or the function of a prompt or a
    /// resource.
    pub(crate) kind: Kind,
}

/// What a function of the registry serves as, as call middleware sees it
/// ([`Call::kind`](crate::layer::Call::kind)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Kind {
    /// A tool, called by name.
    #[default]
    Tool,
    /// The function of a [prompt](mod@crate::prompt), got by name.
    Prompt,
    /// The function of a [resource](mod@crate::resource), read by URI.
    Resource,
}

/// A tool's asynchronous setup, while (and after) it runs: shared by every call
/// that waits for it.
pub(crate) type Ready = futures::future::Shared<BoxFuture<'static, Result<(), ToolError>>>;

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
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The tool's full definition.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The definition as listings share it: callers from outside see the `summary`
    /// (when there is one) as the description. No copy when there is none.
    pub(crate) fn advertised(&self) -> Arc<ToolDefinition> {
        if self.definition.summary.is_some() {
            Arc::new(self.definition.advertised())
        } else {
            Arc::clone(&self.definition)
        }
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

    /// The parameter names positional arguments map onto, in order.
    pub(crate) fn positional(&self) -> &[String] {
        self.positional.get_or_init(|| match self.positional_from {
            Some(order) => order(&self.definition.params),
            None => property_names(&self.definition.params),
        })
    }

    /// Checks `args` against the parameters schema compiled at the first call: a
    /// schema that cannot be used fails every call with `DEFINITION`.
    #[cfg(feature = "validate")]
    #[inline(never)]
    fn check_deferred(
        &self,
        compiled: &OnceLock<Validator>,
        args: &Value,
    ) -> Result<(), ToolError> {
        let validator = compiled.get_or_init(|| {
            // A schema made at its first read has its root checked here.
            match crate::schema::check_params_root(&self.definition.params) {
                Ok(()) => Validator::compile(&self.definition.params),
                Err(message) => Validator::unusable(message),
            }
        });
        if let Some(message) = validator.definition_error() {
            return Err(ToolError::Definition {
                name: self.definition.name.clone(),
                message,
            });
        }
        if validator.accepts_any_object() {
            return Ok(());
        }
        validator.validate(args)
    }

    /// Normalises and checks the arguments: `null` means no arguments; anything else
    /// must be an object.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    pub(crate) fn prepare<'a>(&self, args: Cow<'a, Value>) -> Result<Cow<'a, Value>, ToolError> {
        let args = match &*args {
            Value::Null => Cow::Owned(Value::Object(serde_json::Map::new())),
            Value::Object(_) => args,
            other => {
                return Err(ToolError::arguments(
                    "",
                    format!(
                        "expected an object of named arguments, found {}",
                        kind_of(other)
                    ),
                ));
            }
        };
        match &self.check {
            ArgCheck::Nothing => {}
            ArgCheck::Own => crate::schema::check_own(&self.definition.params, &args)?,
            #[cfg(feature = "validate")]
            ArgCheck::Schema(validator) => validator.validate(&args)?,
            #[cfg(feature = "validate")]
            ArgCheck::Deferred(compiled) => self.check_deferred(compiled, &args)?,
        }
        Ok(args)
    }

    /// A call's arguments as the object the tool is called with: positional values
    /// named after its parameters.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    pub(crate) fn named_args<'a>(
        &self,
        args: crate::call::Args<'a>,
    ) -> Result<Cow<'a, Value>, ToolError> {
        args.into_named(|values| self.positional_to_named(values))
    }

    #[inline(never)]
    pub(crate) fn positional_to_named(&self, values: Vec<Value>) -> Result<Value, ToolError> {
        let names = self.positional();
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

pub(crate) fn kind_of(value: &Value) -> &'static str {
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
        path: None,
        message: e.to_string(),
    })
}

/// The names of a parameters schema's `properties`, in its order.
pub(crate) fn property_names(params: &Value) -> Vec<String> {
    params
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}
