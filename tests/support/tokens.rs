//! Tokens for the auth tests: an issuer with keys made for the test (ES256 on P-256),
//! its JWKS, and tokens minted with any claims and header.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// One signing key with its id.
pub struct Key {
    pub kid: String,
    pair: rcgen::KeyPair,
}

impl Key {
    pub fn new(kid: &str) -> Self {
        Self {
            kid: kid.to_owned(),
            pair: rcgen::KeyPair::generate().expect("a P-256 key"),
        }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        let raw = self.pair.public_key_raw();
        assert_eq!(raw.len(), 65, "an uncompressed P-256 point");
        json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
            "x": URL_SAFE_NO_PAD.encode(&raw[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&raw[33..]),
        })
    }

    /// The raw public key bytes (for the HS256 key-confusion attack).
    pub fn public_bytes(&self) -> Vec<u8> {
        self.pair.public_key_raw().to_vec()
    }

    /// A token signed with this key, with `claims` as its payload.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        self.sign_with(&header, claims)
    }

    /// A token signed with this key under `header`.
    pub fn sign_with(&self, header: &Header, claims: &Value) -> String {
        let key = EncodingKey::from_ec_der(&self.pair.serialize_der());
        jsonwebtoken::encode(header, claims, &key).expect("a token")
    }
}

/// A JWKS document of `keys`.
pub fn jwks(keys: &[&Key]) -> Value {
    json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()})
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after the epoch")
        .as_secs()
}

/// Claims valid for an hour for `issuer` and `audience`, with `scope`.
pub fn claims(issuer: &str, audience: &str, subject: &str, scope: &str) -> Value {
    json!({
        "iss": issuer, "aud": audience, "sub": subject, "scope": scope,
        "iat": now(), "exp": now() + 3600,
    })
}

/// A token with `alg: none` and no signature.
pub fn unsigned(claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{payload}.")
}

/// An HS256 token whose secret is `secret`.
pub fn hs256(secret: &[u8], kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid.to_owned());
    let key = EncodingKey::from_secret(secret).expect("a secret");
    jsonwebtoken::encode(&header, claims, &key).expect("a token")
}
