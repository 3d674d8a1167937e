//! Authenticators through the public API: bearer JWTs checked against an issuer's
//! keys (given, or found through discovery and fetched again for a new key id), every
//! refusal path, and static API keys.

#[path = "support/tokens.rs"]
mod tokens;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use jsonwebtoken::{Algorithm, Header};
use serde_json::{Value, json};
use tokens::{Key, claims, jwks, now};
use tokio::net::TcpListener;
use toolfunc::Identity;
use toolfunc::auth::jwt::Jwt;
use toolfunc::auth::{ApiKeys, AuthError, Authenticator};

const ISSUER: &str = "https://as.example.com";
const AUDIENCE: &str = "https://tools.example.com/mcp";

fn given(key: &Key) -> Jwt {
    Jwt::with_keys(ISSUER, AUDIENCE, &jwks(&[key])).expect("a key set")
}

#[tokio::test]
async fn a_valid_token_proves_its_subject_scopes_and_issuer() {
    let key = Key::new("k1");
    let auth = given(&key);
    let token = key.sign(&claims(
        ISSUER,
        AUDIENCE,
        "user-7",
        "files:read files:write",
    ));
    let who = auth.authenticate(Some(&token)).await.expect("verified");
    assert_eq!(who.subject(), "user-7");
    assert_eq!(who.issuer(), Some(ISSUER));
    assert_eq!(who.scopes(), ["files:read", "files:write"]);
    assert_eq!(who.claim("aud"), Some(&json!(AUDIENCE)));
    // Again, from the cache of verified tokens: the same identity.
    assert_eq!(auth.authenticate(Some(&token)).await.expect("again"), who);
    // `scp` as a list works too, and an audience list naming this server.
    let mut c = claims(ISSUER, "x", "bot", "");
    c["aud"] = json!(["https://other.example.com", AUDIENCE]);
    c["scp"] = json!(["a", "b"]);
    let who = auth
        .authenticate(Some(&key.sign(&c)))
        .await
        .expect("verified");
    assert_eq!(who.scopes(), ["a", "b"]);
}

async fn refused(auth: &Jwt, token: &str) -> AuthError {
    auth.authenticate(Some(token))
        .await
        .expect_err("the token must be refused")
}

#[tokio::test]
async fn every_bad_token_is_refused_with_its_reason() {
    let key = Key::new("k1");
    let auth = given(&key);
    let good = claims(ISSUER, AUDIENCE, "user-7", "files:read");

    // No token, and a token that is no JWT.
    assert_eq!(auth.authenticate(None).await, Err(AuthError::Missing));
    assert!(matches!(
        refused(&auth, "not-a-jwt").await,
        AuthError::Invalid(_)
    ));
    assert!(matches!(refused(&auth, "").await, AuthError::Invalid(_)));

    // Expired past the leeway, and not valid yet.
    let mut c = good.clone();
    c["exp"] = json!(now() - 600);
    assert_eq!(refused(&auth, &key.sign(&c)).await, AuthError::Expired);
    let mut c = good.clone();
    c["nbf"] = json!(now() + 600);
    assert_eq!(refused(&auth, &key.sign(&c)).await, AuthError::Expired);
    // Within the leeway, an expired token is still taken.
    let mut c = good.clone();
    c["exp"] = json!(now() - 5);
    assert!(auth.authenticate(Some(&key.sign(&c))).await.is_ok());

    // Another audience, another issuer, no subject, no expiry.
    let wrong = |field: &str, value: Value| {
        let mut c = good.clone();
        c[field] = value;
        c
    };
    for (what, c) in [
        (
            "audience",
            wrong("aud", json!("https://elsewhere.example.com")),
        ),
        ("issuer", wrong("iss", json!("https://evil.example.com"))),
    ] {
        let err = refused(&auth, &key.sign(&c)).await;
        assert!(
            matches!(&err, AuthError::Invalid(why) if why.contains(what)),
            "{what}: {err:?}"
        );
    }
    for claim in ["sub", "exp", "aud", "iss"] {
        let mut c = good.clone();
        c.as_object_mut().expect("claims").remove(claim);
        assert!(
            matches!(refused(&auth, &key.sign(&c)).await, AuthError::Invalid(_)),
            "a token without `{claim}`"
        );
    }

    // `alg: none`, unsigned.
    assert!(matches!(
        refused(&auth, &tokens::unsigned(&good)).await,
        AuthError::Invalid(_)
    ));
    // HS256 signed with the public key (the RS/HS confusion attack).
    let confused = tokens::hs256(&key.public_bytes(), "k1", &good);
    assert!(matches!(
        refused(&auth, &confused).await,
        AuthError::Invalid(_)
    ));
    let confused = tokens::hs256(key.jwk().to_string().as_bytes(), "k1", &good);
    assert!(matches!(
        refused(&auth, &confused).await,
        AuthError::Invalid(_)
    ));

    // An unknown key id, and a forged signature under a known one.
    let stranger = Key::new("k2");
    assert!(matches!(
        refused(&auth, &stranger.sign(&good)).await,
        AuthError::Invalid(why) if why.contains("unknown key")
    ));
    let forger = Key::new("k1");
    assert!(matches!(
        refused(&auth, &forger.sign(&good)).await,
        AuthError::Invalid(why) if why.contains("signature")
    ));
    // The algorithm pinned to the key: ES384 under an ES256 key is refused.
    let mut header = Header::new(Algorithm::ES384);
    header.kid = Some("k1".into());
    let raw = key.sign(&good);
    let (_, rest) = raw.split_once('.').expect("three parts");
    let relabelled = format!(
        "{}.{rest}",
        base64_url(&serde_json::to_vec(&header).expect("header"))
    );
    assert!(matches!(
        refused(&auth, &relabelled).await,
        AuthError::Invalid(_)
    ));

    // A huge token is refused unread.
    let huge = "a".repeat(64 * 1024);
    assert!(matches!(refused(&auth, &huge).await, AuthError::Invalid(_)));

    // Every refusal becomes a 401 UNAUTHENTICATED with an OAuth error code.
    let err = refused(&auth, "x.y.z").await;
    assert_eq!(err.oauth_code(), Some("invalid_token"));
    assert_eq!(err.to_tool_error().code(), "UNAUTHENTICATED");
    assert_eq!(err.to_tool_error().status(), 401);
    assert_eq!(AuthError::Missing.oauth_code(), None);
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[test]
fn a_key_set_without_a_usable_signing_key_is_refused_at_setup() {
    let err = Jwt::with_keys(
        ISSUER,
        AUDIENCE,
        &json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}),
    )
    .expect_err("no usable key");
    assert_eq!(err.code(), "AUTH_SETUP");
    assert!(Jwt::with_keys(ISSUER, AUDIENCE, &json!({"keys": 3})).is_err());
    // A key marked with an algorithm of another family is left out.
    let key = Key::new("k1");
    let mut jwk = key.jwk();
    jwk["alg"] = json!("HS256");
    assert!(Jwt::with_keys(ISSUER, AUDIENCE, &json!({"keys": [jwk]})).is_err());
}

/// An authorization server of the test's: RFC 8414 metadata and a JWKS it can change,
/// counting the key fetches.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct IssuerState {
    url: String,
    keys: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

async fn issuer(keys: Value) -> Issuer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let state = IssuerState {
        url: url.clone(),
        keys: Arc::new(Mutex::new(keys)),
        fetches: Arc::new(AtomicUsize::new(0)),
    };
    let app = Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(|State(s): State<IssuerState>| async move {
                json_body(&json!({
                    "issuer": s.url,
                    "jwks_uri": format!("{}/jwks", s.url),
                    "authorization_endpoint": format!("{}/authorize", s.url),
                    "token_endpoint": format!("{}/token", s.url),
                }))
            }),
        )
        .route(
            "/jwks",
            get(|State(s): State<IssuerState>| async move {
                s.fetches.fetch_add(1, Ordering::SeqCst);
                let keys = s.keys.lock().expect("keys").clone();
                json_body(&keys)
            }),
        )
        .with_state(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer {
        url,
        keys: state.keys,
        fetches: state.fetches,
    }
}

fn json_body(value: &Value) -> ([(&'static str, &'static str); 1], String) {
    ([("content-type", "application/json")], value.to_string())
}

#[tokio::test]
async fn keys_are_discovered_and_fetched_again_for_a_new_key_id_at_a_bounded_rate() {
    let first = Key::new("k1");
    let server = issuer(jwks(&[&first])).await;
    let auth = Jwt::discover(&server.url, AUDIENCE)
        .await
        .expect("discovered")
        .refetch_every(Duration::from_millis(300));
    assert_eq!(auth.authorization_servers(), vec![server.url.clone()]);
    // The endpoints a client gets tokens from, for the OpenAPI document.
    let endpoints = auth.endpoints().expect("named in the metadata");
    assert_eq!(endpoints.authorization, format!("{}/authorize", server.url));
    assert_eq!(endpoints.token, format!("{}/token", server.url));
    assert_eq!(server.fetches.load(Ordering::SeqCst), 1);
    let token = first.sign(&claims(&server.url, AUDIENCE, "a", ""));
    assert!(auth.authenticate(Some(&token)).await.is_ok());

    // The issuer rotates: a token under the new key makes the keys be fetched again.
    let second = Key::new("k2");
    *server.keys.lock().expect("keys") = jwks(&[&first, &second]);
    tokio::time::sleep(Duration::from_millis(350)).await;
    let token = second.sign(&claims(&server.url, AUDIENCE, "b", ""));
    assert_eq!(
        auth.authenticate(Some(&token))
            .await
            .expect("new key")
            .subject(),
        "b"
    );
    assert_eq!(server.fetches.load(Ordering::SeqCst), 2);

    // A flood of made-up key ids fetches at most once per interval.
    for n in 0..20 {
        let stranger = Key::new(&format!("made-up-{n}"));
        let token = stranger.sign(&claims(&server.url, AUDIENCE, "x", ""));
        assert!(auth.authenticate(Some(&token)).await.is_err());
    }
    assert!(server.fetches.load(Ordering::SeqCst) <= 3);

    // Or the keys' address is given instead of discovered.
    let given = Jwt::with_jwks_uri(&server.url, AUDIENCE, format!("{}/jwks", server.url))
        .await
        .expect("fetched");
    let token = second.sign(&claims(&server.url, AUDIENCE, "c", ""));
    assert_eq!(
        given
            .authenticate(Some(&token))
            .await
            .expect("known key")
            .subject(),
        "c"
    );
}

/// A key the issuer withdraws stops verifying tokens once the keys held are older
/// than `keys_max_age`, even with no unknown key id to prompt a fetch, and a token
/// verified under it before is not taken from the cache either.
#[tokio::test]
async fn a_withdrawn_key_stops_verifying_once_the_keys_are_refreshed() {
    let (old, new) = (Key::new("old"), Key::new("new"));
    let server = issuer(jwks(&[&old, &new])).await;
    let auth = Jwt::discover(&server.url, AUDIENCE)
        .await
        .expect("discovered")
        .keys_max_age(Duration::from_millis(300));
    let token = old.sign(&claims(&server.url, AUDIENCE, "a", ""));
    assert!(auth.authenticate(Some(&token)).await.is_ok());
    // Withdrawn at the issuer; within the age the held keys still serve.
    *server.keys.lock().expect("keys") = jwks(&[&new]);
    assert!(auth.authenticate(Some(&token)).await.is_ok());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let refused = auth
        .authenticate(Some(&token))
        .await
        .expect_err("withdrawn");
    assert!(refused.to_string().contains("unknown key"), "{refused}");
    let fresh = new.sign(&claims(&server.url, AUDIENCE, "b", ""));
    assert!(auth.authenticate(Some(&fresh)).await.is_ok());
    // An issuer out of reach does not refuse tokens of the keys held.
    let fetches = server.fetches.load(Ordering::SeqCst);
    *server.keys.lock().expect("keys") = json!("not a key set");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(auth.authenticate(Some(&fresh)).await.is_ok());
    assert!(
        server.fetches.load(Ordering::SeqCst) > fetches,
        "asked again"
    );
}

#[tokio::test]
async fn discovery_refuses_metadata_naming_another_issuer() {
    let key = Key::new("k1");
    let server = issuer(jwks(&[&key])).await;
    // The metadata names `server.url`, not this issuer (a path under it).
    let err = Jwt::discover(format!("{}/", server.url) + "tenant", AUDIENCE)
        .await
        .expect_err("no metadata for that issuer");
    assert_eq!(err.code(), "AUTH_SETUP");
    let err = Jwt::discover("http://127.0.0.1:9", AUDIENCE)
        .await
        .expect_err("nothing listens there");
    assert_eq!(err.code(), "AUTH_SETUP");
}

#[tokio::test]
async fn api_keys_prove_the_identity_they_name() {
    let keys = ApiKeys::new()
        .key("key-of-ci", Identity::new("ci").with_scopes(["deploy"]))
        .key("key-of-ops", Identity::new("ops"));
    assert_eq!(
        keys.authenticate(Some("key-of-ci"))
            .await
            .expect("ci")
            .scopes(),
        ["deploy"]
    );
    assert_eq!(
        keys.authenticate(Some("key-of-ops"))
            .await
            .expect("ops")
            .subject(),
        "ops"
    );
    for wrong in ["key-of-c", "key-of-ci ", "", "KEY-OF-CI"] {
        assert!(matches!(
            keys.authenticate(Some(wrong)).await,
            Err(AuthError::Invalid(_))
        ));
    }
    assert_eq!(keys.authenticate(None).await, Err(AuthError::Missing));
    // The keys are secrets: Debug shows subjects only.
    assert!(!format!("{keys:?}").contains("key-of"));
}
