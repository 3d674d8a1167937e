//! The small catalog the `http` and `mcp` targets serve: a plain tool, a builder
//! tool with a JSON Schema, an async tool, a REST service with a `$`-method, a
//! streaming tool with a bounded count, a failing tool and a hidden one. None of
//! them panics, sleeps or keeps state between runs, so a `PANICKED` error or a
//! slow run is toolfunc's doing.

use futures::Stream;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolfunc::{Annotations, Registry, ToolError, ToolFunc, tool, tool_service};

/// The most items `ticks` produces.
const MAX_TICKS: u8 = 16;

/// Adds two numbers.
#[tool(alias = "plus", annotations(read_only, idempotent))]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// Doubles after a yield (an async tool: it runs as a future, not inline).
#[tool]
async fn later(x: i32, note: Option<String>) -> Value {
    tokio::task::yield_now().await;
    json!({"x": i64::from(x) * 2, "note": note})
}

/// Always fails with a code of its own.
#[tool]
fn fail() -> Result<(), ToolError> {
    Err(ToolError::custom("NOPE", 418, "no").with_data(json!({"why": "always"})))
}

/// Only for callers in process.
#[tool(api = false)]
fn hidden() -> u8 {
    7
}

/// One tick of `ticks`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Tick {
    tick: u8,
}

/// Counts down from `count` (at most 16): a stream of `{"tick": n}`.
#[tool(annotations(read_only))]
fn ticks(count: u8, #[serde(default)] stream: bool) -> impl Stream<Item = Tick> {
    let _ = stream;
    futures::stream::iter((1..=count.min(MAX_TICKS)).rev().map(|tick| Tick { tick }))
}

/// An item of the `items` resource.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Item {
    name: String,
    #[serde(default)]
    qty: Option<u32>,
    #[serde(default)]
    tags: Vec<String>,
}

/// A stateless REST resource: `list`, `get`, `post` and the `$rename` method.
struct Items;

/// Items.
#[tool_service(name = "items")]
impl Items {
    /// Every item.
    fn list(&self) -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    /// One item by id.
    fn get(&self, id: String) -> Result<Item, ToolError> {
        match id.parse::<u32>() {
            Ok(qty) if qty < 100 => Ok(Item {
                name: id,
                qty: Some(qty),
                tags: Vec::new(),
            }),
            _ => Err(ToolError::custom("NOT_FOUND", 404, "no such item")),
        }
    }

    /// Creates an item (and forgets it).
    fn post(&self, val: Item) -> Item {
        val
    }

    /// Renames an item.
    #[tool(annotations(read_only))]
    async fn rename(&self, id: u32, name: String) -> Value {
        json!({"id": id, "name": name})
    }
}

/// The catalog in a registry of its own.
pub(crate) fn catalog() -> Registry {
    let registry = Registry::new();
    for name in ["add", "later", "fail", "hidden", "ticks"] {
        let tool = Registry::global().get(name).expect("declared above");
        registry.register(tool).expect("register");
    }
    registry.register_service(Items).expect("items");
    registry
        .register(
            ToolFunc::builder("echo")
                .params_schema(json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "n": {"type": "number", "minimum": -1e9, "maximum": 1e9},
                        "flag": {"type": "boolean"},
                        "s": {"type": "string", "maxLength": 64},
                        "list": {"type": "array", "items": {"$ref": "#/$defs/leaf"}},
                        "any": {}
                    },
                    "$defs": {"leaf": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}
                }))
                .annotations(Annotations::new().read_only(true))
                .handler_sync(|_, args| Ok(args))
                .build()
                .expect("echo"),
        )
        .expect("register");
    registry
}
