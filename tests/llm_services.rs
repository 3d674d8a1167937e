//! Services in LLM exports: each method is its own function, `{service}_{method}`,
//! and a model's call of one runs the service with that act.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;

use serde_json::{Value, json};
use toolfunc::Registry;
use toolfunc::llm::{Target, run_tool_calls, tools};

fn names(export: &Value, key: impl Fn(&Value) -> &Value) -> Vec<String> {
    export
        .as_array()
        .unwrap()
        .iter()
        .map(|t| key(t).as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn each_method_is_a_function() {
    let registry = Registry::global();
    let openai = tools(registry, Target::OpenAiStrict).unwrap();
    let listed = names(&openai, |t| &t["function"]["name"]);
    for name in [
        "add",
        "greeter_hello",
        "greeter_mul",
        "users_list",
        "users_get",
        "users_post",
        "users_put",
        "users_delete",
        "users_promote",
    ] {
        assert!(
            listed.iter().any(|n| n == name),
            "{name} missing from {listed:?}"
        );
    }
    assert!(!listed.iter().any(|n| n == "greeter" || n == "users"));
    let hello = openai
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "greeter_hello")
        .unwrap();
    let parameters = &hello["function"]["parameters"];
    assert_eq!(parameters["required"], json!(["name"]));
    assert_eq!(
        parameters["properties"]["name"]["description"],
        "Who to greet."
    );
    assert!(parameters["properties"].get("act").is_none());
    assert_eq!(hello["function"]["description"], "Say hello.");

    for (target, key) in [
        (Target::Anthropic, "name"),
        (Target::Gemini, "name"),
        (Target::Mcp, "name"),
    ] {
        let export = tools(registry, target).unwrap();
        let listed = names(&export, |t| &t[key]);
        assert!(
            listed.iter().any(|n| n == "users_promote"),
            "{target:?}: {listed:?}"
        );
    }
    // MCP keeps each method's own hints and result schema.
    let mcp = tools(registry, Target::Mcp).unwrap();
    let get = mcp
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "users_get")
        .unwrap();
    assert_eq!(get["outputSchema"]["type"], "object");
    assert_eq!(get["inputSchema"]["required"], json!(["id"]));
}

#[tokio::test]
async fn calls_of_method_functions_run_the_service() {
    let registry = Registry::global();
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "greeter_hello", "arguments": "{\"name\": \"Ann\"}"}},
        {"id": "c2", "type": "function",
         "function": {"name": "users_get", "arguments": "{\"id\": \"1\"}"}},
        {"id": "c3", "type": "function",
         "function": {"name": "users_nope", "arguments": "{}"}}
    ]});
    let reply = run_tool_calls(registry, Target::OpenAi, &message)
        .await
        .unwrap();
    assert_eq!(reply[0]["content"], "hello Ann");
    assert_eq!(reply[0]["tool_call_id"], "c1");
    let user: Value = serde_json::from_str(reply[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(user["name"], "Alice");
    assert!(
        reply[2]["content"].as_str().unwrap().contains("NOT_FOUND"),
        "{reply}"
    );

    // Gemini answers under the name the model called.
    let message = json!({"role": "model", "parts": [
        {"functionCall": {"name": "greeter_mul", "args": {"a": 6, "b": 7}}}
    ]});
    let reply = run_tool_calls(registry, Target::Gemini, &message)
        .await
        .unwrap();
    let response = &reply["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "greeter_mul");
    assert_eq!(response["response"]["result"], json!(42.0));

    // Anthropic: an error is a result the model reads.
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "users_get", "input": {"id": "99"}}
    ]});
    let reply = run_tool_calls(registry, Target::Anthropic, &message)
        .await
        .unwrap();
    assert_eq!(reply["content"][0]["is_error"], true);
}
