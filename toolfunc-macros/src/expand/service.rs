//! A valid `#[tool_service]` impl block: the impl, its `ToolService` impl and
//! registration, and `{Type}Client`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{ItemImpl, LitStr, Type};

use super::{
    ParamsType, Receiver, annotation_values, checks, concurrency_value, description_of, handler,
    handler_kind, krate, params_fns, params_type, prelude, result_fn, some_str, stream_item_type,
    timeout_value, tool_error, user_item_allows,
};
use crate::attr::Position;
use crate::model::{Hook, HookKind, KindMethod, Method, Output, Service, ToolFn};

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

/// The service's name: `name = ..`, else the type's name in snake case.
fn service_name(service: &Service) -> (String, LitStr) {
    let type_name = service
        .type_ident()
        .map_or_else(String::new, |i| i.unraw().to_string());
    let name = service
        .attrs
        .name
        .clone()
        .unwrap_or_else(|| LitStr::new(&snake_case(&type_name), service.item.self_ty.span()));
    (type_name, name)
}

/// A valid service: the impl block, its `ToolService` impl, its registration and the
/// client.
pub(crate) fn service(service: &Service) -> TokenStream {
    let attrs = &service.attrs;
    let item = &service.item;
    let methods = &service.methods;
    let krate = krate(attrs);
    let p = quote!(#krate::__private);
    let self_ty = &item.self_ty;
    let (type_name, name) = service_name(service);
    let description = description_of(attrs, &item.attrs, &p);
    let title = some_str(attrs.title.as_ref(), &p);
    let summary = some_str(attrs.summary.as_ref(), &p);
    let alias = attrs.alias.iter().flatten();
    let tags = attrs.tags.iter().flatten();
    let scopes = attrs.scopes.iter().flatten();
    let api = attrs.api.as_ref().is_none_or(|lit| lit.value);
    let concurrency = concurrency_value(attrs, &p);
    let timeout = timeout_value(attrs, &p);
    let annotations = annotation_values(attrs, &p);
    let specs: Vec<TokenStream> = methods
        .iter()
        .map(|m| method_spec(m, self_ty, &p))
        .collect();
    let count = specs.len();
    let kind_specs: Vec<TokenStream> = service
        .kinds
        .iter()
        .map(|k| kind_spec(k, self_ty, &p))
        .collect();
    let kind_count = kind_specs.len();
    let setup = hook_value(service, HookKind::Setup, self_ty, &p);
    let dispose = hook_value(service, HookKind::Dispose, self_ty, &p);
    let location =
        quote_spanned!(self_ty.span()=> ::core::concat!(::core::file!(), ":", ::core::line!()));
    let client = client(service, &type_name, &name, &krate, &p, false);
    let allows = user_item_allows();
    let prelude = prelude(&p);

    quote! {
        #allows
        #item

        const _: () = {
            #prelude

            #[automatically_derived]
            impl #p::ToolService for #self_ty {
                fn __spec() -> &'static #p::ServiceSpec<Self> {
                    static __TOOLFUNC_METHODS: [#p::MethodSpec<#self_ty>; #count] = [#(#specs),*];
                    static __TOOLFUNC_KINDS: [#p::KindSpec<#self_ty>; #kind_count] =
                        [#(#kind_specs),*];
                    static __TOOLFUNC_SPEC: #p::ServiceSpec<#self_ty> = #p::ServiceSpec {
                        name: #name,
                        title: #title,
                        description: #description,
                        summary: #summary,
                        alias: &[#(#alias),*],
                        tags: &[#(#tags),*],
                        timeout_ms: #timeout,
                        concurrency: #concurrency,
                        annotations: #annotations,
                        scopes: &[#(#scopes),*],
                        api: #api,
                        methods: &__TOOLFUNC_METHODS,
                        kinds: &__TOOLFUNC_KINDS,
                        setup: #setup,
                        dispose: #dispose,
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

/// The `MethodSpec` of one method: its parameters type, handler and schemas, in a
/// block of their own.
fn method_spec(method: &Method, self_ty: &Type, p: &TokenStream) -> TokenStream {
    let (items, spec, _) = method_parts(&method.model, &method.act, self_ty, p);
    quote! {{
        #items
        #spec
    }}
}

/// The items a method's `MethodSpec` needs (its parameters type, checks and
/// handler), the `MethodSpec` itself, and the parameters type's name.
fn method_parts(
    model: &ToolFn,
    act: &str,
    self_ty: &Type,
    p: &TokenStream,
) -> (TokenStream, TokenStream, TokenStream) {
    let ParamsType {
        item: params_item,
        ty: params_type,
        plain,
    } = params_type(model, p);
    let checks = checks(model, p);
    let receiver = Receiver {
        self_ty,
        by_arc: model.by_arc(),
    };
    let handler = handler(model, p, &params_type, plain, Some(&receiver));
    let (_, params_schema) = params_fns(&params_type, plain, p);
    let kind = handler_kind(model);
    let result_fn = result_fn(model, p);
    let attrs = &model.attrs;
    let description = description_of(attrs, &model.item.attrs, p);
    let title = some_str(attrs.title.as_ref(), p);
    let timeout = timeout_value(attrs, p);
    let annotations = annotation_values(attrs, p);
    let scopes = attrs.scopes.iter().flatten();
    let items = quote! {
        #params_item
        #checks
        #handler
    };
    let spec = quote! {
        #p::MethodSpec {
            act: #act,
            title: #title,
            description: #description,
            params: #params_schema,
            result: #result_fn,
            handler: #p::MethodHandler::#kind(__toolfunc_handler),
            timeout_ms: #timeout,
            annotations: #annotations,
            scopes: &[#(#scopes),*],
        }
    };
    (items, spec, params_type)
}

/// The `KindSpec` of a `#[prompt]` or `#[resource]` method: its `MethodSpec` (as
/// an act's, named by the prompt's or resource's name), its URI and completers.
fn kind_spec(kind: &KindMethod, self_ty: &Type, p: &TokenStream) -> TokenStream {
    let model = &kind.model;
    let attrs = &model.attrs;
    let name = attrs
        .name
        .as_ref()
        .map_or_else(|| model.item.sig.ident.unraw().to_string(), LitStr::value);
    let (items, spec, params_type) = method_parts(model, &name, self_ty, p);
    let (completer_items, completers) = super::kinds::completers(model, p);
    let uri = match &attrs.uri {
        Some(uri) if kind.position == Position::Resource => quote!(#p::Some(#uri)),
        _ => quote!(#p::None),
    };
    let mime_type = some_str(attrs.mime_type.as_ref(), p);
    let tags = attrs.tags.iter().flatten();
    let api = attrs.api.as_ref().is_none_or(|lit| lit.value);
    quote! {{
        #[allow(unused_imports)]
        use #p::{FallbackSerialized as _, ViaSerialized as _};
        #items
        #completer_items
        #p::KindSpec {
            name: #name,
            uri: #uri,
            mime_type: #mime_type,
            tags: &[#(#tags),*],
            api: #api,
            param_order: |schema| (&&#p::Checked::<#params_type>::new()).param_order(schema),
            method: #spec,
            completers: &[#(#completers),*],
        }
    }}
}

/// `Some(HookHandler::..)` for the service's `kind` hook method, `None` without one.
fn hook_value(service: &Service, kind: HookKind, self_ty: &Type, p: &TokenStream) -> TokenStream {
    service
        .hooks
        .iter()
        .find(|hook| hook.kind == kind)
        .map_or_else(|| quote!(#p::None), |hook| hook_handler(hook, self_ty, p))
}

/// `Some(HookHandler::Sync(f))` or `Some(HookHandler::Async(f))`, `f` calling the
/// method on the service's state and turning its error into a `ToolError`.
fn hook_handler(hook: &Hook, self_ty: &Type, p: &TokenStream) -> TokenStream {
    let model = &hook.model;
    let method = &model.item.sig.ident;
    let svc = syn::Ident::new("__toolfunc_svc", Span::mixed_site());
    let out = syn::Ident::new("__toolfunc_out", Span::mixed_site());
    let err = syn::Ident::new("__toolfunc_err", Span::mixed_site());
    let error = tool_error(p, &err);
    let convert = if matches!(model.output, Output::Result { .. }) {
        quote! {
            match #out {
                #p::Ok(()) => #p::Ok(()),
                #p::Err(#err) => #p::Err(#error),
            }
        }
    } else {
        quote! {
            let () = #out;
            #p::Ok(())
        }
    };
    let check_error = match &model.output {
        Output::Result { err: Some(err), .. } => {
            quote_spanned!(err.span()=> #p::assert_error::<#err>();)
        }
        _ => quote!(),
    };
    let by_arc = hook.model.by_arc();
    if model.is_async() {
        let arg = if by_arc { quote!(#svc) } else { quote!(&*#svc) };
        quote! {{
            #[allow(dead_code)]
            fn __toolfunc_checks() { #check_error }
            fn __toolfunc_hook(
                #svc: #p::Arc<#self_ty>,
            ) -> #p::BoxFuture<'static, #p::Result<(), #p::ToolError>> {
                #p::box_future(async move {
                    let #out = <#self_ty>::#method(#arg).await;
                    #convert
                })
            }
            #p::Some(#p::HookHandler::Async(__toolfunc_hook))
        }}
    } else {
        let arg = if by_arc {
            quote!(#p::Arc::clone(#svc))
        } else {
            quote!(&**#svc)
        };
        quote! {{
            #[allow(dead_code)]
            fn __toolfunc_checks() { #check_error }
            fn __toolfunc_hook(#svc: &#p::Arc<#self_ty>) -> #p::Result<(), #p::ToolError> {
                let #out = <#self_ty>::#method(#arg);
                #convert
            }
            #p::Some(#p::HookHandler::Sync(__toolfunc_hook))
        }}
    }
}

/// The client of a service with errors: the same type and methods, whose bodies never
/// run (the build fails), so that code using the client reports nothing more.
pub(crate) fn client_stub(service: &Service) -> TokenStream {
    if service.type_ident().is_none() {
        return TokenStream::new();
    }
    let krate = krate(&service.attrs);
    let p = quote!(#krate::__private);
    let (type_name, name) = service_name(service);
    client(service, &type_name, &name, &krate, &p, true)
}

/// The `ToolService` impl of a service with mistakes, so that registering it
/// reports nothing more than the mistakes; nothing where the impl block's type could
/// not carry it (a generic or trait impl, which is reported already).
pub(crate) fn service_stub(service: &Service) -> TokenStream {
    let item = &service.item;
    if service.type_ident().is_none()
        || item.trait_.is_some()
        || !item.generics.params.is_empty()
        || item.generics.where_clause.is_some()
    {
        return TokenStream::new();
    }
    let krate = krate(&service.attrs);
    let p = quote!(#krate::__private);
    let self_ty = &item.self_ty;
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::ToolService for #self_ty {
                fn __spec() -> &'static #p::ServiceSpec<Self> {
                    ::core::unreachable!("#[tool_service] reported an error at compile time")
                }
            }
        };
    }
}

/// `{Type}Client`: the service's methods, called through any `Transport`, as visible
/// as the service type. Nothing without `client = false`.
fn client(
    service: &Service,
    type_name: &str,
    name: &LitStr,
    krate: &TokenStream,
    p: &TokenStream,
    stub: bool,
) -> TokenStream {
    if service.attrs.client.as_ref().is_some_and(|lit| !lit.value) {
        return TokenStream::new();
    }
    let item = &service.item;
    let vis = type_visibility(item);
    let client = format_ident!("{}Client", type_name, span = item.self_ty.span());
    let doc = format!(
        "Calls the `{}` service (`{type_name}`) through any [`Transport`]({}::Transport): \
         in process, over HTTP, or any other. Generated by `#[tool_service]`.",
        name.value(),
        krate.to_string().replace(' ', "")
    );
    let fns = service
        .methods
        .iter()
        .map(|m| client_method(m, name, p, stub));
    quote! {
        #[doc = #doc]
        #[derive(Clone)]
        #vis struct #client {
            transport: #p::Arc<dyn #krate::Transport>,
        }

        #[allow(dead_code)]
        impl #client {
            /// A client calling the service through `transport`.
            #vis fn new(transport: impl #krate::Transport + 'static) -> Self {
                Self { transport: #p::Arc::new(transport) }
            }

            /// A client over a shared transport.
            #vis fn from_shared(transport: #p::Arc<dyn #krate::Transport>) -> Self {
                Self { transport }
            }

            #(#fns)*
        }

        #[automatically_derived]
        impl ::core::fmt::Debug for #client {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!(#client)).finish_non_exhaustive()
            }
        }
    }
}

/// The visibility the client takes: the most visible of the impl's methods, since
/// an impl block says nothing of its type's visibility, and a client is exactly as
/// reachable as the methods it mirrors.
fn type_visibility(item: &ItemImpl) -> TokenStream {
    let mut best: Option<&syn::Visibility> = None;
    for impl_item in &item.items {
        if let syn::ImplItem::Fn(f) = impl_item {
            let rank = |v: &syn::Visibility| match v {
                syn::Visibility::Public(_) => 2,
                syn::Visibility::Restricted(_) => 1,
                syn::Visibility::Inherited => 0,
            };
            if best.is_none_or(|b| rank(&f.vis) > rank(b)) {
                best = Some(&f.vis);
            }
        }
    }
    best.map_or_else(TokenStream::new, |v| quote!(#v))
}

fn client_method(method: &Method, name: &LitStr, p: &TokenStream, stub: bool) -> TokenStream {
    let model = &method.model;
    let ident = &model.item.sig.ident;
    let vis = &model.item.vis;
    let docs = model.item.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let args: Vec<_> = model.args().collect();
    let arg_idents = args.iter().map(|a| &a.ident);
    let arg_idents2 = args.iter().map(|a| &a.ident);
    let stub_body = quote! {
        let _ = (&self.transport, #(#arg_idents),*);
        ::core::unreachable!("the #[tool_service] has compile errors")
    };
    let params = args.iter().map(|a| {
        let (ident, ty) = (&a.ident, &a.ty);
        quote!(#ident: #ty)
    });
    let (arg_checks, build_args) = client_args(method, &args, p);
    match &model.output {
        Output::Stream(stream) => {
            let item = stream_item_type(stream, p);
            let body = if stub {
                stub_body
            } else {
                quote! {
                    #arg_checks
                    match #build_args {
                        #p::Ok(args) => #p::client_stream::<#item>(self.transport.run_stream(#name, args)),
                        #p::Err(err) => #p::client_failed_stream(err),
                    }
                }
            };
            quote! {
                #(#docs)*
                #vis fn #ident(&self, #(#params),*) -> #p::BoxStream<'static, #p::Result<#item, #p::ToolError>> {
                    #body
                }
            }
        }
        output => {
            let ty = match output {
                Output::Value(ty) | Output::Result { ok: Some(ty), .. } => quote!(#ty),
                // A stream-or-value method: its one value, or its items collected.
                Output::Answer { .. } => quote!(#p::Value),
                _ => quote!(()),
            };
            let span = Span::mixed_site();
            let out = syn::Ident::new("__toolfunc_out", span);
            let (body, allow) = if stub {
                let body = quote! {
                    let _ = (&self.transport, #(#arg_idents2),*);
                    #p::client_result::<#ty>(
                        ::core::unreachable!("the #[tool_service] has compile errors"),
                        ::core::unreachable!(),
                    )
                };
                (body, quote!(#[allow(unreachable_code)]))
            } else {
                let body = quote! {
                    #arg_checks
                    let #out = #p::client_run(&*self.transport, #name, #build_args);
                    #p::client_result(#out, #p::client_output::<#ty>)
                };
                (body, TokenStream::new())
            };
            // A plain `fn` returning the one future of a function shared by every
            // method with this result type (the arguments are read at the call).
            quote! {
                #(#docs)*
                #allow
                #vis fn #ident(
                    &self,
                    #(#params),*
                ) -> impl ::core::future::Future<Output = #p::Result<#ty, #p::ToolError>> + use<> {
                    #body
                }
            }
        }
    }
}

/// The client method's argument checks, and the expression that builds its
/// arguments object (`Result<Value, ToolError>`).
fn client_args(
    method: &Method,
    args: &[&crate::model::Param],
    p: &TokenStream,
) -> (TokenStream, TokenStream) {
    let model = &method.model;
    let act = &method.act;
    let serde_path = format!("{}::serde", quote!(#p).to_string().replace(' ', ""));
    // Each parameter type is checked where it is written, and serialised through
    // autoref dispatch: a type that is not `Serialize` gets our one message, not a
    // second error from inside the derive.
    let arg_checks = args.iter().map(|a| {
        let ty = &a.ty;
        quote_spanned!(ty.span()=> #p::assert_client_arg::<#ty>();)
    });
    let arg_checks = quote!(#(#arg_checks)*);
    let build_args = if model.attrs.args.is_some() {
        let ident = &args[0].ident;
        let ty = &args[0].ty;
        quote!(#p::client_args::<#ty>(&#ident, #act))
    } else if args.iter().all(|a| plain_serde(&a.attrs)) {
        // Each value serialised on its own, by a function of its type alone: shared
        // by every method whose parameters have that type.
        let fields = args.iter().map(|a| {
            let (ident, ty) = (&a.ident, &a.ty);
            let wire = crate::model::wire_name(a);
            quote!((#wire, (&&#p::Checked::<#ty>::new()).client_value(&#ident)))
        });
        quote! {{
            #[allow(unused_imports)]
            use #p::{FallbackClientArg as _, ViaClientArg as _};
            #p::client_object(#act, [#(#fields),*])
        }}
    } else {
        let mut writers = Vec::new();
        let fields = args.iter().enumerate().map(|(i, a)| {
            let (ident, ty) = (&a.ident, &a.ty);
            let serde_attrs: Vec<_> = a
                .attrs
                .iter()
                .filter(|attr| attr.path().is_ident("serde"))
                .collect();
            // A parameter serialised `with` a function of the user's keeps it.
            let own_writer = serde_attrs.iter().any(|attr| serialized_with(attr));
            if own_writer {
                return quote!(#(#serde_attrs)* #ident: #ty);
            }
            let writer = format_ident!("__toolfunc_write_{}", i);
            let writer_name = writer.to_string();
            writers.push(quote! {
                fn #writer<S: #p::serde::Serializer>(
                    value: &#ty,
                    serializer: S,
                ) -> #p::Result<S::Ok, S::Error> {
                    #[allow(unused_imports)]
                    use #p::{FallbackClientArg as _, ViaClientArg as _};
                    (&&#p::Checked::<#ty>::new()).serialize_arg(value, serializer)
                }
            });
            quote!(#(#serde_attrs)* #[serde(serialize_with = #writer_name)] #ident: #ty)
        });
        let fields: Vec<_> = fields.collect();
        let idents = args.iter().map(|a| &a.ident);
        quote! {{
            #(#writers)*
            #[derive(#p::serde::Serialize)]
            #[serde(crate = #serde_path)]
            struct __ToolfuncClientArgs { #(#fields,)* }
            #p::client_args(&__ToolfuncClientArgs { #(#idents,)* }, #act)
        }}
    };
    (arg_checks, build_args)
}

/// Whether a `#[serde(..)]` attribute names its own serialiser (`with`,
/// `serialize_with`).
/// Whether a parameter's serde attributes change nothing of how its value is
/// written but its name (`rename`, and `default` and `alias`, which only reading
/// uses): its value is then serialised on its own.
fn plain_serde(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("serde"))
        .all(|attr| {
            let mut plain = true;
            let parsed = attr.parse_nested_meta(|meta| {
                let known = ["rename", "default", "alias"]
                    .iter()
                    .any(|key| meta.path.is_ident(key));
                plain &= known;
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::Expr>()?;
                } else if meta.input.peek(syn::token::Paren) {
                    plain = false;
                    let _content;
                    syn::parenthesized!(_content in meta.input);
                }
                Ok(())
            });
            plain && parsed.is_ok()
        })
}

fn serialized_with(attr: &syn::Attribute) -> bool {
    let syn::Meta::List(list) = &attr.meta else {
        return false;
    };
    list.tokens.clone().into_iter().any(
        |t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "with" || i == "serialize_with"),
    )
}
