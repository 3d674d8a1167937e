//! Doc comments to descriptions: `///` lines become one string, `#[doc = include_str!(..)]`
//! is kept as an expression so the text is read at compile time.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// One piece of a doc comment.
pub(crate) enum DocPart {
    Line(String),
    Expr(Expr),
}

/// The doc parts of `attrs`, in order.
pub(crate) fn doc_parts(attrs: &[Attribute]) -> Vec<DocPart> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) => Some(match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => DocPart::Line(s.value()),
                other => DocPart::Expr(other.clone()),
            }),
            _ => None,
        })
        .collect()
}

/// Joins literal doc lines: strips the one space `///` leaves, trims blank lines at
/// both ends, keeps paragraphs.
fn join_lines(lines: &[String]) -> String {
    let stripped: Vec<&str> = lines
        .iter()
        .flat_map(|l| l.split('\n'))
        .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
        .collect();
    stripped.join("\n").trim().to_owned()
}

/// The description as a `&'static str` expression, or `None` without docs.
pub(crate) fn description_expr(parts: &[DocPart]) -> Option<TokenStream> {
    if parts.is_empty() {
        return None;
    }
    if parts.iter().all(|p| matches!(p, DocPart::Line(_))) {
        let lines: Vec<String> = parts
            .iter()
            .filter_map(|p| match p {
                DocPart::Line(l) => Some(l.clone()),
                DocPart::Expr(_) => None,
            })
            .collect();
        let text = join_lines(&lines);
        return (!text.is_empty()).then(|| quote!(#text));
    }
    // Mixed with `include_str!` and friends: concatenate at compile time.
    let mut pieces = Vec::new();
    let mut pending = Vec::new();
    for part in parts {
        match part {
            DocPart::Line(l) => pending.push(l.clone()),
            DocPart::Expr(e) => {
                if !pending.is_empty() {
                    let text = join_lines(&pending) + "\n";
                    pieces.push(quote!(#text));
                    pending.clear();
                }
                pieces.push(quote!(#e));
            }
        }
    }
    if !pending.is_empty() {
        let text = format!("\n{}", join_lines(&pending));
        pieces.push(quote!(#text));
    }
    Some(quote!(::core::concat!(#(#pieces),*)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn joins_paragraphs_and_strips_the_leading_space() {
        let f: syn::ItemFn = parse_quote! {
            /// Adds two numbers.
            ///
            /// Second paragraph.
            fn f() {}
        };
        let expr = description_expr(&doc_parts(&f.attrs)).unwrap();
        assert_eq!(
            expr.to_string(),
            quote!("Adds two numbers.\n\nSecond paragraph.").to_string()
        );
    }

    #[test]
    fn keeps_include_str() {
        let f: syn::ItemFn = parse_quote! {
            #[doc = include_str!("x.md")]
            fn f() {}
        };
        let expr = description_expr(&doc_parts(&f.attrs)).unwrap().to_string();
        assert!(expr.contains("include_str"), "{expr}");
    }

    #[test]
    fn no_docs_no_description() {
        let f: syn::ItemFn = parse_quote!(
            fn f() {}
        );
        assert!(description_expr(&doc_parts(&f.attrs)).is_none());
    }
}
