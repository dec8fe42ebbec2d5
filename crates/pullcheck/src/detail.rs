//! The detail renderer: every word the library itself writes into a row's `detail`
//! (and an attempt's). The JSON `detail` is words by contract, rendered from the
//! finding, whose facts travel as data beside it (`reason`, `missing`, `remedies`,
//! `attempts`, ...); this module is the one place those words are made, so a rewording
//! shows here only. It names no CLI flag and no field of a front end: remedies are
//! worded by the front ends' render modules and passed in as text. The registry
//! client's answers come as data (`pullcheck_registry::Answer::finding`, its `errors`
//! and `history`) and are worded here ([`answer`]), and so are an authorize failure's
//! facts (`pullcheck_registry::AuthorizeError::failure`, an `AuthFailure`:
//! [`authorize`], [`auth_failure`]). An unresolved image ([`pullcheck_input::Unresolved`]) comes as data and
//! is worded here ([`unresolved`]).

use std::time::Duration;

use pullcheck_credentials::{CredentialError, ProviderError};
use pullcheck_registry::{
    Answer, AttemptHistory, AuthFailure, AuthorizeError, CertificateProblem, ChallengeProblem,
    ErrorEntry, FailedAttempt, Finding, HeaderPart, ManifestRef, PlatformSource, Presented,
    RealmProblem, RefusedRequest, Requester, RetryStop, TagList, TokenReplyProblem, Tried,
};

use crate::report::{AttemptReport, ImageReport, Remedy, Status};

/// The longest `Content-Type` quoted in a detail; the rest is cut.
const QUOTED_CONTENT_TYPE_LIMIT: usize = 100;

/// A registry answer in words: its finding, the error envelope in parentheses, then the
/// failed attempts and why retrying stopped.
pub(crate) fn answer(a: &Answer) -> String {
    let mut text = finding(a);
    if !matches!(a.finding, Finding::ManifestUnknown { .. }) {
        text = with_errors(text, &a.errors, a.errors_omitted);
    }
    tries(&mut text, &a.history);
    text
}

/// A ping or login failure in words: its facts ([`auth_failure`]), then the failed
/// attempts and why retrying stopped.
pub(crate) fn authorize(e: &AuthorizeError) -> String {
    let mut text = auth_failure(&e.failure);
    tries(&mut text, &e.history);
    text
}

/// At most this many entries of a registry's error envelope are worded in a detail;
/// the rest are counted (`+k more`). The JSON's `registry_errors` keeps up to 10.
pub(crate) const WORDED_ERROR_ENTRIES: usize = 3;

/// A credential in words, never its secret: `user "alice"`, `the configured identity
/// token`.
fn presented(credential: &Presented) -> String {
    match credential {
        Presented::User(name) => format!("user {name:?}"),
        Presented::IdentityToken => "the configured identity token".to_owned(),
        Presented::RegistryToken => "the configured registry token".to_owned(),
    }
}

/// Why the images of a registry could not be asked about, in words: each names the
/// registry and, for a token server's failure, the token server.
pub(crate) fn auth_failure(failure: &AuthFailure) -> String {
    match failure {
        AuthFailure::InvalidHost { host } => {
            format!("registry host {host:?} is not a valid host[:port]")
        }
        AuthFailure::InvalidHeader {
            host,
            name,
            part: HeaderPart::Name,
        } => format!("registry {host}: {name:?} is not a valid header name"),
        AuthFailure::InvalidHeader {
            host,
            name,
            part: HeaderPart::Value,
        } => format!("registry {host}: the value of header {name:?} is not a valid header value"),
        AuthFailure::ClientConfig { host, why } => format!("registry {host} unreachable: {why}"),
        AuthFailure::Unreachable { host, tried } => match tried {
            Tried::Request(failure) => format!("registry {host} unreachable: {}", failure.why),
            Tried::Over { scheme, failure } => format!(
                "registry {host} unreachable over {}: {}",
                scheme.as_str(),
                failure.why
            ),
            Tried::Both { https, http } => format!(
                "registry {host} unreachable: https: {}; http: {}",
                https.why, http.why
            ),
        },
        AuthFailure::Refused { host, refusal } => {
            format!("registry {host}: {refusal}; nothing was sent to it")
        }
        AuthFailure::PingStatus { host, url, status } => match status {
            403 => format!("registry {host} refused access to {url} (HTTP 403)"),
            404 => {
                format!("{url} answered HTTP 404: {host} does not serve the registry API (/v2/)")
            }
            429 => format!("registry {host} is rate limiting (HTTP 429 on {url})"),
            status => format!("registry {host} answered HTTP {status} on {url}"),
        },
        AuthFailure::InsecureRealm { host, realm } => format!(
            "registry {host} sends tokens from a plain-HTTP realm ({realm}); refused because \
             {host} is not configured as insecure"
        ),
        AuthFailure::BadRealm { host, problem } => {
            let why = match problem {
                RealmProblem::Missing => "the Bearer challenge has no realm".to_owned(),
                RealmProblem::NotAUrl { realm, error } => {
                    format!("the Bearer realm {realm:?} is not a URL ({error})")
                }
                RealmProblem::Scheme(scheme) => format!("the Bearer realm has scheme {scheme:?}"),
                RealmProblem::NoHost => "the Bearer realm has no host".to_owned(),
            };
            format!("registry {host} sent an unusable Bearer challenge: {why}")
        }
        AuthFailure::UnsupportedChallenge { host, problem } => {
            let why = match problem {
                ChallengeProblem::Unsupported(scheme) => {
                    format!("asks for unsupported authentication ({scheme})")
                }
                ChallengeProblem::Malformed { reason, position } => format!(
                    "sent a malformed WWW-Authenticate header ({reason} at byte {position})"
                ),
                ChallengeProblem::Missing => {
                    "answered 401 without a WWW-Authenticate challenge".to_owned()
                }
            };
            format!("registry {host} {why}; its images cannot be checked")
        }
        AuthFailure::CredentialsRejected {
            host,
            credential,
            status,
        } => format!(
            "registry {host} rejected the credentials of {} (HTTP {status})",
            presented(credential)
        ),
        AuthFailure::CredentialCheckStatus { host, status } => {
            format!("registry {host} answered HTTP {status} to the credential check")
        }
        AuthFailure::TokenAnonymousRefused {
            registry,
            realm,
            status,
        } => format!(
            "token server {realm} refused anonymous access to {registry} (HTTP {status}); \
             credentials are needed"
        ),
        AuthFailure::TokenRejected {
            registry,
            realm,
            credential,
            status,
        } => format!(
            "token server {realm} rejected the credentials of {} for {registry} (HTTP {status})",
            presented(credential)
        ),
        AuthFailure::TokenStatus {
            registry,
            realm,
            status,
        } => format!("token server {realm} for {registry} answered HTTP {status}"),
        AuthFailure::TokenUnreachable {
            registry,
            realm,
            failure,
        } => format!(
            "token server {realm} for {registry} unreachable: {}",
            failure.why
        ),
        AuthFailure::TokenReply {
            registry,
            realm,
            problem,
            status: _,
        } => {
            let unsendable = "the token holds characters that an HTTP header cannot carry";
            let why = match problem {
                TokenReplyProblem::NotJson(error) => {
                    format!("the token reply is not the expected JSON ({error})")
                }
                TokenReplyProblem::NoToken => "the token reply holds no token".to_owned(),
                TokenReplyProblem::TooLarge { limit_kib } => {
                    format!("the token reply is larger than {limit_kib} KiB")
                }
                TokenReplyProblem::Unsendable => unsendable.to_owned(),
                TokenReplyProblem::ConfiguredUnsendable => {
                    format!("the configured registry token: {unsendable}")
                }
            };
            format!("token server {realm} for {registry}: {why}")
        }
        AuthFailure::TokenServerRefused {
            registry,
            realm,
            refusal,
        } => format!("token server {realm} for {registry}: {refusal}; nothing was sent to it"),
    }
}

/// `base`, with the error envelope's entries in parentheses when there are any:
/// `(CODE: message; CODE)`, at most [`WORDED_ERROR_ENTRIES`] of them, then `+k more`
/// for the rest (`omitted` counts those the registry client did not keep).
fn with_errors(base: String, errors: &[ErrorEntry], omitted: usize) -> String {
    if errors.is_empty() {
        return base;
    }
    let mut entries: Vec<String> = errors
        .iter()
        .take(WORDED_ERROR_ENTRIES)
        .map(|e| {
            if e.message.is_empty() {
                e.code.clone()
            } else {
                format!("{}: {}", e.code, e.message)
            }
        })
        .collect();
    let more = errors.len().saturating_sub(WORDED_ERROR_ENTRIES) + omitted;
    if more > 0 {
        entries.push(format!("+{more} more"));
    }
    format!("{base} ({})", entries.join("; "))
}

/// `tag 3.19` or `digest sha256:…`.
fn manifest_ref(reference: &ManifestRef) -> String {
    match reference {
        ManifestRef::Tag(t) => format!("tag {t}"),
        ManifestRef::Digest(d) => format!("digest {d}"),
    }
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The finding of `a` in words, without its envelope or attempts.
fn finding(a: &Answer) -> String {
    let platforms = || {
        if a.platforms.is_empty() {
            "none".to_owned()
        } else {
            a.platforms
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    match &a.finding {
        Finding::Served {
            method,
            status,
            other_algorithm,
            platform,
        } => {
            let mut text = format!("{} {status}", method.as_str());
            if let Some(mt) = &a.media_type {
                text.push_str(&format!(", {mt}"));
            }
            if let Some(got) = other_algorithm {
                text.push_str(&format!(
                    "; the registry names it {got} (another algorithm, not compared)"
                ));
            }
            match platform {
                Some((want, have, PlatformSource::Index)) => {
                    text.push_str(&format!("; platform {want} listed as {have}"));
                }
                Some((want, have, PlatformSource::Config)) => {
                    text.push_str(&format!("; platform {want} matches its config ({have})"));
                }
                None => {}
            }
            text
        }
        Finding::NotAManifest {
            host,
            method,
            status,
            content_type,
        } => {
            let content_type = match content_type {
                Some(mt) if mt.chars().count() > QUOTED_CONTENT_TYPE_LIMIT => format!(
                    "with Content-Type {}…",
                    mt.chars()
                        .take(QUOTED_CONTENT_TYPE_LIMIT)
                        .collect::<String>()
                ),
                Some(mt) => format!("with Content-Type {mt}"),
                None => "with no Content-Type".to_owned(),
            };
            format!(
                "{} to {host} answered {status} {content_type} and no Docker-Content-Digest: \
                 not a registry's manifest answer (a proxy or captive portal?)",
                method.as_str()
            )
        }
        Finding::DigestMismatch { host, wanted, got } => format!(
            "registry {host} returned digest {got} for {wanted}: \
             the content does not match its digest, a pull would fail verification"
        ),
        Finding::RepositoryUnknown { host, repository } => {
            format!("repository {repository} not found on {host}")
        }
        Finding::ManifestUnknown {
            host,
            repository,
            reference,
            tag_list,
        } => {
            let what = manifest_ref(reference);
            match tag_list {
                TagList::NotAsked(method) => with_errors(
                    format!(
                        "{what} not found in {repository} on {host} ({} 404); \
                         whether the repository exists was not checked",
                        method.as_str()
                    ),
                    &a.errors,
                    a.errors_omitted,
                ),
                TagList::Failed(why) => format!(
                    "{what} not found in {repository} on {host}; the tag list request failed \
                     ({why}), so whether the repository exists is unknown"
                ),
                TagList::Unreadable => format!(
                    "{what} not found in {repository} on {host}; the tag list could not be \
                     read, so whether the repository exists is unknown"
                ),
                TagList::Status(status) => with_errors(
                    format!(
                        "{what} not found in {repository} on {host}; the tag list answered \
                         HTTP {status}, so whether the repository exists is unknown"
                    ),
                    &a.errors,
                    a.errors_omitted,
                ),
            }
        }
        Finding::ReferenceUnknown {
            host,
            repository,
            reference,
            tags,
        } => {
            let count = match (tags.truncated, tags.count) {
                (true, n) => format!("at least {n} tags"),
                (false, 1) => "1 tag".to_owned(),
                (false, n) => format!("{n} tags"),
            };
            match reference {
                ManifestRef::Digest(d) => format!(
                    "digest {d} not found in {repository} on {host} (the repository exists, {count})"
                ),
                ManifestRef::Tag(tag) if tags.count == 0 => {
                    format!("tag {tag} not found in {repository} on {host}, which has no tags")
                }
                ManifestRef::Tag(tag) if a.close_tags.is_empty() => {
                    format!("tag {tag} not found in {repository} on {host} ({count}, none close)")
                }
                ManifestRef::Tag(tag) => format!(
                    "tag {tag} not found in {repository} on {host}; did you mean {}?",
                    or_list(&a.close_tags)
                ),
            }
        }
        Finding::Unauthorized { host, requester } => match requester {
            Requester::NoCredentials => {
                format!("authentication required and no credentials are configured for {host}")
            }
            Requester::Anonymous => format!(
                "missing, or no access anonymously ({host} answered 401; it does not tell the \
                 two apart)"
            ),
            Requester::Unusable(who) => format!(
                "authentication required: {host} asks for a user name and password, and {who} \
                 is not one"
            ),
            Requester::Credential(who) => format!(
                "missing, or no access with these credentials ({who}; {host} answered 401; it \
                 does not tell the two apart)"
            ),
        },
        Finding::Forbidden { host, repository } => {
            format!("access to {repository} denied by {host} (HTTP 403)")
        }
        Finding::RateLimited { host } => {
            let mut text = format!("rate limited by {host} (HTTP 429)");
            // A wait too long to take is said once, where retrying stopped.
            let too_long = matches!(a.history.stopped, Some(RetryStop::RetryAfterTooLong { .. }));
            if let Some(wait) = a.retry_after.filter(|_| !too_long) {
                text.push_str(&format!("; retry after {} s", wait.as_secs()));
            }
            text
        }
        Finding::HttpStatus {
            host,
            method,
            status,
            expected,
        } => {
            let method = method.as_str();
            if *expected {
                format!("registry {host} answered HTTP {status} to {method}")
            } else {
                format!(
                    "registry {host} answered HTTP {status} to {method}, which this client does \
                     not expect"
                )
            }
        }
        Finding::PlatformNotListed {
            host,
            manifest,
            wanted,
        } => format!(
            "platform {wanted} not in the index of {manifest} on {host}; it lists {}",
            platforms()
        ),
        Finding::PlatformMismatch {
            host,
            manifest,
            wanted,
        } => format!(
            "{manifest} on {host} is a single-platform image for {}: a node on {wanted} \
             pulls it, and it will not run there",
            platforms()
        ),
        Finding::PlatformUnchecked {
            host,
            manifest,
            wanted,
            source,
            why,
        } => {
            let kind = match source {
                PlatformSource::Index => "an index",
                PlatformSource::Config => "a single-platform image",
            };
            format!(
                "{manifest} exists on {host} as {kind}, but the platform {wanted} could not be \
                 checked: {why}"
            )
        }
        Finding::RequestFailed {
            host,
            method,
            why,
            redirected_from: None,
        } => format!("{} to {host} failed: {why}", method.as_str()),
        Finding::RequestFailed {
            host,
            method,
            why,
            redirected_from: Some(from),
        } => format!(
            "{} to {host} (redirected there by {from}) failed: {why}",
            method.as_str()
        ),
        Finding::Refused { what } => {
            let what = match what {
                RefusedRequest::Request {
                    method,
                    host,
                    redirected_from: None,
                } => format!("{} to {host}", method.as_str()),
                RefusedRequest::Request {
                    method,
                    host,
                    redirected_from: Some(from),
                } => format!("{} to {host} (redirected from {from})", method.as_str()),
                RefusedRequest::Fetch {
                    object,
                    redirected_to: None,
                } => format!("{object} GET"),
                RefusedRequest::Fetch {
                    object,
                    redirected_to: Some(to),
                } => format!("{object} GET redirected to {to}"),
            };
            match &a.refusal {
                Some(refusal) => format!("{what}: {refusal}; nothing was sent to it"),
                None => format!("{what}: refused by the egress policy; nothing was sent to it"),
            }
        }
        Finding::Authorization(failure) => auth_failure(failure),
    }
}

/// One failed attempt in words: `HTTP 503`, `HTTP 429 (retry after 30 s)`, or the
/// transport's reason.
fn failed_attempt(failure: &FailedAttempt) -> String {
    match failure {
        FailedAttempt::Status {
            status,
            retry_after: Some(wait),
        } => format!("HTTP {status} (retry after {} s)", wait.as_secs()),
        FailedAttempt::Status { status, .. } => format!("HTTP {status}"),
        FailedAttempt::NoAnswer { why, .. } => why.clone(),
        FailedAttempt::TokenStatus { status } => format!("token server: HTTP {status}"),
        FailedAttempt::TokenNoAnswer { why } => format!("token server: {why}"),
        FailedAttempt::FetchStatus { object, status } => format!("{object} GET: HTTP {status}"),
        FailedAttempt::FetchNoAnswer { object, why } => format!("{object} GET: {why}"),
        FailedAttempt::FirstStatus { status, path } => format!("HTTP {status} on {path}"),
        FailedAttempt::FirstNoAnswer(Tried::Over { scheme, failure }) => {
            format!("{}: {}", scheme.as_str(), failure.why)
        }
        FailedAttempt::FirstNoAnswer(Tried::Both { https, http }) => {
            format!("https: {}, then http: {}", https.why, http.why)
        }
        FailedAttempt::FirstNoAnswer(Tried::Request(failure)) => failure.why.clone(),
    }
}

/// Appends the attempt history to `text`: nothing after a single attempt that did not
/// have to stop early; otherwise each failed attempt, said once when all are the same,
/// and why retrying stopped before the last attempt.
fn tries(text: &mut String, history: &AttemptHistory) {
    let words: Vec<String> = history.failed.iter().map(failed_attempt).collect();
    if !words.is_empty() {
        let list = words
            .iter()
            .enumerate()
            .map(|(i, w)| format!("{}) {w}", i + 1))
            .collect::<Vec<_>>()
            .join("; ");
        let same = words.len() > 1 && words.iter().all(|w| *w == words[0]);
        let n = words.len();
        if history.gave_up {
            if same {
                // The text already says the last failure: equal answers are said once.
                text.push_str(&format!("; {n} attempts, each the same"));
            } else if n > 1 {
                text.push_str(&format!("; {n} attempts failed: {list}"));
            }
        } else if same {
            text.push_str(&format!("; after {n} failed attempts, each: {}", words[0]));
        } else {
            let noun = if n == 1 { "attempt" } else { "attempts" };
            text.push_str(&format!("; after {n} failed {noun}: {list}"));
        }
    }
    if let Some(stop) = &history.stopped {
        let reason = match stop {
            RetryStop::RetryAfterTooLong { asked, max } => format!(
                "the registry asked to retry after {} s, beyond the {} ms this client waits",
                asked.as_secs(),
                max.as_millis()
            ),
            RetryStop::WouldPassDeadline { wait } => format!(
                "waiting {} ms for the next attempt would pass the deadline",
                wait.as_millis()
            ),
        };
        text.push_str(&format!("; not retried: {reason}"));
    }
}

/// A use under pull policy `never`.
pub(crate) const NEVER_PULLED: &str = "pull policy `never`: the image is not pulled";

/// A use under pull policy `on_start`, not checked now.
pub(crate) const DEFERRED_ON_START: &str =
    "pull policy `on_start`: pulled when its container starts";

/// A checked reference that has no outcome (no endpoint was resolved for it).
pub(crate) const NO_ENDPOINT_RESOLVED: &str = "no endpoint resolved for this reference";

/// A reference with routes but no (route, credential) attempt to make.
pub(crate) const NO_ENDPOINT_TO_ASK: &str = "no endpoint to ask";

/// The words for a skipped use ([`pullcheck_input::Skip`]).
pub(crate) fn skip(skip: &pullcheck_input::Skip) -> String {
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

/// The sentence for one variable an image waits for, e.g. ``${TAG} is the target of
/// secret `tag`, whose value the worker injects at build time``; `` `pull`: `` first
/// when it is in the `pull:` field.
pub(crate) fn variable(v: &pullcheck_input::UnresolvedVariable) -> String {
    use pullcheck_input::{Field, ValueSource};
    let name = &v.name;
    let field = if v.field == Field::Pull {
        "`pull`: "
    } else {
        ""
    };
    let source = match &v.source {
        ValueSource::Secret { secret } => format!(
            "${{{name}}} is the target of secret `{secret}`, whose value the worker injects \
             at build time"
        ),
        ValueSource::Server => {
            format!("${{{name}}} is set by the Vela server when it compiles the build")
        }
        ValueSource::ServerOverPipeline => format!(
            "${{{name}}} is set by the Vela server when it compiles the build, over the \
             value the pipeline gives it"
        ),
        ValueSource::Unrendered { what } => {
            format!("${{{name}}} is {what}, which pullcheck does not render as Vela does")
        }
        ValueSource::ParameterCase { keys } => format!(
            "${{{name}}} is set by the parameters {}, which differ only in case: Vela sets \
             it from whichever its map iteration meets last, so its value differs from \
             build to build",
            keys.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
        ValueSource::GlobalEnvironmentWithheld => format!(
            "${{{name}}} is set in the pipeline's `environment:`, which \
             `metadata.environment` does not give to this container"
        ),
        ValueSource::Worker => format!(
            "${{{name}}} is set by the Vela worker when the step runs (a credential, which \
             pullcheck never substitutes)"
        ),
        // The compiler leaves an unknown `${NAME}` (and turns `$${NAME}` into it); the
        // worker then fills it from the container's environment, empty when unset
        // (go-vela/worker's substitution). "Set nowhere ... the server sets it" said two
        // things at once; this says who fills it.
        ValueSource::Nowhere => format!(
            "${{{name}}} is not set in the pipeline: the worker fills it from the step's \
             environment when the step runs (a secret, or a variable the server sets), and \
             makes it empty if nothing sets it"
        ),
    };
    let default = if v.default_ignored {
        format!(
            " (its default is never used: the compiler keeps an unknown variable as \
             ${{{name}}} and drops the default, and the worker makes it empty if nothing \
             sets it)"
        )
    } else {
        String::new()
    };
    format!("{field}{source}{default}")
}

/// An unresolved image's words without the position: `not checked: image
/// "app:${TAG}" is known only when the build runs: ...` (each [`variable`]'s sentence,
/// joined by `; `).
pub(crate) fn unresolved_message(u: &pullcheck_input::Unresolved) -> String {
    format!(
        "not checked: image {:?} is known only when the build runs: {}",
        u.image,
        u.variables
            .iter()
            .map(variable)
            .collect::<Vec<_>>()
            .join("; ")
    )
}

/// An unresolved image's detail: `FILE:LINE:COLUMN: ` ([`pullcheck_input::Position`])
/// and [`unresolved_message`]; the message alone in a compiled build (no position).
pub(crate) fn unresolved(u: &pullcheck_input::Unresolved) -> String {
    match &u.at {
        Some(at) => format!("{at}: {}", unresolved_message(u)),
        None => unresolved_message(u),
    }
}

/// Credential helpers or plugins still running when the overall deadline (`deadline`)
/// ran out.
pub(crate) fn helpers_out_of_time(deadline: Duration) -> String {
    format!(
        "credential helpers did not answer within the overall deadline of {} ms",
        deadline.as_millis()
    )
}

/// The credentials of a reference could not be resolved (a helper or file failed).
pub(crate) fn not_checked(error: &CredentialError) -> String {
    format!("not checked: {error}")
}

/// The mirror configuration's `rule` blocks the reference.
pub(crate) fn blocked(rule: &str) -> String {
    format!("blocked by {rule}; no request was sent")
}

/// The mirror configuration's `rule` makes the reference unpullable, for `reason`.
pub(crate) fn unpullable(reason: &str, rule: &str) -> String {
    format!("the runtime cannot pull this: {reason} ({rule}); no request was sent")
}

/// No answer from `host`: within the overall `deadline` when it ran out (`Some`), else
/// the check ended before it was asked.
pub(crate) fn no_answer(host: &str, deadline: Option<Duration>) -> String {
    match deadline {
        Some(d) => format!(
            "no answer within the overall deadline of {} ms from {host}",
            d.as_millis()
        ),
        None => format!("no answer from {host}"),
    }
}

/// `detail` with the credential provider plugins that failed: after it when the answer
/// stands (`answered`), else before it as the reason the credential was not tried.
pub(crate) fn provider_failures(
    detail: &str,
    failures: &[ProviderError],
    answered: bool,
) -> String {
    let words: Vec<String> = failures
        .iter()
        .map(|f| format!("credential provider {} failed: {}", f.provider, f.failure))
        .collect();
    if answered {
        format!("{detail}; {}", words.join("; "))
    } else {
        format!("{}, so it was not tried; {detail}", words.join("; "))
    }
}

/// A registry (`host`) whose https certificate is not valid for it, for `problem`.
pub(crate) fn untrusted(host: &str, problem: CertificateProblem) -> String {
    let problem = match problem {
        CertificateProblem::UnknownAuthority => "signed by an unknown authority",
        CertificateProblem::Expired => "expired",
        CertificateProblem::NotYetValid => "not yet valid",
        CertificateProblem::OtherHost => "issued for another host",
        CertificateProblem::Revoked => "revoked",
        CertificateProblem::BadSignature => "badly signed",
        CertificateProblem::Invalid => "invalid",
    };
    format!(
        "https certificate of registry {host} not trusted: {problem}; the registry as \
         reached cannot be shown to be the one named"
    )
}

/// `detail` of an https certificate not valid for its host, where the registry client
/// gave no [`CertificateProblem`] (a token server's): its words, then why it is denied.
pub(crate) fn untrusted_as_said(detail: &str) -> String {
    format!("{detail}; the registry as reached cannot be shown to be the one named")
}

/// `detail` of an answer from the answer cache, `age` old.
pub(crate) fn cached(detail: &str, age: Duration) -> String {
    format!("{detail} (answer cached {} s ago)", age.as_secs())
}

/// `detail` with a front end's words for its `remedies` (`text`, not empty): `detail
/// (text)` when the only remedy is [`Remedy::IncludeOnStart`], else `detail; text`.
pub(crate) fn with_remedies(detail: &str, remedies: &[Remedy], text: &str) -> String {
    if remedies == [Remedy::IncludeOnStart] {
        format!("{detail} ({text})")
    } else {
        format!("{detail}; {text}")
    }
}

/// The other attempts of `image` in words, for [`Report::word_attempts`](crate::report::Report::word_attempts); `None` when
/// there are none. Attempts are the same answer when their facts are equal (status,
/// reason, what is missing, close tags, platforms, retry after), whatever their details
/// say: a detail names its host, so two endpoints that answer alike differ in words.
/// A group of other answers is worded with its first attempt's detail.
pub(crate) fn attempts(image: &ImageReport) -> Option<String> {
    let chosen = image.attempts.iter().find(|a| a.chosen)?;
    // The answer's facts → the endpoints that answered so, in first-seen order.
    let mut groups: Vec<(&AttemptReport, Vec<String>)> = Vec::new();
    for a in image.attempts.iter().filter(|a| !a.chosen) {
        let name = match &a.credential {
            Some(c) => format!("{} with {} key {:?}", a.endpoint, c.source, c.key),
            None => a.endpoint.clone(),
        };
        match groups.iter_mut().find(|(first, _)| same_answer(first, a)) {
            Some((_, names)) => names.push(name),
            None => groups.push((a, vec![name])),
        }
    }
    if groups.is_empty() {
        return None;
    }
    let verb = if matches!(chosen.status, Status::Present | Status::Unrunnable) {
        "after"
    } else {
        "also tried"
    };
    let listed: Vec<String> = groups
        .into_iter()
        .map(|(first, names)| {
            let names = names.join(", ");
            if same_answer(first, chosen) {
                format!("{names}: same answer")
            } else {
                format!("{names}: {} ({})", first.status.as_str(), first.detail)
            }
        })
        .collect();
    Some(format!("{verb}: {}", listed.join("; ")))
}

/// Whether two attempts got the same answer: equal status, reason, missing part, close
/// tags, platforms and retry after (not their details, which name their hosts).
fn same_answer(a: &AttemptReport, b: &AttemptReport) -> bool {
    (
        a.status,
        a.reason,
        a.missing,
        &a.close_tags,
        &a.platforms,
        a.retry_after,
    ) == (
        b.status,
        b.reason,
        b.missing,
        &b.close_tags,
        &b.platforms,
        b.retry_after,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of an unresolved image, once (the golden rendering), through the real
    /// reader: `${X}` set nowhere, and `$${X}`, which the compiler turns into `${X}`
    /// for the worker, get the same sentence, which says who fills it (it said "set
    /// nowhere ...; the server or a secret sets it").
    #[test]
    fn unresolved_words_golden() {
        let text = "version: \"1\"\nsteps:\n  - name: a\n    image: golang:${GO_VERSION}\n    \
                    commands: [x]\n  - name: b\n    image: golang:$${GO_VERSION}\n    \
                    commands: [x]\n";
        let uses = pullcheck_input::read_pipeline_with_warnings(".vela.yml", text)
            .expect("reads")
            .0;
        let words: Vec<String> = uses
            .iter()
            .map(|u| match &u.disposition {
                pullcheck_input::Disposition::Unresolved(un) => unresolved(un),
                other => panic!("{other:?}"),
            })
            .collect();
        let who = "${GO_VERSION} is not set in the pipeline: the worker fills it from the \
                   step's environment when the step runs (a secret, or a variable the server \
                   sets), and makes it empty if nothing sets it";
        assert_eq!(
            words,
            [
                format!(
                    ".vela.yml:4:12: not checked: image \"golang:${{GO_VERSION}}\" is known \
                     only when the build runs: {who}"
                ),
                format!(
                    ".vela.yml:7:12: not checked: image \"golang:$${{GO_VERSION}}\" is known \
                     only when the build runs: {who}"
                ),
            ]
        );
    }

    /// A web server's long `Content-Type` is cut in the words (the registry client keeps
    /// it whole in the finding); the envelope and the attempts follow the finding.
    #[test]
    fn registry_answers_in_words() {
        use pullcheck_registry::{
            ErrorEntry, FailedAttempt, Finding, Method, Reason, RetryStop, Status,
        };
        let long = format!("text/{}", "x".repeat(500));
        let a = Answer::new(
            Status::Unreachable,
            Reason::NotARegistry,
            Finding::NotAManifest {
                host: "reg.example".into(),
                method: Method::Get,
                status: 200,
                content_type: Some(long),
            },
        );
        let words = answer(&a);
        assert!(words.len() < 300, "{words}");
        assert!(
            words.contains("xxx… and no Docker-Content-Digest"),
            "{words}"
        );

        let mut a = Answer::new(
            Status::Unreachable,
            Reason::RateLimited,
            Finding::RateLimited {
                host: "reg.example".into(),
            },
        );
        a.retry_after = Some(Duration::from_secs(30));
        a.errors = vec![ErrorEntry {
            code: "TOOMANYREQUESTS".into(),
            message: "slow down".into(),
        }];
        a.history.failed = vec![FailedAttempt::Status {
            status: 429,
            retry_after: Some(Duration::from_secs(30)),
        }];
        a.history.gave_up = true;
        a.history.stopped = Some(RetryStop::RetryAfterTooLong {
            asked: Duration::from_secs(30),
            max: Duration::from_secs(10),
        });
        // A wait this client takes is said beside the 429.
        let mut waited = a.clone();
        waited.history = AttemptHistory::default();
        assert_eq!(
            answer(&waited),
            "rate limited by reg.example (HTTP 429); retry after 30 s (TOOMANYREQUESTS: slow down)"
        );
        assert_eq!(
            answer(&a),
            "rate limited by reg.example (HTTP 429) (TOOMANYREQUESTS: slow down); not retried: \
             the registry asked to retry after 30 s, beyond the 10000 ms this client waits"
        );
    }

    /// The attempt history's words: nothing after one attempt; each failure listed, or
    /// said once when all are equal (issue 23: no repeated text); why retrying stopped.
    #[test]
    fn attempt_history_in_words() {
        use pullcheck_registry::FailedAttempt;
        let other = |w: &str| FailedAttempt::NoAnswer {
            kind: pullcheck_registry::Reason::ConnectionFailed,
            why: w.into(),
        };
        let s503 = FailedAttempt::Status {
            status: 503,
            retry_after: None,
        };
        let words = |failed: Vec<FailedAttempt>, gave_up: bool, base: &str| {
            let mut text = base.to_owned();
            tries(
                &mut text,
                &AttemptHistory {
                    failed,
                    gave_up,
                    stopped: None,
                },
            );
            text
        };
        assert_eq!(words(vec![], false, "HEAD 200"), "HEAD 200");
        assert_eq!(
            words(vec![s503.clone()], false, "HEAD 200"),
            "HEAD 200; after 1 failed attempt: 1) HTTP 503"
        );
        assert_eq!(
            words(
                vec![
                    s503.clone(),
                    other("connection reset by peer"),
                    s503.clone()
                ],
                true,
                "registry r answered HTTP 503 to HEAD"
            ),
            "registry r answered HTTP 503 to HEAD; 3 attempts failed: \
             1) HTTP 503; 2) connection reset by peer; 3) HTTP 503"
        );
        assert_eq!(
            words(
                vec![other("connection refused"); 3],
                true,
                "connection refused"
            ),
            "connection refused; 3 attempts, each the same"
        );
        assert_eq!(
            words(vec![other("connection refused"); 2], false, "HEAD 200"),
            "HEAD 200; after 2 failed attempts, each: connection refused"
        );
        assert_eq!(
            words(
                vec![
                    FailedAttempt::TokenStatus { status: 503 },
                    FailedAttempt::FetchStatus {
                        object: "index".into(),
                        status: 502
                    },
                    FailedAttempt::FetchNoAnswer {
                        object: "config blob".into(),
                        why: "connection reset by peer".into()
                    },
                ],
                false,
                "HEAD 200"
            ),
            "HEAD 200; after 3 failed attempts: 1) token server: HTTP 503; 2) index GET: \
             HTTP 502; 3) config blob GET: connection reset by peer"
        );
    }

    /// The words of the authorization failures the golden tests (`tests/it/golden.rs`)
    /// do not reach through a registry, each once: as the registry client wrote them
    /// before they were typed (issue 23).
    #[test]
    fn authorization_failures_in_words() {
        use pullcheck_registry::{
            AuthFailure as F, EgressMatch, EgressRefusal, NoAnswer, RefusalRule, Scheme,
        };
        let (h, r) = ("reg.example".to_string(), "auth.example:8443".to_string());
        let refusal = EgressRefusal {
            matched: EgressMatch::Name {
                host: "reg.example".into(),
                port: Some(443),
            },
            rule: RefusalRule::NoAllowRule,
        };
        let timeout = NoAnswer {
            kind: pullcheck_registry::Reason::Timeout,
            why: "timed out after 300 ms".into(),
        };
        let cases: Vec<(F, String)> = vec![
            (
                F::InvalidHost { host: "a b".into() },
                "registry host \"a b\" is not a valid host[:port]".into(),
            ),
            (
                F::InvalidHeader {
                    host: h.clone(),
                    name: "bad name".into(),
                    part: HeaderPart::Name,
                },
                "registry reg.example: \"bad name\" is not a valid header name".into(),
            ),
            (
                F::InvalidHeader {
                    host: h.clone(),
                    name: "X-Token".into(),
                    part: HeaderPart::Value,
                },
                "registry reg.example: the value of header \"X-Token\" is not a valid header value"
                    .into(),
            ),
            (
                F::ClientConfig {
                    host: h.clone(),
                    why: "cannot read /x/ca.crt: gone".into(),
                },
                "registry reg.example unreachable: cannot read /x/ca.crt: gone".into(),
            ),
            (
                F::Unreachable {
                    host: h.clone(),
                    tried: Tried::Request(timeout.clone()),
                },
                "registry reg.example unreachable: timed out after 300 ms".into(),
            ),
            (
                F::Unreachable {
                    host: h.clone(),
                    tried: Tried::Over {
                        scheme: Scheme::Https,
                        failure: timeout.clone(),
                    },
                },
                "registry reg.example unreachable over https: timed out after 300 ms".into(),
            ),
            (
                F::Refused {
                    host: h.clone(),
                    refusal: refusal.clone(),
                },
                format!("registry reg.example: {refusal}; nothing was sent to it"),
            ),
            (
                F::PingStatus {
                    host: h.clone(),
                    url: "https://reg.example/v2/".into(),
                    status: 429,
                },
                "registry reg.example is rate limiting (HTTP 429 on https://reg.example/v2/)"
                    .into(),
            ),
            (
                F::PingStatus {
                    host: h.clone(),
                    url: "https://reg.example/v2/".into(),
                    status: 502,
                },
                "registry reg.example answered HTTP 502 on https://reg.example/v2/".into(),
            ),
            (
                F::InsecureRealm {
                    host: h.clone(),
                    realm: "http://auth.example".into(),
                },
                "registry reg.example sends tokens from a plain-HTTP realm (http://auth.example); \
                 refused because reg.example is not configured as insecure"
                    .into(),
            ),
            (
                F::BadRealm {
                    host: h.clone(),
                    problem: RealmProblem::Missing,
                },
                "registry reg.example sent an unusable Bearer challenge: the Bearer challenge \
                 has no realm"
                    .into(),
            ),
            (
                F::BadRealm {
                    host: h.clone(),
                    problem: RealmProblem::Scheme("ftp".into()),
                },
                "registry reg.example sent an unusable Bearer challenge: the Bearer realm has \
                 scheme \"ftp\""
                    .into(),
            ),
            (
                F::BadRealm {
                    host: h.clone(),
                    problem: RealmProblem::NoHost,
                },
                "registry reg.example sent an unusable Bearer challenge: the Bearer realm has no \
                 host"
                    .into(),
            ),
            (
                F::UnsupportedChallenge {
                    host: h.clone(),
                    problem: ChallengeProblem::Malformed {
                        reason: "unterminated quoted-string".into(),
                        position: 13,
                    },
                },
                "registry reg.example sent a malformed WWW-Authenticate header (unterminated \
                 quoted-string at byte 13); its images cannot be checked"
                    .into(),
            ),
            (
                F::UnsupportedChallenge {
                    host: h.clone(),
                    problem: ChallengeProblem::Missing,
                },
                "registry reg.example answered 401 without a WWW-Authenticate challenge; its \
                 images cannot be checked"
                    .into(),
            ),
            (
                F::CredentialCheckStatus {
                    host: h.clone(),
                    status: 502,
                },
                "registry reg.example answered HTTP 502 to the credential check".into(),
            ),
            (
                F::TokenRejected {
                    registry: h.clone(),
                    realm: r.clone(),
                    credential: Presented::IdentityToken,
                    status: 400,
                },
                "token server auth.example:8443 rejected the credentials of the configured \
                 identity token for reg.example (HTTP 400)"
                    .into(),
            ),
            (
                F::TokenStatus {
                    registry: h.clone(),
                    realm: r.clone(),
                    status: 429,
                },
                "token server auth.example:8443 for reg.example answered HTTP 429".into(),
            ),
            (
                F::TokenReply {
                    registry: h.clone(),
                    realm: r.clone(),
                    problem: TokenReplyProblem::TooLarge { limit_kib: 64 },
                    status: Some(200),
                },
                "token server auth.example:8443 for reg.example: the token reply is larger than \
                 64 KiB"
                    .into(),
            ),
            (
                F::TokenReply {
                    registry: h.clone(),
                    realm: r.clone(),
                    problem: TokenReplyProblem::Unsendable,
                    status: Some(200),
                },
                "token server auth.example:8443 for reg.example: the token holds characters \
                 that an HTTP header cannot carry"
                    .into(),
            ),
            (
                F::TokenReply {
                    registry: h.clone(),
                    realm: r.clone(),
                    problem: TokenReplyProblem::ConfiguredUnsendable,
                    status: None,
                },
                "token server auth.example:8443 for reg.example: the configured registry token: \
                 the token holds characters that an HTTP header cannot carry"
                    .into(),
            ),
        ];
        for (failure, words) in cases {
            assert_eq!(auth_failure(&failure), words, "{failure:?}");
        }
        // The first request's failed attempts, and a refused platform GET.
        assert_eq!(
            failed_attempt(&FailedAttempt::FirstStatus {
                status: 503,
                path: "/v2/".into()
            }),
            "HTTP 503 on /v2/"
        );
        assert_eq!(
            failed_attempt(&FailedAttempt::FirstNoAnswer(Tried::Both {
                https: timeout.clone(),
                http: timeout.clone(),
            })),
            "https: timed out after 300 ms, then http: timed out after 300 ms"
        );
        let refused = Answer {
            refusal: Some(refusal.clone()),
            ..Answer::new(
                pullcheck_registry::Status::Refused,
                pullcheck_registry::Reason::EgressDenied,
                Finding::Refused {
                    what: RefusedRequest::Fetch {
                        object: "config blob".into(),
                        redirected_to: None,
                    },
                },
            )
        };
        assert_eq!(
            answer(&refused),
            format!("config blob GET: {refusal}; nothing was sent to it")
        );
    }
}
