//! The peers the MCP benches compare: `add` written directly against the SDK (the
//! floor), one stdio client session, and the sessionless HTTP request.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use toolfunc::mcp::Server;
use toolfunc::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities,
    ServerConfig,
};
use toolfunc::mcp::rmcp::service::RequestContext;
use toolfunc::mcp::rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use toolfunc::{Registry, tool};

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct AddArgs {
    pub(crate) a: f64,
    pub(crate) b: f64,
}

/// The floor: `add` written directly against the SDK.
pub(crate) struct BareAdd;

impl ServerHandler for BareAdd {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args: AddArgs =
            serde_json::from_value(Value::Object(request.arguments.unwrap_or_default()))
                .map_err(|err| ErrorData::invalid_params(err.to_string(), None))?;
        let sum = serde_json::to_string(&add(args.a, args.b)).unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(sum)]).into())
    }
}

/// One client connection: request lines out, response lines in.
pub(crate) struct Session {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    next_id: u64,
}

impl Session {
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut line = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .expect("a request");
        line.push(b'\n');
        self.writer
            .write_all(&line)
            .await
            .expect("the server reads");
        loop {
            let line = self.lines.next_line().await.expect("the server writes");
            let message: Value = serde_json::from_str(&line.expect("an open pipe")).expect("JSON");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    pub(crate) async fn open(serve: impl FnOnce(DuplexStream, DuplexStream)) -> Self {
        let (client_out, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_in) = tokio::io::duplex(1 << 16);
        serve(server_in, server_out);
        let mut session = Self {
            writer: client_out,
            lines: BufReader::new(client_in).lines(),
            next_id: 0,
        };
        let init = session
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}}),
            )
            .await;
        assert!(init.get("result").is_some(), "{init}");
        session
            .writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .expect("the server reads");
        session
    }
}

/// A sessionless `tools/call` of `add` over streamable HTTP.
pub(crate) fn http_call(client: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "add", "arguments": {"a": 1, "b": 2},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    });
    client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "add")
        .body(body.to_string())
}

pub(crate) async fn serve_http(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(toolfunc::mcp::serve(listener, app));
    format!("http://{addr}/mcp")
}

/// A stdio session with the bare handler and one with toolfunc's server over the
/// global registry.
pub(crate) async fn stdio_sessions() -> [Session; 2] {
    let bare = Session::open(|r, w| {
        tokio::spawn(async move {
            let running = BareAdd.serve((r, w)).await.expect("a session");
            running.waiting().await
        });
    })
    .await;
    let ours = Session::open(|r, w| {
        tokio::spawn(Server::new(Registry::global()).serve_io(r, w));
    })
    .await;
    [bare, ours]
}
