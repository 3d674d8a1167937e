//! Interoperability with the published JavaScript `@isdk/tool-rpc` 0.1.1 packages
//! (node scripts in `interop/`; the first test installs them with `npm ci`):
//!
//! * the JavaScript client drives a toolfunc server serving the demo catalog;
//! * toolfunc's `Client` (and the typed service clients) drive a JavaScript server
//!   serving the same catalog;
//! * the 1.x client's background-task poll loop completes against a toolfunc server.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/interop.rs"]
mod peers;
#[path = "support/process.rs"]
mod process;

use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::process::Command;
use toolfunc::http::{Api, Client, Server};

use demo::{GreeterClient, UsersClient};
use process::Running;

/// `interop/`, with the JavaScript packages installed.
fn interop_dir() -> PathBuf {
    peers::node_packages()
}

#[tokio::test]
async fn javascript_client_drives_a_toolfunc_server() {
    let dir = interop_dir();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        Server::new()
            .mount(Api::new(demo::catalog()))
            .unwrap()
            .serve(listener),
    );
    process::run(
        Command::new("node")
            .arg("client.mjs")
            .arg(format!("http://{addr}/api"))
            .current_dir(&dir),
        "the JavaScript client",
        Duration::from_secs(60),
    )
    .await
    .assert_printed("checks passed", &[]);
}

/// The 1.x JavaScript client's background loop (202, polls of `rpcTask/<id>`,
/// `$cancel`; `interop/poll_loop_1x.mjs`) completes against a toolfunc server: the
/// demo `report` tool moves to the background past its 1 s soft deadline.
#[tokio::test]
async fn a_1x_style_poll_loop_completes_against_a_toolfunc_server() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        Server::new()
            .mount(Api::new(demo::catalog()))
            .unwrap()
            .serve(listener),
    );
    // Plain node with fetch: no packages needed.
    process::run(
        Command::new("node")
            .arg("poll_loop_1x.mjs")
            .arg(format!("http://{addr}/api"))
            .current_dir(peers::dir()),
        "the 1.x-style poll loop",
        Duration::from_secs(60),
    )
    .await
    .assert_printed("checks passed", &[]);
}

/// A JavaScript server on a free port, killed when dropped.
async fn javascript_server() -> (tokio::process::Child, String) {
    let dir = interop_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Running::start(
        Command::new("node")
            .arg("server.mjs")
            .env("PORT", port.to_string())
            .current_dir(&dir),
        "the JavaScript server",
    );
    let url = server
        .until_prefix("listening ", Duration::from_secs(30))
        .await;
    (server.keep_draining(), url)
}

#[tokio::test]
async fn toolfunc_client_drives_a_javascript_server() {
    let (_server, url) = javascript_server().await;
    let client = Client::connect(&url).await.unwrap();
    for name in ["add", "greeter", "users", "countdown", "fail", "sleep"] {
        assert!(client.get(name).is_some(), "{name} is not in the discovery");
    }
    // Plain calls, by name and alias.
    assert_eq!(client.run("add", json!({"a": 1, "b": 2})).await.unwrap(), 3);
    assert_eq!(
        client.run("plus", json!({"a": 2, "b": 3})).await.unwrap(),
        5
    );
    // Service acts.
    assert_eq!(
        client
            .run("greeter", json!({"act": "$hello", "name": "Ann"}))
            .await
            .unwrap(),
        "hello Ann"
    );
    assert_eq!(
        client
            .run("greeter", json!({"act": "$mul", "a": 6, "b": 7}))
            .await
            .unwrap(),
        42
    );
    // Every REST verb.
    let list = client.run("users", json!({"act": "list"})).await.unwrap();
    assert!(list.as_array().is_some_and(|l| l.len() >= 2), "{list}");
    let alice = client
        .run("users", json!({"act": "get", "id": "1"}))
        .await
        .unwrap();
    assert_eq!(alice["name"], "Alice");
    let err = client
        .run("users", json!({"act": "get", "id": "99"}))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 404, "{err:?}");
    let carol = client
        .run("users", json!({"act": "post", "val": {"name": "Carol"}}))
        .await
        .unwrap();
    let id = carol["id"].as_str().expect("a string id").to_owned();
    let caroline = client
        .run(
            "users",
            json!({"act": "put", "id": id, "val": {"name": "Caroline"}}),
        )
        .await
        .unwrap();
    assert_eq!(caroline["name"], "Caroline");
    assert_eq!(caroline["id"], json!(id));
    let bob = client
        .run("users", json!({"act": "$promote", "id": "2"}))
        .await
        .unwrap();
    assert_eq!(bob["role"], "admin");
    let deleted = client
        .run("users", json!({"act": "delete", "id": id}))
        .await
        .unwrap();
    assert_eq!(deleted, json!({"deleted": id}));
    // Errors.
    let err = client.run("fail", json!({})).await.unwrap_err();
    assert_eq!(err.status(), 500);
    assert!(err.to_string().contains("boom"), "{err}");
    // A stream-capable tool called for one value answers its own value, not its
    // items collected.
    assert_eq!(
        client.run("countdown", json!({"count": 3})).await.unwrap(),
        json!([3, 2, 1])
    );
    // The stream, item by item.
    let items: Vec<Value> = client
        .run_stream("countdown", json!({"count": 3}))
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(
        items,
        [json!({"tick": 3}), json!({"tick": 2}), json!({"tick": 1})]
    );
    assert_eq!(
        client.run("sleep", json!({"ms": 5})).await.unwrap(),
        json!({"slept": 5})
    );

    // The typed clients generated for the Rust services call the JavaScript ones.
    let greeter = GreeterClient::new(client.clone());
    assert_eq!(greeter.hello("Bo".into()).await.unwrap(), "hello Bo");
    let users = UsersClient::new(client);
    assert_eq!(users.get("1".into()).await.unwrap().name, "Alice");
    assert_eq!(users.get("404".into()).await.unwrap_err().status(), 404);
}
