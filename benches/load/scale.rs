//! Scale-out over NATS: an I/O-bound tool (it waits on a timer) with a concurrency
//! limit per worker, served by 1, 2, 4 and 8 `toolfunc::nats::Worker`s, driven
//! through `toolfunc::nats::Client` by as many concurrent callers as the workers
//! have slots. Then a worker is killed (SIGKILL) in the middle of a measured window,
//! once under the idempotent tool (a lost call is tried on another worker) and once
//! under the same tool without the hint (a lost call fails with `WORKER_LOST`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolfunc::nats::{Client, Worker};
use toolfunc::{Annotations, Registry, ToolError, ToolFunc};

use super::nats_support;

/// The idempotent tool.
pub const IDEMPOTENT: &str = "io_wait";
/// The same tool, without the idempotent hint.
pub const ONCE: &str = "io_once";

/// The tools' arguments: a number to echo.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct WaitArgs {
    /// Echoed back.
    pub n: u64,
}

/// The tools' answer.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Waited {
    /// The argument.
    pub n: u64,
    /// Which worker ran it.
    pub worker: String,
}

/// A worker's registry: both tools wait `wait` and allow `limit` calls at once
/// (each, in this worker).
pub fn worker_registry(name: &str, wait: Duration, limit: usize) -> Result<Registry, ToolError> {
    let registry = Registry::new();
    for (tool, hints) in [
        (
            IDEMPOTENT,
            Annotations::new().read_only(true).idempotent(true),
        ),
        (ONCE, Annotations::new()),
    ] {
        let name = name.to_owned();
        registry.register(
            ToolFunc::builder(tool)
                .description("Waits on a timer and echoes its argument.")
                .annotations(hints)
                .concurrency(limit)
                .typed(move |_, args: WaitArgs| {
                    let worker = name.clone();
                    async move {
                        tokio::time::sleep(wait).await;
                        Ok::<_, ToolError>(Waited { n: args.n, worker })
                    }
                })
                .build()?,
        )?;
    }
    Ok(registry)
}

/// The `nats-worker <url> <limit> <wait-ms>` side: serves until stdin closes.
pub fn worker_child(args: &[String]) -> i32 {
    let parsed = match args {
        [url, limit, ms] => limit
            .parse::<usize>()
            .ok()
            .zip(ms.parse::<u64>().ok())
            .map(|(limit, ms)| (url, limit, ms)),
        _ => None,
    };
    let Some((url, limit, ms)) = parsed else {
        eprintln!("usage: nats-worker NATS_URL LIMIT WAIT_MS");
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
    let name = format!("pid {}", std::process::id());
    let worker = runtime.block_on(async {
        let registry =
            worker_registry(&name, Duration::from_millis(ms), limit).map_err(|e| e.to_string())?;
        Worker::builder(registry)
            .connect(url)
            .await
            .map_err(|e| e.to_string())
    });
    let worker = match worker {
        Ok(worker) => worker,
        Err(err) => {
            eprintln!("the worker cannot start: {err}");
            return 1;
        }
    };
    println!("ready");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    runtime.block_on(worker.stop(Duration::from_secs(1)));
    0
}

/// A worker process.
pub struct WorkerProcess {
    child: Child,
}

impl WorkerProcess {
    /// Starts `exe nats-worker ...` (under `taskset -c cpus` when set) and waits
    /// until it serves.
    pub fn start(
        exe: &std::path::Path,
        cpus: Option<&str>,
        url: &str,
        limit: usize,
        wait: Duration,
    ) -> Result<Self, String> {
        let mut command = match cpus {
            Some(cpus) => {
                let mut command = Command::new("taskset");
                command.args(["-c", cpus]).arg(exe);
                command
            }
            None => Command::new(exe),
        };
        let mut child = command
            .args(["nats-worker", url, &limit.to_string()])
            .arg(wait.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a worker: {e}"))?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        if !matches!(read, Some(Ok(_))) || line.trim() != "ready" {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("a worker did not start ({line:?})"));
        }
        Ok(Self { child })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills it at once (SIGKILL): its calls in flight are lost.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What one scale-out run measured.
pub struct ScaleSample {
    /// Calls answered right in the measured window.
    pub calls: u64,
    /// Each call's latency, µs.
    pub latency: Histogram<u64>,
    /// Failed calls by error code (a wrong answer counts as `WRONG`), warm-up
    /// included.
    pub errors: BTreeMap<String, u64>,
    /// The measured window, seconds.
    pub secs: f64,
    /// Which workers answered (name → calls), measured window only.
    pub answered_by: BTreeMap<String, u64>,
}

impl ScaleSample {
    /// Calls a second.
    #[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
    pub fn calls_per_sec(&self) -> f64 {
        self.calls as f64 / self.secs
    }

    /// Every failed call.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

const WARM: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Drives `clients` callers of `tool` through `client` for `warmup`, then for
/// `measure`; `midway` runs halfway through the measured window (to kill a worker).
pub async fn drive(
    client: &Client,
    tool: &'static str,
    clients: usize,
    warmup: Duration,
    measure: Duration,
    midway: impl FnOnce(),
) -> ScaleSample {
    let phase = Arc::new(AtomicU8::new(WARM));
    let tasks: Vec<_> = (0..clients)
        .map(|task| {
            let client = client.clone();
            let phase = Arc::clone(&phase);
            tokio::spawn(async move {
                let mut latency = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)
                    .expect("valid histogram bounds");
                let mut calls = 0;
                let mut errors = BTreeMap::<String, u64>::new();
                let mut answered_by = BTreeMap::<String, u64>::new();
                let mut n = (task as u64) << 32;
                loop {
                    let now = phase.load(Ordering::Relaxed);
                    if now == STOP {
                        break;
                    }
                    n += 1;
                    let start = Instant::now();
                    let result = client.run(tool, json!({ "n": n })).await;
                    let elapsed_us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
                    let counted = now == MEASURE && phase.load(Ordering::Relaxed) == MEASURE;
                    match result.map(serde_json::from_value::<Waited>) {
                        Ok(Ok(waited)) if waited.n == n => {
                            if counted {
                                calls += 1;
                                latency.saturating_record(elapsed_us.max(1));
                                *answered_by.entry(waited.worker).or_default() += 1;
                            }
                        }
                        Ok(_) => *errors.entry("WRONG".to_owned()).or_default() += 1,
                        Err(err) => *errors.entry(err.code().to_owned()).or_default() += 1,
                    }
                }
                (calls, latency, errors, answered_by)
            })
        })
        .collect();
    tokio::time::sleep(warmup).await;
    let start = Instant::now();
    phase.store(MEASURE, Ordering::Relaxed);
    tokio::time::sleep(measure / 2).await;
    midway();
    tokio::time::sleep(measure.saturating_sub(start.elapsed())).await;
    phase.store(STOP, Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    let mut sample = ScaleSample {
        calls: 0,
        latency: Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds"),
        errors: BTreeMap::new(),
        secs,
        answered_by: BTreeMap::new(),
    };
    for task in tasks {
        match task.await {
            Ok((calls, latency, errors, answered_by)) => {
                sample.calls += calls;
                let _ = sample.latency.add(&latency);
                for (code, n) in errors {
                    *sample.errors.entry(code).or_default() += n;
                }
                for (worker, n) in answered_by {
                    *sample.answered_by.entry(worker).or_default() += n;
                }
            }
            Err(_) => *sample.errors.entry("PANIC".to_owned()).or_default() += 1,
        }
    }
    sample
}

/// Where the workers run.
#[derive(Clone, Debug)]
pub enum WorkerPlacement {
    /// A child process each (this executable, `nats-worker ...`), under
    /// `taskset -c <cpus>` when `cpus` is set.
    Child {
        /// The executable (`nats-worker ...`).
        exe: std::path::PathBuf,
        /// The CPU list the workers are pinned to.
        cpus: Option<String>,
    },
    /// Tasks of this process (no kills, no per-worker CPU figures).
    InProcess,
}

/// What a scale-out run does.
#[derive(Clone, Debug)]
pub struct ScaleSettings {
    /// The worker counts, in order.
    pub workers: Vec<usize>,
    /// Calls each worker runs at once (the tools' concurrency limit).
    pub limit: usize,
    /// How long each call waits.
    pub wait: Duration,
    /// Warm-up before each measured window.
    pub warmup: Duration,
    /// Each measured window.
    pub measure: Duration,
    /// Where the workers run.
    pub placement: WorkerPlacement,
    /// Also kill a worker mid-run (child processes only), with this many workers.
    pub kill_with: Option<usize>,
}

/// One row of the scale-out report.
pub struct ScaleRow {
    /// Workers serving.
    pub workers: usize,
    /// Concurrent callers (the workers' slots in all).
    pub clients: usize,
    /// The tool called.
    pub tool: &'static str,
    /// Whether a worker was killed halfway.
    pub killed: bool,
    /// What was measured.
    pub sample: ScaleSample,
    /// CPU shares of one core over the window: workers (all), nats-server, this
    /// process (the client).
    pub cpu: (Option<f64>, Option<f64>, Option<f64>),
}

enum Workers {
    Processes(Vec<WorkerProcess>),
    InProcess(Vec<Worker>),
}

impl Workers {
    fn pids(&self) -> Vec<u32> {
        match self {
            Self::Processes(all) => all.iter().map(WorkerProcess::pid).collect(),
            Self::InProcess(_) => Vec::new(),
        }
    }
}

fn start_workers(
    runtime: &tokio::runtime::Runtime,
    settings: &ScaleSettings,
    url: &str,
    count: usize,
) -> Result<Workers, String> {
    match &settings.placement {
        WorkerPlacement::Child { exe, cpus } => (0..count)
            .map(|_| WorkerProcess::start(exe, cpus.as_deref(), url, settings.limit, settings.wait))
            .collect::<Result<_, _>>()
            .map(Workers::Processes),
        WorkerPlacement::InProcess => runtime.block_on(async {
            let mut all = Vec::new();
            for index in 0..count {
                let registry =
                    worker_registry(&format!("worker {index}"), settings.wait, settings.limit)
                        .map_err(|e| e.to_string())?;
                let worker = Worker::builder(registry)
                    .connect(url)
                    .await
                    .map_err(|e| e.to_string())?;
                all.push(worker);
            }
            Ok(Workers::InProcess(all))
        }),
    }
}

/// Runs the scale-out: each worker count in turn, then the kills.
pub fn run_scale(settings: &ScaleSettings) -> Result<Vec<ScaleRow>, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let server = nats_support::NatsServer::start();
    let ticks = super::clock_ticks();
    let me = std::process::id();
    let mut plan: Vec<(usize, &'static str, bool)> = settings
        .workers
        .iter()
        .map(|&n| (n, IDEMPOTENT, false))
        .collect();
    if let (Some(n), WorkerPlacement::Child { .. }) = (settings.kill_with, &settings.placement) {
        plan.push((n, IDEMPOTENT, true));
        plan.push((n, ONCE, true));
    }
    let mut rows = Vec::new();
    for (count, tool, kill) in plan {
        let mut workers = start_workers(&runtime, settings, &server.url(), count)?;
        let pids = workers.pids();
        let client = runtime
            .block_on(
                Client::builder()
                    .heartbeat(Duration::from_millis(100))
                    .connect(&server.url()),
            )
            .map_err(|e| e.to_string())?;
        let clients = count * settings.limit;
        let read = |pids: &[u32]| {
            let workers: Option<u64> = pids.iter().map(|&pid| super::cpu_ticks(pid)).sum();
            (
                workers,
                super::cpu_ticks(server.pid()),
                super::cpu_ticks(me),
            )
        };
        let before = read(&pids);
        let start = Instant::now();
        let sample = runtime.block_on(drive(
            &client,
            tool,
            clients,
            settings.warmup,
            settings.measure,
            || {
                if kill
                    && let Workers::Processes(all) = &mut workers
                    && let Some(first) = all.first_mut()
                {
                    first.kill();
                }
            },
        ));
        let secs = start.elapsed().as_secs_f64();
        let after = read(&pids);
        let share = |a: Option<u64>, b: Option<u64>| {
            #[allow(clippy::cast_precision_loss, reason = "ticks far below 2^52")]
            let spent = b?.saturating_sub(a?) as f64;
            Some(spent / ticks / secs)
        };
        let cpu = (
            (!pids.is_empty())
                .then(|| share(before.0, after.0))
                .flatten(),
            share(before.1, after.1),
            share(before.2, after.2),
        );
        if let Workers::InProcess(all) = workers {
            runtime.block_on(async {
                for worker in all {
                    worker.stop(Duration::from_secs(1)).await;
                }
            });
        }
        rows.push(ScaleRow {
            workers: count,
            clients,
            tool,
            killed: kill,
            sample,
            cpu,
        });
    }
    Ok(rows)
}

/// A small count as a float.
fn small(n: usize) -> f64 {
    f64::from(u32::try_from(n).unwrap_or(u32::MAX))
}

#[allow(clippy::cast_precision_loss, reason = "latencies far below 2^52 µs")]
fn ms(micros: u64) -> f64 {
    micros as f64 / 1_000.0
}

/// The scale-out report as a Markdown table.
pub fn scale_table(rows: &[ScaleRow], settings: &ScaleSettings) -> String {
    use std::fmt::Write;
    let one = rows
        .iter()
        .find(|row| !row.killed)
        .map(|row| row.sample.calls_per_sec() / small(row.workers));
    let mut out = format!(
        "each worker runs {} calls at once, each waiting {:?}; callers = workers × {}\n\n\
         | workers | tool | calls/s | of linear | p50 ms | p99 ms | p99.9 ms | errors | workers' CPU | nats-server CPU | client CPU |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        settings.limit, settings.wait, settings.limit
    );
    let pct = |share: Option<f64>| share.map_or("-".to_owned(), |s| format!("{:.0} %", s * 100.0));
    for row in rows {
        let linear = one.map_or("-".to_owned(), |one| {
            format!(
                "{:.0} %",
                row.sample.calls_per_sec() / (one * small(row.workers)) * 100.0
            )
        });
        let errors = if row.sample.errors.is_empty() {
            "0".to_owned()
        } else {
            row.sample
                .errors
                .iter()
                .map(|(code, n)| format!("{n} {code}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let latency = &row.sample.latency;
        let _ = writeln!(
            out,
            "| {}{} | {} | {:.0} | {linear} | {:.2} | {:.2} | {:.2} | {errors} | {} | {} | {} |",
            row.workers,
            if row.killed {
                ", one killed halfway"
            } else {
                ""
            },
            row.tool,
            row.sample.calls_per_sec(),
            ms(latency.value_at_quantile(0.5)),
            ms(latency.value_at_quantile(0.99)),
            ms(latency.value_at_quantile(0.999)),
            pct(row.cpu.0),
            pct(row.cpu.1),
            pct(row.cpu.2),
        );
    }
    out
}
