//! The example server with three `--mount`s: a Python MCP server over stdio,
//! another toolfunc server's OpenAPI document and its MCP endpoint, served beside the demo's own
//! tools over HTTP and MCP; a source that cannot be read ends the server naming
//! the mount, or with `--mount-optional` is left out; SIGTERM ends the MCP child.

#[path = "support/interop.rs"]
mod interop;
#[path = "support/mcp.rs"]
mod mcp;
#[path = "support/process.rs"]
mod process;

use std::time::Duration;

use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(60);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The example server on a free port with `args`, once it listens; its address.
async fn server(args: &[String]) -> (process::Running, String) {
    let port = free_port();
    let mut command = tokio::process::Command::new(process::example("server"));
    command
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .args(args)
        .stderr(std::process::Stdio::piped());
    let mut running = process::Running::start(&mut command, "the example server");
    running
        .until_prefix("toolfunc demo server listening on", LIMIT)
        .await;
    (running, format!("http://127.0.0.1:{port}"))
}

/// A sessionless `tools/call` of the 2026-07-28 revision at `{base}/mcp`; the
/// answer's text.
async fn mcp_call(http: &reqwest::Client, base: &str, name: &str, arguments: Value) -> String {
    let call = json!({"name": name, "arguments": arguments});
    mcp::modern_request(http, &format!("{base}/mcp"), 1, "tools/call", call)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// `--mount py=mcp+stdio:PYTHON SCRIPT`, as a shell passes it unquoted: the
/// script is a word of its own.
fn python_mount() -> [String; 3] {
    let python = interop::python();
    let script = interop::dir().join("mcp_mount_server.py");
    [
        "--mount".into(),
        format!("py=mcp+stdio:{}", python.display()),
        script.display().to_string(),
    ]
}

#[tokio::test]
async fn the_example_server_serves_local_and_mounted_tools_side_by_side() {
    let (_upstream, upstream) = server(&[]).await;
    let [mount, python, script] = python_mount();
    let (running, base) = server(&[
        mount,
        python,
        script,
        "--mount".into(),
        format!("other=openapi+{upstream}/api/openapi.json"),
        "--mount".into(),
        format!("up=mcp+{upstream}/mcp"),
    ])
    .await;
    let http = reqwest::Client::new();
    let listing: Value = http
        .get(format!("{base}/api"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for name in [
        "add",
        "py_add",
        "py_shout",
        "other_add",
        "other_users.get",
        "up_add",
        "up_greeter_hello",
    ] {
        assert!(listing.get(name).is_some(), "{name} in {listing}");
    }
    let call = |name: &str, args: Value| http.post(format!("{base}/api/{name}")).json(&args).send();
    assert_eq!(
        call("add", json!({"a": 1, "b": 2}))
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap(),
        json!(3.0)
    );
    let sum: Value = call("py_add", json!({"a": 2, "b": 5}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sum["structuredContent"], json!({"sum": 7.0}));
    let up: Value = call("up_add", json!({"a": 4, "b": 4}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(up["content"][0]["text"], "8.0", "{up}");
    let alice: Value = call("other_users.get", json!({"id": "1"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(alice["name"], "Alice");
    // A failing remote tool answers a JSON error with its code, never a hang.
    let missing = call("other_users.get", json!({"id": "99"})).await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["errorCode"], "UPSTREAM", "{body}");
    let boom = call("py_boom", json!({"why": "x"})).await.unwrap();
    assert_eq!(boom.status(), 500);
    assert_eq!(boom.json::<Value>().await.unwrap()["errorCode"], "FAILED");

    // Over MCP (a sessionless request of the 2026-07-28 revision).
    let listed = mcp_call(&http, &base, "py_shout", json!({"text": "mounted"})).await;
    assert!(listed.contains("MOUNTED"), "{listed}");

    // SIGTERM: the server ends its MCP child and exits.
    let pid: Value = call("py_pid", json!({}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let child = pid["structuredContent"]["result"].as_i64().or_else(|| {
        pid["content"][0]["text"]
            .as_str()
            .and_then(|t| t.parse().ok())
    });
    let child = child.unwrap_or_else(|| panic!("a pid in {pid}"));
    let server_pid = running.id().unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &server_pid.to_string()])
        .status()
        .unwrap();
    let finished = running.finish(LIMIT).await;
    assert!(finished.status.success(), "{finished:?}");
    let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z"),
        "the child {child} still runs: {stat}"
    );
}

#[tokio::test]
async fn a_source_that_cannot_be_read_ends_the_server_or_is_left_out() {
    let port = free_port();
    let bad = "gone=openapi+http://127.0.0.1:1/openapi.json";
    let mut command = tokio::process::Command::new(process::example("server"));
    command.args(["--addr", &format!("127.0.0.1:{port}"), "--mount", bad]);
    let finished = process::run(&mut command, "the example server", LIMIT).await;
    assert!(!finished.status.success(), "{finished:?}");
    assert!(
        finished.stderr.contains("cannot mount `gone`"),
        "{finished:?}"
    );

    let (_running, base) = server(&["--mount".into(), bad.into(), "--mount-optional".into()]).await;
    let listing: Value = reqwest::get(format!("{base}/api"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(listing.get("add").is_some());
    assert!(
        !listing
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("gone_"))
    );
}
