//! The per-host credentials of containerd's `config.toml`: the CRI plugin's
//! `registry.configs."HOST".auth` tables (`username`, `password`, `auth`,
//! `identitytoken`), in a version 2 file under
//! `[plugins."io.containerd.grpc.v1.cri".registry]`, in a version 1 file (no `version`)
//! under `[plugins.cri.registry]`.
//!
//! How containerd 1.6 uses them (`pkg/cri/server/image_pull.go`, `registryHosts`): only
//! when the CRI `PullImage` request carries no `AuthConfig` (the kubelet found no
//! credentials for the image), and looked up by the host being contacted, so a mirror
//! gets the entry of the mirror's own host and the image's registry its own; `ParseAuth`
//! takes `username`/`password` first, then `identitytoken`, then `auth` (base64 of
//! `user:password`, the password's trailing NULs trimmed). The deprecated
//! `registry.auths."URL"` map is folded in under the URL's host, as
//! `ValidatePluginConfig` does (`configs` wins where both name a host).
//!
//! The mirror half of the file (`config_path`, `mirrors`, `configs.*.tls`) is read by
//! `pullcheck-mirrors`. No secret is printed: entries hold [`Secret`]s, and errors name
//! the file and key, never a value.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;

use crate::{Credential, CredentialError, CredentialSource, ResolvedCredential, Secret};

/// The `configs."HOST".auth` entries of one containerd `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerdAuths {
    file: String,
    /// Host (`host[:port]`, as written) → what containerd would send there.
    entries: BTreeMap<String, Credential>,
}

#[derive(Deserialize, Default)]
struct AuthTable {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
    #[serde(default)]
    identitytoken: String,
}

impl ContainerdAuths {
    /// Reads `path` (through `pullcheck-files`).
    ///
    /// # Errors
    /// [`CredentialError::Read`] when it cannot be read, [`CredentialError::AuthFile`]
    /// as [`ContainerdAuths::parse`].
    pub fn load(path: &Path) -> Result<ContainerdAuths, CredentialError> {
        let shown = path.display().to_string();
        let read_error = |message: String| CredentialError::Read {
            path: shown.clone(),
            what: "containerd config",
            message,
        };
        let bytes = pullcheck_files::read(path).map_err(|e| read_error(e.to_string()))?;
        let text = pullcheck_files::text(bytes).map_err(|e| read_error(e.to_string()))?;
        Self::parse(&shown, &text)
    }

    /// Parses the text of `file`.
    ///
    /// # Errors
    /// [`CredentialError::AuthFile`] naming `file` and the key: the file is not TOML
    /// (with line and column), an auth table is not a table of strings, or an `auth`
    /// value is not base64 of `user:password` (containerd fails the pull with "invalid
    /// decoded auth").
    pub fn parse(file: &str, text: &str) -> Result<ContainerdAuths, CredentialError> {
        let error = |message: String| CredentialError::AuthFile {
            path: file.to_owned(),
            line: None,
            column: None,
            message,
        };
        let doc: toml::Table = toml::from_str(text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| line_column(text, s.start))
                .map_or((None, None), |(l, c)| (Some(l), Some(c)));
            CredentialError::AuthFile {
                path: file.to_owned(),
                line,
                column,
                message: format!("not TOML: {}", pullcheck_files::without_values(e.message())),
            }
        })?;
        let (registry, key) = pullcheck_mirrors::containerd_config::cri_registry_section(&doc);
        let registry = registry.and_then(toml::Value::as_table);
        let mut auths = ContainerdAuths {
            file: file.to_owned(),
            entries: BTreeMap::new(),
        };
        let Some(registry) = registry else {
            return Ok(auths);
        };
        let mut raw: BTreeMap<String, (String, AuthTable)> = BTreeMap::new();
        if let Some(old) = registry.get("auths") {
            let old = old
                .as_table()
                .ok_or_else(|| error(format!("{key}.auths is not a table")))?;
            for (url, value) in old {
                let at = format!("{key}.auths.{}", quoted(url));
                let table = auth_table(value, &at).map_err(error)?;
                raw.insert(host_of_url(url), (at, table));
            }
        }
        if let Some(configs) = registry.get("configs") {
            let configs = configs
                .as_table()
                .ok_or_else(|| error(format!("{key}.configs is not a table")))?;
            for (host, value) in configs {
                let Some(auth) = value.as_table().and_then(|t| t.get("auth")) else {
                    continue;
                };
                let at = format!("{key}.configs.{}.auth", quoted(host));
                let table = auth_table(auth, &at).map_err(error)?;
                raw.insert(host.clone(), (at, table));
            }
        }
        for (host, (at, table)) in raw {
            let credential = parse_auth(&table).map_err(|m| error(format!("{at}: {m}")))?;
            auths.entries.insert(host, credential);
        }
        Ok(auths)
    }

    /// The file read.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The hosts that have an entry, in order.
    pub fn hosts(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// What containerd sends to `host` (`host[:port]` exactly as contacted, e.g.
    /// `registry-1.docker.io` for Docker Hub's default host) when the pull carries no
    /// credentials, with its source: the file and `configs."HOST".auth`.
    pub fn for_host(&self, host: &str) -> Option<ResolvedCredential> {
        let credential = self.entries.get(host)?;
        let username = match credential {
            Credential::Basic { username, .. } => Some(username.clone()),
            _ => None,
        };
        Some(ResolvedCredential {
            credential: credential.clone(),
            source: CredentialSource {
                source: format!("containerd config {}", self.file),
                key: format!("configs.{}.auth", quoted(host)),
                username,
            },
        })
    }
}

fn auth_table(value: &toml::Value, at: &str) -> Result<AuthTable, String> {
    value
        .clone()
        .try_into::<AuthTable>()
        // The value is a password or token: its type is named, never the value.
        .map_err(|e| format!("{at}: {}", pullcheck_files::without_values(e.message())))
}

/// containerd `ParseAuth`, without a server address.
fn parse_auth(t: &AuthTable) -> Result<Credential, String> {
    if !t.username.is_empty() {
        return Ok(Credential::Basic {
            username: t.username.clone(),
            password: Secret::new(t.password.clone()),
        });
    }
    if !t.identitytoken.is_empty() {
        return Ok(Credential::IdentityToken(Secret::new(
            t.identitytoken.clone(),
        )));
    }
    if !t.auth.is_empty() {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(t.auth.as_bytes())
            .map_err(|_| "`auth` is not valid base64".to_owned())?;
        let decoded =
            String::from_utf8(decoded).map_err(|_| "`auth` does not decode to text".to_owned())?;
        let Some((user, password)) = decoded.split_once(':') else {
            return Err("`auth` does not decode to user:password".to_owned());
        };
        return Ok(Credential::Basic {
            username: user.to_owned(),
            password: Secret::new(password.trim_matches('\0').to_owned()),
        });
    }
    Ok(Credential::Anonymous)
}

/// `registry.auths` keys are URLs; containerd keeps only the host when a scheme is given.
fn host_of_url(url: &str) -> String {
    match url.split_once("://") {
        Some((_, rest)) => rest.split('/').next().unwrap_or(rest).to_owned(),
        None => url.to_owned(),
    }
}

fn quoted(key: &str) -> String {
    serde_json::Value::String(key.to_owned()).to_string()
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(c: &ResolvedCredential) -> (String, String) {
        match &c.credential {
            Credential::Basic { username, password } => {
                (username.clone(), password.expose().to_owned())
            }
            other => panic!("not basic: {other:?}"),
        }
    }

    // The shapes of containerd's own config tests (pkg/cri/config/config_test.go,
    // v1.6.20: `"gcr.io"` with `Username: "test"`, `auths."https://gcr.io"` folded into
    // `configs."gcr.io"`) and of its documentation (docs/cri/registry.md: `auth`,
    // `identitytoken`).
    #[test]
    fn every_form_of_auth_in_both_versions() {
        let v2 = r#"
version = 2
[plugins."io.containerd.grpc.v1.cri".registry.configs."gcr.io".auth]
  username = "test"
  password = "pw"
[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example.com:5000".auth]
  auth = "dXNlcjpzZWNyZXQAAA=="
[plugins."io.containerd.grpc.v1.cri".registry.configs."tok.example.com".auth]
  identitytoken = "refresh-1"
[plugins."io.containerd.grpc.v1.cri".registry.configs."tls.example.com".tls]
  insecure_skip_verify = true
"#;
        let a = ContainerdAuths::parse("/etc/containerd/config.toml", v2).unwrap();
        assert_eq!(
            a.hosts().collect::<Vec<_>>(),
            ["gcr.io", "mirror.example.com:5000", "tok.example.com"]
        );
        let gcr = a.for_host("gcr.io").unwrap();
        assert_eq!(basic(&gcr), ("test".into(), "pw".into()));
        assert_eq!(gcr.source.key, r#"configs."gcr.io".auth"#);
        assert_eq!(
            gcr.source.source,
            "containerd config /etc/containerd/config.toml"
        );
        let m = a.for_host("mirror.example.com:5000").unwrap();
        assert_eq!(basic(&m), ("user".into(), "secret".into()));
        assert!(matches!(
            a.for_host("tok.example.com").unwrap().credential,
            Credential::IdentityToken(ref t) if t.expose() == "refresh-1"
        ));
        assert!(a.for_host("tls.example.com").is_none());
        assert!(a.for_host("mirror.example.com").is_none());

        let v1 = r#"
[plugins.cri.registry.auths."https://gcr.io"]
  username = "old"
[plugins.cri.registry.configs."quay.io".auth]
  username = "q"
  password = "p"
"#;
        let a = ContainerdAuths::parse("c.toml", v1).unwrap();
        assert_eq!(basic(&a.for_host("gcr.io").unwrap()).0, "old");
        assert_eq!(basic(&a.for_host("quay.io").unwrap()).0, "q");
        // A version 2 file's entries are not read under the version 1 key, and back.
        let none = ContainerdAuths::parse("c.toml", &format!("version = 2\n{v1}")).unwrap();
        assert_eq!(none.hosts().count(), 0);
    }

    #[test]
    fn errors_name_the_file_and_key_never_the_value() {
        let e = ContainerdAuths::parse(
            "c.toml",
            "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".auth]\nauth = \"bm9jb2xvbg==\"\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "c.toml: plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".auth: `auth` does not decode to user:password"
        );
        let e = ContainerdAuths::parse("c.toml", "version = 2\n[plugins\nx = 1\n").unwrap_err();
        let fault = e.fault().expect("a file fault");
        assert_eq!(
            (fault.path.as_ref(), fault.kind, fault.line),
            ("c.toml", pullcheck_files::FaultKind::Syntax, Some(2)),
            "{e}"
        );
        let e = ContainerdAuths::parse(
            "c.toml",
            "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".auth]\npassword = 7\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "c.toml: plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".auth: "
            ),
            "{e}"
        );
        let debug = format!(
            "{:?}",
            ContainerdAuths::parse(
                "c.toml",
                "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".auth]\nusername = \"u\"\npassword = \"hunter2-canary\"\n"
            )
            .unwrap()
        );
        assert!(!debug.contains("hunter2-canary"), "{debug}");
    }
}
