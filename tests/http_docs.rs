//! `GET <prefix>/docs`: the try-it page is opt-in, served with a policy that keeps
//! it to its own origin, under every check of the API, and gives way to a tool of
//! the same name. What the page does in a browser is `tests/http_docs_browser.rs`.

#[path = "support/http.rs"]
mod http_support;

use serde_json::json;
use toolfunc::http::Api;
use toolfunc::{Annotations, Registry, ToolError, ToolFunc};

use http_support::{call, get, start};

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("add")
                .params_schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"]
                }))
                .handler_sync(|_ctx, args| {
                    let a = args["a"].as_f64().unwrap_or_default();
                    let b = args["b"].as_f64().unwrap_or_default();
                    Ok(json!(a + b))
                })
                .build()
                .expect("add"),
        )
        .expect("register add");
    registry
}

#[tokio::test]
async fn the_page_is_off_unless_asked_for() {
    let addr = start(Api::new(registry())).await;
    get(addr, "/api/docs").await.error(404, "NOT_FOUND");
}

#[tokio::test]
async fn the_page_is_one_html_file_kept_to_its_own_origin() {
    let addr = start(Api::new(registry()).docs(true)).await;
    let page = get(addr, "/api/docs").await;
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let policy = page.header("content-security-policy").expect("a policy");
    assert!(policy.starts_with("default-src 'none'"), "{policy}");
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    // Only the page's own script and styles run: no inline code an injection
    // could add, only the tags carrying this answer's nonce.
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    let nonce = nonce_of(policy);
    assert!(
        policy.contains(&format!("script-src 'nonce-{nonce}'")),
        "{policy}"
    );
    assert!(
        policy.contains(&format!("style-src 'nonce-{nonce}'")),
        "{policy}"
    );
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    let html = page.text();
    assert!(html.starts_with("<!doctype html>") || html.starts_with("<!DOCTYPE html>"));
    // Nothing is loaded from another place: no external script, style or font.
    for needle in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "@import",
        "url(http",
    ] {
        assert!(!html.contains(needle), "the page loads `{needle}..`");
    }
    let tags = |html: &str, nonce: &str| {
        let attribute = format!(" nonce=\"{nonce}\"");
        (
            html.matches(&format!("<script{attribute}>")).count(),
            html.matches(&format!("<style{attribute}>")).count(),
            html.matches("<script").count() + html.matches("<style").count(),
        )
    };
    assert_eq!(tags(&html, &nonce), (1, 1, 2), "the tags carry the nonce");
    // Each answer has a nonce of its own, from the system's random source.
    let again = get(addr, "/api/docs").await;
    let other_nonce = nonce_of(again.header("content-security-policy").expect("a policy"));
    assert_ne!(other_nonce, nonce);
    assert_eq!(tags(&again.text(), &other_nonce), (1, 1, 2));
    // The same page under another prefix, but for its nonce: the page finds its API
    // from its address.
    let addr = start(Api::new(registry()).prefix("/v2/tools").docs(true)).await;
    let other = get(addr, "/v2/tools/docs").await;
    assert_eq!(other.status, 200);
    let other_nonce = nonce_of(other.header("content-security-policy").expect("a policy"));
    assert_eq!(
        other.text().replace(&other_nonce, "N"),
        html.replace(&nonce, "N")
    );
}

/// The nonce of a policy's `script-src`, checked to be long and of base64 digits.
fn nonce_of(policy: &str) -> String {
    let start = policy
        .find("script-src 'nonce-")
        .unwrap_or_else(|| panic!("no script nonce in {policy}"))
        + "script-src 'nonce-".len();
    let nonce: String = policy[start..].chars().take_while(|c| *c != '\'').collect();
    assert!(nonce.len() >= 22, "a short nonce: {nonce:?}");
    assert!(
        nonce
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=-_".contains(c)),
        "{nonce:?}"
    );
    nonce
}

#[tokio::test]
async fn the_page_answers_only_get_and_only_at_its_name() {
    let addr = start(Api::new(registry()).docs(true)).await;
    let posted = call(
        addr,
        "POST",
        "/api/docs",
        &[("content-type", "application/json")],
        Some("{}"),
    )
    .await;
    posted.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(posted.header("allow"), Some("GET, OPTIONS"));
    get(addr, "/api/docs/extra").await.error(404, "NOT_FOUND");
}

#[tokio::test]
async fn a_tool_named_docs_is_served_instead() {
    let registry = registry();
    registry
        .register(
            ToolFunc::builder("docs")
                .annotations(Annotations::new().read_only(true))
                .handler_sync(|_ctx, _args| Ok(json!("the tool")))
                .build()
                .expect("docs"),
        )
        .expect("register docs");
    let addr = start(Api::new(registry).docs(true)).await;
    assert_eq!(get(addr, "/api/docs").await.ok(), "the tool");
}

#[tokio::test]
async fn the_page_opens_without_the_hook_and_reads_through_it() {
    let api = Api::new(registry())
        .docs(true)
        .auth(|req| match req.headers.get("authorization") {
            Some(v) if v == "Bearer t" => Ok(()),
            _ => Err(ToolError::custom(
                "UNAUTHORIZED",
                401,
                "a token is required",
            )),
        });
    let addr = start(api).await;
    // The page itself holds nothing: a browser opens it without a token...
    let page = get(addr, "/api/docs").await;
    assert_eq!(page.status, 200, "{}", page.text());
    // ...and everything it reads goes through the hook.
    get(addr, "/api/openapi.json")
        .await
        .error(401, "UNAUTHORIZED");
    get(addr, "/api").await.error(401, "UNAUTHORIZED");
    let doc = call(
        addr,
        "GET",
        "/api/openapi.json",
        &[("authorization", "Bearer t")],
        None,
    )
    .await;
    assert_eq!(doc.status, 200);
    // Asked for by a page of another site, it is refused like any request.
    let foreign = call(
        addr,
        "GET",
        "/api/docs",
        &[
            ("authorization", "Bearer t"),
            ("origin", "http://evil.example"),
        ],
        None,
    )
    .await;
    foreign.error(403, "ORIGIN_NOT_ALLOWED");
}
