//! Parameter schemas: the first line of the input is a JSON Schema, the rest a
//! value. A tool is built with that schema (a `DEFINITION` error is fine) and, when
//! it builds, run on the value; the schema is also compiled and checked on its own
//! through `toolfunc::schema`. A panic is the bug, and so is a `PANICKED` error
//! (the handler only returns its arguments).

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolfunc::schema::Validator;
use toolfunc::{Registry, ToolError, ToolFunc};

/// Inputs past this are skipped: schemas compile per run, which must stay fast.
const MAX_INPUT: usize = 4 * 1024;

fn check(result: Result<Value, ToolError>) {
    if let Err(err) = result {
        assert_ne!(err.code(), "PANICKED", "{err}");
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_INPUT {
        return;
    }
    let (head, tail) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(head) else {
        return;
    };
    // An empty or malformed rest still runs: as `null` (no arguments).
    let value = serde_json::from_slice::<Value>(tail).unwrap_or(Value::Null);

    // The public validator on its own: compile errors are fine.
    if let Ok(validator) = Validator::new(&schema) {
        let _ = validator.validate(&value);
    }

    let built = ToolFunc::builder("fuzzed")
        .params_schema(schema)
        .handler_sync(|_, args| Ok(args))
        .build();
    let Ok(tool) = built else {
        return;
    };
    let registry = Registry::new();
    if registry.register(tool).is_err() {
        return;
    }
    check(registry.run_sync("fuzzed", value.clone()));
    if let Value::Array(items) = value {
        check(registry.run_sync("fuzzed", items));
    }
});
