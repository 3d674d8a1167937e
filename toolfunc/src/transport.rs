//! `Transport`: how a typed service client (or any caller) reaches tools — in
//! process through a [`Registry`], over HTTP through `http::Client`, or any other
//! way that carries a tool name and a JSON arguments object.

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::error::ToolError;
use crate::registry::Registry;

/// Carries calls to tools by name. Implemented by [`Registry`] (in process) and,
/// with the `http` and `nats` features, by `toolfunc::http::Client` and
/// `toolfunc::nats::Client`.
///
/// A call's arguments are the tool's arguments object; a service method is selected
/// with `act` in it, as in `{"act": "$hello", "name": "Ann"}`.
///
/// ```
/// use serde_json::json;
/// use toolfunc::{Registry, ToolFunc, Transport};
///
/// let registry = Registry::new();
/// registry.register(
///     ToolFunc::builder("echo").handler_sync(|_ctx, args| Ok(args)).build().unwrap(),
/// ).unwrap();
/// let transport: &dyn Transport = &registry;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// assert_eq!(transport.run("echo", json!({"x": 1})).await.unwrap(), json!({"x": 1}));
/// # });
/// ```
pub trait Transport: Send + Sync {
    /// Runs the tool `name` and returns its result.
    fn run(&self, name: &str, args: Value) -> BoxFuture<'static, Result<Value, ToolError>>;

    /// Runs the tool `name` and yields its items one by one (a tool that does not
    /// stream yields its one result).
    fn run_stream(&self, name: &str, args: Value) -> BoxStream<'static, Result<Value, ToolError>>;
}

// These forward to the inherent `Registry::run` and `Registry::run_stream`, which a
// method call on a `Registry` finds first (an inherent method wins over a trait's).
impl Transport for Registry {
    fn run(&self, name: &str, args: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        let registry = self.clone();
        let name = name.to_owned();
        Box::pin(async move { Registry::run(&registry, &name, args).await })
    }

    fn run_stream(&self, name: &str, args: Value) -> BoxStream<'static, Result<Value, ToolError>> {
        Registry::run_stream(self, name, args).boxed()
    }
}

impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn run(&self, name: &str, args: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        (**self).run(name, args)
    }

    fn run_stream(&self, name: &str, args: Value) -> BoxStream<'static, Result<Value, ToolError>> {
        (**self).run_stream(name, args)
    }
}
