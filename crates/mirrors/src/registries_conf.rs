//! containers-registries.conf v2, as CRI-O, podman and skopeo read it through
//! containers/image `pkg/sysregistriesv2`.
//!
//! - **Files:** one main file (v1 or v2), then `registries.conf.d/*.conf` drop-ins in
//!   lexical order, which must be v2. A drop-in's `[[registry]]` replaces the entry with
//!   the same `prefix` (upstream `updateWithConfigurationFrom`); its
//!   `unqualified-search-registries`, when present, replaces the list.
//! - **Per file** (upstream `loadConfigFile` and `postProcessRegistries`): v1
//!   `[registries.search|insecure|block]` is converted to v2; v1 and v2 keys in one file
//!   are an error; `location` and `prefix` lose trailing `/` and may not carry a URL
//!   scheme; `prefix` defaults to `location`; a wildcard prefix `*.example.com` may have
//!   no `location` but no `/`, `@` or `:`; entries sharing a location must agree on
//!   `insecure`, `blocked` and `proxy`; `pull-from-mirror` only on mirrors, never together
//!   with `mirror-by-digest-only`; then the first entry of each prefix wins and entries
//!   are sorted by prefix.
//! - **Matching** (`FindRegistry`, `refMatchingPrefix`): the longest prefix matching the
//!   repository name; a prefix matches when the name equals it or continues with `:`,
//!   `/` or `@`; `*.example.com` matches any subdomain depth of `example.com` but not
//!   `example.com` itself.
//! - **Sources** (`PullSourcesFromReference`): mirrors in order, those whose
//!   `pull-from-mirror` excludes this kind of reference left out (all of them for a tag
//!   when `mirror-by-digest-only`), then the primary `location`; each with the reference
//!   rewritten as `location + rest after prefix`, which must be a canonical reference.
//! - **Blocked** (docker `newDockerClient`): checked for each source's rewritten
//!   reference; a blocked source is skipped with an error, so a blocked registry's
//!   mirrors are still tried.
//! - **Credentials in values** are never shown: a `location`, `prefix` or `proxy` with
//!   user info (`user:pw@host`) appears as `user:***@host` in errors, rules, reasons and
//!   [`Endpoint::proxy`]. (Upstream accepts such a location; the rewritten reference
//!   cannot parse, so the pull fails.)
//! - **Wildcards**: upstream rejects a `*.` prefix with `/`, `@` or `:`, and nothing else;
//!   any other `*` (`*.*.example.com`, `registry.*.com`) is accepted but matched
//!   literally, so it matches no image. Such an entry is kept, with a
//!   [`RegistriesConf::warnings`] line naming the file and entry.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use pullcheck_reference::{Reference, grammar};
use serde::Deserialize;

use crate::MirrorError;
use crate::endpoint::{CredentialRule, Endpoint, Resolution};
use crate::redact::{redact_location, redact_values};
use crate::text::{read_text, toml_error};
use crate::url::{api_host, parse_url};

/// Which references a mirror serves (`pull-from-mirror`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PullFromMirror {
    /// Tags and digests (`all`, or unset).
    #[default]
    All,
    /// Digest references only (`digest-only`).
    DigestOnly,
    /// Tag references only (`tag-only`).
    TagOnly,
}

impl PullFromMirror {
    /// The value as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            PullFromMirror::All => "all",
            PullFromMirror::DigestOnly => "digest-only",
            PullFromMirror::TagOnly => "tag-only",
        }
    }
}

/// A `[[registry.mirror]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// Where the mirror is: `host[:port][/path]`, trailing `/` removed.
    pub location: String,
    /// Skip TLS verification and allow plain HTTP.
    pub insecure: bool,
    /// Which references it serves.
    pub pull_from_mirror: PullFromMirror,
    /// `proxy`: a forwarding proxy URL (`http`, `https`, `socks5`, `socks5h`).
    pub proxy: Option<String>,
}

/// A `[[registry]]` entry after post-processing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// What it matches: a host, a namespace, a repository, or `*.domain`.
    pub prefix: String,
    /// Where the primary is; empty only with a wildcard prefix (no rewrite then).
    pub location: String,
    /// Skip TLS verification and allow plain HTTP for the primary.
    pub insecure: bool,
    /// Refuse pulls whose rewritten reference falls under this prefix.
    pub blocked: bool,
    /// Use the mirrors for digest references only.
    pub mirror_by_digest_only: bool,
    /// `proxy` for the primary.
    pub proxy: Option<String>,
    /// The mirrors, in file order.
    pub mirrors: Vec<Mirror>,
    /// Where it was written: `file:line [[registry]] #n`, or for a converted v1 file
    /// `file [registries.block] "host"`.
    pub origin: String,
}

impl Registry {
    fn rule(&self) -> String {
        format!(
            "registries.conf {} prefix={:?}",
            self.origin,
            redact_location(&self.prefix)
        )
    }
}

/// The merged registries.conf configuration: main file plus drop-ins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistriesConf {
    registries: Vec<Registry>,
    unqualified_search_registries: Vec<String>,
    files: Vec<String>,
    /// `[[registry]]` entries that repeat an earlier entry's prefix in the same file,
    /// which containers/image ignores: `(prefix, ignored origin, kept origin)`.
    shadowed: Vec<(String, String, String)>,
}

// ---- raw TOML shapes (field names as upstream's struct tags) ----

#[derive(Deserialize)]
struct RawFile {
    registry: Option<Vec<toml::Spanned<RawRegistry>>>,
    #[serde(rename = "unqualified-search-registries")]
    unqualified_search_registries: Option<Vec<String>>,
    #[serde(rename = "credential-helpers")]
    credential_helpers: Option<Vec<String>>,
    #[serde(rename = "short-name-mode")]
    short_name_mode: Option<String>,
    #[serde(rename = "additional-layer-store-auth-helper")]
    additional_layer_store_auth_helper: Option<String>,
    aliases: Option<BTreeMap<String, String>>,
    registries: Option<RawV1>,
}

#[derive(Deserialize)]
struct RawV1 {
    search: Option<RawV1List>,
    insecure: Option<RawV1List>,
    block: Option<RawV1List>,
}

#[derive(Deserialize)]
struct RawV1List {
    registries: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawRegistry {
    prefix: String,
    location: String,
    insecure: bool,
    blocked: bool,
    #[serde(rename = "mirror-by-digest-only")]
    mirror_by_digest_only: bool,
    proxy: String,
    #[serde(rename = "pull-from-mirror")]
    pull_from_mirror: String,
    mirror: Vec<RawMirror>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMirror {
    location: String,
    insecure: bool,
    proxy: String,
    #[serde(rename = "pull-from-mirror")]
    pull_from_mirror: String,
}

/// One `[[registry]]` before post-processing, with its label for messages.
struct Entry {
    raw: RawRegistry,
    /// `[[registry]] #n (line L)` or `[registries.block] "host"`.
    label: String,
    /// `file:line [[registry]] #n`.
    origin: String,
}

impl Entry {
    fn name(&self) -> String {
        let mut s = self.label.clone();
        if !self.raw.prefix.is_empty() {
            s.push_str(&format!(" prefix={:?}", redact_location(&self.raw.prefix)));
        }
        if !self.raw.location.is_empty() {
            s.push_str(&format!(
                " location={:?}",
                redact_location(&self.raw.location)
            ));
        }
        s
    }

    /// The values written in this entry that may carry user info, for masking messages.
    fn secrets(&self) -> Vec<&str> {
        let mut v = vec![
            self.raw.prefix.as_str(),
            self.raw.location.as_str(),
            self.raw.prefix.trim_end_matches('/'),
            self.raw.location.trim_end_matches('/'),
            self.raw.proxy.as_str(),
        ];
        for m in &self.raw.mirror {
            v.extend([
                m.location.as_str(),
                m.location.trim_end_matches('/'),
                m.proxy.as_str(),
            ]);
        }
        v
    }
}

struct ParsedFile {
    conf: RegistriesConf,
    /// Whether the file set `unqualified-search-registries` (even to `[]`).
    sets_search: bool,
}

impl RegistriesConf {
    /// Parses one main registries.conf file (v1 or v2). `file` names it in messages
    /// and rules.
    ///
    /// # Errors
    /// [`MirrorError::Syntax`] for TOML errors and wrong value types;
    /// [`MirrorError::Invalid`] for what upstream's `loadConfigFile` rejects, naming the
    /// entry: mixing v1 and v2, a `location`/`prefix` with `http://` or `https://`, both
    /// unset, no `location` for a non-wildcard prefix, a badly formed wildcard prefix, a
    /// mirror without `location`, conflicting `insecure`/`blocked`/`proxy` for one
    /// location, `pull-from-mirror` on a registry, with `mirror-by-digest-only`, or with
    /// an unknown value, a bad proxy URL, an invalid `unqualified-search-registries`
    /// entry, `short-name-mode`, or `[aliases]` entry.
    pub fn parse(file: &str, text: &str) -> Result<RegistriesConf, MirrorError> {
        Ok(parse_file(file, text, false)?.conf)
    }

    /// Parses one file as a drop-in: as [`RegistriesConf::parse`], but the v1 format
    /// is an error (upstream: "registry must be in v2 format but is in v1").
    ///
    /// # Errors
    /// As [`RegistriesConf::parse`].
    pub fn parse_drop_in(file: &str, text: &str) -> Result<RegistriesConf, MirrorError> {
        Ok(parse_file(file, text, true)?.conf)
    }

    /// Reads `main`, then every `*.conf` file directly in `drop_in_dir` (when given
    /// and present) in lexical order, merging them. `main` must exist.
    ///
    /// # Errors
    /// [`MirrorError::Read`] when `main` or a drop-in cannot be read or the directory
    /// cannot be listed; otherwise as [`RegistriesConf::parse`], for the file at fault.
    pub fn load(main: &Path, drop_in_dir: Option<&Path>) -> Result<RegistriesConf, MirrorError> {
        Self::load_inner(main, drop_in_dir, false)
    }

    /// As [`RegistriesConf::load`], but a missing `main` counts as empty, as upstream
    /// treats the default `/etc/containers/registries.conf`.
    ///
    /// # Errors
    /// As [`RegistriesConf::load`].
    pub fn load_system(
        main: &Path,
        drop_in_dir: Option<&Path>,
    ) -> Result<RegistriesConf, MirrorError> {
        Self::load_inner(main, drop_in_dir, true)
    }

    fn load_inner(
        main: &Path,
        drop_in_dir: Option<&Path>,
        missing_ok: bool,
    ) -> Result<RegistriesConf, MirrorError> {
        let label = main.display().to_string();
        let mut conf = match read_text(main) {
            Ok(text) => parse_file(&label, &text, false)?.conf,
            Err(_) if missing_ok && !main.exists() => RegistriesConf::default(),
            Err(e) => return Err(e),
        };
        if let Some(dir) = drop_in_dir {
            for path in drop_in_files(dir)? {
                let label = path.display().to_string();
                let text = match read_text(&path) {
                    Ok(t) => t,
                    // Removed between listing and reading: upstream ignores it too.
                    Err(_) if !path.exists() => continue,
                    Err(e) => return Err(e),
                };
                let parsed = parse_file(&label, &text, true)?;
                conf.merge(parsed);
            }
        }
        Ok(conf)
    }

    /// Merges a drop-in parsed with [`RegistriesConf::parse_drop_in`] over this one:
    /// its registries replace those with the same prefix; its
    /// `unqualified-search-registries` replace the list when it sets them.
    pub fn merge_drop_in(&mut self, file: &str, text: &str) -> Result<(), MirrorError> {
        let parsed = parse_file(file, text, true)?;
        self.merge(parsed);
        Ok(())
    }

    fn merge(&mut self, update: ParsedFile) {
        let mut by_prefix: BTreeMap<String, Registry> = std::mem::take(&mut self.registries)
            .into_iter()
            .map(|r| (r.prefix.clone(), r))
            .collect();
        // A drop-in's entry replaces the prefix whatever the earlier file held.
        // A set first: a drop-in of many entries against many repeated prefixes stays
        // linear.
        let replaced: std::collections::HashSet<&str> = update
            .conf
            .registries
            .iter()
            .map(|r| r.prefix.as_str())
            .collect();
        self.shadowed
            .retain(|(prefix, _, _)| !replaced.contains(prefix.as_str()));
        for r in update.conf.registries {
            by_prefix.insert(r.prefix.clone(), r);
        }
        self.shadowed.extend(update.conf.shadowed);
        self.registries = by_prefix.into_values().collect();
        if update.sets_search {
            self.unqualified_search_registries = update.conf.unqualified_search_registries;
        }
        self.files.extend(update.conf.files);
    }

    /// The registries, sorted by prefix, one per prefix.
    pub fn registries(&self) -> &[Registry] {
        &self.registries
    }

    /// `unqualified-search-registries` (also from a v1 `[registries.search]`). Not used
    /// for resolution: references reach pullcheck already normalised.
    pub fn unqualified_search_registries(&self) -> &[String] {
        &self.unqualified_search_registries
    }

    /// The files read, in order.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Entries that can never match an image, one sentence each naming the file, line and
    /// entry: a `prefix` with a `*` anywhere but a single leading `*.` (`*.*.example.com`,
    /// `registry.*.com`, `*`). containers/image rejects only a `*.` prefix with `/`, `@` or
    /// `:`; it accepts these and matches the `*` literally, so CRI-O never uses them.
    ///
    /// Then each `[[registry]]` that repeats an earlier entry's prefix in the same file:
    /// containers/image keeps the first and ignores it without a word
    /// (`postProcessRegistries`, system_registries_v2.go v5.23.1 lines 479–499).
    pub fn warnings(&self) -> Vec<String> {
        let shadowed = self.shadowed.iter().map(|(prefix, ignored, kept)| {
            format!(
                "registries.conf {ignored} prefix={:?} is never used: {kept} has the same prefix \
                 and containers/image keeps only the first entry of a prefix",
                redact_location(prefix)
            )
        });
        self.registries
            .iter()
            .filter(|r| {
                let rest = r.prefix.strip_prefix("*.").unwrap_or(&r.prefix);
                rest.contains('*')
            })
            .map(|r| {
                format!(
                    "registries.conf {} prefix={:?} can never match an image: containers/image \
                     accepts a wildcard only as a single leading `*.` (as in *.example.com) and \
                     matches any other `*` literally, so CRI-O keeps this entry but never uses it",
                    r.origin,
                    redact_location(&r.prefix)
                )
            })
            .chain(shadowed)
            .collect()
    }

    /// The registry with the longest prefix matching `name` (a host, namespace,
    /// repository name or full reference), as upstream `FindRegistry`; on equal lengths
    /// the first in prefix order wins.
    pub fn find_registry(&self, name: &str) -> Option<&Registry> {
        let mut best: Option<&Registry> = None;
        for r in &self.registries {
            if ref_matching_prefix(name, &r.prefix).is_some()
                && best.is_none_or(|b| r.prefix.len() > b.prefix.len())
            {
                best = Some(r);
            }
        }
        best
    }

    /// The endpoints CRI-O asks for `reference`, in order; see the module docs.
    pub fn resolve(&self, reference: &Reference) -> Resolution {
        let logical = logical_string(reference);
        let name = reference.repository();
        let digested = reference.digest().is_some();
        let fallback;
        let registry = match self.find_registry(&name) {
            Some(r) => r,
            None => {
                fallback = Registry {
                    prefix: logical.clone(),
                    location: logical.clone(),
                    insecure: false,
                    blocked: false,
                    mirror_by_digest_only: false,
                    proxy: None,
                    mirrors: Vec::new(),
                    origin: String::new(),
                };
                &fallback
            }
        };
        let matched = !registry.origin.is_empty();

        struct Source<'a> {
            location: &'a str,
            insecure: bool,
            proxy: Option<&'a String>,
            mirror: Option<usize>,
        }
        let mut sources = Vec::new();
        if !registry.mirror_by_digest_only || digested {
            for (i, m) in registry.mirrors.iter().enumerate() {
                let skip = match m.pull_from_mirror {
                    PullFromMirror::All => false,
                    PullFromMirror::DigestOnly => !digested,
                    PullFromMirror::TagOnly => digested,
                };
                if !skip {
                    sources.push(Source {
                        location: &m.location,
                        insecure: m.insecure,
                        proxy: m.proxy.as_ref(),
                        mirror: Some(i),
                    });
                }
            }
        }
        sources.push(Source {
            location: &registry.location,
            insecure: registry.insecure,
            proxy: registry.proxy.as_ref(),
            mirror: None,
        });

        let mut endpoints = Vec::with_capacity(sources.len());
        for s in sources {
            let rule = match (matched, s.mirror) {
                (true, Some(i)) => format!(
                    "{} mirror {} location={:?}{}",
                    registry.rule(),
                    i + 1,
                    redact_location(s.location),
                    match registry.mirrors[i].pull_from_mirror {
                        PullFromMirror::All => String::new(),
                        p => format!(" pull-from-mirror={:?}", p.as_str()),
                    }
                ),
                (true, None) => format!(
                    "{} location={:?} (primary)",
                    registry.rule(),
                    redact_location(&registry.location)
                ),
                (false, _) => format!(
                    "registries.conf: no [[registry]] prefix matches {name}; primary registry"
                ),
            };
            let rewritten = match rewrite_reference(&logical, &registry.prefix, s.location) {
                Ok(r) => r,
                Err(reason) => {
                    return Resolution::Unresolvable {
                        rule,
                        reason: redact_values(&reason, &[s.location, &registry.prefix]),
                    };
                }
            };
            let physical = match Reference::parse_normalized(&rewritten) {
                Ok(p) if !p.domain().is_empty() => p,
                _ => {
                    return Resolution::Unresolvable {
                        rule,
                        reason: format!(
                            "rewritten reference {:?} names no registry host",
                            redact_location(&rewritten)
                        ),
                    };
                }
            };
            let blocked = self
                .find_registry(&physical.repository())
                .filter(|b| b.blocked)
                .map(|b| format!("{} blocked = true", b.rule()));
            let same_domain = physical.domain() == reference.domain();
            let credentials = if same_domain {
                CredentialRule {
                    lookup_host: Some(reference.domain().to_owned()),
                    pull_secrets: true,
                    rule: format!(
                        "containers/image sends the pull's credentials (the pod's pull secrets for {}) \
                         to endpoints on the image's own domain",
                        reference.domain()
                    ),
                }
            } else {
                CredentialRule {
                    lookup_host: Some(physical.domain().to_owned()),
                    pull_secrets: false,
                    rule: format!(
                        "containers/image does not send the pull secrets for {} to {} (another domain; \
                         docker_image_src.go newPullClient): CRI-O looks up credentials for {} in the \
                         node's auth files",
                        reference.domain(),
                        physical.domain(),
                        physical.domain()
                    ),
                }
            };
            let host = api_host(physical.domain()).to_owned();
            endpoints.push(Endpoint {
                url: format!("https://{host}/v2/"),
                host,
                repository: physical.path().to_owned(),
                reference: physical.manifest_reference().to_owned(),
                http_fallback: s.insecure,
                skip_verify: s.insecure,
                ca: Vec::new(),
                client_certs: Vec::new(),
                headers: Vec::new(),
                query: Vec::new(),
                is_mirror: s.mirror.is_some(),
                blocked,
                proxy: s.proxy.map(|p| redact_location(p)),
                over_tls_warning: None,
                over_plain_http_warning: None,
                rule,
                credentials,
            });
        }
        if endpoints.iter().all(|e| e.blocked.is_some()) {
            let rule = endpoints
                .last()
                .and_then(|e| e.blocked.clone())
                .unwrap_or_default();
            return Resolution::Blocked { rule };
        }
        Resolution::Endpoints(endpoints)
    }
}

/// `repository:tag` or `repository@digest`, with `latest` for a name-only reference:
/// what CRI-O hands containers/image (a reference with both keeps only the digest).
fn logical_string(r: &Reference) -> String {
    match r.digest() {
        Some(d) => format!("{}@{d}", r.repository()),
        None => format!("{}:{}", r.repository(), r.tag().unwrap_or("latest")),
    }
}

/// The `*.conf` files directly in `dir`, sorted by name; none when `dir` is missing.
fn drop_in_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, MirrorError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(MirrorError::read(dir, &e)),
    };
    let mut files = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| MirrorError::read(dir, &e))?;
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        let name = entry.file_name();
        if !is_dir && name.to_string_lossy().ends_with(".conf") {
            files.push(entry.path());
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

fn parse_file(file: &str, text: &str, force_v2: bool) -> Result<ParsedFile, MirrorError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| toml_error(file, text, &e))?;
    let v1_set = raw.registries.as_ref().is_some_and(|v1| {
        [&v1.search, &v1.insecure, &v1.block]
            .iter()
            .any(|l| l.as_ref().is_some_and(|l| l.registries.is_some()))
    });
    let v2_set = raw.registry.is_some()
        || raw.unqualified_search_registries.is_some()
        || raw.credential_helpers.is_some()
        || raw.short_name_mode.as_ref().is_some_and(|s| !s.is_empty())
        || raw
            .additional_layer_store_auth_helper
            .as_ref()
            .is_some_and(|s| !s.is_empty())
        || raw.aliases.is_some();

    let (entries, search, sets_search) = if v1_set {
        if force_v2 {
            return Err(MirrorError::invalid(
                file,
                "[registries]",
                "a drop-in must use the v2 format ([[registry]]), not v1 [registries.*] \
                 (upstream: registry must be in v2 format but is in v1)",
            ));
        }
        if v2_set {
            return Err(MirrorError::invalid(
                file,
                "[registries.search|insecure|block]",
                "mixing sysregistry v1/v2 is not supported: v1 [registries.*] lists and v2 keys \
                 ([[registry]], unqualified-search-registries, …) in one file",
            ));
        }
        convert_v1(file, raw.registries)?
    } else {
        // One index of the line starts: a line counted from the file's start for each
        // entry took time growing with the square of the file.
        let lines = crate::text::LineStarts::new(text);
        let entries = raw
            .registry
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let line = lines.line(s.span().start);
                Entry {
                    raw: s.into_inner(),
                    label: format!("[[registry]] #{} (line {line})", i + 1),
                    origin: format!("{file}:{line} [[registry]] #{}", i + 1),
                }
            })
            .collect();
        let sets = raw.unqualified_search_registries.is_some();
        (
            entries,
            raw.unqualified_search_registries.unwrap_or_default(),
            sets,
        )
    };

    let (registries, shadowed) = post_process(file, entries)?;

    let mut unqualified = Vec::with_capacity(search.len());
    for (i, s) in search.iter().enumerate() {
        let entry = format!(
            "unqualified-search-registries[{i}] {:?}",
            redact_location(s)
        );
        let loc = parse_location(s)
            .map_err(|m| MirrorError::invalid(file, &entry, redact_values(&m, &[s])))?;
        if !grammar::is_domain(&loc) {
            return Err(MirrorError::invalid(
                file,
                &entry,
                "not a registry host[:port] (a namespace or path is not allowed here)",
            ));
        }
        unqualified.push(loc);
    }

    if let Some(mode) = raw.short_name_mode.as_deref().filter(|m| !m.is_empty())
        && !matches!(mode, "disabled" | "enforcing" | "permissive")
    {
        return Err(MirrorError::invalid(
            file,
            format!("short-name-mode {mode:?}"),
            "invalid short-name mode: expected disabled, enforcing or permissive",
        ));
    }

    for r in &registries {
        if r.prefix.starts_with("*.") && r.prefix.contains(['/', '@', ':']) {
            return Err(MirrorError::invalid(
                file,
                r.origin.clone(),
                format!(
                    "wildcard prefix {:?} must be of the form *.example.com (no '/', '@' or ':')",
                    redact_location(&r.prefix)
                ),
            ));
        }
    }

    if let Some(aliases) = &raw.aliases {
        let errors: Vec<String> = aliases
            .iter()
            .flat_map(|(k, v)| validate_alias(k, v))
            .collect();
        if !errors.is_empty() {
            return Err(MirrorError::invalid(file, "[aliases]", errors.join("; ")));
        }
    }

    Ok(ParsedFile {
        conf: RegistriesConf {
            registries,
            unqualified_search_registries: unqualified,
            files: vec![file.to_owned()],
            shadowed,
        },
        sets_search,
    })
}

/// Upstream `ConvertToV2`: blocked, then insecure entries, one registry per location in
/// first-seen order; search entries become `unqualified-search-registries`.
fn convert_v1(
    file: &str,
    v1: Option<RawV1>,
) -> Result<(Vec<Entry>, Vec<String>, bool), MirrorError> {
    let v1 = v1.unwrap_or(RawV1 {
        search: None,
        insecure: None,
        block: None,
    });
    let list = |l: Option<RawV1List>| l.and_then(|l| l.registries).unwrap_or_default();
    let (search, insecure, block) = (list(v1.search), list(v1.insecure), list(v1.block));
    let mut order: Vec<String> = Vec::new();
    let mut map: HashMap<String, Entry> = HashMap::new();
    for (table, values) in [("block", &block), ("insecure", &insecure)] {
        for (i, value) in values.iter().enumerate() {
            let entry = format!(
                "[registries.{table}] registries[{i}] {:?}",
                redact_location(value)
            );
            let loc = parse_location(value)
                .map_err(|m| MirrorError::invalid(file, &entry, redact_values(&m, &[value])))?;
            let e = map.entry(loc.clone()).or_insert_with(|| {
                order.push(loc.clone());
                Entry {
                    raw: RawRegistry {
                        prefix: loc.clone(),
                        location: loc.clone(),
                        ..RawRegistry::default()
                    },
                    label: format!("[registries.{table}] {:?}", redact_location(&loc)),
                    origin: format!("{file} [registries.{table}] {:?}", redact_location(&loc)),
                }
            });
            match table {
                "block" => e.raw.blocked = true,
                _ => e.raw.insecure = true,
            }
        }
    }
    let entries = order.into_iter().filter_map(|l| map.remove(&l)).collect();
    Ok((entries, search, true))
}

/// Upstream `parseLocation`: trailing `/` removed; a URL scheme is an error. An empty
/// result is allowed here (checked by the caller, as upstream).
fn parse_location(input: &str) -> Result<String, String> {
    let trimmed = input.trim_end_matches('/');
    if trimmed.starts_with("http://") || trimmed.starts_with("https://") {
        return Err(format!(
            "invalid location {:?}: URI schemes are not supported",
            redact_location(input)
        ));
    }
    Ok(trimmed.to_owned())
}

/// Upstream `parseProxy`: empty is none; otherwise a URL with scheme http, https,
/// socks5 or socks5h.
fn parse_proxy(input: &str) -> Result<Option<String>, String> {
    if input.is_empty() {
        return Ok(None);
    }
    let url = parse_url(input).map_err(|e| {
        redact_values(
            &format!("parsing proxy URL {:?}: {e}", redact_location(input)),
            &[input],
        )
    })?;
    if !matches!(url.scheme.as_str(), "http" | "https" | "socks5" | "socks5h") {
        return Err(format!(
            "proxy URL scheme {:?} is not supported: use http, https, socks5 or socks5h",
            url.scheme
        ));
    }
    Ok(Some(input.to_owned()))
}

fn parse_pull_from_mirror(value: &str) -> Option<PullFromMirror> {
    match value {
        "" | "all" => Some(PullFromMirror::All),
        "digest-only" => Some(PullFromMirror::DigestOnly),
        "tag-only" => Some(PullFromMirror::TagOnly),
        _ => None,
    }
}

/// The registries of one file and the entries ignored for repeating a prefix
/// (`(prefix, ignored origin, kept origin)`).
type PostProcessed = (Vec<Registry>, Vec<(String, String, String)>);

/// Upstream `postProcessRegistries`, then the dedup by prefix (the first entry of a
/// prefix wins) and the sort.
fn post_process(file: &str, entries: Vec<Entry>) -> Result<PostProcessed, MirrorError> {
    let mut out: Vec<(Registry, String)> = Vec::with_capacity(entries.len());
    for e in entries {
        let name = e.name();
        let secrets = e.secrets();
        let bad = |m: String| MirrorError::invalid(file, &name, redact_values(&m, &secrets));
        let location = parse_location(&e.raw.location).map_err(bad)?;
        let prefix = if e.raw.prefix.is_empty() {
            if location.is_empty() {
                return Err(bad("both location and prefix are unset".to_owned()));
            }
            location.clone()
        } else {
            let p = parse_location(&e.raw.prefix).map_err(bad)?;
            if !p.starts_with("*.") && location.is_empty() {
                return Err(bad(
                    "location is unset and prefix is not of the form *.example.com".to_owned(),
                ));
            }
            p
        };
        let proxy = parse_proxy(&e.raw.proxy).map_err(bad)?;
        if !e.raw.pull_from_mirror.is_empty() {
            return Err(bad(format!(
                "pull-from-mirror must not be set for a non-mirror registry {prefix:?} (only in [[registry.mirror]])"
            )));
        }
        let mut mirrors = Vec::with_capacity(e.raw.mirror.len());
        for (j, m) in e.raw.mirror.iter().enumerate() {
            let mname = format!("{name} [[registry.mirror]] #{}", j + 1);
            let mbad = |m: String| MirrorError::invalid(file, &mname, redact_values(&m, &secrets));
            let mloc = parse_location(&m.location).map_err(mbad)?;
            if mloc.is_empty() {
                return Err(mbad("mirror location is unset".to_owned()));
            }
            let mproxy = parse_proxy(&m.proxy).map_err(mbad)?;
            if e.raw.mirror_by_digest_only && !m.pull_from_mirror.is_empty() {
                return Err(mbad(format!(
                    "cannot set mirror-by-digest-only for the registry ({prefix:?}) and pull-from-mirror \
                     for its mirror ({mloc:?}) at the same time"
                )));
            }
            let pfm = parse_pull_from_mirror(&m.pull_from_mirror).ok_or_else(|| {
                mbad(format!(
                    "unsupported pull-from-mirror value {:?} for mirror {mloc:?}: expected all, digest-only or tag-only",
                    m.pull_from_mirror
                ))
            })?;
            mirrors.push(Mirror {
                location: mloc,
                insecure: m.insecure,
                pull_from_mirror: pfm,
                proxy: mproxy,
            });
        }
        out.push((
            Registry {
                prefix,
                location,
                insecure: e.raw.insecure,
                blocked: e.raw.blocked,
                mirror_by_digest_only: e.raw.mirror_by_digest_only,
                proxy,
                mirrors,
                origin: e.origin,
            },
            name,
        ));
    }

    // Entries sharing a location (or, without one, a prefix) must agree. Upstream
    // compares the parsed proxy URLs by pointer, so two entries that both set a proxy
    // conflict even when the URLs are equal; we keep that.
    //
    // Upstream compares every entry with every other of its key; here each key's
    // entries are counted once, and only an entry that does conflict is compared one
    // by one to name the first entry it conflicts with (the same pair upstream reports),
    // so that a file of many entries takes linear time.
    fn key(r: &Registry) -> &str {
        if r.location.is_empty() {
            &r.prefix
        } else {
            &r.location
        }
    }
    #[derive(Default)]
    struct Group {
        members: Vec<usize>,
        insecure: usize,
        proxied: usize,
        blocked: usize,
    }
    let mut groups: HashMap<&str, Group> = HashMap::new();
    for (i, (r, _)) in out.iter().enumerate() {
        let g = groups.entry(key(r)).or_default();
        g.members.push(i);
        g.insecure += usize::from(r.insecure);
        g.proxied += usize::from(r.proxy.is_some());
        g.blocked += usize::from(r.blocked);
    }
    for (i, (a, aname)) in out.iter().enumerate() {
        let g = &groups[key(a)];
        let n = g.members.len();
        let others_differ = |count: usize, mine: bool| {
            if mine { count < n } else { count > 0 }
        };
        let conflicts = n > 1
            && (others_differ(g.insecure, a.insecure)
                || a.proxy.is_some()
                || g.proxied > 0
                || others_differ(g.blocked, a.blocked));
        if !conflicts {
            continue;
        }
        for &j in &g.members {
            if j == i {
                continue;
            }
            let (b, bname) = &out[j];
            let what = if a.insecure != b.insecure {
                "insecure"
            } else if a.proxy.is_some() || b.proxy.is_some() {
                "proxy"
            } else if a.blocked != b.blocked {
                "blocked"
            } else {
                continue;
            };
            return Err(MirrorError::invalid(
                file,
                aname,
                format!(
                    "registry {:?} is defined multiple times with conflicting {what:?} settings (also in {bname})",
                    redact_location(key(a))
                ),
            ));
        }
    }

    // The first entry of each prefix wins; sorted by prefix. Upstream ignores the later
    // ones silently ("TODO: should we warn", system_registries_v2.go v5.23.1 line 488);
    // they are kept here for a warning.
    let mut unique: BTreeMap<String, Registry> = BTreeMap::new();
    let mut shadowed = Vec::new();
    for (r, _) in out {
        match unique.entry(r.prefix.clone()) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(r);
            }
            std::collections::btree_map::Entry::Occupied(o) => {
                shadowed.push((r.prefix, r.origin, o.get().origin.clone()));
            }
        }
    }
    Ok((unique.into_values().collect(), shadowed))
}

/// Upstream `validateShortName` and `parseShortNameValue` for one `[aliases]` entry.
fn validate_alias(name: &str, value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    match Reference::parse(name) {
        Err(e) => errors.push(format!("cannot parse short name {name:?}: {}", e.message())),
        Ok(r) if r.digest().is_some() => errors.push(format!(
            "invalid short name {name:?}: must not contain digest"
        )),
        Ok(r) if r.tag().is_some() => {
            errors.push(format!("invalid short name {name:?}: must not contain tag"))
        }
        Ok(r) if r.domain().contains(['.', ':']) || r.domain() == "localhost" => {
            errors.push(format!(
                "invalid short name {name:?}: must not contain registry"
            ));
        }
        Ok(_) => {}
    }
    if value.is_empty() {
        return errors;
    }
    match Reference::parse(value) {
        Err(e) => errors.push(format!("parsing alias {value:?}: {}", e.message())),
        Ok(r) if r.digest().is_some() => {
            errors.push(format!("invalid alias {value:?}: must not contain digest"))
        }
        Ok(r) if r.tag().is_some() => {
            errors.push(format!("invalid alias {value:?}: must not contain tag"))
        }
        Ok(r) if !(r.domain().contains(['.', ':']) || r.domain() == "localhost") => {
            errors.push(format!(
                "invalid alias {value:?}: must contain registry and repository"
            ));
        }
        Ok(_) => {
            if let Err(e) = Reference::parse_normalized(value) {
                errors.push(format!("parsing alias {value:?}: {}", e.message()));
            }
        }
    }
    errors
}

/// Upstream `refMatchingSubdomainPrefix`: for `*.example.com`, the length of the host
/// part of `r` when its host ends in `.example.com` at the first occurrence of that
/// text, followed by the end, `:`, `/` or `@`.
fn ref_matching_subdomain_prefix(r: &str, prefix: &str) -> Option<usize> {
    let suffix = prefix.get(1..)?;
    let index = r.find(suffix)?;
    if r[..index].contains('/') {
        return None;
    }
    let end = index + suffix.len();
    match r.as_bytes().get(end) {
        None => Some(end),
        Some(b':' | b'/' | b'@') => Some(end),
        Some(_) => None,
    }
}

/// Upstream `refMatchingPrefix`: the length of `r` that `prefix` matches, if it does.
pub(crate) fn ref_matching_prefix(r: &str, prefix: &str) -> Option<usize> {
    if prefix.starts_with("*.") {
        return ref_matching_subdomain_prefix(r, prefix);
    }
    if !r.starts_with(prefix) {
        return None;
    }
    match r.as_bytes().get(prefix.len()) {
        // Note: `example.com:5000` matches `example.com`; upstream keeps this and warns
        // not to rely on it.
        None | Some(b':' | b'/' | b'@') => Some(prefix.len()),
        Some(_) => None,
    }
}

/// Upstream `Endpoint.rewriteReference`: `location + rest of r after the prefix`, which
/// must parse as a canonical reference (`reference.ParseNamed`). An empty location
/// (wildcard prefix only) leaves `r` unchanged.
pub(crate) fn rewrite_reference(r: &str, prefix: &str, location: &str) -> Result<String, String> {
    let len = ref_matching_prefix(r, prefix)
        .ok_or_else(|| format!("invalid prefix {prefix:?} for reference {r:?}"))?;
    if location.is_empty() {
        if !prefix.starts_with("*.") {
            return Err(format!(
                "invalid prefix {prefix:?} for empty location: should be of the form *.example.com"
            ));
        }
        return Ok(r.to_owned());
    }
    let rest = r.get(len..).unwrap_or("");
    let new = format!("{location}{rest}");
    let shown = redact_location(location);
    if shown != location {
        // A reference has no user info; the parser's own message could quote the password.
        return Err(format!(
            "rewriting reference {:?}: invalid reference format: the location has user info \
             ({}), which a reference cannot hold",
            format!("{shown}{rest}"),
            shown.split_once('@').map_or("", |(u, _)| u).to_owned() + "@"
        ));
    }
    match Reference::parse_normalized(&new) {
        Ok(parsed) if parsed.upstream_string() == new => Ok(new),
        Ok(parsed) => Err(format!(
            "rewriting reference: {new:?} is not a canonical reference (it means {:?})",
            parsed.upstream_string()
        )),
        Err(e) => Err(format!("rewriting reference {new:?}: {}", e.message())),
    }
}

#[cfg(test)]
#[path = "registries_conf_tests.rs"]
mod tests;
