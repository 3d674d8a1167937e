//! The HTTP router in process: `Api::new(registry).router()` driven with
//! `tower::ServiceExt::oneshot`, no socket. The input is a request written as text:
//!
//! ```text
//! POST                     <- method (any token; made-up ones are 405)
//! /api/items/1?p={}        <- path and query
//! rpc-act: $rename         <- headers, one a line, until an empty line
//!                          <- (Host defaults to 127.0.0.1, Content-Type to JSON)
//! {"name": "x"}            <- the body: the rest of the input
//! ```
//!
//! Any status is fine; a panic is the bug, and so is a `PANICKED` error (no tool in
//! the catalog panics), and so is a response that does not finish in time.

#![no_main]

#[path = "../common/catalog.rs"]
mod catalog;

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolfunc::http::Api;
use toolfunc::http::axum::Router;
use toolfunc::http::axum::body::{Body, to_bytes};
use toolfunc::http::axum::http::{HeaderName, HeaderValue, Method, Request, header};
use tower::ServiceExt;

/// Inputs past this are skipped: a run must stay fast.
const MAX_INPUT: usize = 16 * 1024;
/// A response body is read up to this much.
const MAX_BODY: usize = 1024 * 1024;
/// How long one request may take, body included: far more than any tool here needs.
const DEADLINE: Duration = Duration::from_secs(5);

struct Harness {
    runtime: tokio::runtime::Runtime,
    router: Router,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| Harness {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime"),
        router: Api::new(catalog::catalog()).router(),
    })
}

/// The request the input describes, or `None` when axum cannot express it (a
/// method, URI or header that is not valid HTTP).
fn request(data: &[u8]) -> Option<Request<Body>> {
    let mut lines = data.splitn(3, |&b| b == b'\n');
    let method = Method::from_bytes(trim(lines.next()?)).ok()?;
    let path = std::str::from_utf8(trim(lines.next().unwrap_or(b"/api"))).ok()?;
    let rest = lines.next().unwrap_or_default();
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None if rest.first() == Some(&b'\n') => (&b""[..], &rest[1..]),
        None => (rest, &b""[..]),
    };
    let mut builder = Request::builder().method(method).uri(path);
    let mut host = false;
    let mut content_type = false;
    for line in head
        .split(|&b| b == b'\n')
        .map(trim)
        .filter(|l| !l.is_empty())
    {
        let at = line.iter().position(|&b| b == b':')?;
        let name = HeaderName::from_bytes(trim(&line[..at])).ok()?;
        let value = HeaderValue::from_bytes(trim(&line[at + 1..])).ok()?;
        host |= name == header::HOST;
        content_type |= name == header::CONTENT_TYPE;
        builder = builder.header(name, value);
    }
    if !host {
        builder = builder.header(header::HOST, "127.0.0.1");
    }
    if !content_type && !body.is_empty() {
        builder = builder.header(header::CONTENT_TYPE, "application/json");
    }
    builder.body(Body::from(body.to_vec())).ok()
}

fn trim(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

/// Fails the run when a body reports a caught panic: the whole body for a JSON
/// answer with the error status, each line of an NDJSON stream (its items are
/// `ticks`' own, never echoed input).
fn check(status: u16, ndjson: bool, body: &[u8]) {
    let panicked =
        |value: &Value| value.get("errorCode").and_then(Value::as_str) == Some("PANICKED");
    if ndjson {
        for line in body.split(|&b| b == b'\n') {
            if let Ok(value) = serde_json::from_slice::<Value>(line) {
                assert!(!panicked(&value), "a stream reported a panic: {value}");
            }
        }
    } else if status == 500 {
        if let Ok(value) = serde_json::from_slice::<Value>(body) {
            assert!(!panicked(&value), "a call reported a panic: {value}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_INPUT {
        return;
    }
    let Some(request) = request(data) else {
        return;
    };
    let harness = harness();
    let router = harness.router.clone();
    harness.runtime.block_on(async move {
        let exchange = async move {
            let response = router
                .oneshot(request)
                .await
                .expect("the router is infallible");
            let status = response.status().as_u16();
            let ndjson = response
                .headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/x-ndjson"));
            let body = to_bytes(response.into_body(), MAX_BODY).await;
            (status, ndjson, body)
        };
        let (status, ndjson, body) = tokio::time::timeout(DEADLINE, exchange)
            .await
            .expect("the request did not finish in time");
        // A body over the cap or cut short is the answer's business, not a bug.
        if let Ok(body) = body {
            check(status, ndjson, &body);
        }
    });
});
