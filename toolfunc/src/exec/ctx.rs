//! `Ctx`: the per-call context a tool receives, and `CallOptions`: what a caller puts
//! into it (typed extensions, caller identity, timeout, cancellation, progress).

use std::any::{Any, TypeId};
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::Runner;
use crate::ask::AnswerFn;
use crate::exec::task::deadline_for;
use crate::layer::{Extensions, Layer, Layers, Viewer};
use crate::log::{DataText, LogLevel, LogMessage};
use crate::options::{Binding, CallOptions, CollectLimit, LogFn, Progress, ProgressFn, Surface};
use crate::registry::Resolved;
use crate::tool::Dependency;
use crate::tool::ToolRef;
use crate::{Registry, ToolDefinition, ToolError};

/// The context of one call.
///
/// A `#[tool]` function receives it by declaring a `&Ctx` (or `Ctx`) parameter, which
/// is injected and left out of the parameter schema. It carries:
///
/// * which tool runs ([`tool_name`](Ctx::tool_name), [`definition`](Ctx::definition))
///   and under which [`call_id`](Ctx::call_id);
/// * what the caller put in [`CallOptions`]: typed extensions ([`get`](Ctx::get)), the
///   [`caller`](Ctx::caller) identity, a progress listener ([`progress`](Ctx::progress)),
///   a log listener ([`log`](Ctx::log));
/// * cancellation ([`cancellation_token`](Ctx::cancellation_token),
///   [`is_cancelled`](Ctx::is_cancelled)) and the [`deadline`](Ctx::deadline);
/// * cleanup hooks that run when the call ends, however it ends ([`on_cleanup`](Ctx::on_cleanup));
/// * nested calls ([`run`](Ctx::run), [`with`](Ctx::with)) that inherit all of it.
///
/// ```rust,standalone_crate
/// use toolfunc::{tool, CallOptions, Ctx, Registry};
///
/// #[derive(Clone)]
/// struct TraceId(String);
///
/// /// Says which trace it runs in.
/// #[tool]
/// fn whoami(ctx: &Ctx) -> String {
///     let trace = ctx.get::<TraceId>().map_or("-", |t| t.0.as_str());
///     format!("{} in {trace}", ctx.tool_name())
/// }
///
/// let runner = Registry::global().with(CallOptions::new().insert(TraceId("t-42".into())));
/// let out = runner.run_sync("whoami", serde_json::json!({})).unwrap();
/// assert_eq!(out, "whoami in t-42");
/// ```
///
/// A `Ctx` is cheap to create: what the caller supplied is shared, never copied, and
/// every call gets its own `Ctx`, so concurrent calls never see each other's context.
pub struct Ctx {
    /// The registry the call was made through (the caller's; nested calls keep it).
    registry: Registry,
    /// The registry that holds the running tool (where it was found).
    owner: Registry,
    tool: ToolRef,
    call_id: Option<Arc<str>>,
    scope: Scope,
    /// When the call must end: its own timeout from its start, or an enclosing call's
    /// deadline, whichever comes first.
    deadline: Option<Instant>,
    /// A service method's own timeout, when it set the deadline.
    method_timeout: Option<Duration>,
    stream: bool,
    /// Per-call mutable state (cancellation token, cleanups), created on first need.
    /// A clone of the `Ctx` creates it, so every clone shares the same state.
    state: OnceLock<Arc<CallState>>,
}

impl Clone for Ctx {
    fn clone(&self) -> Self {
        let state = OnceLock::new();
        let _ = state.set(Arc::clone(self.state()));
        Self {
            registry: self.registry.clone(),
            owner: self.owner.clone(),
            tool: self.tool.clone(),
            call_id: self.call_id.clone(),
            scope: self.scope.clone(),
            deadline: self.deadline,
            method_timeout: self.method_timeout,
            stream: self.stream,
            state,
        }
    }
}

impl Ctx {
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    pub(crate) fn new(
        registry: Registry,
        owner: Registry,
        tool: ToolRef,
        call_id: Option<Arc<str>>,
        scope: Scope,
    ) -> Self {
        let deadline = deadline_for(tool.timeout(), &scope, scope.inherited_deadline());
        let call_id = call_id.or_else(|| scope.data().and_then(|d| d.call_id.clone()));
        Self {
            registry,
            owner,
            tool,
            call_id,
            scope,
            deadline,
            method_timeout: None,
            stream: false,
            state: OnceLock::new(),
        }
    }

    pub(crate) fn streaming(mut self) -> Self {
        self.stream = true;
        self
    }

    pub(crate) fn tool(&self) -> &ToolRef {
        &self.tool
    }

    pub(crate) fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The call's state, created on first use.
    pub(crate) fn state(&self) -> &Arc<CallState> {
        self.state
            .get_or_init(|| Arc::new(CallState::new(&self.scope)))
    }

    /// The call's state if anything created it.
    pub(crate) fn state_if_created(&self) -> Option<&Arc<CallState>> {
        self.state.get()
    }

    /// The name of the running tool.
    pub fn tool_name(&self) -> &str {
        self.tool.name()
    }

    /// The definition of the running tool.
    pub fn definition(&self) -> &ToolDefinition {
        self.tool.definition()
    }

    /// The id of this call, when it was started with one (`execute` with a
    /// [`ToolCall`](crate::ToolCall)).
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The registry this call was made through (for a nested call: the one the
    /// outermost call was made through).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The registry that holds the running tool: the calling registry or one of its
    /// parents.
    pub fn owner(&self) -> &Registry {
        &self.owner
    }

    /// A value of type `T` that the caller inserted with [`CallOptions::insert`]
    /// (the innermost one when several layers inserted a `T`).
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.scope.get::<T>()
    }

    /// Who is calling, as the caller asserted it with [`CallOptions::caller`].
    ///
    /// toolfunc forwards this value and never verifies it: check it (or derive it from
    /// an authenticated request) before trusting it.
    pub fn caller(&self) -> Option<&str> {
        self.scope.data().and_then(|d| d.caller.as_deref())
    }

    /// Where the call came from: in process, or the surface that received it (which
    /// also attaches what its request carries, such as the HTTP headers).
    pub fn surface(&self) -> Surface {
        self.scope.surface()
    }

    /// What a visibility rule sees of this call's caller.
    pub(crate) fn viewer(&self) -> Viewer<'_> {
        self.scope.viewer()
    }

    /// Whether the caller asked for a stream (`run_stream`) rather than a value.
    pub fn is_stream(&self) -> bool {
        self.stream
    }

    /// The time by which the call must finish, when it has a timeout: the shorter of
    /// the tool's own and the caller's, and never later than an enclosing call's.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The deadline with the call's own timeout (the shorter of the tool's and the
    /// caller's), which a `TIMEOUT` error reports.
    pub(crate) fn deadline_and_timeout(&self) -> Option<(Instant, Option<Duration>)> {
        let timeout = min_duration(self.tool.timeout(), self.scope.timeout());
        let timeout = min_duration(timeout, self.method_timeout);
        self.deadline.map(|at| (at, timeout))
    }

    /// Shortens the call's deadline to `timeout` from now (a service method's own),
    /// unless it already ends sooner.
    pub(crate) fn limit(&mut self, timeout: Duration) {
        let at = Instant::now() + timeout;
        if self.deadline.is_none_or(|deadline| at < deadline) {
            self.deadline = Some(at);
            self.method_timeout = Some(timeout);
        }
    }

    /// The call's cancellation token: cancelled when the call is aborted, times out,
    /// a caller's token fires, or the call's future is dropped. Hand it to work the
    /// tool starts on its own (spawned tasks), so that work stops with the call.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.state().token().clone()
    }

    /// Whether the call has been cancelled (or has timed out).
    pub fn is_cancelled(&self) -> bool {
        self.state_if_created().is_some_and(|s| s.is_cancelled()) || self.scope.any_cancelled()
    }

    /// Registers `cleanup` to run exactly once when the call ends, whichever way it
    /// ends: return, error, panic, timeout, cancellation (including the caller
    /// dropping the call's future), or the end of a returned stream. Cleanups run in
    /// reverse order of registration.
    pub fn on_cleanup(&self, cleanup: impl FnOnce() + Send + 'static) {
        self.state().push_cleanup(Cleanup::Sync(Box::new(cleanup)));
    }

    /// Registers an asynchronous cleanup, run like [`on_cleanup`](Self::on_cleanup)
    /// ones (all of them in reverse order of registration). An async or streaming
    /// call resolves only after it finished; a failure is reported with the call's
    /// result: the cleanup's error alone when the call succeeded, both together
    /// (`AGGREGATE`, the call's error first) when it failed too. A sync call, or a
    /// call whose future was dropped, can only start it (on the tokio runtime; its
    /// failure is logged).
    pub fn on_cleanup_async(
        &self,
        cleanup: impl Future<Output = Result<(), ToolError>> + Send + 'static,
    ) {
        self.state().push_cleanup(Cleanup::Async(Box::pin(cleanup)));
    }

    /// Reports progress to whoever asked for it ([`CallOptions::on_progress`]). Costs
    /// nothing when nobody listens.
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(listener) = self.scope.data().and_then(|d| d.progress.as_ref()) {
            listener(Progress {
                tool: self.tool.name().to_owned(),
                call_id: self.call_id.as_deref().map(str::to_owned),
                done,
                total,
                message: message.map(str::to_owned),
            });
        }
    }

    /// Logs `message` at `level`: a `tracing` event (target `toolfunc::log`, with the
    /// tool's name), and a [`LogMessage`] to whoever listens
    /// ([`CallOptions::on_log`]; over MCP, a `notifications/message` to the client, at
    /// the level it asked for). Costs one disabled `tracing` event when nobody listens.
    ///
    /// ```rust,standalone_crate
    /// use std::sync::{Arc, Mutex};
    /// use toolfunc::{tool, CallOptions, Ctx, LogLevel, Registry};
    ///
    /// /// Checks the disk.
    /// #[tool]
    /// fn checkup(ctx: &Ctx) -> u32 {
    ///     ctx.log(LogLevel::Info, "checking");
    ///     ctx.log(LogLevel::Warning, format_args!("{}% full", 91));
    ///     91
    /// }
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&seen);
    /// let runner = Registry::global()
    ///     .with(CallOptions::new().on_log(move |m| sink.lock().unwrap().push((m.level, m.data))));
    /// runner.run_sync("checkup", serde_json::json!({})).unwrap();
    /// assert_eq!(seen.lock().unwrap()[1], (LogLevel::Warning, "91% full".into()));
    /// ```
    pub fn log(&self, level: LogLevel, message: impl fmt::Display) {
        let Some(listener) = self.scope.data().and_then(|d| d.log.as_ref()) else {
            crate::log::trace(self.tool_name(), self.call_id(), level, None, &message);
            return;
        };
        let text = message.to_string();
        crate::log::trace(self.tool_name(), self.call_id(), level, None, &text);
        listener(self.log_message(level, None, Value::String(text)));
    }

    /// Logs a JSON value (an object of fields, say) at `level`, from the named
    /// `logger` within the tool (`None`: the tool itself), as [`log`](Self::log) does.
    pub fn log_data(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        let text = DataText(&data);
        crate::log::trace(self.tool_name(), self.call_id(), level, logger, &text);
        if let Some(listener) = self.scope.data().and_then(|d| d.log.as_ref()) {
            listener(self.log_message(level, logger, data));
        }
    }

    /// Asks the caller a question, with the JSON Schema its answer must follow, and
    /// waits for the answer (see [`ask`](crate::ask)). `CLIENT_CANNOT_ANSWER` when
    /// the caller cannot answer; the call's cancellation and deadline still apply.
    pub async fn elicit(
        &self,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<crate::ask::Elicitation, ToolError> {
        self.elicit_as(None, message.into(), schema).await
    }

    /// [`elicit`](Self::elicit) under a name (see [`ask_named`](Self::ask_named)).
    pub async fn elicit_named(
        &self,
        name: &str,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<crate::ask::Elicitation, ToolError> {
        self.elicit_as(Some(name.to_owned()), message.into(), schema)
            .await
    }

    async fn elicit_as(
        &self,
        name: Option<String>,
        message: String,
        schema: Value,
    ) -> Result<crate::ask::Elicitation, ToolError> {
        let request = crate::ask::ClientRequest::Elicit { message, schema };
        let answer = self.ask_as(name, request).await?;
        crate::ask::read_elicitation(self.tool_name(), answer)
    }

    /// Asks the caller's model for a completion: `params` are MCP
    /// `sampling/createMessage` params ([`ask::sample_prompt`](crate::ask::sample_prompt)
    /// makes the simple ones); the answer is its result (`{role, content, model,
    /// stopReason}`; [`ask::sampled_text`](crate::ask::sampled_text) reads its text).
    pub async fn sample(&self, params: Value) -> Result<Value, ToolError> {
        self.ask(crate::ask::ClientRequest::Sample(params)).await
    }

    /// Asks the caller for its roots (MCP `roots/list`): `{"roots": [{"uri", "name"}]}`.
    pub async fn roots(&self) -> Result<Value, ToolError> {
        self.ask(crate::ask::ClientRequest::ListRoots).await
    }

    /// Sends `request` to whoever answers for the caller, until the call stops.
    pub async fn ask(&self, request: crate::ask::ClientRequest) -> Result<Value, ToolError> {
        self.ask_as(None, request).await
    }

    /// [`ask`](Self::ask) under a name: an MCP client on the 2026-07-28 protocol
    /// gets the question under it (`inputRequests.<name>`) and answers under it, so
    /// a client that knows the tool can answer before it is asked. Names of one
    /// call's questions asked together must differ.
    pub async fn ask_named(
        &self,
        name: &str,
        request: crate::ask::ClientRequest,
    ) -> Result<Value, ToolError> {
        self.ask_as(Some(name.to_owned()), request).await
    }

    async fn ask_as(
        &self,
        name: Option<String>,
        request: crate::ask::ClientRequest,
    ) -> Result<Value, ToolError> {
        let Some(answer) = self.scope.data().and_then(|d| d.answer.clone()) else {
            return Err(crate::ask::cannot_answer(self.tool_name(), &request));
        };
        let token = self.cancellation_token();
        let asked = answer(name, request);
        let stopped = std::pin::pin!(token.cancelled());
        match futures::future::select(asked, stopped).await {
            futures::future::Either::Left((answer, _)) => answer,
            futures::future::Either::Right(_) => Err(ToolError::Cancelled {
                reason: Some("the call stopped while waiting for its caller's answer".into()),
            }),
        }
    }

    fn log_message(&self, level: LogLevel, logger: Option<&str>, data: Value) -> LogMessage {
        let mut message = LogMessage::new(self.tool.name(), level, data);
        message.call_id = self.call_id.as_deref().map(str::to_owned);
        message.logger = logger.map(str::to_owned);
        message
    }

    /// Runs another tool as part of this call: it inherits this call's extensions,
    /// caller, call id, progress listener, log listener, cancellation and deadline.
    ///
    /// `name` is first looked up among the running tool's dependency aliases, then
    /// resolved by the call's [`Binding`]: with `Auto` (the default), a shadow in the
    /// calling registry wins when that registry descends from the one holding the
    /// running tool; `Early` keeps to the holding registry; `Late` always resolves in
    /// the calling registry.
    pub async fn run<'v>(
        &self,
        name: &str,
        args: impl Into<crate::Args<'v>>,
    ) -> Result<Value, ToolError> {
        let found = self
            .resolve_nested(name)
            .ok_or_else(|| ToolError::not_found(name))?;
        let args = found.tool.named_args(args.into())?.into_owned();
        self.with(CallOptions::new())
            .run_resolved(found, args)
            .await
    }

    /// Finds the tool a nested call of `name` runs, per the dependency aliases and the
    /// binding strategy.
    pub(crate) fn resolve_nested(&self, name: &str) -> Option<Resolved> {
        let dependency = self.tool.depends.iter().find(|d| d.alias == name);
        let name = dependency.map_or(name, Dependency::name);
        let binding = self.scope.data().map_or(Binding::Auto, |d| d.binding);
        match binding {
            Binding::Late => self.registry.resolve(name),
            Binding::Early => self.owner.resolve(name),
            Binding::Auto => {
                if self.registry.descends_from(&self.owner)
                    && let Some(found) = self.registry.resolve(name)
                    && found.owner.descends_from(&self.owner)
                {
                    // A shadow between the caller and the definer.
                    return Some(found);
                }
                self.owner.resolve(name)
            }
        }
    }

    /// Streams another tool as part of this call (see [`Ctx::run`]).
    pub fn run_stream<'v>(
        &self,
        name: &str,
        args: impl Into<crate::Args<'v>>,
    ) -> crate::ToolStream {
        self.with(CallOptions::new()).run_stream(name, args)
    }

    /// A runner for calls that start from a fresh context, inheriting nothing of
    /// this call's (the seed's `inheritContext: false`): only `options`, no
    /// extensions, caller or listeners of the caller, no deadline, and not
    /// cancelled with this call. Use it for work that must outlive or stand apart
    /// from the call, such as an audit record.
    ///
    /// ```rust,standalone_crate
    /// use serde_json::json;
    /// use toolfunc::{tool, CallOptions, Ctx, Registry, ToolError};
    ///
    /// /// Reports who called.
    /// #[tool]
    /// fn who(ctx: &Ctx) -> Option<String> {
    ///     ctx.caller().map(str::to_owned)
    /// }
    ///
    /// /// Asks `who` twice: inheriting this call's context, and from a fresh one.
    /// #[tool]
    /// async fn both(ctx: &Ctx) -> Result<serde_json::Value, ToolError> {
    ///     let inherited = ctx.run("who", json!({})).await?;
    ///     let fresh = ctx.fresh(CallOptions::new()).run("who", json!({})).await?;
    ///     Ok(json!([inherited, fresh]))
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let ann = Registry::global().with(CallOptions::new().caller("ann"));
    /// assert_eq!(ann.run("both", json!({})).await.unwrap(), json!(["ann", null]));
    /// # });
    /// ```
    pub fn fresh(&self, options: CallOptions) -> Runner {
        Runner::new(self.registry.clone(), Scope::default().with(options))
    }

    /// A runner for nested calls that inherit this call's context, with `options`
    /// added on top (for those calls only).
    pub fn with(&self, options: CallOptions) -> Runner {
        Runner::new(self.registry.clone(), self.nested_scope(options))
    }

    /// The scope of a call nested in this one.
    pub(crate) fn nested_scope(&self, options: CallOptions) -> Scope {
        let token = self.state().token().clone();
        let mut data = ScopeData::overlay(self.scope.data(), options);
        // The nested call is cancelled with this one (whose token already follows the
        // outer sources) and cannot outlive its deadline.
        let own = data.cancel.split_off(self.scope.cancel_sources().len());
        data.cancel = std::iter::once(token).chain(own).collect();
        data.merge_cancellation();
        data.deadline = min_deadline(data.deadline, self.deadline());
        // Reports from nested calls carry the id of the call they belong to.
        if data.call_id.is_none() {
            data.call_id.clone_from(&self.call_id);
        }
        Scope(Some(Arc::new(data)))
    }
}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("tool", &self.tool_name())
            .field("call_id", &self.call_id)
            .field("caller", &self.caller())
            .field("deadline", &self.deadline())
            .finish_non_exhaustive()
    }
}

/// What the calls of one runner share: resolved once when the runner is made.
#[derive(Clone, Default)]
pub(crate) struct Scope(Option<Arc<ScopeData>>);

pub(crate) struct ScopeData {
    binding: Binding,
    extensions: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
    /// Outer layers' extensions, searched after these.
    parent: Option<Arc<ScopeData>>,
    caller: Option<Arc<str>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) cancel: Vec<CancellationToken>,
    /// With several cancellation sources: one token that fires when any does, kept
    /// by a watcher task that lives as long as this scope.
    merged: Option<(CancellationToken, DropGuard)>,
    /// The id of the call that nested calls belong to.
    call_id: Option<Arc<str>>,
    progress: Option<ProgressFn>,
    log: Option<LogFn>,
    answer: Option<AnswerFn>,
    collect_limit: Option<CollectLimit>,
    surface: Option<Surface>,
    /// Call middleware of the runner (and its outer runners), outermost first.
    layers: Option<Layers>,
}

pub(crate) fn min_duration(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub(crate) fn min_deadline(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl ScopeData {
    fn overlay(parent: Option<&Arc<ScopeData>>, options: CallOptions) -> Self {
        let CallOptions {
            binding,
            extensions,
            caller,
            call_id,
            timeout,
            cancel,
            progress,
            log,
            answer,
            collect_limit,
            surface,
        } = options;
        let inherited = |f: fn(&ScopeData) -> Option<Duration>| parent.and_then(|p| f(p));
        let timeout = match (timeout, inherited(|p| p.timeout)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Self {
            binding: binding
                .or_else(|| parent.map(|p| p.binding))
                .unwrap_or_default(),
            extensions,
            parent: parent.cloned(),
            caller: caller.or_else(|| parent.and_then(|p| p.caller.clone())),
            timeout,
            deadline: parent.and_then(|p| p.deadline),
            cancel: parent
                .map(|p| p.cancel.clone())
                .unwrap_or_default()
                .into_iter()
                .chain(cancel)
                .collect(),
            merged: None,
            call_id: call_id.or_else(|| parent.and_then(|p| p.call_id.clone())),
            progress: progress.or_else(|| parent.and_then(|p| p.progress.clone())),
            log: log.or_else(|| parent.and_then(|p| p.log.clone())),
            answer: answer.or_else(|| parent.and_then(|p| p.answer.clone())),
            collect_limit: collect_limit.or_else(|| parent.and_then(|p| p.collect_limit)),
            surface: surface.or_else(|| parent.and_then(|p| p.surface)),
            layers: parent.and_then(|p| p.layers.clone()),
        }
    }

    /// With several cancellation sources, makes one token that follows them all (when
    /// a tokio runtime can run the watcher); calls then derive their token from it.
    fn merge_cancellation(&mut self) {
        if self.cancel.len() < 2 {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let merged = CancellationToken::new();
        let alive = CancellationToken::new();
        let sources: Vec<_> = self
            .cancel
            .iter()
            .map(|t| Box::pin(t.clone().cancelled_owned()))
            .collect();
        let (target, stop) = (merged.clone(), alive.clone());
        runtime.spawn(async move {
            let any = futures::future::select_all(sources);
            if let futures::future::Either::Right(_) =
                futures::future::select(Box::pin(stop.cancelled_owned()), any).await
            {
                target.cancel();
            }
        });
        self.merged = Some((merged, alive.drop_guard()));
    }

    /// The one token a call's token derives from, if there is one.
    fn parent_token(&self) -> Option<&CancellationToken> {
        match (self.cancel.as_slice(), &self.merged) {
            ([one], _) => Some(one),
            (_, Some((merged, _))) => Some(merged),
            _ => None,
        }
    }

    fn get(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
        let mut layer = Some(self);
        while let Some(data) = layer {
            if let Some((_, value)) = data.extensions.iter().rev().find(|(t, _)| *t == id) {
                return Some(&**value);
            }
            layer = data.parent.as_deref();
        }
        None
    }
}

impl Scope {
    pub(crate) const fn none() -> Self {
        Self(None)
    }

    pub(crate) fn with(&self, options: CallOptions) -> Self {
        let mut data = ScopeData::overlay(self.0.as_ref(), options);
        data.merge_cancellation();
        Self(Some(Arc::new(data)))
    }

    /// This scope with `layer` added after its own.
    pub(crate) fn with_layer(&self, layer: Arc<dyn Layer>) -> Self {
        let mut data = ScopeData::overlay(self.0.as_ref(), CallOptions::new());
        data.merge_cancellation();
        let layers = data.layers.iter().flat_map(|l| l.iter().cloned());
        data.layers = Some(layers.chain(std::iter::once(layer)).collect());
        Self(Some(Arc::new(data)))
    }

    /// The runner's layers, outermost first.
    pub(crate) fn layers(&self) -> Option<&Layers> {
        self.0.as_ref().and_then(|d| d.layers.as_ref())
    }

    pub(crate) fn surface(&self) -> Surface {
        self.0.as_ref().and_then(|d| d.surface).unwrap_or_default()
    }

    pub(crate) fn viewer(&self) -> Viewer<'_> {
        Viewer::new(
            self.0.as_ref().and_then(|d| d.caller.as_deref()),
            self.surface(),
            self,
        )
    }

    pub(crate) fn data(&self) -> Option<&Arc<ScopeData>> {
        self.0.as_ref()
    }

    fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.as_ref()?.get(TypeId::of::<T>())?.downcast_ref::<T>()
    }

    /// The deadline of an enclosing call, for calls nested in it.
    pub(crate) fn inherited_deadline(&self) -> Option<Instant> {
        self.0.as_ref().and_then(|d| d.deadline)
    }

    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.0.as_ref().and_then(|d| d.timeout)
    }

    /// The bound on collecting a stream into one value, for calls of this scope.
    pub(crate) fn collect_limit(&self) -> CollectLimit {
        self.0
            .as_ref()
            .and_then(|d| d.collect_limit)
            .unwrap_or_default()
    }

    pub(crate) fn cancel_sources(&self) -> &[CancellationToken] {
        self.0.as_ref().map_or(&[], |d| d.cancel.as_slice())
    }

    /// The sources a running call must watch itself: none when its token derives
    /// from them (one source, or several merged).
    pub(crate) fn unmerged_sources(&self) -> &[CancellationToken] {
        match self.0.as_deref() {
            Some(data) if data.parent_token().is_none() => &data.cancel,
            _ => &[],
        }
    }

    fn any_cancelled(&self) -> bool {
        self.cancel_sources()
            .iter()
            .any(CancellationToken::is_cancelled)
    }
}

impl Extensions for Scope {
    fn extension(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
        self.0.as_ref()?.get(id)
    }
}

const OPEN: u8 = 0;
const USED: u8 = 1;
const CLOSED: u8 = 2;

/// A cleanup registered by a call.
enum Cleanup {
    Sync(Box<dyn FnOnce() + Send>),
    Async(BoxFuture<'static, Result<(), ToolError>>),
}

/// Per-call state shared by every clone of a call's `Ctx` and by the code driving the
/// call.
pub(crate) struct CallState {
    /// The call's token, made on first use (most calls never need one).
    token: OnceLock<CancellationToken>,
    /// The single caller token the call's token derives from, if there is one.
    parent: Option<CancellationToken>,
    /// Set by `abort` before any token exists; a token made later starts cancelled.
    aborted: AtomicBool,
    /// What stopped the call, as the caller will see it (the first stop wins);
    /// boxed, as most calls are never stopped and the state of each call in flight
    /// stays small.
    stop: OnceLock<Box<ToolError>>,
    /// `OPEN` (no cleanup yet), `USED` (some registered) or `CLOSED` (the call ended
    /// with none): most calls have none, and never take the lock.
    cleanup_state: AtomicU8,
    cleanups: Mutex<Option<Vec<Cleanup>>>,
}

impl CallState {
    fn new(scope: &Scope) -> Self {
        // The call's token is a child of the caller's (one source, or several merged):
        // cancellation propagates without anyone watching.
        Self {
            token: OnceLock::new(),
            parent: scope.data().and_then(|d| d.parent_token().cloned()),
            aborted: AtomicBool::new(false),
            stop: OnceLock::new(),
            cleanup_state: AtomicU8::new(OPEN),
            cleanups: Mutex::new(Some(Vec::new())),
        }
    }

    pub(crate) fn token(&self) -> &CancellationToken {
        let mut made = false;
        let token = self.token.get_or_init(|| {
            made = true;
            self.parent
                .as_ref()
                .map_or_else(CancellationToken::new, CancellationToken::child_token)
        });
        // `abort` sets the flag before it looks for a token, and a new token looks at
        // the flag after it is stored: one of the two sees the other.
        if made && self.aborted.load(Ordering::SeqCst) {
            token.cancel();
        }
        token
    }

    /// Whether the call has been cancelled, without making a token.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
            || self
                .parent
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
            || self
                .token
                .get()
                .is_some_and(CancellationToken::is_cancelled)
    }

    /// Stops the call with `error` (`CANCELLED` or `TIMEOUT`); the first stop wins.
    pub(crate) fn stop(&self, error: ToolError) {
        if self.stop.get().is_none() {
            let _ = self.stop.set(Box::new(error));
        }
        self.aborted.store(true, Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
    }

    /// Cancels the call, with the caller's reason.
    pub(crate) fn abort(&self, reason: Option<String>) {
        self.stop(ToolError::cancelled(reason));
    }

    /// The error the call ended with when it was stopped.
    pub(crate) fn stop_error(&self) -> ToolError {
        self.stop
            .get()
            .map_or_else(|| ToolError::cancelled(None), |error| (**error).clone())
    }

    fn push_cleanup(&self, cleanup: Cleanup) {
        if self
            .cleanup_state
            .compare_exchange(OPEN, USED, Ordering::SeqCst, Ordering::SeqCst)
            == Err(CLOSED)
        {
            // The call already ended: run it now rather than never.
            start_cleanups(vec![cleanup]);
            return;
        }
        let mut slot = self.cleanups.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(list) = slot.as_mut() {
            list.push(cleanup);
        } else {
            // The call already ended: run it now rather than never.
            drop(slot);
            start_cleanups(vec![cleanup]);
        }
    }

    fn take_cleanups(&self) -> Vec<Cleanup> {
        // None registered: close without the lock; a later one then runs at once.
        if self
            .cleanup_state
            .compare_exchange(OPEN, CLOSED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
            || self.cleanup_state.load(Ordering::SeqCst) == CLOSED
        {
            return Vec::new();
        }
        let mut list = self
            .cleanups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default();
        list.reverse();
        list
    }

    /// Runs the registered cleanups, once (later calls find nothing to run): sync ones
    /// here, async ones started on the tokio runtime (their failures logged).
    pub(crate) fn run_cleanups(&self) {
        start_cleanups(self.take_cleanups());
    }

    /// The registered cleanups as one future that runs them all, in order, and
    /// returns their failures; `None` (after running them) when none is async.
    pub(crate) fn cleanups_future(&self) -> Option<BoxFuture<'static, Vec<ToolError>>> {
        let list = self.take_cleanups();
        if !list.iter().any(|c| matches!(c, Cleanup::Async(_))) {
            start_cleanups(list);
            return None;
        }
        Some(Box::pin(async move {
            let mut errors = Vec::new();
            for cleanup in list {
                match cleanup {
                    Cleanup::Sync(run) => run_sync_cleanup(run),
                    Cleanup::Async(run) => match AssertUnwindSafe(run).catch_unwind().await {
                        Ok(Ok(())) => {}
                        Ok(Err(err)) => errors.push(err),
                        Err(panic) => errors.push(crate::panic::panicked(&*panic)),
                    },
                }
            }
            errors
        }))
    }
}

fn start_cleanups(list: Vec<Cleanup>) {
    let mut pending = Vec::new();
    for cleanup in list {
        match cleanup {
            Cleanup::Sync(run) => run_sync_cleanup(run),
            Cleanup::Async(mut run) => match (&mut run).now_or_never() {
                Some(Ok(())) => {}
                Some(Err(err)) => tracing::error!(error = %err, "a cleanup failed"),
                None => pending.push(run),
            },
        }
    }
    if pending.is_empty() {
        return;
    }
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            for run in pending {
                if let Err(err) = run.await {
                    tracing::error!(error = %err, "a cleanup failed");
                }
            }
        });
    } else {
        tracing::warn!("an asynchronous cleanup needs a tokio runtime; it did not run");
    }
}

fn run_sync_cleanup(run: Box<dyn FnOnce() + Send>) {
    let caught = {
        let _catching = crate::panic::Catching::enter();
        std::panic::catch_unwind(AssertUnwindSafe(run))
    };
    if let Err(panic) = caught {
        let message = crate::panic::panic_message(&*panic);
        tracing::error!(panic = %message, "a cleanup hook panicked");
    }
}

/// A call's result with its cleanups' failures: the cleanups' alone when the call
/// succeeded, both (the call's first) when it failed too.
pub(crate) fn with_cleanup_errors(
    result: Result<Value, ToolError>,
    mut errors: Vec<ToolError>,
) -> Result<Value, ToolError> {
    if errors.is_empty() {
        return result;
    }
    match result {
        Ok(_) => {
            Err(ToolError::aggregate(errors).unwrap_or_else(|| ToolError::failed("cleanup failed")))
        }
        Err(err) => {
            errors.insert(0, err);
            Err(ToolError::Aggregate { errors })
        }
    }
}
