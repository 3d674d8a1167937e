//! The [`Server`]: its settings, the state its sessions share, and serving it over
//! stdio and streamable HTTP.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::ServerInitializeError;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

use crate::auth::{Authenticator, web};
use crate::error::ToolError;
use crate::listen;
use crate::options::CollectLimit;
use crate::registry::Registry;
use crate::remote;

use super::caller::KeptRunner;
use super::direct::Direct;
use super::gate::{Endpoint, Gate};
use super::origins::Origins;
use super::search::SearchMode;
use super::sessions::{Limits, Sessions, made};
use super::{rounds, stdio};

/// Where [`router`] and [`Server::router`] answer.
pub const PATH: &str = "/mcp";

/// The default of [`Server::max_line_length`]: 4 MiB.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 4 * 1024 * 1024;
/// The default of [`Server::max_sessions`]: 1,000.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;

/// The default of [`Server::max_initialize_bytes`]: 16 KiB.
pub const DEFAULT_MAX_INITIALIZE_BYTES: usize = 16 * 1024;

/// The default of [`Server::max_initialize_bytes_per_caller`]: 4 MiB.
pub const DEFAULT_MAX_INITIALIZE_BYTES_PER_CALLER: usize = 4 * 1024 * 1024;

/// How much of [`Server::max_sessions`] is kept for other callers unless
/// [`Server::max_sessions_per_caller`] says otherwise: a tenth (rounded down), so
/// one caller may hold at most 900 of the default 1,000.
pub const DEFAULT_SESSIONS_RESERVE_PERCENT: usize = 10;
/// The default of [`Server::uninitialized_session_lifetime`]: 30 seconds.
pub const DEFAULT_UNINITIALIZED_SESSION_LIFETIME: Duration = Duration::from_secs(30);
/// The default of [`Server::session_idle_lifetime`]: 5 minutes.
pub const DEFAULT_SESSION_IDLE_LIFETIME: Duration = Duration::from_secs(300);
/// The default of [`Server::session_park_after`]: 30 seconds.
pub const DEFAULT_SESSION_PARK_AFTER: Duration = Duration::from_secs(30);
/// The default of [`Server::max_subscriptions`]: 100 URIs per session.
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 100;
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
    pub(super) shared: Arc<Shared>,
    pub(super) session: Arc<Session>,
}

#[derive(Clone)]
pub(super) struct Shared {
    pub(super) registry: Registry,
    info: Implementation,
    instructions: Option<String>,
    /// What `get_info` answers, made from the two above when they change (the SDK
    /// asks for it on every sessionless request).
    pub(super) config: ServerConfig,
    pub(super) page_size: usize,
    /// The most resources one session may subscribe to.
    pub(super) max_subscriptions: usize,
    max_line_length: usize,
    sessions: Limits,
    /// What [`Server::serve_http`] accepts connections under.
    connections: listen::Limits,
    origins: Origins,
    pub(super) collect_limit: CollectLimit,
    /// Verifies the bearer token of every streamable HTTP request, when set.
    pub(super) authenticator: Option<Arc<dyn Authenticator>>,
    /// The resource URI of the HTTP endpoint, when set.
    resource: Option<String>,
    /// The runner of straight sessionless calls, for the last client that made one
    /// (such clients name themselves again in every request).
    pub(super) sessionless_caller: KeptRunner,
    /// Sessionless calls waiting for their client's answers.
    pub(super) rounds: Arc<rounds::Rounds>,
    /// Where calls that became tasks are tracked.
    pub(super) ledger: remote::ledger::Ledger,
    /// The search mode's settings.
    pub(super) search: SearchMode,
    /// The HTTP sessions open on the endpoints made from this server.
    open_sessions: Arc<AtomicUsize>,
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
                max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
                max_line_length: DEFAULT_MAX_LINE_LENGTH,
                sessions: Limits {
                    max_sessions: DEFAULT_MAX_SESSIONS,
                    max_per_caller: None,
                    initialize_bytes: DEFAULT_MAX_INITIALIZE_BYTES,
                    caller_bytes: DEFAULT_MAX_INITIALIZE_BYTES_PER_CALLER,
                    uninitialized_lifetime: DEFAULT_UNINITIALIZED_SESSION_LIFETIME,
                    idle_lifetime: DEFAULT_SESSION_IDLE_LIFETIME,
                    park_after: DEFAULT_SESSION_PARK_AFTER,
                    parks: true,
                },
                connections: listen::Limits::default(),
                origins: Origins::loopback(),
                collect_limit: CollectLimit::default(),
                authenticator: None,
                resource: None,
                sessionless_caller: KeptRunner::default(),
                rounds: Arc::new(rounds::Rounds::new(rounds::RoundLimits::default())),
                search: SearchMode::default(),
                open_sessions: Arc::default(),
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
            .enable_completions()
            .enable_logging()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .enable_prompts_list_changed()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
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

    /// Makes the streamable HTTP endpoint an OAuth 2.1 resource server, as the MCP
    /// specification's authorization asks: every request must carry an
    /// `Authorization: Bearer` credential that `authenticator` verifies (a
    /// [`Jwt`](crate::auth::jwt::Jwt) for an authorization server's tokens), else it
    /// gets `401` with a `WWW-Authenticate: Bearer resource_metadata="…"` challenge;
    /// [`router`](Self::router) serves the metadata (RFC 9728) at
    /// `/.well-known/oauth-protected-resource/mcp`, and at the path the challenges
    /// name when the resource is another (an origin-only audience such as
    /// `http://127.0.0.1:3000` names `/.well-known/oauth-protected-resource`).
    /// The verified identity rides on
    /// every call ([`Ctx::identity`](crate::Ctx::identity)), and a session belongs to
    /// the subject that opened it: another subject naming it is told it does not
    /// exist. stdio keeps the trust of the process that started the server.
    #[must_use]
    pub fn authenticate(mut self, authenticator: impl Authenticator) -> Self {
        Arc::make_mut(&mut self.shared).authenticator = Some(Arc::new(authenticator));
        self
    }

    /// The resource URI of the HTTP endpoint (`https://tools.example.com/mcp`),
    /// published in its metadata and challenges. Default: the authenticator's
    /// audience, else the request's own `Host` and path.
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.shared).resource = Some(uri.into());
        self
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

    /// Bounds the calls parked between rounds of questions to sessionless
    /// (2026-07-28) clients: how many and how many bytes, in all and per caller,
    /// the longest caller name, and how long each waits for the client's next round
    /// (see [`RoundLimits`](super::RoundLimits) for the defaults). A call past its
    /// lifetime is cancelled by a timer, whether or not any request comes.
    #[must_use]
    pub fn round_limits(mut self, limits: super::RoundLimits) -> Self {
        Arc::make_mut(&mut self.shared).rounds = Arc::new(rounds::Rounds::new(limits));
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

    /// At most this many resources one session may subscribe to
    /// (`resources/subscribe`); default [`DEFAULT_MAX_SUBSCRIPTIONS`] (100). One
    /// more is refused with `-32602`, data code `BUSY`, until the client
    /// unsubscribes from another.
    #[must_use]
    pub fn max_subscriptions(mut self, uris: usize) -> Self {
        Arc::make_mut(&mut self.shared).max_subscriptions = uris;
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

    /// At most this many HTTP sessions open at once for one caller: the subject
    /// its token proves (with an [authenticator](Self::authenticate)), else the
    /// name its `initialize` gives (`clientInfo.name`, a label: the best a server
    /// without authentication has). Beyond it that caller's `initialize` is
    /// answered with HTTP 429 and a JSON-RPC error (code `-32000`, `data.code`
    /// `BUSY`), while others still open theirs: one caller cannot take every place
    /// of [`max_sessions`](Self::max_sessions). Default: all but a reserve of
    /// [`DEFAULT_SESSIONS_RESERVE_PERCENT`] of `max_sessions` (rounded down), 900
    /// of the default 1,000.
    #[must_use]
    pub fn max_sessions_per_caller(mut self, sessions: usize) -> Self {
        Arc::make_mut(&mut self.shared).sessions.max_per_caller = Some(sessions.max(1));
        self
    }

    /// The most bytes of `initialize` parameters (the client's capabilities, its
    /// `clientInfo`, ...) an HTTP session keeps for its life; more, or nested
    /// deeper than 16 levels, or holding more than 512 members and items, is
    /// refused with HTTP 413 and a JSON-RPC `-32602` (`data.code` `TOO_LARGE`)
    /// before any session is opened. Default [`DEFAULT_MAX_INITIALIZE_BYTES`]
    /// (16 KiB).
    #[must_use]
    pub fn max_initialize_bytes(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.shared).sessions.initialize_bytes = bytes;
        self
    }

    /// The most bytes of `initialize` parameters the open sessions of one caller
    /// (as [`max_sessions_per_caller`](Self::max_sessions_per_caller) counts
    /// callers) keep together; past it that caller's `initialize` gets 429
    /// (`BUSY`). Default [`DEFAULT_MAX_INITIALIZE_BYTES_PER_CALLER`] (4 MiB).
    #[must_use]
    pub fn max_initialize_bytes_per_caller(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.shared).sessions.caller_bytes = bytes;
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

    /// How long an HTTP session may stay quiet (no request being served, no
    /// response or `GET` stream open, no call running, no message either way)
    /// before it is parked; default [`DEFAULT_SESSION_PARK_AFTER`] (30 seconds). A
    /// parked session is at rest: it keeps only what brings it back (the client's
    /// `initialize` and its log level, about 2.5 KB of heap) instead of the SDK's
    /// channels, tasks and handler (about 98 KB). A session whose `initialize` is
    /// plain starts at rest. The server answers a session's plain requests at rest
    /// itself (`ping`, the lists, most calls, `DELETE`: see the
    /// [module](super)); any other request starts its SDK session under the same
    /// id, replaying the handshake, and it counts as open all along
    /// ([`open_sessions`](Self::open_sessions), [`max_sessions`](Self::max_sessions)).
    /// Notifications sent to a session's client while it had no `GET` stream open
    /// are not kept for it. With a value at or above the
    /// [idle lifetime](Self::session_idle_lifetime) a running session ends before
    /// it would be parked; sessions at rest are served all the same, and end once
    /// quiet for the idle lifetime.
    #[must_use]
    pub fn session_park_after(mut self, quiet: Duration) -> Self {
        Arc::make_mut(&mut self.shared).sessions.park_after = quiet;
        self
    }

    /// The most HTTP connections [`serve_http`](Self::serve_http) keeps open at
    /// once; past it new ones wait in the listen backlog until one closes. Default
    /// [`DEFAULT_MAX_CONNECTIONS`](super::DEFAULT_MAX_CONNECTIONS) (1,024). `0`
    /// counts as `1`.
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        Arc::make_mut(&mut self.shared).connections.max_connections = max.max(1);
        self
    }

    /// How long a client of [`serve_http`](Self::serve_http) has to send a
    /// request's line and headers once the connection is ready for one (a
    /// slowloris client is cut off); a connection kept alive between requests
    /// closes after the same time. Default
    /// [`DEFAULT_HEADER_TIMEOUT`](super::DEFAULT_HEADER_TIMEOUT) (10 seconds).
    #[must_use]
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.shared).connections.header_timeout = timeout;
        self
    }

    /// How long a connection of [`serve_http`](Self::serve_http) may move no byte
    /// while no request runs on it (a body sent half-way, an answer nobody reads)
    /// before it is closed; an open SSE stream counts as running. Default
    /// [`DEFAULT_IDLE_TIMEOUT`](super::DEFAULT_IDLE_TIMEOUT) (60 seconds). Sessions
    /// have their own lifetime ([`session_idle_lifetime`](Self::session_idle_lifetime)).
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.shared).connections.idle_timeout = timeout;
        self
    }

    /// How long a client of [`serve_http`](Self::serve_http) has to send a whole
    /// request body, from when its head was read: a body still arriving then (one
    /// trickled a byte at a time) is cut off and the connection closed. Default
    /// [`DEFAULT_BODY_TIMEOUT`](super::DEFAULT_BODY_TIMEOUT) (30 seconds).
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.shared).connections.body_timeout = timeout;
        self
    }

    /// How much of a request body left unread (one over the body limit, refused
    /// with 413) [`serve_http`](Self::serve_http) still reads and throws away once
    /// it has answered, for at most the [header timeout](Self::header_timeout),
    /// before it closes the connection, so that a client still sending reads the
    /// answer rather than a connection reset. `0` closes at once. Default
    /// [`DEFAULT_DRAIN_LIMIT`](super::DEFAULT_DRAIN_LIMIT) (4 MiB).
    #[must_use]
    pub fn drain_limit(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.shared).connections.drain_limit = bytes;
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
        Arc::make_mut(&mut self.shared).origins = Origins::Only(origins);
        self
    }

    /// Allows requests from any `Origin` (no DNS-rebinding guard from the Origin
    /// header; the Host check stays): for servers behind a proxy that checks it.
    #[must_use]
    pub fn allow_any_origin(mut self) -> Self {
        Arc::make_mut(&mut self.shared).origins = Origins::Any;
        self
    }

    /// Turns the search mode on or off (default: off). For clients without a tool
    /// search of their own, facing a large catalogue: `tools/list` then offers two
    /// tools, `search_tools` (`query`, optional `limit`: the functions the caller
    /// may run that best match the query, best first, as their MCP definitions, in
    /// structured content and as JSON text) and `call_tool` (`name`, `arguments`:
    /// runs that function exactly as a direct `tools/call` of it does, and answers
    /// its result or error), with the functions [`always_listed`](Self::always_listed).
    /// A direct `tools/call` of any function by its own name still works, and a
    /// search shows each caller only what its layers and scopes let it see.
    #[must_use]
    pub fn search_mode(mut self, on: bool) -> Self {
        Arc::make_mut(&mut self.shared).search.on = on;
        self
    }

    /// Functions `tools/list` shows in [search mode](Self::search_mode) after its
    /// two tools, in this order, to each caller that may see them (default: none).
    /// Names are function names (`{service}_{method}` for a service's act); a name
    /// the catalogue does not offer is skipped.
    #[must_use]
    pub fn always_listed(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Arc::make_mut(&mut self.shared).search.always_listed =
            names.into_iter().map(Into::into).collect();
        self
    }

    /// The largest `limit` `search_tools` accepts in [search mode](Self::search_mode)
    /// (default [`DEFAULT_MAX_SEARCH_RESULTS`](super::DEFAULT_MAX_SEARCH_RESULTS);
    /// at least 1). A call without `limit` answers at most
    /// [`DEFAULT_SEARCH_RESULTS`](super::DEFAULT_SEARCH_RESULTS) or this, whichever
    /// is smaller.
    #[must_use]
    pub fn max_search_results(mut self, max: usize) -> Self {
        Arc::make_mut(&mut self.shared).search.bounds.max_results = max.max(1);
        self
    }

    /// The longest `query` `search_tools` accepts in [search mode](Self::search_mode),
    /// in characters (default [`DEFAULT_MAX_SEARCH_QUERY`](super::DEFAULT_MAX_SEARCH_QUERY);
    /// at least 1).
    #[must_use]
    pub fn max_search_query(mut self, chars: usize) -> Self {
        Arc::make_mut(&mut self.shared).search.bounds.max_query = chars.max(1);
        self
    }

    /// How many streamable HTTP sessions are open now on the endpoints made from
    /// this server (and its clones): those past their handshake and those still in
    /// it. It is at most [`max_sessions`](Self::max_sessions) per endpoint, and falls
    /// as sessions are closed (`DELETE`) or expire
    /// ([`session_idle_lifetime`](Self::session_idle_lifetime),
    /// [`uninitialized_session_lifetime`](Self::uninitialized_session_lifetime)).
    pub fn open_sessions(&self) -> usize {
        self.shared.open_sessions.load(Ordering::Relaxed)
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
    /// Malformed lines are answered or dropped as the [module](super) describes;
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
        self.http_service_at(config, None)
    }

    /// [`http_service`](Self::http_service), mounted at `path` when known.
    fn http_service_at(
        self,
        config: StreamableHttpServerConfig,
        path: Option<&'static str>,
    ) -> axum::Router {
        let mut config = self.shared.origins.apply(config);
        let mut limits = self.shared.sessions;
        // Parked sessions come back through the SDK's session restore: a config
        // that brings a session store of its own turns parking off.
        let parks = config.session_store.is_none();
        limits.parks = parks;
        let sessions = Sessions::new(limits, Arc::clone(&self.shared.open_sessions));
        if parks {
            config.session_store = Some(sessions.store());
        }
        let gate = Gate {
            sessions: Arc::clone(&sessions),
            max_body: config.max_request_body_bytes,
            authenticator: self.shared.authenticator.clone(),
            resource: self.shared.resource.clone(),
            path,
            registry: self.shared.registry.clone(),
            search_mode: self.shared.search.on,
        };
        let direct = Direct::new(self.session());
        let service =
            StreamableHttpService::new(move || Ok(made(self.session())), sessions, config);
        axum::Router::new()
            .fallback(super::gate::answer)
            .with_state(Arc::new(Endpoint {
                service,
                gate,
                direct,
            }))
    }

    /// An axum router answering streamable HTTP at [`PATH`] (`/mcp`), with the
    /// SDK's default settings (loopback hosts only) but JSON answers (a sessionless
    /// request answered with one message gets a JSON body, not an SSE stream, as
    /// `StreamableHttpServerConfig::json_response` says), and this server's limits and
    /// allowed origins (loopback pages only by default); merge it into an app, and
    /// serve that with [`serve`](super::serve()) (or `toolfunc::http::Server::merge`,
    /// or `axum::serve` on a [`NoDelay`](super::serve::NoDelay) listener): see there why.
    pub fn router(self) -> axum::Router {
        let audience_path = self
            .shared
            .authenticator
            .as_deref()
            .and_then(|authenticator| {
                web::resource_metadata_path(self.shared.resource.as_deref(), authenticator, PATH)
            });
        let metadata = self.shared.authenticator.clone().map(|authenticator| {
            let resource = self.shared.resource.clone();
            let registry = self.shared.registry.clone();
            move |headers: axum::http::HeaderMap| async move {
                let resource =
                    web::resource(resource.as_deref(), authenticator.as_ref(), &headers, PATH);
                let scopes = remote::Catalog::of(&registry);
                web::metadata_response(&web::metadata(
                    &resource,
                    authenticator.as_ref(),
                    scopes.scopes(),
                ))
            }
        });
        // A sessionless request answered with one message gets it as a JSON body,
        // not a one-message SSE stream; one that says something first (progress,
        // a log line, a question) still streams, so nothing is lost.
        let config = StreamableHttpServerConfig::default().with_json_response(true);
        let router =
            axum::Router::new().nest_service(PATH, self.http_service_at(config, Some(PATH)));
        match metadata {
            Some(metadata) => {
                let router = router.route(
                    &format!("{}{PATH}", web::WELL_KNOWN),
                    axum::routing::get(metadata.clone()),
                );
                // The metadata the challenges name, when the resource is an origin
                // alone or another path than `/mcp`.
                match audience_path {
                    Some(path) => router.route(&path, axum::routing::get(metadata)),
                    None => router,
                }
            }
            None => router,
        }
    }

    /// Serves [`router`](Self::router) on `listener` until the process ends, on the
    /// accept loop `toolfunc::http::Server` runs: `TCP_NODELAY` on every
    /// connection, at most [`max_connections`](Self::max_connections) open, a
    /// [header timeout](Self::header_timeout), an [idle timeout](Self::idle_timeout)
    /// and a lingering close after a body left unread ([`drain_limit`](Self::drain_limit)).
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
        let limits = self.shared.connections;
        listen::serve(listener, self.router(), limits)
            .await
            .map_err(|err| transport_error(&err))
    }
}

/// Serves `registry` over this process's stdin and stdout (see [`Server`]).
pub async fn serve_stdio(registry: impl Into<Registry>) -> Result<(), ToolError> {
    Server::new(registry).serve_stdio().await
}

/// An axum router serving `registry` over streamable HTTP at `/mcp` (see
/// [`Server::router`]); serve it with [`serve`](super::serve()).
pub fn router(registry: impl Into<Registry>) -> axum::Router {
    Server::new(registry).router()
}

/// One connection's state. Its token is cancelled when the last copy of its handler
/// is dropped.
#[derive(Default)]
pub(super) struct Session {
    /// Cancelled when the session ends. Made on first use, as the two tokens are:
    /// the SDK makes a handler per sessionless request too, which needs neither.
    closed: OnceLock<CancellationToken>,
    /// Cancelled (as a one-shot flag) when the client says `initialized`.
    initialized: OnceLock<CancellationToken>,
    /// Registry subscriptions taken when a `subscriptions/listen` was accepted, so no
    /// change between the client's acknowledgement and [`ServerHandler::listen`] is
    /// missed.
    pub(super) listening: Mutex<Vec<crate::registry::Subscription>>,
    /// The index in [`LogLevel::ALL`](crate::log::LogLevel::ALL) of the level `logging/setLevel` asked for.
    pub(super) log_level: AtomicU8,
    /// The runner of the session's straight calls, with the client it was made for.
    pub(super) caller: KeptRunner,
    /// The URIs of the resources the session subscribed to.
    pub(super) subscriptions: Arc<Mutex<BTreeSet<String>>>,
}

impl Session {
    pub(super) fn closed(&self) -> &CancellationToken {
        self.closed.get_or_init(CancellationToken::new)
    }

    pub(super) fn initialized(&self) -> &CancellationToken {
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
