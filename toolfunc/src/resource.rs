//! Resources: content a client reads by URI (MCP `resources/list`,
//! `resources/templates/list`, `resources/read`), beside tools and prompts.
//!
//! A resource is a function. Either its URI is fixed (`file:///logs/today`), or it
//! is an [RFC 6570](https://www.rfc-editor.org/rfc/rfc6570) template whose
//! variables are the function's parameters (`file:///logs/{date}`): a read of
//! `file:///logs/2026-12-01` runs it with `date = "2026-12-01"`. Declare one with
//! [`#[resource(uri = "…")]`](macro@crate::resource) or build it at run time with
//! [`ResourceFunc::builder`]; [`Registry::read`](crate::Registry::read) reads it in
//! process, and MCP and HTTP list and read it through the same rules
//! (visibility, scopes, call middleware) as a tool.
//!
//! What the function returns becomes the resource's contents: a string is text, bytes
//! (`Vec<u8>`) are a binary blob, a [`content::Resource`](crate::content::Resource)
//! (or a list of them) is taken as it is, and any other value is its JSON text
//! (`application/json`). A client that subscribed to a URI is told when
//! [`Registry::notify_resource_updated`](crate::Registry::notify_resource_updated)
//! names it.
//!
//! ```
//! use toolfunc::resource::ResourceFunc;
//! use toolfunc::Registry;
//!
//! let logs = ResourceFunc::builder("file:///logs/{date}", "logs")
//!     .description("The log of one day.")
//!     .mime_type("text/plain")
//!     .handler_sync(|_ctx, params| {
//!         Ok(format!("log of {}", params["date"].as_str().unwrap_or_default()))
//!     })
//!     .build()
//!     .unwrap();
//! let registry = Registry::new();
//! registry.register_resource(logs).unwrap();
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let contents = registry.read("file:///logs/2026-12-01").await.unwrap();
//! assert_eq!(contents[0].text.as_deref(), Some("log of 2026-12-01"));
//! assert_eq!(contents[0].mime_type.as_deref(), Some("text/plain"));
//! # });
//! ```

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::complete::{Completer, CompleterSpec, Completers};
use crate::content::Resource;
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::prompt::coerce;
use crate::tool::kind_builder::{KindBuilder, kind_builder_methods};
use crate::tool::{Kind, ToolFunc, ToolRef, ToolSpec};

/// The serialisable metadata of a resource or a resource template: what
/// `resources/list`, `resources/templates/list` and discovery show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceDefinition {
    /// The URI of a fixed resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The URI template of a template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri_template: Option<String>,
    /// Its name.
    pub name: String,
    /// A short human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of its contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Free-form grouping labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The OAuth scopes a caller from outside needs to see and read it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Whether remote callers are offered it (`false`: in process only).
    #[serde(
        rename = "isApi",
        default = "crate::tool::definition::yes",
        skip_serializing_if = "crate::tool::definition::is_true"
    )]
    pub api: bool,
}

impl ResourceDefinition {
    /// The fixed URI, or the template.
    pub fn address(&self) -> &str {
        self.uri
            .as_deref()
            .or(self.uri_template.as_deref())
            .unwrap_or_default()
    }

    /// Whether this is a template.
    pub fn is_template(&self) -> bool {
        self.uri_template.is_some()
    }
}

/// An RFC 6570 URI template of level 1 (`{var}`) and the reserved expansion of
/// level 2 (`{+var}`, whose value may hold `/`), matched against URIs.
///
/// ```
/// use toolfunc::resource::UriTemplate;
///
/// let template = UriTemplate::parse("file:///logs/{date}/{+path}").unwrap();
/// let vars = template.matches("file:///logs/2026-12-01/app/web.log").unwrap();
/// assert_eq!(vars["date"], "2026-12-01");
/// assert_eq!(vars["path"], "app/web.log");
/// assert!(template.matches("https://example.com/").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// A variable; `reserved` for `{+var}`.
    Var {
        name: String,
        reserved: bool,
    },
}

impl UriTemplate {
    /// Parses `template`. `DEFINITION` for an unclosed brace, an empty or repeated
    /// variable, two variables with nothing between them, or an operator other than
    /// `+`.
    pub fn parse(template: &str) -> Result<Self, ToolError> {
        let bad = |message: String| ToolError::Definition {
            name: template.to_owned(),
            message,
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(bad("a `{` is not closed".into()));
            };
            let expression = &rest[open + 1..open + close];
            let (reserved, name) = match expression.strip_prefix('+') {
                Some(name) => (true, name),
                None => (false, expression),
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return Err(bad(format!(
                    "`{{{expression}}}` is not a variable this template syntax takes (`{{name}}` or `{{+name}}`)"
                )));
            }
            if matches!(parts.last(), Some(Part::Var { .. })) {
                return Err(bad(format!(
                    "`{{{expression}}}` follows another variable with nothing between them"
                )));
            }
            if parts
                .iter()
                .any(|p| matches!(p, Part::Var { name: n, .. } if n == name))
            {
                return Err(bad(format!("the variable `{name}` appears twice")));
            }
            parts.push(Part::Var {
                name: name.to_owned(),
                reserved,
            });
            rest = &rest[open + close + 1..];
        }
        if rest.contains('}') {
            return Err(bad("a `}` has no `{`".into()));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether it has any variable (a template without one is a fixed URI).
    pub fn has_variables(&self) -> bool {
        self.variables().next().is_some()
    }

    /// The names of its variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The value of each variable when `uri` is one this template makes
    /// (percent-decoded); `None` otherwise. A `{var}` takes unreserved characters
    /// and percent-escapes only (no `/`); a `{+var}` anything up to the literal that
    /// follows it.
    pub fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        let mut vars = Map::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Var { name, reserved } => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) if *reserved => rest.find(next.as_str())?,
                        _ if *reserved => rest.len(),
                        _ => rest
                            .find(|c: char| {
                                !(c.is_ascii_alphanumeric()
                                    || matches!(c, '-' | '.' | '_' | '~' | '%'))
                            })
                            .unwrap_or(rest.len()),
                    };
                    if end == 0 {
                        return None;
                    }
                    vars.insert(name.clone(), Value::String(percent_decode(&rest[..end])?));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Decodes `%XX` escapes; `None` for a broken escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A registered resource or resource template: its definition, the function that
/// reads it, and the completers of a template's variables. Cloning it shares them.
#[derive(Clone)]
pub struct ResourceFunc {
    pub(crate) definition: Arc<ResourceDefinition>,
    pub(crate) template: Option<UriTemplate>,
    pub(crate) tool: ToolRef,
    pub(crate) completers: Completers,
}

impl fmt::Debug for ResourceFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceFunc")
            .field("uri", &self.definition.address())
            .finish_non_exhaustive()
    }
}

impl ResourceFunc {
    /// Starts a resource made at run time: a fixed one when `uri` has no `{…}`,
    /// else a template whose variables the handler is given as string parameters.
    pub fn builder(uri: impl Into<String>, name: impl Into<String>) -> ResourceBuilder {
        ResourceBuilder {
            uri: uri.into(),
            mime_type: None,
            parts: KindBuilder::new(name.into()),
        }
    }

    /// A resource read by `tool`: at `uri` (fixed, or a template whose variables are
    /// the tool's parameters), with the tool's name, description, tags and scopes.
    /// `DEFINITION` when the template does not parse, a variable is not a parameter
    /// of the tool, or the tool requires a parameter the URI does not give. How
    /// `#[resource]` is built.
    pub fn from_tool(
        uri: &str,
        mime_type: Option<&str>,
        tool: ToolFunc,
    ) -> Result<Self, ToolError> {
        Self::with_completers(uri, mime_type, tool, Completers::default())
    }

    pub(crate) fn with_completers(
        uri: &str,
        mime_type: Option<&str>,
        mut tool: ToolFunc,
        completers: Completers,
    ) -> Result<Self, ToolError> {
        let template = UriTemplate::parse(uri)?;
        let def = tool.definition();
        let bad = |message: String| ToolError::Definition {
            name: def.name.clone(),
            message,
        };
        let properties = def.params.get("properties").and_then(Value::as_object);
        for var in template.variables() {
            if properties.is_none_or(|p| !p.contains_key(var)) {
                return Err(bad(format!(
                    "the URI template `{uri}` has `{{{var}}}`, which is not a parameter"
                )));
            }
        }
        if let Some(required) = def.params.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !template.variables().any(|v| v == name) {
                    return Err(bad(format!(
                        "the parameter `{name}` is required, and the URI `{uri}` does not give it"
                    )));
                }
            }
        }
        for name in completers.names() {
            if !template.variables().any(|v| v == name) {
                return Err(bad(format!(
                    "a completer is given for `{name}`, which is not a variable of `{uri}`"
                )));
            }
        }
        let is_template = template.has_variables();
        let definition = ResourceDefinition {
            uri: (!is_template).then(|| uri.to_owned()),
            uri_template: is_template.then(|| uri.to_owned()),
            name: def.name.clone(),
            title: def.title.clone(),
            description: def.description.clone(),
            mime_type: mime_type.map(str::to_owned),
            tags: def.tags.clone(),
            scopes: def.scopes.clone(),
            api: def.api,
        };
        tool.kind = Kind::Resource;
        Ok(Self {
            definition: Arc::new(definition),
            template: is_template.then_some(template),
            tool: ToolRef::shared(tool),
            completers,
        })
    }

    /// The resource's definition.
    pub fn definition(&self) -> &ResourceDefinition {
        &self.definition
    }

    /// The fixed URI, or the template.
    pub fn address(&self) -> &str {
        self.definition.address()
    }

    /// The template, for a template.
    pub fn template(&self) -> Option<&UriTemplate> {
        self.template.as_ref()
    }

    /// The completer of a template's variable, when it has one.
    pub fn completer(&self, variable: &str) -> Option<&Completer> {
        self.completers.get(variable)
    }

    /// The function that reads it, as a tool (what call middleware sees).
    pub(crate) fn tool(&self) -> &ToolRef {
        &self.tool
    }

    /// The function's arguments for a read of `uri`: none for a fixed resource (the
    /// URI is its own), the variables for a template that makes `uri`.
    pub(crate) fn arguments(&self, uri: &str) -> Option<Value> {
        match &self.template {
            None => (self.definition.uri.as_deref() == Some(uri)).then(|| json!({})),
            Some(template) => template
                .matches(uri)
                .map(|vars| coerce(&self.tool.definition().params, Value::Object(vars))),
        }
    }

    /// The contents of a read of `uri`, from what the function returned.
    pub(crate) fn contents(&self, uri: &str, value: Value) -> Result<Vec<Resource>, ToolError> {
        contents_of(uri, self.definition.mime_type.as_deref(), value)
    }
}

/// What a resource's function returned, as contents at `uri`.
pub(crate) fn contents_of(
    uri: &str,
    mime_type: Option<&str>,
    value: Value,
) -> Result<Vec<Resource>, ToolError> {
    let with_type = |mut resource: Resource, fallback: &str| {
        if resource.mime_type.is_none() {
            resource.mime_type = Some(mime_type.unwrap_or(fallback).to_owned());
        }
        resource
    };
    let one = |value: Value| -> Result<Resource, ToolError> {
        let Value::Object(mut object) = value else {
            return Err(ToolError::Output {
                path: None,
                message: "a resource answered with a list holding something other than contents"
                    .into(),
            });
        };
        object
            .entry("uri")
            .or_insert_with(|| Value::String(uri.to_owned()));
        let resource: Resource =
            serde_json::from_value(Value::Object(object)).map_err(|err| ToolError::Output {
                path: None,
                message: format!("a resource answered with contents that do not read: {err}"),
            })?;
        if resource.text.is_none() && resource.blob.is_none() {
            return Err(ToolError::Output {
                path: None,
                message: "resource contents need `text` or `blob`".into(),
            });
        }
        Ok(resource)
    };
    Ok(match value {
        Value::String(text) => vec![with_type(Resource::from_text(uri, text), "text/plain")],
        Value::Array(items) if items.iter().all(Value::is_u64) && !items.is_empty() => {
            let bytes: Option<Vec<u8>> = items
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect();
            match bytes {
                Some(bytes) => vec![with_type(
                    Resource::from_bytes(uri, bytes),
                    "application/octet-stream",
                )],
                None => vec![json_text(uri, &Value::Array(items))],
            }
        }
        Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => items
            .into_iter()
            .map(|item| one(item).map(|r| with_type(r, "text/plain")))
            .collect::<Result<_, _>>()?,
        Value::Object(ref object) if object.contains_key("text") || object.contains_key("blob") => {
            vec![with_type(one(value)?, "text/plain")]
        }
        other => vec![json_text(uri, &other)],
    })
}

fn json_text(uri: &str, value: &Value) -> Resource {
    Resource::from_text(uri, value.to_string()).with_mime_type("application/json")
}

/// Builds a [`ResourceFunc`] at run time. Start with [`ResourceFunc::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct ResourceBuilder {
    uri: String,
    mime_type: Option<String>,
    parts: KindBuilder,
}

impl fmt::Debug for ResourceBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceBuilder")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

impl ResourceBuilder {
    kind_builder_methods! {
        for: "What it is.",
        caller: "The OAuth scopes a caller from outside needs to see and read it.",
        complete: "Completes the template's variable `argument` with `completer`.",
        handler: "Reads the resource with an async function of the template's variables (an \
                  object of strings; empty for a fixed resource).",
        handler_sync: "Reads the resource with a sync function of the template's variables.",
    }

    /// The MIME type of its contents.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Builds the resource. `DEFINITION` when it has no handler or its URI template
    /// does not parse.
    pub fn build(self) -> Result<ResourceFunc, ToolError> {
        let template = UriTemplate::parse(&self.uri)?;
        let mut properties = Map::new();
        for var in template.variables() {
            properties.insert(var.to_owned(), json!({"type": "string"}));
        }
        let required: Vec<&str> = template.variables().collect();
        let params = json!({
            "type": "object",
            "properties": properties,
            "required": required,
        });
        let order = template.variables().map(str::to_owned).collect();
        let (tool, completers) = self.parts.build("resource", params, order)?;
        ResourceFunc::with_completers(&self.uri, self.mime_type.as_deref(), tool, completers)
    }
}

/// What `#[resource]` submits to the global registry.
#[doc(hidden)]
pub struct ResourceSpec {
    pub uri: &'static str,
    pub mime_type: Option<&'static str>,
    pub tool: ToolSpec,
    pub completers: &'static [CompleterSpec],
}

inventory::collect!(ResourceSpec);

impl ResourceSpec {
    pub(crate) fn build(&self) -> Result<ResourceFunc, ToolError> {
        let completers = Completers::of(self.completers);
        ResourceFunc::with_completers(self.uri, self.mime_type, self.tool.build()?, completers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_what_they_make_and_nothing_else() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/123/data/more").is_none());
        assert_eq!(
            t.matches("test://template/a%20b/data").unwrap()["id"],
            "a b"
        );
        assert!(t.matches("test://template/%zz/data").is_none());
        for bad in ["x/{", "x/{}", "x/{a}{b}", "x/{a}/{a}", "x/{?q}", "x/}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn contents_read_from_strings_bytes_objects_and_values() {
        let text = contents_of("u://a", None, json!("hi")).unwrap();
        assert_eq!(text[0].mime_type.as_deref(), Some("text/plain"));
        let blob = contents_of("u://a", Some("image/png"), json!([1, 2, 3])).unwrap();
        assert_eq!(blob[0].bytes().unwrap(), [1, 2, 3]);
        assert_eq!(blob[0].mime_type.as_deref(), Some("image/png"));
        let value = contents_of("u://a", None, json!({"n": 1})).unwrap();
        assert_eq!(value[0].mime_type.as_deref(), Some("application/json"));
        assert!(contents_of("u://a", None, json!([{"uri": "u://a"}])).is_err());
    }
}
