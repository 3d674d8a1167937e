//! Prompts and resources in process: registered beside tools as kinds of their own,
//! got and read by name and URI through the registry chain, with their arguments
//! checked, their definitions checked when built, and their changes told to
//! subscribers.

use serde_json::json;
use toolfunc::complete::{Completer, Completion, CompletionRef, CompletionRequest};
use toolfunc::prompt::{PromptFunc, PromptMessage, PromptResult, Role};
use toolfunc::resource::{ResourceFunc, UriTemplate};
use toolfunc::{Registry, RegistryEvent, ToolError, ToolFunc};

fn hello(text: &'static str) -> PromptFunc {
    PromptFunc::builder("hello")
        .description("Say hello.")
        .handler_sync(move |_, _| Ok(text))
        .build()
        .expect("a valid prompt")
}

fn motd(text: &'static str) -> ResourceFunc {
    ResourceFunc::builder("file:///motd", "motd")
        .handler_sync(move |_, _| Ok(text))
        .build()
        .expect("a valid resource")
}

#[tokio::test]
async fn prompts_are_got_by_name_and_shadowed_down_the_chain() {
    let parent = Registry::new();
    parent
        .register_prompt(hello("from the parent"))
        .expect("fresh");
    let child = parent.isolate();
    let got = child
        .prompt("hello", serde_json::Value::Null)
        .await
        .expect("found up the chain");
    assert_eq!(got.messages[0].content.text(), Some("from the parent"));
    assert_eq!(got.messages[0].role, Role::User);

    child
        .register_prompt(hello("from the child"))
        .expect("a shadow");
    let got = child.prompt("hello", json!({})).await.expect("the shadow");
    assert_eq!(got.messages[0].content.text(), Some("from the child"));
    assert_eq!(
        child.prompt_definitions().len(),
        1,
        "a shadowed prompt is listed once"
    );

    // A second prompt of the name in one registry is a conflict; sealed is sealed.
    let again = parent
        .register_prompt(hello("again"))
        .expect_err("a conflict");
    assert_eq!(again.code(), "CONFLICT");
    parent.seal();
    let sealed = parent
        .register_prompt(
            PromptFunc::builder("other")
                .handler_sync(|_, _| Ok("x"))
                .build()
                .expect("valid"),
        )
        .expect_err("sealed");
    assert_eq!(sealed.code(), "SEALED");

    let unknown = child.prompt("nope", json!({})).await.expect_err("unknown");
    assert_eq!(unknown.code(), "NOT_FOUND");
    assert!(child.unregister_prompt("hello"));
    assert!(!child.unregister_prompt("hello"));
}

#[tokio::test]
async fn prompt_arguments_are_checked_and_answers_read() {
    let registry = Registry::new();
    registry
        .register_prompt(
            PromptFunc::builder("review")
                .argument("code", "The code.", true)
                .handler_sync(|_, args| {
                    Ok(PromptResult::new([
                        PromptMessage::user(format!(
                            "Review {}",
                            args["code"].as_str().unwrap_or_default()
                        )),
                        PromptMessage::assistant("Looking."),
                    ])
                    .description("A review."))
                })
                .build()
                .expect("valid"),
        )
        .expect("fresh");
    let got = registry
        .prompt("review", json!({"code": "x"}))
        .await
        .expect("renders");
    assert_eq!(got.description.as_deref(), Some("A review."));
    assert_eq!(got.messages[1].role, Role::Assistant);
    let missing = registry
        .prompt("review", json!({}))
        .await
        .expect_err("missing");
    assert_eq!(missing.code(), "ARGUMENTS");
    let wrong = registry
        .prompt("review", json!({"code": 3}))
        .await
        .expect_err("not a string");
    assert_eq!(wrong.code(), "ARGUMENTS");

    // A function that answers with something that is not messages.
    registry
        .register_prompt(
            PromptFunc::builder("number")
                .handler_sync(|_, _| Ok(3))
                .build()
                .expect("valid"),
        )
        .expect("fresh");
    let bad = registry
        .prompt("number", json!({}))
        .await
        .expect_err("not messages");
    assert_eq!(bad.code(), "OUTPUT");
}

#[test]
fn prompt_answers_read_in_every_form() {
    for value in [
        json!("Say hi."),
        json!({"role": "user", "content": {"type": "text", "text": "Say hi."}}),
        json!([{"role": "user", "content": {"type": "text", "text": "Say hi."}}]),
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi."}}]}),
    ] {
        let read = PromptResult::from_value(value.clone()).expect("messages");
        assert_eq!(read.messages[0].content.text(), Some("Say hi."), "{value}");
    }
    assert!(PromptResult::from_value(json!({"role": "robot", "content": "x"})).is_err());
}

#[tokio::test]
async fn resources_are_read_by_uri_fixed_first_then_templates_in_order() {
    let registry = Registry::new();
    registry
        .register_resource(
            ResourceFunc::builder("file:///{name}", "any file")
                .handler_sync(|_, p| Ok(format!("file {}", p["name"].as_str().unwrap_or_default())))
                .build()
                .expect("valid"),
        )
        .expect("fresh");
    registry.register_resource(motd("Hello.")).expect("fresh");
    let fixed = registry.read("file:///motd").await.expect("the fixed one");
    assert_eq!(fixed[0].text.as_deref(), Some("Hello."));
    let templated = registry.read("file:///readme").await.expect("the template");
    assert_eq!(templated[0].text.as_deref(), Some("file readme"));
    let unknown = registry
        .read("http://example.com/")
        .await
        .expect_err("unknown");
    assert_eq!(unknown.code(), "NOT_FOUND");

    let again = registry
        .register_resource(motd("again"))
        .expect_err("a conflict");
    assert_eq!(again.code(), "CONFLICT");
    assert_eq!(registry.resource_definitions().len(), 2);
    assert!(registry.unregister_resource("file:///{name}"));
    assert!(registry.read("file:///readme").await.is_err());
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Day {
    day: String,
    limit: Option<u32>,
}

#[test]
fn resource_definitions_are_checked_against_their_function() {
    let typed = || {
        ToolFunc::builder("logs")
            .typed_sync(|_, args: Day| Ok::<_, ToolError>(format!("{} {:?}", args.day, args.limit)))
            .build()
            .expect("valid")
    };
    ResourceFunc::from_tool("file:///logs/{day}", Some("text/plain"), typed()).expect("fits");
    let stray =
        ResourceFunc::from_tool("file:///logs/{day}/{hour}", None, typed()).expect_err("hour");
    assert!(stray.to_string().contains("`{hour}`"), "{stray}");
    let missing = ResourceFunc::from_tool("file:///logs", None, typed()).expect_err("day");
    assert!(missing.to_string().contains("`day`"), "{missing}");
    let broken = ResourceFunc::from_tool("file:///logs/{day", None, typed()).expect_err("broken");
    assert_eq!(broken.code(), "DEFINITION");
    assert!(UriTemplate::parse("file:///{a}{b}").is_err());
}

#[tokio::test]
async fn completions_answer_for_prompts_and_templates() {
    let registry = Registry::new();
    registry
        .register_prompt(
            PromptFunc::builder("lang")
                .argument("language", "A language.", true)
                .complete(
                    "language",
                    Completer::new(|r: &CompletionRequest| {
                        Completion::matching(["rust", "ruby"], &r.value)
                    }),
                )
                .handler_sync(|_, _| Ok("x"))
                .build()
                .expect("valid"),
        )
        .expect("fresh");
    registry
        .register_resource(
            ResourceFunc::builder("repo://{owner}", "repo")
                .complete(
                    "owner",
                    Completer::new_async(|r: CompletionRequest| async move {
                        Ok(Completion::new([format!("{}-one", r.value)]))
                    }),
                )
                .handler_sync(|_, _| Ok("x"))
                .build()
                .expect("valid"),
        )
        .expect("fresh");
    let langs = registry
        .complete(
            &CompletionRef::Prompt("lang".into()),
            CompletionRequest::new("language", "ru"),
        )
        .await
        .expect("completes");
    assert_eq!(langs.values, ["rust", "ruby"]);
    let owners = registry
        .complete(
            &CompletionRef::Resource("repo://{owner}".into()),
            CompletionRequest::new("owner", "me"),
        )
        .await
        .expect("completes");
    assert_eq!(owners.values, ["me-one"]);
    let unknown = registry
        .complete(
            &CompletionRef::Prompt("lang".into()),
            CompletionRequest::new("tone", ""),
        )
        .await
        .expect_err("no such argument");
    assert_eq!(unknown.code(), "ARGUMENTS");
    let bad = PromptFunc::builder("x")
        .complete(
            "nope",
            Completer::new(|_: &CompletionRequest| Completion::default()),
        )
        .handler_sync(|_, _| Ok("x"))
        .build()
        .expect_err("not an argument");
    assert_eq!(bad.code(), "DEFINITION");
}

#[tokio::test]
async fn subscribers_hear_of_prompt_and_resource_changes() {
    let registry = Registry::new();
    let mut changes = registry.subscribe_tool_changes();
    registry.register_prompt(hello("hi")).expect("fresh");
    registry.register_resource(motd("Hello.")).expect("fresh");
    registry.notify_resource_updated("file:///motd");
    registry.unregister_prompt("hello");
    let mut heard = Vec::new();
    while let Some(event) = changes.try_recv() {
        heard.push(event.expect("no lag"));
    }
    assert_eq!(
        heard,
        [
            RegistryEvent::PromptsChanged,
            RegistryEvent::ResourcesChanged,
            RegistryEvent::ResourceUpdated {
                uri: "file:///motd".into()
            },
            RegistryEvent::PromptsChanged,
        ]
    );
}

#[tokio::test]
async fn tool_results_link_to_registered_resources() {
    let registry = Registry::new();
    registry
        .register_resource(
            ResourceFunc::builder("file:///logs/{day}", "logs")
                .description("The log of one day.")
                .mime_type("text/plain")
                .handler_sync(|_, p| {
                    Ok(format!("log of {}", p["day"].as_str().unwrap_or_default()))
                })
                .build()
                .expect("valid"),
        )
        .expect("fresh");
    let link = registry
        .resource_link("file:///logs/mon")
        .expect("a template reads it");
    assert_eq!(link.uri, "file:///logs/mon");
    assert_eq!(link.name, "logs");
    assert_eq!(link.description.as_deref(), Some("The log of one day."));
    assert!(registry.resource_link("file:///elsewhere").is_none());
    // The client follows the link with a read.
    let content = toolfunc::Content::text("See the log.").link(link.clone());
    let toolfunc::content::Block::ResourceLink(followed) = &content.blocks()[1] else {
        panic!("a link block");
    };
    let read = registry.read(&followed.uri).await.expect("readable");
    assert_eq!(read[0].text.as_deref(), Some("log of mon"));
}
