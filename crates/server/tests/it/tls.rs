//! TLS with rustls: the certificate is served, and replaced when its files change.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pullcheck_server::{ServeOptions, TlsFiles};

use crate::util::{TestServer, temp_dir};

/// A self-signed certificate for 127.0.0.1 (openssl, Debian's), its PEM.
pub(crate) fn make_cert(dir: &Path, name: &str) -> Vec<u8> {
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    let status = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", &format!("/CN={name}")])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl");
    assert!(status.success());
    std::fs::read(&cert).expect("cert")
}

pub(crate) fn client(pem: &[u8]) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(pem).expect("PEM")])
        .build()
        .expect("client")
}

/// A service over TLS with the certificate `first` made in `dir`, served from the files
/// `serving.crt` and `serving.key` there: the server, `first`'s PEM, and the two paths.
pub(crate) async fn serve_first(dir: &Path) -> (TestServer, Vec<u8>, PathBuf, PathBuf) {
    let first = make_cert(dir, "first");
    let (cert, key) = (dir.join("serving.crt"), dir.join("serving.key"));
    std::fs::copy(dir.join("first.crt"), &cert).expect("copy");
    std::fs::copy(dir.join("first.key"), &key).expect("copy");
    let server = TestServer::start(ServeOptions {
        tls: Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        ..ServeOptions::default()
    })
    .await;
    (server, first, cert, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_is_served_and_reloaded_when_the_files_change() {
    let dir = temp_dir("tls");
    let second = make_cert(&dir, "second");
    let (server, first, cert, key) = serve_first(&dir).await;
    let url = format!("https://{}/healthz", server.addr);
    let answer = client(&first).get(&url).send().await.expect("TLS answer");
    assert_eq!(answer.status().as_u16(), 200);
    assert!(client(&second).get(&url).send().await.is_err());

    std::fs::copy(dir.join("second.key"), &key).expect("copy");
    std::fs::copy(dir.join("second.crt"), &cert).expect("copy");
    let started = Instant::now();
    loop {
        if let Ok(a) = client(&second).get(&url).send().await {
            assert_eq!(a.status().as_u16(), 200);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "not reloaded");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.stop().await;
}
