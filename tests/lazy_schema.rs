//! `ToolBuilder::params_schema_with`: a parameters schema made the first time
//! anything reads it. Building and registering make nothing; a listing, a search, an
//! export or a call makes it once; it is then checked like a given schema, and one
//! that cannot be used fails calls with `DEFINITION` and is left out of MCP's list.

#[path = "support/mcp.rs"]
mod mcp_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolfunc::llm::{self, Target};
use toolfunc::mcp::Server;
use toolfunc::{Registry, ToolFunc};

use mcp_support::Pipe;

/// A tool whose schema counts how many times it was made.
fn counted(name: &str, made: &Arc<AtomicUsize>, schema: Value) -> ToolFunc {
    let made = Arc::clone(made);
    ToolFunc::builder(name)
        .description("Books a room by its floor and number.")
        .params_schema_with(move || {
            made.fetch_add(1, Ordering::SeqCst);
            schema.clone()
        })
        .handler_sync(|_, args| Ok(args))
        .build()
        .expect("a valid tool")
}

fn room_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "floor": {"type": "integer", "minimum": 0, "description": "The storey of the hotel."},
            "number": {"type": "integer", "minimum": 1}
        },
        "required": ["floor"]
    })
}

#[test]
fn building_and_registering_make_nothing_and_a_call_makes_it_once() {
    let made = Arc::new(AtomicUsize::new(0));
    let tool = counted("book_room", &made, room_schema());
    assert!(!tool.definition().params.is_made());
    let registry = Registry::new();
    registry.register(tool).expect("registers");
    let _ = registry.names();
    assert_eq!(
        made.load(Ordering::SeqCst),
        0,
        "nothing read the schema yet"
    );

    assert_eq!(
        registry
            .run_sync("book_room", json!({"floor": 2, "number": 7}))
            .expect("valid arguments"),
        json!({"floor": 2, "number": 7})
    );
    // Checked as a given schema is: its bounds hold, its path is named.
    let err = registry
        .run_sync("book_room", json!({"floor": -1}))
        .expect_err("below the minimum");
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(
        err.data().and_then(|d| d.get("path").cloned()),
        Some(json!("/floor"))
    );
    let err = registry
        .run_sync("book_room", json!({}))
        .expect_err("floor is required");
    assert_eq!(err.code(), "ARGUMENTS");
    // Positional arguments follow the schema's properties once it is made.
    assert_eq!(
        registry
            .run_sync("book_room", vec![json!(3), json!(9)])
            .expect("positional arguments"),
        json!({"floor": 3, "number": 9})
    );
    // Read by the definitions, a search and an export: still made once.
    let defs = registry.definitions();
    assert_eq!(defs[0].params["properties"]["floor"]["minimum"], 0);
    let found = registry.search("storey", 5);
    assert_eq!(
        found.first().map(|hit| hit.definition().name.as_str()),
        Some("book_room")
    );
    let exported = llm::tools(&registry, Target::OpenAi).expect("exports");
    assert!(exported.to_string().contains("storey"), "{exported}");
    assert_eq!(made.load(Ordering::SeqCst), 1);
}

#[test]
fn a_made_schema_gets_properties_and_param_order_still_rules() {
    let tool = ToolFunc::builder("ordered_later")
        .params_schema_with(|| json!({"type": "object"}))
        .handler_sync(|_, args| Ok(args))
        .build()
        .expect("a valid tool");
    // Providers expect `properties` on an object root, even an empty one.
    assert_eq!(
        tool.definition().params,
        json!({"type": "object", "properties": {}})
    );

    let tool = ToolFunc::builder("ordered_lazily")
        .params_schema_with(room_schema)
        .param_order(["number", "floor"])
        .handler_sync(|_, args| Ok(args))
        .build()
        .expect("a valid tool");
    let registry = Registry::new();
    registry.register(tool).expect("registers");
    assert_eq!(
        registry
            .run_sync("ordered_lazily", vec![json!(4), json!(1)])
            .expect("positional arguments"),
        json!({"number": 4, "floor": 1})
    );
}

#[test]
fn a_schema_that_cannot_be_used_fails_each_call_with_definition() {
    let registry = Registry::new();
    for (name, schema) in [
        ("not_an_object", json!({"type": "array"})),
        (
            "bad_pattern",
            json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "(["}}}),
        ),
    ] {
        let tool = ToolFunc::builder(name)
            .params_schema_with(move || schema.clone())
            .handler_sync(|_, _| Ok(json!("ran")))
            .build()
            .expect("nothing is made at build");
        registry.register(tool).expect("registers");
        for _ in 0..2 {
            let err = registry
                .run_sync(name, json!({"s": "x"}))
                .expect_err("the schema cannot be used");
            assert_eq!(err.code(), "DEFINITION", "{name}: {err:?}");
        }
    }
}

#[test]
fn a_schema_function_that_panics_fails_calls_and_listings_go_on() {
    let registry = Registry::new();
    let tool = ToolFunc::builder("panicky")
        .params_schema_with(|| panic!("the spec could not be read"))
        .handler_sync(|_, _| Ok(json!("ran")))
        .build()
        .expect("nothing is made at build");
    registry.register(tool).expect("registers");
    let err = registry
        .run_sync("panicky", json!({}))
        .expect_err("no usable schema");
    assert_eq!(err.code(), "DEFINITION");
    // An export refuses it as it refuses any tool it cannot say.
    let err = llm::tools(&registry, Target::OpenAi).expect_err("no usable schema");
    assert_eq!(err.code(), "DEFINITION");
    assert_eq!(registry.definitions()[0].params, Value::Null);
    // The HTTP API's documents are made around it, without a panic.
    let api = toolfunc::http::Api::new(registry.clone());
    let document = api.openapi_document();
    assert!(document["paths"].is_object(), "{document}");
}

#[tokio::test]
async fn mcp_lists_made_schemas_and_leaves_out_one_whose_root_is_not_an_object() {
    let made = Arc::new(AtomicUsize::new(0));
    let registry = Registry::new();
    registry
        .register(counted("book_room", &made, room_schema()))
        .expect("registers");
    registry
        .register(counted("broken_root", &made, json!({"type": "string"})))
        .expect("registers");
    let (mut pipe, _) = Pipe::connect(Server::new(registry)).await;
    assert_eq!(made.load(Ordering::SeqCst), 0, "the handshake made nothing");

    let listed = pipe.request("tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().expect("a tool list");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["book_room"], "{listed}");
    assert_eq!(tools[0]["inputSchema"], room_schema());
    assert_eq!(made.load(Ordering::SeqCst), 2);

    let called = pipe
        .request(
            "tools/call",
            json!({"name": "book_room", "arguments": {"floor": 1}}),
        )
        .await;
    assert_eq!(
        called["result"]["structuredContent"],
        json!({"floor": 1}),
        "{called}"
    );
    assert_eq!(made.load(Ordering::SeqCst), 2, "made once each, then kept");
}
