//! An MCP server's tools, through rmcp's client: the server started as a child
//! process speaking MCP on stdio, or reached at its streamable HTTP endpoint
//! (sessionless where it offers the 2026-07-28 revision, else in a session);
//! kept in step with its tool list, and started or connected again when it ends.

use std::fmt::Write as _;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::ServiceExt;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    GetPromptRequestParams, GetPromptResponse, Implementation, MetaObject, ProtocolVersion,
    ReadResourceRequestParams, RequestMetaObject, Tool,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, Peer, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::source::Source;
use super::{MountState, Offer, Opened, PromptOffer, unavailable};
use crate::error::ToolError;
use crate::prompt::{PromptBuilder, PromptFunc};
use crate::propagate;
use crate::resource::{ResourceBuilder, ResourceFunc};
use crate::tool::{Annotations, ToolFunc};

/// The first wait before a dead child is started again; it doubles to
/// [`MAX_BACKOFF`] while starts fail.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between two starts of a child that keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The connection the mounted tools call through: the running server's peer, or
/// why there is none now.
struct Link {
    peer: RwLock<Result<Peer<RoleClient>, String>>,
}

impl Link {
    fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        self.peer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .map_err(unavailable)
    }

    fn set(&self, peer: Result<Peer<RoleClient>, String>) {
        *self.peer.write().unwrap_or_else(PoisonError::into_inner) = peer;
    }
}

/// What toolfunc's client says of itself, and what it hears: a changed tool list.
struct Listener {
    changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.notify_one();
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.notify_one();
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolfunc", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A running server: its peer, the token that ends it, and its end.
struct Running {
    peer: Peer<RoleClient>,
    stop: rmcp::service::RunningServiceCancellationToken,
    ended: tokio::task::JoinHandle<()>,
}

/// Where the server is.
#[derive(Clone)]
enum Target {
    /// A program started as a child process.
    Child { program: String, args: Vec<String> },
    /// A streamable HTTP endpoint, and the client (with the mount's credentials)
    /// that calls it.
    Http {
        url: String,
        http: super::mcp_http::Http,
        /// The longest answer (or event of a stream) read.
        limit: usize,
    },
}

impl Target {
    fn name(&self) -> &str {
        match self {
            Self::Child { program, .. } => program,
            Self::Http { url, .. } => url,
        }
    }
}

/// Starts the child (or opens the endpoint) and makes the MCP handshake.
async fn start(target: &Target, changed: &Arc<Notify>) -> Result<Running, String> {
    let listener = Listener {
        changed: Arc::clone(changed),
    };
    let name = target.name();
    let service = match target {
        Target::Child { program, args } => {
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            let (transport, _) = TokioChildProcess::builder(command)
                // The server's log goes where this process's goes; a pipe nobody
                // reads would fill and stop it.
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .map_err(|e| format!("`{program}` could not be started: {e}"))?;
            listener.serve(transport).await
        }
        Target::Http { url, http, limit } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            config.max_json_response_size = *limit;
            config.max_sse_event_size = *limit;
            let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
            // Sessionless (`server/discover`, 2026-07-28) where the server offers it,
            // else a session of the `initialize` handshake.
            let lifecycle = ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::LATEST],
                legacy_version: None,
            };
            listener.serve_with_lifecycle(transport, lifecycle).await
        }
    }
    .map_err(|e| format!("`{name}` did not complete the MCP handshake: {e}"))?;
    let peer = service.peer().clone();
    let stop = service.cancellation_token();
    let ended = tokio::spawn(async move {
        let _ = service.waiting().await;
    });
    Ok(Running { peer, stop, ended })
}

/// Starts the server, lists its tools, places them, and keeps them in step.
pub(super) async fn open(
    source: &Source,
    state: &Arc<MountState>,
) -> Result<Box<dyn Opened>, ToolError> {
    let target = match source {
        Source::McpStdio { program, args } => Target::Child {
            program: program.clone(),
            args: args.clone(),
        },
        Source::McpHttp(url) => {
            let client = super::http_client(&state.mount)?;
            let tokens = super::tokens(&state.mount, &client);
            Target::Http {
                url: url.clone(),
                http: super::mcp_http::Http { client, tokens },
                limit: state.mount.max_response_bytes,
            }
        }
        _ => unreachable!("open is called for MCP sources only"),
    };
    let namespace = state.mount.namespace.clone();
    let changed = Arc::new(Notify::new());
    let running = start(&target, &changed)
        .await
        .map_err(|why| unavailable(format!("mount `{namespace}`: {why}")))?;
    let link = Arc::new(Link {
        peer: RwLock::new(Ok(running.peer.clone())),
    });
    let tools = running
        .peer
        .list_all_tools()
        .await
        .map_err(|e| unavailable(format!("mount `{namespace}`: tools/list failed: {e}")))?;
    if let Err(err) = state.place(offers(&link, tools), true) {
        running.stop.cancel();
        return Err(err);
    }
    list_kinds(state, &link, &running.peer).await;
    let stop = CancellationToken::new();
    let done = Arc::new(Notify::new());
    let supervisor = Supervisor {
        state: Arc::clone(state),
        link,
        changed,
        target,
        stop: stop.clone(),
    };
    let finished = Arc::clone(&done);
    tokio::spawn(
        async move {
            supervisor.run(running).await;
            finished.notify_one();
        }
        .instrument(tracing::info_span!("mount", mount = %namespace)),
    );
    Ok(Box::new(Child { stop, done }))
}

/// Ends the supervisor, which ends the child.
struct Child {
    stop: CancellationToken,
    done: Arc<Notify>,
}

impl Opened for Child {
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let done = self.done.notified();
            self.stop.cancel();
            done.await;
        })
    }
}

/// Keeps a mount in step with its child: lists again on a change (or on the
/// mount's timer), and starts the child again, with backoff, when it dies.
struct Supervisor {
    state: Arc<MountState>,
    link: Arc<Link>,
    changed: Arc<Notify>,
    target: Target,
    stop: CancellationToken,
}

impl Supervisor {
    async fn run(self, mut running: Running) {
        let refresh = self.state.mount.refresh_every;
        loop {
            let tick = async {
                match refresh {
                    Some(every) => tokio::time::sleep(every).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = self.stop.cancelled() => {
                    running.stop.cancel();
                    let _ = running.ended.await;
                    self.link.set(Err("the mount is closed".into()));
                    return;
                }
                () = self.changed.notified() => self.relist(&running.peer).await,
                () = tick => self.relist(&running.peer).await,
                _ = &mut running.ended => {
                    let name = self.target.name();
                    tracing::warn!(server = %name, "the MCP server ended; starting (or connecting) again");
                    self.link.set(Err(format!("the MCP server `{name}` ended; it is being started again")));
                    match self.restart().await {
                        Some(next) => {
                            running = next;
                            self.link.set(Ok(running.peer.clone()));
                            self.relist(&running.peer).await;
                        }
                        None => return,
                    }
                }
            }
        }
    }

    /// Starts the child again, waiting longer after each failure; `None` when the
    /// mount is closed meanwhile.
    async fn restart(&self) -> Option<Running> {
        let mut wait = FIRST_BACKOFF;
        loop {
            tokio::select! {
                () = self.stop.cancelled() => return None,
                () = tokio::time::sleep(wait) => {}
            }
            match start(&self.target, &self.changed).await {
                Ok(running) => return Some(running),
                Err(why) => {
                    tracing::warn!(%why, retry_in = ?wait, "the MCP server could not be started again");
                    self.link.set(Err(why));
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    async fn relist(&self, peer: &Peer<RoleClient>) {
        match peer.list_all_tools().await {
            Ok(tools) => {
                if let Err(err) = self.state.place(offers(&self.link, tools), false) {
                    tracing::warn!(error = %err, "the MCP server's new tool list was not placed");
                }
            }
            Err(err) => tracing::warn!(error = %err, "tools/list failed"),
        }
        list_kinds(&self.state, &self.link, peer).await;
    }
}

/// The source's tools as offers.
fn offers(link: &Arc<Link>, tools: Vec<Tool>) -> Vec<Offer> {
    tools
        .into_iter()
        .map(|tool| {
            let link = Arc::clone(link);
            Offer {
                name: tool.name.to_string(),
                tags: Vec::new(),
                build: Box::new(move |name| mounted_tool(name, link, &tool)),
            }
        })
        .collect()
}

/// The builder of one mounted tool: the source's metadata, a handler that calls it.
fn mounted_tool(name: String, link: Arc<Link>, tool: &Tool) -> crate::tool::ToolBuilder {
    let source_name = tool.name.to_string();
    let mut builder = ToolFunc::builder(name);
    if let Some(description) = &tool.description {
        builder = builder.description(description.to_string());
    }
    let title = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
    if let Some(title) = title {
        builder = builder.title(title);
    }
    if let Some(hints) = &tool.annotations {
        let mut annotations = Annotations::new();
        annotations.read_only = hints.read_only_hint;
        annotations.destructive = hints.destructive_hint;
        annotations.idempotent = hints.idempotent_hint;
        annotations.open_world = hints.open_world_hint;
        builder = builder.annotations(annotations);
    }
    // The result is MCP's own (content blocks and the structured value), which
    // every surface reads as a `Content` result; the source's output schema says
    // what the structured value holds.
    let mut result = json!({
        "type": "object",
        "x-toolfunc-content": true,
        "properties": {"content": {"type": "array"}, "structuredContent": {}},
        "required": ["content"],
    });
    if let Some(output) = &tool.output_schema {
        result["properties"]["structuredContent"] = Value::Object((**output).clone());
    }
    let input = Value::Object((*tool.input_schema).clone());
    builder
        .params_schema(input)
        .result_schema(result)
        .handler(move |ctx, args| {
            let link = Arc::clone(&link);
            let name = source_name.clone();
            let span = tracing::info_span!(
                "mcp_client",
                otel.name = format!("tools/call {name}"),
                otel.kind = "client",
                mcp.method.name = "tools/call",
                gen_ai.tool.name = %name,
            );
            let trace = propagate::outgoing(&span, Some(&ctx));
            async move {
                let peer = link.peer()?;
                let arguments = match args {
                    Value::Object(arguments) => arguments,
                    _ => serde_json::Map::new(),
                };
                let mut params = CallToolRequestParams::new(name.clone()).with_arguments(arguments);
                if let Some(trace) = trace {
                    let meta: serde_json::Map<String, Value> = trace
                        .entries()
                        .map(|(field, value)| (field.to_owned(), Value::String(value.to_owned())))
                        .collect();
                    params.meta = Some(RequestMetaObject(MetaObject(meta)));
                }
                let result = peer.call_tool(params).await.map_err(|e| {
                    unavailable(format!(
                        "the MCP server's tools/call of `{name}` failed: {e}"
                    ))
                })?;
                answer(result)
            }
            .instrument(span)
        })
        // The server checks the arguments; a second check here could only disagree.
        .unchecked()
}

/// A `tools/call` result as the mounted tool's outcome: its blocks, or an error
/// with their text when the server says the call failed.
fn answer(result: CallToolResult) -> Result<Value, ToolError> {
    if result.is_error == Some(true) {
        let text: Vec<String> = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|t| t.text.clone()))
            .collect();
        let message = if text.is_empty() {
            "the tool failed".to_owned()
        } else {
            text.join("\n")
        };
        let data = serde_json::to_value(&result).unwrap_or(Value::Null);
        return Err(ToolError::failed(message).with_data(data));
    }
    let mut value = json!({"content": result.content});
    if let Some(structured) = result.structured_content {
        value["structuredContent"] = structured;
    }
    Ok(value)
}

/// Lists the server's prompts and resources (those it declares it has) and
/// places them, when the mount takes them.
async fn list_kinds(state: &MountState, link: &Arc<Link>, peer: &Peer<RoleClient>) {
    if !state.mount.kinds {
        return;
    }
    let Some(info) = peer.peer_info() else {
        return;
    };
    if info.capabilities.prompts.is_some() {
        match peer.list_all_prompts().await {
            Ok(prompts) => state.place_prompts(
                prompts
                    .into_iter()
                    .map(|prompt| {
                        let link = Arc::clone(link);
                        let source = prompt.name.clone();
                        let make: PromptOffer =
                            Box::new(move |name| mounted_prompt(name, link, &prompt));
                        (source, make)
                    })
                    .collect(),
            ),
            Err(err) => tracing::warn!(error = %err, "prompts/list failed"),
        }
    }
    if info.capabilities.resources.is_some() {
        let mut made = Vec::new();
        match peer.list_all_resources().await {
            Ok(resources) => {
                for resource in resources {
                    let mut builder =
                        ResourceFunc::builder(resource.uri.clone(), resource.name.clone());
                    if let Some(description) = &resource.description {
                        builder = builder.description(description.clone());
                    }
                    if let Some(title) = &resource.title {
                        builder = builder.title(title.clone());
                    }
                    if let Some(mime) = &resource.mime_type {
                        builder = builder.mime_type(mime.clone());
                    }
                    made.push(reads(builder, Arc::clone(link), resource.uri.clone()));
                }
            }
            Err(err) => tracing::warn!(error = %err, "resources/list failed"),
        }
        match peer.list_all_resource_templates().await {
            Ok(templates) => {
                for template in templates {
                    let mut builder =
                        ResourceFunc::builder(template.uri_template.clone(), template.name.clone());
                    if let Some(description) = &template.description {
                        builder = builder.description(description.clone());
                    }
                    if let Some(title) = &template.title {
                        builder = builder.title(title.clone());
                    }
                    if let Some(mime) = &template.mime_type {
                        builder = builder.mime_type(mime.clone());
                    }
                    made.push(reads(
                        builder,
                        Arc::clone(link),
                        template.uri_template.clone(),
                    ));
                }
            }
            Err(err) => tracing::warn!(error = %err, "resources/templates/list failed"),
        }
        state.place_resources(made);
    }
}

/// A mounted prompt: the source's metadata and arguments, got from the source.
fn mounted_prompt(name: String, link: Arc<Link>, prompt: &rmcp::model::Prompt) -> PromptBuilder {
    let mut builder = PromptFunc::builder(name);
    if let Some(description) = &prompt.description {
        builder = builder.description(description.clone());
    }
    if let Some(title) = &prompt.title {
        builder = builder.title(title.clone());
    }
    for argument in prompt.arguments.iter().flatten() {
        builder = builder.argument(
            argument.name.clone(),
            argument.description.clone().unwrap_or_default(),
            argument.required == Some(true),
        );
    }
    let source = prompt.name.clone();
    builder.handler(move |_ctx, args| {
        let link = Arc::clone(&link);
        let source = source.clone();
        async move {
            let peer = link.peer()?;
            let arguments: serde_json::Map<String, Value> = match args {
                Value::Object(arguments) => arguments
                    .into_iter()
                    .filter(|(_, value)| !value.is_null())
                    .map(|(key, value)| {
                        let text = match value {
                            Value::String(text) => text,
                            other => other.to_string(),
                        };
                        (key, Value::String(text))
                    })
                    .collect(),
                _ => serde_json::Map::new(),
            };
            let params = GetPromptRequestParams::new(source.clone()).with_arguments(arguments);
            match peer.get_prompt_once(params).await {
                Ok(GetPromptResponse::Complete(result)) => Ok(result),
                Ok(_) => Err(ToolError::failed(format!(
                    "the MCP server's prompt `{source}` asks its client for input, which a mount cannot give"
                ))),
                Err(err) => Err(unavailable(format!(
                    "the MCP server's prompts/get of `{source}` failed: {err}"
                ))),
            }
        }
    })
}

/// A mounted resource's builder with the handler that reads it at the source:
/// at its URI, or at the URI its template makes of the variables.
fn reads(builder: ResourceBuilder, link: Arc<Link>, address: String) -> ResourceBuilder {
    builder.handler(move |_ctx, vars| {
        let link = Arc::clone(&link);
        let uri = expand(&address, &vars);
        async move {
            let peer = link.peer()?;
            let read = peer
                .read_resource(ReadResourceRequestParams::new(uri.clone()))
                .await
                .map_err(|err| {
                    unavailable(format!(
                        "the MCP server's resources/read of `{uri}` failed: {err}"
                    ))
                })?;
            Ok(read.contents)
        }
    })
}

/// The URI a template (`{var}`, `{+var}`) makes of `vars`: a `{var}`'s value with
/// all but unreserved characters percent-encoded, a `{+var}`'s with reserved ones
/// kept too.
fn expand(template: &str, vars: &Value) -> String {
    let mut uri = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        uri.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let expression = &rest[open + 1..open + close];
        let (reserved, name) = match expression.strip_prefix('+') {
            Some(name) => (true, name),
            None => (false, expression),
        };
        let value = match vars.get(name) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        for byte in value.bytes() {
            let keep = byte.is_ascii_alphanumeric()
                || matches!(byte, b'-' | b'.' | b'_' | b'~')
                || (reserved && b":/?#[]@!$&'()*+,;=".contains(&byte));
            if keep {
                uri.push(char::from(byte));
            } else {
                let _ = write!(uri, "%{byte:02X}");
            }
        }
        rest = &rest[open + close + 1..];
    }
    uri.push_str(rest);
    uri
}
