//! A prompt's messages in each provider's message format, to start or extend a
//! conversation with.

use serde_json::{Value, json};

use super::Target;
use crate::content::{Block, Resource};
use crate::prompt::{PromptResult, Role};

/// The messages of a got prompt as a provider takes them in a request's messages
/// (or `contents`):
///
/// - **OpenAI** (`OpenAi`, `OpenAiStrict`): Chat Completions messages, one per
///   prompt message: `{"role", "content"}` with the text as a string, an image as an
///   `image_url` part with a `data:` URL and audio (WAV or MP3) as an `input_audio`
///   part (both in user messages). The Responses API takes the same messages as
///   `input`.
/// - **Anthropic**: `{"role", "content": [blocks]}`, consecutive messages of one
///   role joined (the API wants turns to alternate): `text`, base64 `image`, and a
///   PDF as a base64 `document` (images and documents in user turns).
/// - **Gemini**: `{"role": "user" | "model", "parts": [...]}`, consecutive messages
///   of one role joined: `text` and `inlineData` parts.
/// - **MCP**: the messages as `prompts/get` answers them.
///
/// What a provider cannot take where it stands (audio for Anthropic, an image in
/// an assistant turn, a binary resource of another type) becomes a line of text
/// that says what it was, so nothing is dropped without a word. An embedded text
/// resource is its text, under its URI; a resource link is its name and URI.
///
/// ```
/// use serde_json::json;
/// use toolfunc::llm::{prompt_messages, Target};
/// use toolfunc::prompt::{PromptMessage, PromptResult};
///
/// let got = PromptResult::new([
///     PromptMessage::user("Review this code."),
///     PromptMessage::assistant("Send it over."),
/// ]);
/// assert_eq!(
///     prompt_messages(&got, Target::OpenAi),
///     json!([
///         {"role": "user", "content": "Review this code."},
///         {"role": "assistant", "content": "Send it over."},
///     ])
/// );
/// assert_eq!(
///     prompt_messages(&got, Target::Gemini),
///     json!([
///         {"role": "user", "parts": [{"text": "Review this code."}]},
///         {"role": "model", "parts": [{"text": "Send it over."}]},
///     ])
/// );
/// ```
pub fn prompt_messages(result: &PromptResult, target: Target) -> Value {
    match target {
        Target::OpenAi | Target::OpenAiStrict => Value::Array(
            result
                .messages
                .iter()
                .map(|m| openai(m.role, &m.content))
                .collect(),
        ),
        Target::Anthropic | Target::AnthropicStrict => joined(result, "assistant", anthropic),
        Target::Gemini => joined(result, "model", gemini),
        Target::Mcp => json!(result.messages),
    }
}

/// The provider's name of `role` (`assistant` its word for the model).
fn role_name(role: Role, assistant: &'static str) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => assistant,
    }
}

/// Messages of `{"role", <key>: [parts]}`, consecutive ones of one role joined:
/// Anthropic's `content` and Gemini's `parts`.
fn joined(
    result: &PromptResult,
    assistant: &'static str,
    part: fn(Role, &Block) -> Value,
) -> Value {
    let key = if assistant == "model" {
        "parts"
    } else {
        "content"
    };
    let mut messages: Vec<Value> = Vec::new();
    for message in &result.messages {
        let role = role_name(message.role, assistant);
        let part = part(message.role, &message.content);
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(parts) = last[key].as_array_mut() {
                    parts.push(part);
                }
            }
            _ => messages.push(json!({"role": role, key: [part]})),
        }
    }
    Value::Array(messages)
}

/// One OpenAI Chat Completions message.
fn openai(role: Role, block: &Block) -> Value {
    let role_text = role_name(role, "assistant");
    let user = role == Role::User;
    let part = match block {
        Block::Text { text } => return json!({"role": role_text, "content": text}),
        Block::Image { data, mime_type } if user => json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{mime_type};base64,{data}")},
        }),
        Block::Audio { data, mime_type } if user && audio_format(mime_type).is_some() => json!({
            "type": "input_audio",
            "input_audio": {"data": data, "format": audio_format(mime_type)},
        }),
        Block::Resource { resource } if user && is_image(resource) => json!({
            "type": "image_url",
            "image_url": {"url": data_url(resource)},
        }),
        other => return json!({"role": role_text, "content": described(other)}),
    };
    json!({"role": role_text, "content": [part]})
}

/// One Anthropic content block.
fn anthropic(role: Role, block: &Block) -> Value {
    let user = role == Role::User;
    match block {
        Block::Image { data, mime_type } if user => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": mime_type, "data": data},
        }),
        Block::Resource { resource } if user && is_image(resource) => json!({
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": resource.mime_type,
                "data": resource.blob,
            },
        }),
        Block::Resource { resource }
            if user && resource.mime_type.as_deref() == Some("application/pdf") =>
        {
            match &resource.blob {
                Some(blob) => json!({
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": blob},
                    "title": resource.uri,
                }),
                None => json!({"type": "text", "text": described(block)}),
            }
        }
        other => json!({"type": "text", "text": described(other)}),
    }
}

/// One Gemini part.
fn gemini(_role: Role, block: &Block) -> Value {
    match block {
        Block::Image { data, mime_type } | Block::Audio { data, mime_type } => json!({
            "inlineData": {"mimeType": mime_type, "data": data},
        }),
        Block::Resource { resource } if resource.blob.is_some() && resource.mime_type.is_some() => {
            json!({
                "inlineData": {"mimeType": resource.mime_type, "data": resource.blob},
            })
        }
        other => json!({"text": described(other)}),
    }
}

/// A block as text: its text, or a line saying what it is.
fn described(block: &Block) -> String {
    match block {
        Block::Text { text } => text.clone(),
        Block::Image { mime_type, .. } => format!("[an image ({mime_type}) left out]"),
        Block::Audio { mime_type, .. } => format!("[audio ({mime_type}) left out]"),
        Block::ResourceLink(link) => match &link.description {
            Some(description) => format!("[{}]({}): {description}", link.name, link.uri),
            None => format!("[{}]({})", link.name, link.uri),
        },
        Block::Resource { resource } => match &resource.text {
            Some(text) => format!("{}:\n{text}", resource.uri),
            None => format!(
                "[the resource {} ({}) left out]",
                resource.uri,
                resource
                    .mime_type
                    .as_deref()
                    .unwrap_or("application/octet-stream")
            ),
        },
    }
}

/// Whether `resource` is a binary image.
fn is_image(resource: &Resource) -> bool {
    resource.blob.is_some()
        && resource
            .mime_type
            .as_deref()
            .is_some_and(|m| m.starts_with("image/"))
}

/// A binary resource as a `data:` URL.
fn data_url(resource: &Resource) -> String {
    format!(
        "data:{};base64,{}",
        resource
            .mime_type
            .as_deref()
            .unwrap_or("application/octet-stream"),
        resource.blob.as_deref().unwrap_or_default()
    )
}

/// OpenAI's `input_audio` format of a MIME type: `wav` or `mp3`.
fn audio_format(mime_type: &str) -> Option<&'static str> {
    match mime_type {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    }
}
