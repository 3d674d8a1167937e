//! The peers the MCP benches compare: `add` written directly against the SDK (the
//! floor: [`BareAdd`], which lists nothing and answers text; [`ListedAdd`], which
//! lists `add` and answers what toolfunc answers), one stdio client session, and the
//! sessionless HTTP request.

use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use toolfunc::mcp::Server;

use toolfunc::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
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

/// The same tool in rmcp's cheapest setup with toolfunc's config: `add` listed with
/// its input and output schemas (kept, as toolfunc keeps its export), `get_tool`
/// answered from them, and the result sent as text and `structuredContent`, as the
/// spec asks of a tool with an output schema. Its answer is toolfunc's, byte for
/// byte.
#[derive(Clone)]
pub(crate) struct ListedAdd {
    tool: Tool,
}

impl ListedAdd {
    pub(crate) fn new() -> Self {
        let schema = |value: Value| match value {
            Value::Object(object) => Arc::new(object),
            _ => unreachable!("a schema object"),
        };
        let input = schema(json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        }));
        let tool = Tool::new("add", "Adds two numbers.", input)
            .with_raw_output_schema(schema(json!({"type": "number"})));
        Self { tool }
    }
}

impl ServerHandler for ListedAdd {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == self.tool.name).then(|| self.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != self.tool.name {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let args: AddArgs =
            serde_json::from_value(Value::Object(request.arguments.unwrap_or_default()))
                .map_err(|err| ErrorData::invalid_params(err.to_string(), None))?;
        let sum = serde_json::to_value(add(args.a, args.b)).unwrap_or_default();
        let mut result = CallToolResult::success(vec![ContentBlock::text(sum.to_string())]);
        result.structured_content = Some(sum);
        Ok(result.into())
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

/// A stdio session with an SDK handler.
pub(crate) async fn stdio_session<H: ServerHandler>(handler: H) -> Session {
    Session::open(|r, w| {
        tokio::spawn(async move {
            let running = handler.serve((r, w)).await.expect("a session");
            running.waiting().await
        });
    })
    .await
}

/// A stdio session with toolfunc's server over the global registry.
pub(crate) async fn stdio_toolfunc() -> Session {
    Session::open(|r, w| {
        tokio::spawn(Server::new(Registry::global()).serve_io(r, w));
    })
    .await
}
