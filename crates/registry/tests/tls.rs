//! TLS: a self-signed certificate in front of a harness registry. Verified, it is an
//! unknown authority; with `skip_verify` the registry answers over https.
//!
//! The harness registries speak plain HTTP, so a small TLS-terminating forwarder (a
//! certificate made by `openssl`, which the harness needs as well) sits in front.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Status};
use pullcheck_testkit::{ImageKind, Registry};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

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

fn temp_dir(name: &str) -> TempDir {
    let dir =
        std::env::temp_dir().join(format!("pullcheck-registry-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

#[tokio::test]
async fn self_signed_certificate_is_an_unknown_authority_unless_skipped() {
    let registry = Registry::anonymous().await.expect("registry");
    let image = registry
        .push("team/app", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    let dir = temp_dir("tls");
    let port = tls_forwarder(registry.host().to_string(), &dir.0).await;
    let host = format!("127.0.0.1:{port}");
    let client = Client::new(ClientOptions::default()).expect("client");
    let repositories = vec!["team/app".to_string()];

    let err = client
        .authorize(
            &Endpoint {
                host: host.clone(),
                allow_http: false,
                skip_verify: false,
            },
            &Credential::Anonymous,
            &repositories,
        )
        .await
        .expect_err("self-signed");
    assert_eq!(err.status, Status::Unreachable);
    assert_eq!(
        err.message,
        format!(
            "registry {host} unreachable over https: TLS: certificate signed by an unknown authority"
        )
    );

    let session = client
        .authorize(
            &Endpoint {
                host: host.clone(),
                allow_http: false,
                skip_verify: true,
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
        .authorize(
            &Endpoint {
                host,
                allow_http: false,
                skip_verify: false,
            },
            &Credential::Anonymous,
            &repositories,
        )
        .await;
    assert!(again.is_err());
}
