//! Resolve: for each reference, the endpoints to ask and the credentials to ask with.
//!
//! Pure apart from reading configuration files; no network.

pub mod docker_config;
pub mod endpoint;

use pullcheck_reference::Reference;
use pullcheck_registry::Credential;

pub use docker_config::DockerConfig;
pub use endpoint::ResolvedEndpoint;

/// Where a credential came from, for reports. Never holds the secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct CredentialSource {
    /// The file it was read from.
    pub source: String,
    /// The key it is stored under, e.g. `https://index.docker.io/v1/`.
    pub key: String,
    /// The user name, when there is one.
    pub username: Option<String>,
}

/// A credential with its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResolvedCredential {
    /// What to send.
    pub credential: Credential,
    /// Where it came from; `None` for anonymous.
    pub source: Option<CredentialSource>,
}

/// The keyring: every credential source, in the order they are consulted.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    docker: Option<DockerConfig>,
}

impl Keyring {
    /// A keyring with no credentials: every request is anonymous.
    pub fn empty() -> Keyring {
        Keyring::default()
    }

    /// A keyring over one Docker config file.
    pub fn from_docker_config(config: Option<DockerConfig>) -> Keyring {
        Keyring { docker: config }
    }

    /// Credential helpers named in the config, which this version does not run; the
    /// report lists them as warnings so that nothing is skipped silently.
    pub fn unsupported_helpers(&self) -> Vec<String> {
        self.docker.as_ref().map_or_else(Vec::new, |d| {
            d.helpers
                .iter()
                .map(|h| format!("{}: {h} is not run by this version", d.path.display()))
                .collect()
        })
    }

    /// The credentials to try for `reference`, in order; empty means anonymous.
    pub fn credentials_for(&self, reference: &Reference) -> Vec<ResolvedCredential> {
        let Some(config) = &self.docker else {
            return Vec::new();
        };
        config
            .lookup(reference.domain())
            .map(|entry| ResolvedCredential {
                credential: entry.credential.clone(),
                source: Some(CredentialSource {
                    source: config.path.display().to_string(),
                    key: entry.key.clone(),
                    username: match &entry.credential {
                        Credential::Basic { username, .. } => Some(username.clone()),
                        _ => None,
                    },
                }),
            })
            .into_iter()
            .collect()
    }
}

/// One place to ask about a reference, with the credentials to ask it with.
#[derive(Debug, Clone)]
pub struct Route {
    /// The endpoint and the rule that produced it.
    pub endpoint: ResolvedEndpoint,
    /// The repository path on that endpoint (a mirror may rewrite it).
    pub repository: String,
    /// Credentials in the order they are tried; empty means anonymous. The first
    /// success wins, and anonymous is not tried after credentials fail.
    pub credentials: Vec<ResolvedCredential>,
}

/// Everything needed to query one reference.
#[derive(Debug, Clone)]
pub enum Resolution {
    /// The configuration refuses the pull; no request is sent.
    Blocked {
        /// The rule that blocks it, naming the file and entry.
        rule: String,
    },
    /// The routes in the order the runtime tries them: mirrors, then the primary.
    Routes(Vec<Route>),
}

/// Resolves the routes for one reference: today its primary endpoint, with the
/// credentials the keyring holds for its registry.
pub fn resolve(reference: &Reference, keyring: &Keyring, insecure: &[String]) -> Resolution {
    Resolution::Routes(vec![Route {
        endpoint: endpoint::primary(reference.domain(), insecure),
        repository: reference.path().to_string(),
        credentials: keyring.credentials_for(reference),
    }])
}
