//! A `#[tool]` function's parameters schema is made at its first read, not when
//! the global registry is built; positional arguments still follow the
//! function's own parameter order.

use serde_json::json;
use toolfunc::{Registry, tool};

/// Subtracts `a` from `b`.
#[tool]
fn minus(b: i64, a: i64) -> i64 {
    b - a
}

#[tokio::test]
async fn a_macro_tools_schema_is_made_at_its_first_read() {
    let tool = Registry::global().get("minus").unwrap();
    assert!(
        !tool.definition().params.is_made(),
        "made when the registry was built"
    );
    // A call by name needs no schema: the typed handler reads its arguments.
    let named = Registry::global()
        .run("minus", json!({"b": 5, "a": 2}))
        .await
        .unwrap();
    assert_eq!(named, json!(3));
    assert!(!tool.definition().params.is_made());
    // Positional arguments map in declaration order (b, a), not the schema's.
    let positional = Registry::global()
        .run("minus", vec![json!(5), json!(2)])
        .await
        .unwrap();
    assert_eq!(positional, json!(3));
    assert!(tool.definition().params.is_made());
    assert_eq!(tool.definition().params["required"], json!(["b", "a"]));
}
