//! Tool functions for Rust: plain functions that carry JSON-Schema metadata, sit in a
//! global registry from startup, and run by name.
//!
//! ```
//! use serde_json::json;
//! use toolfunc::{tool, Registry};
//!
//! /// Adds two numbers.
//! #[tool(alias = "plus", tags = ["math"])]
//! fn add(/** The left operand. */ a: f64, /** The right operand. */ b: f64) -> f64 {
//!     a + b
//! }
//!
//! // No registration call: `#[tool]` functions are collected at startup.
//! let out = Registry::global().run_sync("plus", json!({"a": 1, "b": 2})).unwrap();
//! assert_eq!(out, json!(3.0));
//!
//! // The function stays an ordinary Rust function.
//! assert_eq!(add(1.0, 2.0), 3.0);
//!
//! // Its definition carries the JSON Schema of its parameters.
//! let def = Registry::global().get("add").unwrap().definition().clone();
//! assert_eq!(def.params["properties"]["a"]["description"], "The left operand.");
//! ```
//!
//! See the crate README for the attribute keys, the runtime API and the error codes.

mod call;
mod ctx;
mod error;
mod registry;
pub mod schema;
mod tool;

pub use call::{ToolCall, ToolResult};
pub use ctx::Ctx;
pub use error::ToolError;
pub use registry::Registry;
pub use tool::{ToolBuilder, ToolDefinition, ToolFunc};

#[cfg(feature = "macros")]
pub use toolfunc_macros::tool;

/// Items used by the code that `#[tool]` generates. Not public API: no semver
/// guarantees; do not use directly.
#[doc(hidden)]
pub mod __private {
    pub use ::futures::future::BoxFuture;
    pub use ::inventory;
    pub use ::schemars;
    pub use ::serde;
    pub use ::serde_json::{self, Value};

    pub use crate::error::convert;
    pub use crate::schema::{parse_args, schema_of};
    pub use crate::tool::{SpecHandler, ToolSpec, to_output};
    pub use crate::{Ctx, ToolError};
    pub use ::core::option::Option::{self, None, Some};
    pub use ::core::result::Result::{self, Err, Ok};

    /// Boxes a handler future.
    pub fn box_future<F>(future: F) -> BoxFuture<'static, F::Output>
    where
        F: ::core::future::Future + Send + 'static,
    {
        ::std::boxed::Box::pin(future)
    }

    /// A parameter type of a `#[tool]` function.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a parameter of a #[tool] function",
        label = "this type must implement `serde::Deserialize` and `schemars::JsonSchema`",
        note = "derive both: #[derive(serde::Deserialize, schemars::JsonSchema)]"
    )]
    pub trait ToolParam {}
    impl<T: ::serde::de::DeserializeOwned + ::schemars::JsonSchema> ToolParam for T {}

    /// Checks, at the parameter's type, that it can be a tool parameter.
    pub const fn assert_param<T: ToolParam + ?Sized>() {}

    /// The output type of a `#[tool]` function.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the result of a #[tool] function",
        label = "this type must implement `serde::Serialize` and `schemars::JsonSchema`",
        note = "derive both: #[derive(serde::Serialize, schemars::JsonSchema)]"
    )]
    pub trait ToolOutput {}
    impl<T: ::serde::Serialize + ::schemars::JsonSchema + ?Sized> ToolOutput for T {}

    /// Checks, at the return type, that it can be a tool result.
    pub const fn assert_output<T: ToolOutput + ?Sized>() {}
}
