//! Report: every image the user gave, with a status, rendered as text or JSON.
//!
//! Knows nothing about HTTP or pipelines: it takes the plan's items and the query's
//! outcomes as data.

use std::fmt::Write as _;

use pullcheck_input::{Origin, PullPolicy};
use serde::Serialize;

use crate::credentials::CredentialSource;

/// The status of one image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// An endpoint served the manifest.
    Present,
    /// The tag, digest, repository or platform does not exist (HTTP 404).
    Missing,
    /// Missing, or no access with these credentials (HTTP 401 after authenticating).
    NoAccess,
    /// Access refused (HTTP 403, or the credentials were rejected).
    Denied,
    /// The node pulls it, but cannot run it: a single-platform image of another platform
    /// than the node's (reason `platform_mismatch`). containerd and containers/image pull
    /// such an image (they check the platform only of an index's entries), and the
    /// container then fails to start (`exec format error`). A failure.
    Unrunnable,
    /// The mirror configuration blocks the reference, or the registry client's egress
    /// policy refuses the registry, its token realm or a redirect
    /// ([`ImageReport::egress`] names the rule); nothing was sent there.
    Blocked,
    /// No answer could be had: network error, timeout, 5xx, the deadline.
    Unreachable,
    /// Not checked: the image depends on a `${VAR}` whose value is known only when the
    /// build runs (a secret, a variable the Vela server sets, or one set nowhere in the
    /// pipeline). Counts as unverified, as `unreachable` does.
    Unresolved,
    /// The reference or its container is invalid.
    Invalid,
    /// `on_start`: checked only when its container starts.
    Deferred,
    /// Not checked: `never`, a template step, `#init`.
    Skipped,
}

impl Status {
    /// Every status, in the order of the enum (for label sets known in advance, such as
    /// the service's `pullcheck_images_total{status}`).
    pub const ALL: [Status; 11] = [
        Self::Present,
        Self::Missing,
        Self::NoAccess,
        Self::Denied,
        Self::Unrunnable,
        Self::Blocked,
        Self::Unreachable,
        Self::Unresolved,
        Self::Invalid,
        Self::Deferred,
        Self::Skipped,
    ];

    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Present => "present",
            Self::Missing => "missing",
            Self::NoAccess => "no_access",
            Self::Denied => "denied",
            Self::Unrunnable => "unrunnable",
            Self::Blocked => "blocked",
            Self::Unreachable => "unreachable",
            Self::Unresolved => "unresolved",
            Self::Invalid => "invalid",
            Self::Deferred => "deferred",
            Self::Skipped => "skipped",
        }
    }

    /// Whether the status counts as failed: missing, no_access, denied, unrunnable,
    /// blocked, invalid.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Self::Missing
                | Self::NoAccess
                | Self::Denied
                | Self::Unrunnable
                | Self::Blocked
                | Self::Invalid
        )
    }
}

/// What is missing, for [`Status::Missing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingPart {
    /// The repository exists, the tag does not.
    Tag,
    /// The digest does not exist.
    Digest,
    /// The repository does not exist.
    Repository,
    /// The index has no manifest for the requested platform.
    Platform,
}

/// Why an image has its status: the closed set of reasons every report row carries
/// (JSON `reason`, snake_case), so that a program acts on a result without reading
/// [`ImageReport::detail`]. The registry client's own reasons
/// ([`pullcheck_registry::Reason`]) keep their names; the plan, the resolution and the
/// query add theirs. The set only grows; a value's name never changes. `docs/reasons.md`
/// documents each value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// `present`: an endpoint served the manifest.
    Found,
    /// `present`: a recent answer of the checker's answer cache says so (no request).
    Cached,
    /// `missing`: the repository exists, the tag does not.
    TagNotFound,
    /// `missing`: the digest does not exist.
    DigestNotFound,
    /// `missing`: the repository does not exist.
    RepositoryNotFound,
    /// `missing`: the manifest exists, not for the platform asked for.
    PlatformNotFound,
    /// `unrunnable`: a single-platform image of another platform, which the runtimes
    /// pull and cannot start.
    PlatformMismatch,
    /// `no_access`: 401 anonymously (missing, or credentials are needed).
    UnauthorizedAnonymous,
    /// `no_access`: 401 with a credential (missing, or no access with it).
    Unauthorized,
    /// `no_access`: the registry asks for a user name and password, none is usable.
    CredentialsRequired,
    /// `no_access`: the registry's challenge cannot be answered.
    UnsupportedAuth,
    /// `denied`: the registry or its token server rejected the credential.
    CredentialsRejected,
    /// `denied`: 403.
    AccessDenied,
    /// `denied`: the https certificate is not valid for the host; see
    /// [`ImageReport::remedies`].
    TlsUntrusted,
    /// `unreachable`: 429 after the retries.
    RateLimited,
    /// `unreachable`: a 5xx or an unexpected HTTP status.
    ServerError,
    /// `unreachable`: the answer is not a registry's.
    NotARegistry,
    /// `unreachable`: the registry named another digest than the one asked for.
    DigestMismatch,
    /// `unreachable`: another TLS failure (handshake, client certificate).
    TlsFailed,
    /// `unreachable`: connection refused.
    ConnectionRefused,
    /// `unreachable`: connection reset or closed, host or network unreachable.
    ConnectionFailed,
    /// `unreachable`: a request timed out.
    Timeout,
    /// `unreachable`: the host name did not resolve.
    NameNotResolved,
    /// `unreachable`: the overall deadline passed before an answer.
    DeadlineExceeded,
    /// `unreachable`: the client's configuration for this host is unusable.
    ClientConfig,
    /// `unreachable`: a credential helper failed or did not answer; nothing was asked.
    CredentialHelperFailed,
    /// The status the registries gave (e.g. `no_access` asked anonymously): a kubelet
    /// credential provider plugin matched the image and failed, so its credentials were
    /// not tried; [`ImageReport::provider_failures`] names it and what went wrong.
    CredentialProviderFailed,
    /// `unreachable`: no endpoint to ask.
    NoEndpoint,
    /// `blocked`: the mirror configuration blocks the reference; nothing was sent.
    BlockedByConfig,
    /// `blocked`: the egress policy (`pullcheck_registry::ClientOptions::egress`)
    /// refused the registry, its token server or a redirect; nothing was sent there.
    /// [`ImageReport::egress`] names the rule.
    EgressDenied,
    /// `invalid`: the mirror configuration makes the reference unpullable.
    UnpullableByConfig,
    /// `invalid`: the reference does not parse, or names no usable registry.
    InvalidReference,
    /// `invalid`: the pull policy is not a known one (`policy` is as written).
    UnknownPullPolicy,
    /// `invalid`: the container is malformed (no image, a `${` that cannot be
    /// substituted, a `pull:` that is not a string).
    InvalidContainer,
    /// `unresolved`: the image depends on a `${VAR}` known only when the build runs.
    UnresolvedVariable,
    /// `skipped`: a step that uses a `template:`.
    TemplateStep,
    /// `skipped`: Vela's `#init` step.
    InitStep,
    /// `skipped`: pull policy `never`.
    NeverPulled,
    /// `skipped`: exempted by the caller (the admission webhook's exempt patterns).
    Exempt,
    /// `deferred`: pull policy `on_start`.
    DeferredOnStart,
}

impl Reason {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Found => "found",
            Reason::Cached => "cached",
            Reason::TagNotFound => "tag_not_found",
            Reason::DigestNotFound => "digest_not_found",
            Reason::RepositoryNotFound => "repository_not_found",
            Reason::PlatformNotFound => "platform_not_found",
            Reason::PlatformMismatch => "platform_mismatch",
            Reason::UnauthorizedAnonymous => "unauthorized_anonymous",
            Reason::Unauthorized => "unauthorized",
            Reason::CredentialsRequired => "credentials_required",
            Reason::UnsupportedAuth => "unsupported_auth",
            Reason::CredentialsRejected => "credentials_rejected",
            Reason::AccessDenied => "access_denied",
            Reason::TlsUntrusted => "tls_untrusted",
            Reason::RateLimited => "rate_limited",
            Reason::ServerError => "server_error",
            Reason::NotARegistry => "not_a_registry",
            Reason::DigestMismatch => "digest_mismatch",
            Reason::TlsFailed => "tls_failed",
            Reason::ConnectionRefused => "connection_refused",
            Reason::ConnectionFailed => "connection_failed",
            Reason::Timeout => "timeout",
            Reason::NameNotResolved => "name_not_resolved",
            Reason::DeadlineExceeded => "deadline_exceeded",
            Reason::ClientConfig => "client_config",
            Reason::CredentialHelperFailed => "credential_helper_failed",
            Reason::CredentialProviderFailed => "credential_provider_failed",
            Reason::NoEndpoint => "no_endpoint",
            Reason::EgressDenied => "egress_denied",
            Reason::BlockedByConfig => "blocked_by_config",
            Reason::UnpullableByConfig => "unpullable_by_config",
            Reason::InvalidReference => "invalid_reference",
            Reason::UnknownPullPolicy => "unknown_pull_policy",
            Reason::InvalidContainer => "invalid_container",
            Reason::UnresolvedVariable => "unresolved_variable",
            Reason::TemplateStep => "template_step",
            Reason::InitStep => "init_step",
            Reason::NeverPulled => "never_pulled",
            Reason::Exempt => "exempt",
            Reason::DeferredOnStart => "deferred_on_start",
        }
    }
}

impl From<pullcheck_registry::Reason> for Reason {
    fn from(reason: pullcheck_registry::Reason) -> Reason {
        use pullcheck_registry::Reason as R;
        match reason {
            R::Found => Reason::Found,
            R::TagNotFound => Reason::TagNotFound,
            R::DigestNotFound => Reason::DigestNotFound,
            R::RepositoryNotFound => Reason::RepositoryNotFound,
            R::PlatformNotFound => Reason::PlatformNotFound,
            R::PlatformMismatch => Reason::PlatformMismatch,
            R::UnauthorizedAnonymous => Reason::UnauthorizedAnonymous,
            R::Unauthorized => Reason::Unauthorized,
            R::CredentialsRequired => Reason::CredentialsRequired,
            R::UnsupportedAuth => Reason::UnsupportedAuth,
            R::CredentialsRejected => Reason::CredentialsRejected,
            R::AccessDenied => Reason::AccessDenied,
            R::RateLimited => Reason::RateLimited,
            R::ServerError => Reason::ServerError,
            R::NotARegistry => Reason::NotARegistry,
            R::DigestMismatch => Reason::DigestMismatch,
            R::TlsUntrusted => Reason::TlsUntrusted,
            R::TlsFailed => Reason::TlsFailed,
            R::ConnectionRefused => Reason::ConnectionRefused,
            R::ConnectionFailed => Reason::ConnectionFailed,
            R::Timeout => Reason::Timeout,
            R::NameNotResolved => Reason::NameNotResolved,
            R::DeadlineExceeded => Reason::DeadlineExceeded,
            R::ClientConfig => Reason::ClientConfig,
            R::EgressDenied => Reason::EgressDenied,
        }
    }
}

/// What the user can do about a failure, as data: each front end words it with its own
/// options (the CLI's flags, the service's fields and serve options), through
/// [`Report::word_remedies`]. In JSON, `remedies` is a list of objects tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Remedy {
    /// Trust the CA of `host` (a CA file, or a certificates directory holding
    /// `<host>/ca.crt`).
    TrustCa {
        /// `host[:port]` as in the URL.
        host: String,
    },
    /// Allow unverified TLS for `host` (an insecure registry).
    AllowInsecure {
        /// `host[:port]` as in the URL.
        host: String,
    },
    /// Check `on_start` images now too (they are deferred by default).
    IncludeOnStart,
}

/// The words for a skipped use ([`pullcheck_input::Skip`]).
pub(crate) fn skip_detail(skip: &pullcheck_input::Skip) -> String {
    match skip {
        pullcheck_input::Skip::Template { name } => format!(
            "not checked: uses template {name}; its images are known only after the server \
             expands the template"
        ),
        pullcheck_input::Skip::Init => {
            "not checked: `#init` is the init step Vela injects, not an image".to_owned()
        }
        pullcheck_input::Skip::Exempt => "exempt".to_owned(),
    }
}

/// One (endpoint, credential) pair asked about an image, for [`ImageReport::attempts`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptReport {
    /// The endpoint asked: `host[:port]`, with its API path when it is not `/v2/`.
    pub registry: String,
    /// The credential it was asked with; `null` for anonymous.
    pub credential: Option<CredentialSource>,
    /// The answer's status.
    pub status: Status,
    /// The answer's reason.
    pub reason: Reason,
    /// The answer in words.
    pub detail: String,
}

/// A reference parse error, as in `explain`, or an unknown pull policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReferenceErrorReport {
    /// `empty`, `invalid_format`, `uppercase`, `name_too_long`, `hex64`, `digest_invalid`
    /// (the parser's), or, for a reference that parses but names no usable registry,
    /// `no_registry` or `port_out_of_range` (the checks `check` applies too);
    /// `pull_policy` for a pull policy that is not one of the known values; in
    /// `explain`, `substitution` for an input with `${VAR}`s.
    pub kind: &'static str,
    /// The parser's message, or why the registry is unusable.
    pub message: String,
}

/// The pull policy of a report entry: a known one, or, for an image `invalid` because
/// of it, the value as written (`sometimes`). Serialised as the bare string either way.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum ReportedPolicy {
    /// A policy pullcheck knows.
    Known(PullPolicy),
    /// An unknown policy, as written.
    Unknown(String),
}

impl ReportedPolicy {
    /// The policy as the JSON report spells it: a known policy's name
    /// ([`PullPolicy::as_str`]), or the unknown value as written.
    pub fn as_str(&self) -> &str {
        match self {
            ReportedPolicy::Known(p) => p.as_str(),
            ReportedPolicy::Unknown(written) => written,
        }
    }
}

impl From<PullPolicy> for ReportedPolicy {
    fn from(policy: PullPolicy) -> Self {
        ReportedPolicy::Known(policy)
    }
}

/// One image as written, with its policy, status and every use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageReport {
    /// The image as written.
    pub reference: String,
    /// The image after Vela's `${VAR}` substitution, which is what is checked; `null`
    /// when the image has nothing to substitute (or its values are unknown: status
    /// `unresolved`).
    pub substituted: Option<String>,
    /// The canonical form `domain/path[:tag][@digest]` of the image as pulled
    /// (substituted), when it parsed.
    pub canonical: Option<String>,
    /// The pull policy; as written when it is unknown (the image is then `invalid`, with
    /// `error.kind` `pull_policy`).
    pub policy: ReportedPolicy,
    /// The status.
    pub status: Status,
    /// Why, as data: one of [`Reason`]'s values.
    pub reason: Reason,
    /// What is missing, for `missing`.
    pub missing: Option<MissingPart>,
    /// The manifest digest the registry reported, for `present`.
    pub digest: Option<String>,
    /// The registry host that gave the answer.
    pub registry: Option<String>,
    /// Human detail; never a secret.
    pub detail: String,
    /// Every place the image is used.
    pub origins: Vec<Origin>,
    /// The credential the answer was obtained with; `null` for anonymous.
    pub credential: Option<CredentialSource>,
    /// The reference parse error, for invalid references.
    pub error: Option<ReferenceErrorReport>,
    /// The answer came from the answer cache of a long-running checker
    /// ([`crate::CheckerOptions::cache_present`]), not from a request of this check;
    /// the detail says how old it is. In JSON only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// For `blocked` by the egress policy (`pullcheck_registry::ClientOptions::egress`):
    /// what the rule matched and which rule, e.g. `{"matched": {"kind": "address",
    /// "address": "169.254.169.254", "port": 80, "name": null}, "rule": {"kind": "deny",
    /// "pattern": "169.254.0.0/16", "default": true}}`. In JSON only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<pullcheck_registry::EgressRefusal>,
    /// For reason `tag_not_found`: the repository's tags close to the one asked for,
    /// best first (the detail's "did you mean"); in JSON only when not empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub close_tags: Vec<String>,
    /// What the user can do about it, as data (worded into `detail` by the front end);
    /// in JSON only when not empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remedies: Vec<Remedy>,
    /// Every endpoint and credential asked, in order, when more than one was; in JSON
    /// only when not empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptReport>,
    /// The kubelet credential provider plugins whose `matchImages` matched this image
    /// but that failed, each `{"provider": "<name>", "kind": "timed_out", …}`
    /// ([`ProviderFailure`](crate::credentials::ProviderFailure)'s kinds); the reason is
    /// `credential_provider_failed` unless another credential found the image. In
    /// JSON only when not empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub provider_failures: Vec<crate::credentials::ProviderError>,
    /// For `invalid` containers (reasons `invalid_container`, `unknown_pull_policy`) and
    /// `unresolved` ones: each problem with its position apart (`at`: `file`, `line`,
    /// `column`, and `written` when reached through an alias; `null` for an `--image`
    /// argument) and its `message` without it; `detail` is them, each `file:line:column:
    /// message`, joined by `; `. In JSON only when not empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<pullcheck_input::Problem>,
    /// For reason `unresolved_variable`: each variable the image (or its `pull:`) waits
    /// for, with `name`, `field` (`image` or `pull`), `source` (`{"kind": "secret",
    /// "secret": SOURCE}`, `{"kind": "server"}` for a `VELA_*` the server sets, `{"kind":
    /// "nowhere"}`) and `default_ignored`. In JSON only when not empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<pullcheck_input::UnresolvedVariable>,
}

/// Counts over the report's images, by use: an image used in three places counts three
/// times. Template steps (no image until the template is expanded) are counted apart, in
/// `template_steps`, and in no other field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Every use of an image: the sum of the fields below but `template_steps`.
    pub total: usize,
    /// `present`.
    pub present: usize,
    /// `missing`, `no_access`, `denied`, `unrunnable`, `blocked` and `invalid`
    /// ([`Status::is_failure`]).
    pub failed: usize,
    /// `unreachable` and `unresolved`.
    pub unverified: usize,
    /// `skipped`.
    pub skipped: usize,
    /// `deferred`.
    pub deferred: usize,
    /// Steps that use a `template:`, not checked (their images are known only once the
    /// template is expanded).
    pub template_steps: usize,
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// One entry per image as written and policy, in input order.
    pub images: Vec<ImageReport>,
    /// Counts.
    pub summary: Summary,
    /// Things the user should know that are not about one image (e.g. a credential
    /// helper that was not run).
    pub warnings: Vec<String>,
}

/// The process exit code for a report: 0 when every checked image is present, 1 when
/// any failed, 3 when nothing failed but something is unverified.
pub const EXIT_OK: i32 = 0;
/// Some image failed.
pub const EXIT_FAILED: i32 = 1;
/// Usage or configuration error.
pub const EXIT_USAGE: i32 = 2;
/// Nothing failed, but something could not be verified.
pub const EXIT_UNVERIFIED: i32 = 3;

impl Report {
    /// Builds a report and its summary.
    pub fn new(images: Vec<ImageReport>, warnings: Vec<String>) -> Report {
        let mut summary = Summary::default();
        for image in &images {
            let uses = image.origins.len().max(1);
            if image.is_template_step() {
                summary.template_steps += uses;
                continue;
            }
            summary.total += uses;
            match image.status {
                Status::Present => summary.present += uses,
                Status::Unreachable | Status::Unresolved => summary.unverified += uses,
                Status::Skipped => summary.skipped += uses,
                Status::Deferred => summary.deferred += uses,
                s if s.is_failure() => summary.failed += uses,
                _ => {}
            }
        }
        Report {
            images,
            summary,
            warnings,
        }
    }

    /// The exit code: [`EXIT_FAILED`], else [`EXIT_UNVERIFIED`], else [`EXIT_OK`].
    pub fn exit_code(&self) -> i32 {
        if self.summary.failed > 0 {
            EXIT_FAILED
        } else if self.summary.unverified > 0 {
            EXIT_UNVERIFIED
        } else {
            EXIT_OK
        }
    }

    /// Words every row's [`ImageReport::remedies`] into its detail with `words` (each
    /// front end's own option names), once: `detail; words` (`detail (words)` when the
    /// only remedy is [`Remedy::IncludeOnStart`]). The remedies stay in the row as data.
    pub fn word_remedies(&mut self, words: impl Fn(&[Remedy]) -> String) {
        for image in &mut self.images {
            if image.remedies.is_empty() {
                continue;
            }
            let text = words(&image.remedies);
            if text.is_empty() {
                continue;
            }
            image.detail = if image.remedies == [Remedy::IncludeOnStart] {
                format!("{} ({text})", image.detail)
            } else {
                format!("{}; {text}", image.detail)
            };
        }
    }

    /// The report as pretty JSON, in the documented shape.
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The report as text: one line per image (more for extra uses) with its status,
    /// reference, first use, detail and the credential that answered (source and key,
    /// never the secret); then warnings and a summary line. `color` adds ANSI colours to
    /// the status. As [`Report::to_text_width`] without a width: one line per image.
    pub fn to_text(&self, color: bool) -> String {
        self.to_text_width(color, None)
    }

    /// [`Report::to_text`] for a terminal `width` columns wide: a row longer than that
    /// has its detail and credential on the lines below it, indented and wrapped at the
    /// width (as cargo wraps its notes). `None` (output to a pipe or a file): one line
    /// per image, however long.
    pub fn to_text_width(&self, color: bool, width: Option<usize>) -> String {
        let terminal = width;
        let mut out = String::new();
        let width = self
            .images
            .iter()
            .map(|i| display_reference(i).chars().count())
            .max()
            .unwrap_or(0)
            .min(60);
        for image in &self.images {
            let status = format!("{:<11}", image.status.as_str());
            let status = if color {
                paint(image.status, &status)
            } else {
                status
            };
            let mut origins = image.origins.iter();
            let first = origins
                .next()
                .map(|o| describe_origin(o, &image.reference))
                .unwrap_or_default();
            let head = format!("{:<width$}  {first}", display_reference(image),);
            let mut tail = Vec::new();
            if !image.detail.is_empty() {
                tail.push(escape_controls(&image.detail).into_owned());
            }
            if let Some(c) = &image.credential {
                tail.push(format!("[credential: {} key {:?}]", c.source, c.key));
            }
            let long = |w: usize| {
                let tail: usize = tail.iter().map(|t| 2 + t.chars().count()).sum();
                12 + head.chars().count() + tail > w
            };
            match terminal {
                Some(w) if !tail.is_empty() && long(w) => {
                    let _ = writeln!(out, "{status} {}", head.trim_end());
                    for line in wrap(&tail.join("  "), w.saturating_sub(INDENT.len()).max(20)) {
                        let _ = writeln!(out, "{INDENT}{line}");
                    }
                }
                _ => {
                    let _ = write!(out, "{status} {head}");
                    for t in &tail {
                        let _ = write!(out, "  {t}");
                    }
                    out.push('\n');
                }
            }
            for origin in origins {
                let _ = writeln!(
                    out,
                    "{:11} {:width$}  also {}",
                    "",
                    "",
                    describe_origin(origin, &image.reference)
                );
            }
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "warning: {warning}");
        }
        let s = &self.summary;
        let mut summary = String::new();
        let _ = write!(
            summary,
            "{} image{}: {} present, {} failed, {} unverified, {} skipped, {} deferred",
            s.total,
            if s.total == 1 { "" } else { "s" },
            s.present,
            s.failed,
            s.unverified,
            s.skipped,
            s.deferred
        );
        if s.template_steps > 0 {
            let _ = write!(
                summary,
                "; {} template step{} not checked",
                s.template_steps,
                if s.template_steps == 1 { "" } else { "s" }
            );
        }
        match terminal {
            Some(w) => {
                for line in wrap(&summary, w.max(20)) {
                    let _ = writeln!(out, "{line}");
                }
            }
            None => {
                let _ = writeln!(out, "{summary}");
            }
        }
        out
    }
}

/// The indentation of a row's wrapped detail: under the reference, past the status.
const INDENT: &str = "            ";

/// `text` in lines of at most `width` characters, broken at spaces (a longer word keeps
/// a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

impl ImageReport {
    /// Whether this is a step that uses a `template:` (skipped, reason `template_step`),
    /// with or without an `image:` of its own, which the expanded template replaces.
    pub fn is_template_step(&self) -> bool {
        self.status == Status::Skipped && self.reason == Reason::TemplateStep
    }
}

/// The reference for the text report: control characters escaped, so a hostile
/// pipeline cannot split or repaint a report line.
/// A substituted image shows both: `golang:${GO} → golang:1.22`.
fn display_reference(image: &ImageReport) -> String {
    if image.reference.is_empty() {
        "(no image)".to_string()
    } else if let Some(s) = &image.substituted {
        format!(
            "{} → {}",
            escape_controls(&image.reference),
            escape_controls(s)
        )
    } else {
        escape_controls(&image.reference).into_owned()
    }
}

/// Whether `c` could split or repaint a terminal line, or reorder what is shown: a
/// control character, or a Unicode bidirectional formatting character (U+061C, U+200E,
/// U+200F, U+202A–U+202E, U+2066–U+2069; Unicode TR9, the "Trojan Source" characters).
fn is_unsafe_for_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text with control characters escaped (`\u{1b}`), for one report line.
pub(crate) fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(is_unsafe_for_terminal) {
        text.escape_debug().to_string().into()
    } else {
        text.into()
    }
}

/// `file:line:col kind "name" (stage s)`; an image given by reference alone (its name
/// is `reference`) is `--image`, one given with a name `image "name"`.
fn describe_origin(o: &Origin, reference: &str) -> String {
    let mut s = String::new();
    match (&o.file, o.line, o.column) {
        (Some(f), Some(l), Some(c)) => {
            let _ = write!(s, "{}:{l}:{c} ", escape_controls(f));
        }
        (Some(f), Some(l), None) => {
            let _ = write!(s, "{}:{l} ", escape_controls(f));
        }
        (Some(f), None, _) => {
            let _ = write!(s, "{} ", escape_controls(f));
        }
        _ => {}
    }
    let kind = serde_json::to_value(o.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    if kind == "image" && o.name != reference {
        let _ = write!(s, "image {:?}", escape_controls(&o.name));
    } else if kind == "image" {
        s.push_str("--image");
    } else if o.kind == pullcheck_input::ContainerKind::Container {
        // The name says it all: `Deployment/web container app`.
        s.push_str(&escape_controls(&o.name));
    } else {
        let _ = write!(s, "{kind} {:?}", o.name);
    }
    if let Some(stage) = &o.stage {
        let _ = write!(s, " (stage {stage:?})");
    }
    s
}

fn paint(status: Status, text: &str) -> String {
    let code = match status {
        Status::Present => "32",
        Status::Unreachable | Status::Unresolved => "33",
        Status::Deferred | Status::Skipped => "2",
        _ => "31;1",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_and_control_characters_are_escaped() {
        // U+202E (RIGHT-TO-LEFT OVERRIDE) reorders what a terminal shows.
        assert_eq!(escape_controls("foo\u{202e}bar"), "foo\\u{202e}bar");
        assert_eq!(
            escape_controls("a\u{2066}b\u{1b}[31m"),
            "a\\u{2066}b\\u{1b}[31m"
        );
        assert_eq!(escape_controls("plain ü"), "plain ü");
        let origin = Origin {
            file: Some("evil\u{1b}[31m\nname.yml".into()),
            line: Some(3),
            column: Some(12),
            kind: ContainerKind::Step,
            name: "a\u{202e}b".into(),
            stage: None,
            pod: None,
        };
        let shown = describe_origin(&origin, "x");
        assert!(!shown.chars().any(is_unsafe_for_terminal), "{shown:?}");
        assert!(
            shown.starts_with("evil\\u{1b}[31m\\nname.yml:3:12 "),
            "{shown}"
        );
    }
    use pullcheck_input::ContainerKind;

    fn image(status: Status) -> ImageReport {
        ImageReport {
            reference: "alpine:3.19".into(),
            substituted: None,
            canonical: Some("docker.io/library/alpine:3.19".into()),
            policy: PullPolicy::Always.into(),
            status,
            reason: Reason::Found,
            missing: None,
            digest: None,
            registry: None,
            detail: String::new(),
            origins: vec![Origin {
                file: Some(".vela.yml".into()),
                line: Some(4),
                column: Some(12),
                kind: ContainerKind::Step,
                name: "test".into(),
                stage: None,
                pod: None,
            }],
            credential: None,
            error: None,
            cached: false,
            egress: None,
            close_tags: Vec::new(),
            remedies: Vec::new(),
            attempts: Vec::new(),
            provider_failures: Vec::new(),
            problems: Vec::new(),
            variables: Vec::new(),
        }
    }

    #[test]
    fn summary_and_exit_codes() {
        let r = Report::new(vec![image(Status::Present), image(Status::Skipped)], vec![]);
        assert_eq!(r.exit_code(), EXIT_OK);
        let r = Report::new(
            vec![
                image(Status::Present),
                image(Status::Unreachable),
                image(Status::Deferred),
            ],
            vec![],
        );
        assert_eq!((r.summary.unverified, r.summary.deferred), (1, 1));
        assert_eq!(r.exit_code(), EXIT_UNVERIFIED);
        for failed in [
            Status::Missing,
            Status::NoAccess,
            Status::Denied,
            Status::Blocked,
            Status::Invalid,
        ] {
            let r = Report::new(vec![image(Status::Unreachable), image(failed)], vec![]);
            assert_eq!(r.summary.failed, 1, "{failed:?}");
            assert_eq!(r.exit_code(), EXIT_FAILED, "{failed:?}");
        }
    }

    #[test]
    fn unresolved_is_unverified_and_substituted_images_show_both() {
        let mut i = image(Status::Unresolved);
        i.reference = "golang:${GO}".into();
        let r = Report::new(vec![image(Status::Present), i], vec![]);
        assert_eq!((r.summary.unverified, r.summary.failed), (1, 0));
        assert_eq!(r.exit_code(), EXIT_UNVERIFIED);
        let mut i = image(Status::Present);
        i.reference = "alpine:${V}".into();
        i.substituted = Some("alpine:3.19".into());
        let r = Report::new(vec![i], vec![]);
        assert!(
            r.to_text(false)
                .starts_with("present     alpine:${V} → alpine:3.19  .vela.yml:4:12"),
            "{}",
            r.to_text(false)
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["images"][0]["reference"], "alpine:${V}");
        assert_eq!(v["images"][0]["substituted"], "alpine:3.19");
        assert_eq!(Status::Unresolved.as_str(), "unresolved");
        assert!(!Status::Unresolved.is_failure());
    }

    #[test]
    fn json_has_the_documented_shape() {
        let mut i = image(Status::Missing);
        i.missing = Some(MissingPart::Tag);
        let v: serde_json::Value =
            serde_json::from_str(&Report::new(vec![i], vec![]).to_json()).unwrap();
        let img = &v["images"][0];
        assert_eq!(img["status"], "missing");
        assert_eq!(img["missing"], "tag");
        assert_eq!(img["policy"], "always");
        assert_eq!(img["digest"], serde_json::Value::Null);
        assert_eq!(img["substituted"], serde_json::Value::Null);
        assert_eq!(img["origins"][0]["kind"], "step");
        assert_eq!(img["origins"][0]["line"], 4);
        assert_eq!(img["origins"][0]["stage"], serde_json::Value::Null);
        assert_eq!(v["summary"]["failed"], 1);
        assert_eq!(v["summary"]["total"], 1);
    }

    /// The golden renderings of an unresolved row, in text and JSON: a wording or
    /// shape change shows here.
    #[test]
    fn an_unresolved_row_golden() {
        use pullcheck_input::{Field, Position, Problem, UnresolvedVariable, ValueSource};
        let mut i = image(Status::Unresolved);
        i.reference = "app:${TAG}".into();
        i.canonical = None;
        i.reason = Reason::UnresolvedVariable;
        let unresolved = pullcheck_input::Unresolved {
            at: Some(Position {
                file: ".vela.yml".into(),
                line: Some(4),
                column: Some(12),
                written: None,
            }),
            image: "app:${TAG}".into(),
            variables: vec![UnresolvedVariable {
                name: "TAG".into(),
                field: Field::Image,
                source: ValueSource::Secret {
                    secret: "release_tag".into(),
                },
                default_ignored: false,
            }],
        };
        i.detail = unresolved.to_string();
        i.problems = vec![Problem {
            at: unresolved.at.clone(),
            message: unresolved.message(),
        }];
        i.variables = unresolved.variables;
        let r = Report::new(vec![i], vec![]);
        assert_eq!(
            r.to_text(false).lines().next(),
            Some(
                "unresolved  app:${TAG}  .vela.yml:4:12 step \"test\"  .vela.yml:4:12: not \
                 checked: image \"app:${TAG}\" is known only when the build runs: ${TAG} is the \
                 target of secret `release_tag`, whose value the worker injects at build time"
            )
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        let row = &v["images"][0];
        assert_eq!(row["reason"], "unresolved_variable");
        assert_eq!(
            row["variables"],
            serde_json::json!([{
                "name": "TAG",
                "field": "image",
                "source": {"kind": "secret", "secret": "release_tag"},
                "default_ignored": false
            }])
        );
        assert_eq!(
            row["problems"][0]["at"],
            serde_json::json!({"file": ".vela.yml", "line": 4, "column": 12, "written": null})
        );
        assert_eq!(
            row["problems"][0]["message"],
            "not checked: image \"app:${TAG}\" is known only when the build runs: ${TAG} is \
             the target of secret `release_tag`, whose value the worker injects at build time"
        );
        assert_eq!(row["origins"][0].get("pod"), None);
    }

    #[test]
    fn text_names_the_position_and_colours_only_on_request() {
        let r = Report::new(vec![image(Status::Missing)], vec!["w".into()]);
        let plain = r.to_text(false);
        assert!(plain.contains("missing"), "{plain}");
        assert!(plain.contains(".vela.yml:4:12 step \"test\""), "{plain}");
        assert!(plain.contains("warning: w"));
        assert!(
            plain.ends_with("1 image: 0 present, 1 failed, 0 unverified, 0 skipped, 0 deferred\n")
        );
        assert!(!plain.contains('\x1b'));
        assert!(r.to_text(true).contains("\x1b[31;1mmissing"));
        // A hostile reference cannot split or repaint a line.
        let mut hostile = image(Status::Invalid);
        hostile.reference = "alp\x1b[31mine\r\nOVERWRITE".into();
        hostile.detail = "bad\nline".into();
        let text = Report::new(vec![hostile], vec![]).to_text(false);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text}");
    }
}
