//! An MCP server's tools, through rmcp's client: the server started as a child
//! process speaking MCP on stdio, or reached at its streamable HTTP endpoint
//! (sessionless where it offers the 2026-07-28 revision, else in a session);
//! kept in step with its tool list, and started or connected again when it ends.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::ServiceExt;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    MetaObject, RequestMetaObject, Tool,
};
use rmcp::service::{NotificationContext, Peer, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::source::Source;
use super::{MountState, Offer, Opened, unavailable};
use crate::error::ToolError;
use crate::propagate;
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
    Http { url: String, http: reqwest::Client },
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
        Target::Http { url, http } => {
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            let transport = StreamableHttpClientTransport::with_client(
                super::mcp_http::Http(http.clone()),
                config,
            );
            listener.serve(transport).await
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
        Source::McpHttp(url) => Target::Http {
            url: url.clone(),
            http: super::http_client(&state.mount)?,
        },
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
