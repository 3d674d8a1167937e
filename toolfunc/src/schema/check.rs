//! Checking arguments against a JSON Schema given as JSON: the `jsonschema` crate
//! (draft 2020-12 and earlier, `pattern` and `format` enforced), behind the bounds of
//! [`super::bound`] and [`super::limits`], with its errors reworded into this crate's messages.

use std::collections::HashMap;
use std::fmt;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use super::bound;
use super::limits::{self, MAX_DEPTH};
use super::locate::{type_label, type_name};
use super::push_token;
use crate::error::ToolError;

/// Checks `value` against `schema` for tools whose schema is given as JSON rather than
/// derived from a Rust type (typed tools are checked by deserialisation instead).
///
/// Every keyword of JSON Schema 2020-12 is evaluated (earlier drafts when `$schema`
/// names one), `pattern`, `patternProperties` and `format` included; numbers compare by
/// value (`1` equals `1.0`). The schema is compiled on every call: to check many
/// values, compile it once with [`Validator::new`].
///
/// The work is bounded: a value nested deeper than 128 levels is refused with an
/// `ARGUMENTS` error at its path before it is checked, and a schema that could check
/// one value against more than a thousand subschemas (recursion through several
/// branches that read the same input, or a `$ref` loop that never descends into the
/// value) is refused with a `DEFINITION` error. A `$ref` to nothing fails only the
/// values that reach it.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
/// assert!(toolfunc::schema::validate(&schema, &json!({"n": 3})).is_ok());
/// let err = toolfunc::schema::validate(&schema, &json!({"n": "3"})).unwrap_err();
/// assert_eq!(err.to_string(), "invalid arguments at /n: expected integer, found string");
/// ```
pub fn validate(schema: &Value, value: &Value) -> Result<(), ToolError> {
    Validator::compile(schema).validate(value)
}

/// A JSON Schema compiled once, to check many values; what tools built with
/// [`ToolBuilder::params_schema`](crate::ToolBuilder::params_schema) check their
/// arguments with.
///
/// ```
/// use serde_json::json;
/// let validator = toolfunc::schema::Validator::new(&json!({
///     "type": "object",
///     "properties": {"sku": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"}}
/// }))
/// .unwrap();
/// assert!(validator.validate(&json!({"sku": "AB-12"})).is_ok());
/// let err = validator.validate(&json!({"sku": "ab"})).unwrap_err();
/// assert_eq!(err.to_string(), "invalid arguments at /sku: expected a string matching the pattern `^[A-Z]+-[0-9]+$`");
/// ```
pub struct Validator {
    compiled: Result<Compiled, String>,
    /// The first `$ref` that resolves to nothing, if any.
    dangling: Option<String>,
    accepts_any_object: bool,
}

struct Compiled {
    validator: jsonschema::Validator,
    /// The schema as compiled (dangling `$ref`s replaced by `false`), to word errors
    /// with its own spelling of types.
    schema: Value,
    /// The schema locations whose `$ref` resolved to nothing, and the reference.
    dangling_at: HashMap<String, String>,
}

impl fmt::Debug for Validator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validator")
            .field("schema", &self.compiled.as_ref().map(|c| &c.schema))
            .field("dangling", &self.dangling)
            .finish_non_exhaustive()
    }
}

impl Validator {
    /// Compiles `schema`; a schema that is not valid JSON Schema, refers outside itself
    /// or to nothing, or cannot be checked in bounded work is a `DEFINITION` error.
    pub fn new(schema: &Value) -> Result<Self, ToolError> {
        let validator = Self::compile(schema);
        match validator.definition_error() {
            Some(message) => Err(ToolError::Definition {
                name: String::new(),
                message,
            }),
            None => Ok(validator),
        }
    }

    /// Compiles `schema`. Never fails: a schema that cannot be used is reported by
    /// [`Validator::definition_error`] (and fails every check); unresolvable `$ref`s
    /// fail only the values that reach them.
    pub(crate) fn compile(schema: &Value) -> Self {
        let accepts_any_object = limits::accepts_any_object(schema);
        let analysis = match bound::analyse(schema) {
            Ok(analysis) => analysis,
            Err(reason) => {
                return Self {
                    compiled: Err(reason),
                    dangling: None,
                    accepts_any_object: false,
                };
            }
        };
        let dangling = analysis.dangling.first().map(|(r, _)| r.clone());
        let mut source = schema.clone();
        let mut dangling_at = HashMap::new();
        for (reference, location) in analysis.dangling {
            if let Some(slot) = source.pointer_mut(&location) {
                *slot = Value::Bool(false);
            }
            dangling_at.insert(location, reference);
        }
        let compiled = jsonschema::options()
            .should_validate_formats(true)
            .build(&source)
            .map(|validator| Compiled {
                validator,
                schema: source,
                dangling_at,
            })
            .map_err(|err| {
                let at = err.instance_path().as_str();
                let at = if at.is_empty() { "" } else { " at " };
                format!(
                    "the parameters schema is not a valid JSON Schema{at}{}: {err}",
                    err.instance_path().as_str()
                )
            });
        Self {
            compiled,
            dangling,
            accepts_any_object,
        }
    }

    /// A validator that fails every check with `DEFINITION`, for `reason`.
    pub(crate) fn unusable(reason: String) -> Self {
        Self {
            compiled: Err(reason),
            dangling: None,
            accepts_any_object: false,
        }
    }

    /// Why the schema cannot be used, as a sentence; `None` when it can.
    pub(crate) fn definition_error(&self) -> Option<String> {
        if let Some(reference) = &self.dangling {
            return Some(format!(
                "the parameters schema refers to {reference}, which it does not define"
            ));
        }
        self.compiled.as_ref().err().cloned()
    }

    /// Whether the schema accepts every object (nothing to check per call).
    pub(crate) fn accepts_any_object(&self) -> bool {
        self.accepts_any_object
    }

    /// Checks `value`: an `ARGUMENTS` error with the JSON Pointer of the first failing
    /// value, or a `DEFINITION` error when the schema itself cannot be used.
    pub fn validate(&self, value: &Value) -> Result<(), ToolError> {
        let compiled = match &self.compiled {
            Ok(compiled) => compiled,
            Err(message) => {
                return Err(ToolError::Definition {
                    name: String::new(),
                    message: message.clone(),
                });
            }
        };
        if let Some(path) = limits::too_deep(value) {
            return Err(ToolError::arguments(
                path,
                format!("the value is nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        if compiled.validator.is_valid(value) {
            return Ok(());
        }
        match compiled.validator.validate(value) {
            Ok(()) => Ok(()),
            Err(err) => {
                let (path, message) = compiled.describe(&err);
                Err(ToolError::arguments(path, message))
            }
        }
    }
}

impl Compiled {
    /// The JSON Pointer and this crate's wording of an error.
    #[cold]
    fn describe(&self, err: &jsonschema::ValidationError<'_>) -> (String, String) {
        use ValidationErrorKind as K;
        let mut path = err.instance_path().as_str().to_owned();
        let message = match err.kind() {
            K::Type { kind } => {
                let expected = self
                    .schema
                    .pointer(err.schema_path().as_str())
                    .filter(|types| types.is_string() || types.is_array())
                    .map_or_else(
                        || match kind {
                            TypeKind::Single(t) => t.to_string(),
                            TypeKind::Multiple(ts) => ts
                                .iter()
                                .map(|t| t.to_string())
                                .collect::<Vec<_>>()
                                .join(" or "),
                        },
                        type_label,
                    );
                format!("expected {expected}, found {}", type_name(err.instance()))
            }
            K::Enum { options } => format!("expected one of {options}"),
            K::Constant { expected_value } => format!("expected {expected_value}"),
            K::AnyOf { context } | K::OneOfNotValid { context } => {
                // One option: its own error is the clearest message.
                if let [only] = context.as_slice()
                    && let Some(first) = only.first()
                {
                    return self.describe(first);
                }
                let key = if matches!(err.kind(), K::AnyOf { .. }) {
                    "anyOf"
                } else {
                    "oneOf"
                };
                format!("matches none of the {key} options")
            }
            K::OneOfMultipleValid { context } => {
                let matched = context.iter().filter(|errors| errors.is_empty()).count();
                format!("matches {matched} oneOf options, expected exactly one")
            }
            K::Not { .. } => "matches a schema it must not match".to_owned(),
            K::Required { property } => {
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned);
                push_token(&mut path, &name);
                format!("missing required property `{name}`")
            }
            K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
                let name = unexpected.first().map_or("", String::as_str);
                push_token(&mut path, name);
                format!("unknown property `{name}`")
            }
            K::FalseSchema => match self.dangling_at.get(err.schema_path().as_str()) {
                Some(reference) => format!("schema reference {reference} not found"),
                None => "no value is allowed here".to_owned(),
            },
            K::AdditionalItems { limit } => {
                super::push_index(&mut path, *limit);
                "no value is allowed here".to_owned()
            }
            K::UnevaluatedItems { unexpected } => {
                push_token(&mut path, unexpected.first().map_or("", String::as_str));
                "no value is allowed here".to_owned()
            }
            K::MinItems { limit } => format!("expected at least {limit} items"),
            K::MaxItems { limit } => format!("expected at most {limit} items"),
            K::MinLength { limit } => format!("expected at least {limit} characters"),
            K::MaxLength { limit } => format!("expected at most {limit} characters"),
            K::MinProperties { limit } => format!("expected at least {limit} properties"),
            K::MaxProperties { limit } => format!("expected at most {limit} properties"),
            K::Minimum { limit } => format!("expected a number >= {limit}"),
            K::Maximum { limit } => format!("expected a number <= {limit}"),
            K::ExclusiveMinimum { limit } => format!("expected a number > {limit}"),
            K::ExclusiveMaximum { limit } => format!("expected a number < {limit}"),
            K::MultipleOf { multiple_of } => format!("expected a multiple of {multiple_of}"),
            K::Pattern { pattern } => format!("expected a string matching the pattern `{pattern}`"),
            K::Format { format } => format!("expected a valid {format}"),
            K::UniqueItems => "expected unique items".to_owned(),
            K::Contains => "expected an item matching `contains`".to_owned(),
            K::PropertyNames { error } => {
                let (_, inner) = self.describe(error);
                if let Value::String(name) = error.instance().as_ref() {
                    push_token(&mut path, name);
                }
                format!("invalid property name: {inner}")
            }
            _ => err.to_string(),
        };
        (path, message)
    }
}
