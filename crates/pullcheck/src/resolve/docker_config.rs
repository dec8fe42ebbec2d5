//! Docker `config.json` credentials (first cut of the keyring).
//!
//! Reads the `auths` map of a Docker CLI config file as `docker/cli`'s `configfile`
//! package does: `auth` (base64 of `user:password`, padded or not) wins over plain
//! `username`/`password`; `identitytoken` is an OAuth2 refresh token and `registrytoken`
//! a ready bearer token. Keys are matched by host name after the scheme and path are
//! dropped (`ConvertToHostname`), and Docker Hub's key aliases all mean Docker Hub.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use pullcheck_registry::Credential;

use crate::Error;

/// Docker Hub's canonical key in `config.json`.
pub const DOCKER_HUB_KEY: &str = "https://index.docker.io/v1/";

/// Host names that all mean Docker Hub when they appear as a `config.json` key.
const DOCKER_HUB_HOSTS: [&str; 3] = ["index.docker.io", "docker.io", "registry-1.docker.io"];

/// One usable entry of `auths`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthEntry {
    /// The key as written in the file, e.g. `https://index.docker.io/v1/`.
    pub key: String,
    /// The host the key names, after `ConvertToHostname`; Docker Hub aliases become
    /// `docker.io`.
    pub host: String,
    /// The credential; `Debug` redacts secrets.
    pub credential: Credential,
}

/// The credentials of one Docker config file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DockerConfig {
    /// The file they came from.
    pub path: PathBuf,
    /// Usable entries, in key order.
    pub entries: Vec<AuthEntry>,
    /// `credHelpers` hosts and `credsStore`, which this version does not run.
    pub helpers: Vec<String>,
}

#[derive(serde::Deserialize)]
struct RawConfig {
    #[serde(default)]
    auths: BTreeMap<String, RawAuth>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

#[derive(serde::Deserialize, Default)]
struct RawAuth {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

/// Where the Docker config is looked for, as the Docker CLI does: an explicit path (a
/// file, or a directory holding `config.json`), else `$DOCKER_CONFIG/config.json`, else
/// `$HOME/.docker/config.json`. Returns the path and whether it was given explicitly.
pub fn locate(explicit: Option<&Path>) -> Option<(PathBuf, bool)> {
    if let Some(path) = explicit {
        let path = if path.is_dir() {
            path.join("config.json")
        } else {
            path.to_path_buf()
        };
        return Some((path, true));
    }
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        return Some((PathBuf::from(dir).join("config.json"), false));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| {
            (
                PathBuf::from(home).join(".docker").join("config.json"),
                false,
            )
        })
}

impl DockerConfig {
    /// Loads the config found by [`locate`]. A default location that does not exist
    /// yields `None`; an explicit one that does not exist is an error.
    ///
    /// # Errors
    /// [`Error::Config`] naming the file (and line and column for JSON errors).
    pub fn load(explicit: Option<&Path>) -> Result<Option<DockerConfig>, Error> {
        let Some((path, explicit)) = locate(explicit) else {
            return Ok(None);
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&path, &text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => Ok(None),
            Err(e) => Err(Error::Config(format!(
                "{}: cannot read Docker config: {e}",
                path.display()
            ))),
        }
    }

    /// Parses the text of a `config.json`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the file, the line and column of a JSON error, or the
    /// `auths` key whose `auth` is not valid base64 of `user:password`.
    pub fn parse(path: &Path, text: &str) -> Result<DockerConfig, Error> {
        let file = path.display();
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| {
            Error::Config(format!(
                "{file}:{}:{}: not a Docker config: {e}",
                e.line(),
                e.column()
            ))
        })?;
        let mut entries = Vec::new();
        for (key, auth) in raw.auths {
            let host = key_host(&key);
            if let Some(credential) = credential_of(&key, auth)
                .map_err(|why| Error::Config(format!("{file}: auths[\"{key}\"]: {why}")))?
            {
                entries.push(AuthEntry {
                    key,
                    host,
                    credential,
                });
            }
        }
        let mut helpers: Vec<String> = raw
            .cred_helpers
            .into_iter()
            .map(|(host, helper)| format!("credHelpers[\"{host}\"] = {helper}"))
            .collect();
        if let Some(store) = raw.creds_store.filter(|s| !s.is_empty()) {
            helpers.push(format!("credsStore = {store}"));
        }
        Ok(DockerConfig {
            path: path.to_path_buf(),
            entries,
            helpers,
        })
    }

    /// The entry for a registry domain (`docker.io`, `ghcr.io`, `localhost:5000`), if
    /// any: an exact key first, then the first key whose host matches.
    pub fn lookup(&self, domain: &str) -> Option<&AuthEntry> {
        let exact = if domain == "docker.io" {
            DOCKER_HUB_KEY
        } else {
            domain
        };
        self.entries
            .iter()
            .find(|e| e.key == exact)
            .or_else(|| self.entries.iter().find(|e| e.host == domain))
    }
}

/// The host a `config.json` key names, as `ConvertToHostname` does: the scheme and any
/// path are dropped. Docker Hub aliases become `docker.io`.
pub fn key_host(key: &str) -> String {
    let rest = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = rest.split('/').next().unwrap_or(rest);
    if DOCKER_HUB_HOSTS.contains(&host) {
        "docker.io".to_string()
    } else {
        host.to_string()
    }
}

/// Turns one `auths` entry into a credential; `Ok(None)` for an entry with nothing
/// usable (e.g. `{}` left behind by a credential store).
fn credential_of(key: &str, raw: RawAuth) -> Result<Option<Credential>, String> {
    let _ = key;
    if let Some(token) = raw.registrytoken.filter(|t| !t.is_empty()) {
        return Ok(Some(Credential::RegistryToken(token)));
    }
    if let Some(token) = raw.identitytoken.filter(|t| !t.is_empty()) {
        return Ok(Some(Credential::IdentityToken(token)));
    }
    if let Some(auth) = raw.auth.filter(|a| !a.is_empty()) {
        let (username, password) = decode_auth(&auth)?;
        return Ok(Some(Credential::Basic { username, password }));
    }
    match (raw.username, raw.password) {
        (Some(username), Some(password)) if !username.is_empty() => {
            Ok(Some(Credential::Basic { username, password }))
        }
        _ => Ok(None),
    }
}

/// Decodes an `auth` value: base64 (padded or unpadded) of `user:password`.
///
/// # Errors
/// A message saying what is wrong, never containing the value.
pub fn decode_auth(auth: &str) -> Result<(String, String), String> {
    let trimmed = auth.trim().trim_end_matches('=');
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(trimmed)
        .map_err(|_| "`auth` is not valid base64".to_string())?;
    let text =
        String::from_utf8(bytes).map_err(|_| "`auth` does not decode to UTF-8".to_string())?;
    let (user, password) = text
        .split_once(':')
        .ok_or_else(|| "`auth` does not decode to `user:password`".to_string())?;
    if user.is_empty() {
        return Err("`auth` decodes to an empty user name".to_string());
    }
    Ok((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DockerConfig, Error> {
        DockerConfig::parse(Path::new("/cfg/config.json"), text)
    }

    #[test]
    fn auth_wins_over_username_and_password() {
        // base64("alice:s3cret") = YWxpY2U6czNjcmV0
        let cfg = parse(
            r#"{"auths":{"r.example.com":{"auth":"YWxpY2U6czNjcmV0","username":"bob","password":"x"}}}"#,
        )
        .unwrap();
        assert_eq!(
            cfg.lookup("r.example.com").unwrap().credential,
            Credential::Basic {
                username: "alice".into(),
                password: "s3cret".into()
            }
        );
    }

    #[test]
    fn padded_and_unpadded_base64_both_decode() {
        // base64("ab:c") = "YWI6Yw==" padded.
        assert_eq!(decode_auth("YWI6Yw==").unwrap(), ("ab".into(), "c".into()));
        assert_eq!(decode_auth("YWI6Yw").unwrap(), ("ab".into(), "c".into()));
        assert!(decode_auth("!!!").is_err());
        // base64("nocolon")
        assert!(
            decode_auth("bm9jb2xvbg==")
                .unwrap_err()
                .contains("user:password")
        );
    }

    #[test]
    fn docker_hub_aliases_mean_docker_io() {
        for key in [
            "https://index.docker.io/v1/",
            "index.docker.io",
            "docker.io",
            "https://registry-1.docker.io/v2/",
        ] {
            let text = format!(r#"{{"auths":{{"{key}":{{"username":"u","password":"p"}}}}}}"#);
            let cfg = parse(&text).unwrap();
            assert_eq!(cfg.lookup("docker.io").unwrap().key, key, "key {key}");
        }
    }

    #[test]
    fn scheme_and_path_are_dropped_and_ports_kept() {
        assert_eq!(
            key_host("https://r.example.com:5000/v2/"),
            "r.example.com:5000"
        );
        assert_eq!(key_host("http://localhost:5000"), "localhost:5000");
        let cfg = parse(r#"{"auths":{"https://localhost:5000/v1/":{"auth":"YWI6Yw=="}}}"#).unwrap();
        assert!(cfg.lookup("localhost:5000").is_some());
        assert!(cfg.lookup("localhost:5001").is_none());
        assert!(cfg.lookup("localhost").is_none());
    }

    #[test]
    fn tokens_and_empty_entries() {
        let cfg = parse(
            r#"{"auths":{"a.io":{"identitytoken":"tok"},"b.io":{"registrytoken":"rt"},"c.io":{}},
                "credHelpers":{"d.io":"ecr-login"},"credsStore":"desktop"}"#,
        )
        .unwrap();
        assert_eq!(
            cfg.lookup("a.io").unwrap().credential,
            Credential::IdentityToken("tok".into())
        );
        assert_eq!(
            cfg.lookup("b.io").unwrap().credential,
            Credential::RegistryToken("rt".into())
        );
        assert!(cfg.lookup("c.io").is_none());
        assert_eq!(cfg.helpers.len(), 2);
    }

    #[test]
    fn errors_name_the_file_and_position_but_not_the_secret() {
        let err = parse("{\"auths\": {\n  \"a.io\": 5 }}")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/cfg/config.json:2:"), "{err}");
        let err = parse(r#"{"auths":{"a.io":{"auth":"c2VjcmV0LXZhbHVl"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a.io") && err.contains("user:password"),
            "{err}"
        );
        assert!(!err.contains("c2VjcmV0LXZhbHVl") && !err.contains("secret-value"));
    }
}
