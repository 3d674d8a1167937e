//! What to emit when the input has mistakes: the user's item without our attributes
//! (so the rest of the crate and the IDE keep working), the stubs other code refers
//! to (a service's client), and every error.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::Item;

use crate::attr::Position;
use crate::expand;
use crate::model::Service;

/// The cleaned item followed by the errors.
pub(crate) fn emit(item: &impl ToTokens, err: &syn::Error) -> TokenStream {
    let mut tokens = item.to_token_stream();
    tokens.extend(err.to_compile_error());
    tokens
}

/// A service with mistakes: its impl block, its `ToolService` impl and client with
/// bodies that never run, and the errors, so that code registering the service or
/// calling the client reports nothing more.
pub(crate) fn service(service: &Service, err: &syn::Error) -> TokenStream {
    let mut tokens = emit(&service.item, err);
    tokens.extend(expand::service_stub(service));
    tokens.extend(expand::client_stub(service));
    tokens
}

/// The error for `#[tool]` (or `#[prompt]`, `#[resource]`: `position`) on something
/// that is not a function, spanned at the item's keyword.
pub(crate) fn not_a_function(item: &Item, position: Position) -> syn::Error {
    let span = match item {
        Item::Struct(i) => i.struct_token.span,
        Item::Enum(i) => i.enum_token.span,
        Item::Union(i) => i.union_token.span,
        Item::Impl(i) => i.impl_token.span,
        Item::Trait(i) => i.trait_token.span,
        Item::Mod(i) => i.mod_token.span,
        Item::Const(i) => i.const_token.span,
        Item::Static(i) => i.static_token.span,
        Item::Type(i) => i.type_token.span,
        Item::Use(i) => i.use_token.span,
        _ => Span::call_site(),
    };
    let hint = if matches!(item, Item::Impl(_)) && !position.is_kind() {
        ", not impl blocks: put it on free functions, or use #[tool_service] on the impl block"
    } else if matches!(item, Item::Impl(_)) {
        ", not impl blocks: put it on free functions"
    } else {
        ""
    };
    let attr = position.attr();
    syn::Error::new(span, format!("{attr} applies to functions only{hint}"))
}
