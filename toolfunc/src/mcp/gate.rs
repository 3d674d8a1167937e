//! The middleware in front of the SDK's streamable HTTP service: authentication,
//! the scope pre-check, the routing of plain sessionless calls to the direct path
//! and of sessions at rest, the bounds of `initialize`, and an `id` on every
//! JSON-RPC error the SDK writes.

use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use futures::FutureExt;
use rmcp::model::{ProtocolVersion, RequestId};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::SessionId;
use serde_json::{Value, json};

use crate::auth::{Authenticator, web};
use crate::identity::Identity;
use crate::options::{CallOptions, Surface};
use crate::registry::Registry;
use crate::remote::{self, Lookup, Refusal, RemoteCall};

use super::direct::Direct;
use super::resting::{self, Asked, Resting};
use super::server::Server;
use super::sessions::{InRequest, REQUEST, Sessions};

/// What the middleware in front of the SDK's service needs.
#[derive(Clone)]
pub(super) struct Gate {
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

impl Gate {
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
                .is_some_and(|(owner, _)| **owner != *identity.key())
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

    /// `request`, its body read when it may be a `subscriptions/listen` that names
    /// resources its caller may not see (there are layers or scoped resources), and
    /// those left out ([`narrow_listen`](Self::narrow_listen)).
    async fn narrowed(
        &self,
        request: Request,
        identity: Option<&Identity>,
    ) -> Result<Request, Response> {
        if request.method() != Method::POST
            || !(self.registry.has_layers()
                || identity.is_some() && remote::any_scoped(&self.registry))
        {
            return Ok(request);
        }
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, self.max_body).await else {
            return Err(too_large(self.max_body));
        };
        let bytes = self
            .narrow_listen(&parts, identity, &bytes)
            .map_or(bytes, axum::body::Bytes::from);
        Ok(Request::from_parts(parts, Body::from(bytes)))
    }

    /// `request`, and when it is an `initialize` (a POST naming no session, and
    /// no sessionless method) the caller it opens a session for with the bytes of
    /// its parameters; or the refusal of one ([`opener`](Self::opener)).
    async fn screen_initialize(
        &self,
        request: Request,
        identity: Option<&Identity>,
    ) -> Result<(Request, Option<(Box<str>, usize)>), Response> {
        let maybe = request.method() == Method::POST
            && !request.headers().contains_key("mcp-session-id")
            && request
                .headers()
                .get("mcp-method")
                .is_none_or(|method| method == "initialize");
        if !maybe {
            return Ok((request, None));
        }
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, self.max_body).await else {
            return Err(too_large(self.max_body));
        };
        let opener = match self.opener(identity, &bytes) {
            Some(Opener::Refused(refusal)) => return Err(refusal),
            Some(Opener::Opens(key, size)) => Some((key, size)),
            None => None,
        };
        Ok((Request::from_parts(parts, Body::from(bytes)), opener))
    }

    /// The body of a `subscriptions/listen` in `body` with the resources its
    /// caller may not see (hidden by layers, or needing scopes its token lacks)
    /// left out of `resourceSubscriptions`, so the acknowledgement names none of
    /// them and no update of theirs is sent; `None` when there is nothing to leave
    /// out (or it is no listen).
    fn narrow_listen(
        &self,
        parts: &Parts,
        identity: Option<&Identity>,
        body: &[u8],
    ) -> Option<Vec<u8>> {
        const LISTEN: &[u8] = b"subscriptions/listen";
        if !body.windows(LISTEN.len()).any(|w| w == LISTEN) {
            return None;
        }
        let mut message: Value = serde_json::from_slice(body).ok()?;
        if message.get("method").and_then(Value::as_str) != Some("subscriptions/listen") {
            return None;
        }
        let options = self.caller_before_body(parts, identity);
        let uris = message
            .pointer_mut("/params/notifications/resourceSubscriptions")?
            .as_array_mut()?;
        let before = uris.len();
        uris.retain(|uri| {
            uri.as_str().is_some_and(|uri| {
                remote::admit_resource(&self.registry, uri, Some(&options)).is_ok()
            })
        });
        (uris.len() != before).then(|| serde_json::to_vec(&message).unwrap_or_default())
    }

    /// The options of a request's caller as far as they are known before its
    /// body is read (its identity, and its headers for layers to judge by): what
    /// the remote floor judges a call early with.
    fn caller_before_body(&self, parts: &Parts, identity: Option<&Identity>) -> CallOptions {
        let mut options = CallOptions::new().surface(Surface::Mcp);
        if let Some(identity) = identity {
            options = options.identity(identity.clone());
        }
        if self.registry.has_layers() {
            options = options.insert(parts.headers.clone());
        }
        options
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
        if self.search_mode && name == super::search_mode::CALL_TOOL {
            name = message
                .pointer("/params/arguments/name")
                .and_then(Value::as_str)?;
        }
        let options = self.caller_before_body(parts, Some(identity));
        let call = RemoteCall::new(name, Lookup::FUNCTION).caller(&options);
        let Err(Refusal::Scope(needed)) = remote::precheck(&self.registry, &call) else {
            return None;
        };
        let err = remote::insufficient_scope(&needed);
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let refused = super::refusal::refused(name, Refusal::Scope(needed));
        let body = json!({"jsonrpc": "2.0", "id": id, "error": refused});
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
    /// Records whose the session a response names is, if it is a new one:
    /// `caller`, the verified subject (else the client's label) that opened it.
    fn own(&self, response: &Response, caller: Option<&(Box<str>, usize)>) {
        let (Some((caller, bytes)), Some(id)) = (
            caller,
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
        if let Some(session) = known
            && !open.owners.contains_key(&session)
        {
            open.owners.insert(session, (caller.clone(), *bytes));
            let held = open.per_caller.entry(caller.clone()).or_default();
            held.0 += 1;
            held.1 += bytes;
        }
    }

    /// The caller an `initialize` in `body` opens a session for, and whether it
    /// holds its share of sessions already: the verified subject, else the
    /// client's label (`clientInfo.name`, at most 256 bytes of it); `None` when
    /// `body` is no `initialize`.
    fn opener(&self, identity: Option<&Identity>, body: &[u8]) -> Option<Opener> {
        #[derive(serde::Deserialize)]
        struct Init<'a> {
            #[serde(borrow)]
            method: std::borrow::Cow<'a, str>,
            #[serde(default)]
            id: Value,
            // Walked, not kept: the body's size bounds it first.
            #[serde(default)]
            params: Option<serde::de::IgnoredAny>,
        }
        let init: Init<'_> = serde_json::from_slice(body).ok()?;
        if init.method != "initialize" {
            return None;
        }
        let _ = init.params;
        let limits = &self.sessions.limits;
        // What a session keeps of it is at most what came: the body, less its
        // envelope.
        let size = body.len();
        if size > limits.initialize_bytes.saturating_add(ENVELOPE) {
            let why = format!(
                "the initialize request is {size} bytes; a session keeps at most {} of its \
                 parameters",
                limits.initialize_bytes
            );
            return Some(Opener::Refused(refused_params(&init.id, &why)));
        }
        let whole: Value = serde_json::from_slice(body).ok()?;
        let params = whole.get("params").unwrap_or(&Value::Null);
        if let Some(why) = oversized(params) {
            return Some(Opener::Refused(refused_params(&init.id, &why)));
        }
        let key: Box<str> = if let Some(identity) = identity {
            identity.key().into()
        } else {
            let mut label = params
                .pointer("/clientInfo/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if label.len() > 256 {
                let mut end = 256;
                while !label.is_char_boundary(end) {
                    end -= 1;
                }
                label.truncate(end);
            }
            format!("label:{label}").into()
        };
        // At the cap everyone is refused alike (503); below it, a caller past its
        // share of sessions, or of the bytes they keep, is (429).
        let (count, kept) = {
            let open = self.sessions.open();
            let room = open.sessions.len() + open.reserved < limits.max_sessions;
            let held = open.per_caller.get(&key).copied().unwrap_or_default();
            (
                room && held.0 >= limits.per_caller(),
                held.1 + size > limits.caller_bytes,
            )
        };
        if count {
            return Some(Opener::Refused(refused_caller(
                &init.id,
                limits.per_caller(),
            )));
        }
        if kept {
            return Some(Opener::Refused(refused_bytes(
                &init.id,
                limits.caller_bytes,
            )));
        }
        Some(Opener::Opens(key, size))
    }
}

/// The largest error body the SDK writes that is checked for an `id`.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The SDK's streamable HTTP service behind its [`Gate`] ([`answer`]): served as an
/// axum handler, so a request costs no middleware layer of its own (no boxed clone
/// of the service and its future per request).
pub(super) struct Endpoint {
    pub(super) service: StreamableHttpService<Server, Sessions>,
    pub(super) gate: Gate,
    /// Plain sessionless tool calls, answered without the SDK's per-request service.
    pub(super) direct: Direct,
}

/// Answers an `initialize` the session cap refuses with 503 and a JSON-RPC error,
/// and gives each JSON-RPC error body from the SDK an `id`.
pub(super) async fn answer(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let gate = &endpoint.gate;
    let mut request = request;
    let identity = match gate.authenticate(&mut request).await {
        Ok(identity) => identity,
        Err(refused) => return refused,
    };
    // A call its token lacks the scopes for is refused at the HTTP level (403).
    if let Some(identity) = &identity
        && request.method() == Method::POST
        && !remote::Catalog::of(&gate.registry).scopes().is_empty()
    {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, gate.max_body).await else {
            return too_large(gate.max_body);
        };
        if let Some(refused) = gate.lacks_scopes(&parts, identity, &bytes) {
            return refused;
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    // A listen is acknowledged only for resources its caller may see.
    request = match gate.narrowed(request, identity.as_ref()).await {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    // A plain sessionless tool call is answered here, past the SDK's service.
    if request.method() == Method::POST
        && Direct::takes(request.headers(), &endpoint.service.config)
    {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, gate.max_body).await else {
            return too_large(gate.max_body);
        };
        if let Some(call) = endpoint.direct.read(&parts.headers, &bytes) {
            let id = call.0.clone();
            return answered_in_place(endpoint.direct.answer(parts, call), &id).await;
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    // An `initialize` is refused when its caller holds its share of sessions
    // already, or its parameters are more than a session keeps.
    let opener;
    (request, opener) = match gate.screen_initialize(request, identity.as_ref()).await {
        Ok(screened) => screened,
        Err(refused) => return refused,
    };
    // A plain request of a session at rest (or an `initialize` opening one) is
    // answered here too, without an SDK session.
    if gate.sessions.rest()
        && resting::takes(
            request.method(),
            request.headers(),
            &endpoint.service.config,
        )
    {
        match at_rest(&endpoint, opener.as_ref(), request).await {
            Ok(response) => return response,
            Err(back) => request = back,
        }
    }
    let opens_session =
        request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
    let closes_session = request.method() == Method::DELETE;
    if opens_session && gate.sessions.full() {
        request = match at_the_cap(gate, request).await {
            Ok(request) => request,
            Err(refused) => return refused,
        };
    }
    // The session a request names stays running while the request is served.
    let named = request.headers().get("mcp-session-id").cloned();
    let pinned = named
        .as_ref()
        .and_then(|id| id.to_str().ok())
        .and_then(|id| gate.sessions.pin(id));
    let in_request = InRequest {
        deleting: closes_session,
        ..InRequest::default()
    };
    let (response, served) = REQUEST
        .scope(RefCell::new(in_request), async {
            let response = endpoint.service.handle(request).await.map(Body::new);
            (response, REQUEST.with(RefCell::take))
        })
        .await;
    drop(pinned);
    if served.refused {
        return refused(gate, &Value::Null);
    }
    let mut response = response;
    if let Some(made) = served.made {
        // A new session names itself in the response; one brought back from
        // parking was named by the request.
        let id = response.headers().get("mcp-session-id").or(named.as_ref());
        if let Some(id) = id.and_then(|id| id.to_str().ok()) {
            gate.sessions.adopt(id, made);
        }
    }
    if closes_session && response.status() == StatusCode::ACCEPTED {
        // A closed session has nothing more to say: `204 No Content`, which
        // clients take as done (the SDK's `202` reads as a failure to some).
        *response.status_mut() = StatusCode::NO_CONTENT;
        response.headers_mut().remove(header::CONTENT_LENGTH);
        *response.body_mut() = Body::empty();
    }
    gate.own(&response, opener.as_ref());
    with_error_ids(response).await
}

/// Answers a request of a session at rest, or an `initialize` that opens one, when
/// it is plain (see [`resting`]); gives the request back otherwise.
async fn at_rest(
    endpoint: &Endpoint,
    opener: Option<&(Box<str>, usize)>,
    request: Request,
) -> Result<Response, Request> {
    let gate = &endpoint.gate;
    let sessions = &gate.sessions;
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .map(str::to_owned);
    if request.method() == Method::DELETE {
        let known_version = request
            .headers()
            .get("mcp-protocol-version")
            .is_none_or(|version| {
                ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .any(|known| known.as_str().as_bytes() == version.as_bytes())
            });
        return match session {
            Some(id) if known_version && sessions.is_resting(&id) => {
                let _ = sessions.forget(&SessionId::from(id)).await;
                Ok(no_content())
            }
            _ => Err(request),
        };
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, gate.max_body).await else {
        return Ok(too_large(gate.max_body));
    };
    let server = endpoint.direct.server();
    match session {
        None => {
            if let Some((id, params)) = resting::opening(&parts.headers, &bytes)
                && let Some((resting, result)) = Resting::opened(server, &params)
            {
                let Some(session) = sessions.open_resting(params, resting) else {
                    return Ok(refused(
                        gate,
                        &serde_json::to_value(&id).unwrap_or_default(),
                    ));
                };
                let response = resting::opened(id, result, &session);
                gate.own(&response, opener);
                return Ok(response);
            }
        }
        Some(session) => {
            if let Some((resting, level)) =
                sessions.resting(&session, |params| Resting::of(server, params))
                && let Some(asked) = resting::read(&resting, &parts.headers, &bytes)
            {
                let Asked::Request(id, request, meta) = asked else {
                    // A notification: noted, and accepted.
                    sessions.heard(&session, &asked);
                    return Ok(resting::accepted());
                };
                // A request the client may cancel, known to its session until
                // answered.
                let (ct, held) = sessions.calling(&session, &id);
                let answer = endpoint.direct.answer_resting(
                    parts,
                    (id.clone(), *request, meta),
                    (&resting, level),
                    (ct, held),
                );
                return Ok(answered_in_place(answer, &id).await);
            }
        }
    }
    Err(Request::from_parts(parts, Body::from(bytes)))
}

/// The answer of a request the server answers itself, run in the request's task:
/// a panic is answered as the SDK answers a handler that gave no answer (500 with
/// the request's id), not with a dropped connection.
/// At the cap, an `initialize` refused by its id; any other request given back.
async fn at_the_cap(gate: &Gate, request: Request) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, gate.max_body).await else {
        return Err(too_large(gate.max_body));
    };
    let message: Option<Value> = serde_json::from_slice(&bytes).ok();
    if let Some(message) = &message
        && message.get("method").and_then(Value::as_str) == Some("initialize")
    {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        return Err(refused(gate, &id));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

async fn answered_in_place(answer: impl Future<Output = Response>, id: &RequestId) -> Response {
    AssertUnwindSafe(answer)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Internal error"}}),
            )
        })
}

/// `204 No Content`: how a closed session is answered.
fn no_content() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

fn refused(gate: &Gate, id: &Value) -> Response {
    let max = gate.sessions.limits.max_sessions;
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!("Server busy: the server has its limit of {max} sessions open; retry later"),
        "data": {"maxSessions": max},
    }});
    json_response(StatusCode::SERVICE_UNAVAILABLE, &body)
}

/// What the gate makes of an `initialize`: the caller it opens a session for
/// and the bytes of its parameters, or its refusal.
enum Opener {
    Opens(Box<str>, usize),
    Refused(Response),
}

/// The most bytes of an `initialize` request besides its parameters (the
/// JSON-RPC envelope).
const ENVELOPE: usize = 1024;

/// Why the `initialize` parameters are more than a session keeps, if they are:
/// nested past [`MAX_INITIALIZE_DEPTH`] or holding more than
/// [`MAX_INITIALIZE_ENTRIES`] members and items (their bytes are bounded before).
fn oversized(params: &Value) -> Option<String> {
    let (mut entries, mut deepest) = (0usize, 0usize);
    let mut stack = vec![(params, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        match value {
            Value::Object(map) => {
                entries += map.len();
                stack.extend(map.values().map(|v| (v, depth + 1)));
            }
            Value::Array(items) => {
                entries += items.len();
                stack.extend(items.iter().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
    if deepest > MAX_INITIALIZE_DEPTH {
        return Some(format!(
            "the initialize parameters nest {deepest} levels deep; a session keeps at most \
             {MAX_INITIALIZE_DEPTH}"
        ));
    }
    (entries > MAX_INITIALIZE_ENTRIES).then(|| {
        format!(
            "the initialize parameters hold {entries} entries; a session keeps at most \
             {MAX_INITIALIZE_ENTRIES}"
        )
    })
}

/// The deepest nesting of `initialize` parameters a session keeps.
const MAX_INITIALIZE_DEPTH: usize = 16;

/// The most members and items (all levels) of `initialize` parameters a session
/// keeps.
const MAX_INITIALIZE_ENTRIES: usize = 512;

/// The answer to an `initialize` whose parameters are more than a session keeps.
fn refused_params(id: &Value, why: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32602,
        "message": format!("Invalid params: {why}"),
        "data": {"code": "TOO_LARGE", "path": "/params"},
    }});
    json_response(StatusCode::PAYLOAD_TOO_LARGE, &body)
}

/// The answer to an `initialize` of a caller whose sessions keep its share of
/// bytes already.
fn refused_bytes(id: &Value, max: usize) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!(
            "Too many sessions: this caller's sessions keep {max} bytes of initialize \
             parameters, its limit; close one (DELETE) or let one expire"
        ),
        "data": {"code": "BUSY", "maxInitializeBytesPerCaller": max},
    }});
    json_response(StatusCode::TOO_MANY_REQUESTS, &body)
}

/// The answer to an `initialize` of a caller that holds its share of sessions.
fn refused_caller(id: &Value, max: usize) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!(
            "Too many sessions: this caller has {max} sessions open, its limit; close one \
             (DELETE) or let one expire"
        ),
        "data": {"code": "BUSY", "maxSessionsPerCaller": max},
    }});
    json_response(StatusCode::TOO_MANY_REQUESTS, &body)
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
