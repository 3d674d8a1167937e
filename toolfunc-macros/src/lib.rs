//! Procedural macros of [toolfunc](https://docs.rs/toolfunc). Use them through the
//! `toolfunc` crate, which re-exports them and holds the code they expand to.
//!
//! Every macro runs the same phases: `attr` parses the attribute's keys for its
//! position, `model` builds a borrowed-free model of the item, `validate` checks it
//! as its own pass, and `expand` (the only module that quotes code) writes the
//! output from a valid model. Every phase collects its errors in `errors`, a leaf
//! module. On any error, `fallback` emits the user's item, the stubs other code refers
//! to, and every error collected.

// Libraries report through return values and `tracing`, never by printing.
#![warn(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]

mod attr;
mod docs;
mod errors;
mod expand;
mod fallback;
mod model;
mod uri;
mod validate;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;

use crate::attr::{Position, ToolAttrs};
use crate::errors::Errors;
use crate::model::{Service, ToolFn};

// No doc comment: rustdoc appends this item's docs to those of the re-export
// `toolfunc::tool`, which hold the whole documentation (toolfunc/src/docs/tool.md).
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    tool_impl(args.into(), &input.into()).into()
}

// No doc comment, as for `tool`: the documentation is on `toolfunc::tool_service`
// (toolfunc/src/docs/tool_service.md).
#[proc_macro_attribute]
pub fn tool_service(args: TokenStream, input: TokenStream) -> TokenStream {
    tool_service_impl(args.into(), &input.into()).into()
}

// No doc comment, as for `tool`: the documentation is on `toolfunc::prompt`
// (toolfunc/src/docs/prompt.md).
#[proc_macro_attribute]
pub fn prompt(args: TokenStream, input: TokenStream) -> TokenStream {
    function_impl(Position::Prompt, args.into(), &input.into()).into()
}

// No doc comment, as for `tool`: the documentation is on `toolfunc::resource`
// (toolfunc/src/docs/resource.md).
#[proc_macro_attribute]
pub fn resource(args: TokenStream, input: TokenStream) -> TokenStream {
    function_impl(Position::Resource, args.into(), &input.into()).into()
}

/// The attribute's keys, or the default keys with the error collected.
fn parse_attrs(args: TokenStream2, position: Position, errors: &mut Errors) -> ToolAttrs {
    ToolAttrs::parse(args, position).unwrap_or_else(|err| {
        errors.push(err);
        ToolAttrs {
            position,
            ..ToolAttrs::default()
        }
    })
}

fn tool_impl(args: TokenStream2, input: &TokenStream2) -> TokenStream2 {
    function_impl(Position::Function, args, input)
}

/// `#[tool]`, `#[prompt]` or `#[resource]` (by `position`) on a function.
fn function_impl(position: Position, args: TokenStream2, input: &TokenStream2) -> TokenStream2 {
    // A function is read up to its body, which is kept as tokens: nothing reads
    // it, and rustc reports its own errors in it. Anything else is read as an item
    // to say what it is.
    let func = if let Ok(func) = model::parse_fn(input.clone()) {
        func
    } else {
        let item: syn::Item = match syn::parse2(input.clone()) {
            Ok(item) => item,
            Err(err) => return fallback::emit(input, &err),
        };
        let syn::Item::Fn(func) = item else {
            return fallback::emit(input, &fallback::not_a_function(&item, position));
        };
        func
    };
    let mut errors = Errors::default();
    let attrs = parse_attrs(args, position, &mut errors);
    let model = ToolFn::new(attrs, func, &mut errors);
    match position {
        Position::Prompt => validate::prompt(&model, &mut errors),
        Position::Resource => validate::resource(&model, &mut errors),
        _ => validate::tool(&model, &mut errors),
    }
    match errors.finish() {
        Ok(()) => match position {
            Position::Prompt => expand::prompt(&model),
            Position::Resource => expand::resource(&model),
            _ => expand::tool(&model),
        },
        Err(err) => fallback::emit(&model.item, &err),
    }
}

fn tool_service_impl(args: TokenStream2, input: &TokenStream2) -> TokenStream2 {
    let item: syn::ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(err) => {
            let err = syn::Error::new(
                err.span(),
                "#[tool_service] applies to an inherent impl block: `impl MyService { .. }`",
            );
            return fallback::emit(input, &err);
        }
    };
    let mut errors = Errors::default();
    let attrs = parse_attrs(args, Position::Service, &mut errors);
    let model = Service::new(attrs, item, &mut errors);
    validate::service(&model, &mut errors);
    match errors.finish() {
        Ok(()) => expand::service(&model),
        Err(err) => fallback::service(&model, &err),
    }
}
