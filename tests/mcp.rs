//! The MCP server driven as a client would: raw JSON-RPC over `serve_io` (a pair of
//! in-memory pipes) and over streamable HTTP (`router()` on a loopback port).
//!
//! Covers the handshake, `tools/list` (service methods, hidden tools, output schemas,
//! hints), `tools/call` results and errors, cancellation, progress, `list_changed`,
//! malformed input, and the HTTP transport's sessions and Host check. The tests at
//! the end pin two races: a change right after the first list, and progress that
//! must only go forward.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/mcp.rs"]
mod mcp_support;

use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use toolfunc::mcp::Server;

use mcp_support::{Answer, serve_http};
use toolfunc::{CallStatus, Ctx, Registry, RegistryEvent, ToolError, ToolFunc, tool, tool_service};

/// Hang guard for every read: a healthy exchange takes milliseconds.
const LIMIT: Duration = Duration::from_secs(10);

/// The protocol revision the tests speak.
const VERSION: &str = "2025-11-25";

// ---------------------------------------------------------------------------------
// Tools (besides the demo catalog: `add`, `greeter`, `users`, `countdown`, `fail`,
// `sleep`).

/// A point in the plane.
#[derive(Debug, Serialize, JsonSchema)]
struct Point {
    x: i64,
    y: i64,
}

/// Makes a point.
#[tool(title = "Make a point", annotations(read_only, idempotent))]
fn point(x: i64, y: i64) -> Point {
    Point { x, y }
}

/// Shouts the text.
#[tool]
fn shout(text: String) -> String {
    text.to_uppercase()
}

/// Only for callers in process.
#[tool(api = false)]
fn secret() -> String {
    "hidden".to_owned()
}

/// Erases everything.
#[tool(
    title = "Erase everything",
    annotations(destructive, open_world = false)
)]
fn erase() -> u32 {
    0
}

/// Always panics.
#[tool]
fn explode() -> u32 {
    panic!("kaboom")
}

/// Needs no arguments.
#[tool]
fn ping() -> String {
    "pong".to_owned()
}

/// Sleeps for `secs` seconds (until cancelled, in practice).
#[tool]
async fn nap(secs: u64) -> u64 {
    tokio::time::sleep(Duration::from_secs(secs)).await;
    secs
}

/// Works through `n` steps, reporting each.
#[tool]
fn steps(ctx: &Ctx, n: u32) -> u32 {
    for i in 1..=n {
        ctx.progress(f64::from(i), Some(f64::from(n)), Some(&format!("step {i}")));
    }
    n
}

/// A service remote callers may not see.
struct Vault;

/// Secrets.
#[tool_service(name = "vault", api = false)]
impl Vault {
    /// Opens the vault.
    fn open(&self) -> String {
        "opened".to_owned()
    }
}

/// A streaming tool that reports its own progress (warming up) before its items.
fn warmup() -> ToolFunc {
    ToolFunc::builder("warmup")
        .stream_handler(|ctx, _args| async move {
            ctx.progress(10.0, Some(10.0), Some("warmed up"));
            Ok(futures::stream::iter([Ok(json!("a")), Ok(json!("b"))]))
        })
        .build()
        .expect("a valid tool")
}

/// The demo catalog plus this file's tools, in a registry of its own.
fn registry() -> Registry {
    let registry = demo::catalog();
    for name in [
        "point", "shout", "secret", "erase", "explode", "ping", "nap", "steps",
    ] {
        let tool = Registry::global().get(name).expect("declared above");
        registry.register(tool).expect("a fresh registry");
    }
    registry.register_service(Vault).expect("a fresh registry");
    registry.register(warmup()).expect("a fresh registry");
    registry
}

fn server(registry: &Registry) -> Server {
    Server::new(registry)
        .name("mcp-tests", "9.9.9")
        .instructions("Use the tools.")
}

/// A tool made with the builder, answering `1`.
fn extra(name: &str) -> ToolFunc {
    ToolFunc::builder(name)
        .handler_sync(|_, _| Ok(json!(1)))
        .build()
        .expect("a valid tool")
}

// ---------------------------------------------------------------------------------
// A raw JSON-RPC client over `serve_io`.

struct Client {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    next_id: i64,
    /// Messages read while waiting for something else (notifications mostly).
    seen: Vec<Value>,
    server: JoinHandle<Result<(), ToolError>>,
}

impl Client {
    /// Starts `server` on a pair of pipes; no handshake yet.
    fn spawn(server: Server) -> Self {
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

    /// Starts `server` and completes the handshake; returns the `initialize` result.
    async fn connect(server: Server) -> (Self, Value) {
        let mut client = Self::spawn(server);
        let init = client.request("initialize", init_params()).await;
        assert!(init.get("error").is_none(), "initialize failed: {init}");
        client.notify("notifications/initialized", json!({})).await;
        (client, init["result"].clone())
    }

    async fn send_line(&mut self, line: &str) {
        let line = format!("{line}\n");
        self.writer
            .write_all(line.as_bytes())
            .await
            .expect("server reads");
        self.writer.flush().await.expect("server reads");
    }

    async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next message, or `None` when nothing comes within `wait`.
    async fn try_read(&mut self, wait: Duration) -> Option<Value> {
        // `Lines::next_line` is cancel safe: a timed-out read loses nothing.
        let line = timeout(wait, self.lines.next_line()).await.ok()?;
        let line = line
            .expect("readable")
            .expect("the server closed its output");
        Some(serde_json::from_str(&line).expect("the server writes JSON lines"))
    }

    async fn read(&mut self) -> Value {
        self.try_read(LIMIT)
            .await
            .expect("no message from the server in time")
    }

    /// Sends a request without waiting; returns its id.
    async fn start(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The response (result or error) with this id; other messages are kept in `seen`.
    async fn response(&mut self, id: &Value) -> Value {
        loop {
            let message = self.read().await;
            let answer = message.get("result").is_some() || message.get("error").is_some();
            if answer && message["id"] == *id {
                return message;
            }
            self.seen.push(message);
        }
    }

    /// Sends a request and returns the whole response message.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params).await;
        self.response(&json!(id)).await
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// `tools/call`'s result, which must not be a JSON-RPC error.
    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let response = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        assert!(
            response.get("error").is_none(),
            "{name}: JSON-RPC error {response}"
        );
        response["result"].clone()
    }

    /// The next notification with this method (kept or new).
    async fn notification(&mut self, method: &str) -> Value {
        if let Some(at) = self.seen.iter().position(|m| m["method"] == method) {
            return self.seen.remove(at);
        }
        loop {
            let message = self.read().await;
            if message["method"] == method {
                return message;
            }
            self.seen.push(message);
        }
    }

    fn take_seen(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.seen)
    }

    /// Closes the client's side; the server must end cleanly.
    async fn close(self) {
        drop(self.writer);
        drop(self.lines);
        let ended = timeout(LIMIT, self.server)
            .await
            .expect("serve_io ends when its input ends");
        ended.expect("no panic").expect("serve_io ends with Ok");
    }
}

fn init_params() -> Value {
    json!({
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "raw-test-client", "version": "0.0.1"}
    })
}

/// The text of a result's only content block.
fn text(result: &Value) -> &str {
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 1, "one content block: {result}");
    assert_eq!(content[0]["type"], "text", "{result}");
    content[0]["text"].as_str().expect("text")
}

/// The entry of `tools/list` named `name`.
fn listed<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"))
}

/// The next registry event matching `wanted` (others are skipped).
async fn event(
    events: &mut toolfunc::Subscription,
    wanted: impl Fn(&RegistryEvent) -> bool,
) -> RegistryEvent {
    loop {
        let next = timeout(LIMIT, events.recv())
            .await
            .expect("the event came in time");
        match next {
            Ok(event) if wanted(&event) => return event,
            Ok(_) | Err(toolfunc::SubscriptionError::Lagged(_)) => {}
            Err(err) => panic!("subscription ended: {err:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------
// stdio-style transport (`serve_io`)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_announces_tools_name_and_instructions() {
    let (client, init) = Client::connect(server(&registry())).await;
    assert_eq!(init["protocolVersion"], VERSION);
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(init["serverInfo"]["name"], "mcp-tests");
    assert_eq!(init["serverInfo"]["version"], "9.9.9");
    assert_eq!(init["instructions"], "Use the tools.");
    client.close().await;

    // Unnamed: the program's name (not the library's) and no instructions.
    let (client, init) = Client::connect(Server::new(Registry::new())).await;
    let program = std::env::current_exe().unwrap();
    let program = program.file_stem().unwrap().to_str().unwrap();
    assert_eq!(init["serverInfo"]["name"], program);
    assert_eq!(init["serverInfo"]["version"], "0.0.0");
    assert!(init.get("instructions").is_none(), "{init}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_is_the_mcp_export() {
    let (mut client, _) = Client::connect(server(&registry())).await;
    let response = client.request("tools/list", json!({})).await;
    let tools = response["result"]["tools"]
        .as_array()
        .expect("tools")
        .clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for name in [
        "add",
        "countdown",
        "fail",
        "sleep",
        "greeter_hello",
        "greeter_mul",
        "users_list",
        "users_get",
        "users_post",
        "users_put",
        "users_delete",
        "users_promote",
        "point",
        "shout",
        "erase",
        "explode",
        "ping",
        "nap",
        "steps",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    // Services only as their methods; `api = false` hidden; aliases not listed.
    for name in ["greeter", "users", "secret", "plus", "vault", "vault_open"] {
        assert!(!names.contains(&name), "{name} listed: {names:?}");
    }
    for tool in &tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }

    // Output schemas for object results only.
    assert_eq!(listed(&tools, "point")["outputSchema"]["type"], "object");
    assert_eq!(
        listed(&tools, "users_get")["outputSchema"]["type"],
        "object"
    );
    for name in [
        "add",
        "shout",
        "ping",
        "erase",
        "greeter_hello",
        "users_list",
    ] {
        assert!(
            listed(&tools, name).get("outputSchema").is_none(),
            "{name}: {}",
            listed(&tools, name)
        );
    }
    // A streaming tool of objects answers an array: no output schema.
    assert!(listed(&tools, "countdown").get("outputSchema").is_none());

    // Titles and hints.
    let point = listed(&tools, "point");
    assert_eq!(point["title"], "Make a point");
    assert_eq!(point["description"], "Makes a point.");
    assert_eq!(
        point["annotations"],
        json!({"title": "Make a point", "readOnlyHint": true, "idempotentHint": true})
    );
    assert_eq!(
        listed(&tools, "erase")["annotations"],
        json!({"title": "Erase everything", "destructiveHint": true, "openWorldHint": false})
    );
    let hello = listed(&tools, "greeter_hello");
    assert_eq!(hello["description"], "Say hello.");
    assert_eq!(hello["inputSchema"]["required"], json!(["name"]));
    assert!(hello["inputSchema"]["properties"].get("act").is_none());
    assert!(listed(&tools, "shout").get("annotations").is_none());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_call_answers_text_and_structured_content() {
    let (mut client, _) = Client::connect(server(&registry())).await;

    // A number: its JSON as text, nothing structured.
    let sum = client.call("add", json!({"a": 1, "b": 2})).await;
    assert_eq!(text(&sum), "3.0");
    assert!(sum.get("structuredContent").is_none(), "{sum}");
    assert_ne!(sum["isError"], true);

    // An object: structured, and its JSON as text too.
    let point = client.call("point", json!({"x": 3, "y": -4})).await;
    assert_eq!(point["structuredContent"], json!({"x": 3, "y": -4}));
    let echoed: Value = serde_json::from_str(text(&point)).expect("JSON text");
    assert_eq!(echoed, json!({"x": 3, "y": -4}));
    assert_ne!(point["isError"], true);

    // A string: as it is, not quoted.
    let loud = client.call("shout", json!({"text": "hi there"})).await;
    assert_eq!(text(&loud), "HI THERE");
    assert!(loud.get("structuredContent").is_none());

    // Service methods run with their act.
    let hello = client.call("greeter_hello", json!({"name": "Ann"})).await;
    assert_eq!(text(&hello), "hello Ann");
    let user = client.call("users_get", json!({"id": "2"})).await;
    assert_eq!(user["structuredContent"], json!({"id": "2", "name": "Bob"}));

    // A streaming tool: its items collected into an array.
    let ticks = client.call("countdown", json!({"count": 3})).await;
    let items: Value = serde_json::from_str(text(&ticks)).expect("JSON text");
    assert_eq!(items, json!([{"tick": 3}, {"tick": 2}, {"tick": 1}]));
    assert!(ticks.get("structuredContent").is_none());

    // No `arguments` at all, for tools that need none.
    for (name, expected) in [("ping", json!("pong")), ("users_list", Value::Null)] {
        let response = client.request("tools/call", json!({"name": name})).await;
        assert!(response.get("error").is_none(), "{name}: {response}");
        let result = &response["result"];
        assert_ne!(result["isError"], true, "{name}: {result}");
        if expected.is_string() {
            assert_eq!(text(result), expected);
        } else {
            let users: Value = serde_json::from_str(text(result)).expect("JSON text");
            assert_eq!(users.as_array().map(Vec::len), Some(2), "{users}");
        }
    }
    client.close().await;
}

/// `tools/call`'s error result: the text and `_meta["io.github.toolfunc/error"]`.
fn tool_error(result: &Value) -> (&str, &Value) {
    assert_eq!(result["isError"], true, "{result}");
    assert!(result.get("structuredContent").is_none(), "{result}");
    (text(result), &result["_meta"]["io.github.toolfunc/error"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_errors_are_results_with_is_error() {
    let (mut client, _) = Client::connect(server(&registry())).await;

    // Wrong argument types: the message names the JSON path.
    let result = client.call("add", json!({"a": "one", "b": 2})).await;
    let (message, error) = tool_error(&result);
    assert_eq!(*error, json!({"code": "ARGUMENTS", "data": {"path": "/a"}}));
    assert!(
        message.starts_with("invalid arguments at /a: "),
        "{message}"
    );
    let result = client.call("users_post", json!({"val": {"name": 5}})).await;
    let (message, error) = tool_error(&result);
    assert_eq!(error["code"], "ARGUMENTS", "{result}");
    assert!(
        message.contains("val.name") || message.contains("val/name"),
        "{message}"
    );
    // A missing required argument.
    let result = client.call("shout", json!({})).await;
    assert_eq!(tool_error(&result).1["code"], "ARGUMENTS", "{result}");

    // A handler's error: its message, code and data.
    let result = client.call("fail", json!({})).await;
    let (message, error) = tool_error(&result);
    assert!(message.contains("boom"), "{message}");
    assert_eq!(error["code"], "FAILED");
    let result = client.call("users_get", json!({"id": "99"})).await;
    let (message, error) = tool_error(&result);
    assert!(message.contains("Could not find 99."), "{message}");
    assert_eq!(
        *error,
        json!({"code": "USER_NOT_FOUND", "data": {"what": "99"}})
    );

    // A panic is contained and reported; the server serves on.
    let result = client.call("explode", json!({})).await;
    let (message, error) = tool_error(&result);
    assert_eq!(error["code"], "PANICKED", "{result}");
    assert!(message.contains("kaboom"), "{message}");
    assert_eq!(text(&client.call("ping", json!({})).await), "pong");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_hidden_tools_are_invalid_params() {
    let registry = registry();
    let (mut client, _) = Client::connect(server(&registry)).await;
    for name in [
        "no_such_tool",
        "secret",
        "greeter",
        "users_nope",
        "greeter_",
    ] {
        let response = client
            .request("tools/call", json!({"name": name, "arguments": {}}))
            .await;
        assert!(response.get("result").is_none(), "{name}: {response}");
        assert_eq!(response["error"]["code"], -32602, "{name}: {response}");
        assert_eq!(response["error"]["data"]["code"], "NOT_FOUND", "{response}");
        assert_eq!(response["error"]["data"]["name"], name, "{response}");
    }
    // A tool MCP cannot name is left out of the list, which still answers.
    registry
        .register(extra("not an mcp name!"))
        .expect("registers");
    let response = client.request("tools/list", json!({})).await;
    let tools = response["result"]["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "ping"), "{response}");
    assert!(tools.iter().all(|t| t["name"] != "not an mcp name!"));

    // The hidden tool still runs in process.
    let hidden = registry.run("secret", Value::Null).await;
    assert_eq!(hidden.expect("runs in process"), "hidden");
    let opened = registry.run("vault", json!({"act": "$open"})).await;
    assert_eq!(opened.expect("runs in process"), "opened");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_notification_cancels_the_call() {
    let registry = registry();
    let mut events = registry.subscribe();
    let (mut client, _) = Client::connect(server(&registry)).await;

    let id = client
        .start(
            "tools/call",
            json!({"name": "nap", "arguments": {"secs": 3600}}),
        )
        .await;
    event(
        &mut events,
        |e| matches!(e, RegistryEvent::CallStarted { tool, .. } if tool == "nap"),
    )
    .await;
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": id, "reason": "changed my mind"}),
        )
        .await;
    let finished = event(
        &mut events,
        |e| matches!(e, RegistryEvent::CallFinished { tool, .. } if tool == "nap"),
    )
    .await;
    assert!(
        matches!(
            finished,
            RegistryEvent::CallFinished {
                status: CallStatus::Cancelled,
                ..
            }
        ),
        "{finished:?}"
    );

    // The server answers on; the cancelled request gets no response (as the spec
    // asks: the SDK drops it).
    assert_eq!(text(&client.call("ping", json!({})).await), "pong");
    let stray = client.take_seen();
    assert!(
        stray.iter().all(|m| m["id"] != json!(id)),
        "a response to the cancelled request: {stray:?}"
    );
    client.close().await;
}

/// The progress notifications among `messages`, all for `token`.
fn progress_of(messages: &[Value], token: &Value) -> Vec<Value> {
    let progress: Vec<Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"].clone())
        .collect();
    for params in &progress {
        assert_eq!(params["progressToken"], *token, "{params}");
    }
    progress
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_echoes_the_token_before_the_response() {
    let (mut client, _) = Client::connect(server(&registry())).await;
    for token in [json!("tok-1"), json!(7)] {
        let response = client
            .request(
                "tools/call",
                json!({"name": "steps", "arguments": {"n": 4}, "_meta": {"progressToken": token}}),
            )
            .await;
        assert_eq!(text(&response["result"]), "4");
        // `response` returns at the response: whatever came before it is in `seen`.
        let progress = progress_of(&client.take_seen(), &token);
        let expected: Vec<Value> = (1..=4)
            .map(|i| {
                json!({
                    "progressToken": token,
                    "progress": f64::from(i),
                    "total": 4.0,
                    "message": format!("step {i}"),
                })
            })
            .collect();
        assert_eq!(progress, expected, "token {token}");
    }

    // A streaming tool reports each item.
    let token = json!("ticks");
    let response = client
        .request(
            "tools/call",
            json!({"name": "countdown", "arguments": {"count": 2}, "_meta": {"progressToken": "ticks"}}),
        )
        .await;
    assert_ne!(response["result"]["isError"], true, "{response}");
    let progress = progress_of(&client.take_seen(), &token);
    let numbers: Vec<&Value> = progress.iter().map(|p| &p["progress"]).collect();
    assert_eq!(numbers, [&json!(1.0), &json!(2.0)], "{progress:?}");
    assert_eq!(progress[0]["message"], r#"{"tick":2}"#);

    // Without a token: no progress notifications at all.
    let response = client
        .request(
            "tools/call",
            json!({"name": "steps", "arguments": {"n": 3}}),
        )
        .await;
    assert_eq!(text(&response["result"]), "3");
    let after = client.call("ping", json!({})).await;
    assert_eq!(text(&after), "pong");
    let stray = client.take_seen();
    assert!(stray.is_empty(), "unasked-for messages: {stray:?}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_tool_progress_arrives_while_it_runs() {
    // The demo `sleep` reports about every 100 ms: several reports before the
    // response, each with a larger `progress`, the total the requested time.
    let (mut client, _) = Client::connect(server(&registry())).await;
    let response = client
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 350}, "_meta": {"progressToken": "slow"}}),
        )
        .await;
    assert_eq!(
        response["result"]["structuredContent"],
        json!({"slept": 350})
    );
    let progress = progress_of(&client.take_seen(), &json!("slow"));
    assert!(!progress.is_empty());
    for p in &progress {
        assert_eq!(p["total"], json!(350.0), "{p}");
    }
    assert_increasing(&progress);
    client.close().await;
}

/// MCP: "the progress value MUST increase with each notification".
fn assert_increasing(progress: &[Value]) {
    let done: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().expect("a number"))
        .collect();
    assert!(
        done.windows(2).all(|w| w[0] < w[1]),
        "not increasing: {progress:?}"
    );
}

/// Reads until the server is quiet for a moment; returns what came.
async fn drain(client: &mut Client) -> Vec<Value> {
    let mut messages = client.take_seen();
    while let Some(message) = client.try_read(Duration::from_millis(300)).await {
        messages.push(message);
    }
    messages
}

fn count(messages: &[Value], method: &str) -> usize {
    messages.iter().filter(|m| m["method"] == method).count()
}

const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// Waits until the session watches the registry, registering probe tools until one
/// is announced: the watch begins when rmcp's task for `notifications/initialized`
/// runs, concurrently with later requests (see
/// `a_change_right_after_the_first_list_is_announced`).
async fn watching(client: &mut Client, registry: &Registry) {
    for i in 0..20 {
        registry
            .register(extra(&format!("probe_{i}")))
            .expect("registers");
        while let Some(message) = client.try_read(Duration::from_millis(500)).await {
            if message["method"] == LIST_CHANGED {
                drain(client).await;
                return;
            }
            client.seen.push(message);
        }
    }
    panic!("the session never announced a change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_changes_send_list_changed() {
    let registry = registry();
    let (mut client, _) = Client::connect(server(&registry)).await;
    watching(&mut client, &registry).await;

    registry.register(extra("fresh")).expect("registers");
    client.notification(LIST_CHANGED).await;
    let tools = client.request("tools/list", json!({})).await;
    let tools = tools["result"]["tools"].as_array().expect("tools").clone();
    assert_eq!(listed(&tools, "fresh")["name"], "fresh");
    assert_eq!(text(&client.call("fresh", json!({})).await), "1");
    assert_eq!(count(&drain(&mut client).await, LIST_CHANGED), 0);

    // A burst is folded into (about) one notification.
    for i in 0..20 {
        registry
            .register(extra(&format!("burst_{i}")))
            .expect("registers");
    }
    client.notification(LIST_CHANGED).await;
    let more = count(&drain(&mut client).await, LIST_CHANGED);
    assert!(more < 3, "{} notifications for 20 registrations", more + 1);
    let tools = client.request("tools/list", json!({})).await;
    assert_eq!(
        tools["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("burst_")))
            .count(),
        20
    );

    // Removing a tool is a change too.
    registry.unregister("fresh");
    client.notification(LIST_CHANGED).await;
    let response = client
        .request("tools/call", json!({"name": "fresh", "arguments": {}}))
        .await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_input_is_refused_and_the_server_goes_on() {
    let (mut client, _) = Client::connect(server(&registry())).await;

    // Not JSON: a parse error with a null id (an error echoed back is a response,
    // which is never answered, so there is no error storm).
    client.send_line("this is not json {").await;
    let answer = client.read().await;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})
    );
    let pong = client.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert!(client.take_seen().is_empty());

    // An unknown method: method not found.
    let response = client.request("tools/frobnicate", json!({})).await;
    assert_eq!(response["error"]["code"], -32601, "{response}");

    // `tools/call` whose params do not fit the method (`arguments` not an object, no
    // `name`): rmcp reads it as a custom request; the server answers invalid params.
    for params in [
        json!({"name": "add", "arguments": [1, 2]}),
        json!({"name": "add", "arguments": "a=1"}),
        json!({"arguments": {}}),
    ] {
        let response = client.request("tools/call", params.clone()).await;
        let code = response["error"]["code"].as_i64();
        assert!(code == Some(-32602), "{params}: {response}");
    }

    // Well-formed JSON that is no valid JSON-RPC request (wrong params or id type,
    // wrong version, no method, not an object): -32600 "Invalid request" (-32602 for
    // positional params), answered to the id when it is a valid one, else to `null`.
    for (line, id, code) in [
        (
            r#"{"jsonrpc": "2.0", "id": 70, "method": "tools/call", "params": "add"}"#,
            json!(70),
            -32600,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 71, "method": "tools/call", "params": [1]}"#,
            json!(71),
            -32602,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 72, "method": 5}"#,
            json!(72),
            -32600,
        ),
        (
            r#"{"jsonrpc": "1.0", "id": 73, "method": "ping"}"#,
            json!(73),
            -32600,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}"#,
            Value::Null,
            -32600,
        ),
        (r#"{"jsonrpc": "2.0", "id": 77}"#, json!(77), -32600),
        (r#"{"hello": "world"}"#, Value::Null, -32600),
        ("[]", Value::Null, -32600),
        ("42", Value::Null, -32600),
    ] {
        client.send_line(line).await;
        let answer = client.read().await;
        assert_eq!(answer.get("id"), Some(&id), "{line}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{line}: {answer}");
    }
    // An empty line is skipped.
    client.send_line("").await;

    let ok = client.call("shout", json!({"text": "ok"})).await;
    assert_eq!(text(&ok), "OK");
    client.close().await;
}

// ---------------------------------------------------------------------------------
// Streamable HTTP (`router()`)

struct Http {
    client: reqwest::Client,
    url: String,
    session: Option<String>,
}

impl Http {
    fn new(url: String) -> Self {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client");
        Self {
            client,
            url,
            session: None,
        }
    }

    /// POSTs one message, with the session and protocol headers once initialized.
    async fn post_with(&self, message: &Value, headers: &[(&str, &str)]) -> Answer {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(serde_json::to_string(message).expect("serialisable"));
        if let Some(session) = &self.session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", VERSION);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Answer::read(request, LIMIT).await
    }

    async fn post(&self, message: &Value) -> Answer {
        self.post_with(message, &[]).await
    }

    /// Initializes a session; returns the `initialize` result.
    async fn initialize(&mut self) -> Value {
        let init =
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()});
        let answer = self.post(&init).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        self.session = Some(answer.session.clone().expect("an mcp-session-id header"));
        let result = answer.response(1)["result"].clone();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self.post(&initialized).await;
        assert_eq!(answer.status, 202, "{}", answer.body);
        result
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_session() {
    let url = serve_http(server(&registry()).router()).await;
    let mut http = Http::new(url);
    let init = http.initialize().await;
    assert_eq!(init["serverInfo"]["name"], "mcp-tests");
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(init["instructions"], "Use the tools.");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let answer = http.post(&list).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    // The router answers a single message as JSON (`json_response`), in a session
    // too: the server answers a plain request of a session itself.
    assert!(
        answer.content_type.starts_with("application/json"),
        "{}",
        answer.content_type
    );
    let tools = answer.response(2)["result"]["tools"].clone();
    let tools = tools.as_array().expect("tools");
    assert_eq!(listed(tools, "point")["outputSchema"]["type"], "object");
    assert!(tools.iter().all(|t| t["name"] != "secret"));

    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "point", "arguments": {"x": 1, "y": 2}}});
    let answer = http.post(&call).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let result = &answer.response(3)["result"];
    assert_eq!(result["structuredContent"], json!({"x": 1, "y": 2}));

    // Errors travel the same way.
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "users_get", "arguments": {"id": "99"}}});
    let result = http.post(&call).await.response(4)["result"].clone();
    assert_eq!(tool_error(&result).1["code"], "USER_NOT_FOUND");
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "secret", "arguments": {}}});
    let answer = http.post(&call).await;
    assert_eq!(
        answer.response(5)["error"]["code"],
        -32602,
        "{}",
        answer.body
    );

    // Progress comes on the request's stream, before its response.
    let call = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "steps", "arguments": {"n": 2}, "_meta": {"progressToken": "h"}}});
    let messages = http.post(&call).await.messages();
    let final_message = messages.last().expect("messages");
    assert_eq!(final_message["id"], 6, "{messages:?}");
    assert_eq!(progress_of(&messages, &json!("h")).len(), 2, "{messages:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_refuses_foreign_hosts_and_unknown_sessions() {
    let url = serve_http(toolfunc::mcp::router(registry())).await;
    let mut http = Http::new(url);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()});

    // DNS rebinding guard: only loopback hosts by default.
    let answer = http.post_with(&init, &[("Host", "evil.example")]).await;
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(answer.session.is_none());
    let answer = http.post_with(&init, &[("Host", "localhost:1")]).await;
    assert_eq!(answer.status, 200, "{}", answer.body);

    // An unknown session: 404, as the spec asks.
    http.session = Some("no-such-session".to_owned());
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let answer = http.post(&list).await;
    assert_eq!(answer.status, 404, "{}", answer.body);

    // No session at all for anything but `initialize`: 400.
    http.session = None;
    let answer = http.post(&list).await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(
        answer.body.contains("Session ID is required"),
        "{}",
        answer.body
    );

    // A real session works after all that.
    http.initialize().await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "shout", "arguments": {"text": "hey"}}});
    let result = http.post(&call).await.response(3)["result"].clone();
    assert_eq!(text(&result), "HEY");
}

// ---------------------------------------------------------------------------------
// Races and ordering

/// Whether a tool registered right after the session's first `tools/list` answer is
/// announced with `list_changed`.
async fn change_after_first_list_is_announced(round: usize) -> bool {
    let registry = registry();
    let mut client = Client::spawn(server(&registry));
    let init = client.request("initialize", init_params()).await;
    assert!(init.get("error").is_none(), "{init}");
    // A client that lists the tools as soon as it is initialized (one write).
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let list = json!({"jsonrpc": "2.0", "id": 500, "method": "tools/list"});
    client.send_line(&format!("{initialized}\n{list}")).await;
    client.response(&json!(500)).await;
    registry
        .register(extra(&format!("late_{round}")))
        .expect("registers");
    let mut announced = false;
    while let Some(message) = client.try_read(Duration::from_secs(2)).await {
        if message["method"] == LIST_CHANGED {
            announced = true;
            break;
        }
    }
    client.close().await;
    announced
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_right_after_the_first_list_is_announced() {
    // Many sessions at once make the race likely. rmcp handles each notification in a
    // task of its own, so `on_initialized` may run after the first `tools/list` is
    // answered: the server subscribes while answering `initialize`.
    for batch in 0..8 {
        let rounds = (0..16).map(|i| change_after_first_list_is_announced(batch * 16 + i));
        let announced = futures::future::join_all(rounds).await;
        let missed = announced.iter().filter(|ok| !**ok).count();
        assert_eq!(missed, 0, "{missed} of 16 sessions missed the change");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_progress_never_decreases() {
    // MCP: "the progress value MUST increase with each notification".
    let (mut client, _) = Client::connect(server(&registry())).await;
    let token = json!("warm");
    let response = client
        .request(
            "tools/call",
            json!({"name": "warmup", "arguments": {}, "_meta": {"progressToken": "warm"}}),
        )
        .await;
    let items: Value = serde_json::from_str(text(&response["result"])).expect("JSON text");
    assert_eq!(items, json!(["a", "b"]));
    let progress = progress_of(&client.take_seen(), &token);
    assert_increasing(&progress);
    client.close().await;
}

/// Names the client of the call, as the caller and as its `ClientInfo`.
#[tool]
fn client_of_call(ctx: &Ctx) -> Value {
    let info = ctx.get::<toolfunc::mcp::ClientInfo>();
    json!({
        "caller": ctx.caller(),
        "name": info.map(|info| info.name.clone()),
        "version": info.map(|info| info.version.clone()),
    })
}

#[tokio::test]
async fn sessionless_clients_taking_turns_are_each_their_own_caller() {
    // The server keeps the runner of the last sessionless client: the next one,
    // whether it names another client, another version of it, or none, must not
    // run as that client.
    let url = serve_http(Server::new(Registry::global().isolate()).router()).await;
    let http = reqwest::Client::new();
    let turns = [
        (
            json!({"name": "alpha", "version": "1"}),
            json!({"caller": "alpha", "name": "alpha", "version": "1"}),
        ),
        (
            json!({"name": "alpha", "version": "1"}),
            json!({"caller": "alpha", "name": "alpha", "version": "1"}),
        ),
        (
            json!({"name": "beta", "version": "1"}),
            json!({"caller": "beta", "name": "beta", "version": "1"}),
        ),
        (
            json!({"name": "beta", "version": "2"}),
            json!({"caller": "beta", "name": "beta", "version": "2"}),
        ),
        (
            Value::Null,
            json!({"caller": null, "name": null, "version": null}),
        ),
        (
            json!({"name": "alpha", "version": "1"}),
            json!({"caller": "alpha", "name": "alpha", "version": "1"}),
        ),
    ];
    for (id, (client, expected)) in (1..).zip(turns) {
        let meta = json!({"io.modelcontextprotocol/clientInfo": client});
        let request = mcp_support::modern_request(
            &http,
            &url,
            id,
            "tools/call",
            json!({"name": "client_of_call", "arguments": {}, "_meta": meta}),
        );
        let answer = Answer::read(request, LIMIT).await.response(id);
        assert_eq!(
            answer["result"]["structuredContent"], expected,
            "turn {id}: {answer}"
        );
    }
}
