//! `tools/list` over MCP: name order, pages with opaque cursors (`page_size`), schemas
//! passed through as the tools wrote them (JSON Schema 2020-12 keywords kept, nothing
//! inlined), output schemas per revision (object schemas only before 2026-07-28, any
//! schema, with `structuredContent` of any type, from it), and `get_tool` answered
//! from the same kept list.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

#[path = "support/mcp.rs"]
mod mcp_support;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolfunc::mcp::Server;
use toolfunc::mcp::rmcp::ServerHandler;
use toolfunc::{Registry, ToolFunc, tool, tool_service};

use mcp_support::Pipe;

/// A postal address.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Address {
    street: String,
    city: String,
}

/// Ships a parcel.
#[tool]
fn ship(to: Address, from: Option<Address>) -> String {
    let _ = from;
    format!("to {}", to.city)
}

/// Adds two numbers.
#[tool]
fn plus(a: f64, b: f64) -> f64 {
    a + b
}

/// Shouts.
#[tool]
fn yell(text: String) -> String {
    text.to_uppercase()
}

/// Where a parcel is.
#[tool]
fn locate() -> Address {
    Address {
        street: "1 Main St".into(),
        city: "Springfield".into(),
    }
}

/// Counts down.
#[tool]
fn launch() -> impl futures::Stream<Item = u32> {
    futures::stream::iter([3, 2, 1])
}

/// A service whose method is also a tool's name.
#[derive(Default)]
struct Depot;

/// Parcels.
#[tool_service(name = "depot")]
impl Depot {
    /// The depot's own way.
    fn check(&self) -> u32 {
        1
    }
}

/// The fixture of the conformance suite's `json-schema-2020-12` scenario.
fn fixture_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

fn tool_named(name: &str) -> ToolFunc {
    ToolFunc::builder(name)
        .description("Answers 1.")
        .handler_sync(|_, _| Ok(json!(1)))
        .build()
        .expect("a valid tool")
}

fn registry() -> Registry {
    let registry = Registry::new();
    for name in ["ship", "plus", "yell", "locate", "launch"] {
        let tool = Registry::global().get(name).expect("declared above");
        registry.register(tool).expect("a fresh registry");
    }
    registry
        .register(
            ToolFunc::builder("json_schema_2020_12_tool")
                .description("Tool with JSON Schema 2020-12 features")
                .params_schema(fixture_schema())
                .handler_sync(|_, _| Ok(json!("ok")))
                .build()
                .expect("a valid tool"),
        )
        .expect("a fresh registry");
    registry
}

/// Every entry of every page, following the cursors; and the page lengths.
async fn all_pages(pipe: &mut Pipe) -> (Vec<Value>, Vec<usize>) {
    pages_of(pipe, false).await
}

/// [`all_pages`], in a session or with sessionless (2026-07-28) requests.
async fn pages_of(pipe: &mut Pipe, sessionless: bool) -> (Vec<Value>, Vec<usize>) {
    let (mut tools, mut pages) = (Vec::new(), Vec::new());
    let mut cursor: Option<Value> = None;
    loop {
        let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let response = if sessionless {
            pipe.request_modern("tools/list", params).await
        } else {
            pipe.request("tools/list", params).await
        };
        let result = &response["result"];
        let page = result["tools"].as_array().expect("tools").clone();
        pages.push(page.len());
        tools.extend(page);
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.clone()),
            None => return (tools, pages),
        }
        assert!(pages.len() < 1000, "endless pages");
    }
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

fn listed<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_follow_each_other_in_name_order() {
    let registry = Registry::new();
    for i in (0..10).rev() {
        registry
            .register(tool_named(&format!("t{i:02}")))
            .expect("registers");
    }
    let (mut pipe, _) = Pipe::connect(Server::new(&registry).page_size(3)).await;
    let (tools, pages) = all_pages(&mut pipe).await;
    assert_eq!(pages, [3, 3, 3, 1]);
    let expected: Vec<String> = (0..10).map(|i| format!("t{i:02}")).collect();
    assert_eq!(names(&tools), expected);

    // Asking again gives the same pages (the list is kept, not rebuilt).
    assert_eq!(all_pages(&mut pipe).await.0, tools);

    // A cursor stays good across changes: what is left after it, nothing twice.
    let first = pipe.request("tools/list", json!({})).await;
    let cursor = first["result"]["nextCursor"].clone();
    registry.unregister("t03");
    registry.register(tool_named("t025")).expect("registers");
    registry.register(tool_named("t00a")).expect("registers");
    let next = pipe.request("tools/list", json!({"cursor": cursor})).await;
    let page = next["result"]["tools"].as_array().expect("tools").clone();
    assert_eq!(names(&page), ["t025", "t04", "t05"]);
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_page_keeps_small_registries_whole() {
    let (mut pipe, _) = Pipe::connect(Server::new(registry())).await;
    let response = pipe.request("tools/list", json!({})).await;
    assert!(response["result"].get("nextCursor").is_none(), "{response}");
    assert_eq!(
        response["result"]["tools"].as_array().map(Vec::len),
        Some(6)
    );
    pipe.close().await;

    let big = Registry::new();
    for i in 0..1001 {
        big.register(tool_named(&format!("tool_{i:04}")))
            .expect("registers");
    }
    assert_eq!(toolfunc::mcp::DEFAULT_PAGE_SIZE, 1000);
    let (mut pipe, _) = Pipe::connect(Server::new(big)).await;
    let (tools, pages) = all_pages(&mut pipe).await;
    assert_eq!(pages, [1000, 1]);
    assert_eq!(tools.len(), 1001);
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_this_server_did_not_give_is_invalid_params() {
    let (mut pipe, _) = Pipe::connect(Server::new(registry()).page_size(2)).await;
    for cursor in [json!("garbage"), json!(""), json!("n6"), json!("n2020")] {
        let response = pipe
            .request("tools/list", json!({"cursor": cursor.clone()}))
            .await;
        assert_eq!(response["error"]["code"], -32602, "{cursor}: {response}");
        assert!(response["error"]["message"].is_string(), "{response}");
    }
    // The server answers on.
    let response = pipe.request("tools/list", json!({})).await;
    assert!(response["result"]["nextCursor"].is_string(), "{response}");
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_are_passed_through_as_written() {
    let registry = registry();
    let (mut pipe, _) = Pipe::connect(Server::new(&registry)).await;
    let (tools, _) = all_pages(&mut pipe).await;

    // A schema given as JSON: exactly as given ($schema, $defs with $anchor, $ref,
    // allOf/anyOf, if/then/else, additionalProperties).
    let fixture = listed(&tools, "json_schema_2020_12_tool");
    assert_eq!(fixture["inputSchema"], fixture_schema());

    // A macro tool's schema: the definition's, with its `$defs` and `$ref`s.
    let ship = listed(&tools, "ship");
    let defined = registry.get("ship").expect("registered");
    assert_eq!(ship["inputSchema"], defined.definition().params);
    assert!(
        ship["inputSchema"]["$defs"].get("Address").is_some(),
        "{ship}"
    );
    assert_eq!(
        ship["inputSchema"]["properties"]["to"]["$ref"],
        "#/$defs/Address"
    );
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_schemas_and_structured_content_follow_the_revision() {
    let registry = registry();

    // 2025-11-25: output schemas of objects only, structured content of objects only.
    let (mut pipe, _) = Pipe::connect(Server::new(&registry)).await;
    let (tools, _) = all_pages(&mut pipe).await;
    assert_eq!(listed(&tools, "locate")["outputSchema"]["type"], "object");
    for name in ["plus", "yell", "ship", "launch"] {
        assert!(listed(&tools, name).get("outputSchema").is_none(), "{name}");
    }
    let sum = pipe
        .request(
            "tools/call",
            json!({"name": "plus", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert!(sum["result"].get("structuredContent").is_none(), "{sum}");
    assert_eq!(sum["result"]["content"][0]["text"], "3.0");
    pipe.close().await;

    // 2026-07-28: every result schema, and structured content of any type.
    let mut pipe = Pipe::spawn(Server::new(&registry));
    let list = pipe.request_modern("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    for name in ["plus", "yell", "locate"] {
        let def = registry.get(name).expect("registered");
        assert_eq!(
            Some(&listed(&tools, name)["outputSchema"]),
            def.definition().result.as_ref(),
            "{name}"
        );
    }
    assert_eq!(listed(&tools, "plus")["outputSchema"]["type"], "number");
    // A streaming tool's items are collected into an array its schema does not
    // describe.
    assert!(listed(&tools, "launch").get("outputSchema").is_none());
    for (name, arguments, structured, text) in [
        ("plus", json!({"a": 1, "b": 2}), json!(3.0), "3.0"),
        ("yell", json!({"text": "hi"}), json!("HI"), "HI"),
        (
            "locate",
            json!({}),
            json!({"street": "1 Main St", "city": "Springfield"}),
            r#"{"city":"Springfield","street":"1 Main St"}"#,
        ),
    ] {
        let response = pipe
            .request_modern("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        let result = &response["result"];
        assert_eq!(
            result["structuredContent"], structured,
            "{name}: {response}"
        );
        assert_eq!(result["content"][0]["text"], text, "{name}: {response}");
    }
    let ticks = pipe
        .request_modern("tools/call", json!({"name": "launch", "arguments": {}}))
        .await;
    assert!(
        ticks["result"].get("structuredContent").is_none(),
        "{ticks}"
    );
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_tool_is_the_listed_entry() {
    let registry = registry();
    registry.register_service(Depot).expect("a fresh registry");
    // A tool whose name is also a service method's: the tool wins, listed once.
    registry
        .register(tool_named("depot_check"))
        .expect("a fresh registry");
    let server = Server::new(&registry);
    // Listed as 2026-07-28 clients see the tools (older ones get only object output
    // schemas; `get_tool` is the entry before that cut).
    let mut pipe = Pipe::spawn(server.session());
    let (tools, _) = pages_of(&mut pipe, true).await;
    assert_eq!(
        names(&tools)
            .iter()
            .filter(|n| n.as_str() == "depot_check")
            .count(),
        1
    );
    assert_eq!(listed(&tools, "depot_check")["description"], "Answers 1.");
    for tool in &tools {
        let name = tool["name"].as_str().expect("a name");
        let got = server.get_tool(name).expect("every listed tool");
        assert_eq!(serde_json::to_value(got).expect("serialisable"), *tool);
    }
    assert!(server.get_tool("no_such_tool").is_none());
    assert!(
        server.get_tool("depot").is_none(),
        "services only as methods"
    );

    // A change shows at once.
    registry
        .register(tool_named("late"))
        .expect("a fresh registry");
    assert_eq!(
        server.get_tool("late").map(|t| t.name.into_owned()),
        Some("late".to_owned())
    );
    registry.unregister("late");
    assert!(server.get_tool("late").is_none());
    pipe.close().await;
}

/// Echoes `region`, which 2026-07-28 clients also send as `Mcp-Param-Region`.
#[tool]
fn regional(#[schemars(extend("x-mcp-header" = "Region"))] region: String) -> String {
    format!("region: {region}")
}

#[tokio::test]
async fn an_x_mcp_header_parameter_is_listed_and_checked_against_its_header() {
    use mcp_support::{Answer, LIMIT, modern_request, serve_http};
    let registry = Registry::new();
    registry
        .register(Registry::global().get("regional").unwrap())
        .unwrap();
    let url = serve_http(Server::new(registry).router()).await;
    let http = reqwest::Client::new();
    let listed = Answer::read(
        modern_request(&http, &url, 1, "tools/list", json!({})),
        LIMIT,
    )
    .await
    .response(1);
    let schema = &listed["result"]["tools"][0]["inputSchema"];
    assert_eq!(
        schema["properties"]["region"]["x-mcp-header"], "Region",
        "{listed}"
    );
    let call = |id: i64, header: Option<&str>| {
        let mut request = modern_request(
            &http,
            &url,
            id,
            "tools/call",
            json!({"name": "regional", "arguments": {"region": "eu-west"}}),
        );
        if let Some(value) = header {
            request = request.header("Mcp-Param-Region", value);
        }
        Answer::read(request, LIMIT)
    };
    // The header agrees (as sent, or in its Base64 form): the call runs.
    for (id, header) in [(2, "eu-west"), (3, "=?base64?ZXUtd2VzdA==?=")] {
        let answer = call(id, Some(header)).await;
        let response = answer.response(id);
        assert_eq!(
            response["result"]["content"][0]["text"], "region: eu-west",
            "{response}"
        );
    }
    // It disagrees, or is missing: refused before the tool runs.
    for (id, header) in [(4, Some("us-east")), (5, None)] {
        let answer = call(id, header).await;
        assert_eq!(answer.status, 400, "{}", answer.body);
        assert_eq!(
            answer.response(id)["error"]["code"],
            -32020,
            "{}",
            answer.body
        );
    }
}
