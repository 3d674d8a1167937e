//! Parsing of the `#[tool(...)]` arguments. Each key is declared once in `KEYS`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{LitStr, Path, Token};

/// Every key `#[tool(...)]` accepts on a function, in the order the docs list them.
pub(crate) const KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "summary",
    "alias",
    "tags",
    "args",
    "deny_unknown_fields",
    "crate",
];

/// The parsed arguments of `#[tool(...)]`. Every value keeps its span.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) summary: Option<LitStr>,
    pub(crate) alias: Option<Vec<LitStr>>,
    pub(crate) tags: Option<Vec<LitStr>>,
    pub(crate) args: Option<Span>,
    pub(crate) deny_unknown_fields: Option<Span>,
    pub(crate) krate: Option<Path>,
}

impl ToolAttrs {
    /// Parses the token stream given to `#[tool(...)]`, collecting every error.
    pub(crate) fn parse(tokens: proc_macro2::TokenStream) -> syn::Result<Self> {
        let mut attrs = Self::default();
        let mut errors: Option<syn::Error> = None;
        let parser = syn::meta::parser(|meta| {
            if let Err(err) = attrs.parse_key(&meta) {
                match &mut errors {
                    Some(all) => all.combine(err),
                    None => errors = Some(err),
                }
                // Skip the value of a bad key so the remaining keys are still checked.
                if meta.input.peek(Token![=]) {
                    let _: Token![=] = meta.input.parse()?;
                    let _: syn::Expr = meta.input.parse()?;
                } else if meta.input.peek(syn::token::Paren) {
                    let _content;
                    syn::parenthesized!(_content in meta.input);
                }
            }
            Ok(())
        });
        parser.parse2(tokens)?;
        match errors {
            Some(err) => Err(err),
            None => Ok(attrs),
        }
    }

    fn parse_key(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let path = &meta.path;
        let Some(key) = path.get_ident().map(ToString::to_string) else {
            return Err(meta.error(unknown_key_message(&quote::quote!(#path).to_string())));
        };
        match key.as_str() {
            // name = "tool_name"
            "name" => set(&mut self.name, meta, &key, lit_str(meta)?),
            // title = "Human title"
            "title" => set(&mut self.title, meta, &key, lit_str(meta)?),
            // description = "Overrides the doc comment."
            "description" => set(&mut self.description, meta, &key, lit_str(meta)?),
            // summary = "Advertised in place of the description."
            "summary" => set(&mut self.summary, meta, &key, lit_str(meta)?),
            // alias = "plus"  |  alias = ["plus", "sum"]
            "alias" => set(&mut self.alias, meta, &key, str_list(meta)?),
            // tags = "math"  |  tags = ["math", "pure"]
            "tags" => set(&mut self.tags, meta, &key, str_list(meta)?),
            // args
            "args" => set(&mut self.args, meta, &key, flag(meta, &key)?),
            // deny_unknown_fields
            "deny_unknown_fields" => {
                set(&mut self.deny_unknown_fields, meta, &key, flag(meta, &key)?)
            }
            // crate = path::to::toolfunc
            "crate" => {
                let value: Path = meta.value()?.parse()?;
                set(&mut self.krate, meta, &key, value)
            }
            other => Err(meta.error(unknown_key_message(other))),
        }
    }
}

fn unknown_key_message(key: &str) -> String {
    let hint = match key {
        "rename" => " (to rename the tool, use `name`)",
        "aliases" => " (use `alias = [...]`)",
        "tag" => " (use `tags = [...]`)",
        "doc" => " (use `description`, or a doc comment)",
        _ => "",
    };
    format!(
        "unknown #[tool] key `{key}`{hint}; valid keys are: {}",
        KEYS.join(", ")
    )
}

fn set<T>(
    slot: &mut Option<T>,
    meta: &ParseNestedMeta<'_>,
    key: &str,
    value: T,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error(format!("#[tool] key `{key}` is specified more than once")));
    }
    *slot = Some(value);
    Ok(())
}

fn lit_str(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    let value = meta.value()?;
    value.parse::<LitStr>().map_err(|err| {
        syn::Error::new(
            err.span(),
            "expected a string literal, like `key = \"value\"`",
        )
    })
}

fn flag(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<Span> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format!("#[tool] key `{key}` takes no value: write `{key}`")));
    }
    Ok(meta.path.require_ident()?.span())
}

/// `"a"` or `["a", "b"]`.
fn str_list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let value = meta.value()?;
    if value.peek(syn::token::Bracket) {
        let content;
        syn::bracketed!(content in value);
        let items =
            content.parse_terminated(syn::parse::ParseBuffer::parse::<LitStr>, Token![,])?;
        Ok(items.into_iter().collect())
    } else {
        let lit: LitStr = value.parse().map_err(|err| {
            syn::Error::new(
                err.span(),
                "expected a string literal or a list of them, like `[\"a\", \"b\"]`",
            )
        })?;
        Ok(vec![lit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn parses_every_key() {
        let attrs = ToolAttrs::parse(quote!(
            name = "n",
            title = "t",
            description = "d",
            summary = "s",
            alias = ["a", "b"],
            tags = "x",
            args,
            deny_unknown_fields,
            crate = my::toolfunc
        ))
        .unwrap();
        assert_eq!(attrs.name.unwrap().value(), "n");
        assert_eq!(attrs.alias.unwrap().len(), 2);
        assert_eq!(attrs.tags.unwrap()[0].value(), "x");
        assert!(attrs.args.is_some() && attrs.deny_unknown_fields.is_some());
        assert!(attrs.krate.is_some());
    }

    #[test]
    fn reports_all_errors_at_once() {
        let err = ToolAttrs::parse(quote!(nme = "x", name = "a", name = "b"))
            .err()
            .unwrap();
        let messages: Vec<String> = err.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 2);
        assert!(messages[0].starts_with("unknown #[tool] key `nme`; valid keys are: name, title"));
        assert_eq!(
            messages[1],
            "#[tool] key `name` is specified more than once"
        );
    }

    #[test]
    fn flag_rejects_a_value() {
        let err = ToolAttrs::parse(quote!(args = true)).err().unwrap();
        assert_eq!(
            err.to_string(),
            "#[tool] key `args` takes no value: write `args`"
        );
    }
}
