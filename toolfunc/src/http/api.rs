//! The [`Api`] builder: one registry served under one prefix, with the host,
//! origin, body, auth and GET settings its requests are screened against, and the
//! axum router that hands them to the request path ([`respond`](super::respond)).

use std::fmt;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;

use crate::auth::Authenticator;
use crate::error::ToolError;
use crate::identity::Identity;
use crate::layer::Metrics;
use crate::options::CollectLimit;
use crate::registry::Registry;
use crate::remote::ledger::Ledger;
use crate::remote::search::SearchBounds;

/// The default request body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// Where [`Api::metrics`] serves the Prometheus text: `/metrics`, beside the
/// prefix, as scrapers expect.
pub const METRICS_PATH: &str = "/metrics";

/// The scope a verified caller needs for `/metrics` on an API with an
/// authenticator, unless [`Api::metrics_scope`] says otherwise: `metrics:read`.
/// The metrics name every tool and count every caller's calls, so a token good
/// for calling tools is not enough to read them.
pub const DEFAULT_METRICS_SCOPE: &str = "metrics:read";

/// What an auth hook sees of a request, before anything runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct AuthRequest<'a> {
    /// The HTTP method.
    pub method: &'a Method,
    /// The request headers (`authorization`, cookies, ...).
    pub headers: &'a HeaderMap,
    /// The request path (prefix included).
    pub path: &'a str,
    /// The canonical name of the tool that will run (aliases resolved); `None` for
    /// discovery and for a request that names no tool this API serves.
    pub tool: Option<&'a str>,
    /// The canonical act a service call will run (`"$hello"` however the client
    /// spelled it, `"get"`, `"list"`); `None` for a plain tool. An act the service
    /// does not have is refused before the hook is asked.
    pub act: Option<&'a str>,
    /// The caller, as the API's [authenticator](Api::authenticate) verified it;
    /// `None` without one.
    pub identity: Option<&'a Identity>,
}

type AuthFn = dyn Fn(&AuthRequest<'_>) -> Result<(), ToolError> + Send + Sync;

/// One registry served under one prefix: discovery at `GET <prefix>`, calls at
/// `<METHOD> <prefix>/<tool>[/<id>]`.
///
/// ```no_run
/// use toolfunc::{Registry, ToolError};
/// use toolfunc::http::Api;
///
/// let api = Api::new(Registry::global())
///     .prefix("/rpc")
///     .body_limit(64 * 1024)
///     .auth(|req| {
///         match req.headers.get("authorization") {
///             Some(v) if v == "Bearer secret" => Ok(()),
///             _ => Err(ToolError::custom("UNAUTHORIZED", 401, "a bearer token is required")),
///         }
///     });
/// // Mount it in an existing app.
/// let app: axum::Router = axum::Router::new().merge(api.router());
/// # let _ = app;
/// ```
#[derive(Clone)]
pub struct Api {
    pub(super) registry: Registry,
    pub(super) prefix: String,
    pub(super) body_limit: usize,
    pub(super) auth: Option<Arc<AuthFn>>,
    /// Verifies every request's bearer token, when set.
    pub(super) authenticator: Option<Arc<dyn Authenticator>>,
    /// The resource URI published in the metadata, when set.
    pub(super) resource: Option<String>,
    /// `None`: any host.
    hosts: Option<Vec<String>>,
    /// `None`: any origin.
    origins: Option<Vec<String>>,
    /// The origins whose pages get CORS answers.
    pub(super) cors: super::cors::Cors,
    pub(super) json_only: bool,
    pub(super) writes_over_get: bool,
    pub(super) collect_limit: Option<CollectLimit>,
    /// Whether `<prefix>/docs` serves the try-it page.
    pub(super) docs: bool,
    /// Where background calls are tracked, and `rpcTask` reads them.
    pub(super) ledger: Ledger,
    /// How `<prefix>/openapi.json` describes the API, and the document last made.
    pub(super) openapi: super::doc_settings::Settings,
    /// The largest `limit` and the longest `q` of a discovery search.
    pub(super) search: SearchBounds,
    /// What [`METRICS_PATH`] serves, when set.
    pub(super) metrics: Option<Metrics>,
    /// The scope `/metrics` needs of a verified caller (empty: any).
    pub(super) metrics_scope: String,
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("prefix", &self.prefix)
            .field("body_limit", &self.body_limit)
            .field("auth", &self.auth.is_some())
            .field("authenticator", &self.authenticator.is_some())
            .field("resource", &self.resource)
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .field("cors", &self.cors.origins())
            .field("json_only", &self.json_only)
            .field("writes_over_get", &self.writes_over_get)
            .field("collect_limit", &self.collect_limit)
            .field("docs", &self.docs)
            .field("search", &self.search)
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

impl Api {
    /// Serves `registry` under `/api`, with a 1 MiB body limit, no auth hook, and
    /// the safe defaults: loopback `Host`s only ([`LOOPBACK_HOSTS`]), no
    /// cross-origin callers, JSON bodies only, and GET for read-only tools only.
    /// `registry` is a `Registry` or a `&Registry` (`Registry::global()`): a handle
    /// to the same tools either way.
    pub fn new(registry: impl Into<Registry>) -> Self {
        let registry = registry.into();
        Self {
            prefix: "/api".to_owned(),
            body_limit: DEFAULT_BODY_LIMIT,
            auth: None,
            authenticator: None,
            resource: None,
            hosts: Some(LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect()),
            origins: Some(Vec::new()),
            cors: super::cors::Cors::default(),
            json_only: true,
            writes_over_get: false,
            collect_limit: None,
            docs: false,
            ledger: Ledger::new(&registry),
            registry,
            openapi: super::doc_settings::Settings::default(),
            search: SearchBounds::default(),
            metrics: None,
            metrics_scope: DEFAULT_METRICS_SCOPE.to_owned(),
        }
    }

    /// The host names (with or without a port: `"api.example.com"`,
    /// `"example.com:8443"`) a request's `Host` header may carry; any other is
    /// refused with 403 (`HOST_NOT_ALLOWED`). This stops DNS rebinding, where a web
    /// page reaches a local server under the page's own name. Default:
    /// [`LOOPBACK_HOSTS`]; set the names a deployment is reached by.
    #[must_use]
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hosts = Some(
            hosts
                .into_iter()
                .map(|h| h.into().to_ascii_lowercase())
                .collect(),
        );
        self
    }

    /// Accepts any `Host` header (behind a proxy that checks it already).
    #[must_use]
    pub fn allow_any_host(mut self) -> Self {
        self.hosts = None;
        self
    }

    /// Web origins besides the server's own (`"https://app.example.com"`) whose
    /// pages may call the API. A request with an `Origin` header that is neither
    /// the server's own origin nor listed here is refused with 403
    /// (`ORIGIN_NOT_ALLOWED`); requests without one (programs) are not affected.
    /// Default: none. (No CORS headers are sent: this admits requests, it does not
    /// grant browsers access to answers.)
    #[must_use]
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.origins = Some(
            origins
                .into_iter()
                .map(|o| o.into().trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        );
        self
    }

    /// Web origins (`"https://app.example.com"`) whose pages may call the API from
    /// the browser: their preflights are answered (the wire's methods and
    /// headers, `authorization` among them; no cookies), and every answer to them
    /// carries `Access-Control-Allow-Origin` and exposes `req-id` and
    /// `rpc-retry-after`, which the client reads. They are admitted besides the
    /// [`allowed_origins`](Self::allowed_origins). Other
    /// origins get no CORS header, so browsers keep their pages from the answers.
    /// Default: none.
    ///
    /// ```
    /// let api = toolfunc::http::Api::new(toolfunc::Registry::global())
    ///     .cors_origins(["http://localhost:8080"]);
    /// # let _ = api;
    /// ```
    #[must_use]
    pub fn cors_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.cors = super::cors::Cors::new(origins.into_iter().map(Into::into));
        self
    }

    /// Accepts requests from pages of any origin.
    #[must_use]
    pub fn allow_any_origin(mut self) -> Self {
        self.origins = None;
        self
    }

    /// Whether a request with a body (POST, PUT, PATCH) must say it is JSON
    /// (`Content-Type: application/json` or `application/*+json`) or carry one of
    /// the `rpc-*` / `req-id` headers; others get 415. A page on another site can
    /// send a form or `text/plain` without the browser asking the server first,
    /// but not these. Default: `true`.
    #[must_use]
    pub fn json_only(mut self, yes: bool) -> Self {
        self.json_only = yes;
        self
    }

    /// Whether GET may run tools and acts that are not read-only. By default GET
    /// runs only REST `get` and `list` and what is annotated `read_only`; anything
    /// else answers 405 with `Allow: POST`, because a link or an image on any page
    /// can make a browser send a GET. Default: `false`.
    #[must_use]
    pub fn writes_over_get(mut self, yes: bool) -> Self {
        self.writes_over_get = yes;
        self
    }

    /// The ledger background calls are tracked in (by default one of this API's
    /// own, with [`LedgerSettings`](crate::ledger::LedgerSettings)' defaults). Give
    /// several surfaces the same ledger to read one call from all of them. It must
    /// run calls on this API's registry.
    #[must_use]
    pub fn ledger(mut self, ledger: Ledger) -> Self {
        self.ledger = ledger;
        self
    }

    /// Bounds what a streaming tool called without asking for a stream gathers
    /// into one answer (default [`CollectLimit::default`]: 100,000 items, 16 MiB);
    /// past it the call ends with 413 `RESULT_TOO_LARGE`.
    #[must_use]
    pub fn collect_limit(mut self, limit: CollectLimit) -> Self {
        self.collect_limit = Some(limit);
        self
    }

    /// The largest `limit` discovery's search (`GET <prefix>?q=…&limit=…`) accepts
    /// (default [`DEFAULT_MAX_SEARCH_RESULTS`](super::DEFAULT_MAX_SEARCH_RESULTS), at least 1); a larger one is 400
    /// `ARGUMENTS`. A search without `limit` answers [`DEFAULT_SEARCH_RESULTS`](super::DEFAULT_SEARCH_RESULTS)
    /// tools, or this many when it is smaller.
    #[must_use]
    pub fn max_search_results(mut self, max: usize) -> Self {
        self.search.max_results = max.max(1);
        self
    }

    /// The longest query `q` discovery's search accepts, in characters once
    /// percent-decoded (default [`DEFAULT_MAX_SEARCH_QUERY`](super::DEFAULT_MAX_SEARCH_QUERY); the OpenAPI
    /// document's `maxLength`); a longer one is 400 `ARGUMENTS`. A search costs time
    /// in the length of its query.
    #[must_use]
    pub fn max_search_query(mut self, chars: usize) -> Self {
        self.search.max_query = chars;
        self
    }

    /// Serves `metrics` as Prometheus text (format 0.0.4) at `GET /metrics`
    /// ([`METRICS_PATH`], beside the prefix). Off by default: without it that
    /// path is not served (404). The request is screened as the API's are: its
    /// host and origin, its bearer token when the API has an
    /// [authenticator](Self::authenticate), and the [auth hook](Self::auth) (with
    /// `path` `/metrics` and no tool). Only one API of a [`Server`](super::Server)
    /// may serve it. The `metrics` count the calls of the registry they are a
    /// layer of ([`Registry::layer`]), which is usually this API's.
    ///
    /// ```
    /// use toolfunc::Registry;
    /// use toolfunc::http::Api;
    /// use toolfunc::layer::Metrics;
    ///
    /// let metrics = Metrics::new();
    /// let registry = Registry::global().isolate().layer(metrics.clone());
    /// let app = Api::new(registry).metrics(metrics).router();
    /// # let _ = app;
    /// ```
    #[must_use]
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The scope a caller's verified token must grant to read `/metrics`, on an
    /// API with an [authenticator](Self::authenticate): a token without it gets
    /// 403 `INSUFFICIENT_SCOPE` with a challenge naming the scope. Default
    /// [`DEFAULT_METRICS_SCOPE`] (`metrics:read`); `""` lets any verified caller
    /// read them. (Or keep `/metrics` off the public listener: serve
    /// [`Metrics::prometheus`] on a listener of its own.)
    ///
    /// ```
    /// use toolfunc::Registry;
    /// use toolfunc::auth::ApiKeys;
    /// use toolfunc::http::Api;
    /// use toolfunc::layer::Metrics;
    /// use toolfunc::Identity;
    ///
    /// let metrics = Metrics::new();
    /// let scraper = Identity::new("prometheus").with_scopes(["ops:scrape"]);
    /// let api = Api::new(Registry::new())
    ///     .authenticate(ApiKeys::new().key("scrape-key", scraper))
    ///     .metrics(metrics)
    ///     .metrics_scope("ops:scrape");
    /// # let _ = api;
    /// ```
    #[must_use]
    pub fn metrics_scope(mut self, scope: impl Into<String>) -> Self {
        self.metrics_scope = scope.into();
        self
    }

    /// Refuses a request from a host or a web origin this API does not serve.
    pub(super) fn check_site(&self, headers: &HeaderMap) -> Result<(), ToolError> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        if let Some(allowed) = &self.hosts {
            let ok = host.is_some_and(|h| host_allowed(allowed, h));
            if !ok {
                return Err(ToolError::custom(
                    "HOST_NOT_ALLOWED",
                    403,
                    format!(
                        "the host `{}` is not served here (allowed: {}); a server reached \
                         by other names lists them with `Api::allowed_hosts`",
                        host.unwrap_or(""),
                        allowed.join(", ")
                    ),
                ));
            }
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let Some(allowed) = &self.origins else {
            return Ok(());
        };
        let origin = origin.to_str().unwrap_or("").trim().trim_end_matches('/');
        // The server's own origin: the page was served under the same host.
        let own = origin.split_once("://").is_some_and(|(scheme, rest)| {
            (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
                && host.is_some_and(|h| h.eq_ignore_ascii_case(rest))
        });
        let listed = |a: &String| a.eq_ignore_ascii_case(origin);
        if own || allowed.iter().any(listed) || self.cors.origins().iter().any(listed) {
            Ok(())
        } else {
            Err(ToolError::custom(
                "ORIGIN_NOT_ALLOWED",
                403,
                format!(
                    "requests from pages of `{origin}` are not accepted; a server that \
                     serves such pages lists their origins with `Api::allowed_origins`"
                ),
            ))
        }
    }

    /// The path prefix (`"/api"` by default; `""` or `"/"` serves at the root).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = normalize(&prefix.into());
        self
    }

    /// The largest request body accepted, in bytes; a larger one gets 413.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// A hook that sees every request (discovery included) with the tool name and
    /// act, before anything runs. Returning an error refuses the request with that
    /// error's status: `ToolError::custom("UNAUTHORIZED", 401, ..)` or
    /// `ToolError::custom("FORBIDDEN", 403, ..)`.
    #[must_use]
    pub fn auth(
        mut self,
        hook: impl Fn(&AuthRequest<'_>) -> Result<(), ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.auth = Some(Arc::new(hook));
        self
    }

    /// Makes this API an OAuth 2.1 resource server: every request (discovery, the
    /// OpenAPI document, calls, `rpcTask`; not the try-it page itself) must carry an
    /// `Authorization: Bearer` credential that `authenticator` verifies. A request
    /// without one, or with one it refuses, gets `401 UNAUTHENTICATED` with a
    /// `WWW-Authenticate: Bearer resource_metadata="…"` challenge; a token in the
    /// query string is refused. The metadata (RFC 9728) is served at
    /// `/.well-known/oauth-protected-resource<prefix>`. The verified
    /// [`Identity`] rides on every call ([`Ctx::identity`](crate::Ctx::identity)),
    /// and the [`auth`](Self::auth) hook sees it.
    ///
    /// ```
    /// use toolfunc::Registry;
    /// use toolfunc::auth::ApiKeys;
    /// use toolfunc::http::Api;
    /// use toolfunc::Identity;
    ///
    /// let api = Api::new(Registry::new())
    ///     .authenticate(ApiKeys::new().key("s3cret", Identity::new("ci")));
    /// # let _ = api;
    /// ```
    #[must_use]
    pub fn authenticate(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// The resource URI this API publishes in its metadata and challenges (its
    /// canonical URI, `https://tools.example.com/api`). Default: the
    /// authenticator's audience (a [`Jwt`](crate::auth::jwt::Jwt)'s), else the
    /// request's own `Host` and prefix.
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.resource = Some(uri.into());
        self
    }

    /// The prefix this API is served under (normalised: `"/api"`, or `""` for the root).
    pub fn path(&self) -> &str {
        &self.prefix
    }

    /// Where this API serves its protected-resource metadata (none without an
    /// authenticator): `/.well-known/oauth-protected-resource<prefix>`, and the
    /// path its challenges name when that is another (an audience with another
    /// path, or none).
    pub(super) fn metadata_paths(&self) -> Vec<String> {
        let Some(authenticator) = self.authenticator.as_deref() else {
            return Vec::new();
        };
        let own = format!("{}{}", crate::auth::web::WELL_KNOWN, self.prefix);
        let audience = crate::auth::web::resource_metadata_path(
            self.resource.as_deref(),
            authenticator,
            &self.prefix,
        );
        std::iter::once(own).chain(audience).collect()
    }
}

/// `GET /.well-known/oauth-protected-resource<prefix>`.
pub(super) async fn resource_metadata(State(api): State<Arc<Api>>, headers: HeaderMap) -> Response {
    match &api.authenticator {
        Some(authenticator) => {
            let resource = crate::auth::web::resource(
                api.resource.as_deref(),
                authenticator.as_ref(),
                &headers,
                &api.prefix,
            );
            crate::auth::web::metadata_response(&crate::auth::web::metadata(
                &resource,
                authenticator.as_ref(),
                crate::remote::Catalog::of(&api.registry).scopes(),
            ))
        }
        None => axum::response::IntoResponse::into_response(axum::http::StatusCode::NOT_FOUND),
    }
}

/// The hosts an [`Api`] serves by default: the loopback names, on any port.
pub const LOOPBACK_HOSTS: [&str; 4] = ["localhost", "127.0.0.1", "[::1]", "::1"];

/// Whether `host` (a `Host` header) is one of `allowed` (lower-cased entries),
/// ignoring case: the same name and port, or the same name when the entry has no
/// port.
fn host_allowed(allowed: &[String], host: &str) -> bool {
    let name = match host.rfind(':') {
        // `[::1]:8080`, `127.0.0.1:80`; a bare `::1` has colons but no brackets.
        Some(i) if !host.ends_with(']') && (host.starts_with('[') || !host[..i].contains(':')) => {
            &host[..i]
        }
        _ => host,
    };
    allowed
        .iter()
        .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name))
}

fn normalize(prefix: &str) -> String {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    }
}
