//! What a caller puts into a call besides its arguments: [`CallOptions`] (typed
//! extensions, caller identity, call id, timeout, cancellation, progress, log and
//! answer listeners, collect limit), how nested calls bind ([`Binding`]), and the
//! [`Progress`] a tool reports. Plain data: the execution floor reads it.

use std::any::{Any, TypeId};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ask::AnswerFn;
use crate::error::ToolError;
use crate::identity::Identity;
use crate::log::LogMessage;

/// How a tool's nested calls (`ctx.run(name, ..)`) choose between a tool of the
/// registry that holds the running tool and a shadow of it in the calling registry.
///
/// ```rust
/// use serde_json::{json, Value};
/// use toolfunc::{Binding, CallOptions, Registry, ToolFunc};
///
/// let text = |name: &str, out: &'static str| {
///     ToolFunc::builder(name).handler_sync(move |_, _| Ok(json!(out))).build().unwrap()
/// };
/// let parent = Registry::new();
/// parent.register(text("dep", "parent-dep")).unwrap();
/// parent
///     .register(
///         ToolFunc::builder("main")
///             .handler(|ctx, _| async move { ctx.run("dep", Value::Null).await })
///             .build()
///             .unwrap(),
///     )
///     .unwrap();
/// let child = parent.isolate();
/// child.register(text("dep", "child-dep")).unwrap();
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(child.run("main", Value::Null).await.unwrap(), "child-dep");
/// assert_eq!(parent.run("main", Value::Null).await.unwrap(), "parent-dep");
/// let early = child.with(CallOptions::new().binding(Binding::Early));
/// assert_eq!(early.run("main", Value::Null).await.unwrap(), "parent-dep");
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Binding {
    /// Late-bind to a shadow only when the calling registry descends from the one
    /// holding the running tool (polymorphism for plugins, stability for same-scope
    /// calls).
    #[default]
    Auto,
    /// Always the registry holding the running tool, ignoring shadows.
    Early,
    /// Always the calling registry.
    Late,
}

/// A progress report from a running tool (see [`Ctx::progress`](crate::Ctx::progress)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The reporting tool.
    pub tool: String,
    /// The call's id, when it has one.
    pub call_id: Option<String>,
    /// How much is done.
    pub done: f64,
    /// How much there is in all, when known.
    pub total: Option<f64>,
    /// A human-readable note.
    pub message: Option<String>,
}

impl Progress {
    /// A report from `tool`: `done` out of `total`.
    pub fn new(tool: impl Into<String>, done: f64, total: Option<f64>) -> Self {
        Self {
            tool: tool.into(),
            call_id: None,
            done,
            total,
            message: None,
        }
    }

    /// Sets the call id.
    #[must_use]
    pub fn call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    /// Sets the message.
    #[must_use]
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

pub(crate) type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;
pub(crate) type LogFn = Arc<dyn Fn(LogMessage) + Send + Sync>;

/// What a caller puts into the context of its calls: typed extensions, its identity,
/// a timeout, cancellation tokens and a progress listener.
///
/// Give it to [`Registry::with`](crate::Registry::with) (or [`Ctx::with`](crate::Ctx::with) for nested calls) to get a runner
/// whose calls all carry it. Runners chain: `registry.with(a).with(b)` sees both, `b`
/// winning where they overlap.
///
/// ```
/// use std::time::Duration;
/// use tokio_util::sync::{CancellationToken, DropGuard};
/// use toolfunc::CallOptions;
///
/// struct UserId(u64);
///
/// let stop = CancellationToken::new();
/// let options = CallOptions::new()
///     .insert(UserId(7))
///     .caller("billing-service")
///     .timeout(Duration::from_secs(5))
///     .cancel_on(stop.clone())
///     .on_progress(|p| eprintln!("{}: {}/{:?}", p.tool, p.done, p.total));
/// # let _ = options;
/// ```
#[derive(Default)]
#[must_use]
pub struct CallOptions {
    pub(crate) binding: Option<Binding>,
    pub(crate) extensions: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
    pub(crate) caller: Option<Arc<str>>,
    pub(crate) identity: Option<Identity>,
    pub(crate) call_id: Option<Arc<str>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) cancel: Vec<CancellationToken>,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) log: Option<LogFn>,
    pub(crate) answer: Option<AnswerFn>,
    pub(crate) collect_limit: Option<CollectLimit>,
    pub(crate) surface: Option<Surface>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("binding", &self.binding)
            .field("extensions", &self.extensions.len())
            .field("caller", &self.caller)
            .field("identity", &self.identity)
            .field("call_id", &self.call_id)
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel.len())
            .field("progress", &self.progress.is_some())
            .field("log", &self.log.is_some())
            .field("answer", &self.answer.is_some())
            .field("collect_limit", &self.collect_limit)
            .field("surface", &self.surface)
            .finish()
    }
}

impl CallOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a typed value the tool reads with [`Ctx::get`](crate::Ctx::get); replaces a `T` given
    /// before in these options.
    pub fn insert<T: Any + Send + Sync>(mut self, value: T) -> Self {
        let id = TypeId::of::<T>();
        self.extensions.retain(|(t, _)| *t != id);
        self.extensions.push((id, Arc::new(value)));
        self
    }

    /// Names the caller, as the caller states it: a label for logs, not verified.
    /// Without an [`identity`](Self::identity), tracked calls and per-caller limits
    /// key on it.
    pub fn caller(mut self, caller: impl Into<String>) -> Self {
        self.caller = Some(Arc::from(caller.into()));
        self
    }

    /// Sets the verified identity of the caller (a remote surface sets it from what
    /// its [`Authenticator`](crate::auth::Authenticator) verified). Tracked calls,
    /// parked rounds and per-caller limits then key on its issuer and subject ([`Identity::key`]), and tools that
    /// declare scopes are offered to remote callers by the scopes it grants.
    pub fn identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Names the calls made with these options: [`Ctx::call_id`](crate::Ctx::call_id) of the call (and of
    /// calls nested in it), in its progress, log and tracing events. A remote
    /// surface sets it from the id its request carries.
    pub fn call_id(mut self, id: impl Into<String>) -> Self {
        self.call_id = Some(Arc::from(id.into()));
        self
    }

    /// Sets a timeout for each call. The shorter of this and the tool's own timeout
    /// applies (and, when given more than once or over an outer runner's, the shortest
    /// of them all); expiry ends the call with `TIMEOUT`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(self.timeout.map_or(timeout, |t| t.min(timeout)));
        self
    }

    /// Cancels the calls when `token` is cancelled (several tokens: when any is).
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel.push(token);
        self
    }

    /// How the calls' nested calls bind to shadowed tools (default [`Binding::Auto`]).
    pub fn binding(mut self, binding: Binding) -> Self {
        self.binding = Some(binding);
        self
    }

    /// Sends the calls' progress reports ([`Ctx::progress`](crate::Ctx::progress)) to `listener`.
    pub fn on_progress(mut self, listener: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(listener));
        self
    }

    /// Sends the calls' log messages ([`Ctx::log`](crate::Ctx::log), [`Ctx::log_data`](crate::Ctx::log_data)) to `listener`,
    /// nested calls' too (they still become `tracing` events as well).
    pub fn on_log(mut self, listener: impl Fn(LogMessage) + Send + Sync + 'static) -> Self {
        self.log = Some(Arc::new(listener));
        self
    }

    /// Answers what the calls ask their caller ([`Ctx::elicit`](crate::Ctx::elicit), [`Ctx::sample`](crate::Ctx::sample)),
    /// nested calls' too: `answer` gets the [`ClientRequest`](crate::ask::ClientRequest)
    /// and resolves to the answer in MCP's shape (`{action, content}` for an
    /// elicitation, a `sampling/createMessage` result for a sample). Without it a
    /// question fails with `CLIENT_CANNOT_ANSWER`.
    pub fn on_client_request<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(crate::ask::ClientRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.answer = Some(Arc::new(move |_name, request| Box::pin(answer(request))));
        self
    }

    /// [`on_client_request`](Self::on_client_request) for answerers that also want
    /// the name the tool gave its question.
    pub(crate) fn on_named_client_request<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(Option<String>, crate::ask::ClientRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.answer = Some(Arc::new(move |name, request| {
            Box::pin(answer(name, request))
        }));
        self
    }

    /// Bounds what a streaming tool may gather into one value when a call does not
    /// ask for a stream (`run` of a streaming tool, an MCP `tools/call`, an LLM
    /// tool call). Nested calls inherit it. Default: [`CollectLimit::default`].
    pub fn collect_limit(mut self, limit: CollectLimit) -> Self {
        self.collect_limit = Some(limit);
        self
    }

    /// Says which surface the calls arrive through ([`Ctx::surface`](crate::Ctx::surface)).
    /// The HTTP, MCP, NATS and LLM surfaces set it themselves; nested calls keep
    /// their enclosing call's.
    pub fn surface(mut self, surface: Surface) -> Self {
        self.surface = Some(surface);
        self
    }
}

/// Where a call came from, as call middleware and tools see it
/// ([`Ctx::surface`](crate::Ctx::surface), [`layer::Call::surface`](crate::layer::Call::surface)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Surface {
    /// A call made in this process (`Registry::run`, a runner, a nested call).
    #[default]
    InProcess,
    /// An HTTP request to `toolfunc::http` (the request's headers are in the context
    /// as a `toolfunc::http::HeaderMap`).
    Http,
    /// An MCP `tools/call` (the client's `clientInfo` is in the context as a
    /// `toolfunc::mcp::ClientInfo`; over HTTP, the headers as for HTTP).
    Mcp,
    /// A tool call in an LLM provider's message (`toolfunc::llm`).
    Llm,
    /// A request to a `toolfunc::nats` worker.
    Nats,
}

/// The most a streaming tool's items may add up to when they are collected into one
/// array: a count of items and an estimate of their size in bytes (the length of
/// their JSON text). A stream that passes either ends the call with
/// `RESULT_TOO_LARGE` (status 413) instead of growing without bound.
///
/// ```
/// use toolfunc::{CallOptions, CollectLimit};
///
/// let limit = CollectLimit::default();
/// assert_eq!((limit.items, limit.bytes), (100_000, 16 * 1024 * 1024));
/// let options = CallOptions::new().collect_limit(CollectLimit::new(1_000, 1 << 20));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectLimit {
    /// The most items (default 100,000).
    pub items: usize,
    /// The most bytes of JSON text, estimated (default 16 MiB).
    pub bytes: usize,
}

impl CollectLimit {
    /// A limit of `items` items and `bytes` bytes.
    pub const fn new(items: usize, bytes: usize) -> Self {
        Self { items, bytes }
    }

    /// No limit at all (for trusted, in-process callers only).
    pub const fn unlimited() -> Self {
        Self {
            items: usize::MAX,
            bytes: usize::MAX,
        }
    }

    /// The error a stream that passed this limit ends with.
    pub(crate) fn exceeded(&self, tool: &str, items: usize, bytes: usize) -> ToolError {
        let (what, max) = if items > self.items {
            ("items", self.items)
        } else {
            ("bytes", self.bytes)
        };
        ToolError::custom(
            "RESULT_TOO_LARGE",
            413,
            format!(
                "`{tool}` streamed more than {max} {what} into one result; \
                 ask for a stream, or raise the collect limit"
            ),
        )
        .with_data(serde_json::json!({"limit": what, "max": max, "items": items, "bytes": bytes}))
    }
}

impl Default for CollectLimit {
    fn default() -> Self {
        Self {
            items: 100_000,
            bytes: 16 * 1024 * 1024,
        }
    }
}

/// The length of `value`'s compact JSON text, near enough to bound memory (strings
/// are counted unescaped), in one walk without allocating.
pub(crate) fn json_size(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(b) => 4 + usize::from(!*b),
        // Numbers print in at most 24 characters; 8 is a fair average.
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|v| json_size(v) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + json_size(v))
                .sum::<usize>()
        }
    }
}

/// What the ledger reads of the options it tracks a call with.
impl CallOptions {
    /// Whose the calls are: the verified subject, else the name the caller gave.
    pub(crate) fn owner(&self) -> Option<&str> {
        match &self.identity {
            Some(identity) => Some(identity.key()),
            None => self.caller.as_deref(),
        }
    }

    /// Adds a progress listener after the one already set (if any): both are called.
    pub(crate) fn also_on_progress(
        mut self,
        listener: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Self {
        let listener: ProgressFn = match self.progress.take() {
            None => Arc::new(listener),
            Some(first) => Arc::new(move |progress: Progress| {
                first(progress.clone());
                listener(progress);
            }),
        };
        self.progress = Some(listener);
        self
    }
}
