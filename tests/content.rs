//! Rich results: a tool answers with [`Content`] (text, images, audio, links,
//! embedded resources, a structured value), and every surface carries it as well
//! as it can: in process and over HTTP as its JSON, to LLM providers as what each
//! accepts, with what it cannot take named in text.

#[path = "support/http.rs"]
mod http_support;

use serde_json::{Value, json};
use toolfunc::content::{Block, ResourceLink};
use toolfunc::http::Api;
use toolfunc::llm::{self, Target};
use toolfunc::{Content, Registry, ToolError, ToolFunc, tool, tool_service};

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fn png() -> Vec<u8> {
    Block::Image {
        data: PNG.into(),
        mime_type: "image/png".into(),
    }
    .bytes()
    .expect("the fixture is base64")
}

/// A chart of the week, with its numbers.
#[tool]
fn ct_chart(days: u32) -> Content {
    Content::structured(json!({"days": days, "total": 42}))
        .and_text(format!("{days} days, 42 in all"))
        .image(png(), "image/png")
}

/// Every kind of block at once.
#[tool]
fn ct_everything() -> Content {
    Content::text("Multiple content types test:")
        .image(png(), "image/png")
        .audio(b"RIFF....WAVE", "audio/wav")
        .link(ResourceLink::new("test://report", "report").mime_type("text/csv"))
        .resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        )
        .resource_blob("test://paper", "application/pdf", b"%PDF-1.7")
}

/// A plain object result, for contrast: not content.
#[tool]
fn ct_plain() -> Value {
    json!({"content": [{"type": "text", "text": "not blocks"}]})
}

#[derive(Default)]
struct Gallery;

#[tool_service(name = "ct_gallery")]
impl Gallery {
    /// One picture.
    fn picture(&self) -> Content {
        Content::text("a picture").image(png(), "image/png")
    }
}

fn registry() -> Registry {
    let registry = Registry::new();
    for name in ["ct_chart", "ct_everything", "ct_plain", "ct_gallery"] {
        registry
            .register(Registry::global().get(name).expect(name))
            .expect("register");
    }
    registry
}

#[tokio::test]
async fn in_process_a_content_result_is_its_json_and_reads_back() {
    let value = registry()
        .run("ct_chart", json!({"days": 7}))
        .await
        .unwrap();
    assert_eq!(value["structuredContent"], json!({"days": 7, "total": 42}));
    assert_eq!(
        value["content"][0],
        json!({"type": "text", "text": "7 days, 42 in all"})
    );
    assert_eq!(
        value["content"][1],
        json!({"type": "image", "data": PNG, "mimeType": "image/png"})
    );
    let content = Content::from_value(value).unwrap();
    assert_eq!(content.blocks()[1].bytes().unwrap(), png());
    assert_eq!(content.blocks()[1].mime_type(), Some("image/png"));
    // Anything else is an OUTPUT error, not a panic.
    let err = Content::from_value(json!({"content": 3})).unwrap_err();
    assert_eq!(err.code(), "OUTPUT");
}

#[test]
fn the_result_schema_marks_content() {
    let registry = registry();
    let chart = registry.get("ct_chart").unwrap();
    let schema = chart.definition().result.clone().unwrap();
    assert_eq!(schema["x-toolfunc-content"], true, "{schema}");
    assert!(toolfunc::content::is_content_schema(Some(&schema)));
    let plain = registry.get("ct_plain").unwrap();
    assert!(!toolfunc::content::is_content_schema(
        plain.definition().result.as_ref()
    ));
    // MCP's outputSchema describes structuredContent: a Content result has none.
    let exported = llm::tool(chart.definition(), Target::Mcp).unwrap();
    assert!(exported.get("outputSchema").is_none(), "{exported}");
}

#[test]
fn every_block_has_its_wire_shape() {
    let value = serde_json::to_value(
        Content::text("x").link(
            ResourceLink::new("test://a", "a")
                .mime_type("text/plain")
                .description("the a"),
        ),
    )
    .unwrap();
    assert_eq!(
        value,
        json!({"content": [
            {"type": "text", "text": "x"},
            {"type": "resource_link", "uri": "test://a", "name": "a",
             "description": "the a", "mimeType": "text/plain"}
        ]})
    );
    let back: Content = serde_json::from_value(value).unwrap();
    assert!(matches!(back.blocks()[1], Block::ResourceLink(_)));
    // A block of a kind this version does not know is refused clearly.
    let err = Content::from_value(json!({"content": [{"type": "hologram"}]})).unwrap_err();
    assert!(err.to_string().contains("hologram"), "{err}");
}

#[tokio::test]
async fn over_http_the_answer_is_the_content_json() {
    let addr = http_support::start(Api::new(registry())).await;
    let answer = http_support::post(addr, "/api/ct_chart", r#"{"days":3}"#)
        .await
        .ok();
    assert_eq!(answer["content"][1]["data"], PNG);
    assert_eq!(answer["structuredContent"]["days"], 3);
    // And the client reads it back as the same value.
    let url = format!("http://{addr}/api");
    let client = toolfunc::http::Client::connect(&url).await.unwrap();
    let value = client.run("ct_chart", json!({"days": 3})).await.unwrap();
    assert_eq!(value, answer);
}

fn anthropic_call(name: &str, input: &Value) -> Value {
    json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": name, "input": input}
    ]})
}

#[tokio::test]
async fn anthropic_gets_text_images_and_documents_and_is_told_what_was_left_out() {
    let reply = llm::run_tool_calls(
        &registry(),
        Target::Anthropic,
        &anthropic_call("ct_everything", &json!({})),
    )
    .await
    .unwrap();
    let blocks = reply["content"][0]["content"].as_array().unwrap().clone();
    assert_eq!(
        blocks[0],
        json!({"type": "text", "text": "Multiple content types test:"})
    );
    assert_eq!(
        blocks[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}})
    );
    let audio = blocks[2]["text"].as_str().unwrap();
    assert!(
        audio.contains("audio/wav") && audio.contains("left out"),
        "{audio}"
    );
    assert!(
        blocks[3]["text"]
            .as_str()
            .unwrap()
            .contains("test://report")
    );
    assert_eq!(blocks[4]["text"], r#"{"test":"data","value":123}"#);
    assert_eq!(blocks[5]["type"], "document");
    assert_eq!(blocks[5]["source"]["media_type"], "application/pdf");
    // A service method answering with content, called as `{service}_{method}`.
    let reply = llm::run_tool_calls(
        &registry(),
        Target::Anthropic,
        &anthropic_call("ct_gallery_picture", &json!({})),
    )
    .await
    .unwrap();
    assert_eq!(reply["content"][0]["content"][1]["type"], "image");
}

#[tokio::test]
async fn openai_gets_text_and_a_line_for_each_block_it_cannot_carry() {
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "ct_everything", "arguments": "{}"}}
    ]});
    let reply = llm::run_tool_calls(&registry(), Target::OpenAi, &message)
        .await
        .unwrap();
    let text = reply[0]["content"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Multiple content types test:");
    assert!(
        lines[1].contains("image/png") && lines[1].contains("text only"),
        "{text}"
    );
    assert!(lines[2].contains("audio/wav"), "{text}");
    assert_eq!(lines[4], r#"{"test":"data","value":123}"#);
    assert!(!text.contains(PNG), "no base64 in a text message");
}

#[tokio::test]
async fn gemini_gets_the_structured_value_or_the_text() {
    let message = json!({"role": "model", "parts": [
        {"functionCall": {"name": "ct_chart", "args": {"days": 2}}}
    ]});
    let reply = llm::run_tool_calls(&registry(), Target::Gemini, &message)
        .await
        .unwrap();
    assert_eq!(
        reply["parts"][0]["functionResponse"]["response"],
        json!({"result": {"days": 2, "total": 42}})
    );
}

#[tokio::test]
async fn a_plain_value_shaped_like_content_stays_a_plain_value() {
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "ct_plain", "arguments": "{}"}}
    ]});
    let reply = llm::run_tool_calls(&registry(), Target::OpenAi, &message)
        .await
        .unwrap();
    let text = reply[0]["content"].as_str().unwrap();
    let back: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        back,
        json!({"content": [{"type": "text", "text": "not blocks"}]})
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[tokio::test]
async fn builder_tools_answer_with_content_too() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("snapshot")
                .typed_sync(|_ctx, _: NoArgs| {
                    Ok::<_, ToolError>(Content::text("snap").image(png(), "image/png"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let def = registry.get("snapshot").unwrap().definition().clone();
    assert!(toolfunc::content::is_content_schema(def.result.as_ref()));
    let value = registry.run("snapshot", json!({})).await.unwrap();
    assert_eq!(value["content"][1]["mimeType"], "image/png");
}
