//! The paths served besides the tools: discovery, this document, the prompts
//! (`_prompts`), the resources (`_resources`) and the background calls (`rpcTask`).

use std::sync::Arc;

use percent_encoding::utf8_percent_encode;
use serde_json::{Value, json};

use super::components::{clean, reference};
use super::doc::{Doc, Outcome, Risks, SEGMENT};
use super::schemas::Adapt;
use crate::http::routes::{PROMPTS, READ, RESOURCES};
use crate::prompt::PromptFunc;
use crate::remote;
use crate::resource::ResourceFunc;

/// The last path segment the document is served at: `GET <prefix>/openapi.json`.
pub(in crate::http) const FILE: &str = "openapi.json";

impl Doc<'_> {
    /// Discovery and this document.
    pub(super) fn builtins(&mut self, openapi: bool) {
        let root = if self.view.prefix.is_empty() {
            "/".to_owned()
        } else {
            self.view.prefix.to_owned()
        };
        let discovery = Outcome {
            json: Some(reference("Discovery")),
            ndjson: None,
        };
        let id = self.unique_id("discovery".into());
        let mut responses = self.responses(&discovery, Risks::default(), false);
        responses["400"] = json!({"$ref": "#/components/responses/BadRequest"});
        let results = self.view.max_search_results;
        self.put(
            root,
            "get",
            json!({
                "operationId": id,
                "summary": "Discovery: the definition of every tool, by name.",
                "description": "With `q`, a search: the tools that best match its words \
                                (the tool it names first), best first, in the same shape.",
                "parameters": [
                    {
                        "name": "q", "in": "query", "required": false,
                        "description": "Words to search the tools' names, titles, \
                                        descriptions, tags and parameters for.",
                        "schema": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": self.view.max_search_query,
                            "pattern": "\\S",
                        },
                    },
                    {
                        "name": "limit", "in": "query", "required": false,
                        "description": "How many tools a search answers at most; \
                                        without `q`, discovery lists every tool.",
                        "schema": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": results,
                            "default": remote::search::DEFAULT_SEARCH_RESULTS.min(results),
                        },
                    },
                ],
                "responses": responses,
            }),
        );
        if openapi {
            let this = Outcome {
                json: Some(json!({"type": "object"})),
                ndjson: None,
            };
            let id = self.unique_id("openapi".into());
            let responses = self.responses(&this, Risks::default(), false);
            let path = format!("{}/{FILE}", self.view.prefix);
            self.put(
                path,
                "get",
                json!({
                    "operationId": id,
                    "summary": "This document.",
                    "responses": responses,
                }),
            );
        }
    }

    /// `_prompts`: the list, and one operation per prompt getting it with its
    /// arguments (the JSON Schema of its function's parameters).
    pub(super) fn prompts(&mut self, prompts: &[Arc<PromptFunc>]) {
        self.schemas.insert(
            "Prompts".into(),
            json!({
                "type": "object",
                "description": "The prompts offered here, by name.",
                "required": ["prompts"],
                "properties": {"prompts": {"type": "array", "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "title": {"type": "string"},
                        "description": {"type": "string"},
                        "arguments": {"type": "array", "items": {
                            "type": "object",
                            "required": ["name", "required"],
                            "properties": {
                                "name": {"type": "string"},
                                "title": {"type": "string"},
                                "description": {"type": "string"},
                                "required": {"type": "boolean"},
                            },
                        }},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "scopes": {"type": "array", "items": {"type": "string"}},
                    },
                }}},
            }),
        );
        self.schemas.insert(
            "PromptResult".into(),
            json!({
                "type": "object",
                "description": "A prompt's messages (each one content block, in MCP's shape).",
                "required": ["messages"],
                "properties": {
                    "description": {"type": "string"},
                    "messages": {"type": "array", "items": {
                        "type": "object",
                        "required": ["role", "content"],
                        "properties": {
                            "role": {"enum": ["user", "assistant"]},
                            "content": {
                                "type": "object",
                                "required": ["type"],
                                "properties": {"type": {"enum": [
                                    "text", "image", "audio", "resource_link", "resource"
                                ]}},
                            },
                        },
                    }},
                },
            }),
        );
        let listed = Outcome {
            json: Some(reference("Prompts")),
            ndjson: None,
        };
        let id = self.unique_id("prompts.list".into());
        let responses = self.responses(&listed, Risks::default(), false);
        self.put(
            format!("{}/{PROMPTS}", self.view.prefix),
            "get",
            json!({
                "operationId": id,
                "summary": "The prompts offered here, by name.",
                "responses": responses,
            }),
        );
        let got = Outcome {
            json: Some(reference("PromptResult")),
            ndjson: None,
        };
        for prompt in prompts {
            let def = prompt.tool().definition();
            self.same.clear();
            let ns = format!("prompt.{}", clean(prompt.name()));
            let (params, _, required) =
                self.component(&ns, "Params", &def.params, Adapt::default());
            let risks = Risks {
                body: true,
                ..Risks::default()
            };
            let id = format!("prompts.get.{}", prompt.name());
            let mut post = self.operation(def, None, &id, risks, &got);
            post["requestBody"] = self.request_body(&params, required);
            let path = format!(
                "{}/{PROMPTS}/{}",
                self.view.prefix,
                utf8_percent_encode(prompt.name(), SEGMENT)
            );
            self.put(path, "post", post);
        }
    }

    /// `_resources`: the list of resources and templates, and the read of a URI.
    pub(super) fn resources(&mut self, fixed: &[Arc<ResourceFunc>]) {
        let listed_item = |uri: &str| {
            json!({
                "type": "object",
                "required": ["name", uri],
                "properties": {
                    uri: {"type": "string"},
                    "name": {"type": "string"},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                    "mimeType": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "scopes": {"type": "array", "items": {"type": "string"}},
                },
            })
        };
        self.schemas.insert(
            "Resources".into(),
            json!({
                "type": "object",
                "description": "The fixed resources (by URI) and the URI templates offered here.",
                "required": ["resources", "resourceTemplates"],
                "properties": {
                    "resources": {"type": "array", "items": listed_item("uri")},
                    "resourceTemplates": {"type": "array", "items": listed_item("uriTemplate")},
                },
            }),
        );
        self.schemas.insert(
            "ResourceContents".into(),
            json!({
                "type": "object",
                "description": "What a read answers: text, or a base64 `blob`, per URI.",
                "required": ["contents"],
                "properties": {"contents": {"type": "array", "items": {
                    "type": "object",
                    "required": ["uri"],
                    "properties": {
                        "uri": {"type": "string"},
                        "mimeType": {"type": "string"},
                        "text": {"type": "string"},
                        "blob": {"type": "string"},
                    },
                }}},
            }),
        );
        let listed = Outcome {
            json: Some(reference("Resources")),
            ndjson: None,
        };
        let id = self.unique_id("resources.list".into());
        let responses = self.responses(&listed, Risks::default(), false);
        self.put(
            format!("{}/{RESOURCES}", self.view.prefix),
            "get",
            json!({
                "operationId": id,
                "summary": "The resources and resource templates offered here.",
                "responses": responses,
            }),
        );
        let read = Outcome {
            json: Some(reference("ResourceContents")),
            ndjson: None,
        };
        let id = self.unique_id("resources.read".into());
        let mut responses = self.responses(&read, Risks::default(), true);
        responses["413"] = json!({"$ref": "#/components/responses/TooLarge"});
        let examples: Vec<&str> = fixed.iter().map(|r| r.address()).collect();
        // Characters: a URI is bounded in bytes, and a character is at most four.
        let max_chars = remote::MAX_URI_BYTES / 4;
        self.put(
            format!("{}/{RESOURCES}/{READ}", self.view.prefix),
            "get",
            json!({
                "operationId": id,
                "summary": "Read a resource: a fixed resource's URI, or one a template makes.",
                "parameters": [
                    {
                        "name": "uri", "in": "query", "required": true,
                        "description": "The URI to read.",
                        "schema": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": max_chars,
                            "examples": examples,
                        },
                    },
                    {"$ref": "#/components/parameters/rpcTimeout"},
                    {"$ref": "#/components/parameters/reqId"},
                ],
                "responses": responses,
            }),
        );
    }

    /// `rpcTask`: the poll and the cancel of background calls.
    pub(super) fn tasks(&mut self) {
        use crate::http::routes::TASKS;
        self.schemas.insert(
            "Processing".into(),
            json!({
                "type": "object",
                "description": "A call still running in the background.",
                "properties": {
                    "status": {"const": 102},
                    "code": {"const": 102},
                    "message": {"type": "string"}
                },
                "required": ["status", "message"]
            }),
        );
        let path = format!("{}/{TASKS}/{{id}}", self.view.prefix);
        let id_param = json!({
            "name": "id", "in": "path", "required": true,
            "description": "The `req-id` the call was answered `202` with.",
            "schema": {"type": "string"}
        });
        let any = Outcome {
            json: Some(json!({})),
            ndjson: None,
        };
        let mut poll_responses = self.responses(&any, Risks::default(), false);
        poll_responses["200"]["description"] = Value::from("The call's result, once it finished.");
        poll_responses["202"] = json!({
            "description": "Still running: poll again.",
            "content": {"application/json": {"schema": reference("Processing")}}
        });
        for (status, name) in [
            ("404", "NotFound"),
            ("408", "Timeout"),
            ("500", "InternalError"),
            ("default", "OtherError"),
        ] {
            poll_responses[status] = json!({"$ref": format!("#/components/responses/{name}")});
        }
        let poll_id = self.unique_id("rpcTask.get".into());
        self.put(
            path.clone(),
            "get",
            json!({
                "operationId": poll_id,
                "summary": "Poll a background call: its result once it finished.",
                "parameters": [id_param],
                "responses": poll_responses,
            }),
        );
        let cancel_id = self.unique_id("rpcTask.cancel".into());
        let mut cancel_responses = self.responses(
            &Outcome {
                json: Some(json!({"type": "object", "properties": {"success": {"const": true}}, "required": ["success"]})),
                ndjson: None,
            },
            Risks::default(),
            false,
        );
        for (status, name) in [
            ("400", "BadRequest"),
            ("404", "NotFound"),
            ("415", "UnsupportedMediaType"),
        ] {
            cancel_responses[status] = json!({"$ref": format!("#/components/responses/{name}")});
        }
        self.put(
            path,
            "post",
            json!({
                "operationId": cancel_id,
                "summary": "Cancel a background call (a finished one stays as it was).",
                "parameters": [id_param],
                "requestBody": {
                    "required": true,
                    "content": {"application/json": {"schema": {
                        "type": "object",
                        "properties": {"act": {"const": "$cancel"}},
                        "required": ["act"]
                    }}}
                },
                "responses": cancel_responses,
            }),
        );
    }
}
