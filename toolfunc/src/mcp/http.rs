//! Limits around the SDK's streamable HTTP server: a cap on sessions, a lifetime for
//! sessions that never finish their handshake, an idle lifetime for the others
//! (the SDK's keep-alive), the Origin check, and an `id` on every JSON-RPC error.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

use crate::auth::{Authenticator, web};
use crate::identity::Identity;
use crate::options::{CallOptions, Surface};
use crate::registry::Registry;
use crate::remote::{self, Lookup};

/// Which browser origins may call the endpoint.
#[derive(Clone, Debug)]
pub(super) enum Origins {
    /// Only these (the SDK's syntax: `scheme://host[:port|:*]`, or `null`).
    Only(Vec<String>),
    Any,
}

impl Origins {
    /// Loopback pages, on any port.
    pub(super) fn loopback() -> Self {
        let origins = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .flat_map(|host| ["http", "https"].map(|scheme| format!("{scheme}://{host}:*")))
            .collect();
        Self::Only(origins)
    }

    /// `config` with these origins, unless it names its own.
    pub(super) fn apply(&self, config: StreamableHttpServerConfig) -> StreamableHttpServerConfig {
        if !config.allowed_origins.is_empty() {
            return config;
        }
        match self {
            Self::Only(origins) if origins.is_empty() => config.enforce_origin_validation(),
            Self::Only(origins) => config.with_allowed_origins(origins.iter().cloned()),
            Self::Any => config,
        }
    }
}

/// The session limits of one HTTP endpoint.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub(super) max_sessions: usize,
    pub(super) uninitialized_lifetime: Duration,
    pub(super) idle_lifetime: Duration,
}

tokio::task_local! {
    /// Set when a session was refused while serving the current HTTP request.
    static REFUSED: Cell<bool>;
}

/// The SDK's in-memory session manager with a cap on sessions and a deadline for
/// the `notifications/initialized` that ends each handshake.
pub(super) struct Sessions {
    inner: LocalSessionManager,
    /// Open sessions, each with whether its handshake is done.
    open: Mutex<Open>,
    limits: Limits,
    me: Weak<Sessions>,
}

#[derive(Default)]
struct Open {
    sessions: HashMap<SessionId, bool>,
    /// The verified subject each session was opened by, when an authenticator
    /// guards the endpoint: only it may use the session.
    owners: HashMap<SessionId, Box<str>>,
    /// Places taken by sessions being created.
    reserved: usize,
}

impl Sessions {
    pub(super) fn new(limits: Limits) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle_lifetime);
        Arc::new_cyclic(|me| Self {
            inner,
            open: Mutex::default(),
            limits,
            me: Weak::clone(me),
        })
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn full(&self) -> bool {
        let open = self.open();
        open.sessions.len() + open.reserved >= self.limits.max_sessions
    }

    /// Closes `id` if it has not finished its handshake by the deadline.
    fn expire_unless_initialized(&self, id: SessionId) {
        let me = Weak::clone(&self.me);
        let lifetime = self.limits.uninitialized_lifetime;
        tokio::spawn(async move {
            tokio::time::sleep(lifetime).await;
            let Some(sessions) = me.upgrade() else {
                return;
            };
            let pending = sessions.open().sessions.get(&id) == Some(&false);
            if pending {
                tracing::debug!(session = %id, "MCP: closing a session that never finished initializing");
                let _ = sessions.close_session(&id).await;
            }
        });
    }
}

/// A place reserved for a session being created; given back unless kept.
struct Reservation<'a>(&'a Sessions);

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.0.open().reserved -= 1;
    }
}

#[derive(Debug)]
pub(super) enum SessionsError {
    Full(usize),
    Local(LocalSessionManagerError),
}

impl std::fmt::Display for SessionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full(max) => write!(f, "the server has its limit of {max} sessions open"),
            Self::Local(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for SessionsError {}

impl From<LocalSessionManagerError> for SessionsError {
    fn from(err: LocalSessionManagerError) -> Self {
        Self::Local(err)
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let reservation = {
            let mut open = self.open();
            if open.sessions.len() + open.reserved >= self.limits.max_sessions {
                drop(open);
                let _ = REFUSED.try_with(|refused| refused.set(true));
                return Err(SessionsError::Full(self.limits.max_sessions));
            }
            open.reserved += 1;
            Reservation(self)
        };
        let (id, transport) = self.inner.create_session().await?;
        self.open().sessions.insert(id.clone(), false);
        drop(reservation);
        self.expire_unless_initialized(id.clone());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        {
            let mut open = self.open();
            open.sessions.remove(id);
            open.owners.remove(id);
        }
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        if let JsonRpcMessage::Notification(notification) = &message
            && matches!(
                notification.notification,
                ClientNotification::InitializedNotification(_)
            )
            && let Some(done) = self.open().sessions.get_mut(id)
        {
            *done = true;
        }
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let outcome = self.inner.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) {
            // A restored session has had its handshake.
            self.open().sessions.insert(id, true);
        }
        Ok(outcome)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// What the middleware in front of the SDK's service needs.
#[derive(Clone)]
pub(super) struct Guard {
    pub(super) sessions: Arc<Sessions>,
    pub(super) max_body: usize,
    /// Verifies every request's bearer token, when set.
    pub(super) authenticator: Option<Arc<dyn Authenticator>>,
    /// The resource URI of the endpoint, when set.
    pub(super) resource: Option<String>,
    /// Where the endpoint is mounted, when known (the request's path otherwise).
    pub(super) path: Option<&'static str>,
    /// The tools served, for the scopes a call needs.
    pub(super) registry: Registry,
    /// Whether the server is in search mode: a `call_tool` is judged by the
    /// function it names.
    pub(super) search_mode: bool,
}

impl Guard {
    /// The identity of the request, or the 401 that refuses it; and whether the
    /// session it names belongs to someone else (answered as an unknown session).
    async fn authenticate(&self, request: &mut Request) -> Result<Option<Identity>, Response> {
        let Some(authenticator) = &self.authenticator else {
            return Ok(None);
        };
        let (parts, body) = std::mem::take(request).into_parts();
        let resource = || {
            let path = self.path.unwrap_or_else(|| parts.uri.path());
            web::resource(
                self.resource.as_deref(),
                authenticator.as_ref(),
                &parts.headers,
                path,
            )
        };
        let identity = web::check(authenticator.as_ref(), &parts, resource, |err| {
            json_response(
                StatusCode::from_u16(err.status()).unwrap_or(StatusCode::UNAUTHORIZED),
                &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": err.to_string()}}),
            )
        })
        .await?;
        if let Some(id) = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            let open = self.sessions.open();
            if open
                .owners
                .get(id)
                .is_some_and(|owner| **owner != *identity.subject())
            {
                return Err(json_response(
                    StatusCode::NOT_FOUND,
                    &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "Session not found"}}),
                ));
            }
        }
        let mut parts = parts;
        parts.extensions.insert(identity.clone());
        *request = Request::from_parts(parts, body);
        Ok(Some(identity))
    }

    /// The 403 refusing a `tools/call` in `body` whose tool needs scopes the
    /// caller's token lacks (the MCP specification's step-up: the challenge names
    /// them), or nothing.
    fn lacks_scopes(&self, parts: &Parts, identity: &Identity, body: &[u8]) -> Option<Response> {
        let message: Value = serde_json::from_slice(body).ok()?;
        if message.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        let mut name = message.pointer("/params/name").and_then(Value::as_str)?;
        if self.search_mode && name == super::search::CALL_TOOL {
            name = message
                .pointer("/params/arguments/name")
                .and_then(Value::as_str)?;
        }
        let mut options = CallOptions::new()
            .surface(Surface::Mcp)
            .identity(identity.clone());
        if self.registry.has_layers() {
            options = options.insert(parts.headers.clone());
        }
        let err = remote::find(&self.registry, name, Lookup::FUNCTION, Some(&options)).err()?;
        if err.code() != remote::INSUFFICIENT_SCOPE {
            return None;
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let body = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32003,
            "message": err.to_string(),
            "data": {"code": err.code(), "scope": err.data().and_then(|d| d.get("scope").cloned())},
        }});
        let authenticator = self.authenticator.as_ref()?;
        Some(web::with_scope_challenge(
            json_response(StatusCode::FORBIDDEN, &body),
            &err,
            || {
                let path = self.path.unwrap_or_else(|| parts.uri.path());
                web::metadata_url(&web::resource(
                    self.resource.as_deref(),
                    authenticator.as_ref(),
                    &parts.headers,
                    path,
                ))
            },
        ))
    }

    /// Records who opened the session a response names, if it is a new one.
    fn own(&self, response: &Response, identity: Option<&Identity>) {
        let (Some(identity), Some(id)) = (
            identity,
            response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok()),
        ) else {
            return;
        };
        let mut open = self.sessions.open();
        let known = open
            .sessions
            .get_key_value(id)
            .map(|(s, _)| SessionId::clone(s));
        if let Some(session) = known {
            open.owners
                .entry(session)
                .or_insert_with(|| identity.subject().into());
        }
    }
}

/// The largest error body the SDK writes that is checked for an `id`.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The SDK's streamable HTTP service behind [`guard`]: served as an axum handler,
/// so a request costs no middleware layer of its own (no boxed clone of the service
/// and its future per request).
pub(super) struct Guarded {
    pub(super) service: StreamableHttpService<super::server::Server, Sessions>,
    pub(super) guard: Guard,
}

/// Answers an `initialize` the session cap refuses with 503 and a JSON-RPC error,
/// and gives each JSON-RPC error body from the SDK an `id`.
pub(super) async fn guard(State(guarded): State<Arc<Guarded>>, request: Request) -> Response {
    let guard = &guarded.guard;
    let mut request = request;
    let identity = match guard.authenticate(&mut request).await {
        Ok(identity) => identity,
        Err(refused) => return refused,
    };
    // A call its token lacks the scopes for is refused at the HTTP level (403).
    if let Some(identity) = &identity
        && request.method() == Method::POST
        && !remote::Catalog::of(&guard.registry).scopes().is_empty()
    {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, guard.max_body).await else {
            return too_large(guard.max_body);
        };
        if let Some(refused) = guard.lacks_scopes(&parts, identity, &bytes) {
            return refused;
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let opens_session =
        request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
    let closes_session = request.method() == Method::DELETE;
    if opens_session && guard.sessions.full() {
        // At the cap: read the body to answer the initialize by its id.
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, guard.max_body).await else {
            return too_large(guard.max_body);
        };
        let message: Option<Value> = serde_json::from_slice(&bytes).ok();
        if let Some(message) = &message
            && message.get("method").and_then(Value::as_str) == Some("initialize")
        {
            let id = message.get("id").cloned().unwrap_or(Value::Null);
            return refused(guard, &id);
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let (response, was_refused) = REFUSED
        .scope(Cell::new(false), async {
            let response = guarded.service.handle(request).await.map(Body::new);
            (response, REFUSED.with(Cell::get))
        })
        .await;
    if was_refused {
        return refused(guard, &Value::Null);
    }
    let mut response = response;
    if closes_session && response.status() == StatusCode::ACCEPTED {
        // A closed session has nothing more to say: `204 No Content`, which
        // clients take as done (the SDK's `202` reads as a failure to some).
        *response.status_mut() = StatusCode::NO_CONTENT;
        response.headers_mut().remove(header::CONTENT_LENGTH);
        *response.body_mut() = Body::empty();
    }
    guard.own(&response, identity.as_ref());
    with_error_ids(response).await
}

fn refused(guard: &Guard, id: &Value) -> Response {
    let max = guard.sessions.limits.max_sessions;
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!("Server busy: the server has its limit of {max} sessions open; retry later"),
        "data": {"maxSessions": max},
    }});
    json_response(StatusCode::SERVICE_UNAVAILABLE, &body)
}

fn too_large(max: usize) -> Response {
    let mut response = Response::new(Body::from(format!(
        "Payload Too Large: request body exceeds {max} bytes"
    )));
    *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An error response's JSON-RPC body with `"id": null` when the SDK left it out.
async fn with_error_ids(response: Response) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !is_json || !(response.status().is_client_error() || response.status().is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, ERROR_BODY_LIMIT).await else {
        let body = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32603, "message": "Internal error"}});
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::from(body.to_string()));
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut object))
            if object.contains_key("error") && !object.contains_key("id") =>
        {
            object.insert("id".into(), Value::Null);
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(Value::Object(object).to_string()))
        }
        _ => Response::from_parts(parts, Body::from(bytes)),
    }
}
