//! `layer::Metrics`: per-tool counts, errors by code, durations and calls in flight,
//! scraped as Prometheus text from `GET /metrics` of an `http::Api` (opt in) after
//! real calls; gauges read by callback; the caps on what it keeps; and with the
//! feature `otel`, the same counts through an OpenTelemetry meter. The example
//! server serves them with `--metrics`, and only then.

#[path = "support/http.rs"]
mod http_support;
#[path = "support/nats.rs"]
mod nats_server;
#[path = "support/process.rs"]
mod process;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;
use toolfunc::http::{Api, Server};
use toolfunc::layer::{Metrics, MetricsSettings};
use toolfunc::ledger::Ledger;
use toolfunc::{Registry, ToolError, ToolFunc};

use http_support::{LIMIT, call, get, post, start};

/// `add`, `fail` (always `NOPE`, 400) and `flaky` (`FAILED` on `{"fail": true}`).
fn tools() -> Registry {
    let registry = Registry::new();
    let add = ToolFunc::builder("add")
        .handler_sync(|_, args| {
            let a = args["a"].as_f64().unwrap_or(0.0);
            let b = args["b"].as_f64().unwrap_or(0.0);
            Ok(json!(a + b))
        })
        .build()
        .expect("add");
    let fail = ToolFunc::builder("fail")
        .handler_sync(|_, _| Err(ToolError::custom("NOPE", 400, "never")))
        .build()
        .expect("fail");
    let flaky = ToolFunc::builder("flaky")
        .handler(|_, args| async move {
            tokio::task::yield_now().await;
            if args["fail"] == json!(true) {
                Err(ToolError::failed("flaked"))
            } else {
                Ok(json!("fine"))
            }
        })
        .build()
        .expect("flaky");
    for tool in [add, fail, flaky] {
        registry.register(tool).expect("register");
    }
    registry
}

/// The samples of a scrape: `name{labels}` (labels as written) to value.
fn samples(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("`series value`");
            assert!(value.parse::<f64>().is_ok(), "a number: {line}");
            (series.to_owned(), value.to_owned())
        })
        .collect()
}

/// The count a series says, 0 when absent.
fn value(samples: &HashMap<String, String>, series: &str) -> u64 {
    samples
        .get(series)
        .map_or(0, |v| v.parse().expect("a whole number"))
}

/// Checks `tool`'s histogram: `count` calls, cumulative buckets, a sum in seconds.
fn check_histogram(text: &str, samples: &HashMap<String, String>, tool: &str, count: u64) {
    let series = |suffix: &str, extra: &str| {
        format!(
            "toolfunc_tool_call_duration_seconds_{suffix}{{gen_ai_tool_name=\"{tool}\"{extra}}}"
        )
    };
    assert_eq!(
        value(samples, &series("count", "")),
        count,
        "{tool}'s histogram count"
    );
    assert_eq!(
        value(samples, &series("bucket", ",le=\"+Inf\"")),
        count,
        "{tool}'s +Inf bucket"
    );
    // Cumulative buckets never go down.
    let buckets: Vec<u64> = text
        .lines()
        .filter(|l| {
            l.starts_with(&format!(
                "toolfunc_tool_call_duration_seconds_bucket{{gen_ai_tool_name=\"{tool}\","
            ))
        })
        .map(|l| l.rsplit_once(' ').unwrap().1.parse().unwrap())
        .collect();
    assert_eq!(buckets.len(), toolfunc::layer::DEFAULT_BUCKETS.len() + 1);
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    let sum: f64 = samples[&series("sum", "")].parse().unwrap();
    assert!(sum > 0.0 && sum < 60.0, "{tool}'s sum {sum}");
}

#[tokio::test]
async fn a_scrape_has_the_calls_errors_and_durations_of_each_tool() {
    let metrics = Metrics::new();
    let registry = tools().layer(metrics.clone());
    let addr = start(Api::new(registry.clone()).metrics(metrics)).await;
    for i in 0..5 {
        post(addr, "/api/add", &format!("{{\"a\":{i},\"b\":1}}"))
            .await
            .ok();
    }
    for _ in 0..3 {
        post(addr, "/api/fail", "{}").await.error(400, "NOPE");
    }
    post(addr, "/api/flaky", "{}").await.ok();
    post(addr, "/api/flaky", "{\"fail\":true}")
        .await
        .error(500, "FAILED");
    // An in-process call is counted by the same layer.
    assert_eq!(registry.run("flaky", json!({})).await.unwrap(), "fine");

    let scrape = get(addr, "/metrics").await;
    assert_eq!(scrape.status, 200);
    assert_eq!(
        scrape.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = scrape.text();
    for (family, kind) in [
        ("toolfunc_tool_calls_total", "counter"),
        ("toolfunc_tool_call_errors_total", "counter"),
        ("toolfunc_tool_call_duration_seconds", "histogram"),
        ("toolfunc_tool_calls_in_flight", "gauge"),
    ] {
        assert!(
            text.contains(&format!("\n# TYPE {family} {kind}\n"))
                || text.starts_with(&format!("# HELP {family} ")),
            "{family} in {text}"
        );
        assert!(
            text.contains(&format!("# HELP {family} ")),
            "{family} has help"
        );
        assert!(
            text.contains(&format!("# TYPE {family} {kind}\n")),
            "{family} is a {kind}"
        );
    }
    let all = samples(&text);
    let calls = |tool: &str| {
        value(
            &all,
            &format!("toolfunc_tool_calls_total{{gen_ai_tool_name=\"{tool}\"}}"),
        )
    };
    assert_eq!((calls("add"), calls("fail"), calls("flaky")), (5, 3, 3));
    let errors = |tool: &str, code: &str| {
        value(
            &all,
            &format!(
                "toolfunc_tool_call_errors_total{{gen_ai_tool_name=\"{tool}\",error_type=\"{code}\"}}"
            ),
        )
    };
    assert_eq!(errors("fail", "NOPE"), 3);
    assert_eq!(errors("flaky", "FAILED"), 1);
    assert_eq!(errors("add", "NOPE"), 0);
    assert!(!text.contains("toolfunc_tool_call_errors_total{gen_ai_tool_name=\"add\""));
    for (tool, count) in [("add", 5), ("fail", 3), ("flaky", 3)] {
        check_histogram(&text, &all, tool, count);
        let in_flight = format!("toolfunc_tool_calls_in_flight{{gen_ai_tool_name=\"{tool}\"}}");
        assert_eq!(all.get(&in_flight).map(String::as_str), Some("0"));
    }
}

#[tokio::test]
async fn calls_in_flight_are_counted_until_they_end() {
    let metrics = Metrics::new();
    let registry = Registry::new().layer(metrics.clone());
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (s, r) = (Arc::clone(&started), Arc::clone(&release));
    let wait = ToolFunc::builder("wait")
        .handler(move |_, _| {
            let (s, r) = (Arc::clone(&s), Arc::clone(&r));
            async move {
                s.notify_one();
                r.notified().await;
                Ok(json!("done"))
            }
        })
        .build()
        .expect("wait");
    registry.register(wait).expect("register");
    let running = tokio::spawn({
        let registry = registry.clone();
        async move { registry.run("wait", json!({})).await }
    });
    tokio::time::timeout(LIMIT, started.notified())
        .await
        .expect("the call starts");
    let in_flight = "toolfunc_tool_calls_in_flight{gen_ai_tool_name=\"wait\"}";
    assert_eq!(value(&samples(&metrics.prometheus()), in_flight), 1);
    release.notify_one();
    assert_eq!(running.await.unwrap().unwrap(), "done");
    let after = samples(&metrics.prometheus());
    assert_eq!(value(&after, in_flight), 0);
    assert_eq!(
        value(
            &after,
            "toolfunc_tool_calls_total{gen_ai_tool_name=\"wait\"}"
        ),
        1
    );

    // A call its caller stops waiting for is counted as cancelled, and leaves.
    let gone =
        tokio::time::timeout(Duration::from_millis(50), registry.run("wait", json!({}))).await;
    assert!(gone.is_err(), "the call was still waiting");
    let after = samples(&metrics.prometheus());
    assert_eq!(value(&after, in_flight), 0);
    assert_eq!(
        value(
            &after,
            "toolfunc_tool_calls_total{gen_ai_tool_name=\"wait\"}"
        ),
        2
    );
    assert_eq!(
        value(
            &after,
            "toolfunc_tool_call_errors_total{gen_ai_tool_name=\"wait\",error_type=\"CANCELLED\"}"
        ),
        1
    );
}

#[tokio::test]
async fn a_stream_is_one_call_that_ends_with_the_stream() {
    use futures::StreamExt;

    let metrics = Metrics::new();
    let registry = Registry::new().layer(metrics.clone());
    let count = ToolFunc::builder("count")
        .stream_handler(|_, _| async { Ok(futures::stream::iter((0..3).map(|i| Ok(json!(i))))) })
        .build()
        .expect("count");
    registry.register(count).expect("register");
    let mut items = registry.run_stream("count", json!({}));
    let in_flight = "toolfunc_tool_calls_in_flight{gen_ai_tool_name=\"count\"}";
    let calls = "toolfunc_tool_calls_total{gen_ai_tool_name=\"count\"}";
    assert_eq!(items.next().await.unwrap().unwrap(), json!(0));
    let now = samples(&metrics.prometheus());
    assert_eq!((value(&now, in_flight), value(&now, calls)), (1, 0));
    while items.next().await.is_some() {}
    let done = samples(&metrics.prometheus());
    assert_eq!((value(&done, in_flight), value(&done, calls)), (0, 1));
    drop(items);
    assert_eq!(value(&samples(&metrics.prometheus()), calls), 1);
}

#[tokio::test]
async fn label_values_and_help_are_escaped() {
    let metrics = Metrics::new();
    let registry = Registry::new().layer(metrics.clone());
    let odd = ToolFunc::builder("odd")
        .handler_sync(|_, _| Err(ToolError::custom("SAID \"NO\"\nTWICE\\", 400, "odd")))
        .build()
        .expect("odd");
    registry.register(odd).expect("register");
    assert!(registry.run_sync("odd", json!({})).is_err());
    // Tool names are any text too.
    let quoted = ToolFunc::builder("say \"hi\"\nnow\\")
        .handler_sync(|_, _| Ok(json!("hi")))
        .build()
        .expect("quoted");
    registry.register(quoted).expect("register");
    registry.run_sync("say \"hi\"\nnow\\", json!({})).unwrap();
    metrics
        .gauge("odd.gauge", "two\nlines and a \\ backslash", || 7)
        .expect("a valid name");
    let text = metrics.prometheus();
    assert!(
        text.contains(
            "toolfunc_tool_call_errors_total{gen_ai_tool_name=\"odd\",error_type=\"SAID \\\"NO\\\"\\nTWICE\\\\\"} 1\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("# HELP odd_gauge two\\nlines and a \\\\ backslash\n"),
        "{text}"
    );
    assert!(text.contains("\nodd_gauge 7\n"), "{text}");
    assert!(
        text.contains(
            "toolfunc_tool_calls_total{gen_ai_tool_name=\"say \\\"hi\\\"\\nnow\\\\\"} 1\n"
        ),
        "{text}"
    );
    // Every line is a comment or `series value`: nothing broke a line.
    for line in text.lines() {
        assert!(
            line.starts_with("# ")
                || line
                    .rsplit_once(' ')
                    .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
            "{line}"
        );
    }
}

#[tokio::test]
async fn the_route_is_served_only_when_asked_for() {
    let registry = tools();
    let plain = start(Api::new(registry.clone())).await;
    get(plain, "/metrics").await.error(404, "NOT_FOUND");
    // At the root prefix too, `/metrics` is only a tool's name.
    let root = start(Api::new(registry.clone()).prefix("/")).await;
    get(root, "/metrics").await.error(404, "NOT_FOUND");

    let metrics = Metrics::new();
    let served = start(Api::new(registry.layer(metrics.clone())).metrics(metrics.clone())).await;
    assert_eq!(get(served, "/metrics").await.status, 200);
    // Screened as the API's requests are: a host the API does not serve is refused.
    let elsewhere = Api::new(Registry::new())
        .allowed_hosts(["tools.example"])
        .metrics(metrics.clone());
    get(start(elsewhere).await, "/metrics")
        .await
        .error(403, "HOST_NOT_ALLOWED");
    // One API of a server serves it.
    let twice = Server::new()
        .mount(Api::new(Registry::new()).metrics(metrics.clone()))
        .expect("one")
        .mount(Api::new(Registry::new()).prefix("/other").metrics(metrics));
    assert_eq!(twice.unwrap_err().code(), "CONFLICT");
}

#[tokio::test]
async fn the_auth_hook_and_the_authenticator_guard_the_route() {
    let metrics = Metrics::new();
    let api = Api::new(tools().layer(metrics.clone()))
        .metrics(metrics)
        .auth(|req| match req.headers.get("authorization") {
            Some(v) if v == "Bearer scrape" => Ok(()),
            _ => Err(ToolError::custom("UNAUTHORIZED", 401, "a token is needed")),
        });
    let addr = start(api).await;
    get(addr, "/metrics").await.error(401, "UNAUTHORIZED");
    let ok = call(
        addr,
        "GET",
        "/metrics",
        &[("authorization", "Bearer scrape")],
        None,
    )
    .await;
    assert_eq!(ok.status, 200);

    // With an authenticator, a token must grant `metrics:read`: any other valid
    // token is refused 403 with a challenge naming the scope.
    let metrics = Metrics::new();
    let keys = || {
        toolfunc::auth::ApiKeys::new()
            .key(
                "s3cret",
                toolfunc::Identity::new("ops").with_scopes(["metrics:read"]),
            )
            .key("caller", toolfunc::Identity::new("ann"))
    };
    let addr = start(Api::new(tools()).metrics(metrics).authenticate(keys())).await;
    assert_eq!(get(addr, "/metrics").await.status, 401);
    let ok = call(
        addr,
        "GET",
        "/metrics",
        &[("authorization", "Bearer s3cret")],
        None,
    )
    .await;
    assert_eq!(ok.status, 200);
    let refused = call(
        addr,
        "GET",
        "/metrics",
        &[("authorization", "Bearer caller")],
        None,
    )
    .await;
    refused.error(403, "INSUFFICIENT_SCOPE");
    let challenge = refused.header("www-authenticate").unwrap_or_default();
    assert!(challenge.contains("scope=\"metrics:read\""), "{challenge}");
    // A scope of one's own, or none at all.
    for (scope, caller_status) in [("ops:scrape", 403), ("", 200)] {
        let metrics = Metrics::new();
        let keys = keys().key(
            "scraper",
            toolfunc::Identity::new("prom").with_scopes(["ops:scrape"]),
        );
        let api = Api::new(tools())
            .metrics(metrics)
            .metrics_scope(scope)
            .authenticate(keys);
        let addr = start(api).await;
        let by = |token: &'static str| {
            let header = format!("Bearer {token}");
            async move {
                call(
                    addr,
                    "GET",
                    "/metrics",
                    &[("authorization", header.as_str())],
                    None,
                )
                .await
                .status
            }
        };
        assert_eq!(by("scraper").await, 200, "{scope:?}");
        assert_eq!(by("caller").await, caller_status, "{scope:?}");
    }
}

#[tokio::test]
async fn a_nats_workers_calls_in_flight_are_a_gauge() {
    use toolfunc::nats::{Client, Worker};

    let server = nats_server::NatsServer::start();
    let metrics = Metrics::new();
    let registry = Registry::new().layer(metrics.clone());
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (s, r) = (Arc::clone(&started), Arc::clone(&release));
    let wait = ToolFunc::builder("wait")
        .handler(move |_, _| {
            let (s, r) = (Arc::clone(&s), Arc::clone(&r));
            async move {
                s.notify_one();
                r.notified().await;
                Ok(json!("done"))
            }
        })
        .build()
        .expect("wait");
    registry.register(wait).expect("register");
    let worker = Worker::builder(registry)
        .connect(&server.url())
        .await
        .expect("the worker starts");
    metrics
        .gauge(
            "toolfunc.nats.calls.in_flight",
            "Calls the NATS worker runs now.",
            worker.in_flight_reader(),
        )
        .unwrap();
    let gauge = || {
        value(
            &samples(&metrics.prometheus()),
            "toolfunc_nats_calls_in_flight",
        )
    };
    assert_eq!(gauge(), 0);
    let client = Client::connect(&server.url()).await.expect("a client");
    let call = tokio::spawn(async move { client.run("wait", json!({})).await });
    tokio::time::timeout(LIMIT, started.notified())
        .await
        .expect("the call starts");
    assert_eq!(gauge(), 1);
    let tool = "toolfunc_tool_calls_in_flight{gen_ai_tool_name=\"wait\"}";
    assert_eq!(value(&samples(&metrics.prometheus()), tool), 1);
    release.notify_one();
    assert_eq!(call.await.unwrap().expect("an answer"), "done");
    // The permit goes back once the answer is sent.
    for _ in 0..500 {
        if gauge() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(gauge(), 0);
    // A worker gone reads 0, and the gauge keeps nothing of it alive.
    drop(worker);
    assert_eq!(gauge(), 0);
}

#[tokio::test]
async fn the_example_server_serves_metrics_with_the_flag_only() {
    for flag in [false, true] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut command = tokio::process::Command::new(process::example("server"));
        command
            .args(["--addr", &format!("127.0.0.1:{port}")])
            .stderr(std::process::Stdio::piped());
        if flag {
            command.arg("--metrics");
        }
        let mut server = process::Running::start(&mut command, "the example server");
        server
            .until_prefix("toolfunc demo server listening on", LIMIT)
            .await;
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        post(addr, "/api/add", "{\"a\":1,\"b\":2}").await.ok();
        post(addr, "/api/fail", "{}").await;
        let scrape = get(addr, "/metrics").await;
        if !flag {
            assert_eq!(scrape.status, 404, "{}", scrape.text());
            continue;
        }
        assert_eq!(scrape.status, 200, "{}", scrape.text());
        let all = samples(&scrape.text());
        let calls = |tool: &str| {
            value(
                &all,
                &format!("toolfunc_tool_calls_total{{gen_ai_tool_name=\"{tool}\"}}"),
            )
        };
        assert_eq!((calls("add"), calls("fail")), (1, 1));
        assert_eq!(value(&all, "toolfunc_ledger_entries"), 0);
        assert!(all.contains_key("toolfunc_ledger_entries"));
        // The MCP endpoint's open sessions: one more after an `initialize`.
        assert_eq!(value(&all, "toolfunc_mcp_sessions_open"), 0);
        let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let opened = call(
            addr,
            "POST",
            "/mcp",
            &[
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            Some(initialize),
        )
        .await;
        assert_eq!(opened.status, 200, "{}", opened.text());
        let all = samples(&get(addr, "/metrics").await.text());
        assert_eq!(value(&all, "toolfunc_mcp_sessions_open"), 1);
    }
}

#[test]
fn what_is_kept_is_bounded() {
    let metrics = Metrics::with_settings(
        MetricsSettings::new()
            .max_tools(1)
            .max_error_codes(1)
            .max_error_code_bytes(8)
            .buckets([f64::NAN, 1.0, -1.0, 0.5, 1.0, f64::INFINITY]),
    );
    let registry = tools().layer(metrics.clone());
    let codes = ToolFunc::builder("codes")
        .handler_sync(|_, args| {
            Err(ToolError::custom(
                args["code"].as_str().unwrap_or("X").to_owned(),
                400,
                "coded",
            ))
        })
        .build()
        .expect("codes");
    registry.register(codes).expect("register");
    registry.run_sync("add", json!({"a": 1, "b": 2})).unwrap();
    // Past the one tool: counted under `_OTHER`.
    registry.run_sync("flaky", json!({})).unwrap_err();
    registry.run_sync("fail", json!({})).unwrap_err();
    let all = samples(&metrics.prometheus());
    assert_eq!(
        value(&all, "toolfunc_tool_calls_total{gen_ai_tool_name=\"add\"}"),
        1
    );
    assert_eq!(
        value(
            &all,
            "toolfunc_tool_calls_total{gen_ai_tool_name=\"_OTHER\"}"
        ),
        2
    );
    assert!(!all.keys().any(|k| k.contains("\"fail\"")));

    let metrics = Metrics::with_settings(
        MetricsSettings::new()
            .max_error_codes(1)
            .max_error_code_bytes(8)
            .buckets([f64::NAN, 1.0, -1.0, 0.5, 1.0]),
    );
    let registry = tools().layer(metrics.clone());
    let codes = ToolFunc::builder("codes")
        .handler_sync(|_, args| {
            Err(ToolError::custom(
                args["code"].as_str().unwrap_or("X").to_owned(),
                400,
                "coded",
            ))
        })
        .build()
        .expect("codes");
    registry.register(codes).expect("register");
    for code in ["FIRST", "SECOND", "THIRD", "A_VERY_LONG_CODE"] {
        registry
            .run_sync("codes", json!({"code": code}))
            .unwrap_err();
    }
    let text = metrics.prometheus();
    let all = samples(&text);
    let errors = |code: &str| {
        value(
            &all,
            &format!(
                "toolfunc_tool_call_errors_total{{gen_ai_tool_name=\"codes\",error_type=\"{code}\"}}"
            ),
        )
    };
    assert_eq!((errors("FIRST"), errors("_OTHER")), (1, 3));
    // The buckets kept: 0.5 and 1, then +Inf.
    let les: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("toolfunc_tool_call_duration_seconds_bucket{gen_ai_tool_name=\"codes\"")
        })
        .map(|l| l.split("le=\"").nth(1).unwrap().split('"').next().unwrap())
        .collect();
    assert_eq!(les, ["0.5", "1", "+Inf"]);
}

#[tokio::test]
async fn gauges_are_read_at_each_scrape() {
    let metrics = Metrics::new();
    let registry = tools();
    let ledger = Ledger::new(&registry);
    let entries = ledger.clone();
    metrics
        .gauge(
            "toolfunc.ledger.entries",
            "Calls the ledger tracks.",
            move || u64::try_from(entries.len()).unwrap_or(u64::MAX),
        )
        .expect("a valid name");
    let text = metrics.prometheus();
    assert!(
        text.contains("# TYPE toolfunc_ledger_entries gauge\n"),
        "{text}"
    );
    assert_eq!(value(&samples(&text), "toolfunc_ledger_entries"), 0);
    let id = ledger
        .start("add", json!({"a": 1, "b": 2}))
        .expect("started");
    ledger.wait(&id).await.expect("done");
    assert_eq!(ledger.len(), 1);
    assert_eq!(
        value(&samples(&metrics.prometheus()), "toolfunc_ledger_entries"),
        1
    );
    assert!(ledger.remove(&id));
    assert!(ledger.is_empty());
    assert_eq!(
        value(&samples(&metrics.prometheus()), "toolfunc_ledger_entries"),
        0
    );

    // A name given again replaces the gauge; a bad name is refused.
    metrics
        .gauge("toolfunc.ledger.entries", "Replaced.", || 42)
        .unwrap();
    assert_eq!(
        value(&samples(&metrics.prometheus()), "toolfunc_ledger_entries"),
        42
    );
    // Taken names: a tool metric's, another gauge's Prometheus name.
    for taken in [
        "toolfunc.tool.calls.in_flight",
        "toolfunc_tool_calls_total",
        "toolfunc.tool.call.duration.seconds.count",
        "toolfunc_ledger.entries",
    ] {
        let err = metrics.gauge(taken, "taken", || 0).unwrap_err();
        assert_eq!(err.code(), "CONFLICT", "{taken}");
    }
    metrics.gauge("toolfunc", "Not taken.", || 1).unwrap();
    for bad in [
        "",
        "1st",
        "has space",
        "new\nline",
        "dash-ed",
        &"x".repeat(256),
    ] {
        let err = metrics.gauge(bad, "bad", || 0).unwrap_err();
        assert_eq!(err.code(), "ARGUMENTS", "{bad:?}");
    }
}

/// `name[attributes]` of an exported series (attributes sorted, as `key=value`).
#[cfg(feature = "otel")]
fn key(name: &str, attributes: &[String]) -> String {
    format!("{name}{attributes:?}")
}

/// What an export holds: each series' value (a sum's, a gauge's; a histogram's
/// count) by [`key`].
#[cfg(feature = "otel")]
fn exported(metrics: &opentelemetry_sdk::metrics::data::ResourceMetrics) -> HashMap<String, u64> {
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ScopeMetrics};

    let attrs = |kvs: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
        let mut all: Vec<String> = kvs.map(|kv| format!("{}={}", kv.key, kv.value)).collect();
        all.sort();
        all
    };
    let mut seen = HashMap::new();
    for metric in metrics.scope_metrics().flat_map(ScopeMetrics::metrics) {
        let name = metric.name();
        match metric.data() {
            AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                for point in sum.data_points() {
                    seen.insert(key(name, &attrs(&mut point.attributes())), point.value());
                }
            }
            AggregatedMetrics::I64(MetricData::Sum(sum)) => {
                for point in sum.data_points() {
                    let value = u64::try_from(point.value()).expect("not negative");
                    seen.insert(key(name, &attrs(&mut point.attributes())), value);
                }
            }
            AggregatedMetrics::U64(MetricData::Gauge(gauge)) => {
                for point in gauge.data_points() {
                    seen.insert(key(name, &attrs(&mut point.attributes())), point.value());
                }
            }
            AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                assert_eq!(metric.unit(), "s");
                for point in histogram.data_points() {
                    seen.insert(key(name, &attrs(&mut point.attributes())), point.count());
                    assert_eq!(
                        point.bucket_counts().count(),
                        toolfunc::layer::DEFAULT_BUCKETS.len() + 1
                    );
                }
            }
            _ => {}
        }
    }
    seen
}

#[cfg(feature = "otel")]
#[tokio::test]
async fn an_opentelemetry_meter_sees_the_same_counts() {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let metrics = Metrics::new();
    metrics
        .otel(&provider.meter("toolfunc"))
        .expect("the first meter");
    assert_eq!(
        metrics.otel(&provider.meter("again")).unwrap_err().code(),
        "CONFLICT"
    );
    metrics
        .gauge("toolfunc.test.answer", "The answer.", || 42)
        .unwrap();
    let registry = tools().layer(metrics.clone());
    let addr = start(Api::new(registry.clone()).metrics(metrics.clone())).await;
    for _ in 0..4 {
        post(addr, "/api/add", "{\"a\":1,\"b\":2}").await.ok();
    }
    for _ in 0..2 {
        post(addr, "/api/fail", "{}").await.error(400, "NOPE");
    }
    provider.force_flush().expect("flushed");
    let finished = exporter.get_finished_metrics().expect("metrics");
    let last = finished.last().expect("one export");
    let seen = exported(last);
    let tool = |name: &str| vec![format!("gen_ai.tool.name={name}")];
    assert_eq!(
        seen.get(&key("toolfunc.tool.calls", &tool("add"))),
        Some(&4),
        "{seen:?}"
    );
    assert_eq!(
        seen.get(&key("toolfunc.tool.calls", &tool("fail"))),
        Some(&2),
        "{seen:?}"
    );
    assert_eq!(
        seen.get(&key(
            "toolfunc.tool.call.errors",
            &[
                "error.type=NOPE".to_owned(),
                "gen_ai.tool.name=fail".to_owned()
            ]
        )),
        Some(&2),
        "{seen:?}"
    );
    assert_eq!(
        seen.get(&key("toolfunc.tool.call.duration", &tool("add"))),
        Some(&4),
        "{seen:?}"
    );
    assert_eq!(
        seen.get(&key("toolfunc.tool.call.duration", &tool("fail"))),
        Some(&2),
        "{seen:?}"
    );
    assert_eq!(
        seen.get(&key("toolfunc.tool.calls.in_flight", &tool("add"))),
        Some(&0),
        "{seen:?}"
    );
    assert_eq!(
        seen.get(&key("toolfunc.test.answer", &[])),
        Some(&42),
        "{seen:?}"
    );
    // The Prometheus text says the same.
    let text = get(addr, "/metrics").await.text();
    let all = samples(&text);
    assert_eq!(
        value(&all, "toolfunc_tool_calls_total{gen_ai_tool_name=\"add\"}"),
        4
    );
    assert_eq!(
        value(
            &all,
            "toolfunc_tool_call_errors_total{gen_ai_tool_name=\"fail\",error_type=\"NOPE\"}"
        ),
        2
    );
    provider.shutdown().expect("shut down");
}
