//! The request path of the HTTP server: screening, discovery, calls, acts, REST
//! verbs, NDJSON streams and background tasks, on axum; and the [`Server`] that
//! mounts several [`Api`]s and serves them under connection limits.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::routing::{any, get};
use tracing::Instrument;
use tracing::field::Empty;

use super::answer::{ErrorType, error_response, json_response};
use super::api::{Api, METRICS_PATH, resource_metadata};
use super::cors;
use super::respond::{metrics_text, respond};
use super::wire::{self, REQ_ID, X_REQUEST_ID};
use crate::error::ToolError;
use crate::listen::{self, Limits};
use crate::propagate;
use crate::registry::Registry;
use crate::trace::TraceContext;

/// Several [`Api`]s on one server, each under its own prefix with its own registry,
/// and the connection limits it serves with.
///
/// ```
/// use std::time::Duration;
/// use toolfunc::Registry;
/// use toolfunc::http::{Api, Server};
///
/// let server = Server::new()
///     .mount(Api::new(Registry::new()).prefix("/api"))
///     .unwrap()
///     .mount(Api::new(Registry::new()).prefix("/admin"))
///     .unwrap()
///     .max_connections(256)
///     .idle_timeout(Duration::from_secs(30));
/// // The same prefix twice is refused.
/// let err = server.mount(Api::new(Registry::new()).prefix("/api/")).unwrap_err();
/// assert_eq!(err.code(), "CONFLICT");
/// ```
#[derive(Debug, Default, Clone)]
pub struct Server {
    apis: Vec<Api>,
    extra: Option<axum::Router>,
    limits: Limits,
}

impl Server {
    /// A server with nothing mounted, and the default limits:
    /// [`DEFAULT_MAX_CONNECTIONS`](super::DEFAULT_MAX_CONNECTIONS) open connections, [`DEFAULT_HEADER_TIMEOUT`](super::DEFAULT_HEADER_TIMEOUT) to
    /// send a request's head, [`DEFAULT_IDLE_TIMEOUT`](super::DEFAULT_IDLE_TIMEOUT) of silence on a connection
    /// with nothing running, [`DEFAULT_DRAIN_LIMIT`](super::DEFAULT_DRAIN_LIMIT) of an unread body
    /// read and thrown away before closing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an API; a prefix that is already mounted is `CONFLICT`, and so is a
    /// second API serving [metrics](Api::metrics).
    pub fn mount(mut self, api: Api) -> Result<Self, ToolError> {
        if api.metrics.is_some() && self.apis.iter().any(|a| a.metrics.is_some()) {
            return Err(ToolError::conflict(format!(
                "`{METRICS_PATH}` is served by another API already"
            )));
        }
        if self.apis.iter().any(|a| a.prefix == api.prefix) {
            return Err(ToolError::conflict(format!(
                "the prefix `{}` is already mounted",
                if api.prefix.is_empty() {
                    "/"
                } else {
                    &api.prefix
                }
            )));
        }
        self.apis.push(api);
        Ok(self)
    }

    /// Serves other routes beside the APIs (the MCP router, a health check), under
    /// the same connection limits.
    #[must_use]
    pub fn merge(mut self, router: axum::Router) -> Self {
        self.extra = Some(match self.extra.take() {
            Some(extra) => extra.merge(router),
            None => router,
        });
        self
    }

    /// The most connections open at once; past it new ones wait in the listen
    /// backlog until one closes. Default [`DEFAULT_MAX_CONNECTIONS`](super::DEFAULT_MAX_CONNECTIONS).
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.limits.max_connections = max.max(1);
        self
    }

    /// How long a client has to send a request's line and headers once the
    /// connection is ready for one (a slowloris client is cut off); a connection
    /// kept alive between requests closes after the same time. Default
    /// [`DEFAULT_HEADER_TIMEOUT`](super::DEFAULT_HEADER_TIMEOUT).
    #[must_use]
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_timeout = timeout;
        self
    }

    /// How long a connection may move no byte while nothing runs on it (a body
    /// sent half-way, an answer nobody reads) before it is closed. Default
    /// [`DEFAULT_IDLE_TIMEOUT`](super::DEFAULT_IDLE_TIMEOUT).
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// How long a client has to send a whole request body, from when its head
    /// was read: a body still arriving then (one trickled a byte at a time, never
    /// quiet long enough for the [idle timeout](Self::idle_timeout)) is cut off,
    /// the call answered 408 `TIMEOUT` and the connection closed. Default
    /// [`DEFAULT_BODY_TIMEOUT`](super::DEFAULT_BODY_TIMEOUT) (30 seconds).
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body_timeout = timeout;
        self
    }

    /// How much of a request body the server did not read (a body refused by its
    /// `Content-Length` with 413, a request refused before its body was needed) it
    /// still reads and throws away once it has answered, for at most the
    /// [header timeout](Self::header_timeout), before it closes the connection.
    /// Closing with unread bytes makes the system reset the connection, and a
    /// client still sending its body would report that reset, not the answer; so
    /// the server sends its answer, then its end of the stream, and keeps reading
    /// until the client closes, this many bytes are read, or the time is up.
    /// `0` closes at once. Default
    /// [`DEFAULT_DRAIN_LIMIT`](super::DEFAULT_DRAIN_LIMIT) (4 MiB).
    #[must_use]
    pub fn drain_limit(mut self, bytes: usize) -> Self {
        self.limits.drain_limit = bytes;
        self
    }

    /// One router for every mounted API and merged route (to serve on your own).
    /// A path none of them serves answers 404 with a JSON body naming the APIs'
    /// discovery paths (so a merged router must not set a fallback of its own).
    pub fn router(self) -> axum::Router {
        let prefixes: Vec<String> = self
            .apis
            .iter()
            .map(|api| {
                if api.prefix.is_empty() {
                    "/".to_owned()
                } else {
                    api.prefix.clone()
                }
            })
            .collect();
        // The APIs' protected-resource metadata is served once per path, by the
        // fallback: several APIs and a merged MCP router may share one resource
        // (the merged router's own route answers first).
        let mut audiences: Vec<(String, Arc<Api>)> = Vec::new();
        let apis = self
            .apis
            .into_iter()
            .fold(axum::Router::new(), |router, api| {
                let api = Arc::new(api);
                for path in api.metadata_paths() {
                    if !audiences.iter().any(|(known, _)| *known == path) {
                        audiences.push((path, Arc::clone(&api)));
                    }
                }
                router.merge(Api::router_of(api, false))
            });
        let all = match self.extra {
            Some(extra) => apis.merge(extra),
            None => apis,
        };
        let body = serde_json::json!({
            "error": "Not Found",
            "code": 404,
            "errorCode": "NOT_FOUND",
            "apis": prefixes,
        });
        let audiences = Arc::new(audiences);
        all.fallback(
            move |method: Method, uri: axum::http::Uri, headers: HeaderMap| {
                let body = body.clone();
                let audiences = Arc::clone(&audiences);
                async move {
                    let metadata = audiences.iter().find(|(path, _)| path == uri.path());
                    match metadata {
                        Some((_, api)) if method == Method::GET || method == Method::HEAD => {
                            resource_metadata(State(Arc::clone(api)), headers).await
                        }
                        _ => json_response(StatusCode::NOT_FOUND, &body),
                    }
                }
            },
        )
    }

    /// Serves on `listener` until the process ends, with this server's limits.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let limits = self.limits;
        listen::serve(listener, self.router(), limits).await
    }
}

/// Serves `registry` under `/api` on `addr`, with the default limits of [`Api`]
/// and [`Server`].
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// toolfunc::http::serve("127.0.0.1:3000", toolfunc::Registry::global()).await
/// # }
/// ```
pub async fn serve(
    addr: impl tokio::net::ToSocketAddrs,
    registry: impl Into<Registry>,
) -> std::io::Result<()> {
    let registry = registry.into();
    let listener = tokio::net::TcpListener::bind(addr).await?;
    listen::serve(listener, router(registry), Limits::default()).await
}

/// Runs a request and answers it with its request ids: the `req-id` it came with
/// (a fresh one when it had none, as the JavaScript servers do) and the
/// `x-request-id` a proxy in front set, so one id follows a call through logs.
///
/// Each request runs in an `INFO` span named and filled as OpenTelemetry's
/// conventions for an HTTP server say, the child of the caller's span when the
/// request carries a W3C `traceparent` (and OpenTelemetry records spans).
pub(super) async fn handle(State(api): State<Arc<Api>>, mut request: Request) -> Response {
    let req_id = request.headers().get(REQ_ID).cloned();
    let x_request_id = request.headers().get(X_REQUEST_ID).cloned();
    let method = request.method().clone();
    let span = tracing::info_span!(
        "http_request",
        otel.name = method.as_str(),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = method.as_str(),
        http.route = Empty,
        http.response.status_code = Empty,
        error.type = Empty,
    );
    let incoming = TraceContext::read(|name| {
        request
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
    });
    propagate::adopt(&span, incoming.as_ref());
    if let Some(incoming) = incoming {
        request.extensions_mut().insert(incoming);
    }
    let granted = api.cors.granted(request.headers());
    let mut response = match &granted {
        // A preflight of a page the API grants, once its host passes.
        Some(granted) if cors::is_preflight(&method, request.headers()) => {
            match api.check_site(request.headers()) {
                Ok(()) => granted.preflight(),
                Err(err) => error_response(None, &err),
            }
        }
        _ => respond(&api, request).instrument(span.clone()).await,
    };
    if let Some(granted) = &granted {
        granted.expose(&mut response);
    }
    if !span.is_disabled() {
        let status = response.status();
        span.record("http.response.status_code", status.as_u16());
        match response.extensions().get::<ErrorType>() {
            Some(ErrorType(code)) => span.record("error.type", code.as_str()),
            None if !status.is_success() => span.record("error.type", status.as_str()),
            None => &span,
        };
        if status.is_server_error() {
            span.record("otel.status_code", "ERROR");
        }
    }
    let headers = response.headers_mut();
    // A call moved to the background answers with the id it is tracked under.
    if !headers.contains_key(REQ_ID) {
        let req_id = req_id.or_else(|| HeaderValue::from_str(&wire::request_id()).ok());
        if let Some(id) = req_id {
            headers.insert(REQ_ID, id);
        }
    }
    if let Some(id) = x_request_id {
        headers.insert(X_REQUEST_ID, id);
    }
    response
}

/// The API's routes, each request answered by `handle`.
impl Api {
    /// The axum router: `<prefix>`, `<prefix>/` and `<prefix>/*`, with an
    /// [authenticator](Self::authenticate) the protected-resource metadata at
    /// `/.well-known/oauth-protected-resource<prefix>` and at the path its 401
    /// challenges name (the metadata path of the [resource](Self::resource), for an
    /// audience such as `https://tools.example.com` with no path of its own), and
    /// with [metrics](Self::metrics) `/metrics`.
    ///
    /// An API and an MCP router with the same resource both serve its metadata:
    /// serve them together through [`Server`](super::Server) (`Server::merge`),
    /// which serves each metadata path once, rather than merging the two routers
    /// by hand (axum refuses a route twice).
    pub fn router(self) -> axum::Router {
        Self::router_of(Arc::new(self), true)
    }

    /// The router of `api`; with `metadata` also the protected-resource metadata
    /// routes ([`metadata_paths`](Self::metadata_paths)), which a
    /// [`Server`](super::Server) serves itself instead, once for all its surfaces.
    pub(super) fn router_of(state: Arc<Self>, metadata: bool) -> axum::Router {
        let prefix = state.prefix.clone();
        let root = if prefix.is_empty() { "/" } else { &prefix };
        let mut router = axum::Router::new().route(root, any(handle));
        if !prefix.is_empty() {
            router = router.route(&format!("{prefix}/"), any(handle));
        }
        if state.metrics.is_some() {
            router = router.route(METRICS_PATH, get(metrics_text));
        }
        if metadata {
            for path in state.metadata_paths() {
                router = router.route(&path, get(resource_metadata));
            }
        }
        router
            .route(&format!("{prefix}/{{*rest}}"), any(handle))
            .with_state(state)
    }
}

/// The router serving `registry` under `/api` (see [`Api`] to choose the prefix,
/// the body limit and an auth hook).
pub fn router(registry: impl Into<Registry>) -> axum::Router {
    Api::new(registry).router()
}
