//! Result schemas describe what serde writes (the serialize contract), parameter
//! schemas what it reads (the deserialize contract): for `#[tool]` results, stream
//! items, `#[tool_service]` method results and typed builder tools. Every result a
//! tool returns is checked against its own advertised schema.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

use std::sync::Arc;

use futures::{Stream, StreamExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolfunc::schema::{result_schema_of, schema_of, validate};
use toolfunc::{Registry, ToolError, ToolFunc, tool, tool_service};

/// One search hit, as a result and as an argument.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Hit {
    title: String,
    /// Always written, as `null` when absent.
    note: Option<String>,
    /// Left out when absent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    score: Option<f64>,
    /// Optional to read, always written.
    #[serde(default)]
    rank: u32,
    #[serde(rename = "URL")]
    url: String,
    #[serde(flatten)]
    meta: Meta,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Meta {
    source: String,
    lang: Option<String>,
}

/// Reads with one name, writes with another.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Renamed {
    #[serde(rename(serialize = "written", deserialize = "read"))]
    value: u8,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shape {
    Circle { radius: f64 },
    Square { side: f64, label: Option<String> },
}

fn hit() -> Hit {
    Hit {
        title: "Rust".into(),
        note: None,
        score: None,
        rank: 0,
        url: "https://rust-lang.org".into(),
        meta: Meta {
            source: "web".into(),
            lang: None,
        },
    }
}

/// Finds one hit.
#[tool]
fn find_hit(query: String) -> Hit {
    Hit {
        title: query,
        ..hit()
    }
}

/// Takes a hit as its argument and gives it back.
#[tool]
#[allow(
    clippy::unnecessary_wraps,
    reason = "the `Ok` type of a `Result` is the result"
)]
fn echo_hit(hit: Hit) -> Result<Hit, ToolError> {
    Ok(hit)
}

#[tool]
fn renamed(value: Renamed) -> Renamed {
    value
}

#[tool]
fn shape(square: bool) -> Shape {
    if square {
        Shape::Square {
            side: 2.0,
            label: None,
        }
    } else {
        Shape::Circle { radius: 1.0 }
    }
}

#[tool]
fn hits(count: usize) -> impl Stream<Item = Hit> + Send {
    futures::stream::iter(std::iter::repeat_n(hit(), count))
}

fn definition(name: &str) -> Value {
    let tool = Registry::global()
        .get(name)
        .unwrap_or_else(|| panic!("no global tool `{name}`"));
    serde_json::to_value(tool.definition()).expect("a definition serialises")
}

fn required(schema: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    names.sort_unstable();
    names
}

#[test]
fn option_fields_of_a_result_are_required_and_nullable() {
    let result = &definition("find_hit")["result"];
    assert_eq!(
        required(result),
        ["URL", "lang", "note", "rank", "source", "title"],
        "{result:#}"
    );
    assert_eq!(
        result["properties"]["note"]["type"],
        json!(["string", "null"])
    );
    // `skip_serializing_if` makes a field optional in what is written.
    assert_eq!(
        result["properties"]["score"]["type"],
        json!(["number", "null"])
    );
    assert!(!required(result).contains(&"score"));
    // `rename` and `flatten` as written.
    assert!(result["properties"].get("URL").is_some());
    assert!(result["properties"].get("url").is_none());
    assert!(result["properties"].get("source").is_some());
    assert!(result["properties"].get("meta").is_none());
    assert_eq!(result, &result_schema_of::<Hit>());
}

#[test]
fn parameters_keep_the_deserialize_contract() {
    let def = definition("echo_hit");
    let hit_param = &def["params"]["properties"]["hit"];
    // The argument's schema sits under `$defs` or inline; either way, what may be read.
    let hit_schema = match hit_param.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.rsplit('/').next().unwrap();
            def["params"]["$defs"][name].clone()
        }
        None => hit_param.clone(),
    };
    assert_eq!(required(&hit_schema), ["URL", "source", "title"]);
    assert_eq!(hit_schema, schema_of::<Hit>());
    // ...while the same type as the result is what is written.
    assert_eq!(
        required(&def["result"]),
        ["URL", "lang", "note", "rank", "source", "title"]
    );
}

#[test]
fn renames_and_tags_are_as_serialised() {
    let def = definition("renamed");
    assert!(def["result"]["properties"].get("written").is_some());
    assert!(def["result"]["properties"].get("read").is_none());
    let params = &def["params"];
    let text = params.to_string();
    assert!(text.contains("\"read\""), "{params:#}");
    assert!(!text.contains("\"written\""), "{params:#}");

    let result = &definition("shape")["result"];
    let variants = result["oneOf"]
        .as_array()
        .expect("a tagged enum is a oneOf");
    assert_eq!(variants.len(), 2);
    let square = variants
        .iter()
        .find(|v| v["properties"]["kind"]["const"] == "square")
        .expect("the square variant");
    assert_eq!(required(square), ["kind", "label", "side"]);
}

#[test]
fn stream_items_use_the_serialize_contract() {
    let result = &definition("hits")["result"];
    assert_eq!(result, &result_schema_of::<Hit>());
}

/// What each tool returns fits the schema it advertises.
#[tokio::test]
async fn results_match_their_own_schema() {
    let registry = Registry::global();
    for (name, args) in [
        ("find_hit", json!({"query": "q"})),
        (
            "echo_hit",
            json!({"hit": {"title": "t", "URL": "u", "source": "s"}}),
        ),
        ("renamed", json!({"value": {"read": 3}})),
        ("shape", json!({"square": true})),
        ("shape", json!({"square": false})),
    ] {
        let out = registry.run(name, args).await.expect(name);
        let schema = definition(name)["result"].clone();
        validate(&schema, &out).unwrap_or_else(|e| panic!("{name}: {out} against {schema}: {e}"));
    }
    let mut items = registry.run_stream("hits", json!({"count": 2}));
    let schema = definition("hits")["result"].clone();
    while let Some(item) = items.next().await {
        validate(&schema, &item.expect("an item")).expect("the item fits");
    }
}

#[derive(Default)]
struct Catalogue;

/// A catalogue of hits.
#[tool_service(name = "catalogue_schemas")]
impl Catalogue {
    /// One hit.
    fn get(&self, id: u32) -> Hit {
        Hit { rank: id, ..hit() }
    }

    /// Every hit, streamed.
    fn all(self: Arc<Self>) -> impl Stream<Item = Hit> + Send {
        futures::stream::iter([hit()])
    }
}

#[test]
fn service_method_results_use_the_serialize_contract() {
    let tool = Registry::global()
        .get("catalogue_schemas")
        .expect("service");
    let def = tool.definition();
    for act in ["get", "$all"] {
        let method = def
            .acts
            .iter()
            .find(|a| a.name == act)
            .unwrap_or_else(|| panic!("act {act}"));
        assert_eq!(
            method.result.as_ref(),
            Some(&result_schema_of::<Hit>()),
            "{act}"
        );
    }
    let out = Registry::global()
        .run_sync("catalogue_schemas", json!({"act": "get", "id": 2}))
        .expect("get runs");
    validate(&result_schema_of::<Hit>(), &out).expect("the result fits");
    assert_eq!(out["note"], Value::Null);
    assert!(out.get("score").is_none());
}

#[test]
fn typed_builder_results_use_the_serialize_contract() {
    #[derive(Deserialize, JsonSchema)]
    struct Query {
        title: String,
        note: Option<String>,
    }
    let tool = ToolFunc::builder("typed_hit")
        .typed_sync(|_ctx, query: Query| {
            Ok(Hit {
                title: query.title,
                note: query.note,
                ..hit()
            })
        })
        .build()
        .expect("builds");
    let def = tool.definition().clone();
    assert_eq!(def.result.as_ref(), Some(&result_schema_of::<Hit>()));
    assert_eq!(required(&def.params), ["title"]);

    let registry = Registry::new();
    registry.register(tool).expect("registers");
    let out = registry
        .run_sync("typed_hit", json!({"title": "x"}))
        .expect("runs");
    validate(def.result.as_ref().unwrap(), &out).expect("the result fits");

    // A given result schema is kept as given.
    let given = ToolFunc::builder("typed_given")
        .result_schema(json!({"type": "object"}))
        .typed_sync(|_ctx, _: Query| Ok(hit()))
        .build()
        .expect("builds");
    assert_eq!(given.definition().result, Some(json!({"type": "object"})));
}
