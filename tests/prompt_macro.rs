//! `#[prompt]` and `#[resource]`: functions that render a prompt or read a
//! resource, collected into the global registry like `#[tool]` functions, with
//! their descriptions, arguments, URI templates and completers taken from the code.

use std::rc::Rc;

use serde::Serialize;
use serde_json::json;
use toolfunc::complete::{Completion, CompletionRef, CompletionRequest};
use toolfunc::content::Resource;
use toolfunc::prompt::{PromptMessage, PromptResult, Role};
use toolfunc::{Ctx, Registry, ToolError, prompt, resource};

/// Ask for a review of some code.
///
/// Says what to look at.
#[prompt(complete(language = languages), tags = ["code"])]
fn code_review(
    /// The code to review.
    code: String,
    /// Its language; guessed when left out.
    language: Option<String>,
) -> Vec<PromptMessage> {
    let language = language.unwrap_or_else(|| "unknown".to_owned());
    vec![
        PromptMessage::user(format!("Review this {language} code:\n{code}")),
        PromptMessage::assistant("I will look at naming first."),
    ]
}

/// The languages offered, narrowed by the code already given: a completer sees
/// the arguments filled in before.
fn languages(request: &CompletionRequest) -> Vec<&'static str> {
    let all = ["python", "rust", "ruby"];
    let rusty = request
        .arguments
        .get("code")
        .is_some_and(|code| code.contains("fn "));
    all.into_iter()
        .filter(|l| l.starts_with(&request.value))
        .filter(|l| !rusty || *l == "rust")
        .collect()
}

/// Greet someone a number of times.
#[prompt(name = "greet", title = "Greeting")]
async fn greeting(ctx: &Ctx, who: String, times: u32) -> Result<String, ToolError> {
    tokio::task::yield_now().await;
    if times == 0 {
        return Err(ToolError::arguments("times", "at least once"));
    }
    Ok(format!(
        "{} (by {})",
        format!("Hello {who}! ").repeat(times as usize).trim_end(),
        ctx.tool_name()
    ))
}

/// A fixed prompt.
#[prompt]
fn plain() -> &'static str {
    "Say nothing."
}

/// A prompt with a description of its own.
#[prompt(description = "Two messages, described.")]
fn described(topic: String) -> PromptResult {
    PromptResult::new([PromptMessage::user(topic)]).description("on a topic")
}

/// A prompt that holds an `Rc` across an await: it runs on the local executor.
#[prompt(local)]
async fn counted(text: String) -> String {
    let words = Rc::new(text.split_whitespace().count());
    tokio::task::yield_now().await;
    format!("{} words", *words)
}

/// The log of one day.
#[resource(uri = "file:///logs/{date}", mime_type = "text/plain", complete(date = dates))]
fn logs(date: String) -> String {
    format!("log of {date}")
}

fn dates(request: &CompletionRequest) -> Completion {
    Completion::matching(["2026-12-01", "2026-12-02", "2025-01-01"], &request.value)
}

/// One page of a book.
#[resource(uri = "books://{book}/pages/{page}", name = "book_page")]
async fn page(ctx: &Ctx, book: String, page: u32) -> Result<String, ToolError> {
    tokio::task::yield_now().await;
    if page == 0 {
        return Err(ToolError::arguments("page", "pages start at 1"));
    }
    Ok(format!("{book} p.{} via {}", page + 1 - 1, ctx.tool_name()))
}

/// A file under a root, at any depth.
#[resource(uri = "tree:///{+path}")]
fn tree(path: String) -> Vec<Resource> {
    vec![
        Resource::from_text(format!("tree:///{path}"), format!("at {path}"))
            .with_mime_type("text/x-path"),
    ]
}

/// Today's notes.
#[resource(uri = "notes://today", title = "Notes")]
fn notes() -> &'static str {
    "buy milk"
}

/// A tiny image.
#[resource(uri = "image://pixel", mime_type = "image/png")]
fn pixel() -> Vec<u8> {
    vec![137, 80, 78, 71]
}

#[derive(Serialize)]
struct Status {
    up: bool,
}

/// The status, as JSON.
#[resource(uri = "status://now")]
fn status(_ctx: &Ctx) -> Status {
    Status { up: true }
}

#[tokio::test]
async fn prompts_are_listed_with_their_docs_and_arguments() {
    let registry = Registry::global();
    let defs = registry.prompt_definitions();
    let review = defs.iter().find(|d| d.name == "code_review").unwrap();
    assert_eq!(
        review.description.as_deref(),
        Some("Ask for a review of some code.\n\nSays what to look at.")
    );
    assert_eq!(review.tags, ["code"]);
    let args: Vec<(&str, Option<&str>, bool)> = review
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.description.as_deref(), a.required))
        .collect();
    assert_eq!(
        args,
        [
            ("code", Some("The code to review."), true),
            (
                "language",
                Some("Its language; guessed when left out."),
                false
            ),
        ]
    );
    let greet = defs.iter().find(|d| d.name == "greet").unwrap();
    assert_eq!(greet.title.as_deref(), Some("Greeting"));
    assert!(greet.arguments.iter().all(|a| a.required));
    assert!(!defs.iter().any(|d| d.name == "greeting"));
    let described = defs.iter().find(|d| d.name == "described").unwrap();
    assert_eq!(
        described.description.as_deref(),
        Some("Two messages, described.")
    );
    assert!(
        defs.iter()
            .find(|d| d.name == "plain")
            .unwrap()
            .arguments
            .is_empty()
    );
}

#[tokio::test]
async fn prompts_render_through_the_registry() {
    let registry = Registry::global();
    let got = registry
        .prompt(
            "code_review",
            json!({"code": "x = 1", "language": "python"}),
        )
        .await
        .unwrap();
    assert_eq!(got.messages.len(), 2);
    assert_eq!(got.messages[0].role, Role::User);
    assert_eq!(
        got.messages[0].content.text(),
        Some("Review this python code:\nx = 1")
    );
    assert_eq!(got.messages[1].role, Role::Assistant);

    // Every argument comes as a string over MCP: a number is read from one.
    let got = registry
        .prompt("greet", json!({"who": "Ada", "times": "2"}))
        .await
        .unwrap();
    assert_eq!(
        got.messages[0].content.text(),
        Some("Hello Ada! Hello Ada! (by greet)")
    );
    let err = registry
        .prompt("greet", json!({"who": "Ada", "times": "0"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    let err = registry
        .prompt("greet", json!({"times": 1}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert!(err.to_string().contains("who"), "{err}");

    let got = registry.prompt("plain", json!(null)).await.unwrap();
    assert_eq!(got.messages[0].content.text(), Some("Say nothing."));
    let got = registry
        .prompt("described", json!({"topic": "rust"}))
        .await
        .unwrap();
    assert_eq!(got.description.as_deref(), Some("on a topic"));
    let got = registry
        .prompt("counted", json!({"text": "a b c"}))
        .await
        .unwrap();
    assert_eq!(got.messages[0].content.text(), Some("3 words"));

    // The functions stay callable.
    assert_eq!(plain(), "Say nothing.");
    assert_eq!(code_review("c".into(), None).len(), 2);
}

#[tokio::test]
async fn completers_see_the_value_typed_and_the_arguments_filled() {
    let registry = Registry::global();
    let reference = CompletionRef::Prompt("code_review".into());
    let got = registry
        .complete(&reference, CompletionRequest::new("language", "r"))
        .await
        .unwrap();
    assert_eq!(got.values, ["rust", "ruby"]);
    let request = CompletionRequest::new("language", "r").with_argument("code", "fn main() {}");
    let got = registry.complete(&reference, request).await.unwrap();
    assert_eq!(got.values, ["rust"]);
    // An argument without a completer has no values.
    let got = registry
        .complete(&reference, CompletionRequest::new("code", "x"))
        .await
        .unwrap();
    assert!(got.values.is_empty());

    let reference = CompletionRef::Resource("file:///logs/{date}".into());
    let got = registry
        .complete(&reference, CompletionRequest::new("date", "2026"))
        .await
        .unwrap();
    assert_eq!(got.values, ["2026-12-01", "2026-12-02"]);
}

#[tokio::test]
async fn resources_are_listed_with_their_uris() {
    let registry = Registry::global();
    let defs = registry.resource_definitions();
    let logs = defs.iter().find(|d| d.name == "logs").unwrap();
    assert_eq!(logs.uri_template.as_deref(), Some("file:///logs/{date}"));
    assert_eq!(logs.uri, None);
    assert_eq!(logs.description.as_deref(), Some("The log of one day."));
    assert_eq!(logs.mime_type.as_deref(), Some("text/plain"));
    let notes = defs.iter().find(|d| d.name == "notes").unwrap();
    assert_eq!(notes.uri.as_deref(), Some("notes://today"));
    assert_eq!(notes.title.as_deref(), Some("Notes"));
    assert!(defs.iter().any(|d| d.name == "book_page"));
    assert!(!defs.iter().any(|d| d.name == "page"));
}

#[tokio::test]
async fn resources_read_through_the_registry() {
    let registry = Registry::global();
    let got = registry.read("file:///logs/2026-12-01").await.unwrap();
    assert_eq!(got[0].text.as_deref(), Some("log of 2026-12-01"));
    assert_eq!(got[0].mime_type.as_deref(), Some("text/plain"));
    assert_eq!(got[0].uri, "file:///logs/2026-12-01");

    // A typed variable is read from the URI's text.
    let got = registry.read("books://dune/pages/7").await.unwrap();
    assert_eq!(got[0].text.as_deref(), Some("dune p.7 via book_page"));
    let err = registry.read("books://dune/pages/seven").await.unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    let err = registry.read("books://dune/pages/0").await.unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");

    let got = registry.read("tree:///a/b/c.txt").await.unwrap();
    assert_eq!(got[0].text.as_deref(), Some("at a/b/c.txt"));
    assert_eq!(got[0].mime_type.as_deref(), Some("text/x-path"));

    let got = registry.read("notes://today").await.unwrap();
    assert_eq!(got[0].text.as_deref(), Some("buy milk"));
    let got = registry.read("image://pixel").await.unwrap();
    assert_eq!(got[0].bytes().unwrap(), [137, 80, 78, 71]);
    assert_eq!(got[0].mime_type.as_deref(), Some("image/png"));
    let got = registry.read("status://now").await.unwrap();
    assert_eq!(got[0].text.as_deref(), Some(r#"{"up":true}"#));
    assert_eq!(got[0].mime_type.as_deref(), Some("application/json"));

    assert_eq!(
        registry.read("notes://yesterday").await.unwrap_err().code(),
        "NOT_FOUND"
    );
    assert_eq!(pixel().len(), 4);
}
