//! A registry whose certificate is not valid for the host, through the real binary: an
//! unknown authority, a certificate for another name, an expired one. Each is `denied`
//! (exit 1) with the options that fix it, and no library log line reaches stderr at
//! default verbosity; with `--ca-file` the same registry answers `present`.
//!
//! The certificates are the registry tests' (`crates/registry/tests/it/support/pki.rs`,
//! the `openssl` CLI at test time); a TLS forwarder sits in front of the testkit's
//! plain-HTTP registry, as in the registry's TLS tests.

#[allow(dead_code)]
#[path = "../../../registry/tests/it/support/pki.rs"]
mod pki;

use std::process::{Command, Output};
use std::sync::Arc;

use pki::{Issued, Pki, Validity};
use pullcheck_testkit::{ImageKind, Registry};
use tokio::net::{TcpListener, TcpStream};

/// Accepts TLS with `cert` on a loopback port and forwards the plaintext to `backend`.
async fn forwarder(cert: &Issued, backend: String) -> u16 {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.clone()], cert.key.clone_key())
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

async fn run(args: Vec<String>, dir: std::path::PathBuf) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_pullcheck"))
            .args(&args)
            .current_dir(&dir)
            .env("HOME", &dir)
            .env("NO_COLOR", "1")
            .env_remove("PULLCHECK_LOG")
            .env_remove("DOCKER_CONFIG")
            .output()
            .expect("run pullcheck")
    })
    .await
    .expect("joined")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_invalid_for_the_host_is_denied_and_names_the_fix() {
    let registry = Registry::builder().start().await.expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    let pki = Pki::new("cli-tls");
    let dir = pki.dir.path().to_path_buf();
    let ca = pki.ca.cert_pem.display().to_string();
    let cases = [
        (
            "valid",
            pki.server("valid", Validity::Valid),
            "unknown authority",
            false,
        ),
        (
            "expired",
            pki.server("expired", Validity::Expired),
            "expired",
            true,
        ),
        (
            "elsewhere",
            pki.server_for("elsewhere", "DNS:registry.example"),
            "another host",
            true,
        ),
    ];
    for (name, cert, why, with_ca) in cases {
        let port = forwarder(&cert, registry.host().to_string()).await;
        let image = format!("127.0.0.1:{port}/team/app:v1");
        let mut args = vec!["check".to_string(), "--image".into(), image.clone()];
        if with_ca {
            args.extend(["--ca-file".into(), ca.clone()]);
        }
        let out = run(args.clone(), dir.clone()).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stdout}{stderr}");
        let row = stdout
            .lines()
            .find(|l| l.contains(&image))
            .unwrap_or_else(|| panic!("{name}: no row: {stdout}"));
        assert!(row.starts_with("denied"), "{name}: {row}");
        for fix in [
            why,
            "--ca-file",
            "--certs-dir",
            "--insecure-registry 127.0.0.1:",
        ] {
            assert!(row.contains(fix), "{name}: {fix}: {row}");
        }
        // No library's log line (rustls' verifier logs the failure at ERROR).
        assert!(stderr.trim().is_empty(), "{name}: stderr: {stderr}");
        if name == "valid" {
            // The fix it names works.
            args.extend(["--ca-file".into(), ca.clone()]);
            let out = run(args, dir.clone()).await;
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{stdout}");
            assert!(stdout.starts_with("present"), "{stdout}");
        }
    }
}
