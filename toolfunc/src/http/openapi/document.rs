//! The document of what a caller sees, put together: its tools, the built-in
//! paths, and the `info`, components and security that finish it.

use serde_json::{Map, Value, json};

use super::builtins::FILE;
use super::components::error_responses;
use super::doc::Doc;
use super::security::{AUTH, OAUTH};
use crate::http::doc_settings::View;
use crate::http::routes::{self, PROMPTS, RESOURCES};
use crate::http::wire::{REQ_ID, RPC_TIMEOUT, RPC_TIMEOUT_MAX};
use crate::remote::{self, Catalog, Lookup, RemoteCall};

/// The OpenAPI version the document is written in.
const VERSION: &str = "3.1.1";

/// The document of the tools and acts the caller of `sight` sees.
pub(super) fn document(view: &View<'_>, sight: &remote::Sight<'_>) -> Value {
    let mut doc = Doc::new(view);
    // A tool of the same name as a built-in page is served in its place.
    let served =
        |name: &str| remote::precheck(view.registry, &RemoteCall::new(name, Lookup::TOOL)).is_ok();
    let offered = Catalog::of(view.registry);
    let mut background = false;
    for def in offered.tools().filter_map(|def| sight.view(def)) {
        background |= def.background;
        doc.tool(&def);
    }
    doc.builtins(!served(FILE));
    if background && !served(routes::TASKS) {
        doc.tasks();
    }
    let prompts = remote::prompts_seen(view.registry, sight);
    if !prompts.is_empty() && !served(PROMPTS) {
        doc.prompts(&prompts);
    }
    let (fixed, templates) = remote::resources_seen(view.registry, sight);
    if !(served(RESOURCES) || fixed.is_empty() && templates.is_empty()) {
        doc.resources(&fixed);
    }
    doc.finish()
}

impl Doc<'_> {
    fn finish(self) -> Value {
        let view = self.view;
        let settings = view.settings;
        let prefix = if view.prefix.is_empty() {
            "/"
        } else {
            view.prefix
        };
        let description = format!(
            "Tools served under `{prefix}`: `POST {p}/<tool>` with the arguments as a JSON \
             object (and `GET {p}/<tool>?p=<JSON>` for read-only tools), REST verbs on \
             `{p}/<resource>[/{{id}}]`. A service's `$` acts share its `POST` operation: the \
             body's `act` (a `const` in each `oneOf` branch) chooses the act, and \
             `x-toolfunc-acts` gives each act its own `operationId`, request and response \
             schemas; the `rpc-act` header may carry the act instead. Errors are \
             `{{name, code, errorCode, data, error}}` with the HTTP status in `code`.",
            p = view.prefix,
        );
        let responses = error_responses(view.body_limit);
        let mut components = json!({
            "schemas": self.schemas,
            "responses": responses,
            "parameters": {
                "rpcTimeout": {
                    "name": RPC_TIMEOUT, "in": "header", "required": false,
                    "description": "Bounds the call, in milliseconds (408 `TIMEOUT` past it); \
                        `0` sets no bound, as the JavaScript servers read it. Anything but a \
                        whole number that fits 64 bits is 400 `INVALID_HEADER`.",
                    "schema": {"type": "integer", "minimum": 0, "maximum": RPC_TIMEOUT_MAX},
                },
                "reqId": {
                    "name": REQ_ID, "in": "header", "required": false,
                    "description": "A request id, echoed on the response.",
                    "schema": {"type": "string"},
                },
            },
        });
        let mut doc = json!({
            "openapi": VERSION,
            "info": {
                "title": settings.title.as_deref().unwrap_or("toolfunc"),
                "version": settings.version.as_deref().unwrap_or(env!("CARGO_PKG_VERSION")),
                "description": description,
            },
            "paths": self.paths,
        });
        // One requirement: a token the authenticator verifies and the hook's word.
        let mut schemes = Map::new();
        let mut requirement = Map::new();
        if let Some(scheme) = &view.oauth {
            schemes.insert(OAUTH.to_owned(), scheme.clone());
            requirement.insert(OAUTH.to_owned(), json!([]));
        }
        if view.auth {
            let (name, scheme) = settings.security.clone().unwrap_or_else(|| {
                (
                    AUTH.to_owned(),
                    json!({
                        "type": "http",
                        "scheme": "bearer",
                        "description": "Checked by the API's auth hook, which sees every \
                                        request (discovery included) with the tool and act \
                                        that will run; what it accepts is the hook's own.",
                    }),
                )
            });
            schemes.insert(name.clone(), scheme);
            requirement.insert(name, json!([]));
        }
        if !schemes.is_empty() {
            components["securitySchemes"] = Value::Object(schemes);
            doc["security"] = json!([requirement]);
        }
        doc["components"] = components;
        doc
    }
}
