//! Resolve: for each reference, the endpoints to ask (from the node's mirror
//! configuration, [`pullcheck_mirrors`]) and, on each, the credentials to ask with (the
//! kubelet's keyring and the node's files, [`pullcheck_credentials`]).
//!
//! No network. Credential helpers are the only processes run, and only by
//! [`resolve`].

pub mod endpoint;

use pullcheck_credentials::{CredentialChain, CredentialError, Keyring};
use pullcheck_mirrors::MirrorConfig;
use pullcheck_reference::Reference;

pub use endpoint::ResolvedEndpoint;
pub use pullcheck_credentials::{
    CredentialSource, CredentialStep, ProviderError, ProviderFailure, ResolvedCredential,
};

/// How endpoints are chosen: the mirror configuration plus `--insecure-registry`.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    /// The node's mirror configuration; [`MirrorConfig::none`] asks each image's own
    /// registry.
    pub mirrors: MirrorConfig,
    /// `--insecure-registry` values (`host` or `host:port`).
    pub insecure_registries: Vec<String>,
}

/// One place to ask about a reference, with the credentials to ask it with.
#[derive(Debug, Clone)]
pub struct Route {
    /// The endpoint and the rule that produced it.
    pub endpoint: ResolvedEndpoint,
    /// The repository path on that endpoint (a registries.conf `location` may rewrite it).
    pub repository: String,
    /// The rule that chose the credentials, in words (e.g. containerd sends pull-secret
    /// credentials to the image's own registry only).
    pub credential_rule: String,
    /// Credentials in the order they are tried; empty means anonymous. The first
    /// success wins, and anonymous is not tried after credentials fail.
    pub credentials: Vec<ResolvedCredential>,
    /// The kubelet credential provider plugins that matched this route's image but
    /// failed (their credentials are missing from `credentials`, as the kubelet goes on
    /// without them).
    pub provider_failures: Vec<ProviderError>,
}

/// Where to ask about one reference.
#[derive(Debug, Clone)]
pub enum Resolution {
    /// The configuration refuses the pull; no request is sent.
    Blocked {
        /// The rule that blocks it, naming the file and entry.
        rule: String,
    },
    /// The runtime would fail this pull without asking anything (e.g. a rewrite that
    /// gives an invalid reference).
    Unresolvable {
        /// The rule involved.
        rule: String,
        /// Why.
        reason: String,
    },
    /// The routes in the order the runtime tries them: mirrors, then the primary.
    Routes(Vec<Route>),
}

/// A route before its credentials are looked up.
#[derive(Debug, Clone)]
pub struct PlannedRoute {
    /// The endpoint.
    pub endpoint: ResolvedEndpoint,
    /// The repository path on that endpoint.
    pub repository: String,
    /// Whose credentials apply: the host to look up (`None`: anonymous), whether the
    /// pull secrets apply, and the rule in words.
    pub credentials: pullcheck_mirrors::CredentialRule,
}

impl Resolver {
    /// The endpoints for `reference`, in order, before credentials (pure).
    pub fn endpoints(&self, reference: &Reference) -> Result<Vec<PlannedRoute>, Resolution> {
        let mode = self.mirrors.mode();
        match self.mirrors.resolve(reference) {
            pullcheck_mirrors::Resolution::Blocked { rule } => Err(Resolution::Blocked { rule }),
            pullcheck_mirrors::Resolution::Unresolvable { rule, reason } => {
                Err(Resolution::Unresolvable { rule, reason })
            }
            pullcheck_mirrors::Resolution::Endpoints(list) => Ok(list
                .iter()
                // registries.conf: an endpoint under a blocked prefix is skipped, as
                // containers/image does per source.
                .filter(|e| e.blocked.is_none())
                .map(|e| PlannedRoute {
                    endpoint: endpoint::from_mirror(e, &self.insecure_registries, mode),
                    repository: e.repository.clone(),
                    credentials: e.credentials.clone(),
                })
                .collect()),
        }
    }
}

/// The credentials of one Pod (one set of pull secrets) plus the node's.
#[derive(Debug)]
pub struct Credentials {
    /// Pull secrets, then node files and helpers.
    pub chain: CredentialChain,
    /// Node files and helpers only, for endpoints that do not get the pull secrets.
    pub node_only: CredentialChain,
    /// containerd's `config.toml` per-host auth (`configs."HOST".auth`), from the node's
    /// credentials: in containerd mode, a route whose pull carries no credentials gets
    /// the entry of its own host, as the CRI plugin does.
    pub containerd: Option<pullcheck_credentials::ContainerdAuths>,
}

impl Credentials {
    /// Credentials over a keyring of pull secrets and the node's files.
    pub fn new(pull_secrets: Keyring, node: pullcheck_credentials::NodeCredentials) -> Self {
        Credentials {
            containerd: node.containerd_auths().cloned(),
            node_only: CredentialChain::new(Keyring::new(), node.clone()),
            chain: CredentialChain::new(pull_secrets, node),
        }
    }

    /// No pull secrets and no node files: everything is anonymous.
    pub fn anonymous() -> Self {
        Credentials::new(
            Keyring::new(),
            pullcheck_credentials::NodeCredentials::empty(),
        )
    }

    fn chain_for(&self, rule: &pullcheck_mirrors::CredentialRule) -> &CredentialChain {
        if rule.pull_secrets {
            &self.chain
        } else {
            &self.node_only
        }
    }

    /// The credential steps for one route, without running helpers (for `explain`):
    /// when there are none, containerd's `configs."HOST".auth` for the route's host.
    pub fn explain_route(&self, route: &PlannedRoute) -> Vec<CredentialStep> {
        let steps = match lookup_reference(route) {
            Some(r) => self.chain_for(&route.credentials).explain_for(&r),
            None => Vec::new(),
        };
        if steps.is_empty()
            && let Some(c) = self.containerd_for(route)
        {
            return vec![CredentialStep::Credential(c)];
        }
        steps
    }

    /// containerd `registryHosts` (`pkg/cri/server/image_pull.go`, 1.6.20): a pull
    /// without credentials uses `configs[host].auth` of the host contacted.
    fn containerd_for(&self, route: &PlannedRoute) -> Option<ResolvedCredential> {
        let auths = self.containerd.as_ref()?;
        auths.for_host(&route.endpoint.endpoint.host)
    }
}

/// The reference whose credentials a route uses: its lookup host plus its repository.
fn lookup_reference(route: &PlannedRoute) -> Option<Reference> {
    let host = route.credentials.lookup_host.as_deref()?;
    Reference::parse_normalized(&format!("{host}/{}", route.repository)).ok()
}

/// Resolves the routes for one reference, looking up each route's credentials (running
/// credential helpers where the configuration names them).
///
/// # Errors
/// [`CredentialError`] when a credential helper this image needs fails; the message
/// names the helper.
pub async fn resolve(
    reference: &Reference,
    resolver: &Resolver,
    credentials: &Credentials,
) -> Result<Resolution, CredentialError> {
    resolve_within(reference, resolver, credentials, None).await
}

/// [`resolve`], with every credential provider plugin run bounded by `deadline` as well
/// as by its own timeout.
///
/// # Errors
/// As [`resolve`].
pub async fn resolve_within(
    reference: &Reference,
    resolver: &Resolver,
    credentials: &Credentials,
    deadline: Option<tokio::time::Instant>,
) -> Result<Resolution, CredentialError> {
    let planned = match resolver.endpoints(reference) {
        Ok(p) => p,
        Err(resolution) => return Ok(resolution),
    };
    if planned.is_empty() {
        return Ok(Resolution::Blocked {
            rule: "every endpoint of this reference is blocked".into(),
        });
    }
    let mut routes = Vec::with_capacity(planned.len());
    for p in planned {
        let found = match lookup_reference(&p) {
            Some(r) => {
                credentials
                    .chain_for(&p.credentials)
                    .resolve_for(&r, deadline)
                    .await?
            }
            None => Default::default(),
        };
        let mut rule = p.credentials.rule.clone();
        let mut found_credentials = found.credentials;
        if found_credentials.is_empty()
            && resolver.mirrors.mode() == pullcheck_mirrors::Mode::Containerd
            && let Some(c) = credentials.containerd_for(&p)
        {
            rule = format!(
                "the pull carries no credentials, so containerd's CRI plugin sends {} {} to {}",
                c.source.source, c.source.key, p.endpoint.endpoint.host
            );
            found_credentials.push(c);
        }
        routes.push(Route {
            credential_rule: rule,
            endpoint: p.endpoint,
            repository: p.repository,
            credentials: found_credentials,
            provider_failures: found.provider_failures,
        });
    }
    Ok(Resolution::Routes(routes))
}
