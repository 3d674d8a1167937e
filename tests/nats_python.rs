//! The NATS workers called from Python with nats-py (pinned in
//! `interop/requirements.txt`), through nothing but the documented subjects and
//! headers: discovery, calls, errors, a flow-controlled stream and a cancel. The
//! checks live in `interop/nats_client.py`.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/nats.rs"]
mod nats_server;
#[path = "support/process.rs"]
mod process;

use std::time::Duration;

use nats_server::interop as peers;
use tokio::process::Command;
use toolfunc::nats::Worker;

#[tokio::test]
async fn a_python_nats_client_discovers_and_calls_the_tools() {
    let server = nats_server::NatsServer::start();
    let _worker = Worker::builder(demo::catalog())
        .connect(&server.url())
        .await
        .unwrap();
    let python = peers::python();
    let finished = process::run(
        Command::new(python)
            .arg("nats_client.py")
            .arg(server.url())
            .current_dir(peers::dir()),
        "the Python NATS client",
        Duration::from_secs(60),
    )
    .await;
    finished.assert_printed("checks passed", &[]);
}
