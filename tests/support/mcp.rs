//! Helpers for the MCP test binaries: a server on a loopback port, one HTTP answer
//! read as JSON-RPC messages (SSE or plain JSON), an SSE stream read as it comes,
//! sessionless (2026-07-28) requests, and a raw JSON-RPC client over `serve_io`.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;
use toolfunc::ToolError;
use toolfunc::mcp::{Server, axum};

/// Hang guard for every read: a healthy exchange takes milliseconds.
pub const LIMIT: Duration = Duration::from_secs(10);

/// A server on a loopback port (served as the README says, with TCP_NODELAY); its
/// `/mcp` URL.
pub async fn serve_http(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(toolfunc::mcp::serve(listener, app));
    format!("http://{addr}{}", toolfunc::mcp::PATH)
}

/// One HTTP answer.
pub struct Answer {
    pub status: u16,
    pub session: Option<String>,
    pub content_type: String,
    pub body: String,
}

impl Answer {
    /// Sends `request` and reads the whole answer, within `limit`.
    pub async fn read(request: reqwest::RequestBuilder, limit: Duration) -> Self {
        let exchange = async {
            let response = request.send().await.expect("the server answers");
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let session = header("mcp-session-id");
            let content_type = header("content-type").unwrap_or_default();
            let status = response.status().as_u16();
            let body = response.text().await.expect("a body");
            Self {
                status,
                session,
                content_type,
                body,
            }
        };
        tokio::time::timeout(limit, exchange)
            .await
            .expect("answered in time")
    }

    /// The JSON-RPC messages of the body: an SSE stream's `data:` lines, or JSON.
    pub fn messages(&self) -> Vec<Value> {
        if self.content_type.starts_with("text/event-stream") {
            self.body
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .filter(|data| !data.is_empty())
                .map(|data| serde_json::from_str(data).expect("JSON data"))
                .collect()
        } else {
            vec![serde_json::from_str(&self.body).expect("a JSON body")]
        }
    }

    /// The response with this id among the messages.
    pub fn response(&self, id: i64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response {id} in {:?}", self.body))
    }
}

/// The protocol revision of sessionless clients.
pub const MODERN: &str = "2026-07-28";

/// The `_meta` a sessionless (2026-07-28) request carries, with `extra` keys added.
pub fn modern_meta(extra: Value) -> Value {
    let mut meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test-client", "version": "0.0.1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Some(meta), Value::Object(extra)) = (meta.as_object_mut(), extra) {
        meta.extend(extra);
    }
    meta
}

/// A sessionless (2026-07-28) request to `url`: `params._meta` gets the per-request
/// keys (and keeps the ones `params` has), with the `MCP-Protocol-Version`,
/// `Mcp-Method` and (for `tools/call` and `tasks/*`) `Mcp-Name` headers.
pub fn modern_request(
    client: &reqwest::Client,
    url: &str,
    id: i64,
    method: &str,
    params: Value,
) -> reqwest::RequestBuilder {
    let mut params = match params {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let extra = params.remove("_meta").unwrap_or(Value::Null);
    params.insert("_meta".into(), modern_meta(extra));
    // The routing header names the tool of a call and the task of a tasks request.
    let routed = match method {
        "tools/call" => "name",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => "",
    };
    let name = params
        .get(routed)
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", method)
        .body(body.to_string());
    if let Some(name) = name {
        request = request.header("Mcp-Name", name);
    }
    request
}

/// An HTTP answer read message by message as it comes (an SSE stream that may stay
/// open, such as `subscriptions/listen` or a session's GET stream).
pub struct Events {
    response: reqwest::Response,
    buffer: String,
    ready: std::collections::VecDeque<Value>,
    ended: bool,
}

impl Events {
    /// Sends `request`; the answer must be an SSE stream with status 200.
    pub async fn open(request: reqwest::RequestBuilder) -> Self {
        let response = tokio::time::timeout(Duration::from_secs(10), request.send())
            .await
            .expect("answered in time")
            .expect("the server answers");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert_eq!(status, 200, "not a stream: {content_type}");
        assert!(
            content_type.starts_with("text/event-stream"),
            "not a stream: {content_type}"
        );
        Self {
            response,
            buffer: String::new(),
            ready: std::collections::VecDeque::new(),
            ended: false,
        }
    }

    /// The next JSON-RPC message, or `None` when nothing comes within `wait` or the
    /// stream ended.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(message) = self.ready.pop_front() {
                return Some(message);
            }
            if self.ended {
                return None;
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?;
            match chunk.expect("a readable stream") {
                Some(bytes) => {
                    self.buffer.push_str(&String::from_utf8_lossy(&bytes));
                    self.split();
                }
                None => self.ended = true,
            }
        }
    }

    /// Whether the server ended the stream.
    pub fn ended(&self) -> bool {
        self.ended && self.ready.is_empty()
    }

    /// Every message until the stream is quiet for `quiet` (or ends).
    pub async fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        let mut messages = Vec::new();
        while let Some(message) = self.next(quiet).await {
            messages.push(message);
        }
        messages
    }

    /// Moves the complete events of the buffer into `ready`.
    fn split(&mut self) {
        let text = self.buffer.replace("\r\n", "\n");
        let mut rest = text.as_str();
        while let Some(end) = rest.find("\n\n") {
            let event = &rest[..end];
            rest = &rest[end + 2..];
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            let data = data.join("\n");
            if !data.is_empty() {
                self.ready
                    .push_back(serde_json::from_str(&data).expect("JSON data"));
            }
        }
        rest.clone_into(&mut self.buffer);
    }
}

/// A raw JSON-RPC client of `serve_io` over a pair of in-memory pipes.
pub struct Pipe {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    next_id: i64,
    /// Messages read while waiting for something else (notifications mostly).
    pub seen: Vec<Value>,
    server: JoinHandle<Result<(), ToolError>>,
}

impl Pipe {
    /// Starts `server`; no handshake yet.
    pub fn spawn(server: Server) -> Self {
        let (writer, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, reader) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(server.serve_io(server_in, server_out));
        Self {
            writer,
            lines: BufReader::new(reader).lines(),
            next_id: 0,
            seen: Vec::new(),
            server,
        }
    }

    /// Starts `server` and completes a 2025-11-25 handshake; the `initialize` result.
    pub async fn connect(server: Server) -> (Self, Value) {
        let mut pipe = Self::spawn(server);
        let init = pipe
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test-client", "version": "0.0.1"}
                }),
            )
            .await;
        assert!(init.get("error").is_none(), "initialize failed: {init}");
        pipe.notify("notifications/initialized", json!({})).await;
        (pipe, init["result"].clone())
    }

    pub async fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        self.writer
            .write_all(line.as_bytes())
            .await
            .expect("server reads");
        self.writer.flush().await.expect("server reads");
    }

    /// The next message, or `None` when nothing comes within `wait`.
    pub async fn try_read(&mut self, wait: Duration) -> Option<Value> {
        // `Lines::next_line` is cancel safe: a timed-out read loses nothing.
        let line = tokio::time::timeout(wait, self.lines.next_line())
            .await
            .ok()?;
        let line = line
            .expect("readable")
            .expect("the server closed its output");
        Some(serde_json::from_str(&line).expect("the server writes JSON lines"))
    }

    /// Sends a request without waiting; returns its id.
    pub async fn start(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The response (result or error) with this id; other messages are kept in `seen`.
    pub async fn response(&mut self, id: i64) -> Value {
        loop {
            let message = self
                .try_read(LIMIT)
                .await
                .expect("no message from the server in time");
            let answer = message.get("result").is_some() || message.get("error").is_some();
            if answer && message["id"] == id {
                return message;
            }
            self.seen.push(message);
        }
    }

    /// Sends a request and returns the whole response message.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params).await;
        self.response(id).await
    }

    /// A sessionless (2026-07-28) request: `params._meta` gets the per-request keys.
    pub async fn request_modern(&mut self, method: &str, params: Value) -> Value {
        let mut params = match params {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let extra = params.remove("_meta").unwrap_or(Value::Null);
        params.insert("_meta".into(), modern_meta(extra));
        self.request(method, Value::Object(params)).await
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    pub fn take_seen(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.seen)
    }

    /// What was seen, then what comes until the server is quiet for `quiet`.
    pub async fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        let mut messages = self.take_seen();
        while let Some(message) = self.try_read(quiet).await {
            messages.push(message);
        }
        messages
    }

    /// Closes the client's side; the server must end cleanly.
    pub async fn close(self) {
        drop(self.writer);
        drop(self.lines);
        let ended = tokio::time::timeout(LIMIT, self.server)
            .await
            .expect("serve_io ends when its input ends");
        ended.expect("no panic").expect("serve_io ends with Ok");
    }
}

/// The messages of `messages` with this method.
pub fn with_method<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["method"] == method).collect()
}
