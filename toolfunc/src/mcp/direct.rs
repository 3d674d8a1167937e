//! A sessionless (2026-07-28) `tools/call` over streamable HTTP, answered by the
//! server itself instead of the SDK's per-request service.
//!
//! The SDK serves each sessionless request by reading it into its message type,
//! checking its standard headers against a copy of the whole message turned back
//! into JSON, and starting a service, with its channels and task, for that one
//! request: most of what such a call costs a server. A plain call is answered here
//! instead: read once, its handler run in the request's own task, its answer
//! written as the SDK writes it (the same JSON-RPC body, status and content type).
//!
//! Plain means: one JSON-RPC request for `tools/call` whose `_meta` and
//! `MCP-Protocol-Version` header both say 2026-07-28, with every `_meta` entry that
//! version requires, no progress token, log level, round answers or request state;
//! headers `Mcp-Method: tools/call` and `Mcp-Name` naming the tool, once each, and no
//! `Mcp-Param-*` (nor a tool whose schema asks for them); `Accept` and
//! `Content-Type` as the SDK requires them, and a `Content-Length` within its body
//! limit; no `Origin`, and a `Host` the SDK's
//! allowed hosts name as written; and a server set to answer single messages as JSON
//! (`json_response`, as [`Server::router`] is). Anything else goes to the SDK as
//! before, so its checks and its errors stay the SDK's.

use std::sync::OnceLock;

use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::Response;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientJsonRpcMessage, ErrorData,
    ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{Peer, RequestContext, RunningService};
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::{RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::Value;

use super::server::Server;
use super::wire::{one, posts_plainly, written};

/// The protocol revision whose requests are answered here.
const VERSION: &str = "2026-07-28";

/// What the direct path keeps: the server, and a peer for the requests' contexts.
pub(super) struct Direct {
    server: Server,
    /// A service that never hears anything, made on first use, whose peer every
    /// direct request's context carries: a plain call sends its client nothing
    /// (questions go back as rounds, and nothing reports progress or logs).
    quiet: OnceLock<RunningService<RoleServer, Server>>,
}

/// One JSON-RPC request, as the direct path reads it.
#[derive(Deserialize)]
struct Call {
    jsonrpc: String,
    id: RequestId,
    method: String,
    params: CallToolRequestParams,
}

impl Direct {
    pub(super) fn new(server: Server) -> Self {
        Self {
            server,
            quiet: OnceLock::new(),
        }
    }

    /// The server whose requests are answered here.
    pub(super) fn server(&self) -> &Server {
        &self.server
    }

    pub(super) fn peer(&self) -> Peer<RoleServer> {
        self.quiet
            .get_or_init(|| {
                let transport = (
                    futures::sink::drain(),
                    futures::stream::pending::<ClientJsonRpcMessage>(),
                );
                rmcp::service::serve_directly(self.server.session(), transport, None)
            })
            .peer()
            .clone()
    }

    /// Whether a request with these headers may be answered here (its body still
    /// to be read): see the [module](self).
    pub(super) fn takes(headers: &HeaderMap, config: &StreamableHttpServerConfig) -> bool {
        let one = |name: &str| one(headers, name);
        one("mcp-protocol-version") == Some(VERSION)
            && one("mcp-method") == Some("tools/call")
            && one("mcp-name").is_some_and(|name| !name.starts_with("=?"))
            && !headers.contains_key("mcp-session-id")
            && !headers
                .keys()
                .any(|name| name.as_str().starts_with("mcp-param-"))
            && posts_plainly(headers, config)
    }

    /// The call in `body`, when it is a plain one: see the [module](self).
    pub(super) fn read(
        &self,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Option<(RequestId, CallToolRequestParams)> {
        let call: Call = serde_json::from_slice(body).ok()?;
        let params = &call.params;
        let meta = params.meta.as_ref()?;
        let plain = call.jsonrpc == "2.0"
            && call.method == "tools/call"
            && meta.protocol_version() == Some(ProtocolVersion::V_2026_07_28)
            && meta
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
            && meta.get_progress_token().is_none()
            && !meta.contains_key("io.modelcontextprotocol/logLevel")
            && params.input_responses.is_none()
            && params.request_state.is_none()
            && headers.get("mcp-name").and_then(|v| v.to_str().ok()) == Some(&*params.name);
        if !plain {
            return None;
        }
        // A tool MCP does not list, or whose parameters the client must mirror in
        // headers, is the SDK's.
        let mirrored = self.server.listed_schema(&params.name, |schema| {
            schema.values().any(|value| names_header(value, 0))
        })?;
        (!mirrored).then_some((call.id, call.params))
    }

    /// Answers the call as the SDK would: its JSON-RPC response or error, with the
    /// status the SDK gives it.
    pub(super) async fn answer(
        &self,
        parts: Parts,
        (id, mut params): (RequestId, CallToolRequestParams),
    ) -> Response {
        let mut context = RequestContext::new(id, self.peer());
        context.meta = params.meta.take().unwrap_or_default();
        context.extensions.insert(parts);
        written(&called(&self.server.session(), params, context).await)
    }
}

/// The answer of `handler` to a `tools/call`, as the SDK's dispatch makes it: a
/// task goes only to a client that takes tasks.
pub(super) async fn called(
    handler: &Server,
    params: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> ServerJsonRpcMessage {
    let id = context.id.clone();
    let takes_tasks = context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks());
    match handler.call_tool(params, context).await {
        Ok(CallToolResponse::Task(_)) if !takes_tasks => ServerJsonRpcMessage::error(
            ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ),
            Some(id),
        ),
        Ok(response) => ServerJsonRpcMessage::response(ServerResult::from(response), id),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}

/// Whether a schema asks for a parameter mirrored in a header (`x-mcp-header`),
/// looked for a few levels down, as deep as the SDK looks.
fn names_header(schema: &Value, depth: usize) -> bool {
    match schema {
        Value::Object(map) => {
            map.contains_key("x-mcp-header")
                || (depth < 8 && map.values().any(|value| names_header(value, depth + 1)))
        }
        Value::Array(items) => depth < 8 && items.iter().any(|v| names_header(v, depth + 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::names_header;

    #[test]
    fn header_parameters_are_found() {
        assert!(names_header(
            &json!({"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}),
            0
        ));
        assert!(!names_header(
            &json!({"properties": {"a": {"type": "string"}}}),
            0
        ));
    }
}
