//! Code generation for `#[tool]`. Sees only validated models; the only file that
//! quotes code.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Item, LitStr};

use crate::attr::ToolAttrs;
use crate::docs::{description_expr, doc_parts};
use crate::fallback;
use crate::model::{Output, Param, ParamKind, StreamOutput, ToolFn};
use crate::validate::{Errors, validate};

/// Entry point of `#[tool]`.
pub(crate) fn tool(args: TokenStream, input: &TokenStream) -> TokenStream {
    let item: Item = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(err) => return fallback::emit(input, &err),
    };
    let Item::Fn(func) = item else {
        return fallback::emit(input, &fallback::not_a_function(&item));
    };
    let mut errors = Errors::default();
    let attrs = ToolAttrs::parse(args).unwrap_or_else(|err| {
        errors.push(err);
        ToolAttrs::default()
    });
    if let Some(span) = attrs.skip {
        errors.push(syn::Error::new(
            span,
            "#[tool] key `skip` applies to methods of a #[tool_service] impl block",
        ));
    }
    if let Some(lit) = &attrs.client {
        errors.push(syn::Error::new_spanned(
            lit,
            "#[tool] key `client` applies to #[tool_service] only",
        ));
    }
    let model = ToolFn::new(attrs, func, &mut errors);
    validate(&model, &mut errors);
    match errors.finish() {
        Ok(()) => generate(&model),
        Err(err) => fallback::emit(&model.item, &err),
    }
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

/// `Some(|| result schema)` from the return type (a stream's item type for a
/// stream), `None` for a function that returns nothing.
pub(crate) fn result_fn(model: &ToolFn, p: &TokenStream) -> TokenStream {
    match &model.output {
        Output::Value(ty) | Output::Result { ok: Some(ty), .. } => {
            let schema_of = respan(quote!(#p::result_schema_of), ty.span());
            let schema = quote_spanned!(ty.span()=> #schema_of::<#ty>());
            quote!(#p::Some(|| #schema))
        }
        Output::Stream(stream) => {
            let item = stream_item_type(stream, p);
            let schema_of = respan(quote!(#p::result_schema_of), item.span());
            let schema = quote_spanned!(item.span()=> #schema_of::<#item>());
            quote!(#p::Some(|| #schema))
        }
        Output::Unit | Output::Result { ok: None, .. } => quote!(#p::None),
    }
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

fn generate(model: &ToolFn) -> TokenStream {
    let attrs = &model.attrs;
    let krate = attrs
        .krate
        .as_ref()
        .map_or_else(|| quote!(::toolfunc), |path| quote!(#path));
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

    let ParamsType {
        item: params_item,
        ty: params_type,
    } = params_type(model, &p);
    let checks = checks(model, &p);
    let result_fn = result_fn(model, &p);
    let handler = handler(model, &p, &params_type, None);
    let kind = if matches!(model.output, Output::Stream(_)) {
        quote!(Stream)
    } else if model.is_async() {
        quote!(Async)
    } else {
        quote!(Sync)
    };
    let execution = execution_fields(model, &p);
    let api = attrs.api.as_ref().is_none_or(|lit| lit.value);
    // The registration exists exactly when the function does.
    let cfgs = item.attrs.iter().filter(|a| a.path().is_ident("cfg"));
    let location =
        quote_spanned!(fn_ident.span()=> ::core::concat!(::core::file!(), ":", ::core::line!()));

    quote! {
        // Tool parameters must own their data (they are deserialised from JSON), so
        // clippy's advice to borrow them cannot be followed.
        #[allow(clippy::needless_pass_by_value)]
        #item

        #(#cfgs)*
        #[allow(non_camel_case_types, clippy::all, clippy::pedantic)]
        const _: () = {
            // The schemars derive calls `.into()` without a path; keep it working
            // under `#![no_implicit_prelude]`.
            #[allow(unused_imports)]
            use ::core::convert::Into as _;
            #params_item
            #checks
            #handler

            #p::inventory::submit! {
                #p::ToolSpec {
                    name: #name,
                    title: #title,
                    description: #description,
                    summary: #summary,
                    alias: &[#(#alias),*],
                    tags: &[#(#tags),*],
                    param_order: #p::field_order::<#params_type>,
                    params: || #p::schema_of::<#params_type>(),
                    result: #result_fn,
                    handler: #p::SpecHandler::#kind(__toolfunc_handler),
                    #execution
                    api: #api,
                    location: #location,
                }
            }
        };
    }
}

/// The `ToolSpec` fields about running the tool: timeout, dependencies, concurrency
/// limit, behaviour hints.
pub(crate) fn execution_fields(model: &ToolFn, p: &TokenStream) -> TokenStream {
    let attrs = &model.attrs;
    let depends = attrs.depends.iter().flatten().map(|(alias, name)| {
        let alias = alias.to_string();
        quote!((#alias, #name))
    });
    let concurrency = concurrency_value(attrs, p);
    let annotations = annotation_values(attrs, p);
    let timeout = timeout_value(attrs, p);
    quote! {
        timeout_ms: #timeout,
        depends: &[#(#depends),*],
        concurrency: #concurrency,
        annotations: [#(#annotations),*],
    }
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

/// One `Option<bool>` per hint of `annotations(..)`, in `ANNOTATIONS` order.
pub(crate) fn annotation_values(attrs: &ToolAttrs, p: &TokenStream) -> Vec<TokenStream> {
    attrs
        .annotations
        .unwrap_or_default()
        .map(|hint| hint.map_or_else(|| quote!(#p::None), |value| quote!(#p::Some(#value))))
        .to_vec()
}

pub(crate) struct ParamsType {
    /// The generated struct, if any.
    pub(crate) item: TokenStream,
    /// The type the arguments object deserialises into.
    pub(crate) ty: TokenStream,
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
        };
    }
    let path = quote!(#p).to_string().replace(' ', "");
    let serde_path = format!("{path}::serde");
    let schemars_path = format!("{path}::schemars");
    let deny = model
        .attrs
        .deny_unknown_fields
        .map(|span| quote_spanned!(span=> #[serde(deny_unknown_fields)]));
    let fields = args.iter().map(|param| {
        let (attrs, ident, ty) = (&param.attrs, &param.ident, &param.ty);
        quote!(#(#attrs)* #ident: #ty)
    });
    let ty = format_ident!("__ToolfuncParams");
    ParamsType {
        item: quote! {
            #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            #deny
            struct #ty { #(#fields,)* }
        },
        ty: quote!(#ty),
    }
}

/// Trait checks spanned at the user's types, so a missing impl lands under that type.
pub(crate) fn checks(model: &ToolFn, p: &TokenStream) -> TokenStream {
    let params = model.args().map(|param| {
        let ty = &param.ty;
        quote_spanned!(ty.span()=> #p::assert_param::<#ty>();)
    });
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
    quote! {
        #[allow(unused)]
        fn __toolfunc_checks() {
            #(#params)*
            #(#contexts)*
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
    // Async and streaming handlers own their context; sync ones borrow it.
    let owns_ctx = is_async || is_stream;
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
    let convert = match &model.output {
        Output::Unit => quote! {
            let () = #out;
            #p::Ok(#p::Value::Null)
        },
        Output::Value(ty) => {
            let to_output = respan(quote!(#p::tool_output), ty.span());
            quote_spanned!(ty.span()=> #to_output::<#ty>(#out))
        }
        Output::Result { ok: ok_ty, .. } => {
            let to_output = ok_ty.as_ref().map_or_else(
                || quote!(#p::tool_output::<()>),
                |ty| {
                    let path = respan(quote!(#p::tool_output), ty.span());
                    quote_spanned!(ty.span()=> #path::<#ty>)
                },
            );
            let ok = Ident::new("__toolfunc_ok", Span::mixed_site());
            let err = Ident::new("__toolfunc_err", Span::mixed_site());
            let error = tool_error(p, &err);
            quote! {
                match #out {
                    #p::Ok(#ok) => #to_output(#ok),
                    #p::Err(#err) => #p::Err(#error),
                }
            }
        }
        Output::Stream(stream) => stream_conversion(stream, p, &out),
    };
    let body = quote! {
        let #params: #params_type = match #p::parse_args(#raw) {
            #p::Ok(v) => v,
            #p::Err(e) => return #p::Err(e),
        };
        let #out = #callee(#self_arg #(#call_args),*) #await_;
        #convert
    };
    if is_stream {
        quote! {
            fn __toolfunc_handler(
                #svc_param
                #ctx: #p::Ctx,
                #raw: #p::Value,
            ) -> #p::BoxFuture<'static, #p::Result<#p::ItemStream, #p::ToolError>> {
                #p::box_future(async move { #body })
            }
        }
    } else if is_async {
        quote! {
            fn __toolfunc_handler(
                #svc_param
                #ctx: #p::Ctx,
                #raw: #p::Value,
            ) -> #p::BoxFuture<'static, #p::Result<#p::Value, #p::ToolError>> {
                #p::box_future(async move { #body })
            }
        }
    } else {
        quote! {
            fn __toolfunc_handler(
                #svc_param
                #ctx: &#p::Ctx,
                #raw: #p::Value,
            ) -> #p::Result<#p::Value, #p::ToolError> {
                #body
            }
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
    let to_output = respan(quote!(#p::tool_output), item_ty.span());
    let convert_item = if stream.item_result {
        quote! {
            match #item {
                #p::Ok(#item) => #to_output::<#item_ty>(#item),
                #p::Err(#err) => #p::Err(#error),
            }
        }
    } else {
        quote!(#to_output::<#item_ty>(#item))
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
