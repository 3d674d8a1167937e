//! Hostile and malformed input to the MCP server: every request gets an answer, no
//! input stops the stdio server, lines and sessions are bounded, and browsers from
//! foreign origins are refused.
//!
//! stdio is driven through `serve_io` over in-memory pipes; streamable HTTP through
//! `router()` on a loopback port. Connections that never finish, never close or
//! come in too many are raw sockets to `serve_http` and `mcp::serve`.

#[path = "support/http.rs"]
mod http_support;
#[path = "support/mcp.rs"]
mod mcp_support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use toolfunc::mcp::Server;
use toolfunc::mcp::rmcp::transport::StreamableHttpServerConfig;
use toolfunc::{CollectLimit, Registry, ToolError, ToolFunc};

use http_support::Conn;
use mcp_support::{Answer, serve_http};

/// Hang guard for every read: a healthy exchange takes milliseconds.
const LIMIT: Duration = Duration::from_secs(10);

const VERSION: &str = "2025-11-25";

fn registry() -> Registry {
    let registry = Registry::new();
    let shout = ToolFunc::builder("shout")
        .handler_sync(|_, args| {
            let text = args["text"].as_str().unwrap_or_default().to_uppercase();
            Ok(Value::String(text))
        })
        .build()
        .expect("a valid tool");
    registry.register(shout).expect("a fresh registry");
    registry
}

fn init_params() -> Value {
    json!({
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "hardening-client", "version": "0.0.1"}
    })
}

// ---------------------------------------------------------------------------------
// A raw line client over `serve_io`.

struct Client {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    server: JoinHandle<Result<(), ToolError>>,
}

impl Client {
    fn spawn(server: Server) -> Self {
        let (writer, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, reader) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(server.serve_io(server_in, server_out));
        Self {
            writer,
            lines: BufReader::new(reader).lines(),
            server,
        }
    }

    async fn connect(server: Server) -> Self {
        let mut client = Self::spawn(server);
        client.initialize().await;
        client
    }

    async fn initialize(&mut self) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": init_params()}),
        )
        .await;
        let init = self.answer_to(&json!("init")).await;
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    async fn write(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("server reads");
        self.writer.flush().await.expect("server reads");
    }

    async fn send_line(&mut self, line: &str) {
        self.write(format!("{line}\n").as_bytes()).await;
    }

    async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    async fn try_read(&mut self, wait: Duration) -> Option<Value> {
        let line = timeout(wait, self.lines.next_line()).await.ok()?;
        let line = line
            .expect("readable")
            .expect("the server closed its output");
        Some(serde_json::from_str(&line).unwrap_or_else(|err| {
            panic!("the server writes one JSON message a line ({err}): {line:?}")
        }))
    }

    async fn read(&mut self) -> Value {
        self.try_read(LIMIT)
            .await
            .expect("no message from the server in time")
    }

    /// The next answer (result or error) with this id, skipping notifications.
    async fn answer_to(&mut self, id: &Value) -> Value {
        loop {
            let message = self.read().await;
            let answer = message.get("result").is_some() || message.get("error").is_some();
            if answer && message.get("id") == Some(id) {
                return message;
            }
            assert!(
                message.get("method").is_some(),
                "an answer to something else while waiting for {id}: {message}"
            );
        }
    }

    /// A ping answers: the server is still serving.
    async fn ping(&mut self, id: i64) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await;
        let pong = self.answer_to(&json!(id)).await;
        assert_eq!(pong["result"], json!({}), "{pong}");
    }

    async fn close(self) {
        drop(self.writer);
        drop(self.lines);
        let ended = timeout(LIMIT, self.server)
            .await
            .expect("serve_io ends when its input ends");
        ended.expect("no panic").expect("serve_io ends with Ok");
    }
}

/// An error answer: `{"jsonrpc": "2.0", "id": id, "error": {"code": code, ..}}`.
fn assert_error(answer: &Value, id: &Value, code: i64) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer.get("id"), Some(id), "id of {answer}");
    assert_eq!(answer["error"]["code"], code, "{answer}");
    assert!(answer["error"]["message"].is_string(), "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
}

// ---------------------------------------------------------------------------------
// stdio: duplicate ids and collected streams

fn slow_and_endless() -> Registry {
    let registry = registry();
    let slow = ToolFunc::builder("slow")
        .handler(|_, _| async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            Ok(json!("slow done"))
        })
        .build()
        .expect("a valid tool");
    registry.register(slow).expect("a fresh name");
    let endless = ToolFunc::builder("endless")
        .stream_handler(|_, _| async {
            Ok(futures::stream::repeat(json!(1)).map(Ok::<_, ToolError>))
        })
        .build()
        .expect("a valid tool");
    registry.register(endless).expect("a fresh name");
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_in_flight_id_is_refused_and_the_first_still_answers() {
    let mut client = Client::connect(Server::new(slow_and_endless())).await;
    let call = |id: i64, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": {}}})
    };
    client.send(&call(7, "slow")).await;
    client.send(&call(7, "shout")).await;
    let first = client.answer_to(&json!(7)).await;
    assert_error(&first, &json!(7), -32600);
    let second = client.answer_to(&json!(7)).await;
    assert_eq!(
        second["result"]["content"][0]["text"], "slow done",
        "{second}"
    );
    // Once answered, the id may be used again.
    client.send(&call(7, "shout")).await;
    let again = client.answer_to(&json!(7)).await;
    assert!(again.get("result").is_some(), "{again}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_is_capped_when_collected() {
    let server = Server::new(slow_and_endless()).collect_limit(CollectLimit::new(1_000, 1 << 20));
    let mut client = Client::connect(server).await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "endless", "arguments": {}}}))
        .await;
    let answer = client.answer_to(&json!(9)).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["io.github.toolfunc/error"]["code"], "RESULT_TOO_LARGE",
        "{answer}"
    );
    client.ping(10).await;
    client.close().await;
}

// ---------------------------------------------------------------------------------
// stdio: malformed requests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_are_answered_with_their_id() {
    let mut client = Client::connect(Server::new(registry())).await;
    let cases = [
        // A bad version: invalid request, answered to the id.
        (
            r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#,
            json!(1),
            -32600,
        ),
        (r#"{"id": 2, "method": "ping"}"#, json!(2), -32600),
        (
            r#"{"jsonrpc": 2.0, "id": "two", "method": "ping"}"#,
            json!("two"),
            -32600,
        ),
        // A method that is no string.
        (
            r#"{"jsonrpc": "2.0", "id": 3, "method": 5}"#,
            json!(3),
            -32600,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 4, "method": null}"#,
            json!(4),
            -32600,
        ),
        // No method and no result: no valid message at all.
        (r#"{"jsonrpc": "2.0", "id": 5}"#, json!(5), -32600),
        // Params that are no structured value.
        (
            r#"{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "add"}"#,
            json!(6),
            -32600,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": 12}"#,
            json!(7),
            -32600,
        ),
        // Positional params: MCP methods take named ones.
        (
            r#"{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": [1]}"#,
            json!(8),
            -32602,
        ),
        // An id JSON-RPC allows but the SDK cannot keep (fractional, too large).
        (
            r#"{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}"#,
            json!(1.5),
            -32600,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 99999999999999999999, "method": "ping"}"#,
            json!(99_999_999_999_999_999_999.0_f64),
            -32600,
        ),
    ];
    for (n, (line, id, code)) in cases.into_iter().enumerate() {
        client.send_line(line).await;
        let answer = client.answer_to(&id).await;
        assert_error(&answer, &id, code);
        client
            .ping(1000 + i64::try_from(n).expect("few cases"))
            .await;
    }
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_a_usable_id_are_answered_with_a_null_id() {
    let mut client = Client::connect(Server::new(registry())).await;
    for line in [
        r#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}"#,
        r#"{"jsonrpc": "2.0", "id": true, "method": "ping"}"#,
        r#"{"jsonrpc": "2.0", "id": [1], "method": "ping"}"#,
        r#"{"jsonrpc": "2.0", "id": null, "method": "ping"}"#,
        r#"{"jsonrpc": "1.0", "id": false, "method": "ping"}"#,
        r#"{"hello": "world"}"#,
        r#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#,
        "42",
        r#""a string""#,
        "null",
    ] {
        client.send_line(line).await;
        let answer = client.read().await;
        assert_error(&answer, &Value::Null, -32600);
        client.ping(1).await;
    }
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparsable_lines_are_parse_errors_with_a_null_id() {
    let mut client = Client::connect(Server::new(registry())).await;
    for line in [
        "this is not json {",
        r#"{"jsonrpc": "2.0", "id": 1, "method": "ping""#,
        "{",
        "[1, 2",
    ] {
        client.send_line(line).await;
        let answer = client.read().await;
        assert_error(&answer, &Value::Null, -32700);
    }
    // Not UTF-8.
    client
        .write(b"{\"jsonrpc\": \"2.0\", \"id\": \"\xff\xfe\"}\n")
        .await;
    assert_error(&client.read().await, &Value::Null, -32700);
    // Blank lines are no messages.
    client.send_line("").await;
    client.send_line("   \r").await;
    client.ping(2).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_before_initialize_are_answered_too() {
    let mut client = Client::spawn(Server::new(registry()));
    client
        .send_line(r#"{"jsonrpc": "1.0", "id": 9, "method": "initialize"}"#)
        .await;
    assert_error(&client.read().await, &json!(9), -32600);
    client.send_line("garbage").await;
    assert_error(&client.read().await, &Value::Null, -32700);
    client.initialize().await;
    client.ping(3).await;
    client.close().await;
}

// ---------------------------------------------------------------------------------
// stdio: stray notifications and responses

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_first_does_not_stop_the_server() {
    let mut client = Client::spawn(Server::new(registry()));
    client
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    client
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1}}),
        )
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "method": "$/unknown"}))
        .await;
    // A stray response (nothing was asked) and a stray error.
    client
        .send(&json!({"jsonrpc": "2.0", "id": 44, "result": {}}))
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 45, "error": {"code": 1, "message": "x"}}))
        .await;
    // Notifications get no answer.
    assert_eq!(client.try_read(Duration::from_millis(200)).await, None);
    // A ping before initialize, then a notification: still before the lifecycle.
    client.ping(1).await;
    client
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1}}),
        )
        .await;
    client.initialize().await;
    client.ping(2).await;
    // And stray messages after initialize are no harm either.
    client
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": 3}))
        .await;
    client
        .send(&json!({"jsonrpc": "2.0", "id": 46, "result": {}}))
        .await;
    client.ping(3).await;
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "shout", "arguments": {"text": "still here"}}});
    client.send(&call).await;
    let answer = client.answer_to(&json!(4)).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "STILL HERE",
        "{answer}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_ending_before_initialize_is_a_clean_end() {
    let client = Client::spawn(Server::new(registry()));
    client.close().await;
    let mut client = Client::spawn(Server::new(registry()));
    client
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    client.close().await;
}

// ---------------------------------------------------------------------------------
// stdio: batches

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_refused_per_request() {
    let mut client = Client::connect(Server::new(registry())).await;
    // An empty batch: one invalid request.
    client.send_line("[]").await;
    assert_error(&client.read().await, &Value::Null, -32600);
    // MCP (since 2025-06-18) has no batches: each request in one is refused by id,
    // in one array; notifications in it are dropped.
    client
        .send_line(
            r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": "b", "method": "tools/list"},
                5]"#
            .replace('\n', " ")
            .as_str(),
        )
        .await;
    let answer = client.read().await;
    let answers = answer.as_array().expect("an array answers a batch");
    assert_eq!(answers.len(), 3, "{answer}");
    assert_error(&answers[0], &json!(1), -32600);
    assert_error(&answers[1], &json!("b"), -32600);
    assert_error(&answers[2], &Value::Null, -32600);
    // A batch of notifications only: nothing to answer.
    client
        .send_line(r#"[{"jsonrpc": "2.0", "method": "notifications/initialized"}]"#)
        .await;
    client.ping(7).await;
    client.close().await;
}

// ---------------------------------------------------------------------------------
// stdio: line length

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overlong_line_is_refused_without_waiting_for_its_end() {
    let server = Server::new(registry()).max_line_length(1024);
    let mut client = Client::connect(server).await;
    // Just within the limit (the newline not counted) is fine.
    let text = "a".repeat(1024 - 120);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "shout", "arguments": {"text": text}}})
    .to_string();
    assert!(call.len() <= 1024, "{}", call.len());
    client.send_line(&call).await;
    let answer = client.answer_to(&json!(1)).await;
    assert!(answer.get("result").is_some(), "{answer}");

    // Far beyond it: answered once the limit is passed, before the line ends.
    let head = r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"x": ""#;
    client.write(head.as_bytes()).await;
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..16 {
        client.write(&chunk).await;
    }
    let answer = client.read().await;
    assert_error(&answer, &Value::Null, -32600);
    // The rest of the line is dropped, however long it goes on.
    for _ in 0..16 {
        client.write(&chunk).await;
    }
    client.write(b"\"}}\n").await;
    client.ping(3).await;
    // Two overlong lines in one write.
    let long = "y".repeat(2048);
    client.send_line(&format!("{long}\n{long}")).await;
    assert_error(&client.read().await, &Value::Null, -32600);
    assert_error(&client.read().await, &Value::Null, -32600);
    client.ping(4).await;
    client.close().await;
}

// ---------------------------------------------------------------------------------
// stdio: whole lines under concurrent writes

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_never_interleave() {
    let mut client = Client::connect(Server::new(registry())).await;
    let mut burst = String::new();
    let text = "z".repeat(5000);
    for id in 0..200 {
        let line = if id % 2 == 0 {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "shout", "arguments": {"text": text}}})
        } else {
            json!({"jsonrpc": "1.0", "id": id, "method": "ping"})
        };
        burst.push_str(&line.to_string());
        burst.push('\n');
    }
    // Written while the answers are read: a client that writes 1 MB before
    // reading a line fills both pipes.
    let (dummy, _) = tokio::io::duplex(1);
    let mut writer = std::mem::replace(&mut client.writer, dummy);
    let writing = tokio::spawn(async move {
        writer
            .write_all(burst.as_bytes())
            .await
            .expect("server reads");
        writer.flush().await.expect("server reads");
        writer
    });
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 200 {
        // `read` panics on a line that is not one JSON message.
        let answer = client.read().await;
        let id = answer["id"].as_i64().expect("an id");
        if id % 2 == 0 {
            assert!(answer.get("result").is_some(), "{answer}");
        } else {
            assert_error(&answer, &json!(id), -32600);
        }
        assert!(seen.insert(id), "answered twice: {id}");
    }
    client.writer = writing.await.expect("written");
    client.close().await;
}

// ---------------------------------------------------------------------------------
// Streamable HTTP

struct Http {
    client: reqwest::Client,
    url: String,
}

impl Http {
    fn new(url: String) -> Self {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client");
        Self { client, url }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        Answer::read(request, LIMIT).await
    }

    async fn post(
        &self,
        session: Option<&str>,
        message: &Value,
        headers: &[(&str, &str)],
    ) -> Answer {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(session) = session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", VERSION);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request).await
    }

    /// `initialize` alone (no `notifications/initialized`).
    async fn open(&self, headers: &[(&str, &str)]) -> Answer {
        let init =
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()});
        self.post(None, &init, headers).await
    }

    /// A whole handshake; the session id.
    async fn initialize(&self) -> String {
        let answer = self.open(&[]).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let session = answer.session.expect("an mcp-session-id header");
        self.initialized(&session).await;
        session
    }

    async fn initialized(&self, session: &str) {
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self.post(Some(session), &initialized, &[]).await;
        assert_eq!(answer.status, 202, "{}", answer.body);
    }

    async fn list(&self, session: &str, id: i64) -> Answer {
        let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
        self.post(Some(session), &list, &[]).await
    }

    /// Whether the session still answers.
    async fn alive(&self, session: &str) -> bool {
        let answer = self.list(session, 77).await;
        match answer.status {
            200 => {
                assert!(
                    answer.response(77).get("result").is_some(),
                    "{}",
                    answer.body
                );
                true
            }
            404 => false,
            status => panic!("{status}: {}", answer.body),
        }
    }

    async fn delete(&self, session: &str) -> u16 {
        let request = self
            .client
            .delete(&self.url)
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", VERSION);
        self.send(request).await.status
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_origins_are_refused() {
    let http = Http::new(serve_http(Server::new(registry()).router()).await);
    for origin in [
        "http://evil.example",
        "https://evil.example:443",
        "http://localhost.evil.example",
        "null",
        "not an origin",
    ] {
        let answer = http.open(&[("Origin", origin)]).await;
        assert_eq!(answer.status, 403, "{origin}: {}", answer.body);
        assert!(answer.session.is_none(), "{origin}");
    }
    for origin in [
        "http://localhost",
        "http://localhost:5173",
        "https://localhost:8443",
        "http://127.0.0.1:3000",
        "http://[::1]:8080",
    ] {
        let answer = http.open(&[("Origin", origin)]).await;
        assert_eq!(answer.status, 200, "{origin}: {}", answer.body);
    }
    // Non-browser clients send no Origin.
    assert_eq!(http.open(&[]).await.status, 200);
    // Every method is checked, not only POST.
    let session = http.initialize().await;
    let request = http
        .client
        .get(&http.url)
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", VERSION)
        .header("Origin", "http://evil.example");
    assert_eq!(http.send(request).await.status, 403);
    let request = http
        .client
        .delete(&http.url)
        .header("Mcp-Session-Id", &session)
        .header("Origin", "http://evil.example");
    assert_eq!(http.send(request).await.status, 403);
    assert!(http.alive(&session).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_origins_are_configurable() {
    let server = Server::new(registry()).allowed_origins(["https://app.example"]);
    let http = Http::new(serve_http(server.router()).await);
    assert_eq!(
        http.open(&[("Origin", "https://app.example")]).await.status,
        200
    );
    assert_eq!(
        http.open(&[("Origin", "http://localhost:3000")])
            .await
            .status,
        403
    );
    assert_eq!(
        http.open(&[("Origin", "http://evil.example")]).await.status,
        403
    );

    let server = Server::new(registry()).allow_any_origin();
    let http = Http::new(serve_http(server.router()).await);
    assert_eq!(
        http.open(&[("Origin", "http://evil.example")]).await.status,
        200
    );

    // The origin check also guards a service mounted by hand.
    let service = Server::new(registry()).http_service(StreamableHttpServerConfig::default());
    let app = axum::Router::new().nest_service(toolfunc::mcp::PATH, service);
    let http = Http::new(serve_http(app).await);
    assert_eq!(
        http.open(&[("Origin", "http://evil.example")]).await.status,
        403
    );
    assert_eq!(
        http.open(&[("Origin", "http://localhost:1")]).await.status,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped() {
    let server = Server::new(registry()).max_sessions(3);
    let http = Http::new(serve_http(server.router()).await);
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(http.initialize().await);
    }
    // A fourth: refused with a JSON-RPC error answering the initialize.
    let answer = http.open(&[]).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(answer.session.is_none());
    assert!(
        answer.content_type.starts_with("application/json"),
        "{}",
        answer.content_type
    );
    let error: Value = serde_json::from_str(&answer.body).expect("a JSON-RPC error");
    assert_eq!(error["jsonrpc"], "2.0", "{error}");
    assert_eq!(error["id"], 1, "{error}");
    assert!(error["error"]["code"].is_i64(), "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("sessions")),
        "{error}"
    );
    // The existing sessions go on.
    for session in &sessions {
        assert!(http.alive(session).await);
    }
    // A closed session frees its place.
    // Answered as the clients expect it (the Python SDK takes 200 or 204).
    let status = http.delete(&sessions[0]).await;
    assert_eq!(status, 204);
    assert!(!http.alive(&sessions[0]).await);
    let fresh = http.initialize().await;
    assert!(http.alive(&fresh).await);
    assert_eq!(http.open(&[]).await.status, 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_initializes_stay_under_the_cap() {
    // One client fills the whole cap: its share is the cap.
    let server = Server::new(registry())
        .max_sessions(10)
        .max_sessions_per_caller(10);
    let http = Http::new(serve_http(server.router()).await);
    let answers = futures::future::join_all((0..40).map(|_| http.open(&[]))).await;
    let opened = answers.iter().filter(|a| a.status == 200).count();
    let refused = answers.iter().filter(|a| a.status == 503).count();
    assert_eq!((opened, refused), (10, 30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_that_never_finish_initializing_expire() {
    let server = Server::new(registry())
        .max_sessions(2)
        .uninitialized_session_lifetime(Duration::from_millis(600));
    let http = Http::new(serve_http(server.router()).await);
    let done = http.initialize().await;
    let answer = http.open(&[]).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let half_open = answer.session.expect("a session");
    assert_eq!(http.open(&[]).await.status, 503);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // The half-open one is gone and its place is free; the initialized one stays.
    assert!(!http.alive(&half_open).await);
    assert!(http.alive(&done).await);
    let answer = http.open(&[]).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    // One that finishes in time is kept.
    let late = answer.session.expect("a session");
    http.initialized(&late).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(http.alive(&late).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_expire() {
    let server = Server::new(registry())
        .max_sessions(1)
        .session_idle_lifetime(Duration::from_secs(1));
    let http = Http::new(serve_http(server.router()).await);
    let session = http.initialize().await;
    // In use, it stays.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(http.alive(&session).await);
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!http.alive(&session).await);
    // And its place is free again.
    assert!(http.alive(&http.initialize().await).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_json_rpc_errors_carry_an_id() {
    let http = Http::new(serve_http(Server::new(registry()).router()).await);
    // A JSON-RPC response posted to a sessionless (2026-07-28) server: refused with
    // a JSON-RPC error, which must have an id member.
    let stray = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
    let answer = http
        .post(None, &stray, &[("MCP-Protocol-Version", "2026-07-28")])
        .await;
    assert!(answer.status >= 400, "{}: {}", answer.status, answer.body);
    let error: Value = serde_json::from_str(&answer.body).expect("a JSON-RPC error");
    assert!(error.get("error").is_some(), "{error}");
    assert!(error.get("id").is_some(), "no id member: {error}");
}

// ---------------------------------------------------------------------------------
// Connections

/// Serves `server` with [`Server::serve_http`] on a loopback port; its address.
async fn serve_connections(server: Server) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(server.serve_http(listener));
    addr
}

/// The bytes of a sessionless `tools/call` of `shout` (the connection kept alive).
fn shout_request(addr: std::net::SocketAddr) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "shout", "arguments": {"text": "hi"},
        "_meta": mcp_support::modern_meta(Value::Null)}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {}\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: shout\r\nContent-Length: {}\r\n\r\n{body}",
        mcp_support::MODERN,
        body.len()
    )
    .into_bytes()
}

/// Reads until the answer to [`shout_request`] has come.
async fn read_shout(conn: &mut Conn) {
    while !String::from_utf8_lossy(&conn.buf).contains("\"HI\"") {
        conn.more().await;
    }
}

/// Whether the server closes `conn` within [`LIMIT`] (whatever it says first).
async fn closed(conn: &mut Conn) -> bool {
    timeout(LIMIT, async { while conn.fill().await {} })
        .await
        .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_connections_are_capped() {
    let server = Server::new(registry())
        .max_connections(2)
        .header_timeout(Duration::from_secs(30))
        .idle_timeout(Duration::from_secs(30));
    let addr = serve_connections(server).await;
    // Two connections that say nothing hold both places.
    let first = Conn::open(addr).await;
    let _second = Conn::open(addr).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A third waits in the backlog, unanswered...
    let mut third = Conn::open(addr).await;
    third.send(&shout_request(addr)).await;
    let early = timeout(Duration::from_millis(500), third.stream.readable()).await;
    assert!(
        early.is_err(),
        "a connection past the cap was served at once"
    );
    // ...until one of the two closes.
    drop(first);
    timeout(LIMIT, read_shout(&mut third))
        .await
        .expect("served once a place was free");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_headers_and_idle_http_connections_are_closed() {
    let server = Server::new(registry())
        .header_timeout(Duration::from_millis(300))
        .idle_timeout(Duration::from_millis(400));
    let addr = serve_connections(server).await;
    // Slowloris: a request head that never ends.
    let mut slow = Conn::open(addr).await;
    slow.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nx-a: 1\r\n")
        .await;
    // A connection that never sends anything.
    let mut idle = Conn::open(addr).await;
    // A body sent half-way.
    let mut half = Conn::open(addr).await;
    half.send(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"a\":",
    )
    .await;
    for (what, conn) in [
        ("slow", &mut slow),
        ("idle", &mut idle),
        ("half", &mut half),
    ] {
        assert!(closed(conn).await, "the {what} connection was never closed");
    }
    // Kept alive after an answer, it closes too.
    let mut kept = Conn::open(addr).await;
    kept.send(&shout_request(addr)).await;
    read_shout(&mut kept).await;
    assert!(
        closed(&mut kept).await,
        "a kept-alive connection stayed open"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_answered_to_a_client_still_sending_it() {
    let service = Server::new(registry())
        .http_service(StreamableHttpServerConfig::default().with_max_request_body_bytes(1024));
    let app = axum::Router::new().nest_service(toolfunc::mcp::PATH, service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(toolfunc::mcp::serve(listener, app));
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {}\r\n",
        mcp_support::MODERN
    );
    for round in 0..50 {
        let reply = http_support::answer_while_sending(addr, &head, 2 * 1024 * 1024)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(reply.status, 413, "round {round}: {}", reply.text());
        assert!(reply.text().contains("1024 bytes"), "{}", reply.text());
    }
}

/// What an `initialize` makes a session keep is bounded: parameters over 16 KiB
/// (a capabilities map of 4 MB of small objects), nested past 16 levels or with
/// more than 512 members are refused with 413 and a JSON-RPC `-32602` before a
/// session opens, whatever `Mcp-Method` says; and one caller's sessions keep at
/// most their budget of bytes together (429 past it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_an_initialize_makes_a_session_keep_is_bounded() {
    let server = Server::new(registry()).max_initialize_bytes_per_caller(3 * 1024);
    let http = Http::new(serve_http(server.clone().router()).await);
    let init = |capabilities: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": "bounded", "version": "0.0.1"},
        }})
    };
    // Under the 4 MiB body limit: 250,000 small objects.
    let huge: serde_json::Map<String, Value> =
        (0..250_000).map(|i| (format!("k{i}"), json!({}))).collect();
    let mut deep = json!({});
    for _ in 0..20 {
        deep = json!({"a": deep});
    }
    let wide: serde_json::Map<String, Value> =
        (0..600).map(|i| (format!("{i}"), json!(1))).collect();
    for (what, capabilities) in [
        ("4 MB", json!({"experimental": huge})),
        ("deep", json!({"experimental": {"x": deep}})),
        ("wide", json!({"experimental": {"x": wide}})),
    ] {
        for headers in [&[][..], &[("Mcp-Method", "initialize")][..]] {
            let answer = http.post(None, &init(capabilities.clone()), headers).await;
            assert_eq!(answer.status, 413, "{what}: {}", answer.body);
            let error = &answer.response(1)["error"];
            assert_eq!(error["code"], -32602, "{what}: {}", answer.body);
            assert_eq!(
                error["data"]["code"], "TOO_LARGE",
                "{what}: {}",
                answer.body
            );
            assert!(answer.session.is_none(), "{what}: a session opened");
        }
    }
    assert_eq!(server.open_sessions(), 0);
    // A caller's sessions keep at most 3 KiB of parameters together.
    let some: serde_json::Map<String, Value> = (0..40)
        .map(|i| (format!("key_{i:02}"), json!("v")))
        .collect();
    let capabilities = json!({"experimental": {"x": some}});
    let mut opened = 0;
    let last = loop {
        let answer = http.post(None, &init(capabilities.clone()), &[]).await;
        if answer.status != 200 {
            break answer;
        }
        opened += 1;
        assert!(opened < 10, "no budget");
    };
    assert!(opened >= 1, "{}", last.body);
    assert_eq!(last.status, 429, "{}", last.body);
    assert_eq!(
        last.response(1)["error"]["data"]["code"],
        "BUSY",
        "{}",
        last.body
    );
    // A plain one still opens for another caller.
    assert_eq!(http.open(&[]).await.status, 200);
}
