//! Report: every image the user gave, with a status, rendered as text or JSON.
//!
//! Knows nothing about HTTP or pipelines: it takes the plan's items and the query's
//! outcomes as data.

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
    /// `missing`: the tag or digest answered 404 and whether the repository exists is
    /// not known (`--no-tag-hints`, or the tag list request failed); `missing` says
    /// which was asked for.
    ManifestUnknown,
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
    /// `unreachable`: the registry's token server answered 2xx without a usable
    /// token; [`ImageReport::failed_host`] names it.
    BadTokenReply,
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
            Reason::ManifestUnknown => "manifest_unknown",
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
            Reason::BadTokenReply => "bad_token_reply",
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
            R::ManifestUnknown => Reason::ManifestUnknown,
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
            R::BadTokenReply => Reason::BadTokenReply,
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
    /// Give a credential for `host` (a Docker config, an auth file, a pull secret): the
    /// registry answered 401 to an anonymous request (`unauthorized_anonymous`) or asks
    /// for a user name and password that nothing configured gives
    /// (`credentials_required`).
    GiveCredential {
        /// `host[:port]` as in the URL: the registry that asked.
        host: String,
    },
}

/// One (endpoint, credential) pair asked about an image, for [`ImageReport::attempts`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptReport {
    /// The endpoint asked: `host[:port]`, with its API path when it is not `/v2/`
    /// (`mirror.example.com/proxy/v2/`, containerd's `override_path`).
    pub endpoint: String,
    /// The endpoint's registry host: `host[:port]`, as in [`ImageReport::registry`].
    pub registry: String,
    /// The credential it was asked with; `null` for anonymous.
    pub credential: Option<CredentialSource>,
    /// The answer's status.
    pub status: Status,
    /// The answer's reason.
    pub reason: Reason,
    /// What is missing, as in [`ImageReport::missing`]; left out unless `missing`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<MissingPart>,
    /// For `tag_not_found`: the repository's tags close to the one asked for, best
    /// first (as in [`ImageReport::close_tags`]); left out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub close_tags: Vec<String>,
    /// For `platform_not_found`: the platforms the index lists, `os/arch[/variant]`;
    /// for `platform_mismatch`: the one the single-platform image is built for; left
    /// out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    /// For `rate_limited`: the wait the registry asked for, in whole seconds; left out
    /// when it sent none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// The answer in words.
    pub detail: String,
    /// Whether this is the answer the row reports (its `status`, `reason`, `detail`);
    /// exactly one attempt of a row is.
    pub chosen: bool,
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
    /// For reason `platform_not_found`: the platforms the image index lists, each
    /// `os/arch[/variant]` as in the index (`linux/arm64/v8`), in its order; for reason
    /// `platform_mismatch`: the one platform the single-platform image is built for (its
    /// config's). In JSON only when not empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    /// For reason `rate_limited`: the wait the registry asked for in its 429's
    /// `Retry-After` header, in whole seconds, when it sent one. In JSON only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// For reason `template_step`: the `name` of the template the step uses (Vela's
    /// `template.name`), whose images are known only once the server expands it. In
    /// JSON only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The HTTP status of the registry's answer the row reports (of the manifest
    /// request, after redirects; 404 also when the tag list refined it), e.g. `200`,
    /// `404`, `401`, `403`, `429`, `503`. In JSON only when an HTTP answer came (not
    /// after a network failure, a refusal, a failed ping or token request, or when
    /// nothing was asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The registry's error envelope in that answer (OCI distribution spec, "Error
    /// Codes"), in order, each `{"code": "MANIFEST_UNKNOWN", "message": "manifest
    /// unknown"}`: the code as sent (`NAME_UNKNOWN`, `DENIED`, `TOOMANYREQUESTS`, or one
    /// the spec does not define, verbatim; `UNKNOWN` when none), at most 64 characters,
    /// and its message (at most 200, control characters as one space, bidirectional and
    /// zero-width characters dropped; empty when none). At most the first 10 entries
    /// (`detail` words the first 3 and counts the rest). Only a `GET`'s answer has a
    /// body: a `HEAD`'s (the first request for every image) has none. In JSON only
    /// when not empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub registry_errors: Vec<pullcheck_registry::ErrorEntry>,
    /// For a failure to authorize (the ping, the registry's challenge, the credential
    /// check or the token request failed, for every image of that registry): the host
    /// that failed and its role, `{"host": "auth.example.com", "role": "token_server"}`
    /// (`role` `registry` or `token_server`; the token server is the `realm` of the
    /// registry's `Bearer` challenge), so that a refused or unreachable token server is
    /// not blamed on `registry`. In JSON only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_host: Option<pullcheck_registry::FailedHost>,
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
    /// Where the node's runtime release would decide differently from the release
    /// pullcheck models, as data (`kind`, `runtime`, `file`, `host`, `modelled`,
    /// `differing`: [`pullcheck_mirrors::VersionWarning`]), sorted, each once: a
    /// containerd `hosts.toml` without a `[host]` table, an answer over HTTPS from
    /// containerd's default host of a loopback registry. The front ends word each into
    /// [`Report::warnings`] too ([`Report::word_version_warnings`]).
    pub version_warnings: Vec<pullcheck_mirrors::VersionWarning>,
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
            version_warnings: Vec::new(),
        }
    }

    /// Appends each [`Report::version_warnings`] entry to [`Report::warnings`] in the
    /// words of `words` (each front end's), once.
    pub fn word_version_warnings(
        &mut self,
        words: impl Fn(&pullcheck_mirrors::VersionWarning) -> String,
    ) {
        let worded: Vec<String> = self.version_warnings.iter().map(words).collect();
        for w in worded {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
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
            if !text.is_empty() {
                image.detail = crate::detail::with_remedies(&image.detail, &image.remedies, &text);
            }
        }
    }

    /// Words every row's other [`ImageReport::attempts`] into its detail, once, after the
    /// chosen answer's: `detail; also tried: E1: missing (…); E2, E3: same answer` (`after:`
    /// when the chosen answer is `present` or `unrunnable`). Attempts with the same facts
    /// (status, reason, missing, close tags, platforms, retry after; not the detail,
    /// which names its host) are named together, and those with the chosen answer's own are `same
    /// answer`, so no answer is written twice. `E` is the endpoint, with `with SOURCE key
    /// "KEY"` for a credential. The attempts stay in the row as data.
    pub fn word_attempts(&mut self) {
        for image in &mut self.images {
            if let Some(words) = crate::detail::attempts(image) {
                image.detail = format!("{}; {words}", image.detail);
            }
        }
    }

    /// The report as pretty JSON, in the documented shape.
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

impl ImageReport {
    /// The registry host that answered ([`ImageReport::registry`], `host[:port]`) when
    /// it is not the image's own: a mirror served the answer. `None` when the answer
    /// came from the image's own registry (for Docker Hub, `docker.io` or its API host
    /// `registry-1.docker.io`), when no registry answered, or when the canonical form
    /// does not parse.
    pub fn served_by_mirror(&self) -> Option<&str> {
        let registry = self.registry.as_deref()?;
        let own = crate::reference::Reference::parse(self.canonical.as_deref()?).ok()?;
        let is_own = registry == own.domain()
            || (own.is_docker_hub() && pullcheck_mirrors::DOCKER_HUB_API_HOST == registry);
        (!is_own).then_some(registry)
    }

    /// A row for `reference` (as written) under `policy` with `status` and `reason`, and
    /// nothing else yet: no canonical form, origins, detail or facts; the fields are
    /// public, for the caller to fill.
    pub fn new(
        reference: impl Into<String>,
        policy: ReportedPolicy,
        status: Status,
        reason: Reason,
    ) -> ImageReport {
        ImageReport {
            reference: reference.into(),
            substituted: None,
            canonical: None,
            policy,
            status,
            reason,
            missing: None,
            digest: None,
            registry: None,
            detail: String::new(),
            origins: Vec::new(),
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
            platforms: Vec::new(),
            retry_after: None,
            template: None,
            http_status: None,
            registry_errors: Vec::new(),
            failed_host: None,
        }
    }

    /// Whether this is a step that uses a `template:` (skipped, reason `template_step`),
    /// with or without an `image:` of its own, which the expanded template replaces.
    pub fn is_template_step(&self) -> bool {
        self.status == Status::Skipped && self.reason == Reason::TemplateStep
    }
}

/// Whether `c` could split or repaint a terminal line, or reorder what is shown: a
/// control character, or a Unicode bidirectional formatting character (U+061C, U+200E,
/// U+200F, U+202A–U+202E, U+2066–U+2069; Unicode TR9, the "Trojan Source" characters).
fn is_unsafe_for_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text with control characters and Unicode bidirectional formatting characters escaped
/// as Rust's `escape_debug` does (`\u{1b}`, `\u{202e}`), so a hostile pipeline cannot
/// split, repaint or reorder a report line; other text is returned as it is.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(is_unsafe_for_terminal) {
        text.escape_debug().to_string().into()
    } else {
        text.into()
    }
}

/// Report rows for tests: the one row the library's and the front ends' golden tests
/// start from (in the library's tests, and with the feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use pullcheck_input::{ContainerKind, Origin, PullPolicy};

    use super::{ImageReport, Reason, Status};

    /// `alpine:3.19` (canonical `docker.io/library/alpine:3.19`, policy `always`, reason
    /// `found`) used once, by the step `test` at `.vela.yml:4:12`, with `status`; every
    /// other field empty.
    pub fn step_image(status: Status) -> ImageReport {
        ImageReport {
            canonical: Some("docker.io/library/alpine:3.19".into()),
            origins: vec![Origin {
                file: Some(".vela.yml".into()),
                line: Some(4),
                column: Some(12),
                kind: ContainerKind::Step,
                name: "test".into(),
                stage: None,
                pod: None,
            }],
            ..ImageReport::new(
                "alpine:3.19",
                PullPolicy::Always.into(),
                status,
                Reason::Found,
            )
        }
    }
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
    }
    use super::fixtures::step_image as image;

    fn attempt(
        endpoint: &str,
        credential: Option<&str>,
        status: Status,
        detail: &str,
    ) -> AttemptReport {
        AttemptReport {
            endpoint: endpoint.into(),
            registry: endpoint.split('/').next().unwrap_or_default().into(),
            credential: credential.map(|source| CredentialSource {
                source: source.into(),
                key: "registry.example.com".into(),
                username: None,
            }),
            status,
            reason: Reason::AccessDenied,
            missing: None,
            close_tags: Vec::new(),
            platforms: Vec::new(),
            retry_after: None,
            detail: detail.into(),
            chosen: false,
        }
    }

    /// A `tag_not_found` attempt on `host` whose detail names it, with `close_tags`.
    fn tag_not_found(host: &str, close_tags: &[&str], chosen: bool) -> AttemptReport {
        let mean = close_tags
            .first()
            .map_or(String::new(), |t| format!("; did you mean {t}?"));
        AttemptReport {
            reason: Reason::TagNotFound,
            missing: Some(MissingPart::Tag),
            close_tags: close_tags.iter().map(|t| (*t).to_owned()).collect(),
            chosen,
            ..attempt(
                host,
                None,
                Status::Missing,
                &format!("tag v2 not found in team/app on {host}{mean}"),
            )
        }
    }

    /// A mirror and its registry that answer alike are one answer, though their details
    /// name different hosts; different close tags are another answer.
    #[test]
    fn equal_facts_are_the_same_answer_whatever_the_host() {
        let mut missing = image(Status::Missing);
        missing.attempts = vec![
            tag_not_found("m.example.com", &["v1"], true),
            tag_not_found("a.example.com", &["v1"], false),
            tag_not_found("b.example.com", &["v3"], false),
        ];
        missing.detail = missing.attempts[0].detail.clone();
        let mut refused = image(Status::Unreachable);
        let refused_on = |host: &str, chosen| AttemptReport {
            reason: Reason::ConnectionRefused,
            chosen,
            ..attempt(
                host,
                None,
                Status::Unreachable,
                &format!("registry {host} unreachable: connection refused"),
            )
        };
        refused.attempts = vec![
            refused_on("m.example.com", true),
            refused_on("a.example.com", false),
        ];
        refused.detail = refused.attempts[0].detail.clone();
        let mut report = Report::new(vec![missing, refused], vec![]);
        report.word_attempts();
        let details: Vec<&str> = report.images.iter().map(|i| i.detail.as_str()).collect();
        assert_eq!(
            details,
            [
                "tag v2 not found in team/app on m.example.com; did you mean v1?; also tried: \
                 a.example.com: same answer; b.example.com: missing (tag v2 not found in \
                 team/app on b.example.com; did you mean v3?)",
                "registry m.example.com unreachable: connection refused; also tried: \
                 a.example.com: same answer",
            ]
        );
    }

    /// The golden renderings of the other attempts: equal answers are named together,
    /// the chosen answer's own is `same answer`, never written twice.
    #[test]
    fn attempts_are_worded_once_each() {
        let mut denied = image(Status::Denied);
        denied.detail = "access denied".into();
        denied.attempts = vec![
            attempt(
                "mirror.example.com/proxy/v2/",
                None,
                Status::Unreachable,
                "connection refused",
            ),
            AttemptReport {
                chosen: true,
                ..attempt(
                    "registry.example.com",
                    Some("pull secret a (s.yml)"),
                    Status::Denied,
                    "access denied",
                )
            },
            attempt(
                "registry.example.com",
                Some("/root/.docker/config.json"),
                Status::Denied,
                "access denied",
            ),
            attempt(
                "other.example.com",
                None,
                Status::Unreachable,
                "connection refused",
            ),
        ];
        let mut present = image(Status::Present);
        present.detail = "found".into();
        present.attempts = vec![
            attempt(
                "mirror.example.com",
                None,
                Status::Missing,
                "tag v1 not found",
            ),
            AttemptReport {
                chosen: true,
                ..attempt("registry.example.com", None, Status::Present, "found")
            },
        ];
        let mut report = Report::new(vec![denied, present, image(Status::Present)], vec![]);
        report.word_attempts();
        let details: Vec<&str> = report.images.iter().map(|i| i.detail.as_str()).collect();
        assert_eq!(
            details,
            [
                "access denied; also tried: mirror.example.com/proxy/v2/, other.example.com: \
                 unreachable (connection refused); registry.example.com with \
                 /root/.docker/config.json key \"registry.example.com\": same answer",
                "found; after: mirror.example.com: missing (tag v1 not found)",
                "",
            ]
        );
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

    /// The golden JSON of an unresolved row: a shape change shows here (its text row is
    /// the CLI's, `crates/cli/src/render.rs`).
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
        i.detail = crate::detail::unresolved(&unresolved);
        i.problems = vec![Problem {
            at: unresolved.at.clone(),
            message: crate::detail::unresolved_message(&unresolved),
        }];
        i.variables = unresolved.variables;
        let r = Report::new(vec![i], vec![]);
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
}
