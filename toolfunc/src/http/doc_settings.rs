//! The document settings of an [`Api`](crate::http::Api), what a document is
//! made from ([`View`]), and where the documents made are kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use axum::body::Bytes;
use serde_json::Value;

use crate::registry::Registry;

/// The document settings of one [`Api`](crate::http::Api) and the document last made for it.
#[derive(Debug, Default)]
pub(super) struct Settings {
    pub(in crate::http) title: Option<String>,
    pub(in crate::http) version: Option<String>,
    pub(in crate::http) security: Option<(String, Value)>,
    pub(in crate::http) cache: Cache,
    pub(in crate::http) seen: Seen,
}

impl Clone for Settings {
    /// A copy starts with no document: the copy may be configured differently.
    fn clone(&self) -> Self {
        Self {
            title: self.title.clone(),
            version: self.version.clone(),
            security: self.security.clone(),
            cache: Cache::default(),
            seen: Seen::default(),
        }
    }
}

/// The documents made for callers who do not see the whole API, each under what
/// decides it: which tools, acts, prompts and resources the caller is shown. Two
/// callers shown the same get the same document, made once.
#[derive(Debug, Default)]
pub(in crate::http) struct Seen(pub(in crate::http) Mutex<SeenDocs>);

#[derive(Debug, Default)]
pub(in crate::http) struct SeenDocs {
    /// The registry generation and the view's settings the documents were made at.
    pub(in crate::http) made_at: Option<(u64, String, Flags, Option<Value>)>,
    pub(in crate::http) docs: HashMap<Vec<u64>, Bytes>,
}

/// What the document is made from, besides the settings.
pub(in crate::http) struct View<'a> {
    pub(in crate::http) registry: &'a Registry,
    pub(in crate::http) prefix: &'a str,
    pub(in crate::http) auth: bool,
    /// The OAuth 2.0 security scheme of the API's authenticator, when it has one.
    pub(in crate::http) oauth: Option<Value>,
    pub(in crate::http) json_only: bool,
    pub(in crate::http) writes_over_get: bool,
    pub(in crate::http) body_limit: usize,
    /// The bounds of discovery's search.
    pub(in crate::http) max_search_results: usize,
    pub(in crate::http) max_search_query: usize,
    pub(in crate::http) settings: &'a Settings,
}

#[derive(Debug, Default)]
pub(in crate::http) struct Cache(pub(in crate::http) RwLock<Option<Arc<Made>>>);

/// A document, with what it was made from.
#[derive(Debug)]
pub(in crate::http) struct Made {
    pub(in crate::http) generation: u64,
    pub(in crate::http) prefix: String,
    pub(in crate::http) flags: Flags,
    pub(in crate::http) oauth: Option<Value>,
    pub(in crate::http) value: Value,
    pub(in crate::http) bytes: Bytes,
}

impl Made {
    pub(in crate::http) fn fits(&self, view: &View<'_>, generation: u64) -> bool {
        self.generation == generation
            && self.prefix == view.prefix
            && self.flags == flags(view)
            && self.oauth == view.oauth
    }
}

/// The settings of a view the document says something of.
pub(in crate::http) type Flags = (bool, bool, bool, usize, usize, usize);

pub(in crate::http) fn flags(view: &View<'_>) -> Flags {
    (
        view.auth,
        view.json_only,
        view.writes_over_get,
        view.body_limit,
        view.max_search_results,
        view.max_search_query,
    )
}
