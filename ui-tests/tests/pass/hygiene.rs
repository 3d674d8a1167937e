//! Expansions must name everything by absolute path: this crate has no prelude, no
//! extern prelude and no `macro_use` prelude, and names `toolfunc` only as `::toolfunc`
//! (or through a re-export, with `crate = ...`). The tools sit in a module without a
//! single `use`, so an expansion cannot lean on the imports that `main` needs.

#![no_implicit_prelude]

/// A re-export under another name, for `#[tool(crate = ...)]`.
mod reexport {
    pub use ::toolfunc as tf;
}

mod tools {
    /// Adds two numbers; `b` is optional.
    #[::toolfunc::tool]
    pub fn add(a: i64, b: ::core::option::Option<i64>) -> i64 {
        a + b.unwrap_or(0)
    }

    /// Parses a number, failing on bad input.
    #[::toolfunc::tool]
    pub fn parse(
        text: ::std::string::String,
    ) -> ::core::result::Result<i64, ::std::string::String> {
        text.parse::<i64>()
            .map_err(|e| ::std::string::ToString::to_string(&e))
    }

    /// Checks a number, returning nothing on success.
    #[::toolfunc::tool]
    pub fn check(n: i64) -> ::core::result::Result<(), ::toolfunc::ToolError> {
        if n < 0 {
            return ::core::result::Result::Err(::toolfunc::ToolError::failed("negative"));
        }
        ::core::result::Result::Ok(())
    }

    /// Greets asynchronously, with the context.
    #[::toolfunc::tool]
    pub async fn greet(
        ctx: &::toolfunc::Ctx,
        name: ::core::option::Option<::std::string::String>,
    ) -> ::core::result::Result<::std::string::String, ::toolfunc::ToolError> {
        let name = name.unwrap_or_else(|| ::std::borrow::ToOwned::to_owned("world"));
        ::core::result::Result::Ok(::std::format!("{}: hello {name}", ctx.tool_name()))
    }

    /// Streams a countdown, failing below zero.
    #[::toolfunc::tool(timeout = "1s")]
    pub fn countdown(
        ctx: ::toolfunc::Ctx,
        from: i64,
    ) -> impl ::futures::Stream<Item = ::core::result::Result<i64, ::std::string::String>> {
        let _ = ctx.is_stream();
        ::futures::stream::iter(::core::iter::Iterator::map(
            ::core::iter::Iterator::rev(0..=from),
            |n| ::core::result::Result::Ok(n),
        ))
    }

    /// Waits for nothing, with a timeout that no runtime enforces here.
    #[::toolfunc::tool(timeout = 250)]
    pub async fn patient() -> i64 {
        7
    }

    /// Uses an explicit crate path.
    #[::toolfunc::tool(crate = ::toolfunc)]
    pub fn negate(n: i64) -> i64 {
        -n
    }

    /// Uses a renamed crate path, and is async.
    #[::toolfunc::tool(crate = crate::reexport::tf, name = "double_async")]
    pub async fn double(n: i64) -> i64 {
        n * 2
    }
}

/// Runs a future to completion on this thread: enough for tools that never wait.
fn block_on<F: ::core::future::Future>(future: F) -> F::Output {
    struct Unpark(::std::thread::Thread);
    impl ::std::task::Wake for Unpark {
        fn wake(self: ::std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }

    let unpark = ::std::sync::Arc::new(Unpark(::std::thread::current()));
    let waker = <::std::task::Waker as ::core::convert::From<_>>::from(unpark);
    let mut cx = ::std::task::Context::from_waker(&waker);
    let mut future = ::std::pin::pin!(future);
    loop {
        if let ::std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        ::std::thread::park();
    }
}

fn main() {
    // `json!({...})` calls `.into()` on its keys.
    use ::core::convert::Into as _;
    use ::serde_json::json;

    let registry = ::toolfunc::Registry::global();

    ::std::assert_eq!(
        registry.run_sync("add", json!({"a": 2, "b": 3})).unwrap(),
        json!(5)
    );
    ::std::assert_eq!(registry.run_sync("add", json!({"a": 2})).unwrap(), json!(2));

    ::std::assert_eq!(
        registry.run_sync("parse", json!({"text": "42"})).unwrap(),
        json!(42)
    );
    let err = registry
        .run_sync("parse", json!({"text": "x"}))
        .unwrap_err();
    ::std::assert_eq!(err.code(), "FAILED");

    ::std::assert_eq!(
        registry.run_sync("check", json!({"n": 1})).unwrap(),
        json!(null)
    );
    let err = registry.run_sync("check", json!({"n": -1})).unwrap_err();
    ::std::assert_eq!(err.code(), "FAILED");

    let out = block_on(registry.run("greet", json!({}))).unwrap();
    ::std::assert_eq!(out, json!("greet: hello world"));
    let out = block_on(registry.run("greet", json!({"name": "ui"}))).unwrap();
    ::std::assert_eq!(out, json!("greet: hello ui"));

    ::std::assert_eq!(
        registry.run_sync("negate", json!({"n": 4})).unwrap(),
        json!(-4)
    );
    let out = block_on(registry.run("double_async", json!({"n": 4}))).unwrap();
    ::std::assert_eq!(out, json!(8));

    let out = block_on(registry.run("countdown", json!({"from": 2}))).unwrap();
    ::std::assert_eq!(out, json!([2, 1, 0]));
    let definition = registry.get("countdown").unwrap();
    ::std::assert!(definition.definition().stream);
    ::std::assert_eq!(definition.definition().timeout, ::core::option::Option::Some(1000));
    let out = block_on(registry.run("patient", json!({}))).unwrap();
    ::std::assert_eq!(out, json!(7));

    // The functions stay ordinary functions.
    ::std::assert_eq!(tools::add(1, ::core::option::Option::None), 1);
    ::std::assert_eq!(tools::negate(1), -1);
}
