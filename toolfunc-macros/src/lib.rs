//! Procedural macros of [toolfunc](https://docs.rs/toolfunc). Use them through the
//! `toolfunc` crate, which re-exports them and holds the code they expand to.

// Libraries report through return values and `tracing`, never by printing.
#![warn(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]

mod attr;
mod docs;
mod expand;
mod fallback;
mod model;
mod service;
mod validate;

use proc_macro::TokenStream;

/// Turns a function into a tool registered in `toolfunc::Registry::global()`.
///
/// The documentation, with the table of keys and examples, is on the re-export
/// `toolfunc::tool`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::tool(args.into(), &input.into()).into()
}

/// Turns an inherent impl block into a service: one tool whose methods are its acts,
/// and a typed client.
///
/// The documentation, with the keys and examples, is on the re-export
/// `toolfunc::tool_service`.
#[proc_macro_attribute]
pub fn tool_service(args: TokenStream, input: TokenStream) -> TokenStream {
    service::tool_service(args.into(), &input.into()).into()
}
