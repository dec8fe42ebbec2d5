//! Certificates made at test time with the `openssl` CLI, in a temporary directory
//! that is removed on drop: a test CA, server certificates it signs (valid, expired, or
//! for another host), client certificates for mutual TLS, and rustls server configs.
//! No key is ever committed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use pullcheck_testkit::TempDir;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Runs `openssl ARGS` in `dir`; a failure fails the test with openssl's stderr.
pub fn openssl(dir: &Path, args: &[&str]) {
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

const EC: [&str; 4] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];

/// A key pair and certificate on disk: `NAME.pem` (certificate), `NAME.key` (PKCS#8).
pub struct Issued {
    pub cert_pem: PathBuf,
    pub key_pem: PathBuf,
    pub cert: CertificateDer<'static>,
    pub key: PrivateKeyDer<'static>,
}

fn load(dir: &Path, name: &str) -> Issued {
    openssl(
        dir,
        &[
            "x509",
            "-in",
            &format!("{name}.pem"),
            "-outform",
            "DER",
            "-out",
            &format!("{name}.der"),
        ],
    );
    openssl(
        dir,
        &[
            "pkcs8",
            "-topk8",
            "-nocrypt",
            "-in",
            &format!("{name}.key"),
            "-outform",
            "DER",
            "-out",
            &format!("{name}.key.der"),
        ],
    );
    let cert = std::fs::read(dir.join(format!("{name}.der"))).expect("cert");
    let key = std::fs::read(dir.join(format!("{name}.key.der"))).expect("key");
    Issued {
        cert_pem: dir.join(format!("{name}.pem")),
        key_pem: dir.join(format!("{name}.key")),
        cert: CertificateDer::from(cert),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
    }
}

/// A test certificate authority in a temporary directory.
pub struct Pki {
    pub dir: TempDir,
    pub ca: Issued,
}

/// How long a certificate is valid.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// From now, for a day.
    Valid,
    /// Ended a day before it began: expired at any time after it was made.
    Expired,
}

impl Pki {
    /// A new CA, `ca.pem` and `ca.key`.
    pub fn new(name: &str) -> Pki {
        let dir = TempDir::new(name).expect("temp dir");
        let mut args = vec!["req", "-x509"];
        args.extend(EC);
        args.extend([
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=pullcheck test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        openssl(dir.path(), &args);
        let ca = load(dir.path(), "ca");
        Pki { dir, ca }
    }

    /// A certificate signed by the CA: `usage` is `serverAuth` or `clientAuth`, `san`
    /// an OpenSSL subjectAltName value (or empty for none).
    fn issue(&self, name: &str, usage: &str, san: &str, validity: Validity) -> Issued {
        let dir = self.dir.path();
        let mut args = vec!["req"];
        args.extend(EC);
        let key = format!("{name}.key");
        let csr = format!("{name}.csr");
        let subject = format!("/CN={name}");
        args.extend(["-nodes", "-keyout", &key, "-out", &csr, "-subj", &subject]);
        openssl(dir, &args);
        let mut ext = format!(
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage={usage}\n"
        );
        if !san.is_empty() {
            ext.push_str(&format!("subjectAltName={san}\n"));
        }
        let ext_file = format!("{name}.ext");
        std::fs::write(dir.join(&ext_file), ext).expect("ext file");
        let days = match validity {
            Validity::Valid => "1",
            Validity::Expired => "-1",
        };
        let pem = format!("{name}.pem");
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-set_serial",
                &format!("{}", name.len() * 7919 + usage.len()),
                "-out",
                &pem,
                "-days",
                days,
                "-extfile",
                &ext_file,
            ],
        );
        load(dir, name)
    }

    /// A server certificate for `127.0.0.1` and `localhost`.
    pub fn server(&self, name: &str, validity: Validity) -> Issued {
        self.issue(name, "serverAuth", "IP:127.0.0.1,DNS:localhost", validity)
    }

    /// A server certificate for another host only.
    pub fn server_for(&self, name: &str, san: &str) -> Issued {
        self.issue(name, "serverAuth", san, Validity::Valid)
    }

    /// A client certificate for mutual TLS.
    pub fn client(&self, name: &str) -> Issued {
        self.issue(name, "clientAuth", "", Validity::Valid)
    }

    /// A server config presenting `cert`, offering `alpn`; when `client_ca`, clients
    /// must present a certificate signed by the CA.
    pub fn server_config(
        &self,
        cert: &Issued,
        alpn: &[&[u8]],
        require_client_cert: bool,
    ) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("versions");
        let builder = if require_client_cert {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(self.ca.cert.clone()).expect("CA root");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder
            .with_single_cert(vec![cert.cert.clone()], cert.key.clone_key())
            .expect("server config");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}
