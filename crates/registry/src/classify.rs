//! Classification, sans IO: the answer to a manifest request (status, headers, error
//! body) becomes an [`Answer`] or the next request to make. Wording lives here too, so
//! every message is tested. What the tag list says about a 404 is in
//! [`crate::hints`], the platform check of an index in [`crate::platform`].
//!
//! Invariant: pure; every function maps data to data.

use std::time::Duration;

use crate::errcode::{self, Code, RegistryError};
use crate::transport::SendError;
use crate::{Answer, EgressRefusal, Missing, Reason, Status};

/// A manifest reference: a tag or a digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ref<'a> {
    Tag(&'a str),
    Digest(&'a str),
}

impl<'a> Ref<'a> {
    /// Reads a reference as passed to [`crate::Session::check`]: `sha256:…` is a digest
    /// (a tag cannot hold `:`), `tag@digest` means the digest, anything else a tag.
    pub fn parse(reference: &'a str) -> Ref<'a> {
        let reference = match reference.rsplit_once('@') {
            Some((_, digest)) => digest,
            None => reference,
        };
        if reference.contains(':') {
            Ref::Digest(reference)
        } else {
            Ref::Tag(reference)
        }
    }

    /// The string that goes in the URL.
    pub fn as_str(&self) -> &'a str {
        match self {
            Ref::Tag(s) | Ref::Digest(s) => s,
        }
    }

    /// [`Missing::Tag`] or [`Missing::Digest`].
    pub fn missing(&self) -> Missing {
        match self {
            Ref::Tag(_) => Missing::Tag,
            Ref::Digest(_) => Missing::Digest,
        }
    }

    /// `tag` or `digest`, for messages.
    pub fn noun(&self) -> &'static str {
        match self {
            Ref::Tag(_) => "tag",
            Ref::Digest(_) => "digest",
        }
    }
}

/// Who the request was made as, for the wording of 401s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Who {
    /// The registry asks for Basic credentials and none are configured.
    NoCredentials,
    /// An anonymous token, or no authentication at all.
    Anonymous,
    /// `user "alice"`, `the configured identity token`, …
    Credential(String),
    /// The registry asks for Basic credentials and the configured credential (named
    /// here) is a token, which cannot be sent as a user name and password.
    Unusable(String),
}

/// The fixed facts of one query.
#[derive(Debug, Clone)]
pub(crate) struct Query<'a> {
    pub host: &'a str,
    pub repository: &'a str,
    pub reference: Ref<'a>,
    pub who: Who,
    pub tag_hints: bool,
}

/// HEAD or GET.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Head,
    Get,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Head => "HEAD",
            Method::Get => "GET",
        }
    }
}

/// One manifest reply.
#[derive(Debug, Clone)]
pub(crate) struct Reply<'a> {
    pub method: Method,
    pub status: u16,
    /// `Docker-Content-Digest`.
    pub digest: Option<&'a str>,
    /// `Content-Type`.
    pub content_type: Option<&'a str>,
    /// `Retry-After`, read (seconds, or the time until an HTTP date).
    pub retry_after: Option<Duration>,
    /// The error envelope, when a body was read.
    pub errors: &'a [RegistryError],
}

/// What to do with a manifest reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The final answer.
    Done(Answer),
    /// The registry does not do HEAD here (405/501), or its HEAD 2xx carried neither a
    /// manifest `Content-Type` nor a `Docker-Content-Digest`: ask again with GET.
    Get,
    /// 404 and tag hints are on: `GET /v2/<name>/tags/list` decides between a missing
    /// repository and a missing tag or digest, which is passed along.
    ListTags(Missing),
    /// A failure that may pass (408, 429, 502, 503, 504): try again after
    /// `retry_after` (when the registry said) or a backoff; `answer` is the answer if
    /// no attempt is left. `failure` is the short reason for the attempt history.
    Retryable {
        answer: Answer,
        retry_after: Option<Duration>,
        failure: String,
    },
}

/// An answer with no digest, media type or missing kind, after one attempt.
pub(crate) fn answer(status: Status, reason: Reason, http_status: u16, detail: String) -> Answer {
    Answer {
        status,
        missing: None,
        reason,
        close_tags: Vec::new(),
        digest: None,
        detail,
        http_status: Some(http_status),
        media_type: None,
        attempts: 1,
        refusal: None,
        platforms: Vec::new(),
        retry_after: None,
    }
}

/// `base`, with the error envelope's summary in parentheses when there is one.
pub(crate) fn with_errors(base: String, errors: &[RegistryError]) -> String {
    match errcode::summary(errors) {
        Some(s) => format!("{base} ({s})"),
        None => base,
    }
}

/// Splits `algorithm:hex`.
fn algorithm(digest: &str) -> Option<&str> {
    digest.split_once(':').map(|(a, _)| a)
}

/// Whether `media_type` (without parameters) is a manifest's: the four types the client
/// asks for, Docker schema 1 (`application/vnd.docker.distribution.manifest.v1+json`,
/// `+prettyjws`), and any other `application/vnd.oci.*` or `application/vnd.docker.*`
/// manifest or index type (the OCI artifact manifest, …). Case-insensitive.
pub(crate) fn is_manifest_media_type(media_type: &str) -> bool {
    let mt = media_type.trim().to_ascii_lowercase();
    let Some(subtype) = mt
        .strip_prefix("application/vnd.oci.")
        .or_else(|| mt.strip_prefix("application/vnd.docker."))
    else {
        return false;
    };
    subtype.contains("manifest") || subtype.contains("index")
}

/// The longest `Content-Type` quoted in a detail; the rest is cut.
const QUOTED_CONTENT_TYPE_LIMIT: usize = 100;

/// The detail for a 2xx that is no registry's manifest answer.
fn not_a_manifest_answer(
    host: &str,
    method: &str,
    status: u16,
    media_type: Option<&str>,
) -> String {
    let content_type = match media_type {
        Some(mt) if mt.chars().count() > QUOTED_CONTENT_TYPE_LIMIT => format!(
            "with Content-Type {}…",
            mt.chars()
                .take(QUOTED_CONTENT_TYPE_LIMIT)
                .collect::<String>()
        ),
        Some(mt) => format!("with Content-Type {mt}"),
        None => "with no Content-Type".to_string(),
    };
    format!(
        "{method} to {host} answered {status} {content_type} and no Docker-Content-Digest: \
         not a registry's manifest answer (a proxy or captive portal?)"
    )
}

/// Classifies one manifest reply (pure).
///
/// A 2xx counts as present only when it looks like a registry's manifest answer: a
/// manifest `Content-Type` ([`is_manifest_media_type`]) or a `Docker-Content-Digest`.
/// Any web server answers 200 to any path (a static file server, a proxy's or captive
/// portal's HTML page); such an answer to a HEAD is asked again with GET (as containerd
/// does when a HEAD lacks the digest), and to a GET is [`Status::Unreachable`].
pub(crate) fn manifest(query: &Query<'_>, reply: &Reply<'_>) -> Decision {
    let Query {
        host,
        repository,
        reference,
        ..
    } = query;
    let status = reply.status;
    let method = reply.method.as_str();
    match status {
        200..=299 => {
            let digest = reply.digest.map(str::trim).filter(|d| !d.is_empty());
            let media_type = reply
                .content_type
                .map(|c| c.split(';').next().unwrap_or(c).trim().to_string())
                .filter(|c| !c.is_empty());
            if digest.is_none() && !media_type.as_deref().is_some_and(is_manifest_media_type) {
                if reply.method == Method::Head {
                    return Decision::Get;
                }
                return Decision::Done(answer(
                    Status::Unreachable,
                    Reason::NotARegistry,
                    status,
                    not_a_manifest_answer(host, method, status, media_type.as_deref()),
                ));
            }
            // (wanted, got) when the registry names the requested digest otherwise.
            let mismatch = match (reference, digest) {
                (Ref::Digest(wanted), Some(got)) if algorithm(wanted) == algorithm(got) => {
                    (!wanted.eq_ignore_ascii_case(got)).then_some((*wanted, got))
                }
                _ => None,
            };
            if let Some((wanted, got)) = mismatch {
                return Decision::Done(answer(
                    Status::Unreachable,
                    Reason::DigestMismatch,
                    status,
                    format!(
                        "registry {host} returned digest {got} for {wanted}: \
                         the content does not match its digest, a pull would fail verification"
                    ),
                ));
            }
            let mut detail = format!("{method} {status}");
            if let Some(mt) = &media_type {
                detail.push_str(&format!(", {mt}"));
            }
            match (reference, digest) {
                (Ref::Digest(wanted), Some(got)) if algorithm(wanted) != algorithm(got) => {
                    detail.push_str(&format!(
                        "; the registry names it {got} (another algorithm, not compared)"
                    ));
                }
                _ => {}
            }
            Decision::Done(Answer {
                status: Status::Present,
                missing: None,
                reason: Reason::Found,
                close_tags: Vec::new(),
                digest: digest.map(str::to_string),
                detail,
                http_status: Some(status),
                media_type,
                attempts: 1,
                refusal: None,
                platforms: Vec::new(),
                retry_after: None,
            })
        }
        404 => {
            if errcode::has(reply.errors, Code::NameUnknown) {
                let mut a = answer(
                    Status::Missing,
                    Reason::RepositoryNotFound,
                    status,
                    with_errors(
                        format!("repository {repository} not found on {host}"),
                        reply.errors,
                    ),
                );
                a.missing = Some(Missing::Repository);
                return Decision::Done(a);
            }
            if query.tag_hints {
                return Decision::ListTags(reference.missing());
            }
            let mut a = answer(
                Status::Missing,
                Reason::ManifestUnknown,
                status,
                with_errors(
                    format!(
                        "{} {} not found in {repository} on {host} ({method} 404); \
                         whether the repository exists was not checked",
                        reference.noun(),
                        reference.as_str()
                    ),
                    reply.errors,
                ),
            );
            a.missing = Some(reference.missing());
            Decision::Done(a)
        }
        401 => Decision::Done(answer(
            Status::NoAccess,
            no_access_reason(&query.who),
            status,
            with_errors(no_access(query), reply.errors),
        )),
        403 => Decision::Done(answer(
            Status::Denied,
            Reason::AccessDenied,
            status,
            with_errors(
                format!("access to {repository} denied by {host} (HTTP 403)"),
                reply.errors,
            ),
        )),
        405 | 501 if reply.method == Method::Head => Decision::Get,
        429 => {
            let wait = reply.retry_after;
            let mut detail = format!("rate limited by {host} (HTTP 429)");
            let mut failure = "HTTP 429".to_string();
            if let Some(wait) = wait {
                detail.push_str(&format!("; retry after {} s", wait.as_secs()));
                failure.push_str(&format!(" (retry after {} s)", wait.as_secs()));
            }
            Decision::Retryable {
                answer: Answer {
                    retry_after: wait,
                    ..answer(
                        Status::Unreachable,
                        Reason::RateLimited,
                        status,
                        with_errors(detail, reply.errors),
                    )
                },
                retry_after: wait,
                failure,
            }
        }
        408 | 502 | 503 | 504 => Decision::Retryable {
            answer: answer(
                Status::Unreachable,
                if status == 408 {
                    Reason::Timeout
                } else {
                    Reason::ServerError
                },
                status,
                with_errors(
                    format!("registry {host} answered HTTP {status} to {method}"),
                    reply.errors,
                ),
            ),
            retry_after: reply.retry_after,
            failure: format!("HTTP {status}"),
        },
        500..=599 => Decision::Done(answer(
            Status::Unreachable,
            Reason::ServerError,
            status,
            with_errors(
                format!("registry {host} answered HTTP {status} to {method}"),
                reply.errors,
            ),
        )),
        _ => Decision::Done(answer(
            Status::Unreachable,
            Reason::ServerError,
            status,
            with_errors(
                format!(
                    "registry {host} answered HTTP {status} to {method}, which this client does not expect"
                ),
                reply.errors,
            ),
        )),
    }
}

/// The reason of a 401 on a manifest.
pub(crate) fn no_access_reason(who: &Who) -> Reason {
    match who {
        Who::NoCredentials | Who::Unusable(_) => Reason::CredentialsRequired,
        Who::Anonymous => Reason::UnauthorizedAnonymous,
        Who::Credential(_) => Reason::Unauthorized,
    }
}

/// The wording of a 401 on a manifest.
pub(crate) fn no_access(query: &Query<'_>) -> String {
    let host = query.host;
    match &query.who {
        Who::NoCredentials => {
            format!("authentication required and no credentials are configured for {host}")
        }
        Who::Anonymous => format!(
            "missing, or no access anonymously ({host} answered 401; it does not tell the two apart)"
        ),
        Who::Unusable(who) => format!(
            "authentication required: {host} asks for a user name and password, and {who} is not one"
        ),
        Who::Credential(who) => format!(
            "missing, or no access with these credentials ({who}; {host} answered 401; it does not tell the two apart)"
        ),
    }
}

/// The answer for a credential or token that could not be obtained during a query.
pub(crate) fn from_authorize_error(err: &crate::AuthorizeError) -> Answer {
    Answer {
        status: err.status,
        missing: None,
        reason: err.reason,
        close_tags: Vec::new(),
        digest: None,
        detail: err.message.clone(),
        http_status: None,
        media_type: None,
        attempts: 1,
        refusal: err.refusal.clone(),
        platforms: Vec::new(),
        retry_after: None,
    }
}

/// The answer for a request that got no HTTP answer: [`Status::Refused`] when the
/// egress policy refused it (or its redirect), else [`Status::Unreachable`].
pub(crate) fn transport_failure(host: &str, method: Method, failure: &SendError) -> Answer {
    if let Some(refusal) = &failure.refusal {
        return refused(&format!("{} to {host}", method.as_str()), refusal.clone());
    }
    Answer {
        status: Status::Unreachable,
        missing: None,
        reason: failure.kind,
        close_tags: Vec::new(),
        digest: None,
        detail: format!("{} to {host} failed: {}", method.as_str(), failure.reason),
        http_status: None,
        media_type: None,
        attempts: 1,
        refusal: None,
        platforms: Vec::new(),
        retry_after: None,
    }
}

/// [`Status::Refused`]: `{what}: {refusal}; nothing was sent to it`.
pub(crate) fn refused(what: &str, refusal: EgressRefusal) -> Answer {
    Answer {
        status: Status::Refused,
        missing: None,
        reason: Reason::EgressDenied,
        close_tags: Vec::new(),
        digest: None,
        detail: format!("{what}: {refusal}; nothing was sent to it"),
        http_status: None,
        media_type: None,
        attempts: 1,
        refusal: Some(refusal),
        platforms: Vec::new(),
        retry_after: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn query(reference: &str) -> Query<'_> {
        Query {
            host: "reg.example",
            repository: "library/alpine",
            reference: Ref::parse(reference),
            who: Who::Anonymous,
            tag_hints: true,
        }
    }

    pub(crate) fn reply(method: Method, status: u16) -> Reply<'static> {
        Reply {
            method,
            status,
            digest: None,
            content_type: None,
            retry_after: None,
            errors: &[],
        }
    }

    fn retryable(d: Decision) -> (Answer, Option<Duration>, String) {
        match d {
            Decision::Retryable {
                answer,
                retry_after,
                failure,
            } => (answer, retry_after, failure),
            other => panic!("{other:?}"),
        }
    }

    pub(crate) const D1: &str =
        "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    pub(crate) const D2: &str =
        "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    pub(crate) fn done(d: Decision) -> Answer {
        match d {
            Decision::Done(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reference_kinds() {
        assert_eq!(Ref::parse("3.19"), Ref::Tag("3.19"));
        assert_eq!(Ref::parse(D1), Ref::Digest(D1));
        let both = format!("3.19@{D1}");
        assert_eq!(Ref::parse(&both), Ref::Digest(D1));
        assert_eq!(Ref::parse(D1).missing(), Missing::Digest);
    }

    #[test]
    fn present_tag_with_digest_and_media_type() {
        let r = Reply {
            digest: Some(D1),
            content_type: Some("application/vnd.oci.image.index.v1+json; charset=utf-8"),
            ..reply(Method::Head, 200)
        };
        let a = done(manifest(&query("3.19"), &r));
        assert_eq!((a.status, a.reason), (Status::Present, Reason::Found));
        assert_eq!(a.digest.as_deref(), Some(D1));
        assert_eq!(
            a.media_type.as_deref(),
            Some("application/vnd.oci.image.index.v1+json")
        );
        assert_eq!(a.http_status, Some(200));
        assert_eq!(
            a.detail,
            "HEAD 200, application/vnd.oci.image.index.v1+json"
        );
    }

    #[test]
    fn present_without_digest_header_is_fine() {
        let r = Reply {
            content_type: Some("application/vnd.docker.distribution.manifest.v2+json"),
            ..reply(Method::Head, 200)
        };
        let a = done(manifest(&query("3.19"), &r));
        assert_eq!(a.status, Status::Present);
        assert_eq!(a.digest, None);
        let a = done(manifest(&query(D1), &r));
        assert_eq!(a.status, Status::Present);
    }

    #[test]
    fn present_with_digest_header_whatever_the_content_type() {
        for content_type in [None, Some("text/html"), Some("application/octet-stream")] {
            let r = Reply {
                digest: Some(D1),
                content_type,
                ..reply(Method::Get, 200)
            };
            for q in [query("3.19"), query(D1)] {
                let a = done(manifest(&q, &r));
                assert_eq!(a.status, Status::Present, "{content_type:?}");
                assert_eq!(a.digest.as_deref(), Some(D1));
            }
        }
    }

    #[test]
    fn manifest_media_types() {
        for mt in [
            "application/vnd.oci.image.index.v1+json",
            "application/vnd.oci.image.manifest.v1+json",
            "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.docker.distribution.manifest.v2+json",
            "application/vnd.docker.distribution.manifest.v1+json",
            "application/vnd.docker.distribution.manifest.v1+prettyjws",
            "application/vnd.oci.artifact.manifest.v1+json",
            "Application/VND.OCI.Image.Manifest.v1+JSON",
            " application/vnd.oci.image.index.v1+json ",
        ] {
            assert!(is_manifest_media_type(mt), "{mt}");
        }
        for mt in [
            "",
            "text/html",
            "application/octet-stream",
            "application/json",
            "text/plain",
            "application/vnd.oci.image.layer.v1.tar+gzip",
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.docker.container.image.v1+json",
            "application/x-vnd.oci.image.manifest.v1+json",
        ] {
            assert!(!is_manifest_media_type(mt), "{mt}");
        }
    }

    #[test]
    fn any_web_server_answering_200_is_not_a_registry() {
        for (content_type, quoted) in [
            (
                Some("text/html; charset=utf-8"),
                "with Content-Type text/html",
            ),
            (
                Some("application/octet-stream"),
                "with Content-Type application/octet-stream",
            ),
            (
                Some("application/json"),
                "with Content-Type application/json",
            ),
            (None, "with no Content-Type"),
            (Some(""), "with no Content-Type"),
        ] {
            for q in [query("1"), query(D1)] {
                // A HEAD is asked again with GET first ...
                let head = Reply {
                    content_type,
                    ..reply(Method::Head, 200)
                };
                assert_eq!(manifest(&q, &head), Decision::Get, "{content_type:?}");
                // ... and a GET is final.
                let get = Reply {
                    content_type,
                    ..reply(Method::Get, 200)
                };
                let a = done(manifest(&q, &get));
                assert_eq!(a.status, Status::Unreachable, "{content_type:?}");
                assert_eq!((a.missing, a.digest, a.media_type), (None, None, None));
                assert_eq!(a.http_status, Some(200));
                assert_eq!(
                    a.detail,
                    format!(
                        "GET to reg.example answered 200 {quoted} and no Docker-Content-Digest: \
                         not a registry's manifest answer (a proxy or captive portal?)"
                    )
                );
            }
        }
        // Another 2xx too.
        let a = done(manifest(&query("1"), &reply(Method::Get, 204)));
        assert_eq!(a.status, Status::Unreachable);
        assert!(
            a.detail.contains("answered 204 with no Content-Type"),
            "{}",
            a.detail
        );
    }

    #[test]
    fn a_long_content_type_is_cut_in_the_detail() {
        let long = format!("text/{}", "x".repeat(500));
        let get = Reply {
            content_type: Some(&long),
            ..reply(Method::Get, 200)
        };
        let a = done(manifest(&query("1"), &get));
        assert_eq!(a.status, Status::Unreachable);
        assert!(a.detail.len() < 300, "{}", a.detail);
        assert!(
            a.detail.contains("xxx… and no Docker-Content-Digest"),
            "{}",
            a.detail
        );
    }

    #[test]
    fn digest_mismatch_is_unreachable_naming_both() {
        let r = Reply {
            digest: Some(D2),
            ..reply(Method::Head, 200)
        };
        let a = done(manifest(&query(D1), &r));
        assert_eq!(a.status, Status::Unreachable);
        assert_eq!(a.reason, Reason::DigestMismatch);
        assert!(
            a.detail.contains(&format!(
                "registry reg.example returned digest {D2} for {D1}"
            )),
            "{}",
            a.detail
        );
        // Same digest: present.
        let r = Reply {
            digest: Some(D1),
            ..reply(Method::Head, 200)
        };
        assert_eq!(done(manifest(&query(D1), &r)).status, Status::Present);
    }

    #[test]
    fn digest_of_another_algorithm_is_not_compared() {
        let sha512 = format!("sha512:{}", "3".repeat(128));
        let r = Reply {
            digest: Some(D1),
            ..reply(Method::Head, 200)
        };
        let a = done(manifest(&query(&sha512), &r));
        assert_eq!(a.status, Status::Present);
        assert!(a.detail.contains("not compared"));
    }

    #[test]
    fn not_found_asks_for_the_tag_list_when_hints_are_on() {
        assert_eq!(
            manifest(&query("3.99"), &reply(Method::Head, 404)),
            Decision::ListTags(Missing::Tag)
        );
        assert_eq!(
            manifest(&query(D1), &reply(Method::Head, 404)),
            Decision::ListTags(Missing::Digest)
        );
    }

    #[test]
    fn not_found_without_hints_says_the_repository_was_not_checked() {
        let q = Query {
            tag_hints: false,
            ..query("3.99")
        };
        let a = done(manifest(&q, &reply(Method::Head, 404)));
        assert_eq!(a.status, Status::Missing);
        assert_eq!(a.missing, Some(Missing::Tag));
        assert_eq!(a.reason, Reason::ManifestUnknown);
        let q = Query {
            tag_hints: false,
            ..query(D1)
        };
        let a = done(manifest(&q, &reply(Method::Head, 404)));
        assert_eq!(
            (a.missing, a.reason),
            (Some(Missing::Digest), Reason::ManifestUnknown)
        );
    }

    #[test]
    fn name_unknown_on_a_get_is_a_missing_repository_at_once() {
        let errors = errcode::parse(
            br#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}"#,
        );
        let r = Reply {
            errors: &errors,
            ..reply(Method::Get, 404)
        };
        let a = done(manifest(&query("3.19"), &r));
        assert_eq!(a.missing, Some(Missing::Repository));
        assert_eq!(a.reason, Reason::RepositoryNotFound);
        assert!(a.detail.contains("NAME_UNKNOWN"));
    }

    #[test]
    fn unauthorized_is_never_missing() {
        for (who, needle, reason) in [
            (
                Who::Anonymous,
                "missing, or no access anonymously",
                Reason::UnauthorizedAnonymous,
            ),
            (
                Who::Credential("user \"alice\"".into()),
                "missing, or no access with these credentials (user \"alice\"",
                Reason::Unauthorized,
            ),
            (
                Who::NoCredentials,
                "authentication required and no credentials are configured for reg.example",
                Reason::CredentialsRequired,
            ),
            (
                Who::Unusable("the configured registry token".into()),
                "asks for a user name and password, and the configured registry token is not one",
                Reason::CredentialsRequired,
            ),
        ] {
            let q = Query {
                who,
                ..query("3.19")
            };
            let a = done(manifest(&q, &reply(Method::Head, 401)));
            assert_eq!(a.status, Status::NoAccess);
            assert_eq!(a.reason, reason);
            assert_eq!(a.missing, None);
            assert!(a.detail.contains(needle), "{}", a.detail);
        }
    }

    #[test]
    fn forbidden_is_denied() {
        let errors = errcode::parse(br#"{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}"#);
        let r = Reply {
            errors: &errors,
            ..reply(Method::Get, 403)
        };
        let a = done(manifest(&query("3.19"), &r));
        assert_eq!((a.status, a.reason), (Status::Denied, Reason::AccessDenied));
        assert!(a.detail.contains("DENIED: requested access"));
    }

    #[test]
    fn head_not_allowed_falls_back_to_get_once() {
        assert_eq!(
            manifest(&query("3.19"), &reply(Method::Head, 405)),
            Decision::Get
        );
        assert_eq!(
            manifest(&query("3.19"), &reply(Method::Head, 501)),
            Decision::Get
        );
        let a = done(manifest(&query("3.19"), &reply(Method::Get, 405)));
        assert_eq!(a.status, Status::Unreachable);
    }

    #[test]
    fn rate_limit_and_transient_server_errors_are_retryable() {
        let r = Reply {
            retry_after: Some(Duration::from_secs(30)),
            ..reply(Method::Head, 429)
        };
        let (answer, retry_after, failure) = retryable(manifest(&query("3.19"), &r));
        assert_eq!(answer.status, Status::Unreachable);
        assert_eq!(answer.http_status, Some(429));
        assert!(answer.detail.contains("retry after 30 s"));
        assert_eq!(retry_after, Some(Duration::from_secs(30)));
        assert_eq!(failure, "HTTP 429 (retry after 30 s)");
        for status in [408, 502, 503, 504] {
            let (answer, retry_after, failure) =
                retryable(manifest(&query("3.19"), &reply(Method::Head, status)));
            assert!(answer.detail.contains(&format!("HTTP {status}")));
            assert_eq!(retry_after, None);
            assert_eq!(failure, format!("HTTP {status}"));
        }
    }

    #[test]
    fn other_server_errors_are_final() {
        for status in [500, 505, 599] {
            let a = done(manifest(&query("3.19"), &reply(Method::Head, status)));
            assert_eq!(a.status, Status::Unreachable);
            assert!(a.detail.contains(&format!("HTTP {status}")), "{}", a.detail);
        }
        // 501 on a GET (after the HEAD fallback) is final too.
        let a = done(manifest(&query("3.19"), &reply(Method::Get, 501)));
        assert_eq!(a.status, Status::Unreachable);
    }

    #[test]
    fn client_errors_are_never_retryable() {
        for status in [400, 401, 403, 404] {
            let q = Query {
                tag_hints: false,
                ..query("3.19")
            };
            assert!(
                matches!(
                    manifest(&q, &reply(Method::Head, status)),
                    Decision::Done(_)
                ),
                "{status}"
            );
        }
    }

    #[test]
    fn unknown_error_codes_are_kept_verbatim_and_never_fail() {
        let errors = errcode::parse(
            br#"{"errors":[{"code":"FLUX_CAPACITOR_DRAINED","message":"try 1985"}]}"#,
        );
        let r = Reply {
            errors: &errors,
            ..reply(Method::Get, 400)
        };
        let a = done(manifest(&query("3.19"), &r));
        assert_eq!(a.status, Status::Unreachable);
        assert!(
            a.detail.contains("FLUX_CAPACITOR_DRAINED: try 1985"),
            "{}",
            a.detail
        );
    }

    #[test]
    fn unexpected_statuses_are_unreachable_with_the_code() {
        let errors = errcode::parse(
            br#"{"errors":[{"code":"NAME_INVALID","message":"invalid repository name"}]}"#,
        );
        let r = Reply {
            errors: &errors,
            ..reply(Method::Get, 400)
        };
        let a = done(manifest(&query("3.19"), &r));
        assert_eq!(a.status, Status::Unreachable);
        assert!(a.detail.contains("HTTP 400") && a.detail.contains("NAME_INVALID"));
    }
}
