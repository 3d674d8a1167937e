//! Code generation, from validated models only; the only module that quotes code.
//! `mod.rs` writes a `#[tool]` function and the parts a service method, a prompt and
//! a resource share with it (parameters type, checks, handler); `service.rs` writes
//! services and clients, `kinds.rs` prompts and resources.

mod kinds;
mod service;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, LitStr};

use crate::attr::{Hints, Position, ToolAttrs};
use crate::docs::{description_expr, doc_parts};
use crate::model::{Output, Param, ParamKind, StreamOutput, ToolFn};

pub(crate) use kinds::{prompt, resource};
pub(crate) use service::{client_stub, service, service_stub};

/// `::toolfunc`, or the path of `crate = ...`.
pub(crate) fn krate(attrs: &ToolAttrs) -> TokenStream {
    attrs
        .krate
        .as_ref()
        .map_or_else(|| quote!(::toolfunc), ToTokens::to_token_stream)
}

/// The lints an expansion cannot avoid, allowed on the code it writes next to the
/// user's: tool parameters are owned (they are deserialised from JSON) even where a
/// function only reads them, and a service method takes `&self` even when stateless.
fn user_item_allows() -> TokenStream {
    quote!(#[allow(clippy::needless_pass_by_value, clippy::unused_self)])
}

/// `Some(description)`: the `description` key, else the doc comment; `None`
/// without either.
pub(crate) fn description_of(
    attrs: &ToolAttrs,
    docs: &[syn::Attribute],
    p: &TokenStream,
) -> TokenStream {
    match &attrs.description {
        Some(lit) => quote!(#p::Some(#lit)),
        None => description_expr(&doc_parts(docs))
            .map_or_else(|| quote!(#p::None), |expr| quote!(#p::Some(#expr))),
    }
}

/// The type whose schema is the result's: the return type, `T` of `Result<T, E>`,
/// a stream's item type; `None` for a function that returns nothing.
fn output_type(model: &ToolFn, p: &TokenStream) -> Option<TokenStream> {
    match &model.output {
        Output::Value(ty) | Output::Result { ok: Some(ty), .. } => Some(ty.to_token_stream()),
        Output::Stream(stream) => Some(stream_item_type(stream, p)),
        Output::Unit | Output::Result { ok: None, .. } | Output::Answer { .. } => None,
    }
}

/// `Some(|| result schema)`, `None` for a function that returns nothing, a prompt or
/// a resource (whose results have shapes of their own).
pub(crate) fn result_fn(model: &ToolFn, p: &TokenStream) -> TokenStream {
    if model.attrs.position.is_kind() {
        return quote!(#p::None);
    }
    if let Some(ty) = plain_output(model) {
        return quote!(#p::Some(#p::result_schema_of::<#ty>));
    }
    output_type(model, p).map_or_else(
        || quote!(#p::None),
        |ty| quote!(#p::Some(|| (&&#p::Checked::<#ty>::new()).result_schema())),
    )
}

/// The result type of a tool (not a prompt or a resource) when it is a standard
/// type (`String`, `f64`, `Vec<i64>`...), which is `Serialize` and `JsonSchema`
/// for sure: it is converted and described by direct calls, with no check and no
/// autoref probing for the compiler to resolve.
pub(crate) fn plain_output(model: &ToolFn) -> Option<&syn::Type> {
    match &model.output {
        Output::Value(ty) | Output::Result { ok: Some(ty), .. } if plain_type(model, ty) => {
            Some(ty)
        }
        _ => None,
    }
}

/// Whether `ty`, a parameter or result type of a tool (not of a prompt or a
/// resource, whose types are read by their kind), is a standard type that fits
/// for sure.
fn plain_type(model: &ToolFn, ty: &syn::Type) -> bool {
    !model.attrs.position.is_kind() && is_std_type(ty)
}

/// Whether nothing in a function's expansion dispatches by autoref: its parameters
/// type is plain and its result plain or nothing, so the `Via*` traits need not be
/// in scope.
pub(crate) fn all_plain(model: &ToolFn, params: &ParamsType) -> bool {
    params.plain
        && (plain_output(model).is_some()
            || matches!(model.output, Output::Unit) && !model.attrs.position.is_kind())
}

pub(crate) fn some_str(value: Option<&LitStr>, p: &TokenStream) -> TokenStream {
    value.map_or_else(|| quote!(#p::None), |lit| quote!(#p::Some(#lit)))
}

/// Hidden locals of the generated handler; `mixed_site` keeps them out of the user's
/// reach and the user's names out of theirs.
struct Locals {
    ctx: Ident,
    raw: Ident,
    params: Ident,
    out: Ident,
}

impl Locals {
    fn new() -> Self {
        let local = |name: &str| Ident::new(name, Span::mixed_site());
        Self {
            ctx: local("__toolfunc_ctx"),
            raw: local("__toolfunc_args"),
            params: local("__toolfunc_params"),
            out: local("__toolfunc_out"),
        }
    }
}

/// A valid `#[tool]` function: the function, its parameters type, checks, handler and
/// registration.
pub(crate) fn tool(model: &ToolFn) -> TokenStream {
    function(model, |_, spec| (quote!(), spec))
}

/// A valid function of any attribute: the function, its parameters type, checks,
/// handler, and the registration of what `submit` makes of its `ToolSpec` (the
/// items it needs beside, and the value submitted).
pub(crate) fn function(
    model: &ToolFn,
    submit: impl FnOnce(&TokenStream, TokenStream) -> (TokenStream, TokenStream),
) -> TokenStream {
    let attrs = &model.attrs;
    let krate = krate(attrs);
    let p = quote!(#krate::__private);
    let item = &model.item;
    let fn_ident = &item.sig.ident;
    let name = attrs.name.as_ref().map_or_else(
        || LitStr::new(&fn_ident.unraw().to_string(), fn_ident.span()),
        Clone::clone,
    );
    let description = description_of(attrs, &item.attrs, &p);
    let title = some_str(attrs.title.as_ref(), &p);
    let summary = some_str(attrs.summary.as_ref(), &p);
    let alias = attrs.alias.iter().flatten();
    let tags = attrs.tags.iter().flatten();

    let params = params_type(model, &p);
    let plain = all_plain(model, &params);
    let ParamsType {
        item: params_item,
        ty: params_type,
        plain: plain_params,
    } = params;
    let checks = checks(model, &p);
    let result_fn = result_fn(model, &p);
    let handler = handler(model, &p, &params_type, plain_params, None);
    let (param_order, params_schema) = params_fns(&params_type, plain_params, &p);
    let kind = handler_kind(model);
    let execution = execution_fields(model, &p);
    let api = attrs.api.as_ref().is_none_or(|lit| lit.value);
    // The registration exists exactly when the function does.
    let cfgs = item.attrs.iter().filter(|a| a.path().is_ident("cfg"));
    let location =
        quote_spanned!(fn_ident.span()=> ::core::concat!(::core::file!(), ":", ::core::line!()));
    // Only the keys the attribute sets are written; the rest are `ToolSpec::new`'s
    // defaults.
    let mut set = execution;
    if attrs.title.is_some() {
        set.push(quote!(title: #title,));
    }
    if attrs.summary.is_some() {
        set.push(quote!(summary: #summary,));
    }
    if alias.clone().next().is_some() {
        set.push(quote!(alias: &[#(#alias),*],));
    }
    if tags.clone().next().is_some() {
        set.push(quote!(tags: &[#(#tags),*],));
    }
    if !api {
        set.push(quote!(api: false,));
    }
    let spec = quote! {
        #p::ToolSpec {
            #(#set)*
            ..#p::ToolSpec::new(
                #name,
                #description,
                #param_order,
                #params_schema,
                #result_fn,
                #p::SpecHandler::#kind(__toolfunc_handler),
                #location,
            )
        }
    };
    let (beside, submitted) = submit(&p, spec);

    let allows = user_item_allows();
    let mut prelude = if plain { plain_prelude() } else { prelude(&p) };
    if attrs.position.is_kind() {
        prelude.extend(quote! {
            #[allow(unused_imports)]
            use #p::{FallbackSerialized as _, ViaSerialized as _};
        });
    }
    quote! {
        #allows
        #item

        #(#cfgs)*
        const _: () = {
            #prelude
            #params_item
            #checks
            #handler
            #beside

            #p::inventory::submit! {
                #submitted
            }
        };
    }
}

/// A `ToolSpec`'s `param_order` and `params`: direct paths for a plain parameters
/// type, closures that dispatch by autoref for the others.
pub(crate) fn params_fns(
    params_type: &TokenStream,
    plain: bool,
    p: &TokenStream,
) -> (TokenStream, TokenStream) {
    if plain {
        (
            quote!(#p::field_order::<#params_type>),
            quote!(#p::schema_of::<#params_type>),
        )
    } else {
        (
            quote!(|schema| (&&#p::Checked::<#params_type>::new()).param_order(schema)),
            quote!(|| (&&#p::Checked::<#params_type>::new()).params_schema()),
        )
    }
}

/// The prelude of an expansion with no autoref dispatch: only what the schemars
/// derive needs.
pub(crate) fn plain_prelude() -> TokenStream {
    quote! {
        #[allow(unused_imports)]
        use ::core::convert::Into as _;
    }
}

/// The imports every expansion's `const _` block starts with.
pub(crate) fn prelude(p: &TokenStream) -> TokenStream {
    quote! {
        // The schemars derive calls `.into()` without a path; keep it working
        // under `#![no_implicit_prelude]`.
        #[allow(unused_imports)]
        use ::core::convert::Into as _;
        #[allow(unused_imports)]
        use #p::{FallbackOutput as _, FallbackParams as _, ViaOutput as _, ViaParams as _};
        #[allow(unused_imports)]
        use #p::{FallbackAnswer as _, ViaAnswer as _};
    }
}

/// The `ToolSpec` fields about running the tool that its attribute sets (timeout,
/// dependencies, concurrency limit, behaviour hints...), each `key: value,`.
pub(crate) fn execution_fields(model: &ToolFn, p: &TokenStream) -> Vec<TokenStream> {
    let attrs = &model.attrs;
    let mut set = Vec::new();
    if attrs.depends.as_ref().is_some_and(|d| !d.is_empty()) {
        let depends = attrs.depends.iter().flatten().map(|(alias, name)| {
            let alias = alias.to_string();
            quote!((#alias, #name))
        });
        set.push(quote!(depends: &[#(#depends),*],));
    }
    if attrs.concurrency.is_some() {
        let concurrency = concurrency_value(attrs, p);
        set.push(quote!(concurrency: #concurrency,));
    }
    if attrs.annotations.is_some() {
        let annotations = annotation_values(attrs, p);
        set.push(quote!(annotations: #annotations,));
    }
    if attrs.timeout.is_some() {
        let timeout = timeout_value(attrs, p);
        set.push(quote!(timeout_ms: #timeout,));
    }
    if let Some((_, only)) = attrs.background {
        set.push(quote!(background: true, background_only: #only,));
    }
    // `true`, or without toolfunc's `validate` feature a compile error at the word.
    if let Some(span) = attrs.check_output {
        let check_output = quote_spanned!(span=> #p::check_output!());
        set.push(quote!(check_output: #check_output,));
    }
    if attrs.needs_client.as_ref().is_some_and(|n| !n.is_empty()) {
        let needs_client = attrs.needs_client.iter().flatten();
        set.push(quote!(needs_client: &[#(#needs_client),*],));
    }
    if attrs.scopes.as_ref().is_some_and(|s| !s.is_empty()) {
        let scopes = attrs.scopes.iter().flatten();
        set.push(quote!(scopes: &[#(#scopes),*],));
    }
    set
}

/// `Some(n)` for `concurrency = n`, spanned at the literal.
pub(crate) fn concurrency_value(attrs: &ToolAttrs, p: &TokenStream) -> TokenStream {
    attrs.concurrency.as_ref().map_or_else(
        || quote!(#p::None),
        |n| quote_spanned!(n.span()=> #p::Some(#n)),
    )
}

/// `Some(ms)` for `timeout = ..`, spanned at the literal.
pub(crate) fn timeout_value(attrs: &ToolAttrs, p: &TokenStream) -> TokenStream {
    attrs.timeout.map_or_else(
        || quote!(#p::None),
        |(ms, span)| quote_spanned!(span=> #p::Some(#ms)),
    )
}

/// `Annotations::NONE.read_only(true)`: each hint set by name, in a `static`.
pub(crate) fn annotation_values(attrs: &ToolAttrs, p: &TokenStream) -> TokenStream {
    let hints = attrs.annotations.unwrap_or_default();
    let set = Hints::set(&hints).map(|(name, value)| {
        let name = Ident::new(name, Span::call_site());
        quote!(.#name(#value))
    });
    quote!(#p::Annotations::NONE #(#set)*)
}

pub(crate) struct ParamsType {
    /// The generated struct, if any.
    pub(crate) item: TokenStream,
    /// The type the arguments object deserialises into.
    pub(crate) ty: TokenStream,
    /// Every field of the generated struct is a standard type (`String`, `i64`,
    /// `Vec<bool>`...) read without a serde attribute naming code: the struct is
    /// `Deserialize` and `JsonSchema` for sure, and read by direct calls.
    pub(crate) plain: bool,
}

/// The parameters type: the user's struct with `args`, else a struct of the arguments
/// carrying their doc comments and serde/schemars attributes.
pub(crate) fn params_type(model: &ToolFn, p: &TokenStream) -> ParamsType {
    let args: Vec<&Param> = model.args().collect();
    if model.attrs.args.is_some() {
        let ty = &args[0].ty;
        return ParamsType {
            item: quote!(),
            ty: quote!(#ty),
            plain: false,
        };
    }
    let path = quote!(#p).to_string().replace(' ', "");
    let serde_path = format!("{path}::serde");
    let schemars_path = format!("{path}::schemars");
    let deny = model
        .attrs
        .deny_unknown_fields
        .map(|span| quote_spanned!(span=> #[serde(deny_unknown_fields)]));
    // Each field's type is a type parameter, so that the derives compile whatever
    // the user's type implements; the checks report a missing trait once, under
    // the user's type. A field with its own (de)serialiser or a default keeps its
    // type: those attributes name code that needs the concrete type. So does a
    // field of a standard type (`String`, `i64`, `Vec<bool>`...), which has both
    // traits: a struct without type parameters compiles faster (its impls are
    // checked and built once, and no generic code goes into the crate's metadata).
    let mut generics = Vec::new();
    let mut concrete = Vec::new();
    let fields: Vec<TokenStream> = args
        .iter()
        .map(|param| {
            let (attrs, ident, ty) = (&param.attrs, &param.ident, &param.ty);
            if keeps_its_type(param) || is_std_type(ty) {
                return quote!(#(#attrs)* #ident: #ty);
            }
            let generic = format_ident!("__ToolfuncT{}", generics.len());
            generics.push(generic.clone());
            concrete.push(ty);
            quote!(#(#attrs)* #ident: #generic)
        })
        .collect();
    let ty = format_ident!("__ToolfuncParams");
    let plain = args
        .iter()
        .all(|param| plain_type(model, &param.ty) && !keeps_its_type(param));
    ParamsType {
        plain,
        item: quote! {
            #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            #deny
            struct #ty<#(#generics),*> { #(#fields,)* }
        },
        ty: quote!(#ty<#(#concrete),*>),
    }
}

/// A standard type that is `Deserialize` and `JsonSchema` for sure: a primitive,
/// `String`, or `Vec`/`Option` of one, named by a single-segment path.
fn is_std_type(ty: &syn::Type) -> bool {
    const LEAVES: &[&str] = &[
        "String", "bool", "char", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32",
        "u64", "u128", "usize", "f32", "f64",
    ];
    let syn::Type::Path(path) = ty else {
        return false;
    };
    if path.qself.is_some() || path.path.leading_colon.is_some() || path.path.segments.len() != 1 {
        return false;
    }
    let segment = &path.path.segments[0];
    let name = segment.ident.to_string();
    match &segment.arguments {
        syn::PathArguments::None => LEAVES.contains(&name.as_str()),
        syn::PathArguments::AngleBracketed(args) if name == "Vec" || name == "Option" => {
            matches!(args.args.first(), Some(syn::GenericArgument::Type(inner)) if args.args.len() == 1 && is_std_type(inner))
        }
        _ => false,
    }
}

/// `#[serde(with = ..)]`, `deserialize_with`, `default`, `#[schemars(with = ..)]`
/// or `schema_with`: the field's attribute names code for its concrete type.
fn keeps_its_type(param: &Param) -> bool {
    param.attrs.iter().any(|attr| {
        (attr.path().is_ident("serde") || attr.path().is_ident("schemars"))
            && attr.meta.to_token_stream().into_iter().any(|token| {
                let proc_macro2::TokenTree::Group(group) = token else {
                    return false;
                };
                group.stream().into_iter().any(|t| {
                    matches!(&t, proc_macro2::TokenTree::Ident(i)
                        if i == "with" || i == "deserialize_with" || i == "schema_with" || i == "default")
                })
            })
    })
}

/// Trait checks spanned at the user's types, so a missing impl lands under that type.
pub(crate) fn checks(model: &ToolFn, p: &TokenStream) -> TokenStream {
    let position = model.attrs.position;
    let assert_param = match position {
        Position::Prompt => quote!(assert_prompt_param),
        Position::Resource => quote!(assert_resource_param),
        _ => quote!(assert_param),
    };
    // A tool's standard types fit for sure: nothing to check.
    let params: Vec<TokenStream> = model
        .args()
        .filter(|param| model.attrs.args.is_some() || !plain_type(model, &param.ty))
        .map(|param| {
            let ty = &param.ty;
            let assert = respan(quote!(#p::#assert_param), ty.span());
            quote_spanned!(ty.span()=> #assert::<#ty>();)
        })
        .collect();
    let contexts = model.params.iter().filter_map(|param| match param.kind {
        ParamKind::Ctx { .. } => {
            let ty = &param.ty;
            Some(quote_spanned!(ty.span()=> #p::assert_ctx::<#ty>();))
        }
        ParamKind::Arg => None,
    });
    let error = match &model.output {
        Output::Result { err: Some(err), .. } => {
            quote_spanned!(err.span()=> #p::assert_error::<#err>();)
        }
        _ => quote!(),
    };
    // An `Answer` is checked to be toolfunc's; any other result to be a result.
    let output = match (&model.output, position) {
        (Output::Answer { ty, .. }, _) => Some((quote!(#p::assert_answer), ty.to_token_stream())),
        (_, Position::Prompt) => {
            output_type(model, p).map(|ty| (quote!(#p::assert_prompt_output), ty))
        }
        (_, Position::Resource) => {
            output_type(model, p).map(|ty| (quote!(#p::assert_resource_output), ty))
        }
        _ if plain_output(model).is_some() => None,
        _ => output_type(model, p).map(|ty| (quote!(#p::assert_output), ty)),
    }
    .map(|(assert, ty)| {
        let assert = respan(assert, ty.span());
        quote_spanned!(ty.span()=> #assert::<#ty>();)
    });
    let contexts: Vec<TokenStream> = contexts.collect();
    if params.is_empty() && contexts.is_empty() && output.is_none() && error.is_empty() {
        return quote!();
    }
    quote! {
        #[allow(dead_code)]
        fn __toolfunc_checks() {
            #(#params)*
            #(#contexts)*
            #output
            #error
        }
    }
}

/// For a service method: the path to call, the receiver argument, and the handler's
/// parameter holding the service (`&Arc<S>` for sync methods, `Arc<S>` owned by the
/// future for async and streaming ones). Plain functions have neither.
fn service_parts(
    fn_ident: &Ident,
    receiver: Option<&Receiver<'_>>,
    owns_ctx: bool,
    p: &TokenStream,
) -> (TokenStream, Option<TokenStream>, Option<TokenStream>) {
    let svc = Ident::new("__toolfunc_svc", Span::mixed_site());
    match receiver {
        None => (quote!(#fn_ident), None, None),
        Some(Receiver { self_ty, by_arc }) => {
            let arg = match (by_arc, owns_ctx) {
                (false, true) => quote!(&*#svc,),
                (false, false) => quote!(&**#svc,),
                (true, true) => quote!(#svc,),
                (true, false) => quote!(#p::Arc::clone(#svc),),
            };
            let param = if owns_ctx {
                quote!(#svc: #p::Arc<#self_ty>,)
            } else {
                quote!(#svc: &#p::Arc<#self_ty>,)
            };
            (quote!(<#self_ty>::#fn_ident), Some(arg), Some(param))
        }
    }
}

/// `__toolfunc_handler`: parses the arguments, calls the user's function, converts
/// its output.
/// How a service method's handler reaches the service: `self_ty` is the service
/// type; `by_arc` for a `self: Arc<Self>` receiver (else `&self`).
pub(crate) struct Receiver<'a> {
    pub(crate) self_ty: &'a syn::Type,
    pub(crate) by_arc: bool,
}

pub(crate) fn handler(
    model: &ToolFn,
    p: &TokenStream,
    params_type: &TokenStream,
    plain: bool,
    receiver: Option<&Receiver<'_>>,
) -> TokenStream {
    let Locals {
        ctx,
        raw,
        params,
        out,
    } = Locals::new();
    let is_async = model.is_async();
    let is_stream = matches!(model.output, Output::Stream(_));
    let is_answer = matches!(model.output, Output::Answer { .. });
    // Async, streaming and stream-or-value handlers own their context; sync ones
    // borrow it.
    let owns_ctx = is_async || is_stream || is_answer;
    let whole = model.attrs.args.is_some();
    let call_args = model.params.iter().map(|param| match param.kind {
        ParamKind::Ctx { by_ref } => match (by_ref, owns_ctx) {
            (true, true) => quote!(&#ctx),
            (true, false) | (false, true) => quote!(#ctx),
            (false, false) => quote!(<#p::Ctx as ::core::clone::Clone>::clone(#ctx)),
        },
        ParamKind::Arg if whole => quote!(#params),
        ParamKind::Arg => {
            let ident = &param.ident;
            quote!(#params.#ident)
        }
    });
    let fn_ident = &model.item.sig.ident;
    let (callee, self_arg, svc_param) = service_parts(fn_ident, receiver, owns_ctx, p);
    let await_ = is_async.then(|| quote!(.await));
    let convert = conversion(model, p, &out);
    // The arguments are parsed where the handler is called (read in place when the
    // caller lent them), then dropped: the JSON is not kept while the function runs.
    let read = read_args(params_type, plain, &raw, p);
    let parse = |fail: TokenStream| {
        quote! {
            let #params: #params_type = match #read {
                #p::Ok(v) => v,
                #p::Err(e) => return #fail,
            };
            ::core::mem::drop(#raw);
        }
    };
    let run = quote! {
        let #out = #callee(#self_arg #(#call_args),*) #await_;
        #convert
    };
    // A future's handler parses before its future: only the parsed values go in it.
    let future_handler = |item: TokenStream| {
        let parse = parse(quote!(#p::failed_future(e)));
        quote! {
            fn __toolfunc_handler(
                #svc_param
                #ctx: #p::Ctx,
                #raw: #p::Cow<'_, #p::Value>,
            ) -> #p::BoxFuture<'static, #p::Result<#item, #p::ToolError>> {
                #parse
                #p::box_future(async move { #run })
            }
        }
    };
    let body = {
        let parse = parse(quote!(#p::Err(e)));
        quote!(#parse #run)
    };
    if is_stream {
        future_handler(quote!(#p::ItemStream))
    } else if is_answer {
        future_handler(quote!(#p::Answer))
    } else if is_async && model.attrs.local.is_some() && receiver.is_none() {
        local_handler(&ctx, &raw, &body, p)
    } else if is_async {
        send_future_handler(model, p, &read, params_type, svc_param.as_ref(), &run)
    } else {
        quote! {
            fn __toolfunc_handler(
                #svc_param
                #ctx: &#p::Ctx,
                #raw: #p::Cow<'_, #p::Value>,
            ) -> #p::Result<#p::Value, #p::ToolError> {
                #body
            }
        }
    }
}

/// An async function's handler: its future is made by a function of its own, so
/// that whether it is `Send` is known where the handler boxes it; one that is not
/// is one error, under the function's name, that names `#[tool(local)]`.
fn send_future_handler(
    model: &ToolFn,
    p: &TokenStream,
    read: &TokenStream,
    params_type: &TokenStream,
    svc_param: Option<&TokenStream>,
    run: &TokenStream,
) -> TokenStream {
    let Locals {
        ctx, raw, params, ..
    } = Locals::new();
    // Spanned at the function's name, where the error about it is shown.
    let future = Ident::new("__toolfunc_future", model.item.sig.ident.span());
    let svc_arg = svc_param.map(|_| {
        let svc = Ident::new("__toolfunc_svc", Span::mixed_site());
        quote!(#svc,)
    });
    let parse = quote! {
        let #params: #params_type = match #read {
            #p::Ok(v) => v,
            #p::Err(e) => return #p::failed_future(e),
        };
        ::core::mem::drop(#raw);
    };
    let boxed = quote_spanned! {model.item.sig.ident.span()=>
        (&&#p::FutureProbe::of(&#future)).boxed_future(#future)
    };
    quote! {
        fn __toolfunc_handler(
            #svc_param
            #ctx: #p::Ctx,
            #raw: #p::Cow<'_, #p::Value>,
        ) -> #p::BoxFuture<'static, #p::Result<#p::Value, #p::ToolError>> {
            async fn __toolfunc_run(
                #svc_param
                #ctx: #p::Ctx,
                #params: #params_type,
            ) -> #p::Result<#p::Value, #p::ToolError> {
                #run
            }
            #[allow(unused_imports)]
            use #p::{FallbackLocalFuture as _, ViaSendFuture as _};
            #parse
            let #future = __toolfunc_run(#svc_arg #ctx, #params);
            #boxed
        }
    }
}

/// The expression that reads the arguments (`raw`) into the parameters type.
fn read_args(params_type: &TokenStream, plain: bool, raw: &Ident, p: &TokenStream) -> TokenStream {
    if plain {
        quote!(#p::parse_plain::<#params_type>(&#raw))
    } else {
        quote!((&&#p::Checked::<#params_type>::new()).parse_args(&#raw))
    }
}

/// Turns the user's function's output (held in `out`) into the handler's result.
fn conversion(model: &ToolFn, p: &TokenStream, out: &Ident) -> TokenStream {
    // A tool's result is checked to have a schema; a prompt's or a resource's is
    // read by its kind, and needs only to serialise.
    let output = if model.attrs.position.is_kind() {
        quote!(serialized)
    } else {
        quote!(output)
    };
    let plain = plain_output(model).is_some();
    match &model.output {
        Output::Unit => quote! {
            let () = #out;
            #p::Ok(#p::Value::Null)
        },
        Output::Value(ty) if plain => quote!(#p::output_plain::<#ty>(#out)),
        Output::Result { ok: Some(ty), .. } if plain => {
            on_ok(p, out, |ok| quote!(#p::output_plain::<#ty>(#ok)))
        }
        Output::Value(ty) => quote!((&&#p::Checked::<#ty>::new()).#output(#out)),
        Output::Result { ok: ok_ty, .. } => {
            let ty = ok_ty
                .as_ref()
                .map_or_else(|| quote!(()), ToTokens::to_token_stream);
            on_ok(
                p,
                out,
                |ok| quote!((&&#p::Checked::<#ty>::new()).#output(#ok)),
            )
        }
        Output::Stream(stream) => stream_conversion(stream, p, out),
        Output::Answer { ty, open_result } => {
            let answer = quote!((&&#p::Checked::<#ty>::new()).answer);
            if *open_result {
                on_ok(p, out, |ok| quote!(#p::Ok(#answer(#ok))))
            } else {
                quote!(#p::Ok(#answer(#out)))
            }
        }
    }
}

/// `out` (a `Result`) matched: its `Ok` value goes through `ok` (which gives the
/// handler's result), its `Err` becomes a `ToolError`.
fn on_ok(p: &TokenStream, out: &Ident, ok: impl FnOnce(&Ident) -> TokenStream) -> TokenStream {
    let value = Ident::new("__toolfunc_ok", Span::mixed_site());
    let err = Ident::new("__toolfunc_err", Span::mixed_site());
    let error = tool_error(p, &err);
    let ok = ok(&value);
    quote! {
        match #out {
            #p::Ok(#value) => #ok,
            #p::Err(#err) => #p::Err(#error),
        }
    }
}

/// The runtime's handler variant for `model`: `Stream`, `Either`, `Async` or `Sync`.
pub(crate) fn handler_kind(model: &ToolFn) -> TokenStream {
    if matches!(model.output, Output::Stream(_)) {
        quote!(Stream)
    } else if matches!(model.output, Output::Answer { .. }) {
        quote!(Either)
    } else if model.is_async() {
        quote!(Async)
    } else {
        quote!(Sync)
    }
}

/// A `#[tool(local)]` handler: its future is built on the local executor's thread and
/// need not be `Send`.
fn local_handler(ctx: &Ident, raw: &Ident, body: &TokenStream, p: &TokenStream) -> TokenStream {
    quote! {
        fn __toolfunc_handler(
            #ctx: #p::Ctx,
            #raw: #p::Cow<'_, #p::Value>,
        ) -> #p::BoxFuture<'static, #p::Result<#p::Value, #p::ToolError>> {
            fn __toolfunc_local(
                #ctx: #p::Ctx,
                #raw: #p::Value,
            ) -> #p::LocalBoxFuture<'static, #p::Result<#p::Value, #p::ToolError>> {
                #p::box_local(async move { #body })
            }
            // Parsed on the local executor's thread, which needs the JSON owned.
            #p::run_local(#ctx, #p::Cow::into_owned(#raw), __toolfunc_local)
        }
    }
}

/// The `ToolError` for a handler error held in `err`: a `ToolError` passes through, a
/// `std::error::Error` keeps its source, anything `Display` keeps its message.
pub(crate) fn tool_error(p: &TokenStream, err: &Ident) -> TokenStream {
    quote! {{
        #[allow(unused_imports)]
        use #p::convert::{ViaDisplay as _, ViaStdError as _, ViaToolError as _};
        (&&&#p::convert::Probe::new(#err)).to_tool_error()
    }}
}

/// The item type of a streaming tool, for its result schema.
pub(crate) fn stream_item_type(stream: &StreamOutput, p: &TokenStream) -> TokenStream {
    match (&stream.item, &stream.named) {
        (Some(item), _) => quote!(#item),
        (None, Some(named)) => quote_spanned!(named.span()=> <#named as #p::Stream>::Item),
        (None, None) => quote!(()),
    }
}

/// Turns the function's stream (held in `out`) into the tool's item stream.
fn stream_conversion(stream: &StreamOutput, p: &TokenStream, out: &Ident) -> TokenStream {
    let err = Ident::new("__toolfunc_err", Span::mixed_site());
    let item = Ident::new("__toolfunc_item", Span::mixed_site());
    let error = tool_error(p, &err);
    let open = stream.open_result.then(|| {
        quote! {
            let #out = match #out {
                #p::Ok(#out) => #out,
                #p::Err(#err) => return #p::Err(#error),
            };
        }
    });
    let item_ty = stream_item_type(stream, p);
    let to_output = quote!((&&#p::Checked::<#item_ty>::new()).output);
    let convert_item = if stream.item_result {
        quote! {
            match #item {
                #p::Ok(#item) => #to_output(#item),
                #p::Err(#err) => #p::Err(#error),
            }
        }
    } else {
        quote!(#to_output(#item))
    };
    quote! {
        #open
        #p::Ok(#p::box_stream(#p::StreamExt::map(#out, move |#item| #convert_item)))
    }
}

/// `tokens` with every span set to `span`, so a trait error in a generated call lands
/// under the user's type rather than under `#[tool]`.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::is_std_type;

    #[test]
    fn standard_types_keep_their_type() {
        for ty in [
            parse_quote!(String),
            parse_quote!(i64),
            parse_quote!(Vec<bool>),
            parse_quote!(Option<Vec<f64>>),
        ] {
            assert!(is_std_type(&ty), "{}", quote::quote!(#ty));
        }
    }

    #[test]
    fn other_types_become_type_parameters() {
        for ty in [
            parse_quote!(Point),
            parse_quote!(my::String),
            parse_quote!(::std::string::String),
            parse_quote!(Vec<Point>),
            parse_quote!(Option<(i32, i32)>),
            parse_quote!(&str),
            parse_quote!(std::collections::HashMap<String, i64>),
        ] {
            assert!(!is_std_type(&ty), "{}", quote::quote!(#ty));
        }
    }
}
