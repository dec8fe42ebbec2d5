//! The node's mirror configuration, parsed and resolved: for an image reference, the
//! ordered endpoints the node's container runtime would ask, each with the rule that
//! put it there and the credentials it would get.
//!
//! Three formats, one per runtime family:
//! - [`registries_conf`]: containers-registries.conf v2 with `registries.conf.d`
//!   drop-ins (CRI-O, podman; containers/image `pkg/sysregistriesv2`);
//! - [`hosts_toml`]: containerd's `hosts.toml` directory (`config_path`, `certs.d`), and
//!   [`containerd_config`]: containerd's `config.toml`, whose CRI `registry` section names
//!   that directory or holds the deprecated `mirrors` and `configs.*.tls`;
//! - [`docker_daemon`]: the Docker daemon's `daemon.json` `registry-mirrors` and
//!   `insecure-registries`.
//!
//! ```
//! use pullcheck_mirrors::{MirrorConfig, Resolution};
//! use pullcheck_mirrors::registries_conf::RegistriesConf;
//! use pullcheck_reference::Reference;
//!
//! let conf = RegistriesConf::parse("registries.conf", r#"
//! [[registry]]
//! prefix = "docker.io"
//! location = "docker.io"
//! [[registry.mirror]]
//! location = "mirror.example.com/hub"
//! "#).unwrap();
//! let config = MirrorConfig::from_registries_conf(conf);
//! let Resolution::Endpoints(endpoints) = config.resolve(&Reference::parse_normalized("alpine:3.20").unwrap())
//! else { unreachable!() };
//! assert_eq!(endpoints[0].manifest_url(), "https://mirror.example.com/v2/hub/library/alpine/manifests/3.20");
//! assert_eq!(endpoints[1].manifest_url(), "https://registry-1.docker.io/v2/library/alpine/manifests/3.20");
//! ```
//!
//! **Invariants:** loading reads files; [`MirrorConfig::resolve`] is pure and does no IO.
//! No file content makes anything panic (the parsers are fuzzed: `fuzz/`).

#![warn(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pullcheck_reference::Reference;

pub mod containerd_config;
pub mod docker_daemon;
mod duration;
mod endpoint;
mod error;
pub mod hosts_toml;
mod redact;
pub mod registries_conf;
mod text;
pub mod url;
mod version;

pub use endpoint::{ClientCert, CredentialRule, Endpoint, Mode, Resolution};
pub use error::MirrorError;
pub use text::MAX_CONFIG_BYTES;
pub use url::DOCKER_HUB_API_HOST;
pub use version::{Releases, VersionWarning, VersionWarningKind};

use containerd_config::ContainerdConfig;
use docker_daemon::DaemonConfig;
use hosts_toml::HostsDir;
use registries_conf::RegistriesConf;

/// A node profile for `--node-config`: which runtime's standard files to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeProfile {
    /// CRI-O: `/etc/containers/registries.conf` and `/etc/containers/registries.conf.d/`.
    Crio,
    /// containerd: `/etc/containerd/config.toml` (its CRI `registry` section) when
    /// present, else `/etc/containerd/certs.d/`.
    Containerd,
    /// Docker (with cri-dockerd): `/etc/docker/daemon.json`.
    Docker,
}

impl NodeProfile {
    /// The profile name: `crio`, `containerd` or `docker`.
    pub fn name(self) -> &'static str {
        match self {
            NodeProfile::Crio => "crio",
            NodeProfile::Containerd => "containerd",
            NodeProfile::Docker => "docker",
        }
    }

    /// The standard absolute paths this profile reads.
    pub fn paths(self) -> &'static [&'static str] {
        match self {
            NodeProfile::Crio => &[
                "/etc/containers/registries.conf",
                "/etc/containers/registries.conf.d",
            ],
            NodeProfile::Containerd => &["/etc/containerd/config.toml", "/etc/containerd/certs.d"],
            NodeProfile::Docker => &["/etc/docker/daemon.json"],
        }
    }
}

impl FromStr for NodeProfile {
    type Err = MirrorError;

    /// `crio` (or `cri-o`), `containerd`, `docker`; case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "crio" | "cri-o" => Ok(NodeProfile::Crio),
            "containerd" => Ok(NodeProfile::Containerd),
            "docker" => Ok(NodeProfile::Docker),
            _ => Err(MirrorError::UnknownProfile(s.to_owned())),
        }
    }
}

impl fmt::Display for NodeProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Direct,
    RegistriesConf(RegistriesConf),
    Containerd(HostsDir),
    ContainerdCri(ContainerdConfig),
    Docker(DaemonConfig),
}

/// A mirror configuration in one of the supported formats, or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorConfig {
    source: Source,
    notes: Vec<String>,
    /// The containerd `config.toml` this configuration came from, parsed once: its
    /// `configs.*.auth` are the node's containerd credentials.
    containerd: Option<std::sync::Arc<ContainerdConfig>>,
}

impl Default for MirrorConfig {
    fn default() -> Self {
        MirrorConfig::none()
    }
}

/// `root` + an absolute path (for tests and chroots); the path itself without a root.
fn rooted(root: Option<&Path>, abs: &str) -> PathBuf {
    match root {
        Some(r) => r.join(abs.trim_start_matches('/')),
        None => PathBuf::from(abs),
    }
}

impl MirrorConfig {
    /// No mirror configuration: each image at its own registry.
    pub fn none() -> MirrorConfig {
        MirrorConfig {
            source: Source::Direct,
            notes: Vec::new(),
            containerd: None,
        }
    }

    /// Wraps a parsed registries.conf (CRI-O mode).
    pub fn from_registries_conf(conf: RegistriesConf) -> MirrorConfig {
        MirrorConfig {
            source: Source::RegistriesConf(conf),
            notes: Vec::new(),
            containerd: None,
        }
    }

    /// Wraps a containerd host directory (containerd mode).
    pub fn from_hosts_dir(dir: HostsDir) -> MirrorConfig {
        MirrorConfig {
            source: Source::Containerd(dir),
            notes: Vec::new(),
            containerd: None,
        }
    }

    /// Wraps a parsed `daemon.json` (Docker mode).
    pub fn from_docker_daemon(config: DaemonConfig) -> MirrorConfig {
        MirrorConfig {
            source: Source::Docker(config),
            notes: Vec::new(),
            containerd: None,
        }
    }

    /// `--registries-conf PATH`: `PATH` (which must exist) and the `registries.conf.d`
    /// directory beside it.
    ///
    /// # Errors
    /// As [`RegistriesConf::load`].
    pub fn load_registries_conf(path: &Path) -> Result<MirrorConfig, MirrorError> {
        let dir = path.with_file_name("registries.conf.d");
        Ok(Self::from_registries_conf(RegistriesConf::load(
            path,
            Some(&dir),
        )?))
    }

    /// `--hosts-dir DIR`: containerd's host configuration directory (must exist).
    ///
    /// # Errors
    /// As [`HostsDir::load`].
    pub fn load_hosts_dir(dir: &Path) -> Result<MirrorConfig, MirrorError> {
        Ok(Self::from_hosts_dir(HostsDir::load(dir)?))
    }

    /// `--containerd-config PATH`: containerd's `config.toml` (must exist), applied as
    /// containerd 1.6's CRI plugin does ([`containerd_config`]): its `config_path` is
    /// the hosts directory (the first of a `:`-list, with a warning for the others; a
    /// directory that does not exist is an empty one, as containerd finds no host
    /// directory there), else its `mirrors` and `configs.*.tls`. The `configs.*.auth`
    /// credentials are `pullcheck-credentials`' `ContainerdAuths`, made from the same
    /// parse ([`MirrorConfig::containerd_config`]).
    ///
    /// # Errors
    /// As [`ContainerdConfig::load`] and [`HostsDir::load`].
    pub fn load_containerd_config(path: &Path) -> Result<MirrorConfig, MirrorError> {
        Self::containerd_config_under(path, None)
    }

    fn containerd_config_under(
        path: &Path,
        root: Option<&Path>,
    ) -> Result<MirrorConfig, MirrorError> {
        let conf = std::sync::Arc::new(ContainerdConfig::load(path)?);
        let Some((first, rest)) = conf.config_path().split_first() else {
            return Ok(MirrorConfig {
                source: Source::ContainerdCri((*conf).clone()),
                notes: Vec::new(),
                containerd: Some(conf),
            });
        };
        let dir = match first.to_str() {
            Some(abs) if first.is_absolute() => rooted(root, abs),
            _ => first.clone(),
        };
        let mut c = if dir.exists() {
            Self::from_hosts_dir(HostsDir::load(&dir)?)
        } else {
            Self::from_hosts_dir(HostsDir::new(&dir))
        };
        if !rest.is_empty() {
            c.notes.push(format!(
                "{}: config_path lists {} directories; only {} is read here, while containerd \
                 takes each host from the first directory that has it",
                conf.file(),
                rest.len() + 1,
                dir.display()
            ));
        }
        c.containerd = Some(conf);
        Ok(c)
    }

    /// The containerd `config.toml` read by [`MirrorConfig::load_containerd_config`] (or
    /// the containerd node profile's), whichever way its mirrors apply; `None` for every
    /// other source.
    pub fn containerd_config(&self) -> Option<&ContainerdConfig> {
        self.containerd.as_deref()
    }

    /// `--docker-daemon-config PATH`: a `daemon.json` (must exist).
    ///
    /// # Errors
    /// As [`DaemonConfig::load`].
    pub fn load_docker_daemon(path: &Path) -> Result<MirrorConfig, MirrorError> {
        Ok(Self::from_docker_daemon(DaemonConfig::load(path)?))
    }

    /// `--node-config PROFILE`: the profile's standard files under `root` (`None`: the
    /// real `/`). Missing files mean the runtime's defaults, as on a node without them:
    /// no registries.conf is an empty one, no `certs.d` or `daemon.json` is no mirrors.
    /// Each missing file gives a [`MirrorConfig::warnings`] sentence naming the profile,
    /// the paths not found and what applies instead, e.g. `node profile crio: neither
    /// /etc/containers/registries.conf nor any /etc/containers/registries.conf.d/*.conf was
    /// found, so CRI-O's defaults apply: every image is pulled from its own registry, with
    /// no mirrors and nothing blocked`.
    ///
    /// # Errors
    /// As the loader of the profile's format, for files that exist but are unreadable
    /// or invalid.
    pub fn from_node_profile(
        profile: NodeProfile,
        root: Option<&Path>,
    ) -> Result<MirrorConfig, MirrorError> {
        let config = match profile {
            NodeProfile::Crio => {
                let main = rooted(root, "/etc/containers/registries.conf");
                let dir = rooted(root, "/etc/containers/registries.conf.d");
                let conf = RegistriesConf::load_system(&main, Some(&dir))?;
                let main_found = main.exists();
                let drop_ins = conf.files().len() - usize::from(main_found);
                let mut c = Self::from_registries_conf(conf);
                let (main, dir) = (main.display(), dir.display());
                match (main_found, drop_ins) {
                    (true, _) => {}
                    (false, 0) => c.notes.push(format!(
                        "node profile crio: neither {main} nor any {dir}/*.conf was found, so \
                         CRI-O's defaults apply: every image is pulled from its own registry, \
                         with no mirrors and nothing blocked"
                    )),
                    (false, n) => c.notes.push(format!(
                        "node profile crio: {main} was not found, so only the {n} drop-in \
                         file(s) in {dir} apply"
                    )),
                }
                c
            }
            NodeProfile::Containerd => {
                let config = rooted(root, "/etc/containerd/config.toml");
                let dir = rooted(root, "/etc/containerd/certs.d");
                if config.exists() {
                    Self::containerd_config_under(&config, root)?
                } else if dir.exists() {
                    let mut c = Self::from_hosts_dir(HostsDir::load(&dir)?);
                    c.notes.push(format!(
                        "node profile containerd: {} was not found, so {} is read as the hosts \
                         directory, as a config_path naming it would be; containerd 1.6's CRI \
                         plugin reads it only when config.toml's config_path names it",
                        config.display(),
                        dir.display()
                    ));
                    c
                } else {
                    let mut c = Self::from_hosts_dir(HostsDir::new(&dir));
                    c.notes.push(format!(
                        "node profile containerd: {} was not found, so containerd's default \
                         applies: every image is pulled from its own registry over HTTPS, with \
                         no mirrors",
                        dir.display()
                    ));
                    c
                }
            }
            NodeProfile::Docker => {
                let path = rooted(root, "/etc/docker/daemon.json");
                if path.exists() {
                    Self::load_docker_daemon(&path)?
                } else {
                    let mut c = Self::from_docker_daemon(DaemonConfig::parse(
                        &path.display().to_string(),
                        "{}",
                    )?);
                    c.notes.push(format!(
                        "node profile docker: {} was not found, so the Docker daemon's \
                         defaults apply: no registry mirrors, and only loopback registries \
                         are insecure",
                        path.display()
                    ));
                    c
                }
            }
        };
        Ok(config)
    }

    /// Which runtime's rules apply.
    pub fn mode(&self) -> Mode {
        match self.source {
            Source::Direct => Mode::Direct,
            Source::RegistriesConf(_) => Mode::RegistriesConf,
            Source::Containerd(_) | Source::ContainerdCri(_) => Mode::Containerd,
            Source::Docker(_) => Mode::Docker,
        }
    }

    /// One line: the mode, where its configuration came from, and how it resolves.
    pub fn describe(&self) -> String {
        let from = match &self.source {
            Source::Direct => String::new(),
            Source::RegistriesConf(c) if c.files().is_empty() => " (no files)".to_owned(),
            Source::RegistriesConf(c) => format!(" ({})", c.files().join(", ")),
            Source::Containerd(d) => format!(" ({})", d.root().display()),
            Source::ContainerdCri(c) => format!(" ({}, no config_path)", c.file()),
            Source::Docker(d) => format!(" ({})", d.file()),
        };
        format!("{}{from}: {}", self.mode(), self.mode().describe())
    }

    /// Things worth showing with the configuration, each a full sentence: a node
    /// profile's files that were not found (and what applies instead), problems the
    /// runtime works around (a containerd `hosts.toml` it ignores), and registries.conf
    /// entries that can never match (see [`RegistriesConf::warnings`]).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = self.notes.clone();
        match &self.source {
            Source::Containerd(d) => w.extend(d.warnings().iter().cloned()),
            Source::RegistriesConf(c) => w.extend(c.warnings()),
            Source::Direct | Source::Docker(_) | Source::ContainerdCri(_) => {}
        }
        w
    }

    /// Where the node's runtime release would read this configuration differently from
    /// the release pullcheck models (a containerd `hosts.toml` without a `[host]`
    /// table), as data for the report.
    pub fn version_warnings(&self) -> &[VersionWarning] {
        match &self.source {
            Source::Containerd(d) => d.version_warnings(),
            _ => &[],
        }
    }

    /// The endpoints the runtime asks for `reference`, in order, or why it asks none.
    /// Pure: no IO.
    pub fn resolve(&self, reference: &Reference) -> Resolution {
        match &self.source {
            Source::Direct => direct(reference),
            Source::RegistriesConf(c) => c.resolve(reference),
            Source::Containerd(d) => d.resolve(reference),
            Source::ContainerdCri(c) => c.resolve(reference),
            Source::Docker(d) => d.resolve(reference),
        }
    }
}

/// No configuration: the image's own registry over HTTPS (`docker.io` at
/// `registry-1.docker.io`).
fn direct(reference: &Reference) -> Resolution {
    let domain = reference.domain();
    if domain.is_empty() {
        return Resolution::Unresolvable {
            rule: "no mirror configuration".to_owned(),
            reason: "the reference names no registry host".to_owned(),
        };
    }
    let host = url::api_host(domain).to_owned();
    let rule = if host == domain {
        "no mirror configuration: the image's own registry".to_owned()
    } else {
        format!("no mirror configuration: the image's own registry ({domain} is served by {host})")
    };
    Resolution::Endpoints(vec![Endpoint {
        url: format!("https://{host}/v2/"),
        host,
        repository: reference.path().to_owned(),
        reference: reference.manifest_reference().to_owned(),
        http_fallback: false,
        skip_verify: false,
        ca: Vec::new(),
        client_certs: Vec::new(),
        headers: Vec::new(),
        query: Vec::new(),
        is_mirror: false,
        blocked: None,
        proxy: None,
        over_tls_warning: None,
        over_plain_http_warning: None,
        rule,
        credentials: CredentialRule {
            lookup_host: Some(domain.to_owned()),
            pull_secrets: true,
            rule: format!("the credentials for {domain}"),
        },
    }])
}
