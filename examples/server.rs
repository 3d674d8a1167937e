//! The demo catalog over HTTP: `cargo run --example server`.
//!
//! Serves `add`, the `greeter` service, the `users` REST resource, the streaming
//! `countdown`, `fail`, `sleep` and the background `report` under
//! `http://127.0.0.1:3000/api` (with the try-it page at `/api/docs`), and to MCP
//! clients at `http://127.0.0.1:3000/mcp`, and prints how to call them.
//! `--addr HOST:PORT` (or `PORT`) and `--prefix /path` change where.
//!
//! `--extra-tools N` adds N generated tools (distinct names, a sentence of
//! description, five typed parameters each; `demo/generated.rs`), to try discovery's
//! search (`?q=`) on a large catalogue.
//!
//! `--auth-issuer URL --auth-audience URI` make both an OAuth 2.1 resource server:
//! the issuer's keys are found through its `/.well-known/oauth-authorization-server`
//! or `/.well-known/openid-configuration`, and every `/api` and `/mcp` request then
//! needs a bearer JWT of that issuer for that audience; the `users` service's writes
//! (`post`, `put`, `delete`, `$promote`) need the scope `users:write` as well.
//!
//! `--mcp-max-sessions N`, `--mcp-max-sessions-per-caller N` and
//! `--mcp-session-idle SECONDS` set the MCP endpoint's cap on open sessions, on one
//! caller's (its verified subject, else its client label; all but a tenth of the
//! cap unless set) and how long an idle one lives (`mcp::Server::max_sessions`,
//! `max_sessions_per_caller`, `session_idle_lifetime`).
//!
//! `--cors-origin ORIGIN` (repeatable) lets pages of that origin call `/api` from
//! the browser (`Api::cors_origins`): their CORS preflights are answered, and no
//! other origin's; `examples/browser/` is such a page.
//!
//! `--mount NAME=SOURCE` (repeatable) mounts the tools of another server beside the
//! demo's, each as `NAME_TOOL` (`toolfunc::mount`): `mcp+stdio:COMMAND ARG...` (an
//! MCP server started as a child process; the words after `--mount` up to the next
//! flag are its arguments, quoted or not), `mcp+http(s)://…/mcp`, `openapi+http(s)://…/openapi.json` or
//! `openapi+file:PATH` (an OpenAPI document's operations). A source that cannot be
//! read makes the server exit naming the mount; with `--mount-optional` it is
//! left out, and the server says why. On Ctrl-C or SIGTERM the mounted MCP
//! servers are ended before the server exits.
//!
//! `--metrics` serves per-tool metrics (calls, errors by code, durations, calls in
//! flight, the ledger's entries, the MCP sessions open) as Prometheus text at `http://127.0.0.1:3000/metrics`;
//! without it that path is 404.

mod demo;
#[path = "demo/generated.rs"]
mod generated;

use std::sync::Arc;
use std::time::Duration;

use toolfunc::Registry;
use toolfunc::auth::jwt::Jwt;
use toolfunc::http::{Api, Server};
use toolfunc::layer::Metrics;

fn usage() -> ! {
    eprintln!(
        "usage: server [--addr HOST:PORT] [--prefix /api] [--extra-tools N] \
         [--auth-issuer URL --auth-audience URI] [--metrics] \
         [--mcp-max-sessions N] [--mcp-max-sessions-per-caller N] \
         [--mcp-session-idle SECONDS] [--cors-origin ORIGIN]... \
         [--mount NAME=SOURCE]... [--mount-optional]\n\
         (PORT in the environment also sets the port)"
    );
    std::process::exit(2)
}

/// A flag's value, or the usage text.
fn parsed<T: std::str::FromStr>(value: Option<String>) -> T {
    value
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| usage())
}

/// The MCP endpoint's session settings (`--mcp-max-sessions`,
/// `--mcp-max-sessions-per-caller`, `--mcp-session-idle`).
struct McpSessions {
    max: usize,
    per_caller: Option<usize>,
    idle: Duration,
}

impl Default for McpSessions {
    fn default() -> Self {
        Self {
            max: toolfunc::mcp::DEFAULT_MAX_SESSIONS,
            per_caller: None,
            idle: toolfunc::mcp::DEFAULT_SESSION_IDLE_LIFETIME,
        }
    }
}

impl McpSessions {
    fn apply(&self, mcp: toolfunc::mcp::Server) -> toolfunc::mcp::Server {
        let mcp = mcp.max_sessions(self.max).session_idle_lifetime(self.idle);
        match self.per_caller {
            Some(per_caller) => mcp.max_sessions_per_caller(per_caller),
            None => mcp,
        }
    }
}

/// With `--metrics`: counts every call of the global registry's tools, from every
/// surface, and the ledger's entries; `api` serves them at `/metrics`.
fn serve_metrics(
    api: Api,
    metrics: Option<&Metrics>,
    ledger: &toolfunc::ledger::Ledger,
    addr: &str,
) -> std::io::Result<Api> {
    let Some(metrics) = metrics else {
        return Ok(api);
    };
    println!("metrics (Prometheus text) at http://{addr}/metrics");
    let _ = Registry::global().clone().layer(metrics.clone());
    let entries = ledger.clone();
    metrics
        .gauge(
            "toolfunc.ledger.entries",
            "Calls the ledger tracks, running or finished.",
            move || u64::try_from(entries.len()).unwrap_or(u64::MAX),
        )
        .map_err(std::io::Error::other)?;
    Ok(api.metrics(metrics.clone()))
}

/// With `--metrics`: the MCP sessions open, read at each scrape.
fn gauge_sessions(metrics: Option<&Metrics>, mcp: &toolfunc::mcp::Server) -> std::io::Result<()> {
    let Some(metrics) = metrics else {
        return Ok(());
    };
    let open = mcp.clone();
    metrics
        .gauge(
            "toolfunc.mcp.sessions.open",
            "MCP sessions open, parked ones included.",
            move || u64::try_from(open.open_sessions()).unwrap_or(u64::MAX),
        )
        .map_err(std::io::Error::other)
}

/// The command line, read.
struct Flags {
    addr: String,
    prefix: String,
    issuer: Option<String>,
    audience: Option<String>,
    extra: usize,
    sessions: McpSessions,
    metrics: Option<Metrics>,
    cors: Vec<String>,
    mounts: Vec<String>,
    mounts_optional: bool,
}

impl Flags {
    /// Reads the flags, or prints the usage and exits.
    fn read() -> Self {
        let mut flags = Self {
            addr: format!(
                "127.0.0.1:{}",
                std::env::var("PORT").unwrap_or_else(|_| "3000".into())
            ),
            prefix: "/api".to_owned(),
            issuer: None,
            audience: None,
            extra: 0,
            sessions: McpSessions::default(),
            metrics: None,
            cors: Vec::new(),
            mounts: Vec::new(),
            mounts_optional: false,
        };
        let mut args = std::env::args().skip(1);
        // Whether the words that follow go on the last `--mount`'s command line.
        let mut in_mount = false;
        while let Some(arg) = args.next() {
            if in_mount && !arg.starts_with("--") {
                if let Some(last) = flags.mounts.last_mut() {
                    push_word(last, &arg);
                }
                continue;
            }
            in_mount = arg == "--mount";
            let mut value = || args.next().unwrap_or_else(|| usage());
            match arg.as_str() {
                "--addr" => flags.addr = value(),
                "--prefix" => flags.prefix = value(),
                "--extra-tools" => flags.extra = parsed(Some(value())),
                "--mcp-max-sessions" => flags.sessions.max = parsed(Some(value())),
                "--mcp-max-sessions-per-caller" => {
                    flags.sessions.per_caller = Some(parsed(Some(value())));
                }
                "--mcp-session-idle" => {
                    flags.sessions.idle = Duration::from_secs(parsed(Some(value())));
                }
                "--auth-issuer" => flags.issuer = Some(value()),
                "--auth-audience" => flags.audience = Some(value()),
                "--metrics" => flags.metrics = Some(Metrics::new()),
                "--cors-origin" => flags.cors.push(value()),
                "--mount" => flags.mounts.push(value()),
                "--mount-optional" => flags.mounts_optional = true,
                _ => usage(),
            }
        }
        flags
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let Flags {
        addr,
        prefix,
        issuer,
        audience,
        extra,
        sessions,
        metrics,
        cors,
        mounts,
        mounts_optional,
    } = Flags::read();
    let auth = match (issuer, audience) {
        (None, None) => None,
        (Some(issuer), Some(audience)) => match Jwt::discover(&issuer, &audience).await {
            Ok(jwt) => Some(Arc::new(jwt)),
            Err(err) => {
                eprintln!("cannot use the issuer {issuer}: {err}");
                std::process::exit(1)
            }
        },
        _ => usage(),
    };
    // The catalog's #[tool] functions and Default #[tool_service]s are in the global
    // registry already.
    let registered: Result<Vec<_>, _> = generated::tools(extra)
        .map(|tool| tool.and_then(|tool| Registry::global().register(tool)))
        .collect();
    if let Err(err) = registered {
        eprintln!("cannot add a generated tool: {err}");
        std::process::exit(1)
    }
    let mounted = mount_all(&mounts, mounts_optional).await;
    // One ledger for both surfaces: a background call started over HTTP or as an
    // MCP task is listed in one place.
    let ledger = toolfunc::ledger::Ledger::new(Registry::global());
    let mut api = Api::new(Registry::global())
        .prefix(prefix)
        .docs(true)
        .ledger(ledger.clone())
        .cors_origins(cors.iter().cloned());
    api = serve_metrics(api, metrics.as_ref(), &ledger, &addr)?;
    if let Some(auth) = &auth {
        api = api.authenticate(Arc::clone(auth));
    }
    let base = format!("http://{addr}{}", api.path());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let mcp = format!("http://{addr}{}", toolfunc::mcp::PATH);
    let mut server = Server::new().mount(api).map_err(std::io::Error::other)?;
    if base != mcp {
        let mut mcp = toolfunc::mcp::Server::new(Registry::global()).ledger(ledger);
        if let Some(auth) = &auth {
            mcp = mcp.authenticate(Arc::clone(auth));
        }
        mcp = sessions.apply(mcp);
        gauge_sessions(metrics.as_ref(), &mcp)?;
        server = server.merge(mcp.router());
    }
    println!("toolfunc demo server listening on {base}");
    if !cors.is_empty() {
        println!("pages of {} may call it from the browser", cors.join(", "));
    }
    if extra > 0 {
        println!(
            "with {extra} generated tools besides the demo's: try `curl '{base}?q=refund+invoice'`"
        );
    }
    if let Some(auth) = &auth {
        println!(
            "every call needs `-H 'Authorization: Bearer <token>'`: a JWT of {} for {}",
            auth.issuer(),
            auth.audience()
        );
    }
    print_calls(&base, &mcp);
    let ended = tokio::select! {
        outcome = server.serve(listener) => outcome,
        () = shutdown() => Ok(()),
    };
    for mount in mounted {
        mount.close().await;
    }
    ended
}

/// Adds `word` to a command line, quoted as a shell would need it to stay one
/// word (`mcp+stdio:` splits the line again).
fn push_word(line: &mut String, word: &str) {
    line.push(' ');
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        line.push_str(word);
    } else {
        line.push('\'');
        line.push_str(&word.replace('\'', "'\\''"));
        line.push('\'');
    }
}

/// `--mount NAME=SOURCE`: each source's tools in the global registry as
/// `NAME_TOOL`. One that cannot be read ends the process, or with
/// `--mount-optional` is left out with a word on why.
async fn mount_all(mounts: &[String], optional: bool) -> Vec<toolfunc::mount::Mounted> {
    let mut mounted = Vec::new();
    for mount in mounts {
        let Some((name, source)) = mount.split_once('=') else {
            eprintln!("--mount takes NAME=SOURCE, not `{mount}`");
            std::process::exit(2)
        };
        match Registry::global().mount(name, source).await {
            Ok(done) => {
                println!("mounted `{name}` ({source}): {}", done.names().join(", "));
                mounted.push(done);
            }
            Err(err) if optional => {
                eprintln!("left out the mount `{name}`: {err}");
            }
            Err(err) => {
                eprintln!("cannot mount `{name}`: {err}");
                std::process::exit(1)
            }
        }
    }
    mounted
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// How to call the demo: a command per kind of call.
fn print_calls(base: &str, mcp: &str) {
    println!();
    println!("  open {base}/docs in a browser                        # try every tool");
    println!("  curl {base}                                          # discovery");
    println!("  curl '{base}?q=add+numbers&limit=5'                  # search discovery");
    println!("  curl {base}/openapi.json                             # OpenAPI 3.1");
    println!("  curl --json '{{\"a\":1,\"b\":2}}' {base}/add                # 3.0");
    println!("  curl --json '{{\"act\":\"$hello\",\"name\":\"Ann\"}}' {base}/greeter");
    println!("  curl {base}/users                                    # list");
    println!("  curl {base}/users/1                                  # get");
    println!("  curl --json '{{\"val\":{{\"name\":\"Carol\"}}}}' {base}/users     # post");
    println!("  curl -X PUT --json '{{\"val\":{{\"name\":\"Alicia\"}}}}' {base}/users/1");
    println!("  curl -X DELETE {base}/users/2");
    println!("  curl -N --json '{{\"count\":3,\"stream\":true}}' {base}/countdown  # NDJSON");
    println!("  curl --json '{{}}' {base}/fail                          # 500");
    println!("  curl --json '{{\"ms\":500}}' {base}/sleep");
    println!("  curl --json '{{\"code\":\"x=1\"}}' {base}/_prompts/review     # a prompt");
    println!("  curl '{base}/_resources/read?uri=demo://readme'      # a resource");
    println!(
        "  curl -i --json '{{\"ms\":3000}}' {base}/report           # 202: poll {base}/rpcTask/<req-id>"
    );
    println!();
    println!(
        "and to MCP clients (streamable HTTP) at {mcp}: e.g. npx @modelcontextprotocol/inspector"
    );
}
