//! The context is injected by value or by reference, in sync and async tools, and is
//! left out of the parameters schema.

use serde_json::json;
use toolfunc::{Ctx, Registry, tool};

/// Takes the context by value.
#[tool]
fn owned(ctx: toolfunc::Ctx, suffix: String) -> String {
    format!("{}{suffix}", ctx.tool_name())
}

/// Takes the context by reference.
#[tool]
fn borrowed(ctx: &toolfunc::Ctx, suffix: String) -> String {
    format!("{}{suffix}", ctx.tool_name())
}

/// Takes the context by value, after an argument, in an async tool.
#[tool]
async fn owned_async(suffix: String, ctx: Ctx) -> String {
    format!("{}{suffix}", ctx.tool_name())
}

/// Takes the context by reference in an async tool.
#[tool]
async fn borrowed_async(ctx: &Ctx) -> String {
    ctx.tool_name().to_owned()
}

/// Runs a future to completion on this thread: enough for tools that never wait.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

fn main() {
    let registry = Registry::global();
    assert_eq!(
        registry.run_sync("owned", json!({"suffix": "!"})).unwrap(),
        json!("owned!")
    );
    assert_eq!(
        registry
            .run_sync("borrowed", json!({"suffix": "?"}))
            .unwrap(),
        json!("borrowed?")
    );
    assert_eq!(
        block_on(registry.run("owned_async", json!({"suffix": "."}))).unwrap(),
        json!("owned_async.")
    );
    assert_eq!(
        block_on(registry.run("borrowed_async", json!({}))).unwrap(),
        json!("borrowed_async")
    );

    for name in ["owned", "borrowed", "owned_async"] {
        let def = registry.get(name).unwrap().definition().clone();
        assert_eq!(
            def.params["properties"],
            json!({"suffix": {"type": "string"}}),
            "{name}"
        );
    }
    let def = registry.get("borrowed_async").unwrap().definition().clone();
    assert_eq!(def.params["type"], "object");
    assert!(def.params.get("required").is_none_or(|r| r == &json!([])));

    // Positional arguments skip the context.
    assert_eq!(
        registry
            .run_sync("owned", vec![json!("#")])
            .unwrap(),
        json!("owned#")
    );
}
