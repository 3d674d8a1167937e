//! The MCP server driven by the official Python MCP SDK (`mcp` 2.3.0 from PyPI,
//! pinned in `interop/requirements.txt`; the first test installs it into
//! `interop/.venv`). The checks live in `interop/mcp_client.py`: tools/list, calls,
//! bad arguments (`isError`), an unknown tool (protocol error), progress, a
//! cancelled slow call, and tool list changes. Each runs with the `initialize`
//! handshake (`legacy`, protocol 2025-11-25) and with the SDK's own protocol
//! discovery (`auto`, 2026-07-28, sessionless). `interop/mcp_auth_client.py` drives
//! the example server behind an OAuth authorization server of its own.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/interop.rs"]
mod peers;
#[path = "support/process.rs"]
mod process;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;
use toolfunc::mcp::Server;
use toolfunc::{CallStatus, RegistryEvent, SubscriptionError, ToolFunc};

use process::Running;

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(90);

fn interop_dir() -> PathBuf {
    peers::dir()
}

/// The venv's python, with the MCP SDK installed.
fn python() -> PathBuf {
    peers::python()
}

/// The `mcp_server` example.
fn example_server() -> PathBuf {
    process::example("mcp_server")
}

/// The example server behind an authorization server the Python script runs: the
/// SDK without a token is refused (401 and a challenge naming the metadata); with
/// a token that lacks `users:write` the writes are hidden and refused with 403
/// `insufficient_scope`; and the SDK's own OAuth flow (client credentials) follows
/// the challenge to the authorization server, gets a token and calls them.
#[tokio::test]
async fn python_sdk_with_oauth_against_the_example_server() {
    let finished = process::run(
        Command::new(python())
            .arg("mcp_auth_client.py")
            .arg("--server")
            .arg(process::example("server"))
            .current_dir(interop_dir()),
        "the Python MCP client with OAuth",
        LIMIT,
    )
    .await;
    finished.assert_printed("checks passed", &[]);
}

/// The same with the README's own flags: the audience is the server's origin
/// alone (`--auth-audience http://127.0.0.1:PORT`), so every challenge of `/api`
/// and `/mcp` names `/.well-known/oauth-protected-resource`, which answers with the
/// origin as the resource, and the SDK's OAuth flow asks for tokens bound to it.
#[tokio::test]
async fn python_sdk_with_oauth_and_an_origin_audience() {
    let finished = process::run(
        Command::new(python())
            .arg("mcp_auth_client.py")
            .arg("--server")
            .arg(process::example("server"))
            .args(["--audience", "origin"])
            .current_dir(interop_dir()),
        "the Python MCP client with OAuth and an origin audience",
        LIMIT,
    )
    .await;
    finished.assert_printed("checks passed", &[]);
}

/// Runs the Python client against the example over stdio, and returns what the
/// server logged on stderr (one line per finished call).
async fn over_stdio(mode: &str) -> String {
    let errlog =
        std::env::temp_dir().join(format!("toolfunc-mcp-{mode}-{}.log", std::process::id()));
    let finished = process::run(
        Command::new(python())
            .arg("mcp_client.py")
            .args(["--mode", mode, "--errlog"])
            .arg(&errlog)
            .arg("--stdio")
            .arg(example_server())
            .current_dir(interop_dir()),
        &format!("the Python MCP client ({mode}, stdio)"),
        LIMIT,
    )
    .await;
    let server_log = std::fs::read_to_string(&errlog).unwrap_or_default();
    let _ = std::fs::remove_file(&errlog);
    finished.assert_printed("checks passed", &[("server", &server_log)]);
    server_log
}

#[tokio::test]
async fn python_sdk_over_stdio_with_initialize() {
    let log = over_stdio("legacy").await;
    // The client's notifications/cancelled reached the running call.
    assert!(log.contains("sleep Cancelled"), "server log:\n{log}");
}

#[tokio::test]
async fn python_sdk_over_stdio_with_protocol_discovery() {
    let log = over_stdio("auto").await;
    assert!(log.contains("sleep Cancelled"), "server log:\n{log}");
}

/// Runs the Python client against an in-process server over streamable HTTP. When
/// the client says `CHANGE`, a tool is added to the registry; the client then
/// expects `notifications/tools/list_changed`.
async fn over_http(mode: &str) {
    let registry = demo::catalog();
    let cancelled = sleep_cancelled(&registry);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let served = registry.clone();
    tokio::spawn(Server::new(served).serve_http(listener));
    let mut client = Running::start(
        Command::new(python())
            .arg("mcp_client.py")
            .args(["--mode", mode, "--list-changed", "--http", &url])
            .current_dir(interop_dir())
            .stdin(Stdio::piped())
            .stderr(Stdio::piped()),
        &format!("the Python MCP client ({mode}, HTTP)"),
    );
    client
        .converse(LIMIT, |line| {
            (line == "CHANGE").then(|| {
                registry.register(added_later()).unwrap();
                "changed\n".to_owned()
            })
        })
        .await;
    client
        .finish(LIMIT)
        .await
        .assert_printed("checks passed", &[]);
    // The client's cancellation (a notification, or the dropped request on
    // 2026-07-28) reached the running call.
    let seen = tokio::time::timeout(Duration::from_secs(5), cancelled).await;
    assert!(
        matches!(seen, Ok(Ok(true))),
        "no call of sleep ended cancelled"
    );
}

/// Resolves to `true` once a call of `sleep` ends cancelled.
fn sleep_cancelled(registry: &toolfunc::Registry) -> tokio::task::JoinHandle<bool> {
    let mut events = registry.subscribe();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(RegistryEvent::CallFinished { tool, status, .. })
                    if tool == "sleep" && status == CallStatus::Cancelled =>
                {
                    return true;
                }
                Ok(_) | Err(SubscriptionError::Lagged(_)) => {}
                Err(_) => return false,
            }
        }
    })
}

/// The tool registered while the client listens for list changes.
fn added_later() -> ToolFunc {
    ToolFunc::builder("added_later")
        .description("Registered while a client was connected.")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .expect("the tool builds")
}

#[tokio::test]
async fn python_sdk_over_http_with_initialize() {
    over_http("legacy").await;
}

#[tokio::test]
async fn python_sdk_over_http_with_protocol_discovery() {
    over_http("auto").await;
}
