//! `#[tool(args)]`: the single non-context parameter is the whole arguments object.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolfunc::{Ctx, Registry, tool};

/// A search request.
#[derive(Deserialize, JsonSchema)]
struct Search {
    /// What to look for.
    query: String,
    /// How many hits to return.
    #[serde(default = "default_limit")]
    limit: u32,
}

fn default_limit() -> u32 {
    10
}

/// Searches.
#[tool(args)]
fn search(args: Search) -> String {
    format!("{} x{}", args.query, args.limit)
}

/// Searches, with the context before the arguments struct.
#[tool(args, name = "search_ctx")]
fn search_with_ctx(ctx: &Ctx, args: Search) -> String {
    format!("{}: {} x{}", ctx.tool_name(), args.query, args.limit)
}

fn main() {
    let registry = Registry::global();
    assert_eq!(
        registry
            .run_sync("search", json!({"query": "rust", "limit": 3}))
            .unwrap(),
        json!("rust x3")
    );
    assert_eq!(
        registry
            .run_sync("search", json!({"query": "rust"}))
            .unwrap(),
        json!("rust x10")
    );
    assert_eq!(
        registry
            .run_sync("search_ctx", json!({"query": "rust"}))
            .unwrap(),
        json!("search_ctx: rust x10")
    );
    let err = registry
        .run_sync("search", json!({"limit": 3}))
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");

    // The schema is the struct's own, not a wrapper around it.
    let def = registry.get("search").unwrap().definition().clone();
    assert_eq!(def.params["type"], "object");
    assert_eq!(
        def.params["properties"]["query"]["description"],
        "What to look for."
    );
    assert_eq!(def.params["required"], json!(["query"]));

    // Positional values follow the struct's field declaration order.
    assert_eq!(
        registry
            .run_sync("search", vec![json!("pos"), json!(1)])
            .unwrap(),
        json!("pos x1")
    );
}
