//! Pull secrets: Kubernetes Secrets of type `kubernetes.io/dockerconfigjson` (key
//! `.dockerconfigjson`) or `kubernetes.io/dockercfg` (key `.dockercfg`).
//!
//! Three ways in:
//! - [`PullSecret::parse_manifests`] / [`PullSecret::read_manifests`]: a `--pull-secret`
//!   file holding one Secret, a `List` (or `SecretList`) of them, or several YAML
//!   documents, in YAML or JSON;
//! - [`PullSecret::from_json`]: one Secret object as the Kubernetes API returns it;
//! - [`PullSecret::from_data`]: a Secret whose `data` is already decoded (as client
//!   libraries hand it over).
//!
//! `data` values are base64 (padded or not); `stringData` values are plain text and,
//! as the API server does when it stores a Secret, replace `data` values of the same
//! key.
//!
//! A Secret of any other type is kept with a [`PullSecret::ignored`] reason and no
//! entries: the kubelet silently skips such secrets, and we say so. A malformed
//! Secret is a [`CredentialError`] naming it; the message never holds a value.

use std::collections::BTreeMap;
use std::path::Path;

use crate::dockercfg::{self, Format, KubeletEntry};
use crate::error::CredentialError;
use crate::tree::{self, Node};

/// `type` of a Secret holding a `config.json`-style document.
pub const TYPE_DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
/// `type` of a Secret holding a legacy `.dockercfg` document.
pub const TYPE_DOCKERCFG: &str = "kubernetes.io/dockercfg";
/// The data key of a [`TYPE_DOCKER_CONFIG_JSON`] Secret.
pub const KEY_DOCKER_CONFIG_JSON: &str = ".dockerconfigjson";
/// The data key of a [`TYPE_DOCKERCFG`] Secret.
pub const KEY_DOCKERCFG: &str = ".dockercfg";

/// One registry entry of a pull secret, as the kubelet reads it: only the user name
/// and password survive (`auth` already decoded into them).
#[derive(Clone, PartialEq, Eq)]
pub struct SecretEntry {
    /// The key as written in the Secret, e.g. `https://index.docker.io/v1/`, `quay.io/org`,
    /// for matching; it may hold a password in its user info (`https://user:pw@host`),
    /// so it is never shown as is (`Debug`, source records and warnings redact it).
    pub key: String,
    /// The user name; empty when the entry has none.
    pub username: String,
    /// The password; never printed.
    pub password: crate::Secret,
}

impl std::fmt::Debug for SecretEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretEntry")
            .field("key", &pullcheck_mirrors::url::redact_userinfo(&self.key))
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// A parsed pull secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullSecret {
    name: String,
    origin: String,
    entries: Vec<SecretEntry>,
    ignored: Option<String>,
}

impl PullSecret {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where it came from: a file path, or what the caller passed (e.g. `namespace ci`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// `pull secret <name> (<origin>)`, the `source` of its credentials.
    pub fn describe(&self) -> String {
        format!("pull secret {} ({})", self.name, self.origin)
    }

    /// The registry entries in document order; empty for an ignored secret.
    pub fn entries(&self) -> &[SecretEntry] {
        &self.entries
    }

    /// Why the kubelet would skip this secret (its type is not one of the two docker
    /// types), or `None` when it is used.
    pub fn ignored(&self) -> Option<&str> {
        self.ignored.as_deref()
    }

    /// Reads a `--pull-secret` file and parses it with [`PullSecret::parse_manifests`];
    /// the file's path is the origin.
    ///
    /// # Errors
    /// [`CredentialError::Read`] when the file cannot be read, else as
    /// [`PullSecret::parse_manifests`].
    pub fn read_manifests(path: &Path) -> Result<Vec<PullSecret>, CredentialError> {
        let file = path.display().to_string();
        let text = pullcheck_files::read_to_string(path).map_err(|e| CredentialError::Read {
            path: file.clone(),
            what: "pull secret manifest",
            message: e.to_string(),
        })?;
        Self::parse_manifests(&file, &text)
    }

    /// Parses the text of a manifest file: JSON (one object) or YAML (one or more
    /// `---`-separated documents; empty documents are skipped). Each document is a
    /// `Secret`, or a `List`/`SecretList` whose `items` are Secrets (an item may omit
    /// `kind`, as in API list replies). `file` names the file in sources and errors.
    ///
    /// # Errors
    /// - [`CredentialError::Manifest`] for a syntax error (with line and column), a
    ///   document that is not an object, another `kind`, a Secret without
    ///   `metadata.name`, or a file with no Secret at all (empty, or an empty `List`);
    /// - [`CredentialError::Secret`] for a malformed Secret (see [`PullSecret::from_json`]).
    pub fn parse_manifests(file: &str, text: &str) -> Result<Vec<PullSecret>, CredentialError> {
        let manifest_err = |message: String| CredentialError::Manifest {
            file: file.to_string(),
            message,
        };
        let trimmed = text.trim_start_matches('\u{feff}').trim_start();
        let documents: Vec<Node> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
            match tree::parse_json(trimmed.as_bytes()) {
                Ok(node) => vec![node],
                // A YAML flow mapping also starts with `{`; report the JSON error only
                // when YAML cannot read it either.
                Err(json_err) => load_yaml(trimmed)
                    .map_err(|_| manifest_err(tree::json_error_message(&json_err)))?,
            }
        } else {
            load_yaml(text).map_err(manifest_err)?
        };
        let several = documents.len() > 1;
        let mut secrets = Vec::new();
        for (i, doc) in documents.iter().enumerate() {
            let label = if several {
                format!("document {}", i + 1)
            } else {
                "the document".to_string()
            };
            if matches!(doc, Node::Null) {
                continue;
            }
            if !matches!(doc, Node::Object(_)) {
                return Err(manifest_err(format!(
                    "{label} is {}, not a Secret",
                    doc.kind()
                )));
            }
            match doc.get_str("kind") {
                Some("Secret") => secrets.push(Self::from_json_in(file, doc, &label)?),
                Some(kind) if kind == "List" || kind == "SecretList" => {
                    let items = match doc.get("items") {
                        Some(Node::Array(items)) => items,
                        Some(Node::Null) | None => continue,
                        Some(other) => {
                            return Err(manifest_err(format!(
                                "{label}: `items` is {}, not a list",
                                other.kind()
                            )));
                        }
                    };
                    for (j, item) in items.iter().enumerate() {
                        let item_label = format!("{label}, item {}", j + 1);
                        match item.get_str("kind") {
                            Some("Secret") | None if matches!(item, Node::Object(_)) => {
                                secrets.push(Self::from_json_in(file, item, &item_label)?);
                            }
                            Some(kind) => {
                                return Err(manifest_err(format!(
                                    "{item_label}: kind {kind} is not a Secret"
                                )));
                            }
                            None => {
                                return Err(manifest_err(format!(
                                    "{item_label} is {}, not a Secret",
                                    item.kind()
                                )));
                            }
                        }
                    }
                }
                Some(kind) => {
                    return Err(manifest_err(format!(
                        "{label}: kind {kind} is not a Secret"
                    )));
                }
                None => {
                    return Err(manifest_err(format!(
                        "{label} has no `kind` (expected Secret or List)"
                    )));
                }
            }
        }
        if secrets.is_empty() {
            return Err(manifest_err("holds no Secret".to_string()));
        }
        Ok(secrets)
    }

    /// Reads one Secret object as the Kubernetes API returns it (`metadata.name`,
    /// `type`, `data` in base64, optionally `stringData`). `origin` says where it came
    /// from, e.g. `namespace ci`.
    ///
    /// # Errors
    /// [`CredentialError::Manifest`] (with `file` = `origin`) when it is not an object
    /// or has no `metadata.name`; [`CredentialError::Secret`] when `data` or
    /// `stringData` is not a map of strings, a `data` value is not base64, or the docker
    /// config inside does not decode (see [`PullSecret::from_data`]).
    pub fn from_json(
        origin: &str,
        secret: &serde_json::Value,
    ) -> Result<PullSecret, CredentialError> {
        let node = tree::parse_json(secret.to_string().as_bytes()).map_err(|e| {
            CredentialError::Manifest {
                file: origin.to_string(),
                message: tree::json_error_message(&e),
            }
        })?;
        Self::from_json_in(origin, &node, "the Secret")
    }

    fn from_json_in(origin: &str, node: &Node, label: &str) -> Result<PullSecret, CredentialError> {
        let name = match node.get("metadata").and_then(|m| m.get("name")) {
            Some(Node::String(name)) if !name.is_empty() => name.clone(),
            _ => {
                return Err(CredentialError::Manifest {
                    file: origin.to_string(),
                    message: format!("{label}: Secret has no metadata.name"),
                });
            }
        };
        let secret_err = |message: String| CredentialError::Secret {
            name: name.clone(),
            origin: origin.to_string(),
            message,
        };
        let secret_type = match node.get("type") {
            Some(Node::String(t)) => Some(t.as_str()),
            Some(Node::Null) | None => None,
            Some(other) => {
                return Err(secret_err(format!(
                    "`type` is {}, not a string",
                    other.kind()
                )));
            }
        };
        let mut data: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for (field, base64) in [("data", true), ("stringData", false)] {
            let Some(map) = node.get(field) else { continue };
            let map = tree::go_map(map, &format!("`{field}`")).map_err(&secret_err)?;
            for (key, value) in map {
                let text = match value {
                    Node::String(s) => s,
                    Node::Null => continue,
                    other => {
                        return Err(secret_err(format!(
                            "{field}[\"{key}\"] is {}, not a string",
                            other.kind()
                        )));
                    }
                };
                let bytes = if base64 {
                    dockercfg::decode_base64_any(text)
                        .ok_or_else(|| secret_err(format!("data[\"{key}\"] is not valid base64")))?
                } else {
                    text.as_bytes().to_vec()
                };
                data.insert(key.to_string(), bytes);
            }
        }
        Self::from_data(origin, &name, secret_type, &data)
    }

    /// Builds a pull secret from already-decoded `data` (e.g. a client library's
    /// `Secret`). `secret_type` is `type` (`None` means `Opaque`, as the API server
    /// defaults it).
    ///
    /// As the kubelet (`MakeDockerKeyring`): a `kubernetes.io/dockerconfigjson` Secret
    /// is read from `.dockerconfigjson`, a `kubernetes.io/dockercfg` one from
    /// `.dockercfg`; any other type is kept as [`ignored`](PullSecret::ignored).
    ///
    /// # Errors
    /// [`CredentialError::Secret`] when the type's key is missing or empty (the API
    /// server refuses such a Secret) or its content does not decode as the kubelet
    /// decodes it.
    pub fn from_data(
        origin: &str,
        name: &str,
        secret_type: Option<&str>,
        data: &BTreeMap<String, Vec<u8>>,
    ) -> Result<PullSecret, CredentialError> {
        let secret_err = |message: String| CredentialError::Secret {
            name: name.to_string(),
            origin: origin.to_string(),
            message,
        };
        let (format, key) = match secret_type {
            Some(TYPE_DOCKER_CONFIG_JSON) => (Format::ConfigJson, KEY_DOCKER_CONFIG_JSON),
            Some(TYPE_DOCKERCFG) => (Format::Dockercfg, KEY_DOCKERCFG),
            other => {
                return Ok(PullSecret {
                    name: name.to_string(),
                    origin: origin.to_string(),
                    entries: Vec::new(),
                    ignored: Some(format!(
                        "type {} is not {TYPE_DOCKER_CONFIG_JSON} or {TYPE_DOCKERCFG}; the kubelet ignores it",
                        other.unwrap_or("Opaque (none given)")
                    )),
                });
            }
        };
        let bytes = match data.get(key) {
            Some(bytes) if !bytes.is_empty() => bytes,
            _ => {
                return Err(secret_err(format!(
                    "type {} needs a non-empty `{key}` in data or stringData",
                    secret_type.unwrap_or_default()
                )));
            }
        };
        let entries = dockercfg::parse(bytes, format)
            .map_err(|why| secret_err(format!("{key}: {why}")))?
            .into_iter()
            .map(
                |KubeletEntry {
                     key,
                     username,
                     password,
                 }| SecretEntry {
                    key,
                    username,
                    password,
                },
            )
            .collect();
        Ok(PullSecret {
            name: name.to_string(),
            origin: origin.to_string(),
            entries,
            ignored: None,
        })
    }
}

/// Loads YAML documents into nodes.
fn load_yaml(text: &str) -> Result<Vec<Node>, String> {
    use saphyr::LoadableYamlNode as _;
    let docs = saphyr::YamlOwned::load_from_str(text).map_err(|e| {
        let m = e.marker();
        format!("line {} column {}: {}", m.line(), m.col() + 1, e.info())
    })?;
    docs.iter().map(tree::from_yaml).collect()
}
