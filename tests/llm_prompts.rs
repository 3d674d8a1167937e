//! A got prompt rendered as each provider's messages by `llm::prompt_messages`: the
//! shapes their APIs document (OpenAI Chat Completions content parts, Anthropic
//! content blocks with alternating turns, Gemini `contents` with `user`/`model`
//! roles and `inlineData`, MCP's own), and nothing dropped without a word.

use serde_json::{Value, json};
use toolfunc::Registry;
use toolfunc::content::{Block, Resource, ResourceLink};
use toolfunc::llm::{Target, prompt_messages};
use toolfunc::prompt::{PromptFunc, PromptMessage, PromptResult};

/// A prompt of every kind of content, got through a registry.
async fn got() -> PromptResult {
    let registry = Registry::new();
    registry
        .register_prompt(
            PromptFunc::builder("look")
                .argument("what", "What to look at.", true)
                .handler_sync(|_, args| {
                    let what = args["what"].as_str().unwrap_or_default().to_owned();
                    Ok(vec![
                        PromptMessage::user(format!("Look at the {what}.")),
                        PromptMessage::user(Block::image([1_u8, 2, 3], "image/png")),
                        PromptMessage::user(Block::audio([4_u8, 5], "audio/wav")),
                        PromptMessage::assistant("I see it."),
                        PromptMessage::assistant(Block::image([1_u8], "image/png")),
                        PromptMessage::user(
                            ResourceLink::new("file:///spec.md", "spec").description("The spec."),
                        ),
                        PromptMessage::user(Resource::from_text("file:///notes.md", "# Notes")),
                        PromptMessage::user(
                            Resource::from_bytes("file:///a.pdf", b"%PDF")
                                .with_mime_type("application/pdf"),
                        ),
                    ])
                })
                .build()
                .expect("a valid prompt"),
        )
        .expect("a fresh name");
    registry
        .prompt("look", json!({"what": "chart"}))
        .await
        .expect("got")
}

#[tokio::test]
async fn openai_gets_chat_messages_with_content_parts() {
    let messages = prompt_messages(&got().await, Target::OpenAi);
    assert_eq!(
        messages,
        json!([
            {"role": "user", "content": "Look at the chart."},
            {"role": "user", "content": [{
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64,AQID"},
            }]},
            {"role": "user", "content": [{
                "type": "input_audio",
                "input_audio": {"data": "BAU=", "format": "wav"},
            }]},
            {"role": "assistant", "content": "I see it."},
            // An assistant turn takes text only.
            {"role": "assistant", "content": "[an image (image/png) left out]"},
            {"role": "user", "content": "[spec](file:///spec.md): The spec."},
            {"role": "user", "content": "file:///notes.md:\n# Notes"},
            {"role": "user", "content": "[the resource file:///a.pdf (application/pdf) left out]"},
        ])
    );
    assert_eq!(
        prompt_messages(&got().await, Target::OpenAiStrict),
        messages
    );
}

#[tokio::test]
async fn anthropic_gets_alternating_turns_of_content_blocks() {
    let messages = prompt_messages(&got().await, Target::Anthropic);
    let roles: Vec<&str> = messages
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"], "turns alternate");
    assert_eq!(
        messages[0]["content"],
        json!([
            {"type": "text", "text": "Look at the chart."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AQID"}},
            // Anthropic takes no audio.
            {"type": "text", "text": "[audio (audio/wav) left out]"},
        ])
    );
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "text", "text": "I see it."},
            {"type": "text", "text": "[an image (image/png) left out]"},
        ])
    );
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "text", "text": "[spec](file:///spec.md): The spec."},
            {"type": "text", "text": "file:///notes.md:\n# Notes"},
            {"type": "document", "source": {
                "type": "base64", "media_type": "application/pdf", "data": "JVBERg==",
            }, "title": "file:///a.pdf"},
        ])
    );
}

#[tokio::test]
async fn gemini_gets_user_and_model_contents_of_parts() {
    let messages = prompt_messages(&got().await, Target::Gemini);
    let roles: Vec<&str> = messages
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "model", "user"]);
    assert_eq!(
        messages[0]["parts"],
        json!([
            {"text": "Look at the chart."},
            {"inlineData": {"mimeType": "image/png", "data": "AQID"}},
            {"inlineData": {"mimeType": "audio/wav", "data": "BAU="}},
        ])
    );
    assert_eq!(
        messages[2]["parts"][2],
        json!({"inlineData": {"mimeType": "application/pdf", "data": "JVBERg=="}})
    );
}

#[tokio::test]
async fn mcp_gets_the_messages_as_prompts_get_answers_them() {
    let result = got().await;
    let messages = prompt_messages(&result, Target::Mcp);
    assert_eq!(messages.as_array().map(Vec::len), Some(8));
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": {"type": "text", "text": "Look at the chart."}})
    );
    let back: Vec<PromptMessage> = serde_json::from_value(messages).expect("MCP messages");
    assert_eq!(back, result.messages);
    // No messages, no turns.
    assert_eq!(
        prompt_messages(&PromptResult::new([]), Target::Anthropic),
        Value::Array(Vec::new())
    );
}
