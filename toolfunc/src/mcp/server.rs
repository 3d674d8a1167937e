//! The [`Server`]: its settings and limits, the state its sessions share, the
//! options and runners its callers' calls get, and serving it over stdio (its
//! streamable HTTP endpoint is in `serve.rs`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::{RequestContext, ServerInitializeError};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

use crate::auth::Authenticator;
use crate::error::ToolError;
use crate::exec::runner::Runner;
use crate::identity::Identity;
use crate::listen;
use crate::options::{CallOptions, CollectLimit};
use crate::registry::Registry;
use crate::remote;

use super::caller::{ClientInfo, KeptRunner, client_options, trace_of};
use super::origins::Origins;
use super::search_mode::SearchMode;
use super::{rounds, stdio};

/// Where [`router`](super::router) and [`Server::router`] answer.
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
    pub(super) sessions: Limits,
    /// What [`Server::serve_http`] accepts connections under.
    pub(super) connections: listen::Limits,
    pub(super) origins: Origins,
    pub(super) collect_limit: CollectLimit,
    /// Verifies the bearer token of every streamable HTTP request, when set.
    pub(super) authenticator: Option<Arc<dyn Authenticator>>,
    /// The resource URI of the HTTP endpoint, when set.
    pub(super) resource: Option<String>,
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
    pub(super) open_sessions: Arc<AtomicUsize>,
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
}

/// Serves `registry` over this process's stdin and stdout (see [`Server`]).
pub async fn serve_stdio(registry: impl Into<Registry>) -> Result<(), ToolError> {
    Server::new(registry).serve_stdio().await
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

pub(super) fn transport_error(err: &dyn std::fmt::Display) -> ToolError {
    ToolError::failed(format!("MCP transport: {err}"))
}

impl Server {
    /// The options every call of this request carries: the surface, the client,
    /// and (with layers to read them) the HTTP headers.
    pub(super) fn caller_options(&self, context: &RequestContext<RoleServer>) -> CallOptions {
        let mut options = client_options(ClientInfo::of(context));
        if let Some(parts) = context.extensions.get::<axum::http::request::Parts>() {
            if let Some(identity) = parts.extensions.get::<Identity>() {
                options = options.identity(identity.clone());
            }
            if self.shared.registry.has_layers() {
                options = options.insert(parts.headers.clone());
            }
        }
        if let Some(trace) = trace_of(context) {
            options = options.insert(trace);
        }
        options
    }

    /// The runner of a straight call (no layers: see [`runs_straight`](Self::runs_straight)):
    /// the client's options and the collect limit, made once per session (once per
    /// server for sessionless requests) for the client it names.
    pub(super) fn caller_runner(
        &self,
        context: &RequestContext<RoleServer>,
        sessionless: bool,
    ) -> Runner {
        let limit = self.shared.collect_limit;
        // A sessionless request is a session of its own: its runner is kept
        // server-wide, for the client it names.
        let kept = if sessionless {
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

/// The limits on the HTTP sessions of a server.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub(super) max_sessions: usize,
    /// The most sessions one caller (subject, else client label) holds at once;
    /// `None`: all but a reserve for others.
    pub(super) max_per_caller: Option<usize>,
    /// The most bytes of `initialize` parameters one session keeps.
    pub(super) initialize_bytes: usize,
    /// The most bytes of `initialize` parameters one caller's sessions keep.
    pub(super) caller_bytes: usize,
    pub(super) uninitialized_lifetime: Duration,
    pub(super) idle_lifetime: Duration,
    /// How long a session stays quiet (nothing in flight, no stream open) before
    /// its SDK session is closed and only what brings it back is kept; at or past
    /// the idle lifetime a running session ends before it would be parked.
    pub(super) park_after: Duration,
    /// Whether sessions may be at rest (this server keeps what brings them back:
    /// no session store of the caller's own).
    pub(super) parks: bool,
}

impl Limits {
    /// The most sessions one caller may hold at once.
    pub(super) fn per_caller(&self) -> usize {
        self.max_per_caller.unwrap_or_else(|| {
            let reserve = self.max_sessions * DEFAULT_SESSIONS_RESERVE_PERCENT / 100;
            self.max_sessions.saturating_sub(reserve).max(1)
        })
    }
}
