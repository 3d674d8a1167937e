//! Instruction counts of the hot calls, for `valgrind --tool=callgrind` (repeatable
//! where wall-clock timings on a busy machine are not).
//!
//! `cargo bench --bench instructions --no-run` builds it (with `[profile.bench]`'s one
//! codegen unit, so a change elsewhere in the crate does not move the counts); then
//! run the binary under callgrind with a case and a count, once with the count and
//! once with 0 (set-up only), and divide the difference by the count:
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/deps/instructions-<hash> run 100000
//! ```
//!
//! Cases: `direct` (the floor: the same JSON work by hand, owned `Value` in and out),
//! `run`, `run_sync`, `layer` (`run` through one pass-through layer), `layer_none`
//! (`run` through a child registry with no layer, once layers exist in the program),
//! `refused` (`run` refused by an authorisation layer), `allowed` (the same call let
//! through by the same layer: the call the refusal spares), and `direct_borrowed`,
//! `run_borrowed`, `run_sync_borrowed` (the same calls from a `&Value` the caller
//! keeps: the borrowed floor reads it in place, nothing is cloned).

use std::hint::black_box;

use futures::FutureExt;
use serde_json::{Value, json};
use toolfunc::layer::{self, Call, Layer, Next, ReplyFuture};
use toolfunc::{Args, Registry, ToolError, tool};

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

#[derive(serde::Deserialize)]
struct AddArgs {
    a: f64,
    b: f64,
}

fn direct(args: Value) -> Value {
    let args: AddArgs = serde_json::from_value(args).expect("bench arguments are valid");
    serde_json::to_value(add(args.a, args.b)).expect("an f64 serialises")
}

/// The borrowed floor: the arguments read in place from a `&Value` the caller keeps.
fn direct_borrowed(args: &Value) -> Value {
    let args = <AddArgs as serde::Deserialize>::deserialize(args).expect("valid");
    serde_json::to_value(add(args.a, args.b)).expect("an f64 serialises")
}

struct Pass;

impl Layer for Pass {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        next.run(call)
    }
}

fn run<'a>(registry: &'a Registry, args: impl Into<Args<'a>>) -> Result<Value, ToolError> {
    registry
        .run(black_box("add"), args)
        .now_or_never()
        .expect("a sync tool completes on the first poll")
}

fn main() {
    let mut given = std::env::args().skip(1).filter(|a| a != "--bench");
    let case = given.next().unwrap_or_else(|| "run".to_owned());
    let count: usize = given.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let args = json!({"a": 1, "b": 2});
    let global = Registry::global();
    // Only the layer cases make layers: the others run in a program without any.
    let registry = match case.as_str() {
        "layer" => global.isolate().layer(Pass),
        "layer_none" => {
            let _layered = global.isolate().layer(Pass);
            global.isolate()
        }
        "refused" => global.isolate().layer(layer::authorize(|_: &Call| {
            Err(ToolError::custom("FORBIDDEN", 403, "no"))
        })),
        "allowed" => global
            .isolate()
            .layer(layer::authorize(|call: &Call| match call.caller() {
                Some("mallory") => Err(ToolError::custom("FORBIDDEN", 403, "no")),
                _ => Ok(()),
            })),
        _ => global.clone(),
    };
    // Warm the registry (built on first use) before counting.
    let _ = run(&registry, args.clone());
    let mut sink = 0usize;
    if let Some(borrowed) = case.strip_suffix("_borrowed") {
        // The caller keeps its arguments: nothing is cloned per call.
        for _ in 0..count {
            let input = black_box(&args);
            let out = match borrowed {
                "direct" => Ok(direct_borrowed(input)),
                "run" => run(global, input),
                "run_sync" => global.run_sync(black_box("add"), input),
                other => panic!("unknown case `{other}_borrowed`"),
            };
            sink += usize::from(out.is_ok());
        }
        black_box(sink);
        return;
    }
    for _ in 0..count {
        let input = black_box(args.clone());
        let out = match case.as_str() {
            "direct" => Ok(direct(input)),
            "run" => run(global, input),
            "run_sync" => global.run_sync(black_box("add"), input),
            "layer" | "layer_none" | "refused" | "allowed" => run(&registry, input),
            other => panic!("unknown case `{other}`"),
        };
        sink += usize::from(out.is_ok());
    }
    black_box(sink);
}
