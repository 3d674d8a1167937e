//! A tool's parameters schema, given as a value or made by a function the first time
//! anything reads it ([`Schema`]).

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// What makes a schema the first time it is read.
type Make = Arc<dyn Fn() -> Value + Send + Sync>;

/// A JSON Schema held by a [`ToolDefinition`](crate::ToolDefinition):
/// either the value it was given, or made by a function the first time it is read
/// and kept from then on ([`ToolBuilder::params_schema_with`](crate::ToolBuilder::params_schema_with)).
///
/// It reads as a [`serde_json::Value`] (it derefs to one), serialises as that value,
/// and compares by it; its own methods ([`value`](Self::value), [`to_mut`](Self::to_mut)...)
/// leave `Value`'s names (`get`, `pointer`) to it. Clones share one schema, made
/// once for them all. A catalogue of thousands of tools built at run time starts
/// without making their schemas: each is made when a listing, a search or a call
/// first needs it.
///
/// ```
/// use serde_json::json;
/// use toolfunc::schema::Schema;
///
/// let made = Schema::with(|| json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
/// assert!(!made.is_made());
/// assert_eq!(made["properties"]["n"]["type"], "integer");
/// assert!(made.is_made());
/// assert_eq!(made, Schema::from(json!({"type": "object", "properties": {"n": {"type": "integer"}}})));
/// ```
#[derive(Clone)]
pub struct Schema(Arc<Cell>);

/// A schema and what makes it; shared by a schema's clones, so one making serves
/// them all.
#[derive(Clone)]
struct Cell {
    made: OnceLock<Value>,
    make: Option<Make>,
}

impl Schema {
    /// A schema made by `make` the first time it is read (once, however many threads
    /// and clones read it at the same time).
    pub fn with(make: impl Fn() -> Value + Send + Sync + 'static) -> Self {
        Self(Arc::new(Cell {
            made: OnceLock::new(),
            make: Some(Arc::new(make)),
        }))
    }

    /// The schema, made now if it was not yet. A function that panics makes `null`,
    /// which no tool can use: its calls fail with `DEFINITION`, and listings leave
    /// it out.
    pub fn value(&self) -> &Value {
        let cell = &*self.0;
        cell.made
            .get_or_init(|| cell.make.as_ref().map_or(Value::Null, made_by))
    }

    /// Whether the schema exists yet: given as a value, or read since.
    pub fn is_made(&self) -> bool {
        self.0.made.get().is_some()
    }

    /// The schema to change in place, made now if it was not yet; a schema shared
    /// with clones is copied first, so they keep theirs.
    pub fn to_mut(&mut self) -> &mut Value {
        let _ = self.value();
        let cell = Arc::make_mut(&mut self.0);
        cell.make = None;
        match cell.made.get_mut() {
            Some(value) => value,
            // Made by `value` above, and a copy keeps what it copies.
            None => unreachable!("the schema was made above"),
        }
    }

    /// The schema as a value, made now if it was not yet.
    #[must_use]
    pub fn into_value(self) -> Value {
        match Arc::try_unwrap(self.0) {
            Ok(Cell { made, make }) => match made.into_inner() {
                Some(value) => value,
                None => make.as_ref().map_or(Value::Null, made_by),
            },
            Err(shared) => Self(shared).value().clone(),
        }
    }
}

/// What `make` returns; `null` (with a warning) when it panics.
fn made_by(make: &Make) -> Value {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make())).unwrap_or_else(|_| {
        tracing::warn!("a tool's parameters schema function panicked: its schema is null");
        Value::Null
    })
}

impl Deref for Schema {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl AsRef<Value> for Schema {
    fn as_ref(&self) -> &Value {
        self.value()
    }
}

impl From<Value> for Schema {
    fn from(value: Value) -> Self {
        Self(Arc::new(Cell {
            made: OnceLock::from(value),
            make: None,
        }))
    }
}

impl From<Schema> for Value {
    fn from(schema: Schema) -> Self {
        schema.into_value()
    }
}

impl Default for Schema {
    /// The schema of no parameters: `{"type": "object", "properties": {}}`.
    fn default() -> Self {
        Self::from(super::empty_object())
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for Schema {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl PartialEq<Schema> for Value {
    fn eq(&self, other: &Schema) -> bool {
        self == other.value()
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.value(), f)
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.value(), f)
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::Schema;

    #[test]
    fn made_once_on_first_read_and_shared_by_clones() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let schema = Schema::with(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            json!({"type": "object"})
        });
        let early = schema.clone();
        assert_eq!(calls.load(Ordering::Relaxed), 0);
        assert_eq!(schema["type"], "object");
        assert_eq!(schema.to_string(), r#"{"type":"object"}"#);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        // A clone taken before the first read shares what the first read made.
        assert_eq!(*early, json!({"type": "object"}));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_function_that_panics_makes_null() {
        let schema = Schema::with(|| panic!("no schema today"));
        assert_eq!(*schema, serde_json::Value::Null);
        assert!(schema.is_made());
    }

    #[test]
    fn changed_in_place_and_round_tripped() {
        let mut schema = Schema::with(|| json!({"type": "object"}));
        let kept = schema.clone();
        schema.to_mut()["properties"] = json!({});
        assert_eq!(schema, json!({"type": "object", "properties": {}}));
        assert_eq!(kept, json!({"type": "object"}), "a clone keeps its own");
        let text = serde_json::to_string(&schema).unwrap();
        let back: Schema = serde_json::from_str(&text).unwrap();
        assert_eq!(back, schema);
        assert_eq!(
            back.into_value(),
            json!({"type": "object", "properties": {}})
        );
    }
}
