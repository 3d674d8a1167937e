//! The client in the browser: `examples/browser`, the Rust `http::Client` built as
//! WebAssembly (its `build.sh`: Debian's wasm32 standard library, `wasm-bindgen`),
//! against the example server.
//!
//! - In Node (`interop/browser_node.mjs`), whose `fetch` it calls as a page's: run,
//!   a stream read item by item, the typed `UsersClient`, `NOT_FOUND`,
//!   `ARGUMENTS` with its path, a service's own error, a background call polled to
//!   its answer, a timeout kept on the page's timers, a prompt, a resource, and the
//!   module's own `#[tool]`s (a `local` one awaiting a JavaScript promise among
//!   them) run by name and exported for a model.
//! - In headless Chromium (`interop/browser_page.mjs`, playwright-core):
//!   `index.html` served from an origin the server names with `--cors-origin`
//!   shows `add`'s 3, the countdown, Alice, the errors and its own tool's answer;
//!   the same page from an origin not named is refused by the browser.

#[path = "support/interop.rs"]
mod interop;
#[path = "support/process.rs"]
mod process;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::process::Command;
use toolfunc::http::axum;

/// How long the example server may take to say it listens.
const LIMIT: Duration = Duration::from_secs(60);

/// The browser example's folder.
fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/browser")
}

/// `examples/browser/pkg/`, built once per test process by `build.sh` into
/// `<target>/browser` (the wasm build and its `wasm-bindgen` are kept there).
fn built() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("the test binary has a path");
            let target = exe
                .ancestors()
                .nth(3)
                .expect("test binaries live in <target>/<profile>/deps")
                .join("browser");
            let dir = example_dir();
            let out = std::process::Command::new("bash")
                .arg(dir.join("build.sh"))
                .env("CARGO_TARGET_DIR", &target)
                .output()
                .expect("bash runs build.sh");
            assert!(
                out.status.success(),
                "examples/browser/build.sh failed (it needs Debian's rustc-web, cargo-web, \
                 rust-web-src, libstd-rust-web-dev and lld-22; .ci/run installs them)\n\
                 --- stdout\n{}\n--- stderr\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            dir.join("pkg")
        })
        .clone()
}

/// A free loopback port.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("bound").port()
}

/// The example server on a free port, with `args`, once it says it listens; its
/// API's URL.
async fn example_server(args: &[&str]) -> (process::Running, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let mut server = process::Running::start(
        Command::new(process::example("server"))
            .args(["--addr", &addr])
            .args(args)
            .stderr(std::process::Stdio::piped()),
        "the example server",
    );
    server
        .until_prefix("toolfunc demo server listening", LIMIT)
        .await;
    (server, format!("http://{addr}/api"))
}

/// Serves the browser example's files (the page and `pkg/web/`) on `listener`.
fn serve_page(listener: TcpListener) {
    async fn file(uri: axum::http::Uri) -> axum::response::Response {
        let path = uri.path().trim_start_matches('/');
        let path = if path.is_empty() { "index.html" } else { path };
        let kind = match Path::new(path).extension().and_then(|e| e.to_str()) {
            Some("html") => "text/html; charset=utf-8",
            Some("js") => "text/javascript",
            Some("wasm") => "application/wasm",
            _ => "application/octet-stream",
        };
        let allowed = path == "index.html" || path.starts_with("pkg/web/");
        match std::fs::read(example_dir().join(path)) {
            Ok(bytes) if allowed && !path.contains("..") => axum::response::Response::builder()
                .header("content-type", kind)
                .body(axum::body::Body::from(bytes))
                .expect("a response"),
            _ => axum::response::Response::builder()
                .status(404)
                .body(axum::body::Body::empty())
                .expect("a response"),
        }
    }
    let app = axum::Router::new().fallback(file);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wasm_client_calls_the_example_server_from_node() {
    let pkg = tokio::task::spawn_blocking(built).await.expect("the build");
    let dir = interop::node_packages();
    let (_server, api) = example_server(&[]).await;
    process::run(
        Command::new("node")
            .arg("browser_node.mjs")
            .arg(pkg.join("node/toolfunc_browser.js"))
            .arg(&api)
            .current_dir(&dir),
        "the wasm client in Node",
        Duration::from_secs(120),
    )
    .await
    .assert_printed("checks passed", &[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_calls_the_example_server_from_chromium_across_origins() {
    tokio::task::spawn_blocking(built).await.expect("the build");
    let browser = interop::chromium();
    let dir = interop::node_packages();
    let named = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let foreign = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let named_origin = format!("http://{}", named.local_addr().expect("addr"));
    let foreign_origin = format!("http://{}", foreign.local_addr().expect("addr"));
    serve_page(named);
    serve_page(foreign);
    let (_server, api) = example_server(&["--cors-origin", &named_origin]).await;
    process::run(
        Command::new("node")
            .arg("browser_page.mjs")
            .arg(format!("{named_origin}/index.html?api={api}"))
            .arg(&browser)
            .arg(format!("{foreign_origin}/index.html?api={api}"))
            .current_dir(&dir),
        "the browser page in Chromium",
        Duration::from_secs(120),
    )
    .await
    .assert_printed("checks passed", &[]);
}
