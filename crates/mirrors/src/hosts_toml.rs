//! containerd's registry host configuration: a directory (`config_path`, usually
//! `/etc/containerd/certs.d`) with one sub-directory per registry host, each holding a
//! `hosts.toml` or Docker-style certificate files. Follows containerd
//! `remotes/docker/config/hosts.go` and the resolver in `remotes/docker/resolver.go`
//! (1.6 and 1.7; `core/remotes/…` in 2.x) as 1.7.32 and 2.x have them; where older
//! releases differ, the difference is a [`VersionWarning`] (`crate::version`).
//!
//! - **Directory** (`HostDirFromRoot`, `hostPaths`): for host `h:p` the candidates are
//!   `h_p_`, then `h:p`, then `_default`; the first that exists is used (even when it
//!   has no `hosts.toml`).
//! - **File** (`loadHostDir`, `parseHostsFile`): an absent or empty `hosts.toml` means
//!   the directory's certificate files (`*.crt` CAs, `*.cert` + `*.key` client pairs);
//!   a `hosts.toml` that fails to parse is logged by containerd and **ignored** the same
//!   way (we keep a warning). Otherwise the `[host."scheme://h[/path]"]` tables in the
//!   order of their headers, then `server` (empty: the default host).
//! - **Host fields** (`parseHostConfig`): `capabilities` (`pull`, `resolve`, `push`,
//!   `referrers`; all when unset), `ca` (path or list, relative to the host directory),
//!   `client`, `skip_verify`, `override_path`, `[header]`, `dial_timeout`. A URL without
//!   `http` in front gets `https://`; `/v2` is appended to the path unless it ends so or
//!   `override_path` is set.
//! - **Default host** (`ConfigureHosts`): `docker.io` → `https://registry-1.docker.io/v2`;
//!   localhost and loopback IPs: HTTPS without verification, with HTTP fallback unless
//!   the port is 443 or absent (port 80: plain HTTP); anything else `https://host/v2`.
//!   An `http://` host with TLS settings is tried with HTTPS first, then HTTP.
//! - **Order of asking** (`Resolve`, `filterHosts`, `addNamespace`): hosts in that order,
//!   those lacking the capability left out (a tag needs `pull` and `resolve`, a digest
//!   `pull`); a host other than the image's own (except `registry-1.docker.io` for
//!   `docker.io`) gets `?ns=<image registry>`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pullcheck_reference::{Reference, RegistryHost};
use toml_edit::{DocumentMut, Item, Table, TableLike, Value};

use crate::MirrorError;
use crate::duration::is_go_duration;
use crate::endpoint::{ClientCert, CredentialRule, Endpoint, Resolution};
use crate::redact::{redact_location, redact_urls};
use crate::text::line_col;
use crate::url::{DOCKER_HUB_API_HOST, parse_url, path_clean};
use crate::version::VersionWarning;

/// What a host may be used for (`capabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capabilities {
    /// Fetch manifests and blobs by digest.
    pub pull: bool,
    /// Resolve a tag to a digest.
    pub resolve: bool,
    /// Push.
    pub push: bool,
    /// List referrers (newer containerd).
    pub referrers: bool,
}

impl Capabilities {
    /// Every capability: the default when `capabilities` is unset or empty.
    pub const ALL: Capabilities = Capabilities {
        pull: true,
        resolve: true,
        push: true,
        referrers: true,
    };

    /// Whether these include everything in `need`.
    pub fn has(self, need: Capabilities) -> bool {
        (self.pull || !need.pull)
            && (self.resolve || !need.resolve)
            && (self.push || !need.push)
            && (self.referrers || !need.referrers)
    }

    const NONE: Capabilities = Capabilities {
        pull: false,
        resolve: false,
        push: false,
        referrers: false,
    };
}

/// One host of a `hosts.toml` (a `[host."…"]` table, or the `server` with the top-level
/// settings), as containerd's `hostConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// `http` or `https` (empty when the URL had none and the host is empty).
    pub scheme: String,
    /// `host[:port]`; empty for the top level without `server` (the default host).
    pub host: String,
    /// The API path, e.g. `/v2`, `/us/v2`, or with `override_path` as configured.
    pub path: String,
    /// What the host is used for.
    pub capabilities: Capabilities,
    /// `ca`: CA certificate files (`Some(vec![])` for `ca = []`, which still counts as a
    /// TLS setting).
    pub ca: Option<Vec<PathBuf>>,
    /// `client`: client certificates.
    pub client: Vec<ClientCert>,
    /// `skip_verify`, when set.
    pub skip_verify: Option<bool>,
    /// `[header]`: names and values, in file order.
    pub header: Vec<(String, Vec<String>)>,
    /// `dial_timeout`, when set (a Go duration).
    pub dial_timeout: Option<String>,
    /// Where it came from: `[host."https://mirror"]`, `server = "…"`, `top level (no server)`,
    /// or `certificate files`.
    pub origin: String,
    /// Whether this is the default host of a loopback registry other than on port 80,
    /// which containerd releases ask differently ([`VersionWarning::LoopbackDefaultHostOverTls`]).
    pub loopback_default: bool,
    /// Whether this is the default host of a loopback registry, on any port: containerd
    /// 1.6.0–1.6.8 ask it over HTTPS only
    /// ([`VersionWarning::LoopbackDefaultHostOverPlainHttp`]).
    pub loopback_default_any_port: bool,
}

impl HostConfig {
    fn empty(origin: &str) -> HostConfig {
        HostConfig {
            scheme: String::new(),
            host: String::new(),
            path: String::new(),
            capabilities: Capabilities::NONE,
            ca: None,
            client: Vec::new(),
            skip_verify: None,
            header: Vec::new(),
            dial_timeout: None,
            origin: origin.to_owned(),
            loopback_default: false,
            loopback_default_any_port: false,
        }
    }

    fn explicit_tls(&self) -> bool {
        self.ca.is_some() || !self.client.is_empty() || self.skip_verify.is_some()
    }
}

/// A value as go-toml decodes it into `interface{}`, reduced to what matters.
enum Any {
    Str(String),
    Arr(Vec<Any>),
    Other(&'static str),
}

impl Any {
    fn from_value(v: &Value) -> Any {
        match v {
            Value::String(s) => Any::Str(s.value().clone()),
            Value::Array(a) => Any::Arr(a.iter().map(Any::from_value).collect()),
            Value::Integer(_) => Any::Other("integer"),
            Value::Float(_) => Any::Other("float"),
            Value::Boolean(_) => Any::Other("boolean"),
            Value::Datetime(_) => Any::Other("datetime"),
            Value::InlineTable(_) => Any::Other("table"),
        }
    }

    fn from_item(i: &Item) -> Any {
        match i {
            Item::Value(v) => Any::from_value(v),
            Item::ArrayOfTables(_) => Any::Other("array of tables"),
            _ => Any::Other("table"),
        }
    }

    fn describe(&self) -> String {
        match self {
            Any::Str(s) => format!("{s:?}"),
            Any::Arr(_) => "array".to_owned(),
            Any::Other(t) => (*t).to_owned(),
        }
    }
}

/// `hostFileConfig` after go-toml's decoding, before `parseHostConfig`.
#[derive(Default)]
struct RawHost {
    capabilities: Vec<String>,
    ca: Option<Any>,
    client: Option<Any>,
    skip_verify: Option<bool>,
    header: Option<Vec<(String, Any)>>,
    override_path: bool,
    dial_timeout: String,
}

fn decode_host(t: &dyn TableLike, at: &str) -> Result<RawHost, String> {
    let mut raw = RawHost::default();
    for (key, item) in t.iter() {
        let bad = |want: &str| format!("{at}{key}: expected {want}");
        match key {
            "capabilities" => {
                let arr = item.as_array().ok_or_else(|| bad("an array of strings"))?;
                for v in arr {
                    raw.capabilities.push(
                        v.as_str()
                            .ok_or_else(|| bad("an array of strings"))?
                            .to_owned(),
                    );
                }
            }
            "ca" => raw.ca = Some(Any::from_item(item)),
            "client" => raw.client = Some(Any::from_item(item)),
            "skip_verify" => {
                raw.skip_verify = Some(item.as_bool().ok_or_else(|| bad("a boolean"))?)
            }
            "override_path" => {
                raw.override_path = item.as_bool().ok_or_else(|| bad("a boolean"))?
            }
            "dial_timeout" => {
                raw.dial_timeout = item.as_str().ok_or_else(|| bad("a string"))?.to_owned()
            }
            "header" => {
                let table = item.as_table_like().ok_or_else(|| bad("a table"))?;
                raw.header = Some(
                    table
                        .iter()
                        .map(|(k, v)| (k.to_owned(), Any::from_item(v)))
                        .collect(),
                );
            }
            _ => {}
        }
    }
    Ok(raw)
}

/// The `[host."…"]` names in the order of their table headers, as containerd's
/// `getSortedHosts`: every standard table header `[host.X…]` (sub-tables such as
/// `[host.X.header]` included) names `X`, and a name is repeated only when another
/// host's header came in between. Hosts written as inline tables or dotted keys have
/// no header and are left out, as upstream leaves them out.
fn ordered_hosts(doc: &DocumentMut) -> Vec<String> {
    fn collect(t: &Table, name: &str, aot_element: bool, out: &mut Vec<(isize, String)>) {
        if !aot_element
            && !t.is_implicit()
            && !t.is_dotted()
            && let Some(p) = t.position()
        {
            out.push((p, name.to_owned()));
        }
        for (_, child) in t.iter() {
            match child {
                Item::Table(c) => collect(c, name, false, out),
                Item::ArrayOfTables(a) => {
                    for e in a.iter() {
                        collect(e, name, true, out);
                    }
                }
                _ => {}
            }
        }
    }
    let mut headers = Vec::new();
    if let Some(Item::Table(host)) = doc.as_table().get("host") {
        for (name, item) in host.iter() {
            match item {
                Item::Table(t) => collect(t, name, false, &mut headers),
                Item::ArrayOfTables(a) => {
                    for e in a.iter() {
                        collect(e, name, true, &mut headers);
                    }
                }
                _ => {}
            }
        }
    }
    headers.sort_by_key(|(p, _)| *p);
    let mut names: Vec<String> = Vec::new();
    for (_, n) in headers {
        if names.last() != Some(&n) {
            names.push(n);
        }
    }
    names
}

/// Parses a `hosts.toml` as containerd's `parseHostsFile`: the `[host."…"]` entries in
/// header order, then the top-level entry (`server`, possibly empty). Relative `ca` and
/// `client` paths are joined to `base_dir`.
///
/// # Errors
/// A message (with line and column for TOML errors) for what containerd fails on:
/// invalid TOML, a wrong value type, an unknown capability, a `ca`/`client`/header value
/// of the wrong shape, a bad `dial_timeout`, or a URL Go's `url.Parse` rejects.
/// containerd then ignores the whole file (see [`HostsDir`]).
pub fn parse_hosts_file(text: &str, base_dir: &Path) -> Result<Vec<HostConfig>, String> {
    // A message may quote a URL as written: its user info is masked.
    parse_hosts_text(text, base_dir).map_err(|e| redact_urls(&e))
}

fn parse_hosts_text(text: &str, base_dir: &Path) -> Result<Vec<HostConfig>, String> {
    let syntax = |span: Option<std::ops::Range<usize>>, message: &str| match span {
        Some(span) => {
            let (l, c) = line_col(text, span.start);
            format!(
                "line {l}, column {c}: {}",
                pullcheck_files::without_values(message.trim_end())
            )
        }
        None => pullcheck_files::without_values(message.trim_end()),
    };
    // `toml` first: it stops at the first error, where `toml_edit` recovers and goes on,
    // in time that grows with the square of the file's repeated tables (a 1 MiB file of
    // repeated `[host."…"]` headers took seconds). Both report the same first error.
    if let Err(e) = toml::from_str::<toml::Table>(text) {
        return Err(syntax(e.span(), e.message()));
    }
    let doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| syntax(e.span(), e.message()))?;
    let root = doc.as_table();
    let server = match root.get("server") {
        None => String::new(),
        Some(i) => i.as_str().ok_or("server: expected a string")?.to_owned(),
    };
    let top = decode_host(root, "")?;
    let mut decoded: BTreeMap<String, RawHost> = BTreeMap::new();
    if let Some(h) = root.get("host") {
        let table = h.as_table_like().ok_or("host: expected a table of hosts")?;
        for (name, item) in table.iter() {
            let t = item
                .as_table_like()
                .ok_or_else(|| format!("host.{:?}: expected a table", redact_location(name)))?;
            let at = format!("host.{:?}.", redact_location(name));
            decoded.insert(name.to_owned(), decode_host(t, &at)?);
        }
    }
    let mut hosts = Vec::new();
    for name in ordered_hosts(&doc) {
        let Some(raw) = decoded.get(&name) else {
            continue;
        };
        let origin = format!("[host.{:?}]", redact_location(&name));
        hosts.push(parse_host_config(&name, base_dir, raw, &origin)?);
    }
    let origin = if server.is_empty() {
        "top level (no server: the default host)".to_owned()
    } else {
        format!("server = {:?}", redact_location(&server))
    };
    hosts.push(parse_host_config(&server, base_dir, &top, &origin)?);
    Ok(hosts)
}

/// containerd `makeAbsPath`: an absolute path as is, otherwise Go's
/// `filepath.Join(base, p)` (empty parts dropped, the result cleaned, `""` if both are
/// empty).
fn abs_path(p: &str, base: &Path) -> PathBuf {
    if p.starts_with('/') {
        return PathBuf::from(p);
    }
    let base = base.to_string_lossy();
    let parts: Vec<&str> = [base.as_ref(), p]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        return PathBuf::new();
    }
    PathBuf::from(path_clean(&parts.join("/")))
}

fn strings(a: &[Any], what: &str) -> Result<Vec<String>, String> {
    a.iter()
        .map(|v| match v {
            Any::Str(s) => Ok(s.clone()),
            other => Err(format!(
                "{what}: unable to cast {} to string",
                other.describe()
            )),
        })
        .collect()
}

fn parse_host_config(
    server: &str,
    base: &Path,
    raw: &RawHost,
    origin: &str,
) -> Result<HostConfig, String> {
    let mut h = HostConfig::empty(origin);
    if !server.is_empty() {
        let full = if server.starts_with("http") {
            server.to_owned()
        } else {
            format!("https://{server}")
        };
        let u = parse_url(&full).map_err(|e| {
            format!(
                "{origin}: unable to parse server {:?}: {}",
                redact_location(&full),
                redact_urls(&e)
            )
        })?;
        h.scheme = u.scheme;
        h.host = u.host;
        h.path = if !u.path.is_empty() {
            let p = path_clean(&u.path);
            if !p.ends_with("/v2") && !raw.override_path {
                format!("{p}/v2")
            } else {
                p
            }
        } else if !raw.override_path {
            "/v2".to_owned()
        } else {
            String::new()
        };
    }
    h.skip_verify = raw.skip_verify;
    h.capabilities = if raw.capabilities.is_empty() {
        Capabilities::ALL
    } else {
        let mut c = Capabilities::NONE;
        for cap in &raw.capabilities {
            match cap.to_lowercase().as_str() {
                "pull" => c.pull = true,
                "resolve" => c.resolve = true,
                "push" => c.push = true,
                "referrers" => c.referrers = true,
                _ => return Err(format!("{origin}: unknown capability {cap:?}")),
            }
        }
        c
    };
    if let Some(ca) = &raw.ca {
        h.ca = Some(match ca {
            Any::Str(s) => vec![abs_path(s, base)],
            Any::Arr(a) => strings(a, &format!("{origin} ca"))?
                .iter()
                .map(|s| abs_path(s, base))
                .collect(),
            other => {
                return Err(format!(
                    "{origin}: invalid type {} for \"ca\"",
                    other.describe()
                ));
            }
        });
    }
    if let Some(client) = &raw.client {
        let key = |s: &str| {
            let p = abs_path(s, base);
            (!p.as_os_str().is_empty()).then_some(p)
        };
        match client {
            Any::Str(s) => h.client.push(ClientCert {
                cert: abs_path(s, base),
                key: None,
            }),
            Any::Arr(items) => {
                for item in items {
                    match item {
                        Any::Str(s) => h.client.push(ClientCert {
                            cert: abs_path(s, base),
                            key: None,
                        }),
                        Any::Arr(pair) => {
                            let pair = strings(pair, &format!("{origin} client"))?;
                            let [cert, k] = pair.as_slice() else {
                                return Err(format!(
                                    "{origin}: invalid pair {pair:?} for \"client\""
                                ));
                            };
                            h.client.push(ClientCert {
                                cert: abs_path(cert, base),
                                key: key(k),
                            });
                        }
                        other => {
                            return Err(format!(
                                "{origin}: invalid type {} for \"client\"",
                                other.describe()
                            ));
                        }
                    }
                }
            }
            other => {
                return Err(format!(
                    "{origin}: invalid type {} for \"client\"",
                    other.describe()
                ));
            }
        }
    }
    if let Some(header) = &raw.header {
        for (name, value) in header {
            let values = match value {
                Any::Str(s) => vec![s.clone()],
                Any::Arr(a) => strings(a, &format!("{origin} header {name:?}"))?,
                other => {
                    return Err(format!(
                        "{origin}: invalid type {} for header {name:?}",
                        other.describe()
                    ));
                }
            };
            h.header.push((name.clone(), values));
        }
    }
    if !raw.dial_timeout.is_empty() {
        if !is_go_duration(&raw.dial_timeout) {
            return Err(format!(
                "{origin}: invalid dial_timeout {:?}",
                raw.dial_timeout
            ));
        }
        h.dial_timeout = Some(raw.dial_timeout.clone());
    }
    Ok(h)
}

/// The directory names containerd tries for `host`, in order (`hostPaths`): `h_p_` when
/// the host has a port (`:` not at the start), then the host as written, then
/// `_default`.
pub fn host_dir_candidates(host: &str) -> Vec<String> {
    let mut out = Vec::with_capacity(3);
    if let Some(idx) = host.rfind(':').filter(|i| *i > 0) {
        out.push(format!("{}_{}_", &host[..idx], &host[idx + 1..]));
    }
    out.push(host.to_owned());
    out.push("_default".to_owned());
    out
}

/// What one host directory gives.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DirConfig {
    /// The hosts to ask (server or default last), and where they came from, as the
    /// start of each endpoint's rule.
    Hosts {
        hosts: Vec<HostConfig>,
        source: String,
    },
    /// containerd fails the pull: the entry is not a directory, or could not be read.
    Unusable(String),
}

/// A containerd host configuration directory, read once; resolution is then pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsDir {
    root: PathBuf,
    entries: BTreeMap<String, DirConfig>,
    warnings: Vec<String>,
    version_warnings: Vec<VersionWarning>,
}

impl HostsDir {
    /// An empty configuration rooted at `root` (no host directories): every host gets
    /// containerd's default.
    pub fn new(root: impl Into<PathBuf>) -> HostsDir {
        HostsDir {
            root: root.into(),
            entries: BTreeMap::new(),
            warnings: Vec::new(),
            version_warnings: Vec::new(),
        }
    }

    /// Reads every host directory under `root`: its `hosts.toml`, or its certificate
    /// files when that is absent, empty, or fails to parse (with a warning).
    ///
    /// # Errors
    /// [`MirrorError::Read`] when `root` cannot be listed (including when it does not
    /// exist); [`MirrorError::TooLarge`] for a `hosts.toml` over
    /// [`crate::MAX_CONFIG_BYTES`] (containerd would read it; pullcheck refuses rather
    /// than guess).
    pub fn load(root: &Path) -> Result<HostsDir, MirrorError> {
        let mut dir = HostsDir::new(root);
        let rd = std::fs::read_dir(root).map_err(|e| MirrorError::read(root, &e))?;
        for entry in rd {
            let entry = entry.map_err(|e| MirrorError::read(root, &e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let path = entry.path();
            let config = match std::fs::metadata(&path) {
                Err(e) => DirConfig::Unusable(format!("{}: {e}", path.display())),
                Ok(m) if !m.is_dir() => {
                    DirConfig::Unusable(format!("{} is not a directory", path.display()))
                }
                Ok(_) => dir.read_host_dir(&path)?,
            };
            dir.entries.insert(name, config);
        }
        Ok(dir)
    }

    fn read_host_dir(&mut self, path: &Path) -> Result<DirConfig, MirrorError> {
        let file = path.join("hosts.toml");
        let read = match crate::text::read_bounded(&file) {
            Ok(bytes) => Ok(bytes),
            Err(Ok(io)) => Err(io),
            Err(Err(too_large)) => return Err(too_large),
        };
        Ok(self.host_dir_config(path, &file, read))
    }

    /// What the host directory `path` configures, given what reading its `hosts.toml`
    /// (`file`) gave.
    fn host_dir_config(
        &mut self,
        path: &Path,
        file: &Path,
        read: std::io::Result<Vec<u8>>,
    ) -> DirConfig {
        let label = file.display().to_string();
        match read {
            Ok(bytes) if !bytes.is_empty() => {
                let parsed = pullcheck_files::text(bytes)
                    .map_err(|e| e.to_string())
                    .and_then(|text| parse_hosts_file(&text, path));
                match parsed {
                    Ok(hosts) => {
                        self.warn_versions(file, &hosts);
                        return DirConfig::Hosts {
                            hosts,
                            source: format!("containerd {label}"),
                        };
                    }
                    Err(e) => {
                        self.warn_ignored(&label, &e);
                        return match cert_files(path) {
                            Ok(host) => DirConfig::Hosts {
                                hosts: vec![host],
                                source: ignored_source(&label),
                            },
                            Err(e) => DirConfig::Unusable(e),
                        };
                    }
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return DirConfig::Unusable(format!("{label}: {e}")),
        }
        match cert_files(path) {
            Ok(host) => DirConfig::Hosts {
                hosts: vec![host],
                source: format!("containerd {} (no hosts.toml)", path.display()),
            },
            Err(e) => DirConfig::Unusable(e),
        }
    }

    /// A file that containerd versions read differently: only `server =`, no `[host]`
    /// table ([`VersionWarning::HostsTomlWithoutHostTable`]). pullcheck follows
    /// containerd 1.7.32 and 2.x, which use the server; 1.6.x and 1.7.0 to 1.7.31 reject
    /// the file ("invalid `host` tree", `getSortedHosts` in
    /// `remotes/docker/config/hosts.go` v1.7.31 line 534) and ask the image's own
    /// registry (the differential suite, crates/cli/tests/it/runtimes.rs, shows it with
    /// 1.6.20).
    fn warn_versions(&mut self, file: &Path, hosts: &[HostConfig]) {
        if let [server] = hosts
            && !server.host.is_empty()
        {
            self.version_warnings
                .push(VersionWarning::HostsTomlWithoutHostTable {
                    file: file.to_path_buf(),
                    server: server.host.clone(),
                });
        }
    }

    fn warn_ignored(&mut self, label: &str, err: &str) {
        self.warnings.push(format!(
            "containerd ignores {label}: {err}; it uses the directory's certificate files and the default host"
        ));
    }

    /// Adds the host directory `dir_name` with `hosts.toml` content `text`, as
    /// [`HostsDir::load`] would read it (without certificate files). A file that fails
    /// to parse leaves the default host and a warning, as containerd does.
    pub fn insert_hosts_toml(&mut self, dir_name: &str, text: &str) {
        let dir = self.root.join(dir_name);
        let label = dir.join("hosts.toml").display().to_string();
        let config = if text.is_empty() {
            DirConfig::Hosts {
                hosts: vec![HostConfig::empty("certificate files")],
                source: format!("containerd {} (empty hosts.toml)", dir.display()),
            }
        } else {
            match parse_hosts_file(text, &dir) {
                Ok(hosts) => {
                    self.warn_versions(&dir.join("hosts.toml"), &hosts);
                    DirConfig::Hosts {
                        hosts,
                        source: format!("containerd {label}"),
                    }
                }
                Err(e) => {
                    self.warn_ignored(&label, &e);
                    DirConfig::Hosts {
                        hosts: vec![HostConfig::empty("certificate files")],
                        source: ignored_source(&label),
                    }
                }
            }
        };
        self.entries.insert(dir_name.to_owned(), config);
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Problems containerd logs and works around (a `hosts.toml` it ignores).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Files containerd releases read differently ([`VersionWarning`]), in reading order.
    pub fn version_warnings(&self) -> &[VersionWarning] {
        &self.version_warnings
    }

    /// The endpoints containerd asks for `reference`, in order; see the module docs.
    pub fn resolve(&self, reference: &Reference) -> Resolution {
        let refhost = reference.domain();
        let root = self.root.display();
        if refhost.is_empty() {
            return Resolution::Unresolvable {
                rule: format!("containerd hosts dir {root}"),
                reason: "the reference names no registry host".to_owned(),
            };
        }
        let found = host_dir_candidates(refhost)
            .into_iter()
            .find_map(|c| self.entries.get(&c).map(|e| (c, e)));
        let (mut hosts, source) = match found {
            None => (
                vec![HostConfig::empty("default host")],
                format!("containerd {root}: no host directory for {refhost}"),
            ),
            Some((dir, DirConfig::Unusable(reason))) => {
                return Resolution::Unresolvable {
                    rule: format!("containerd {root}/{dir}"),
                    reason: reason.clone(),
                };
            }
            Some((_, DirConfig::Hosts { hosts, source })) => (hosts.clone(), source.clone()),
        };
        if let Some(last) = hosts.last_mut().filter(|h| h.host.is_empty()) {
            apply_default_host(last, refhost);
        }
        let digested = reference.digest().is_some();
        let need = Capabilities {
            pull: true,
            resolve: !digested,
            push: false,
            referrers: false,
        };
        let mut endpoints = Vec::new();
        let mut unusable = Vec::new();
        for (i, h) in hosts.iter().enumerate() {
            if !h.capabilities.has(need) {
                continue;
            }
            // containerd tries such a host, fails at once ("unsupported protocol
            // scheme", no host) and moves on to the next.
            if h.host.is_empty() || !matches!(h.scheme.as_str(), "http" | "https") {
                unusable.push(format!(
                    "{} (scheme {:?}, host {:?})",
                    h.origin, h.scheme, h.host
                ));
                continue;
            }
            let mut scheme = h.scheme.clone();
            let mut http_fallback = false;
            if scheme == "http"
                && h.explicit_tls()
                && RegistryHost::from_url_host(&h.host).port() != Some("80")
            {
                scheme = "https".to_owned();
                http_fallback = true;
            }
            let mut base = path_clean(&format!("/{}", h.path));
            if !base.ends_with('/') {
                base.push('/');
            }
            let proxy = is_proxy(&h.host, refhost);
            let position = if i + 1 == hosts.len() {
                String::new()
            } else {
                format!(" (host {} of {})", i + 1, hosts.len() - 1)
            };
            // containerd's CRI plugin hands the credentials the kubelet passed with the
            // pull (the pod's pull secrets, picked by the image's own registry) to the
            // `Credentials` callback of every host in hosts.toml; `ParseAuth` withholds them
            // only when they carry a server address other than the host, and the kubelet
            // sets none (`ParseAuth` and the `Credentials` callback of `registryHosts`,
            // pkg/cri/server/image_pull.go v1.6.20 lines 179-192 and 339-348; in 2.x
            // internal/cri/server/images/image_pull.go).
            let credentials = CredentialRule {
                lookup_host: Some(refhost.to_owned()),
                pull_secrets: true,
                rule: if proxy {
                    format!(
                        "containerd gives the pull's credentials (the pull secrets matched by the \
                         image's registry {refhost}) to every host of hosts.toml, this mirror {} \
                         included (CRI ParseAuth withholds them only for another server address, \
                         which the kubelet never sets); a secret keyed for {} itself is not used \
                         (containerd issue 10996)",
                        h.host, h.host
                    )
                } else {
                    format!(
                        "containerd sends the pull's credentials (the pull secrets matched by the \
                         image's registry {refhost}) to {}",
                        h.host
                    )
                },
            };
            endpoints.push(Endpoint {
                url: format!("{scheme}://{}{base}", h.host),
                host: h.host.clone(),
                repository: reference.path().to_owned(),
                reference: reference.manifest_reference().to_owned(),
                http_fallback,
                skip_verify: h.skip_verify.unwrap_or(false),
                ca: h.ca.clone().unwrap_or_default(),
                client_certs: h.client.clone(),
                headers: h
                    .header
                    .iter()
                    .flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone())))
                    .collect(),
                query: if proxy {
                    vec![("ns".to_owned(), refhost.to_owned())]
                } else {
                    Vec::new()
                },
                is_mirror: proxy,
                blocked: None,
                proxy: None,
                over_tls_warning: h.loopback_default.then(|| {
                    VersionWarning::LoopbackDefaultHostOverTls {
                        host: h.host.clone(),
                        hosts_dir: Some(self.root.clone()),
                    }
                }),
                over_plain_http_warning: h.loopback_default_any_port.then(|| {
                    VersionWarning::LoopbackDefaultHostOverPlainHttp {
                        host: h.host.clone(),
                        hosts_dir: Some(self.root.clone()),
                    }
                }),
                rule: format!("{source} {}{position}", h.origin),
                credentials,
            });
        }
        if endpoints.is_empty() {
            let what = if digested { "pull" } else { "pull and resolve" };
            let reason = if unusable.is_empty() {
                format!("no resolve hosts: not found (no host has the {what} capabilities)")
            } else {
                format!("no usable host: {}", unusable.join("; "))
            };
            return Resolution::Unresolvable {
                rule: source,
                reason,
            };
        }
        Resolution::Endpoints(endpoints)
    }
}

fn ignored_source(label: &str) -> String {
    format!("containerd {label} (ignored: it does not parse)")
}

/// containerd `isProxy`: asking a host other than the image's own, where
/// `registry-1.docker.io` counts as `docker.io`'s own.
pub(crate) fn is_proxy(host: &str, refhost: &str) -> bool {
    host != refhost && !(refhost == "docker.io" && host == DOCKER_HUB_API_HOST)
}

/// containerd `ConfigureHosts` for a last host without a host name (CRI sets no default
/// scheme).
fn apply_default_host(h: &mut HostConfig, refhost: &str) {
    let local = RegistryHost::from_url_host(refhost);
    if refhost == "docker.io" {
        h.scheme = "https".to_owned();
        h.host = DOCKER_HUB_API_HOST.to_owned();
    } else if local.is_loopback() {
        h.host = refhost.to_owned();
        let port = local.port();
        h.scheme = if port.is_none_or(|p| p == "443") {
            "https"
        } else {
            "http"
        }
        .to_owned();
        if port != Some("80") {
            h.skip_verify = Some(true);
        }
    } else {
        h.host = refhost.to_owned();
        h.scheme = "https".to_owned();
    }
    h.path = "/v2".to_owned();
    h.capabilities = Capabilities::ALL;
    if h.origin.starts_with("top level") {
        h.origin = format!("top level (no server: the default host {})", h.host);
    } else {
        h.origin = format!("{} (default host {})", h.origin, h.host);
    }
    if local.is_loopback() {
        // containerd 1.6.9-1.6.24 and 1.7.0-1.7.6 (1.6.20 seen in the differential suite)
        // ask only plain HTTP here (`ConfigureHosts`, remotes/docker/config/hosts.go
        // v1.6.20 lines 102-109); 1.6.25 (lines 104-119, 254-260) and 1.7.7 HTTPS first.
        h.loopback_default = local.port() != Some("80");
        // containerd 1.6.0-1.6.8 have no loopback rule here: `https` for every host the
        // caller gives no default scheme (v1.6.8 lines 98-109).
        h.loopback_default_any_port = true;
        h.origin.push_str(
            "; a loopback default host: HTTPS without verification, then HTTP, as containerd \
             1.6.25 and 1.7.7 and later ask it (1.6.9 to 1.6.24 and 1.7.0 to 1.7.6 ask plain \
             HTTP only; 1.6.0 to 1.6.8 verified HTTPS only)",
        );
    }
}

/// containerd `loadCertFiles`: `*.crt` are CAs; `*.cert` are client certificates, with
/// the `.key` of the same name when present.
fn cert_files(dir: &Path) -> Result<HostConfig, String> {
    let mut h = HostConfig::empty("certificate files");
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(h),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut names: Vec<String> = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if let Some(n) = entry.file_name().to_str() {
            names.push(n.to_owned());
        }
    }
    names.sort();
    for name in names {
        if name.ends_with(".crt") {
            h.ca.get_or_insert_with(Vec::new).push(dir.join(&name));
        }
        if let Some(stem) = name.strip_suffix(".cert") {
            let key = dir.join(format!("{stem}.key"));
            let key = match std::fs::metadata(&key) {
                Ok(_) => Some(key),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(format!("{}: {e}", key.display())),
            };
            h.client.push(ClientCert {
                cert: dir.join(&name),
                key,
            });
        }
    }
    Ok(h)
}

#[cfg(test)]
#[path = "hosts_toml_tests.rs"]
mod tests;
