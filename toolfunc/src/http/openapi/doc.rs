//! The document being made ([`Doc`]): its schemas, component names, operation ids
//! and paths, and what an operation's answers are made of.

use std::collections::HashSet;

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde_json::{Map, Value, json};

use super::components::{discovery_schema, error_schema, reference, unique};
use crate::http::doc_settings::View;
use crate::http::wire::NDJSON;

/// The characters of a tool name escaped in a path segment.
pub(super) const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// The 200 answer of an operation: a JSON body, NDJSON lines, or either.
#[derive(Default, Clone)]
pub(super) struct Outcome {
    pub(super) json: Option<Value>,
    pub(super) ndjson: Option<Value>,
}

/// What an operation can be refused for, besides what every call can.
#[derive(Clone, Copy, Default)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent facts about one operation, each adding its own statuses"
)]
pub(super) struct Risks {
    /// Reads a body (413 past the limit, 415 when not JSON).
    pub(super) body: bool,
    /// Streams (413 when collected past the cap).
    pub(super) stream: bool,
    /// A GET that may name an act GET cannot run (405).
    pub(super) get_act: bool,
    /// May move to the background past its soft deadline (202).
    pub(super) background: bool,
}

pub(super) struct Doc<'v> {
    pub(super) view: &'v View<'v>,
    pub(super) schemas: Map<String, Value>,
    pub(super) names: HashSet<String>,
    operation_ids: HashSet<String>,
    pub(super) paths: Map<String, Value>,
    /// The schemas of the current tool, to refer to one twice rather than copy it
    /// (the `User` that `get`, `put` and `list` all return).
    pub(super) same: Vec<(Value, String)>,
}

impl<'v> Doc<'v> {
    pub(super) fn new(view: &'v View<'v>) -> Self {
        let mut schemas = Map::new();
        schemas.insert("Error".into(), error_schema());
        schemas.insert("Discovery".into(), discovery_schema());
        let names = schemas.keys().cloned().collect();
        Self {
            view,
            schemas,
            names,
            operation_ids: HashSet::new(),
            paths: Map::new(),
            same: Vec::new(),
        }
    }

    pub(super) fn unique_id(&mut self, id: String) -> String {
        unique(&mut self.operation_ids, id)
    }

    pub(super) fn path(&self, name: &str, id: bool) -> String {
        let mut path = format!(
            "{}/{}",
            self.view.prefix,
            utf8_percent_encode(name, SEGMENT)
        );
        if id {
            path.push_str("/{id}");
        }
        path
    }

    pub(super) fn put(&mut self, path: String, method: &str, operation: Value) {
        let item = self
            .paths
            .entry(path)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(method.to_owned(), operation);
        }
    }

    pub(super) fn responses(&self, ok: &Outcome, risks: Risks, call: bool) -> Value {
        let mut content = Map::new();
        if let Some(schema) = &ok.json {
            content.insert("application/json".into(), json!({"schema": schema}));
        }
        if let Some(schema) = &ok.ndjson {
            content.insert(NDJSON.into(), json!({"schema": schema}));
        }
        let mut responses = Map::new();
        let description = if ok.ndjson.is_some() {
            "The result: JSON, or with a stream one JSON item per line (an error after \
             the first item ends the body with one error line)."
        } else {
            "The result (`null` for none)."
        };
        responses.insert(
            "200".into(),
            json!({"description": description, "content": content}),
        );
        if risks.background {
            responses.insert(
                "202".into(),
                json!({
                    "description": "Still running at the tool's soft deadline: the call goes \
                                    on in the background. Poll `GET <prefix>/rpcTask/{id}` \
                                    with the `req-id` of this answer after `rpc-retry-after` ms.",
                    "headers": {
                        "req-id": {"description": "The id to poll.", "schema": {"type": "string"}},
                        "rpc-retry-after": {
                            "description": "Milliseconds to wait before polling.",
                            "schema": {"type": "integer", "minimum": 0}
                        }
                    },
                    "content": {"application/json": {"schema": reference("Processing")}},
                }),
            );
        }
        let mut refer = |status: &str, name: &str| {
            responses.insert(
                status.into(),
                json!({"$ref": format!("#/components/responses/{name}")}),
            );
        };
        if call {
            refer("400", "BadRequest");
        }
        if self.view.auth || self.view.oauth.is_some() {
            refer("401", "Unauthorized");
        }
        refer("403", "Forbidden");
        if call {
            refer("404", "NotFound");
            if risks.get_act {
                refer("405", "MethodNotAllowed");
            }
            refer("408", "Timeout");
            if risks.body || risks.stream {
                refer("413", "TooLarge");
            }
            if risks.body && self.view.json_only {
                refer("415", "UnsupportedMediaType");
            }
            refer("500", "InternalError");
            refer("default", "OtherError");
        }
        Value::Object(responses)
    }
}

impl Doc<'_> {
    /// The JSON body of an operation. With
    /// [`Api::json_only`](crate::http::Api::json_only) it is required even when
    /// every argument is optional: a body-less request (which would mean `{}`) says
    /// no content type, and is refused with 415 unless it carries an
    /// `rpc-*`/`req-id` header.
    pub(super) fn request_body(&self, schema: &Value, required: bool) -> Value {
        json!({
            "required": required || self.view.json_only,
            "content": {"application/json": {"schema": schema}},
        })
    }
}
