//! [`Metrics`]: per-tool counts, errors, durations and calls in flight, recorded at
//! every call and read as Prometheus text or through OpenTelemetry.
//!
//! The hot path takes no global lock: a tool's counters are found in a sharded map
//! (one shard's read lock, shared with calls of other tools in that shard only)
//! and are plain atomics; the histogram's buckets are a fixed array of them. The
//! error counts per code sit behind a lock of their own, taken only when a call
//! fails.

use crate::time::Instant;
use std::fmt::{self, Write as _};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use futures::StreamExt;
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::{Call, Layer, Next, Reply, ReplyFuture};
use crate::error::ToolError;

/// How many tools get series of their own by default; calls of tools past it are
/// counted under the tool name [`OTHER`].
pub const DEFAULT_MAX_TOOLS: usize = 10_000;

/// How many error codes a tool's error counts keep apart by default; errors with
/// codes past it are counted under the code [`OTHER`].
pub const DEFAULT_MAX_ERROR_CODES: usize = 64;

/// The longest error code counted under its own name by default, in bytes; a
/// longer one (a remote peer's, say) is counted under [`OTHER`].
pub const DEFAULT_MAX_ERROR_CODE_BYTES: usize = 64;

/// The most histogram buckets [`MetricsSettings::buckets`] keeps.
pub const MAX_BUCKETS: usize = 64;

/// The duration histogram's bucket bounds by default, in seconds: from 100 µs
/// (an in-process call) to a minute (a call that waits on the world).
pub const DEFAULT_BUCKETS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// The tool name or error code that series past a cap are counted under.
pub const OTHER: &str = "_OTHER";

/// The content type of [`Metrics::prometheus`]'s text: the Prometheus text
/// exposition format 0.0.4.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The families [`Metrics::prometheus`] writes for the tools, with their series'
/// suffixes; no gauge may take one of their names.
const FAMILIES: [&str; 7] = [
    "toolfunc_tool_calls_total",
    "toolfunc_tool_call_duration_seconds",
    "toolfunc_tool_call_errors_total",
    "toolfunc_tool_call_duration_seconds_bucket",
    "toolfunc_tool_call_duration_seconds_sum",
    "toolfunc_tool_call_duration_seconds_count",
    "toolfunc_tool_calls_in_flight",
];

/// Shards of the per-tool map: 2 to the power of this.
const SHARD_BITS: u32 = 4;
const SHARDS: usize = 1 << SHARD_BITS;

/// The error code a call dropped before it ended (its caller went away) is
/// counted under.
const DROPPED: &str = "CANCELLED";

/// The bounds of what [`Metrics`] keeps, and the duration histogram's buckets.
#[derive(Debug, Clone)]
pub struct MetricsSettings {
    max_tools: usize,
    max_error_codes: usize,
    max_error_code_bytes: usize,
    buckets: Vec<f64>,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self {
            max_tools: DEFAULT_MAX_TOOLS,
            max_error_codes: DEFAULT_MAX_ERROR_CODES,
            max_error_code_bytes: DEFAULT_MAX_ERROR_CODE_BYTES,
            buckets: DEFAULT_BUCKETS.to_vec(),
        }
    }
}

impl MetricsSettings {
    /// The defaults: [`DEFAULT_MAX_TOOLS`], [`DEFAULT_MAX_ERROR_CODES`],
    /// [`DEFAULT_MAX_ERROR_CODE_BYTES`], [`DEFAULT_BUCKETS`].
    pub fn new() -> Self {
        Self::default()
    }

    /// How many tools get series of their own (default [`DEFAULT_MAX_TOOLS`]);
    /// the calls of tools past it are counted together under [`OTHER`].
    #[must_use]
    pub fn max_tools(mut self, max: usize) -> Self {
        self.max_tools = max;
        self
    }

    /// How many error codes each tool counts apart (default
    /// [`DEFAULT_MAX_ERROR_CODES`]); errors of codes past it are counted under
    /// [`OTHER`].
    #[must_use]
    pub fn max_error_codes(mut self, max: usize) -> Self {
        self.max_error_codes = max;
        self
    }

    /// The longest error code counted under its own name, in bytes (default
    /// [`DEFAULT_MAX_ERROR_CODE_BYTES`]); errors with a longer code are counted
    /// under [`OTHER`].
    #[must_use]
    pub fn max_error_code_bytes(mut self, max: usize) -> Self {
        self.max_error_code_bytes = max;
        self
    }

    /// The duration histogram's bucket upper bounds, in seconds (default
    /// [`DEFAULT_BUCKETS`]). They are sorted; values that are not finite and
    /// positive, and repeats, are dropped, and at most [`MAX_BUCKETS`] are kept.
    /// A `+Inf` bucket always follows.
    #[must_use]
    pub fn buckets(mut self, bounds: impl IntoIterator<Item = f64>) -> Self {
        let mut bounds: Vec<f64> = bounds
            .into_iter()
            .filter(|b| b.is_finite() && *b > 0.0)
            .collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        bounds.truncate(MAX_BUCKETS);
        self.buckets = bounds;
        self
    }
}

/// Per-tool metrics, as call middleware: attach it to a registry (or runner) and
/// every call through it, from every surface, is counted.
///
/// What it records, per tool (attribute `gen_ai.tool.name`; `gen_ai_tool_name` in
/// Prometheus):
///
/// | Prometheus | OpenTelemetry | what |
/// | --- | --- | --- |
/// | `toolfunc_tool_calls_total` | `toolfunc.tool.calls` (`{call}`) | calls that ended, failed ones included |
/// | `toolfunc_tool_call_errors_total` | `toolfunc.tool.call.errors` (`{error}`) | calls that failed, by the error's code (`error_type`; `error.type`) |
/// | `toolfunc_tool_call_duration_seconds` | `toolfunc.tool.call.duration` (`s`) | how long calls took, until a stream's end |
/// | `toolfunc_tool_calls_in_flight` | `toolfunc.tool.calls.in_flight` (`{call}`) | calls running now, streams until they end |
///
/// and any [gauge](Self::gauge) read by callback (the ledger's entries, a NATS
/// worker's calls in flight, MCP sessions open). A call dropped before it ended
/// (its caller went away) is counted as failed with `CANCELLED`.
///
/// Read it as Prometheus text with [`prometheus`](Self::prometheus) (served by
/// `toolfunc::http::Api::metrics`), or through an OpenTelemetry meter with
/// `otel` (feature `otel`). Clones share the counts.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::layer::Metrics;
/// use toolfunc::{tool, Registry};
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: f64, b: f64) -> f64 {
///     a + b
/// }
///
/// let metrics = Metrics::new();
/// let registry = Registry::global().isolate().layer(metrics.clone());
/// registry.run_sync("add", json!({"a": 1, "b": 2})).unwrap();
/// let text = metrics.prometheus();
/// assert!(text.contains("toolfunc_tool_calls_total{gen_ai_tool_name=\"add\"} 1\n"));
/// ```
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    settings: MetricsSettings,
    shards: Box<[Shard]>,
    /// How many tools have series of their own.
    tools: AtomicU64,
    /// The calls of tools past the cap.
    other: Arc<ToolStats>,
    shared: Arc<Shared>,
    gauges: RwLock<Vec<Arc<Gauge>>>,
    #[cfg(feature = "otel")]
    otel: std::sync::OnceLock<otel::Instruments>,
}

/// One shard of the per-tool map.
type Shard = RwLock<FxHashMap<Box<str>, Arc<ToolStats>>>;

/// What every tool's counters share: the bucket bounds, the OpenTelemetry
/// histogram.
struct Shared {
    /// The buckets' upper bounds, in nanoseconds.
    bounds: Box<[u64]>,
    #[cfg(feature = "otel")]
    histogram: std::sync::OnceLock<opentelemetry::metrics::Histogram<f64>>,
}

/// One tool's counters.
struct ToolStats {
    name: Arc<str>,
    shared: Arc<Shared>,
    calls: AtomicU64,
    in_flight: AtomicI64,
    /// Observations per bucket (not cumulative); the last is `+Inf`.
    buckets: Box<[AtomicU64]>,
    sum_nanos: AtomicU64,
    errors: Mutex<Vec<(Box<str>, u64)>>,
    max_codes: usize,
    max_code_bytes: usize,
    #[cfg(feature = "otel")]
    attributes: [opentelemetry::KeyValue; 1],
}

/// A gauge read by callback.
struct Gauge {
    name: Box<str>,
    help: Box<str>,
    read: Box<dyn Fn() -> u64 + Send + Sync>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics")
            .field("settings", &self.inner.settings)
            .field("tools", &self.inner.tools.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolStats {
    fn new(name: &str, shared: &Arc<Shared>, settings: &MetricsSettings) -> Self {
        let name: Arc<str> = Arc::from(name);
        Self {
            #[cfg(feature = "otel")]
            attributes: [opentelemetry::KeyValue::new(
                otel::TOOL_NAME,
                opentelemetry::StringValue::from(Arc::clone(&name)),
            )],
            name,
            shared: Arc::clone(shared),
            calls: AtomicU64::new(0),
            in_flight: AtomicI64::new(0),
            buckets: (0..=shared.bounds.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            sum_nanos: AtomicU64::new(0),
            errors: Mutex::new(Vec::new()),
            max_codes: settings.max_error_codes,
            max_code_bytes: settings.max_error_code_bytes,
        }
    }

    /// Counts a call that ended after `started`, failed with `error` or not.
    fn ended(&self, started: Instant, error: Option<&str>) {
        let elapsed = started.elapsed();
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let at = self.shared.bounds.partition_point(|&bound| bound < nanos);
        if let Some(bucket) = self.buckets.get(at) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        if let Some(code) = error {
            self.failed(code);
        }
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        #[cfg(feature = "otel")]
        if let Some(histogram) = self.shared.histogram.get() {
            histogram.record(elapsed.as_secs_f64(), &self.attributes);
        }
    }

    fn failed(&self, code: &str) {
        let code = if code.len() > self.max_code_bytes {
            OTHER
        } else {
            code
        };
        let mut errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, count)) = errors.iter_mut().find(|(c, _)| &**c == code) {
            *count += 1;
            return;
        }
        let code = if errors.len() < self.max_codes {
            code
        } else {
            OTHER
        };
        match errors.iter_mut().find(|(c, _)| &**c == code) {
            Some((_, count)) => *count += 1,
            None => errors.push((code.into(), 1)),
        }
    }

    fn errors(&self) -> Vec<(Box<str>, u64)> {
        let mut errors = self
            .errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        errors.sort();
        errors
    }
}

impl Metrics {
    /// Metrics with the default [settings](MetricsSettings).
    pub fn new() -> Self {
        Self::with_settings(MetricsSettings::default())
    }

    /// Metrics with `settings`.
    pub fn with_settings(settings: MetricsSettings) -> Self {
        let shared = Arc::new(Shared {
            bounds: settings
                .buckets
                .iter()
                .map(|&seconds| seconds_to_nanos(seconds))
                .collect(),
            #[cfg(feature = "otel")]
            histogram: std::sync::OnceLock::new(),
        });
        Self {
            inner: Arc::new(Inner {
                other: Arc::new(ToolStats::new(OTHER, &shared, &settings)),
                shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
                tools: AtomicU64::new(0),
                shared,
                settings,
                gauges: RwLock::default(),
                #[cfg(feature = "otel")]
                otel: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &MetricsSettings {
        &self.inner.settings
    }

    /// Adds a gauge read by callback: `read` is called each time the metrics are
    /// read (a scrape, an OpenTelemetry collection), not on calls. `name` is the
    /// OpenTelemetry name (`toolfunc.ledger.entries`); the Prometheus name has its
    /// dots as underscores (`toolfunc_ledger_entries`). `help` says what it counts.
    ///
    /// A name is 1 to 255 ASCII letters, digits, `_` and `.`, starting with a
    /// letter; another is `ARGUMENTS`. A name given again replaces the gauge's
    /// `help` and `read`; a name whose Prometheus name is another gauge's, or one
    /// of the tool metrics' series (`toolfunc_tool_calls_total`...), is
    /// `CONFLICT`. `read` keeps what it captures alive as long as the
    /// metrics; capture a weak handle where that matters.
    ///
    /// ```rust
    /// use toolfunc::ledger::Ledger;
    /// use toolfunc::layer::Metrics;
    /// use toolfunc::Registry;
    ///
    /// let metrics = Metrics::new();
    /// let ledger = Ledger::new(Registry::new());
    /// let entries = ledger.clone();
    /// metrics
    ///     .gauge("toolfunc.ledger.entries", "Calls the ledger tracks.", move || {
    ///         entries.len() as u64
    ///     })
    ///     .unwrap();
    /// assert!(metrics.prometheus().contains("\ntoolfunc_ledger_entries 0\n"));
    /// ```
    pub fn gauge(
        &self,
        name: &str,
        help: &str,
        read: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> Result<(), ToolError> {
        check_name(name)?;
        if FAMILIES.contains(&&*name.replace('.', "_")) {
            return Err(ToolError::conflict(format!(
                "`{name}` is the name of one of the tool metrics"
            )));
        }
        let gauge = Arc::new(Gauge {
            name: name.into(),
            help: help.into(),
            read: Box::new(read),
        });
        let mut gauges = self
            .inner
            .gauges
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let exposed = |name: &str| name.replace('.', "_");
        if let Some(old) = gauges
            .iter_mut()
            .find(|g| exposed(&g.name) == exposed(name))
        {
            if old.name != gauge.name {
                return Err(ToolError::conflict(format!(
                    "the gauge `{}` is exposed as `{}` already",
                    old.name,
                    exposed(name)
                )));
            }
            *old = gauge;
            return Ok(());
        }
        gauges.push(Arc::clone(&gauge));
        #[cfg(feature = "otel")]
        if let Some(instruments) = self.inner.otel.get() {
            instruments.gauge(&self.inner, &gauge.name, &gauge.help);
        }
        Ok(())
    }

    /// The counters of `tool`, made on its first call.
    fn stats(&self, tool: &str) -> Arc<ToolStats> {
        let inner = &*self.inner;
        // The hash's high bits are its best mixed.
        let hash = FxBuildHasher.hash_one(tool) >> (u64::BITS - SHARD_BITS);
        let shard = &inner.shards[usize::try_from(hash).unwrap_or_default() % SHARDS];
        if let Some(stats) = shard
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
        {
            return Arc::clone(stats);
        }
        let mut map = shard.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(stats) = map.get(tool) {
            return Arc::clone(stats);
        }
        let max = u64::try_from(inner.settings.max_tools).unwrap_or(u64::MAX);
        let taken = inner
            .tools
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            });
        if taken.is_err() {
            return Arc::clone(&inner.other);
        }
        let stats = Arc::new(ToolStats::new(tool, &inner.shared, &inner.settings));
        map.insert(tool.into(), Arc::clone(&stats));
        stats
    }

    /// Every tool's counters, sorted by name ([`OTHER`] last, when used).
    fn all(&self) -> Vec<Arc<ToolStats>> {
        let mut all: Vec<Arc<ToolStats>> = self
            .inner
            .shards
            .iter()
            .flat_map(|shard| {
                shard
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .values()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        let other = &self.inner.other;
        if other.calls.load(Ordering::Relaxed) > 0 || other.in_flight.load(Ordering::Relaxed) != 0 {
            all.push(Arc::clone(other));
        }
        all
    }

    fn gauges(&self) -> Vec<Arc<Gauge>> {
        self.inner
            .gauges
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The metrics in the Prometheus text exposition format 0.0.4
    /// ([`PROMETHEUS_CONTENT_TYPE`]): every family with its `# HELP` and `# TYPE`,
    /// the duration histogram as `_bucket{le=".."}` (cumulative), `_sum` (seconds)
    /// and `_count`, label values escaped. Reading calls each gauge's callback.
    pub fn prometheus(&self) -> String {
        let tools = self.all();
        let mut out = String::new();
        family(
            &mut out,
            "toolfunc_tool_calls_total",
            "Tool calls that ended, failed ones included.",
            "counter",
        );
        for stats in &tools {
            let calls = stats.calls.load(Ordering::Relaxed);
            sample(
                &mut out,
                "toolfunc_tool_calls_total",
                &stats.name,
                &[],
                calls,
            );
        }
        family(
            &mut out,
            "toolfunc_tool_call_errors_total",
            "Tool calls that failed, by the error's code.",
            "counter",
        );
        for stats in &tools {
            for (code, count) in stats.errors() {
                let labels = [("error_type", &*code)];
                sample(
                    &mut out,
                    "toolfunc_tool_call_errors_total",
                    &stats.name,
                    &labels,
                    count,
                );
            }
        }
        family(
            &mut out,
            "toolfunc_tool_call_duration_seconds",
            "How long tool calls took, in seconds (a stream until its end).",
            "histogram",
        );
        let bounds: Vec<String> = self
            .inner
            .settings
            .buckets
            .iter()
            .map(|b| format!("{b}"))
            .chain(std::iter::once("+Inf".to_owned()))
            .collect();
        for stats in &tools {
            let mut cumulative = 0u64;
            for (bucket, le) in stats.buckets.iter().zip(&bounds) {
                cumulative += bucket.load(Ordering::Relaxed);
                sample(
                    &mut out,
                    "toolfunc_tool_call_duration_seconds_bucket",
                    &stats.name,
                    &[("le", le)],
                    cumulative,
                );
            }
            let sum = nanos_to_seconds(stats.sum_nanos.load(Ordering::Relaxed));
            sample(
                &mut out,
                "toolfunc_tool_call_duration_seconds_sum",
                &stats.name,
                &[],
                sum,
            );
            sample(
                &mut out,
                "toolfunc_tool_call_duration_seconds_count",
                &stats.name,
                &[],
                cumulative,
            );
        }
        family(
            &mut out,
            "toolfunc_tool_calls_in_flight",
            "Tool calls running now (a stream until its end).",
            "gauge",
        );
        for stats in &tools {
            let running = stats.in_flight.load(Ordering::Relaxed);
            sample(
                &mut out,
                "toolfunc_tool_calls_in_flight",
                &stats.name,
                &[],
                running,
            );
        }
        for gauge in self.gauges() {
            let name = gauge.name.replace('.', "_");
            family(&mut out, &name, &gauge.help, "gauge");
            let _ = writeln!(out, "{name} {}", (gauge.read)());
        }
        out
    }
}

/// `# HELP` and `# TYPE` of a family.
fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// One sample of a tool's series, with `labels` after the tool's.
fn sample(
    out: &mut String,
    name: &str,
    tool: &str,
    labels: &[(&str, &str)],
    value: impl fmt::Display,
) {
    let _ = write!(out, "{name}{{gen_ai_tool_name=\"{}\"", escape_label(tool));
    for (key, value) in labels {
        let _ = write!(out, ",{key}=\"{}\"", escape_label(value));
    }
    let _ = writeln!(out, "}} {value}");
}

/// A label value as the text format wants it: `\`, `"` and line feeds escaped.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A `# HELP` text as the text format wants it: `\` and line feeds escaped.
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

fn check_name(name: &str) -> Result<(), ToolError> {
    let ok = (1..=255).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(ToolError::arguments(
            "",
            format!(
                "a gauge's name is 1 to 255 ASCII letters, digits, `_` and `.`, starting \
                 with a letter; `{}` is not",
                name.chars().take(64).collect::<String>()
            ),
        ))
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn seconds_to_nanos(seconds: f64) -> u64 {
    // Finite and positive (the settings keep no other); saturates past u64.
    (seconds * 1e9).round() as u64
}

#[allow(clippy::cast_precision_loss)]
fn nanos_to_seconds(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

impl Layer for Metrics {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        let stats = self.stats(call.tool());
        stats.in_flight.fetch_add(1, Ordering::Relaxed);
        let running = Running {
            stats: Some(stats),
            started: Instant::now(),
        };
        let mut reply = next.run(call);
        if let Some(reply) = reply.take_ready() {
            return ReplyFuture::ready(running.finish(reply));
        }
        ReplyFuture::new(async move { running.finish(reply.await) })
    }
}

/// A call being counted: counted as ended when it finishes, or as cancelled when
/// dropped before.
struct Running {
    /// Taken when the call is counted.
    stats: Option<Arc<ToolStats>>,
    started: Instant,
}

impl Running {
    fn end(&mut self, error: Option<&str>) {
        if let Some(stats) = self.stats.take() {
            stats.ended(self.started, error);
        }
    }

    fn finish(mut self, reply: Result<Reply, ToolError>) -> Result<Reply, ToolError> {
        match reply {
            Ok(Reply::Stream(items)) => Ok(Reply::Stream(Box::pin(Counted {
                items,
                running: self,
            }))),
            Ok(value) => {
                self.end(None);
                Ok(value)
            }
            Err(err) => {
                self.end(Some(err.code()));
                Err(err)
            }
        }
    }
}

/// A stream counted as ended at its end, at its first error, or when dropped.
struct Counted {
    items: futures::stream::BoxStream<'static, Result<serde_json::Value, ToolError>>,
    running: Running,
}

impl futures::Stream for Counted {
    type Item = Result<serde_json::Value, ToolError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let polled = self.items.poll_next_unpin(cx);
        match &polled {
            std::task::Poll::Ready(Some(Err(err))) => self.running.end(Some(err.code())),
            std::task::Poll::Ready(None) => self.running.end(None),
            std::task::Poll::Ready(Some(Ok(_))) | std::task::Poll::Pending => {}
        }
        polled
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        // A consumer that stops reading ends the stream; it did not fail.
        self.running.end(None);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.end(Some(DROPPED));
    }
}

#[cfg(feature = "otel")]
mod otel {
    //! The OpenTelemetry side: observable instruments reading the same counters,
    //! and the duration histogram recorded at each call.

    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Mutex, PoisonError, Weak};

    use opentelemetry::KeyValue;
    use opentelemetry::metrics::Meter;

    use super::{Inner, Metrics, nanos_to_seconds};
    use crate::error::ToolError;

    /// The attribute naming the tool.
    pub(super) const TOOL_NAME: &str = "gen_ai.tool.name";
    /// The attribute naming an error's code.
    const ERROR_TYPE: &str = "error.type";

    /// The meter the instruments were made on, and the instruments (kept alive).
    pub(super) struct Instruments {
        meter: Meter,
        kept: Mutex<Vec<Box<dyn std::any::Any + Send + Sync>>>,
    }

    impl Instruments {
        /// Adds an observable gauge reading the gauge `name` of `inner`.
        pub(super) fn gauge(&self, inner: &Arc<Inner>, name: &str, help: &str) {
            let weak = Arc::downgrade(inner);
            let own = name.to_owned();
            let gauge = self
                .meter
                .u64_observable_gauge(own.clone())
                .with_description(help.to_owned())
                .with_callback(move |observer| {
                    let Some(inner) = weak.upgrade() else { return };
                    // Read with the list unlocked: a callback may add a gauge.
                    let gauge = inner
                        .gauges
                        .read()
                        .unwrap_or_else(PoisonError::into_inner)
                        .iter()
                        .find(|g| *g.name == *own)
                        .cloned();
                    if let Some(gauge) = gauge {
                        observer.observe((gauge.read)(), &[]);
                    }
                })
                .build();
            self.keep(Box::new(gauge));
        }

        fn keep(&self, instrument: Box<dyn std::any::Any + Send + Sync>) {
            self.kept
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(instrument);
        }
    }

    /// Every tool's counters, from a weak handle (none once the metrics are gone).
    fn tools(weak: &Weak<Inner>) -> Vec<Arc<super::ToolStats>> {
        weak.upgrade()
            .map(|inner| Metrics { inner }.all())
            .unwrap_or_default()
    }

    impl Metrics {
        /// Exports these metrics through an OpenTelemetry `meter` as well (feature
        /// `otel`): `toolfunc.tool.calls`, `toolfunc.tool.call.errors` and
        /// `toolfunc.tool.calls.in_flight` are observed from the same counters the
        /// Prometheus text reads, each gauge as an observable gauge of its name, and
        /// `toolfunc.tool.call.duration` (seconds, the settings' buckets) is recorded
        /// at each call from now on. Attributes: `gen_ai.tool.name`, and
        /// `error.type` (the error's code) on errors. Only one meter: a second is
        /// `CONFLICT`.
        ///
        /// ```rust
        /// use opentelemetry::metrics::MeterProvider as _;
        /// use opentelemetry_sdk::metrics::SdkMeterProvider;
        /// use toolfunc::layer::Metrics;
        ///
        /// let provider = SdkMeterProvider::builder().build();
        /// let metrics = Metrics::new();
        /// metrics.otel(&provider.meter("toolfunc")).unwrap();
        /// ```
        pub fn otel(&self, meter: &Meter) -> Result<(), ToolError> {
            let instruments = Instruments {
                meter: meter.clone(),
                kept: Mutex::new(Vec::new()),
            };
            if self.inner.otel.set(instruments).is_err() {
                return Err(ToolError::conflict(
                    "these metrics are exported through a meter already",
                ));
            }
            let Some(instruments) = self.inner.otel.get() else {
                return Ok(());
            };
            let weak = Arc::downgrade(&self.inner);
            let calls = meter
                .u64_observable_counter("toolfunc.tool.calls")
                .with_description("Tool calls that ended, failed ones included.")
                .with_unit("{call}")
                .with_callback(move |observer| {
                    for stats in tools(&weak) {
                        observer.observe(stats.calls.load(Ordering::Relaxed), &stats.attributes);
                    }
                })
                .build();
            instruments.keep(Box::new(calls));
            let weak = Arc::downgrade(&self.inner);
            let errors = meter
                .u64_observable_counter("toolfunc.tool.call.errors")
                .with_description("Tool calls that failed, by the error's code.")
                .with_unit("{error}")
                .with_callback(move |observer| {
                    for stats in tools(&weak) {
                        for (code, count) in stats.errors() {
                            let attributes = [
                                stats.attributes[0].clone(),
                                KeyValue::new(ERROR_TYPE, String::from(code)),
                            ];
                            observer.observe(count, &attributes);
                        }
                    }
                })
                .build();
            instruments.keep(Box::new(errors));
            let weak = Arc::downgrade(&self.inner);
            let in_flight = meter
                .i64_observable_up_down_counter("toolfunc.tool.calls.in_flight")
                .with_description("Tool calls running now (a stream until its end).")
                .with_unit("{call}")
                .with_callback(move |observer| {
                    for stats in tools(&weak) {
                        observer
                            .observe(stats.in_flight.load(Ordering::Relaxed), &stats.attributes);
                    }
                })
                .build();
            instruments.keep(Box::new(in_flight));
            let histogram = meter
                .f64_histogram("toolfunc.tool.call.duration")
                .with_description("How long tool calls took (a stream until its end).")
                .with_unit("s")
                .with_boundaries(
                    self.inner
                        .shared
                        .bounds
                        .iter()
                        .map(|&nanos| nanos_to_seconds(nanos))
                        .collect(),
                )
                .build();
            let _ = self.inner.shared.histogram.set(histogram);
            for gauge in self.gauges() {
                instruments.gauge(&self.inner, &gauge.name, &gauge.help);
            }
            Ok(())
        }
    }
}
