//! The kubelet's keyring over pull secrets (kubernetes `pkg/credentialprovider`,
//! `BasicDockerKeyring`): which secret entries apply to an image, in which order.
//!
//! **Keys.** Each key as written is turned into a keyring key by [`keyring_key`]:
//! `https://` is added unless it starts with `http://` or `https://`, the result is
//! parsed as Go's `url.Parse` does, and the key becomes `Host` (port kept, user info
//! dropped) followed by the path, where a path starting with `/v1/` or `/v2/` loses
//! those first three characters and a path of `/` (or none) leaves the host alone. A
//! key Go cannot parse is skipped, as upstream does (which logs it); we keep a
//! [`Keyring::warnings`] line for it.
//!
//! **Order.** All entries of all secrets go into one keyring. The distinct keys are
//! sorted in reverse byte order, so `quay.io/org` comes before `quay.io`; entries
//! sharing a key keep the order they were added in (secrets in the order given, then
//! document order within a secret; upstream's order within one secret is Go's map
//! order, which is random).
//!
//! **Matching** ([`urls_match`]). The image's repository (`docker.io/library/nginx`,
//! the normalised name without tag or digest, as the kubelet passes it) and the key are
//! both parsed with `https://` in front. They match when the ports are equal (both
//! absent counts as equal), the hosts have the same number of dot-separated labels,
//! each key label matches the image label as a Go `filepath.Match` pattern (so `*`
//! stays within one label), and the key's path is a string prefix of the image's path
//! (`quay.io/org` matches `quay.io/organisation/app` too).
//!
//! **Lookup** ([`Keyring::lookup`]). Every matching key contributes all its entries,
//! keys in keyring order. Only when nothing matched and [`is_default_registry_match`]
//! holds for the image are the entries of the key `index.docker.io` (written e.g. as
//! `https://index.docker.io/v1/`) returned: that key has three labels and never
//! matches `docker.io/…` directly.

use std::collections::BTreeMap;

use crate::Credential;
use pullcheck_reference::Reference;

use crate::secret::PullSecret;
use crate::{CredentialSource, ResolvedCredential};
use pullcheck_mirrors::url as gourl;

/// The keyring key whose entries are the Docker Hub fallback (upstream
/// `defaultRegistryHost`).
pub const DOCKER_HUB_FALLBACK_KEY: &str = "index.docker.io";

/// The kubelet's keyring built from pull secrets. See the [module docs](self) for the
/// exact rules.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    /// Distinct keyring keys, in reverse byte order.
    index: Vec<String>,
    /// The entries of each key, in the order they were added.
    creds: BTreeMap<String, Vec<ResolvedCredential>>,
    warnings: Vec<String>,
}

impl Keyring {
    /// An empty keyring: every lookup answers nothing.
    pub fn new() -> Keyring {
        Keyring::default()
    }

    /// One keyring over all `secrets`, in the order given (the Pod's
    /// `imagePullSecrets` order). Ignored secrets (not a docker type) add a warning and
    /// nothing else.
    pub fn from_pull_secrets<'a, I>(secrets: I) -> Keyring
    where
        I: IntoIterator<Item = &'a PullSecret>,
    {
        let mut keyring = Keyring::new();
        for secret in secrets {
            keyring.add_secret(secret);
        }
        keyring
    }

    /// Adds every entry of `secret`. An entry with a user name becomes
    /// [`Credential::Basic`]; one without becomes [`Credential::Anonymous`] (containerd's
    /// CRI plugin pulls anonymously with an empty user name), still with its source so
    /// that reports can show it.
    pub fn add_secret(&mut self, secret: &PullSecret) {
        let source = secret.describe();
        if let Some(why) = secret.ignored() {
            self.warnings.push(format!("{source}: {why}"));
            return;
        }
        for entry in secret.entries() {
            let resolved = ResolvedCredential {
                credential: basic_or_anonymous(&entry.username, &entry.password),
                source: CredentialSource {
                    source: source.clone(),
                    key: gourl::redact_userinfo(&entry.key).into_owned(),
                    username: Some(entry.username.clone()).filter(|u| !u.is_empty()),
                },
            };
            if let Err(why) = self.add_entry(&entry.key, resolved) {
                self.warnings.push(format!(
                    "{source}: key \"{}\" is not a valid URL ({why}); the kubelet ignores it",
                    gourl::redact_userinfo(&entry.key)
                ));
            }
        }
    }

    /// Adds one credential under the key as written (upstream `BasicDockerKeyring.Add`
    /// for one `DockerConfig` entry): the key is normalised by [`keyring_key`] and the
    /// credential goes after those already under it.
    ///
    /// # Errors
    /// [`keyring_key`]'s, for a key Go cannot parse; nothing is added.
    pub fn add_entry(
        &mut self,
        written_key: &str,
        resolved: ResolvedCredential,
    ) -> Result<(), &'static str> {
        let key = keyring_key(written_key)?;
        if !self.creds.contains_key(&key) {
            let at = self
                .index
                .binary_search_by(|probe| key.cmp(probe))
                .unwrap_or_else(|at| at);
            self.index.insert(at, key.clone());
        }
        self.creds.entry(key).or_default().push(resolved);
        Ok(())
    }

    /// The credentials the kubelet would try for `reference`, in order: its
    /// [`repository`](Reference::repository) looked up with [`Keyring::lookup_image`].
    /// Empty means the keyring has nothing for it.
    pub fn lookup(&self, reference: &Reference) -> Vec<ResolvedCredential> {
        self.lookup_image(&reference.repository())
    }

    /// Upstream's `Lookup(image)` on a raw string (normally the normalised repository
    /// name, e.g. `docker.io/library/nginx`): every matching key's entries in keyring
    /// order, else the Docker Hub fallback, else nothing.
    pub fn lookup_image(&self, image: &str) -> Vec<ResolvedCredential> {
        let mut found = Vec::new();
        for key in &self.index {
            if urls_match(key, image) {
                found.extend(self.creds.get(key).into_iter().flatten().cloned());
            }
        }
        if found.is_empty() && is_default_registry_match(image) {
            found.extend(
                self.creds
                    .get(DOCKER_HUB_FALLBACK_KEY)
                    .into_iter()
                    .flatten()
                    .cloned(),
            );
        }
        found
    }

    /// The distinct keyring keys in lookup order (reverse byte order).
    pub fn keys(&self) -> &[String] {
        &self.index
    }

    /// Whether the keyring holds no entry.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// What was skipped while building it: ignored secrets and keys that are not URLs.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// What a keyring entry sends: [`Credential::Basic`], or [`Credential::Anonymous`]
/// for an empty user name (containerd's CRI plugin pulls anonymously then).
pub(crate) fn basic_or_anonymous(username: &str, password: &crate::Secret) -> Credential {
    if username.is_empty() {
        Credential::Anonymous
    } else {
        Credential::Basic {
            username: username.to_owned(),
            password: password.clone(),
        }
    }
}

/// The keyring key for a key as written (upstream `BasicDockerKeyring.Add`): see the
/// [module docs](self). E.g. `https://index.docker.io/v1/` → `index.docker.io`,
/// `quay.io/v2/org` → `quay.io/org`, `http://r:5000/` → `r:5000`.
///
/// # Errors
/// Go's `url.Parse` error, in short, for a key it cannot parse.
pub fn keyring_key(written: &str) -> Result<String, &'static str> {
    let url = if written.starts_with("https://") || written.starts_with("http://") {
        gourl::parse(written)?
    } else {
        gourl::parse(&format!("https://{written}"))?
    };
    let path = if url.path.starts_with("/v2/") || url.path.starts_with("/v1/") {
        &url.path[3..]
    } else {
        &url.path[..]
    };
    Ok(if path.is_empty() || path == "/" {
        url.host
    } else {
        format!("{}{path}", url.host)
    })
}

/// Whether keyring key `glob` applies to image `target` (upstream `URLsMatchStr`); both
/// are schemeless. See the [module docs](self). Either failing to parse is no match.
pub fn urls_match(glob: &str, target: &str) -> bool {
    let (Ok(glob), Ok(target)) = (
        gourl::parse(&format!("https://{glob}")),
        gourl::parse(&format!("https://{target}")),
    ) else {
        return false;
    };
    let (glob_host, glob_port) = gourl::split_host_port(&glob.host);
    let (target_host, target_port) = gourl::split_host_port(&target.host);
    if glob_port != target_port {
        return false;
    }
    let glob_labels: Vec<&str> = glob_host.split('.').collect();
    let target_labels: Vec<&str> = target_host.split('.').collect();
    if glob_labels.len() != target_labels.len() {
        return false;
    }
    if !target.path.starts_with(&glob.path) {
        return false;
    }
    glob_labels
        .iter()
        .zip(&target_labels)
        .all(|(g, t)| crate::glob::matches(g, t))
}

/// Whether the kubelet takes `image` for a Docker Hub image when choosing the fallback
/// (upstream `isDefaultRegistryMatch`): its first `/`-separated part is non-empty and
/// either is the only part, is `docker.io` or `index.docker.io`, or contains neither
/// `.` nor `:`.
///
/// This is a test on the string, not on the parsed reference: with the normalised
/// repository the kubelet passes, `localhost/app` (domain `localhost`) also counts.
pub fn is_default_registry_match(image: &str) -> bool {
    let (first, rest) = match image.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (image, None),
    };
    if first.is_empty() {
        return false;
    }
    if rest.is_none() || first == "docker.io" || first == "index.docker.io" {
        return true;
    }
    !first.contains(['.', ':'])
}
