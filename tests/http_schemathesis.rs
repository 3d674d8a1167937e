//! Schemathesis (pinned in `interop/schemathesis/`, installed on first use) against
//! the demo catalog served in-process, from its own `GET /api/openapi.json`: every
//! operation, with valid and invalid inputs (the examples, coverage and fuzzing
//! phases), every check (`--checks all`: statuses, content types and schemas of the
//! answers, valid input accepted and invalid input refused, 405 and `Allow` for the
//! methods a path does not list, ...). The run must end with no failure (the
//! JavaScript clients' REST forms are operations of the document, not leniencies),
//! and no crash.
//!
//! What the run is told besides the command line is in
//! `interop/schemathesis/schemathesis.toml` (the `fail` tool's documented 500, the
//! statuses of the bounded calls, no extra headers), and in `hooks.py`: a check of
//! NDJSON lines, the `rpc-timeout` that bounds the calls that could run for ever, and
//! the failures it would drop, each matched narrowly and counted in the output (the
//! server's findings still to fix: none now).

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/interop.rs"]
mod interop;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use toolfunc::http::{Api, Server};

/// How many test cases each operation gets per phase and mode.
const EXAMPLES: &str = "25";
/// The seed of the run: the same cases every time.
const SEED: &str = "20240611";
/// The whole run, at most (it takes about 15 s on a 2-core machine). Not passed as
/// `--max-time`: given a budget, Schemathesis repeats its fuzzing until it is spent.
const LIMIT: Duration = Duration::from_secs(100);

/// The number after `label` on a line of the summary (`Tested: 13`).
fn count(report: &str, label: &str) -> Option<usize> {
    report.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(label)?;
        rest.trim()
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    })
}

/// The numbers under `Test cases:`: `1080 generated, 1080 passed`.
fn test_cases(report: &str) -> (Option<usize>, Option<usize>) {
    let line = report
        .lines()
        .skip_while(|line| line.trim() != "Test cases:")
        .nth(1)
        .unwrap_or_default();
    let mut counts = line
        .split(", ")
        .map(|part| part.split_whitespace().next()?.parse().ok());
    (counts.next().flatten(), counts.next().flatten())
}

/// The last line of the report: `== 2 warnings in 11.5s ==`, or with the failures
/// and errors counted.
fn summary(report: &str) -> Option<&str> {
    report
        .lines()
        .rev()
        .find(|line| line.contains(" in ") && line.trim_start().starts_with('='))
        .map(|line| line.trim_matches(|c: char| c == '=' || c.is_whitespace()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_nothing_wrong_with_the_demo_server() {
    let st = interop::schemathesis();
    let dir = interop::dir().join("schemathesis");

    let api = Api::new(demo::catalog());
    let doc = api.openapi_document();
    // Every operation but the one serving the document itself, which Schemathesis
    // leaves out of a run it loads from there.
    let operations = doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .filter_map(serde_json::Value::as_object)
        .flat_map(serde_json::Map::values)
        .filter(|op| op["operationId"] != "openapi")
        .count();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(Server::new().mount(api).expect("mount").serve(listener));

    // Hypothesis and Schemathesis keep their files in the working directory.
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("schemathesis");
    std::fs::create_dir_all(&work).expect("a working directory");
    let url = format!("http://{addr}/api/openapi.json");
    let config = dir.join("schemathesis.toml");
    let args = [
        "--config-file",
        config.to_str().expect("a UTF-8 path"),
        "run",
        &url,
        "--phases",
        "examples,coverage,fuzzing",
        "--mode",
        "all",
        "--checks",
        "all",
        "--max-examples",
        EXAMPLES,
        "--seed",
        SEED,
        // No examples kept from an earlier run: each run is the seed's alone.
        "--generation-database",
        "none",
        // One worker: the cases reach the server (and its `users` store) in
        // the same order every run.
        "--workers",
        "1",
        "--request-timeout",
        "10",
        // Report every failure of a scenario, not only its first.
        "--continue-on-failure",
        "--no-color",
    ];
    let mut command = tokio::process::Command::new(&st);
    command
        .args(args)
        .current_dir(&work)
        .env("SCHEMATHESIS_HOOKS", dir.join("hooks.py"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // Nothing but the server on 127.0.0.1 is reached.
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("all_proxy")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let started = Instant::now();
    let out = tokio::time::timeout(LIMIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("schemathesis ran past {LIMIT:?}: {st:?} {args:?}"))
        .expect("schemathesis starts");
    let elapsed = started.elapsed();
    let report = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = format!(
        "`{} {}` exited with {} after {elapsed:.1?}\n{report}\n{stderr}",
        st.display(),
        args.join(" "),
        out.status
    );
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{shown}"
    );
    // Every case passed, once the failures `hooks.py` drops (and counts below) are
    // left out.
    let summary = summary(&report);
    assert!(
        summary.is_some_and(|line| !line.contains("failure") && !line.contains("error")),
        "the run reports failures or errors:\n{shown}"
    );
    let tested = count(&report, "Tested:");
    assert_eq!(
        tested,
        Some(operations),
        "every documented operation is tested:\n{shown}"
    );
    let (generated, passed) = test_cases(&report);
    assert!(
        generated.is_some_and(|n| n >= 10 * operations),
        "too few test cases:\n{shown}"
    );
    assert_eq!(passed, generated, "every test case passes:\n{shown}");
    println!(
        "schemathesis: {operations} operations, {} test cases, {elapsed:.1?} ({})\n{stderr}",
        generated.unwrap_or(0),
        summary.unwrap_or_default()
    );
}
