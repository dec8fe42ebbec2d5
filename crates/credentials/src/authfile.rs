//! The node's own credential files: Docker's `config.json` and containers' `auth.json`.
//!
//! Both are `{"auths": {key: entry}, "credHelpers": {host: helper}}`; Docker's also has
//! `credsStore`, the default helper. An entry may hold:
//! - `registrytoken`: a ready bearer token → [`Credential::RegistryToken`];
//! - `identitytoken`: an OAuth2 refresh token → [`Credential::IdentityToken`];
//! - `auth`: base64 (padded or not) of `user:password`, which wins over
//! - `username` / `password` → [`Credential::Basic`];
//!
//! in that order of preference. An entry with none of them (`{}`, which Docker writes
//! next to a credential store) gives no credential. A `NUL` padding at the end of a
//! decoded password is dropped, as Docker and containers/image do.
//!
//! Matching differs by file:
//! - **Docker** (`docker/cli` `fileStore.Get`): by host. The server key is
//!   `https://index.docker.io/v1/` for Docker Hub and the domain otherwise; an entry
//!   with exactly that key wins, else the first entry (in file order) whose key names
//!   that host after `ConvertToHostname` (scheme and path dropped). For Docker Hub, keys
//!   naming `index.docker.io`, `docker.io` or `registry-1.docker.io` all count.
//! - **containers** (containers/image `findCredentialsInFile`): by namespace. The keys
//!   tried, exactly, are the repository and each of its parents, longest first
//!   (`quay.io/org/app`, `quay.io/org`, `quay.io`), then the first entry whose key,
//!   normalised (a key with a scheme cut to its host; Docker Hub aliases made one),
//!   names the registry.

use std::path::{Path, PathBuf};

use crate::Credential;
use pullcheck_reference::Reference;

use crate::dockercfg;
use crate::error::CredentialError;
use crate::helper::HelperCall;
use crate::tree::{self, Node};
use pullcheck_mirrors::url::redact_userinfo;

/// Docker Hub's key in Docker's `config.json` (Docker's `IndexServer`), also the server
/// URL Docker sends to credential helpers for Docker Hub.
pub const DOCKER_HUB_SERVER: &str = "https://index.docker.io/v1/";

/// Host names that mean Docker Hub when they appear in an auth file key.
pub const DOCKER_HUB_ALIASES: [&str; 3] = ["index.docker.io", "docker.io", "registry-1.docker.io"];

/// Which of the two formats a file is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthFileKind {
    /// Docker's `config.json`: matched by host; `credHelpers` and `credsStore`.
    DockerConfig,
    /// containers' `auth.json`: matched by namespace; `credHelpers` only.
    ContainersAuth,
}

/// One `auths` entry. `Debug` shows the key with its URL user info redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthEntry {
    /// The key as written, e.g. `https://index.docker.io/v1/`, `quay.io/org`, for
    /// matching; it may hold a password in its user info (`https://user:pw@host`), so
    /// it is never shown as is (source records and errors redact it).
    pub key: String,
    /// The credential it holds; `None` for an entry with nothing usable (`{}`).
    pub credential: Option<Credential>,
    /// The user name, when there is one (from `auth` or `username`).
    pub username: Option<String>,
}

impl std::fmt::Debug for AuthEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthEntry")
            .field("key", &redact_userinfo(&self.key))
            .field("credential", &self.credential)
            .field("username", &self.username)
            .finish()
    }
}

/// A parsed `config.json` or `auth.json`. `Debug` redacts the URL user info of keys.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthFile {
    path: PathBuf,
    kind: AuthFileKind,
    entries: Vec<AuthEntry>,
    cred_helpers: Vec<(String, String)>,
    creds_store: Option<String>,
}

impl std::fmt::Debug for AuthFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cred_helpers: Vec<(std::borrow::Cow<'_, str>, &str)> = self
            .cred_helpers
            .iter()
            .map(|(key, helper)| (redact_userinfo(key), helper.as_str()))
            .collect();
        f.debug_struct("AuthFile")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("entries", &self.entries)
            .field("cred_helpers", &cred_helpers)
            .field("creds_store", &self.creds_store)
            .finish()
    }
}

impl AuthFile {
    /// Reads and parses the file at `path`.
    ///
    /// # Errors
    /// [`CredentialError::Read`] if it cannot be read (including when it does not
    /// exist), else as [`AuthFile::parse`].
    pub fn load(path: &Path, kind: AuthFileKind) -> Result<AuthFile, CredentialError> {
        let what = match kind {
            AuthFileKind::DockerConfig => "Docker config",
            AuthFileKind::ContainersAuth => "containers auth file",
        };
        let bytes = pullcheck_files::read(path).map_err(|e| CredentialError::Read {
            path: path.display().to_string(),
            what,
            message: e.to_string(),
        })?;
        Self::parse_bytes(path, kind, &bytes)
    }

    /// Parses the text of a file; `path` is kept for sources and errors. An empty or
    /// whitespace-only Docker `config.json` is an empty config, as Docker reads it
    /// (its JSON decoder's end of input is not an error); an empty `auth.json` is a
    /// JSON error.
    ///
    /// # Errors
    /// [`CredentialError::AuthFile`] naming the file: a JSON syntax error (line and
    /// column), a member of the wrong type, or an `auths` key whose `auth` is not base64
    /// of `user:password` with a non-empty user (Docker refuses to load such a file).
    /// Never a value.
    pub fn parse(path: &Path, kind: AuthFileKind, text: &str) -> Result<AuthFile, CredentialError> {
        Self::parse_bytes(path, kind, text.as_bytes())
    }

    fn parse_bytes(
        path: &Path,
        kind: AuthFileKind,
        bytes: &[u8],
    ) -> Result<AuthFile, CredentialError> {
        let err = |message: String| CredentialError::AuthFile {
            path: path.display().to_string(),
            line: None,
            column: None,
            message,
        };
        // Docker's `configfile.LoadFromReader` takes an empty (or whitespace-only)
        // config.json as an empty config: the JSON decoder's io.EOF is not an error.
        if kind == AuthFileKind::DockerConfig && bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(AuthFile {
                path: path.to_path_buf(),
                kind,
                entries: Vec::new(),
                cred_helpers: Vec::new(),
                creds_store: None,
            });
        }
        let root = tree::parse_json(bytes).map_err(|e| CredentialError::AuthFile {
            path: path.display().to_string(),
            line: Some(e.line()),
            column: Some(e.column()),
            message: tree::json_error_what(&e),
        })?;
        let mut entries = Vec::new();
        if let Some(auths) = tree::go_member(&root, "auths", "the document").map_err(err)? {
            for (key, value) in tree::go_map(auths, "`auths`").map_err(err)? {
                entries.push(entry(key, value).map_err(err)?);
            }
        }
        let mut cred_helpers = Vec::new();
        if let Some(helpers) = tree::go_member(&root, "credHelpers", "the document").map_err(err)? {
            for (host, helper) in tree::go_map(helpers, "`credHelpers`").map_err(err)? {
                match helper {
                    Node::String(name) => cred_helpers.push((host.to_string(), name.clone())),
                    Node::Null => {}
                    other => {
                        return Err(err(format!(
                            "credHelpers[\"{}\"] is {}, not a string",
                            redact_userinfo(host),
                            other.kind()
                        )));
                    }
                }
            }
        }
        let creds_store = match kind {
            AuthFileKind::ContainersAuth => None,
            AuthFileKind::DockerConfig => {
                match tree::go_member(&root, "credsStore", "the document").map_err(err)? {
                    Some(Node::String(s)) if !s.is_empty() => Some(s.clone()),
                    Some(Node::String(_) | Node::Null) | None => None,
                    Some(other) => {
                        return Err(err(format!(
                            "`credsStore` is {}, not a string",
                            other.kind()
                        )));
                    }
                }
            }
        };
        Ok(AuthFile {
            path: path.to_path_buf(),
            kind,
            entries,
            cred_helpers,
            creds_store,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which format it was read as.
    pub fn kind(&self) -> AuthFileKind {
        self.kind
    }

    /// The `auths` entries in file order.
    pub fn entries(&self) -> &[AuthEntry] {
        &self.entries
    }

    /// `credHelpers` as `(key, helper)` pairs in file order.
    pub fn cred_helpers(&self) -> &[(String, String)] {
        &self.cred_helpers
    }

    /// `credsStore`, when set and non-empty (Docker format only).
    pub fn creds_store(&self) -> Option<&str> {
        self.creds_store.as_deref()
    }

    /// The entry this file's tool would use for `reference`, by the rules of its kind
    /// (see the [module docs](self)); `None` when no key applies. The entry may hold no
    /// credential (`{}`), which then hides the other keys, as in Docker.
    pub fn lookup(&self, reference: &Reference) -> Option<&AuthEntry> {
        let domain = reference.domain();
        if domain.is_empty() {
            return None;
        }
        match self.kind {
            AuthFileKind::DockerConfig => {
                let server = docker_server(reference);
                let wanted = if reference.is_docker_hub() {
                    "index.docker.io"
                } else {
                    domain
                };
                self.entries.iter().find(|e| e.key == server).or_else(|| {
                    self.entries
                        .iter()
                        .find(|e| hub_alias(&convert_to_hostname(&e.key)) == wanted)
                })
            }
            AuthFileKind::ContainersAuth => {
                let repository = reference.repository();
                let mut candidate: &str = &repository;
                loop {
                    if let Some(e) = self.entries.iter().find(|e| e.key == candidate) {
                        return Some(e);
                    }
                    match candidate.rfind('/') {
                        Some(i) => candidate = &candidate[..i],
                        None => break,
                    }
                }
                let registry = hub_alias(domain);
                self.entries
                    .iter()
                    .find(|e| normalize_containers_key(&e.key) == registry)
            }
        }
    }

    /// The credential helper this file names for `reference`, if any: Docker's
    /// `credHelpers` entry for the server key (or the bare domain), else `credsStore`;
    /// containers' `credHelpers` entry for the domain. The server sent to the helper is
    /// what each tool sends: [`DOCKER_HUB_SERVER`] or the domain for Docker, the domain
    /// for containers.
    pub fn helper_for(&self, reference: &Reference) -> Option<HelperCall> {
        let domain = reference.domain();
        if domain.is_empty() {
            return None;
        }
        let configured_in = self.path.display().to_string();
        match self.kind {
            AuthFileKind::DockerConfig => {
                let server = docker_server(reference);
                let named = self
                    .cred_helpers
                    .iter()
                    .find(|(k, _)| *k == server)
                    .or_else(|| self.cred_helpers.iter().find(|(k, _)| k == domain));
                if let Some((key, helper)) = named {
                    return Some(HelperCall {
                        helper: helper.clone(),
                        server: server.to_string(),
                        configured_in,
                        key: format!("credHelpers[\"{}\"]", redact_userinfo(key)),
                    });
                }
                self.creds_store.as_ref().map(|store| HelperCall {
                    helper: store.clone(),
                    server: server.to_string(),
                    configured_in,
                    key: "credsStore".to_string(),
                })
            }
            AuthFileKind::ContainersAuth => self
                .cred_helpers
                .iter()
                .find(|(k, _)| k == domain)
                .map(|(key, helper)| HelperCall {
                    helper: helper.clone(),
                    server: domain.to_string(),
                    configured_in,
                    key: format!("credHelpers[\"{}\"]", redact_userinfo(key)),
                }),
        }
    }
}

/// The server key Docker uses for a reference: [`DOCKER_HUB_SERVER`] on Docker Hub,
/// the domain elsewhere.
fn docker_server(reference: &Reference) -> &str {
    if reference.is_docker_hub() {
        DOCKER_HUB_SERVER
    } else {
        reference.domain()
    }
}

/// Docker Hub's aliases become `index.docker.io`; anything else is unchanged.
fn hub_alias(host: &str) -> &str {
    if DOCKER_HUB_ALIASES.contains(&host) {
        "index.docker.io"
    } else {
        host
    }
}

/// The host a Docker key names (`ConvertToHostname`): a `scheme://` prefix, any user
/// info and everything from the first `/` on are dropped.
pub fn convert_to_hostname(key: &str) -> String {
    let rest = key.split_once("://").map_or(key, |(_, rest)| rest);
    let host = rest.split('/').next().unwrap_or(rest);
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    host.to_string()
}

/// containers/image's `normalizeAuthFileKey` for a non-legacy file: an `http://` or
/// `https://` key is cut to its host, a key without keeps its namespace, and Docker
/// Hub's aliases become `index.docker.io`.
fn normalize_containers_key(key: &str) -> &str {
    let stripped = key.strip_prefix("http://").unwrap_or(key);
    let stripped = stripped.strip_prefix("https://").unwrap_or(stripped);
    let host = if stripped.len() != key.len() {
        stripped.split('/').next().unwrap_or(stripped)
    } else {
        stripped
    };
    hub_alias(host)
}

/// One `auths` entry to an [`AuthEntry`].
fn entry(key: &str, value: &Node) -> Result<AuthEntry, String> {
    let label = format!("auths[\"{}\"]", redact_userinfo(key));
    let [auth, username, password, identity, registry, _email] = tree::go_fields(
        value,
        [
            "auth",
            "username",
            "password",
            "identitytoken",
            "registrytoken",
            "email",
        ],
        &label,
    )?;
    let mut username = username.filter(|u| !u.is_empty());
    let mut password = password.unwrap_or_default();
    if let Some(auth) = auth.filter(|a| !a.is_empty()) {
        let (user, pass) =
            dockercfg::decode_auth(&auth).map_err(|why| format!("{label}: {why}"))?;
        if user.is_empty() {
            return Err(format!("{label}: `auth` decodes to an empty user name"));
        }
        username = Some(user);
        password = pass;
    }
    let password = password.trim_matches('\0').to_string();
    let credential = if let Some(token) = registry.filter(|t| !t.is_empty()) {
        Some(Credential::RegistryToken(token.into()))
    } else if let Some(token) = identity.filter(|t| !t.is_empty()) {
        Some(Credential::IdentityToken(token.into()))
    } else {
        username.clone().map(|username| Credential::Basic {
            username,
            password: password.into(),
        })
    };
    Ok(AuthEntry {
        key: key.to_string(),
        credential,
        username,
    })
}
