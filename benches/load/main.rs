//! The load harness beside rmcp (`harness.rs` says what it does):
//!
//! ```sh
//! cargo bench --bench load [-- --rounds 3 --secs 8 --warmup 2 --clients 50]
//! ```
//!
//! Each server runs in a child process of its own (this binary, `serve ...`). On a
//! machine with two cores or more, the servers are pinned to CPU 0 with `taskset`
//! and this process (the client), the rates service and redis-server to the others,
//! so the servers compete with nothing but each other's idle time; with one core,
//! nothing is pinned. `--in-process` serves from this process instead (no CPU or
//! memory figures). It prints a Markdown table and the toolfunc ÷ rmcp ratios.
//! With `LOAD_CALLGRIND=1` each server runs under `valgrind --tool=callgrind` and
//! writes `/tmp/callgrind.load.<pid>` when it ends: instructions a call under the
//! same concurrent load (the times are then callgrind's, not the servers').
//!
//! ```sh
//! cargo bench --bench load -- nats [--secs 5 --warmup 1 --limit 8 --wait-ms 10]
//! ```
//!
//! runs the scale-out over NATS instead (`scale.rs`): 1, 2, 4 and 8 worker
//! processes (pinned with the servers), then 4 with one killed halfway, once under
//! an idempotent tool and once under one without the hint.

mod harness;

use std::time::Duration;

use harness::scale::{ScaleSettings, WorkerPlacement};
use harness::{Placement, Settings};

fn usage() -> ! {
    eprintln!(
        "usage: load [--rounds N] [--secs S] [--warmup S] [--clients N] [--in-process]\n\
         \x20      load nats [--secs S] [--warmup S] [--limit N] [--wait-ms MS]\n\
         \x20      load serve toolfunc-mcp|rmcp|toolfunc-http REDIS_URL RATES_URL\n\
         \x20      load nats-worker NATS_URL LIMIT WAIT_MS"
    );
    std::process::exit(2)
}

/// Pins this process (and so the threads and children it starts from now on) to
/// every CPU but the first; the CPU list the servers get. `None` on one core, or
/// where `taskset` fails.
fn pin() -> Option<String> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if cores < 2 {
        return None;
    }
    let others = if cores == 2 {
        "1".to_owned()
    } else {
        format!("1-{}", cores - 1)
    };
    let pinned = std::process::Command::new("taskset")
        .args(["-p", "-c", &others, &std::process::id().to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    pinned.then(|| "0".to_owned())
}

/// The scale-out over NATS.
fn scale(args: &[String]) {
    let exe = std::env::current_exe().unwrap_or_else(|err| {
        eprintln!("cannot find this executable: {err}");
        std::process::exit(1)
    });
    let cpus = pin();
    let mut settings = ScaleSettings {
        workers: vec![1, 2, 4, 8],
        limit: 8,
        wait: Duration::from_millis(10),
        warmup: Duration::from_secs(1),
        measure: Duration::from_secs(5),
        placement: WorkerPlacement::Child { exe, cpus },
        kill_with: Some(4),
    };
    let mut args = args.iter().cloned();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--secs" => settings.measure = secs(args.next()),
            "--warmup" => settings.warmup = secs(args.next()),
            "--limit" => settings.limit = count(args.next()),
            "--wait-ms" => settings.wait = Duration::from_millis(count(args.next()) as u64),
            _ => usage(),
        }
    }
    eprintln!("{settings:?}");
    match harness::scale::run_scale(&settings) {
        Ok(rows) => println!("{}", harness::scale::scale_table(&rows, &settings)),
        Err(err) => {
            eprintln!("the scale-out run failed: {err}");
            std::process::exit(1)
        }
    }
}

/// A positive number of seconds from the command line.
fn secs(arg: Option<String>) -> Duration {
    arg.and_then(|n| n.parse::<f64>().ok())
        .filter(|n| n.is_finite() && *n > 0.0 && *n < 1e6)
        .map_or_else(|| usage(), Duration::from_secs_f64)
}

/// A positive count from the command line.
fn count(arg: Option<String>) -> usize {
    arg.and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or_else(|| usage())
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("serve") {
        std::process::exit(harness::serve_child(&args[1..]));
    }
    if args.first().map(String::as_str) == Some("nats-worker") {
        std::process::exit(harness::scale::worker_child(&args[1..]));
    }
    if args.first().map(String::as_str) == Some("nats") {
        scale(&args[1..]);
        return;
    }
    let mut settings = Settings {
        clients: 50,
        rounds: 3,
        warmup: Duration::from_secs(2),
        measure: Duration::from_secs(8),
        placement: Placement::InProcess,
    };
    let mut in_process = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--secs" => settings.measure = secs(args.next()),
            "--warmup" => settings.warmup = secs(args.next()),
            "--rounds" => settings.rounds = count(args.next()),
            "--clients" => settings.clients = count(args.next()),
            "--in-process" => in_process = true,
            _ => usage(),
        }
    }
    if !in_process {
        let exe = std::env::current_exe().unwrap_or_else(|err| {
            eprintln!("cannot find this executable: {err}");
            std::process::exit(1)
        });
        let cpus = pin();
        match &cpus {
            Some(cpus) => eprintln!("servers pinned to CPU {cpus}, the client to the others"),
            None => eprintln!("not pinned (one core, or no taskset)"),
        }
        settings.placement = Placement::Child { exe, cpus };
    }
    eprintln!(
        "{} rounds, {} clients, {:?} warm-up + {:?} measured per server and mode",
        settings.rounds, settings.clients, settings.warmup, settings.measure
    );
    match harness::run(&settings) {
        Ok(rows) => {
            println!("{}", harness::table(&rows));
            for row in &rows {
                for error in row.first_errors() {
                    println!("{} {}: {error}", row.kind.name(), row.mode.name());
                }
            }
        }
        Err(err) => {
            eprintln!("the load run failed: {err}");
            std::process::exit(1)
        }
    }
}
