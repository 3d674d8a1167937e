//! The MCP search mode: `tools/list` offers `search_tools` and `call_tool` (and the
//! tools marked always listed) in place of the whole catalogue; a search answers the
//! functions the caller may run, best first; `call_tool` runs a function exactly as
//! a direct `tools/call` of it does; bad input is refused with a clear error.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

#[path = "support/mcp.rs"]
mod mcp_support;

use serde_json::{Value, json};
use toolfunc::auth::ApiKeys;
use toolfunc::mcp::Server;
use toolfunc::{Identity, Registry, tool, tool_service};

use mcp_support::Pipe;

/// Forecasts the weather of a city for the days ahead.
#[tool]
fn weather_forecast(city: String, days: u32) -> String {
    format!("{city}: sunny for {days} days")
}

/// Lists severe weather alerts for a city.
#[tool]
fn weather_alerts(city: String) -> Vec<String> {
    vec![format!("{city}: no alerts")]
}

/// Converts an amount of money into another currency.
#[tool]
fn currency_convert(amount: f64, to: String) -> String {
    format!("{amount} {to}")
}

/// Wipes the weather archive.
#[tool(scopes = ["archive:admin"])]
fn archive_wipe() -> u32 {
    0
}

/// A warehouse's stock.
#[derive(Default)]
struct Stock;

/// The warehouse stock of parcels.
#[tool_service(name = "stock")]
impl Stock {
    /// Counts the parcels in the warehouse stock.
    fn count(&self) -> u32 {
        7
    }

    /// Restocks the warehouse with parcels.
    #[tool(scopes = "stock:write")]
    fn restock(&self, parcels: u32) -> u32 {
        7 + parcels
    }
}

fn registry() -> Registry {
    let registry = Registry::new();
    for name in [
        "weather_forecast",
        "weather_alerts",
        "currency_convert",
        "archive_wipe",
        "stock",
    ] {
        let tool = Registry::global().get(name).expect("declared above");
        registry.register(tool).expect("a fresh registry");
    }
    registry
}

fn names(response: &Value) -> Vec<String> {
    response["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools in {response}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The names a `search_tools` result lists, from its structured content.
fn found(response: &Value) -> Vec<String> {
    let result = &response["result"];
    assert_ne!(result["isError"], true, "{response}");
    result["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("structured tools in {response}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn search(pipe: &mut Pipe, arguments: Value) -> Value {
    pipe.request(
        "tools/call",
        json!({"name": "search_tools", "arguments": arguments}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_offers_the_two_tools_and_the_always_listed() {
    let registry = registry();
    let (mut pipe, _) = Pipe::connect(Server::new(&registry).search_mode(true)).await;
    let response = pipe.request("tools/list", json!({})).await;
    assert_eq!(names(&response), ["search_tools", "call_tool"]);
    let tools = response["result"]["tools"].as_array().expect("tools");
    for tool in tools {
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["query"]));
    assert_eq!(
        tools[1]["inputSchema"]["required"],
        json!(["name", "arguments"])
    );
    pipe.close().await;

    let server = Server::new(&registry).search_mode(true).always_listed([
        "currency_convert",
        "stock_count",
        "no_such_tool",
    ]);
    let (mut pipe, _) = Pipe::connect(server).await;
    let response = pipe.request("tools/list", json!({})).await;
    assert_eq!(
        names(&response),
        [
            "search_tools",
            "call_tool",
            "currency_convert",
            "stock_count"
        ]
    );
    // A direct call by a function's own name still works.
    let response = pipe
        .request(
            "tools/call",
            json!({"name": "weather_forecast", "arguments": {"city": "Oslo", "days": 2}}),
        )
        .await;
    assert_eq!(
        response["result"]["content"][0]["text"], "Oslo: sunny for 2 days",
        "{response}"
    );
    pipe.close().await;

    // Off by default: the whole catalogue is listed.
    let (mut pipe, _) = Pipe::connect(Server::new(&registry)).await;
    let response = pipe.request("tools/list", json!({})).await;
    assert_eq!(
        names(&response),
        [
            "archive_wipe",
            "currency_convert",
            "stock_count",
            "stock_restock",
            "weather_alerts",
            "weather_forecast"
        ]
    );
    let response = search(&mut pipe, json!({"query": "weather"})).await;
    assert_eq!(response["error"]["data"]["code"], "NOT_FOUND", "{response}");
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_ranks_limits_and_answers_callable_definitions() {
    let registry = registry();
    let server = Server::new(&registry).search_mode(true);
    let (mut pipe, _) = Pipe::connect(server).await;

    let response = search(&mut pipe, json!({"query": "weather forecast for a city"})).await;
    let hits = found(&response);
    assert_eq!(hits.first().map(String::as_str), Some("weather_forecast"));
    assert!(hits.contains(&"weather_alerts".to_owned()), "{hits:?}");
    assert!(!hits.contains(&"currency_convert".to_owned()), "{hits:?}");
    let first = &response["result"]["structuredContent"]["tools"][0];
    assert_eq!(
        first["description"],
        "Forecasts the weather of a city for the days ahead."
    );
    assert_eq!(first["inputSchema"]["required"], json!(["city", "days"]));
    // The same definitions as text, for clients that read only text.
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    let parsed: Value = serde_json::from_str(text).expect("JSON text");
    assert_eq!(parsed, response["result"]["structuredContent"]);

    let response = search(&mut pipe, json!({"query": "weather", "limit": 1})).await;
    assert_eq!(found(&response).len(), 1, "{response}");

    // A service hit answers its acts, each by the function name a call takes.
    let response = search(&mut pipe, json!({"query": "warehouse parcels"})).await;
    let hits = found(&response);
    assert!(hits.contains(&"stock_count".to_owned()), "{hits:?}");
    assert!(hits.contains(&"stock_restock".to_owned()), "{hits:?}");
    assert!(!hits.contains(&"stock".to_owned()), "{hits:?}");

    // Nothing matches: an empty list, not an error.
    let response = search(&mut pipe, json!({"query": "zebra"})).await;
    assert!(found(&response).is_empty(), "{response}");
    pipe.close().await;
}

/// A tool error result's code.
fn error_code(response: &Value) -> &Value {
    assert_eq!(response["result"]["isError"], true, "{response}");
    &response["result"]["_meta"]["io.github.toolfunc/error"]["code"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_search_input_is_a_clear_error() {
    let registry = registry();
    let server = Server::new(&registry)
        .search_mode(true)
        .max_search_results(5)
        .max_search_query(20);
    let (mut pipe, _) = Pipe::connect(server).await;
    for (arguments, path) in [
        (json!({}), "/query"),
        (json!({"query": 3}), "/query"),
        (json!({"query": "  "}), "/query"),
        (json!({"query": "x".repeat(21)}), "/query"),
        (json!({"query": "weather", "limit": 0}), "/limit"),
        (json!({"query": "weather", "limit": 6}), "/limit"),
        (json!({"query": "weather", "limit": -1}), "/limit"),
        (json!({"query": "weather", "limit": "2"}), "/limit"),
    ] {
        let response = search(&mut pipe, arguments.clone()).await;
        assert_eq!(
            *error_code(&response),
            "ARGUMENTS",
            "{arguments}: {response}"
        );
        assert_eq!(
            response["result"]["_meta"]["io.github.toolfunc/error"]["data"]["path"], path,
            "{arguments}: {response}"
        );
        let text = response["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains(&path[1..]), "{text}");
    }
    // The largest limit is accepted, and the schema tells it.
    let response = search(&mut pipe, json!({"query": "weather", "limit": 5})).await;
    assert!(!found(&response).is_empty(), "{response}");
    let list = pipe.request("tools/list", json!({})).await;
    assert_eq!(
        list["result"]["tools"][0]["inputSchema"]["properties"]["limit"]["maximum"],
        5
    );
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tool_runs_a_function_as_a_direct_call_does() {
    let registry = registry();
    let (mut pipe, _) = Pipe::connect(Server::new(&registry).search_mode(true)).await;
    let via = |name: &str, arguments: Value| json!({"name": "call_tool", "arguments": {"name": name, "arguments": arguments}});
    let direct = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});
    let cases = [
        ("weather_forecast", json!({"city": "Oslo", "days": 3})),
        ("stock_count", json!({})),
        ("stock_restock", json!({"parcels": 2})),
        // Bad arguments: the tool's own error result.
        ("weather_forecast", json!({"city": "Oslo", "days": "three"})),
        ("weather_forecast", json!({})),
        // Unknown: the same JSON-RPC error.
        ("no_such_tool", json!({})),
        ("stock", json!({})),
    ];
    for (name, arguments) in cases {
        let wrapped = pipe
            .request("tools/call", via(name, arguments.clone()))
            .await;
        let plain = pipe.request("tools/call", direct(name, arguments)).await;
        assert_eq!(wrapped.get("result"), plain.get("result"), "{name}");
        assert_eq!(wrapped.get("error"), plain.get("error"), "{name}");
    }
    let response = pipe
        .request("tools/call", via("stock_restock", json!({"parcels": 2})))
        .await;
    assert_eq!(response["result"]["content"][0]["text"], "9", "{response}");
    let response = pipe
        .request("tools/call", via("no_such_tool", json!({})))
        .await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert_eq!(response["error"]["data"]["name"], "no_such_tool");
    let response = pipe
        .request("tools/call", via("weather_forecast", json!({"days": 1})))
        .await;
    assert_eq!(*error_code(&response), "ARGUMENTS", "{response}");

    // Bad input to call_tool itself.
    for (arguments, path) in [
        (json!({}), "/name"),
        (json!({"name": 5, "arguments": {}}), "/name"),
        (
            json!({"name": "stock_count", "arguments": [1]}),
            "/arguments",
        ),
    ] {
        let response = pipe
            .request(
                "tools/call",
                json!({"name": "call_tool", "arguments": arguments}),
            )
            .await;
        assert_eq!(
            *error_code(&response),
            "ARGUMENTS",
            "{arguments}: {response}"
        );
        assert_eq!(
            response["result"]["_meta"]["io.github.toolfunc/error"]["data"]["path"], path,
            "{response}"
        );
    }
    // `arguments` may be left out for a function that takes none.
    let response = pipe
        .request(
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "stock_count"}}),
        )
        .await;
    assert_eq!(response["result"]["content"][0]["text"], "7", "{response}");
    pipe.close().await;
}

fn keys() -> ApiKeys {
    ApiKeys::new().key("guest-key", Identity::new("guest")).key(
        "admin-key",
        Identity::new("admin").with_scopes(["archive:admin", "stock:write"]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_and_call_tool_honour_the_callers_scopes() {
    let server = Server::new(registry())
        .search_mode(true)
        .always_listed(["archive_wipe", "weather_alerts"])
        .authenticate(keys());
    let url = mcp_support::serve_http(server.router()).await;
    let client = reqwest::Client::new();
    let ask = |key: &'static str, id: i64, method: &'static str, params: Value| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let answer = mcp_support::Answer::read(
                mcp_support::modern_request(&client, &url, id, method, params)
                    .header("Authorization", format!("Bearer {key}")),
                mcp_support::LIMIT,
            )
            .await;
            (answer.status, answer.response(id))
        }
    };
    let query = json!({"name": "search_tools", "arguments": {"query": "wipe archive restock warehouse parcels", "limit": 20}});

    let (_, guest) = ask("guest-key", 1, "tools/call", query.clone()).await;
    let hits = found(&guest);
    assert!(!hits.contains(&"archive_wipe".to_owned()), "{hits:?}");
    assert!(!hits.contains(&"stock_restock".to_owned()), "{hits:?}");
    assert!(hits.contains(&"stock_count".to_owned()), "{hits:?}");
    let (_, list) = ask("guest-key", 2, "tools/list", json!({})).await;
    assert_eq!(
        names(&list),
        ["search_tools", "call_tool", "weather_alerts"]
    );

    let (_, admin) = ask("admin-key", 3, "tools/call", query).await;
    let hits = found(&admin);
    assert!(hits.contains(&"archive_wipe".to_owned()), "{hits:?}");
    assert!(hits.contains(&"stock_restock".to_owned()), "{hits:?}");
    let (_, list) = ask("admin-key", 4, "tools/list", json!({})).await;
    assert_eq!(
        names(&list),
        [
            "search_tools",
            "call_tool",
            "archive_wipe",
            "weather_alerts"
        ]
    );

    // call_tool refuses as a direct call does: 403 with the scope to ask for.
    let wrapped = json!({"name": "call_tool", "arguments": {"name": "stock_restock", "arguments": {"parcels": 1}}});
    let direct = json!({"name": "stock_restock", "arguments": {"parcels": 1}});
    let (status_wrapped, wrapped) = ask("guest-key", 5, "tools/call", wrapped).await;
    let (status_direct, direct) = ask("guest-key", 6, "tools/call", direct).await;
    assert_eq!(status_wrapped, status_direct);
    assert_eq!(wrapped["error"], direct["error"], "{wrapped}");
    assert_eq!(wrapped["error"]["data"]["code"], "INSUFFICIENT_SCOPE");
    let (_, ran) = ask(
        "admin-key",
        7,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "stock_restock", "arguments": {"parcels": 1}}}),
    )
    .await;
    assert_eq!(ran["result"]["content"][0]["text"], "8", "{ran}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_layers_hide_is_neither_found_nor_listed_nor_called() {
    let registry = registry().layer(toolfunc::layer::visibility(|tool, _viewer| {
        tool.name != "weather_alerts"
    }));
    let server = Server::new(&registry)
        .search_mode(true)
        .always_listed(["weather_alerts", "weather_forecast"]);
    let (mut pipe, _) = Pipe::connect(server).await;
    let response = pipe.request("tools/list", json!({})).await;
    assert_eq!(
        names(&response),
        ["search_tools", "call_tool", "weather_forecast"]
    );
    let response = search(&mut pipe, json!({"query": "weather alerts for a city"})).await;
    let hits = found(&response);
    assert_eq!(hits.first().map(String::as_str), Some("weather_forecast"));
    assert!(!hits.contains(&"weather_alerts".to_owned()), "{hits:?}");
    let wrapped = pipe
        .request(
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "weather_alerts", "arguments": {"city": "Oslo"}}}),
        )
        .await;
    let direct = pipe
        .request(
            "tools/call",
            json!({"name": "weather_alerts", "arguments": {"city": "Oslo"}}),
        )
        .await;
    assert_eq!(wrapped["error"]["data"]["code"], "NOT_FOUND", "{wrapped}");
    assert_eq!(wrapped["error"], direct["error"]);
    pipe.close().await;
}
