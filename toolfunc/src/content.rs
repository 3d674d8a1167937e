//! Results made of content blocks: text, images, audio, links to resources and
//! embedded resources, with or without a structured value beside them.
//!
//! A tool that returns [`Content`] answers in the shape MCP's `tools/call` result
//! has (`{"content": [..], "structuredContent": ..}`), so each surface carries it as
//! well as it can:
//!
//! | surface | a `Content` result |
//! | --- | --- |
//! | in process ([`Registry::run`](crate::Registry::run)) | that JSON value; [`Content::from_value`] reads it back |
//! | HTTP | that JSON value as the answer body |
//! | MCP | the blocks as MCP content blocks, `structuredContent` as it is |
//! | [`llm::run_tool_calls`](crate::llm::run_tool_calls) | Anthropic: text and image blocks in the `tool_result`; OpenAI: text parts; Gemini: the value. What a provider cannot take is replaced by a text block saying what was left out |
//!
//! The result schema of `Content` carries the keyword `x-toolfunc-content`, which is
//! how every surface (and a remote client reading discovery) knows the tool answers
//! with blocks rather than with a plain value.
//!
//! ```
//! use toolfunc::{Content, Registry, ToolError, tool};
//!
//! /// A 1x1 PNG with its caption.
//! #[tool]
//! fn pixel() -> Content {
//!     let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
//!     Content::text("one red pixel").image(png, "image/png")
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let value = Registry::global().run("pixel", serde_json::json!({})).await?;
//! let content = Content::from_value(value)?;
//! assert_eq!(content.blocks().len(), 2);
//! assert_eq!(content.blocks()[1].bytes().unwrap().len(), 8);
//! # Ok::<(), ToolError>(())
//! # }).unwrap();
//! ```

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;

/// The schema keyword that marks a result schema as [`Content`]'s.
pub const CONTENT_KEYWORD: &str = "x-toolfunc-content";

/// Whether a tool's result schema says it answers with [`Content`].
pub fn is_content_schema(schema: Option<&Value>) -> bool {
    schema
        .and_then(|s| s.get(CONTENT_KEYWORD))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// A tool result made of content blocks, with an optional structured value.
///
/// Build it with the chaining methods, starting from [`Content::new`],
/// [`Content::text`] or [`Content::structured`]. Binary data is given as bytes and
/// kept base64-encoded, as every wire wants it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Content {
    /// The blocks, in order.
    #[serde(rename = "content", default)]
    pub blocks: Vec<Block>,
    /// A structured value beside the blocks (MCP `structuredContent`).
    #[serde(
        rename = "structuredContent",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub structured: Option<Value>,
}

impl Content {
    /// No blocks yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// One text block.
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().and_text(text)
    }

    /// A structured value. Over MCP it is `structuredContent`, and, unless text
    /// blocks are added, its JSON is also sent as text for clients that read only
    /// the blocks; add a text block to send a summary instead.
    ///
    /// ```
    /// use serde_json::json;
    /// let content = toolfunc::Content::structured(json!({"temp": 21.5}))
    ///     .and_text("21.5 °C in Lyon");
    /// assert_eq!(content.blocks().len(), 1);
    /// ```
    #[must_use]
    pub fn structured(value: Value) -> Self {
        Self {
            blocks: Vec::new(),
            structured: Some(value),
        }
    }

    /// Adds a text block.
    #[must_use]
    pub fn and_text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Text { text: text.into() });
        self
    }

    /// Adds an image (its bytes, and its MIME type such as `image/png`).
    #[must_use]
    pub fn image(mut self, bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        self.blocks.push(Block::Image {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        });
        self
    }

    /// Adds an audio clip (its bytes, and its MIME type such as `audio/wav`).
    #[must_use]
    pub fn audio(mut self, bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        self.blocks.push(Block::Audio {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        });
        self
    }

    /// Adds a link to a resource the client can fetch.
    #[must_use]
    pub fn link(mut self, link: ResourceLink) -> Self {
        self.blocks.push(Block::ResourceLink(link));
        self
    }

    /// Adds an embedded text resource.
    #[must_use]
    pub fn resource_text(
        mut self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.blocks.push(Block::Resource {
            resource: Resource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
            },
        });
        self
    }

    /// Adds an embedded binary resource (its bytes are sent base64-encoded).
    #[must_use]
    pub fn resource_blob(
        mut self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl AsRef<[u8]>,
    ) -> Self {
        self.blocks.push(Block::Resource {
            resource: Resource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(STANDARD.encode(bytes)),
            },
        });
        self
    }

    /// Adds a block as it is.
    #[must_use]
    pub fn block(mut self, block: Block) -> Self {
        self.blocks.push(block);
        self
    }

    /// Sets the structured value.
    #[must_use]
    pub fn and_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Reads a tool's answer back (what [`Registry::run`](crate::Registry::run)
    /// returned for a tool that answers with `Content`). A value of another shape
    /// is an `OUTPUT` error.
    pub fn from_value(value: Value) -> Result<Self, ToolError> {
        serde_json::from_value(value).map_err(|e| ToolError::Output {
            path: None,
            message: format!("the result is not content blocks: {e}"),
        })
    }

    /// The text of every text block, one per line: what a reader that takes only
    /// text gets. Other blocks are named, with their MIME type, in brackets.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            if !out.is_empty() {
                out.push('\n');
            }
            match block {
                Block::Text { text } => out.push_str(text),
                other => out.push_str(&other.placeholder()),
            }
        }
        if out.is_empty()
            && let Some(value) = &self.structured
        {
            out = value.to_string();
        }
        out
    }
}

/// The image types Anthropic reads in a `tool_result`.
const ANTHROPIC_IMAGES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

impl Content {
    /// The `content` of an Anthropic `tool_result`: text and image blocks (PDF
    /// resources as `document` blocks); what Anthropic cannot take (audio, other
    /// image types, links) becomes a text block saying what was left out.
    pub(crate) fn to_anthropic(&self) -> Value {
        let left_out = |block: &Block| {
            serde_json::json!({
                "type": "text",
                "text": format!(
                    "{} (left out: Anthropic tool results do not carry it)",
                    block.placeholder()
                ),
            })
        };
        let mut blocks: Vec<Value> = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Text { text }
                | Block::Resource {
                    resource:
                        Resource {
                            text: Some(text), ..
                        },
                } => serde_json::json!({"type": "text", "text": text}),
                Block::Image { data, mime_type }
                    if ANTHROPIC_IMAGES.contains(&mime_type.as_str()) =>
                {
                    serde_json::json!({
                        "type": "image",
                        "source": {"type": "base64", "media_type": mime_type, "data": data},
                    })
                }
                Block::Resource {
                    resource:
                        Resource {
                            blob: Some(blob),
                            mime_type: Some(mime_type),
                            ..
                        },
                } if mime_type == "application/pdf" => serde_json::json!({
                    "type": "document",
                    "source": {"type": "base64", "media_type": mime_type, "data": blob},
                }),
                Block::ResourceLink(link) => serde_json::json!({
                    "type": "text",
                    "text": block_link_text(link),
                }),
                other => left_out(other),
            })
            .collect();
        if blocks.is_empty()
            && let Some(value) = &self.structured
        {
            blocks.push(serde_json::json!({"type": "text", "text": value.to_string()}));
        }
        Value::Array(blocks)
    }

    /// The text of an OpenAI `tool` message, which carries text only: the text
    /// blocks, and for every other block a line saying what was left out.
    pub(crate) fn to_openai(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            if !out.is_empty() {
                out.push('\n');
            }
            match block {
                Block::Text { text }
                | Block::Resource {
                    resource:
                        Resource {
                            text: Some(text), ..
                        },
                } => out.push_str(text),
                Block::ResourceLink(link) => out.push_str(&block_link_text(link)),
                other => {
                    out.push_str(&other.placeholder());
                    out.push_str(" (left out: OpenAI tool messages carry text only)");
                }
            }
        }
        if out.is_empty()
            && let Some(value) = &self.structured
        {
            out = value.to_string();
        }
        out
    }

    /// The `response` of a Gemini `functionResponse`: the structured value when
    /// there is one, the text otherwise.
    pub(crate) fn to_gemini(&self) -> Value {
        match &self.structured {
            Some(value) => serde_json::json!({"result": value}),
            None => serde_json::json!({"result": self.to_text()}),
        }
    }
}

fn block_link_text(link: &ResourceLink) -> String {
    match &link.description {
        Some(description) => format!("{} <{}>: {description}", link.name, link.uri),
        None => format!("{} <{}>", link.name, link.uri),
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl JsonSchema for Content {
    fn schema_name() -> Cow<'static, str> {
        "Content".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "toolfunc::Content".into()
    }

    /// Kept at the root of a result schema, where the marker keyword must be.
    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "description": "Content blocks (text, image, audio, resource_link, resource), with an optional structured value.",
            "x-toolfunc-content": true,
            "properties": {
                "content": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "type": {
                                "type": "string",
                                "enum": ["text", "image", "audio", "resource_link", "resource"]
                            }
                        },
                        "required": ["type"]
                    }
                },
                "structuredContent": {}
            },
            "required": ["content"]
        })
    }
}

/// One content block, in MCP's wire shape (`{"type": "image", "data": .., "mimeType": ..}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// The image, base64-encoded.
        data: String,
        /// Its MIME type (`image/png`).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// An audio clip.
    Audio {
        /// The audio, base64-encoded.
        data: String,
        /// Its MIME type (`audio/wav`).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the client can fetch.
    ResourceLink(ResourceLink),
    /// A resource sent inline.
    Resource {
        /// The resource.
        resource: Resource,
    },
}

impl Block {
    /// A text block.
    pub fn text_block(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image block of `bytes` (kept base64-encoded).
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block of `bytes` (kept base64-encoded).
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded resource.
    pub fn resource(resource: Resource) -> Self {
        Self::Resource { resource }
    }

    /// The text of a text block; `None` for other blocks.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }

    /// The decoded bytes of an image, an audio clip or a binary resource; `None`
    /// for other blocks and for data that is not valid base64.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        let data = match self {
            Self::Image { data, .. } | Self::Audio { data, .. } => data,
            Self::Resource {
                resource: Resource {
                    blob: Some(blob), ..
                },
            } => blob,
            _ => return None,
        };
        STANDARD.decode(data).ok()
    }

    /// The MIME type of the block, when it has one.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Image { mime_type, .. } | Self::Audio { mime_type, .. } => Some(mime_type),
            Self::ResourceLink(link) => link.mime_type.as_deref(),
            Self::Resource { resource } => resource.mime_type.as_deref(),
            Self::Text { .. } => None,
        }
    }

    /// What a text-only reader is told in place of this block.
    pub(crate) fn placeholder(&self) -> String {
        match self {
            Self::Text { text } => text.clone(),
            Self::Image { mime_type, .. } => format!("[image: {mime_type}]"),
            Self::Audio { mime_type, .. } => format!("[audio: {mime_type}]"),
            Self::ResourceLink(link) => format!("[resource link: {}]", link.uri),
            Self::Resource { resource } => match &resource.text {
                Some(text) => text.clone(),
                None => format!(
                    "[resource: {} ({})]",
                    resource.uri,
                    resource
                        .mime_type
                        .as_deref()
                        .unwrap_or("application/octet-stream")
                ),
            },
        }
    }
}

impl From<String> for Block {
    fn from(text: String) -> Self {
        Self::Text { text }
    }
}

impl From<&str> for Block {
    fn from(text: &str) -> Self {
        Self::Text { text: text.into() }
    }
}

impl From<ResourceLink> for Block {
    fn from(link: ResourceLink) -> Self {
        Self::ResourceLink(link)
    }
}

impl From<Resource> for Block {
    fn from(resource: Resource) -> Self {
        Self::Resource { resource }
    }
}

/// A link to a resource (MCP `resource_link`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLink {
    /// Where the resource is.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl ResourceLink {
    /// A link to `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// With a MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// With a description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// An embedded resource: its URI, MIME type, and either its text or its bytes
/// (base64 in `blob`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64-encoded, for a binary resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl Resource {
    /// A text resource at `uri`.
    ///
    /// ```
    /// use toolfunc::content::Resource;
    ///
    /// let page = Resource::from_text("file:///notes.md", "# Notes").with_mime_type("text/markdown");
    /// assert_eq!(page.text.as_deref(), Some("# Notes"));
    /// ```
    pub fn from_text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: Some(text.into()),
            blob: None,
        }
    }

    /// A binary resource at `uri`, its bytes kept base64-encoded.
    pub fn from_bytes(uri: impl Into<String>, bytes: impl AsRef<[u8]>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: None,
            blob: Some(STANDARD.encode(bytes)),
        }
    }

    /// With a MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The decoded bytes of a binary resource (`None` for text, or data that is not
    /// valid base64).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        self.blob.as_ref().and_then(|b| STANDARD.decode(b).ok())
    }
}
