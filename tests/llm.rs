//! LLM exports are accepted by each provider's schema rules (checked here against the
//! rules, for the schemas ordinary Rust types produce), and provider tool-call messages
//! run by `run_tool_calls` into the reply each provider expects.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolfunc::llm::{Target, run_tool_calls, tool, tools};
use toolfunc::{Registry, ToolDefinition, ToolError, ToolFunc};

// ---- the types ordinary tools take ------------------------------------------------

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Address {
    /// Street and number.
    street: String,
    zip: Option<String>,
}

/// A unit enum.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
}

/// An enum whose variants are documented.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
enum Size {
    /// Small.
    Small,
    /// Large.
    Large,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Order {
    customer_name: String,
    address: Address,
    billing: Option<Address>,
    lines: Vec<Line>,
    color: Color,
    size: Option<Size>,
    shape: Shape,
    count: u32,
    total: u64,
    note: Option<String>,
    #[serde(default)]
    gift: bool,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Line {
    sku: String,
    qty: u32,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // read through its schema only
struct Tree {
    label: String,
    children: Vec<Tree>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // read through its schema only
struct Labels {
    labels: HashMap<String, String>,
}

fn typed<A>(name: &str) -> ToolDefinition
where
    A: for<'de> Deserialize<'de> + schemars::JsonSchema + Send + 'static,
{
    ToolFunc::builder(name)
        .description(format!("The {name} tool."))
        .typed_sync(|_ctx, _args: A| Ok(json!("ok")))
        .build()
        .unwrap()
        .definition()
        .clone()
}

fn no_args() -> ToolDefinition {
    ToolFunc::builder("ping")
        .description("Answers pong.")
        .handler_sync(|_ctx, _args| Ok(json!("pong")))
        .build()
        .unwrap()
        .definition()
        .clone()
}

const ALL: [Target; 6] = [
    Target::OpenAi,
    Target::OpenAiStrict,
    Target::Anthropic,
    Target::AnthropicStrict,
    Target::Gemini,
    Target::Mcp,
];

fn schema_of(target: Target, exported: &Value) -> Option<&Value> {
    match target {
        Target::OpenAi | Target::OpenAiStrict => exported["function"].get("parameters"),
        Target::Anthropic | Target::AnthropicStrict => exported.get("input_schema"),
        Target::Gemini => exported.get("parameters"),
        _ => exported.get("inputSchema"),
    }
}

fn name_of(target: Target, exported: &Value) -> String {
    match target {
        Target::OpenAi | Target::OpenAiStrict => exported["function"]["name"].as_str(),
        _ => exported["name"].as_str(),
    }
    .unwrap()
    .to_owned()
}

// ---- the rules, from reference/llm-schema-rules.md --------------------------------

/// Every schema node reachable from `schema` (properties, items, anyOf branches, $defs).
fn nodes<'a>(
    schema: &'a Value,
    out: &mut Vec<(&'a serde_json::Map<String, Value>, String)>,
    path: &str,
) {
    let Value::Object(map) = schema else { return };
    out.push((map, path.to_owned()));
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, sub) in properties {
            nodes(sub, out, &format!("{path}/properties/{name}"));
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(sub) = map.get(key) {
            nodes(sub, out, &format!("{path}/{key}"));
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(items)) = map.get(key) {
            for (i, sub) in items.iter().enumerate() {
                nodes(sub, out, &format!("{path}/{key}/{i}"));
            }
        }
    }
    if let Some(Value::Object(defs)) = map.get("$defs") {
        for (name, sub) in defs {
            nodes(sub, out, &format!("{path}/$defs/{name}"));
        }
    }
}

fn is_object(map: &serde_json::Map<String, Value>) -> bool {
    map.get("type") == Some(&json!("object"))
        || map
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|t| t.contains(&json!("object")))
}

#[allow(clippy::too_many_lines)] // one rule list per target, kept side by side
fn check(target: Target, exported: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let name = name_of(target, exported);
    let name_ok = match target {
        Target::Mcp => {
            (1..=128).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        }
        Target::Gemini => {
            name.len() <= 64
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c))
        }
        _ => {
            (1..=64).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
        }
    };
    if !name_ok {
        problems.push(format!("name {name} does not match the pattern"));
    }
    let Some(schema) = schema_of(target, exported) else {
        if target != Target::Gemini {
            problems.push("no parameters schema".into());
        }
        return problems;
    };
    if schema.get("type") != Some(&json!("object")) {
        problems.push("root is not type object".into());
    }
    for key in ["$schema", "anyOf", "allOf", "oneOf", "$ref"] {
        if schema.get(key).is_some() {
            problems.push(format!("root has {key}"));
        }
    }
    let mut all = Vec::new();
    nodes(schema, &mut all, "");
    for (node, path) in all {
        let at = |what: &str| format!("{path}: {what}");
        match target {
            Target::OpenAiStrict => {
                if is_object(node) {
                    if node.get("additionalProperties") != Some(&json!(false)) {
                        problems.push(at("object without additionalProperties: false"));
                    }
                    let keys: Vec<&String> = node
                        .get("properties")
                        .and_then(Value::as_object)
                        .map(|p| p.keys().collect())
                        .unwrap_or_default();
                    let required: Vec<&str> = node
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    if keys.len() != required.len()
                        || keys.iter().any(|k| !required.contains(&k.as_str()))
                    {
                        problems.push(at("not every property is required"));
                    }
                }
                for key in [
                    "allOf",
                    "not",
                    "if",
                    "oneOf",
                    "default",
                    "dependentRequired",
                ] {
                    if node.contains_key(key) {
                        problems.push(at(&format!("has {key}")));
                    }
                }
                if node.contains_key("$ref") && node.len() > 1 {
                    problems.push(at("$ref with siblings"));
                }
                if let Some(format) = node.get("format").and_then(Value::as_str)
                    && ![
                        "date-time",
                        "time",
                        "date",
                        "duration",
                        "email",
                        "hostname",
                        "ipv4",
                        "ipv6",
                        "uuid",
                    ]
                    .contains(&format)
                {
                    problems.push(at(&format!("format {format}")));
                }
            }
            Target::AnthropicStrict => {
                if is_object(node) && node.get("additionalProperties") != Some(&json!(false)) {
                    problems.push(at("object without additionalProperties: false"));
                }
                for key in [
                    "minimum",
                    "maximum",
                    "exclusiveMinimum",
                    "exclusiveMaximum",
                    "multipleOf",
                    "minLength",
                    "maxLength",
                    "maxItems",
                    "$ref",
                    "oneOf",
                ] {
                    if node.contains_key(key) {
                        problems.push(at(&format!("has {key}")));
                    }
                }
                if node
                    .get("minItems")
                    .and_then(Value::as_u64)
                    .is_some_and(|n| n > 1)
                {
                    problems.push(at("minItems above 1"));
                }
                if node.get("type").is_some_and(Value::is_array) {
                    problems.push(at("type array (use anyOf with null)"));
                }
            }
            Target::Gemini => {
                let allowed = [
                    "type",
                    "format",
                    "description",
                    "nullable",
                    "enum",
                    "items",
                    "properties",
                    "required",
                    "propertyOrdering",
                    "minItems",
                    "maxItems",
                    "minimum",
                    "maximum",
                    "minLength",
                    "maxLength",
                    "pattern",
                    "anyOf",
                ];
                for key in node.keys() {
                    if !allowed.contains(&key.as_str()) {
                        problems.push(at(&format!("unknown key {key}")));
                    }
                }
                if node.get("type").is_some_and(|t| !t.is_string()) {
                    problems.push(at("type is not a single string"));
                }
                if let Some(Value::Array(values)) = node.get("enum")
                    && values.iter().any(|v| !v.is_string())
                {
                    problems.push(at("non-string enum"));
                }
            }
            Target::Mcp | Target::OpenAi | Target::Anthropic if node.contains_key("$schema") => {
                problems.push(at("has $schema"));
            }
            _ => {}
        }
    }
    problems
}

// ---- exports ----------------------------------------------------------------------

#[test]
fn every_target_accepts_the_ordinary_shapes() {
    for definition in [
        typed::<Order>("place_order"),
        typed::<Address>("check_address"),
        no_args(),
    ] {
        for target in ALL {
            let exported = tool(&definition, target).unwrap();
            let problems = check(target, &exported);
            assert!(
                problems.is_empty(),
                "{target:?} {}: {problems:#?}\n{exported:#}",
                definition.name
            );
        }
    }
}

#[test]
fn openai_strict_makes_optional_fields_required_and_nullable() {
    let exported = tool(&typed::<Address>("address"), Target::OpenAiStrict).unwrap();
    let params = &exported["function"]["parameters"];
    assert_eq!(exported["function"]["strict"], true);
    assert_eq!(params["required"], json!(["street", "zip"]));
    assert_eq!(
        params["properties"]["zip"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(params["properties"]["street"]["type"], "string");
    assert_eq!(params["additionalProperties"], false);
}

#[test]
fn gemini_says_optional_with_nullable_and_skips_parameters_for_no_args() {
    let exported = tool(&typed::<Order>("order"), Target::Gemini).unwrap();
    let params = &exported["parameters"];
    assert_eq!(
        params["properties"]["note"],
        json!({"type": "string", "nullable": true})
    );
    // A nullable struct: the struct inlined, marked nullable.
    assert_eq!(params["properties"]["billing"]["type"], "object");
    assert_eq!(params["properties"]["billing"]["nullable"], true);
    let ping = tool(&no_args(), Target::Gemini).unwrap();
    assert_eq!(
        ping,
        json!({"name": "ping", "description": "Answers pong."})
    );
}

#[test]
fn anthropic_strict_moves_constraints_into_descriptions() {
    let exported = tool(&typed::<Order>("order"), Target::AnthropicStrict).unwrap();
    let count = &exported["input_schema"]["properties"]["count"];
    assert_eq!(count["type"], "integer");
    assert!(
        count["description"]
            .as_str()
            .unwrap()
            .contains("minimum: 0"),
        "{count}"
    );
}

#[test]
fn mcp_carries_title_annotations_and_object_output_schemas() {
    let definition = ToolFunc::builder("lookup_address")
        .title("Look up an address")
        .annotations(
            toolfunc::Annotations::new()
                .read_only(true)
                .open_world(false),
        )
        .typed_sync(|_ctx, args: Address| Ok(args))
        .build()
        .unwrap()
        .definition()
        .clone();
    let exported = tool(&definition, Target::Mcp).unwrap();
    assert_eq!(exported["title"], "Look up an address");
    assert_eq!(
        exported["annotations"],
        json!({"title": "Look up an address", "readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(exported["inputSchema"]["type"], "object");
    assert_eq!(exported["outputSchema"]["type"], "object");
    assert!(exported["inputSchema"].get("$schema").is_none());
    // A scalar result has no output schema.
    let scalar = tool(&typed::<Address>("scalar"), Target::Mcp).unwrap();
    assert!(scalar.get("outputSchema").is_none());
}

#[test]
fn recursive_types_keep_their_definitions_where_the_target_can_say_them() {
    let definition = typed::<Tree>("tree");
    for target in [
        Target::OpenAi,
        Target::OpenAiStrict,
        Target::Anthropic,
        Target::Mcp,
    ] {
        let exported = tool(&definition, target).unwrap();
        let schema = schema_of(target, &exported).unwrap();
        // `Tree` contains itself: its children refer back to a kept definition.
        let reference = schema["properties"]["children"]["items"]["$ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{target:?}: {schema:#}"));
        let name = reference.strip_prefix("#/$defs/").unwrap();
        assert_eq!(
            schema["$defs"][name]["properties"]["label"]["type"], "string",
            "{target:?}"
        );
        assert!(
            check(target, &exported).is_empty(),
            "{target:?}: {:?}",
            check(target, &exported)
        );
    }
    for target in [Target::AnthropicStrict, Target::Gemini] {
        let err = tool(&definition, target).unwrap_err();
        assert_eq!(err.code(), "DEFINITION");
        let message = err.to_string();
        assert!(
            message.contains("`tree`") && message.contains("recursive"),
            "{message}"
        );
        assert!(message.contains("/properties/children"), "{message}");
    }
}

#[test]
fn maps_are_an_error_where_they_cannot_be_said() {
    let definition = typed::<Labels>("labels");
    for target in [
        Target::OpenAiStrict,
        Target::AnthropicStrict,
        Target::Gemini,
    ] {
        let err = tool(&definition, target).unwrap_err();
        assert_eq!(err.code(), "DEFINITION", "{target:?}");
        assert!(err.to_string().contains("/properties/labels"), "{err}");
    }
    for target in [Target::OpenAi, Target::Anthropic, Target::Mcp] {
        let exported = tool(&definition, target).unwrap();
        assert!(check(target, &exported).is_empty(), "{target:?}");
    }
}

#[test]
fn names_a_target_refuses_are_an_error() {
    let definition = ToolFunc::builder("has space")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .unwrap()
        .definition()
        .clone();
    for target in ALL {
        assert_eq!(
            tool(&definition, target).unwrap_err().code(),
            "DEFINITION",
            "{target:?}"
        );
    }
    let dotted = ToolFunc::builder("files.read")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .unwrap()
        .definition()
        .clone();
    assert!(tool(&dotted, Target::Mcp).is_ok());
    assert!(tool(&dotted, Target::Gemini).is_ok());
    assert!(tool(&dotted, Target::OpenAi).is_err());
}

#[test]
fn a_registry_exports_every_tool_with_its_summary() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("search")
                .description("Searches everything, slowly and thoroughly.")
                .summary("Search.")
                .typed_sync(|_ctx, args: Address| Ok(args.street))
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("ping")
                .handler_sync(|_ctx, _args| Ok(json!("pong")))
                .build()
                .unwrap(),
        )
        .unwrap();
    for target in ALL {
        let exported = tools(&registry, target).unwrap();
        assert_eq!(exported.as_array().unwrap().len(), 2, "{target:?}");
    }
    let openai = tools(&registry, Target::OpenAi).unwrap();
    assert_eq!(openai[1]["function"]["description"], "Search.");
}

// ---- run_tool_calls---------------------------------------------------------------------

fn shop() -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("ship")
                .typed_sync(|_ctx, address: Address| {
                    Ok(json!({"to": address.street, "zip": address.zip}))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("greet")
                .typed_sync(|_ctx, args: Address| Ok(format!("hello {}", args.street)))
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("broken")
                .handler_sync(|_ctx, _args| {
                    Err(ToolError::custom("OUT_OF_STOCK", 409, "none left"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

#[tokio::test]
async fn openai_tool_calls_become_tool_messages() {
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ship", "arguments": "{\"street\": \"1 Main St\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "broken", "arguments": "{}"}},
            {"id": "c3", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
            {"id": "c4", "type": "function", "function": {"name": "ship", "arguments": "{not json"}},
            {"id": "c5", "type": "function", "function": {"name": "greet", "arguments": "{\"street\": \"Ann\"}"}}
        ]
    });
    let reply = run_tool_calls(&shop(), Target::OpenAi, &message)
        .await
        .unwrap();
    let reply = reply.as_array().unwrap();
    assert_eq!(reply.len(), 5);
    let ids: Vec<&str> = reply
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5"]);
    assert!(reply.iter().all(|m| m["role"] == "tool"));
    let content = |i: usize| -> Value {
        serde_json::from_str(reply[i]["content"].as_str().unwrap()).unwrap()
    };
    assert_eq!(content(0), json!({"to": "1 Main St", "zip": null}));
    assert_eq!(content(1)["error"]["code"], "OUT_OF_STOCK");
    assert_eq!(content(2)["error"]["code"], "NOT_FOUND");
    assert_eq!(content(3)["error"]["code"], "ARGUMENTS");
    // A string result reads as the string itself.
    assert_eq!(reply[4]["content"], "hello Ann");
}

#[tokio::test]
async fn anthropic_tool_use_becomes_one_user_message_of_results() {
    let message = json!({
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me ship that."},
            {"type": "tool_use", "id": "toolu_1", "name": "ship", "input": {"street": "2 Side St", "zip": "9"}},
            {"type": "tool_use", "id": "toolu_2", "name": "broken", "input": {}}
        ]
    });
    let reply = run_tool_calls(&shop(), Target::Anthropic, &message)
        .await
        .unwrap();
    assert_eq!(reply["role"], "user");
    let blocks = reply["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0]["type"], "tool_result");
    assert_eq!(blocks[0]["tool_use_id"], "toolu_1");
    assert!(blocks[0].get("is_error").is_none());
    assert_eq!(
        serde_json::from_str::<Value>(blocks[0]["content"].as_str().unwrap()).unwrap(),
        json!({"to": "2 Side St", "zip": "9"})
    );
    assert_eq!(blocks[1]["tool_use_id"], "toolu_2");
    assert_eq!(blocks[1]["is_error"], true);
    assert!(blocks[1]["content"].as_str().unwrap().contains("none left"));
}

#[tokio::test]
async fn gemini_function_calls_become_function_responses() {
    let content = json!({
        "role": "model",
        "parts": [
            {"functionCall": {"name": "greet", "args": {"street": "Bo"}}},
            {"functionCall": {"id": "g2", "name": "nope", "args": {}}}
        ]
    });
    let reply = run_tool_calls(&shop(), Target::Gemini, &content)
        .await
        .unwrap();
    assert_eq!(
        reply,
        json!({
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "greet", "response": {"result": "hello Bo"}}},
                {"functionResponse": {"id": "g2", "name": "nope", "response": {"error": {"code": "NOT_FOUND", "message": "tool not found: nope"}}}}
            ]
        })
    );
}

#[tokio::test]
async fn unreadable_messages_are_clear_errors() {
    let registry = shop();
    let cases = [
        (Target::OpenAi, json!({"role": "assistant"}), "/tool_calls"),
        (
            Target::OpenAi,
            json!({"tool_calls": [{"type": "function", "function": {"name": "ship", "arguments": "{}"}}]}),
            "/tool_calls/0/id",
        ),
        (
            Target::OpenAi,
            json!({"tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]}),
            "/tool_calls/0/function/name",
        ),
        (Target::Anthropic, json!({"content": "text"}), "/content"),
        (
            Target::Anthropic,
            json!({"content": [{"type": "tool_use", "name": "ship", "input": {}}]}),
            "/content/0/id",
        ),
        (Target::Gemini, json!({"role": "model"}), "/parts"),
    ];
    for (target, message, path) in cases {
        let err = run_tool_calls(&registry, target, &message)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Arguments { path: p, .. } if p == path),
            "{target:?} {message}: {err:?}"
        );
    }
}

#[tokio::test]
async fn openai_strict_nulls_mean_left_out() {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Query {
        text: String,
        limit: Option<u32>,
        #[serde(default)]
        exact: bool,
        filter: Option<Filter>,
    }
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Filter {
        tag: String,
        #[serde(default = "one")]
        min_score: u32,
    }
    fn one() -> u32 {
        1
    }
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("search")
                .typed_sync(|_ctx, q: Query| {
                    let filter = q.filter.map(|f| (f.tag, f.min_score));
                    Ok(json!([q.text, q.limit, q.exact, filter]))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    // The strict export requires every property...
    let exported = tools(&registry, Target::OpenAiStrict).unwrap();
    assert_eq!(
        exported[0]["function"]["parameters"]["required"],
        json!(["exact", "filter", "limit", "text"])
    );
    // ...so the model sends null where it means "not given": same result as omitting.
    let call = |arguments: Value| {
        json!({"tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "search", "arguments": arguments.to_string()}}]})
    };
    let with_nulls = run_tool_calls(
        &registry,
        Target::OpenAiStrict,
        &call(json!({"text": "t", "limit": null, "exact": null, "filter": {"tag": "x", "min_score": null}})),
    )
    .await
    .unwrap();
    let omitted = run_tool_calls(
        &registry,
        Target::OpenAi,
        &call(json!({"text": "t", "filter": {"tag": "x"}})),
    )
    .await
    .unwrap();
    assert_eq!(with_nulls[0]["content"], omitted[0]["content"]);
    assert_eq!(
        serde_json::from_str::<Value>(omitted[0]["content"].as_str().unwrap()).unwrap(),
        json!(["t", null, false, ["x", 1]])
    );
}

#[test]
fn exports_are_kept_until_a_registry_changes() {
    let registry = Registry::new();
    let ping = |name: &str| {
        ToolFunc::builder(name)
            .handler_sync(|_ctx, _args| Ok(json!("pong")))
            .build()
            .unwrap()
    };
    registry.register(ping("first")).unwrap();
    let once = tools(&registry, Target::Mcp).unwrap();
    assert_eq!(tools(&registry, Target::Mcp).unwrap(), once);
    // Another target is its own export.
    assert_eq!(
        tools(&registry, Target::OpenAi)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    registry.register(ping("second")).unwrap();
    assert_eq!(
        tools(&registry, Target::Mcp)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // A change up the chain shows in a child's export too.
    let child = registry.isolate();
    assert_eq!(
        tools(&child, Target::Mcp)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    registry.register(ping("third")).unwrap();
    assert_eq!(
        tools(&child, Target::Mcp)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn every_export_is_a_valid_json_schema() {
    let definitions = [
        typed::<Order>("place_order"),
        typed::<Address>("check_address"),
        typed::<Tree>("tree"),
        typed::<Labels>("labels"),
        no_args(),
    ];
    for definition in &definitions {
        for target in ALL {
            let Ok(exported) = tool(definition, target) else {
                continue; // refused exports are tested above
            };
            if let Some(schema) = schema_of(target, &exported) {
                // Gemini's `parameters` is an OpenAPI subset (`nullable`), still valid JSON
                // Schema syntax: unknown keywords are annotations.
                assert!(
                    jsonschema::meta::is_valid(schema),
                    "{target:?} {}: not a valid JSON Schema: {schema:#}",
                    definition.name
                );
            }
        }
    }
}
