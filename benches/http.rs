//! HTTP throughput: the `add` call through `toolfunc::http` against a bare axum
//! handler doing the same JSON work (parse `{"a","b"}`, answer `a + b`), both served
//! in this process over loopback and driven by the same keep-alive client.
//!
//! `cargo bench --bench http`. `one` is one request at a time (latency); `batch64`
//! is 64 requests in flight at once (throughput). Requests per second relative to
//! the bare handler = bare time / toolfunc time.
//!
//! `toolfunc_jwt` is the same API behind a [`Jwt`] authenticator (an ES256 token,
//! verified once and then found in the cache of verified tokens, as a client's
//! repeated calls are); every server gets the same `Authorization` header.
//!
//! `http count bare|toolfunc|toolfunc_jwt CALLS` makes one server's calls untimed, on one
//! current-thread runtime, for `valgrind --tool=callgrind` (less the count of 0
//! calls, divided by CALLS): instruction counts repeat where times on a busy
//! machine do not.

use std::hint::black_box;
use std::net::SocketAddr;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use criterion::{Criterion, criterion_group};
use futures::future::join_all;
use toolfunc::auth::jwt::Jwt;
use toolfunc::http::Api;
use toolfunc::{Registry, tool};

#[path = "../tests/support/tokens.rs"]
mod tokens;

const AUDIENCE: &str = "http://127.0.0.1/api";
const ISSUER: &str = "https://as.example.com";

/// The API behind a JWT authenticator, and a token it takes.
fn guarded() -> (Api, String) {
    let key = tokens::Key::new("bench");
    let auth = Jwt::with_keys(ISSUER, AUDIENCE, &tokens::jwks(&[&key])).expect("keys");
    let token = key.sign(&tokens::claims(ISSUER, AUDIENCE, "bench", "tools"));
    (
        Api::new(Registry::global()).authenticate(auth),
        format!("Bearer {token}"),
    )
}

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

#[derive(serde::Deserialize)]
struct AddArgs {
    a: f64,
    b: f64,
}

/// The floor: the same JSON work in a plain axum handler.
async fn bare_add(body: Bytes) -> Response {
    let Ok(args) = serde_json::from_slice::<AddArgs>(&body) else {
        let mut response = Response::new(Body::from("{\"error\":\"bad arguments\"}"));
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return response;
    };
    let out = serde_json::to_vec(&add(args.a, args.b)).unwrap_or_default();
    let mut response = Response::new(Body::from(out));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

fn http(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (api, authorization) = guarded();
    let (bare, ours, jwt, server) = runtime.block_on(async {
        let bare = serve(axum::Router::new().route("/add", axum::routing::post(bare_add))).await;
        let ours = serve(toolfunc::http::router(Registry::global())).await;
        let jwt = serve(api.router()).await;
        // The same router behind toolfunc's own accept loop (connection cap,
        // header and idle timeouts).
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let server = listener.local_addr().expect("a bound address");
        let mounted = toolfunc::http::Server::new()
            .mount(Api::new(Registry::global()))
            .expect("one prefix");
        tokio::spawn(mounted.serve(listener));
        (
            format!("http://{bare}/add"),
            format!("http://{ours}/api/add"),
            format!("http://{jwt}/api/add"),
            format!("http://{server}/api/add"),
        )
    });
    let client = reqwest::Client::new();
    let body = Bytes::from_static(b"{\"a\":1,\"b\":2}");
    let call = |url: &str| {
        let request = client
            .post(url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, &authorization)
            .body(body.clone());
        async move {
            let response = request.send().await.expect("the server answers");
            assert!(response.status().is_success());
            black_box(response.bytes().await.expect("a body"))
        }
    };
    let mut group = c.benchmark_group("http_add");
    for (name, url) in [
        ("bare_axum", &bare),
        ("toolfunc", &ours),
        ("toolfunc_jwt", &jwt),
        ("toolfunc_server", &server),
    ] {
        group.bench_function(format!("{name}/one"), |b| {
            b.to_async(&runtime).iter(|| call(url));
        });
        group.bench_function(format!("{name}/batch64"), |b| {
            b.to_async(&runtime)
                .iter(|| join_all((0..64).map(|_| call(url))));
        });
    }
    group.finish();
}

/// Makes `calls` calls of the `bare` or `toolfunc` server, untimed.
fn count(server: &str, calls: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (api, authorization) = guarded();
    runtime.block_on(async {
        let url = match server {
            "bare" => {
                let bare =
                    serve(axum::Router::new().route("/add", axum::routing::post(bare_add))).await;
                format!("http://{bare}/add")
            }
            "toolfunc_jwt" => format!("http://{}/api/add", serve(api.router()).await),
            _ => {
                let ours = serve(toolfunc::http::router(Registry::global())).await;
                format!("http://{ours}/api/add")
            }
        };
        let client = reqwest::Client::new();
        for _ in 0..calls {
            let response = client
                .post(&url)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::AUTHORIZATION, &authorization)
                .body(Bytes::from_static(b"{\"a\":1,\"b\":2}"))
                .send()
                .await
                .expect("the server answers");
            assert!(response.status().is_success());
            black_box(response.bytes().await.expect("a body"));
        }
    });
}

criterion_group!(benches, http);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, server, calls] = args.as_slice()
        && mode == "count"
    {
        count(server, calls.parse().expect("a number of calls"));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
