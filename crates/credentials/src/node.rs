//! The node's credentials: Docker's `config.json` and containers' `auth.json`, found
//! where the tools look for them, plus the credential helpers they name.
//!
//! Locations:
//! - Docker: `--docker-config` (a file, or a directory holding `config.json`), else
//!   `$DOCKER_CONFIG/config.json`, else `$HOME/.docker/config.json`;
//! - containers: `--auth-file`, else `$REGISTRY_AUTH_FILE`, else
//!   `$XDG_RUNTIME_DIR/containers/auth.json`.
//!
//! A file named explicitly (by option) must exist; one found through the environment
//! or the defaults is skipped when it does not. A file that exists but does not parse
//! is always an error.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pullcheck_reference::Reference;

use crate::authfile::{AuthFile, AuthFileKind};
use crate::error::CredentialError;
use crate::helper::{HelperCall, HelperOptions};
use crate::provider::CredentialProviders;
use crate::{CredentialSource, CredentialStep, ResolvedCredential};

/// The environment variables that locate the files. Kept apart from the process
/// environment so that tests need not change it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeEnv {
    /// `$DOCKER_CONFIG`: the directory holding Docker's `config.json`.
    pub docker_config: Option<PathBuf>,
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$REGISTRY_AUTH_FILE`: containers' auth file.
    pub registry_auth_file: Option<PathBuf>,
    /// `$XDG_RUNTIME_DIR`.
    pub xdg_runtime_dir: Option<PathBuf>,
}

impl NodeEnv {
    /// Reads the variables from this process's environment; empty values count as
    /// unset.
    pub fn from_process() -> NodeEnv {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(|v: OsString| PathBuf::from(v))
        };
        NodeEnv {
            docker_config: var("DOCKER_CONFIG"),
            home: var("HOME"),
            registry_auth_file: var("REGISTRY_AUTH_FILE"),
            xdg_runtime_dir: var("XDG_RUNTIME_DIR"),
        }
    }
}

/// Where to find the node's files and how to run helpers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeOptions {
    /// `--docker-config`: Docker's `config.json`, or a directory holding it.
    pub docker_config: Option<PathBuf>,
    /// `--auth-file`: containers' `auth.json`.
    pub auth_file: Option<PathBuf>,
    /// The environment to locate default files with; [`NodeEnv::from_process`] for the
    /// real one.
    pub env: NodeEnv,
    /// How credential helpers are found and run.
    pub helpers: HelperOptions,
}

/// The node's credentials: at most one Docker config and one containers auth file,
/// and the kubelet's credential provider plugins (shared, with their cache, by every
/// clone).
#[derive(Debug, Clone, Default)]
pub struct NodeCredentials {
    docker: Option<AuthFile>,
    containers: Option<AuthFile>,
    helpers: HelperOptions,
    providers: Option<Arc<CredentialProviders>>,
    containerd: Option<Arc<crate::ContainerdAuths>>,
}

impl NodeCredentials {
    /// With containerd's `config.toml` per-host auth (`configs."HOST".auth`), which the
    /// CRI plugin sends to a contacted host only when the pull carries no credentials
    /// ([`crate::containerd`]); the resolver applies it in containerd mode.
    pub fn with_containerd_auths(mut self, auths: Arc<crate::ContainerdAuths>) -> NodeCredentials {
        self.containerd = Some(auths);
        self
    }

    /// containerd's `config.toml` per-host auth, when given.
    pub fn containerd_auths(&self) -> Option<&crate::ContainerdAuths> {
        self.containerd.as_deref()
    }

    /// No node credentials at all.
    pub fn empty() -> NodeCredentials {
        NodeCredentials::default()
    }

    /// Node credentials over files already parsed.
    pub fn from_files(
        docker: Option<AuthFile>,
        containers: Option<AuthFile>,
        helpers: HelperOptions,
    ) -> NodeCredentials {
        NodeCredentials {
            docker,
            containers,
            helpers,
            providers: None,
            containerd: None,
        }
    }

    /// These credentials with the kubelet's credential provider plugins after them.
    pub fn with_providers(mut self, providers: Arc<CredentialProviders>) -> NodeCredentials {
        self.providers = Some(providers);
        self
    }

    /// The credential provider plugins, when configured.
    pub fn providers(&self) -> Option<&CredentialProviders> {
        self.providers.as_deref()
    }

    /// Finds and parses the files (see the [module docs](self)).
    ///
    /// # Errors
    /// [`CredentialError::Read`] for an explicitly named file that cannot be read, or a
    /// found file that exists but cannot be read; [`CredentialError::AuthFile`] for a
    /// file that does not parse.
    pub fn load(options: &NodeOptions) -> Result<NodeCredentials, CredentialError> {
        let docker = match &options.docker_config {
            Some(path) => {
                let file = if path.is_dir() {
                    path.join("config.json")
                } else {
                    path.clone()
                };
                Some(AuthFile::load(&file, AuthFileKind::DockerConfig)?)
            }
            None => {
                let found = options
                    .env
                    .docker_config
                    .as_ref()
                    .map(|dir| dir.join("config.json"))
                    .or_else(|| {
                        options
                            .env
                            .home
                            .as_ref()
                            .map(|home| home.join(".docker").join("config.json"))
                    });
                load_if_present(found.as_deref(), AuthFileKind::DockerConfig)?
            }
        };
        let containers = match &options.auth_file {
            Some(path) => Some(AuthFile::load(path, AuthFileKind::ContainersAuth)?),
            None => {
                let found = options.env.registry_auth_file.clone().or_else(|| {
                    options
                        .env
                        .xdg_runtime_dir
                        .as_ref()
                        .map(|dir| dir.join("containers").join("auth.json"))
                });
                load_if_present(found.as_deref(), AuthFileKind::ContainersAuth)?
            }
        };
        Ok(NodeCredentials {
            docker,
            containers,
            helpers: options.helpers.clone(),
            providers: None,
            containerd: None,
        })
    }

    /// Docker's `config.json`, when one was found.
    pub fn docker_config(&self) -> Option<&AuthFile> {
        self.docker.as_ref()
    }

    /// containers' `auth.json`, when one was found.
    pub fn containers_auth(&self) -> Option<&AuthFile> {
        self.containers.as_ref()
    }

    /// How helpers are run.
    pub fn helper_options(&self) -> &HelperOptions {
        &self.helpers
    }

    /// The node's steps for `reference`, in order: the Docker config's entry, the
    /// containers auth file's entry, then the helpers they name (Docker's first; a
    /// helper named twice for the same server is run once), then the credential
    /// provider plugins whose `matchImages` match its repository (the kubelet's
    /// `UnionDockerKeyring` of its own config and the plugins). Nothing is run.
    pub fn steps_for(&self, reference: &Reference) -> Vec<CredentialStep> {
        let mut steps = Vec::new();
        for file in [&self.docker, &self.containers].into_iter().flatten() {
            let Some(entry) = file.lookup(reference) else {
                continue;
            };
            let Some(credential) = &entry.credential else {
                continue;
            };
            steps.push(CredentialStep::Credential(ResolvedCredential {
                credential: credential.clone(),
                source: CredentialSource {
                    source: file.path().display().to_string(),
                    key: pullcheck_mirrors::url::redact_userinfo(&entry.key).into_owned(),
                    username: entry.username.clone(),
                },
            }));
        }
        let mut calls: Vec<HelperCall> = Vec::new();
        for file in [&self.docker, &self.containers].into_iter().flatten() {
            if let Some(call) = file.helper_for(reference)
                && !calls
                    .iter()
                    .any(|c| c.helper == call.helper && c.server == call.server)
            {
                calls.push(call);
            }
        }
        steps.extend(calls.into_iter().map(CredentialStep::Helper));
        if let Some(providers) = &self.providers {
            steps.extend(
                providers
                    .calls_for(&reference.repository())
                    .into_iter()
                    .map(CredentialStep::Provider),
            );
        }
        steps
    }
}

fn load_if_present(
    path: Option<&Path>,
    kind: AuthFileKind,
) -> Result<Option<AuthFile>, CredentialError> {
    let Some(path) = path else {
        return Ok(None);
    };
    if !path.exists() {
        return Ok(None);
    }
    AuthFile::load(path, kind).map(Some)
}
