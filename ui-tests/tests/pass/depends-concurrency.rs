//! `depends(...)` and `concurrency = N` on `#[tool]`: a dependency by name is called
//! through its local alias, and the global registry knows both.

use serde_json::json;
use toolfunc::{tool, Ctx, Registry, ToolError};

/// Fetches a user's name.
#[tool]
fn fetch_user(id: u64) -> String {
    format!("user-{id}")
}

/// Greets a user, fetching them through a dependency.
#[tool(depends(fetch = "fetch_user"), concurrency = 2)]
async fn greet_user(ctx: &Ctx, id: u64) -> Result<String, ToolError> {
    let name = ctx.run("fetch", json!({ "id": id })).await?;
    Ok(format!("hello {}", name.as_str().unwrap_or("?")))
}

fn main() {
    let registry = Registry::global();
    let tool = registry.get("greet_user").unwrap();
    assert_eq!(tool.concurrency(), Some(2));
    assert_eq!(
        tool.dependencies().collect::<Vec<_>>(),
        [("fetch", "fetch_user")]
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let out = runtime
        .block_on(registry.run("greet_user", json!({"id": 7})))
        .unwrap();
    assert_eq!(out, json!("hello user-7"));
}
