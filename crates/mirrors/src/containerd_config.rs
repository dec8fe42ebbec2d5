//! containerd's `config.toml`, the CRI plugin's `registry` section, as containerd 1.6
//! reads it (`pkg/cri/config/config.go`, `pkg/cri/server/image_pull.go`, v1.6.20):
//!
//! - where: a version 2 file under `[plugins."io.containerd.grpc.v1.cri".registry]`, a
//!   version 1 file (no `version`, or 1) under `[plugins.cri.registry]`, a version 3
//!   file (containerd 2.x) under `[plugins."io.containerd.cri.v1.images".registry]`;
//! - `config_path`: hosts directories (`:`-separated, the first that has a directory
//!   for the host wins); pullcheck reads the first and warns about the rest. When set,
//!   `mirrors` is an error (``"`mirrors` cannot be set when `config_path` is
//!   provided"``) and so is any `configs."HOST".tls` (``"`configs.tls` cannot be set
//!   when `config_path` is provided"``): containerd then fails to load the CRI plugin;
//! - without `config_path` (1.6's default is empty, so the CRI plugin reads no
//!   `certs.d`), the deprecated `mirrors."HOST".endpoint` list (else `mirrors."*"`),
//!   each endpoint without a scheme given `http://` on loopback and `https://`
//!   elsewhere, then the image's default host (`registry-1.docker.io` for `docker.io`)
//!   unless an endpoint is on the image's host already; every endpoint may resolve and
//!   pull; an endpoint's path replaces `/v2`; `configs."ENDPOINT_HOST".tls`
//!   (`insecure_skip_verify`, `ca_file`, `cert_file`, `key_file`) for its TLS, a
//!   `cert_file` without `key_file` (or back) failing the pull.
//!
//! The file is parsed once, here: the per-host `configs."HOST".auth` tables (and the
//! deprecated `auths."URL"` map, folded in under the URL's host with `configs` winning,
//! as `ValidatePluginConfig` does) are kept as written ([`AuthEntry`]), and
//! `pullcheck-credentials` (`ContainerdAuths::from_config`) decodes them into
//! credentials as containerd's `ParseAuth` does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pullcheck_reference::{Reference, RegistryHost};

use crate::hosts_toml::is_proxy;
use crate::url::{api_host, parse_url};
use crate::{ClientCert, CredentialRule, Endpoint, MirrorError, Resolution};

/// `configs."HOST".tls`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryTls {
    /// `insecure_skip_verify`.
    pub insecure_skip_verify: bool,
    /// `ca_file`.
    pub ca_file: Option<PathBuf>,
    /// `cert_file`.
    pub cert_file: Option<PathBuf>,
    /// `key_file`.
    pub key_file: Option<PathBuf>,
}

/// One `configs."HOST".auth` table (or deprecated `auths."URL"` entry) as written, not
/// yet decoded: each field is the empty string when absent. `Debug` shows the key and
/// which fields are set, never their values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthEntry {
    /// Where it is written, for messages and credential sources, e.g.
    /// `plugins."io.containerd.grpc.v1.cri".registry.configs."gcr.io".auth`.
    pub key: String,
    /// `username`.
    pub username: String,
    /// `password` (a secret).
    pub password: String,
    /// `auth`: base64 of `user:password` (a secret).
    pub auth: String,
    /// `identitytoken`: an OAuth2 refresh token (a secret).
    pub identitytoken: String,
}

impl std::fmt::Debug for AuthEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |v: &str| if v.is_empty() { "" } else { "<set>" };
        f.debug_struct("AuthEntry")
            .field("key", &self.key)
            .field("username", &self.username)
            .field("password", &set(&self.password))
            .field("auth", &set(&self.auth))
            .field("identitytoken", &set(&self.identitytoken))
            .finish()
    }
}

/// The CRI plugin's `registry` section of one `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerdConfig {
    file: String,
    key: String,
    config_path: Vec<PathBuf>,
    mirrors: BTreeMap<String, Vec<String>>,
    tls: BTreeMap<String, RegistryTls>,
    auths: BTreeMap<String, AuthEntry>,
}

fn invalid(file: &str, entry: String, message: &str) -> MirrorError {
    MirrorError::Invalid {
        file: file.to_owned(),
        entry,
        message: message.to_owned(),
    }
}

impl ContainerdConfig {
    /// Reads `path`.
    ///
    /// # Errors
    /// [`MirrorError::Read`], or as [`ContainerdConfig::parse`].
    pub fn load(path: &Path) -> Result<ContainerdConfig, MirrorError> {
        let text = crate::text::read_text(path)?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses the text of `file`.
    ///
    /// # Errors
    /// [`MirrorError::Syntax`] when it is not TOML (line and column) or a value has the
    /// wrong type (naming the key, e.g. an auth table's `password = 7`);
    /// [`MirrorError::Invalid`] for what containerd refuses to load: `mirrors` or
    /// `configs.*.tls` beside `config_path`.
    pub fn parse(file: &str, text: &str) -> Result<ContainerdConfig, MirrorError> {
        let doc: toml::Table =
            toml::from_str(text).map_err(|e| crate::text::toml_error(file, text, &e))?;
        let syntax = |message: String| MirrorError::Syntax {
            file: file.to_owned(),
            line: None,
            column: None,
            message,
        };
        let (registry, key) = cri_registry_section(&doc);
        let mut config = ContainerdConfig {
            file: file.to_owned(),
            key: key.to_owned(),
            ..ContainerdConfig::default()
        };
        let Some(registry) = registry else {
            return Ok(config);
        };
        let registry = registry
            .as_table()
            .ok_or_else(|| syntax(format!("{key} is not a table")))?;
        if let Some(v) = registry.get("config_path") {
            let path = v
                .as_str()
                .ok_or_else(|| syntax(format!("{key}.config_path is not a string")))?;
            config.config_path = path
                .split(':')
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect();
        }
        if let Some(v) = registry.get("mirrors") {
            let mirrors = v
                .as_table()
                .ok_or_else(|| syntax(format!("{key}.mirrors is not a table")))?;
            for (host, m) in mirrors {
                let at = format!("{key}.mirrors.{}.endpoint", quoted(host));
                let endpoints = match m.get("endpoint") {
                    None => Vec::new(),
                    Some(toml::Value::Array(list)) => list
                        .iter()
                        .map(|e| e.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| syntax(format!("{at} is not a list of strings")))?,
                    Some(_) => return Err(syntax(format!("{at} is not a list of strings"))),
                };
                config.mirrors.insert(host.clone(), endpoints);
            }
        }
        if let Some(v) = registry.get("auths") {
            let old = v
                .as_table()
                .ok_or_else(|| syntax(format!("{key}.auths is not a table")))?;
            for (url, value) in old {
                let at = format!("{key}.auths.{}", quoted(url));
                let entry = parse_auth_entry(value, at).map_err(syntax)?;
                config.auths.insert(host_of_url(url), entry);
            }
        }
        if let Some(v) = registry.get("configs") {
            let configs = v
                .as_table()
                .ok_or_else(|| syntax(format!("{key}.configs is not a table")))?;
            for (host, c) in configs {
                if let Some(auth) = c.get("auth") {
                    let at = format!("{key}.configs.{}.auth", quoted(host));
                    let entry = parse_auth_entry(auth, at).map_err(syntax)?;
                    config.auths.insert(host.clone(), entry);
                }
                let Some(tls) = c.get("tls") else { continue };
                let at = format!("{key}.configs.{}.tls", quoted(host));
                config
                    .tls
                    .insert(host.clone(), parse_tls(tls, &at).map_err(syntax)?);
            }
        }
        if !config.config_path.is_empty() {
            if !config.mirrors.is_empty() {
                return Err(invalid(
                    file,
                    format!("{key}.mirrors"),
                    "`mirrors` cannot be set when `config_path` is provided (containerd does \
                     not load its CRI plugin with both)",
                ));
            }
            if let Some(host) = config.tls.keys().next() {
                return Err(invalid(
                    file,
                    format!("{key}.configs.{}.tls", quoted(host)),
                    "`configs.tls` cannot be set when `config_path` is provided (containerd \
                     does not load its CRI plugin with both)",
                ));
            }
        }
        Ok(config)
    }

    /// The file read.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The `configs."HOST".auth` tables by host (`host[:port]` as written; a deprecated
    /// `auths."URL"` entry under the URL's host), as written.
    pub fn auths(&self) -> &BTreeMap<String, AuthEntry> {
        &self.auths
    }

    /// `config_path`'s directories, in order; empty when unset.
    pub fn config_path(&self) -> &[PathBuf] {
        &self.config_path
    }

    /// The endpoints containerd 1.6's CRI plugin asks for `reference` without
    /// `config_path` (the `mirrors` and `configs.*.tls` rules above). Pure.
    pub fn resolve(&self, reference: &Reference) -> Resolution {
        let host = reference.domain();
        if host.is_empty() {
            return Resolution::Unresolvable {
                rule: format!("containerd config {}", self.file),
                reason: "the reference names no registry host".to_owned(),
            };
        }
        let (listed, entry) = match self.mirrors.get(host) {
            Some(list) => (list.clone(), format!("mirrors.{}", quoted(host))),
            None => (
                self.mirrors.get("*").cloned().unwrap_or_default(),
                "mirrors.\"*\"".to_owned(),
            ),
        };
        let mut urls: Vec<(String, String)> = listed
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let url = with_default_scheme(e);
                let why = format!("{entry}.endpoint[{i}] of {} ({})", self.key, self.file);
                (url, why)
            })
            .collect();
        let own = urls
            .iter()
            .any(|(u, _)| parse_url(u).is_ok_and(|p| p.host == host));
        if !own {
            let default = api_host(host);
            urls.push((
                format!("{}://{default}", default_scheme(default)),
                format!(
                    "the default host {default} ({} has no endpoint on {host})",
                    self.file
                ),
            ));
        }
        let mut endpoints = Vec::new();
        for (url, why) in urls {
            let parts = match parse_url(&url) {
                Ok(p) if !p.host.is_empty() && matches!(p.scheme.as_str(), "http" | "https") => p,
                Ok(_) | Err(_) => {
                    return Resolution::Unresolvable {
                        rule: why,
                        reason: format!("{url:?} is not an http or https URL with a host"),
                    };
                }
            };
            let tls = self.tls.get(&parts.host).cloned().unwrap_or_default();
            if tls.cert_file.is_some() != tls.key_file.is_some() {
                return Resolution::Unresolvable {
                    rule: format!("configs.{}.tls of {}", quoted(&parts.host), self.file),
                    reason: "a cert_file needs a key_file and a key_file a cert_file".to_owned(),
                };
            }
            let mut base = if parts.path.is_empty() {
                "/v2".to_owned()
            } else {
                parts.path.clone()
            };
            if !base.ends_with('/') {
                base.push('/');
            }
            let proxy = is_proxy(&parts.host, host);
            endpoints.push(Endpoint {
                url: format!("{}://{}{base}", parts.scheme, parts.host),
                host: parts.host.clone(),
                repository: reference.path().to_owned(),
                reference: reference.manifest_reference().to_owned(),
                http_fallback: false,
                skip_verify: tls.insecure_skip_verify,
                ca: tls.ca_file.iter().cloned().collect(),
                client_certs: tls
                    .cert_file
                    .iter()
                    .map(|c| ClientCert {
                        cert: c.clone(),
                        key: tls.key_file.clone(),
                    })
                    .collect(),
                headers: Vec::new(),
                query: if proxy {
                    vec![("ns".to_owned(), host.to_owned())]
                } else {
                    Vec::new()
                },
                is_mirror: proxy,
                blocked: None,
                proxy: None,
                over_tls_warning: None,
                over_plain_http_warning: None,
                rule: format!("containerd CRI {why}"),
                credentials: CredentialRule {
                    lookup_host: Some(host.to_owned()),
                    pull_secrets: true,
                    rule: format!(
                        "containerd's CRI plugin sends the pull's credentials (the pull secrets \
                         matched by the image's registry {host}) to every endpoint, {} included; \
                         a pull without them gets the configs.\"{}\".auth of {}, if any",
                        parts.host, parts.host, self.file
                    ),
                },
            });
        }
        Resolution::Endpoints(endpoints)
    }
}

/// The CRI plugin's `registry` value in a parsed `config.toml`, if any, and its key path
/// for messages: by the file's `version` (absent: 1), `plugins.cri.registry` (1),
/// `plugins."io.containerd.grpc.v1.cri".registry` (2), or
/// `plugins."io.containerd.cri.v1.images".registry` (3).
fn cri_registry_section(doc: &toml::Table) -> (Option<&toml::Value>, &'static str) {
    let version = doc
        .get("version")
        .and_then(toml::Value::as_integer)
        .unwrap_or(1);
    let (id, key) = match version {
        1 => ("cri", "plugins.cri.registry"),
        3 => (
            "io.containerd.cri.v1.images",
            "plugins.\"io.containerd.cri.v1.images\".registry",
        ),
        _ => (
            "io.containerd.grpc.v1.cri",
            "plugins.\"io.containerd.grpc.v1.cri\".registry",
        ),
    };
    let value = doc
        .get("plugins")
        .and_then(|p| p.get(id))
        .and_then(|c| c.get("registry"));
    (value, key)
}

fn parse_auth_entry(value: &toml::Value, at: String) -> Result<AuthEntry, String> {
    let table = value
        .as_table()
        .ok_or_else(|| format!("{at} is not a table"))?;
    let string = |k: &str| -> Result<String, String> {
        match table.get(k) {
            None => Ok(String::new()),
            Some(toml::Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("{at}.{k} is not a string")),
        }
    };
    Ok(AuthEntry {
        username: string("username")?,
        password: string("password")?,
        auth: string("auth")?,
        identitytoken: string("identitytoken")?,
        key: at.clone(),
    })
}

/// A `registry.auths` key is a URL; containerd keeps only its host when a scheme is
/// given.
fn host_of_url(url: &str) -> String {
    match url.split_once("://") {
        Some((_, rest)) => rest.split('/').next().unwrap_or(rest).to_owned(),
        None => url.to_owned(),
    }
}

fn parse_tls(value: &toml::Value, at: &str) -> Result<RegistryTls, String> {
    let table = value
        .as_table()
        .ok_or_else(|| format!("{at} is not a table"))?;
    let string = |k: &str| -> Result<Option<PathBuf>, String> {
        match table.get(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) if s.is_empty() => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(PathBuf::from(s))),
            Some(_) => Err(format!("{at}.{k} is not a string")),
        }
    };
    let insecure_skip_verify = match table.get("insecure_skip_verify") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(_) => return Err(format!("{at}.insecure_skip_verify is not a boolean")),
    };
    Ok(RegistryTls {
        insecure_skip_verify,
        ca_file: string("ca_file")?,
        cert_file: string("cert_file")?,
        key_file: string("key_file")?,
    })
}

/// containerd `defaultScheme`: `http` for a loopback host (`docker.IsLocalhost`).
fn default_scheme(host: &str) -> &'static str {
    if RegistryHost::from_url_host(host).is_loopback() {
        "http"
    } else {
        "https"
    }
}

/// containerd `addDefaultScheme`.
fn with_default_scheme(endpoint: &str) -> String {
    if endpoint.contains("://") {
        return endpoint.to_owned();
    }
    let host = endpoint.split('/').next().unwrap_or(endpoint);
    format!("{}://{endpoint}", default_scheme(host))
}

fn quoted(key: &str) -> String {
    serde_json::Value::String(key.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(c: &ContainerdConfig, image: &str) -> Vec<String> {
        match c.resolve(&Reference::parse_normalized(image).unwrap()) {
            Resolution::Endpoints(e) => e.iter().map(Endpoint::manifest_url).collect(),
            other => panic!("{other:?}"),
        }
    }

    // The mirror shapes of containerd's docs/cri/registry.md (1.6) and its config tests
    // (pkg/cri/config/config_test.go: `config_path` with `mirrors` refused).
    #[test]
    fn mirrors_in_order_then_the_default_host() {
        let c = ContainerdConfig::parse(
            "config.toml",
            r#"version = 2
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
  endpoint = ["https://mirror.example.com", "mirror2.example.com/hub"]
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."*"]
  endpoint = ["localhost:5000"]
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."own.example.com"]
  endpoint = ["https://own.example.com"]
[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example.com".tls]
  insecure_skip_verify = true
  ca_file = "/etc/ca.pem"
"#,
        )
        .unwrap();
        assert_eq!(
            urls(&c, "alpine:3"),
            [
                "https://mirror.example.com/v2/library/alpine/manifests/3?ns=docker.io",
                "https://mirror2.example.com/hub/library/alpine/manifests/3?ns=docker.io",
                "https://registry-1.docker.io/v2/library/alpine/manifests/3",
            ]
        );
        assert_eq!(
            urls(&c, "quay.io/a/b:1"),
            [
                "http://localhost:5000/v2/a/b/manifests/1?ns=quay.io",
                "https://quay.io/v2/a/b/manifests/1",
            ]
        );
        // An endpoint on the image's own host: no default host appended.
        assert_eq!(
            urls(&c, "own.example.com/x:1"),
            ["https://own.example.com/v2/x/manifests/1"]
        );
        let Resolution::Endpoints(e) = c.resolve(&Reference::parse_normalized("alpine").unwrap())
        else {
            unreachable!()
        };
        assert!(e[0].skip_verify);
        assert_eq!(e[0].ca, [PathBuf::from("/etc/ca.pem")]);
        assert!(!e[1].skip_verify);
        assert!(e[0].credentials.pull_secrets);
        assert_eq!(e[0].credentials.lookup_host.as_deref(), Some("docker.io"));
    }

    #[test]
    fn version_1_and_config_path() {
        let c = ContainerdConfig::parse(
            "c.toml",
            "[plugins.cri.registry]\n  config_path = \"/etc/containerd/certs.d:/etc/docker/certs.d\"\n",
        )
        .unwrap();
        assert_eq!(
            c.config_path(),
            [
                PathBuf::from("/etc/containerd/certs.d"),
                PathBuf::from("/etc/docker/certs.d")
            ]
        );
        // No registry section: nothing set, the default host only (127.0.0.1 over http).
        let c = ContainerdConfig::parse("c.toml", "version = 2\n").unwrap();
        assert!(c.config_path().is_empty());
        assert_eq!(
            urls(&c, "127.0.0.1:5000/a:1"),
            ["http://127.0.0.1:5000/v2/a/manifests/1"]
        );
    }

    #[test]
    fn auth_tables_are_kept_as_written_by_host() {
        let c = ContainerdConfig::parse(
            "c.toml",
            r#"version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
[plugins."io.containerd.grpc.v1.cri".registry.auths."https://gcr.io/v2"]
  username = "old"
[plugins."io.containerd.grpc.v1.cri".registry.auths."quay.io"]
  auth = "b2xkOnB3"
[plugins."io.containerd.grpc.v1.cri".registry.configs."gcr.io".auth]
  username = "new"
  password = "hunter2-canary"
"#,
        )
        .unwrap();
        let hosts: Vec<&str> = c.auths().keys().map(String::as_str).collect();
        assert_eq!(hosts, ["gcr.io", "quay.io"]);
        let gcr = &c.auths()["gcr.io"];
        assert_eq!(
            (gcr.username.as_str(), gcr.password.as_str()),
            ("new", "hunter2-canary")
        );
        assert_eq!(
            gcr.key,
            r#"plugins."io.containerd.grpc.v1.cri".registry.configs."gcr.io".auth"#
        );
        assert_eq!(c.auths()["quay.io"].auth, "b2xkOnB3");
        assert!(!format!("{c:?}").contains("hunter2-canary"));
        let e = ContainerdConfig::parse(
            "c.toml",
            "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".auth]\npassword = 7\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "c.toml: plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".auth.password is not a string"
        );
    }

    #[test]
    fn what_containerd_refuses_names_the_file_and_key() {
        let both = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/d\"\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://m\"]\n";
        assert_eq!(
            ContainerdConfig::parse("c.toml", both)
                .unwrap_err()
                .to_string(),
            "c.toml: plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors: `mirrors` cannot be \
             set when `config_path` is provided (containerd does not load its CRI plugin with both)"
        );
        let tls = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/d\"\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h:1\".tls]\n  insecure_skip_verify = true\n";
        assert_eq!(
            ContainerdConfig::parse("c.toml", tls)
                .unwrap_err()
                .to_string(),
            "c.toml: plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h:1\".tls: \
             `configs.tls` cannot be set when `config_path` is provided (containerd does not load \
             its CRI plugin with both)"
        );
        let e = ContainerdConfig::parse("c.toml", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".tls]\n  insecure_skip_verify = \"yes\"\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.toml: plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".tls.insecure_skip_verify is not a boolean"
        );
        let e = ContainerdConfig::parse("c.toml", "version = 2\nx = [\n").unwrap_err();
        let fault = e.fault().expect("a file fault");
        assert_eq!(
            (fault.path.as_ref(), fault.kind, fault.line),
            ("c.toml", pullcheck_files::FaultKind::Syntax, Some(2)),
            "{e}"
        );
        let e = ContainerdConfig::parse("c.toml", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"a\"]\n  endpoint = \"https://m\"\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.toml: plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"a\".endpoint is not a list of strings"
        );
    }
}
