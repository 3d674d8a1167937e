//! `ToolError`: the one error type of toolfunc, with stable codes that survive a wire.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Everything that can go wrong when a tool is registered or run.
///
/// Each variant has a stable machine-readable [`code`](ToolError::code) and an HTTP
/// [`status`](ToolError::status). A `ToolError` serialises to
/// `{"code": "...", "message": "...", "data": ...}` and deserialises back into the same
/// variant, so an error raised by a remote tool arrives as the error that was raised.
///
/// | code | variant | status | when |
/// | --- | --- | --- | --- |
/// | `NOT_FOUND` | [`NotFound`](ToolError::NotFound) | 404 | no tool has that name or alias |
/// | `UNKNOWN_ACT` | [`UnknownAct`](ToolError::UnknownAct) | 404 | a service has no method by that `act` |
/// | `ARGUMENTS` | [`Arguments`](ToolError::Arguments) | 400 | arguments do not match the parameter schema |
/// | `FAILED` | [`Failed`](ToolError::Failed) | 500 | the handler returned an error |
/// | `PANICKED` | [`Panicked`](ToolError::Panicked) | 500 | the handler panicked |
/// | `CANCELLED` | [`Cancelled`](ToolError::Cancelled) | 499 | the call was cancelled |
/// | `TIMEOUT` | [`Timeout`](ToolError::Timeout) | 408 | the call ran past its deadline |
/// | `CONFLICT` | [`Conflict`](ToolError::Conflict) | 409 | a name or alias is already taken |
/// | `ASYNC_ONLY` | [`AsyncOnly`](ToolError::AsyncOnly) | 400 | `run_sync` on a tool that can only run asynchronously |
/// | `SEALED` | [`Sealed`](ToolError::Sealed) | 403 | registration on a sealed registry |
/// | `NOT_READY` | [`NotReady`](ToolError::NotReady) | 503 | `run_sync` on a tool whose async setup has not finished |
/// | `BUSY` | [`Busy`](ToolError::Busy) | 429 | `run_sync` on a tool at its concurrency limit |
/// | `AGGREGATE` | [`Aggregate`](ToolError::Aggregate) | first error's | several failures at once (a call and its cleanup, a `clear`) |
/// | `DEFINITION` | [`Definition`](ToolError::Definition) | 500 | a tool definition is invalid (bad schema, no handler) |
/// | `OUTPUT` | [`Output`](ToolError::Output) | 500 | a handler's result could not be serialised |
/// | `BAD_URL` | [`BadUrl`](ToolError::BadUrl) | 400 | a URL given to a client or to [`connect`](crate::connect) cannot be opened |
/// | any other | [`Custom`](ToolError::Custom) | chosen | an application-defined error |
///
/// ```
/// use toolfunc::ToolError;
///
/// let err = ToolError::arguments("/items/2/id", "invalid type: string \"x\", expected u64");
/// assert_eq!(err.code(), "ARGUMENTS");
/// assert_eq!(err.status(), 400);
///
/// let wire = serde_json::to_value(&err).unwrap();
/// assert_eq!(wire["data"]["path"], "/items/2/id");
/// let back: ToolError = serde_json::from_value(wire).unwrap();
/// assert!(matches!(back, ToolError::Arguments { .. }));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool is registered under this name or alias.
    #[non_exhaustive]
    NotFound {
        /// The name that was looked up.
        name: String,
        /// Why, when more is known than that nothing answers to the name: a
        /// `#[tool_service]` declared under it but not registered says how to
        /// register it. On the wire as `data.hint`.
        hint: Option<String>,
    },

    /// A service was called without an `act`, or with one that names none of its
    /// methods.
    UnknownAct {
        /// The service's name.
        tool: String,
        /// The act that was asked for (empty when none was).
        act: String,
    },

    /// The arguments do not match the tool's parameters.
    Arguments {
        /// JSON Pointer (RFC 6901) of the failing value; `""` is the arguments object itself.
        path: String,
        /// What was expected and what was found.
        message: String,
    },

    /// The handler returned an error.
    Failed {
        /// The handler error's message.
        message: String,
        /// Optional structured data for the caller (boxed: errors stay small to move).
        data: Option<Value>,
        /// The handler's error, when it was a `std::error::Error` (not carried over a wire).
        source: Option<Arc<dyn StdError + Send + Sync>>,
    },

    /// The handler panicked. The panic was caught; the registry is unaffected.
    Panicked {
        /// The panic payload, when it was a string.
        message: String,
    },

    /// The call was cancelled before it finished.
    Cancelled {
        /// Why, when the canceller said so.
        reason: Option<String>,
    },

    /// The call ran past its deadline.
    Timeout {
        /// The deadline that expired, in milliseconds, when known.
        after_ms: Option<u64>,
    },

    /// A name or alias is already taken.
    Conflict {
        /// Which name collided with what.
        message: String,
    },

    /// `run_sync` was asked to run a tool that only runs asynchronously.
    AsyncOnly {
        /// The tool's name.
        name: String,
    },

    /// The registry is sealed and accepts no more registrations.
    Sealed {
        /// The tool that was refused.
        name: String,
    },

    /// `run_sync` was asked to run a tool whose asynchronous setup has not finished.
    NotReady {
        /// The tool's name.
        name: String,
    },

    /// `run_sync` was asked to run a tool that is at its concurrency limit.
    Busy {
        /// The tool's name.
        name: String,
    },

    /// Several failures at once: a call and its cleanup, or the teardowns of a
    /// `clear`. The first is the main one.
    Aggregate {
        /// The failures, in the order they happened.
        errors: Vec<ToolError>,
    },

    /// A tool definition is invalid.
    Definition {
        /// The tool's name.
        name: String,
        /// What is wrong with it.
        message: String,
    },

    /// The handler's result could not be turned into JSON, or (for a tool that asks
    /// for it, `check_output`) does not match its result schema.
    Output {
        /// The JSON Pointer of the first value of the result the schema refuses;
        /// `None` when the result could not be serialised at all.
        path: Option<String>,
        /// The serialiser's or the schema check's message.
        message: String,
    },

    /// A URL given to a client (or to [`connect`](crate::connect)) cannot be opened:
    /// it does not parse, its scheme is not one the client speaks, it names no
    /// server.
    BadUrl {
        /// The URL as it was given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// An application-defined error with its own code and HTTP status.
    Custom {
        /// A stable, upper-case code such as `USER_NOT_FOUND`.
        code: String,
        /// The HTTP status to answer with (100..=599).
        status: u16,
        /// A human-readable message.
        message: String,
        /// Optional structured data for the caller (boxed: errors stay small to move).
        data: Option<Value>,
    },
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "the arguments"
    } else {
        path
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound { name, hint: None } => write!(f, "tool not found: {name}"),
            Self::NotFound {
                name,
                hint: Some(hint),
            } => write!(f, "tool not found: {name} ({hint})"),
            Self::UnknownAct { tool, act } if act.is_empty() => write!(
                f,
                "`{tool}` is a service: name the method to run with `act`"
            ),
            Self::UnknownAct { tool, act } => write!(f, "`{tool}` has no method `{act}`"),
            Self::Arguments { path, message } => {
                write!(f, "invalid arguments at {}: {message}", display_path(path))
            }
            Self::Failed { message, .. }
            | Self::Conflict { message }
            | Self::Custom { message, .. } => f.write_str(message),
            Self::Panicked { message } => write!(f, "tool panicked: {message}"),
            Self::Cancelled { reason: None } => f.write_str("call cancelled"),
            Self::Cancelled {
                reason: Some(reason),
            } => write!(f, "call cancelled: {reason}"),
            Self::Timeout { after_ms: None } => f.write_str("call timed out"),
            Self::Timeout { after_ms: Some(ms) } => write!(f, "call timed out after {ms} ms"),
            Self::AsyncOnly { name } => {
                write!(f, "tool `{name}` is async: use `run` instead of `run_sync`")
            }
            Self::Sealed { name } => write!(f, "registry is sealed: cannot register `{name}`"),
            Self::NotReady { name } => write!(
                f,
                "tool `{name}` is still setting up: use `run`, which waits for it, or await `ready`"
            ),
            Self::Busy { name } => write!(
                f,
                "tool `{name}` is at its concurrency limit: use `run`, which waits for a slot"
            ),
            Self::Aggregate { errors } => {
                write!(f, "{} errors: ", errors.len())?;
                for (i, err) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{err}")?;
                }
                Ok(())
            }
            Self::Definition { name, message } => {
                write!(f, "invalid definition of `{name}`: {message}")
            }
            Self::Output {
                path: None,
                message,
            } => {
                write!(f, "tool result could not be serialised: {message}")
            }
            Self::Output {
                path: Some(path),
                message,
            } => {
                let at = if path.is_empty() { "the result" } else { path };
                write!(
                    f,
                    "tool result does not match its schema at {at}: {message}"
                )
            }
            Self::BadUrl { url, reason } => write!(f, "cannot open `{url}`: {reason}"),
        }
    }
}

// Written by hand rather than derived: `source()` must hand out the handler's own
// error, not the `Arc` that shares it, so callers can `downcast_ref` to their type.
impl StdError for ToolError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::Failed {
                source: Some(source),
                ..
            } => Some(&**source),
            _ => None,
        }
    }
}

impl ToolError {
    /// A [`ToolError::NotFound`] for `name`.
    pub fn not_found(name: impl Into<String>) -> Self {
        Self::NotFound {
            name: name.into(),
            hint: None,
        }
    }

    /// A [`ToolError::NotFound`] for `name` that says why nothing answers to it.
    ///
    /// ```
    /// let err = toolfunc::ToolError::not_found_because("billing", "it is not registered");
    /// assert_eq!(err.to_string(), "tool not found: billing (it is not registered)");
    /// assert_eq!(err.data().unwrap()["what"], "billing");
    /// ```
    pub fn not_found_because(name: impl Into<String>, hint: impl Into<String>) -> Self {
        Self::NotFound {
            name: name.into(),
            hint: Some(hint.into()),
        }
    }

    /// A [`ToolError::Arguments`] at `path` (a JSON Pointer such as `/items/2/id`).
    pub fn arguments(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Arguments {
            path: path.into(),
            message: message.into(),
        }
    }

    /// A [`ToolError::Failed`] carrying `message`.
    ///
    /// ```
    /// let err = toolfunc::ToolError::failed("disk full");
    /// assert_eq!(err.code(), "FAILED");
    /// assert_eq!(err.to_string(), "disk full");
    /// ```
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::Failed {
            message: message.to_string(),
            data: None,
            source: None,
        }
    }

    /// A [`ToolError::Failed`] that keeps `error` as its source.
    pub fn from_error<E: StdError + Send + Sync + 'static>(error: E) -> Self {
        Self::Failed {
            message: error.to_string(),
            data: None,
            source: Some(Arc::new(error)),
        }
    }

    /// A [`ToolError::Conflict`] with `message`.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict {
            message: message.into(),
        }
    }

    /// One error for several: `None` for none, the error itself for one, an
    /// [`Aggregate`](ToolError::Aggregate) for more.
    pub fn aggregate(mut errors: Vec<ToolError>) -> Option<Self> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(Self::Aggregate { errors }),
        }
    }

    /// A [`ToolError::Cancelled`], with an optional reason.
    pub fn cancelled(reason: Option<String>) -> Self {
        Self::Cancelled { reason }
    }

    /// A [`ToolError::Timeout`] after `after` (when known).
    pub(crate) fn timed_out(after: Option<std::time::Duration>) -> Self {
        Self::Timeout {
            after_ms: after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// A [`ToolError::Custom`]: an application error with its own code and HTTP status.
    ///
    /// A status outside 100..=599 is replaced by 500.
    ///
    /// ```
    /// let err = toolfunc::ToolError::custom("USER_NOT_FOUND", 404, "no user 7");
    /// assert_eq!((err.code(), err.status()), ("USER_NOT_FOUND", 404));
    /// ```
    pub fn custom(code: impl Into<String>, status: u16, message: impl Into<String>) -> Self {
        Self::Custom {
            code: code.into(),
            status: if (100..=599).contains(&status) {
                status
            } else {
                500
            },
            message: message.into(),
            data: None,
        }
    }

    /// Attaches structured data to a `Failed` or `Custom` error (other variants carry
    /// their data in their fields and are returned unchanged).
    #[must_use]
    pub fn with_data(mut self, value: Value) -> Self {
        match &mut self {
            Self::Failed { data, .. } | Self::Custom { data, .. } => *data = Some(value),
            _ => {}
        }
        self
    }

    /// The stable machine-readable code, e.g. `"NOT_FOUND"`.
    pub fn code(&self) -> &str {
        match self {
            Self::NotFound { .. } => "NOT_FOUND",
            Self::UnknownAct { .. } => "UNKNOWN_ACT",
            Self::Arguments { .. } => "ARGUMENTS",
            Self::Failed { .. } => "FAILED",
            Self::Panicked { .. } => "PANICKED",
            Self::Cancelled { .. } => "CANCELLED",
            Self::Timeout { .. } => "TIMEOUT",
            Self::Conflict { .. } => "CONFLICT",
            Self::AsyncOnly { .. } => "ASYNC_ONLY",
            Self::Sealed { .. } => "SEALED",
            Self::NotReady { .. } => "NOT_READY",
            Self::Busy { .. } => "BUSY",
            Self::Aggregate { .. } => "AGGREGATE",
            Self::Definition { .. } => "DEFINITION",
            Self::Output { .. } => "OUTPUT",
            Self::BadUrl { .. } => "BAD_URL",
            Self::Custom { code, .. } => code,
        }
    }

    /// The HTTP status that carries this error.
    pub fn status(&self) -> u16 {
        match self {
            Self::NotFound { .. } | Self::UnknownAct { .. } => 404,
            Self::Arguments { .. } | Self::AsyncOnly { .. } | Self::BadUrl { .. } => 400,
            Self::Cancelled { .. } => 499,
            Self::Timeout { .. } => 408,
            Self::Conflict { .. } => 409,
            Self::Sealed { .. } => 403,
            Self::NotReady { .. } => 503,
            Self::Busy { .. } => 429,
            Self::Aggregate { errors } => errors.first().map_or(500, ToolError::status),
            Self::Failed { .. }
            | Self::Panicked { .. }
            | Self::Definition { .. }
            | Self::Output { .. } => 500,
            Self::Custom { status, .. } => *status,
        }
    }

    /// The structured data that goes to the wire next to the message.
    pub fn data(&self) -> Option<Value> {
        let one = |k: &str, v: Value| Some(Value::Object(Map::from_iter([(k.to_owned(), v)])));
        match self {
            // `what` is the field the reference RPC clients read for "not found".
            Self::NotFound { name, hint: None } => one("what", Value::String(name.clone())),
            Self::NotFound {
                name,
                hint: Some(hint),
            } => Some(serde_json::json!({"what": name, "hint": hint})),
            Self::UnknownAct { tool, act } => Some(serde_json::json!({"what": act, "tool": tool})),
            Self::Arguments { path, .. }
            | Self::Output {
                path: Some(path), ..
            } => one("path", Value::String(path.clone())),
            Self::Cancelled { reason } => reason
                .as_ref()
                .and_then(|r| one("reason", Value::String(r.clone()))),
            Self::Timeout { after_ms } => after_ms.and_then(|ms| one("afterMs", Value::from(ms))),
            Self::BadUrl { url, reason } => Some(serde_json::json!({"url": url, "reason": reason})),
            Self::AsyncOnly { name }
            | Self::Sealed { name }
            | Self::NotReady { name }
            | Self::Busy { name }
            | Self::Definition { name, .. } => one("name", Value::String(name.clone())),
            Self::Aggregate { errors } => one(
                "errors",
                Value::Array(
                    errors
                        .iter()
                        .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
                        .collect(),
                ),
            ),
            Self::Failed { data, .. } | Self::Custom { data, .. } => data.clone(),
            Self::Panicked { .. } | Self::Conflict { .. } | Self::Output { .. } => None,
        }
    }

    /// The message without the code, as it goes to the wire.
    fn wire_message(&self) -> String {
        match self {
            Self::Arguments { message, .. }
            | Self::Failed { message, .. }
            | Self::Panicked { message }
            | Self::Conflict { message }
            | Self::Definition { message, .. }
            | Self::Output { message, .. }
            | Self::Custom { message, .. } => message.clone(),
            _ => self.to_string(),
        }
    }
}

/// The wire form of a [`ToolError`].
#[derive(Serialize, Deserialize)]
struct Wire {
    code: String,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

impl Serialize for ToolError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            code: self.code().to_owned(),
            message: self.wire_message(),
            status: Some(self.status()),
            data: self.data(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Wire::deserialize(deserializer)?.into())
    }
}

impl From<Wire> for ToolError {
    fn from(wire: Wire) -> Self {
        let Wire {
            code,
            message,
            status,
            data,
        } = wire;
        let field = |key: &str| {
            data.as_ref()
                .and_then(|d| d.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        match code.as_str() {
            "NOT_FOUND" => Self::NotFound {
                name: field("what").unwrap_or(message),
                hint: field("hint"),
            },
            "UNKNOWN_ACT" => Self::UnknownAct {
                tool: field("tool").unwrap_or_default(),
                act: field("what").unwrap_or_default(),
            },
            "ARGUMENTS" => Self::Arguments {
                path: field("path").unwrap_or_default(),
                message,
            },
            "FAILED" => Self::Failed {
                message,
                data,
                source: None,
            },
            "PANICKED" => Self::Panicked { message },
            "CANCELLED" => Self::Cancelled {
                reason: field("reason"),
            },
            "TIMEOUT" => Self::Timeout {
                after_ms: data
                    .as_ref()
                    .and_then(|d| d.get("afterMs"))
                    .and_then(Value::as_u64),
            },
            "CONFLICT" => Self::Conflict { message },
            "ASYNC_ONLY" => Self::AsyncOnly {
                name: field("name").unwrap_or_default(),
            },
            "SEALED" => Self::Sealed {
                name: field("name").unwrap_or_default(),
            },
            "NOT_READY" => Self::NotReady {
                name: field("name").unwrap_or_default(),
            },
            "BUSY" => Self::Busy {
                name: field("name").unwrap_or_default(),
            },
            "AGGREGATE" => Self::Aggregate {
                errors: data
                    .as_ref()
                    .and_then(|d| d.get("errors"))
                    .and_then(Value::as_array)
                    .map(|errors| {
                        errors
                            .iter()
                            .filter_map(|e| serde_json::from_value(e.clone()).ok())
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            "DEFINITION" => Self::Definition {
                name: field("name").unwrap_or_default(),
                message,
            },
            "OUTPUT" => Self::Output {
                path: field("path"),
                message,
            },
            "BAD_URL" => Self::BadUrl {
                url: field("url").unwrap_or_default(),
                reason: field("reason").unwrap_or(message),
            },
            _ => {
                let mut err = Self::custom(code, status.unwrap_or(500), message);
                if let Self::Custom { data: slot, .. } = &mut err {
                    *slot = data;
                }
                err
            }
        }
    }
}

/// Turns a handler's error into a [`ToolError`]: a `ToolError` passes through unchanged,
/// a `std::error::Error` becomes `FAILED` keeping its source, anything else that is
/// `Display` becomes `FAILED` with its message.
///
/// Used by the code `#[tool]` generates (autoref specialisation on a concrete type).
#[doc(hidden)]
pub mod convert {
    use std::cell::Cell;

    use super::{StdError, ToolError, fmt};

    /// Holds a handler error for the conversion probe below. The `Cell` lets a method
    /// that receives `&&Probe` move the error out.
    pub struct Probe<E>(Cell<Option<E>>);

    impl<E> Probe<E> {
        /// Wraps `error`.
        pub fn new(error: E) -> Self {
            Self(Cell::new(Some(error)))
        }

        fn take(&self) -> Option<E> {
            self.0.take()
        }
    }

    // Called as `(&&&Probe::new(e)).to_tool_error()`: method lookup tries
    // `&&Probe<ToolError>`, then `&Probe<impl Error>`, then `Probe<impl Display>`, so
    // the most specific conversion wins. Each probe is used exactly once on a fresh
    // `Probe`, so `take` finds the error; the fallbacks only keep the conversion total.

    /// Highest priority: the error already is a `ToolError`.
    pub trait ViaToolError {
        /// Converts.
        fn to_tool_error(&self) -> ToolError;
    }
    impl ViaToolError for &&Probe<ToolError> {
        fn to_tool_error(&self) -> ToolError {
            self.take()
                .unwrap_or_else(|| ToolError::failed("error already taken"))
        }
    }

    /// Next: a `std::error::Error` whose source chain is kept.
    pub trait ViaStdError {
        /// Converts.
        fn to_tool_error(&self) -> ToolError;
    }
    impl<E: StdError + Send + Sync + 'static> ViaStdError for &Probe<E> {
        fn to_tool_error(&self) -> ToolError {
            self.take().map_or_else(
                || ToolError::failed("error already taken"),
                ToolError::from_error,
            )
        }
    }

    /// Last: anything `Display`.
    pub trait ViaDisplay {
        /// Converts.
        fn to_tool_error(&self) -> ToolError;
    }
    impl<E: fmt::Display> ViaDisplay for Probe<E> {
        fn to_tool_error(&self) -> ToolError {
            self.take().map_or_else(
                || ToolError::failed("error already taken"),
                |e| ToolError::failed(e),
            )
        }
    }
}
