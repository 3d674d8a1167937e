//! Behaviour hints: set by `#[tool(annotations(...))]` or the builder, carried in the
//! definition (camelCase, unset hints left out) and through a JSON round trip.

use serde_json::{Value, json};
use toolfunc::{Annotations, Registry, ToolDefinition, ToolFunc, tool};

/// Deletes a record.
#[tool(annotations(destructive, idempotent, read_only = false, needs_confirmation))]
fn delete_record(id: u64) -> u64 {
    id
}

/// Has no hints.
#[tool]
fn plain_tool() {}

fn definition(name: &str) -> Value {
    serde_json::to_value(Registry::global().get(name).unwrap().definition()).unwrap()
}

#[test]
fn the_attribute_sets_the_hints() {
    assert_eq!(
        definition("delete_record")["annotations"],
        json!({
            "readOnly": false,
            "destructive": true,
            "idempotent": true,
            "needsConfirmation": true
        })
    );
    let tool = Registry::global().get("delete_record").unwrap();
    assert_eq!(
        tool.definition().annotations,
        Annotations::new()
            .read_only(false)
            .destructive(true)
            .idempotent(true)
            .needs_confirmation(true)
    );
}

#[test]
fn no_hints_no_field() {
    assert_eq!(definition("plain_tool").get("annotations"), None);
    assert!(
        Registry::global()
            .get("plain_tool")
            .unwrap()
            .definition()
            .annotations
            .is_empty()
    );
}

#[test]
fn the_builder_and_a_json_definition_carry_them() {
    let tool = ToolFunc::builder("fetch_page")
        .annotations(Annotations::new().open_world(true).untrusted_output(true))
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .unwrap();
    let wire = serde_json::to_value(tool.definition()).unwrap();
    assert_eq!(
        wire["annotations"],
        json!({"openWorld": true, "untrustedOutput": true})
    );
    let back: ToolDefinition = serde_json::from_value(wire).unwrap();
    assert_eq!(&back, tool.definition());
    let rebuilt = ToolFunc::from_definition(back)
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .unwrap();
    assert_eq!(rebuilt.definition().annotations.open_world, Some(true));
}
