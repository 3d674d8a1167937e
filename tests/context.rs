//! `Ctx` and `CallOptions`: what a caller puts into a call (typed extensions, caller
//! identity) reaches the tool, runners chain, nested calls inherit or override it, and
//! concurrent calls never see each other's context.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio::time::timeout;
use toolfunc::{CallOptions, Ctx, Registry, ToolCall, ToolError, ToolResult, tool};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// A per-request value a caller hands to its tools.
#[derive(Debug, Clone, PartialEq)]
struct TraceId(String);

/// A second extension type, to show layers keep the types they do not override.
#[derive(Debug, Clone, PartialEq)]
struct Tenant(&'static str);

fn trace(id: &str) -> TraceId {
    TraceId(id.to_owned())
}

/// Everything a tool can see of its context, as JSON.
fn report(ctx: &Ctx) -> Value {
    json!({
        "tool": ctx.tool_name(),
        "definition": ctx.definition().name,
        "call_id": ctx.call_id(),
        "caller": ctx.caller(),
        "trace": ctx.get::<TraceId>().map(|t| t.0.as_str()),
        "tenant": ctx.get::<Tenant>().map(|t| t.0),
        "string": ctx.get::<String>(),
        "registry_has_me": ctx.registry().has(ctx.tool_name()),
    })
}

/// Reports its context.
#[tool(alias = "ctx_report_alias")]
fn ctx_report(ctx: &Ctx) -> Value {
    report(ctx)
}

/// Reports its context after yielding, from an async handler.
#[tool]
async fn ctx_report_async(ctx: &Ctx, label: Option<String>) -> Value {
    tokio::task::yield_now().await;
    let mut out = report(ctx);
    out["label"] = json!(label);
    out
}

/// Calls `ctx_report` as a nested call inheriting everything, and reports its own
/// context before and after.
#[tool]
async fn ctx_nest_plain(ctx: &Ctx) -> Result<Value, ToolError> {
    let before = report(ctx);
    let nested = ctx.run("ctx_report", json!({})).await?;
    let after = report(ctx);
    Ok(json!({"before": before, "nested": nested, "after": after}))
}

/// Calls `ctx_report` with overrides for the nested call only, and reports its own
/// context before and after.
#[tool]
async fn ctx_nest_override(ctx: &Ctx) -> Result<Value, ToolError> {
    let before = report(ctx);
    let runner = ctx.with(
        CallOptions::new()
            .insert(trace("nested-trace"))
            .caller("nested-caller"),
    );
    let nested = runner.run("ctx_report", json!({})).await?;
    // The same runner again, and a sync nested call: the override holds for each.
    let nested_sync = runner.run_sync("ctx_report", json!({}))?;
    // A plain nested call after the override: back to the outer context.
    let plain = ctx.run("ctx_report", json!({})).await?;
    let after = report(ctx);
    Ok(json!({
        "before": before,
        "nested": nested,
        "nested_sync": nested_sync,
        "plain": plain,
        "after": after,
    }))
}

/// Two levels of nesting: the innermost call sees the outermost caller's values.
#[tool]
async fn ctx_nest_deep(ctx: &Ctx) -> Result<Value, ToolError> {
    ctx.run("ctx_nest_plain", json!({})).await
}

/// Reads its trace id, waits until every concurrent call is in flight (a barrier the
/// caller hands in as an extension), yields, and reads it again.
#[tool]
async fn ctx_interleave(ctx: &Ctx, expect: String) -> Result<Value, ToolError> {
    let first = ctx.get::<TraceId>().map(|t| t.0.clone());
    let barrier = ctx
        .get::<Arc<Barrier>>()
        .cloned()
        .ok_or_else(|| ToolError::failed("no barrier in the context"))?;
    barrier.wait().await;
    tokio::task::yield_now().await;
    let second = ctx.get::<TraceId>().map(|t| t.0.clone());
    Ok(json!({"expect": expect, "first": first, "second": second}))
}

async fn bounded<F: Future>(future: F) -> F::Output {
    timeout(LIMIT, future).await.expect("finishes in time")
}

// ---------------------------------------------------------------------------------
// Extensions and caller identity.

#[tokio::test]
async fn extensions_inserted_by_the_caller_reach_the_tool() {
    let runner = Registry::global().with(
        CallOptions::new()
            .insert(trace("t-1"))
            .insert(Tenant("acme")),
    );
    for out in [
        runner.run_sync("ctx_report", json!({})).unwrap(),
        bounded(runner.run("ctx_report", json!({}))).await.unwrap(),
        bounded(runner.run("ctx_report_async", json!({})))
            .await
            .unwrap(),
        runner.run_sync("ctx_report", Vec::<Value>::new()).unwrap(),
        bounded(runner.run("ctx_report_async", vec![json!("pos")]))
            .await
            .unwrap(),
        // By alias: the context is the same, the tool name is the real one.
        runner.run_sync("ctx_report_alias", Value::Null).unwrap(),
    ] {
        assert_eq!(out["trace"], "t-1", "{out}");
        assert_eq!(out["tenant"], "acme", "{out}");
        assert_eq!(out["string"], Value::Null, "types are keys: {out}");
        assert_eq!(out["caller"], Value::Null, "{out}");
        assert_eq!(out["call_id"], Value::Null, "{out}");
        assert_eq!(out["registry_has_me"], true, "{out}");
        assert_eq!(out["tool"], out["definition"], "{out}");
    }
    let by_alias = runner.run_sync("ctx_report_alias", Value::Null).unwrap();
    assert_eq!(by_alias["tool"], "ctx_report");

    // Without a runner the tool sees nothing.
    let bare = Registry::global()
        .run_sync("ctx_report", json!({}))
        .unwrap();
    assert_eq!(bare["trace"], Value::Null);
    assert_eq!(bare["tenant"], Value::Null);
    assert_eq!(bare["caller"], Value::Null);
}

#[test]
fn a_later_insert_of_the_same_type_replaces_the_earlier_one() {
    let runner = Registry::global().with(
        CallOptions::new()
            .insert(trace("first"))
            .insert(String::from("plain string"))
            .insert(trace("second")),
    );
    let out = runner.run_sync("ctx_report", json!({})).unwrap();
    assert_eq!(out["trace"], "second");
    assert_eq!(out["string"], "plain string");
}

#[tokio::test]
async fn the_caller_identity_reaches_the_tool() {
    let billing = Registry::global().with(CallOptions::new().caller("billing"));
    let out = billing.run_sync("ctx_report", json!({})).unwrap();
    assert_eq!(out["caller"], "billing");
    let out = bounded(billing.run("ctx_report_async", json!({})))
        .await
        .unwrap();
    assert_eq!(out["caller"], "billing");
    let out = bounded(billing.spawn("ctx_report_async", json!({})))
        .await
        .unwrap();
    assert_eq!(out["caller"], "billing");

    let anonymous = Registry::global().with(CallOptions::new());
    let out = anonymous.run_sync("ctx_report", json!({})).unwrap();
    assert_eq!(out["caller"], Value::Null);
}

// ---------------------------------------------------------------------------------
// Runners chain.

#[tokio::test]
async fn runners_chain_the_inner_layer_wins_and_the_outer_stays_visible() {
    let outer = Registry::global().with(
        CallOptions::new()
            .insert(trace("outer"))
            .insert(Tenant("acme"))
            .caller("gateway"),
    );
    let inner = outer.with(CallOptions::new().insert(trace("inner")));
    let out = inner.run_sync("ctx_report", json!({})).unwrap();
    assert_eq!(out["trace"], "inner", "the inner layer wins");
    assert_eq!(out["tenant"], "acme", "the outer layer's other types stay");
    assert_eq!(out["caller"], "gateway", "the outer caller stays");

    let recaller = inner.with(CallOptions::new().caller("worker"));
    let out = bounded(recaller.run("ctx_report_async", json!({})))
        .await
        .unwrap();
    assert_eq!(
        (&out["trace"], &out["tenant"], &out["caller"]),
        (&json!("inner"), &json!("acme"), &json!("worker"))
    );

    // Chaining makes new runners: the outer one is unchanged.
    let out = outer.run_sync("ctx_report", json!({})).unwrap();
    assert_eq!(
        (&out["trace"], &out["tenant"], &out["caller"]),
        (&json!("outer"), &json!("acme"), &json!("gateway"))
    );
    // An empty layer changes nothing.
    let same = outer.with(CallOptions::new());
    assert_eq!(same.run_sync("ctx_report", json!({})).unwrap(), out);
    assert!(same.registry().has("ctx_report"));
}

// ---------------------------------------------------------------------------------
// Nested calls.

#[tokio::test]
async fn a_nested_call_inherits_extensions_and_caller() {
    let runner = Registry::global().with(
        CallOptions::new()
            .insert(trace("t-nest"))
            .insert(Tenant("acme"))
            .caller("api"),
    );
    let out = bounded(runner.run("ctx_nest_plain", json!({})))
        .await
        .unwrap();
    for part in ["before", "nested", "after"] {
        assert_eq!(out[part]["trace"], "t-nest", "{part}: {out}");
        assert_eq!(out[part]["tenant"], "acme", "{part}: {out}");
        assert_eq!(out[part]["caller"], "api", "{part}: {out}");
    }
    assert_eq!(out["before"]["tool"], "ctx_nest_plain");
    assert_eq!(out["nested"]["tool"], "ctx_report");

    // Two levels down.
    let out = bounded(runner.run("ctx_nest_deep", json!({})))
        .await
        .unwrap();
    assert_eq!(out["nested"]["trace"], "t-nest", "{out}");
    assert_eq!(out["nested"]["caller"], "api", "{out}");
}

#[tokio::test]
async fn ctx_with_overrides_for_the_nested_call_only() {
    let runner = Registry::global().with(
        CallOptions::new()
            .insert(trace("outer-trace"))
            .insert(Tenant("acme"))
            .caller("outer-caller"),
    );
    let out = bounded(runner.run("ctx_nest_override", json!({})))
        .await
        .unwrap();
    for part in ["nested", "nested_sync"] {
        assert_eq!(out[part]["trace"], "nested-trace", "{part}: {out}");
        assert_eq!(out[part]["caller"], "nested-caller", "{part}: {out}");
        assert_eq!(out[part]["tenant"], "acme", "{part} still inherits: {out}");
    }
    for part in ["before", "plain", "after"] {
        assert_eq!(out[part]["trace"], "outer-trace", "{part}: {out}");
        assert_eq!(out[part]["caller"], "outer-caller", "{part}: {out}");
        assert_eq!(out[part]["tenant"], "acme", "{part}: {out}");
    }
}

// ---------------------------------------------------------------------------------
// Concurrent calls.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_each_see_their_own_context() {
    const CALLS: usize = 1_000;
    // Every call waits at the barrier, so all of them are in flight at once.
    let barrier = Arc::new(Barrier::new(CALLS));
    let base = Registry::global().with(CallOptions::new().insert(Arc::clone(&barrier)));
    let tasks: Vec<_> = (0..CALLS)
        .map(|i| {
            let runner = base.with(CallOptions::new().insert(TraceId(format!("trace-{i}"))));
            tokio::spawn(async move {
                runner
                    .run("ctx_interleave", json!({"expect": format!("trace-{i}")}))
                    .await
            })
        })
        .collect();
    let results = timeout(LIMIT * 3, futures::future::join_all(tasks))
        .await
        .expect("every call finishes");
    assert_eq!(results.len(), CALLS);
    for (i, joined) in results.into_iter().enumerate() {
        let out = joined.expect("the task did not panic").unwrap();
        let want = format!("trace-{i}");
        assert_eq!(out["expect"], want.as_str());
        assert_eq!(out["first"], want.as_str(), "call {i} read another trace");
        assert_eq!(out["second"], want.as_str(), "call {i} read another trace");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_without_spawning_each_see_their_own_context() {
    const CALLS: usize = 1_000;
    let barrier = Arc::new(Barrier::new(CALLS));
    let runners: Vec<_> = (0..CALLS)
        .map(|i| {
            Registry::global().with(
                CallOptions::new()
                    .insert(Arc::clone(&barrier))
                    .insert(TraceId(format!("joined-{i}"))),
            )
        })
        .collect();
    let calls = runners
        .iter()
        .enumerate()
        .map(|(i, runner)| runner.run("ctx_interleave", json!({"expect": format!("joined-{i}")})));
    let results = timeout(LIMIT * 3, futures::future::join_all(calls))
        .await
        .expect("every call finishes");
    for (i, out) in results.into_iter().enumerate() {
        let out = out.unwrap();
        assert_eq!(out["first"], out["expect"], "call {i}");
        assert_eq!(out["second"], out["expect"], "call {i}");
    }
}

// ---------------------------------------------------------------------------------
// Correlated calls through a runner.

#[tokio::test]
async fn execute_through_a_runner_carries_the_call_id_and_the_context() {
    let runner =
        Registry::global().with(CallOptions::new().insert(trace("t-exec")).caller("batcher"));
    let result = bounded(runner.execute(ToolCall::new("call-7", "ctx_report", json!({})))).await;
    assert_eq!(result.id(), "call-7");
    let out = result.into_output().unwrap();
    assert_eq!(out["call_id"], "call-7");
    assert_eq!(out["trace"], "t-exec");
    assert_eq!(out["caller"], "batcher");

    let calls = ["a", "b", "c", "d"].into_iter().enumerate().map(|(i, id)| {
        let name = if i % 2 == 0 {
            "ctx_report"
        } else {
            "ctx_report_async"
        };
        ToolCall::new(id, name, json!({}))
    });
    let results = bounded(runner.execute_batch(calls)).await;
    let ids: Vec<&str> = results.iter().map(ToolResult::id).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    for result in &results {
        let out = result.output().unwrap();
        assert_eq!(out["call_id"], result.id(), "{out}");
        assert_eq!(out["tool"], result.name(), "{out}");
        assert_eq!(out["trace"], "t-exec", "{out}");
        assert_eq!(out["caller"], "batcher", "{out}");
    }

    // Without an id (plain `run`) there is no call id.
    let out = bounded(runner.run("ctx_report_async", json!({})))
        .await
        .unwrap();
    assert_eq!(out["call_id"], Value::Null);
}
