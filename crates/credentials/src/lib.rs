//! Registry credentials as a Kubernetes node would use them to pull an image: the
//! kubelet's keyring over pull secrets, then the node's Docker `config.json` and
//! containers `auth.json`, then the credential helpers those files name.
//!
//! ```
//! use pullcheck_credentials::{CredentialChain, Keyring, NodeCredentials, PullSecret};
//! use pullcheck_reference::Reference;
//!
//! let manifest = r#"
//! apiVersion: v1
//! kind: Secret
//! metadata: {name: regcred}
//! type: kubernetes.io/dockerconfigjson
//! stringData:
//!   .dockerconfigjson: '{"auths": {"quay.io/org": {"auth": "dTpw"}}}'
//! "#;
//! let secrets = PullSecret::parse_manifests("regcred.yaml", manifest).unwrap();
//! let chain = CredentialChain::new(Keyring::from_pull_secrets(&secrets), NodeCredentials::empty());
//!
//! let image = Reference::parse_normalized("quay.io/org/app:1").unwrap();
//! let steps = chain.explain_for(&image);
//! assert_eq!(steps.len(), 1);
//! assert_eq!(steps[0].source().source, "pull secret regcred (regcred.yaml)");
//! assert_eq!(steps[0].source().username.as_deref(), Some("u"));
//!
//! // No key applies to another registry: that pull is anonymous.
//! let other = Reference::parse_normalized("ghcr.io/org/app").unwrap();
//! assert!(chain.explain_for(&other).is_empty());
//! ```
//!
//! # How the result is used
//! [`CredentialChain::credentials_for`] returns, in order, every credential the kubelet
//! and runtime would try. The caller tries them in that order and **the first that
//! succeeds wins**. When all of them fail, the pull fails: anonymous access is **not**
//! tried after matched credentials. Only an empty list means an anonymous pull.
//!
//! # Modules
//! - [`secret`]: Secret manifests and API objects → [`PullSecret`];
//! - [`keyring`]: the kubelet's keyring (key normalisation, glob matching, order,
//!   Docker Hub fallback) → [`Keyring`];
//! - [`authfile`]: Docker `config.json` and containers `auth.json` → [`AuthFile`];
//! - [`node`]: where those files are, and the node's steps → [`NodeCredentials`];
//! - [`helper`]: running `docker-credential-<name> get`;
//! - [`provider`]: the kubelet's image credential provider plugins (config,
//!   matching, the exec protocol, cache) → [`CredentialProviders`];
//! - [`Credential`]: what is sent to a registry (a plain value; `pullcheck-registry`
//!   re-exports it, so this crate needs no HTTP client).
//!
//! Only [`PullSecret::read_manifests`], [`AuthFile::load`], [`NodeCredentials::load`]
//! (files), [`CredentialProviders::load`] (files) and [`helper::run_helper`] /
//! [`CredentialChain::credentials_for`] / [`CredentialChain::resolve_for`] (processes)
//! do IO; everything else is pure. No error, `Debug` output or source record ever holds
//! a password, token or `auth` value.

#![warn(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pullcheck_reference::Reference;
use serde::ser::SerializeStruct as _;
use tokio::sync::OnceCell;

pub mod authfile;
pub mod containerd;
mod credential;
mod dockercfg;
mod error;
mod exec;
mod glob;
pub mod helper;
pub mod keyring;
pub mod node;
pub mod provider;
pub mod secret;
mod tree;

pub use authfile::{AuthEntry, AuthFile, AuthFileKind};
pub use containerd::ContainerdAuths;
pub use credential::{Credential, Secret};
pub use error::{CredentialError, HelperFailure};
pub use helper::{HelperAnswer, HelperCall, HelperOptions};
pub use keyring::Keyring;
pub use node::{NodeCredentials, NodeEnv, NodeOptions};
pub use provider::{
    CredentialProviders, ProviderCall, ProviderConfig, ProviderError, ProviderFailure,
    ProviderOptions,
};
pub use secret::{PullSecret, SecretEntry};

/// Where a credential came from, for reports. Never holds a password or token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct CredentialSource {
    /// `pull secret <name> (<file or origin>)`, the path of a node file, or
    /// `credential helper docker-credential-<name> (<config file>)`.
    pub source: String,
    /// The key as written: an `auths` key such as `https://index.docker.io/v1/`, or
    /// `credHelpers["<host>"]` / `credsStore` for a helper; URL user info is redacted
    /// (`https://user:***@host`).
    pub key: String,
    /// The user name, when there is one.
    pub username: Option<String>,
}

/// A credential with its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResolvedCredential {
    /// What to send. [`Credential::Anonymous`] for a pull-secret entry without a user
    /// name (tried as an anonymous attempt, in its place in the order).
    pub credential: Credential,
    /// Where it came from.
    pub source: CredentialSource,
}

/// One step of the credential chain for an image, before helpers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialStep {
    /// A credential read from a pull secret or a node file.
    Credential(ResolvedCredential),
    /// A credential helper to run; it may answer with a credential or with none.
    Helper(HelperCall),
    /// A kubelet credential provider plugin to run (its `matchImages` matched); its
    /// answer's `auth` keys are matched to the image as keyring keys.
    Provider(ProviderCall),
}

impl CredentialStep {
    /// The source record of this step; for a helper, its user name is not known yet.
    pub fn source(&self) -> CredentialSource {
        match self {
            CredentialStep::Credential(c) => c.source.clone(),
            CredentialStep::Helper(call) => CredentialSource {
                source: call.describe(),
                key: call.key.clone(),
                username: None,
            },
            CredentialStep::Provider(call) => CredentialSource {
                source: format!("{} ({})", call.describe(), call.configured_in),
                key: format!("matchImages[{:?}]", call.match_image),
                username: None,
            },
        }
    }

    /// `basic`, `anonymous`, `identity_token`, `registry_token`, `helper` or
    /// `credential_provider`.
    pub fn kind(&self) -> &'static str {
        match self {
            CredentialStep::Credential(c) => credential_kind(&c.credential),
            CredentialStep::Helper(_) => "helper",
            CredentialStep::Provider(_) => "credential_provider",
        }
    }
}

/// `basic`, `anonymous`, `identity_token` or `registry_token`.
pub fn credential_kind(credential: &Credential) -> &'static str {
    match credential {
        Credential::Anonymous => "anonymous",
        Credential::Basic { .. } => "basic",
        Credential::IdentityToken(_) => "identity_token",
        Credential::RegistryToken(_) => "registry_token",
    }
}

/// Serialises as `{kind, source, key, username}`, plus `helper` and `server` (a helper
/// step's, else `null`); a provider step's `key` is `matchImages["<entry>"]`, the entry
/// that matched. Never the secret.
impl serde::Serialize for CredentialStep {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let source = self.source();
        let helper = match self {
            CredentialStep::Helper(call) => Some(call),
            CredentialStep::Credential(_) | CredentialStep::Provider(_) => None,
        };
        let mut s = serializer.serialize_struct("CredentialStep", 6)?;
        s.serialize_field("kind", self.kind())?;
        s.serialize_field("source", &source.source)?;
        s.serialize_field("key", &source.key)?;
        s.serialize_field("username", &source.username)?;
        s.serialize_field("helper", &helper.map(HelperCall::program))?;
        s.serialize_field("server", &helper.map(|c| c.server.as_str()))?;
        s.end()
    }
}

/// What [`CredentialChain::resolve_for`] found for an image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedFor {
    /// The credentials to try, in order.
    pub credentials: Vec<ResolvedCredential>,
    /// The credential providers whose `matchImages` matched but that failed.
    pub provider_failures: Vec<ProviderError>,
}

type HelperResult = Result<Option<HelperAnswer>, CredentialError>;
type HelperCache = Mutex<HashMap<(String, String), Arc<OnceCell<HelperResult>>>>;

/// The whole chain: pull secrets first, then the node.
///
/// Helper answers are cached per (helper, server) for the life of the chain, failures
/// included, so a slow or broken helper costs its timeout once.
#[derive(Debug)]
pub struct CredentialChain {
    /// The kubelet keyring over the Pod's pull secrets.
    pub pull_secrets: Keyring,
    /// The node's files and helpers.
    pub node: NodeCredentials,
    helper_cache: HelperCache,
}

impl CredentialChain {
    /// A chain over `pull_secrets` then `node`.
    pub fn new(pull_secrets: Keyring, node: NodeCredentials) -> CredentialChain {
        CredentialChain {
            pull_secrets,
            node,
            helper_cache: Mutex::new(HashMap::new()),
        }
    }

    /// The steps for `reference`, in order, without running any helper (for
    /// `pullcheck explain`): every pull-secret match ([`Keyring::lookup`]), then the
    /// node's ([`NodeCredentials::steps_for`]). Empty means an anonymous pull.
    pub fn explain_for(&self, reference: &Reference) -> Vec<CredentialStep> {
        let mut steps: Vec<CredentialStep> = self
            .pull_secrets
            .lookup(reference)
            .into_iter()
            .map(CredentialStep::Credential)
            .collect();
        steps.extend(self.node.steps_for(reference));
        steps
    }

    /// The credentials to try for `reference`, in order: pull-secret matches, then the
    /// node files' matches, then what the helpers answer (a helper with nothing for the
    /// server adds nothing), then what the credential provider plugins answer.
    ///
    /// The caller tries each in turn and the first success wins; when every one fails
    /// the pull fails (no anonymous retry, as the kubelet). An empty list means the
    /// pull is anonymous. A failing provider adds nothing here; [`Self::resolve_for`]
    /// also says which failed.
    ///
    /// # Errors
    /// [`CredentialError::Helper`] when a helper this image needs is missing, fails,
    /// hangs past its timeout or answers garbage.
    pub async fn credentials_for(
        &self,
        reference: &Reference,
    ) -> Result<Vec<ResolvedCredential>, CredentialError> {
        Ok(self.resolve_for(reference, None).await?.credentials)
    }

    /// [`Self::credentials_for`], with the providers that failed for this image (the
    /// kubelet logs them and goes on with the other credentials), and `deadline`
    /// bounding every provider run together with its own timeout.
    ///
    /// # Errors
    /// As [`Self::credentials_for`]; a provider's failure is never an error here.
    pub async fn resolve_for(
        &self,
        reference: &Reference,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<ResolvedFor, CredentialError> {
        let mut out = ResolvedFor::default();
        let mut calls = Vec::new();
        for step in self.explain_for(reference) {
            match step {
                CredentialStep::Credential(c) => out.credentials.push(c),
                CredentialStep::Helper(call) => {
                    if let Some(answer) = self.run_cached(&call).await? {
                        out.credentials.push(ResolvedCredential {
                            credential: answer.credential,
                            source: CredentialSource {
                                source: call.describe(),
                                key: call.key.clone(),
                                username: answer.username,
                            },
                        });
                    }
                }
                CredentialStep::Provider(call) => calls.push(call),
            }
        }
        if let (Some(providers), false) = (self.node.providers(), calls.is_empty()) {
            let (credentials, failures) = providers
                .credentials_for(&reference.repository(), &calls, deadline)
                .await;
            out.credentials.extend(credentials);
            out.provider_failures = failures;
        }
        Ok(out)
    }

    /// Everything skipped while building the chain (ignored secrets, keys that are not
    /// URLs), for the report's warnings.
    pub fn warnings(&self) -> Vec<String> {
        self.pull_secrets.warnings().to_vec()
    }

    async fn run_cached(&self, call: &HelperCall) -> HelperResult {
        let cell = {
            let mut cache = self
                .helper_cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(
                cache
                    .entry((call.helper.clone(), call.server.clone()))
                    .or_default(),
            )
        };
        cell.get_or_init(|| helper::run_helper(call, self.node.helper_options()))
            .await
            .clone()
    }
}
