//! Parsing of the arguments of `#[tool(...)]`, `#[tool_service(...)]`,
//! `#[prompt(...)]` and `#[resource(...)]`. Each key is declared once in `KEYS`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{LitStr, Path, Token};

/// Where an attribute sits: the keys it accepts and the name its messages use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Position {
    /// `#[tool(...)]` on a free function.
    #[default]
    Function,
    /// `#[tool_service(...)]` on an impl block.
    Service,
    /// `#[tool(...)]` on a method of a `#[tool_service]` impl block.
    Method,
    /// `#[prompt(...)]` on a free function.
    Prompt,
    /// `#[resource(...)]` on a free function.
    Resource,
}

use Position::{Function, Method, Prompt, Resource, Service};

impl Position {
    /// The attribute as messages name it.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Function | Method => "#[tool]",
            Service => "#[tool_service]",
            Prompt => "#[prompt]",
            Resource => "#[resource]",
        }
    }

    /// Whether the attribute makes a prompt or a resource rather than a tool.
    pub(crate) fn is_kind(self) -> bool {
        matches!(self, Prompt | Resource)
    }

    /// The keys accepted here, in the order the docs list them.
    pub(crate) fn keys(self) -> impl Iterator<Item = &'static str> {
        KEYS.iter()
            .filter(move |(_, on)| on.contains(&self))
            .map(|(key, _)| *key)
    }
}

/// Every key, once, with the positions that accept it, in the order the docs list them.
pub(crate) const KEYS: &[(&str, &[Position])] = &[
    ("uri", &[Resource]),
    ("mime_type", &[Resource]),
    ("name", &[Function, Service, Method, Prompt, Resource]),
    ("title", &[Function, Service, Method, Prompt, Resource]),
    (
        "description",
        &[Function, Service, Method, Prompt, Resource],
    ),
    ("summary", &[Function, Service]),
    ("alias", &[Function, Service]),
    ("tags", &[Function, Service, Prompt, Resource]),
    ("args", &[Function, Method]),
    ("deny_unknown_fields", &[Function, Method]),
    ("stream", &[Function, Method]),
    ("local", &[Function, Prompt, Resource]),
    ("background", &[Function]),
    ("check_output", &[Function]),
    ("needs_client", &[Function]),
    ("scopes", &[Function, Service, Method, Prompt, Resource]),
    ("timeout", &[Function, Service, Method, Prompt, Resource]),
    ("concurrency", &[Function, Service]),
    ("depends", &[Function]),
    ("annotations", &[Function, Service, Method]),
    ("api", &[Function, Service, Prompt, Resource]),
    ("complete", &[Prompt, Resource]),
    ("client", &[Service]),
    ("skip", &[Method]),
    ("setup", &[Method]),
    ("dispose", &[Method]),
    ("crate", &[Function, Service, Prompt, Resource]),
];

/// The hints `annotations(...)` accepts; each is a field of [`Hints`] and of the
/// runtime's `Hints`.
pub(crate) const ANNOTATIONS: &[&str] = &[
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "untrusted_output",
    "needs_confirmation",
];

/// The hints of `annotations(...)`, by name; `None` where the attribute says nothing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hints {
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
    pub(crate) untrusted_output: Option<bool>,
    pub(crate) needs_confirmation: Option<bool>,
}

impl Hints {
    /// The slot of the hint `name` (one of `ANNOTATIONS`).
    fn slot(&mut self, name: &str) -> Option<&mut Option<bool>> {
        Some(match name {
            "read_only" => &mut self.read_only,
            "destructive" => &mut self.destructive,
            "idempotent" => &mut self.idempotent,
            "open_world" => &mut self.open_world,
            "untrusted_output" => &mut self.untrusted_output,
            "needs_confirmation" => &mut self.needs_confirmation,
            _ => return None,
        })
    }

    /// The hints that are set, as `(name, value)`.
    pub(crate) fn set(&self) -> impl Iterator<Item = (&'static str, bool)> {
        [
            ("read_only", self.read_only),
            ("destructive", self.destructive),
            ("idempotent", self.idempotent),
            ("open_world", self.open_world),
            ("untrusted_output", self.untrusted_output),
            ("needs_confirmation", self.needs_confirmation),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
    }
}

/// The parsed arguments of `#[tool(...)]` or `#[tool_service(...)]`. Every value keeps
/// its span; a key that its position does not accept is an error at the key, so a
/// field here is only set where its key applies.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) summary: Option<LitStr>,
    pub(crate) alias: Option<Vec<LitStr>>,
    pub(crate) tags: Option<Vec<LitStr>>,
    /// `needs_client = "sampling"` or a list: what the caller must be able to answer.
    pub(crate) needs_client: Option<Vec<LitStr>>,
    /// `scopes = "files:read"` or a list: the OAuth scopes a caller from outside needs.
    pub(crate) scopes: Option<Vec<LitStr>>,
    pub(crate) args: Option<Span>,
    pub(crate) deny_unknown_fields: Option<Span>,
    pub(crate) stream: Option<Span>,
    /// The timeout in milliseconds, with the literal's span.
    pub(crate) timeout: Option<(u64, Span)>,
    pub(crate) concurrency: Option<syn::LitInt>,
    /// `(local alias, tool name)` pairs.
    pub(crate) depends: Option<Vec<(syn::Ident, LitStr)>>,
    pub(crate) annotations: Option<Hints>,
    /// `api = false`: not offered to remote callers.
    pub(crate) api: Option<syn::LitBool>,
    /// `skip` (methods): the method is not an act.
    pub(crate) skip: Option<Span>,
    /// `client = false` (services): no typed client.
    pub(crate) client: Option<syn::LitBool>,
    /// `setup` (methods): the service's setup, run when it is registered; not an act.
    pub(crate) setup: Option<Span>,
    /// `local` (async functions): the future need not be `Send`; calls run on the
    /// local executor.
    pub(crate) local: Option<Span>,
    /// `background` (the timeout is a soft deadline) or `background = "only"`
    /// (and a remote call is always tracked): its span, and whether `only`.
    pub(crate) background: Option<(Span, bool)>,
    /// `check_output`: each result is checked against the result schema.
    pub(crate) check_output: Option<Span>,
    /// `dispose` (methods): the service's dispose, run when it is removed; not an act.
    pub(crate) dispose: Option<Span>,
    pub(crate) krate: Option<Path>,
    /// `uri = "file:///logs/{date}"` (resources): the URI or URI template.
    pub(crate) uri: Option<LitStr>,
    /// `mime_type = "text/plain"` (resources).
    pub(crate) mime_type: Option<LitStr>,
    /// `complete(arg = path::to_fn, ..)` (prompts and resources): each argument or
    /// template variable with the function that completes it.
    pub(crate) complete: Option<Vec<(syn::Ident, syn::Expr)>>,
    /// Every key given, in order, at its path: for checks across keys.
    pub(crate) given: Vec<(&'static str, Span)>,
    /// The attribute these keys were given to.
    pub(crate) position: Position,
}

/// The key being parsed, for messages.
struct Key<'a> {
    name: &'a str,
    path: &'a Path,
    attr: &'static str,
}

impl Key<'_> {
    /// `#[tool] key `name``, the start of most messages.
    fn what(&self) -> String {
        format!("{} key `{}`", self.attr, self.name)
    }

    fn error(&self, message: impl std::fmt::Display) -> syn::Error {
        syn::Error::new_spanned(self.path, message)
    }
}

impl ToolAttrs {
    /// Parses the tokens inside the attribute at `position`, collecting every error.
    pub(crate) fn parse(tokens: proc_macro2::TokenStream, position: Position) -> syn::Result<Self> {
        let mut attrs = Self {
            position,
            ..Self::default()
        };
        let mut errors: Option<syn::Error> = None;
        let parser = syn::meta::parser(|meta| {
            // Every value is read whole before it is judged, so one bad key never
            // hides the keys after it.
            let value = read_value(&meta)?;
            if let Err(err) = attrs.parse_key(&meta, value, position) {
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

    fn parse_key(
        &mut self,
        meta: &ParseNestedMeta<'_>,
        value: Value,
        position: Position,
    ) -> syn::Result<()> {
        let path = &meta.path;
        let attr = position.attr();
        let Some(name) = path.get_ident().map(ToString::to_string) else {
            let shown: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            return Err(syn::Error::new_spanned(
                path,
                unknown_key_message(&shown.join("::"), position),
            ));
        };
        let key = Key {
            name: &name,
            path,
            attr,
        };
        let Some((known, on)) = KEYS.iter().find(|(k, _)| *k == name) else {
            return Err(key.error(unknown_key_message(&name, position)));
        };
        if !on.contains(&position) {
            return Err(key.error(misplaced_key_message(&name, position)));
        }
        self.given.push((known, syn::spanned::Spanned::span(path)));
        let needs_value = !matches!(
            name.as_str(),
            "args"
                | "deny_unknown_fields"
                | "stream"
                | "skip"
                | "setup"
                | "dispose"
                | "local"
                | "background"
                | "check_output"
                | "annotations"
                | "depends"
                | "complete"
        );
        if matches!(value, Value::None) && needs_value {
            return Err(key.error(format!("{} needs a value, like `{name} = ...`", key.what())));
        }
        match name.as_str() {
            // name = "tool_name"
            "name" => set(&mut self.name, &key, lit_str(&key, value)?),
            // title = "Human title"
            "title" => set(&mut self.title, &key, lit_str(&key, value)?),
            // description = "Overrides the doc comment."
            "description" => set(&mut self.description, &key, lit_str(&key, value)?),
            // summary = "Advertised in place of the description."
            "summary" => set(&mut self.summary, &key, lit_str(&key, value)?),
            // alias = "plus"  |  alias = ["plus", "sum"]
            "alias" => set(&mut self.alias, &key, str_list(&key, value)?),
            // tags = "math"  |  tags = ["math", "pure"]
            "tags" => set(&mut self.tags, &key, str_list(&key, value)?),
            // needs_client = "sampling"  |  needs_client = ["sampling", "elicitation"]
            "needs_client" => set(&mut self.needs_client, &key, str_list(&key, value)?),
            // scopes = "files:read"  |  scopes = ["files:read", "files:write"]
            "scopes" => set(&mut self.scopes, &key, str_list(&key, value)?),
            // args
            "args" => set(&mut self.args, &key, flag(&key, &value)?),
            // deny_unknown_fields
            "deny_unknown_fields" => set(&mut self.deny_unknown_fields, &key, flag(&key, &value)?),
            // stream
            "stream" => set(&mut self.stream, &key, flag(&key, &value)?),
            // timeout = "30s"  |  timeout = "250ms"  |  timeout = 500 (milliseconds)
            "timeout" => set(&mut self.timeout, &key, timeout(&key, value)?),
            // concurrency = 4
            "concurrency" => set(&mut self.concurrency, &key, concurrency(&key, value)?),
            // annotations(read_only, destructive = false, open_world)
            "annotations" => set(&mut self.annotations, &key, annotations(&key, value)?),
            // api = false
            "api" => set(&mut self.api, &key, lit_bool(&key, value)?),
            // client = false
            "client" => set(&mut self.client, &key, lit_bool(&key, value)?),
            // skip
            "skip" => set(&mut self.skip, &key, flag(&key, &value)?),
            // setup
            "setup" => set(&mut self.setup, &key, flag(&key, &value)?),
            // local
            "local" => set(&mut self.local, &key, flag(&key, &value)?),
            // background (with timeout = "2s": past it, remote callers poll)
            // background = "only" (every remote call is tracked: an MCP task)
            "background" => set(&mut self.background, &key, background(&key, value)?),
            // check_output (each result checked against the result schema: OUTPUT)
            "check_output" => set(&mut self.check_output, &key, flag(&key, &value)?),
            // dispose
            "dispose" => set(&mut self.dispose, &key, flag(&key, &value)?),
            // depends(fetch = "get_user", log = "audit_log")
            "depends" => set(&mut self.depends, &key, depends(&key, value)?),
            // crate = path::to::toolfunc
            "crate" => set(&mut self.krate, &key, krate(&key, value)?),
            // uri = "file:///logs/{date}"
            "uri" => set(&mut self.uri, &key, lit_str(&key, value)?),
            // mime_type = "text/plain"
            "mime_type" => set(&mut self.mime_type, &key, lit_str(&key, value)?),
            // complete(language = languages, path = crate::paths::complete)
            "complete" => set(&mut self.complete, &key, complete(&key, value)?),
            other => unreachable!("`{other}` is in KEYS but has no parser"),
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

fn unknown_key_message(key: &str, position: Position) -> String {
    let attr = position.attr();
    let hint = match key {
        "rename" if position.is_kind() => Some("to rename it, use `name`".to_owned()),
        "rename" => Some("to rename the tool, use `name`".to_owned()),
        "aliases" if matches!(position, Function | Service) => {
            Some("use `alias = [...]`".to_owned())
        }
        "tag" if position != Method => Some("use `tags = [...]`".to_owned()),
        "doc" => Some("use `description`, or a doc comment".to_owned()),
        _ => closest(key, position.keys()).map(|near| format!("did you mean `{near}`?")),
    };
    match hint {
        Some(hint) => format!("unknown {attr} key `{key}`: {hint}"),
        None => format!(
            "unknown {attr} key `{key}`; valid keys are: {}",
            position.keys().collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A key that exists, but not at this position.
fn misplaced_key_message(key: &str, position: Position) -> String {
    if position.is_kind() {
        let attr = position.attr();
        return format!(
            "unknown {attr} key `{key}` (a #[tool] key); valid keys are: {}",
            position.keys().collect::<Vec<_>>().join(", ")
        );
    }
    let only_kinds: Vec<&str> = KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, on)| {
            on.iter()
                .filter(|p| p.is_kind())
                .map(|p| p.attr())
                .collect()
        })
        .unwrap_or_default();
    let tool_positions = KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .is_some_and(|(_, on)| on.iter().any(|p| !p.is_kind()));
    if !tool_positions && !only_kinds.is_empty() {
        return format!(
            "{} key `{key}` applies to {} only",
            position.attr(),
            only_kinds.join(" and ")
        );
    }
    match (position, key) {
        (_, "depends") => "#[tool_service] does not take `depends`; services call other \
                           tools with `ctx.run`"
            .to_owned(),
        (Service | Method, "local") => "`local` applies to #[tool] async functions; a \
                                          service's state is shared between threads"
            .to_owned(),
        (Service, "setup" | "dispose") => {
            format!("#[tool_service] does not take `{key}`: mark the method with #[tool({key})]")
        }
        (Service, _) => {
            format!("key `{key}` applies to one method: put it in #[tool(...)] on the method")
        }
        (Method, _) => {
            format!("key `{key}` describes the whole service: put it in #[tool_service(...)]")
        }
        (Function, "skip" | "setup" | "dispose") => {
            format!("#[tool] key `{key}` applies to methods of a #[tool_service] impl block")
        }
        (Function, _) => format!("#[tool] key `{key}` applies to #[tool_service] only"),
        (Prompt | Resource, _) => unreachable!("answered above"),
    }
}

/// The valid key one edit (insertion, deletion, substitution or swap of neighbours)
/// away from `key`, if there is exactly one such key.
fn closest(key: &str, valid: impl Iterator<Item = &'static str>) -> Option<&'static str> {
    let mut near = valid.filter(|candidate| one_edit_apart(key, candidate));
    let first = near.next()?;
    near.next().is_none().then_some(first)
}

fn one_edit_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a == b {
        return false;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    match (a.len(), b.len()) {
        (la, lb) if la == lb => {
            a[1..] == b[1..] || (la >= 2 && a[0] == b[1] && a[1] == b[0] && a[2..] == b[2..])
        }
        (la, lb) if la == lb + 1 => a[1..] == *b,
        (la, lb) if la + 1 == lb => *a == b[1..],
        _ => false,
    }
}

fn set<T>(slot: &mut Option<T>, key: &Key<'_>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(key.error(format!("{} is specified more than once", key.what())));
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

/// The error at the value (or at the key when there is none).
fn at_value(key: &Key<'_>, value: Value, message: String) -> syn::Error {
    match value {
        Value::Expr(expr) => syn::Error::new_spanned(expr, message),
        Value::List(tokens) => syn::Error::new_spanned(tokens, message),
        Value::None => key.error(message),
    }
}

fn lit_str(key: &Key<'_>, value: Value) -> syn::Result<LitStr> {
    if let Value::Expr(expr) = &value
        && let Some(lit) = as_lit_str(expr)
    {
        return Ok(lit.clone());
    }
    let message = format!(
        "{} takes a string literal, like `{} = \"...\"`",
        key.what(),
        key.name
    );
    Err(at_value(key, value, message))
}

fn krate(key: &Key<'_>, value: Value) -> syn::Result<Path> {
    let message = match value {
        Value::Expr(syn::Expr::Path(p)) if p.qself.is_none() => return Ok(p.path),
        Value::Expr(ref expr) if as_lit_str(expr).is_some() => format!(
            "{} takes a path without quotes, like `crate = ::toolfunc`",
            key.what()
        ),
        _ => format!("{} takes a path, like `crate = ::toolfunc`", key.what()),
    };
    Err(at_value(key, value, message))
}

fn concurrency(key: &Key<'_>, value: Value) -> syn::Result<syn::LitInt> {
    let message = format!(
        "{} takes a whole number of at least 1, like `concurrency = 4`",
        key.what()
    );
    if let Value::Expr(syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Int(int),
        ..
    })) = &value
        && matches!(int.base10_parse::<usize>(), Ok(n) if n >= 1)
    {
        return Ok(int.clone());
    }
    Err(at_value(key, value, message))
}

/// `annotations(read_only, destructive = false, ...)`: a bare hint means `true`.
fn annotations(key: &Key<'_>, value: Value) -> syn::Result<Hints> {
    let hint = format!(
        "{} takes hints like `annotations(read_only, destructive = false)`; \
         valid hints are: {}",
        key.what(),
        ANNOTATIONS.join(", ")
    );
    let Value::List(tokens) = value else {
        return Err(key.error(hint));
    };
    let mut hints = Hints::default();
    let parser = syn::meta::parser(|meta| {
        let name = meta
            .path
            .require_ident()
            .map_err(|_| meta.error(&hint))?
            .to_string();
        let value = if meta.input.peek(Token![=]) {
            meta.value()?.parse::<syn::LitBool>()?.value
        } else {
            true
        };
        let Some(slot) = hints.slot(&name) else {
            let near = closest(&name, ANNOTATIONS.iter().copied())
                .map_or_else(String::new, |near| format!("did you mean `{near}`? "));
            return Err(syn::Error::new_spanned(
                &meta.path,
                format!(
                    "unknown annotation `{name}`; {near}valid hints are: {}",
                    ANNOTATIONS.join(", ")
                ),
            ));
        };
        if slot.replace(value).is_some() {
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
fn depends(key: &Key<'_>, value: Value) -> syn::Result<Vec<(syn::Ident, LitStr)>> {
    let hint = format!(
        "{} takes a list of `alias = \"tool name\"`, like `depends(fetch = \"get_user\")`",
        key.what()
    );
    let Value::List(tokens) = value else {
        return Err(key.error(hint));
    };
    let mut pairs: Vec<(syn::Ident, LitStr)> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let alias = meta
            .path
            .require_ident()
            .map_err(|_| meta.error(&hint))?
            .clone();
        let name: LitStr = meta
            .value()
            .and_then(syn::parse::ParseBuffer::parse)
            .map_err(|_| meta.error(&hint))?;
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

/// `complete(arg = path::to_fn, ...)`: each function takes `&CompletionRequest` and
/// returns anything `Into<Completion>`.
fn complete(key: &Key<'_>, value: Value) -> syn::Result<Vec<(syn::Ident, syn::Expr)>> {
    let hint = format!(
        "{} takes a list of `argument = function`, like `complete(language = languages)`",
        key.what()
    );
    let Value::List(tokens) = value else {
        return Err(key.error(hint));
    };
    let mut pairs: Vec<(syn::Ident, syn::Expr)> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let argument = meta
            .path
            .require_ident()
            .map_err(|_| meta.error(&hint))?
            .clone();
        let function: syn::Expr = meta
            .value()
            .and_then(syn::parse::ParseBuffer::parse)
            .map_err(|_| meta.error(&hint))?;
        if pairs.iter().any(|(a, _)| *a == argument) {
            return Err(syn::Error::new_spanned(
                &argument,
                format!("`{argument}` is completed more than once"),
            ));
        }
        pairs.push((argument, function));
        Ok(())
    });
    Parser::parse2(parser, tokens)?;
    Ok(pairs)
}

/// `"30s"`, `"250ms"`, `"2m"`, `"1h"`, `"1.5s"`, or an integer number of milliseconds.
fn timeout(key: &Key<'_>, value: Value) -> syn::Result<(u64, Span)> {
    let hint = format!(
        "{} takes a duration like \"30s\", \"250ms\", \"2m\" or \"1h\", or a number of milliseconds",
        key.what()
    );
    let Value::Expr(expr) = value else {
        return Err(at_value(key, value, hint));
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
        // Zero is a soft deadline of `background` tools only: checked with the keys.
        Some(ms) => Ok((ms, syn::spanned::Spanned::span(&expr))),
        None => Err(syn::Error::new_spanned(expr, hint)),
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

fn lit_bool(key: &Key<'_>, value: Value) -> syn::Result<syn::LitBool> {
    if let Value::Expr(syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Bool(lit),
        ..
    })) = &value
    {
        return Ok(lit.clone());
    }
    let message = format!(
        "{} takes `true` or `false`, like `{} = false`",
        key.what(),
        key.name
    );
    Err(at_value(key, value, message))
}

fn flag(key: &Key<'_>, value: &Value) -> syn::Result<Span> {
    match value {
        Value::None => Ok(key.path.require_ident()?.span()),
        _ => Err(key.error(format!(
            "{} takes no value: write `{}`",
            key.what(),
            key.name
        ))),
    }
}

/// `background` or `background = "only"`.
fn background(key: &Key<'_>, value: Value) -> syn::Result<(Span, bool)> {
    if let Value::None = value {
        return Ok((key.path.require_ident()?.span(), false));
    }
    if let Value::Expr(expr) = &value
        && let Some(lit) = as_lit_str(expr)
        && lit.value() == "only"
    {
        return Ok((lit.span(), true));
    }
    let message = format!(
        "{} is a flag (`background`: past the timeout a remote call moves to the \
         background) or `background = \"only\"` (every remote call is tracked)",
        key.what()
    );
    Err(at_value(key, value, message))
}

/// `"a"` or `["a", "b"]`.
fn str_list(key: &Key<'_>, value: Value) -> syn::Result<Vec<LitStr>> {
    let message = format!(
        "{} takes a string literal or a list of them, like `{} = [\"a\", \"b\"]`",
        key.what(),
        key.name
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
        other => Err(at_value(key, other, message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn parses_every_key() {
        let attrs = ToolAttrs::parse(
            quote!(
                name = "n",
                title = "t",
                description = "d",
                summary = "s",
                alias = ["a", "b"],
                tags = "x",
                args,
                deny_unknown_fields,
                crate = my::toolfunc
            ),
            Function,
        )
        .unwrap();
        assert_eq!(attrs.name.unwrap().value(), "n");
        assert_eq!(attrs.alias.unwrap().len(), 2);
        assert_eq!(attrs.tags.unwrap()[0].value(), "x");
        assert!(attrs.args.is_some() && attrs.deny_unknown_fields.is_some());
        assert!(attrs.krate.is_some());
    }

    #[test]
    fn reports_all_errors_at_once() {
        let err = ToolAttrs::parse(quote!(nme = "x", name = "a", name = "b"), Function)
            .err()
            .unwrap();
        let messages: Vec<String> = err.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 2);
        assert_eq!(
            messages[0],
            "unknown #[tool] key `nme`: did you mean `name`?"
        );
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
        let attrs = ToolAttrs::parse(quote!(timeout = 500, stream), Function).unwrap();
        assert_eq!(attrs.timeout.unwrap().0, 500);
        assert!(attrs.stream.is_some());
        let err = ToolAttrs::parse(quote!(timeout = "soon"), Function)
            .err()
            .unwrap();
        assert!(err.to_string().contains("takes a duration like"));
    }

    #[test]
    fn annotations() {
        let attrs = ToolAttrs::parse(
            quote!(annotations(read_only, destructive = false)),
            Function,
        )
        .unwrap();
        let hints = attrs.annotations.unwrap();
        assert_eq!(hints.read_only, Some(true));
        assert_eq!(hints.destructive, Some(false));
        assert_eq!(hints.set().count(), 2);
        let err = ToolAttrs::parse(quote!(annotations(readonly)), Function)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with("unknown annotation `readonly`; did you mean `read_only`?"),
            "{err}"
        );
    }

    #[test]
    fn depends_and_concurrency() {
        let attrs = ToolAttrs::parse(
            quote!(depends(fetch = "get_user", log = "audit"), concurrency = 2),
            Function,
        )
        .unwrap();
        let depends = attrs.depends.unwrap();
        assert_eq!(depends.len(), 2);
        assert_eq!(depends[0].0.to_string(), "fetch");
        assert_eq!(depends[1].1.value(), "audit");
        assert_eq!(
            attrs.concurrency.unwrap().base10_parse::<usize>().unwrap(),
            2
        );
        assert!(ToolAttrs::parse(quote!(concurrency = 0), Function).is_err());
        let err = ToolAttrs::parse(quote!(depends(a = "x", a = "y")), Function)
            .err()
            .unwrap();
        assert!(err.to_string().contains("more than once"), "{err}");
    }

    #[test]
    fn suggestions_are_one_edit_away() {
        for (typo, key) in [
            ("timout", "timeout"),
            ("timeoutt", "timeout"),
            ("nmae", "name"),
            ("tilte", "title"),
            ("alais", "alias"),
        ] {
            assert_eq!(closest(typo, Function.keys()), Some(key), "{typo}");
        }
        assert_eq!(closest("xyz", Function.keys()), None);
        assert_eq!(closest("name", Function.keys()), None);
        let err = ToolAttrs::parse(quote!(timout = "1s"), Method)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "unknown #[tool] key `timout`: did you mean `timeout`?"
        );
    }

    #[test]
    fn each_position_names_its_attribute_and_keys() {
        let err = ToolAttrs::parse(quote!(colour = 1), Service).err().unwrap();
        let message = err.to_string();
        assert!(
            message.starts_with("unknown #[tool_service] key `colour`; valid keys are: name,"),
            "{message}"
        );
        assert!(
            message.contains("client") && !message.contains("stream"),
            "{message}"
        );
        let err = ToolAttrs::parse(quote!(stream), Service).err().unwrap();
        assert!(
            err.to_string()
                .starts_with("key `stream` applies to one method")
        );
        let err = ToolAttrs::parse(quote!(alias = "x"), Method).err().unwrap();
        assert!(
            err.to_string()
                .starts_with("key `alias` describes the whole service")
        );
        let err = ToolAttrs::parse(quote!(skip), Function).err().unwrap();
        assert!(
            err.to_string()
                .contains("applies to methods of a #[tool_service]")
        );
        assert!(ToolAttrs::parse(quote!(skip), Method).is_ok());
        let err = ToolAttrs::parse(quote!(client = false), Function)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "#[tool] key `client` applies to #[tool_service] only"
        );
    }

    #[test]
    fn prompts_and_resources_take_their_own_keys() {
        let attrs = ToolAttrs::parse(
            quote!(name = "n", complete(a = f, b = path::g), local),
            Prompt,
        )
        .unwrap();
        assert_eq!(attrs.position, Prompt);
        assert_eq!(attrs.complete.unwrap().len(), 2);
        let attrs =
            ToolAttrs::parse(quote!(uri = "x://{a}", mime_type = "text/plain"), Resource).unwrap();
        assert_eq!(attrs.uri.unwrap().value(), "x://{a}");
        let err = ToolAttrs::parse(quote!(alias = "x"), Prompt).err().unwrap();
        assert_eq!(
            err.to_string(),
            "unknown #[prompt] key `alias` (a #[tool] key); valid keys are: name, title, \
             description, tags, local, scopes, timeout, api, complete, crate"
        );
        let err = ToolAttrs::parse(quote!(uri = "x://a"), Function)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "#[tool] key `uri` applies to #[resource] only"
        );
        let err = ToolAttrs::parse(quote!(complete(a = f)), Service)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "#[tool_service] key `complete` applies to #[prompt] and #[resource] only"
        );
        let err = ToolAttrs::parse(quote!(complete(a = f, a = g)), Prompt)
            .err()
            .unwrap();
        assert_eq!(err.to_string(), "`a` is completed more than once");
        let err = ToolAttrs::parse(quote!(complete = f), Resource)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("takes a list of `argument = function`")
        );
    }

    #[test]
    fn lifecycle_keys_are_method_flags() {
        let attrs = ToolAttrs::parse(quote!(setup), Method).unwrap();
        assert!(attrs.setup.is_some() && attrs.dispose.is_none());
        assert_eq!(attrs.given.len(), 1);
        let err = ToolAttrs::parse(quote!(dispose), Service).err().unwrap();
        assert_eq!(
            err.to_string(),
            "#[tool_service] does not take `dispose`: mark the method with #[tool(dispose)]"
        );
        let err = ToolAttrs::parse(quote!(setup), Function).err().unwrap();
        assert!(
            err.to_string()
                .contains("applies to methods of a #[tool_service]")
        );
    }

    #[test]
    fn flag_rejects_a_value() {
        let err = ToolAttrs::parse(quote!(args = true), Function)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "#[tool] key `args` takes no value: write `args`"
        );
    }
}
