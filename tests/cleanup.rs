//! Per-call cleanup: async cleanups are awaited before an async call resolves, run in
//! reverse order of registration with the sync ones, and their failures are reported
//! with the call's own result.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::{CallOptions, Ctx, Registry, ToolError, ToolFunc};

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, entry: &str) {
        self.0.lock().unwrap().push(entry.to_owned());
    }

    fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("work")
                .handler(|ctx: Ctx, args: Value| async move {
                    let log = ctx.get::<Log>().cloned().unwrap_or_default();
                    let first = log.clone();
                    ctx.on_cleanup(move || first.push("sync-1"));
                    let second = log.clone();
                    let fail_cleanup = args["fail_cleanup"].as_bool().unwrap_or(false);
                    ctx.on_cleanup_async(async move {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        second.push("async-2");
                        if fail_cleanup {
                            Err(ToolError::failed("cleanup broke"))
                        } else {
                            Ok(())
                        }
                    });
                    let third = log.clone();
                    ctx.on_cleanup(move || third.push("sync-3"));
                    log.push("body");
                    if args["fail_body"].as_bool().unwrap_or(false) {
                        return Err(ToolError::custom("BODY", 422, "body broke"));
                    }
                    Ok(json!("done"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

async fn run(args: Value) -> (Result<Value, ToolError>, Vec<String>) {
    let log = Log::default();
    let runner = registry().with(CallOptions::new().insert(log.clone()));
    let result = tokio::time::timeout(Duration::from_secs(10), runner.run("work", args))
        .await
        .expect("the call ends");
    (result, log.entries())
}

#[tokio::test]
async fn async_cleanups_finish_before_the_call_resolves_in_reverse_order() {
    let (result, log) = run(json!({})).await;
    assert_eq!(result.unwrap(), json!("done"));
    assert_eq!(log, ["body", "sync-3", "async-2", "sync-1"]);
}

#[tokio::test]
async fn a_failing_cleanup_fails_a_successful_call() {
    let (result, log) = run(json!({"fail_cleanup": true})).await;
    let err = result.unwrap_err();
    assert_eq!(err.code(), "FAILED");
    assert_eq!(err.to_string(), "cleanup broke");
    assert_eq!(log, ["body", "sync-3", "async-2", "sync-1"]);
}

#[tokio::test]
async fn a_failing_body_and_cleanup_report_both() {
    let (result, _) = run(json!({"fail_body": true, "fail_cleanup": true})).await;
    let err = result.unwrap_err();
    assert_eq!(err.code(), "AGGREGATE");
    let ToolError::Aggregate { errors } = &err else {
        panic!("expected an aggregate, got {err:?}");
    };
    let codes: Vec<&str> = errors.iter().map(ToolError::code).collect();
    assert_eq!(codes, ["BODY", "FAILED"]);
    // The body's error leads: its status is the call's.
    assert_eq!(err.status(), 422);
    // It crosses a wire and comes back whole.
    let back: ToolError = serde_json::from_value(serde_json::to_value(&err).unwrap()).unwrap();
    assert!(matches!(back, ToolError::Aggregate { ref errors } if errors.len() == 2));
}

#[tokio::test]
async fn a_failing_body_with_clean_cleanups_keeps_its_own_error() {
    let (result, log) = run(json!({"fail_body": true})).await;
    assert_eq!(result.unwrap_err().code(), "BODY");
    assert_eq!(log, ["body", "sync-3", "async-2", "sync-1"]);
}
