//! Logging from a tool: `Ctx::log` and `Ctx::log_data` reach a caller's listener in
//! process (`CallOptions::on_log`), and MCP clients as `notifications/message` at the
//! level they asked for: per session with `logging/setLevel` (2025-11-25; everything
//! until a level is set), per request with `_meta["io.modelcontextprotocol/logLevel"]`
//! (2026-07-28; nothing without it). Over stdio (`serve_io`) and streamable HTTP.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

#[path = "support/mcp.rs"]
mod mcp_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolfunc::mcp::Server;
use toolfunc::{CallOptions, Ctx, LogLevel, LogMessage, Registry, ToolError, ToolFunc, tool};

use mcp_support::{Answer, Events, LIMIT, Pipe, modern_request, serve_http, with_method};

const MESSAGE: &str = "notifications/message";

/// Logs once at every level, from the least severe up, then answers.
#[tool]
fn chatty(ctx: &Ctx) -> String {
    for level in LogLevel::ALL {
        ctx.log(level, format_args!("at {level}"));
    }
    "done".to_owned()
}

/// Logs a structured record from a named logger.
#[tool]
fn audit(ctx: &Ctx, user: String) -> u32 {
    ctx.log_data(
        LogLevel::Notice,
        Some("audit"),
        json!({"user": user, "action": "login"}),
    );
    1
}

/// Runs `chatty` as part of its own call, then logs.
#[tool]
async fn outer(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.run("chatty", json!({})).await?;
    ctx.log(LogLevel::Info, "outer done");
    Ok("ok".to_owned())
}

/// A streaming tool that logs before each item.
fn ticker() -> ToolFunc {
    ToolFunc::builder("ticker")
        .stream_handler(|ctx, _args| async move {
            Ok(futures::stream::iter(1..=3).map(move |i| {
                ctx.log(LogLevel::Debug, format_args!("tick {i}"));
                Ok::<_, ToolError>(json!(i))
            }))
        })
        .build()
        .expect("a valid tool")
}

fn registry() -> Registry {
    let registry = Registry::new();
    for name in ["chatty", "audit", "outer"] {
        let tool = Registry::global().get(name).expect("declared above");
        registry.register(tool).expect("a fresh registry");
    }
    registry.register(ticker()).expect("a fresh registry");
    registry
}

/// The levels of the log notifications among `messages`, in order.
fn levels(messages: &[Value]) -> Vec<String> {
    with_method(messages, MESSAGE)
        .iter()
        .map(|m| m["params"]["level"].as_str().expect("a level").to_owned())
        .collect()
}

/// The level names from `least` up.
fn from(least: LogLevel) -> Vec<String> {
    LogLevel::ALL
        .iter()
        .filter(|level| **level >= least)
        .map(ToString::to_string)
        .collect()
}

// ---------------------------------------------------------------------------------
// In process

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_receives_every_message_with_its_tool_and_level() {
    let registry = registry();
    let seen: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let runner = registry.with(CallOptions::new().on_log(move |m| {
        sink.lock().expect("not poisoned").push(m);
    }));
    assert_eq!(runner.run("chatty", json!({})).await.expect("runs"), "done");
    let messages = std::mem::take(&mut *seen.lock().expect("not poisoned"));
    let levels: Vec<LogLevel> = messages.iter().map(|m| m.level).collect();
    assert_eq!(levels, LogLevel::ALL);
    for message in &messages {
        assert_eq!(message.tool, "chatty");
        assert_eq!(message.logger, None);
        assert_eq!(message.data, json!(format!("at {}", message.level)));
    }

    // Structured data and a logger name.
    runner
        .run("audit", json!({"user": "ann"}))
        .await
        .expect("runs");
    let messages = std::mem::take(&mut *seen.lock().expect("not poisoned"));
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].level, LogLevel::Notice);
    assert_eq!(messages[0].logger.as_deref(), Some("audit"));
    assert_eq!(messages[0].data, json!({"user": "ann", "action": "login"}));

    // A nested call logs through the same listener, under its own tool name.
    runner.run("outer", json!({})).await.expect("runs");
    let messages = std::mem::take(&mut *seen.lock().expect("not poisoned"));
    let tools: Vec<&str> = messages.iter().map(|m| m.tool.as_str()).collect();
    assert_eq!(tools, [vec!["chatty"; 8], vec!["outer"]].concat());

    // Nobody listening: the calls log to `tracing` only, and answer as before.
    assert_eq!(
        registry.run("chatty", json!({})).await.expect("runs"),
        "done"
    );
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[test]
fn levels_are_ordered_and_spelled_as_mcp_spells_them() {
    let names: Vec<Value> = LogLevel::ALL
        .iter()
        .map(|level| serde_json::to_value(level).expect("serialisable"))
        .collect();
    assert_eq!(
        names,
        [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency"
        ]
    );
    assert!(LogLevel::ALL.windows(2).all(|w| w[0] < w[1]));
    for level in LogLevel::ALL {
        let back: LogLevel =
            serde_json::from_value(json!(level.as_str())).expect("reads its own name");
        assert_eq!(back, level);
        assert_eq!(level.to_string(), level.as_str());
    }
    assert!(serde_json::from_value::<LogLevel>(json!("loud")).is_err());
    assert!(serde_json::from_value::<LogLevel>(json!("INFO")).is_err());
}

// ---------------------------------------------------------------------------------
// 2025-11-25 sessions over stdio

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_hears_every_level_until_it_sets_one() {
    let (mut pipe, init) = Pipe::connect(Server::new(registry())).await;
    assert_eq!(init["capabilities"]["logging"], json!({}), "{init}");

    let response = pipe
        .request("tools/call", json!({"name": "chatty", "arguments": {}}))
        .await;
    assert_eq!(
        response["result"]["content"][0]["text"], "done",
        "{response}"
    );
    // Every message came before the answer, in order, named after the tool.
    let messages = pipe.take_seen();
    assert_eq!(levels(&messages), from(LogLevel::Debug));
    for message in with_method(&messages, MESSAGE) {
        let level = message["params"]["level"].as_str().expect("a level");
        assert_eq!(message["params"]["data"], format!("at {level}"));
        assert_eq!(message["params"]["logger"], "chatty");
    }

    for (least, name) in [
        (LogLevel::Warning, "warning"),
        (LogLevel::Emergency, "emergency"),
        (LogLevel::Info, "info"),
    ] {
        let set = pipe
            .request("logging/setLevel", json!({"level": name}))
            .await;
        assert_eq!(set["result"], json!({}), "{set}");
        pipe.request("tools/call", json!({"name": "chatty", "arguments": {}}))
            .await;
        assert_eq!(levels(&pipe.take_seen()), from(least), "after {name}");
    }

    // A level that does not exist: invalid params, and the level stays.
    for params in [json!({"level": "loud"}), json!({}), json!({"level": 3})] {
        let set = pipe.request("logging/setLevel", params.clone()).await;
        assert_eq!(set["error"]["code"], -32602, "{params}: {set}");
        assert!(set.get("id").is_some(), "{set}");
    }
    pipe.request("tools/call", json!({"name": "chatty", "arguments": {}}))
        .await;
    assert_eq!(levels(&pipe.take_seen()), from(LogLevel::Info));

    // Structured data keeps its shape; the logger is the one the tool named.
    pipe.request(
        "tools/call",
        json!({"name": "audit", "arguments": {"user": "bo"}}),
    )
    .await;
    let messages = pipe.take_seen();
    let logged = with_method(&messages, MESSAGE);
    assert_eq!(logged.len(), 1, "{messages:?}");
    assert_eq!(
        logged[0]["params"],
        json!({"level": "notice", "logger": "audit", "data": {"user": "bo", "action": "login"}})
    );

    // A nested call's messages come under the nested tool's name.
    pipe.request("tools/call", json!({"name": "outer", "arguments": {}}))
        .await;
    let messages = pipe.take_seen();
    let loggers: Vec<&Value> = with_method(&messages, MESSAGE)
        .iter()
        .map(|m| &m["params"]["logger"])
        .collect();
    assert_eq!(loggers.len(), 8, "{messages:?}"); // 7 of chatty's at info and up, 1 of outer's
    assert!(loggers[..7].iter().all(|l| **l == "chatty"), "{loggers:?}");
    assert_eq!(*loggers[7], "outer");
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_tool_logs_beside_its_progress() {
    let (mut pipe, _) = Pipe::connect(Server::new(registry())).await;
    let response = pipe
        .request(
            "tools/call",
            json!({"name": "ticker", "arguments": {}, "_meta": {"progressToken": "t"}}),
        )
        .await;
    assert_eq!(response["result"]["content"][0]["text"], "[1,2,3]");
    let messages = pipe.take_seen();
    let data: Vec<&Value> = with_method(&messages, MESSAGE)
        .iter()
        .map(|m| &m["params"]["data"])
        .collect();
    assert_eq!(data, ["tick 1", "tick 2", "tick 3"]);
    assert_eq!(
        with_method(&messages, "notifications/progress").len(),
        3,
        "{messages:?}"
    );
    // Each item's log comes before its progress report.
    let methods: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert_eq!(methods[0], MESSAGE, "{methods:?}");
    pipe.close().await;
}

// ---------------------------------------------------------------------------------
// 2026-07-28 (sessionless) requests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessionless_request_hears_what_its_meta_asks_for() {
    let mut pipe = Pipe::spawn(Server::new(registry()));
    let call = |meta: Value| json!({"name": "chatty", "arguments": {}, "_meta": meta});

    let response = pipe
        .request_modern(
            "tools/call",
            call(json!({"io.modelcontextprotocol/logLevel": "error"})),
        )
        .await;
    assert_eq!(
        response["result"]["content"][0]["text"], "done",
        "{response}"
    );
    assert_eq!(levels(&pipe.take_seen()), from(LogLevel::Error));

    // No level: no messages at all.
    let response = pipe.request_modern("tools/call", call(json!({}))).await;
    assert_eq!(
        response["result"]["content"][0]["text"], "done",
        "{response}"
    );
    assert!(levels(&pipe.take_seen()).is_empty());

    // A level that does not exist: invalid params, the tool does not run.
    for level in [json!("loud"), json!(1), json!(null)] {
        let response = pipe
            .request_modern(
                "tools/call",
                call(json!({"io.modelcontextprotocol/logLevel": level})),
            )
            .await;
        assert_eq!(response["error"]["code"], -32602, "{level}: {response}");
        let message = response["error"]["message"].as_str().expect("a message");
        assert!(message.contains("logLevel"), "{message}");
        assert!(levels(&pipe.take_seen()).is_empty());
    }

    // `logging/setLevel` is not a method of this revision.
    let response = pipe
        .request_modern("logging/setLevel", json!({"level": "debug"}))
        .await;
    assert_eq!(response["error"]["code"], -32601, "{response}");
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessionless_http_calls_carry_their_messages_on_the_response_stream() {
    let url = serve_http(Server::new(registry()).router()).await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client");
    let call = |id: i64, meta: Value| {
        modern_request(
            &client,
            &url,
            id,
            "tools/call",
            json!({"name": "chatty", "arguments": {}, "_meta": meta}),
        )
    };

    let answer = Answer::read(
        call(1, json!({"io.modelcontextprotocol/logLevel": "notice"})),
        LIMIT,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let messages = answer.messages();
    assert_eq!(levels(&messages), from(LogLevel::Notice));
    assert_eq!(messages.last().expect("messages")["id"], 1, "{messages:?}");

    let answer = Answer::read(call(2, json!({})), LIMIT).await;
    let messages = answer.messages();
    assert!(levels(&messages).is_empty(), "{messages:?}");
    assert_eq!(answer.response(2)["result"]["content"][0]["text"], "done");

    let answer = Answer::read(
        call(3, json!({"io.modelcontextprotocol/logLevel": "LOUD"})),
        LIMIT,
    )
    .await;
    assert_eq!(
        answer.response(3)["error"]["code"],
        -32602,
        "{}",
        answer.body
    );

    let set = modern_request(
        &client,
        &url,
        4,
        "logging/setLevel",
        json!({"level": "info"}),
    );
    let answer = Answer::read(set, LIMIT).await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    assert_eq!(
        answer.response(4)["error"]["code"],
        -32601,
        "{}",
        answer.body
    );
}

// ---------------------------------------------------------------------------------
// 2025-11-25 sessions over HTTP

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_session_hears_its_level_on_its_get_stream() {
    let url = serve_http(Server::new(registry()).router()).await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client");
    let post = |session: Option<&str>, message: Value| {
        let mut request = client
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(session) = session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        Answer::read(request, LIMIT)
    };
    let init = post(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-test-client", "version": "0.0.1"}}}),
    )
    .await;
    assert_eq!(
        init.response(1)["result"]["capabilities"]["logging"],
        json!({})
    );
    let session = init.session.clone().expect("a session");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(Some(&session), initialized).await.status, 202);
    let set = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
        "params": {"level": "warning"}});
    let answer = post(Some(&session), set).await;
    assert_eq!(answer.response(2)["result"], json!({}), "{}", answer.body);

    let mut stream = Events::open(
        client
            .get(&url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &session)
            .header("MCP-Protocol-Version", "2025-11-25"),
    )
    .await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "chatty", "arguments": {}}});
    let answer = post(Some(&session), call).await;
    assert_eq!(answer.response(3)["result"]["content"][0]["text"], "done");
    let mut messages = Vec::new();
    while levels(&messages).len() < 5 {
        let Some(message) = stream.next(LIMIT).await else {
            panic!("the GET stream ended or went quiet: {messages:?}");
        };
        messages.push(message);
    }
    assert_eq!(levels(&messages), from(LogLevel::Warning));
    assert!(stream.next(Duration::from_millis(300)).await.is_none());
}
