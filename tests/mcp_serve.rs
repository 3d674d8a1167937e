//! Serving MCP over HTTP without the 44 ms trap: the SDK answers each request as a
//! short SSE stream written in pieces, and on a connection with Nagle's algorithm on
//! (a plain `axum::serve`) the last piece waits for a delayed ACK. `mcp::NoDelay`
//! sets `TCP_NODELAY` on every connection it accepts, for `axum::serve`;
//! `mcp::serve` and `mcp::Server::serve_http` run the accept loop of
//! `http::Server`, which sets it too (its limits are `tests/mcp_hardening.rs`'s).
//! The tests check what `NoDelay` accepts, and (on Linux) the server's own end of a
//! live connection of `mcp::serve`, found among this process's file descriptors,
//! against a plain `axum::serve`. No timing is measured.

#[path = "support/mcp.rs"]
mod mcp_support;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolfunc::mcp::axum::serve::Listener;
use toolfunc::mcp::{self, NoDelay, Server, axum};
use toolfunc::{Registry, ToolFunc};

use mcp_support::{Answer, LIMIT, modern_request};

async fn loopback() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.expect("a free port")
}

#[tokio::test]
async fn connections_accepted_through_no_delay_have_tcp_nodelay() {
    // The control: a plain listener's connections have Nagle on, so the check below
    // can tell the difference.
    let mut plain = loopback().await;
    let addr = plain.local_addr().expect("bound");
    let _client = TcpStream::connect(addr).await.expect("connects");
    let (accepted, _) = Listener::accept(&mut plain).await;
    assert!(!accepted.nodelay().expect("readable option"));

    let mut listener = NoDelay::new(loopback().await);
    let addr = Listener::local_addr(&listener).expect("bound");
    for _ in 0..3 {
        let _client = TcpStream::connect(addr).await.expect("connects");
        let (accepted, peer) = Listener::accept(&mut listener).await;
        assert!(accepted.nodelay().expect("readable option"), "{peer}");
    }
    // `From` and back.
    let listener: NoDelay = listener.into_inner().into();
    assert_eq!(Listener::local_addr(&listener).expect("bound"), addr);
}

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("echo")
                .description("Answers its text.")
                .handler_sync(|_, args| Ok(args["text"].clone()))
                .build()
                .expect("a valid tool"),
        )
        .expect("a fresh registry");
    registry
}

/// A sessionless `tools/call` of `echo` at `url`.
async fn echo(url: &str) -> String {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client");
    let request = modern_request(
        &client,
        url,
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let answer = Answer::read(request, LIMIT).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let text = &answer.response(1)["result"]["content"][0]["text"];
    text.as_str().expect("a text block").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serve_helpers_answer_over_a_real_socket() {
    let listener = loopback().await;
    let url = format!(
        "http://{}{}",
        listener.local_addr().expect("bound"),
        mcp::PATH
    );
    tokio::spawn(mcp::serve(listener, mcp::router(registry())));
    assert_eq!(echo(&url).await, "hi");

    let listener = loopback().await;
    let url = format!(
        "http://{}{}",
        listener.local_addr().expect("bound"),
        mcp::PATH
    );
    tokio::spawn(Server::new(registry()).serve_http(listener));
    assert_eq!(echo(&url).await, "hi");

    // A `NoDelay` listener works with `axum::serve` and its options too.
    let listener = NoDelay::new(loopback().await);
    let addr = Listener::local_addr(&listener).expect("bound");
    let stop = toolfunc::CancellationToken::new();
    let served = tokio::spawn(
        axum::serve(listener, mcp::router(registry()))
            .with_graceful_shutdown(stop.clone().cancelled_owned())
            .into_future(),
    );
    assert_eq!(echo(&format!("http://{addr}{}", mcp::PATH)).await, "hi");
    stop.cancel();
    let ended = tokio::time::timeout(LIMIT, served).await.expect("stops");
    ended.expect("no panic").expect("a clean stop");
}

/// Makes one sessionless call of `echo` on a raw connection to `addr` and keeps the
/// connection open; the connection.
async fn call_on_raw_connection(addr: std::net::SocketAddr) -> TcpStream {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hi"},
        "_meta": mcp_support::modern_meta(serde_json::Value::Null)}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("the server reads");
    let mut answer = Vec::new();
    let mut buffer = [0; 4096];
    while !String::from_utf8_lossy(&answer).contains("\"result\"") {
        let read = tokio::time::timeout(LIMIT, stream.read(&mut buffer))
            .await
            .expect("answered in time")
            .expect("readable");
        assert!(
            read > 0,
            "closed early: {}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buffer[..read]);
    }
    stream
}

/// `TCP_NODELAY` of the server's end of `client`: the socket among this process's
/// file descriptors whose peer is `client`.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn server_side_nodelay(client: &TcpStream) -> bool {
    use std::os::fd::{FromRawFd, RawFd};
    let me = client.local_addr().expect("bound");
    let fds = std::fs::read_dir("/proc/self/fd").expect("a proc file system");
    for entry in fds.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        // SAFETY: the descriptor is only borrowed: `ManuallyDrop` never closes it, and
        // on a descriptor that is no TCP socket the calls below fail harmlessly.
        let socket = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
        if socket.peer_addr().is_ok_and(|peer| peer == me) {
            return socket.nodelay().expect("readable option");
        }
    }
    panic!("no server socket has {me} as its peer");
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_end_of_an_mcp_serve_connection_has_tcp_nodelay() {
    // The trap: a plain `axum::serve`.
    let listener = loopback().await;
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, mcp::router(registry())).await });
    let client = call_on_raw_connection(addr).await;
    assert!(!server_side_nodelay(&client), "the control has Nagle on");

    let listener = loopback().await;
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(mcp::serve(listener, mcp::router(registry())));
    let client = call_on_raw_connection(addr).await;
    assert!(server_side_nodelay(&client));

    let listener = loopback().await;
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(Server::new(registry()).serve_http(listener));
    let client = call_on_raw_connection(addr).await;
    assert!(server_side_nodelay(&client));
}
