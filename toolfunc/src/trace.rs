//! The W3C trace context (`traceparent`, `tracestate`, `baggage`) a call came with,
//! carried in its context so that the calls it makes carry it on.

/// The name of the W3C `traceparent` header (and MCP `_meta` key).
pub(crate) const TRACEPARENT: &str = "traceparent";
/// The name of the W3C `tracestate` header (and MCP `_meta` key).
pub(crate) const TRACESTATE: &str = "tracestate";
/// The name of the W3C `baggage` header (and MCP `_meta` key).
pub(crate) const BAGGAGE: &str = "baggage";

/// The W3C trace context of a call that came from another process: its
/// `traceparent`, and the `tracestate` and `baggage` that came with it.
///
/// Every remote surface (HTTP headers, MCP `_meta`, NATS headers) puts the one it
/// received in the call's [`Ctx`](crate::Ctx) (`ctx.get::<TraceContext>()`), and
/// the HTTP and NATS clients send it on with the calls made inside that call. With
/// the `otel` feature and [`otel`](crate::otel) installed, the clients send the
/// context of the current span instead, so that the remote call is its child.
///
/// A `traceparent` that is not of the W3C form (`00-{32 hex}-{16 hex}-{2 hex}`,
/// neither id all zeros) is ignored, and so are the other two with it.
///
/// ```
/// use toolfunc::TraceContext;
///
/// let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// let trace = TraceContext::new(parent).unwrap().with_tracestate("congo=t61rcWkgMzE");
/// assert_eq!(trace.traceparent(), parent);
/// assert_eq!(trace.tracestate(), Some("congo=t61rcWkgMzE"));
/// assert!(TraceContext::new("not a traceparent").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
    baggage: Option<String>,
}

impl TraceContext {
    /// The context of `traceparent`; `None` when it is not of the W3C form.
    pub fn new(traceparent: &str) -> Option<Self> {
        let traceparent = traceparent.trim();
        is_traceparent(traceparent).then(|| Self {
            traceparent: traceparent.to_owned(),
            tracestate: None,
            baggage: None,
        })
    }

    /// With a `tracestate` (an empty one is none).
    #[must_use]
    pub fn with_tracestate(mut self, tracestate: &str) -> Self {
        self.tracestate = text(tracestate).filter(|state| state.len() <= MAX_TRACESTATE);
        self
    }

    /// With a `baggage` (an empty one is none).
    #[must_use]
    pub fn with_baggage(mut self, baggage: &str) -> Self {
        self.baggage = text(baggage).filter(|baggage| baggage.len() <= MAX_BAGGAGE);
        self
    }

    /// The `traceparent`: version, trace id, parent span id and flags.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The 32 hex digits of the trace id.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The 16 hex digits of the caller's span id (the parent of this call's spans).
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// The `tracestate`, if any came.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The `baggage`, if any came.
    pub fn baggage(&self) -> Option<&str> {
        self.baggage.as_deref()
    }

    #[cfg_attr(
        not(any(
            feature = "http-server",
            feature = "mcp",
            feature = "nats",
            feature = "otel"
        )),
        expect(
            dead_code,
            reason = "read by the servers (and the OpenTelemetry link) only"
        )
    )]
    /// The context read from a carrier (headers, `_meta`) by name; `None` without a
    /// well-formed `traceparent`.
    pub(crate) fn read<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Option<Self> {
        let mut trace = Self::new(get(TRACEPARENT)?)?;
        if let Some(state) = get(TRACESTATE) {
            trace = trace.with_tracestate(state);
        }
        if let Some(baggage) = get(BAGGAGE) {
            trace = trace.with_baggage(baggage);
        }
        Some(trace)
    }

    #[cfg_attr(
        not(any(feature = "http-client", feature = "nats", feature = "otel")),
        expect(dead_code, reason = "written by the clients (and OpenTelemetry) only")
    )]
    /// The entries to write into a carrier: `(name, value)`.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            Some((TRACEPARENT, self.traceparent.as_str())),
            self.tracestate.as_deref().map(|s| (TRACESTATE, s)),
            self.baggage.as_deref().map(|b| (BAGGAGE, b)),
        ]
        .into_iter()
        .flatten()
    }
}

/// The longest `tracestate` kept (W3C Trace Context: 32 entries, 512 characters
/// at most); a longer one is dropped, as the recommendation allows.
const MAX_TRACESTATE: usize = 512;

/// The longest `baggage` kept (W3C Baggage: 8,192 bytes at most); a longer one
/// is dropped.
const MAX_BAGGAGE: usize = 8192;

/// The longest `traceparent` of a later version taken (version `00` is 55).
const MAX_TRACEPARENT: usize = 256;

/// Text a header can carry, trimmed; `None` when empty or when it holds a control
/// character or anything outside visible ASCII and spaces.
fn text(value: &str) -> Option<String> {
    let value = value.trim();
    let printable = value.bytes().all(|b| b == b' ' || b.is_ascii_graphic());
    (!value.is_empty() && printable).then(|| value.to_owned())
}

/// `version-traceid-parentid-flags`, lowercase hex, version not `ff`, ids not all
/// zeros. Version `00` is exactly 55 characters; a later version may append fields
/// after a `-`, which are kept as sent.
fn is_traceparent(value: &str) -> bool {
    if value.len() > MAX_TRACEPARENT {
        return false;
    }
    let bytes = value.as_bytes();
    let hex = |range: std::ops::Range<usize>| {
        bytes
            .get(range)
            .is_some_and(|part| part.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    };
    let zeros = |range: std::ops::Range<usize>| bytes[range].iter().all(|b| *b == b'0');
    let shaped = bytes.len() >= 55
        && hex(0..2)
        && bytes[2] == b'-'
        && hex(3..35)
        && bytes[35] == b'-'
        && hex(36..52)
        && bytes[52] == b'-'
        && hex(53..55);
    if !shaped || &value[0..2] == "ff" || zeros(3..35) || zeros(36..52) {
        return false;
    }
    match &value[0..2] {
        "00" => bytes.len() == 55,
        _ => bytes.len() == 55 || (bytes[55] == b'-' && text(value).is_some()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_trace_headers_are_dropped() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let trace = TraceContext::new(good)
            .expect("a traceparent")
            .with_tracestate(&"a=b,".repeat(200))
            .with_baggage(&"k=v,".repeat(3000));
        assert_eq!(trace.tracestate, None);
        assert_eq!(trace.baggage, None);
        let later = format!(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}",
            "x".repeat(300)
        );
        assert!(TraceContext::new(&later).is_none());
        let kept = TraceContext::new(good)
            .expect("a traceparent")
            .with_tracestate("vendor=value")
            .with_baggage("user=ann");
        assert_eq!(kept.tracestate.as_deref(), Some("vendor=value"));
        assert_eq!(kept.baggage.as_deref(), Some("user=ann"));
    }

    #[test]
    fn reads_only_w3c_traceparents() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(TraceContext::new(good).is_some());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0é",
        ] {
            assert!(TraceContext::new(bad).is_none(), "{bad:?}");
        }
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert!(TraceContext::new(later).is_some());
        let trace = TraceContext::new(good).unwrap();
        assert_eq!(trace.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(trace.parent_id(), "00f067aa0ba902b7");
    }
}
