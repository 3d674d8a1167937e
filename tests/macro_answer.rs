//! `#[tool]` functions and `#[tool_service]` methods returning `Answer`: a stream for
//! a caller that asked for one, one value for a caller that did not (the seed's
//! "Completed in one go").

use futures::StreamExt;
use serde_json::{Value, json};
use toolfunc::Answer;
use toolfunc::{Ctx, Registry, ToolError, tool, tool_service};

#[derive(serde::Serialize)]
struct Tick {
    tick: u32,
}

/// Counts down: tick by tick when streamed, the whole list at once otherwise.
#[tool]
#[allow(clippy::unused_async)] // an async stream-or-value tool
async fn countdown(ctx: &Ctx, from: u32) -> Answer {
    if ctx.is_stream() {
        Answer::items(futures::stream::iter(
            (1..=from).rev().map(|tick| Tick { tick }),
        ))
    } else {
        Answer::Value(json!((1..=from).rev().collect::<Vec<_>>()))
    }
}

/// A sync stream-or-value tool that may fail before it answers.
#[tool]
fn letters(ctx: &Ctx, word: String) -> Result<Answer, ToolError> {
    if word.is_empty() {
        return Err(ToolError::custom(
            "EMPTY",
            400,
            "no letters in an empty word",
        ));
    }
    let letters: Vec<String> = word.chars().map(String::from).collect();
    if ctx.is_stream() {
        let items = letters.into_iter().map(|l| {
            if l == "!" {
                Err(ToolError::custom("BANG", 422, "no bangs"))
            } else {
                Ok(l)
            }
        });
        Ok(Answer::try_items(futures::stream::iter(items)))
    } else {
        Answer::value(&letters.concat().to_uppercase())
    }
}

#[derive(Default)]
struct Jobs;

/// Jobs.
#[tool_service(name = "answer_jobs")]
impl Jobs {
    /// Progress of a job: streamed steps, or its final state.
    #[allow(clippy::unused_async)] // an async stream-or-value method
    async fn progress(&self, ctx: &Ctx, steps: u32) -> Answer {
        if ctx.is_stream() {
            Answer::items(futures::stream::iter(0..steps))
        } else {
            Answer::Value(json!({"done": steps}))
        }
    }
}

async fn items(registry: &Registry, name: &str, args: Value) -> Vec<Result<Value, String>> {
    registry
        .run_stream(name, args)
        .map(|item| item.map_err(|e| e.code().to_owned()))
        .collect()
        .await
}

#[tokio::test]
async fn a_tool_returning_answer_streams_or_answers_at_once() {
    let registry = Registry::global();
    assert_eq!(
        registry.run("countdown", json!({"from": 3})).await.unwrap(),
        json!([3, 2, 1])
    );
    assert_eq!(
        items(registry, "countdown", json!({"from": 2})).await,
        [Ok(json!({"tick": 2})), Ok(json!({"tick": 1}))]
    );
    let def = registry.get("countdown").unwrap().definition().clone();
    assert!(def.stream, "an Answer tool is stream-capable");
    assert_eq!(def.params["required"], json!(["from"]));
    // Bad arguments are the usual error, streamed or not.
    let err = registry
        .run("countdown", json!({"from": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
}

#[tokio::test]
async fn a_sync_answer_tool_keeps_its_errors() {
    let registry = Registry::global();
    assert_eq!(
        registry
            .run("letters", json!({"word": "abc"}))
            .await
            .unwrap(),
        json!("ABC")
    );
    assert_eq!(
        items(registry, "letters", json!({"word": "ab"})).await,
        [Ok(json!("a")), Ok(json!("b"))]
    );
    let err = registry
        .run("letters", json!({"word": ""}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "EMPTY");
    // An item's error ends the stream with it.
    assert_eq!(
        items(registry, "letters", json!({"word": "a!"})).await,
        [Ok(json!("a")), Err("BANG".to_owned())]
    );
}

#[tokio::test]
async fn a_service_method_returning_answer_and_its_client() {
    let registry = Registry::global();
    assert_eq!(
        registry
            .run("answer_jobs", json!({"act": "$progress", "steps": 3}))
            .await
            .unwrap(),
        json!({"done": 3})
    );
    assert_eq!(
        items(
            registry,
            "answer_jobs",
            json!({"act": "$progress", "steps": 2})
        )
        .await,
        [Ok(json!(0)), Ok(json!(1))]
    );
    let def = registry.get("answer_jobs").unwrap().definition().clone();
    assert!(def.stream);
    // The typed client asks for one value.
    let client = JobsClient::new(registry.clone());
    assert_eq!(client.progress(4).await.unwrap(), json!({"done": 4}));
}
