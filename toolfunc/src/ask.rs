//! Asking the caller from inside a tool: elicitation (a question with a JSON Schema
//! for the answer) and sampling (a completion from the caller's model).
//!
//! A tool asks with [`Ctx::elicit`](crate::Ctx::elicit) or
//! [`Ctx::sample`](crate::Ctx::sample); whoever called it answers. Over MCP that is
//! the client, through the session's `elicitation/create` and
//! `sampling/createMessage` requests. In process, the caller gives the answering
//! function with [`CallOptions::on_client_request`](crate::CallOptions::on_client_request).
//! A caller that cannot answer (none given, or an MCP client that did not declare
//! the capability) makes the question fail with `CLIENT_CANNOT_ANSWER`.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use serde_json::json;
//! use toolfunc::ask::{ClientRequest, ElicitAction};
//! use toolfunc::{tool, CallOptions, Ctx, Registry, ToolError};
//!
//! /// Greets whoever answers.
//! #[tool]
//! async fn greet_me(ctx: &Ctx) -> Result<String, ToolError> {
//!     let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
//!     let answer = ctx.elicit("What is your name?", schema).await?;
//!     match (answer.action, answer.content) {
//!         (ElicitAction::Accept, Some(content)) => Ok(format!("Hello, {}!", content["name"].as_str().unwrap_or("you"))),
//!         _ => Ok("Hello, stranger.".into()),
//!     }
//! }
//!
//! let runner = Registry::global().with(CallOptions::new().on_client_request(|request| async move {
//!     match request {
//!         ClientRequest::Elicit { .. } => Ok(json!({"action": "accept", "content": {"name": "Ann"}})),
//!         _ => Err(ToolError::custom("CLIENT_CANNOT_ANSWER", 501, "no model here")),
//!     }
//! }));
//! assert_eq!(runner.run("greet_me", json!({})).await?, json!("Hello, Ann!"));
//! // A caller that cannot answer:
//! let err = Registry::global().run("greet_me", json!({})).await.unwrap_err();
//! assert_eq!(err.code(), "CLIENT_CANNOT_ANSWER");
//! # Ok::<(), ToolError>(())
//! # }).unwrap();
//! ```

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::ToolError;

/// What a tool asks its caller.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientRequest {
    /// A question for the user, with the JSON Schema its answer must follow (MCP
    /// `elicitation/create`: a flat object of primitive properties).
    Elicit {
        /// What to ask.
        message: String,
        /// The schema of the answer.
        schema: Value,
    },
    /// A completion from the caller's model: MCP `sampling/createMessage` params
    /// (`messages`, `maxTokens`, and optionally `systemPrompt`, `modelPreferences`..).
    Sample(Value),
    /// The caller's roots: the folders or places it works in (MCP `roots/list`;
    /// the answer is `{"roots": [{"uri", "name"}]}`).
    ListRoots,
}

impl ClientRequest {
    /// What it is, in words, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Elicit { .. } => "an elicitation",
            Self::Sample(_) => "a sampling request",
            Self::ListRoots => "for its roots",
        }
    }

    /// The capability a caller needs to answer it, as MCP names it: `elicitation`,
    /// `sampling` or `roots`.
    pub fn capability(&self) -> &'static str {
        match self {
            Self::Elicit { .. } => "elicitation",
            Self::Sample(_) => "sampling",
            Self::ListRoots => "roots",
        }
    }
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Elicitation {
    /// What the user did.
    pub action: ElicitAction,
    /// What they answered, with `Accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ElicitAction {
    /// Answered.
    Accept,
    /// Refused to answer.
    Decline,
    /// Dismissed the question.
    Cancel,
}

/// Sampling params asking for one completion of `prompt` (a user message), at
/// most `max_tokens` long.
pub fn sample_prompt(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens,
    })
}

/// The text of a sampling answer (`content.text`, or the text blocks of a
/// `content` array, joined); `None` when it has none.
pub fn sampled_text(answer: &Value) -> Option<String> {
    match answer.get("content")? {
        Value::Object(block) => block.get("text")?.as_str().map(str::to_owned),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The answering function a caller gives.
/// The answering function a caller gives: the question's name (when the tool gave
/// one, [`Ctx::ask_named`](crate::Ctx::ask_named)) and the question.
pub(crate) type AnswerFn = Arc<
    dyn Fn(Option<String>, ClientRequest) -> BoxFuture<'static, Result<Value, ToolError>>
        + Send
        + Sync,
>;

/// The error of a question nobody can answer.
pub(crate) fn cannot_answer(tool: &str, request: &ClientRequest) -> ToolError {
    ToolError::custom(
        "CLIENT_CANNOT_ANSWER",
        501,
        format!(
            "`{tool}` asked its caller {}, and this caller cannot answer: in process, \
             give one with CallOptions::on_client_request; over MCP, the client must \
             declare the capability",
            request.kind()
        ),
    )
}

/// An elicitation answer as the caller gave it.
pub(crate) fn read_elicitation(tool: &str, value: Value) -> Result<Elicitation, ToolError> {
    let shown = value.to_string();
    let mut elicitation: Elicitation = serde_json::from_value(value).map_err(|e| {
        ToolError::failed(format!(
            "the answer to `{tool}`'s elicitation is not {{action, content}}: {e}: {shown}"
        ))
    })?;
    if elicitation.action != ElicitAction::Accept {
        elicitation.content = None;
    } else if elicitation.content.is_none() {
        elicitation.content = Some(Value::Object(Map::new()));
    }
    Ok(elicitation)
}
