//! The try-it page (`GET <prefix>/docs`) in a real browser: headless Chromium (the
//! npm package `@sparticuz/chromium`, or `$CHROMIUM`), driven by
//! `interop/docs_browser.mjs` with playwright-core (both installed with the other
//! node packages of `interop/`), against a server with the demo catalog and
//! two tools of this file: `shapes`, whose schema has what the demo's lack (enums,
//! arrays, references, a recursive type, a `oneOf`), and `ticker`, a slow stream.
//! The script fills and runs forms, finds errors at their fields, reads streams as
//! they come, and checks that the page logs no error and asks nothing of another
//! origin.
//!
//! It leaves a screenshot in `<target>/docs-page.png`. The README's picture,
//! `docs/try-it.png`, is written when it is missing or when
//! `TOOLFUNC_SCREENSHOT=overwrite` is set, so ordinary runs leave the tree alone.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/interop.rs"]
mod interop;
#[path = "support/process.rs"]
mod process;

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::process::Command;
use toolfunc::http::{Api, Server};
use toolfunc::{Registry, ToolError, ToolFunc};

/// The demo catalog, with `shapes` (answers its arguments) and `ticker`.
fn catalog() -> Registry {
    let registry = demo::catalog();
    let shapes = ToolFunc::builder("shapes")
        .description("Answers its arguments: a form of every shape the page draws.")
        .tag("test")
        .params_schema(json!({
            "type": "object",
            "properties": {
                "mode": {"enum": ["fast", "slow"], "default": "slow", "description": "How."},
                "tags": {"type": "array", "items": {"type": "string"}},
                "point": {"$ref": "#/$defs/Point"},
                "verbose": {"type": "boolean"},
                "limit": {"type": "integer", "minimum": 1, "default": 10},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "tree": {"$ref": "#/$defs/Node"}
            },
            "required": ["mode", "point"],
            "$defs": {
                "Point": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"]
                },
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                    }
                }
            }
        }))
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .expect("shapes");
    // Three items, 700 ms apart: the page shows the first while the body is open.
    let ticker = ToolFunc::builder("ticker")
        .description("Three ticks, slowly.")
        .params_schema(json!({"type": "object", "properties": {}}))
        .stream_handler(|_ctx, _args: Value| async move {
            Ok(futures::stream::iter(1..=3).then(|n| async move {
                if n > 1 {
                    tokio::time::sleep(Duration::from_millis(700)).await;
                }
                Ok::<_, ToolError>(json!({"tick": n}))
            }))
        })
        .build()
        .expect("ticker");
    registry.register(shapes).expect("register shapes");
    registry.register(ticker).expect("register ticker");
    registry
}

/// Cargo's target folder: `$CARGO_TARGET_DIR`, else `target/` in the workspace.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    )
}

#[tokio::test]
async fn the_try_it_page_runs_the_tools_in_a_browser() {
    let browser = interop::chromium();
    let dir = interop::node_packages();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/api", listener.local_addr().expect("local addr"));
    let api = Api::new(catalog()).docs(true);
    tokio::spawn(Server::new().mount(api).expect("mount").serve(listener));

    let target = target_dir();
    std::fs::create_dir_all(&target).expect("the target folder");
    let screenshot = target.join("docs-page.png");
    let _ = std::fs::remove_file(&screenshot);
    process::run(
        Command::new("node")
            .arg("docs_browser.mjs")
            .arg(&url)
            .arg(&browser)
            .arg(&screenshot)
            .current_dir(&dir),
        "the browser check of the try-it page",
        Duration::from_secs(120),
    )
    .await
    .assert_printed("checks passed", &[]);
    assert!(
        screenshot.is_file(),
        "no screenshot at {}",
        screenshot.display()
    );

    let picture = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/try-it.png");
    let overwrite = std::env::var_os("TOOLFUNC_SCREENSHOT").is_some_and(|v| v == "overwrite");
    if overwrite || !picture.exists() {
        std::fs::create_dir_all(picture.parent().expect("docs/ has a parent")).expect("docs/");
        std::fs::copy(&screenshot, &picture).expect("the README's screenshot");
    }
}

#[tokio::test]
async fn behind_a_token_the_page_opens_and_sends_the_credential_it_is_given() {
    let browser = interop::chromium();
    let dir = interop::node_packages();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/api", listener.local_addr().expect("local addr"));
    let api = Api::new(catalog())
        .docs(true)
        .auth(|req| match req.headers.get("authorization") {
            Some(v) if v == "Bearer letmein" => Ok(()),
            _ => Err(ToolError::custom(
                "UNAUTHORIZED",
                401,
                "a bearer token is required",
            )),
        });
    tokio::spawn(Server::new().mount(api).expect("mount").serve(listener));
    process::run(
        Command::new("node")
            .arg("docs_browser_auth.mjs")
            .arg(&url)
            .arg(&browser)
            .arg("Bearer letmein")
            .current_dir(&dir),
        "the browser check of the try-it page behind a token",
        Duration::from_secs(120),
    )
    .await
    .assert_printed("checks passed", &[]);
}
