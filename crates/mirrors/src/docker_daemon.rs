//! The Docker daemon's `daemon.json`: `registry-mirrors` and `insecure-registries`, as
//! moby's `registry` package reads them (`ValidateMirror`, `LoadInsecureRegistries`,
//! `lookupV2Endpoints`, `isSecureIndex`).
//!
//! - `registry-mirrors` apply to Docker Hub (`docker.io`) only. Each must be an `http` or
//!   `https` URL root: no path other than `/`, no query, fragment or user info.
//! - A Hub image tries each mirror in order, then `registry-1.docker.io`. Other
//!   registries are asked directly over HTTPS; an insecure one without TLS verification,
//!   then over plain HTTP.
//! - `insecure-registries` holds `host[:port]` names (a leading `http://` or `https://`
//!   is dropped) or CIDR ranges; `127.0.0.0/8` and `::1/128` are always included. moby
//!   resolves host names to match them against CIDRs; pullcheck does no DNS, so a CIDR
//!   matches only IP literals and `localhost`.
//! - The same credentials (those for the image's registry) are sent to every endpoint,
//!   mirrors included.

use std::net::IpAddr;
use std::path::Path;

use pullcheck_reference::{Reference, RegistryHost};
use serde_json::Value;

use crate::MirrorError;
use crate::endpoint::{CredentialRule, Endpoint, Resolution};
use crate::redact::{redact_location, redact_values};
use crate::text::read_text;
use crate::url::{DOCKER_HUB_API_HOST, parse_url};

/// A CIDR range from `insecure-registries`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    fn parse(s: &str) -> Option<Cidr> {
        let (a, b) = s.split_once('/')?;
        let addr: IpAddr = a.parse().ok()?;
        let bits: u8 = b.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (bits <= max && !b.starts_with('+')).then_some(Cidr { addr, bits })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(i)) => {
                let mask = if self.bits == 0 {
                    0
                } else {
                    u32::MAX << (32 - u32::from(self.bits))
                };
                (u32::from(n) & mask) == (u32::from(i) & mask)
            }
            (IpAddr::V6(n), IpAddr::V6(i)) => {
                let mask = if self.bits == 0 {
                    0
                } else {
                    u128::MAX << (128 - u32::from(self.bits))
                };
                (u128::from(n) & mask) == (u128::from(i) & mask)
            }
            _ => false,
        }
    }
}

/// One validated `registry-mirrors` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerMirror {
    /// The entry as written.
    pub entry: String,
    /// `http` or `https`.
    pub scheme: String,
    /// `host[:port]`.
    pub host: String,
}

/// The mirror settings of a `daemon.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonConfig {
    file: String,
    mirrors: Vec<DockerMirror>,
    insecure_hosts: Vec<(String, String)>,
    insecure_cidrs: Vec<(Cidr, String)>,
}

/// An error naming entry `key[i]` as written, its user info masked.
fn entry_err(
    file: &str,
    key: &str,
    i: usize,
    raw: &str,
    message: impl Into<String>,
) -> MirrorError {
    MirrorError::invalid(
        file,
        format!("{key}[{i}] {:?}", redact_location(raw)),
        redact_values(&message.into(), &[raw]),
    )
}

impl DaemonConfig {
    /// Parses `daemon.json` text; keys other than `registry-mirrors` and
    /// `insecure-registries` are ignored.
    ///
    /// # Errors
    /// [`MirrorError::Syntax`] for invalid JSON or a top level that is not an object;
    /// [`MirrorError::Invalid`] naming the key or entry for a list that is not an array
    /// of strings, a mirror that is not an `http(s)` URL root (moby `ValidateMirror`), or
    /// an insecure registry that is not `host[:port]` or a CIDR.
    pub fn parse(file: &str, text: &str) -> Result<DaemonConfig, MirrorError> {
        let value: Value = serde_json::from_str(text).map_err(|e| MirrorError::Syntax {
            file: file.to_owned(),
            line: Some(e.line()),
            column: Some(e.column()),
            // serde_json ends its message with ` at line L column C`, given above.
            message: {
                let text = e.to_string();
                match text.rfind(" at line ") {
                    Some(i) => text[..i].to_owned(),
                    None => text,
                }
            },
        })?;
        let Value::Object(obj) = value else {
            return Err(MirrorError::Syntax {
                file: file.to_owned(),
                line: None,
                column: None,
                message: "expected a JSON object at the top level".to_owned(),
            });
        };
        let list = |key: &str| -> Result<Vec<String>, MirrorError> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        v.as_str().map(str::to_owned).ok_or_else(|| {
                            MirrorError::invalid(file, format!("{key}[{i}]"), "expected a string")
                        })
                    })
                    .collect(),
                Some(_) => Err(MirrorError::invalid(
                    file,
                    key,
                    "expected an array of strings",
                )),
            }
        };
        let mut config = DaemonConfig {
            file: file.to_owned(),
            mirrors: Vec::new(),
            insecure_hosts: Vec::new(),
            insecure_cidrs: Vec::new(),
        };
        for (i, raw) in list("registry-mirrors")?.into_iter().enumerate() {
            let m = validate_mirror(&raw)
                .map_err(|m| entry_err(file, "registry-mirrors", i, &raw, m))?;
            config.mirrors.push(m);
        }
        for (i, raw) in list("insecure-registries")?.into_iter().enumerate() {
            let bad = |m: &str| entry_err(file, "insecure-registries", i, &raw, m);
            if raw.starts_with('-') || raw.ends_with('-') {
                return Err(bad("invalid index name: cannot begin or end with a hyphen"));
            }
            let lower = raw.to_ascii_lowercase();
            let name = if lower.starts_with("http://") {
                &raw[7..]
            } else if lower.starts_with("https://") {
                &raw[8..]
            } else if raw.contains("://") {
                return Err(bad("an insecure registry must not contain '://'"));
            } else {
                raw.as_str()
            };
            if let Some(cidr) = Cidr::parse(name) {
                config.insecure_cidrs.push((cidr, raw.clone()));
            } else if valid_host_port(name) {
                config.insecure_hosts.push((name.to_owned(), raw.clone()));
            } else {
                return Err(bad("not a valid host[:port] or CIDR"));
            }
        }
        Ok(config)
    }

    /// Reads and parses `path`.
    ///
    /// # Errors
    /// [`MirrorError::Read`], or as [`DaemonConfig::parse`].
    pub fn load(path: &Path) -> Result<DaemonConfig, MirrorError> {
        let text = read_text(path)?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// The file it was read from.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The validated `registry-mirrors`, in order.
    pub fn mirrors(&self) -> &[DockerMirror] {
        &self.mirrors
    }

    /// The `insecure-registries` entry (or built-in loopback rule) that makes `hostport`
    /// insecure, if any (moby `isSecureIndex`).
    fn insecure_rule(&self, hostport: &str) -> Option<String> {
        if let Some((_, raw)) = self.insecure_hosts.iter().find(|(h, _)| h == hostport) {
            return Some(format!(
                "insecure by daemon.json {} insecure-registries {raw:?}",
                self.file
            ));
        }
        let host = RegistryHost::from_url_host(hostport);
        let ip: IpAddr = if host.name() == "localhost" {
            IpAddr::from([127, 0, 0, 1])
        } else {
            host.ip()?
        };
        if let Some((_, raw)) = self.insecure_cidrs.iter().find(|(c, _)| c.contains(ip)) {
            return Some(format!(
                "insecure by daemon.json {} insecure-registries {raw:?}",
                self.file
            ));
        }
        host.is_loopback().then(|| {
            "insecure: loopback (Docker always trusts 127.0.0.0/8 and ::1 as insecure)".to_owned()
        })
    }

    /// The endpoints the Docker daemon asks for `reference`; see the module docs.
    pub fn resolve(&self, reference: &Reference) -> Resolution {
        let domain = reference.domain();
        if domain.is_empty() {
            return Resolution::Unresolvable {
                rule: format!("docker daemon.json {}", self.file),
                reason: "the reference names no registry host".to_owned(),
            };
        }
        let credentials = |mirror: bool| CredentialRule {
            lookup_host: Some(domain.to_owned()),
            pull_secrets: true,
            rule: if mirror {
                format!(
                    "the Docker daemon sends the credentials for {domain} to its registry mirrors too \
                     (one auth config for every endpoint)"
                )
            } else {
                format!("the Docker daemon sends the credentials for {domain}")
            },
        };
        let endpoint = |url: String,
                        host: String,
                        insecure: Option<String>,
                        fallback: bool,
                        mirror: bool,
                        rule: String| {
            let rule = match &insecure {
                Some(why) => format!("{rule}; {why}"),
                None => rule,
            };
            Endpoint {
                url,
                host,
                repository: reference.path().to_owned(),
                reference: reference.manifest_reference().to_owned(),
                http_fallback: fallback && insecure.is_some(),
                skip_verify: insecure.is_some(),
                ca: Vec::new(),
                client_certs: Vec::new(),
                headers: Vec::new(),
                query: Vec::new(),
                is_mirror: mirror,
                blocked: None,
                proxy: None,
                over_tls_warning: None,
                over_plain_http_warning: None,
                rule,
                credentials: credentials(mirror),
            }
        };
        let mut endpoints = Vec::new();
        if domain == "docker.io" {
            for (i, m) in self.mirrors.iter().enumerate() {
                endpoints.push(endpoint(
                    format!("{}://{}/v2/", m.scheme, m.host),
                    m.host.clone(),
                    self.insecure_rule(&m.host),
                    false,
                    true,
                    format!(
                        "docker daemon.json {} registry-mirrors[{i}] {:?}",
                        self.file, m.entry
                    ),
                ));
            }
            endpoints.push(endpoint(
                format!("https://{DOCKER_HUB_API_HOST}/v2/"),
                DOCKER_HUB_API_HOST.to_owned(),
                None,
                false,
                false,
                "docker: Docker Hub's own registry (after any registry-mirrors)".to_owned(),
            ));
        } else {
            endpoints.push(endpoint(
                format!("https://{domain}/v2/"),
                domain.to_owned(),
                self.insecure_rule(domain),
                true,
                false,
                format!(
                    "docker daemon.json {}: {domain} is not Docker Hub, so no registry-mirrors apply",
                    self.file
                ),
            ));
        }
        Resolution::Endpoints(endpoints)
    }
}

/// moby `ValidateMirror`: an `http`/`https` URL whose path is empty or `/`, with no
/// query, fragment or user info.
fn validate_mirror(raw: &str) -> Result<DockerMirror, String> {
    let url = parse_url(raw).map_err(|e| format!("invalid mirror: {e}"))?;
    if url.scheme != "http" && url.scheme != "https" {
        return Err(format!(
            "invalid mirror: unsupported scheme {:?}: use an http:// or https:// URL root",
            url.scheme
        ));
    }
    let after_scheme = raw.split_once("://").map_or("", |(_, r)| r);
    let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or("");
    if (!url.path.is_empty() && url.path != "/") || raw.contains(['?', '#']) {
        return Err(
            "invalid mirror: a mirror must be a URL root (no path, query or fragment)".to_owned(),
        );
    }
    if authority.contains('@') {
        return Err("invalid mirror: username/password not allowed in the URL".to_owned());
    }
    if url.host.is_empty() {
        return Err("invalid mirror: the URL has no host".to_owned());
    }
    Ok(DockerMirror {
        entry: raw.to_owned(),
        scheme: url.scheme,
        host: url.host,
    })
}

/// moby `validateHostPort`: a host name or IP, with an optional numeric port.
fn valid_host_port(s: &str) -> bool {
    let host = RegistryHost::from_url_host(s);
    if host.name().is_empty() {
        return false;
    }
    if host.port().is_some_and(|p| p.parse::<u16>().is_err()) {
        return false;
    }
    host.ip().is_some()
        || host.name().split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Reference {
        Reference::parse_normalized(s).unwrap()
    }

    const FILE: &str = "/etc/docker/daemon.json";

    #[test]
    fn hub_images_try_each_mirror_then_the_hub() {
        let c = DaemonConfig::parse(
            FILE,
            r#"{"registry-mirrors": ["https://mirror.gcr.io", "http://10.0.0.5:5000/"], "debug": true}"#,
        )
        .unwrap();
        let Resolution::Endpoints(e) = c.resolve(&r("alpine:3.20")) else {
            panic!()
        };
        let urls: Vec<_> = e.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://mirror.gcr.io/v2/",
                "http://10.0.0.5:5000/v2/",
                "https://registry-1.docker.io/v2/"
            ]
        );
        assert!(e[0].is_mirror && e[1].is_mirror && !e[2].is_mirror);
        assert_eq!(e[0].repository, "library/alpine");
        assert_eq!(e[0].reference, "3.20");
        assert!(e[0].query.is_empty());
        assert_eq!(e[0].credentials.lookup_host.as_deref(), Some("docker.io"));
        assert!(e[0].credentials.pull_secrets);
        assert!(e[0].rule.contains("registry-mirrors[0]"), "{}", e[0].rule);
    }

    #[test]
    fn other_registries_ignore_mirrors() {
        let c =
            DaemonConfig::parse(FILE, r#"{"registry-mirrors": ["https://m.example"]}"#).unwrap();
        let Resolution::Endpoints(e) = c.resolve(&r("quay.io/a/b:1")) else {
            panic!()
        };
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].url, "https://quay.io/v2/");
        assert!(!e[0].insecure());
    }

    #[test]
    fn mirror_must_be_a_url_root() {
        // moby ValidateMirror: path, query, fragment, user info and other schemes refused.
        for bad in [
            "https://mirror.example.com/v2/",
            "https://mirror.example.com/path",
            "https://mirror.example.com/?x=1",
            "https://mirror.example.com/#f",
            "https://user:pw@mirror.example.com",
            "ftp://mirror.example.com",
            "mirror.example.com",
        ] {
            let json = format!(r#"{{"registry-mirrors": ["https://fine.example.com", {bad:?}]}}"#);
            let err = DaemonConfig::parse(FILE, &json).unwrap_err();
            let msg = err.to_string();
            assert!(msg.starts_with(FILE), "{msg}");
            assert!(msg.contains("registry-mirrors[1]"), "{msg}");
            // User info is shown masked, never as written.
            let shown = bad.replace("user:pw@", "user:***@");
            assert!(msg.contains(&shown), "{msg}");
            assert!(!msg.contains(":pw@"), "{msg}");
        }
        for good in [
            "https://m.example.com",
            "https://m.example.com/",
            "http://10.1.2.3:5000",
        ] {
            let json = format!(r#"{{"registry-mirrors": [{good:?}]}}"#);
            assert!(DaemonConfig::parse(FILE, &json).is_ok(), "{good}");
        }
    }

    #[test]
    fn insecure_registries_by_name_cidr_and_loopback() {
        let c = DaemonConfig::parse(
            FILE,
            r#"{"insecure-registries": ["http://r.example.com:5000", "10.20.0.0/16", "insecure.example"],
                "registry-mirrors": ["https://10.20.1.1"]}"#,
        )
        .unwrap();
        let ep = |s: &str| c.resolve(&r(s)).endpoints()[0].clone();
        let e = ep("r.example.com:5000/app:1");
        assert!(e.http_fallback && e.skip_verify, "{e:?}");
        assert!(e.rule.contains("insecure-registries"), "{}", e.rule);
        assert!(!ep("r.example.com:5001/app:1").insecure());
        assert!(ep("10.20.3.4:5000/app:1").insecure());
        assert!(!ep("10.21.3.4:5000/app:1").insecure());
        assert!(ep("insecure.example/app:1").insecure());
        assert!(ep("localhost:5000/app:1").insecure());
        assert!(ep("[::1]:5000/app:1").insecure());
        // The mirror at 10.20.1.1 is in the insecure CIDR: TLS unverified, no HTTP fallback.
        let m = ep("alpine");
        assert!(m.is_mirror && m.skip_verify && !m.http_fallback);
    }

    #[test]
    fn bad_insecure_entries_and_types_name_the_entry() {
        for (json, entry) in [
            (
                r#"{"insecure-registries": ["-bad.example"]}"#,
                "insecure-registries[0]",
            ),
            (
                r#"{"insecure-registries": ["ftp://x.example"]}"#,
                "insecure-registries[0]",
            ),
            (
                r#"{"insecure-registries": ["ok.example", "a:b:c:d/99x"]}"#,
                "insecure-registries[1]",
            ),
            (
                r#"{"insecure-registries": ["x.example:99999"]}"#,
                "insecure-registries[0]",
            ),
            (
                r#"{"registry-mirrors": "https://m.example"}"#,
                "registry-mirrors",
            ),
            (r#"{"registry-mirrors": [1]}"#, "registry-mirrors[0]"),
        ] {
            let msg = DaemonConfig::parse(FILE, json).unwrap_err().to_string();
            assert!(msg.contains(entry), "{json}: {msg}");
        }
        let msg = DaemonConfig::parse(FILE, "{\n  \"registry-mirrors\": [,]\n}")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("line 2"), "{msg}");
        assert!(DaemonConfig::parse(FILE, "[]").is_err());
        assert!(DaemonConfig::parse(FILE, "{}").is_ok());
    }

    #[test]
    fn cidr_matching() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains("10.255.0.1".parse().unwrap()));
        assert!(!c.contains("11.0.0.1".parse().unwrap()));
        assert!(
            Cidr::parse("::1/128")
                .unwrap()
                .contains("::1".parse().unwrap())
        );
        assert!(
            Cidr::parse("0.0.0.0/0")
                .unwrap()
                .contains("1.2.3.4".parse().unwrap())
        );
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(Cidr::parse("x/8").is_none());
    }
}
