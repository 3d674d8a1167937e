//! Search over 10,000 generated tools (distinct names, a sentence of description,
//! five typed parameters each; `examples/demo/generated.rs`): `Registry::search`
//! against the floor a program without an index would write, a linear scan of every
//! tool's lower-cased name, description and parameters for the query's words (the
//! texts prepared once, outside the timing), in the same run.
//!
//! `cargo bench --bench search` prints, before criterion's timings:
//!
//! * the heap the index holds per tool, counted by a counting allocator around the
//!   first search (which makes the index) with the results dropped, and the time
//!   that first search takes;
//! * each search's latency over 2,000 queries (p50, p99, max), for both;
//! * a search right after a registration (the index follows it, no rebuild) and
//!   after an unregistration.
//!
//! Criterion's groups: `search_10000/index` vs `search_10000/scan` (the same
//! queries in turn), and `search_10000/register_then_search`.

#[path = "../tests/support/counting.rs"]
mod counting;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolfunc::{Registry, ToolDefinition};

#[path = "../examples/demo/generated.rs"]
mod generated;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

const TOOLS: usize = 10_000;
const QUERIES: usize = 2_000;
const LIMIT: usize = 10;

fn catalogue() -> Registry {
    let registry = Registry::new();
    for tool in generated::tools(TOOLS) {
        registry
            .register(tool.expect("a valid generated tool"))
            .expect("distinct generated names");
    }
    registry
}

/// The floor: every tool's searchable text, lower-cased once, scanned per query.
struct Scan {
    texts: Vec<(String, String)>,
}

impl Scan {
    fn new(definitions: &[ToolDefinition]) -> Self {
        let texts = definitions
            .iter()
            .map(|def| {
                let mut text = format!(
                    "{} {}",
                    def.name,
                    def.description.as_deref().unwrap_or_default()
                );
                if let Some(properties) = def.params["properties"].as_object() {
                    for (name, schema) in properties {
                        text.push(' ');
                        text.push_str(name);
                        text.push(' ');
                        text.push_str(schema["description"].as_str().unwrap_or_default());
                    }
                }
                (def.name.clone(), text.to_lowercase())
            })
            .collect();
        Self { texts }
    }

    /// The `limit` tools whose text holds the most of the query's words.
    fn search(&self, query: &str, limit: usize) -> Vec<&str> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut found: Vec<(usize, &str)> = self
            .texts
            .iter()
            .filter_map(|(name, text)| {
                let count = words.iter().filter(|w| text.contains(w.as_str())).count();
                (count > 0).then_some((count, name.as_str()))
            })
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        found.truncate(limit);
        found.into_iter().map(|(_, name)| name).collect()
    }
}

/// p50, p99 and max of `each` over `queries`, timed one by one (the slowest
/// query printed).
fn latencies(queries: &[String], mut each: impl FnMut(&str)) -> [Duration; 3] {
    let mut times: Vec<(Duration, &str)> = queries
        .iter()
        .map(|query| {
            let start = Instant::now();
            each(query);
            (start.elapsed(), query.as_str())
        })
        .collect();
    times.sort_unstable();
    eprintln!("  slowest: {:?}", times[times.len() - 1]);
    let times: Vec<Duration> = times.into_iter().map(|(time, _)| time).collect();
    let at = |q: usize| times[(times.len() - 1) * q / 100];
    [at(50), at(99), times[times.len() - 1]]
}

fn report() -> (Registry, Scan, Vec<String>) {
    let registry = catalogue();
    let scan = Scan::new(&registry.definitions());
    let queries = generated::queries(QUERIES, TOOLS);

    let before = counting::held();
    let start = Instant::now();
    drop(black_box(registry.search("invoice", LIMIT)));
    let made = start.elapsed();
    let index = counting::held() - before;
    eprintln!(
        "index: {index} bytes for {TOOLS} tools, {} B a tool, made by the first search in {made:?}",
        index / TOOLS.cast_signed()
    );

    let hits: usize = queries
        .iter()
        .map(|q| registry.search(q, LIMIT).len())
        .sum();
    eprintln!("{QUERIES} queries: {hits} hits (at most {LIMIT} a query)");
    let [p50, p99, max] = latencies(&queries, |q| drop(black_box(registry.search(q, LIMIT))));
    eprintln!("index: p50 {p50:?}, p99 {p99:?}, max {max:?}");
    let [s50, s99, smax] = latencies(&queries, |q| drop(black_box(scan.search(q, LIMIT))));
    eprintln!("scan:  p50 {s50:?}, p99 {s99:?}, max {smax:?}");
    eprintln!(
        "index / scan: {:.3}x at p50, {:.3}x at p99",
        p50.as_secs_f64() / s50.as_secs_f64(),
        p99.as_secs_f64() / s99.as_secs_f64()
    );

    let start = Instant::now();
    registry
        .register(generated::tool(TOOLS).expect("a valid generated tool"))
        .expect("a new name");
    let found = registry.search(&generated::tool(TOOLS).expect("valid").definition().name, 1);
    let registered = start.elapsed();
    assert!(found[0].exact(), "a registered tool is found at once");
    let start = Instant::now();
    registry.unregister(found[0].name());
    let gone = registry.search(found[0].name(), 1);
    let unregistered = start.elapsed();
    assert!(gone.iter().all(|hit| !hit.exact()));
    eprintln!(
        "register + search: {registered:?}; unregister + search: {unregistered:?} (index p50 {p50:?})"
    );
    (registry, scan, queries)
}

fn search(c: &mut Criterion) {
    let (registry, scan, queries) = report();
    let mut group = c.benchmark_group("search_10000");
    group.sample_size(20);
    let mut at = 0;
    group.bench_function("index", |b| {
        b.iter(|| {
            at = (at + 1) % queries.len();
            black_box(registry.search(&queries[at], LIMIT))
        });
    });
    let mut at = 0;
    group.bench_function("scan", |b| {
        b.iter(|| {
            at = (at + 1) % queries.len();
            black_box(scan.search(&queries[at], LIMIT).len())
        });
    });
    let extra = generated::tool(TOOLS + 1).expect("a valid generated tool");
    let name = extra.name().to_owned();
    let extra = toolfunc::ToolRef::from(extra);
    group.bench_function("register_then_search", |b| {
        b.iter(|| {
            registry.register(extra.clone()).expect("a new name");
            let hits = black_box(registry.search(&name, LIMIT));
            registry.unregister(&name);
            hits
        });
    });
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
