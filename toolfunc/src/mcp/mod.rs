//! The MCP server (feature `mcp`): any [`Registry`] served to Model Context Protocol
//! clients over stdio or streamable HTTP, on the official SDK ([`rmcp`]).
//!
//! - `tools/list` lists every tool remote callers may see (`api = false` tools stay
//!   hidden), service methods as `{service}_{method}`, in name order, with `title`,
//!   `annotations` and the schemas as the tools wrote them (JSON Schema 2020-12:
//!   `$schema`, `$defs` and `$ref` are kept, nothing is inlined). `outputSchema` is
//!   the result's schema: any schema for 2026-07-28 clients, object schemas only for
//!   older ones. The list is made once per registry change and kept (the SDK asks
//!   for one tool on every sessionless HTTP request), and comes in pages of
//!   [`Server::page_size`] tools (default [`DEFAULT_PAGE_SIZE`]) with opaque
//!   cursors; a cursor this server did not give is `-32602`. A tool MCP cannot take
//!   (a name outside `[A-Za-z0-9_.-]{1,128}`) is left out with a `tracing` warning
//!   naming it.
//! - `tools/call` runs the tool. Argument and handler errors come back as a result
//!   with `isError: true`, the message as text, and `{code, data}` under the result's
//!   `_meta["io.github.toolfunc/error"]`; an unknown tool is a JSON-RPC error (`-32602`).
//!   Results are text content, plus `structuredContent` when the value is an object
//!   (for 2026-07-28 clients: any value of a tool that has an output schema). A
//!   [`Content`](crate::Content) result is its blocks. A streaming tool's items are
//!   collected into an array.
//! - `notifications/cancelled` cancels the call's token ([`Ctx::cancellation_token`]).
//! - [`Ctx::progress`] becomes `notifications/progress` echoing the client's
//!   `progressToken`; a streaming tool also reports each item as it comes.
//! - [`Ctx::log`] and [`Ctx::log_data`] become `notifications/message` (the logger is
//!   the tool's name unless the tool named one), at the level the client asked for:
//!   a session's `logging/setLevel` (everything until it sets one), or a sessionless
//!   request's `_meta["io.modelcontextprotocol/logLevel"]` (nothing without it). Over
//!   HTTP sessions they travel on the session's GET stream, as the SDK routes them.
//! - A `background` tool called by a client that declares the tasks extension
//!   (SEP-2663) may answer with a task, read with `tasks/get`, answered with
//!   `tasks/update` and stopped with `tasks/cancel`, on the server's
//!   [`Ledger`](crate::ledger::Ledger) ([`Server::ledger`]); `tools/list` says which
//!   tools do under `_meta["io.github.toolfunc/taskSupport"]`. See [`tasks`].
//! - Registry changes (tools added or removed) send
//!   `notifications/tools/list_changed`: to sessions that began with `initialize`
//!   (over HTTP on their GET stream), and on every open `subscriptions/listen` stream
//!   that asked for `toolsListChanged`. A listen that asks only for what toolfunc
//!   does not serve (prompts, resources) is acknowledged with an empty filter and
//!   stays open, silent, until the client ends it.
//!
//! Hostile input is bounded. Over stdio every line is checked against JSON-RPC 2.0
//! before the SDK sees it: each malformed request is answered (`-32700` for what is
//! not JSON, `-32600` for what is no valid request, `-32602` for positional params,
//! with the request's id, or `null` when it has no valid one), batches are refused
//! request by request (MCP has none), stray notifications and responses are
//! dropped, and a line longer than [`Server::max_line_length`] is refused
//! without being read into memory. Over HTTP, [`Server::max_sessions`] caps the
//! open sessions (a refused `initialize` gets `503` with a JSON-RPC error),
//! sessions that never send `notifications/initialized` end after
//! [`Server::uninitialized_session_lifetime`] and idle ones after
//! [`Server::session_idle_lifetime`]; requests from a browser page on a foreign
//! origin are refused with `403` ([`Server::allowed_origins`]). Every JSON-RPC
//! error carries an `id` member.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolfunc::{mcp::Server, Registry};
//!
//! // Over stdio, until the client closes the stream:
//! Server::new(Registry::global()).serve_stdio().await?;
//!
//! // Over streamable HTTP at `/mcp`, merged into any axum app, on connections
//! // with TCP_NODELAY (a plain `axum::serve` makes each answer wait some 40 ms):
//! let app = toolfunc::mcp::router(Registry::global());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! toolfunc::mcp::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! [`Ctx::cancellation_token`]: crate::Ctx::cancellation_token
//! [`Ctx::progress`]: crate::Ctx::progress
//! [`Ctx::log`]: crate::Ctx::log
//! [`Ctx::log_data`]: crate::Ctx::log_data

mod ask;
mod catalog;
mod http;
mod rounds;
mod serve;
mod stdio;
pub mod tasks;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CustomRequest, CustomResult, ErrorCode, GetTaskParams, GetTaskResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig,
    SetLevelRequestMethod, SubscriptionFilter, Tool, UpdateTaskParams,
};
#[allow(deprecated)] // Logging is deprecated in the SDK (SEP-2577), yet in both revisions.
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::ServerInitializeError;
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ask::ClientRequest;
use crate::error::ToolError;
use crate::log::{LogLevel, LogMessage};
use crate::options::{CallOptions, CollectLimit, Progress, Surface};
use crate::registry::SubscriptionError;
use crate::registry::{Registry, RegistryEvent};
use crate::remote::{self, Found, Lookup, Needs, Plan};
use catalog::Catalog;

pub use serve::{NoDelay, serve};

/// The web framework [`Server::router`] builds on, to serve and merge its router.
pub use axum;
/// The SDK this module builds on, for transports and settings beyond the ones here.
pub use rmcp;

/// Where [`router`] and [`Server::router`] answer.
pub const PATH: &str = "/mcp";

/// The default of [`Server::max_line_length`]: 4 MiB.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 4 * 1024 * 1024;
/// The default of [`Server::max_sessions`]: 1,000.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
/// The default of [`Server::uninitialized_session_lifetime`]: 30 seconds.
pub const DEFAULT_UNINITIALIZED_SESSION_LIFETIME: Duration = Duration::from_secs(30);
/// The default of [`Server::session_idle_lifetime`]: 5 minutes.
pub const DEFAULT_SESSION_IDLE_LIFETIME: Duration = Duration::from_secs(300);
/// The default of [`Server::page_size`]: 1,000 tools.
pub const DEFAULT_PAGE_SIZE: usize = 1000;

/// An MCP server over a [`Registry`].
///
/// It implements [`rmcp::ServerHandler`], so it also runs on any transport of the
/// SDK (`rmcp::ServiceExt::serve`). Each stdio connection and each HTTP session gets
/// its own copy ([`Server::session`]); dropping it stops that session's
/// `list_changed` watch.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

#[derive(Clone)]
struct Shared {
    registry: Registry,
    info: Implementation,
    instructions: Option<String>,
    /// What `get_info` answers, made from the two above when they change (the SDK
    /// asks for it on every sessionless request).
    config: ServerConfig,
    page_size: usize,
    max_line_length: usize,
    sessions: http::Limits,
    origins: http::Origins,
    collect_limit: CollectLimit,
    /// The runner of straight sessionless calls, for the last client that made one
    /// (such clients name themselves again in every request).
    sessionless_caller: KeptRunner,
    /// Sessionless calls waiting for their client's answers.
    rounds: Arc<rounds::Rounds>,
    /// Where calls that became tasks are tracked.
    ledger: remote::ledger::Ledger,
}

/// The running program's name: its executable's file name without extension.
fn program_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|path| {
            path.file_stem()
                .and_then(|stem| stem.to_str())
                .map(str::to_owned)
        })
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "mcp-server".to_owned())
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.shared.info.name)
            .field("version", &self.shared.info.version)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server for `registry`, introducing itself by the program's name (its
    /// executable's, without extension) and version `0.0.0` until
    /// [`name`](Self::name) says otherwise: pass your crate's with
    /// `.name(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))`.
    pub fn new(registry: impl Into<Registry>) -> Self {
        let registry = registry.into();
        Self {
            shared: Arc::new(Shared {
                ledger: remote::ledger::Ledger::new(&registry),
                registry,
                info: Implementation::new(program_name(), "0.0.0"),
                instructions: None,
                config: ServerConfig::default(),
                page_size: DEFAULT_PAGE_SIZE,
                max_line_length: DEFAULT_MAX_LINE_LENGTH,
                sessions: http::Limits {
                    max_sessions: DEFAULT_MAX_SESSIONS,
                    uninitialized_lifetime: DEFAULT_UNINITIALIZED_SESSION_LIFETIME,
                    idle_lifetime: DEFAULT_SESSION_IDLE_LIFETIME,
                },
                origins: http::Origins::loopback(),
                collect_limit: CollectLimit::default(),
                sessionless_caller: KeptRunner::default(),
                rounds: Arc::new(rounds::Rounds::new()),
            }),
            session: Arc::default(),
        }
        .configured()
    }

    /// This server with its `get_info` answer made anew.
    #[allow(deprecated)] // Logging: deprecated in the SDK (SEP-2577), yet in 2025-11-25.
    fn configured(mut self) -> Self {
        let shared = Arc::make_mut(&mut self.shared);
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        let mut config = ServerConfig::new(capabilities).with_server_info(shared.info.clone());
        if let Some(instructions) = &shared.instructions {
            config = config.with_instructions(instructions.clone());
        }
        shared.config = config;
        self
    }

    /// The ledger calls that become tasks are tracked in (by default one of this
    /// server's own, with [`LedgerSettings`](crate::ledger::LedgerSettings)'
    /// defaults: results kept 5 minutes, at most 10,000 tracked calls). Give an
    /// HTTP [`Api`](crate::http::Api) the same ledger to list every surface's
    /// calls in one place. It must run calls on this server's registry.
    #[must_use]
    pub fn ledger(mut self, ledger: remote::ledger::Ledger) -> Self {
        Arc::make_mut(&mut self.shared).ledger = ledger;
        self
    }

    /// The name and version the server gives clients in `initialize`.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.shared).info = Implementation::new(name, version);
        self.configured()
    }

    /// Instructions for the client's model, sent in `initialize`.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.shared).instructions = Some(instructions.into());
        self.configured()
    }

    /// Bounds what a streaming tool gathers into one `tools/call` result (default
    /// [`CollectLimit::default`]: 100,000 items, 16 MiB); past it the call ends
    /// with an `isError` result whose code is `RESULT_TOO_LARGE`.
    #[must_use]
    pub fn collect_limit(mut self, limit: CollectLimit) -> Self {
        let shared = Arc::make_mut(&mut self.shared);
        shared.collect_limit = limit;
        // The kept runner carries the old limit.
        shared.sessionless_caller = KeptRunner::default();
        self
    }

    /// At most this many tools in one `tools/list` answer; default
    /// [`DEFAULT_PAGE_SIZE`] (1,000), so most registries are one page. A longer list
    /// ends its pages with a `nextCursor` (opaque: the client hands it back to get the
    /// next page); a cursor stays good when tools are added or removed in between.
    /// `0` counts as `1`.
    #[must_use]
    pub fn page_size(mut self, tools: usize) -> Self {
        Arc::make_mut(&mut self.shared).page_size = tools.max(1);
        self
    }

    /// The longest line (one JSON-RPC message, without its newline) read over
    /// stdio or [`serve_io`](Self::serve_io), in bytes; default
    /// [`DEFAULT_MAX_LINE_LENGTH`] (4 MiB). A longer line is answered with `-32600`
    /// (`"id": null`) as soon as it passes the limit, and the rest of it is skipped
    /// without being kept. (Over HTTP the body limit is
    /// `StreamableHttpServerConfig::max_request_body_bytes`.)
    #[must_use]
    pub fn max_line_length(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.shared).max_line_length = bytes;
        self
    }

    /// At most this many HTTP sessions open at once; default
    /// [`DEFAULT_MAX_SESSIONS`] (1,000). Beyond it an `initialize` is answered with
    /// HTTP 503 and a JSON-RPC error (code `-32000`); open sessions go on, and each
    /// one closed (`DELETE`, or expired) frees a place.
    #[must_use]
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        Arc::make_mut(&mut self.shared).sessions.max_sessions = sessions;
        self
    }

    /// How long an HTTP session may stay without `notifications/initialized` (the
    /// end of the client's handshake) after its `initialize` before it is closed;
    /// default [`DEFAULT_UNINITIALIZED_SESSION_LIFETIME`] (30 seconds).
    #[must_use]
    pub fn uninitialized_session_lifetime(mut self, lifetime: Duration) -> Self {
        Arc::make_mut(&mut self.shared)
            .sessions
            .uninitialized_lifetime = lifetime;
        self
    }

    /// How long an HTTP session may go without a message either way (a request,
    /// a notification, a response, or anything the server sends it) before it is
    /// closed; default [`DEFAULT_SESSION_IDLE_LIFETIME`] (5 minutes). A tool call
    /// that runs longer without reporting progress ends with its session.
    #[must_use]
    pub fn session_idle_lifetime(mut self, lifetime: Duration) -> Self {
        Arc::make_mut(&mut self.shared).sessions.idle_lifetime = lifetime;
        self
    }

    /// The browser origins allowed to call the HTTP endpoint, in place of the
    /// default: pages on `localhost`, `127.0.0.1` and `[::1]`, over `http` or
    /// `https`, on any port. A request whose `Origin` header is present and not
    /// allowed is refused with 403 (the MCP spec's guard against DNS rebinding);
    /// requests without an `Origin` (clients that are not browsers) pass. Entries
    /// are `scheme://host` with `:port` or `:*` for any port (`"null"` allows
    /// `Origin: null`); an empty list refuses every `Origin`. A
    /// `StreamableHttpServerConfig` given to [`http_service`](Self::http_service)
    /// with its own `allowed_origins` keeps them.
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let origins = origins.into_iter().map(Into::into).collect();
        Arc::make_mut(&mut self.shared).origins = http::Origins::Only(origins);
        self
    }

    /// Allows requests from any `Origin` (no DNS-rebinding guard from the Origin
    /// header; the Host check stays): for servers behind a proxy that checks it.
    #[must_use]
    pub fn allow_any_origin(mut self) -> Self {
        Arc::make_mut(&mut self.shared).origins = http::Origins::Any;
        self
    }

    /// The registry this server serves.
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// A copy for one more connection: same registry and settings, its own session
    /// (its `list_changed` watch ends when the copy is dropped).
    #[must_use]
    pub fn session(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            session: Arc::default(),
        }
    }

    /// Serves one client over this process's stdin and stdout, until the client
    /// closes them.
    pub async fn serve_stdio(self) -> Result<(), ToolError> {
        let (reader, writer) = rmcp::transport::stdio();
        self.serve_io(reader, writer).await
    }

    /// Serves one client over a byte stream pair (newline-delimited JSON-RPC), until
    /// the reader ends (also before any `initialize`: that is a clean end too).
    /// Malformed lines are answered or dropped as the [module](self) describes;
    /// none ends the connection.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), ToolError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let session = self.session();
        let transport = stdio::LineTransport::new(
            reader,
            writer,
            self.shared.max_line_length,
            ServerHandler::supported_protocol_versions(&session),
        );
        let running = match session.serve(transport).await {
            Ok(running) => running,
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(err) => return Err(transport_error(&err)),
        };
        running
            .waiting()
            .await
            .map_err(|err| transport_error(&err))?;
        Ok(())
    }

    /// The streamable HTTP endpoint as a tower service (a router answering at any
    /// path), to mount where it should answer (`axum::Router::nest_service`).
    /// `config` sets allowed hosts (loopback only by default), SSE keep-alives and
    /// the body limit; the session limits and allowed origins are this server's
    /// ([`max_sessions`](Self::max_sessions),
    /// [`allowed_origins`](Self::allowed_origins) and the others).
    pub fn http_service(self, config: StreamableHttpServerConfig) -> axum::Router {
        let config = self.shared.origins.apply(config);
        let sessions = http::Sessions::new(self.shared.sessions);
        let guard = http::Guard {
            sessions: Arc::clone(&sessions),
            max_body: config.max_request_body_bytes,
        };
        let service = StreamableHttpService::new(move || Ok(self.session()), sessions, config);
        axum::Router::new()
            .fallback(http::guard)
            .with_state(Arc::new(http::Guarded { service, guard }))
    }

    /// An axum router answering streamable HTTP at [`PATH`] (`/mcp`), with the
    /// SDK's default settings (loopback hosts only) and this server's limits and
    /// allowed origins (loopback pages only by default); merge it into an app, and
    /// serve that with [`serve`] (or on a [`NoDelay`] listener): see there why.
    pub fn router(self) -> axum::Router {
        axum::Router::new().nest_service(
            PATH,
            self.http_service(StreamableHttpServerConfig::default()),
        )
    }

    /// Serves [`router`](Self::router) on `listener` with [`serve`] (`TCP_NODELAY` on
    /// every connection), until the listener fails.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), toolfunc::ToolError> {
    /// use toolfunc::{mcp::Server, Registry};
    ///
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3001")
    ///     .await
    ///     .map_err(|err| toolfunc::ToolError::failed(err.to_string()))?;
    /// Server::new(Registry::global()).serve_http(listener).await
    /// # }
    /// ```
    pub async fn serve_http(self, listener: tokio::net::TcpListener) -> Result<(), ToolError> {
        serve(listener, self.router())
            .await
            .map_err(|err| transport_error(&err))
    }

    /// The tool list, kept until a registry changes.
    fn catalog(&self) -> Arc<Catalog> {
        Catalog::of(&self.shared.registry)
    }

    /// The level a session's `logging/setLevel` asked for (debug until then).
    fn session_log_level(&self) -> LogLevel {
        let index = self.session.log_level.load(Ordering::Relaxed);
        LogLevel::ALL
            .get(usize::from(index))
            .copied()
            .unwrap_or(LogLevel::Debug)
    }

    /// Whether a message at `level` goes to the client under `gate`.
    fn admits(&self, gate: LogGate, level: LogLevel) -> bool {
        match gate {
            LogGate::Off => false,
            LogGate::Request(least) => level >= least,
            LogGate::Session => level >= self.session_log_level(),
        }
    }

    /// Sends one report of a running call to the client; a client that went away
    /// misses it, and the call goes on.
    async fn deliver(
        &self,
        report: Report,
        progress: &mut Monotonic,
        gate: LogGate,
        peer: &Peer<RoleServer>,
    ) {
        match report {
            Report::Log(message) => {
                if self.admits(gate, message.level) {
                    #[allow(deprecated)]
                    let _ = peer.notify_logging_message(log_param(message)).await;
                }
            }
            Report::Step(step) => {
                if let Some(param) = progress.admit(step) {
                    let _ = peer.notify_progress(param).await;
                }
            }
        }
    }

    /// Whether a call of `tool` that wants no progress can run straight through the
    /// registry: a sync tool cannot ask its client anything (asking awaits), and
    /// with no layer to ask in its place nothing can be parked or reported.
    fn runs_straight(&self, found: &Found) -> bool {
        found.runs_inline() && !self.shared.registry.has_layers() && !found.needs_confirmation()
    }

    /// A call with nothing to report while it runs: a tool that wants no progress
    /// and either logs nothing the client hears (a sessionless request without a
    /// level, or `gate` off) or is sync (it cannot be waited on, so its log messages
    /// are gathered and sent before its answer).
    async fn run_reporting_after(
        &self,
        (found, args): (Found, Value),
        runner: crate::exec::runner::Runner,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
        shape: Shape,
    ) -> CallToolResponse {
        if matches!(gate, LogGate::Off) {
            let outcome = found.run(&runner, args).await;
            return into_result(outcome, shape).into();
        }
        let logged = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logged);
        let logging = CallOptions::new().on_log(move |message| {
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(message);
        });
        let outcome = found.run(&runner.with(logging), args).await;
        let messages = std::mem::take(&mut *logged.lock().unwrap_or_else(PoisonError::into_inner));
        let mut progress = Monotonic::new(None);
        for message in messages {
            self.deliver(Report::Log(message), &mut progress, gate, &context.peer)
                .await;
        }
        into_result(outcome, shape).into()
    }
}

/// The MCP client a call came from, as its `initialize` (or, for sessionless
/// clients, its request) named it: in the context of every MCP call
/// (`ctx.get::<toolfunc::mcp::ClientInfo>()`) for tools and call middleware. Its
/// `name` is also the call's [`caller`](crate::Ctx::caller). Over streamable HTTP
/// the request's headers are in the context too, as an
/// [`axum::http::HeaderMap`], when the registry has layers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientInfo {
    /// The client's name (`clientInfo.name`).
    pub name: String,
    /// The client's version (`clientInfo.version`).
    pub version: String,
}

impl ClientInfo {
    /// The client of `context`, read in place (the SDK's `client_info` copies the
    /// whole `Implementation`, icons and all): the request's `_meta` entry, else,
    /// for a request that may lean on its session (not a 2026-07-28 one), the
    /// session's `initialize`.
    fn of(context: &RequestContext<RoleServer>) -> Option<Self> {
        Self::read(context, |client| client.map(Self::owned))
    }

    fn owned((name, version): (&str, &str)) -> Self {
        Self {
            name: name.to_owned(),
            version: version.to_owned(),
        }
    }

    /// `with` the client's name and version, borrowed.
    fn read<R>(
        context: &RequestContext<RoleServer>,
        with: impl FnOnce(Option<(&str, &str)>) -> R,
    ) -> R {
        let from_meta = context
            .meta
            .get(CLIENT_INFO_KEY)
            .and_then(|info| Some((info.get("name")?.as_str()?, info.get("version")?.as_str()?)));
        if from_meta.is_some() || sessionless(context) {
            return with(from_meta);
        }
        let session = context.peer.peer_info();
        with(
            session
                .as_deref()
                .map(|s| (s.client_info.name.as_str(), s.client_info.version.as_str())),
        )
    }

    fn is(&self, client: Option<(&str, &str)>) -> bool {
        client.is_some_and(|(name, version)| self.name == name && self.version == version)
    }
}

impl Server {
    /// The options every call of this request carries: the surface, the client,
    /// and (with layers to read them) the HTTP headers.
    fn caller_options(&self, context: &RequestContext<RoleServer>) -> CallOptions {
        let mut options = client_options(ClientInfo::of(context));
        if self.shared.registry.has_layers()
            && let Some(parts) = context.extensions.get::<axum::http::request::Parts>()
        {
            options = options.insert(parts.headers.clone());
        }
        options
    }

    /// The runner of a straight call (no layers: see [`runs_straight`](Self::runs_straight)):
    /// the client's options and the collect limit, made once per session (once per
    /// server for sessionless requests) for the client it names.
    fn caller_runner(
        &self,
        context: &RequestContext<RoleServer>,
        modern: bool,
    ) -> crate::exec::runner::Runner {
        let limit = self.shared.collect_limit;
        // A sessionless request is a session of its own: its runner is kept
        // server-wide, for the client it names.
        let kept = if modern {
            &self.shared.sessionless_caller
        } else {
            &self.session.caller
        };
        ClientInfo::read(context, |client| {
            kept.get(client, |info| {
                self.shared
                    .registry
                    .with(client_options(info).collect_limit(limit))
            })
        })
    }
}

/// The options of every call from `client`: the surface, and the client as caller
/// and in the context.
fn client_options(client: Option<ClientInfo>) -> CallOptions {
    let options = CallOptions::new().surface(Surface::Mcp);
    match client {
        Some(client) => options.caller(client.name.as_str()).insert(client),
        None => options,
    }
}

/// Serves `registry` over this process's stdin and stdout (see [`Server`]).
pub async fn serve_stdio(registry: impl Into<Registry>) -> Result<(), ToolError> {
    Server::new(registry).serve_stdio().await
}

/// An axum router serving `registry` over streamable HTTP at `/mcp` (see
/// [`Server::router`]); serve it with [`serve`].
pub fn router(registry: impl Into<Registry>) -> axum::Router {
    Server::new(registry).router()
}

/// Adds the listeners that turn a call's progress and logs into reports.
fn reporting(
    mut options: CallOptions,
    progress: bool,
    logs: bool,
    tx: &mpsc::UnboundedSender<Report>,
) -> CallOptions {
    if progress {
        let tx = tx.clone();
        options = options.on_progress(move |progress| {
            // The receiver lives until the call has answered.
            let _ = tx.send(Report::Step(Step::Progress(progress)));
        });
    }
    if logs {
        let tx = tx.clone();
        options = options.on_log(move |message| {
            let _ = tx.send(Report::Log(message));
        });
    }
    options
}

/// Runs a found call to one value: a streaming tool's items collected (within
/// `limit`), each reported to `items` when given.
async fn collected(
    found: Found,
    runner: crate::exec::runner::Runner,
    args: Value,
    stream: bool,
    limit: CollectLimit,
    items: Option<mpsc::UnboundedSender<Report>>,
) -> Result<Value, ToolError> {
    found
        .collect(&runner, args, stream, limit, |n, item| {
            if let Some(tx) = &items {
                let _ = tx.send(Report::Step(Step::Item(n, item.clone())));
            }
        })
        .await
}

/// A retry's `requestState` refused.
fn refused(why: rounds::Refused) -> ErrorData {
    match why {
        rounds::Refused::Integrity => ErrorData::invalid_params(
            "requestState integrity check failed: it was not made by this server for this tool",
            None,
        ),
        rounds::Refused::Gone => ErrorData::invalid_params(
            "requestState names a call that no longer waits for input (answered, or \
             unanswered for too long)",
            None,
        ),
        rounds::Refused::Full => ErrorData::internal_error(
            "too many calls are waiting for their clients' input; try again later",
            None,
        ),
    }
}

impl Server {
    /// Starts a sessionless call: it runs in its own task, so that questions it asks
    /// can be answered by the client's next round.
    #[allow(clippy::too_many_arguments)]
    async fn first_round(
        &self,
        name: &str,
        (found, args, stream): (Found, Value, bool),
        options: CallOptions,
        token: Option<ProgressToken>,
        gate: LogGate,
        shape: Shape,
        answered: rmcp::model::InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (question_tx, questions) = mpsc::unbounded_channel::<rounds::Question>();
        let (report_tx, reports) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let mut options = reporting(
            options,
            token.is_some(),
            !matches!(gate, LogGate::Off),
            &report_tx,
        )
        .cancel_on(cancel.clone());
        let asker = move |name: Option<String>, request: ClientRequest| {
            let questions = question_tx.clone();
            async move {
                let (answer, answered) = tokio::sync::oneshot::channel();
                questions
                    .send(rounds::Question {
                        name,
                        request,
                        answer,
                    })
                    .map_err(|_| ToolError::failed("the call's request is over"))?;
                answered.await.unwrap_or_else(|_| {
                    Err(ToolError::Cancelled {
                        reason: Some("the client did not answer".into()),
                    })
                })
            }
        };
        options = options
            .on_named_client_request(asker.clone())
            .collect_limit(self.shared.collect_limit);
        let confirm = found.needs_confirmation();
        let tool = found.name().to_owned();
        let runner = self.shared.registry.with(options);
        let items = token.is_some().then(|| report_tx.clone());
        drop(report_tx);
        let limit = self.shared.collect_limit;
        // Polled by this request until it asks its caller something (then it is
        // detached onto a task of its own, to run on while parked).
        let outcome = rounds::Outcome::InPlace(Box::pin(async move {
            if confirm {
                ask::confirm(asker, &tool, &args).await?;
            }
            collected(found, runner, args, stream, limit, items).await
        }));
        let running = rounds::Running {
            tool: name.to_owned(),
            outcome,
            questions,
            reports,
            progress: Monotonic::new(token),
            shape,
            cancel,
            pending: Vec::new(),
            answered,
        };
        self.drive(running, gate, context).await
    }

    /// Hands a retry's answers to the questions they answer; asks again what is
    /// unanswered (or answered with the wrong kind of value), else goes on.
    async fn answer_round(
        &self,
        mut running: rounds::Running,
        answers: &rmcp::model::InputResponses,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        for (key, question) in std::mem::take(&mut running.pending) {
            match answers.get(&key) {
                Some(answer) if rounds::fits(&question.request, answer) => {
                    let _ = question.answer.send(Ok(answer.clone()));
                }
                _ => running.pending.push((key, question)),
            }
        }
        // The rest may answer questions still to come.
        for (key, answer) in answers {
            if !running.pending.iter().any(|(k, _)| k == key) {
                running.answered.insert(key.clone(), answer.clone());
            }
        }
        if running.pending.is_empty() {
            return self.drive(running, gate, context).await;
        }
        self.ask_round(running)
    }

    /// A retry of `name` with the `state` of a round: its answers go to the call
    /// that round parked.
    async fn resume_round(
        &self,
        name: &str,
        state: &str,
        answers: &rmcp::model::InputResponses,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match self.shared.rounds.resume(name, state).map_err(refused)? {
            rounds::Held::Call(running) => self.answer_round(running, answers, gate, context).await,
            rounds::Held::Task(parked) => self.resume_task(name, parked, answers).await,
        }
    }

    /// Parks the call and answers with its questions.
    fn ask_round(&self, running: rounds::Running) -> Result<CallToolResponse, ErrorData> {
        let requests = rounds::requests(&running.pending);
        let state = self.shared.rounds.park(running).map_err(refused)?;
        Ok(CallToolResponse::InputRequired(
            rmcp::model::InputRequiredResult::new(Some(requests), Some(state)),
        ))
    }

    /// Runs a call's round: its reports go to this request's stream, until it
    /// answers or asks questions this client can answer.
    async fn drive(
        &self,
        mut running: rounds::Running,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The client's capabilities, read when the call first asks it something.
        let mut declared: Option<Value> = None;
        let peer = &context.peer;
        loop {
            let step = tokio::select! {
                biased;
                Some(report) = running.reports.recv() => Round::Report(report),
                outcome = &mut running.outcome => Round::Done(outcome),
                Some(question) = running.questions.recv() => Round::Asked(question),
                () = context.ct.cancelled() => Round::Cancelled,
            };
            match step {
                Round::Report(report) => {
                    self.deliver(report, &mut running.progress, gate, peer)
                        .await;
                }
                Round::Done(outcome) => {
                    while let Ok(report) = running.reports.try_recv() {
                        self.deliver(report, &mut running.progress, gate, peer)
                            .await;
                    }
                    return Ok(into_result(outcome, running.shape).into());
                }
                Round::Cancelled => {
                    running.cancel.cancel();
                    return Ok(into_result(
                        Err(ToolError::Cancelled {
                            reason: Some("the request was cancelled".into()),
                        }),
                        running.shape,
                    )
                    .into());
                }
                Round::Asked(question) => {
                    // The call runs on by itself from here: it may be parked.
                    running.outcome.detach();
                    let mut asked = vec![question];
                    // Questions asked together (`join!`) arrive together.
                    for _ in 0..4 {
                        tokio::task::yield_now().await;
                        while let Ok(question) = running.questions.try_recv() {
                            asked.push(question);
                        }
                    }
                    let declared = declared.get_or_insert_with(|| {
                        context
                            .client_capabilities()
                            .and_then(|c| serde_json::to_value(c).ok())
                            .unwrap_or(Value::Null)
                    });
                    for question in asked {
                        let capability = rounds::capability(&question.request);
                        if declared.get(capability).is_none_or(Value::is_null) {
                            let err = ToolError::custom(
                                "CLIENT_CANNOT_ANSWER",
                                501,
                                format!(
                                    "`{}` asked the MCP client {}, and this client did not \
                                     declare `{capability}`",
                                    running.tool,
                                    question.request.kind()
                                ),
                            );
                            let _ = question.answer.send(Err(err));
                            continue;
                        }
                        let key = question.name.clone().unwrap_or_else(|| {
                            rounds::key(running.pending.len() + 1, &question.request)
                        });
                        // Answered before it was asked.
                        if let Some(answer) = running.answered.remove(&key)
                            && rounds::fits(&question.request, &answer)
                        {
                            let _ = question.answer.send(Ok(answer));
                            continue;
                        }
                        running.pending.push((key, question));
                    }
                    if !running.pending.is_empty() {
                        return self.ask_round(running);
                    }
                }
            }
        }
    }
}

/// What happened in a round.
enum Round {
    Report(Report),
    Done(Result<Value, ToolError>),
    Asked(rounds::Question),
    Cancelled,
}

/// Where a call's log messages go.
#[derive(Clone, Copy)]
enum LogGate {
    /// Nowhere: a sessionless request that set no level.
    Off,
    /// At or above the level of the request's `_meta`.
    Request(LogLevel),
    /// At or above the session's level (`logging/setLevel`).
    Session,
}

/// Whether the request is a sessionless one (2026-07-28 and later), which has no
/// `initialize`, no `logging/setLevel` and output of any JSON type.
fn sessionless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// Where the log messages of the call `context` asks for go; `modern` for a
/// sessionless request.
fn log_gate(context: &RequestContext<RoleServer>, modern: bool) -> Result<LogGate, ErrorData> {
    Ok(match context.meta.get(LOG_LEVEL_KEY) {
        Some(level) => LogGate::Request(serde_json::from_value(level.clone()).map_err(|_| {
            ErrorData::invalid_params(
                format!("_meta[\"{LOG_LEVEL_KEY}\"] must be one of {LOG_LEVELS}"),
                Some(json!({"logLevel": level})),
            )
        })?),
        None if modern => LogGate::Off,
        None => LogGate::Session,
    })
}

/// The capabilities the client of `context` declared, as JSON.
fn declared_capabilities(context: &RequestContext<RoleServer>) -> Value {
    context
        .client_capabilities()
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(Value::Null)
}

/// A call of `name` refused for what it needs and this client lacks (`-32021`).
fn refused_for(name: &str, needs: Needs) -> ErrorData {
    match needs {
        Needs::Tasks => tasks::tasks_required(name),
        Needs::Capabilities(missing) => {
            let missing: Map<String, Value> =
                missing.into_iter().map(|name| (name, json!({}))).collect();
            match serde_json::from_value(Value::Object(missing)) {
                Ok(required) => ErrorData::missing_required_client_capability(required),
                Err(err) => ErrorData::internal_error(err.to_string(), None),
            }
        }
    }
}

/// The `_meta` key of a request's log level.
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key of a 2026-07-28 request's client.
const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";

/// The level names, for error messages.
const LOG_LEVELS: &str = "debug, info, notice, warning, error, critical, alert, emergency";

#[allow(deprecated)]
fn from_mcp(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

#[allow(deprecated)]
fn to_mcp(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// A log message as MCP sends it: the logger is the tool unless it named one.
#[allow(deprecated)]
fn log_param(message: LogMessage) -> LoggingMessageNotificationParam {
    let logger = message.logger.unwrap_or(message.tool);
    LoggingMessageNotificationParam::new(to_mcp(message.level), message.data).with_logger(logger)
}

/// One connection's state. Its token is cancelled when the last copy of its handler
/// is dropped.
#[derive(Default)]
struct Session {
    /// Cancelled when the session ends. Made on first use, as the two tokens are:
    /// the SDK makes a handler per sessionless request too, which needs neither.
    closed: OnceLock<CancellationToken>,
    /// Cancelled (as a one-shot flag) when the client says `initialized`.
    initialized: OnceLock<CancellationToken>,
    /// Registry subscriptions taken when a `subscriptions/listen` was accepted, so no
    /// change between the client's acknowledgement and [`ServerHandler::listen`] is
    /// missed.
    listening: Mutex<Vec<crate::registry::Subscription>>,
    /// The index in [`LogLevel::ALL`] of the level `logging/setLevel` asked for.
    log_level: AtomicU8,
    /// The runner of the session's straight calls, with the client it was made for.
    caller: KeptRunner,
}

/// A runner kept with the client it was made for, remade when another client asks.
#[derive(Default)]
struct KeptRunner(Mutex<Option<(Option<ClientInfo>, crate::exec::runner::Runner)>>);

impl Clone for KeptRunner {
    /// A copy starts empty: the copy of a server may change the settings its
    /// runners are made from.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl KeptRunner {
    /// The runner for `client`: the kept one if it was made for the same client
    /// (name and version), else one `make` makes from the client's info, kept.
    fn get(
        &self,
        client: Option<(&str, &str)>,
        make: impl FnOnce(Option<ClientInfo>) -> crate::exec::runner::Runner,
    ) -> crate::exec::runner::Runner {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((info, runner)) = kept.as_ref()
            && info
                .as_ref()
                .map_or(client.is_none(), |info| info.is(client))
        {
            return runner.clone();
        }
        let info = client.map(ClientInfo::owned);
        let runner = make(info.clone());
        *kept = Some((info, runner.clone()));
        runner
    }
}

impl Session {
    fn closed(&self) -> &CancellationToken {
        self.closed.get_or_init(CancellationToken::new)
    }

    fn initialized(&self) -> &CancellationToken {
        self.initialized.get_or_init(CancellationToken::new)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(closed) = self.closed.get() {
            closed.cancel();
        }
    }
}

fn transport_error(err: &dyn std::fmt::Display) -> ToolError {
    ToolError::failed(format!("MCP transport: {err}"))
}

fn error_data(err: &ToolError) -> Value {
    json!({"code": err.code(), "data": err.data()})
}

impl Server {
    /// The function `name` calls, found once for this caller (a tool a layer hides
    /// from it is unknown to it), with the caller's options when layers made them.
    fn callable(
        &self,
        name: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Found, Option<CallOptions>), ErrorData> {
        // Made at once only for layers to judge; a straight call takes its session's.
        let early = self
            .shared
            .registry
            .has_layers()
            .then(|| self.caller_options(context));
        match remote::find(
            &self.shared.registry,
            name,
            Lookup::FUNCTION,
            early.as_ref(),
        ) {
            Ok(found) => Ok((found, early)),
            Err(_) => Err(ErrorData::invalid_params(
                format!("unknown tool: {name}"),
                Some(json!({"code": "NOT_FOUND", "name": name})),
            )),
        }
    }

    /// `tools/call`: the tool, the protocol era and what the client can answer pick
    /// the path (a straight run, rounds of questions, a task, a session call that
    /// reports progress and logs as it runs).
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (found, early) = self.callable(&request.name, &context)?;
        // Read once: the SDK parses the version out of `_meta` on every ask.
        let modern = sessionless(&context);
        let gate = log_gate(&context, modern)?;
        // A retry answering a parked call's questions (2026-07-28).
        if let Some(state) = request.request_state.as_deref()
            && modern
        {
            let answers = request.input_responses.unwrap_or_default();
            // Boxed, as the other rarer paths: the common call's future stays small.
            return Box::pin(self.resume_round(&request.name, state, &answers, gate, &context))
                .await;
        }
        let takes_tasks = found.may_be_tracked() && tasks::client_takes_tasks(&context);
        found
            .admit(|| declared_capabilities(&context), takes_tasks)
            .map_err(|needs| refused_for(&request.name, needs))?;
        let mut arguments = request.arguments.unwrap_or_default();
        found.name_act(&mut arguments);
        let (stream, shape) = shape_of(&found, modern);
        let args = Value::Object(arguments);
        let token = context.meta.get_progress_token();
        let limit = self.shared.collect_limit;
        let logs = !matches!(gate, LogGate::Off);
        // A sync tool runs to its end within this poll: nothing can cancel it or be
        // asked of the client (asking awaits), so it needs neither.
        let straight = token.is_none() && !stream && self.runs_straight(&found);
        let may_be_task = takes_tasks && found.soft_deadline().is_some();
        if straight && !(modern && (logs || may_be_task)) {
            let runner = self.caller_runner(&context, modern);
            return Ok(self
                .run_reporting_after((found, args), runner, gate, &context, shape)
                .await);
        }
        let options = early.unwrap_or_else(|| self.caller_options(&context));
        let mut options = options.collect_limit(limit);
        // Only a 2026-07-28 client takes a task; a call that needs confirmation asks
        // for it first, in a round.
        let may_track = takes_tasks && modern && !found.needs_confirmation();
        if let Plan::Tracked { soft, .. } = Plan::of(&found, stream, may_track) {
            let plan = tasks::Plan::new(soft, found.background_only(), shape);
            return Box::pin(self.start_task(
                &request.name,
                (found, args),
                options,
                plan,
                &context,
            ))
            .await;
        }
        if modern {
            return Box::pin(self.first_round(
                &request.name,
                (found, args, stream),
                options,
                token,
                gate,
                shape,
                request.input_responses.unwrap_or_default(),
                &context,
            ))
            .await;
        }
        options = options.cancel_on(context.ct.clone());
        let tool = found.name().to_owned();
        // Questions the tool asks go back to this client, on its session.
        let asker = ask::through(context.peer.clone(), tool.clone());
        if found.needs_confirmation() {
            let confirmed =
                Box::pin(ask::confirm(|_, question| asker(question), &tool, &args)).await;
            if let Err(err) = confirmed {
                return Ok(into_result(Err(err), shape).into());
            }
        }
        options = options.on_client_request(asker);
        if token.is_none() && !stream && (!logs || self.runs_straight(&found)) {
            // Nothing to report while it runs (a sync tool's logs wait for its end).
            let runner = self.shared.registry.with(options);
            return Ok(self
                .run_reporting_after((found, args), runner, gate, &context, shape)
                .await);
        }
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
        options = reporting(options, token.is_some(), logs, &progress_tx);
        let runner = self.shared.registry.with(options);
        let items = token.is_some().then(|| progress_tx.clone());
        drop(progress_tx);
        let call = collected(found, runner, args, stream, limit, items);
        let mut progress = Monotonic::new(token.clone());
        let peer = &context.peer;
        let mut call = std::pin::pin!(call);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(report) = progress_rx.recv() => {
                    self.deliver(report, &mut progress, gate, peer).await;
                }
                outcome = &mut call => break outcome,
            }
        };
        while let Ok(report) = progress_rx.try_recv() {
            self.deliver(report, &mut progress, gate, peer).await;
        }
        Ok(into_result(outcome, shape).into())
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        self.shared.config.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let catalog = self.catalog();
        let cursor = request.and_then(|r| r.cursor);
        let Some((page, next)) = catalog.page(cursor.as_deref(), self.shared.page_size) else {
            return Err(ErrorData::invalid_params(
                "tools/list: invalid cursor (pass back a nextCursor this server gave)",
                Some(json!({"cursor": cursor})),
            ));
        };
        let mut tools = page.to_vec();
        let registry = &self.shared.registry;
        if registry.has_layers() {
            // What this client may not see is left out (the page may come out short;
            // the cursor still follows the whole list).
            let options = self.caller_options(&context);
            let shown = remote::shown_to(registry, Some(&options));
            let offered = remote::Catalog::of(registry);
            tools.retain(|tool| {
                offered
                    .function(&tool.name)
                    .and_then(|function| offered.tool(&function.tool))
                    .is_some_and(&shown)
            });
        }
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Asked on every sessionless HTTP request (for header checks): from the kept
        // list.
        self.catalog().get(name).cloned()
    }

    #[allow(deprecated)] // Logging: deprecated in the SDK (SEP-2577), yet in 2025-11-25.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Sessionless clients give the level with each request instead.
        if sessionless(&context) {
            return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
        }
        let level = from_mcp(request.level) as u8;
        self.session.log_level.store(level, Ordering::Relaxed);
        Ok(())
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        // Boxed: the SDK moves the future of every request it serves (into its
        // task, between its stages), so the call's large state machine stays out of
        // those moves.
        Box::pin(self.call(request, context))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        // Sessions that begin with `initialize` hear of tool list changes as plain
        // notifications, from the client's `initialized` until the session (this
        // handler) ends. Subscribing now misses no change made in between.
        // The task holds only the session's tokens, never the session itself.
        let peer = context.peer;
        let initialized = self.session.initialized().clone();
        let closed = self.session.closed().clone();
        let mut changes = self.shared.registry.subscribe_tool_changes();
        tokio::spawn(async move {
            tokio::select! {
                () = initialized.cancelled() => {}
                () = closed.cancelled() => return,
            }
            while next_change(&mut changes, &closed).await {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
        Ok(result)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.get_task_result(&request, &context)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.update_task_answers(&request, &context)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.cancel_task_now(&request, &context)
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        self.session.initialized().cancel();
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // The SDK hands over a known method whose params it could not read.
        let expected = match request.method.as_str() {
            "tools/call" => "{\"name\": string, \"arguments\"?: object}",
            "tools/list" => "{\"cursor\"?: string}",
            "logging/setLevel" if !sessionless(&context) => {
                "{\"level\": \"debug\" | \"info\" | \"notice\" | \"warning\" | \"error\" | \"critical\" | \"alert\" | \"emergency\"}"
            }
            "subscriptions/listen" if sessionless(&context) => {
                "{\"notifications\": {\"toolsListChanged\"?: boolean, \"promptsListChanged\"?: boolean, \"resourcesListChanged\"?: boolean, \"resourceSubscriptions\"?: [string]}}"
            }
            _ => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    request.method,
                    None,
                ));
            }
        };
        Err(ErrorData::invalid_params(
            format!("{}: params must be {expected}", request.method),
            None,
        ))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        if requested.tools_list_changed != Some(true) {
            // Prompts and resources: none here to announce. The listen is acknowledged
            // with what is honoured (nothing) and stays open.
            return Some(SubscriptionFilter::new());
        }
        let mut listening = self
            .session
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A listen that failed to start leaves its subscription here: keep a few.
        if listening.len() >= 8 {
            listening.remove(0);
        }
        listening.push(self.shared.registry.subscribe_tool_changes());
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // Sessionless clients subscribe with `subscriptions/listen`; the stream lasts
        // as long as that request.
        if context.accepted().tools_list_changed != Some(true) {
            // Nothing to send; the client ends it.
            context.cancelled().await;
            return Ok(());
        }
        let taken = self
            .session
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut changes = taken.unwrap_or_else(|| self.shared.registry.subscribe_tool_changes());
        let closed = CancellationToken::new();
        loop {
            tokio::select! {
                () = context.cancelled() => break,
                more = next_change(&mut changes, &closed) => {
                    if !more || context.sink().notify_tool_list_changed().await.is_err() {
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Waits for the next change to the tool list, folding a burst of changes into
/// one. `false` when the registry is gone or the session closed.
async fn next_change(
    changes: &mut crate::registry::Subscription,
    closed: &CancellationToken,
) -> bool {
    loop {
        let event = tokio::select! {
            () = closed.cancelled() => return false,
            event = changes.recv() => event,
        };
        match event {
            Ok(
                RegistryEvent::Added { .. }
                | RegistryEvent::Removed { .. }
                | RegistryEvent::Cleared,
            )
            | Err(SubscriptionError::Lagged(_)) => break,
            Ok(_) => {}
            Err(SubscriptionError::Closed) => return false,
        }
    }
    // Registrations often come in bursts; let them settle into one notification.
    tokio::time::sleep(Duration::from_millis(20)).await;
    while let Some(event) = changes.try_recv() {
        let _ = event;
    }
    true
}

/// The progress reports of one call, kept increasing as MCP requires: a streaming
/// tool's items count as progress until the tool reports its own; a report that
/// would not go forward is left out.
struct Monotonic {
    token: Option<ProgressToken>,
    last: f64,
    own: bool,
}

impl Monotonic {
    fn new(token: Option<ProgressToken>) -> Self {
        Self {
            token,
            last: f64::NEG_INFINITY,
            own: false,
        }
    }

    fn admit(&mut self, step: Step) -> Option<ProgressNotificationParam> {
        let token = self.token.clone()?;
        if matches!(step, Step::Progress(_)) {
            self.own = true;
        } else if self.own {
            return None;
        }
        let param = step.into_param(token);
        (param.progress > self.last).then(|| {
            self.last = param.progress;
            param
        })
    }
}

/// What a running call reports while it runs.
enum Report {
    Step(Step),
    Log(LogMessage),
}

/// How far a call has come.
enum Step {
    Progress(Progress),
    /// The n-th item of a streaming tool.
    Item(usize, Value),
}

impl Step {
    #[allow(clippy::cast_precision_loss)]
    fn into_param(self, token: ProgressToken) -> ProgressNotificationParam {
        match self {
            Self::Progress(progress) => {
                let mut param = ProgressNotificationParam::new(token, progress.done);
                if let Some(total) = progress.total {
                    param = param.with_total(total);
                }
                if let Some(message) = progress.message {
                    param = param.with_message(message);
                }
                param
            }
            Self::Item(n, item) => {
                ProgressNotificationParam::new(token, n as f64).with_message(item.to_string())
            }
        }
    }
}

/// Whether the found call streams, and how its result is answered to this
/// request's client.
fn shape_of(found: &Found, modern: bool) -> (bool, Shape) {
    let (stream, result) = (found.streams(), found.result());
    let shape = Shape {
        content: crate::content::is_content_schema(result),
        // A listed output schema: 2026-07-28 clients take a value of any type.
        any_structured: modern && !stream && matches!(result, Some(Value::Object(_))),
    };
    (stream, shape)
}

/// What a tool's result is, for its `tools/call` answer.
#[derive(Clone, Copy)]
struct Shape {
    /// [`Content`](crate::Content): its blocks are the answer.
    content: bool,
    /// Any value is also `structuredContent` (a 2026-07-28 client, a tool with an
    /// output schema).
    any_structured: bool,
}

/// A tool's outcome as MCP answers it.
fn into_result(outcome: Result<Value, ToolError>, shape: Shape) -> CallToolResult {
    match outcome {
        Ok(value) if shape.content => match serde_json::from_value::<CallToolResult>(value) {
            Ok(blocks) => {
                let mut result = CallToolResult::success(blocks.content);
                result.structured_content = blocks.structured_content;
                result
            }
            Err(err) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the tool's content blocks are not MCP content: {err}"
            ))]),
        },
        Ok(Value::Object(object)) => CallToolResult::structured(Value::Object(object)),
        Ok(value) if shape.any_structured => {
            let text = match &value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(value);
            result
        }
        Ok(Value::String(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Ok(value) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
        Err(err) => {
            let mut meta = Map::new();
            meta.insert("io.github.toolfunc/error".into(), error_data(&err));
            CallToolResult::error(vec![ContentBlock::text(err.to_string())])
                .with_meta(Some(MetaObject(meta)))
        }
    }
}
