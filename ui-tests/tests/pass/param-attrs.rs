//! Attributes on parameters: doc comments become descriptions, `#[serde(...)]` reaches
//! the generated parameters struct, and none of them is left on the function.

use serde_json::json;
use toolfunc::{Registry, tool};

/// Repeats a word.
#[tool]
fn repeat(
    /// The word to repeat.
    #[serde(rename = "x")]
    word: String,
    /// How many times; once when absent.
    #[serde(default = "one")]
    times: usize,
    /** The separator; none when absent. */
    #[serde(default)]
    separator: String,
) -> String {
    vec![word; times].join(&separator)
}

fn one() -> usize {
    1
}

fn main() {
    let registry = Registry::global();
    assert_eq!(
        registry.run_sync("repeat", json!({"x": "ab"})).unwrap(),
        json!("ab")
    );
    assert_eq!(
        registry
            .run_sync("repeat", json!({"x": "ab", "times": 3, "separator": "-"}))
            .unwrap(),
        json!("ab-ab-ab")
    );
    // The renamed argument is known only by its JSON name.
    let err = registry
        .run_sync("repeat", json!({"word": "ab"}))
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");

    let def = registry.get("repeat").unwrap().definition().clone();
    let props = &def.params["properties"];
    assert_eq!(props["x"]["description"], "The word to repeat.");
    assert_eq!(
        props["times"]["description"],
        "How many times; once when absent."
    );
    assert_eq!(props["times"]["default"], 1);
    assert_eq!(
        props["separator"]["description"],
        "The separator; none when absent."
    );
    assert!(props.get("word").is_none());
    assert_eq!(def.params["required"], json!(["x"]));

    // Positional arguments follow the declaration order, under their JSON names.
    assert_eq!(
        registry
            .run_sync("repeat", vec![json!("c"), json!(2), json!("+")])
            .unwrap(),
        json!("c+c")
    );

    // The function is still callable with all its parameters.
    assert_eq!(repeat("z".to_owned(), 2, String::new()), "zz");
}
