//! An MCP server written with the official Python SDK, started over stdio and
//! mounted into a registry: its tools listed and called in process, over HTTP and
//! over MCP; structured and text results; a raising tool's error; a tool list that
//! changes; a child killed and started again; the child ended by `close`.

#[path = "support/nats.rs"]
mod nats_server;

use nats_server::interop;

use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::http::{Api, Server};
use toolfunc::mount::Mount;
use toolfunc::{Content, Registry};

fn source() -> String {
    let python = interop::python();
    let script = interop::dir().join("mcp_mount_server.py");
    format!("mcp+stdio:{} {}", python.display(), script.display())
}

async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not within 10 s");
}

/// `py_add` keeps its source's description, schemas and (served again over MCP)
/// output schema.
fn definitions_are_the_sources(registry: &Registry) {
    let def = registry.get("py_add").unwrap().definition().clone();
    assert_eq!(def.description.as_deref(), Some("Adds two numbers."));
    assert_eq!(def.params.value()["required"], json!(["a", "b"]));
    let result = def.result.clone().unwrap();
    assert_eq!(
        result["properties"]["structuredContent"]["properties"]["sum"]["type"],
        "number"
    );

    // Served again over MCP, the tool keeps its output schema.
    let listed = toolfunc::llm::tools(registry, toolfunc::llm::Target::Mcp).unwrap();
    let add = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "py_add")
        .unwrap();
    assert_eq!(
        add["outputSchema"]["properties"]["sum"]["type"], "number",
        "{add}"
    );
}

#[tokio::test]
async fn a_python_mcp_servers_tools_are_mounted_and_called() {
    let registry = Registry::new();
    let mounted = registry.mount("py", source()).await.unwrap();
    assert_eq!(
        mounted.names(),
        [
            "py_add", "py_boom", "py_die", "py_grow", "py_pid", "py_shout"
        ]
    );
    definitions_are_the_sources(&registry);

    // A structured result, and a text one.
    let sum = registry
        .run("py_add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(sum["structuredContent"], json!({"sum": 5.0}));
    let shout = Content::from_value(
        registry
            .run("py_shout", json!({"text": "hi"}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(shout.to_text(), "HI");

    // A raising tool: an error with its text, and the server goes on.
    let err = registry
        .run("py_boom", json!({"why": "no"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "FAILED");
    assert!(err.to_string().contains("boom"), "{err}");

    // The list changes: the mount follows it.
    registry
        .run("py_grow", json!({"name": "fresh"}))
        .await
        .unwrap();
    eventually("the new tool is mounted", async || registry.has("py_fresh")).await;
    let fresh = Content::from_value(registry.run("py_fresh", json!({})).await.unwrap()).unwrap();
    assert_eq!(fresh.to_text(), "I am fresh");

    // Served again: over HTTP, beside a local tool.
    registry
        .register(
            toolfunc::ToolFunc::builder("local_echo")
                .handler_sync(|_, args| Ok(args))
                .build()
                .unwrap(),
        )
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        Server::new()
            .mount(Api::new(registry.clone()))
            .unwrap()
            .serve(listener),
    );
    let http = reqwest::Client::new();
    let listing: Value = http
        .get(format!("http://{addr}/api"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        listing.get("py_add").is_some() && listing.get("local_echo").is_some(),
        "{listing}"
    );
    let answer: Value = http
        .post(format!("http://{addr}/api/py_add"))
        .json(&json!({"a": 1, "b": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["structuredContent"], json!({"sum": 2.0}));
    let failed = http
        .post(format!("http://{addr}/api/py_boom"))
        .json(&json!({"why": "http"}))
        .send()
        .await
        .unwrap();
    assert_eq!(failed.status(), 500);
    let body: Value = failed.json().await.unwrap();
    assert_eq!(body["errorCode"], "FAILED", "{body}");
}

#[tokio::test]
async fn a_child_that_dies_is_started_again_and_close_ends_it() {
    let registry = Registry::new();
    registry
        .register(
            toolfunc::ToolFunc::builder("local_echo")
                .handler_sync(|_, args| Ok(args))
                .build()
                .unwrap(),
        )
        .unwrap();
    let mounted = registry.mount("py", source()).await.unwrap();
    // The child dies: its tools answer UNAVAILABLE, then it is started again.
    let first = registry.run("py_pid", json!({})).await.unwrap();
    let _ = registry.run("py_die", json!({})).await;
    let mut saw_down = false;
    eventually("the server is started again", async || {
        match registry.run("py_pid", json!({})).await {
            Ok(pid) => pid != first,
            Err(err) => {
                assert_eq!(err.code(), "UNAVAILABLE", "{err}");
                saw_down = true;
                false
            }
        }
    })
    .await;
    let _ = saw_down;
    assert!(registry.has("py_add"));

    // close: the tools go and the child ends.
    let pid = Content::from_value(registry.run("py_pid", json!({})).await.unwrap())
        .unwrap()
        .to_text();
    mounted.close().await;
    assert!(!registry.has("py_add"));
    assert!(registry.has("local_echo"));
    let proc = format!("/proc/{pid}");
    eventually("the child exits", async || {
        // Gone, or a zombie its parent has not reaped yet.
        std::fs::read_to_string(format!("{proc}/stat")).map_or(true, |stat| stat.contains(") Z"))
    })
    .await;
}

#[tokio::test]
async fn an_mcp_servers_prompts_and_resources_are_mounted_too() {
    let registry = Registry::new();
    let mounted = registry.mount("py", source()).await.unwrap();
    let (prompts, resources) = mounted.prompts_and_resources();
    assert_eq!(prompts, ["py_review"]);
    assert_eq!(resources, ["demo://readme", "notes://{day}"]);
    let got = registry
        .prompt("py_review", json!({"code": "x = 1"}))
        .await
        .unwrap();
    assert_eq!(got.messages.len(), 1);
    assert!(
        serde_json::to_string(&got.messages[0])
            .unwrap()
            .contains("x = 1")
    );
    let read = registry.read("demo://readme").await.unwrap();
    assert_eq!(read[0].text.as_deref(), Some("mounted from Python"));
    let day = registry.read("notes://monday").await.unwrap();
    assert_eq!(day[0].text.as_deref(), Some("notes of monday"));
    assert_eq!(day[0].uri, "notes://monday");
    // Without them, on request.
    let bare = Registry::new();
    let tools_only = Mount::new("py", source())
        .prompts_and_resources(false)
        .into_registry(&bare)
        .await
        .unwrap();
    assert_eq!(tools_only.prompts_and_resources(), (vec![], vec![]));
    mounted.close().await;
    assert!(registry.prompt_definitions().is_empty());
    assert!(registry.read("demo://readme").await.is_err());
}

#[tokio::test]
async fn a_mounted_mcp_server_is_served_over_mcp() {
    let registry = Registry::new();
    let _mounted = Mount::new("py", source())
        .include(["add", "shout"])
        .into_registry(&registry)
        .await
        .unwrap();
    let server = toolfunc::mcp::Server::new(registry);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve_http(listener).await });
    let http = reqwest::Client::new();
    let post = |body: Value| {
        http.post(format!("http://{addr}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body)
            .send()
    };
    let init = post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .await
        .unwrap();
    let session = init
        .headers()
        .get("mcp-session-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let call = http
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &session)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "py_add", "arguments": {"a": 4, "b": 5}}}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(call.contains("\"sum\":9.0"), "{call}");
}

/// The Python server over streamable HTTP on a free port, once it answers.
async fn python_over_http() -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let child = tokio::process::Command::new(interop::python())
        .arg(interop::dir().join("mcp_mount_server.py"))
        .args(["--http", &port.to_string()])
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    eventually("the Python server listens", async || {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
    })
    .await;
    (child, url)
}

#[tokio::test]
async fn a_python_mcp_server_over_streamable_http_is_mounted() {
    let (_child, url) = python_over_http().await;
    let registry = Registry::new();
    let mounted = Mount::new("web", format!("mcp+{url}"))
        .bearer("mount-token")
        .into_registry(&registry)
        .await
        .unwrap();
    assert!(
        mounted.names().contains(&"web_add".to_owned()),
        "{:?}",
        mounted.names()
    );
    let sum = registry
        .run("web_add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(sum["structuredContent"], json!({"sum": 42.0}));
    let err = registry
        .run("web_boom", json!({"why": "http"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "FAILED");
    registry
        .run("web_grow", json!({"name": "later"}))
        .await
        .unwrap();
    // Over HTTP the list change reaches a listener; a mount that hears none lists
    // again on its timer.
    let refreshed = Registry::new();
    let _timer = Mount::new("t", format!("mcp+{url}"))
        .refresh_every(Duration::from_millis(200))
        .into_registry(&refreshed)
        .await
        .unwrap();
    registry
        .run("web_grow", json!({"name": "later2"}))
        .await
        .unwrap();
    eventually("the timer lists the new tool", async || {
        refreshed.has("t_later2")
    })
    .await;
    mounted.close().await;
    assert!(registry.names().is_empty());
}

#[tokio::test]
async fn a_mounted_mcp_tool_is_served_by_a_nats_worker() {
    let registry = Registry::new();
    let _mounted = Mount::new("py", source())
        .include(["add"])
        .into_registry(&registry)
        .await
        .unwrap();
    let server = nats_server::NatsServer::start();
    let _worker = toolfunc::nats::Worker::builder(registry)
        .connect(&server.url())
        .await
        .unwrap();
    let client = toolfunc::nats::Client::connect(&server.url())
        .await
        .unwrap();
    assert_eq!(client.names(), ["py_add"]);
    let sum = client
        .run("py_add", json!({"a": 20, "b": 1}))
        .await
        .unwrap();
    assert_eq!(sum["structuredContent"], json!({"sum": 21.0}));
}
