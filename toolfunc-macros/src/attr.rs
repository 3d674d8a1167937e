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
    "stream",
    "timeout",
    "concurrency",
    "depends",
    "annotations",
    "api",
    "crate",
];

/// The hints `annotations(...)` accepts, in the order `ToolSpec` stores them.
pub(crate) const ANNOTATIONS: &[&str] = &[
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "untrusted_output",
    "needs_confirmation",
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
    pub(crate) stream: Option<Span>,
    /// The timeout in milliseconds, with the literal's span.
    pub(crate) timeout: Option<(u64, Span)>,
    pub(crate) concurrency: Option<syn::LitInt>,
    /// `(local alias, tool name)` pairs.
    pub(crate) depends: Option<Vec<(syn::Ident, LitStr)>>,
    /// One entry per hint of `ANNOTATIONS`.
    pub(crate) annotations: Option<[Option<bool>; 6]>,
    /// `api = false`: not offered to remote callers.
    pub(crate) api: Option<syn::LitBool>,
    /// `skip` (service methods only): the method is not an act.
    pub(crate) skip: Option<Span>,
    /// `client = false` (services only): no typed client.
    pub(crate) client: Option<syn::LitBool>,
    pub(crate) krate: Option<Path>,
}

impl ToolAttrs {
    /// Parses the token stream given to `#[tool(...)]`, collecting every error.
    pub(crate) fn parse(tokens: proc_macro2::TokenStream) -> syn::Result<Self> {
        let mut attrs = Self::default();
        let mut errors: Option<syn::Error> = None;
        let parser = syn::meta::parser(|meta| {
            // Every value is read whole before it is judged, so one bad key never
            // hides the keys after it.
            let value = read_value(&meta)?;
            if let Err(err) = attrs.parse_key(&meta, value) {
                match &mut errors {
                    Some(all) => all.combine(err),
                    None => errors = Some(err),
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

    fn parse_key(&mut self, meta: &ParseNestedMeta<'_>, value: Value) -> syn::Result<()> {
        let path = &meta.path;
        let Some(key) = path.get_ident().map(ToString::to_string) else {
            let shown: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            return Err(syn::Error::new_spanned(
                path,
                unknown_key_message(&shown.join("::")),
            ));
        };
        let at_key = |message: String| syn::Error::new_spanned(path, message);
        let needs_value = [
            "name",
            "title",
            "description",
            "summary",
            "alias",
            "tags",
            "timeout",
            "concurrency",
            "api",
            "client",
            "crate",
        ];
        if matches!(value, Value::None) && needs_value.contains(&key.as_str()) {
            return Err(at_key(format!(
                "#[tool] key `{key}` needs a value, like `{key} = ...`"
            )));
        }
        match key.as_str() {
            // name = "tool_name"
            "name" => set(&mut self.name, path, &key, lit_str(&key, value)?),
            // title = "Human title"
            "title" => set(&mut self.title, path, &key, lit_str(&key, value)?),
            // description = "Overrides the doc comment."
            "description" => set(&mut self.description, path, &key, lit_str(&key, value)?),
            // summary = "Advertised in place of the description."
            "summary" => set(&mut self.summary, path, &key, lit_str(&key, value)?),
            // alias = "plus"  |  alias = ["plus", "sum"]
            "alias" => set(&mut self.alias, path, &key, str_list(&key, value)?),
            // tags = "math"  |  tags = ["math", "pure"]
            "tags" => set(&mut self.tags, path, &key, str_list(&key, value)?),
            // args
            "args" => set(&mut self.args, path, &key, flag(path, &key, &value)?),
            // deny_unknown_fields
            "deny_unknown_fields" => set(
                &mut self.deny_unknown_fields,
                path,
                &key,
                flag(path, &key, &value)?,
            ),
            // stream
            "stream" => set(&mut self.stream, path, &key, flag(path, &key, &value)?),
            // timeout = "30s"  |  timeout = "250ms"  |  timeout = 500 (milliseconds)
            "timeout" => set(&mut self.timeout, path, &key, timeout(value)?),
            // concurrency = 4
            "concurrency" => set(&mut self.concurrency, path, &key, concurrency(value)?),
            // annotations(read_only, destructive = false, open_world)
            "annotations" => set(&mut self.annotations, path, &key, annotations(path, value)?),
            // api = false
            "api" => set(&mut self.api, path, &key, lit_bool(&key, value)?),
            // client = false (on a #[tool_service])
            "client" => set(&mut self.client, path, &key, lit_bool(&key, value)?),
            // skip (on a method of a #[tool_service])
            "skip" => set(&mut self.skip, path, &key, flag(path, &key, &value)?),
            // depends(fetch = "get_user", log = "audit_log")
            "depends" => set(&mut self.depends, path, &key, depends(path, value)?),
            // crate = path::to::toolfunc
            "crate" => {
                let krate = match value {
                    Value::Expr(syn::Expr::Path(p)) if p.qself.is_none() => p.path,
                    Value::Expr(syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(lit),
                        ..
                    })) => {
                        return Err(syn::Error::new_spanned(
                            lit,
                            "#[tool] key `crate` takes a path without quotes, like `crate = ::toolfunc`",
                        ));
                    }
                    Value::Expr(other) => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "#[tool] key `crate` takes a path, like `crate = ::toolfunc`",
                        ));
                    }
                    _ => {
                        return Err(at_key(
                            "#[tool] key `crate` needs a value: `crate = ::toolfunc`".into(),
                        ));
                    }
                };
                set(&mut self.krate, path, &key, krate)
            }
            other => Err(at_key(unknown_key_message(other))),
        }
    }
}

/// What follows a key: nothing, `= expr`, or a parenthesised list.
pub(crate) enum Value {
    None,
    Expr(syn::Expr),
    List(proc_macro2::TokenStream),
}

fn read_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Value> {
    if meta.input.peek(Token![=]) {
        Ok(Value::Expr(meta.value()?.parse()?))
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        Ok(Value::List(content.parse()?))
    } else {
        Ok(Value::None)
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

fn set<T>(slot: &mut Option<T>, path: &Path, key: &str, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new_spanned(
            path,
            format!("#[tool] key `{key}` is specified more than once"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

fn as_lit_str(expr: &syn::Expr) -> Option<&LitStr> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => Some(lit),
        _ => None,
    }
}

fn lit_str(key: &str, value: Value) -> syn::Result<LitStr> {
    match value {
        Value::Expr(expr) => as_lit_str(&expr).cloned().ok_or_else(|| {
            syn::Error::new_spanned(
                expr,
                format!("#[tool] key `{key}` takes a string literal, like `{key} = \"...\"`"),
            )
        }),
        Value::List(tokens) => Err(syn::Error::new_spanned(
            tokens,
            format!("#[tool] key `{key}` takes a string literal, like `{key} = \"...\"`"),
        )),
        Value::None => Err(syn::Error::new(
            Span::call_site(),
            format!("#[tool] key `{key}` needs a value, like `{key} = \"...\"`"),
        )),
    }
}

fn concurrency(value: Value) -> syn::Result<syn::LitInt> {
    const HINT: &str =
        "#[tool] key `concurrency` takes a whole number of at least 1, like `concurrency = 4`";
    match value {
        Value::Expr(syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        })) => match int.base10_parse::<usize>() {
            Ok(n) if n >= 1 => Ok(int),
            _ => Err(syn::Error::new_spanned(int, HINT)),
        },
        Value::Expr(expr) => Err(syn::Error::new_spanned(expr, HINT)),
        Value::List(tokens) => Err(syn::Error::new_spanned(tokens, HINT)),
        Value::None => Err(syn::Error::new(Span::call_site(), HINT)),
    }
}

/// `annotations(read_only, destructive = false, ...)`: a bare hint means `true`.
fn annotations(path: &Path, value: Value) -> syn::Result<[Option<bool>; 6]> {
    let hint = format!(
        "#[tool] key `annotations` takes hints like `annotations(read_only, destructive = false)`; \
         valid hints are: {}",
        ANNOTATIONS.join(", ")
    );
    let Value::List(tokens) = value else {
        return Err(syn::Error::new_spanned(path, hint));
    };
    let mut hints = [None; 6];
    let parser = syn::meta::parser(|meta| {
        let name = meta
            .path
            .require_ident()
            .map_err(|_| meta.error(&hint))?
            .to_string();
        let Some(index) = ANNOTATIONS.iter().position(|a| *a == name) else {
            return Err(syn::Error::new_spanned(
                &meta.path,
                format!(
                    "unknown annotation `{name}`; valid hints are: {}",
                    ANNOTATIONS.join(", ")
                ),
            ));
        };
        let value = if meta.input.peek(Token![=]) {
            meta.value()?.parse::<syn::LitBool>()?.value
        } else {
            true
        };
        if hints[index].replace(value).is_some() {
            return Err(syn::Error::new_spanned(
                &meta.path,
                format!("annotation `{name}` is specified more than once"),
            ));
        }
        Ok(())
    });
    Parser::parse2(parser, tokens)?;
    Ok(hints)
}

/// `depends(alias = "tool", ...)`.
fn depends(path: &Path, value: Value) -> syn::Result<Vec<(syn::Ident, LitStr)>> {
    const HINT: &str = "#[tool] key `depends` takes a list of `alias = \"tool name\"`, like `depends(fetch = \"get_user\")`";
    let Value::List(tokens) = value else {
        return Err(syn::Error::new_spanned(path, HINT));
    };
    let mut pairs: Vec<(syn::Ident, LitStr)> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let alias = meta
            .path
            .require_ident()
            .map_err(|_| meta.error(HINT))?
            .clone();
        let name: LitStr = meta
            .value()
            .and_then(syn::parse::ParseBuffer::parse)
            .map_err(|_| meta.error(HINT))?;
        if pairs.iter().any(|(a, _)| *a == alias) {
            return Err(syn::Error::new_spanned(
                &alias,
                format!("dependency alias `{alias}` is specified more than once"),
            ));
        }
        pairs.push((alias, name));
        Ok(())
    });
    Parser::parse2(parser, tokens)?;
    Ok(pairs)
}

/// `"30s"`, `"250ms"`, `"2m"`, `"1h"`, `"1.5s"`, or an integer number of milliseconds.
fn timeout(value: Value) -> syn::Result<(u64, Span)> {
    const HINT: &str = "#[tool] key `timeout` takes a duration like \"30s\", \"250ms\", \"2m\" or \"1h\", or a number of milliseconds";
    let Value::Expr(expr) = value else {
        return Err(syn::Error::new(Span::call_site(), HINT));
    };
    let millis = match &expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => int.base10_parse::<u64>().ok(),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(text),
            ..
        }) => parse_duration_ms(&text.value()),
        _ => None,
    };
    match millis {
        Some(0) => Err(syn::Error::new_spanned(
            expr,
            "#[tool] key `timeout` must be longer than zero",
        )),
        Some(ms) => Ok((ms, syn::spanned::Spanned::span(&expr))),
        None => Err(syn::Error::new_spanned(expr, HINT)),
    }
}

fn parse_duration_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "ms" => 1.0,
        "s" => 1_000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return None,
    };
    let ms = (number * scale).round();
    // Bounded above by the check, so the cast is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (0.0..1e15).contains(&ms).then_some(ms as u64)
}

fn lit_bool(key: &str, value: Value) -> syn::Result<syn::LitBool> {
    let message = format!("#[tool] key `{key}` takes `true` or `false`, like `{key} = false`");
    match value {
        Value::Expr(syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(lit),
            ..
        })) => Ok(lit),
        Value::Expr(expr) => Err(syn::Error::new_spanned(expr, message)),
        Value::List(tokens) => Err(syn::Error::new_spanned(tokens, message)),
        Value::None => Err(syn::Error::new(Span::call_site(), message)),
    }
}

fn flag(path: &Path, key: &str, value: &Value) -> syn::Result<Span> {
    match value {
        Value::None => Ok(path.require_ident()?.span()),
        _ => Err(syn::Error::new_spanned(
            path,
            format!("#[tool] key `{key}` takes no value: write `{key}`"),
        )),
    }
}

/// `"a"` or `["a", "b"]`.
fn str_list(key: &str, value: Value) -> syn::Result<Vec<LitStr>> {
    let message = format!(
        "#[tool] key `{key}` takes a string literal or a list of them, like `{key} = [\"a\", \"b\"]`"
    );
    match value {
        Value::Expr(syn::Expr::Array(array)) => array
            .elems
            .iter()
            .map(|e| {
                as_lit_str(e)
                    .cloned()
                    .ok_or_else(|| syn::Error::new_spanned(e, &message))
            })
            .collect(),
        Value::Expr(expr) => as_lit_str(&expr)
            .cloned()
            .map(|lit| vec![lit])
            .ok_or_else(|| syn::Error::new_spanned(expr, &message)),
        Value::List(tokens) => Err(syn::Error::new_spanned(tokens, message)),
        Value::None => Err(syn::Error::new(Span::call_site(), message)),
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
    fn timeouts() {
        assert_eq!(parse_duration_ms("30s"), Some(30_000));
        assert_eq!(parse_duration_ms("250ms"), Some(250));
        assert_eq!(parse_duration_ms("1.5s"), Some(1_500));
        assert_eq!(parse_duration_ms("2m"), Some(120_000));
        assert_eq!(parse_duration_ms("1h"), Some(3_600_000));
        assert_eq!(parse_duration_ms("10"), None);
        assert_eq!(parse_duration_ms("5 days"), None);
        let attrs = ToolAttrs::parse(quote!(timeout = 500, stream)).unwrap();
        assert_eq!(attrs.timeout.unwrap().0, 500);
        assert!(attrs.stream.is_some());
        let err = ToolAttrs::parse(quote!(timeout = "soon")).err().unwrap();
        assert!(err.to_string().contains("takes a duration like"));
    }

    #[test]
    fn annotations() {
        let attrs = ToolAttrs::parse(quote!(annotations(read_only, destructive = false))).unwrap();
        assert_eq!(
            attrs.annotations.unwrap(),
            [Some(true), Some(false), None, None, None, None]
        );
        let err = ToolAttrs::parse(quote!(annotations(readonly)))
            .err()
            .unwrap();
        assert!(
            err.to_string().starts_with("unknown annotation `readonly`"),
            "{err}"
        );
    }

    #[test]
    fn depends_and_concurrency() {
        let attrs = ToolAttrs::parse(quote!(
            depends(fetch = "get_user", log = "audit"),
            concurrency = 2
        ))
        .unwrap();
        let depends = attrs.depends.unwrap();
        assert_eq!(depends.len(), 2);
        assert_eq!(depends[0].0.to_string(), "fetch");
        assert_eq!(depends[1].1.value(), "audit");
        assert_eq!(
            attrs.concurrency.unwrap().base10_parse::<usize>().unwrap(),
            2
        );
        assert!(ToolAttrs::parse(quote!(concurrency = 0)).is_err());
        let err = ToolAttrs::parse(quote!(depends(a = "x", a = "y")))
            .err()
            .unwrap();
        assert!(err.to_string().contains("more than once"), "{err}");
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
