//! Borrowed arguments: a caller that keeps its `&Value` runs a tool without giving
//! it up. Typed tools, sync and async, and schema checks read it in place (no copy,
//! measured by counting this thread's allocations); handlers that own their
//! arguments, services, layers and spawned calls get a copy; the caller's value is
//! never changed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use toolfunc::layer::{self, Call};
use toolfunc::{Args, Ctx, Registry, ToolError, ToolFunc, tool, tool_service};

/// Counts the bytes allocated on each thread, so tests running beside each other do
/// not disturb the count.
struct Counting;

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to `System` unchanged; counting touches only a
// thread-local `Cell` that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATED.try_with(|n| n.set(n.get() + layout.size()));
        // SAFETY: the caller's layout is passed on as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATED.try_with(|n| n.set(n.get() + new_size));
        // SAFETY: as for `alloc`; `ptr` and `layout` are the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The bytes `f` allocates on this thread, and what it returns.
fn allocated<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = ALLOCATED.with(Cell::get);
    let out = f();
    (ALLOCATED.with(Cell::get) - before, out)
}

/// Adds two numbers.
#[tool]
fn borrowed_add(a: f64, b: f64) -> f64 {
    a + b
}

/// Adds two numbers, later.
#[tool]
async fn borrowed_add_later(a: f64, b: f64) -> f64 {
    tokio::task::yield_now().await;
    a + b
}

/// Counts down from `from`.
#[tool(stream)]
fn borrowed_countdown(from: u32) -> impl futures::Stream<Item = u32> + Send + 'static {
    futures::stream::iter((1..=from).rev())
}

/// Calls `borrowed_add` with the arguments it was given.
#[tool]
async fn borrowed_nested(ctx: Ctx, a: f64, b: f64) -> Result<Value, ToolError> {
    let args = json!({"a": a, "b": b});
    ctx.run("borrowed_add", &args).await
}

/// Arithmetic as a service.
#[derive(Default)]
struct BorrowedCalc;

#[tool_service]
impl BorrowedCalc {
    /// Multiplies `a` by `b`.
    fn mul(&self, a: f64, b: f64) -> f64 {
        a * b
    }
}

/// Arguments with a large field the tool ignores: a copy of them would show.
fn padded(a: f64, b: f64) -> Value {
    json!({"a": a, "b": b, "padding": "x".repeat(1 << 20)})
}

#[test]
fn a_typed_sync_tool_reads_borrowed_arguments_in_place() {
    let registry = Registry::global();
    let args = padded(2.0, 3.0);
    // Warm up: the registry is built on first use.
    registry.run_sync("borrowed_add", &args).unwrap();
    let (bytes, out) = allocated(|| registry.run_sync("borrowed_add", &args));
    assert_eq!(out.unwrap(), json!(5.0));
    assert!(bytes < 64 * 1024, "a borrowed call allocated {bytes} bytes");
    let (bytes, out) = allocated(|| {
        registry
            .run("borrowed_add", &args)
            .now_or_never()
            .expect("a sync tool answers on the first poll")
    });
    assert_eq!(out.unwrap(), json!(5.0));
    assert!(bytes < 64 * 1024, "a borrowed run allocated {bytes} bytes");
    // The measure sees a copy: the owned call of the same value pays one.
    let (bytes, out) = allocated(|| registry.run_sync("borrowed_add", args.clone()));
    assert_eq!(out.unwrap(), json!(5.0));
    assert!(bytes > 1 << 20, "a copy allocated only {bytes} bytes");
    assert_eq!(args, padded(2.0, 3.0), "the caller's value is unchanged");
}

#[test]
fn typed_async_tools_parse_borrowed_arguments_before_their_future() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Pair {
        a: f64,
        b: f64,
    }
    let registry = Registry::global().isolate();
    registry
        .register(
            ToolFunc::builder("typed_async_sub")
                .typed(|_ctx, p: Pair| async move { Ok::<_, ToolError>(p.a - p.b) })
                .build()
                .unwrap(),
        )
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let args = padded(5.0, 3.0);
    for (tool, answer) in [("borrowed_add_later", 8.0), ("typed_async_sub", 2.0)] {
        runtime.block_on(registry.run(tool, &args)).unwrap();
        let (bytes, out) = allocated(|| runtime.block_on(registry.run(tool, &args)));
        assert_eq!(out.unwrap(), json!(answer));
        assert!(
            bytes < 64 * 1024,
            "{tool}: a borrowed call allocated {bytes} bytes"
        );
    }
    // A bad argument fails before any future runs, with its path.
    let bad = json!({"a": "five", "b": 3});
    let err = runtime
        .block_on(registry.run("borrowed_add_later", &bad))
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(err.data().unwrap()["path"], "/a");
    let err = runtime
        .block_on(registry.run("typed_async_sub", &bad))
        .unwrap_err();
    assert_eq!(err.data().unwrap()["path"], "/a");
    assert_eq!(args, padded(5.0, 3.0));
}

#[test]
fn typed_sync_and_schema_checked_builder_tools_read_in_place() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Pair {
        a: f64,
        b: f64,
    }
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("typed_sub")
                .typed_sync(|_ctx, p: Pair| Ok(p.a - p.b))
                .build()
                .unwrap(),
        )
        .unwrap();
    let args = padded(5.0, 3.0);
    registry.run_sync("typed_sub", &args).unwrap();
    let (bytes, out) = allocated(|| registry.run_sync("typed_sub", &args));
    assert_eq!(out.unwrap(), json!(2.0));
    assert!(bytes < 64 * 1024, "a borrowed call allocated {bytes} bytes");

    // A tool checked by its JSON Schema validates the borrowed value, and refuses
    // a bad one with the path before anything is copied.
    registry
        .register(
            ToolFunc::builder("schema_len")
                .params_schema(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"]
                }))
                .handler_sync(|_ctx, args| Ok(json!(args["text"].as_str().map(str::len))))
                .build()
                .unwrap(),
        )
        .unwrap();
    let bad = json!({"text": 5, "padding": "x".repeat(1 << 20)});
    let (bytes, err) = allocated(|| registry.run_sync("schema_len", &bad).unwrap_err());
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(err.data().unwrap()["path"], "/text");
    assert!(bytes < 64 * 1024, "a refused call allocated {bytes} bytes");
    // Its raw handler owns its arguments: it gets a copy, the caller keeps its own.
    let good = json!({"text": "hello"});
    assert_eq!(registry.run_sync("schema_len", &good).unwrap(), json!(5));
    assert_eq!(good, json!({"text": "hello"}));
}

#[test]
fn bad_borrowed_arguments_are_argument_errors_with_their_path() {
    let registry = Registry::global();
    let err = registry
        .run_sync("borrowed_add", Args::borrowed(&json!(5)))
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(err.data().unwrap()["path"], "");
    let err = registry
        .run_sync("borrowed_add", Args::borrowed(&json!({"a": "two", "b": 1})))
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(err.data().unwrap()["path"], "/a");
    let err = registry
        .run_sync("borrowed_add", Args::borrowed(&json!({"a": 1})))
        .unwrap_err();
    assert_eq!(err.data().unwrap()["path"], "/b");
    // A streaming tool cannot answer a sync call, borrowed arguments or not.
    let err = registry
        .run_sync("borrowed_countdown", Args::borrowed(&json!({"from": 3.0})))
        .unwrap_err();
    assert_eq!(err.code(), "ASYNC_ONLY");
    let err = registry
        .run_sync("no_such_tool", Args::borrowed(&json!({})))
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
}

#[tokio::test]
async fn async_streaming_nested_and_spawned_calls_take_borrowed_arguments() {
    let registry = Registry::global();
    let args = json!({"a": 1, "b": 2});
    assert_eq!(
        registry.run("borrowed_add_later", &args).await.unwrap(),
        json!(3.0)
    );
    assert_eq!(
        registry.spawn("borrowed_add_later", &args).await.unwrap(),
        json!(3.0)
    );
    assert_eq!(
        registry.run("borrowed_nested", &args).await.unwrap(),
        json!(3.0)
    );
    // A whole float is read as an integer (on the retry), from a borrowed value too.
    let from = json!({"from": 3.0});
    let items: Vec<Value> = registry
        .run_stream("borrowed_countdown", &from)
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(items, [json!(3), json!(2), json!(1)]);
    assert_eq!(
        registry.run("borrowed_countdown", &from).await.unwrap(),
        json!([3, 2, 1])
    );
    // Positional and borrowed arguments name the same parameters.
    assert_eq!(
        registry
            .run("borrowed_add_later", Args::positional([json!(1), json!(2)]))
            .await
            .unwrap(),
        registry
            .run("borrowed_add_later", Args::borrowed(&args))
            .await
            .unwrap()
    );
    assert_eq!(args, json!({"a": 1, "b": 2}));
}

#[tokio::test]
async fn a_service_takes_act_out_of_its_own_copy() {
    let registry = Registry::global();
    let args = json!({"act": "mul", "a": 6, "b": 7});
    assert_eq!(
        registry.run_sync("borrowed_calc", &args).unwrap(),
        json!(42.0)
    );
    assert_eq!(
        registry.run("borrowed_calc", &args).await.unwrap(),
        json!(42.0)
    );
    assert_eq!(
        args["act"], "mul",
        "the caller's object still names its act"
    );
}

#[tokio::test]
async fn layers_see_and_change_a_copy_of_borrowed_arguments() {
    let registry = Registry::global()
        .isolate()
        .layer(layer::before(|call: &mut Call| {
            if let Some(b) = call.args_mut().get_mut("b") {
                *b = json!(10);
            }
            Ok(())
        }));
    let args = json!({"a": 1, "b": 2});
    assert_eq!(
        registry.run("borrowed_add", &args).await.unwrap(),
        json!(11.0)
    );
    assert_eq!(
        registry.run_sync("borrowed_add", &args).unwrap(),
        json!(11.0)
    );
    assert_eq!(args, json!({"a": 1, "b": 2}), "the layer changed a copy");
    let refusing = Registry::global()
        .isolate()
        .layer(layer::authorize(|_: &Call| {
            Err(ToolError::custom("FORBIDDEN", 403, "no"))
        }));
    let err = refusing.run_sync("borrowed_add", &args).unwrap_err();
    assert_eq!(err.code(), "FORBIDDEN");
}
