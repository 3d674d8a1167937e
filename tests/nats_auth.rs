//! Workers behind an authenticator: every request over NATS (calls, streams,
//! discovery, control messages, durable submits and outcome reads) shows a bearer
//! token the worker checks; the verified identity rides on the call, and durable
//! calls belong to it.

#[path = "support/nats.rs"]
mod nats_server;
#[path = "support/tokens.rs"]
mod tokens;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokens::{Key, claims, jwks};
use toolfunc::auth::ApiKeys;
use toolfunc::auth::jwt::Jwt;
use toolfunc::nats::async_nats;
use toolfunc::nats::{Client, DurableSettings, Worker};
use toolfunc::{CallOptions, Identity, Registry, ToolFunc};

use nats_server::NatsServer;

const ISSUER: &str = "https://auth.example.com";
const AUDIENCE: &str = "nats://toolfunc";

/// `whoami` answers the verified subject and the stated caller; `count` streams.
fn catalog(seen: &Arc<Mutex<Vec<Option<String>>>>) -> Registry {
    let registry = Registry::new();
    let seen = Arc::clone(seen);
    registry
        .register(
            ToolFunc::builder("whoami")
                .handler_sync(move |ctx, _args| {
                    let subject = ctx.identity().map(|who| who.subject().to_owned());
                    seen.lock().unwrap().push(subject.clone());
                    Ok(json!({"subject": subject, "caller": ctx.caller()}))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("count")
                .stream_handler(|ctx, _args| async move {
                    let subject = ctx.identity().map(|who| who.subject().to_owned());
                    Ok(futures::stream::iter(
                        (0..3).map(move |n| Ok(json!({"n": n, "subject": subject}))),
                    ))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

fn code(message: &async_nats::Message) -> Option<String> {
    message
        .headers
        .as_ref()
        .and_then(|h| h.get("Tf-Error-Code"))
        .map(|v| v.as_str().to_owned())
}

#[tokio::test]
async fn a_call_without_a_good_token_is_refused_and_a_good_ones_subject_is_the_callers() {
    let server = NatsServer::start();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let key = Key::new("k1");
    let _worker = Worker::builder(catalog(&seen))
        .authenticate(Jwt::with_keys(ISSUER, AUDIENCE, &jwks(&[&key])).unwrap())
        .durable(DurableSettings::new())
        .connect(&server.url())
        .await
        .unwrap();
    // No token, or a bad one: nothing is listed, nothing runs.
    let err = Client::connect(&server.url()).await.unwrap_err();
    assert_eq!((err.code(), err.status()), ("UNAUTHENTICATED", 401));
    let other = Key::new("k1");
    for token in [
        "not-a-jwt".to_owned(),
        other.sign(&claims(ISSUER, AUDIENCE, "mallory", "")),
        key.sign(&claims(ISSUER, "another-audience", "mallory", "")),
        tokens::unsigned(&claims(ISSUER, AUDIENCE, "mallory", "")),
    ] {
        let err = Client::builder()
            .token(token)
            .connect(&server.url())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "UNAUTHENTICATED");
    }
    let nats = async_nats::connect(server.url()).await.unwrap();
    let mut stated = async_nats::HeaderMap::new();
    stated.insert("Tf-Caller", "admin");
    for (subject, payload) in [
        ("toolfunc.call.whoami", "{}"),
        ("toolfunc.call.count", "{}"),
        ("toolfunc.tools", ""),
        ("toolfunc.submit.whoami", "{}"),
        ("toolfunc.outcome", r#"{"id":"x"}"#),
    ] {
        let answer = nats
            .request_with_headers(subject, stated.clone(), payload.into())
            .await
            .unwrap();
        assert_eq!(
            code(&answer).as_deref(),
            Some("UNAUTHENTICATED"),
            "{subject}"
        );
        let status = answer.headers.as_ref().unwrap();
        assert_eq!(
            status.get("Nats-Service-Error-Code").unwrap().as_str(),
            "401"
        );
    }
    let mut basic = async_nats::HeaderMap::new();
    basic.insert("Authorization", "Basic YWRtaW46YWRtaW4=");
    let answer = nats
        .request_with_headers("toolfunc.call.whoami", basic, "{}".into())
        .await
        .unwrap();
    assert_eq!(code(&answer).as_deref(), Some("UNAUTHENTICATED"));
    assert!(seen.lock().unwrap().is_empty(), "a refused call ran");

    // A good token: the subject is the caller's, whatever the client states.
    let token = key.sign(&claims(ISSUER, AUDIENCE, "ann", "tools:run"));
    let client = Client::builder()
        .token(&token)
        .connect(&server.url())
        .await
        .unwrap();
    let me = client
        .with(CallOptions::new().caller("admin"))
        .run("whoami", json!({}))
        .await
        .unwrap();
    assert_eq!(me, json!({"subject": "ann", "caller": "admin"}));
    let items: Vec<Value> = client
        .run_stream("count", json!({}))
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(items.len(), 3);
    assert_eq!(items[2], json!({"n": 2, "subject": "ann"}));
    // Durable calls run as their submitter too.
    let id = client.submit("whoami", json!({})).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.wait(&id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome["subject"], "ann");
    // A raw NATS client with the header is served the same.
    let mut bearer = async_nats::HeaderMap::new();
    bearer.insert("Authorization", format!("Bearer {token}").as_str());
    let answer = nats
        .request_with_headers("toolfunc.call.whoami", bearer, "{}".into())
        .await
        .unwrap();
    assert_eq!(code(&answer), None);
    let answer: Value = serde_json::from_slice(&answer.payload).unwrap();
    assert_eq!(answer["subject"], "ann");
}

#[tokio::test]
async fn another_owners_durable_outcome_is_refused() {
    let server = NatsServer::start();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keys = ApiKeys::new()
        .key("ann-key", Identity::new("ann"))
        .key("bob-key", Identity::new("bob"));
    let _worker = Worker::builder(catalog(&seen))
        .authenticate(keys)
        .durable(DurableSettings::new())
        .connect(&server.url())
        .await
        .unwrap();
    let ann = Client::builder()
        .token("ann-key")
        .connect(&server.url())
        .await
        .unwrap();
    let bob = Client::builder()
        .token("bob-key")
        .connect(&server.url())
        .await
        .unwrap();
    let id = ann.submit("whoami", json!({})).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), ann.wait(&id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome["subject"], "ann");
    // Bob is told there is no such call, as for an id no call has.
    assert_eq!(bob.poll(&id).await.unwrap_err().code(), "NOT_FOUND");
    assert_eq!(bob.wait(&id).await.unwrap_err().code(), "NOT_FOUND");
    // Naming himself as Ann gets him nothing: with an authenticator, the stated
    // caller is a label.
    let nats = async_nats::connect(server.url()).await.unwrap();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Authorization", "Bearer bob-key");
    headers.insert("Tf-Caller", "ann");
    let answer = nats
        .request_with_headers(
            "toolfunc.outcome",
            headers,
            json!({ "id": id }).to_string().into(),
        )
        .await
        .unwrap();
    assert_eq!(code(&answer).as_deref(), Some("NOT_FOUND"));
    // The record a raw reader gets has no secrets, and names its owner.
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Authorization", "Bearer ann-key");
    let answer = nats
        .request_with_headers(
            "toolfunc.outcome",
            headers,
            json!({ "id": id }).to_string().into(),
        )
        .await
        .unwrap();
    let record: Value = serde_json::from_slice(&answer.payload).unwrap();
    assert_eq!(record["owner"], "ann");
    assert_eq!(record["status"], "completed");
    assert!(record.get("seal").is_none());
}

#[tokio::test]
async fn a_control_message_needs_a_good_token_too() {
    let server = NatsServer::start();
    let started = Arc::new(tokio::sync::Notify::new());
    let registry = Registry::new();
    {
        let started = Arc::clone(&started);
        registry
            .register(
                ToolFunc::builder("nap")
                    .handler(move |_ctx, _args| {
                        started.notify_one();
                        async move {
                            tokio::time::sleep(Duration::from_millis(1500)).await;
                            Ok(json!("done"))
                        }
                    })
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    let worker = Worker::builder(registry)
        .authenticate(
            ApiKeys::new()
                .key("ann-key", Identity::new("ann"))
                .key("bob-key", Identity::new("bob")),
        )
        .connect(&server.url())
        .await
        .unwrap();
    let nats = async_nats::connect(server.url()).await.unwrap();
    // Ann's call, sent by hand so the test knows its id and secret.
    let send = |key: &'static str| {
        let nats = nats.clone();
        async move {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Authorization", "Bearer ann-key");
            headers.insert("Tf-Call-Id", "call-1");
            headers.insert("Tf-Control-Key", key);
            nats.request_with_headers("toolfunc.call.nap", headers, "{}".into())
                .await
                .unwrap()
        }
    };
    let cancel = |token: &str, key: &str| {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Authorization", format!("Bearer {token}").as_str());
        headers.insert("Tf-Call-Id", "call-1");
        headers.insert("Tf-Control-Key", key);
        headers.insert("Tf-Cancel", "stop");
        headers
    };
    // Bob, even with the secret, and anyone without a token: ignored.
    let call = tokio::spawn(send("secret-1"));
    started.notified().await;
    for headers in [cancel("bob-key", "secret-1"), cancel("nobody", "secret-1")] {
        nats.publish_with_headers("toolfunc.ctl", headers, "".into())
            .await
            .unwrap();
    }
    nats.flush().await.unwrap();
    let answer = call.await.unwrap();
    assert_eq!(&answer.payload[..], br#""done""#);
    // Ann herself, by her verified subject: the call is cancelled.
    let call = tokio::spawn(send("secret-2"));
    started.notified().await;
    nats.publish_with_headers("toolfunc.ctl", cancel("ann-key", "another"), "".into())
        .await
        .unwrap();
    let answer = call.await.unwrap();
    assert_eq!(code(&answer).as_deref(), Some("CANCELLED"));
    assert_eq!(worker.in_flight(), 0);
}

#[tokio::test]
async fn discovery_lists_only_what_the_caller_may_see() {
    let server = NatsServer::start();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let registry = catalog(&seen).layer(toolfunc::layer::visibility(|tool, viewer| {
        tool.name != "count"
            || viewer
                .identity()
                .is_some_and(|who| who.has_scopes(&["streams"]))
    }));
    let _worker = Worker::builder(registry)
        .authenticate(
            ApiKeys::new()
                .key("ann-key", Identity::new("ann"))
                .key("root-key", Identity::new("root").with_scopes(["streams"])),
        )
        .connect(&server.url())
        .await
        .unwrap();
    let ann = Client::builder()
        .token("ann-key")
        .connect(&server.url())
        .await
        .unwrap();
    assert_eq!(ann.names(), ["whoami"]);
    let mut items = ann.run_stream("count", json!({}));
    assert_eq!(items.next().await.unwrap().unwrap_err().code(), "NOT_FOUND");
    let root = Client::builder()
        .token("root-key")
        .connect(&server.url())
        .await
        .unwrap();
    assert_eq!(root.names(), ["count", "whoami"]);
}

#[tokio::test]
async fn a_tool_needing_a_scope_is_listed_and_run_only_for_callers_with_it() {
    let server = NatsServer::start();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let registry = catalog(&seen);
    registry
        .register(
            ToolFunc::builder("purge")
                .scopes(["admin"])
                .handler_sync(|_ctx, _args| Ok(json!("purged")))
                .build()
                .unwrap(),
        )
        .unwrap();
    let _worker = Worker::builder(registry)
        .authenticate(
            ApiKeys::new()
                .key("ann-key", Identity::new("ann"))
                .key("root-key", Identity::new("root").with_scopes(["admin"])),
        )
        .durable(DurableSettings::new())
        .connect(&server.url())
        .await
        .unwrap();
    let ann = Client::builder()
        .token("ann-key")
        .connect(&server.url())
        .await
        .unwrap();
    assert_eq!(ann.names(), ["count", "whoami"]);
    // Called by name anyway (a raw client): refused with the scope to ask for,
    // and a durable submit is refused when submitted.
    let nats = async_nats::connect(server.url()).await.unwrap();
    let mut bearer = async_nats::HeaderMap::new();
    bearer.insert("Authorization", "Bearer ann-key");
    for subject in ["toolfunc.call.purge", "toolfunc.submit.purge"] {
        let answer = nats
            .request_with_headers(subject, bearer.clone(), "{}".into())
            .await
            .unwrap();
        assert_eq!(
            code(&answer).as_deref(),
            Some("INSUFFICIENT_SCOPE"),
            "{subject}"
        );
        let headers = answer.headers.as_ref().unwrap();
        assert_eq!(
            headers.get("Nats-Service-Error-Code").unwrap().as_str(),
            "403"
        );
    }
    let root = Client::builder()
        .token("root-key")
        .connect(&server.url())
        .await
        .unwrap();
    assert_eq!(root.names(), ["count", "purge", "whoami"]);
    assert_eq!(root.run("purge", json!({})).await.unwrap(), "purged");
    let id = root.submit("purge", json!({})).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), root.wait(&id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, "purged");
}

/// A durable call submitted through a worker that does not serve its tool (so
/// that worker cannot judge its scopes) is judged by the worker that runs it: a
/// caller without the scopes gets `INSUFFICIENT_SCOPE` as the outcome and the tool
/// never runs.
#[tokio::test]
async fn a_durable_submit_through_a_worker_without_the_tool_is_still_scope_checked() {
    let server = NatsServer::start();
    let keys = || {
        ApiKeys::new()
            .key("ann-key", Identity::new("ann"))
            .key("root-key", Identity::new("root").with_scopes(["admin"]))
    };
    // The first worker serves no `purge`: it takes the submit all the same.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let first = Worker::builder(catalog(&seen))
        .authenticate(keys())
        .durable(DurableSettings::new())
        .connect(&server.url())
        .await
        .unwrap();
    let nats = async_nats::connect(server.url()).await.unwrap();
    let mut bearer = async_nats::HeaderMap::new();
    bearer.insert("Authorization", "Bearer ann-key");
    let answer = nats
        .request_with_headers("toolfunc.submit.purge", bearer, "{}".into())
        .await
        .unwrap();
    assert_eq!(code(&answer), None, "the submit is taken");
    let id = serde_json::from_slice::<Value>(&answer.payload).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    first.stop(Duration::from_secs(1)).await;
    // The worker that serves it runs nothing for a caller without `admin`.
    let ran = Arc::new(Mutex::new(0));
    let registry = Registry::new();
    let counter = Arc::clone(&ran);
    registry
        .register(
            ToolFunc::builder("purge")
                .scopes(["admin"])
                .handler_sync(move |_ctx, _args| {
                    *counter.lock().unwrap() += 1;
                    Ok(json!("purged"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let _second = Worker::builder(registry)
        .authenticate(keys())
        .durable(DurableSettings::new())
        .connect(&server.url())
        .await
        .unwrap();
    let ann = Client::builder()
        .token("ann-key")
        .connect(&server.url())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(30), ann.wait(&id))
        .await
        .expect("an outcome in time");
    let err = outcome.expect_err("refused for its scopes");
    assert_eq!(err.code(), "INSUFFICIENT_SCOPE", "{err}");
    assert_eq!(*ran.lock().unwrap(), 0, "the tool never ran");
}
