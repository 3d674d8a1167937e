//! Tests of the document's component names and of the documents kept for callers
//! shown the same.

use std::collections::HashSet;
use std::sync::PoisonError;

use axum::response::Response;
use serde_json::Value;

use super::components::{clean, unique};
use super::kept::response;
use crate::http::api::Api;
use crate::options::CallOptions;
use crate::registry::Registry;

#[test]
fn names_are_component_names() {
    assert_eq!(clean("my tool/$x"), "my_tool__x");
    let mut taken = HashSet::from(["a".to_owned()]);
    assert_eq!(unique(&mut taken, "a".into()), "a_2");
    assert_eq!(unique(&mut taken, "a".into()), "a_3");
}

#[test]
fn callers_shown_the_same_share_one_document() {
    use crate::identity::Identity;
    use crate::tool::ToolFunc;

    let registry = Registry::new();
    for (name, scopes) in [("open", vec![]), ("purge", vec!["admin"])] {
        let tool = ToolFunc::builder(name)
            .scopes(scopes)
            .handler_sync(|_ctx, args| Ok(args))
            .build()
            .expect("a tool");
        registry.register(tool).expect("registered");
    }
    let api = Api::new(registry);
    let view = api.openapi_view();
    let as_who = |who: Identity| CallOptions::new().identity(who);
    let body = |response: Response| {
        let bytes =
            futures::executor::block_on(http_body_util::BodyExt::collect(response.into_body()))
                .expect("a body")
                .to_bytes();
        serde_json::from_slice::<Value>(&bytes).expect("JSON")
    };
    // Two subjects with no scope, and one with a scope no tool declares: one
    // document.
    for who in [
        Identity::new("ann"),
        Identity::new("bob"),
        Identity::new("cy").with_scopes(["files:read"]),
    ] {
        let doc = body(response(&view, &as_who(who)));
        assert!(doc["paths"].get("/api/open").is_some());
        assert!(doc["paths"].get("/api/purge").is_none());
    }
    let kept = |api: &Api| {
        api.openapi
            .seen
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .docs
            .len()
    };
    assert_eq!(kept(&api), 1);
    // A caller shown more gets a document of its own.
    let root = Identity::new("root").with_scopes(["admin", "files:read"]);
    let doc = body(response(&view, &as_who(root)));
    assert!(doc["paths"].get("/api/purge").is_some());
    assert_eq!(kept(&api), 2);
}
