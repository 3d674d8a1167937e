//! `Ctx`: the per-call context a tool receives: what it may read of its call (the
//! tool, call id, caller, extensions, deadline) and what it may do (watch for
//! cancellation, register cleanups, report progress and logs, ask its caller, make
//! nested calls).

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;
use crate::exec::deadline::{deadline_for, min_deadline, min_duration};
use crate::exec::scope::{Scope, ScopeData};
use crate::exec::state::{CallState, Cleanup};
use crate::identity::Identity;
use crate::layer::Viewer;
use crate::log::{DataText, LogLevel, LogMessage};
use crate::options::{Binding, CallOptions, Progress, Surface};
use crate::registry::Registry;
use crate::registry::Resolved;
use crate::tool::Dependency;
use crate::tool::ToolRef;
use crate::tool::{Kind, ToolDefinition};

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

    /// What the running function serves as: a tool, or a prompt's or a resource's
    /// function (whose name is the prompt's, or the resource's).
    pub fn kind(&self) -> Kind {
        self.tool.kind
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

    /// Who is calling, as the caller stated it with [`CallOptions::caller`] (or a
    /// surface from what the client sent about itself): a label for logs, never
    /// verified. Trust [`identity`](Self::identity) instead.
    pub fn caller(&self) -> Option<&str> {
        self.scope.data().and_then(|d| d.caller.as_deref())
    }

    /// Who is calling, as an authenticator verified it: set by a remote surface with
    /// an [`Authenticator`](crate::auth::Authenticator), or by
    /// [`CallOptions::identity`]. `None` for an unauthenticated call.
    pub fn identity(&self) -> Option<&Identity> {
        self.scope.data().and_then(|d| d.identity.as_ref())
    }

    /// Whose the call is: the verified subject, else the stated caller.
    pub(crate) fn principal(&self) -> Option<&str> {
        match self.identity() {
            Some(identity) => Some(identity.key()),
            None => self.caller(),
        }
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
