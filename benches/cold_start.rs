//! Cold start: from process start to the first answered MCP `tools/list`, with
//! 10,000 generated tools (distinct names, a sentence of description, five typed
//! parameters each; `examples/demo/generated.rs`) beside the same with 10, measured
//! as whole processes in the same run.
//!
//! `cargo bench --bench cold_start` starts this binary again as a server (`serve N
//! PORT`: the generated tools registered in the global registry, served over HTTP
//! RPC and MCP on one port, as `cargo run --example server -- --extra-tools N`
//! does), sends a sessionless (2026-07-28) `tools/list` over a plain TCP socket
//! until one is answered, and stops the server; then the same with the HTTP
//! RPC's discovery (`GET /api`, every tool's definition) as the first request.
//! The rounds alternate the sizes and the two surfaces; it prints each one's
//! median, minimum and maximum, the ratio of the sizes, and how much later the
//! 10,000 tools' first answer comes than the 10's.
//!
//! `cargo bench --bench cold_start -- phases N [http]` times the steps of a start
//! in one process instead: making N tools, registering them, and the first
//! `tools/list` (or with `http`, the first `GET /api`).
//! `-- rounds R` sets the rounds (default 15).
//!
//! `cargo bench --bench cold_start -- binaries SMALL LARGE` compares two other
//! servers the same way, each started as `SERVER PORT`: the programs of 10 and
//! 10,000 `#[tool]` functions that `python3 benches/compile/run.py --parts
//! coldstart` generates, builds and passes here.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use toolfunc::Registry;
use toolfunc::http::{Api, Server};

#[path = "../examples/demo/generated.rs"]
mod generated;

const SIZES: [usize; 2] = [10, 10_000];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let rounds_of = |rest: &[&str]| match rest.iter().position(|w| *w == "rounds") {
        Some(at) => rest.get(at + 1).map_or(15, |n| parse(n)),
        None => 15,
    };
    match words.as_slice() {
        ["serve", tools, port, ..] => serve(parse(tools), parse(port)),
        ["binaries", small, large, rest @ ..] => compare(
            [Launch::Binary(small), Launch::Binary(large)],
            rounds_of(rest),
        ),
        ["phases", tools, "http", ..] => phases(parse(tools), First::Http),
        ["phases", tools, ..] => phases(parse(tools), First::Mcp),
        rest => compare(
            [Launch::Own(SIZES[0]), Launch::Own(SIZES[1])],
            rounds_of(rest),
        ),
    }
}

fn parse(word: &str) -> usize {
    word.parse().unwrap_or_else(|_| {
        eprintln!("not a count: {word}");
        std::process::exit(2)
    })
}

/// Registers `count` generated tools in the global registry.
fn register(count: usize) {
    for tool in generated::tools(count) {
        if let Err(err) = tool.and_then(|tool| Registry::global().register(tool)) {
            eprintln!("cannot add a generated tool: {err}");
            std::process::exit(1)
        }
    }
}

/// The server side: what the example server does with `--extra-tools N`.
fn serve(count: usize, port: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        register(count);
        let api = Api::new(Registry::global()).prefix("/api");
        let mcp = toolfunc::mcp::Server::new(Registry::global());
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", u16::try_from(port).unwrap_or(0)))
                .await
                .expect("the port is free");
        let server = Server::new()
            .mount(api)
            .expect("the API mounts")
            .merge(mcp.router());
        server.serve(listener).await.expect("the server runs");
    });
}

/// A sessionless `tools/list` request, as a 2026-07-28 client sends it.
fn list_request(port: u16) -> Vec<u8> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"cold-start","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/list\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Discovery over the HTTP RPC: every tool's definition.
fn discovery_request(port: u16) -> Vec<u8> {
    format!("GET /api HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").into_bytes()
}

/// The first request of a start: MCP's `tools/list`, or HTTP discovery.
#[derive(Clone, Copy)]
enum First {
    Mcp,
    Http,
}

impl First {
    fn request(self, port: u16) -> Vec<u8> {
        match self {
            Self::Mcp => list_request(port),
            Self::Http => discovery_request(port),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Mcp => "MCP tools/list",
            Self::Http => "HTTP GET /api",
        }
    }

    /// Whether `answer` lists tools.
    fn lists(self, answer: &str) -> bool {
        match self {
            Self::Mcp => answer.contains("\"tools\":[{"),
            Self::Http => answer.contains("\"isApi\":true"),
        }
    }
}

/// The whole answer to one `tools/list`, or `None` while the server is not up.
fn ask(port: u16, request: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.write_all(request).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.starts_with("HTTP/1.1 200").then_some(answer)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// How a server is started: this binary with `serve N PORT`, or another with `PORT`.
#[derive(Clone, Copy)]
enum Launch<'a> {
    Own(usize),
    Binary(&'a str),
}

impl Launch<'_> {
    fn command(self, port: u16) -> Command {
        match self {
            Self::Own(count) => {
                let exe = std::env::current_exe().expect("the bench's own path");
                let mut command = Command::new(exe);
                command.args(["serve", &count.to_string(), &port.to_string()]);
                command
            }
            Self::Binary(path) => {
                let mut command = Command::new(path);
                command.arg(port.to_string());
                command
            }
        }
    }

    fn name(self) -> String {
        match self {
            Self::Own(count) => format!("{count:>6} tools"),
            Self::Binary(path) => path.rsplit('/').next().unwrap_or(path).to_owned(),
        }
    }
}

/// One whole-process start: spawn, then ask until answered.
fn start_once(launch: Launch<'_>, first: First) -> Duration {
    let port = free_port();
    let request = first.request(port);
    let started = Instant::now();
    let mut child: Child = launch
        .command(port)
        .stdout(Stdio::null())
        .spawn()
        .expect("the server starts");
    let deadline = started + Duration::from_secs(60);
    let answer = loop {
        if let Some(answer) = ask(port, &request) {
            break answer;
        }
        assert!(Instant::now() < deadline, "no answer in 60 s");
        std::thread::sleep(Duration::from_micros(200));
    };
    let took = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    // The first page names tools: the answer is a real listing.
    assert!(
        first.lists(&answer),
        "not a listing: {}",
        &answer[..answer.len().min(300)]
    );
    took
}

fn compare(launches: [Launch<'_>; 2], rounds: usize) {
    let surfaces = [First::Mcp, First::Http];
    let mut times: Vec<Vec<Vec<Duration>>> = vec![vec![Vec::new(); launches.len()]; surfaces.len()];
    // One start of each to warm the page cache, not counted.
    for first in surfaces {
        for launch in launches {
            start_once(launch, first);
        }
    }
    for _ in 0..rounds {
        for (s, first) in surfaces.iter().enumerate() {
            for (at, launch) in launches.iter().enumerate() {
                times[s][at].push(start_once(*launch, *first));
            }
        }
    }
    for (s, first) in surfaces.iter().enumerate() {
        let mut medians = Vec::new();
        for (at, launch) in launches.iter().enumerate() {
            let list = &mut times[s][at];
            list.sort();
            let median = list[list.len() / 2];
            medians.push(median);
            println!(
                "cold start to the first {}, {}: median {:>7.1} ms (min {:.1}, max {:.1}; {rounds} rounds)",
                first.name(),
                launch.name(),
                ms(median),
                ms(list[0]),
                ms(list[list.len() - 1]),
            );
        }
        println!(
            "{}: ratio {} / {}: {:.2}x; {:.1} ms later",
            first.name(),
            launches[1].name().trim(),
            launches[0].name().trim(),
            medians[1].as_secs_f64() / medians[0].as_secs_f64(),
            ms(medians[1].saturating_sub(medians[0])),
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The steps of a start, timed in one process.
fn phases(count: usize, first: First) {
    let started = Instant::now();
    let tools: Vec<_> = generated::tools(count)
        .collect::<Result<_, _>>()
        .expect("the generated tools build");
    let made = started.elapsed();
    for tool in tools {
        Registry::global().register(tool).expect("registers");
    }
    let registered = started.elapsed();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let port = free_port();
    let request = first.request(port);
    runtime.spawn(async move {
        let mcp = toolfunc::mcp::Server::new(Registry::global());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("the port is free");
        Server::new()
            .mount(Api::new(Registry::global()))
            .expect("the API mounts")
            .merge(mcp.router())
            .serve(listener)
            .await
            .expect("the server runs");
    });
    let serving = started.elapsed();
    let answered = loop {
        if ask(port, &request).is_some() {
            break started.elapsed();
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    let second_at = Instant::now();
    ask(port, &request).expect("a second answer");
    let second = second_at.elapsed();
    println!(
        "{count} tools: made {:.1} ms, registered +{:.1} ms, serving +{:.1} ms, first {} +{:.1} ms; a second {:.1} ms",
        ms(made),
        ms(registered.saturating_sub(made)),
        ms(serving.saturating_sub(registered)),
        first.name(),
        ms(answered.saturating_sub(serving)),
        ms(second)
    );
}
