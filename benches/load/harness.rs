//! The load harness beside rmcp: the workload of the public "MCP server performance
//! benchmark v2" (three I/O-bound tools, 50 concurrent clients, a warm-up left out
//! of the figures) on loopback, against toolfunc's MCP server, a hand-written rmcp
//! server and toolfunc's HTTP RPC, in interleaved rounds.
//!
//! [`run`] starts a `redis-server` of its own ([`backend::Redis`]) and the rates
//! service, seeds the store, starts one server per row of the report (a child
//! process each, `benches/load/main.rs serve ...`, pinned with `taskset` when the
//! settings say so, or tasks of this process for the smoke test), then drives each
//! row in turn, round after round, the order rotating. It reads each server's CPU
//! time (`/proc/<pid>/stat`) around each measured window, its peak RSS (`VmHWM`)
//! at the end, and the most anonymous memory (`RssAnon`: heap and stacks, without
//! the pages of the binary's code) it held, sampled every 10 ms while it served.
#![allow(dead_code, unreachable_pub)] // the bench and the smoke test use different parts

#[path = "backend.rs"]
pub mod backend;
#[path = "client.rs"]
pub mod client;
#[path = "../../tests/support/nats.rs"]
pub mod nats_support;
#[path = "scale.rs"]
pub mod scale;
#[path = "servers.rs"]
pub mod servers;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use backend::{Backend, Redis};
use client::{Mode, Sample};
use servers::Kind;

/// The rows of the report: each server in each mode it speaks.
pub const ROWS: [(Kind, Mode); 5] = [
    (Kind::ToolfuncMcp, Mode::Session),
    (Kind::Rmcp, Mode::Session),
    (Kind::ToolfuncMcp, Mode::Sessionless),
    (Kind::Rmcp, Mode::Sessionless),
    (Kind::ToolfuncHttp, Mode::Rpc),
];

/// Where the servers run.
#[derive(Clone, Debug)]
pub enum Placement {
    /// A child process per row (this executable, `serve <kind> <redis> <rates>`),
    /// under `taskset -c <cpus>` when `cpus` is set.
    Child {
        /// The executable that serves (`serve ...`).
        exe: std::path::PathBuf,
        /// The CPU list the servers are pinned to.
        cpus: Option<String>,
    },
    /// Tasks of this process (no per-server CPU or memory figures).
    InProcess,
}

/// What a run does.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Concurrent clients.
    pub clients: usize,
    /// Rounds (each row once a round).
    pub rounds: usize,
    /// Warm-up before each measured window (not counted).
    pub warmup: Duration,
    /// Each measured window.
    pub measure: Duration,
    /// Where the servers run.
    pub placement: Placement,
}

/// One row's figures, over every round.
pub struct Row {
    /// The server.
    pub kind: Kind,
    /// How it was called.
    pub mode: Mode,
    /// Each round's sample.
    pub samples: Vec<Sample>,
    /// The server's CPU time in each round's measured window, seconds.
    pub cpu_secs: Vec<f64>,
    /// This process's and redis-server's CPU time in each round's window, seconds.
    pub driver_cpu_secs: Vec<f64>,
    /// The server's peak resident memory (VmHWM), bytes.
    pub peak_rss: Option<u64>,
    /// The most anonymous memory (`RssAnon`) the server held while it served,
    /// bytes.
    pub peak_anon: Option<u64>,
}

impl Row {
    /// HTTP requests answered in all measured windows.
    pub fn requests(&self) -> u64 {
        self.samples.iter().map(|s| s.requests).sum()
    }

    /// Tool calls answered (and checked) in all measured windows.
    pub fn calls(&self) -> u64 {
        self.samples.iter().map(|s| s.calls).sum()
    }

    /// Failed iterations, warm-up included.
    pub fn errors(&self) -> u64 {
        self.samples.iter().map(|s| s.errors).sum()
    }

    /// The first errors' messages.
    pub fn first_errors(&self) -> Vec<&str> {
        self.samples
            .iter()
            .flat_map(|s| s.first_errors.iter().map(String::as_str))
            .take(5)
            .collect()
    }

    fn secs(&self) -> f64 {
        self.samples.iter().map(|s| s.secs).sum()
    }

    /// HTTP requests a second.
    pub fn requests_per_sec(&self) -> f64 {
        as_f64(self.requests()) / self.secs()
    }

    /// Tool calls a second.
    pub fn calls_per_sec(&self) -> f64 {
        as_f64(self.calls()) / self.secs()
    }

    /// Every request's latency, merged.
    pub fn latency(&self) -> hdrhistogram::Histogram<u64> {
        let mut all = hdrhistogram::Histogram::new_with_bounds(1, 60_000_000, 3)
            .expect("valid histogram bounds");
        for sample in &self.samples {
            let _ = all.add(&sample.latency);
        }
        all
    }

    /// The server's CPU seconds per 1,000 calls.
    pub fn cpu_per_1k_calls(&self) -> Option<f64> {
        (!self.cpu_secs.is_empty() && self.calls() > 0)
            .then(|| self.cpu_secs.iter().sum::<f64>() * 1_000.0 / as_f64(self.calls()))
    }

    /// The share of one core this process and redis-server used, on average.
    pub fn driver_load(&self) -> Option<f64> {
        (!self.driver_cpu_secs.is_empty())
            .then(|| self.driver_cpu_secs.iter().sum::<f64>() / self.secs())
    }
}

#[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
fn as_f64(n: u64) -> f64 {
    n as f64
}

/// A server under load and where to reach it.
struct Served {
    url: String,
    pid: u32,
    child: Option<Child>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            if profiled() {
                // Closing stdin ends the server; under callgrind it then writes its
                // counts, which a kill would lose.
                drop(child.stdin.take());
                let deadline = Instant::now() + Duration::from_secs(60);
                while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether each server runs under `valgrind --tool=callgrind`
/// (`LOAD_CALLGRIND=1`), its counts written to `/tmp/callgrind.load.<pid>` when it
/// ends: instructions a call under the same concurrent load, where a busy machine
/// moves times.
fn profiled() -> bool {
    std::env::var_os("LOAD_CALLGRIND").is_some_and(|v| v == "1")
}

/// Starts `kind` as a child process: `exe serve <kind> <redis> <rates>`, which
/// prints its URL on its first line and exits when its stdin closes.
fn spawn_child(
    exe: &std::path::Path,
    cpus: Option<&str>,
    kind: Kind,
    redis: &str,
    rates: &str,
) -> Result<Served, String> {
    let mut command = match cpus {
        Some(cpus) => {
            let mut command = Command::new("taskset");
            command.args(["-c", cpus]).arg(exe);
            command
        }
        None => Command::new(exe),
    };
    if profiled() {
        command = Command::new("valgrind");
        command
            .args([
                "--tool=callgrind",
                "--callgrind-out-file=/tmp/callgrind.load.%p",
            ])
            .arg(exe);
    }
    let mut child = command
        .args(["serve", kind.name(), redis, rates])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the {} server: {e}", kind.name()))?;
    let mut line = String::new();
    let read = child
        .stdout
        .take()
        .map(|out| BufReader::new(out).read_line(&mut line));
    let url = line.trim().to_owned();
    if !matches!(read, Some(Ok(n)) if n > 0) || !url.starts_with("http://") {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "the {} server printed no URL ({line:?})",
            kind.name()
        ));
    }
    Ok(Served {
        url,
        pid: child.id(),
        child: Some(child),
    })
}

/// The `serve <kind> <redis> <rates>` side of [`spawn_child`]: serves until stdin
/// closes. Returns the process's exit code.
pub fn serve_child(args: &[String]) -> i32 {
    let [kind, redis, rates] = args else {
        eprintln!("usage: serve toolfunc-mcp|rmcp|toolfunc-http REDIS_URL RATES_URL");
        return 2;
    };
    let Some(kind) = Kind::parse(kind) else {
        eprintln!("unknown server {kind}");
        return 2;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("no runtime: {err}");
            return 1;
        }
    };
    let served = runtime.block_on(async {
        let backend = Backend::connect(redis, rates).await?;
        servers::serve(kind, &backend).await
    });
    match served {
        Ok(url) => println!("{url}"),
        Err(err) => {
            eprintln!("the {} server cannot start: {err}", kind.name());
            return 1;
        }
    }
    // Serve (on the runtime's workers) until the parent closes our stdin.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    0
}

/// Clock ticks a second, for `/proc/<pid>/stat`.
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse::<f64>().ok())
        .unwrap_or(100.0)
}

/// A process's user + system CPU time, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A process's peak resident memory (`VmHWM`), bytes.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1_024)
}

/// A process's resident anonymous memory (`RssAnon`), bytes.
fn rss_anon(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1_024)
}

/// Samples `pid`'s anonymous memory every 10 ms while `work` runs; its result
/// and the most seen.
fn watching_anon<T>(pid: u32, work: impl FnOnce() -> T) -> (T, Option<u64>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut most = None;
            while !done.load(Ordering::Relaxed) {
                most = most.max(rss_anon(pid));
                std::thread::sleep(Duration::from_millis(10));
            }
            most.max(rss_anon(pid))
        });
        let result = work();
        done.store(true, Ordering::Relaxed);
        (result, sampler.join().ok().flatten())
    })
}

/// Runs the whole comparison; the rows in [`ROWS`]'s order.
pub fn run(settings: &Settings) -> Result<Vec<Row>, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let redis = Redis::start()?;
    let (rates, backend) = runtime.block_on(async {
        let rates = backend::serve_rates().await.map_err(|e| e.to_string())?;
        let backend = Backend::connect(&redis.url(), &rates).await?;
        backend.seed().await?;
        Ok::<_, String>((rates, backend))
    })?;
    let mut servers = Vec::new();
    for (kind, _) in ROWS {
        servers.push(match &settings.placement {
            Placement::Child { exe, cpus } => {
                spawn_child(exe, cpus.as_deref(), kind, &redis.url(), &rates)?
            }
            Placement::InProcess => Served {
                url: runtime.block_on(servers::serve(kind, &backend))?,
                pid: std::process::id(),
                child: None,
            },
        });
    }
    let separate = matches!(settings.placement, Placement::Child { .. });
    let ticks = clock_ticks();
    let client = client::http_client(settings.clients);
    let mut rows: Vec<Row> = ROWS
        .iter()
        .map(|&(kind, mode)| Row {
            kind,
            mode,
            samples: Vec::new(),
            cpu_secs: Vec::new(),
            driver_cpu_secs: Vec::new(),
            peak_rss: None,
            peak_anon: None,
        })
        .collect();
    let me = std::process::id();
    for round in 0..settings.rounds {
        for turn in 0..ROWS.len() {
            let index = (round + turn) % ROWS.len();
            let (_, mode) = ROWS[index];
            let server = &servers[index];
            let mut before = (None, None, None);
            let mut after = (None, None, None);
            let read = || (cpu_ticks(server.pid), cpu_ticks(me), cpu_ticks(redis.pid()));
            let (sample, anon) = watching_anon(server.pid, || {
                runtime.block_on(client::drive(
                    &client,
                    &server.url,
                    mode,
                    settings.clients,
                    settings.warmup,
                    settings.measure,
                    |starting| {
                        if starting {
                            before = read();
                        } else {
                            after = read();
                        }
                    },
                ))
            });
            let row = &mut rows[index];
            if separate {
                row.peak_anon = row.peak_anon.max(anon);
            }
            let spent =
                |a: Option<u64>, b: Option<u64>| Some(as_f64(b?.saturating_sub(a?)) / ticks);
            if separate && let Some(cpu) = spent(before.0, after.0) {
                row.cpu_secs.push(cpu);
            }
            if let (Some(me), Some(redis)) = (spent(before.1, after.1), spent(before.2, after.2)) {
                row.driver_cpu_secs.push(me + redis);
            }
            row.samples.push(sample);
        }
    }
    if separate {
        for (row, server) in rows.iter_mut().zip(&servers) {
            row.peak_rss = peak_rss(server.pid);
        }
    }
    drop(servers);
    drop(redis);
    Ok(rows)
}

/// The median of each round's ratio of `row a`'s calls/s to `row b`'s.
pub fn median_ratio(a: &Row, b: &Row) -> f64 {
    let mut ratios: Vec<f64> = a
        .samples
        .iter()
        .zip(&b.samples)
        .map(|(a, b)| (as_f64(a.calls) / a.secs) / (as_f64(b.calls) / b.secs))
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
}

#[allow(clippy::cast_precision_loss, reason = "latencies far below 2^52 µs")]
fn ms(micros: u64) -> f64 {
    micros as f64 / 1_000.0
}

/// The report as a Markdown table, with the toolfunc ÷ rmcp ratios under it.
pub fn table(rows: &[Row]) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "| server | mode | requests/s | calls/s | avg ms | p50 ms | p99 ms | p99.9 ms | errors | peak RSS MB | peak anon MB | CPU-s / 1,000 calls | client+redis core |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for row in rows {
        let latency = row.latency();
        let rss = row
            .peak_rss
            .map_or("-".to_owned(), |b| format!("{:.1}", as_f64(b) / 1e6));
        let anon = row
            .peak_anon
            .map_or("-".to_owned(), |b| format!("{:.1}", as_f64(b) / 1e6));
        let cpu = row
            .cpu_per_1k_calls()
            .map_or("-".to_owned(), |c| format!("{c:.3}"));
        let driver = row
            .driver_load()
            .map_or("-".to_owned(), |l| format!("{:.0} %", l * 100.0));
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {rss} | {anon} | {cpu} | {driver} |",
            row.kind.name(),
            row.mode.name(),
            row.requests_per_sec(),
            row.calls_per_sec(),
            latency.mean() / 1_000.0,
            ms(latency.value_at_quantile(0.5)),
            ms(latency.value_at_quantile(0.99)),
            ms(latency.value_at_quantile(0.999)),
            row.errors(),
        );
    }
    for mode in [Mode::Session, Mode::Sessionless] {
        let find = |kind| rows.iter().find(|r| r.kind == kind && r.mode == mode);
        if let (Some(ours), Some(rmcp)) = (find(Kind::ToolfuncMcp), find(Kind::Rmcp)) {
            let p99 = |row: &Row| as_f64(row.latency().value_at_quantile(0.99));
            let ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (Some(a), Some(b)) => format!("{:.2}×", as_f64(a) / as_f64(b)),
                _ => "-".to_owned(),
            };
            let rss = ratio(ours.peak_rss, rmcp.peak_rss);
            let anon = ratio(ours.peak_anon, rmcp.peak_anon);
            let _ = writeln!(
                out,
                "\n{}: toolfunc-mcp ÷ rmcp: calls/s {:.2}× (median of the rounds), p99 {:.2}×, peak RSS {rss}, peak anon {anon}",
                mode.name(),
                median_ratio(ours, rmcp),
                p99(ours) / p99(rmcp),
            );
        }
    }
    out
}
