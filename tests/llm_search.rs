//! Exports for providers' own tool search: tools marked for deferred loading plus the
//! provider's search tool, each checked against the shape the provider documents; a
//! call naming a deferred tool runs through `run_tool_calls` like any other.

use serde_json::{Map, Value, json};
use toolfunc::llm::{
    Deferral, Namespaces, SearchKind, Target, run_tool_calls, tools_deferred, tools_deferred_for,
};
use toolfunc::{CallOptions, Registry, ToolError, ToolFunc, layer, tool_service};

/// The structure of a JSON value: objects keep their keys (with the structure of each
/// value), arrays the structure of their first item, scalars only their kind. Two
/// values with the same structure differ only in their texts and numbers.
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), shape(value)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.first().map(shape).into_iter().collect()),
        Value::String(_) => json!("string"),
        Value::Number(_) => json!("number"),
        Value::Bool(_) => json!("bool"),
        Value::Null => Value::Null,
    }
}

/// A tool taking one string, `city`, as the providers' examples do.
fn city_tool(name: &str, description: &str, tags: &[&str]) -> ToolFunc {
    let mut builder = ToolFunc::builder(name).description(description);
    for tag in tags {
        builder = builder.tag(*tag);
    }
    builder
        .typed_sync(|_ctx, args: CityArgs| Ok(json!(format!("sunny in {}", args.city))))
        .build()
        .unwrap()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CityArgs {
    /// The city.
    city: String,
}

fn catalogue() -> Registry {
    let registry = Registry::new();
    for (name, description, tags) in [
        (
            "get_weather",
            "Get the weather at a location.",
            &["weather"][..],
        ),
        (
            "get_forecast",
            "Get the forecast for a location.",
            &["weather"][..],
        ),
        ("find_customer", "Find a customer by city.", &["crm"][..]),
        ("help", "What this assistant can do.", &[][..]),
    ] {
        registry
            .register(city_tool(name, description, tags))
            .unwrap();
    }
    registry
}

fn find<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is exported: {tools:#}"))
}

#[test]
fn anthropic_export_has_the_documented_shape() {
    // The documented request: the search tool, then tools marked `defer_loading`.
    let documented = json!([
        {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
        {
            "name": "get_weather",
            "description": "Get the weather at a specific location",
            "input_schema": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"]
            },
            "defer_loading": true
        }
    ]);
    let exported = tools_deferred(&catalogue(), Target::Anthropic, &Deferral::new()).unwrap();
    let exported = exported.as_array().unwrap();
    assert_eq!(exported.len(), 5, "{exported:#?}");
    assert_eq!(exported[0], documented[0]);
    let weather = exported
        .iter()
        .find(|t| t["name"] == "get_weather")
        .unwrap();
    let shape_of = |tool: &Value| {
        let mut tool = tool.clone();
        tool["input_schema"]["properties"] = json!({});
        shape(&tool)
    };
    assert_eq!(shape_of(weather), shape_of(&documented[1]));
    // Every tool of the registry is deferred; the search tool never is.
    for tool in &exported[1..] {
        assert_eq!(tool["defer_loading"], true, "{tool}");
    }
    assert!(exported[0].get("defer_loading").is_none());
}

#[test]
fn anthropic_bm25_variant_is_the_documented_entry() {
    let exported = tools_deferred(
        &catalogue(),
        Target::AnthropicStrict,
        &Deferral::new().search(SearchKind::Bm25),
    )
    .unwrap();
    assert_eq!(
        exported[0],
        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    assert_eq!(find(&exported, "get_weather")["strict"], true);
}

#[test]
fn kept_tools_stay_loaded() {
    let deferral = Deferral::new().keep("help").keep("get_weather");
    let anthropic = tools_deferred(&catalogue(), Target::Anthropic, &deferral).unwrap();
    for name in ["help", "get_weather"] {
        assert!(find(&anthropic, name).get("defer_loading").is_none());
    }
    assert_eq!(find(&anthropic, "get_forecast")["defer_loading"], true);
    let openai = tools_deferred(&catalogue(), Target::OpenAi, &deferral).unwrap();
    for name in ["help", "get_weather"] {
        assert!(find(&openai, name).get("defer_loading").is_none());
    }
    assert_eq!(find(&openai, "find_customer")["defer_loading"], true);
}

#[test]
fn openai_export_has_the_documented_shape() {
    // The documented Responses API request: flat function tools marked
    // `defer_loading`, and the hosted `tool_search` tool.
    let documented = json!([
        {
            "type": "function",
            "name": "get_weather",
            "description": "Get the weather at a specific location",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
                "additionalProperties": false
            },
            "strict": true,
            "defer_loading": true
        },
        {"type": "tool_search"}
    ]);
    let exported = tools_deferred(&catalogue(), Target::OpenAiStrict, &Deferral::new()).unwrap();
    let exported = exported.as_array().unwrap();
    assert_eq!(exported.len(), 5, "{exported:#?}");
    assert_eq!(exported.last().unwrap(), &documented[1]);
    let weather = exported
        .iter()
        .find(|t| t["name"] == "get_weather")
        .unwrap();
    let shape_of = |tool: &Value| {
        let mut tool = tool.clone();
        tool["parameters"]["properties"] = json!({});
        shape(&tool)
    };
    assert_eq!(shape_of(weather), shape_of(&documented[0]));
    // Without strict, no `strict` key, as for the plain export.
    let plain = tools_deferred(&catalogue(), Target::OpenAi, &Deferral::new()).unwrap();
    assert!(find(&plain, "get_weather").get("strict").is_none());
    assert!(find(&plain, "get_weather").get("function").is_none());
}

#[test]
fn namespaces_group_tools_by_their_first_tag() {
    // The documented namespace: a name, a description, and its functions; deferral
    // applies to the functions inside, not to the namespace.
    let documented = json!({
        "type": "namespace",
        "name": "crm",
        "description": "CRM tools for customer lookup.",
        "tools": [{
            "type": "function",
            "name": "get_customer",
            "description": "Look up a customer.",
            "parameters": {"type": "object", "properties": {}, "required": ["customer_id"]},
            "defer_loading": true
        }]
    });
    let deferral = Deferral::new()
        .namespaces(Namespaces::Tags)
        .keep("get_forecast");
    let exported = tools_deferred(&catalogue(), Target::OpenAi, &deferral).unwrap();
    let exported = exported.as_array().unwrap();
    let names: Vec<&str> = exported
        .iter()
        .map(|t| t["name"].as_str().unwrap_or(t["type"].as_str().unwrap()))
        .collect();
    assert_eq!(names, ["crm", "weather", "help", "tool_search"]);
    let crm = &exported[0];
    let mut crm_shape = crm.clone();
    crm_shape["tools"][0]["parameters"]["properties"] = json!({});
    assert_eq!(shape(&crm_shape), shape(&documented));
    assert!(crm.get("defer_loading").is_none());
    let weather = &exported[1];
    let inside: Vec<(&str, bool)> = weather["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t.get("defer_loading").is_some(),
            )
        })
        .collect();
    assert_eq!(inside, [("get_forecast", false), ("get_weather", true)]);
    // An untagged tool stays at the top level, deferred on its own.
    assert_eq!(exported[2]["defer_loading"], true);
    // Anthropic has no namespaces: each tool is deferred on its own.
    let anthropic = tools_deferred(&catalogue(), Target::Anthropic, &deferral).unwrap();
    assert_eq!(anthropic.as_array().unwrap().len(), 5);
}

struct Invoices;

/// Looks after the invoices.
#[tool_service(name = "invoices")]
impl Invoices {
    /// Fetches an invoice.
    fn fetch(&self, number: u32) -> String {
        format!("invoice {number}")
    }

    /// Voids an invoice.
    fn void(&self, number: u32) -> String {
        format!("voided {number}")
    }
}

fn with_service() -> Registry {
    let registry = catalogue();
    registry.register_service(Invoices).unwrap();
    registry
}

#[test]
fn namespaces_group_a_service_s_methods() {
    let deferral = Deferral::new().namespaces(Namespaces::Services);
    let exported = tools_deferred(&with_service(), Target::OpenAi, &deferral).unwrap();
    let invoices = find(&exported, "invoices");
    assert_eq!(invoices["type"], "namespace");
    assert_eq!(invoices["description"], "Looks after the invoices.");
    let inside: Vec<&str> = invoices["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(inside, ["invoices_fetch", "invoices_void"]);
    // Plain tools stay at the top level.
    assert_eq!(find(&exported, "get_weather")["type"], "function");
    // Keeping a service keeps every method loaded.
    let kept = tools_deferred(
        &with_service(),
        Target::Anthropic,
        &Deferral::new().keep("invoices"),
    )
    .unwrap();
    assert!(find(&kept, "invoices_void").get("defer_loading").is_none());
}

#[test]
fn targets_without_tool_search_and_bad_namespaces_are_errors() {
    for target in [Target::Gemini, Target::Mcp] {
        let err = tools_deferred(&catalogue(), target, &Deferral::new()).unwrap_err();
        assert!(matches!(err, ToolError::Definition { .. }), "{err}");
    }
    let registry = Registry::new();
    registry
        .register(city_tool("lookup", "Looks up.", &["has space"]))
        .unwrap();
    let err = tools_deferred(
        &registry,
        Target::OpenAi,
        &Deferral::new().namespaces(Namespaces::Tags),
    )
    .unwrap_err();
    assert!(err.to_string().contains("has space"), "{err}");
    // A namespace may not share its name with a function at the top level.
    let registry2 = Registry::new();
    registry2
        .register(city_tool("geo", "Geography.", &[]))
        .unwrap();
    registry2
        .register(city_tool("distance", "Distance.", &["geo"]))
        .unwrap();
    let err = tools_deferred(
        &registry2,
        Target::OpenAi,
        &Deferral::new().namespaces(Namespaces::Tags),
    )
    .unwrap_err();
    assert!(err.to_string().contains("geo"), "{err}");
}

#[test]
fn the_caller_sees_only_its_tools() {
    let registry = catalogue().layer(layer::visibility(|tool, viewer| {
        tool.name != "find_customer" || viewer.caller() == Some("sales")
    }));
    let guest = registry.with(CallOptions::new().caller("guest"));
    let exported = tools_deferred_for(&guest, Target::Anthropic, &Deferral::new()).unwrap();
    assert!(
        exported
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "find_customer")
    );
    let sales = registry.with(CallOptions::new().caller("sales"));
    let exported = tools_deferred_for(&sales, Target::Anthropic, &Deferral::new()).unwrap();
    assert_eq!(find(&exported, "find_customer")["defer_loading"], true);
}

#[tokio::test]
async fn anthropic_call_of_a_deferred_tool_runs() {
    let registry = with_service();
    let exported = tools_deferred(&registry, Target::Anthropic, &Deferral::new()).unwrap();
    assert_eq!(find(&exported, "invoices_void")["defer_loading"], true);
    // What the model sends after its search loaded the tool: the search's own blocks,
    // then a `tool_use` naming the deferred tool.
    let assistant = json!({"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex",
         "input": {"query": "invoice"}},
        {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "invoices_void"}]}},
        {"type": "tool_use", "id": "toolu_1", "name": "invoices_void", "input": {"number": 7}}
    ]});
    let reply = run_tool_calls(&registry, Target::Anthropic, &assistant)
        .await
        .unwrap();
    assert_eq!(
        reply,
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "voided 7"}]})
    );
}

#[tokio::test]
async fn openai_responses_call_of_a_deferred_tool_runs() {
    let registry = with_service();
    let deferral = Deferral::new().namespaces(Namespaces::Services);
    let exported = tools_deferred(&registry, Target::OpenAi, &deferral).unwrap();
    assert_eq!(find(&exported, "invoices")["type"], "namespace");
    // A Responses API output: the hosted search, then a function call into the
    // namespace it loaded, and a call of a plain deferred function.
    let output = json!([
        {"type": "tool_search_call", "id": "ts_1", "status": "completed",
         "arguments": {"paths": ["invoices"]}},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "namespace": "invoices",
         "name": "invoices_fetch", "arguments": "{\"number\": 3}"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_2",
         "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}
    ]);
    let reply = run_tool_calls(&registry, Target::OpenAi, &output)
        .await
        .unwrap();
    assert_eq!(
        reply,
        json!([
            {"type": "function_call_output", "call_id": "call_1", "output": "invoice 3"},
            {"type": "function_call_output", "call_id": "call_2", "output": "sunny in Oslo"}
        ])
    );
    // The whole response object reads the same.
    let response = json!({"id": "resp_1", "object": "response", "output": output});
    let again = run_tool_calls(&registry, Target::OpenAi, &response)
        .await
        .unwrap();
    assert_eq!(again, reply);
    // A call without a `call_id` is a bad message, not a panic.
    let bad = json!([{"type": "function_call", "name": "get_weather", "arguments": "{}"}]);
    let err = run_tool_calls(&registry, Target::OpenAi, &bad)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/0"), "{err}");
}
