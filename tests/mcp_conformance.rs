//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned
//! in `interop/conformance/` with the Node 22 it needs) against the tools of
//! `examples/conformance/`, served over streamable HTTP: both dated requirement
//! sets, each with `interop/conformance/baseline.yml` as its expected failures. The
//! suite fails the run when a scenario outside that file fails, and when one listed
//! there passes (the file must then shrink).

#[path = "../examples/conformance/mod.rs"]
#[allow(dead_code)]
mod conformance;
#[path = "support/interop.rs"]
mod interop;
#[path = "support/process.rs"]
mod process;

use std::time::Duration;

use tokio::net::TcpListener;
use tokio::process::Command;
use toolfunc::mcp::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_passes_outside_its_baseline() {
    if let Some(missing) = interop::missing_prerequisites() {
        panic!("{missing}");
    }
    let registry = conformance::registry().expect("the conformance tools");
    let server = Server::new(registry).name("toolfunc-conformance", "0.0.0");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://{}{}",
        listener.local_addr().expect("local addr"),
        toolfunc::mcp::PATH
    );
    tokio::spawn(
        toolfunc::http::Server::new()
            .merge(server.router())
            .serve(listener),
    );
    let dir = interop::dir().join("conformance");
    let results = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance");
    for requirements in ["2025-11-25", "2026-07-28"] {
        let out = results.join(requirements);
        let _ = std::fs::remove_dir_all(&out);
        process::run(
            Command::new("bash")
                .arg("run.sh")
                .arg(&url)
                .args(["--requirements", requirements])
                .args(["--expected-failures", "baseline.yml"])
                .arg("-o")
                .arg(&out)
                .current_dir(&dir),
            &format!("the MCP conformance suite, requirements {requirements}"),
            Duration::from_secs(300),
        )
        .await
        .assert_printed("Baseline check passed", &[]);
    }
}
