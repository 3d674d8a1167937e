//! `#[prompt]` and `#[resource]`: a function expanded as `#[tool]` expands one, whose
//! `ToolSpec` is submitted inside a `PromptSpec` or a `ResourceSpec` with the
//! completers of its arguments.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use super::{function, some_str};
use crate::model::{ToolFn, wire_name};

/// A valid `#[prompt]` function.
pub(crate) fn prompt(model: &ToolFn) -> TokenStream {
    function(model, |p, tool| {
        let (items, completers) = completers(model, p);
        let spec = quote! {
            #p::PromptSpec {
                tool: #tool,
                completers: &[#(#completers),*],
            }
        };
        (items, spec)
    })
}

/// A valid `#[resource]` function (its `uri` is checked to be there).
pub(crate) fn resource(model: &ToolFn) -> TokenStream {
    let attrs = &model.attrs;
    let uri = attrs
        .uri
        .as_ref()
        .map(syn::LitStr::value)
        .unwrap_or_default();
    function(model, |p, tool| {
        let (items, completers) = completers(model, p);
        let mime_type = some_str(attrs.mime_type.as_ref(), p);
        let spec = quote! {
            #p::ResourceSpec {
                uri: #uri,
                mime_type: #mime_type,
                tool: #tool,
                completers: &[#(#completers),*],
            }
        };
        (items, spec)
    })
}

/// One `fn` per completer, turning what the user's function returns into a
/// `Completion` (spanned at the user's expression, so a function of the wrong shape
/// is reported there), and the `(name, fn)` pairs the spec holds. The name is the
/// argument's name in the arguments object.
pub(super) fn completers(model: &ToolFn, p: &TokenStream) -> (TokenStream, Vec<TokenStream>) {
    let mut items = TokenStream::new();
    let mut pairs = Vec::new();
    let request = syn::Ident::new("__toolfunc_request", Span::mixed_site());
    for (i, (argument, function)) in model.attrs.complete.iter().flatten().enumerate() {
        let wanted = argument.unraw().to_string();
        let name = model
            .args()
            .find(|param| param.ident.unraw() == wanted || wire_name(param) == wanted)
            .map_or(wanted, wire_name);
        let wrapper = format_ident!("__toolfunc_complete_{}", i);
        let call = quote_spanned! {function.span()=>
            #p::into_completion((#function)(#request))
        };
        items.extend(quote! {
            fn #wrapper(#request: &#p::CompletionRequest) -> #p::Completion {
                #call
            }
        });
        pairs.push(quote!((#name, #wrapper as fn(&#p::CompletionRequest) -> #p::Completion)));
    }
    (items, pairs)
}
