//! TLS material from files: the extra roots of `ca_file`, a Docker-style `certs_dir`
//! (`<dir>/<host[:port]>/*.crt` roots, `NAME.cert` + `NAME.key` client certificate),
//! and an endpoint's own CA files and client certificate; read once per host and
//! settings.
//!
//! Invariant: reads files and parses PEM; sends nothing. Messages name files, never
//! their contents.

use std::path::{Path, PathBuf};

use rustls_pki_types::pem::PemObject;

use crate::shared::CaFileProblem;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// A root certificate, as DER.
pub(crate) type Root = CertificateDer<'static>;

/// A client certificate chain (leaf first) and its private key, for mutual TLS.
#[derive(Debug)]
pub(crate) struct Identity {
    /// The chain, leaf first.
    pub certs: Vec<CertificateDer<'static>>,
    /// The leaf's private key.
    pub key: PrivateKeyDer<'static>,
}

impl Clone for Identity {
    fn clone(&self) -> Identity {
        Identity {
            certs: self.certs.clone(),
            key: self.key.clone_key(),
        }
    }
}

/// What a host's directory holds.
#[derive(Default)]
pub(crate) struct HostTls {
    /// The directory, for messages.
    pub dir: PathBuf,
    /// Extra roots, from every `*.crt`.
    pub roots: Vec<Root>,
    /// The client certificate and key (PEM, certificate chain first), for mutual TLS.
    pub identity: Option<Identity>,
}

/// Reads a PEM bundle of certificates.
///
/// # Errors
/// A message naming the file when it cannot be read, is not PEM, or holds no certificate
/// (the words of [`read_pem_bundle`]'s [`CaFileProblem`]).
pub(crate) fn read_roots(path: &Path) -> Result<Vec<Root>, String> {
    read_pem_bundle(path).map_err(|problem| match problem {
        CaFileProblem::Unreadable(e) => format!("cannot read {}: {e}", path.display()),
        CaFileProblem::NotPem => format!("{} is not a PEM certificate bundle", path.display()),
        CaFileProblem::NoCertificate => format!("{} holds no PEM certificate", path.display()),
    })
}

/// Reads a PEM bundle of certificates, typed: the file's problem is a
/// [`CaFileProblem`] (unreadable, not PEM, no certificate in it).
pub(crate) fn read_pem_bundle(path: &Path) -> Result<Vec<Root>, CaFileProblem> {
    let pem = pullcheck_files::read(path).map_err(|e| CaFileProblem::Unreadable(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| CaFileProblem::NotPem)?;
    if certs.is_empty() {
        return Err(CaFileProblem::NoCertificate);
    }
    Ok(certs)
}

/// The directory for `host` (`host` or `host:port` as in the URL) under `certs_dir`,
/// when there is one. A host that could name a path outside `certs_dir` has none.
pub(crate) fn host_dir(certs_dir: &Path, host: &str) -> Option<PathBuf> {
    let safe = !host.is_empty() && host != "." && host != ".." && !host.contains(['/', '\\', '\0']);
    if !safe {
        return None;
    }
    let dir = certs_dir.join(host);
    dir.is_dir().then_some(dir)
}

/// Reads a host's directory: every `*.crt` as roots, and the first `NAME.cert` (by
/// name) with its `NAME.key` as the client identity.
///
/// # Errors
/// A message naming the file: unreadable, not PEM, a `.cert` without its `.key` or a
/// `.key` without its `.cert`.
pub(crate) fn read_host_dir(dir: &Path) -> Result<HostTls, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let mut out = HostTls {
        dir: dir.to_path_buf(),
        ..HostTls::default()
    };
    for name in &names {
        if name.ends_with(".crt") {
            out.roots.extend(read_roots(&dir.join(name))?);
        }
    }
    for name in &names {
        if let Some(stem) = name.strip_suffix(".key")
            && !names.contains(&format!("{stem}.cert"))
        {
            return Err(format!(
                "{} has no matching {stem}.cert",
                dir.join(name).display()
            ));
        }
    }
    let first_cert = names.iter().find_map(|n| n.strip_suffix(".cert"));
    if let Some(stem) = first_cert {
        let cert_path = dir.join(format!("{stem}.cert"));
        let key_path = dir.join(format!("{stem}.key"));
        if !key_path.exists() {
            return Err(format!(
                "{} has no matching {stem}.key",
                cert_path.display()
            ));
        }
        let identity = read_identity(&cert_path, Some(&key_path))?;
        out.identity = Some(identity);
    }
    Ok(out)
}

/// Reads a client identity: a PEM certificate (chain first) and its private key, from
/// `key` or, when `None`, from the certificate file itself.
///
/// # Errors
/// A message naming the files when they cannot be read or are not a PEM certificate
/// and private key.
pub(crate) fn read_identity(cert: &Path, key: Option<&Path>) -> Result<Identity, String> {
    let read = |path: &Path| {
        pullcheck_files::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let mut pem = read(cert)?;
    if let Some(key) = key {
        pem.push(b'\n');
        pem.extend(read(key)?);
    }
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .ok()
        .filter(|c| !c.is_empty());
    let private = PrivateKeyDer::from_pem_slice(&pem).ok();
    let identity = match (certs, private) {
        (Some(certs), Some(key)) => Some(Identity { certs, key }),
        _ => None,
    };
    identity.ok_or_else(|| match key {
        Some(key) => format!(
            "{} and {} are not a PEM certificate and private key \
             (RSA, SEC1 EC or PKCS#8)",
            cert.display(),
            key.display()
        ),
        None => format!(
            "{} does not hold a PEM certificate and private key (RSA, SEC1 EC or PKCS#8)",
            cert.display()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "pullcheck-registry-tls-unit-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn host_dirs_never_leave_the_certs_dir() {
        let dir = temp("hostdir");
        std::fs::create_dir_all(dir.join("reg.example:5000")).unwrap();
        assert_eq!(
            host_dir(&dir, "reg.example:5000"),
            Some(dir.join("reg.example:5000"))
        );
        assert_eq!(host_dir(&dir, "reg.example"), None);
        for bad in ["", ".", "..", "../x", "a/b", "a\\b"] {
            assert_eq!(host_dir(&dir, bad), None, "{bad}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unusable_files_are_named() {
        let dir = temp("files");
        let missing = read_roots(&dir.join("nope.pem")).err().unwrap();
        assert!(missing.starts_with("cannot read "), "{missing}");
        std::fs::write(dir.join("empty.pem"), "not a certificate\n").unwrap();
        let empty = read_roots(&dir.join("empty.pem")).err().unwrap();
        assert!(
            empty.ends_with("empty.pem holds no PEM certificate"),
            "{empty}"
        );

        let host = dir.join("h");
        std::fs::create_dir_all(&host).unwrap();
        std::fs::write(host.join("client.cert"), "x").unwrap();
        let e = read_host_dir(&host).err().unwrap();
        assert!(e.ends_with("client.cert has no matching client.key"), "{e}");
        std::fs::remove_file(host.join("client.cert")).unwrap();
        std::fs::write(host.join("client.key"), "x").unwrap();
        let e = read_host_dir(&host).err().unwrap();
        assert!(e.ends_with("client.key has no matching client.cert"), "{e}");
        std::fs::write(host.join("client.cert"), "x").unwrap();
        let e = read_host_dir(&host).err().unwrap();
        assert!(
            e.contains("are not a PEM certificate and private key"),
            "{e}"
        );
        let e = read_identity(&host.join("client.cert"), None)
            .err()
            .unwrap();
        assert!(
            e.ends_with("client.cert does not hold a PEM certificate and private key (RSA, SEC1 EC or PKCS#8)"),
            "{e}"
        );
        let e = read_identity(&host.join("nope.cert"), None).err().unwrap();
        assert!(
            e.starts_with("cannot read ") && e.contains("nope.cert"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
