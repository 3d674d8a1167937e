//! `http::Client` over HTTPS (feature `rustls`): a local TLS server with a
//! certificate made for the test, the client trusting that certificate, and the
//! demo catalog run by name through it. A client that does not trust the
//! certificate is refused by the TLS handshake, with a clear error.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::json;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use toolfunc::http::{Api, Client, axum, reqwest};

/// A certificate for `localhost`, as PEM, and the server's TLS configuration.
fn certificate() -> (String, Arc<ServerConfig>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("a test certificate");
    let pem = made.cert.pem();
    let chain = vec![CertificateDer::from(made.cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("a server certificate");
    (pem, Arc::new(config))
}

/// Serves `router` over TLS on a loopback port.
async fn serve_tls(router: axum::Router, config: Arc<ServerConfig>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let acceptor = TlsAcceptor::from(config);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, router) = (acceptor.clone(), router.clone());
            tokio::spawn(async move {
                // A handshake a client refuses is simply the end of that connection.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(router);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_runs_remote_tools_over_https() {
    let (pem, config) = certificate();
    let addr = serve_tls(Api::new(demo::catalog()).router(), config).await;
    let url = format!("https://localhost:{}/api", addr.port());
    let trusted = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes()).expect("PEM"))
        .build()
        .expect("an HTTPS client");
    let remote = Client::connect_with(&url, trusted)
        .await
        .expect("discovery over TLS");
    assert_eq!(
        remote.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!(3.0)
    );
    let err = remote
        .run("add", json!({"a": "one", "b": 2}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    // A streaming tool, collected.
    assert_eq!(
        remote.run("countdown", json!({"count": 2})).await.unwrap(),
        json!([{"tick": 2}, {"tick": 1}])
    );
    // The transport by URL scheme works over https too.
    let transport = toolfunc::connect(&url).await;
    // Without the test certificate the webpki roots do not trust it: refused.
    let err = transport
        .err()
        .expect("an untrusted certificate is refused");
    assert!(!err.to_string().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_is_refused() {
    let (_pem, config) = certificate();
    let addr = serve_tls(Api::new(demo::catalog()).router(), config).await;
    let url = format!("https://localhost:{}/api", addr.port());
    let err = Client::connect(&url).await.unwrap_err();
    assert_eq!(err.code(), "UNREACHABLE");
    // The reason is in the message, not only "error sending request".
    assert!(err.to_string().contains("certificate"), "{err}");
}
