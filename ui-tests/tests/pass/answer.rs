//! `-> Answer` (also `toolfunc::Answer`, `stream::Answer`) makes a stream-or-value
//! tool; a type of the user's own named `Answer`, written by another path, is a value.
use toolfunc::{Answer, Ctx, Registry, stream, tool};

mod own {
    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub struct Answer {
        pub text: String,
    }
}

/// Streams or answers.
#[tool]
async fn either(ctx: &Ctx) -> Answer {
    if ctx.is_stream() {
        Answer::items(futures::stream::iter([1, 2]))
    } else {
        Answer::Value(serde_json::json!([1, 2]))
    }
}

/// Same, through the module path.
#[tool]
fn either_sync() -> Result<stream::Answer, toolfunc::ToolError> {
    Answer::value(&[1, 2])
}

/// A value of the user's own type named `Answer`.
#[tool]
fn reply() -> self::own::Answer {
    own::Answer { text: "hi".into() }
}

fn main() {
    let registry = Registry::global();
    assert!(registry.get("either").unwrap().is_stream());
    assert!(registry.get("either_sync").unwrap().is_stream());
    assert!(!registry.get("reply").unwrap().is_stream());
    assert_eq!(
        registry.run_sync("reply", serde_json::json!({})).unwrap(),
        serde_json::json!({"text": "hi"})
    );
}
