//! TLS: a self-signed certificate in front of a harness registry (an unknown
//! authority, unless `skip_verify`); a private CA trusted through `ca_file` or a
//! Docker-style `certs_dir`; expired and wrong-host certificates named precisely;
//! mutual TLS with a client certificate from `certs_dir`; no plain-HTTP realm and no
//! https → http redirect for a verified registry; HTTP/2 chosen by ALPN, one connection.
//!
//! Every certificate and key is made at test time by the `openssl` CLI (`support/pki.rs`)
//! and removed afterwards. The harness registries speak plain HTTP, so a small
//! TLS-terminating forwarder sits in front of the real one.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pullcheck_registry::{
    AuthFailure, CertificateProblem, Client, ClientOptions, Credential, Endpoint, Reason, Status,
};
use pullcheck_testkit::{ImageKind, Registry, TempDir};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use support::guarded;
use support::pki::{Pki, Validity, openssl};
use support::server::{Server, respond, serve, serve_tls};
use tokio::net::{TcpListener, TcpStream};

/// A self-signed P-256 certificate for `127.0.0.1` and `localhost`, as DER.
fn self_signed(dir: &Path) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
            "-days",
            "1",
            "-subj",
            "/CN=pullcheck-test",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ],
    );
    openssl(
        dir,
        &[
            "x509", "-in", "cert.pem", "-outform", "DER", "-out", "cert.der",
        ],
    );
    openssl(
        dir,
        &[
            "pkcs8", "-topk8", "-nocrypt", "-in", "key.pem", "-outform", "DER", "-out", "key.der",
        ],
    );
    let cert = std::fs::read(dir.join("cert.der")).expect("cert");
    let key = std::fs::read(dir.join("key.der")).expect("key");
    (
        CertificateDer::from(cert),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
    )
}

/// Accepts TLS on a loopback port and forwards the plaintext to `backend`. Returns the
/// port; the forwarder lives as long as the test's runtime.
async fn tls_forwarder(backend: String, dir: &Path) -> u16 {
    let (cert, key) = self_signed(dir);
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let backend = backend.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(&backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn self_signed_certificate_is_an_unknown_authority_unless_skipped() {
    let registry = Registry::anonymous().await.expect("registry");
    let image = registry
        .push("team/app", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    let dir = TempDir::new("tls").expect("temp dir");
    let port = tls_forwarder(registry.host().to_string(), &dir).await;
    let host = format!("127.0.0.1:{port}");
    let client = Client::new(ClientOptions::default()).expect("client");
    let repositories = vec!["team/app".to_string()];

    let err = client
        .authorize(
            &Endpoint::new(host.clone()),
            &Credential::Anonymous,
            &repositories,
        )
        .await
        .expect_err("self-signed");
    assert_eq!(
        (err.status, err.reason, err.certificate),
        (
            Status::Unreachable,
            Reason::TlsUntrusted,
            Some(CertificateProblem::UnknownAuthority)
        )
    );
    assert_eq!(
        over_https(&err),
        (
            host.as_str(),
            "TLS: certificate signed by an unknown authority"
        )
    );

    let session = client
        .authorize(
            &Endpoint {
                allow_http: false,
                skip_verify: true,
                ..Endpoint::new(host.clone())
            },
            &Credential::Anonymous,
            &repositories,
        )
        .await
        .expect("skip_verify accepts it");
    assert_eq!(session.base_url(), format!("https://{host}"));
    let answer = session.check("team/app", "v1").await;
    assert_eq!(answer.status, Status::Present, "{answer:?}");
    assert_eq!(answer.digest.as_deref(), Some(image.digest.as_str()));

    // The verifying client is unaffected by the other endpoint's skip_verify.
    let again = client
        .authorize(&Endpoint::new(host), &Credential::Anonymous, &repositories)
        .await;
    assert!(again.is_err());
}

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const BOUND: Duration = Duration::from_secs(20);

fn verified(host: &str) -> Endpoint {
    Endpoint::new(host)
}

fn repos() -> Vec<String> {
    vec!["app".to_string()]
}

/// An open registry over TLS presenting `cert`.
async fn tls_registry(pki: &Pki, cert: &support::pki::Issued) -> Server {
    serve_tls(
        |r| match r.path() {
            "/v2/" => respond(200, &[], ""),
            _ => respond(200, &[("Docker-Content-Digest", D1)], ""),
        },
        pki.server_config(cert, &[b"http/1.1"], false),
    )
    .await
}

async fn authorize(
    options: ClientOptions,
    host: &str,
) -> Result<pullcheck_registry::Session, pullcheck_registry::AuthorizeError> {
    let client = Client::new(options).expect("client");
    guarded(
        BOUND,
        client.authorize(&verified(host), &Credential::Anonymous, &repos()),
    )
    .await
    .0
}

#[tokio::test]
async fn private_ca_is_trusted_through_ca_file_only() {
    let pki = Pki::new("cafile");
    let cert = pki.server("server", Validity::Valid);
    let server = tls_registry(&pki, &cert).await;
    let with_ca = ClientOptions {
        ca_file: Some(pki.ca.cert_pem.clone()),
        ..ClientOptions::default()
    };
    let session = authorize(with_ca, &server.host).await.expect("trusted");
    assert_eq!(session.base_url(), format!("https://{}", server.host));
    assert_eq!(session.check("app", "v1").await.status, Status::Present);

    let err = authorize(ClientOptions::default(), &server.host)
        .await
        .expect_err("unknown CA");
    assert_eq!(
        over_https(&err),
        (
            server.host.as_str(),
            "TLS: certificate signed by an unknown authority"
        )
    );
}

#[tokio::test]
async fn expired_certificate_is_named() {
    let pki = Pki::new("expired");
    let cert = pki.server("expired", Validity::Expired);
    let server = tls_registry(&pki, &cert).await;
    let err = authorize(
        ClientOptions {
            ca_file: Some(pki.ca.cert_pem.clone()),
            ..ClientOptions::default()
        },
        &server.host,
    )
    .await
    .expect_err("expired");
    assert_eq!(
        (err.status, err.reason, err.certificate),
        (
            Status::Unreachable,
            Reason::TlsUntrusted,
            Some(CertificateProblem::Expired)
        )
    );
    let (host, why) = over_https(&err);
    assert_eq!(host, server.host);
    assert!(why.starts_with("TLS: certificate expired"), "{why}");
}

#[tokio::test]
async fn certificate_for_another_host_is_named() {
    let pki = Pki::new("wronghost");
    let cert = pki.server_for("elsewhere", "DNS:registry.example");
    let server = tls_registry(&pki, &cert).await;
    let err = authorize(
        ClientOptions {
            ca_file: Some(pki.ca.cert_pem.clone()),
            ..ClientOptions::default()
        },
        &server.host,
    )
    .await
    .expect_err("wrong host");
    assert_eq!(
        (err.reason, err.certificate),
        (Reason::TlsUntrusted, Some(CertificateProblem::OtherHost))
    );
    let (host, why) = over_https(&err);
    assert_eq!(host, server.host);
    assert!(
        why.starts_with("TLS: certificate is for another host"),
        "{why}"
    );
}

#[tokio::test]
async fn certs_dir_trusts_a_ca_for_its_host_only() {
    let pki = Pki::new("certsdir");
    let cert = pki.server("server", Validity::Valid);
    let server = tls_registry(&pki, &cert).await;
    let other = tls_registry(&pki, &cert).await;
    let certs = pki.dir.path().join("certs.d");
    let host_dir = certs.join(&server.host);
    std::fs::create_dir_all(&host_dir).expect("dir");
    std::fs::copy(&pki.ca.cert_pem, host_dir.join("ca.crt")).expect("ca.crt");

    let client = Client::new(ClientOptions {
        certs_dir: Some(certs.clone()),
        ..ClientOptions::default()
    })
    .expect("client");
    for _ in 0..2 {
        let session = client
            .authorize(&verified(&server.host), &Credential::Anonymous, &repos())
            .await
            .expect("trusted for its host");
        assert_eq!(session.check("app", "v1").await.status, Status::Present);
    }
    // Built once, then kept.
    assert!(
        format!("{client:?}").contains("per_host_clients: 1"),
        "{client:?}"
    );
    let err = client
        .authorize(&verified(&other.host), &Credential::Anonymous, &repos())
        .await
        .expect_err("another host");
    assert_eq!(
        over_https(&err).1,
        "TLS: certificate signed by an unknown authority"
    );
}

#[tokio::test]
async fn mutual_tls_presents_the_client_certificate_of_certs_dir() {
    let pki = Pki::new("mtls");
    let cert = pki.server("server", Validity::Valid);
    let client_cert = pki.client("client");
    let server = serve_tls(
        |r| match r.path() {
            "/v2/" => respond(200, &[], ""),
            _ => respond(200, &[("Docker-Content-Digest", D1)], ""),
        },
        pki.server_config(&cert, &[b"http/1.1"], true),
    )
    .await;
    let certs = pki.dir.path().join("certs.d");
    let host_dir = certs.join(&server.host);
    std::fs::create_dir_all(&host_dir).expect("dir");
    std::fs::copy(&pki.ca.cert_pem, host_dir.join("ca.crt")).expect("ca.crt");

    // Only the CA: the handshake fails for want of a client certificate.
    let options = ClientOptions {
        certs_dir: Some(certs.clone()),
        ..ClientOptions::default()
    };
    let err = authorize(options.clone(), &server.host)
        .await
        .expect_err("no client certificate");
    assert_eq!(
        (err.status, err.reason),
        (Status::Unreachable, Reason::TlsFailed)
    );
    assert!(
        over_https(&err)
            .1
            .starts_with("TLS: the registry requires a client certificate"),
        "{err:?}"
    );

    std::fs::copy(&client_cert.cert_pem, host_dir.join("client.cert")).expect("cert");
    std::fs::copy(&client_cert.key_pem, host_dir.join("client.key")).expect("key");
    let session = authorize(options.clone(), &server.host)
        .await
        .expect("mutual TLS");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);

    // A certificate without its key is named, not ignored.
    std::fs::remove_file(host_dir.join("client.key")).expect("rm");
    let err = authorize(options, &server.host).await.expect_err("no key");
    let AuthFailure::ClientConfig { why, .. } = &*err.failure else {
        panic!("{err:?}");
    };
    assert!(
        why.ends_with("client.cert has no matching client.key"),
        "{why}"
    );
}

#[tokio::test]
async fn an_endpoint_brings_its_own_ca_and_client_certificate() {
    // containerd's `ca` and `client` for one host, without certs_dir.
    let pki = Pki::new("endpoint-tls");
    let cert = pki.server("server", Validity::Valid);
    let client_cert = pki.client("client");
    let server = serve_tls(
        |r| match r.path() {
            "/v2/" => respond(200, &[], ""),
            _ => respond(200, &[("Docker-Content-Digest", D1)], ""),
        },
        pki.server_config(&cert, &[b"http/1.1"], true),
    )
    .await;
    let client = Client::new(ClientOptions::default()).expect("client");
    let with_ca = Endpoint {
        ca_files: vec![pki.ca.cert_pem.clone()],
        ..Endpoint::new(server.host.clone())
    };
    let authorize = |endpoint: Endpoint| {
        let client = client.clone();
        async move {
            guarded(
                BOUND,
                client.authorize(&endpoint, &Credential::Anonymous, &repos()),
            )
            .await
            .0
        }
    };

    // The CA alone: trusted, but the server wants a client certificate.
    let err = authorize(with_ca.clone())
        .await
        .expect_err("no client certificate");
    assert!(
        over_https(&err)
            .1
            .starts_with("TLS: the registry requires a client certificate"),
        "{err:?}"
    );

    // Certificate and key in two files.
    let session = authorize(Endpoint {
        client_cert: Some((
            client_cert.cert_pem.clone(),
            Some(client_cert.key_pem.clone()),
        )),
        ..with_ca.clone()
    })
    .await
    .expect("mutual TLS");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);

    // Both in one file.
    let combined = pki.dir.path().join("combined.pem");
    let mut pem = std::fs::read(&client_cert.cert_pem).expect("cert");
    pem.push(b'\n');
    pem.extend(std::fs::read(&client_cert.key_pem).expect("key"));
    std::fs::write(&combined, pem).expect("combined");
    let session = authorize(Endpoint {
        client_cert: Some((combined, None)),
        ..with_ca.clone()
    })
    .await
    .expect("mutual TLS, one file");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);

    // Without the CA the server is not trusted; a missing CA file is named.
    let err = authorize(Endpoint::new(server.host.clone()))
        .await
        .expect_err("unknown CA");
    assert_eq!(
        over_https(&err).1,
        "TLS: certificate signed by an unknown authority"
    );
    let missing = pki.dir.path().join("nope.pem");
    let err = authorize(Endpoint {
        ca_files: vec![missing.clone()],
        ..Endpoint::new(server.host.clone())
    })
    .await
    .expect_err("missing CA file");
    let AuthFailure::ClientConfig { host, why } = &*err.failure else {
        panic!("{err:?}");
    };
    assert_eq!(host, &server.host);
    assert!(
        why.starts_with(&format!("cannot read {}", missing.display())),
        "{why}"
    );
}

#[tokio::test]
async fn verified_registry_never_uses_a_plain_http_realm_or_redirect() {
    let pki = Pki::new("downgrade");
    let cert = pki.server("server", Validity::Valid);
    let plain = serve(|_| respond(200, &[("Docker-Content-Digest", D1)], "")).await;
    let plain_host = plain.host.clone();
    let server = serve_tls(
        move |r| match r.path() {
            "/v2/" => {
                let challenge = format!(r#"Bearer realm="http://{plain_host}/token",service="s""#);
                respond(401, &[("WWW-Authenticate", challenge.as_str())], "")
            }
            _ => respond(200, &[], ""),
        },
        pki.server_config(&cert, &[b"http/1.1"], false),
    )
    .await;
    let options = ClientOptions {
        ca_file: Some(pki.ca.cert_pem.clone()),
        ..ClientOptions::default()
    };
    let err = authorize(options.clone(), &server.host)
        .await
        .expect_err("plain realm");
    assert_eq!(err.status, Status::Unreachable);
    assert_eq!(
        *err.failure,
        AuthFailure::InsecureRealm {
            host: server.host.clone(),
            realm: "http://127.0.0.1".into(),
        }
    );
    assert!(plain.requests().is_empty());

    let plain_host = plain.host.clone();
    let redirecting = serve_tls(
        move |r| match r.path() {
            "/v2/" => respond(200, &[], ""),
            p => {
                let to = format!("http://{plain_host}{p}");
                respond(302, &[("Location", to.as_str())], "")
            }
        },
        pki.server_config(&cert, &[b"http/1.1"], false),
    )
    .await;
    let session = authorize(options, &redirecting.host)
        .await
        .expect("authorize");
    let a = session.check("app", "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Unreachable, 1));
    assert_eq!(
        a.finding,
        pullcheck_registry::Finding::RequestFailed {
            host: redirecting.host.clone(),
            method: pullcheck_registry::Method::Head,
            why: "a redirect from https to plain http (127.0.0.1) was refused".into(),
            redirected_from: None,
        }
    );
    assert!(plain.requests().is_empty());
}

/// An HTTP/2-only registry over TLS (ALPN `h2`), recording each request's version and
/// counting connections.
async fn h2_registry(
    config: Arc<rustls::ServerConfig>,
) -> (String, Arc<AtomicUsize>, Arc<std::sync::Mutex<Vec<String>>>) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let host = listener.local_addr().expect("addr").to_string();
    let connections = Arc::new(AtomicUsize::new(0));
    let versions = Arc::new(std::sync::Mutex::new(Vec::new()));
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let (count, seen) = (connections.clone(), versions.clone());
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(socket).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let seen = seen.clone();
                        async move {
                            seen.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                                "{:?} {} {}",
                                req.version(),
                                req.method(),
                                req.uri().path()
                            ));
                            let response = hyper::Response::builder()
                                .header("Docker-Content-Digest", D1)
                                .body(Full::new(Bytes::new()))
                                .expect("response");
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    },
                );
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
            });
        }
    });
    (host, connections, versions)
}

#[tokio::test]
async fn http2_is_used_when_tls_offers_it_over_one_connection() {
    let pki = Pki::new("h2");
    let cert = pki.server("server", Validity::Valid);
    let (host, connections, versions) =
        h2_registry(pki.server_config(&cert, &[b"h2"], false)).await;
    let session = authorize(
        ClientOptions {
            ca_file: Some(pki.ca.cert_pem.clone()),
            ..ClientOptions::default()
        },
        &host,
    )
    .await
    .expect("authorize");
    let checks: Vec<_> = (0..10)
        .map(|i| {
            let s = session.clone();
            tokio::spawn(async move { s.check("app", &format!("v{i}")).await })
        })
        .collect();
    for c in checks {
        assert_eq!(c.await.expect("task").status, Status::Present);
    }
    let seen = versions.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(seen.len(), 11, "{seen:?}");
    assert!(seen.iter().all(|v| v.starts_with("HTTP/2.0 ")), "{seen:?}");
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

/// The registry and the transport's words of an authorize failure over https alone
/// (`AuthFailure::Unreachable`, tried over `https`).
fn over_https(err: &pullcheck_registry::AuthorizeError) -> (&str, &str) {
    match &*err.failure {
        AuthFailure::Unreachable {
            host,
            tried:
                pullcheck_registry::Tried::Over {
                    scheme: pullcheck_registry::Scheme::Https,
                    failure,
                },
        } => {
            assert_eq!(failure.kind, err.reason, "{err:?}");
            (host, &failure.why)
        }
        other => panic!("{other:?}"),
    }
}
