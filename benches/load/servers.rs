//! The three servers under load, each serving the same three tools over the same
//! [`Backend`]: toolfunc's MCP server, a hand-written rmcp server with the SDK's
//! production settings, and toolfunc's HTTP RPC.

use std::sync::Arc;

use axum::serve::ListenerExt;
use serde::Serialize;
use serde_json::{Map, Value};
use toolfunc::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use toolfunc::mcp::rmcp::service::RequestContext;
use toolfunc::mcp::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use toolfunc::mcp::rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService,
};
use toolfunc::mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
use toolfunc::{Registry, ToolError, ToolFunc};

use super::backend::{Backend, CartArgs, CartLine, Product, ProductArgs, Rate, RateArgs};

/// A server under load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `toolfunc::mcp::Server`, served as the README says.
    ToolfuncMcp,
    /// rmcp's `StreamableHttpService` over a hand-written `ServerHandler`.
    Rmcp,
    /// `toolfunc::http` (RPC: `POST /api/<tool>`).
    ToolfuncHttp,
}

impl Kind {
    /// All three, in the order of the report.
    pub const ALL: [Self; 3] = [Self::ToolfuncMcp, Self::Rmcp, Self::ToolfuncHttp];

    /// Its name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Self::ToolfuncMcp => "toolfunc-mcp",
            Self::Rmcp => "rmcp",
            Self::ToolfuncHttp => "toolfunc-http",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

fn failed(message: String) -> ToolError {
    ToolError::failed(message)
}

/// The three tools in a registry of their own.
pub fn registry(backend: &Backend) -> Result<Registry, ToolError> {
    let registry = Registry::new();
    let b = backend.clone();
    registry.register(
        ToolFunc::builder("get_product")
            .description("Reads a product from the store.")
            .typed(move |_, args: ProductArgs| {
                let b = b.clone();
                async move { b.get_product(args.id).await.map_err(failed) }
            })
            .build()?,
    )?;
    let b = backend.clone();
    registry.register(
        ToolFunc::builder("add_to_cart")
            .description("Adds a product to a user's cart.")
            .typed(move |_, args: CartArgs| {
                let b = b.clone();
                async move { b.add_to_cart(args).await.map_err(failed) }
            })
            .build()?,
    )?;
    let b = backend.clone();
    registry.register(
        ToolFunc::builder("get_rate")
            .description("Reads an exchange rate from the rates service.")
            .typed(move |_, args: RateArgs| {
                let b = b.clone();
                async move { b.get_rate(&args.currency).await.map_err(failed) }
            })
            .build()?,
    )?;
    Ok(registry)
}

/// The same tools written directly against rmcp: listed with their input and output
/// schemas (made once), answered as text and `structuredContent`, as toolfunc
/// answers them.
#[derive(Clone)]
pub struct RmcpTools {
    backend: Backend,
    tools: Arc<Vec<Tool>>,
}

fn schema_object<T: schemars::JsonSchema>() -> Arc<Map<String, Value>> {
    match serde_json::to_value(schemars::schema_for!(T)) {
        Ok(Value::Object(object)) => Arc::new(object),
        _ => Arc::new(Map::new()),
    }
}

impl RmcpTools {
    /// The handler over `backend`.
    pub fn new(backend: Backend) -> Self {
        let tool = |name: &'static str, description: &'static str, input, output| {
            Tool::new(name, description, input).with_raw_output_schema(output)
        };
        let tools = vec![
            tool(
                "get_product",
                "Reads a product from the store.",
                schema_object::<ProductArgs>(),
                schema_object::<Product>(),
            ),
            tool(
                "add_to_cart",
                "Adds a product to a user's cart.",
                schema_object::<CartArgs>(),
                schema_object::<CartLine>(),
            ),
            tool(
                "get_rate",
                "Reads an exchange rate from the rates service.",
                schema_object::<RateArgs>(),
                schema_object::<Rate>(),
            ),
        ];
        Self {
            backend,
            tools: Arc::new(tools),
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(request: CallToolRequestParams) -> Result<T, ErrorData> {
    serde_json::from_value(Value::Object(request.arguments.unwrap_or_default()))
        .map_err(|err| ErrorData::invalid_params(err.to_string(), None))
}

fn answer<T: Serialize>(result: Result<T, String>) -> CallToolResponse {
    match result.and_then(|value| serde_json::to_value(value).map_err(|e| e.to_string())) {
        Ok(value) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
            result.structured_content = Some(value);
            result.into()
        }
        Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]).into(),
    }
}

impl ServerHandler for RmcpTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match &*request.name {
            "get_product" => {
                let args: ProductArgs = parse(request)?;
                Ok(answer(self.backend.get_product(args.id).await))
            }
            "add_to_cart" => {
                let args: CartArgs = parse(request)?;
                Ok(answer(self.backend.add_to_cart(args).await))
            }
            "get_rate" => {
                let args: RateArgs = parse(request)?;
                Ok(answer(self.backend.get_rate(&args.currency).await))
            }
            _ => Err(ErrorData::invalid_params("unknown tool", None)),
        }
    }
}

/// Serves `kind` over `backend` on a loopback port of the current runtime; the URL
/// its clients post to.
pub async fn serve(kind: Kind, backend: &Backend) -> Result<String, String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    match kind {
        Kind::ToolfuncMcp => {
            let registry = registry(backend).map_err(|e| e.to_string())?;
            let server = toolfunc::mcp::Server::new(registry);
            tokio::spawn(server.serve_http(listener));
            Ok(format!("http://{addr}{}", toolfunc::mcp::PATH))
        }
        Kind::Rmcp => {
            // The SDK's production settings: JSON answers where the transport allows
            // them (2026-07-28 requests; a legacy session's answers are SSE in rmcp
            // whatever this says), sessions kept in memory.
            let handler = RmcpTools::new(backend.clone());
            let service = StreamableHttpService::new(
                move || Ok(handler.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default().with_json_response(true),
            );
            let app = axum::Router::new().nest_service("/mcp", service);
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            tokio::spawn(async move { axum::serve(listener, app).await });
            Ok(format!("http://{addr}/mcp"))
        }
        Kind::ToolfuncHttp => {
            let registry = registry(backend).map_err(|e| e.to_string())?;
            let server = toolfunc::http::Server::new()
                .mount(toolfunc::http::Api::new(registry))
                .map_err(|e| e.to_string())?;
            tokio::spawn(server.serve(listener));
            Ok(format!("http://{addr}/api"))
        }
    }
}
