use serde_json::json;
use toolfunc::{Ctx, Registry, ToolError, tool};

/// Adds two numbers.
#[tool(alias = "plus", tags = ["math"])]
fn add(
    /** The left operand. */
    a: f64,
    /** The right operand. */
    b: Option<f64>,
) -> f64 {
    a + b.unwrap_or(0.0)
}

/// Async with ctx.
#[tool]
async fn hello(ctx: &Ctx, name: String) -> Result<String, std::io::Error> {
    Ok(format!("{} {name}", ctx.tool_name()))
}

#[tool]
fn fails() -> Result<(), ToolError> {
    Err(ToolError::custom("X", 418, "teapot"))
}

#[tokio::test]
async fn smoke() {
    let r = Registry::global();
    assert_eq!(
        r.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!(3.0)
    );
    assert_eq!(r.run_sync("plus", json!({"a": 1})).unwrap(), json!(1.0));
    assert_eq!(
        r.run_with_pos("add", vec![json!(1), json!(2)])
            .await
            .unwrap(),
        json!(3.0)
    );
    assert_eq!(
        r.run("hello", json!({"name": "x"})).await.unwrap(),
        json!("hello x")
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&r.definitions()).unwrap()
    );
    println!("{:?}", r.run("fails", json!({})).await);
    println!("{:?}", r.run("add", json!({"a": "x"})).await);
    println!("{:?}", r.run("add", json!({})).await);
}
