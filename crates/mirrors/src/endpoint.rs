//! What resolution produces: the ordered endpoints a runtime asks for one reference,
//! each with the rule that put it there and the credentials it would get.

use std::fmt;
use std::path::PathBuf;

/// Which runtime's mirror rules a [`crate::MirrorConfig`] follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// No mirror configuration: each image is asked at its own registry.
    Direct,
    /// containers-registries.conf v2 (CRI-O, podman, skopeo; containers/image
    /// `pkg/sysregistriesv2`).
    RegistriesConf,
    /// containerd's `hosts.toml` directory layout (`config_path`, `certs.d`).
    Containerd,
    /// The Docker daemon's `daemon.json` (`registry-mirrors`, `insecure-registries`).
    Docker,
}

impl Mode {
    /// The short name used on the command line and in reports: `direct`, `crio`,
    /// `containerd`, `docker`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::RegistriesConf => "crio",
            Mode::Containerd => "containerd",
            Mode::Docker => "docker",
        }
    }

    /// One line saying how this mode picks endpoints and credentials, for `explain`
    /// and the documentation.
    pub fn describe(self) -> &'static str {
        match self {
            Mode::Direct => {
                "no mirror configuration: every image is asked at its own registry \
                 (docker.io at registry-1.docker.io), with the pull secrets for that registry"
            }
            Mode::RegistriesConf => {
                "registries.conf (CRI-O, podman): the [[registry]] with the longest matching \
                 prefix; its mirrors in file order (filtered by pull-from-mirror and \
                 mirror-by-digest-only), then its location, each with the reference rewritten \
                 as location + rest; a blocked registry refuses the pull; pull secrets are sent \
                 only to endpoints on the image's own domain, others use the credentials of \
                 their own host"
            }
            Mode::Containerd => {
                "containerd hosts.toml: <dir>/<host>/hosts.toml (host_port_, host:port, then \
                 _default); [host.\"…\"] entries in file order, then server; a tag needs the \
                 pull and resolve capabilities, a digest pull; mirrors are asked with \
                 ?ns=<registry>; the pull secrets matched by the image's own registry are sent to \
                 every host, mirrors included (CRI ParseAuth); a secret keyed for a mirror's \
                 host is not used (containerd issue 10996)"
            }
            Mode::Docker => {
                "Docker daemon.json: Docker Hub images try each registry-mirrors entry in order, \
                 then registry-1.docker.io; other registries are asked directly, over HTTP too \
                 when listed in insecure-registries; the Hub credentials are sent to the mirrors \
                 as well"
            }
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which credentials an endpoint gets, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRule {
    /// The registry host whose credentials are looked up for this endpoint
    /// (`host[:port]`, e.g. `docker.io`, `mirror.example.com:5000`), or `None` when the
    /// runtime sends none here and asks anonymously.
    pub lookup_host: Option<String>,
    /// Whether the credentials the kubelet passes with the pull (the pod's pull secrets,
    /// matched against the image's own registry) are sent to this endpoint. When false
    /// but [`CredentialRule::lookup_host`] is set, only the node's own credentials for
    /// that host apply (CRI-O reads its auth files for a mirror).
    pub pull_secrets: bool,
    /// The rule in words, naming its upstream source.
    pub rule: String,
}

/// A TLS client certificate and its key (`None`: the key is in the certificate file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    /// The certificate file.
    pub cert: PathBuf,
    /// The key file, when separate.
    pub key: Option<PathBuf>,
}

/// One place a runtime asks for a manifest, in the order it asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The API base, always ending in `/`: scheme, `host[:port]` and the API path,
    /// e.g. `https://mirror.example.com/v2/`, or with containerd's `override_path` the
    /// configured path as is (`https://h/v2/namespaceprefix/`). The scheme is the one
    /// tried first.
    pub url: String,
    /// `host[:port]` of [`Endpoint::url`].
    pub host: String,
    /// The repository path to ask for on this endpoint, e.g. `library/alpine`; rewritten
    /// by a registries.conf `location`.
    pub repository: String,
    /// The tag or digest to ask for (the digest when the reference has one).
    pub reference: String,
    /// Whether plain HTTP is tried when HTTPS fails (registries.conf `insecure`,
    /// containerd's `http://` host with a TLS setting, Docker `insecure-registries`).
    pub http_fallback: bool,
    /// Whether the server's TLS certificate is not verified.
    pub skip_verify: bool,
    /// Extra CA certificate files to trust (containerd `ca`, or `*.crt` files in a host
    /// directory without `hosts.toml`).
    pub ca: Vec<PathBuf>,
    /// TLS client certificates (containerd `client`, or `*.cert`/`*.key` files).
    pub client_certs: Vec<ClientCert>,
    /// Extra request headers (containerd `[header]`), in file order per host.
    pub headers: Vec<(String, String)>,
    /// Extra query parameters: containerd adds `ns=<original registry>` when asking a
    /// host other than the image's own.
    pub query: Vec<(String, String)>,
    /// Whether this is a mirror rather than the image's own registry (or its
    /// registries.conf `location`, or containerd's `server`).
    pub is_mirror: bool,
    /// registries.conf: set when this endpoint's rewritten reference falls under a
    /// `blocked = true` registry. containers/image checks `blocked` per endpoint, so the
    /// runtime skips this one (with that error) and goes on to the next.
    pub blocked: Option<String>,
    /// registries.conf `proxy`: the forwarding proxy URL for this endpoint.
    pub proxy: Option<String>,
    /// When an answer over HTTPS from this endpoint is one some releases of the runtime
    /// would not get (containerd's default host of a loopback registry, which older
    /// releases ask over plain HTTP only): the warning for the report.
    pub over_tls_warning: Option<crate::VersionWarning>,
    /// When an answer over plain HTTP from this endpoint is one some releases of the
    /// runtime would not get (containerd's default host of a loopback registry, which
    /// releases before 1.6.9 ask over HTTPS only): the warning for the report.
    pub over_plain_http_warning: Option<crate::VersionWarning>,
    /// Why this endpoint is here, naming the file and entry, e.g.
    /// `registries.conf /etc/containers/registries.conf:3 [[registry]] #1 prefix="docker.io" mirror 1`.
    pub rule: String,
    /// Which credentials this endpoint gets.
    pub credentials: CredentialRule,
}

impl Endpoint {
    /// The full manifest URL: `url + repository + "/manifests/" + reference`, with
    /// [`Endpoint::query`] appended.
    pub fn manifest_url(&self) -> String {
        let mut s = format!(
            "{}{}/manifests/{}",
            self.url, self.repository, self.reference
        );
        for (i, (k, v)) in self.query.iter().enumerate() {
            s.push(if i == 0 { '?' } else { '&' });
            s.push_str(&query_escape(k));
            s.push('=');
            s.push_str(&query_escape(v));
        }
        s
    }

    /// Whether anything weakens transport security here: an `http://` URL, HTTP
    /// fallback, or TLS without verification.
    pub fn insecure(&self) -> bool {
        self.url.starts_with("http://") || self.http_fallback || self.skip_verify
    }
}

/// Percent-encodes a query key or value as Go's `url.QueryEscape` does (space as `+`).
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// What a runtime does with one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Ask these endpoints in order; the first that serves the manifest wins. Never empty,
    /// and never all [`Endpoint::blocked`].
    Endpoints(Vec<Endpoint>),
    /// The runtime refuses the pull without asking anything: every endpoint falls under a
    /// `blocked = true` registry.
    Blocked {
        /// The file and entry that block it.
        rule: String,
    },
    /// The runtime fails the pull without asking anything, for a reason other than
    /// `blocked`: a registries.conf rewrite gives an invalid reference, containerd has
    /// no host with the needed capability, or the host directory is unusable.
    Unresolvable {
        /// The file and entry responsible.
        rule: String,
        /// What the runtime would say.
        reason: String,
    },
}

impl Resolution {
    /// The endpoints, or an empty slice when blocked or unresolvable.
    pub fn endpoints(&self) -> &[Endpoint] {
        match self {
            Resolution::Endpoints(e) => e,
            _ => &[],
        }
    }
}
