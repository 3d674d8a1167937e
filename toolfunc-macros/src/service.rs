//! `#[tool_service]`: an inherent impl block whose methods become the acts of one
//! tool, plus a typed client with the same methods.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, ImplItem, ImplItemFn, ItemFn, ItemImpl, LitStr, Receiver as SynReceiver, Type,
};

use crate::attr::ToolAttrs;
use crate::expand::{
    ParamsType, Receiver, annotation_values, checks, concurrency_value, description_of, handler,
    params_type, result_fn, some_str, stream_item_type, timeout_value,
};
use crate::model::{Output, ToolFn, is_kept_on_param};
use crate::validate::{Errors, validate};

/// The REST verbs a method may be named after.
const VERBS: [&str; 6] = ["get", "post", "put", "delete", "patch", "list"];

/// One exposed method.
struct Method {
    model: ToolFn,
    by_arc: bool,
    /// `"$hello"` or a REST verb.
    act: String,
}

/// Entry point of `#[tool_service]`.
pub(crate) fn tool_service(args: TokenStream, input: &TokenStream) -> TokenStream {
    let mut item: ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(err) => {
            let err = syn::Error::new(
                err.span(),
                "#[tool_service] applies to an inherent impl block: `impl MyService { .. }`",
            );
            return crate::fallback::emit(input, &err);
        }
    };
    let mut errors = Errors::default();
    let attrs = ToolAttrs::parse(args).unwrap_or_else(|err| {
        errors.push(err);
        ToolAttrs::default()
    });
    check_service_attrs(&attrs, &mut errors);
    check_impl(&item, &mut errors);
    let methods = collect_methods(&mut item, &mut errors);
    if let Some(name) = &attrs.name
        && name.value().is_empty()
    {
        errors.push(syn::Error::new_spanned(
            name,
            "#[tool_service] `name` cannot be empty",
        ));
    }
    match errors.finish() {
        Ok(()) => generate(&attrs, &item, &methods),
        Err(err) => crate::fallback::emit(&item, &err),
    }
}

fn check_service_attrs(attrs: &ToolAttrs, errors: &mut Errors) {
    let misplaced = [
        ("args", attrs.args),
        ("deny_unknown_fields", attrs.deny_unknown_fields),
        ("stream", attrs.stream),
        ("skip", attrs.skip),
    ];
    for (key, span) in misplaced {
        if let Some(span) = span {
            errors.push(syn::Error::new(
                span,
                format!("key `{key}` applies to one method: put it in #[tool(...)] on the method"),
            ));
        }
    }
    if let Some(depends) = attrs.depends.as_ref().and_then(|d| d.first()) {
        errors.push(syn::Error::new_spanned(
            &depends.0,
            "#[tool_service] does not take `depends`; services call other tools with `ctx.run`",
        ));
    }
}

fn check_impl(item: &ItemImpl, errors: &mut Errors) {
    if let Some((_, path, _)) = &item.trait_ {
        errors.push(syn::Error::new_spanned(
            path,
            "#[tool_service] applies to inherent impl blocks (`impl MyService { .. }`), \
             not to trait impls",
        ));
    }
    if !item.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &item.generics,
            "#[tool_service] impl blocks cannot be generic: a service needs one concrete \
             type and one JSON Schema per method",
        ));
    } else if let Some(clause) = &item.generics.where_clause {
        errors.push(syn::Error::new_spanned(
            clause,
            "#[tool_service] impl blocks cannot have a where clause",
        ));
    }
    if let Some(unsafety) = &item.unsafety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            "#[tool_service] cannot be used on an `unsafe impl`",
        ));
    }
    if type_ident(&item.self_ty).is_none() {
        errors.push(syn::Error::new_spanned(
            &item.self_ty,
            "#[tool_service] needs a named type (`impl MyService { .. }`)",
        ));
    }
}

/// The last identifier of a path type.
fn type_ident(ty: &Type) -> Option<&syn::Ident> {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().map(|segment| &segment.ident)
        }
        _ => None,
    }
}

/// Takes the `#[tool(...)]` attributes off every method and models the exposed ones.
fn collect_methods(item: &mut ItemImpl, errors: &mut Errors) -> Vec<Method> {
    let mut methods = Vec::new();
    for impl_item in &mut item.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        let attrs = take_tool_attrs(&mut method.attrs, errors);
        if attrs.skip.is_some() {
            continue;
        }
        for (key, present) in [
            ("alias", attrs.alias.is_some()),
            ("tags", attrs.tags.is_some()),
            ("concurrency", attrs.concurrency.is_some()),
            ("api", attrs.api.is_some()),
            ("client", attrs.client.is_some()),
            ("depends", attrs.depends.is_some()),
            ("crate", attrs.krate.is_some()),
        ] {
            if present {
                errors.push(syn::Error::new(
                    method.sig.ident.span(),
                    format!(
                        "key `{key}` describes the whole service: put it in #[tool_service(...)]"
                    ),
                ));
            }
        }
        let Some(by_arc) = receiver_kind(method, errors) else {
            continue;
        };
        let act = match &attrs.name {
            Some(name) => act_of(&name.value()),
            None => act_of(&method.sig.ident.unraw().to_string()),
        };
        let model = ToolFn::new(attrs, as_fn(method), errors);
        validate(&model, errors);
        // Parameter docs and serde attributes went to the parameters type; rustc
        // would reject them on the method.
        for input in &mut method.sig.inputs {
            if let FnArg::Typed(pat_type) = input {
                pat_type.attrs.retain(is_kept_on_param);
            }
        }
        if matches!(model.output, Output::Stream(_)) && !by_arc {
            errors.push(syn::Error::new_spanned(
                &method.sig.inputs[0],
                "a streaming service method takes `self: Arc<Self>`, so that its stream \
                 can keep the service alive",
            ));
        }
        if methods.iter().any(|m: &Method| m.act == act) {
            errors.push(syn::Error::new_spanned(
                &method.sig.ident,
                format!("two methods of this service have the act `{act}`"),
            ));
        }
        methods.push(Method { model, by_arc, act });
    }
    if methods.is_empty() && !errors.is_some() {
        errors.push(syn::Error::new_spanned(
            &item.self_ty,
            "#[tool_service] found no method to expose; add a method taking `&self`",
        ));
    }
    methods
}

/// A REST verb is its own act; any other name is an RPC act with `$`.
fn act_of(name: &str) -> String {
    let bare = name.strip_prefix('$').unwrap_or(name);
    if VERBS.contains(&bare) {
        bare.to_owned()
    } else {
        format!("${bare}")
    }
}

/// Removes and merges the `#[tool(...)]` attributes of a method.
fn take_tool_attrs(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> ToolAttrs {
    let (ours, rest): (Vec<_>, Vec<_>) = std::mem::take(attrs)
        .into_iter()
        .partition(|a| a.path().is_ident("tool"));
    *attrs = rest;
    let mut found = ToolAttrs::default();
    for (i, attr) in ours.iter().enumerate() {
        if i > 0 {
            errors.push(syn::Error::new_spanned(
                attr,
                "one #[tool(...)] per method: put every key in it",
            ));
            continue;
        }
        let tokens = match &attr.meta {
            syn::Meta::List(list) => list.tokens.clone(),
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::NameValue(nv) => {
                errors.push(syn::Error::new_spanned(
                    nv,
                    "write #[tool(key = value, ..)]",
                ));
                continue;
            }
        };
        match ToolAttrs::parse(tokens) {
            Ok(parsed) => found = parsed,
            Err(err) => errors.push(err),
        }
    }
    found
}

/// `Some(false)` for `&self`, `Some(true)` for `self: Arc<Self>`; any other receiver
/// (or none) is an error.
fn receiver_kind(method: &ImplItemFn, errors: &mut Errors) -> Option<bool> {
    let Some(FnArg::Receiver(receiver)) = method.sig.inputs.first() else {
        errors.push(syn::Error::new_spanned(
            &method.sig.ident,
            "a #[tool_service] method takes `&self` (or `self: Arc<Self>`); \
             mark other functions #[tool(skip)] or move them to another impl block",
        ));
        return None;
    };
    if receiver.colon_token.is_some() {
        if is_arc_self(&receiver.ty) {
            return Some(true);
        }
        errors.push(syn::Error::new_spanned(
            &receiver.ty,
            "a #[tool_service] method takes `&self` or `self: Arc<Self>`",
        ));
        return None;
    }
    match receiver_shape(receiver) {
        Ok(()) => Some(false),
        Err(message) => {
            errors.push(syn::Error::new_spanned(receiver, message));
            None
        }
    }
}

fn receiver_shape(receiver: &SynReceiver) -> Result<(), &'static str> {
    match &receiver.reference {
        None => Err(
            "a #[tool_service] method cannot take `self` by value: the service is shared \
             by every call; take `&self` (or `self: Arc<Self>`)",
        ),
        Some(_) if receiver.mutability.is_some() => Err(
            "a #[tool_service] method cannot take `&mut self`: calls run concurrently; \
             take `&self` and keep mutable state behind a Mutex",
        ),
        Some(_) => Ok(()),
    }
}

fn is_arc_self(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    if last.ident != "Arc" {
        return false;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    matches!(
        args.args.first(),
        Some(syn::GenericArgument::Type(Type::Path(inner))) if inner.path.is_ident("Self")
    )
}

/// The method as a free function without its receiver, for the `#[tool]` model.
fn as_fn(method: &ImplItemFn) -> ItemFn {
    let mut sig = method.sig.clone();
    sig.inputs = sig
        .inputs
        .into_iter()
        .filter(|input| !matches!(input, FnArg::Receiver(_)))
        .collect();
    ItemFn {
        attrs: method.attrs.clone(),
        vis: method.vis.clone(),
        sig,
        block: Box::new(method.block.clone()),
    }
}

fn snake_case(ident: &str) -> String {
    let mut out = String::new();
    for (i, ch) in ident.chars().enumerate() {
        if ch.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(ch.to_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

fn generate(attrs: &ToolAttrs, item: &ItemImpl, methods: &[Method]) -> TokenStream {
    let krate = attrs
        .krate
        .as_ref()
        .map_or_else(|| quote!(::toolfunc), |path| quote!(#path));
    let p = quote!(#krate::__private);
    let self_ty = &item.self_ty;
    let type_name = type_ident(self_ty).map_or_else(String::new, |i| i.unraw().to_string());
    let name = attrs.name.as_ref().map_or_else(
        || LitStr::new(&snake_case(&type_name), self_ty.span()),
        Clone::clone,
    );
    let description = description_of(attrs, &item.attrs, &p);
    let title = some_str(attrs.title.as_ref(), &p);
    let summary = some_str(attrs.summary.as_ref(), &p);
    let alias = attrs.alias.iter().flatten();
    let tags = attrs.tags.iter().flatten();
    let api = attrs.api.as_ref().is_none_or(|lit| lit.value);
    let concurrency = concurrency_value(attrs, &p);
    let timeout = timeout_value(attrs, &p);
    let annotations = annotation_values(attrs, &p);
    let specs: Vec<TokenStream> = methods
        .iter()
        .map(|m| method_spec(m, self_ty, &p))
        .collect();
    let count = specs.len();
    let location =
        quote_spanned!(self_ty.span()=> ::core::concat!(::core::file!(), ":", ::core::line!()));
    let client = if attrs.client.as_ref().is_none_or(|lit| lit.value) {
        client(&type_name, &name, item, methods, &krate, &p)
    } else {
        quote!()
    };
    let item = clean_impl(item);

    quote! {
        #item

        #[allow(non_camel_case_types, clippy::all, clippy::pedantic)]
        const _: () = {
            #[allow(unused_imports)]
            use ::core::convert::Into as _;

            impl #p::ToolService for #self_ty {
                fn __spec() -> &'static #p::ServiceSpec<Self> {
                    static __TOOLFUNC_METHODS: [#p::MethodSpec<#self_ty>; #count] = [#(#specs),*];
                    static __TOOLFUNC_SPEC: #p::ServiceSpec<#self_ty> = #p::ServiceSpec {
                        name: #name,
                        title: #title,
                        description: #description,
                        summary: #summary,
                        alias: &[#(#alias),*],
                        tags: &[#(#tags),*],
                        timeout_ms: #timeout,
                        concurrency: #concurrency,
                        annotations: [#(#annotations),*],
                        api: #api,
                        methods: &__TOOLFUNC_METHODS,
                        location: #location,
                    };
                    &__TOOLFUNC_SPEC
                }
            }

            #p::inventory::submit! {
                #p::ServiceEntry {
                    name: #name,
                    location: #location,
                    build: || {
                        #[allow(unused_imports)]
                        use #p::{NoDefault as _, ViaDefault as _};
                        (&&#p::DefaultProbe::<#self_ty>::new()).service_tool()
                    },
                }
            }
        };

        #client
    }
}

/// The impl block as the user wrote it, with `#[allow]`s for what tool methods
/// cannot avoid (owned parameters, a receiver even when stateless).
fn clean_impl(item: &ItemImpl) -> ItemImpl {
    let mut item = item.clone();
    item.attrs
        .push(syn::parse_quote!(#[allow(clippy::needless_pass_by_value, clippy::unused_self)]));
    item
}

/// The `MethodSpec` of one method: its parameters type, handler and schemas, in a
/// block of their own.
fn method_spec(method: &Method, self_ty: &Type, p: &TokenStream) -> TokenStream {
    let model = &method.model;
    let act = &method.act;
    let ParamsType {
        item: params_item,
        ty: params_type,
    } = params_type(model, p);
    let checks = checks(model, p);
    let receiver = Receiver {
        self_ty,
        by_arc: method.by_arc,
    };
    let handler = handler(model, p, &params_type, Some(&receiver));
    let kind = if matches!(model.output, Output::Stream(_)) {
        quote!(Stream)
    } else if model.is_async() {
        quote!(Async)
    } else {
        quote!(Sync)
    };
    let result_fn = result_fn(model, p);
    let attrs = &model.attrs;
    let description = description_of(attrs, &model.item.attrs, p);
    let title = some_str(attrs.title.as_ref(), p);
    let timeout = timeout_value(attrs, p);
    let annotations = annotation_values(attrs, p);
    quote! {{
        #params_item
        #checks
        #handler
        #p::MethodSpec {
            act: #act,
            title: #title,
            description: #description,
            params: || #p::schema_of::<#params_type>(),
            result: #result_fn,
            handler: #p::MethodHandler::#kind(__toolfunc_handler),
            timeout_ms: #timeout,
            annotations: [#(#annotations),*],
        }
    }}
}

/// `{Type}Client`: the service's methods, called through any `Transport`.
fn client(
    type_name: &str,
    name: &LitStr,
    item: &ItemImpl,
    methods: &[Method],
    krate: &TokenStream,
    p: &TokenStream,
) -> TokenStream {
    let client = format_ident!("{}Client", type_name, span = item.self_ty.span());
    let doc = format!(
        "Calls the `{}` service (`{type_name}`) through any [`Transport`]({}::Transport): \
         in process, over HTTP, or any other. Generated by `#[tool_service]`.",
        name.value(),
        krate.to_string().replace(' ', "")
    );
    let fns = methods.iter().map(|m| client_method(m, name, p));
    quote! {
        #[doc = #doc]
        #[derive(Clone)]
        #[allow(dead_code, unreachable_pub, private_interfaces, private_bounds)]
        pub struct #client {
            transport: #p::Arc<dyn #krate::Transport>,
        }

        #[allow(dead_code, unreachable_pub, private_interfaces, private_bounds, clippy::all, clippy::pedantic)]
        impl #client {
            /// A client calling the service through `transport`.
            pub fn new(transport: impl #krate::Transport + 'static) -> Self {
                Self { transport: #p::Arc::new(transport) }
            }

            /// A client over a shared transport.
            pub fn from_shared(transport: #p::Arc<dyn #krate::Transport>) -> Self {
                Self { transport }
            }

            #(#fns)*
        }

        impl ::core::fmt::Debug for #client {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!(#client)).finish_non_exhaustive()
            }
        }
    }
}

fn client_method(method: &Method, name: &LitStr, p: &TokenStream) -> TokenStream {
    let model = &method.model;
    let act = &method.act;
    let ident = &model.item.sig.ident;
    let docs = model.item.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let args: Vec<_> = model.args().collect();
    let params = args.iter().map(|a| {
        let (ident, ty) = (&a.ident, &a.ty);
        quote!(#ident: #ty)
    });
    let serde_path = format!("{}::serde", quote!(#p).to_string().replace(' ', ""));
    let build_args = if model.attrs.args.is_some() {
        let ident = &args[0].ident;
        quote!(#p::client_args(&#ident, #act))
    } else {
        let fields = args.iter().map(|a| {
            let (ident, ty) = (&a.ident, &a.ty);
            let serde_attrs = a.attrs.iter().filter(|attr| attr.path().is_ident("serde"));
            quote!(#(#serde_attrs)* #ident: #ty)
        });
        let idents = args.iter().map(|a| &a.ident);
        quote! {{
            #[derive(#p::serde::Serialize)]
            #[serde(crate = #serde_path)]
            struct __ToolfuncClientArgs { #(#fields,)* }
            #p::client_args(&__ToolfuncClientArgs { #(#idents,)* }, #act)
        }}
    };
    match &model.output {
        Output::Stream(stream) => {
            let item = stream_item_type(stream, p);
            quote! {
                #(#docs)*
                pub fn #ident(&self, #(#params),*) -> #p::BoxStream<'static, #p::Result<#item, #p::ToolError>> {
                    match #build_args {
                        #p::Ok(args) => #p::client_stream::<#item>(self.transport.call_stream(#name, args)),
                        #p::Err(err) => #p::client_failed_stream(err),
                    }
                }
            }
        }
        output => {
            let ty = match output {
                Output::Value(ty) | Output::Result { ok: Some(ty), .. } => quote!(#ty),
                _ => quote!(()),
            };
            let span = Span::mixed_site();
            let out = syn::Ident::new("__toolfunc_out", span);
            quote! {
                #(#docs)*
                pub async fn #ident(&self, #(#params),*) -> #p::Result<#ty, #p::ToolError> {
                    let args = #build_args?;
                    let #out = self.transport.call(#name, args).await?;
                    #p::client_output::<#ty>(#out)
                }
            }
        }
    }
}
