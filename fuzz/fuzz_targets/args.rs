//! Tool arguments: the fuzz input, as JSON, is run against a `#[tool]` with typed
//! parameters (numbers, strings, `Option`, `Vec`, a nested struct, an enum), a
//! `#[tool_service]` whose acts are picked from the arguments, and a builder tool
//! whose JSON Schema is enforced before its handler runs. Any `Ok` or `Err` is
//! fine; a panic is the bug, and so is a `PANICKED` error (the handlers here never
//! panic, so one means toolfunc's own argument handling did).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolfunc::{Registry, ToolError, ToolFunc, tool, tool_service};

/// Where an order goes.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Address {
    /// The street and number.
    street: String,
    /// The postal code.
    zip: Option<u32>,
    /// Delivery notes.
    #[serde(default)]
    tags: Vec<String>,
}

/// How fast an order ships.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Standard,
    Express { surcharge: f32 },
    Pickup(String),
}

/// An order line, summarised back.
#[tool]
#[allow(clippy::too_many_arguments)]
fn order(
    /// How many.
    count: u32,
    /// Unit price.
    price: f64,
    /// A signed correction.
    delta: i64,
    /// A small signed knob.
    level: i8,
    /// What is ordered.
    name: String,
    /// A free note.
    note: Option<String>,
    /// Item codes.
    items: Vec<u16>,
    /// Where it goes.
    address: Address,
    /// How it ships.
    mode: Mode,
    /// Gift wrap.
    #[serde(default)]
    gift: bool,
) -> Value {
    json!({
        "count": count,
        "total": price * f64::from(count),
        "delta": delta,
        "level": level,
        "name": name,
        "note": note,
        "items": items.len(),
        "address": address,
        "mode": mode,
        "gift": gift,
    })
}

/// The whole arguments object as one struct; unknown names are refused.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Query {
    /// Words to look for.
    query: String,
    /// At most this many.
    #[serde(default)]
    limit: Option<u8>,
}

/// Echoes a query.
#[tool(args)]
fn search(args: Query) -> String {
    format!("{} {:?}", args.query, args.limit)
}

/// A counter service: a `$`-method and REST verbs, all sync.
struct Counter;

/// Counts.
#[tool_service(name = "counter")]
impl Counter {
    /// Every value.
    fn list(&self) -> Vec<u32> {
        vec![1, 2, 3]
    }

    /// One value by id.
    fn get(&self, id: String) -> Result<u32, ToolError> {
        id.parse()
            .map_err(|_| ToolError::custom("NOT_FOUND", 404, "no such value"))
    }

    /// Adds a value.
    fn post(&self, val: u32, by: Option<u32>) -> u64 {
        u64::from(val) + u64::from(by.unwrap_or(1))
    }

    /// Adds two values.
    fn add(&self, a: i32, b: i32) -> i64 {
        i64::from(a) + i64::from(b)
    }
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let registry = Registry::new();
        for name in ["order", "search"] {
            let tool = Registry::global().get(name).expect("declared above");
            registry.register(tool).expect("register");
        }
        registry.register_service(Counter).expect("counter");
        registry
            .register(
                ToolFunc::builder("checked")
                    .params_schema(json!({
                        "type": "object",
                        "properties": {
                            "id": {"type": "integer", "minimum": 0, "maximum": 1000},
                            "name": {"type": "string", "minLength": 1, "maxLength": 16,
                                     "pattern": "^[a-z][a-z0-9_]*$"},
                            "email": {"type": "string", "format": "email"},
                            "tags": {"type": "array", "items": {"type": "string"},
                                     "uniqueItems": true, "maxItems": 8},
                            "kind": {"enum": ["a", "b", null, 1.5]},
                            "point": {"$ref": "#/$defs/point"},
                            "either": {"anyOf": [{"type": "number"}, {"$ref": "#/$defs/point"}]},
                            "one": {"oneOf": [{"type": "string"}, {"type": "boolean"}]},
                            "deep": {"$ref": "#/$defs/tree"}
                        },
                        "required": ["id"],
                        "additionalProperties": false,
                        "$defs": {
                            "point": {
                                "type": "object",
                                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                                "required": ["x", "y"]
                            },
                            "tree": {
                                "type": "object",
                                "properties": {
                                    "value": {"type": "integer"},
                                    "children": {"type": "array", "items": {"$ref": "#/$defs/tree"}}
                                }
                            }
                        }
                    }))
                    .param_order(["id", "name"])
                    .handler_sync(|_, args| Ok(args))
                    .build()
                    .expect("the checked tool builds"),
            )
            .expect("register");
        registry
    })
}

/// A `PANICKED` error means a panic was caught inside toolfunc: re-raise it here,
/// outside the catch, so libFuzzer sees it.
fn check(tool: &str, result: Result<Value, ToolError>) {
    if let Err(err) = result {
        assert_ne!(err.code(), "PANICKED", "{tool}: {err}");
    }
}

const TOOLS: [&str; 4] = ["order", "search", "counter", "checked"];

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 * 1024 {
        return;
    }
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let registry = registry();
    for tool in TOOLS {
        check(tool, registry.run_sync(tool, value.clone()));
        if let Value::Array(items) = &value {
            check(tool, registry.run_sync(tool, items.clone()));
        }
    }
    // An object may name the tool it wants, as a call would.
    if let Some(name) = value.get("tool").and_then(Value::as_str) {
        let args = value.get("args").cloned().unwrap_or(Value::Null);
        check(name, registry.run_sync(name, args));
    }
});
