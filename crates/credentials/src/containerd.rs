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
//! The file is parsed once, by `pullcheck-mirrors` ([`ContainerdConfig`], which also
//! reads its mirror half: `config_path`, `mirrors`, `configs.*.tls`, and keeps the auth
//! tables as written); this module decodes those tables ([`ContainerdAuths::from_config`]).
//! No secret is printed: entries hold [`Secret`]s, and errors name the file and key,
//! never a value.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use pullcheck_mirrors::MirrorError;
use pullcheck_mirrors::containerd_config::{AuthEntry, ContainerdConfig};

use crate::{Credential, CredentialError, CredentialSource, ResolvedCredential, Secret};

/// The `configs."HOST".auth` entries of one containerd `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerdAuths {
    file: String,
    /// Host (`host[:port]`, as written) → what containerd would send there.
    entries: BTreeMap<String, Credential>,
}

impl ContainerdAuths {
    /// Reads and parses `path` (through `pullcheck-mirrors`' [`ContainerdConfig::load`]);
    /// a caller that also applies the file's mirrors parses it once and calls
    /// [`ContainerdAuths::from_config`] instead.
    ///
    /// # Errors
    /// [`CredentialError::Read`] when it cannot be read, [`CredentialError::AuthFile`]
    /// as [`ContainerdAuths::parse`].
    pub fn load(path: &Path) -> Result<ContainerdAuths, CredentialError> {
        let config = ContainerdConfig::load(path).map_err(from_mirror_error)?;
        Self::from_config(&config)
    }

    /// Parses the text of `file`.
    ///
    /// # Errors
    /// [`CredentialError::AuthFile`] naming `file` and the key: as
    /// [`ContainerdConfig::parse`] (not TOML, with line and column; a value of the wrong
    /// type; what containerd refuses to load), or as [`ContainerdAuths::from_config`].
    pub fn parse(file: &str, text: &str) -> Result<ContainerdAuths, CredentialError> {
        let config = ContainerdConfig::parse(file, text).map_err(from_mirror_error)?;
        Self::from_config(&config)
    }

    /// Decodes the auth tables of a parsed `config.toml` as containerd's `ParseAuth`
    /// does, without a server address.
    ///
    /// # Errors
    /// [`CredentialError::AuthFile`] naming the file and the key when an `auth` value is
    /// not base64 of `user:password` (containerd fails the pull with "invalid decoded
    /// auth").
    pub fn from_config(config: &ContainerdConfig) -> Result<ContainerdAuths, CredentialError> {
        let mut auths = ContainerdAuths {
            file: config.file().to_owned(),
            entries: BTreeMap::new(),
        };
        for (host, entry) in config.auths() {
            let credential = parse_auth(entry).map_err(|m| CredentialError::AuthFile {
                path: config.file().to_owned(),
                line: None,
                column: None,
                message: format!("{}: {m}", entry.key),
            })?;
            auths.entries.insert(host.clone(), credential);
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

/// A config.toml that `pullcheck-mirrors` could not read or parse, as this crate's
/// error, its file, line and column kept.
fn from_mirror_error(e: MirrorError) -> CredentialError {
    let message_of_fault = e.fault().map(|f| f.message.into_owned());
    match e {
        MirrorError::TooLarge { path, .. } => CredentialError::Read {
            path: path.display().to_string(),
            what: "containerd config",
            message: message_of_fault.unwrap_or_default(),
        },
        MirrorError::Read { path, message } => CredentialError::Read {
            path: path.display().to_string(),
            what: "containerd config",
            message,
        },
        MirrorError::Syntax {
            file,
            line,
            column,
            message,
        } => CredentialError::AuthFile {
            path: file,
            line,
            column,
            message,
        },
        MirrorError::Invalid {
            file,
            entry,
            message,
        } => CredentialError::AuthFile {
            path: file,
            line: None,
            column: None,
            message: format!("{entry}: {message}"),
        },
        MirrorError::UnknownProfile(name) => CredentialError::AuthFile {
            path: String::new(),
            line: None,
            column: None,
            message: format!("unknown node profile {name:?}"),
        },
    }
}

/// containerd `ParseAuth`, without a server address.
fn parse_auth(t: &AuthEntry) -> Result<Credential, String> {
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

fn quoted(key: &str) -> String {
    serde_json::Value::String(key.to_owned()).to_string()
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
