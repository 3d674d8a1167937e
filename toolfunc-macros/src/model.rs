//! The model of a `#[tool]` function: its parameters (injected context or argument),
//! its output, and the cleaned item to re-emit.

use syn::{Attribute, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Type};

use crate::attr::ToolAttrs;
use crate::validate::Errors;

pub(crate) struct ToolFn {
    pub(crate) attrs: ToolAttrs,
    /// The function as the user wrote it, minus the attributes we consume.
    pub(crate) item: ItemFn,
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
    /// with `#[tool(stream)]`: a streaming tool.
    Stream(StreamOutput),
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
    /// Builds the model; structural mistakes (a `self` receiver, a pattern parameter)
    /// are added to `errors` and their parameter is left out.
    pub(crate) fn new(attrs: ToolAttrs, mut item: ItemFn, errors: &mut Errors) -> Self {
        let mut params = Vec::new();
        // A receiver is reported here and left out of the re-emitted function, so
        // rustc does not report it a second time.
        let inputs = std::mem::take(&mut item.sig.inputs);
        for input in inputs {
            if let FnArg::Receiver(receiver) = &input {
                errors.push(syn::Error::new_spanned(
                    receiver.self_token,
                    "#[tool] applies to free functions and cannot take `self`; \
                     move the function out of the impl block",
                ));
                continue;
            }
            item.sig.inputs.push(input);
        }
        for input in &mut item.sig.inputs {
            match input {
                FnArg::Receiver(_) => {}
                FnArg::Typed(pat_type) => {
                    // Parameter attributes are ours: doc comments and serde/schemars
                    // attributes go to the generated struct; rustc would reject them here.
                    let (moved, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut pat_type.attrs)
                        .into_iter()
                        .partition(|a| !is_kept_on_param(a));
                    for attr in &kept {
                        if attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr") {
                            errors.push(syn::Error::new_spanned(
                                attr,
                                "#[tool] parameters cannot be conditional: a tool's \
                                 arguments are the same in every build",
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
                                "#[tool] parameters must be plain identifiers, because each \
                                 becomes a named argument; write `name: Type` and destructure \
                                 in the body",
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
        if attrs.stream.is_some()
            && let Output::Value(ty) = &output
        {
            output = Output::Stream(StreamOutput {
                item: None,
                named: Some(ty.clone()),
                item_result: false,
                open_result: false,
            });
        }
        Self {
            attrs,
            item,
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

fn output_of(ty: &Type) -> Output {
    if let Some(stream) = stream_output(ty) {
        return Output::Stream(stream);
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

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

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
    fn ctx_lookalikes_are_arguments() {
        let (f, _) = model(parse_quote!(
            fn f(a: other::Ctx, b: &mut Ctx) {}
        ));
        assert!(f.params.iter().all(|p| p.kind == ParamKind::Arg));
    }

    #[test]
    fn pattern_and_self_are_errors() {
        let (f, errors) = model(parse_quote!(
            fn f(&self, (a, b): (i32, i32)) {}
        ));
        assert!(f.params.is_empty());
        assert_eq!(errors.finish().err().unwrap().into_iter().count(), 2);
    }
}
