//! CORS for the pages of origins an [`Api`](super::Api) names
//! ([`Api::cors_origins`](super::Api::cors_origins)): their preflights are answered,
//! and their answers carry the headers that let the page read them. Any other
//! origin gets no CORS header at all, so a browser keeps its pages from the API.

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;

/// The methods a page may use (every method a path can answer).
const METHODS: &str = "GET, POST, PUT, PATCH, DELETE";

/// The request headers a page may send: the wire's own, the bearer credential, and
/// the W3C trace context.
const REQUEST_HEADERS: &str = "content-type, authorization, rpc-fn, rpc-act, rpc-res-id, \
                               req-id, rpc-timeout, rpc-client-id, x-client-id, x-request-id, \
                               traceparent, tracestate, baggage";

/// The answer headers a page may read besides the simple ones: a background
/// call's id and when to poll it, the proxy's request id, and a challenge.
const EXPOSED: &str = "req-id, rpc-retry-after, x-request-id, www-authenticate";

/// How long a browser may keep a preflight's answer, in seconds.
const MAX_AGE: &str = "600";

/// The origins a server answers CORS for, lower case, without a trailing slash.
#[derive(Debug, Clone, Default)]
pub(super) struct Cors {
    origins: Vec<String>,
}

/// The allowed origin a request came from, to echo in its answer.
pub(super) struct Granted(HeaderValue);

impl Cors {
    /// CORS for `origins` (`https://app.example.com`).
    pub(super) fn new(origins: impl IntoIterator<Item = String>) -> Self {
        Self {
            origins: origins.into_iter().map(|o| normal(&o)).collect(),
        }
    }

    /// The named origins.
    pub(super) fn origins(&self) -> &[String] {
        &self.origins
    }

    /// The request's origin, when it is one of those named.
    pub(super) fn granted(&self, headers: &HeaderMap) -> Option<Granted> {
        if self.origins.is_empty() {
            return None;
        }
        let origin = headers.get(header::ORIGIN)?;
        let text = normal(origin.to_str().ok()?);
        self.origins
            .contains(&text)
            .then(|| Granted(origin.clone()))
    }
}

impl Granted {
    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`).
    pub(super) fn preflight(&self) -> Response {
        let mut response = Response::new(axum::body::Body::empty());
        *response.status_mut() = StatusCode::NO_CONTENT;
        let headers = response.headers_mut();
        self.mark(headers);
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(METHODS),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(REQUEST_HEADERS),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(MAX_AGE),
        );
        response
    }

    /// Lets the page read `response`.
    pub(super) fn expose(&self, response: &mut Response) {
        let headers = response.headers_mut();
        self.mark(headers);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED),
        );
    }

    fn mark(&self, headers: &mut HeaderMap) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, self.0.clone());
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
}

/// Whether `method` and `headers` make a CORS preflight.
pub(super) fn is_preflight(method: &Method, headers: &HeaderMap) -> bool {
    method == Method::OPTIONS && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

fn normal(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}
