//! Image references, parsed and normalised exactly as the Go module
//! `github.com/distribution/reference` does with `ParseNormalizedNamed`
//! (the function Docker, containerd's CRI plugin and the kubelet use), with
//! digests checked as `github.com/opencontainers/go-digest` checks them.
//!
//! ```
//! use pullcheck_reference::Reference;
//!
//! let r = Reference::parse_normalized("alpine:3.20").unwrap();
//! assert_eq!(r.domain(), "docker.io");
//! assert_eq!(r.path(), "library/alpine");
//! assert_eq!(r.canonical(), "docker.io/library/alpine:3.20");
//! assert_eq!(r.familiar(), "alpine:3.20");
//!
//! let err = Reference::parse_normalized("docker/Docker").unwrap_err();
//! assert_eq!(err.kind().as_str(), "uppercase");
//! assert!(err.message().contains("repository name must be lowercase"));
//! ```
//!
//! The crate does no IO and has no global state. Parsing is linear in the
//! input length and never panics, whatever the input.
//!
//! Modules: [`grammar`] matches the reference grammar (upstream's
//! `regexp.go`); `digest` checks registered algorithms (`go-digest`);
//! `normalize` holds `Parse`, `ParseNormalizedNamed` and the familiar form;
//! `error` builds the messages; `host` is [`RegistryHost`], a domain's host, port
//! and loopback rule.

use std::fmt;
use std::str::FromStr;

mod digest;
mod error;
pub mod grammar;
mod host;
mod normalize;

pub use digest::ALGORITHMS as DIGEST_ALGORITHMS;
pub use error::{ReferenceError, ReferenceErrorKind};
pub use host::RegistryHost;

/// Docker Hub's domain in normalised references (upstream `defaultDomain`).
pub const DEFAULT_DOMAIN: &str = "docker.io";
/// The legacy Docker Hub domain, rewritten to [`DEFAULT_DOMAIN`] when it is
/// the first component (upstream `legacyDefaultDomain`).
pub const LEGACY_DEFAULT_DOMAIN: &str = "index.docker.io";
/// The namespace of official Docker Hub images (upstream `officialRepoPrefix`).
pub const OFFICIAL_REPO_PREFIX: &str = "library/";
/// The tag a name-only reference means (upstream `defaultTag`).
pub const DEFAULT_TAG: &str = "latest";
/// The longest repository path, without the domain, in characters (upstream
/// `RepositoryNameTotalLengthMax`).
pub const REPOSITORY_NAME_MAX_LEN: usize = 255;

/// A parsed, normalised image reference: `domain/path[:tag][@digest]`.
///
/// Made by [`Reference::parse_normalized`] (what image strings in pipelines
/// and pod specs mean) or [`Reference::parse`] (the grammar alone, no
/// normalisation). Tag and digest may both be present.
///
/// One upstream quirk is kept: when the first component is taken for a
/// domain (it contains a `.`) but is not a valid host name, while the whole
/// name is still a valid path (as in `foo_bar.com/app`: `_` is not allowed
/// in a host name), upstream's name regexp gives an **empty domain** and the
/// whole name as the path. [`Reference::domain`] is then `""`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reference {
    domain: String,
    path: String,
    tag: Option<String>,
    digest: Option<String>,
}

/// `domain/path`, or `path` when the domain is empty (upstream `Name()`).
pub(crate) fn join_name(domain: &str, path: &str) -> String {
    if domain.is_empty() {
        path.to_owned()
    } else {
        format!("{domain}/{path}")
    }
}

impl Reference {
    pub(crate) fn from_parts(
        domain: &str,
        path: &str,
        tag: Option<&str>,
        digest: Option<&str>,
    ) -> Self {
        Self {
            domain: domain.to_owned(),
            path: path.to_owned(),
            tag: tag.map(str::to_owned),
            digest: digest.map(str::to_owned),
        }
    }

    /// Parses `input` as `ParseNormalizedNamed` does: a familiar name such
    /// as `alpine`, `user/app:1.0`, `localhost:5000/app@sha256:…` or
    /// `[::1]:5000/app:tag@sha256:…` becomes a full reference.
    ///
    /// Normalisation:
    /// - no `/`: `docker.io/library/<input>`;
    /// - otherwise the first component is the domain when it is `localhost`,
    ///   contains `.` or `:`, or contains upper case; `index.docker.io`
    ///   becomes `docker.io`; anything else means Docker Hub, the first
    ///   component being part of the path;
    /// - on `docker.io`, a single-component path gets `library/`.
    ///
    /// # Errors
    /// A [`ReferenceError`] whose [`ReferenceErrorKind`] names the rule
    /// broken, checked in upstream's order:
    /// 1. [`Empty`](ReferenceErrorKind::Empty): `input` is empty (upstream
    ///    says "invalid reference format" here);
    /// 2. [`Hex64`](ReferenceErrorKind::Hex64): `input` is exactly 64
    ///    lowercase hex characters;
    /// 3. [`Uppercase`](ReferenceErrorKind::Uppercase): the text after the
    ///    domain, up to the first `:`, has upper case (Unicode-wide);
    /// 4. [`InvalidFormat`](ReferenceErrorKind::InvalidFormat) (or
    ///    `Uppercase` if lower-casing would make it match): the grammar does
    ///    not match;
    /// 5. [`NameTooLong`](ReferenceErrorKind::NameTooLong): the path
    ///    (`library/` included) has more than 255 characters;
    /// 6. [`DigestInvalid`](ReferenceErrorKind::DigestInvalid): the digest
    ///    algorithm is not sha256, sha384 or sha512, or its hex is not
    ///    lowercase of exactly 64, 96 or 128 digits.
    pub fn parse_normalized(input: &str) -> Result<Reference, ReferenceError> {
        normalize::parse_normalized(input)
    }

    /// Parses `input` as upstream's `Parse` does: the grammar only, with no
    /// Docker Hub defaults. The domain is the first component only when it
    /// is a valid host (so `test_com` has domain `""`, and `a/b` has domain
    /// `a`).
    ///
    /// # Errors
    /// As [`Reference::parse_normalized`], from step 4 on, with
    /// [`Empty`](ReferenceErrorKind::Empty) for an empty input.
    pub fn parse(input: &str) -> Result<Reference, ReferenceError> {
        normalize::parse(input)
    }

    /// The registry domain after normalisation, e.g. `docker.io`,
    /// `localhost:5000`, `[::1]:5000`. Empty only in the `foo_bar.com/app`
    /// quirk described on [`Reference`] (and for [`Reference::parse`] of a
    /// name without a valid host).
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The repository path without the domain, e.g. `library/alpine`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The tag as written, if any (no implicit `latest`).
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest as written, e.g. `sha256:<64 hex>`, if any.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// `domain/path`, e.g. `docker.io/library/alpine` (upstream `Name()`);
    /// just the path when the domain is empty.
    pub fn repository(&self) -> String {
        join_name(&self.domain, &self.path)
    }

    /// Whether the reference is on Docker Hub (domain `docker.io`).
    pub fn is_docker_hub(&self) -> bool {
        self.domain == DEFAULT_DOMAIN
    }

    /// What a pull asks the registry for: the digest when present, else the
    /// tag, else `latest`.
    pub fn manifest_reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or(DEFAULT_TAG)
    }

    /// The same reference with tag `latest` when it has neither tag nor
    /// digest; unchanged otherwise (upstream `TagNameOnly`).
    pub fn tag_name_only(&self) -> Reference {
        let mut r = self.clone();
        if r.tag.is_none() && r.digest.is_none() {
            r.tag = Some(DEFAULT_TAG.to_owned());
        }
        r
    }

    /// `repository[:tag][@digest]` exactly as parsed, with no implicit
    /// `latest` (upstream `String()`).
    pub fn upstream_string(&self) -> String {
        let mut s = self.repository();
        push_suffix(&mut s, self.tag.as_deref(), self.digest.as_deref());
        s
    }

    /// The canonical form `domain/path[:tag][@digest]`; `:latest` is added
    /// only when there is neither a tag nor a digest (upstream
    /// `TagNameOnly(ref).String()`). Parsing it again, normalised or not,
    /// gives [`Reference::tag_name_only`] of this reference.
    pub fn canonical(&self) -> String {
        self.tag_name_only().upstream_string()
    }

    /// The familiar form, as the Docker CLI prints it (upstream
    /// `FamiliarString`): `docker.io/` is dropped, and so is `library/` when
    /// nothing but one component follows it; tag and digest are kept, and
    /// no `latest` is added. E.g. `docker.io/library/alpine:3` → `alpine:3`,
    /// `docker.io/user/app` → `user/app`, `quay.io/a/b` unchanged.
    ///
    /// As upstream, it does not always parse back to the same reference: a
    /// Docker Hub path whose first component looks like a domain
    /// (`docker.io/localhost/app`, `docker.io/foo.com/app`) or an official
    /// image named by 64 hex characters prints in a form that means
    /// something else.
    pub fn familiar(&self) -> String {
        let mut s = normalize::familiar_name(&self.domain, &self.path);
        push_suffix(&mut s, self.tag.as_deref(), self.digest.as_deref());
        s
    }
}

fn push_suffix(s: &mut String, tag: Option<&str>, digest: Option<&str>) {
    if let Some(tag) = tag {
        s.push(':');
        s.push_str(tag);
    }
    if let Some(digest) = digest {
        s.push('@');
        s.push_str(digest);
    }
}

impl fmt::Display for Reference {
    /// Writes [`Reference::canonical`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl FromStr for Reference {
    type Err = ReferenceError;

    /// [`Reference::parse_normalized`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Reference::parse_normalized(s)
    }
}
