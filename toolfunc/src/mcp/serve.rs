//! Serving the streamable HTTP endpoint: [`Server::router`] and
//! [`Server::http_service`] make it (the gate in front of the SDK's service, the
//! direct and at-rest paths, the session manager), [`serve`] runs the accept loop
//! `http::Server` runs (a cap on connections, a deadline for request heads, an
//! idle timeout, a lingering close after a body left unread, `TCP_NODELAY`), and
//! [`NoDelay`] is the listener to hand `axum::serve` for an app with MCP in it.
//!
//! The SDK answers a request as a short SSE stream, written in small pieces: with
//! Nagle's algorithm on (the default of a plain `axum::serve`), the last piece waits
//! for the ACK of the one before, which the client delays (about 40 ms on Linux). So
//! every sessionless call would take some 44 ms however fast its tool is. Every
//! connection accepted here has `TCP_NODELAY` set.

use std::net::SocketAddr;

use axum::serve::Listener;
use tokio::net::{TcpListener, TcpStream};

use std::sync::Arc;

use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::direct::Direct;
use super::gate::{Endpoint, Gate};
use super::server::{PATH, Server, transport_error};
use super::sessions::{Sessions, made};
use crate::auth::web;
use crate::error::ToolError;
use crate::listen::{self, Limits};
use crate::registry::Registry;
use crate::remote;

/// A TCP listener whose accepted connections have `TCP_NODELAY` set: what to hand
/// `axum::serve` for an app with MCP in it, when it is served with `axum::serve`'s
/// own options (a graceful shutdown). `axum::serve` has no cap on connections and
/// no header or idle timeout: [`serve`] and [`Server::serve_http`](super::Server::serve_http) do.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use toolfunc::mcp::{self, NoDelay};
/// use toolfunc::{CancellationToken, Registry};
///
/// let stop = CancellationToken::new();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3001").await?;
/// let app = mcp::router(Registry::global());
/// mcp::axum::serve(NoDelay::new(listener), app)
///     .with_graceful_shutdown(stop.cancelled_owned())
///     .await
/// # }
/// ```
#[derive(Debug)]
pub struct NoDelay {
    listener: TcpListener,
}

impl NoDelay {
    /// Wraps `listener`.
    pub fn new(listener: TcpListener) -> Self {
        Self { listener }
    }

    /// The listener back.
    pub fn into_inner(self) -> TcpListener {
        self.listener
    }
}

impl From<TcpListener> for NoDelay {
    fn from(listener: TcpListener) -> Self {
        Self::new(listener)
    }
}

impl Listener for NoDelay {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        // axum's own accept: retries (and backs off on) failed accepts.
        let (stream, addr) = Listener::accept(&mut self.listener).await;
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(%addr, "MCP: cannot set TCP_NODELAY: {err}");
        }
        (stream, addr)
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Serves `app` (an axum router with [`router`](super::router) merged in, say) on
/// `listener` until the process ends, every connection with `TCP_NODELAY`, under
/// the default connection limits of [`Server::serve_http`](super::Server::serve_http):
/// [`DEFAULT_MAX_CONNECTIONS`](super::DEFAULT_MAX_CONNECTIONS) open connections,
/// [`DEFAULT_HEADER_TIMEOUT`](super::DEFAULT_HEADER_TIMEOUT) to send a request's
/// head, [`DEFAULT_IDLE_TIMEOUT`](super::DEFAULT_IDLE_TIMEOUT) of silence on a
/// connection with nothing running, and up to
/// [`DEFAULT_DRAIN_LIMIT`](super::DEFAULT_DRAIN_LIMIT) of a body left unread read
/// and thrown away before closing. `toolfunc::http::Server::merge` serves an MCP
/// router beside HTTP APIs with limits of your choosing.
pub async fn serve(listener: impl Into<NoDelay>, app: axum::Router) -> std::io::Result<()> {
    listen::serve(listener.into().into_inner(), app, Limits::default()).await
}

/// The streamable HTTP endpoint of a [`Server`].
impl Server {
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
    pub async fn serve_http(self, listener: TcpListener) -> Result<(), ToolError> {
        let limits = self.shared.connections;
        listen::serve(listener, self.router(), limits)
            .await
            .map_err(|err| transport_error(&err))
    }
}

/// An axum router serving `registry` over streamable HTTP at `/mcp` (see
/// [`Server::router`]); serve it with [`serve`](super::serve()).
pub fn router(registry: impl Into<Registry>) -> axum::Router {
    Server::new(registry).router()
}
