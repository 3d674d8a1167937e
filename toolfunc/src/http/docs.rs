//! The try-it page at `GET <prefix>/docs` ([`Api::docs`]): one HTML file compiled
//! into the binary, with its script and styles inline and nothing fetched from
//! elsewhere. It reads the API's own OpenAPI document and discovery, draws a form
//! per operation from the parameter schema, and calls the tools from the page.
//!
//! Its content security policy lets only the page's own `<script>` and `<style>`
//! run: each answer carries a fresh nonce (128 bits from the system's CSPRNG) in
//! the policy and on those two tags, so markup that found its way into the page
//! (an injection) cannot run code or restyle it.

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;

use super::api::Api;

/// The file name the page is served under, after the prefix.
pub(super) const FILE: &str = "docs";

/// The page. It finds the API from its own address (`<prefix>/docs`), so the same
/// bytes serve every prefix; only the nonce is written into them per answer.
const PAGE: &str = include_str!("docs.html");

/// Where the page's `<script>` and `<style>` tags take the nonce.
const NONCE: &str = "{{nonce}}";

/// What the page may do: run its own script and styles (the tags with this
/// answer's nonce), and talk to its own origin; no other source, no frames, no
/// form posts elsewhere.
fn policy(nonce: &str) -> String {
    format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
}

/// The page as an answer, with a nonce of its own.
pub(super) fn response() -> Response {
    // 32 hex digits: valid base64 characters, as a CSP nonce must be.
    let nonce = crate::id::random_hex();
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(header::CONTENT_SECURITY_POLICY, policy(&nonce))
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::REFERRER_POLICY, "no-referrer")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from(PAGE.replace(NONCE, &nonce)))
        .unwrap_or_default()
}

impl Api {
    /// Serves a page to try the tools at `GET <prefix>/docs` (default: off). The
    /// page lists every operation of [`Api::openapi_document`] with its
    /// description, tags, annotations and schema, draws a form from each parameter
    /// schema, runs the call from the browser and shows the result, the error at
    /// the field its JSON path names, or a stream's items as they arrive, with the
    /// same call as a `curl` line.
    ///
    /// The page is static and carries no data, so it is served without asking the
    /// auth hook (the host and origin checks still apply): what it shows it reads
    /// from the API with the visitor's own requests, which the hook sees like any
    /// other. For an API behind a token, the visitor types the `Authorization`
    /// value into the page, which sends it with every request; the `curl` line
    /// names it `$TOKEN` and never shows it. A tool named `docs` is served instead.
    ///
    /// The page runs under a content security policy that allows only its own
    /// origin and its own script and styles, by a nonce made for each answer.
    ///
    /// ```
    /// use toolfunc::Registry;
    /// use toolfunc::http::Api;
    ///
    /// let app = Api::new(Registry::global()).docs(true).router();
    /// # let _ = app;
    /// ```
    #[must_use]
    pub fn docs(mut self, yes: bool) -> Self {
        self.docs = yes;
        self
    }
}
