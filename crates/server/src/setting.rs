//! The service's settings as data: every message of `pullcheck serve` that names one of
//! its settings (a limit a request went over, a file that cannot be used, a setting that
//! needs another) carries a [`ServeSetting`], and the front end that starts the service
//! names it ([`crate::ServeOptions::setting_name`]: the CLI by its flag). This crate names
//! no flag: without a front end, a setting is its snake_case name ([`ServeSetting::as_str`]).

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// A setting of [`crate::ServeOptions`] that a message names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServeSetting {
    /// [`crate::ServeOptions::max_body`].
    MaxBody,
    /// [`crate::ServeOptions::max_checks`].
    MaxChecks,
    /// [`crate::ServeOptions::max_body_reads`].
    MaxBodyReads,
    /// [`crate::ServeOptions::max_parses`].
    MaxParses,
    /// [`crate::ServeOptions::max_connections`].
    MaxConnections,
    /// [`crate::ServeOptions::max_images`].
    MaxImages,
    /// [`crate::ServeOptions::header_read_timeout`].
    HeaderReadTimeout,
    /// [`crate::ServeOptions::body_read_timeout`].
    BodyReadTimeout,
    /// [`crate::ServeOptions::idle_timeout`].
    IdleTimeout,
    /// [`crate::ServeOptions::http2_keep_alive_interval`].
    Http2KeepAliveInterval,
    /// [`crate::ServeOptions::shutdown_grace`].
    ShutdownGrace,
    /// [`crate::ServeOptions::api_token_file`].
    ApiTokenFile,
    /// [`crate::ServeOptions::allow_namespaces`].
    AllowNamespace,
    /// [`crate::ServeOptions::tls`]: the certificate and key files.
    Tls,
    /// [`crate::ServeOptions::insecure_listen`].
    InsecureListen,
    /// [`crate::ServeOptions::placeholder_image`].
    PlaceholderImage,
    /// [`crate::ServeOptions::cache_present`].
    CachePresent,
    /// [`crate::ServeOptions::cluster`]: the kubeconfig and its context.
    Kubeconfig,
    /// [`crate::ServeOptions::admission`]: the webhook at all.
    Admission,
    /// [`crate::admission::AdmissionOptions::exempt_images`].
    AdmissionExemptImage,
    /// [`crate::admission::AdmissionOptions::client_ca`].
    AdmissionClientCa,
    /// [`crate::admission::AdmissionOptions::max_body`].
    AdmissionMaxBody,
    /// [`crate::admission::AdmissionOptions::max_reviews`].
    AdmissionMaxReviews,
    /// [`crate::admission::AdmissionOptions::max_containers`].
    AdmissionMaxContainers,
    /// The registry client's CA file ([`pullcheck::registry::ClientOptions`]).
    CaFile,
    /// The registry client's `certs.d` directory.
    CertsDir,
    /// The registries asked over unverified TLS or plain HTTP ([`crate::ServeOptions::resolver`]).
    InsecureRegistry,
    /// The node's Docker config ([`crate::ServeOptions::node`]).
    DockerConfig,
}

impl ServeSetting {
    /// The snake_case name (`max_images`), as JSON errors carry it in `setting` and as
    /// [`plain_setting_name`] words it.
    pub fn as_str(self) -> &'static str {
        match self {
            ServeSetting::MaxBody => "max_body",
            ServeSetting::MaxChecks => "max_checks",
            ServeSetting::MaxBodyReads => "max_body_reads",
            ServeSetting::MaxParses => "max_parses",
            ServeSetting::MaxConnections => "max_connections",
            ServeSetting::MaxImages => "max_images",
            ServeSetting::HeaderReadTimeout => "header_read_timeout",
            ServeSetting::BodyReadTimeout => "body_read_timeout",
            ServeSetting::IdleTimeout => "idle_timeout",
            ServeSetting::Http2KeepAliveInterval => "http2_keep_alive_interval",
            ServeSetting::ShutdownGrace => "shutdown_grace",
            ServeSetting::ApiTokenFile => "api_token_file",
            ServeSetting::AllowNamespace => "allow_namespace",
            ServeSetting::Tls => "tls",
            ServeSetting::InsecureListen => "insecure_listen",
            ServeSetting::PlaceholderImage => "placeholder_image",
            ServeSetting::CachePresent => "cache_present",
            ServeSetting::Kubeconfig => "kubeconfig",
            ServeSetting::Admission => "admission",
            ServeSetting::AdmissionExemptImage => "admission_exempt_image",
            ServeSetting::AdmissionClientCa => "admission_client_ca",
            ServeSetting::AdmissionMaxBody => "admission_max_body",
            ServeSetting::AdmissionMaxReviews => "admission_max_reviews",
            ServeSetting::AdmissionMaxContainers => "admission_max_containers",
            ServeSetting::CaFile => "ca_file",
            ServeSetting::CertsDir => "certs_dir",
            ServeSetting::InsecureRegistry => "insecure_registry",
            ServeSetting::DockerConfig => "docker_config",
        }
    }
}

impl fmt::Display for ServeSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The names of [`ServeSetting`]s without a front end: [`ServeSetting::as_str`];
/// [`crate::ServeOptions`]'s default.
pub fn plain_setting_name(setting: ServeSetting) -> &'static str {
    setting.as_str()
}

/// Why the service's configuration cannot be used ([`crate::ServeError::Config`]), as
/// facts: the setting at fault and what is wrong with it. [`ConfigError::words`] words it
/// with the front end's names of the settings; `Display` with [`plain_setting_name`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The admission webhook without TLS: the Kubernetes API server calls webhooks over
    /// HTTPS only.
    AdmissionNeedsTls,
    /// A setting given empty that must hold a value (the placeholder image).
    Empty(ServeSetting),
    /// A non-loopback address without these protections (the token file, TLS), and
    /// [`ServeSetting::InsecureListen`] not given.
    Exposed {
        /// The address.
        listen: SocketAddr,
        /// What is missing, in order.
        missing: Vec<ServeSetting>,
    },
    /// A count that must be at least 1 is 0.
    Zero(ServeSetting),
    /// A duration that must be longer than 0 is 0.
    ZeroDuration(ServeSetting),
    /// A file the setting names cannot be used: its path(s) and what is wrong.
    File {
        /// The setting.
        setting: ServeSetting,
        /// The file (two for TLS: certificate and key); empty when `message` names it.
        paths: Vec<PathBuf>,
        /// What is wrong, without the paths.
        message: String,
    },
    /// A pattern the setting was given is not valid (a glob, a namespace pattern, a
    /// reference).
    Pattern {
        /// The setting.
        setting: ServeSetting,
        /// The pattern as given; `None`: the patterns together.
        pattern: Option<String>,
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    /// The error in words, each setting named by `name` (the CLI: its flag).
    pub fn words(&self, name: impl Fn(ServeSetting) -> String) -> String {
        match self {
            ConfigError::AdmissionNeedsTls => format!(
                "{} needs {}: the Kubernetes API server calls admission webhooks over HTTPS \
                 only",
                name(ServeSetting::Admission),
                name(ServeSetting::Tls)
            ),
            ConfigError::Empty(setting) => {
                format!("{} is empty; expected an image reference", name(*setting))
            }
            ConfigError::Exposed { listen, missing } => {
                let missing: Vec<String> = missing.iter().map(|s| name(*s)).collect();
                format!(
                    "refusing to listen on {listen} (not loopback) without {}: anyone who \
                     reaches it could use this service's registry credentials; give them, or \
                     {}",
                    missing.join(" and "),
                    name(ServeSetting::InsecureListen)
                )
            }
            ConfigError::Zero(setting) => format!("{} must be at least 1", name(*setting)),
            ConfigError::ZeroDuration(setting) => {
                format!("{} must be longer than 0", name(*setting))
            }
            ConfigError::File {
                setting,
                paths,
                message,
            } => {
                let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                if paths.is_empty() {
                    format!("{}: {message}", name(*setting))
                } else {
                    format!("{} {}: {message}", name(*setting), paths.join(" and "))
                }
            }
            ConfigError::Pattern {
                setting,
                pattern: Some(pattern),
                message,
            } => format!("{} {pattern:?}: {message}", name(*setting)),
            ConfigError::Pattern {
                setting,
                pattern: None,
                message,
            } => format!("{}: {message}", name(*setting)),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.words(|s| plain_setting_name(s).to_owned()))
    }
}

impl std::error::Error for ConfigError {}
