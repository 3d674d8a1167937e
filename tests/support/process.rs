//! Child processes for the interop tests (node, python): started so that they die
//! with the test, read with time limits, and reported with everything they printed
//! when they fail, so that a broken peer fails with a message instead of hanging.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

use std::fmt::Write as _;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// The example `name`, built by `cargo test` beside the test binaries (and built
/// here when a single test target was asked for).
pub fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let target = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("test binaries live in target/<profile>/deps");
    let path = target.join("examples").join(name);
    if !path.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "--all-features", "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the {name} example failed");
    }
    path
}

/// How a process ended and what it printed.
#[derive(Debug)]
pub struct Finished {
    /// What ran, for messages ("the JavaScript client").
    pub what: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// Panics unless the process exited successfully and printed `marker`; the
    /// message shows its stdout and stderr, then each of `more` (a title and a text,
    /// such as a log the process wrote).
    pub fn assert_printed(&self, marker: &str, more: &[(&str, &str)]) {
        if self.status.success() && self.stdout.contains(marker) {
            return;
        }
        let mut message = format!(
            "{} failed ({}; `{marker}` expected on stdout)\n--- stdout\n{}\n--- stderr\n{}",
            self.what, self.status, self.stdout, self.stderr
        );
        for (title, text) in more {
            let _ = write!(message, "\n--- {title}\n{text}");
        }
        panic!("{message}");
    }
}

/// Runs `command` to its end within `limit`, collecting stdout and stderr; the
/// process is killed when the time runs out.
pub async fn run(command: &mut Command, what: &str, limit: Duration) -> Finished {
    let output = timeout(limit, command.kill_on_drop(true).output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
        .unwrap_or_else(|err| panic!("{what} could not start: {err}"));
    Finished {
        what: what.to_owned(),
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A running child process whose stdout is read line by line, killed when dropped.
/// Its stdin and stderr are what the command set up: stdin piped for
/// [`Running::converse`], stderr piped to have it in [`Finished`] and in failure
/// messages (it is collected all along, so it never fills up).
pub struct Running {
    what: String,
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    /// The stdout lines read so far.
    stdout: String,
    /// Stderr so far, and the task that collects it, when it is piped.
    stderr: Option<(Collected, JoinHandle<()>)>,
}

/// Bytes a background task collects.
type Collected = Arc<Mutex<Vec<u8>>>;

impl Running {
    /// The process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Starts `command` with its stdout piped.
    pub fn start(command: &mut Command, what: &str) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("{what} could not start: {err}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().map(|mut pipe| {
            let text = Collected::default();
            let sink = Arc::clone(&text);
            let collector = tokio::spawn(async move {
                let mut chunk = [0; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
                    sink.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend_from_slice(&chunk[..n]);
                }
            });
            (text, collector)
        });
        Self {
            what: what.to_owned(),
            child,
            lines: BufReader::new(stdout).lines(),
            stdout: String::new(),
            stderr,
        }
    }

    /// Stderr so far (empty when it is not piped).
    fn stderr(&self) -> String {
        self.stderr.as_ref().map_or_else(String::new, |(text, _)| {
            String::from_utf8_lossy(&text.lock().unwrap_or_else(PoisonError::into_inner))
                .into_owned()
        })
    }

    /// Panics with `problem` and what the process printed so far.
    fn fail(&self, problem: &str) -> ! {
        panic!(
            "{} {problem}\n--- stdout\n{}\n--- stderr\n{}",
            self.what,
            self.stdout,
            self.stderr()
        );
    }

    /// The next stdout line, `None` once stdout is closed.
    async fn next_line(&mut self) -> Option<String> {
        match self.lines.next_line().await {
            Ok(line) => {
                let line = line?;
                self.stdout.push_str(&line);
                self.stdout.push('\n');
                Some(line)
            }
            Err(err) => self.fail(&format!("could not be read: {err}")),
        }
    }

    /// Reads stdout, within `limit`, until a line starts with `prefix`, and returns
    /// the rest of that line, trimmed.
    pub async fn until_prefix(&mut self, prefix: &str, limit: Duration) -> String {
        let found = timeout(limit, async {
            while let Some(line) = self.next_line().await {
                if let Some(rest) = line.strip_prefix(prefix) {
                    return Some(rest.trim().to_owned());
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(rest)) => rest,
            Ok(None) => self.fail(&format!("exited before printing `{prefix}`")),
            Err(_) => self.fail(&format!("did not print `{prefix}` within {limit:?}")),
        }
    }

    /// Reads stdout to its end within `limit`, handing each line to `answer`;
    /// whatever it returns is written to the process's stdin (which must be piped).
    pub async fn converse(
        &mut self,
        limit: Duration,
        mut answer: impl FnMut(&str) -> Option<String>,
    ) {
        let mut stdin: ChildStdin = self.child.stdin.take().expect("piped stdin");
        let talk = async {
            while let Some(line) = self.next_line().await {
                if let Some(reply) = answer(&line) {
                    stdin.write_all(reply.as_bytes()).await?;
                    stdin.flush().await?;
                }
            }
            Ok::<_, std::io::Error>(())
        };
        match timeout(limit, talk).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => self.fail(&format!("could not be answered: {err}")),
            Err(_) => self.fail(&format!("did not finish within {limit:?}")),
        }
    }

    /// Keeps draining stdout in the background, so that the process never blocks on
    /// a full pipe, and returns the process (killed when dropped).
    pub fn keep_draining(self) -> Child {
        let mut lines = self.lines;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.child
    }

    /// Reads what is left of stdout and waits, within `limit`, for the process to
    /// exit.
    pub async fn finish(mut self, limit: Duration) -> Finished {
        let ended = timeout(limit, async {
            while self.next_line().await.is_some() {}
            if let Some((_, collector)) = &mut self.stderr {
                let _ = collector.await;
            }
            self.child.wait().await
        })
        .await;
        let status = match ended {
            Ok(Ok(status)) => status,
            Ok(Err(err)) => self.fail(&format!("could not be waited for: {err}")),
            Err(_) => self.fail(&format!("did not exit within {limit:?}")),
        };
        Finished {
            stderr: self.stderr(),
            what: self.what,
            status,
            stdout: self.stdout,
        }
    }
}
