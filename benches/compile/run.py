#!/usr/bin/env python3
"""The compile-time table and the binary sizes of benches/README.md.

Generates crates of N tool functions (five parameters each) in four variants:

* plain:    the functions alone, no macro (the floor);
* derives:  the same functions written as tools by hand, no macro: each takes its
            parameters as one struct deriving `Deserialize` + `JsonSchema`, with a
            function reading that struct from a `serde_json::Value` and one making
            its schema; what a typed tool costs before a framework adds anything;
* toolfunc: the same functions under `#[tool]` (or methods under `#[tool_service]`);
* rmcp:     the same functions as rmcp `#[tool]` methods of a `#[tool_router]` impl,
            each with the `Parameters<T>` struct (`Deserialize` + `JsonSchema`) that
            rmcp requires,

then times the compilation of each generated crate alone (its dependencies are built
first and not timed): `touch src/lib.rs`, then `cargo build` of that crate, with
`CARGO_INCREMENTAL=0`, in rounds that alternate the variants, and prints the medians.
"Generated code" is a variant's time less the plain crate's, as the `bon` crate
publishes for its builders.

Also times the incremental rebuild after one tool body of 100 is edited
(`CARGO_INCREMENTAL=1`, debug), builds small release binaries per feature set of
toolfunc (and `examples/server.rs`, and the same three tools on rmcp) to report their
sizes, and times the cold build of those small programs, dependencies included, into
an empty target folder, toolfunc's beside rmcp's (`--parts cold`).

Everything is made under target/compile-bench/ (never committed). Standard library
only: `python3 benches/compile/run.py` (about 30 minutes on 2 cores, most of it
building dependencies the first time), `--quick` for 10 and 100 tools in debug only.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "target" / "compile-bench"
TARGET = BENCH / "target"
TARGET_INCR = BENCH / "target-incr"

# rmcp as the workspace pins it (root Cargo.toml), with the features its macros need.
RMCP = '{ version = "3.11", default-features = false, features = ["macros", "server"] }'
SERDE = '{ version = "1.0.228", features = ["derive"] }'
SCHEMARS = '"1.0"'
# Every size binary asks tokio for the same features, so that tokio and the crates
# above it build once for all feature sets; what a binary does not call is not linked.
TOKIO = (
    '{ version = "1.47", features = ["rt-multi-thread", "macros", "net", "io-std", '
    '"io-util", "time", "sync", "signal"] }'
)

# The five parameters every generated tool takes: (name, type, doc).
PARAMS = [
    ("name", "String", "Whose line it is."),
    ("count", "i64", "How many times the line is said."),
    ("ratio", "f64", "A factor for the count."),
    ("loud", "bool", "Whether to shout."),
    ("tags", "Vec<String>", "Labels to append."),
]

VARIANTS = ["plain", "derives", "toolfunc", "rmcp"]


# --- generation ---------------------------------------------------------------


def body(i, indent):
    """A tool's body. `seed` is the literal that the incremental run edits."""
    pad = " " * indent
    return (
        f"{pad}let seed: i64 = {i};\n"
        f'{pad}let line = format!("{{seed}} {{name}} x{{}} {{}} {{}}", '
        f"count.saturating_mul(seed), ratio * 2.0, tags.join(\",\"));\n"
        f"{pad}if loud {{ line.to_uppercase() }} else {{ line }}\n"
    )


def plain_sig(i, receiver=False):
    params = ", ".join(f"{n}: {t}" for n, t, _ in PARAMS)
    recv = "&self, " if receiver else ""
    return f"pub fn tool_{i:04}({recv}{params}) -> String"


def doc(i):
    return f"/// Tool {i}: joins its inputs into one line.\n"


def gen_plain_fns(idx):
    out = []
    for i in idx:
        out.append(f"{doc(i)}{plain_sig(i)} {{\n{body(i, 4)}}}\n")
    return "\n".join(out)


def toolfunc_fn(i, indent, receiver=False):
    pad = " " * indent
    params = "".join(f"{pad}    /// {d}\n{pad}    {n}: {t},\n" for n, t, d in PARAMS)
    recv = f"{pad}    &self,\n" if receiver else ""
    attr = "" if receiver else f"{pad}#[tool]\n"
    return (
        f"{pad}/// Tool {i}: joins its inputs into one line.\n{attr}"
        f"{pad}pub fn tool_{i:04}(\n{recv}{params}{pad}) -> String {{\n"
        f"{body(i, indent + 4)}{pad}}}\n"
    )


def gen_toolfunc_fns(idx):
    return "use toolfunc::tool;\n\n" + "\n".join(toolfunc_fn(i, 0) for i in idx)


def rmcp_params_struct(i):
    fields = "".join(f"    /// {d}\n    pub {n}: {t},\n" for n, t, d in PARAMS)
    return (
        "#[derive(Deserialize, JsonSchema)]\n"
        f"pub struct Tool{i:04}Params {{\n{fields}}}\n"
    )


def rmcp_method(i):
    names = ", ".join(n for n, _, _ in PARAMS)
    return (
        f"    /// Tool {i}: joins its inputs into one line.\n"
        "    #[tool]\n"
        f"    pub fn tool_{i:04}(\n        &self,\n"
        f"        Parameters(Tool{i:04}Params {{ {names} }}): Parameters<Tool{i:04}Params>,\n"
        f"    ) -> String {{\n{body(i, 8)}    }}\n"
    )


RMCP_USES = (
    "use rmcp::handler::server::wrapper::Parameters;\n"
    "use rmcp::{tool, tool_router};\n"
    "use schemars::JsonSchema;\n"
    "use serde::Deserialize;\n\n"
)


def rmcp_server(struct, idx):
    structs = "\n".join(rmcp_params_struct(i) for i in idx)
    methods = "\n".join(rmcp_method(i) for i in idx)
    return (
        f"{structs}\n/// The tools' server.\n#[derive(Clone, Default)]\npub struct {struct};\n\n"
        f"#[tool_router(server_handler)]\nimpl {struct} {{\n{methods}}}\n"
    )


def gen_rmcp_fns(idx):
    return RMCP_USES + rmcp_server("Tools", idx)


DERIVES_USES = "use schemars::JsonSchema;\nuse serde::Deserialize;\n\n"


def derives_fn(i, indent, receiver=False):
    pad = " " * indent
    names = ", ".join(n for n, _, _ in PARAMS)
    recv = "&self, " if receiver else ""
    call = f"self.tool_{i:04}" if receiver else f"tool_{i:04}"
    args_recv = "&self, " if receiver else ""
    return (
        f"{pad}/// Tool {i}: joins its inputs into one line.\n"
        f"{pad}pub fn tool_{i:04}({recv}Tool{i:04}Params {{ {names} }}: Tool{i:04}Params) -> String {{\n"
        f"{body(i, indent + 4)}{pad}}}\n\n"
        f"{pad}/// Tool {i} called with JSON arguments.\n"
        f"{pad}pub fn tool_{i:04}_json({args_recv}args: serde_json::Value) -> Result<String, serde_json::Error> {{\n"
        f"{pad}    serde_json::from_value::<Tool{i:04}Params>(args).map(|p| {call}(p))\n{pad}}}\n\n"
        f"{pad}/// Tool {i}'s parameters schema.\n"
        f"{pad}pub fn tool_{i:04}_schema() -> schemars::Schema {{\n"
        f"{pad}    schemars::schema_for!(Tool{i:04}Params)\n{pad}}}\n"
    )


def gen_derives_fns(idx):
    structs = "\n".join(rmcp_params_struct(i) for i in idx)
    return DERIVES_USES + structs + "\n" + "\n".join(derives_fn(i, 0) for i in idx)


def gen_derives_svc(n):
    out = [DERIVES_USES]
    for s, idx in service_groups(n):
        structs = "\n".join(rmcp_params_struct(i) for i in idx)
        methods = "\n".join(derives_fn(i, 4, receiver=True) for i in idx)
        out.append(
            f"{structs}\n/// Service {s}.\n#[derive(Default)]\npub struct Service{s:02};\n\n"
            f"impl Service{s:02} {{\n{methods}}}\n"
        )
    return "\n".join(out)


# A service crate: SERVICES services of N / SERVICES methods each.
SERVICES = 10


def service_groups(n):
    per = n // SERVICES
    return [(s, range(s * per, (s + 1) * per)) for s in range(SERVICES)]


def gen_plain_svc(n):
    out = []
    for s, idx in service_groups(n):
        methods = "\n".join(
            f"    {doc(i)}    {plain_sig(i, receiver=True)} {{\n{body(i, 8)}    }}\n"
            for i in idx
        )
        out.append(
            f"/// Service {s}.\n#[derive(Default)]\npub struct Service{s:02};\n\n"
            f"impl Service{s:02} {{\n{methods}}}\n"
        )
    return "\n".join(out)


def gen_toolfunc_svc(n):
    out = ["use toolfunc::tool_service;\n"]
    for s, idx in service_groups(n):
        methods = "\n".join(toolfunc_fn(i, 4, receiver=True) for i in idx)
        out.append(
            f"/// Service {s}.\n#[derive(Default)]\npub struct Service{s:02};\n\n"
            f"/// Service {s}: ten tools as acts.\n#[tool_service]\n"
            f"impl Service{s:02} {{\n{methods}}}\n"
        )
    return "\n".join(out)


def gen_rmcp_svc(n):
    return RMCP_USES + "\n".join(rmcp_server(f"Service{s:02}", idx) for s, idx in service_groups(n))


def crate_name(kind, n, variant):
    return f"{variant}_{kind}_{n}"


def manifest(name, deps, extra=""):
    lines = "".join(f"{k} = {v}\n" for k, v in deps)
    return (
        f'[package]\nname = "{name}"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n'
        f"{extra}[dependencies]\n{lines}"
    )


def toolfunc_dep(features=None):
    path = json.dumps(str(ROOT / "toolfunc"))
    if features is None:
        return f"{{ path = {path} }}"
    return f"{{ path = {path}, features = {json.dumps(features)} }}"


def write_if_changed(path, text):
    """Writes `text` unless the file holds it already: an unchanged file keeps its
    mtime, so cargo does not rebuild what it need not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return
    path.write_text(text)


def gen_timing_crate(kind, n, variant):
    name = crate_name(kind, n, variant)
    deps = {
        "plain": [],
        "derives": [("serde", SERDE), ("serde_json", '"1.0"'), ("schemars", SCHEMARS)],
        "toolfunc": [("toolfunc", toolfunc_dep())],
        "rmcp": [("rmcp", RMCP), ("serde", SERDE), ("schemars", SCHEMARS)],
    }[variant]
    idx = range(n)
    src = {
        ("fn", "plain"): lambda: gen_plain_fns(idx),
        ("fn", "derives"): lambda: gen_derives_fns(idx),
        ("fn", "toolfunc"): lambda: gen_toolfunc_fns(idx),
        ("fn", "rmcp"): lambda: gen_rmcp_fns(idx),
        ("svc", "plain"): lambda: gen_plain_svc(n),
        ("svc", "derives"): lambda: gen_derives_svc(n),
        ("svc", "toolfunc"): lambda: gen_toolfunc_svc(n),
        ("svc", "rmcp"): lambda: gen_rmcp_svc(n),
    }[(kind, variant)]()
    header = f"//! {n} generated tool functions ({variant}, {kind}); made by benches/compile/run.py.\n\n"
    write_if_changed(BENCH / name / "Cargo.toml", manifest(name, deps))
    write_if_changed(BENCH / name / "src" / "lib.rs", header + src)
    return name


# The feature sets whose binaries are measured, by the size crate's feature names.
SIZE_SETS = ["core", "validate", "http", "mcp", "mcp-http", "nats", "jwt", "all"]

# The same three tools on rmcp's macros, served over stdio: the peer of the core
# program (rmcp has no registry to run them in process) and of `+mcp`.
RMCP_SIZE = (
    '{ version = "3.11", default-features = false, features = ["macros", "server", '
    '"transport-io"] }'
)

RMCP_SIZE_MAIN = r'''//! The three tools of `size_tools` on rmcp's macros, served over stdio (or, with
//! the `http` feature and an address, over streamable HTTP on axum). Made by
//! benches/compile/run.py to measure the same program on rmcp.

use rmcp::ServiceExt;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
pub struct AddParams {
    /// The left operand.
    pub a: f64,
    /// The right operand.
    pub b: f64,
}

#[derive(Deserialize, JsonSchema)]
pub struct GreetParams {
    /// Who to greet.
    pub name: String,
    /// Whether to say it politely.
    pub polite: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
pub struct WaitParams {
    /// How long to wait, in milliseconds.
    pub ms: u64,
}

/// The tools' server.
#[derive(Clone, Default)]
pub struct Tools;

#[tool_router(server_handler)]
impl Tools {
    /// Adds two numbers.
    #[tool]
    fn add(&self, Parameters(AddParams { a, b }): Parameters<AddParams>) -> String {
        (a + b).to_string()
    }

    /// Greets someone.
    #[tool]
    fn greet(&self, Parameters(GreetParams { name, polite }): Parameters<GreetParams>) -> String {
        if polite.unwrap_or(false) { format!("Good day, {name}.") } else { format!("Hi {name}!") }
    }

    /// Waits, then answers how long it waited.
    #[tool]
    async fn wait_ms(&self, Parameters(WaitParams { ms }): Parameters<WaitParams>) -> String {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        ms.to_string()
    }
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

async fn run() -> Result<(), Failure> {
    #[cfg(feature = "http")]
    if let Some(addr) = std::env::args().nth(1) {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpService, session::local::LocalSessionManager,
        };
        let service = StreamableHttpService::new(
            || Ok(Tools),
            LocalSessionManager::default().into(),
            Default::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind(addr).await?;
        axum::serve(listener, router).await?;
        return Ok(());
    }
    let service = Tools.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("no runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            std::process::ExitCode::FAILURE
        }
    }
}
'''


SIZE_MAIN = r'''//! A small program on toolfunc: three tools, run in process, and served over the
//! surfaces its features bring (chosen by the first argument). Made by
//! benches/compile/run.py to measure what each feature adds to a release binary.

use serde_json::json;
use toolfunc::{Registry, tool};

/// Adds two numbers.
#[tool]
fn add(
    /// The left operand.
    a: f64,
    /// The right operand.
    b: f64,
) -> f64 {
    a + b
}

/// Greets someone.
#[tool]
fn greet(
    /// Who to greet.
    name: String,
    /// Whether to say it politely.
    polite: Option<bool>,
) -> String {
    if polite.unwrap_or(false) { format!("Good day, {name}.") } else { format!("Hi {name}!") }
}

/// Waits, then answers how long it waited.
#[tool]
async fn wait_ms(
    /// How long to wait, in milliseconds.
    ms: u64,
) -> u64 {
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    ms
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

async fn run(mode: &str, arg: &str) -> Result<(), Failure> {
    match mode {
        #[cfg(feature = "http-server")]
        "http" => toolfunc::http::serve(arg, Registry::global()).await?,
        #[cfg(feature = "http")]
        "http-client" => {
            let remote = toolfunc::http::Client::connect(arg).await?;
            println!("{}", remote.run("add", json!({"a": 1, "b": 2})).await?);
        }
        #[cfg(feature = "mcp")]
        "mcp" => toolfunc::mcp::serve_stdio(Registry::global()).await?,
        #[cfg(feature = "mcp-http")]
        "mcp-http" => {
            let mcp = toolfunc::mcp::Server::new(Registry::global());
            let server = toolfunc::http::Server::new().merge(mcp.router());
            server.serve(tokio::net::TcpListener::bind(arg).await?).await?;
        }
        #[cfg(feature = "nats")]
        "nats" => {
            let worker = toolfunc::nats::Worker::builder(Registry::global()).connect(arg).await?;
            tokio::signal::ctrl_c().await?;
            worker.stop(std::time::Duration::from_secs(5)).await;
        }
        #[cfg(feature = "nats")]
        "nats-client" => {
            let client = toolfunc::nats::Client::connect(arg).await?;
            println!("{}", client.run("add", json!({"a": 1, "b": 2})).await?);
        }
        #[cfg(feature = "jwt")]
        "jwt" => {
            use toolfunc::auth::Authenticator as _;
            let jwt = toolfunc::auth::jwt::Jwt::discover(arg, "http://127.0.0.1:3000").await?;
            let token = std::env::var("TOKEN").unwrap_or_default();
            match jwt.authenticate(Some(&token)).await {
                Ok(identity) => println!("{identity:?}"),
                Err(err) => println!("refused: {err:?}"),
            }
        }
        _ => {
            let registry = Registry::global();
            println!("{}", registry.run("add", json!({"a": 1, "b": 2})).await?);
            println!("{}", registry.run("greet", json!({"name": arg})).await?);
            println!("{}", registry.run("wait_ms", json!({"ms": 1})).await?);
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let arg = args.next().unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("no runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&mode, &arg)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            std::process::ExitCode::FAILURE
        }
    }
}
'''


def gen_size_crates():
    # Each set's label is also the cfg the program tests: `all` turns every one on.
    features = (
        'validate = ["toolfunc/validate"]\n'
        'http-server = ["toolfunc/http-server"]\n'
        'http = ["http-server", "toolfunc/http"]\n'
        'mcp = ["toolfunc/mcp"]\n'
        'mcp-http = ["mcp", "http-server"]\n'
        'nats = ["toolfunc/nats"]\n'
        'jwt = ["toolfunc/jwt"]\n'
        'all = ["validate", "http", "mcp", "nats", "jwt", "toolfunc/rustls"]\n'
    )
    deps = [
        ("toolfunc", toolfunc_dep()),
        ("tokio", TOKIO),
        ("serde_json", '"1.0.150"'),
        ("serde", SERDE),
        ("schemars", SCHEMARS),
    ]
    write_if_changed(
        BENCH / "size_tools" / "Cargo.toml",
        manifest("size_tools", deps, f"[features]\n{features}\n"),
    )
    write_if_changed(BENCH / "size_tools" / "src" / "main.rs", SIZE_MAIN)
    rmcp_deps = [
        ("rmcp", RMCP_SIZE),
        ("tokio", TOKIO),
        ("serde", SERDE),
        ("schemars", SCHEMARS),
        ("axum", '{ version = "0.8", optional = true }'),
    ]
    rmcp_features = 'http = ["dep:axum", "rmcp/transport-streamable-http-server"]\n'
    write_if_changed(
        BENCH / "size_rmcp" / "Cargo.toml",
        manifest("size_rmcp", rmcp_deps, f"[features]\n{rmcp_features}\n"),
    )
    write_if_changed(BENCH / "size_rmcp" / "src" / "main.rs", RMCP_SIZE_MAIN)
    # examples/server.rs as the root package builds it: toolfunc with the root's
    # features, the example's own dependencies.
    server_deps = [
        ("toolfunc", toolfunc_dep(
            ["validate", "http", "mcp", "rustls", "nats", "jwt", "mcp-client", "openapi-client"]
        )),
        ("tokio", TOKIO),
        ("serde_json", '"1.0.150"'),
        ("serde", SERDE),
        ("schemars", SCHEMARS),
        ("futures", '{ version = "0.3.30", default-features = false, features = ["std"] }'),
    ]
    server_bin = json.dumps(str(ROOT / "examples" / "server.rs"))
    write_if_changed(
        BENCH / "size_server" / "Cargo.toml",
        manifest(
            "size_server",
            server_deps,
            f'[[bin]]\nname = "size_server"\npath = {server_bin}\n\n',
        ),
    )


def generate(plan):
    for kind, n in plan:
        for v in VARIANTS:
            gen_timing_crate(kind, n, v)
    gen_size_crates()
    # Written every time (building them is `--parts coldstart`'s): every member of
    # the workspace must exist.
    gen_coldstart_crates()
    # Every crate ever generated stays a member, so that runs with other counts can
    # share the workspace.
    members = json.dumps([f"{v}_*" for v in VARIANTS] + ["size_*", "coldstart_*"])
    write_if_changed(
        BENCH / "Cargo.toml",
        "# Made by benches/compile/run.py; a workspace of its own.\n"
        f'[workspace]\nresolver = "3"\nmembers = {members}\n',
    )
    # The root's lockfile: the same versions of every crate the root resolves.
    lock = BENCH / "Cargo.lock"
    if not lock.exists():
        shutil.copy(ROOT / "Cargo.lock", lock)


# --- measuring ----------------------------------------------------------------


def cargo_env(target, incremental):
    env = dict(os.environ)
    env["CARGO_TARGET_DIR"] = str(target)
    env["CARGO_INCREMENTAL"] = "1" if incremental else "0"
    env["CARGO_TERM_COLOR"] = "never"
    for var in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_WRAPPER"):
        env.pop(var, None)
    return env


def cargo_timed(args, target=TARGET, incremental=False):
    """Runs `cargo build ARGS` in the bench workspace; returns its wall time and
    what cargo printed on stderr."""
    cmd = ["cargo", "build", *args]
    start = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=BENCH, env=cargo_env(target, incremental), capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return elapsed, done.stderr


def cargo_build(args, target=TARGET, incremental=False):
    """Runs `cargo build --quiet ARGS` in the bench workspace; returns its wall time."""
    return cargo_timed(["--quiet", *args], target, incremental)[0]


def touch(path):
    now = time.time()
    os.utime(path, (now, now))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def time_full(plan, profiles, reps):
    """Median seconds of each (kind, n, variant, profile), rounds alternating."""
    times = {}
    for profile in profiles:
        flags = ["--release"] if profile == "release" else []
        for kind, n in plan:
            for v in VARIANTS:
                name = crate_name(kind, n, v)
                log(f"warming {name} ({profile})")
                cargo_build(["-p", name, *flags])
        for r in range(reps):
            for kind, n in plan:
                # Each round starts with another variant.
                order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
                for v in order:
                    name = crate_name(kind, n, v)
                    touch(BENCH / name / "src" / "lib.rs")
                    t = cargo_build(["-p", name, *flags])
                    times.setdefault((kind, n, v, profile), []).append(t)
                    log(f"round {r + 1}/{reps} {profile} {name}: {t:.2f} s")
    return {k: statistics.median(v) for k, v in times.items()}, times


def time_incremental(n, reps):
    """Median seconds of an incremental debug rebuild of each variant of `n`
    functions, keyed `(how, variant)`: after `touch` of its source (`touch`), and
    after one tool body changes (`edit`: the `seed` literal of the middle tool)."""
    times = {}
    edited = n // 2
    originals = {}
    for v in VARIANTS:
        name = crate_name("fn", n, v)
        path = BENCH / name / "src" / "lib.rs"
        originals[path] = path.read_text()
        log(f"warming {name} (debug, incremental)")
        cargo_build(["-p", name], target=TARGET_INCR, incremental=True)
    try:
        for r in range(reps):
            order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
            for v in order:
                name = crate_name("fn", n, v)
                path = BENCH / name / "src" / "lib.rs"
                touch(path)
                t = cargo_build(["-p", name], target=TARGET_INCR, incremental=True)
                times.setdefault(("touch", v), []).append(t)
                log(f"round {r + 1}/{reps} incremental after touch {name}: {t:.2f} s")
                old = f"let seed: i64 = {edited};"
                new = f"let seed: i64 = {edited + 1000 * (r + 1)};"
                text = originals[path]
                if old not in text:
                    raise SystemExit(f"{path}: no `{old}` to edit")
                path.write_text(text.replace(old, new, 1))
                t = cargo_build(["-p", name], target=TARGET_INCR, incremental=True)
                times.setdefault(("edit", v), []).append(t)
                log(f"round {r + 1}/{reps} incremental after an edit {name}: {t:.2f} s")
    finally:
        for path, text in originals.items():
            path.write_text(text)
    return {k: statistics.median(v) for k, v in times.items()}


def stripped_size(path):
    strip = shutil.which("strip")
    if strip is None:
        return None
    out = path.with_suffix(".stripped")
    subprocess.run([strip, "-o", str(out), str(path)], check=True)
    size = out.stat().st_size
    out.unlink()
    return size


def measure_sizes():
    sizes = {}
    out_dir = BENCH / "sizes"
    out_dir.mkdir(exist_ok=True)
    for label in SIZE_SETS:
        log(f"building the {label} binary (release)")
        features = [] if label == "core" else ["--features", label]
        cargo_build(["--release", "-p", "size_tools", *features])
        kept = out_dir / f"size_tools-{label}"
        shutil.copy(TARGET / "release" / "size_tools", kept)
        sizes[label] = (kept.stat().st_size, stripped_size(kept))
    for label, features in (("rmcp", []), ("rmcp-http", ["--features", "http"])):
        log(f"building the same tools on rmcp ({label}, release)")
        cargo_build(["--release", "-p", "size_rmcp", *features])
        kept = out_dir / f"size_{label}"
        shutil.copy(TARGET / "release" / "size_rmcp", kept)
        sizes[label] = (kept.stat().st_size, stripped_size(kept))
    log("building examples/server.rs (release)")
    cargo_build(["--release", "-p", "size_server"])
    kept = out_dir / "server"
    shutil.copy(TARGET / "release" / "size_server", kept)
    sizes["server"] = (kept.stat().st_size, stripped_size(kept))
    return sizes


# --- cold start of macro tools -----------------------------------------------

COLDSTART_SIZES = [10, 10_000]

COLDSTART_MAIN = r'''//! N `#[tool]` functions in the global registry, served over HTTP RPC and MCP on
//! one port (the first argument), as `benches/cold_start.rs` serves its generated
//! tools. Made by benches/compile/run.py for `cargo bench --bench cold_start --
//! binaries SMALL LARGE`.

mod tools;

use toolfunc::http::{Api, Server};
use toolfunc::Registry;

fn main() -> std::process::ExitCode {
    let port: u16 = match std::env::args().nth(1).map(|p| p.parse()) {
        Some(Ok(port)) => port,
        _ => {
            eprintln!("usage: coldstart PORT");
            return std::process::ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("no runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async move {
        let api = Api::new(Registry::global()).prefix("/api");
        let mcp = toolfunc::mcp::Server::new(Registry::global());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let server = Server::new().mount(api)?.merge(mcp.router());
        server.serve(listener).await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            std::process::ExitCode::FAILURE
        }
    }
}
'''


def gen_coldstart_crates():
    """`coldstart_N`: N `#[tool]` functions (100 to a module) and the server."""
    for n in COLDSTART_SIZES:
        name = f"coldstart_{n}"
        deps = [
            ("toolfunc", toolfunc_dep(["http-server", "mcp"])),
            ("tokio", TOKIO),
        ]
        write_if_changed(BENCH / name / "Cargo.toml", manifest(name, deps))
        write_if_changed(BENCH / name / "src" / "main.rs", COLDSTART_MAIN)
        modules = []
        for m, start in enumerate(range(0, n, 100)):
            idx = range(start, min(start + 100, n))
            write_if_changed(
                BENCH / name / "src" / "tools" / f"part_{m:03}.rs",
                gen_toolfunc_fns(idx),
            )
            modules.append(f"mod part_{m:03};\n")
        write_if_changed(
            BENCH / name / "src" / "tools" / "mod.rs",
            f"//! {n} generated `#[tool]` functions.\n\n" + "".join(modules),
        )


def time_coldstart(rounds):
    """Builds the two servers (release) and runs the cold-start comparison on them."""
    bins = []
    for n in COLDSTART_SIZES:
        log(f"building {n:,} #[tool] functions (release)")
        t = cargo_build(["--release", "-p", f"coldstart_{n}"])
        log(f"  {t:.0f} s")
        bins.append(str(TARGET / "release" / f"coldstart_{n}"))
    cmd = ["cargo", "bench", "--bench", "cold_start", "--", "binaries", *bins, "rounds", str(rounds)]
    log(" ".join(cmd))
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit("the cold-start comparison failed")
    return done.stdout


# The cold builds timed side by side: (label, package, cargo flags).
COLD_PAIRS = [
    (
        ("toolfunc, default features", "size_tools", []),
        ("rmcp `macros` + `server` (+ `transport-io`)", "size_rmcp", []),
    ),
    (
        ("toolfunc `http-server` + `mcp`", "size_tools", ["--features", "http-server,mcp"]),
        ("rmcp + streamable HTTP server + axum", "size_rmcp", ["--features", "http"]),
    ),
]


def time_cold(profiles, reps):
    """Seconds and crates compiled of each program's build into an empty target
    folder, dependencies included; the two of a pair alternate."""
    results = {}
    cold = BENCH / "target-cold"
    for profile in profiles:
        flags = ["--release"] if profile == "release" else []
        for pair in COLD_PAIRS:
            for rep in range(reps):
                for label, package, extra in pair:
                    shutil.rmtree(cold, ignore_errors=True)
                    log(f"cold build {rep + 1}/{reps}: {label} ({profile})")
                    elapsed, printed = cargo_timed([*flags, "-p", package, *extra], cold)
                    crates = sum(
                        1 for line in printed.splitlines() if line.strip().startswith("Compiling ")
                    )
                    times, _ = results.setdefault((profile, label), ([], crates))
                    times.append(elapsed)
    shutil.rmtree(cold, ignore_errors=True)
    return {k: (statistics.median(t), n) for k, (t, n) in results.items()}


# --- the tables ---------------------------------------------------------------


def secs(t):
    return f"{t:.2f} s"


def ratio(a, b):
    return f"{a / b:.2f}×" if b > 0 else "n/a"


def mib(n):
    return f"{n / (1 << 20):.1f} MiB"


def print_cold(cold, profiles):
    print()
    print("| cold build (dependencies included) | profile | crates | seconds | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for profile in profiles:
        for (ours, _, _), (theirs, _, _) in COLD_PAIRS:
            if (profile, ours) not in cold:
                continue
            (t1, n1), (t2, n2) = cold[(profile, ours)], cold[(profile, theirs)]
            print(
                f"| {ours} vs {theirs} | {profile} | {n1} vs {n2} | "
                f"{t1:.1f} vs {t2:.1f} | {ratio(t1, t2)} |"
            )


def print_tables(plan, profiles, med, incr, sizes, reps):
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    print(
        f"{rustc}; {os.cpu_count()} cores ({platform.machine()}), load average "
        f"{os.getloadavg()[1]:.1f} at the end; medians of {reps}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
    )
    if plan and profiles:
        print(
            "| tools | profile | plain fns | derives only | toolfunc | rmcp | "
            "derives generated | toolfunc generated | rmcp generated | "
            "toolfunc / rmcp (generated) |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for profile in profiles:
        for kind, n in plan:
            plain, dv, tf, rm = (med[(kind, n, v, profile)] for v in VARIANTS)
            what = f"{n:,} `#[tool]` fns" if kind == "fn" else (
                f"{n:,} methods, {SERVICES} `#[tool_service]`s"
            )
            gdv, gtf, grm = dv - plain, tf - plain, rm - plain
            print(
                f"| {what} | {profile} | {secs(plain)} | {secs(dv)} | {secs(tf)} | {secs(rm)} | "
                f"{secs(gdv)} | {secs(gtf)} | {secs(grm)} | {ratio(gtf, grm)} |"
            )
    if incr:
        print()
        print(
            "| incremental debug rebuild (`CARGO_INCREMENTAL=1`) | plain | derives only | "
            "toolfunc | rmcp | toolfunc / rmcp | toolfunc / rmcp (over derives only) |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for n, by in sorted(incr.items()):
            for how, what in (("touch", "after `touch`"), ("edit", "after one tool body edited")):
                pl, dv, tf, rm = (by[(how, v)] for v in ("plain", "derives", "toolfunc", "rmcp"))
                print(
                    f"| {n:,} tools, {what} | {secs(pl)} | {secs(dv)} | {secs(tf)} | {secs(rm)} "
                    f"| {ratio(tf, rm)} | {ratio(tf - dv, rm - dv)} |"
                )
    if sizes:
        print()
        print(
            "| release binary | size | stripped | added to core (stripped) | "
            "vs rmcp (stripped) |"
        )
        print("| --- | --- | --- | --- | --- |")
        core = sizes["core"][1] or sizes["core"][0]

        def stripped_of(label):
            size, stripped = sizes.get(label, (0, None))
            return stripped or size

        for label, (size, stripped) in sizes.items():
            what = {
                "core": "core only (default features, three tools, run in process)",
                "mcp": "`+mcp`, served over stdio",
                "mcp-http": "`+mcp,http-server`, MCP served over streamable HTTP",
                "all": "all: `validate`, `http`, `mcp`, `nats`, `jwt`, `rustls`",
                "rmcp": "the same three tools on rmcp 3.11 (`macros`, `server`, "
                "`transport-io`), served over stdio",
                "rmcp-http": "the same on rmcp 3.11 with `transport-streamable-http-server` "
                "and axum 0.8, served over streamable HTTP",
                "server": "`examples/server.rs` (the root's features)",
            }.get(label, f"`+{label}`")
            s = stripped or size
            # Each program against rmcp's nearest: the streamable-HTTP server for
            # MCP over HTTP, the stdio server for the rest (rmcp cannot run a
            # tool without serving it).
            peer = stripped_of("rmcp-http" if label == "mcp-http" else "rmcp")
            added = "" if label in ("core", "rmcp", "rmcp-http") else f"+{mib(s - core)}"
            versus = ratio(s, peer) if peer and not label.startswith("rmcp") else ""
            print(
                f"| {what} | {mib(size)} | {mib(stripped) if stripped else 'n/a'} | {added} "
                f"| {versus} |"
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 and 100 tools, debug only, no sizes")
    ap.add_argument("--reps", type=int, default=3, help="measurements per cell (median taken)")
    ap.add_argument(
        "--tools",
        default="10,100,1000",
        help="comma-separated counts of #[tool] functions (the service crate has 100)",
    )
    ap.add_argument("--profiles", default="debug,release", help="debug, release or both")
    ap.add_argument(
        "--parts",
        default="full,incremental,sizes,cold",
        help="comma-separated: full (the table), incremental, sizes, cold, coldstart "
        "(10 and 10,000 #[tool] functions, served from a cold start; not in the default)",
    )
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    parts = set(args.parts.split(","))
    unknown = parts - {"full", "incremental", "sizes", "cold", "coldstart"}
    if unknown:
        ap.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    profiles = args.profiles.split(",")
    if not profiles or set(profiles) - {"debug", "release"}:
        ap.error("--profiles takes debug, release or both")
    try:
        counts = [int(n) for n in args.tools.split(",")]
    except ValueError:
        ap.error("--tools takes numbers, e.g. 10,100")
    if any(n < 1 for n in counts):
        ap.error("--tools: each count must be at least 1")
    if args.quick:
        counts, profiles = [n for n in counts if n <= 100], ["debug"]
        parts -= {"sizes", "cold", "coldstart"}
    plan = [("fn", n) for n in counts]
    # The service variant: 100 methods over SERVICES services.
    plan.insert(min(2, len(plan)), ("svc", 100))
    if "incremental" in parts and not any(kind == "fn" and n >= 100 for kind, n in plan):
        plan.append(("fn", 100))
    generate(plan)
    med, incr, sizes = {}, {}, {}
    if "full" in parts:
        med, _ = time_full(plan, profiles, args.reps)
    if "incremental" in parts:
        # The loop a user lives in, at 100 tools and more (10 is too small to tell).
        for kind, n in plan:
            if kind == "fn" and n >= 100:
                incr[n] = time_incremental(n, args.reps)
    if "sizes" in parts:
        sizes = measure_sizes()
    cold = time_cold(profiles, args.reps) if "cold" in parts else {}
    coldstart = time_coldstart(31) if "coldstart" in parts else ""
    timed = [k for k in plan if "full" in parts] if med else []
    print_tables(timed, profiles if med else [], med, incr, sizes, args.reps)
    if cold:
        print_cold(cold, profiles)
    if coldstart:
        print()
        print(coldstart)


if __name__ == "__main__":
    main()
