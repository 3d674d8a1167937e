//! Semantic checks on the model, as their own pass: every mistake is collected so one
//! build reports them all.

use syn::spanned::Spanned;
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

    if let syn::ReturnType::Type(_, ty) = &sig.output
        && let Some(impl_trait) = find_impl_trait(ty)
    {
        errors.push(syn::Error::new(
            impl_trait,
            "#[tool] needs a nameable return type to build its result schema; \
             return a concrete type",
        ));
    }

    if let Some(name) = &tool.attrs.name
        && name.value().is_empty()
    {
        errors.push(syn::Error::new_spanned(
            name,
            "#[tool] `name` cannot be empty",
        ));
    }
}

/// Arguments are deserialised from JSON the tool does not keep: they must own their data.
fn check_owned(ty: &Type, errors: &mut Errors) {
    match ty {
        Type::Reference(r) => {
            let hint = match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => "; use `String` instead of `&str`",
                Type::Slice(_) => "; use `Vec<T>` instead of `&[T]`",
                _ => "",
            };
            errors.push(syn::Error::new_spanned(
                ty,
                format!("#[tool] parameters must be owned types{hint}"),
            ));
        }
        Type::ImplTrait(_) => errors.push(syn::Error::new_spanned(
            ty,
            "#[tool] parameters cannot be `impl Trait`: use a concrete type",
        )),
        _ => {
            if let Some(span) = find_impl_trait(ty) {
                errors.push(syn::Error::new(
                    span,
                    "#[tool] parameters cannot contain `impl Trait`: use a concrete type",
                ));
            }
        }
    }
}

fn find_impl_trait(ty: &Type) -> Option<proc_macro2::Span> {
    struct Finder(Option<proc_macro2::Span>);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, node: &'ast syn::TypeImplTrait) {
            self.0.get_or_insert(node.span());
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
