//! `#[prompt]` and `#[resource]` methods in a `#[tool_service]` impl block: prompts
//! and resources over the service's own value, registered with it (in the global
//! registry for a `Default` service, by `register_service` otherwise), all or none.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use toolfunc::complete::{CompletionRef, CompletionRequest};
use toolfunc::prompt::PromptMessage;
use toolfunc::resource::ResourceFunc;
use toolfunc::{Ctx, Registry, ToolError, tool_service};

/// A notebook: notes kept by the service, a prompt that summarises them and a
/// resource per note.
#[derive(Default)]
struct Notebook {
    notes: Mutex<Vec<String>>,
}

/// Keeps notes.
#[tool_service(name = "notebook")]
impl Notebook {
    /// Adds a note; returns how many there are.
    fn add(&self, text: String) -> usize {
        let mut notes = self.notes.lock().expect("not poisoned");
        notes.push(text);
        notes.len()
    }

    /// Ask for a summary of the notes.
    #[prompt(title = "Summarise", complete(style = styles))]
    fn summarise(
        &self,
        /// How to write it: short or long.
        style: Option<String>,
    ) -> Vec<PromptMessage> {
        let notes = self.notes.lock().expect("not poisoned").join("\n");
        let style = style.unwrap_or_else(|| "short".to_owned());
        vec![PromptMessage::user(format!(
            "Summarise these notes ({style}):\n{notes}"
        ))]
    }

    /// One note, by its number (from 1).
    #[resource(uri = "notes://{n}", mime_type = "text/plain", complete(n = numbers))]
    async fn note(&self, ctx: &Ctx, n: String) -> Result<String, ToolError> {
        assert_eq!(ctx.tool_name(), "note");
        tokio::task::yield_now().await;
        let index: usize = n
            .parse()
            .map_err(|_| ToolError::arguments("/n", "a note number"))?;
        let notes = self.notes.lock().expect("not poisoned");
        index
            .checked_sub(1)
            .and_then(|i| notes.get(i))
            .cloned()
            .ok_or_else(|| ToolError::not_found(&n))
    }

    /// How many notes there are.
    #[toolfunc::resource(uri = "notes://count", name = "note_count")]
    fn count(&self) -> String {
        self.notes.lock().expect("not poisoned").len().to_string()
    }
}

fn styles(request: &CompletionRequest) -> Vec<&'static str> {
    ["short", "long"]
        .into_iter()
        .filter(|s| s.starts_with(&request.value))
        .collect()
}

fn numbers(request: &CompletionRequest) -> Vec<String> {
    let _ = request;
    vec!["1".to_owned(), "2".to_owned()]
}

#[tokio::test]
async fn a_default_service_brings_its_prompts_and_resources_to_the_global_registry() {
    let global = Registry::global();
    global
        .run("notebook", json!({"act": "add", "text": "buy milk"}))
        .await
        .expect("added");
    let names: Vec<String> = global
        .prompt_definitions()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert!(names.contains(&"summarise".to_owned()), "{names:?}");
    assert!(
        !global.has("summarise"),
        "a prompt method is not an act nor a tool"
    );
    let acts = global
        .get("notebook")
        .expect("the service")
        .definition()
        .methods
        .clone();
    assert_eq!(acts, ["$add"]);

    // Over the same value the acts change.
    let got = global
        .prompt("summarise", json!({"style": "long"}))
        .await
        .expect("got");
    let text = got.messages[0]
        .content
        .text()
        .unwrap_or_default()
        .to_owned();
    assert!(
        text.contains("(long)") && text.contains("buy milk"),
        "{text}"
    );
    let def = global
        .prompt_definitions()
        .into_iter()
        .find(|d| d.name == "summarise")
        .expect("listed");
    assert_eq!(def.title.as_deref(), Some("Summarise"));
    assert_eq!(
        def.description.as_deref(),
        Some("Ask for a summary of the notes.")
    );
    assert_eq!(def.arguments[0].name, "style");
    assert!(!def.arguments[0].required);

    let read = global.read("notes://1").await.expect("read");
    assert_eq!(read[0].text.as_deref(), Some("buy milk"));
    assert_eq!(read[0].mime_type.as_deref(), Some("text/plain"));
    let missing = global.read("notes://99").await.expect_err("no such note");
    assert_eq!(missing.code(), "NOT_FOUND");
    let count = global.read("notes://count").await.expect("read");
    assert!(count[0].text.as_deref().is_some_and(|n| n != "0"));

    let completed = global
        .complete(
            &CompletionRef::Prompt("summarise".into()),
            CompletionRequest::new("style", "l"),
        )
        .await
        .expect("completed");
    assert_eq!(completed.values, ["long"]);
    let completed = global
        .complete(
            &CompletionRef::Resource("notes://{n}".into()),
            CompletionRequest::new("n", ""),
        )
        .await
        .expect("completed");
    assert_eq!(completed.values, ["1", "2"]);
}

/// A service with state of its own, registered by hand.
struct Counter {
    hits: AtomicU64,
}

/// Counts.
#[tool_service(name = "counter_with_kinds", scopes = ["count"])]
impl Counter {
    /// Counts one.
    fn hit(&self) -> u64 {
        self.hits.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The count.
    #[resource(uri = "counter://hits")]
    fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Report the count.
    #[prompt(name = "report_hits", tags = ["ops"])]
    fn report(&self) -> String {
        format!("There were {} hits.", self.hits.load(Ordering::Relaxed))
    }
}

#[tokio::test]
async fn register_service_registers_its_kinds_over_the_same_value() {
    let registry = Registry::new();
    registry
        .register_service(Counter {
            hits: AtomicU64::new(41),
        })
        .expect("registered");
    registry
        .run("counter_with_kinds", json!({"act": "hit"}))
        .await
        .expect("hit");
    let read = registry.read("counter://hits").await.expect("read");
    assert_eq!(read[0].text.as_deref(), Some("42"));
    let got = registry
        .prompt("report_hits", json!({}))
        .await
        .expect("got");
    assert_eq!(got.messages[0].content.text(), Some("There were 42 hits."));
    let def = &registry.prompt_definitions()[0];
    assert_eq!(def.tags, ["ops"]);
    assert_eq!(
        def.scopes,
        ["count"],
        "the service's scopes apply to its prompts"
    );
    let resource = &registry.resource_definitions()[0];
    assert_eq!(resource.scopes, ["count"]);
}

#[tokio::test]
async fn a_clash_registers_nothing_of_the_service() {
    let registry = Registry::new();
    registry
        .register_resource(
            ResourceFunc::builder("counter://hits", "taken")
                .handler_sync(|_, _| Ok("taken"))
                .build()
                .expect("valid"),
        )
        .expect("fresh");
    let err = registry
        .register_service(Counter {
            hits: AtomicU64::new(0),
        })
        .expect_err("the resource's URI is taken");
    assert_eq!(err.code(), "CONFLICT");
    assert!(!registry.has("counter_with_kinds"), "nor the tool");
    assert!(
        registry.get_prompt("report_hits").is_none(),
        "nor the prompt"
    );

    // Once the URI is free, the whole service goes in.
    assert!(registry.unregister_resource("counter://hits"));
    registry
        .register_service(Counter {
            hits: AtomicU64::new(0),
        })
        .expect("registered");
    assert!(registry.has("counter_with_kinds"));
    assert!(registry.get_prompt("report_hits").is_some());
}
