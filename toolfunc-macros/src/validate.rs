//! Semantic checks on the model, as their own pass: every mistake is collected so one
//! build reports them all.

use syn::{FnArg, Type, visit::Visit};

use crate::errors::Errors;
use crate::model::{
    Hook, ID_VERBS, KindMethod, Method, Output, ParamKind, Service, ToolFn, wire_name,
};

/// The checks of a `#[tool]` function.
pub(crate) fn tool(tool: &ToolFn, errors: &mut Errors) {
    if let Some(receiver) = &tool.receiver {
        errors.push(syn::Error::new_spanned(
            receiver.self_token,
            named(
                tool,
                "#[tool] applies to free functions and cannot take `self`; move the function \
                 out of the impl block, or put #[tool_service] on the impl block to expose \
                 its methods",
            ),
        ));
    }
    signature(tool, errors);
    scopes(&tool.attrs, errors);
}

/// The checks of a `#[prompt]` function: those of a tool, what it returns, and
/// that each completed argument is one of its arguments.
pub(crate) fn prompt(prompt: &ToolFn, errors: &mut Errors) {
    tool(prompt, errors);
    prompt_checks(prompt, errors);
}

/// What a `#[prompt]` function or method returns, and its completed arguments.
fn prompt_checks(prompt: &ToolFn, errors: &mut Errors) {
    kind_output(
        prompt,
        "a #[prompt] returns its messages: a `String`, a `PromptMessage`, a \
         `Vec<PromptMessage>` or a `PromptResult` (or a `Result` of one)",
        errors,
    );
    let names: Vec<String> = prompt.args().map(wire_name).collect();
    for (argument, _) in prompt.attrs.complete.iter().flatten() {
        if !is_argument(prompt, argument) {
            errors.push(syn::Error::new_spanned(
                argument,
                format!(
                    "`{argument}` is not an argument of this #[prompt]; {}",
                    listed("its arguments are", &names)
                ),
            ));
        }
    }
}

/// The checks of a `#[resource]` function: those of a tool, what it returns, and
/// its URI: it parses, each variable is a parameter, each parameter that must be
/// given is a variable, each completed name is a variable.
pub(crate) fn resource(resource: &ToolFn, errors: &mut Errors) {
    tool(resource, errors);
    resource_checks(resource, errors);
}

/// What a `#[resource]` function or method returns, and its URI.
fn resource_checks(resource: &ToolFn, errors: &mut Errors) {
    kind_output(
        resource,
        "a #[resource] returns its contents: a `String` (text), a `Vec<u8>` (a \
         blob), a `toolfunc::content::Resource` or a `Vec` of them, or any \
         `Serialize` value (its JSON text), or a `Result` of one",
        errors,
    );
    let Some(uri) = &resource.attrs.uri else {
        // A method is named; a function's own attribute is the call site.
        let span = if resource.receiver.is_some() {
            resource.item.sig.ident.span()
        } else {
            proc_macro2::Span::call_site()
        };
        errors.push(syn::Error::new(
            span,
            "#[resource] needs its URI: `#[resource(uri = \"file:///logs/{date}\")]`, \
             whose `{variables}` are the function's parameters",
        ));
        return;
    };
    let variables = match crate::uri::variables(&uri.value()) {
        Ok(variables) => variables,
        Err(why) => {
            errors.push(syn::Error::new_spanned(
                uri,
                format!("#[resource] key `uri` is not a URI template this crate reads: {why}"),
            ));
            return;
        }
    };
    let names: Vec<String> = resource.args().map(wire_name).collect();
    for variable in &variables {
        if !names.contains(variable) {
            errors.push(syn::Error::new_spanned(
                uri,
                format!(
                    "the URI template has `{{{variable}}}`, which is not a parameter of \
                     `{}`: add a parameter `{variable}: String`",
                    resource.item.sig.ident
                ),
            ));
        }
    }
    for param in resource.args() {
        let name = wire_name(param);
        if variables.contains(&name) {
            continue;
        }
        if variables.is_empty() {
            errors.push(syn::Error::new_spanned(
                &param.ident,
                format!(
                    "a fixed resource (its URI has no `{{variable}}`) takes no parameters \
                     besides `&Ctx`: put `{{{name}}}` in the URI to make it a template"
                ),
            ));
        } else if !is_optional(param) {
            errors.push(syn::Error::new_spanned(
                &param.ident,
                format!(
                    "the parameter `{name}` is not in the URI template, which gives every \
                     argument of a read: add `{{{name}}}` to `uri`, or make it an `Option`"
                ),
            ));
        }
    }
    for (variable, _) in resource.attrs.complete.iter().flatten() {
        if !variables.iter().any(|v| variable == v) {
            errors.push(syn::Error::new_spanned(
                variable,
                format!(
                    "`{variable}` is not a variable of the URI template; {}",
                    listed("its variables are", &variables)
                ),
            ));
        }
    }
}

/// What a prompt or a resource returns: a value at once, never a stream or nothing.
fn kind_output(model: &ToolFn, expected: &str, errors: &mut Errors) {
    let wrong = matches!(
        model.output,
        Output::Unit | Output::Result { ok: None, .. } | Output::Stream(_) | Output::Answer { .. }
    );
    if !wrong {
        return;
    }
    let message = match model.output {
        Output::Stream(_) | Output::Answer { .. } => format!("{expected}, at once, not a stream"),
        _ => expected.to_owned(),
    };
    match &model.item.sig.output {
        syn::ReturnType::Type(_, ty) => errors.push(syn::Error::new_spanned(ty, message)),
        syn::ReturnType::Default => {
            errors.push(syn::Error::new_spanned(&model.item.sig.ident, message));
        }
    }
}

/// Whether `ident` names an argument of `model`: by its identifier or its name in
/// the arguments object.
fn is_argument(model: &ToolFn, ident: &syn::Ident) -> bool {
    let wanted = syn::ext::IdentExt::unraw(ident).to_string();
    model.args().any(|param| {
        syn::ext::IdentExt::unraw(&param.ident) == wanted || wire_name(param) == wanted
    })
}

/// `Option<T>`, or a parameter with `#[serde(default)]`: one a call may leave out.
fn is_optional(param: &crate::model::Param) -> bool {
    if let Type::Path(path) = &param.ty
        && path.qself.is_none()
        && path
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Option")
    {
        return true;
    }
    let mut default = false;
    for attr in param.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        // A `serde` attribute that does not parse is reported by serde itself.
        let _ = attr.parse_nested_meta(|meta| {
            default |= meta.path.is_ident("default");
            if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
            Ok(())
        });
    }
    default
}

/// "`what`: a, b", or "it has none".
fn listed(what: &str, names: &[String]) -> String {
    if names.is_empty() {
        "it has none".to_owned()
    } else {
        format!("{what}: {}", names.join(", "))
    }
}

/// A message written for `#[tool]`, naming the attribute `tool` was given instead
/// (`#[prompt]`, `#[resource]`).
fn named(tool: &ToolFn, message: &str) -> String {
    message.replace("#[tool]", tool.attrs.position.attr())
}

/// Each `scopes` entry is an OAuth scope token (RFC 6749 §3.3): one word of visible
/// ASCII, without `"` or `\`.
fn scopes(attrs: &crate::attr::ToolAttrs, errors: &mut Errors) {
    for scope in attrs.scopes.iter().flatten() {
        let value = scope.value();
        let ok = !value.is_empty()
            && value
                .bytes()
                .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E));
        if !ok {
            errors.push(syn::Error::new_spanned(
                scope,
                "an OAuth scope is one word of visible ASCII characters, without spaces, \
                 `\"` or `\\` (list several as `scopes = [\"files:read\", \"files:write\"]`)",
            ));
        }
    }
}

/// The checks of a `#[tool_service]` impl block and of each of its methods.
pub(crate) fn service(service: &Service, errors: &mut Errors) {
    let item = &service.item;
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
    if service.type_ident().is_none() {
        errors.push(syn::Error::new_spanned(
            &item.self_ty,
            "#[tool_service] needs a named type (`impl MyService { .. }`)",
        ));
    }
    if let Some(name) = &service.attrs.name
        && name.value().is_empty()
    {
        errors.push(syn::Error::new_spanned(
            name,
            "#[tool_service] `name` cannot be empty",
        ));
    }
    scopes(&service.attrs, errors);
    for (i, method) in service.methods.iter().enumerate() {
        let receiver_ok = receiver(&method.model, errors);
        signature(&method.model, errors);
        scopes(&method.model.attrs, errors);
        if receiver_ok && matches!(method.model.output, Output::Stream(_)) && !method.by_arc() {
            errors.push(syn::Error::new_spanned(
                &method.model.item.sig.inputs[0],
                "a streaming service method takes `self: Arc<Self>`, so that its stream \
                 can keep the service alive",
            ));
        }
        if service.methods[..i].iter().any(|m| m.act == method.act) {
            errors.push(syn::Error::new_spanned(
                &method.model.item.sig.ident,
                format!("two methods of this service have the act `{}`", method.act),
            ));
        }
        rest_id(method, errors);
    }
    for (i, hook) in service.hooks.iter().enumerate() {
        lifecycle_hook(hook, &service.hooks[..i], errors);
    }
    for kind in &service.kinds {
        kind_method(kind, errors);
    }
    if service.methods.is_empty() && !errors.is_some() {
        errors.push(syn::Error::new_spanned(
            &item.self_ty,
            "#[tool_service] found no method to expose; add a method taking `&self`",
        ));
    }
}

/// The checks of a `#[prompt]` or `#[resource]` method: those of its kind, a
/// `&self` (or `self: Arc<Self>`) receiver, no `#[tool(...)]` beside it, and no
/// key that only a free function takes.
fn kind_method(kind: &KindMethod, errors: &mut Errors) {
    let model = &kind.model;
    let attr = kind.position.attr();
    if let Some(tool_attr) = &kind.tool_attr {
        errors.push(syn::Error::new_spanned(
            tool_attr,
            format!(
                "a {attr} method is a {} of the service, not one of its acts: \
                 put its keys in {attr} and leave out #[tool(...)]",
                if kind.position == crate::attr::Position::Prompt {
                    "prompt"
                } else {
                    "resource"
                }
            ),
        ));
    }
    // A sync method is told `local` is for `async fn` by the signature's check.
    if let Some(local) = model.attrs.local
        && model.is_async()
    {
        errors.push(syn::Error::new(
            local,
            format!(
                "a {attr} method of a service cannot be `local`: the service is shared \
                 between threads"
            ),
        ));
    }
    if let Some(krate) = &model.attrs.krate {
        errors.push(syn::Error::new_spanned(
            krate,
            format!("`crate` goes on #[tool_service], which the {attr} method shares"),
        ));
    }
    receiver(model, errors);
    signature(model, errors);
    scopes(&model.attrs, errors);
    if kind.position == crate::attr::Position::Prompt {
        prompt_checks(model, errors);
    } else {
        resource_checks(model, errors);
    }
}

/// The checks of a `#[tool(setup)]` or `#[tool(dispose)]` method, given the hooks
/// declared before it: one of each kind, a `&self` (or `self: Arc<Self>`) receiver
/// and nothing else, `()` or `Result<(), E>` out, no other key.
fn lifecycle_hook(hook: &Hook, earlier: &[Hook], errors: &mut Errors) {
    let model = &hook.model;
    let key = hook.kind.key();
    let sig = &model.item.sig;
    // A method marked both is reported as that, not as a second setup too.
    let both = model.attrs.setup.is_some() && model.attrs.dispose.is_some();
    if let Some(first) = earlier.iter().find(|h| h.kind == hook.kind)
        && !both
    {
        errors.push(syn::Error::new_spanned(
            &sig.ident,
            format!(
                "this service already has a #[tool({key})] method, `{}`; a service has \
                 one: call the others from it",
                first.model.item.sig.ident
            ),
        ));
    }
    for (given, span) in &model.attrs.given {
        if *given != key {
            let message = if matches!(*given, "setup" | "dispose") {
                "a method is either #[tool(setup)] or #[tool(dispose)], not both".to_owned()
            } else {
                format!("a #[tool({key})] method is not an act: key `{given}` has no effect on it")
            };
            errors.push(syn::Error::new(*span, message));
        }
    }
    receiver(model, errors);
    header(model, errors);
    if let Some(param) = model.params.first() {
        errors.push(syn::Error::new_spanned(
            &param.ident,
            format!(
                "a #[tool({key})] method takes no parameters besides `&self` (or \
                 `self: Arc<Self>`): the registry runs it with no arguments and no call \
                 context"
            ),
        ));
    }
    let returns_unit = matches!(model.output, Output::Unit | Output::Result { ok: None, .. });
    if let (false, syn::ReturnType::Type(_, ty)) = (returns_unit, &sig.output) {
        let on_error = if key == "setup" {
            "refuses the registration"
        } else {
            "is reported by `unregister_async` and `clear`"
        };
        errors.push(syn::Error::new_spanned(
            ty,
            format!(
                "a #[tool({key})] method returns nothing or `Result<(), E>` (an error \
                 {on_error}): it has no result to give"
            ),
        ));
    }
}

/// `&self` or `self: Arc<Self>`; any other receiver (or none) is an error.
fn receiver(model: &ToolFn, errors: &mut Errors) -> bool {
    let sig = &model.item.sig;
    let Some(FnArg::Receiver(receiver)) = sig.inputs.first() else {
        errors.push(syn::Error::new_spanned(
            &sig.ident,
            "a #[tool_service] method takes `&self` (or `self: Arc<Self>`); \
             mark other functions #[tool(skip)] or move them to another impl block",
        ));
        return false;
    };
    let message = if receiver.colon_token.is_some() {
        if model.by_arc() {
            return true;
        }
        errors.push(syn::Error::new_spanned(
            &receiver.ty,
            "a #[tool_service] method takes `&self` or `self: Arc<Self>`",
        ));
        return false;
    } else if receiver.reference.is_none() {
        "a #[tool_service] method cannot take `self` by value: the service is shared \
         by every call; take `&self` (or `self: Arc<Self>`)"
    } else if receiver.mutability.is_some() {
        "a #[tool_service] method cannot take `&mut self`: calls run concurrently; \
         take `&self` and keep mutable state behind a Mutex"
    } else {
        return true;
    };
    errors.push(syn::Error::new_spanned(receiver, message));
    false
}

/// The HTTP routes of `get`, `put`, `delete` and `patch` carry the resource id
/// (`GET /users/1`), which arrives as the argument `id`: without a parameter of
/// that name the route answers 400 and `?user_id=1` runs `list` instead.
fn rest_id(method: &Method, errors: &mut Errors) {
    let model = &method.model;
    if !ID_VERBS.contains(&method.act.as_str()) || model.attrs.args.is_some() {
        return;
    }
    if model.args().any(|param| wire_name(param) == "id") {
        return;
    }
    let verb = &method.act;
    match model.args().next() {
        Some(param) => errors.push(syn::Error::new_spanned(
            &param.ident,
            format!(
                "the REST verb `{verb}` receives the resource id as the argument `id`; \
                 name this parameter `id`, or mark it #[serde(rename = \"id\")]"
            ),
        )),
        None => errors.push(syn::Error::new_spanned(
            &model.item.sig.ident,
            format!(
                "the REST verb `{verb}` receives the resource id as the argument `id`; \
                 add a parameter `id`, or name the method otherwise to make it an RPC act"
            ),
        )),
    }
}

/// Generics, `unsafe` and variadics: what no tool function or hook may have.
fn header(tool: &ToolFn, errors: &mut Errors) {
    let sig = &tool.item.sig;
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            named(
                tool,
                "#[tool] functions cannot be generic: a tool needs one concrete JSON Schema \
             per parameter; use concrete types",
            ),
        ));
    } else if let Some(clause) = &sig.generics.where_clause {
        errors.push(syn::Error::new_spanned(
            clause,
            named(tool, "#[tool] functions cannot have a where clause"),
        ));
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            named(tool, "#[tool] cannot be used on an `unsafe fn`: a tool is called with untrusted arguments"),
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(syn::Error::new_spanned(
            variadic,
            named(tool, "#[tool] functions cannot be variadic"),
        ));
    }
}

/// The checks shared by functions and methods: the signature, the parameters, the
/// keys that depend on them, the output.
fn signature(tool: &ToolFn, errors: &mut Errors) {
    header(tool, errors);

    let mut ctx_seen = false;
    for param in &tool.params {
        match param.kind {
            ParamKind::Ctx { .. } => {
                if ctx_seen {
                    errors.push(syn::Error::new_spanned(
                        &param.ty,
                        named(
                            tool,
                            "#[tool] functions take at most one context parameter; remove this one",
                        ),
                    ));
                }
                ctx_seen = true;
            }
            ParamKind::Arg => check_owned(tool, &param.ty, errors),
        }
    }

    for capability in tool.attrs.needs_client.iter().flatten() {
        if !["sampling", "elicitation", "roots"].contains(&capability.value().as_str()) {
            errors.push(syn::Error::new_spanned(
                capability,
                named(
                    tool,
                    "#[tool] key `needs_client` names what a caller answers: \"sampling\", \
                 \"elicitation\" or \"roots\"",
                ),
            ));
        }
    }
    if let Some((0, span)) = tool.attrs.timeout
        && tool.attrs.background.is_none()
    {
        errors.push(syn::Error::new(
            span,
            named(
                tool,
                "#[tool] key `timeout` must be longer than zero (a zero soft deadline, \
             `timeout = \"0s\", background`, makes every remote call a task at once)",
            ),
        ));
    }
    if let Some((span, _)) = tool.attrs.background
        && tool.attrs.timeout.is_none()
    {
        errors.push(syn::Error::new(
            span,
            named(
                tool,
                "#[tool] key `background` needs a `timeout`, the soft deadline after which a \
             remote call moves to the background: `#[tool(timeout = \"2s\", background)]`",
            ),
        ));
    }
    output_keys(tool, errors);

    if let Some(span) = tool.attrs.args {
        if let Some(deny) = tool.attrs.deny_unknown_fields {
            errors.push(syn::Error::new(
                deny,
                named(
                    tool,
                    "#[tool] key `deny_unknown_fields` has no effect with `args`: \
                 put #[serde(deny_unknown_fields)] on the arguments struct",
                ),
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
            named(tool, "#[tool] `name` cannot be empty"),
        ));
    }
}

/// The keys that depend on the return type and the function's kind: `stream`,
/// `local`.
fn output_keys(tool: &ToolFn, errors: &mut Errors) {
    if let Some(span) = tool.attrs.stream {
        match tool.output {
            Output::Answer { .. } => errors.push(syn::Error::new(
                span,
                named(
                    tool,
                    "#[tool] key `stream` has no effect on a tool returning `Answer`: an \
                 `Answer` is a stream or one value, as each call asks (`Answer::items` \
                 streams); drop the key",
                ),
            )),
            Output::Unit | Output::Result { ok: None, .. } => errors.push(syn::Error::new(
                span,
                named(
                    tool,
                    "#[tool] key `stream` says the return type is a stream: return it \
                 (`-> MyStream` or `-> Result<MyStream, E>`, where `MyStream: Stream`)",
                ),
            )),
            _ => {}
        }
    }
    if let Some(span) = tool.attrs.local {
        if !tool.is_async() {
            errors.push(syn::Error::new(
                span,
                named(
                    tool,
                    "#[tool] key `local` applies to `async fn` tools (a sync tool runs where it \
                 is called and never moves between threads)",
                ),
            ));
        } else if matches!(tool.output, Output::Stream(_) | Output::Answer { .. }) {
            errors.push(syn::Error::new(
                span,
                named(
                    tool,
                    "#[tool] key `local` does not apply to streaming tools yet: collect the \
                 items into a `Vec`, or keep the stream `Send`",
                ),
            ));
        }
    }
}

/// The return type: a nameable result, or a stream with a nameable item.
fn validate_output(tool: &ToolFn, errors: &mut Errors) {
    if tool.attrs.position.is_kind()
        && matches!(tool.output, Output::Stream(_) | Output::Answer { .. })
    {
        // Reported by `kind_output`.
        return;
    }
    if let Output::Stream(stream) = &tool.output {
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
                named(
                    tool,
                    "#[tool] needs a nameable stream item type to build its result schema",
                ),
            ));
        }
    } else if let syn::ReturnType::Type(_, ty) = &tool.item.sig.output
        && let Some(impl_trait) = find_impl_trait(ty)
    {
        errors.push(syn::Error::new_spanned(
            impl_trait,
            named(
                tool,
                "#[tool] needs a nameable return type to build its result schema; \
             return a concrete type",
            ),
        ));
    }
}

/// Arguments are deserialised from JSON the tool does not keep: they must own their
/// data, at any depth (`Option<&str>` no more than `&str`).
fn check_owned(tool: &ToolFn, ty: &Type, errors: &mut Errors) {
    if let Some(impl_trait) = find_impl_trait(ty) {
        errors.push(syn::Error::new_spanned(
            impl_trait,
            named(
                tool,
                "#[tool] parameters cannot be or contain `impl Trait`: use a concrete type",
            ),
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
        let message = named(
            tool,
            &format!("#[tool] parameters must be owned types{hint}"),
        );
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
    use crate::attr::{Position, ToolAttrs};
    use crate::model::Service;
    use syn::parse_quote;

    fn check_service(item: syn::ItemImpl) -> Vec<String> {
        let mut errors = Errors::default();
        let model = Service::new(ToolAttrs::default(), item, &mut errors);
        service(&model, &mut errors);
        errors
            .finish()
            .err()
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn rest_verbs_need_an_id() {
        let errors = check_service(parse_quote! {
            impl Users {
                fn get(&self, user_id: u32) {}
                fn put(&self, #[serde(rename = "id")] key: u32, val: String) {}
                fn delete(&self) {}
                fn list(&self, user_id: u32) {}
            }
        });
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("the REST verb `get` receives the resource id"));
        assert!(errors[1].contains("add a parameter `id`"));
    }

    #[test]
    fn a_receiver_is_one_error() {
        let errors = check(
            parse_quote!(
                fn f(&self, a: u8) -> u8 {
                    a
                }
            ),
            ToolAttrs::default(),
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    fn check(item: syn::ItemFn, attrs: ToolAttrs) -> Vec<String> {
        let mut errors = Errors::default();
        let model = ToolFn::new(attrs, item, &mut errors);
        tool(&model, &mut errors);
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
        let attrs = ToolAttrs::parse(quote::quote!(args), Position::Function).unwrap();
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
