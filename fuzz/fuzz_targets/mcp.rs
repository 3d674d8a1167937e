//! MCP JSON-RPC over `mcp::Server::serve_io` on in-memory pipes: the handshake
//! (`initialize`, `notifications/initialized`), then the input as one or more
//! lines, then the answers are read until the server ends or a short deadline
//! passes. Any answer is fine; a panic is the bug, and so is a `PANICKED` tool
//! error (no tool in the catalog panics).

#![no_main]

#[path = "../common/catalog.rs"]
mod catalog;

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolfunc::Registry;
use toolfunc::mcp::Server;

/// Inputs past this are skipped: a run must stay fast.
const MAX_INPUT: usize = 16 * 1024;
/// How long one run may take, from the handshake to the answer to [`SENTINEL`].
const DEADLINE: Duration = Duration::from_millis(300);
/// How long the server gets to end once its input is closed.
const WIND_DOWN: Duration = Duration::from_millis(100);

const HANDSHAKE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\
\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\
\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"0.0.0\"}}}\n\
{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

struct Harness {
    runtime: tokio::runtime::Runtime,
    registry: Registry,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| Harness {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime"),
        registry: catalog::catalog(),
    })
}

/// Written after the input: its answer says the server has read every line before.
const SENTINEL: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":\"fuzz-end\",\"method\":\"ping\"}\n";

/// Checks one line the server wrote; `true` for the answer to [`SENTINEL`].
///
/// Every line must be JSON, and no tool call may report a caught panic (the code
/// sits in the result's `_meta`, which only the server writes).
fn check(line: &str) -> bool {
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        panic!("the server wrote a line that is not JSON: {line:?}");
    };
    let code = message
        .pointer("/result/_meta/toolfunc~1error/code")
        .and_then(Value::as_str);
    assert_ne!(
        code,
        Some("PANICKED"),
        "a tool call reported a panic: {message}"
    );
    message.get("id").and_then(Value::as_str) == Some("fuzz-end") && message.get("result").is_some()
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_INPUT {
        return;
    }
    let harness = harness();
    let server = Server::new(&harness.registry);
    harness.runtime.block_on(async move {
        let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, from_server) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(server.serve_io(server_in, server_out));

        // Write and read at once: a server answering many lines must not block on
        // a full pipe while the input is still being written.
        let write = async {
            let _ = to_server.write_all(HANDSHAKE).await;
            let _ = to_server.write_all(data).await;
            if !data.ends_with(b"\n") {
                let _ = to_server.write_all(b"\n").await;
            }
            let _ = to_server.write_all(SENTINEL).await;
            let _ = to_server.flush().await;
        };
        let read = async {
            let mut lines = BufReader::new(from_server).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if check(&line) {
                    break;
                }
            }
        };
        // A line that keeps the server busy past the deadline is not a finding by
        // itself (the machine may be loaded); the run just ends there.
        let _ = tokio::time::timeout(DEADLINE, async { tokio::join!(write, read) }).await;

        // Closing the input ends the session; the server gets a moment to wind down.
        drop(to_server);
        match tokio::time::timeout(WIND_DOWN, serving).await {
            // An error is a fine answer to garbage; a panic would have aborted in
            // the panic hook already, but a caught one must not pass either.
            Ok(joined) => {
                let _ = joined.expect("serve_io panicked");
            }
            // Still running (a call in flight): the task is dropped with it.
            Err(_) => {}
        }
    });
});
