//! Tracked calls: started now, read later by id; cancelled by id or for going
//! unpolled; results kept as their retention says; the ledger bounded.

use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::ledger::{Ledger, LedgerSettings, Retention, TaskPoll, TaskStatus, Track};
use toolfunc::{CallOptions, Ctx, Identity, Registry, ToolError, ToolFunc};

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("work")
                .handler(|ctx: Ctx, args: Value| async move {
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    ctx.progress(1.0, Some(2.0), Some("half way"));
                    let token = ctx.cancellation_token();
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                        () = token.cancelled() => {
                            return Err(ToolError::Cancelled { reason: Some("stopped".into()) });
                        }
                    }
                    if args["fail"] == true {
                        return Err(ToolError::custom("REPORT_FAILED", 422, "no report"));
                    }
                    Ok(json!({"ms": ms}))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

async fn until_done(ledger: &Ledger, id: &str) -> Result<Value, ToolError> {
    for _ in 0..500 {
        if let TaskPoll::Done(result) = ledger.poll(id).unwrap() {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{id} did not finish");
}

#[tokio::test]
async fn a_tracked_call_is_read_later_by_id() {
    let ledger = Ledger::new(registry());
    let id = ledger
        .start_with(
            "work",
            json!({"ms": 200}),
            Track::new().options(CallOptions::new().caller("ann")),
        )
        .unwrap();
    // Running: its status, caller and progress.
    let info = loop {
        let info = ledger.status(&id).unwrap();
        if info.progress.is_some() {
            break info;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(info.status, TaskStatus::Working);
    assert_eq!(info.tool, "work");
    assert_eq!(info.caller.as_deref(), Some("ann"));
    assert!((info.progress.unwrap().done - 1.0).abs() < f64::EPSILON);
    assert!(matches!(ledger.poll(&id).unwrap(), TaskPoll::Working(_)));
    assert_eq!(ledger.list().len(), 1);
    // From another task.
    let other = ledger.clone();
    let waited = tokio::spawn(async move { other.wait(&id).await })
        .await
        .unwrap();
    assert_eq!(waited.unwrap(), json!({"ms": 200}));
}

#[tokio::test]
async fn failures_and_cancellations_are_results_too() {
    let ledger = Ledger::new(registry());
    let failed = ledger.start("work", json!({"fail": true})).unwrap();
    assert_eq!(
        ledger.wait(&failed).await.unwrap_err().code(),
        "REPORT_FAILED"
    );
    assert_eq!(ledger.status(&failed).unwrap().status, TaskStatus::Failed);

    let long = ledger.start("work", json!({"ms": 60_000})).unwrap();
    ledger.cancel(&long).unwrap();
    assert_eq!(ledger.wait(&long).await.unwrap_err().code(), "CANCELLED");
    assert_eq!(ledger.status(&long).unwrap().status, TaskStatus::Cancelled);
    // Cancelling what is finished changes nothing and is not an error.
    ledger.cancel(&long).unwrap();
    ledger.cancel(&failed).unwrap();
    assert_eq!(ledger.status(&failed).unwrap().status, TaskStatus::Failed);

    // An unknown tool is the call's result, as for any call.
    let unknown_tool = ledger.start("no_such_tool", json!({})).unwrap();
    assert_eq!(
        ledger.wait(&unknown_tool).await.unwrap_err().code(),
        "NOT_FOUND"
    );
}

#[tokio::test]
async fn an_unknown_id_is_not_found() {
    let ledger = Ledger::new(registry());
    for err in [
        ledger.poll("nope").unwrap_err(),
        ledger.cancel("nope").unwrap_err(),
        ledger.wait("nope").await.unwrap_err(),
    ] {
        assert_eq!(err.code(), "NOT_FOUND");
        assert!(err.to_string().contains("tracked"), "{err}");
    }
    assert!(ledger.status("nope").is_none());
    assert!(!ledger.remove("nope"));
}

#[tokio::test]
async fn retention_decides_how_long_a_result_stays() {
    let ledger = Ledger::new(registry());
    let once = ledger
        .start_with(
            "work",
            json!({}),
            Track::new().retention(Retention::UntilRead),
        )
        .unwrap();
    assert_eq!(until_done(&ledger, &once).await.unwrap(), json!({"ms": 0}));
    assert_eq!(ledger.poll(&once).unwrap_err().code(), "NOT_FOUND");

    let kept = ledger
        .start_with(
            "work",
            json!({}),
            Track::new().retention(Retention::UntilRemoved),
        )
        .unwrap();
    until_done(&ledger, &kept).await.unwrap();
    until_done(&ledger, &kept).await.unwrap();
    assert!(ledger.remove(&kept));
    assert_eq!(ledger.poll(&kept).unwrap_err().code(), "NOT_FOUND");

    let settings =
        LedgerSettings::default().tool_retention("work", Retention::KeepFor(Duration::ZERO));
    let ledger = Ledger::with_settings(registry(), settings);
    let brief = ledger.start("work", json!({})).unwrap();
    ledger.wait(&brief).await.unwrap();
    // Past its retention and the sweep interval, it is gone.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(ledger.list().is_empty());
    assert_eq!(ledger.poll(&brief).unwrap_err().code(), "NOT_FOUND");
}

#[tokio::test]
async fn the_ledger_is_bounded_and_ids_are_not_reused() {
    let ledger = Ledger::with_settings(registry(), LedgerSettings::default().max_entries(2));
    let a = ledger.start("work", json!({"ms": 60_000})).unwrap();
    ledger
        .start_with("work", json!({"ms": 60_000}), Track::new().id("b"))
        .unwrap();
    let full = ledger.start("work", json!({})).unwrap_err();
    assert_eq!((full.code(), full.status()), ("BUSY", 503));
    // The id of a tracked call cannot be taken again.
    assert!(ledger.remove(&a));
    let taken = ledger
        .start_with("work", json!({}), Track::new().id("b"))
        .unwrap_err();
    assert_eq!(taken.code(), "CONFLICT");
    // Removing made room.
    ledger.start("work", json!({})).unwrap();
}

#[tokio::test]
async fn forgotten_and_overlong_calls_are_stopped() {
    let settings = LedgerSettings::default()
        .unpolled_limit(Some(Duration::from_millis(50)))
        .max_run_time(None);
    let ledger = Ledger::with_settings(registry(), settings);
    let forgotten = ledger.start("work", json!({"ms": 60_000})).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // The next use of the ledger sweeps, and cancels what nobody asked about.
    let _ = ledger.list();
    assert_eq!(
        ledger.wait(&forgotten).await.unwrap_err().code(),
        "CANCELLED"
    );

    let settings = LedgerSettings::default().max_run_time(Some(Duration::from_millis(50)));
    let ledger = Ledger::with_settings(registry(), settings);
    let long = ledger.start("work", json!({"ms": 60_000})).unwrap();
    assert_eq!(ledger.wait(&long).await.unwrap_err().code(), "TIMEOUT");
}

#[test]
fn outside_a_runtime_a_tracked_call_is_refused_clearly() {
    let ledger = Ledger::new(registry());
    let err = ledger.start("work", json!({})).unwrap_err();
    assert_eq!(err.code(), "FAILED");
    assert!(err.to_string().contains("tokio runtime"), "{err}");
}

#[tokio::test]
async fn a_tracked_call_waits_for_the_answers_to_its_questions() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("ask")
                .handler(|ctx: Ctx, _args: Value| async move {
                    let schema = json!({"type": "object"});
                    let first = ctx.elicit("First?", schema.clone()).await?;
                    let second = ctx.elicit_named("second", "Second?", schema).await?;
                    Ok(json!([first.content, second.content]))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let ledger = Ledger::new(registry);
    let track = Track::new()
        .park_questions()
        .options(CallOptions::new().caller("ann"));
    let id = ledger.start_with("ask", json!({}), track).unwrap();
    // `settle` returns once the call asks.
    let info = ledger.settle(&id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(info.status, TaskStatus::InputRequired);
    assert_eq!(info.questions.len(), 1);
    assert_eq!(info.questions[0].key, "elicitation_1");
    assert!(matches!(
        &info.questions[0].request,
        toolfunc::ask::ClientRequest::Elicit { message, .. } if message == "First?"
    ));
    // A key it does not wait on is no answer.
    assert!(!ledger.answer(&id, "nope", json!({})).unwrap());
    let accept = |n: u8| json!({"action": "accept", "content": {"n": n}});
    assert!(ledger.answer(&id, "elicitation_1", accept(1)).unwrap());
    let info = ledger.settle(&id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(info.questions[0].key, "second");
    assert!(ledger.answer(&id, "second", accept(2)).unwrap());
    assert_eq!(ledger.wait(&id).await.unwrap(), json!([{"n": 1}, {"n": 2}]));
    // Only its caller may read it.
    assert!(ledger.visible_to(&id, Some("ann")));
    assert!(!ledger.visible_to(&id, Some("bob")));
    assert!(!ledger.visible_to(&id, None));
    assert!(!ledger.visible_to("unknown", Some("ann")));
}

#[tokio::test]
async fn a_call_cancelled_while_it_waits_for_an_answer_ends() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("ask")
                .handler(|ctx: Ctx, _args: Value| async move {
                    ctx.elicit("Never answered?", json!({"type": "object"}))
                        .await?;
                    Ok(json!("answered"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let ledger = Ledger::new(registry);
    let id = ledger
        .start_with("ask", json!({}), Track::new().park_questions())
        .unwrap();
    let info = ledger.settle(&id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(info.status, TaskStatus::InputRequired);
    // Anyone may read a call started for no named caller.
    assert!(ledger.visible_to(&id, None));
    assert!(ledger.visible_to(&id, Some("anyone")));
    ledger.cancel(&id).unwrap();
    let err = ledger.wait(&id).await.unwrap_err();
    assert_eq!(err.code(), "CANCELLED");
    let info = ledger.status(&id).unwrap();
    assert_eq!(info.status, TaskStatus::Cancelled);
    assert!(info.questions.is_empty());
    // `settle` of a call that is done returns at once.
    let info = ledger.settle(&id, Duration::from_secs(60)).await.unwrap();
    assert!(info.status.is_finished());
}

fn as_caller(caller: &str) -> Track {
    Track::new().options(CallOptions::new().caller(caller))
}

#[tokio::test]
async fn a_tracked_call_is_found_by_its_id_and_its_caller() {
    let ledger = Ledger::new(registry());
    let ann = ledger
        .start_with("work", json!({"ms": 60_000}), as_caller("ann").id("job"))
        .unwrap();
    // Another caller may use the same id: it names a call of its own.
    let bob = ledger
        .start_with("work", json!({"ms": 5}), as_caller("bob").id("job"))
        .unwrap();
    assert_eq!((ann.as_str(), bob.as_str()), ("job", "job"));
    let (for_ann, for_bob) = (
        ledger.for_caller(Some("ann")),
        ledger.for_caller(Some("bob")),
    );
    assert_eq!(for_bob.wait("job").await.unwrap(), json!({"ms": 5}));
    assert_eq!(for_ann.status("job").unwrap().status, TaskStatus::Working);
    assert_eq!(
        for_ann.status("job").unwrap().caller.as_deref(),
        Some("ann")
    );
    // To anyone else it does not exist; a view lists only its caller's calls.
    let eve = ledger.for_caller(Some("eve"));
    assert!(eve.status("job").is_none());
    assert_eq!(eve.poll("job").unwrap_err().code(), "NOT_FOUND");
    assert_eq!(eve.cancel("job").unwrap_err().code(), "NOT_FOUND");
    assert!(!eve.remove("job"));
    assert!(eve.list().is_empty());
    assert_eq!(for_ann.list().len(), 1);
    assert!(!ledger.for_caller(None).visible_to("job", None));
    // Its own caller cannot take it twice while it is kept.
    let taken = ledger
        .start_with("work", json!({}), as_caller("ann").id("job"))
        .unwrap_err();
    assert_eq!(taken.code(), "CONFLICT");
    assert!(for_ann.remove("job"));
}

/// A verified caller is its issuer and subject: the same `sub` from another
/// issuer is another caller, whose view does not find the call.
#[tokio::test]
async fn the_same_subject_from_two_issuers_is_two_callers() {
    let ledger = Ledger::new(registry());
    let ann = Identity::new("ann").with_issuer("https://a.example.com");
    let impostor = Identity::new("ann").with_issuer("https://b.example.com");
    let track = Track::new().options(CallOptions::new().identity(ann.clone()));
    let id = ledger
        .start_with("work", json!({"ms": 60_000}), track)
        .unwrap();
    assert!(ledger.for_caller(Some(ann.key())).status(&id).is_some());
    for other in [impostor.key(), "ann"] {
        let view = ledger.for_caller(Some(other));
        assert!(view.status(&id).is_none(), "{other}");
        assert_eq!(view.cancel(&id).unwrap_err().code(), "NOT_FOUND");
    }
    assert!(ledger.for_caller(Some(ann.key())).remove(&id));
}

#[tokio::test]
async fn each_caller_has_a_quota_and_the_ledger_a_byte_budget() {
    let settings = LedgerSettings::default().max_entries_per_caller(2);
    let ledger = Ledger::with_settings(registry(), settings);
    for _ in 0..2 {
        ledger
            .start_with("work", json!({"ms": 60_000}), as_caller("ann"))
            .unwrap();
    }
    // Ann floods: only she is refused; Bob and callers with no name still get in.
    let refused = ledger
        .start_with("work", json!({}), as_caller("ann"))
        .unwrap_err();
    assert_eq!((refused.code(), refused.status()), ("BUSY", 429));
    ledger
        .start_with("work", json!({"ms": 60_000}), as_caller("bob"))
        .unwrap();
    ledger.start("work", json!({"ms": 60_000})).unwrap();

    // Bytes: the results a caller keeps count against its share and the total.
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("echo")
                .handler_sync(|_ctx, args: Value| Ok(args["text"].clone()))
                .build()
                .unwrap(),
        )
        .unwrap();
    // (The arguments count too, while the entry is kept: 24 KB each here.)
    let settings = LedgerSettings::default()
        .max_bytes_per_caller(10_000)
        .max_bytes(40_000);
    let ledger = Ledger::with_settings(registry, settings);
    let big = json!({"text": "x".repeat(12_000)});
    let kept = ledger
        .start_with("echo", big.clone(), as_caller("ann"))
        .unwrap();
    assert!(
        ledger.wait(&kept).await.is_ok(),
        "read, and kept for 5 minutes"
    );
    let refused = ledger
        .start_with("echo", big.clone(), as_caller("ann"))
        .unwrap_err();
    assert_eq!((refused.code(), refused.status()), ("BUSY", 429));
    let bob = ledger
        .start_with("echo", big.clone(), as_caller("bob"))
        .unwrap();
    ledger.wait(&bob).await.unwrap();
    // Past the total, everyone is refused until results are read or removed.
    let full = ledger.start_with("echo", big, as_caller("cy")).unwrap_err();
    assert_eq!((full.code(), full.status()), ("BUSY", 503));
    assert!(ledger.remove(&kept));
    ledger
        .start_with("echo", json!({"text": "small"}), as_caller("cy"))
        .unwrap();
}

/// What a running call holds counts in its caller's quota before it has any
/// result: its arguments (so a caller cannot park large arguments in long calls).
#[tokio::test]
async fn the_arguments_of_a_running_call_count_in_its_callers_quota() {
    let settings = LedgerSettings::default().max_bytes_per_caller(10_000);
    let ledger = Ledger::with_settings(registry(), settings);
    let big = json!({"ms": 60_000, "note": "x".repeat(12_000)});
    let running = ledger
        .start_with("work", big.clone(), as_caller("ann"))
        .unwrap();
    let refused = ledger
        .start_with("work", json!({"ms": 60_000}), as_caller("ann"))
        .unwrap_err();
    assert_eq!((refused.code(), refused.status()), ("BUSY", 429));
    // Another caller is not held back, and the place comes back when it goes.
    ledger
        .start_with("work", json!({"ms": 60_000}), as_caller("bob"))
        .unwrap();
    assert!(ledger.remove(&running));
    ledger
        .start_with("work", json!({"ms": 60_000}), as_caller("ann"))
        .unwrap();
}

#[tokio::test]
async fn overlong_ids_and_callers_are_refused() {
    let settings = LedgerSettings::default()
        .max_id_bytes(8)
        .max_caller_bytes(8);
    let ledger = Ledger::with_settings(registry(), settings);
    let long_id = ledger
        .start_with("work", json!({}), Track::new().id("123456789"))
        .unwrap_err();
    assert_eq!((long_id.code(), long_id.status()), ("TOO_LONG", 400));
    assert_eq!(long_id.data().unwrap()["max"], 8);
    let long_caller = ledger
        .start_with("work", json!({}), as_caller("123456789"))
        .unwrap_err();
    assert_eq!(long_caller.code(), "TOO_LONG");
    assert!(ledger.list().is_empty());
    // Within the caps, and the ledger's own ids: fine.
    ledger
        .start_with("work", json!({}), as_caller("12345678").id("12345678"))
        .unwrap();
    ledger.start("work", json!({})).unwrap();
    let defaults = LedgerSettings::default();
    assert_eq!(
        (defaults.max_id_bytes, defaults.max_caller_bytes),
        (256, 256)
    );
}
