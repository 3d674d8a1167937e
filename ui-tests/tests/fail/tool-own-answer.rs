//! A type of the user's own named `Answer`, written bare, is taken for
//! `toolfunc::Answer`: one message says how to return it as a value.
use toolfunc::tool;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Answer {
    text: String,
}

/// Replies.
#[tool]
fn reply() -> Answer {
    Answer { text: "hi".into() }
}

fn main() {}
