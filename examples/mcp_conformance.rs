//! The tools of the official MCP conformance suite, over streamable HTTP:
//! `cargo run --example mcp_conformance` (`--addr HOST:PORT` to choose where).
//!
//! Run the suite against it with `interop/conformance/run.sh
//! http://127.0.0.1:3001/mcp --requirements 2025-11-25` (or `2026-07-28`);
//! `tests/mcp_conformance.rs` does that with the expected-failures file of
//! `interop/conformance/`.

mod conformance;

use toolfunc::mcp::Server;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:3001".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let Some(value) = args.next().filter(|_| arg == "--addr") else {
            eprintln!("usage: mcp_conformance [--addr HOST:PORT]");
            std::process::exit(2);
        };
        addr = value;
    }
    let server = Server::new(conformance::registry()?)
        .name("toolfunc-conformance", env!("CARGO_PKG_VERSION"));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let url = format!("http://{}{}", listener.local_addr()?, toolfunc::mcp::PATH);
    println!("toolfunc conformance server listening on {url}");
    println!("  interop/conformance/run.sh {url} --requirements 2025-11-25");
    toolfunc::http::Server::new()
        .merge(server.router())
        .serve(listener)
        .await?;
    Ok(())
}
