//! Search over a catalogue: `Registry::search` ranks every tool by a query (BM25
//! over name, title, description, tags, parameter names and descriptions; the tool
//! the query names, by name or alias, first), its index follows the registry tool by
//! tool, `llm::search_for` ranks what a runner's caller may see, and HTTP discovery
//! takes `?q=…&limit=…` and answers in its own shape, best match first.

#[path = "support/http.rs"]
mod http;

use std::fmt;

use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value, json};
use toolfunc::auth::ApiKeys;
use toolfunc::http::Api;
use toolfunc::llm::search_for;
use toolfunc::{
    CallOptions, Identity, RegisterOptions, Registry, SearchHit, ToolFunc, UnregisterOptions,
    layer, tool_service,
};

/// A tool with string parameters `(name, description)` that answers `null`.
fn tool(name: &str, description: &str, params: &[(&str, &str)]) -> ToolFunc {
    builder(name, description, params)
        .build()
        .expect("a valid tool")
}

fn builder(name: &str, description: &str, params: &[(&str, &str)]) -> toolfunc::ToolBuilder {
    let mut properties = Map::new();
    for (param, text) in params {
        properties.insert(
            (*param).to_owned(),
            json!({"type": "string", "description": text}),
        );
    }
    ToolFunc::builder(name)
        .description(description)
        .params_schema(json!({"type": "object", "properties": properties}))
        .handler_sync(|_, _| Ok(Value::Null))
}

fn names(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(SearchHit::name).collect()
}

/// A catalogue where each way of matching has a tool of its own.
fn catalogue() -> Registry {
    let registry = Registry::new();
    let tools = [
        tool(
            "weather",
            "Current conditions in a city.",
            &[("city", "The city.")],
        ),
        tool(
            "weather_alerts",
            "Severe weather warnings: weather watches and weather advisories.",
            &[("region", "The region.")],
        ),
        builder("daily_outlook", "The next days at a glance.", &[])
            .alias("forecast")
            .build()
            .expect("valid"),
        tool(
            "sky_report",
            "A forecast of forecasts: forecast charts, forecast maps, forecast tables.",
            &[],
        ),
        tool(
            "air_quality",
            "Pollen, ozone and humidity levels near a place.",
            &[("place", "Where.")],
        ),
        tool(
            "find_shops",
            "Shops near an address.",
            &[
                ("postcode", "Where to look."),
                ("radius", "How far, in kilometres."),
            ],
        ),
        tool(
            "convert_temperature",
            "Between units of heat.",
            &[("celsius", "Degrees to convert.")],
        ),
        builder("archive", "Old measurements.", &[])
            .tag("history")
            .title("Measurement archive")
            .build()
            .expect("valid"),
    ];
    for tool in tools {
        registry.register(tool).expect("registered");
    }
    registry
}

#[test]
fn the_tool_a_query_names_comes_first_then_the_best_matches() {
    let registry = catalogue();

    // The exact name first, though another tool says "weather" three times.
    let hits = registry.search("weather", 10);
    assert_eq!(names(&hits)[..2], ["weather", "weather_alerts"], "{hits:?}");
    assert!(hits[0].exact());
    assert!(!hits[1].exact());
    assert_eq!(hits[0].definition().name, "weather");

    // An alias names its tool: first, before a description full of the word.
    let hits = registry.search("forecast", 10);
    assert_eq!(names(&hits), ["daily_outlook", "sky_report"], "{hits:?}");
    assert!(hits[0].exact());

    // A word of a description, of a parameter's name, of a parameter's description,
    // of a title and of a tag.
    assert_eq!(names(&registry.search("humidity", 10)), ["air_quality"]);
    assert_eq!(names(&registry.search("postcode", 10)), ["find_shops"]);
    assert_eq!(names(&registry.search("kilometres", 10)), ["find_shops"]);
    assert_eq!(names(&registry.search("measurement", 10)), ["archive"]);
    assert_eq!(names(&registry.search("history", 10)), ["archive"]);

    // Words are matched whatever their case, plural or spelling in code.
    assert_eq!(names(&registry.search("Humidities", 10)), ["air_quality"]);
    assert_eq!(
        names(&registry.search("convertTemperature", 10)),
        ["convert_temperature"]
    );
    // A word in a tool's name outranks the same word in a description.
    let hits = registry.search("city weather", 10);
    assert_eq!(hits[0].name(), "weather", "{hits:?}");

    // Scores fall from one hit to the next (after the exact one).
    let hits = registry.search("weather forecast", 10);
    assert!(hits.len() >= 3, "{hits:?}");
    assert!(
        hits.windows(2).all(|w| w[0].score() >= w[1].score()),
        "{hits:?}"
    );
    assert!(hits.iter().all(|h| h.score() > 0.0 && !h.exact()));

    // Nothing matches: no hit, and no panic on odd input.
    assert!(registry.search("zeppelin", 10).is_empty());
    for odd in [
        "",
        "   ",
        "!!! ??",
        "the of and",
        "\u{0}\u{ffff}",
        "ümlaut ✓",
    ] {
        assert!(registry.search(odd, 10).is_empty(), "{odd:?}");
    }
    let long = "weather ".repeat(100_000);
    assert_eq!(registry.search(&long, 10).len(), 2);
    // As many different words as a large request can carry.
    let letters = |mut n: usize| {
        let mut word = String::new();
        while n > 0 || word.is_empty() {
            word.push(char::from(b'a' + u8::try_from(n % 26).expect("below 26")));
            n /= 26;
        }
        word
    };
    let many: Vec<String> = (0..100_000).map(letters).collect();
    let many = format!("{} humidity", many.join(" "));
    assert!(names(&registry.search(&many, 10)).contains(&"air_quality"));
}

#[test]
fn a_search_answers_at_most_its_limit() {
    let registry = Registry::new();
    for i in 0..30 {
        let tool = tool(
            &format!("report_{i}"),
            &format!("Report number {i} of the ledger."),
            &[],
        );
        registry.register(tool).expect("registered");
    }
    assert_eq!(registry.search("ledger report", 5).len(), 5);
    assert_eq!(registry.search("ledger", 100).len(), 30);
    assert!(registry.search("ledger", 0).is_empty());
    // Equal scores come in name order, so a page is the same every time.
    let hits = registry.search("ledger", 3);
    assert_eq!(names(&hits), ["report_0", "report_1", "report_10"]);
}

#[test]
fn the_index_follows_the_registry_tool_by_tool() {
    let registry = catalogue();
    assert!(registry.search("water marks", 10).is_empty());

    registry
        .register(tool("tide_table", "High and low water marks.", &[]))
        .expect("registered");
    assert_eq!(names(&registry.search("water marks", 10)), ["tide_table"]);

    // Replaced: the old words go, the new ones come.
    let replacement = tool("tide_table", "Sea levels by the hour.", &[]);
    registry
        .register_with(replacement, RegisterOptions::new().allow_override(true))
        .expect("replaced");
    assert!(registry.search("water marks", 10).is_empty());
    assert_eq!(names(&registry.search("sea hour", 10)), ["tide_table"]);

    // (A replacement keeps the registrations of what it replaced: force it out.)
    assert!(registry.unregister_with("tide_table", UnregisterOptions::new().force()));
    assert!(registry.search("sea", 10).is_empty());
    assert!(!names(&registry.search("tide_table", 10)).contains(&"tide_table"));

    // A tool counted twice stays until its last registration goes.
    registry.register(tool("pier", "Boats.", &[])).expect("in");
    registry
        .register(tool("pier", "Boats.", &[]))
        .expect("counted");
    registry.unregister("pier");
    assert_eq!(names(&registry.search("boats", 10)), ["pier"]);
    registry.unregister("pier");
    assert!(registry.search("boats", 10).is_empty());

    // A child sees its parent's tools, and its own shadow in place of the parent's.
    let child = registry.isolate();
    child
        .register(tool("weather", "Conditions on the moon.", &[]))
        .expect("shadow");
    let hits = child.search("weather", 10);
    assert_eq!(names(&hits)[..2], ["weather", "weather_alerts"]);
    assert_eq!(
        hits[0].definition().description.as_deref(),
        Some("Conditions on the moon.")
    );
    assert_eq!(names(&child.search("moon", 10)), ["weather"]);
    assert!(registry.search("moon", 10).is_empty());
    assert_eq!(
        child
            .search("weather", 10)
            .iter()
            .filter(|h| h.name() == "weather")
            .count(),
        1
    );

    // Cleared: nothing left to find.
    futures::executor::block_on(registry.clear()).expect("cleared");
    assert!(registry.search("humidity", 10).is_empty());
    registry
        .register(tool("lighthouse", "A beacon.", &[]))
        .expect("registered");
    assert_eq!(names(&registry.search("beacon", 10)), ["lighthouse"]);
}

#[test]
fn searches_and_changes_from_many_threads_agree() {
    let registry = catalogue();
    assert!(!registry.search("weather", 1).is_empty()); // the index is made
    std::thread::scope(|threads| {
        for writer in 0..3 {
            let registry = &registry;
            threads.spawn(move || {
                for i in 0..100 {
                    let name = format!("buoy_{writer}_{i}");
                    registry
                        .register(tool(&name, "A drifting buoy.", &[]))
                        .expect("registered");
                    if i % 2 == 1 {
                        assert!(registry.unregister(&name));
                    }
                }
            });
        }
        for _ in 0..2 {
            let registry = &registry;
            threads.spawn(move || {
                for _ in 0..100 {
                    for hit in registry.search("drifting buoy", 20) {
                        assert!(hit.name().starts_with("buoy_"), "{hit:?}");
                    }
                }
            });
        }
    });
    let hits = registry.search("drifting buoy", 1_000);
    assert_eq!(hits.len(), 150);
    for writer in 0..3 {
        for i in 0..100 {
            let name = format!("buoy_{writer}_{i}");
            let first = registry.search(&name, 1);
            assert_eq!(first[0].exact(), i % 2 == 0, "{name}: {first:?}");
        }
    }
}

#[test]
fn a_hit_carries_the_definition_as_listed() {
    let registry = Registry::new();
    let tool = builder("summarised", "A very long description of the tool.", &[])
        .summary("Short.")
        .build()
        .expect("valid");
    registry.register(tool).expect("registered");
    let hits = registry.search("long description", 1);
    assert_eq!(hits[0].definition().description.as_deref(), Some("Short."));
    let definition = hits.into_iter().next().expect("a hit").into_definition();
    assert_eq!(definition.name, "summarised");
}

/// Files in one folder; reading needs `files:read`, writing `files:write` too.
struct Files {
    root: String,
}

/// Files of a folder.
#[tool_service(name = "files", scopes = "files:read")]
impl Files {
    /// Lists the folder's files.
    fn names(&self) -> Vec<String> {
        vec![self.root.clone()]
    }

    /// Writes a file to the folder.
    #[tool(scopes = "files:write")]
    fn write(&self, name: String) -> String {
        name
    }
}

/// A catalogue with a tool a layer hides from all but the auditor, a scoped tool
/// and a scoped service.
fn guarded() -> Registry {
    let registry = Registry::new();
    registry
        .register(tool("notes_read", "Reads a note of the folder.", &[]))
        .expect("in");
    registry
        .register(
            builder("notes_purge", "Deletes every note of the folder.", &[])
                .scopes(["notes:admin"])
                .build()
                .expect("valid"),
        )
        .expect("in");
    registry
        .register(tool("audit_log", "The folder's audit trail.", &[]))
        .expect("in");
    registry
        .register(
            builder("local_only", "Folder maintenance, in process only.", &[])
                .api(false)
                .build()
                .expect("valid"),
        )
        .expect("in");
    registry
        .register_service(Files {
            root: "/tmp".to_owned(),
        })
        .expect("in");
    registry.layer(layer::visibility(|tool, viewer| {
        let auditor = viewer.caller() == Some("auditor")
            || viewer
                .identity()
                .is_some_and(|who| who.subject() == "auditor");
        tool.name != "audit_log" || auditor
    }))
}

#[test]
fn a_runners_search_shows_only_what_its_caller_may_see() {
    let registry = guarded();
    // The program itself sees every tool.
    let all = registry.search("folder", 10);
    for name in [
        "notes_read",
        "notes_purge",
        "audit_log",
        "local_only",
        "files",
    ] {
        assert!(names(&all).contains(&name), "{name}: {all:?}");
    }

    // A layer hides `audit_log` from all but the auditor.
    let guest = search_for(&registry.with(CallOptions::new()), "folder", 10);
    assert!(!names(&guest).contains(&"audit_log"), "{guest:?}");
    assert!(names(&guest).contains(&"notes_purge"), "{guest:?}");
    let auditor = search_for(
        &registry.with(CallOptions::new().caller("auditor")),
        "audit trail",
        10,
    );
    assert_eq!(names(&auditor), ["audit_log"]);
    // The tool a query names is hidden like any other.
    assert!(search_for(&registry.with(CallOptions::new()), "audit_log", 10).is_empty());

    // A verified identity sees what its scopes allow: no `notes_purge` without
    // `notes:admin`, and of `files` only the acts it may run.
    let reader = registry
        .with(CallOptions::new().identity(Identity::new("reader").with_scopes(["files:read"])));
    let hits = search_for(&reader, "folder", 10);
    assert!(!names(&hits).contains(&"notes_purge"), "{hits:?}");
    let files = hits.iter().find(|h| h.name() == "files").expect("files");
    assert_eq!(files.definition().methods, ["$names"]);
    let nobody = registry.with(CallOptions::new().identity(Identity::new("nobody")));
    let hits = search_for(&nobody, "folder", 10);
    assert!(!names(&hits).contains(&"files"), "{hits:?}");
    let admin = registry.with(
        CallOptions::new()
            .identity(Identity::new("admin").with_scopes(["notes:admin", "files:read"])),
    );
    let hits = search_for(&admin, "deletes notes", 10);
    assert_eq!(hits[0].name(), "notes_purge");

    // Hidden tools do not use up the limit: the next visible ones take their place.
    let hits = search_for(&nobody, "folder", 2);
    assert_eq!(hits.len(), 2, "{hits:?}");
}

/// The keys of a JSON object, in the order they were sent.
fn keys_in_order(body: &[u8]) -> Vec<String> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some((key, IgnoredAny)) = map.next_entry::<String, IgnoredAny>()? {
                keys.push(key);
            }
            Ok(keys)
        }
    }
    serde_json::Deserializer::from_slice(body)
        .deserialize_map(Keys)
        .expect("a JSON object")
}

#[tokio::test]
async fn http_discovery_takes_a_query_and_answers_best_first() {
    let registry = catalogue();
    for i in 0..30 {
        let tool = tool(
            &format!("station_{i:02}"),
            "A weather station.",
            &[("sensor", "Which sensor to read.")],
        );
        registry.register(tool).expect("registered");
    }
    let addr = http::start(Api::new(&registry)).await;

    let reply = http::get(addr, "/api?q=weather%20forecast&limit=4").await;
    let body = reply.ok();
    let keys = keys_in_order(&reply.body);
    assert_eq!(keys.len(), 4, "{body}");
    let expected: Vec<String> = names(&registry.search("weather forecast", 4))
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(keys, expected);
    // Discovery's own shape: each entry is the definition, marked `isApi`.
    let first = &body[&keys[0]];
    assert_eq!(first["name"], keys[0].as_str());
    assert_eq!(first["isApi"], true);
    assert!(first["params"].is_object(), "{first}");

    // The exact name first, and `+` is a space as in any form-encoded query.
    let reply = http::get(addr, "/api?q=weather").await;
    assert_eq!(keys_in_order(&reply.body)[0], "weather");
    let reply = http::get(addr, "/api?q=sensor+station&limit=2").await;
    assert_eq!(keys_in_order(&reply.body), ["station_00", "station_01"]);

    // Without a limit, ten; without a query, every tool as before.
    let reply = http::get(addr, "/api?q=station").await;
    assert_eq!(keys_in_order(&reply.body).len(), 10);
    let all = http::get(addr, "/api").await.ok();
    assert_eq!(all.as_object().map(Map::len), Some(38));
    // No match: an empty object.
    assert_eq!(http::get(addr, "/api?q=zeppelin").await.ok(), json!({}));
}

#[tokio::test]
async fn http_discovery_search_shows_each_caller_what_it_may_see() {
    let registry = guarded();
    let keys = ApiKeys::new()
        .key("guest-key", Identity::new("guest"))
        .key("auditor-key", Identity::new("auditor"))
        .key(
            "admin-key",
            Identity::new("admin").with_scopes(["notes:admin", "files:read"]),
        );
    let addr = http::start(Api::new(&registry).authenticate(keys)).await;
    let search = |key: &'static str, query: &'static str| async move {
        let auth = format!("Bearer {key}");
        let path = format!("/api?q={query}");
        let reply = http::call(addr, "GET", &path, &[("authorization", &auth)], None).await;
        reply.ok();
        keys_in_order(&reply.body)
    };
    let guest = search("guest-key", "folder").await;
    assert_eq!(
        guest,
        ["notes_read"],
        "hidden, scoped and in-process tools stay out"
    );
    let admin = search("admin-key", "folder").await;
    for name in ["notes_read", "notes_purge", "files"] {
        assert!(admin.contains(&name.to_owned()), "{name}: {admin:?}");
    }
    assert!(!admin.contains(&"local_only".to_owned()));
    assert!(!admin.contains(&"audit_log".to_owned()));
    // The layer sees the verified caller: the auditor's key shows the log.
    assert_eq!(search("auditor-key", "audit").await, ["audit_log"]);
    assert!(search("guest-key", "audit").await.is_empty());
    // An exact name does not reveal a tool the caller may not see.
    let named = search("guest-key", "notes_purge").await;
    assert!(!named.contains(&"notes_purge".to_owned()), "{named:?}");
    let named = search("guest-key", "local_only").await;
    assert!(!named.contains(&"local_only".to_owned()), "{named:?}");
    // Without a credential, nothing at all.
    http::get(addr, "/api?q=folder")
        .await
        .error(401, "UNAUTHENTICATED");
}

#[tokio::test]
async fn http_discovery_refuses_a_bad_query_with_its_path() {
    let addr = http::start(Api::new(catalogue())).await;
    let long = format!("/api?q={}", "a".repeat(1025));
    let cases = [
        ("/api?q=", "/q"),
        ("/api?q=%20%20", "/q"),
        (long.as_str(), "/q"),
        ("/api?q=weather&q=city", "/q"),
        ("/api?limit=0", "/limit"),
        ("/api?q=weather&limit=", "/limit"),
        ("/api?q=weather&limit=ten", "/limit"),
        ("/api?q=weather&limit=-1", "/limit"),
        ("/api?q=weather&limit=0", "/limit"),
        ("/api?q=weather&limit=101", "/limit"),
        ("/api?q=weather&limit=99999999999999999999999", "/limit"),
        ("/api?q=weather&limit=1&limit=2", "/limit"),
    ];
    for (path, at) in cases {
        let body = http::get(addr, path).await.error(400, "ARGUMENTS");
        assert_eq!(body["data"]["path"], at, "{path}: {body}");
    }
    // At the bounds, an answer; the bound counts characters.
    let exactly = format!("/api?q={}", "a".repeat(1024));
    assert_eq!(http::get(addr, &exactly).await.ok(), json!({}));
    let wide = format!("/api?q={}", "%C3%A9".repeat(1024));
    assert_eq!(http::get(addr, &wide).await.ok(), json!({}));
    let body = http::get(addr, &format!("{wide}%C3%A9"))
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/q");
    // Without `q`, discovery lists every tool; a `limit` is checked all the same.
    let all = http::get(addr, "/api?limit=3").await.ok();
    assert_eq!(all.as_object().map(Map::len), Some(8));
    http::get(addr, "/api?q=weather&limit=100").await.ok();
    // Other parameters are left alone, as discovery always did.
    http::get(addr, "/api?q=weather&p=1").await.ok();

    // The bounds are settings.
    let addr = http::start(
        Api::new(catalogue())
            .max_search_results(2)
            .max_search_query(8),
    )
    .await;
    let reply = http::get(addr, "/api?q=weather").await;
    assert_eq!(keys_in_order(&reply.body).len(), 2);
    let body = http::get(addr, "/api?q=weather&limit=3")
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/limit");
    let body = http::get(addr, "/api?q=weatherish")
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/q");
}

#[tokio::test]
async fn the_openapi_document_lists_the_search_parameters() {
    let addr = http::start(Api::new(catalogue())).await;
    let document = http::get(addr, "/api/openapi.json").await.ok();
    let discovery = &document["paths"]["/api"]["get"];
    let parameters = discovery["parameters"].as_array().expect("parameters");
    let q = parameters.iter().find(|p| p["name"] == "q").expect("q");
    assert_eq!(q["in"], "query");
    assert_eq!(q["required"], false);
    assert_eq!(q["schema"]["maxLength"], 1024);
    assert_eq!(q["schema"]["pattern"], "\\S");
    let limit = parameters
        .iter()
        .find(|p| p["name"] == "limit")
        .expect("limit");
    assert_eq!(
        limit["schema"],
        json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 10})
    );
    assert!(discovery["responses"].get("400").is_some(), "{discovery}");
}
