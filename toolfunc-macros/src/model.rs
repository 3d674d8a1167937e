//! The models the macros work on: a `#[tool]` function (its parameters, injected
//! context or argument, and its output) and a `#[tool_service]` impl block (its
//! methods, each a tool function with a receiver and an act), with the cleaned items
//! to re-emit.

use syn::ext::IdentExt;
use syn::{
    Attribute, FnArg, GenericArgument, Ident, ImplItem, ItemFn, ItemImpl, Pat, PathArguments,
    ReturnType, Type,
};

use crate::attr::{Position, ToolAttrs};
use crate::errors::Errors;

pub(crate) struct ToolFn {
    pub(crate) attrs: ToolAttrs,
    /// The function as the user wrote it, minus the attributes we consume. A receiver
    /// stays, so that a method keeps compiling while its error is reported.
    pub(crate) item: ItemFn,
    /// `self`, `&self`, `self: Arc<Self>`...: required on service methods, an error on
    /// functions.
    pub(crate) receiver: Option<syn::Receiver>,
    pub(crate) params: Vec<Param>,
    pub(crate) output: Output,
}

pub(crate) struct Param {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    /// Doc comments and `#[serde]`/`#[schemars]` attributes, moved onto the field of
    /// the generated parameters struct.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) kind: ParamKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// `&Ctx` (`by_ref`) or `Ctx`: injected, not in the schema.
    Ctx { by_ref: bool },
    /// A named argument from the arguments object.
    Arg,
}

#[allow(clippy::large_enum_variant)] // one per macro call; boxing buys nothing
pub(crate) enum Output {
    /// No return value (or `()`): the tool returns `null` and has no result schema.
    Unit,
    /// `-> T`.
    Value(Type),
    /// `-> Result<T, E>` (any type named `Result`, so aliases work): `T` is the
    /// result (`None` for `()`); `Err` becomes a `ToolError`. `err` is `E` when
    /// written out (not for aliases such as `io::Result<T>`).
    Result { ok: Option<Type>, err: Option<Type> },
    /// `-> impl Stream<Item = T>` (or `Result<impl Stream<..>, E>`), or any stream type
    /// (or `Result` of one) with `#[tool(stream)]`: a streaming tool.
    Stream(StreamOutput),
    /// `-> Answer` (or `toolfunc::Answer`, or `Result<Answer, E>`): a tool that answers
    /// a stream or one value, as the caller asked: `ty` as written, `open_result` for
    /// the `Result`.
    Answer { ty: Type, open_result: bool },
}

pub(crate) struct StreamOutput {
    /// The item type, or `None` for a named stream type whose `Item` is not written out.
    pub(crate) item: Option<Type>,
    /// The named stream type (with `#[tool(stream)]`), whose `Item` is the item type.
    pub(crate) named: Option<Type>,
    /// Whether items are `Result<T, E>` (then `item` is `T`).
    pub(crate) item_result: bool,
    /// Whether the function returns `Result<stream, E>`.
    pub(crate) open_result: bool,
}

impl ToolFn {
    /// Builds the model; structural mistakes (a pattern parameter) are added to
    /// `errors` and their parameter is left out.
    pub(crate) fn new(attrs: ToolAttrs, mut item: ItemFn, errors: &mut Errors) -> Self {
        let mut params = Vec::new();
        let attr = attrs.position.attr();
        let whose = if attrs.position.is_kind() {
            "its"
        } else {
            "a tool's"
        };
        let receiver = match item.sig.inputs.first() {
            Some(FnArg::Receiver(receiver)) => Some(receiver.clone()),
            _ => None,
        };
        for input in &mut item.sig.inputs {
            match input {
                FnArg::Receiver(_) => {}
                FnArg::Typed(pat_type) => {
                    // Parameter attributes are ours: doc comments and serde/schemars
                    // attributes go to the generated struct; rustc would reject them here.
                    let (moved, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut pat_type.attrs)
                        .into_iter()
                        .partition(|a| !is_kept_on_param(a));
                    for kept_attr in &kept {
                        if kept_attr.path().is_ident("cfg") || kept_attr.path().is_ident("cfg_attr")
                        {
                            errors.push(syn::Error::new_spanned(
                                kept_attr,
                                format!(
                                    "{attr} parameters cannot be conditional: {whose} \
                                     arguments are the same in every build"
                                ),
                            ));
                        }
                    }
                    pat_type.attrs = kept;
                    let ident = match &*pat_type.pat {
                        Pat::Ident(pat) if pat.subpat.is_none() && pat.by_ref.is_none() => {
                            pat.ident.clone()
                        }
                        other => {
                            errors.push(syn::Error::new_spanned(
                                other,
                                format!(
                                    "{attr} parameters must be plain identifiers, because \
                                     each becomes a named argument; write `name: Type` and \
                                     destructure in the body"
                                ),
                            ));
                            continue;
                        }
                    };
                    let kind = ctx_kind(&pat_type.ty).unwrap_or(ParamKind::Arg);
                    params.push(Param {
                        ident,
                        ty: (*pat_type.ty).clone(),
                        attrs: moved,
                        kind,
                    });
                }
            }
        }
        let mut output = match &item.sig.output {
            ReturnType::Default => Output::Unit,
            ReturnType::Type(_, ty) => output_of(ty),
        };
        // `#[tool(stream)]`: the value (or the `Ok` of the result) is a stream type
        // of the user's own. `validate` refuses the flag where it has no effect.
        if attrs.stream.is_some() {
            let named = match &output {
                Output::Value(ty) => Some((ty.clone(), false)),
                Output::Result { ok: Some(ty), .. } => Some((ty.clone(), true)),
                _ => None,
            };
            if let Some((ty, open_result)) = named {
                output = Output::Stream(StreamOutput {
                    item: None,
                    named: Some(ty),
                    item_result: false,
                    open_result,
                });
            }
        }
        Self {
            attrs,
            item,
            receiver,
            params,
            output,
        }
    }

    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some()
    }

    pub(crate) fn args(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind == ParamKind::Arg)
    }

    /// Whether the receiver is `self: Arc<Self>`.
    pub(crate) fn by_arc(&self) -> bool {
        self.receiver
            .as_ref()
            .is_some_and(|r| r.colon_token.is_some() && is_arc_self(&r.ty))
    }
}

/// `cfg` and lint attributes stay on the parameter; everything else is ours.
pub(crate) fn is_kept_on_param(attr: &Attribute) -> bool {
    [
        "cfg", "cfg_attr", "allow", "warn", "deny", "expect", "forbid",
    ]
    .iter()
    .any(|name| attr.path().is_ident(name))
}

/// `Ctx`, `toolfunc::Ctx` or `::toolfunc::Ctx`, by value or by shared reference.
fn ctx_kind(ty: &Type) -> Option<ParamKind> {
    let (ty, by_ref) = match ty {
        Type::Reference(r) if r.mutability.is_none() => (&*r.elem, true),
        other => (other, false),
    };
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let is_ctx = match segments.as_slice() {
        [one] => one == "Ctx",
        [krate, ctx] => krate == "toolfunc" && ctx == "Ctx",
        _ => false,
    };
    (is_ctx && path.path.segments.iter().all(|s| s.arguments.is_none()))
        .then_some(ParamKind::Ctx { by_ref })
}

/// `T` from `Result<T, ..>` (any type named `Result`).
fn result_ok(ty: &Type) -> Option<&Type> {
    if let Type::Path(path) = ty
        && let Some(last) = path.path.segments.last()
        && last.ident == "Result"
        && let PathArguments::AngleBracketed(args) = &last.arguments
        && let Some(GenericArgument::Type(ok)) = args.args.first()
    {
        return Some(ok);
    }
    None
}

/// The item type of `impl Stream<Item = T>` (any trait path ending in `Stream`).
fn stream_item(ty: &Type) -> Option<&Type> {
    let Type::ImplTrait(impl_trait) = ty else {
        return None;
    };
    impl_trait.bounds.iter().find_map(|bound| {
        let syn::TypeParamBound::Trait(bound) = bound else {
            return None;
        };
        let last = bound.path.segments.last()?;
        if last.ident != "Stream" {
            return None;
        }
        let PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        args.args.iter().find_map(|arg| match arg {
            GenericArgument::AssocType(assoc) if assoc.ident == "Item" => Some(&assoc.ty),
            _ => None,
        })
    })
}

fn stream_output(ty: &Type) -> Option<StreamOutput> {
    let (stream, open_result) = match result_ok(ty) {
        Some(ok) => (ok, true),
        None => (ty, false),
    };
    let item = stream_item(stream)?;
    let (item, item_result) = match result_ok(item) {
        Some(ok) => (ok, true),
        None => (item, false),
    };
    Some(StreamOutput {
        item: Some(item.clone()),
        named: None,
        item_result,
        open_result,
    })
}

/// Whether `ty` is written `Answer`, `toolfunc::Answer` or `stream::Answer` (the
/// crate's stream-or-value answer). Another path to a type of that name
/// (`self::Answer`) is an ordinary value.
fn is_answer(ty: &Type) -> bool {
    let Type::Path(path) = ty else {
        return false;
    };
    if path.qself.is_some() {
        return false;
    }
    let segments: Vec<_> = path.path.segments.iter().collect();
    if segments.iter().any(|segment| !segment.arguments.is_none()) {
        return false;
    }
    let names: Vec<String> = segments.iter().map(|s| s.ident.to_string()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    matches!(
        names.as_slice(),
        ["Answer"] | ["toolfunc" | "stream", "Answer"] | ["toolfunc", "stream", "Answer"]
    )
}

fn output_of(ty: &Type) -> Output {
    if let Some(stream) = stream_output(ty) {
        return Output::Stream(stream);
    }
    if is_answer(ty) {
        return Output::Answer {
            ty: ty.clone(),
            open_result: false,
        };
    }
    if let Some(ok) = result_ok(ty)
        && is_answer(ok)
    {
        return Output::Answer {
            ty: ok.clone(),
            open_result: true,
        };
    }
    if let Type::Tuple(tuple) = ty
        && tuple.elems.is_empty()
    {
        return Output::Unit;
    }
    if let Type::Path(path) = ty
        && let Some(last) = path.path.segments.last()
        && last.ident == "Result"
        && let PathArguments::AngleBracketed(args) = &last.arguments
        && let Some(GenericArgument::Type(ok)) = args.args.first()
    {
        let unit = matches!(ok, Type::Tuple(t) if t.elems.is_empty());
        let err = match args.args.iter().nth(1) {
            Some(GenericArgument::Type(err)) => Some(err.clone()),
            _ => None,
        };
        return Output::Result {
            ok: (!unit).then(|| ok.clone()),
            err,
        };
    }
    Output::Value(ty.clone())
}

/// The REST verbs a method may be named after.
pub(crate) const VERBS: [&str; 6] = ["get", "post", "put", "delete", "patch", "list"];

/// The verbs whose HTTP route carries the resource id (`GET /users/1`).
pub(crate) const ID_VERBS: [&str; 4] = ["get", "put", "delete", "patch"];

/// A function item read up to its body: its attributes (inner ones included, as
/// syn keeps them), visibility and signature parsed, its body's statements kept as
/// tokens (`Item::Verbatim`), which print back exactly as they came. Parsing a
/// body statement by statement is most of what reading a function costs, and no
/// phase reads it.
pub(crate) fn parse_fn(input: proc_macro2::TokenStream) -> syn::Result<ItemFn> {
    struct Lazy(ItemFn);
    impl syn::parse::Parse for Lazy {
        fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
            let mut attrs = input.call(Attribute::parse_outer)?;
            let vis: syn::Visibility = input.parse()?;
            let sig: syn::Signature = input.parse()?;
            let content;
            let brace_token = syn::braced!(content in input);
            attrs.extend(content.call(Attribute::parse_inner)?);
            let body: proc_macro2::TokenStream = content.parse()?;
            let block = syn::Block {
                brace_token,
                stmts: vec![syn::Stmt::Item(syn::Item::Verbatim(body))],
            };
            Ok(Self(ItemFn {
                attrs,
                vis,
                sig,
                block: Box::new(block),
            }))
        }
    }
    syn::parse2::<Lazy>(input).map(|lazy| lazy.0)
}

/// A `#[tool_service]` impl block.
pub(crate) struct Service {
    pub(crate) attrs: ToolAttrs,
    /// The impl block without the `#[tool(...)]` attributes and parameter docs we consume.
    pub(crate) item: ItemImpl,
    /// The exposed methods (every method without `#[tool(skip)]`, `setup` or `dispose`).
    pub(crate) methods: Vec<Method>,
    /// The `#[tool(setup)]` and `#[tool(dispose)]` methods, in declaration order.
    pub(crate) hooks: Vec<Hook>,
    /// The `#[prompt]` and `#[resource]` methods, in declaration order.
    pub(crate) kinds: Vec<KindMethod>,
}

/// A `#[prompt]` or `#[resource]` method of a service: a prompt or a resource
/// bound to the service's value, never an act.
pub(crate) struct KindMethod {
    /// `Position::Prompt` or `Position::Resource`.
    pub(crate) position: Position,
    /// The method, modelled as a tool function.
    pub(crate) model: ToolFn,
    /// The `#[tool(...)]` also on it, which it cannot take.
    pub(crate) tool_attr: Option<Attribute>,
}

/// Which lifecycle hook a method is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookKind {
    Setup,
    Dispose,
}

impl HookKind {
    /// The key that marks it.
    pub(crate) fn key(self) -> &'static str {
        match self {
            HookKind::Setup => "setup",
            HookKind::Dispose => "dispose",
        }
    }
}

/// A `#[tool(setup)]` or `#[tool(dispose)]` method of a service: run by the registry
/// when the service tool is placed or removed, never called as an act.
pub(crate) struct Hook {
    pub(crate) kind: HookKind,
    /// The method, modelled as a tool function for its receiver, parameters and output.
    pub(crate) model: ToolFn,
}

/// One exposed method of a service.
pub(crate) struct Method {
    pub(crate) model: ToolFn,
    /// `"$hello"` or a REST verb.
    pub(crate) act: String,
}

impl Method {
    /// Whether the receiver is `self: Arc<Self>` (else `&self`).
    pub(crate) fn by_arc(&self) -> bool {
        self.model.by_arc()
    }
}

impl Service {
    /// Takes the `#[tool(...)]` attributes off every method and models the exposed ones.
    pub(crate) fn new(attrs: ToolAttrs, mut item: ItemImpl, errors: &mut Errors) -> Self {
        let mut methods = Vec::new();
        let mut hooks = Vec::new();
        let mut kinds = Vec::new();
        for impl_item in &mut item.items {
            let ImplItem::Fn(method) = impl_item else {
                continue;
            };
            if let Some((position, attrs)) = take_kind_attrs(&mut method.attrs, errors) {
                let tool_attr = method.attrs.iter().find(|a| is_tool_attr(a)).cloned();
                method.attrs.retain(|a| !is_tool_attr(a));
                let model = model_method(method, attrs, errors);
                kinds.push(KindMethod {
                    position,
                    model,
                    tool_attr,
                });
                continue;
            }
            let attrs = take_tool_attrs(&mut method.attrs, errors);
            // `setup` wins over `dispose` here; validation reports a method with both.
            let hook = match (attrs.setup, attrs.dispose) {
                (Some(_), _) => Some(HookKind::Setup),
                (None, Some(_)) => Some(HookKind::Dispose),
                (None, None) => None,
            };
            if let Some(kind) = hook {
                let model = model_method(method, attrs, errors);
                hooks.push(Hook { kind, model });
                continue;
            }
            if attrs.skip.is_some() {
                continue;
            }
            let act = match &attrs.name {
                Some(name) => act_of(&name.value()),
                None => act_of(&method.sig.ident.unraw().to_string()),
            };
            let model = model_method(method, attrs, errors);
            methods.push(Method { model, act });
        }
        Self {
            attrs,
            item,
            methods,
            hooks,
            kinds,
        }
    }

    /// The type's last identifier (`UserService`), when it is a path.
    pub(crate) fn type_ident(&self) -> Option<&Ident> {
        match &*self.item.self_ty {
            Type::Path(path) if path.qself.is_none() => {
                path.path.segments.last().map(|segment| &segment.ident)
            }
            _ => None,
        }
    }
}

/// A method modelled as a tool function with `attrs`; its parameter docs and serde
/// attributes, which went to the parameters type (rustc would reject them on the
/// method), are taken off it.
fn model_method(method: &mut syn::ImplItemFn, attrs: ToolAttrs, errors: &mut Errors) -> ToolFn {
    let as_fn = ItemFn {
        attrs: method.attrs.clone(),
        vis: method.vis.clone(),
        sig: method.sig.clone(),
        block: Box::new(method.block.clone()),
    };
    let model = ToolFn::new(attrs, as_fn, errors);
    method.sig.inputs.clone_from(&model.item.sig.inputs);
    model
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

/// `tool`, `toolfunc::tool` or `::toolfunc::tool`.
fn is_tool_attr(attr: &Attribute) -> bool {
    let path = attr.path();
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segments.as_slice() {
        [tool] => tool == "tool" && path.leading_colon.is_none(),
        [krate, tool] => krate == "toolfunc" && tool == "tool",
        _ => false,
    }
}

/// `prompt`, `resource`, or either under `toolfunc::`: the position it makes.
fn kind_attr(attr: &Attribute) -> Option<Position> {
    let path = attr.path();
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let last = match segments.as_slice() {
        [last] if path.leading_colon.is_none() => last,
        [krate, last] if krate == "toolfunc" => last,
        _ => return None,
    };
    match last.as_str() {
        "prompt" => Some(Position::Prompt),
        "resource" => Some(Position::Resource),
        _ => None,
    }
}

/// Removes and parses the `#[prompt(...)]` or `#[resource(...)]` attribute of a
/// method, when it has one: the position and its keys.
fn take_kind_attrs(
    attrs: &mut Vec<Attribute>,
    errors: &mut Errors,
) -> Option<(Position, ToolAttrs)> {
    let (ours, rest): (Vec<_>, Vec<_>) = std::mem::take(attrs)
        .into_iter()
        .partition(|a| kind_attr(a).is_some());
    *attrs = rest;
    let first = ours.first()?;
    let position = kind_attr(first)?;
    for extra in &ours[1..] {
        errors.push(syn::Error::new_spanned(
            extra,
            "a method is one prompt or one resource: keep one #[prompt] or #[resource]",
        ));
    }
    let parsed = match attr_tokens(first, position.attr(), errors) {
        Some(tokens) => ToolAttrs::parse(tokens, position).map_err(|err| errors.push(err)),
        None => Err(()),
    };
    let attrs = parsed.unwrap_or_else(|()| ToolAttrs {
        position,
        ..ToolAttrs::default()
    });
    Some((position, attrs))
}

/// The keys inside an attribute (none for a bare `#[attr]`); `None`, with the error
/// collected, for `#[attr = ..]`. `written` is the attribute as messages name it.
fn attr_tokens(
    attr: &Attribute,
    written: &str,
    errors: &mut Errors,
) -> Option<proc_macro2::TokenStream> {
    match &attr.meta {
        syn::Meta::List(list) => Some(list.tokens.clone()),
        syn::Meta::Path(_) => Some(proc_macro2::TokenStream::new()),
        syn::Meta::NameValue(nv) => {
            errors.push(syn::Error::new_spanned(
                nv,
                format!("write {}(key = value, ..)]", written.trim_end_matches(']')),
            ));
            None
        }
    }
}

/// Removes and parses the `#[tool(...)]` attribute of a method.
fn take_tool_attrs(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> ToolAttrs {
    let (ours, rest): (Vec<_>, Vec<_>) = std::mem::take(attrs).into_iter().partition(is_tool_attr);
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
        let Some(tokens) = attr_tokens(attr, "#[tool]", errors) else {
            continue;
        };
        match ToolAttrs::parse(tokens, Position::Method) {
            Ok(parsed) => found = parsed,
            Err(err) => errors.push(err),
        }
    }
    found
}

pub(crate) fn is_arc_self(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    if last.ident != "Arc" {
        return false;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    matches!(
        args.args.first(),
        Some(GenericArgument::Type(Type::Path(inner))) if inner.path.is_ident("Self")
    )
}

/// The name a parameter has in the arguments object: its identifier, or the
/// `#[serde(rename = "..")]` on it.
pub(crate) fn wire_name(param: &Param) -> String {
    let mut name = param.ident.unraw().to_string();
    for attr in param.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") && meta.input.peek(syn::Token![=]) {
                let lit: syn::LitStr = meta.value()?.parse()?;
                name = lit.value();
            } else if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
            Ok(())
        });
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::{ToTokens, quote};
    use syn::parse_quote;

    #[test]
    fn a_function_read_up_to_its_body_prints_back_as_it_came() {
        let input = quote! {
            /// Adds.
            #[inline]
            pub(crate) async fn add<T>(a: f64, b: Option<f64>) -> Result<f64, String>
            where
                T: Copy,
            {
                #![allow(unused_variables)]
                //! Inner docs.
                let c = match b { Some(b) => b, None => 0.0 };
                if a < 0.0 { return Err("negative".into()); }
                Ok(a + c)
            }
        };
        let func = parse_fn(input.clone()).unwrap();
        assert_eq!(func.sig.ident, "add");
        assert_eq!(func.sig.inputs.len(), 2);
        // Outer and inner attributes are kept, as syn keeps them.
        assert_eq!(func.attrs.len(), 4);
        let full: ItemFn = syn::parse2(input).unwrap();
        assert_eq!(
            func.to_token_stream().to_string(),
            full.to_token_stream().to_string()
        );
    }

    #[test]
    fn what_is_not_a_function_with_a_body_is_not_read_up_to_one() {
        assert!(
            parse_fn(quote!(
                struct S;
            ))
            .is_err()
        );
        assert!(
            parse_fn(quote!(
                fn f();
            ))
            .is_err()
        );
        assert!(
            parse_fn(quote!(
                fn f() {}
                fn g() {}
            ))
            .is_err()
        );
    }

    fn model(item: ItemFn) -> (ToolFn, Errors) {
        let mut errors = Errors::default();
        let f = ToolFn::new(ToolAttrs::default(), item, &mut errors);
        (f, errors)
    }

    #[test]
    fn classifies_params_and_strips_their_docs() {
        let (f, errors) = model(parse_quote! {
            fn add(ctx: &toolfunc::Ctx, /** Left. */ a: f64, #[serde(default)] b: Option<f64>) -> f64 { a }
        });
        assert!(errors.finish().is_ok());
        let kinds: Vec<_> = f.params.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                ParamKind::Ctx { by_ref: true },
                ParamKind::Arg,
                ParamKind::Arg
            ]
        );
        assert_eq!(f.params[1].attrs.len(), 1);
        assert_eq!(f.params[2].attrs.len(), 1);
        let FnArg::Typed(first) = &f.item.sig.inputs[1] else {
            panic!()
        };
        assert!(first.attrs.is_empty());
        assert!(matches!(f.output, Output::Value(_)));
    }

    #[test]
    fn result_alias_and_unit() {
        let (f, _) = model(parse_quote!(
            fn f() -> io::Result<String> {
                todo!()
            }
        ));
        assert!(matches!(
            f.output,
            Output::Result {
                ok: Some(_),
                err: None
            }
        ));
        let (f, _) = model(parse_quote!(
            fn f() -> Result<(), E> {
                todo!()
            }
        ));
        assert!(matches!(
            f.output,
            Output::Result {
                ok: None,
                err: Some(_)
            }
        ));
        let (f, _) = model(parse_quote!(
            fn f() -> () {}
        ));
        assert!(matches!(f.output, Output::Unit));
    }

    #[test]
    fn streams() {
        let (f, _) = model(parse_quote!(
            fn f() -> impl Stream<Item = u32> {
                todo!()
            }
        ));
        let Output::Stream(s) = f.output else {
            panic!()
        };
        assert!(!s.item_result && !s.open_result && s.item.is_some());
        let (f, _) = model(parse_quote!(
            async fn f() -> Result<impl futures::Stream<Item = Result<u32, E>> + Send, E> {
                todo!()
            }
        ));
        let Output::Stream(s) = f.output else {
            panic!()
        };
        assert!(s.item_result && s.open_result);
    }

    #[test]
    fn answers() {
        for (item, open) in [
            (
                parse_quote!(
                    fn f() -> Answer {}
                ),
                false,
            ),
            (
                parse_quote!(
                    fn f() -> toolfunc::stream::Answer {}
                ),
                false,
            ),
            (
                parse_quote!(
                    async fn f() -> Result<stream::Answer, E> {}
                ),
                true,
            ),
        ] {
            let (f, _) = model(item);
            let Output::Answer { open_result, .. } = f.output else {
                panic!()
            };
            assert_eq!(open_result, open);
        }
        // Another path to a type named `Answer` is a value.
        let (f, _) = model(parse_quote!(
            fn f() -> self::Answer {}
        ));
        assert!(matches!(f.output, Output::Value(_)));
    }

    #[test]
    fn ctx_lookalikes_are_arguments() {
        let (f, _) = model(parse_quote!(
            fn f(a: other::Ctx, b: &mut Ctx) {}
        ));
        assert!(f.params.iter().all(|p| p.kind == ParamKind::Arg));
    }

    #[test]
    fn patterns_are_errors_and_receivers_are_kept() {
        let (f, errors) = model(parse_quote!(
            fn f(&self, (a, b): (i32, i32)) {}
        ));
        assert!(f.params.is_empty());
        assert!(f.receiver.is_some());
        assert_eq!(f.item.sig.inputs.len(), 2);
        assert_eq!(errors.finish().err().unwrap().into_iter().count(), 1);
    }

    #[test]
    fn service_methods_and_acts() {
        let mut errors = Errors::default();
        let service = Service::new(
            ToolAttrs::default(),
            parse_quote! {
                impl Users {
                    fn get(&self, /** The id. */ id: u32) -> u32 { id }
                    #[tool(name = "promote")]
                    fn make_admin(self: Arc<Self>) {}
                    #[tool(skip)]
                    fn helper(&self) {}
                }
            },
            &mut errors,
        );
        assert!(errors.finish().is_ok());
        let acts: Vec<_> = service.methods.iter().map(|m| m.act.as_str()).collect();
        assert_eq!(acts, ["get", "$promote"]);
        assert!(!service.methods[0].by_arc() && service.methods[1].by_arc());
        assert_eq!(wire_name(&service.methods[0].model.params[0]), "id");
        let ImplItem::Fn(get) = &service.item.items[0] else {
            panic!()
        };
        let FnArg::Typed(id) = &get.sig.inputs[1] else {
            panic!()
        };
        assert!(
            id.attrs.is_empty(),
            "parameter docs are moved off the method"
        );
        let ImplItem::Fn(helper) = &service.item.items[2] else {
            panic!()
        };
        assert!(helper.attrs.is_empty(), "#[tool(skip)] is removed");
    }

    #[test]
    fn serde_rename_is_the_wire_name() {
        let (f, _) = model(parse_quote!(
            fn f(#[serde(default, rename = "id")] user_id: u32) {}
        ));
        assert_eq!(wire_name(&f.params[0]), "id");
    }
}
