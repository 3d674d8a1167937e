//! Call middleware: layers that see every call, from every surface.
#![doc = include_str!("../docs/layer.md")]

mod limit;
mod metrics;
mod trace;

use std::any::{Any, TypeId};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

pub use limit::{
    ConcurrencyLimit, DEFAULT_MAX_CALLER_BYTES, DEFAULT_MAX_CALLERS, DEFAULT_MAX_TABLE_BYTES,
    RateLimit,
};
pub use metrics::{
    DEFAULT_BUCKETS, DEFAULT_MAX_ERROR_CODE_BYTES, DEFAULT_MAX_ERROR_CODES, DEFAULT_MAX_TOOLS,
    MAX_BUCKETS, Metrics, MetricsSettings, OTHER, PROMETHEUS_CONTENT_TYPE,
};
pub use trace::Trace;

use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::identity::Identity;
use crate::options::{CallOptions, Surface};
use crate::tool::{Kind, Ready, ToolDefinition};

/// Call middleware: sees every call of the registry or runner it is attached to.
///
/// Implement [`call`](Layer::call) to act around the rest of the call, and
/// [`visible`](Layer::visible) to hide tools from some callers. As with a tower
/// service, the future `call` returns owns what it needs (`'static`): a layer with
/// state clones the `Arc` of it into the future. A layer that decides at once (a
/// refusal, a pass-through) returns [`ReplyFuture::ready`] or `next.run(call)`, and
/// costs no allocation.
///
/// ```rust,standalone_crate
/// use serde_json::{json, Value};
/// use toolfunc::layer::{Call, Layer, Next, Reply, ReplyFuture};
/// use toolfunc::{tool, Registry};
///
/// /// Doubles a number.
/// #[tool]
/// fn double(n: i64) -> i64 {
///     n * 2
/// }
///
/// /// Adds one to every number a tool returns.
/// struct PlusOne;
///
/// impl Layer for PlusOne {
///     fn call(&self, call: Call, next: Next) -> ReplyFuture {
///         ReplyFuture::new(async move {
///             match next.run(call).await? {
///                 Reply::Value(Value::Number(n)) => Ok(Reply::Value(json!(n.as_i64().unwrap_or(0) + 1))),
///                 other => Ok(other),
///             }
///         })
///     }
/// }
///
/// let registry = Registry::global().isolate().layer(PlusOne);
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// assert_eq!(registry.run("double", json!({"n": 20})).await.unwrap(), json!(41));
/// # });
/// ```
pub trait Layer: Send + Sync + 'static {
    /// Runs the call: refuse it, or change it and hand it to `next`, then look at or
    /// replace what comes back.
    fn call(&self, call: Call, next: Next) -> ReplyFuture;

    /// Whether the caller `viewer` describes may see `tool` (and call it). A tool any
    /// layer hides is left out of listings made for that caller, and calling it is
    /// `NOT_FOUND`. Everything is visible unless a layer says otherwise.
    fn visible(&self, tool: &ToolDefinition, viewer: &Viewer<'_>) -> bool {
        let _ = (tool, viewer);
        true
    }
}

/// What a layer's [`call`](Layer::call) returns: the reply at once
/// ([`ready`](Self::ready), no allocation) or a future of it ([`new`](Self::new)).
#[must_use = "a reply future does nothing unless awaited or returned"]
pub struct ReplyFuture(Pending);

enum Pending {
    Ready(Option<Result<Reply, ToolError>>),
    Boxed(BoxFuture<'static, Result<Reply, ToolError>>),
}

impl fmt::Debug for ReplyFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.0 {
            Pending::Ready(Some(_)) => "ready",
            Pending::Ready(None) => "taken",
            Pending::Boxed(_) => "pending",
        };
        f.debug_tuple("ReplyFuture").field(&state).finish()
    }
}

impl ReplyFuture {
    /// A reply that is there already: a refusal, or a value computed on the spot.
    pub fn ready(reply: Result<Reply, ToolError>) -> Self {
        Self(Pending::Ready(Some(reply)))
    }

    /// A reply still to come.
    pub fn new(future: impl Future<Output = Result<Reply, ToolError>> + Send + 'static) -> Self {
        Self(Pending::Boxed(Box::pin(future)))
    }

    /// The reply, when it is there already (taken once).
    pub(crate) fn take_ready(&mut self) -> Option<Result<Reply, ToolError>> {
        match &mut self.0 {
            Pending::Ready(reply) => reply.take(),
            Pending::Boxed(_) => None,
        }
    }
}

impl From<BoxFuture<'static, Result<Reply, ToolError>>> for ReplyFuture {
    fn from(future: BoxFuture<'static, Result<Reply, ToolError>>) -> Self {
        Self(Pending::Boxed(future))
    }
}

impl Future for ReplyFuture {
    type Output = Result<Reply, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            Pending::Ready(reply) => Poll::Ready(
                reply
                    .take()
                    .unwrap_or_else(|| Err(ToolError::failed("reply polled after completion"))),
            ),
            Pending::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

/// The layers a call passes, outermost first.
pub(crate) type Layers = Arc<[Arc<dyn Layer>]>;

/// What the caller waits for: one value, or a stream of items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `run`, `execute`, nested calls: one value (a stream is collected).
    Value,
    /// `run_sync`: one value, on the calling thread, without waiting.
    Sync,
    /// `run_stream`: the items one by one.
    Stream,
    /// `spawn`: one value, on the tokio runtime, abortable.
    Spawn,
}

/// A call on its way through the layers: the tool that will run, its arguments and
/// its context.
pub struct Call {
    pub(crate) ctx: Ctx,
    pub(crate) args: Value,
    pub(crate) mode: Mode,
    pub(crate) ready: Option<Ready>,
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("tool", &self.tool())
            .field("caller", &self.caller())
            .field("surface", &self.surface())
            .field("stream", &self.is_stream())
            .finish_non_exhaustive()
    }
}

impl Call {
    /// The canonical name of the tool that will run (an alias the caller used is
    /// resolved).
    pub fn tool(&self) -> &str {
        self.ctx.tool_name()
    }

    /// The definition of the tool that will run.
    pub fn definition(&self) -> &ToolDefinition {
        self.ctx.definition()
    }

    /// What runs: a tool, or the function of a prompt (`prompts/get`,
    /// [`Registry::prompt`](crate::Registry::prompt)) or of a resource
    /// (`resources/read`, [`Registry::read`](crate::Registry::read)). For these,
    /// [`tool`](Self::tool) is the prompt's name or the resource's, and
    /// [`args`](Self::args) its arguments or the URI template's variables.
    pub fn kind(&self) -> Kind {
        self.ctx.kind()
    }

    /// For a service, the canonical name of the method the arguments' `act` names
    /// (`"$hello"` whether the caller sent `hello` or `$hello`, `"get"`); `None` for a
    /// plain tool, or an `act` the service does not have (the service refuses it).
    pub fn act(&self) -> Option<&str> {
        let def = self.definition();
        if def.acts.is_empty() {
            return None;
        }
        let sent = self.args.get("act")?.as_str()?;
        def.act_named(sent).map(|(_, act)| act.name.as_str())
    }

    /// The arguments as they stand (a layer before this one may have changed them).
    pub fn args(&self) -> &Value {
        &self.args
    }

    /// The arguments, to change before the call runs.
    pub fn args_mut(&mut self) -> &mut Value {
        &mut self.args
    }

    /// The call's context: caller, call id, deadline, cancellation, and the typed
    /// values the caller or the surface attached ([`Ctx::get`]).
    pub fn ctx(&self) -> &Ctx {
        &self.ctx
    }

    /// Who is calling, as the caller or the surface said (`CallOptions::caller`, the
    /// HTTP client-id headers, the MCP client's name).
    pub fn caller(&self) -> Option<&str> {
        self.ctx.caller()
    }

    /// Who is calling, as an authenticator verified it ([`Ctx::identity`]).
    pub fn identity(&self) -> Option<&Identity> {
        self.ctx.identity()
    }

    /// Where the call came from.
    pub fn surface(&self) -> Surface {
        self.ctx.surface()
    }

    /// Whether the caller asked for the items one by one (`run_stream`, an NDJSON or
    /// MCP stream); the reply is then best a [`Reply::Stream`].
    pub fn is_stream(&self) -> bool {
        self.mode == Mode::Stream
    }

    /// Whether the caller waits on its own thread (`run_sync`): a layer that would
    /// have to wait gives an error instead.
    pub fn is_sync(&self) -> bool {
        self.mode == Mode::Sync
    }
}

/// What a call gives back through the layers.
pub enum Reply {
    /// One value (a streaming tool's items collected, when the caller asked for one
    /// value).
    Value(Value),
    /// The items one by one, for a caller that asked for a stream. Dropping it stops
    /// the producer and runs the call's cleanups.
    Stream(BoxStream<'static, Result<Value, ToolError>>),
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Value(value) => f.debug_tuple("Value").field(value).finish(),
            Self::Stream(_) => f.debug_tuple("Stream").finish_non_exhaustive(),
        }
    }
}

/// The rest of the chain after a layer: the layers after it, then the call itself.
/// Cloning it gives a second handle on the same rest, for a layer that runs it again
/// (a retry, with [`Call::retry`]).
#[derive(Clone)]
pub struct Next {
    layers: Layers,
    at: usize,
    end: End,
}

/// Runs a call once every layer has let it through.
pub(crate) type End = fn(Call) -> ReplyFuture;

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next")
            .field("layers", &self.layers.len().saturating_sub(self.at))
            .finish_non_exhaustive()
    }
}

impl Next {
    pub(crate) fn new(layers: Layers, end: End) -> Self {
        Self { layers, at: 0, end }
    }

    /// Runs the rest of the chain with `call`.
    pub fn run(self, call: Call) -> ReplyFuture {
        let Some(layer) = self.layers.get(self.at).cloned() else {
            return (self.end)(call);
        };
        let next = Next {
            at: self.at + 1,
            ..self
        };
        layer.call(call, next)
    }
}

impl Call {
    /// A fresh call of the same tool with the same context and arguments, for a layer
    /// that retries: run the original, and on failure run this one with a clone of
    /// the [`Next`]. The copy shares the original's cancellation and deadline.
    #[must_use]
    pub fn retry(&self) -> Call {
        Call {
            ctx: self.ctx.clone(),
            args: self.args.clone(),
            mode: self.mode,
            ready: self.ready.clone(),
        }
    }
}

/// What a visibility rule knows of the caller it decides for.
pub struct Viewer<'a> {
    caller: Option<&'a str>,
    identity: Option<&'a Identity>,
    surface: Surface,
    extensions: &'a dyn Extensions,
}

impl fmt::Debug for Viewer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Viewer")
            .field("caller", &self.caller)
            .field("identity", &self.identity)
            .field("surface", &self.surface)
            .finish_non_exhaustive()
    }
}

/// Typed values a caller or surface attached, looked up by type.
pub(crate) trait Extensions: Sync {
    fn extension(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)>;
}

impl<'a> Viewer<'a> {
    pub(crate) fn new(
        caller: Option<&'a str>,
        identity: Option<&'a Identity>,
        surface: Surface,
        extensions: &'a dyn Extensions,
    ) -> Self {
        Self {
            caller,
            identity,
            surface,
            extensions,
        }
    }

    /// Who is asking, as it says itself (a label, not verified).
    pub fn caller(&self) -> Option<&str> {
        self.caller
    }

    /// Who is asking, as an authenticator verified it.
    pub fn identity(&self) -> Option<&Identity> {
        self.identity
    }

    /// Where the listing or call is made for.
    pub fn surface(&self) -> Surface {
        self.surface
    }

    /// A typed value the caller or the surface attached (an HTTP request's
    /// [`HeaderMap`](https://docs.rs/http/latest/http/header/struct.HeaderMap.html),
    /// a value from `CallOptions::insert`).
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions
            .extension(TypeId::of::<T>())?
            .downcast_ref::<T>()
    }
}

impl Extensions for CallOptions {
    fn extension(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
        self.extensions
            .iter()
            .rev()
            .find(|(t, _)| *t == id)
            .map(|(_, value)| &**value)
    }
}

/// The viewer calls made with `options` would have.
pub(crate) fn viewer_of(options: &CallOptions) -> Viewer<'_> {
    Viewer::new(
        options.caller.as_deref(),
        options.identity.as_ref(),
        options.surface.unwrap_or_default(),
        options,
    )
}

/// Whether every layer lets `viewer` see `tool`.
pub(crate) fn visible(
    layers: &[Arc<dyn Layer>],
    tool: &ToolDefinition,
    viewer: &Viewer<'_>,
) -> bool {
    layers.iter().all(|layer| layer.visible(tool, viewer))
}

/// A layer made of a synchronous check: it sees the call (and may change its
/// arguments) before anything runs, and refuses it with an error.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::{layer, tool, Registry, ToolError};
///
/// /// Echoes its text.
/// #[tool]
/// fn echo(text: String) -> String {
///     text
/// }
///
/// let registry = Registry::global().isolate().layer(layer::before(|call| {
///     if let Some(text) = call.args_mut().get_mut("text") {
///         *text = json!(text.as_str().unwrap_or_default().trim());
///     }
///     Ok(())
/// }));
/// assert_eq!(registry.run_sync("echo", json!({"text": "  hi "})).unwrap(), "hi");
/// ```
pub fn before<F>(check: F) -> Before<F>
where
    F: Fn(&mut Call) -> Result<(), ToolError> + Send + Sync + 'static,
{
    Before(check)
}

/// The layer [`before`] makes.
pub struct Before<F>(F);

impl<F> fmt::Debug for Before<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Before")
    }
}

impl<F> Layer for Before<F>
where
    F: Fn(&mut Call) -> Result<(), ToolError> + Send + Sync + 'static,
{
    fn call(&self, mut call: Call, next: Next) -> ReplyFuture {
        match (self.0)(&mut call) {
            Ok(()) => next.run(call),
            Err(err) => ReplyFuture::ready(Err(err)),
        }
    }
}

/// An authorisation layer: `rule` sees each call (its tool, act, caller, surface and
/// context) before anything runs and refuses it with its error. A refusal costs the
/// rule and no more: no admission, no argument check, no handler.
///
/// See the [module](self) example.
pub fn authorize<F>(rule: F) -> Before<impl Fn(&mut Call) -> Result<(), ToolError> + Send + Sync>
where
    F: Fn(&Call) -> Result<(), ToolError> + Send + Sync + 'static,
{
    Before(move |call: &mut Call| rule(call))
}

/// A visibility rule as a layer: `rule(tool, viewer)` says whether that caller may
/// see the tool; a hidden tool is left out of that caller's listings and calling it
/// is `NOT_FOUND`.
///
/// See the [module](self) example.
pub fn visibility<F>(rule: F) -> Visibility<F>
where
    F: Fn(&ToolDefinition, &Viewer<'_>) -> bool + Send + Sync + 'static,
{
    Visibility(rule)
}

/// The layer [`visibility`] makes.
pub struct Visibility<F>(F);

impl<F> fmt::Debug for Visibility<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Visibility")
    }
}

impl<F> Layer for Visibility<F>
where
    F: Fn(&ToolDefinition, &Viewer<'_>) -> bool + Send + Sync + 'static,
{
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        next.run(call)
    }

    fn visible(&self, tool: &ToolDefinition, viewer: &Viewer<'_>) -> bool {
        (self.0)(tool, viewer)
    }
}
