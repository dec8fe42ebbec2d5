//! The kubelet's image credential provider plugins (kubernetes
//! `pkg/credentialprovider/plugin`): a `CredentialProviderConfig` read from
//! `--image-credential-provider-config` and the exec plugins it names, found in
//! `--image-credential-provider-bin-dir`.
//!
//! **Config** ([`ProviderConfig::load`]). A YAML or JSON file (or a directory: its
//! `*.json`, `*.yaml` and `*.yml` files in lexical order, merged, a provider name
//! repeated across them being an error), `apiVersion` `kubelet.config.k8s.io/v1`,
//! `v1beta1` or `v1alpha1`, `kind: CredentialProviderConfig`, decoded strictly (an
//! unknown or repeated field is an error) and validated as the kubelet's
//! `validateCredentialProviderConfig` does: at least one provider; a name without `/`
//! or spaces, not `.` or `..`, unique; `apiVersion` one of
//! `credentialprovider.kubelet.k8s.io/v1`, `v1beta1`, `v1alpha1`; at least one
//! `matchImages` entry, each one a URL once `https://` is put in front;
//! `defaultCacheDuration` given and not negative; `tokenAttributes` with
//! `serviceAccountTokenAudience`, `requireServiceAccount` and a `cacheType` of
//! `ServiceAccount` or `Token`, only for the `v1` API. Every provider's program
//! `<bin dir>/<name>` must exist, as the kubelet refuses to start otherwise. Errors
//! name the file and the field (`providers[1].matchImages`).
//!
//! **Matching.** A provider is asked about an image (its normalised repository, e.g.
//! `123456789012.dkr.ecr.us-east-1.amazonaws.com/app`, as the kubelet passes it) when
//! one of its `matchImages` matches it with the keyring's rule
//! ([`crate::keyring::urls_match`]: globs within one host label each, equal ports,
//! the path a prefix).
//!
//! **Exec.** The program gets the config's `args`, this process's environment plus the
//! config's `env` (the config's values win), and a `CredentialProviderRequest`
//! (`{"apiVersion", "kind", "image"}`) on standard input. It must exit 0 and print a
//! `CredentialProviderResponse` whose `apiVersion` is the provider's, decoded strictly,
//! with a `cacheKeyType` of `Image`, `Registry` or `Global`. It is bounded by the
//! per-plugin timeout ([`ProviderOptions::timeout`], default 1 minute as the kubelet's)
//! and the caller's deadline, and by 1 MiB of output; it runs in its own process group,
//! killed on timeout or when the caller gives up. Its output is never logged or shown
//! (the kubelet's stderr in its error message is withheld here).
//!
//! **Cache.** An answer is kept under its `cacheKeyType`'s key (the image, its registry
//! host, or one global key) for `cacheDuration`, or `defaultCacheDuration` when the
//! answer gives none; a duration of `0` keeps nothing. Lookups try the image, then its
//! registry, then the global key, as the kubelet's `getCachedCredentials`. The cache
//! lives as long as the [`CredentialProviders`] (a `pullcheck serve` process), at most
//! [`CACHE_LIMIT`] entries per provider; failures are not cached.
//!
//! **Coalescing.** Concurrent requests for the same key run the plugin once. The
//! kubelet's singleflight key is the image, which runs a registry-keyed plugin once per
//! image when asked about several at once; here, until a provider has answered once,
//! its concurrent requests wait for the first run, and afterwards they are coalesced
//! by the key its last answer's `cacheKeyType` gives. So a plugin runs once per cache
//! key and duration, as a kubelet that pulls one image at a time would run it. A
//! failure is shared by the requests that waited for that run.
//!
//! **Not supported:** the service-account-token mode (`tokenAttributes`): such a
//! provider is validated, but pullcheck has no Pod to request a token for, so it is not
//! run and its images get [`ProviderFailure::ServiceAccountTokenUnsupported`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use crate::error::CredentialError;
use crate::exec::{self, ExecFailure};
use crate::keyring::{Keyring, basic_or_anonymous, urls_match};
use crate::tree::{self, Node};
use crate::{CredentialSource, ResolvedCredential, Secret};

/// The `CredentialProviderConfig` API versions the kubelet reads.
pub const CONFIG_API_VERSIONS: [&str; 3] = [
    "kubelet.config.k8s.io/v1",
    "kubelet.config.k8s.io/v1beta1",
    "kubelet.config.k8s.io/v1alpha1",
];

/// The exec protocol's API versions (a provider's `apiVersion`), in the kubelet's
/// sorted order for messages.
pub const PLUGIN_API_VERSIONS: [&str; 3] = [
    "credentialprovider.kubelet.k8s.io/v1",
    "credentialprovider.kubelet.k8s.io/v1alpha1",
    "credentialprovider.kubelet.k8s.io/v1beta1",
];

/// The most answers one provider keeps cached.
pub const CACHE_LIMIT: usize = 10_000;

/// The kubelet's catch-all timeout for one plugin run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One provider of the config, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// `name`: the program's file name in the bin directory, e.g.
    /// `ecr-credential-provider`.
    pub name: String,
    /// `apiVersion` of the exec protocol, e.g. `credentialprovider.kubelet.k8s.io/v1`.
    pub api_version: String,
    /// `matchImages`, as written.
    pub match_images: Vec<String>,
    /// `defaultCacheDuration`.
    pub default_cache_duration: Duration,
    /// `args`.
    pub args: Vec<String>,
    /// `env`: (name, value) pairs, in order.
    pub env: Vec<(String, String)>,
    /// Whether `tokenAttributes` is set (the service-account-token mode, not run).
    pub service_account_token: bool,
    /// The config file it was read from.
    pub configured_in: PathBuf,
}

impl Provider {
    /// The first `matchImages` entry that matches `image` (a normalised repository such
    /// as `docker.io/library/nginx`), if any.
    pub fn matching_entry(&self, image: &str) -> Option<&str> {
        self.match_images
            .iter()
            .find(|m| urls_match(m, image))
            .map(String::as_str)
    }

    /// `credential provider <name>`: the source of its credentials in reports.
    pub fn describe(&self) -> String {
        format!("credential provider {}", self.name)
    }
}

/// A whole `CredentialProviderConfig`: the providers in the order the kubelet
/// registers them (file order, then, for a directory, its files in lexical order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The providers.
    pub providers: Vec<Provider>,
}

impl ProviderConfig {
    /// Reads and validates the config at `path`, a file or a directory (see the
    /// [module docs](self)).
    ///
    /// # Errors
    /// [`CredentialError::Read`] for a file or directory that cannot be read;
    /// [`CredentialError::ProviderConfig`] naming the file and every invalid field.
    pub fn load(path: &Path) -> Result<ProviderConfig, CredentialError> {
        let read_error = |p: &Path, message: String| CredentialError::Read {
            path: p.display().to_string(),
            what: "credential provider config",
            message,
        };
        let files = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| read_error(path, e.to_string()))?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    !p.is_dir()
                        && matches!(
                            p.extension().and_then(|e| e.to_str()),
                            Some("json" | "yaml" | "yml")
                        )
                })
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(config_error(
                    path,
                    vec!["no configuration files (*.json, *.yaml, *.yml) in the directory".into()],
                ));
            }
            files
        } else {
            vec![path.to_path_buf()]
        };
        let mut providers: Vec<Provider> = Vec::new();
        for file in &files {
            let text = pullcheck_files::read_to_string(file)
                .map_err(|e| read_error(file, e.to_string()))?;
            for provider in ProviderConfig::parse(file, &text)?.providers {
                if providers.iter().any(|p| p.name == provider.name) {
                    return Err(config_error(
                        file,
                        vec![format!(
                            "providers.name: Duplicate value: {:?} (also in an earlier file)",
                            provider.name
                        )],
                    ));
                }
                providers.push(provider);
            }
        }
        Ok(ProviderConfig { providers })
    }

    /// Parses and validates one config file's text; `file` is named in errors and
    /// kept as each provider's [`Provider::configured_in`].
    ///
    /// # Errors
    /// [`CredentialError::ProviderConfig`]: YAML or JSON syntax, the wrong `kind` or
    /// `apiVersion`, an unknown or repeated field, a value of the wrong type, and every
    /// validation error, each naming its field.
    pub fn parse(file: &Path, text: &str) -> Result<ProviderConfig, CredentialError> {
        let root = load_document(text).map_err(|e| config_error(file, vec![e]))?;
        let mut errors = Vec::new();
        let providers = decode_config(&root, file, &mut errors);
        if errors.is_empty() {
            validate(&providers, &mut errors);
        }
        if errors.is_empty() {
            Ok(ProviderConfig {
                providers: providers.into_iter().map(|d| d.provider).collect(),
            })
        } else {
            Err(config_error(file, errors))
        }
    }
}

fn config_error(file: &Path, errors: Vec<String>) -> CredentialError {
    CredentialError::ProviderConfig {
        file: file.display().to_string(),
        errors,
    }
}

/// One YAML (or JSON, a subset) document as a [`Node`].
fn load_document(text: &str) -> Result<Node, String> {
    use saphyr::LoadableYamlNode as _;
    let docs = saphyr::YamlOwned::load_from_str(text).map_err(|e| {
        let m = e.marker();
        format!("line {} column {}: {}", m.line(), m.col() + 1, e.info())
    })?;
    match docs.as_slice() {
        [] => Err("the file is empty".into()),
        [doc] => tree::from_yaml(doc),
        _ => Err("more than one YAML document".into()),
    }
}

/// The members of object `node` at `path`, strictly: a member not in `allowed`, or one
/// repeated, is an error (the kubelet's strict decoding). `null` is no members.
fn strict_members<'a>(
    node: &'a Node,
    allowed: &[&str],
    path: &str,
    errors: &mut Vec<String>,
) -> Vec<(&'a str, &'a Node)> {
    let members = match node {
        Node::Null => return Vec::new(),
        Node::Object(members) => members,
        other => {
            errors.push(format!("{path}: is {}, not an object", other.kind()));
            return Vec::new();
        }
    };
    let mut out: Vec<(&str, &Node)> = Vec::new();
    for (key, value) in members {
        let at = join(path, key);
        if !allowed.contains(&key.as_str()) {
            errors.push(format!("{at}: unknown field"));
        } else if out.iter().any(|(k, _)| *k == key) {
            errors.push(format!("{at}: duplicate field"));
        } else {
            out.push((key, value));
        }
    }
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn string_of(node: &Node, path: &str, errors: &mut Vec<String>) -> Option<String> {
    match node {
        Node::Null => None,
        Node::String(s) => Some(s.clone()),
        other => {
            errors.push(format!("{path}: is {}, not a string", other.kind()));
            None
        }
    }
}

fn strings_of(node: &Node, path: &str, errors: &mut Vec<String>) -> Vec<String> {
    match node {
        Node::Null => Vec::new(),
        Node::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| string_of(item, &format!("{path}[{i}]"), errors))
            .collect(),
        other => {
            errors.push(format!("{path}: is {}, not a list", other.kind()));
            Vec::new()
        }
    }
}

/// A provider as decoded, before validation.
struct Decoded {
    provider: Provider,
    default_cache_duration: Option<Result<(bool, Duration), ()>>,
    token_attributes: Option<Vec<String>>,
}

fn decode_config(root: &Node, file: &Path, errors: &mut Vec<String>) -> Vec<Decoded> {
    let members = strict_members(root, &["apiVersion", "kind", "providers"], "", errors);
    let get = |name: &str| members.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    let api_version = get("apiVersion").and_then(|v| string_of(v, "apiVersion", errors));
    match api_version.as_deref() {
        None => errors.push("apiVersion: Required value".into()),
        Some(v) if !CONFIG_API_VERSIONS.contains(&v) => errors.push(format!(
            "apiVersion: Unsupported value: {v:?}: supported values: {}",
            quoted(&CONFIG_API_VERSIONS)
        )),
        Some(_) => {}
    }
    match get("kind")
        .and_then(|v| string_of(v, "kind", errors))
        .as_deref()
    {
        Some("CredentialProviderConfig") => {}
        Some(other) => errors.push(format!("kind: {other:?} is not CredentialProviderConfig")),
        None => errors.push("kind: Required value".into()),
    }
    let list = match get("providers") {
        None | Some(Node::Null) => Vec::new(),
        Some(Node::Array(items)) => items.iter().collect(),
        Some(other) => {
            errors.push(format!("providers: is {}, not a list", other.kind()));
            Vec::new()
        }
    };
    list.into_iter()
        .enumerate()
        .map(|(i, node)| decode_provider(node, &format!("providers[{i}]"), file, errors))
        .collect()
}

fn decode_provider(node: &Node, path: &str, file: &Path, errors: &mut Vec<String>) -> Decoded {
    let members = strict_members(
        node,
        &[
            "name",
            "matchImages",
            "defaultCacheDuration",
            "apiVersion",
            "args",
            "env",
            "tokenAttributes",
        ],
        path,
        errors,
    );
    let mut provider = Provider {
        name: String::new(),
        api_version: String::new(),
        match_images: Vec::new(),
        default_cache_duration: Duration::ZERO,
        args: Vec::new(),
        env: Vec::new(),
        service_account_token: false,
        configured_in: file.to_path_buf(),
    };
    let mut default_cache_duration = None;
    let mut token_attributes = None;
    for (key, value) in members {
        let at = join(path, key);
        match key {
            "name" => provider.name = string_of(value, &at, errors).unwrap_or_default(),
            "apiVersion" => {
                provider.api_version = string_of(value, &at, errors).unwrap_or_default();
            }
            "matchImages" => provider.match_images = strings_of(value, &at, errors),
            "args" => provider.args = strings_of(value, &at, errors),
            "defaultCacheDuration" => {
                default_cache_duration =
                    string_of(value, &at, errors).map(|s| parse_go_duration(&s));
            }
            "env" => provider.env = decode_env(value, &at, errors),
            "tokenAttributes" if !matches!(value, Node::Null) => {
                token_attributes = Some(decode_token_attributes(value, &at, errors));
            }
            _ => {}
        }
    }
    provider.service_account_token = token_attributes.is_some();
    if let Some(Ok((false, d))) = default_cache_duration {
        provider.default_cache_duration = d;
    }
    Decoded {
        provider,
        default_cache_duration,
        token_attributes,
    }
}

fn decode_env(node: &Node, path: &str, errors: &mut Vec<String>) -> Vec<(String, String)> {
    let Node::Array(items) = node else {
        if !matches!(node, Node::Null) {
            errors.push(format!("{path}: is {}, not a list", node.kind()));
        }
        return Vec::new();
    };
    let mut env = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let members = strict_members(item, &["name", "value"], &at, errors);
        let field = |name: &str, errors: &mut Vec<String>| {
            members
                .iter()
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| string_of(v, &format!("{at}.{name}"), errors))
                .unwrap_or_default()
        };
        let name = field("name", errors);
        let value = field("value", errors);
        env.push((name, value));
    }
    env
}

/// The validation errors of `tokenAttributes`, without the `apiVersion` rule (which
/// needs the provider's).
fn decode_token_attributes(node: &Node, path: &str, errors: &mut Vec<String>) -> Vec<String> {
    let members = strict_members(
        node,
        &[
            "serviceAccountTokenAudience",
            "cacheType",
            "requireServiceAccount",
            "requiredServiceAccountAnnotationKeys",
            "optionalServiceAccountAnnotationKeys",
        ],
        path,
        errors,
    );
    let get = |name: &str| members.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    let mut problems = Vec::new();
    let audience = get("serviceAccountTokenAudience")
        .and_then(|v| string_of(v, &format!("{path}.serviceAccountTokenAudience"), errors));
    if audience.is_none_or(|a| a.is_empty()) {
        problems.push(format!(
            "{path}.serviceAccountTokenAudience: Required value"
        ));
    }
    let require = match get("requireServiceAccount") {
        None | Some(Node::Null) => {
            problems.push(format!("{path}.requireServiceAccount: Required value"));
            None
        }
        Some(Node::Bool(b)) => Some(*b),
        Some(other) => {
            errors.push(format!(
                "{path}.requireServiceAccount: is {}, not a boolean",
                other.kind()
            ));
            None
        }
    };
    let required = get("requiredServiceAccountAnnotationKeys")
        .map(|v| {
            strings_of(
                v,
                &format!("{path}.requiredServiceAccountAnnotationKeys"),
                errors,
            )
        })
        .unwrap_or_default();
    let optional = get("optionalServiceAccountAnnotationKeys")
        .map(|v| {
            strings_of(
                v,
                &format!("{path}.optionalServiceAccountAnnotationKeys"),
                errors,
            )
        })
        .unwrap_or_default();
    if require == Some(false) && !required.is_empty() {
        problems.push(format!(
            "{path}.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"
        ));
    }
    for (list, name) in [
        (&required, "requiredServiceAccountAnnotationKeys"),
        (&optional, "optionalServiceAccountAnnotationKeys"),
    ] {
        for (i, key) in list.iter().enumerate() {
            if list[..i].contains(key) {
                problems.push(format!("{path}.{name}: Duplicate value: {key:?}"));
            }
        }
    }
    if required.iter().any(|k| optional.contains(k)) {
        problems.push(format!(
            "{path}: Invalid value: annotation keys cannot be both required and optional"
        ));
    }
    match get("cacheType")
        .and_then(|v| string_of(v, &format!("{path}.cacheType"), errors))
        .as_deref()
    {
        None | Some("") => problems.push(format!(
            "{path}.cacheType: Required value: supported values: \"ServiceAccount\", \"Token\""
        )),
        Some("ServiceAccount" | "Token") => {}
        Some(other) => problems.push(format!(
            "{path}.cacheType: Unsupported value: {other:?}: supported values: \"ServiceAccount\", \"Token\""
        )),
    }
    problems
}

/// The kubelet's `validateCredentialProviderConfig`, on decoded providers.
fn validate(decoded: &[Decoded], errors: &mut Vec<String>) {
    if decoded.is_empty() {
        errors.push("providers: Required value: at least 1 item in plugins is required".into());
    }
    for (i, d) in decoded.iter().enumerate() {
        let p = &d.provider;
        let at = |field: &str| format!("providers[{i}].{field}");
        let name_rules = [
            (p.name.is_empty(), "Required value"),
            (p.name.contains('/'), "provider name cannot contain '/'"),
            (p.name.contains(' '), "provider name cannot contain spaces"),
            (p.name == ".", "provider name cannot be '.'"),
            (p.name == "..", "provider name cannot be '..'"),
        ];
        for (broken, why) in name_rules {
            if broken {
                errors.push(format!(
                    "{}: Invalid value: {:?}: {why}",
                    at("name"),
                    p.name
                ));
            }
        }
        if decoded[..i].iter().any(|e| e.provider.name == p.name) {
            errors.push(format!("{}: Duplicate value: {:?}", at("name"), p.name));
        }
        if p.api_version.is_empty() {
            errors.push(format!("{}: Required value", at("apiVersion")));
        } else if !PLUGIN_API_VERSIONS.contains(&p.api_version.as_str()) {
            errors.push(format!(
                "{}: Unsupported value: {:?}: supported values: {}",
                at("apiVersion"),
                p.api_version,
                quoted(&PLUGIN_API_VERSIONS)
            ));
        }
        if p.match_images.is_empty() {
            errors.push(format!(
                "{}: Required value: at least 1 item in matchImages is required",
                at("matchImages")
            ));
        }
        for (j, m) in p.match_images.iter().enumerate() {
            if let Err(why) = pullcheck_mirrors::url::parse(&format!("https://{m}")) {
                errors.push(format!(
                    "{}[{j}]: Invalid value: {m:?}: match image is invalid: {why}",
                    at("matchImages")
                ));
            }
        }
        match d.default_cache_duration {
            None => errors.push(format!("{}: Required value", at("defaultCacheDuration"))),
            Some(Err(())) => errors.push(format!(
                "{}: Invalid value: not a duration (e.g. \"12h\", \"90m\", \"0\")",
                at("defaultCacheDuration")
            )),
            Some(Ok((true, d))) if !d.is_zero() => errors.push(format!(
                "{}: Invalid value: defaultCacheDuration must be greater than or equal to 0",
                at("defaultCacheDuration")
            )),
            Some(Ok(_)) => {}
        }
        if let Some(problems) = &d.token_attributes {
            errors.extend(problems.iter().cloned());
            if p.api_version != PLUGIN_API_VERSIONS[0] {
                errors.push(format!(
                    "{}: Forbidden: tokenAttributes is only supported for {} API version",
                    at("tokenAttributes"),
                    PLUGIN_API_VERSIONS[0]
                ));
            }
        }
        for (j, (name, _)) in p.env.iter().enumerate() {
            if name.is_empty() {
                errors.push(format!("{}[{j}].name: Required value", at("env")));
            }
        }
    }
}

fn quoted(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Go's `time.ParseDuration`, as (negative, magnitude): an optional sign, then decimal
/// numbers (a fraction allowed) each with a unit `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`,
/// `h`; or `0` alone.
///
/// # Errors
/// `()` for anything else (including a magnitude past about 292 years).
pub(crate) fn parse_go_duration(text: &str) -> Result<(bool, Duration), ()> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok((negative, Duration::ZERO));
    }
    if rest.is_empty() {
        return Err(());
    }
    let mut nanos = 0f64;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(());
        }
        let value: f64 = number.parse().map_err(|_| ())?;
        const UNITS: [(&str, f64); 8] = [
            ("ns", 1.0),
            ("us", 1e3),
            ("µs", 1e3),
            ("μs", 1e3),
            ("ms", 1e6),
            ("s", 1e9),
            ("m", 6e10),
            ("h", 3.6e12),
        ];
        let (unit, scale) = UNITS
            .iter()
            .filter(|(u, _)| tail.starts_with(u))
            .max_by_key(|(u, _)| u.len())
            .ok_or(())?;
        nanos += value * scale;
        rest = &tail[unit.len()..];
    }
    if nanos > i64::MAX as f64 {
        return Err(());
    }
    Ok((negative, Duration::from_nanos(nanos as u64)))
}

/// How a credential provider plugin failed, as data. Never holds the plugin's output,
/// which may contain credentials. Serialised with a `kind` (`missing`, `spawn`,
/// `exited`, `timed_out`, `output_too_large`, `bad_response`, `api_version_mismatch`,
/// `invalid_cache_key_type`, `service_account_token_unsupported`) and that kind's
/// fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderFailure {
    /// The program is no longer in the bin directory.
    Missing,
    /// It could not be started; `error` is the OS's reason.
    Spawn {
        /// The OS's reason, e.g. `permission denied`.
        error: String,
    },
    /// It exited unsuccessfully.
    Exited {
        /// The exit code; `null` when killed by a signal.
        code: Option<i32>,
    },
    /// It did not finish within the per-plugin timeout or the check's deadline, and
    /// was killed.
    TimedOut {
        /// How long it was given, in milliseconds.
        after_ms: u64,
    },
    /// It wrote more than 1 MiB to stdout or stderr, and was killed.
    OutputTooLarge,
    /// Its standard output is not a `CredentialProviderResponse` (not JSON, another
    /// `kind`, an unknown field, a value of the wrong type, a bad `cacheDuration`).
    BadResponse,
    /// The response's `apiVersion` is not the provider's.
    ApiVersionMismatch {
        /// The provider's `apiVersion`.
        expected: String,
    },
    /// `cacheKeyType` is not `Image`, `Registry` or `Global`.
    InvalidCacheKeyType,
    /// The provider has `tokenAttributes` (service-account-token mode), which pullcheck
    /// does not run.
    ServiceAccountTokenUnsupported,
}

impl ProviderFailure {
    /// The `kind` it serialises with.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderFailure::Missing => "missing",
            ProviderFailure::Spawn { .. } => "spawn",
            ProviderFailure::Exited { .. } => "exited",
            ProviderFailure::TimedOut { .. } => "timed_out",
            ProviderFailure::OutputTooLarge => "output_too_large",
            ProviderFailure::BadResponse => "bad_response",
            ProviderFailure::ApiVersionMismatch { .. } => "api_version_mismatch",
            ProviderFailure::InvalidCacheKeyType => "invalid_cache_key_type",
            ProviderFailure::ServiceAccountTokenUnsupported => "service_account_token_unsupported",
        }
    }
}

impl std::fmt::Display for ProviderFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderFailure::Missing => f.write_str("program not found"),
            ProviderFailure::Spawn { error } => write!(f, "cannot start: {error}"),
            ProviderFailure::Exited { code: Some(code) } => {
                write!(f, "exited with status {code} (output withheld)")
            }
            ProviderFailure::Exited { code: None } => {
                f.write_str("killed by a signal (output withheld)")
            }
            ProviderFailure::TimedOut { after_ms } => {
                write!(f, "no answer within {after_ms} ms; killed")
            }
            ProviderFailure::OutputTooLarge => {
                f.write_str("it wrote more than 1 MiB; killed (output withheld)")
            }
            ProviderFailure::BadResponse => {
                f.write_str("its output is not a CredentialProviderResponse (output withheld)")
            }
            ProviderFailure::ApiVersionMismatch { expected } => {
                write!(f, "the response's apiVersion is not {expected}")
            }
            ProviderFailure::InvalidCacheKeyType => f.write_str(
                "the response's cacheKeyType is not Image, Registry or Global",
            ),
            ProviderFailure::ServiceAccountTokenUnsupported => f.write_str(
                "it uses tokenAttributes (service-account-token mode), which pullcheck does not run",
            ),
        }
    }
}

/// A provider that failed for an image: its name and how. Serialised as
/// `{"provider": "<name>", "kind": …, …}` (the [`ProviderFailure`] flattened).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ProviderError {
    /// The provider's `name`.
    pub provider: String,
    /// What went wrong.
    #[serde(flatten)]
    pub failure: ProviderFailure,
}

/// A provider that applies to an image (for `explain` and the chain): which one, and
/// the `matchImages` entry that matched.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ProviderCall {
    /// The provider's `name`.
    pub provider: String,
    /// The `matchImages` entry that matched, as written.
    pub match_image: String,
    /// The config file that names it.
    pub configured_in: String,
    /// Its index in [`CredentialProviders`].
    #[serde(skip)]
    pub index: usize,
}

impl ProviderCall {
    /// `credential provider <name>`.
    pub fn describe(&self) -> String {
        format!("credential provider {}", self.provider)
    }
}

/// Where the plugins are and how long one may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderOptions {
    /// `--image-credential-provider-config`: a file or a directory of files.
    pub config: PathBuf,
    /// `--image-credential-provider-bin-dir`: where the programs are.
    pub bin_dir: PathBuf,
    /// The most one run may take (default [`DEFAULT_TIMEOUT`], the kubelet's).
    pub timeout: Duration,
}

/// The cache key type of an answer (`cacheKeyType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    Image,
    Registry,
    Global,
}

/// One answer: its auth entries, and the key it is valid for.
#[derive(Debug)]
struct Answer {
    key: String,
    /// (key as written, user name, password), in document order.
    auth: Vec<(String, String, Secret)>,
}

type Flight = Result<Arc<Answer>, ProviderFailure>;

/// One provider with its program, cache and flights.
#[derive(Debug)]
struct Plugin {
    provider: Provider,
    program: PathBuf,
    /// key → (expiry, answer).
    cache: Mutex<HashMap<String, (Instant, Arc<Answer>)>>,
    /// flight key → the run in flight.
    flights: Mutex<HashMap<String, Arc<OnceCell<Flight>>>>,
    /// The `cacheKeyType` of its last answer.
    learned: Mutex<Option<KeyType>>,
}

/// The node's credential provider plugins, with their caches: one per process, shared
/// by every check (clone the `Arc`).
#[derive(Debug)]
pub struct CredentialProviders {
    plugins: Vec<Plugin>,
    timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The cache keys of an image, in lookup order: image, registry, global.
fn cache_keys(image: &str) -> [String; 3] {
    [
        format!("image:{image}"),
        format!("registry:{}", registry_of(image)),
        "global".to_owned(),
    ]
}

/// The kubelet's `parseRegistry`: the image up to its first `/`.
fn registry_of(image: &str) -> &str {
    image.split('/').next().unwrap_or(image)
}

impl CredentialProviders {
    /// Reads the config ([`ProviderConfig::load`]) and finds every provider's program
    /// in the bin directory.
    ///
    /// # Errors
    /// The config's errors; [`CredentialError::ProviderConfig`] naming the bin
    /// directory when it does not exist, or the provider whose program is not there.
    pub fn load(options: &ProviderOptions) -> Result<CredentialProviders, CredentialError> {
        let config = ProviderConfig::load(&options.config)?;
        if !options.bin_dir.is_dir() {
            return Err(config_error(
                &options.bin_dir,
                vec!["the plugin binary directory does not exist".into()],
            ));
        }
        CredentialProviders::new(config, &options.bin_dir, options.timeout)
    }

    /// The providers of `config`, their programs in `bin_dir`.
    ///
    /// # Errors
    /// [`CredentialError::ProviderConfig`] naming a provider whose program is not a
    /// file in `bin_dir`.
    pub fn new(
        config: ProviderConfig,
        bin_dir: &Path,
        timeout: Duration,
    ) -> Result<CredentialProviders, CredentialError> {
        let mut plugins = Vec::new();
        for (i, provider) in config.providers.into_iter().enumerate() {
            let program = bin_dir.join(&provider.name);
            if !program.is_file() {
                return Err(config_error(
                    &provider.configured_in,
                    vec![format!(
                        "providers[{i}].name: plugin binary executable {} does not exist",
                        program.display()
                    )],
                ));
            }
            plugins.push(Plugin {
                provider,
                program,
                cache: Mutex::default(),
                flights: Mutex::default(),
                learned: Mutex::default(),
            });
        }
        Ok(CredentialProviders { plugins, timeout })
    }

    /// The providers, in order.
    pub fn providers(&self) -> impl Iterator<Item = &Provider> {
        self.plugins.iter().map(|p| &p.provider)
    }

    /// Every provider whose `matchImages` matches `image` (a normalised repository), in
    /// order, with the entry that matched. Runs nothing.
    pub fn calls_for(&self, image: &str) -> Vec<ProviderCall> {
        self.plugins
            .iter()
            .enumerate()
            .filter_map(|(index, p)| {
                p.provider.matching_entry(image).map(|m| ProviderCall {
                    provider: p.provider.name.clone(),
                    match_image: m.to_owned(),
                    configured_in: p.provider.configured_in.display().to_string(),
                    index,
                })
            })
            .collect()
    }

    /// Runs (or answers from cache) the providers of `calls` for `image` and returns
    /// the credentials their answers hold for it, in the kubelet's order: all answers'
    /// `auth` keys in one keyring (reverse lexical order; for one key, earlier
    /// providers first), looked up as [`Keyring::lookup_image`]; plus each provider
    /// that failed. `deadline` bounds every run together with the per-plugin timeout.
    pub async fn credentials_for(
        &self,
        image: &str,
        calls: &[ProviderCall],
        deadline: Option<tokio::time::Instant>,
    ) -> (Vec<ResolvedCredential>, Vec<ProviderError>) {
        let mut keyring = Keyring::new();
        let mut failures = Vec::new();
        for call in calls {
            let Some(plugin) = self.plugins.get(call.index) else {
                continue;
            };
            match plugin.provide(image, self.timeout, deadline).await {
                Ok(answer) => {
                    for (key, username, password) in &answer.auth {
                        // A key Go cannot parse is skipped, as the kubelet's keyring
                        // skips it.
                        let _ = keyring.add_entry(
                            key,
                            ResolvedCredential {
                                credential: basic_or_anonymous(username, password),
                                source: CredentialSource {
                                    source: plugin.provider.describe(),
                                    key: pullcheck_mirrors::url::redact_userinfo(key).into_owned(),
                                    username: Some(username.clone()).filter(|u| !u.is_empty()),
                                },
                            },
                        );
                    }
                }
                Err(failure) => {
                    tracing::debug!(
                        provider = %plugin.provider.name,
                        image,
                        failure = failure.kind(),
                        "credential provider failed"
                    );
                    failures.push(ProviderError {
                        provider: plugin.provider.name.clone(),
                        failure,
                    });
                }
            }
        }
        (keyring.lookup_image(image), failures)
    }
}

impl Plugin {
    fn cached(&self, image: &str, now: Instant) -> Option<Arc<Answer>> {
        let cache = lock(&self.cache);
        cache_keys(image).iter().find_map(|k| {
            cache
                .get(k)
                .filter(|(expires, _)| *expires > now)
                .map(|(_, a)| Arc::clone(a))
        })
    }

    fn flight_key(&self, image: &str) -> String {
        match *lock(&self.learned) {
            None => "first".to_owned(),
            Some(KeyType::Image) => format!("image:{image}"),
            Some(KeyType::Registry) => format!("registry:{}", registry_of(image)),
            Some(KeyType::Global) => "global".to_owned(),
        }
    }

    async fn provide(
        &self,
        image: &str,
        timeout: Duration,
        deadline: Option<tokio::time::Instant>,
    ) -> Flight {
        if self.provider.service_account_token {
            return Err(ProviderFailure::ServiceAccountTokenUnsupported);
        }
        // At most two coalesced waits: the first run (before the key type is known)
        // may have been for another image; after it, flights follow the learned key.
        for _ in 0..2 {
            if let Some(answer) = self.cached(image, Instant::now()) {
                return Ok(answer);
            }
            let key = self.flight_key(image);
            let cell = Arc::clone(lock(&self.flights).entry(key.clone()).or_default());
            let result = cell
                .get_or_init(|| self.run(image, timeout, deadline))
                .await
                .clone();
            {
                let mut flights = lock(&self.flights);
                if flights.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                    flights.remove(&key);
                }
            }
            match result {
                Ok(answer) if !cache_keys(image).contains(&answer.key) => continue,
                other => return other,
            }
        }
        self.run(image, timeout, deadline).await
    }

    /// One run of the program for `image`; a cacheable answer is cached.
    async fn run(
        &self,
        image: &str,
        timeout: Duration,
        deadline: Option<tokio::time::Instant>,
    ) -> Flight {
        let timeout = match deadline {
            Some(d) => timeout.min(d.saturating_duration_since(tokio::time::Instant::now())),
            None => timeout,
        };
        let request = serde_json::json!({
            "apiVersion": self.provider.api_version,
            "kind": "CredentialProviderRequest",
            "image": image,
        });
        tracing::debug!(provider = %self.provider.name, image, "running credential provider");
        let output = exec::run_bounded(
            &self.program,
            &self.provider.args,
            &self.provider.env,
            request.to_string().into_bytes(),
            timeout,
        )
        .await
        .map_err(|failure| match failure {
            ExecFailure::Missing => ProviderFailure::Missing,
            ExecFailure::Spawn(error) => ProviderFailure::Spawn { error },
            ExecFailure::TimedOut => ProviderFailure::TimedOut {
                after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            },
            ExecFailure::OutputTooLarge => ProviderFailure::OutputTooLarge,
        })?;
        if !output.status.success() {
            return Err(ProviderFailure::Exited {
                code: output.status.code(),
            });
        }
        let (key_type, cache_duration, auth) =
            decode_response(&output.stdout, &self.provider.api_version)?;
        *lock(&self.learned) = Some(key_type);
        let [image_key, registry_key, global_key] = cache_keys(image);
        let key = match key_type {
            KeyType::Image => image_key,
            KeyType::Registry => registry_key,
            KeyType::Global => global_key,
        };
        let answer = Arc::new(Answer { key, auth });
        let keep = cache_duration.unwrap_or(self.provider.default_cache_duration);
        if !keep.is_zero() {
            let now = Instant::now();
            let mut cache = lock(&self.cache);
            if cache.len() >= CACHE_LIMIT {
                cache.retain(|_, (expires, _)| *expires > now);
            }
            if cache.len() >= CACHE_LIMIT
                && let Some(k) = cache.keys().next().cloned()
            {
                cache.remove(&k);
            }
            if let Some(expires) = now.checked_add(keep) {
                cache.insert(answer.key.clone(), (expires, Arc::clone(&answer)));
            }
        }
        Ok(answer)
    }
}

type Decoded3 = (KeyType, Option<Duration>, Vec<(String, String, Secret)>);

/// A `CredentialProviderResponse`, decoded strictly.
fn decode_response(stdout: &[u8], api_version: &str) -> Result<Decoded3, ProviderFailure> {
    let root = tree::parse_json(stdout).map_err(|_| ProviderFailure::BadResponse)?;
    if root.get_str("apiVersion") != Some(api_version) {
        return Err(ProviderFailure::ApiVersionMismatch {
            expected: api_version.to_owned(),
        });
    }
    let mut errors = Vec::new();
    let members = strict_members(
        &root,
        &[
            "apiVersion",
            "kind",
            "cacheKeyType",
            "cacheDuration",
            "auth",
        ],
        "",
        &mut errors,
    );
    let get = |name: &str| members.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    if get("kind")
        .and_then(|v| string_of(v, "kind", &mut errors))
        .as_deref()
        != Some("CredentialProviderResponse")
    {
        return Err(ProviderFailure::BadResponse);
    }
    let key_type = get("cacheKeyType").and_then(|v| string_of(v, "cacheKeyType", &mut errors));
    let cache_duration = match get("cacheDuration").and_then(|v| string_of(v, "", &mut errors)) {
        None => None,
        Some(text) => match parse_go_duration(&text) {
            Ok((false, d)) => Some(d),
            // A negative duration has expired already: nothing is kept.
            Ok((true, _)) => Some(Duration::ZERO),
            Err(()) => return Err(ProviderFailure::BadResponse),
        },
    };
    let mut auth = Vec::new();
    if let Some(node) = get("auth") {
        let entries = tree::go_map(node, "auth").map_err(|_| ProviderFailure::BadResponse)?;
        for (key, entry) in entries {
            let fields = strict_members(entry, &["username", "password"], "auth", &mut errors);
            let field = |name: &str, errors: &mut Vec<String>| {
                fields
                    .iter()
                    .find(|(k, _)| *k == name)
                    .and_then(|(_, v)| string_of(v, name, errors))
                    .unwrap_or_default()
            };
            let username = field("username", &mut errors);
            let password = Secret::new(field("password", &mut errors));
            auth.push((key.to_owned(), username, password));
        }
    }
    // The errors name fields only, but the response is withheld as a whole.
    if !errors.is_empty() {
        return Err(ProviderFailure::BadResponse);
    }
    let key_type = match key_type.as_deref() {
        Some("Image") => KeyType::Image,
        Some("Registry") => KeyType::Registry,
        Some("Global") => KeyType::Global,
        _ => return Err(ProviderFailure::InvalidCacheKeyType),
    };
    Ok((key_type, cache_duration, auth))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ProviderConfig, Vec<String>> {
        ProviderConfig::parse(Path::new("c.yaml"), text).map_err(|e| match e {
            CredentialError::ProviderConfig { errors, .. } => errors,
            other => vec![other.to_string()],
        })
    }

    const GOOD: &str = r#"
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: ecr-credential-provider
    matchImages: ["*.dkr.ecr.*.amazonaws.com", "*.dkr.ecr.*.amazonaws.com.cn"]
    defaultCacheDuration: "12h"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: [get-credentials]
    env:
      - name: AWS_PROFILE
        value: node
"#;

    #[test]
    fn a_node_config_parses() {
        let config = parse(GOOD).expect("valid");
        let p = &config.providers[0];
        assert_eq!(p.name, "ecr-credential-provider");
        assert_eq!(p.default_cache_duration, Duration::from_secs(12 * 3600));
        assert_eq!(p.args, vec!["get-credentials"]);
        assert_eq!(p.env, vec![("AWS_PROFILE".into(), "node".into())]);
        assert_eq!(
            p.matching_entry("123.dkr.ecr.us-east-1.amazonaws.com/app"),
            Some("*.dkr.ecr.*.amazonaws.com")
        );
        assert_eq!(p.matching_entry("docker.io/library/nginx"), None);
    }

    fn one_provider(match_image: &str) -> Result<ProviderConfig, Vec<String>> {
        parse(&format!(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{{name: p, matchImages: [{match_image:?}], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}}]\n"
        ))
    }

    /// The port is matched in both directions, and is a number, never a glob.
    #[test]
    fn the_port_matches_both_ways_and_is_no_glob() {
        let with_port = one_provider("registry.example.com:5000").expect("valid");
        let with_port = &with_port.providers[0];
        assert_eq!(
            with_port.matching_entry("registry.example.com:5000/team/app"),
            Some("registry.example.com:5000")
        );
        assert_eq!(
            with_port.matching_entry("registry.example.com/team/app"),
            None
        );
        assert_eq!(
            with_port.matching_entry("registry.example.com:5001/team/app"),
            None
        );
        let without = one_provider("*.example.com").expect("valid");
        let without = &without.providers[0];
        assert_eq!(
            without.matching_entry("registry.example.com/team/app"),
            Some("*.example.com")
        );
        assert_eq!(
            without.matching_entry("registry.example.com:5000/team/app"),
            None
        );
        let errors = one_provider("registry.example.com:*").expect_err("a glob port");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with(
                "providers[0].matchImages[0]: Invalid value: \"registry.example.com:*\""
            ),
            "{errors:?}"
        );
    }

    // The cases of kubernetes pkg/credentialprovider/plugin/config_test.go
    // (TestValidateCredentialProviderConfig), each with the field it names.
    #[test]
    fn validation_names_the_field() {
        let cases: &[(&str, &str)] = &[
            ("providers: []", "providers: Required value"),
            (
                "providers: [{name: 'a/b', matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]",
                "providers[0].name: Invalid value: \"a/b\": provider name cannot contain '/'",
            ),
            (
                "providers: [{name: 'a b', matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]",
                "providers[0].name: Invalid value: \"a b\": provider name cannot contain spaces",
            ),
            (
                "providers: [{name: '..', matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]",
                "providers[0].name: Invalid value: \"..\": provider name cannot be '..'",
            ),
            (
                "providers: [{name: a, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}, {name: a, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]",
                "providers[1].name: Duplicate value: \"a\"",
            ),
            (
                "providers: [{name: a, matchImages: [x.io], defaultCacheDuration: 1m}]",
                "providers[0].apiVersion: Required value",
            ),
            (
                "providers: [{name: a, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v2}]",
                "providers[0].apiVersion: Unsupported value",
            ),
            (
                "providers: [{name: a, matchImages: [], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]",
                "providers[0].matchImages: Required value",
            ),
            (
                "providers: [{name: a, matchImages: ['%invalid%'], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]",
                "providers[0].matchImages[0]: Invalid value: \"%invalid%\"",
            ),
            (
                "providers: [{name: a, matchImages: [x.io], apiVersion: credentialprovider.kubelet.k8s.io/v1}]",
                "providers[0].defaultCacheDuration: Required value",
            ),
            (
                "providers: [{name: a, matchImages: [x.io], defaultCacheDuration: -1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}]",
                "providers[0].defaultCacheDuration: Invalid value: defaultCacheDuration must be greater than or equal to 0",
            ),
            (
                "providers: [{name: a, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1, extra: 1}]",
                "providers[0].extra: unknown field",
            ),
            (
                "providers: [{name: a, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1beta1, tokenAttributes: {serviceAccountTokenAudience: aud, requireServiceAccount: true, cacheType: Token}}]",
                "providers[0].tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version",
            ),
            (
                "providers: [{name: a, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1, tokenAttributes: {serviceAccountTokenAudience: aud, requireServiceAccount: true}}]",
                "providers[0].tokenAttributes.cacheType: Required value",
            ),
        ];
        for (providers, expected) in cases {
            let text = format!(
                "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n{providers}\n"
            );
            let errors = parse(&text).expect_err(providers);
            assert!(
                errors.iter().any(|e| e.starts_with(expected)),
                "{providers}: {errors:?}"
            );
        }
    }

    #[test]
    fn the_config_kind_and_version_are_checked() {
        let errors = parse("apiVersion: kubelet.config.k8s.io/v2\nkind: Pod\nproviders: []\n")
            .expect_err("wrong kind");
        assert!(
            errors[0].starts_with("apiVersion: Unsupported value: \"kubelet.config.k8s.io/v2\"")
        );
        assert_eq!(errors[1], "kind: \"Pod\" is not CredentialProviderConfig");
        // JSON is YAML; v1beta1 and v1alpha1 are read too.
        let json = r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"CredentialProviderConfig","providers":[{"name":"p","matchImages":["r.io"],"defaultCacheDuration":"0","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1"}]}"#;
        let config = parse(json).expect("v1beta1 JSON");
        assert_eq!(config.providers[0].default_cache_duration, Duration::ZERO);
    }

    #[test]
    fn go_durations_have_values() {
        let ok = [
            ("0", (false, 0)),
            ("12h", (false, 43_200_000)),
            ("1h30m", (false, 5_400_000)),
            ("1.5s", (false, 1_500)),
            ("-1m", (true, 60_000)),
            ("250ms", (false, 250)),
        ];
        for (text, (neg, ms)) in ok {
            assert_eq!(
                parse_go_duration(text),
                Ok((neg, Duration::from_millis(ms))),
                "{text}"
            );
        }
        for bad in ["", "12", "1d", "h", "1..2s", "1 h"] {
            assert_eq!(parse_go_duration(bad), Err(()), "{bad}");
        }
    }

    #[test]
    fn responses_are_decoded_strictly() {
        const V1: &str = "credentialprovider.kubelet.k8s.io/v1";
        let good = br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"5m","auth":{"r.io":{"username":"u","password":"p"}}}"#;
        let (key_type, duration, auth) = decode_response(good, V1).expect("valid");
        assert_eq!(key_type, KeyType::Registry);
        assert_eq!(duration, Some(Duration::from_secs(300)));
        assert_eq!(auth.len(), 1);
        assert_eq!((auth[0].0.as_str(), auth[0].1.as_str()), ("r.io", "u"));
        assert_eq!(auth[0].2.expose(), "p");
        let cases: [(&[u8], ProviderFailure); 5] = [
            (b"not json", ProviderFailure::BadResponse),
            (
                br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","kind":"CredentialProviderResponse","cacheKeyType":"Image"}"#,
                ProviderFailure::ApiVersionMismatch { expected: V1.into() },
            ),
            (
                br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Pod"}"#,
                ProviderFailure::InvalidCacheKeyType,
            ),
            (
                br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Image","extra":1}"#,
                ProviderFailure::BadResponse,
            ),
            (
                br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"Other","cacheKeyType":"Image"}"#,
                ProviderFailure::BadResponse,
            ),
        ];
        for (bytes, expected) in cases {
            assert_eq!(
                decode_response(bytes, V1).map(|_| ()),
                Err(expected),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
