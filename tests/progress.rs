//! Progress: `Ctx::progress` reaches the caller's `on_progress` listener with the
//! tool's name, the call id and the numbers, from nested and streaming calls too; and
//! a call without a listener is unaffected.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use tokio::time::timeout;
use toolfunc::{CallOptions, Ctx, Progress, Registry, ToolCall, ToolError, ToolResult, tool};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// Collects progress reports.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Progress>>>);

impl Recorder {
    fn listener(&self) -> impl Fn(Progress) + Send + Sync + 'static {
        let reports = Arc::clone(&self.0);
        move |p| {
            reports
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(p);
        }
    }

    fn options(&self) -> CallOptions {
        CallOptions::new().on_progress(self.listener())
    }

    fn reports(&self) -> Vec<Report> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(Report::of)
            .collect()
    }
}

/// A `Progress` as a comparable value.
#[derive(Debug, Clone, PartialEq)]
struct Report {
    tool: String,
    call_id: Option<String>,
    done: f64,
    total: Option<f64>,
    message: Option<String>,
}

impl Report {
    fn of(p: &Progress) -> Self {
        Self {
            tool: p.tool.clone(),
            call_id: p.call_id.clone(),
            done: p.done,
            total: p.total,
            message: p.message.clone(),
        }
    }
}

fn report(
    tool: &str,
    call_id: Option<&str>,
    done: f64,
    total: Option<f64>,
    message: Option<&str>,
) -> Report {
    Report {
        tool: tool.to_owned(),
        call_id: call_id.map(str::to_owned),
        done,
        total,
        message: message.map(str::to_owned),
    }
}

/// The reports `pr_steps` (or `pr_steps_async`) makes for `steps` steps.
fn steps_reports(tool: &str, call_id: Option<&str>, steps: u32) -> Vec<Report> {
    (1..=steps)
        .map(|i| {
            report(
                tool,
                call_id,
                f64::from(i),
                Some(f64::from(steps)),
                Some(&format!("step {i}")),
            )
        })
        .collect()
}

/// Where `pr_parent` sends the progress of the nested call it redirects.
#[derive(Clone, Default)]
struct Side(Recorder);

/// Works through `steps` steps, reporting each.
#[tool]
fn pr_steps(ctx: &Ctx, steps: u32) -> u32 {
    for i in 1..=steps {
        ctx.progress(
            f64::from(i),
            Some(f64::from(steps)),
            Some(&format!("step {i}")),
        );
    }
    steps
}

/// Works through `steps` steps asynchronously, yielding between reports.
#[tool]
async fn pr_steps_async(ctx: &Ctx, steps: u32) -> u32 {
    for i in 1..=steps {
        tokio::task::yield_now().await;
        ctx.progress(
            f64::from(i),
            Some(f64::from(steps)),
            Some(&format!("step {i}")),
        );
    }
    steps
}

/// Reports without a total or a message.
#[tool]
fn pr_bare(ctx: &Ctx) -> &'static str {
    ctx.progress(0.5, None, None);
    "done"
}

/// Reports around two nested calls; the second one's progress goes elsewhere when
/// the caller handed in a `Side` recorder.
#[tool]
async fn pr_parent(ctx: &Ctx) -> Result<Value, ToolError> {
    ctx.progress(0.0, Some(2.0), Some("parent start"));
    let first = ctx.run("pr_steps_async", json!({"steps": 2})).await?;
    ctx.progress(1.0, Some(2.0), Some("parent middle"));
    let second = match ctx.get::<Side>() {
        Some(side) => {
            ctx.with(CallOptions::new().on_progress(side.0.listener()))
                .run("pr_steps", json!({"steps": 1}))
                .await?
        }
        None => ctx.run("pr_steps", json!({"steps": 1})).await?,
    };
    ctx.progress(2.0, Some(2.0), Some("parent end"));
    Ok(json!([first, second]))
}

/// Streams `n` items, reporting progress as each is produced.
#[tool]
fn pr_stream(ctx: Ctx, n: u32) -> impl Stream<Item = u32> {
    futures::stream::iter(0..n).map(move |i| {
        ctx.progress(f64::from(i + 1), Some(f64::from(n)), None);
        i
    })
}

async fn bounded<F: Future>(future: F) -> F::Output {
    timeout(LIMIT, future).await.expect("finishes in time")
}

// ---------------------------------------------------------------------------------
// Reports reach the listener.

#[tokio::test]
async fn progress_reaches_the_listener_with_the_call_id() {
    let recorder = Recorder::default();
    let runner = Registry::global().with(recorder.options());
    let result =
        bounded(runner.execute(ToolCall::new("call-1", "pr_steps", json!({"steps": 3})))).await;
    assert_eq!(result.into_output().unwrap(), 3);
    assert_eq!(
        recorder.reports(),
        steps_reports("pr_steps", Some("call-1"), 3)
    );
}

#[tokio::test]
async fn progress_from_every_way_of_running_a_tool() {
    let recorder = Recorder::default();
    let runner = Registry::global().with(recorder.options());
    assert_eq!(runner.run_sync("pr_steps", json!({"steps": 2})).unwrap(), 2);
    assert_eq!(
        bounded(runner.run("pr_steps_async", json!({"steps": 2})))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        bounded(runner.spawn("pr_steps_async", json!({"steps": 1})))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        bounded(runner.run("pr_steps", vec![json!(1)]))
            .await
            .unwrap(),
        1
    );
    let mut want = steps_reports("pr_steps", None, 2);
    want.extend(steps_reports("pr_steps_async", None, 2));
    want.extend(steps_reports("pr_steps_async", None, 1));
    want.extend(steps_reports("pr_steps", None, 1));
    assert_eq!(
        recorder.reports(),
        want,
        "without an id there is no call id"
    );
}

#[test]
fn a_report_without_total_or_message_passes_through() {
    let recorder = Recorder::default();
    let runner = Registry::global().with(recorder.options());
    assert_eq!(runner.run_sync("pr_bare", json!({})).unwrap(), "done");
    assert_eq!(
        recorder.reports(),
        [report("pr_bare", None, 0.5, None, None)]
    );
}

// ---------------------------------------------------------------------------------
// Nested calls.

#[tokio::test]
async fn nested_calls_report_to_the_same_listener() {
    let recorder = Recorder::default();
    let runner = Registry::global().with(recorder.options());
    let result = bounded(runner.execute(ToolCall::new("outer", "pr_parent", json!({})))).await;
    assert_eq!(result.into_output().unwrap(), json!([2, 1]));
    let reports = recorder.reports();
    let seen: Vec<(&str, Option<&str>)> = reports
        .iter()
        .map(|r| (r.tool.as_str(), r.message.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("pr_parent", Some("parent start")),
            ("pr_steps_async", Some("step 1")),
            ("pr_steps_async", Some("step 2")),
            ("pr_parent", Some("parent middle")),
            ("pr_steps", Some("step 1")),
            ("pr_parent", Some("parent end")),
        ]
    );
    for r in reports.iter().filter(|r| r.tool == "pr_parent") {
        assert_eq!(r.call_id.as_deref(), Some("outer"), "{r:?}");
    }
}

#[tokio::test]
async fn ctx_with_on_progress_redirects_the_nested_call_only() {
    let recorder = Recorder::default();
    let side = Side::default();
    let runner = Registry::global().with(recorder.options().insert(side.clone()));
    let out = bounded(runner.run("pr_parent", json!({}))).await.unwrap();
    assert_eq!(out, json!([2, 1]));
    let main: Vec<(String, Option<String>)> = recorder
        .reports()
        .into_iter()
        .map(|r| (r.tool, r.message))
        .collect();
    let main: Vec<(&str, Option<&str>)> = main
        .iter()
        .map(|(t, m)| (t.as_str(), m.as_deref()))
        .collect();
    assert_eq!(
        main,
        [
            ("pr_parent", Some("parent start")),
            ("pr_steps_async", Some("step 1")),
            ("pr_steps_async", Some("step 2")),
            ("pr_parent", Some("parent middle")),
            ("pr_parent", Some("parent end")),
        ]
    );
    assert_eq!(side.0.reports(), steps_reports("pr_steps", None, 1));
}

#[test]
fn the_innermost_runner_listener_wins() {
    let outer = Recorder::default();
    let inner = Recorder::default();
    let outer_runner = Registry::global().with(outer.options());
    let inner_runner = outer_runner.with(inner.options());
    inner_runner
        .run_sync("pr_steps", json!({"steps": 1}))
        .unwrap();
    assert!(outer.reports().is_empty());
    assert_eq!(inner.reports(), steps_reports("pr_steps", None, 1));

    // A layer without a listener keeps the outer one.
    let relabelled = outer_runner.with(CallOptions::new().caller("someone"));
    relabelled
        .run_sync("pr_steps", json!({"steps": 2}))
        .unwrap();
    assert_eq!(outer.reports(), steps_reports("pr_steps", None, 2));
    assert_eq!(inner.reports().len(), 1);
}

// ---------------------------------------------------------------------------------
// Concurrent and streaming calls.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_report_under_their_own_call_ids() {
    let recorder = Recorder::default();
    let runner = Registry::global().with(recorder.options());
    let calls: Vec<ToolCall> = (1..=20_u32)
        .map(|i| {
            ToolCall::new(
                format!("c{i}"),
                "pr_steps_async",
                json!({"steps": i % 4 + 1}),
            )
        })
        .collect();
    let results = bounded(runner.execute_batch(calls)).await;
    assert!(results.iter().all(ToolResult::is_ok));
    let mut by_call: BTreeMap<String, Vec<Report>> = BTreeMap::new();
    for r in recorder.reports() {
        let id = r.call_id.clone().expect("every report has its call id");
        by_call.entry(id).or_default().push(r);
    }
    assert_eq!(by_call.len(), 20);
    for i in 1..=20_u32 {
        let id = format!("c{i}");
        assert_eq!(
            by_call[&id],
            steps_reports("pr_steps_async", Some(&id), i % 4 + 1),
            "{id}"
        );
    }
}

#[tokio::test]
async fn a_streaming_call_reports_to_a_channel() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let runner = Registry::global().with(CallOptions::new().on_progress(move |p| {
        let _ = tx.send(p);
    }));
    let mut stream = runner.run_stream("pr_stream", json!({"n": 3}));
    for want in 0..3 {
        assert_eq!(bounded(stream.next()).await.unwrap().unwrap(), want);
        // Each item's report is there as soon as the item is.
        let p = rx.try_recv().expect("a report per item");
        assert_eq!(
            Report::of(&p),
            report("pr_stream", None, f64::from(want + 1), Some(3.0), None)
        );
    }
    assert!(bounded(stream.next()).await.is_none());
    assert!(rx.try_recv().is_err(), "no extra reports");
}

// ---------------------------------------------------------------------------------
// No listener.

#[tokio::test]
async fn a_call_without_a_listener_is_unaffected() {
    let registry = Registry::global();
    assert_eq!(
        registry.run_sync("pr_steps", json!({"steps": 3})).unwrap(),
        3
    );
    assert_eq!(registry.run_sync("pr_bare", json!({})).unwrap(), "done");
    assert_eq!(
        bounded(registry.run("pr_steps_async", json!({"steps": 3})))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        bounded(registry.run("pr_parent", json!({}))).await.unwrap(),
        json!([2, 1])
    );
    let items: Vec<_> = bounded(
        registry
            .run_stream("pr_stream", json!({"n": 2}))
            .collect::<Vec<_>>(),
    )
    .await;
    let values: Vec<Value> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(values, [0, 1]);
    // A runner with other options but no listener.
    let runner = registry.with(CallOptions::new().caller("quiet"));
    assert_eq!(runner.run_sync("pr_steps", json!({"steps": 1})).unwrap(), 1);
}
