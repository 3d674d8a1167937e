//! `#[tool_service]`: acts, REST verbs, typed clients, registration.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use toolfunc::{Ctx, Registry, ToolError, ToolFunc, tool_service};

use demo::{GreeterClient, Users, UsersClient};

#[tokio::test]
async fn acts_run_by_name_with_or_without_dollar() {
    let registry = Registry::global();
    assert_eq!(
        registry
            .run("greeter", json!({"act": "$hello", "name": "Ann"}))
            .await
            .unwrap(),
        "hello Ann"
    );
    assert_eq!(
        registry
            .run_sync("greeter", json!({"act": "mul", "a": 6, "b": 7}))
            .unwrap(),
        json!(42.0)
    );
}

#[tokio::test]
async fn an_unknown_act_is_unknown_act_and_a_missing_one_is_an_argument_error() {
    let registry = Registry::global();
    let err = registry
        .run("greeter", json!({"act": "$nope"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNKNOWN_ACT");
    assert_eq!(err.status(), 404);
    assert_eq!(err.data().unwrap()["what"], "$nope");
    let err = registry
        .run("greeter", json!({"name": "x"}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("ARGUMENTS", 400));
    assert_eq!(err.data().unwrap()["path"], "/act");
    assert!(err.to_string().contains("$hello"), "{err}");
    let err = registry
        .run("greeter", json!({"act": 5}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    // Arguments of the chosen method are checked like a tool's.
    let err = registry
        .run("greeter", json!({"act": "$mul", "a": "six", "b": 1}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(err.data().unwrap()["path"], "/a");
}

#[test]
fn definitions_list_methods_and_rest_action() {
    let registry = Registry::global();
    let users = registry.get("users").unwrap();
    let def = users.definition();
    assert_eq!(def.action.as_deref(), Some("res"));
    assert_eq!(
        def.methods,
        ["get", "post", "put", "delete", "list", "$promote"]
    );
    assert_eq!(def.acts.len(), 6);
    let promote = def.acts.iter().find(|a| a.name == "$promote").unwrap();
    assert_eq!(
        promote.description.as_deref(),
        Some("Make user `id` an admin.")
    );
    assert_eq!(promote.params["required"], json!(["id"]));
    assert_eq!(def.description.as_deref(), Some("User resource."));
    let greeter = registry.get("greeter").unwrap();
    assert_eq!(greeter.definition().action, None);
    assert_eq!(greeter.definition().methods, ["$hello", "$mul"]);
    let hello = &greeter.definition().acts[0];
    assert_eq!(
        hello.params["properties"]["name"]["description"],
        "Who to greet."
    );
    let wire = serde_json::to_value(def).unwrap();
    // `isApi` is written only when false.
    assert_eq!(wire.get("isApi"), None);
    assert_eq!(wire["action"], "res");
}

#[tokio::test]
async fn typed_client_over_the_registry() {
    let registry = Registry::new();
    registry.register_service(Users::default()).unwrap();
    registry.register_service(demo::Greeter).unwrap();
    let users = UsersClient::new(registry.clone());
    assert_eq!(users.list().await.unwrap().len(), 2);
    assert_eq!(users.get("1".into()).await.unwrap().name, "Alice");
    let err = users.get("99".into()).await.unwrap_err();
    assert_eq!((err.code(), err.status()), ("USER_NOT_FOUND", 404));
    let created = users
        .post(demo::NewUser {
            name: "Carol".into(),
            role: None,
        })
        .await
        .unwrap();
    assert_eq!(created.id, "3");
    let promoted = users.promote(created.id.clone()).await.unwrap();
    assert_eq!(promoted.role.as_deref().unwrap(), "admin");
    assert_eq!(
        users.delete(created.id).await.unwrap(),
        json!({"deleted": "3"})
    );
    let greeter = GreeterClient::new(registry);
    assert_eq!(greeter.hello("Ann".into()).await.unwrap(), "hello Ann");
}

/// A service with state of its own, async and streaming methods.
struct Ticker {
    step: u64,
}

#[tool_service(name = "ticker", timeout = "5s")]
impl Ticker {
    /// Ticks from 1 to `n`, `step` apart.
    fn ticks(self: Arc<Self>, n: u64) -> impl futures::Stream<Item = u64> {
        futures::stream::iter((1..=n).map(move |i| i * self.step))
    }

    /// Waits, unless cancelled.
    #[tool(timeout = "50ms")]
    async fn wait(&self, ctx: &Ctx, ms: u64) -> Result<u64, ToolError> {
        let _ = ctx.tool_name();
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        Ok(ms)
    }

    /// Fails on purpose.
    fn oops(&self) -> Result<(), std::io::Error> {
        Err(std::io::Error::other("disk on fire"))
    }
}

#[tokio::test]
async fn stateful_service_streams_and_times_out_per_method() {
    // Not `Default`: not in the global registry.
    assert!(Registry::global().get("ticker").is_none());
    let registry = Registry::new();
    let tool = ToolFunc::from_service(Ticker { step: 10 }).unwrap();
    assert!(tool.is_stream() && tool.is_async());
    registry.register(tool).unwrap();
    assert_eq!(
        registry
            .run("ticker", json!({"act": "$ticks", "n": 3}))
            .await
            .unwrap(),
        json!([10, 20, 30])
    );
    let items: Vec<_> = registry
        .run_stream("ticker", json!({"act": "ticks", "n": 2}))
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    assert_eq!(
        registry
            .run("ticker", json!({"act": "$wait", "ms": 1}))
            .await
            .unwrap(),
        1
    );
    let err = registry
        .run("ticker", json!({"act": "$wait", "ms": 2000}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    let err = registry
        .run("ticker", json!({"act": "$oops"}))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.to_string()),
        ("FAILED", "disk on fire".into())
    );
    // Sync callers reach sync methods only.
    let err = registry
        .run_sync("ticker", json!({"act": "$wait", "ms": 1}))
        .unwrap_err();
    assert_eq!(err.code(), "ASYNC_ONLY");
    assert!(
        registry
            .run_sync("ticker", json!({"act": "$oops"}))
            .is_err()
    );

    let client = TickerClient::new(registry);
    let ticks: Vec<u64> = client.ticks(3).map(Result::unwrap).collect().await;
    assert_eq!(ticks, [10, 20, 30]);
    assert_eq!(client.wait(2).await.unwrap(), 2);
}
