//! Sessions at rest over streamable HTTP: their plain requests answered by the
//! server itself, without the SDK's per-session service.
//!
//! The SDK serves each session with a task, channels and a handler of its own,
//! started by its `initialize` and kept until its `DELETE` or its idle end. A
//! client that opens a session for a request or two (as most load does) pays for
//! all of it. Here a session is at rest while it has no SDK session: when it is
//! parked (quiet for [`Server::session_park_after`]), or from its start when its
//! `initialize` is plain. Only what brings it back is kept (its `initialize`, its
//! log level), and these requests are answered in place from that:
//!
//! - `initialize` itself, which opens the session at rest;
//! - `notifications/initialized` and `notifications/cancelled` (of a request
//!   answered here);
//! - `ping`, `tools/list`, `prompts/list`, `resources/list`,
//!   `resources/templates/list`, `completion/complete`;
//! - `tools/call`, `prompts/get` and `resources/read`, for a client that declared
//!   no way to be asked anything back (elicitation, sampling, roots), without a
//!   progress token or the answers of a round. A call's log messages come before
//!   its answer in an SSE stream; an answer with nothing before it is JSON.
//!
//! Plain means, for every one: a server set to answer single messages as JSON
//! (`json_response`, as [`Server::router`] is) with sessions and parking on; no
//! `Origin`, a `Host` the SDK's allowed hosts name as written; for a `POST`,
//! `Accept` and `Content-Type` as the SDK requires them and a `Content-Length`
//! within its body limit; an `MCP-Protocol-Version` that is absent or the session's;
//! no `_meta` entry of the 2026-07-28 protocol. Anything else goes to the SDK as
//! before, which brings the session back (replaying its handshake) and serves it:
//! a `GET` stream, `logging/setLevel`, subscriptions, tasks.
//!
//! [`Server::session_park_after`]: super::server::Server::session_park_after
//! [`Server::router`]: super::server::Server::router

use std::pin::Pin;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientRequest, CompleteRequest,
    CompleteRequestParams, GetPromptRequest, GetPromptRequestParams, InitializeRequestParams,
    InitializeResult, JsonObject, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, ListToolsRequest, PaginatedRequestParams, PingRequest, ProtocolVersion,
    ReadResourceRequest, ReadResourceRequestParams, RequestId, RequestMetaObject,
    ServerJsonRpcMessage, ServerNotification, ServerResult,
};
use rmcp::service::{RequestContext, Service};
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::direct::Direct;
use super::report::Outbox;
use super::server::Server;
use super::wire::{frame, host_named, one, posts_plainly, sse, written};

/// What the requests of a session at rest are read with, made from its
/// `initialize`.
pub(super) struct Resting {
    /// The protocol revision the session agreed on.
    version: ProtocolVersion,
    /// The `_meta` entries its requests are read with: the agreed revision, the
    /// client and its capabilities, where a sessionless request carries them.
    meta: JsonObject,
    /// Whether the client declared no way to be asked anything back: only then are
    /// its calls answered here.
    asks_nothing: bool,
}

impl Resting {
    /// What the requests of the session `params` opened are read with; `None` when
    /// the server refuses those params (the SDK answers them then).
    pub(super) fn of(server: &Server, params: &InitializeRequestParams) -> Option<Self> {
        Self::opened(server, params).map(|(resting, _)| resting)
    }

    /// [`of`](Self::of), with the result of the `initialize` that opens the session.
    pub(super) fn opened(
        server: &Server,
        params: &InitializeRequestParams,
    ) -> Option<(Self, InitializeResult)> {
        let result = server.negotiate_initialize(params).ok()?;
        let version = result.protocol_version.clone();
        let mut meta = JsonObject::new();
        meta.insert(
            PROTOCOL_VERSION_KEY.into(),
            Value::String(version.as_str().to_owned()),
        );
        meta.insert(
            CLIENT_INFO_KEY.into(),
            serde_json::to_value(&params.client_info).ok()?,
        );
        meta.insert(
            CLIENT_CAPABILITIES_KEY.into(),
            serde_json::to_value(&params.capabilities).ok()?,
        );
        let resting = Self {
            version,
            meta,
            asks_nothing: asks_nothing(&params.capabilities),
        };
        Some((resting, result))
    }
}

fn asks_nothing(capabilities: &ClientCapabilities) -> bool {
    capabilities.elicitation.is_none()
        && capabilities.sampling.is_none()
        && capabilities.roots.is_none()
}

const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The prefix of the `_meta` keys a 2026-07-28 request carries.
const PROTOCOL_META: &str = "io.modelcontextprotocol/";

/// Whether a request with these headers may be answered here (its body, if any,
/// still to be read): see the [module](self).
pub(super) fn takes(
    method: &Method,
    headers: &HeaderMap,
    config: &StreamableHttpServerConfig,
) -> bool {
    if !config.legacy_session_mode
        || headers.get_all("mcp-session-id").iter().count() > 1
        || headers.get_all("mcp-protocol-version").iter().count() > 1
    {
        return false;
    }
    match *method {
        Method::DELETE => {
            config.json_response
                && headers.contains_key("mcp-session-id")
                && !headers.contains_key(header::ORIGIN)
                && one(headers, header::HOST.as_str()).is_some_and(|host| host_named(host, config))
        }
        Method::POST => posts_plainly(headers, config),
        _ => false,
    }
}

/// One JSON-RPC message, as read here.
#[derive(Deserialize)]
struct Message<P> {
    jsonrpc: String,
    #[serde(default)]
    id: Option<RequestId>,
    method: String,
    #[serde(default = "none")]
    params: Option<P>,
}

fn none<P>() -> Option<P> {
    None
}

impl<P> Message<P> {
    fn is(&self, method: &str) -> bool {
        self.jsonrpc == "2.0" && self.method == method
    }
}

/// The `initialize` in `body`, when a plain one opens a session: see the
/// [module](self).
pub(super) fn opening(
    headers: &HeaderMap,
    body: &[u8],
) -> Option<(RequestId, InitializeRequestParams)> {
    let message: Message<InitializeRequestParams> = serde_json::from_slice(body).ok()?;
    if !message.is("initialize") {
        return None;
    }
    let params = message.params?;
    let id = message.id?;
    // A supplied version or method must agree with the body (the SDK refuses it
    // otherwise).
    let version_agrees = match headers.get("mcp-protocol-version") {
        None => true,
        Some(value) => value.as_bytes() == params.protocol_version.as_str().as_bytes(),
    };
    let method_agrees = match one(headers, "mcp-method") {
        None => !headers.contains_key("mcp-method"),
        Some(method) => method == "initialize",
    };
    (version_agrees && method_agrees).then_some((id, params))
}

/// What a session at rest asked.
pub(super) enum Asked {
    /// `notifications/initialized`: its handshake is done.
    Initialized,
    /// `notifications/cancelled` of a request.
    Cancelled(RequestId),
    /// A request, answered through the SDK's dispatch, and its `_meta`.
    Request(RequestId, Box<ClientRequest>, Option<RequestMetaObject>),
}

/// The request of a session at rest in `body`, when it is plain: see the
/// [module](self).
pub(super) fn read(resting: &Resting, headers: &HeaderMap, body: &[u8]) -> Option<Asked> {
    if headers
        .get("mcp-protocol-version")
        .is_some_and(|value| value.as_bytes() != resting.version.as_str().as_bytes())
    {
        return None;
    }
    let head: Message<IgnoredAny> = serde_json::from_slice(body).ok()?;
    if head.jsonrpc != "2.0" {
        return None;
    }
    let Some(id) = head.id else {
        return match head.method.as_str() {
            "notifications/initialized" => Some(Asked::Initialized),
            "notifications/cancelled" => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Cancelled {
                    request_id: RequestId,
                }
                let message: Message<Cancelled> = serde_json::from_slice(body).ok()?;
                Some(Asked::Cancelled(message.params?.request_id))
            }
            _ => None,
        };
    };
    let (request, meta) = request(&head.method, body, resting.asks_nothing)?;
    Some(Asked::Request(id, Box::new(request), meta))
}

/// The request `method` in `body`, when it is plain, and its `_meta`. A function
/// that runs (a tool, a prompt, a resource) is taken only when its client can be
/// asked nothing back (`asks_nothing`), and wants no progress.
fn request(
    method: &str,
    body: &[u8],
    asks_nothing: bool,
) -> Option<(ClientRequest, Option<RequestMetaObject>)> {
    // A list: its params may be absent.
    macro_rules! list {
        ($variant:ident) => {{
            let (params, meta) = paginated(body)?;
            let request = params.map_or_else(Default::default, $variant::with_param);
            (ClientRequest::$variant(request), meta)
        }};
    }
    // A function that runs: no progress token, no round's answers.
    macro_rules! runs {
        ($params:ty, $variant:ident) => {{
            let mut params = message_params::<$params>(body)?;
            let meta = plain_meta(params.meta.take(), true)?;
            if params.input_responses.is_some() || params.request_state.is_some() {
                return None;
            }
            (ClientRequest::$variant($variant::new(params)), meta)
        }};
    }
    Some(match method {
        "ping" => {
            let message: Message<JsonObject> = serde_json::from_slice(body).ok()?;
            if message.params.as_ref().is_some_and(has_protocol_meta) {
                return None;
            }
            (ClientRequest::PingRequest(PingRequest::default()), None)
        }
        "tools/list" => list!(ListToolsRequest),
        "prompts/list" => list!(ListPromptsRequest),
        "resources/list" => list!(ListResourcesRequest),
        "resources/templates/list" => list!(ListResourceTemplatesRequest),
        "completion/complete" => {
            let mut params = message_params::<CompleteRequestParams>(body)?;
            let meta = plain_meta(params.meta.take(), false)?;
            let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
            (request, meta)
        }
        "tools/call" if asks_nothing => runs!(CallToolRequestParams, CallToolRequest),
        "prompts/get" if asks_nothing => runs!(GetPromptRequestParams, GetPromptRequest),
        "resources/read" if asks_nothing => runs!(ReadResourceRequestParams, ReadResourceRequest),
        _ => return None,
    })
}

/// The params of the request in `body`, which must have some.
fn message_params<P: DeserializeOwned>(body: &[u8]) -> Option<P> {
    serde_json::from_slice::<Message<P>>(body).ok()?.params
}

/// The params of a list request in `body` (it may have none), its `_meta` apart.
fn paginated(body: &[u8]) -> Option<(Option<PaginatedRequestParams>, Option<RequestMetaObject>)> {
    let mut params = serde_json::from_slice::<Message<PaginatedRequestParams>>(body)
        .ok()?
        .params;
    let meta = plain_meta(params.as_mut().and_then(|params| params.meta.take()), false)?;
    Some((params, meta))
}

/// A request's `_meta`, when it is plain: no entry of the 2026-07-28 protocol, and
/// no progress token where a function runs (`runs`). `None` when it is not.
#[allow(clippy::option_option, reason = "absent is plain; not plain is None")]
fn plain_meta(meta: Option<RequestMetaObject>, runs: bool) -> Option<Option<RequestMetaObject>> {
    let plain = meta.as_ref().is_none_or(|meta| {
        let protocol = meta.keys().any(|key| key.starts_with(PROTOCOL_META));
        let progress = runs && meta.get_progress_token().is_some();
        !(protocol || progress)
    });
    plain.then_some(meta)
}

fn has_protocol_meta(params: &JsonObject) -> bool {
    params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|meta| meta.keys().any(|key| key.starts_with(PROTOCOL_META)))
}

impl Direct {
    /// Answers request `id` of a session at rest, its log level `level` (an index
    /// in [`LogLevel::ALL`](crate::log::LogLevel::ALL)); it runs until `ct` is
    /// cancelled, and `held` is kept until it is answered.
    pub(super) async fn answer_resting<H: Send + 'static>(
        &self,
        parts: Parts,
        (id, request, meta): (RequestId, ClientRequest, Option<RequestMetaObject>),
        (resting, level): (&Resting, u8),
        (ct, held): (CancellationToken, H),
    ) -> Response {
        let handler = self.server().session();
        handler
            .session
            .log_level
            .store(level, std::sync::atomic::Ordering::Relaxed);
        // The request reads as one that carries its session's revision, client and
        // capabilities in its `_meta`, as a sessionless request does.
        let mut context = RequestContext::new(id.clone(), self.peer());
        context.meta = meta.unwrap_or_default();
        for (key, value) in &resting.meta {
            context
                .meta
                .0
                .entry(key.clone())
                .or_insert_with(|| value.clone());
        }
        context.ct = ct.clone();
        context.extensions.insert(parts);
        let (tx, reports) = mpsc::unbounded_channel();
        context.extensions.insert(Outbox(tx));
        // Through the SDK's dispatch, which shapes each result for the session's
        // protocol revision. A call its client cancelled (or whose session ended)
        // is not answered, as the SDK does not answer it.
        let call = Box::pin(async move {
            let message = match Service::handle_request(&handler, request, context).await {
                Ok(result) => ServerJsonRpcMessage::response(result, id),
                Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
            };
            drop(held);
            (!ct.is_cancelled()).then_some(message)
        });
        reported(call, reports).await
    }
}

/// The answer to a plain `initialize` that opened session `session`.
pub(super) fn opened(id: RequestId, result: InitializeResult, session: &str) -> Response {
    let message = ServerJsonRpcMessage::response(ServerResult::InitializeResult(result), id);
    let mut response = written(&message);
    if let Ok(value) = HeaderValue::from_str(session) {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// The answer to a call that may report before it answers: JSON when it answers
/// first, else an SSE stream of its reports as they come and then its answer.
async fn reported(
    mut call: Pin<Box<dyn Future<Output = Option<ServerJsonRpcMessage>> + Send>>,
    mut reports: mpsc::UnboundedReceiver<ServerNotification>,
) -> Response {
    let first = tokio::select! {
        biased;
        Some(report) = reports.recv() => report,
        message = &mut call => {
            if let Some(message) = &message && reports.is_empty() {
                return written(message);
            }
            // Reports came before the answer: they go first, in a stream.
            let mut frames = Vec::new();
            while let Ok(report) = reports.try_recv() {
                frames.push(frame(&ServerJsonRpcMessage::notification(report)));
            }
            frames.extend(message.as_ref().map(frame));
            return sse(futures::stream::iter(frames));
        }
    };
    let first = frame(&ServerJsonRpcMessage::notification(first));
    let rest = futures::stream::unfold(Some((call, reports)), |state| async move {
        let (mut call, mut reports) = state?;
        tokio::select! {
            biased;
            Some(report) = reports.recv() => {
                Some((frame(&ServerJsonRpcMessage::notification(report)), Some((call, reports))))
            }
            message = &mut call => {
                let mut frames = Vec::new();
                while let Ok(report) = reports.try_recv() {
                    frames.extend_from_slice(&frame(&ServerJsonRpcMessage::notification(report)));
                }
                if let Some(message) = &message {
                    frames.extend_from_slice(&frame(message));
                }
                Some((Bytes::from(frames), None))
            }
        }
    });
    sse(futures::stream::once(std::future::ready(first)).chain(rest))
}

/// `202 Accepted`, as the SDK answers a notification.
pub(super) fn accepted() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue};
    use serde_json::json;

    use super::opening;

    #[test]
    fn an_initialize_is_read_when_its_headers_agree() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}}})
        .to_string();
        let mut headers = HeaderMap::new();
        assert!(opening(&headers, body.as_bytes()).is_some());
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-03-26"),
        );
        assert!(opening(&headers, body.as_bytes()).is_none());
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-06-18"),
        );
        headers.insert("mcp-method", HeaderValue::from_static("tools/list"));
        assert!(opening(&headers, body.as_bytes()).is_none());
        let notification = json!({"jsonrpc": "2.0", "method": "initialize"}).to_string();
        assert!(opening(&HeaderMap::new(), notification.as_bytes()).is_none());
    }
}
