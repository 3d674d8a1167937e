//! The documents kept: the one of the whole API, made once per registry change,
//! those made for callers shown less, the answer to `GET <prefix>/openapi.json`,
//! and the [`Api`] methods that read and configure the document.

use std::sync::{Arc, PoisonError};

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::document::document;
use crate::http::api::Api;
use crate::http::doc_settings::{Cache, Made, View, flags};
use crate::options::CallOptions;
use crate::remote::{self, Catalog};

/// The most documents kept for callers who see different parts of the API (by
/// their scopes, or what layers show them); past it they are all dropped and made
/// again as asked.
const MAX_SEEN: usize = 64;

/// What a caller is shown, one bit per decision, in the catalogue's order: each
/// tool, each act of a tool shown, each prompt and each resource.
fn shown(view: &View<'_>, sight: &remote::Sight<'_>) -> Vec<u64> {
    let mut bits = Vec::new();
    let mut count = 0usize;
    let mut push = |bit: bool| {
        if count.is_multiple_of(64) {
            bits.push(0u64);
        }
        if bit && let Some(last) = bits.last_mut() {
            *last |= 1 << (count % 64);
        }
        count += 1;
    };
    for def in Catalog::of(view.registry).tools() {
        let shows = sight.shows(def);
        push(shows);
        if shows {
            for act in &def.acts {
                push(sight.permits(&act.scopes));
            }
        }
    }
    let (fixed, templates) = view.registry.resources();
    let prompts = view.registry.prompts();
    let defs = prompts.iter().map(|p| p.tool().definition()).chain(
        fixed
            .iter()
            .chain(&templates)
            .map(|r| r.tool().definition()),
    );
    for def in defs {
        push(sight.lists(def));
    }
    // The count closes the key, so two sets of different sizes never meet.
    bits.push(count as u64);
    bits
}

impl View<'_> {
    /// The document for a caller with `sight`, made once per distinct set of what
    /// callers are shown (and registry change).
    fn seen(&self, sight: &remote::Sight<'_>) -> Bytes {
        let key = shown(self, sight);
        let made_at = (
            crate::registry::generation(),
            self.prefix.to_owned(),
            flags(self),
            self.oauth.clone(),
        );
        {
            let mut seen = self
                .settings
                .seen
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if seen.made_at.as_ref() != Some(&made_at) {
                seen.docs.clear();
                seen.made_at = Some(made_at.clone());
            }
            if let Some(bytes) = seen.docs.get(&key) {
                return bytes.clone();
            }
        }
        let bytes = Bytes::from(serde_json::to_vec(&document(self, sight)).unwrap_or_default());
        let mut seen = self
            .settings
            .seen
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if seen.made_at.as_ref() == Some(&made_at) {
            if seen.docs.len() >= MAX_SEEN {
                seen.docs.clear();
            }
            seen.docs.insert(key, bytes.clone());
        }
        bytes
    }
}

impl View<'_> {
    /// The document, made at most once per registry change.
    fn made(&self) -> Arc<Made> {
        let cache = &self.settings.cache.0;
        let generation = crate::registry::generation();
        if let Some(made) = &*cache.read().unwrap_or_else(PoisonError::into_inner)
            && made.fits(self, generation)
        {
            return Arc::clone(made);
        }
        let value = document(self, &remote::Sight::of(self.registry, None));
        let bytes = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        let made = Arc::new(Made {
            generation,
            prefix: self.prefix.to_owned(),
            flags: flags(self),
            oauth: self.oauth.clone(),
            value,
            bytes,
        });
        *cache.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&made));
        made
    }
}

/// The answer to `GET <prefix>/openapi.json` for the caller with `options`: the
/// kept document, or, when layers or scopes decide what a caller sees, the one
/// made for what this caller is shown (a tool or act it may not see is not
/// described to it either), kept for the next caller shown the same.
pub(in crate::http) fn response(view: &View<'_>, options: &CallOptions) -> Response {
    let scoped = options.identity.is_some()
        && (!Catalog::of(view.registry).scopes().is_empty() || remote::any_scoped(view.registry));
    let bytes = if view.registry.has_layers() || scoped {
        view.seen(&remote::Sight::of(view.registry, Some(options)))
    } else {
        view.made().bytes.clone()
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(bytes))
        .unwrap_or_default()
}

impl Api {
    /// What the OpenAPI document of this API is made from.
    pub(in crate::http) fn openapi_view(&self) -> View<'_> {
        View {
            registry: &self.registry,
            prefix: &self.prefix,
            auth: self.auth.is_some(),
            oauth: self.authenticator.as_ref().map(|authenticator| {
                let catalog = Catalog::of(&self.registry);
                super::security::oauth_scheme(authenticator.as_ref(), catalog.scopes())
            }),
            json_only: self.json_only,
            writes_over_get: self.writes_over_get,
            body_limit: self.body_limit,
            max_search_results: self.search.max_results,
            max_search_query: self.search.max_query,
            settings: &self.openapi,
        }
    }

    /// The OpenAPI 3.1 document of this API, as served at `GET <prefix>/openapi.json`:
    /// one operation per tool, service act and REST verb that discovery lists (tools
    /// with `api = false` are left out), with the routes and methods the server
    /// accepts, the tools' own JSON Schemas under `components/schemas`, the error
    /// body and every status an operation can answer, NDJSON for streams, and a
    /// security scheme when an auth hook is set. It is made once and kept until any
    /// registry changes.
    ///
    /// A service's `$` acts share one `POST <prefix>/<service>` operation (the act is
    /// chosen by the `act` field of the body, which OpenAPI cannot key operations
    /// on): its body is a `oneOf` with `act` as the `discriminator`, and
    /// `x-toolfunc-acts` lists each act with its own `operationId`, request and
    /// response schemas.
    ///
    /// ```
    /// use toolfunc::{Registry, ToolFunc};
    /// use toolfunc::http::Api;
    ///
    /// let registry = Registry::new();
    /// registry.register(
    ///     ToolFunc::builder("echo")
    ///         .handler_sync(|_ctx, args| Ok(args))
    ///         .build()
    ///         .unwrap(),
    /// )
    /// .unwrap();
    /// let doc = Api::new(registry).openapi_document();
    /// assert_eq!(doc["openapi"], "3.1.1");
    /// assert_eq!(doc["paths"]["/api/echo"]["post"]["operationId"], "echo");
    /// ```
    pub fn openapi_document(&self) -> Value {
        self.openapi_view().made().value.clone()
    }

    /// The `info` of the OpenAPI document: the API's title and version (default
    /// `"toolfunc"` and this crate's version).
    #[must_use]
    pub fn openapi_info(mut self, title: impl Into<String>, version: impl Into<String>) -> Self {
        self.openapi.title = Some(title.into());
        self.openapi.version = Some(version.into());
        self.openapi.cache = Cache::default();
        self
    }

    /// Describes what the auth hook ([`Api::auth`]) checks, as an OpenAPI
    /// Security Scheme Object named `name`, which every operation then requires:
    /// `json!({"type": "apiKey", "in": "header", "name": "x-api-key"})`. Without
    /// it, an API with a hook says `{"type": "http", "scheme": "bearer"}` under the
    /// name `auth`. It has no effect without a hook: the hook is what checks.
    #[must_use]
    pub fn openapi_security(mut self, name: impl Into<String>, scheme: Value) -> Self {
        self.openapi.security = Some((name.into(), scheme));
        self.openapi.cache = Cache::default();
        self
    }
}
