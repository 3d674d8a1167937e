//! Semantic checks on the model, as their own pass: every mistake is collected so one
//! build reports them all.

use syn::{Type, visit::Visit};

use crate::model::{ParamKind, ToolFn};

/// Collects errors and combines them.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    pub(crate) fn is_some(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

pub(crate) fn validate(tool: &ToolFn, errors: &mut Errors) {
    let sig = &tool.item.sig;
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            "#[tool] functions cannot be generic: a tool needs one concrete JSON Schema \
             per parameter; use concrete types",
        ));
    } else if let Some(clause) = &sig.generics.where_clause {
        errors.push(syn::Error::new_spanned(
            clause,
            "#[tool] functions cannot have a where clause",
        ));
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            "#[tool] cannot be used on an `unsafe fn`: a tool is called with untrusted arguments",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(syn::Error::new_spanned(
            variadic,
            "#[tool] functions cannot be variadic",
        ));
    }

    let mut ctx_seen = false;
    for param in &tool.params {
        match param.kind {
            ParamKind::Ctx { .. } => {
                if ctx_seen {
                    errors.push(syn::Error::new_spanned(
                        &param.ty,
                        "#[tool] functions take at most one context parameter; remove this one",
                    ));
                }
                ctx_seen = true;
            }
            ParamKind::Arg => check_owned(&param.ty, errors),
        }
    }

    if let Some(span) = tool.attrs.args {
        if let Some(deny) = tool.attrs.deny_unknown_fields {
            errors.push(syn::Error::new(
                deny,
                "#[tool] key `deny_unknown_fields` has no effect with `args`: \
                 put #[serde(deny_unknown_fields)] on the arguments struct",
            ));
        }
        for param in tool.args() {
            if let Some(attr) = param.attrs.first() {
                errors.push(syn::Error::new_spanned(
                    attr,
                    "with #[tool(args)], attributes and doc comments on the parameter have \
                     no effect: put them on the arguments struct and its fields",
                ));
            }
        }
        let count = tool.args().count();
        if count != 1 {
            errors.push(syn::Error::new(
                span,
                format!(
                    "#[tool(args)] takes the single non-context parameter as the whole \
                     arguments object, but this function has {count}"
                ),
            ));
        }
    }

    validate_output(tool, errors);

    if let Some(name) = &tool.attrs.name
        && name.value().is_empty()
    {
        errors.push(syn::Error::new_spanned(
            name,
            "#[tool] `name` cannot be empty",
        ));
    }
}

/// The return type: a nameable result, or a stream with a nameable item.
fn validate_output(tool: &ToolFn, errors: &mut Errors) {
    if let crate::model::Output::Stream(stream) = &tool.output {
        if let Some(param) = tool
            .params
            .iter()
            .find(|p| p.kind == ParamKind::Ctx { by_ref: true })
        {
            errors.push(syn::Error::new_spanned(
                &param.ty,
                "a streaming #[tool] takes the context by value (`ctx: Ctx`): \
                 its stream outlives the call of the function",
            ));
        }
        if let Some(item) = &stream.item
            && let Some(impl_trait) = find_impl_trait(item)
        {
            errors.push(syn::Error::new_spanned(
                impl_trait,
                "#[tool] needs a nameable stream item type to build its result schema",
            ));
        }
    } else if let syn::ReturnType::Type(_, ty) = &tool.item.sig.output
        && let Some(impl_trait) = find_impl_trait(ty)
    {
        errors.push(syn::Error::new_spanned(
            impl_trait,
            "#[tool] needs a nameable return type to build its result schema; \
             return a concrete type",
        ));
    }
}

/// Arguments are deserialised from JSON the tool does not keep: they must own their
/// data, at any depth (`Option<&str>` no more than `&str`).
fn check_owned(ty: &Type, errors: &mut Errors) {
    if let Some(impl_trait) = find_impl_trait(ty) {
        errors.push(syn::Error::new_spanned(
            impl_trait,
            "#[tool] parameters cannot be or contain `impl Trait`: use a concrete type",
        ));
        return;
    }
    let mut finder = BorrowFinder(None);
    finder.visit_type(ty);
    if let Some(borrow) = finder.0 {
        let hint = match &borrow {
            Borrow::Ref(r) => match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => "; use `String` instead of `&str`",
                Type::Slice(_) => "; use `Vec<T>` instead of `&[T]`",
                Type::Path(p)
                    if r.mutability.is_some()
                        && p.path.segments.last().is_some_and(|s| s.ident == "Ctx") =>
                {
                    "; the context is taken as `&Ctx`, never `&mut Ctx`"
                }
                _ => "",
            },
            Borrow::Lifetime(_) => "; a borrowed lifetime cannot outlive the arguments",
        };
        let message = format!("#[tool] parameters must be owned types{hint}");
        errors.push(match borrow {
            Borrow::Ref(r) => syn::Error::new_spanned(r, message),
            Borrow::Lifetime(l) => syn::Error::new_spanned(l, message),
        });
    }
}

enum Borrow {
    Ref(syn::TypeReference),
    Lifetime(syn::Lifetime),
}

/// The first `&T` or non-`'static` lifetime in a type.
struct BorrowFinder(Option<Borrow>);

impl<'ast> Visit<'ast> for BorrowFinder {
    fn visit_type_reference(&mut self, node: &'ast syn::TypeReference) {
        if self.0.is_none() {
            self.0 = Some(Borrow::Ref(node.clone()));
        }
    }
    fn visit_lifetime(&mut self, node: &'ast syn::Lifetime) {
        if self.0.is_none() && node.ident != "static" {
            self.0 = Some(Borrow::Lifetime(node.clone()));
        }
    }
}

fn find_impl_trait(ty: &Type) -> Option<syn::TypeImplTrait> {
    struct Finder(Option<syn::TypeImplTrait>);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, node: &'ast syn::TypeImplTrait) {
            if self.0.is_none() {
                self.0 = Some(node.clone());
            }
        }
    }
    let mut finder = Finder(None);
    finder.visit_type(ty);
    finder.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::ToolAttrs;
    use syn::parse_quote;

    fn check(item: syn::ItemFn, attrs: ToolAttrs) -> Vec<String> {
        let mut errors = Errors::default();
        let tool = ToolFn::new(attrs, item, &mut errors);
        validate(&tool, &mut errors);
        errors
            .finish()
            .err()
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn accepts_a_plain_tool() {
        assert!(
            check(
                parse_quote!(
                    async fn f(ctx: &Ctx, a: String) -> Result<u8, E> {
                        todo!()
                    }
                ),
                ToolAttrs::default()
            )
            .is_empty()
        );
    }

    #[test]
    fn collects_every_mistake() {
        let errors = check(
            parse_quote!(
                unsafe fn f<T>(a: &str, c: &Ctx, d: Ctx, e: impl Into<u8>) -> impl Copy {
                    0
                }
            ),
            ToolAttrs::default(),
        );
        assert_eq!(errors.len(), 6, "{errors:?}");
        assert!(errors[0].contains("cannot be generic"));
        assert!(
            errors
                .iter()
                .any(|e| e.contains("use `String` instead of `&str`"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("at most one context parameter"))
        );
    }

    #[test]
    fn args_needs_exactly_one_argument() {
        let attrs = ToolAttrs::parse(quote::quote!(args)).unwrap();
        let errors = check(
            parse_quote!(
                fn f(a: A, b: B) {}
            ),
            attrs,
        );
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("this function has 2"));
    }
}
