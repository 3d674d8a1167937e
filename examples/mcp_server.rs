//! The demo catalog over MCP: `cargo run --example mcp_server`.
//!
//! Serves `add`, the `greeter` service (`greeter_hello`, `greeter_mul`), the `users`
//! resource (`users_list`, `users_get`, ...), the streaming `countdown`, `fail` and
//! `sleep` (which reports progress about every 100 ms), and `inspect` (which logs as
//! it goes: the client sees `notifications/message` at the level it asks for, with
//! `logging/setLevel` or a request's `_meta["io.modelcontextprotocol/logLevel"]`) to
//! an MCP client: over stdio by default (the client starts this program), or over
//! streamable HTTP at `http://HOST:PORT/mcp` with `--http HOST:PORT`.

mod demo;

use serde_json::json;
use toolfunc::mcp::Server;
use toolfunc::{Ctx, LogLevel, Registry, RegistryEvent, SubscriptionError, tool};

/// Says how many tools the server has, logging what it looks at.
#[tool(annotations(read_only))]
fn inspect(ctx: &Ctx) -> usize {
    ctx.log(LogLevel::Debug, "listing the registry");
    let names = ctx.registry().names();
    ctx.log_data(
        LogLevel::Info,
        Some("inventory"),
        json!({"tools": names.len(), "first": names.first()}),
    );
    if names.len() > 100 {
        ctx.log(
            LogLevel::Warning,
            format_args!("{} tools is a lot", names.len()),
        );
    }
    names.len()
}

fn usage() -> ! {
    eprintln!("usage: mcp_server [--http HOST:PORT]   (stdio without --http)");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut http = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = Some(args.next().unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    // The catalog's #[tool] functions and Default #[tool_service]s are in the global
    // registry already.
    let server = Server::new(Registry::global())
        .name("toolfunc-demo", env!("CARGO_PKG_VERSION"))
        .instructions("Demo tools: arithmetic, greetings, a users store, a countdown, a failing tool, a slow one and one that logs.");
    log_calls(Registry::global());
    let Some(addr) = http else {
        // stdout carries the protocol: everything else goes to stderr.
        eprintln!("toolfunc demo MCP server on stdio");
        server.serve_stdio().await?;
        return Ok(());
    };
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let url = format!("http://{}{}", listener.local_addr()?, toolfunc::mcp::PATH);
    println!("toolfunc demo MCP server listening on {url}");
    println!();
    println!("  npx @modelcontextprotocol/inspector        # then connect to {url}");
    println!("  curl -X POST {url} -H 'Content-Type: application/json' \\");
    println!("       -H 'Accept: application/json, text/event-stream' \\");
    println!(
        "       -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"curl\",\"version\":\"1\"}}}}}}'"
    );
    // The HTTP server's accept loop: a connection cap, header and idle timeouts, and
    // TCP_NODELAY (as `server.serve_http(listener)` or `toolfunc::mcp::serve` have
    // too; a plain `axum::serve` would make each answer wait ~40 ms).
    toolfunc::http::Server::new()
        .merge(server.router())
        .serve(listener)
        .await?;
    Ok(())
}

/// One stderr line per finished call: `sleep Cancelled after 412 ms`.
fn log_calls(registry: &Registry) {
    let mut events = registry.subscribe();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(RegistryEvent::CallFinished {
                    tool,
                    duration,
                    status,
                    ..
                }) => eprintln!("{tool} {status:?} after {} ms", duration.as_millis()),
                Ok(_) | Err(SubscriptionError::Lagged(_)) => {}
                Err(_) => break,
            }
        }
    });
}
