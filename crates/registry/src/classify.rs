//! Classification, sans IO: the answer to a manifest request (status, headers, error
//! body) becomes an [`Answer`] or the next request to make, its facts a [`Finding`] (the
//! engine words them). What the tag list says about a 404 is in
//! [`crate::hints`], the platform check of an index in [`crate::platform`].
//!
//! Invariant: pure; every function maps data to data.

use std::time::Duration;

use crate::errcode::{self, Code, Envelope};
pub(crate) use crate::finding::Method;
use crate::finding::{
    ErrorEntry, FailedAttempt, Finding, ManifestRef, RefusedRequest, Requester, TagList,
};
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

    /// As data.
    pub fn owned(&self) -> ManifestRef {
        match self {
            Ref::Tag(t) => ManifestRef::Tag((*t).to_string()),
            Ref::Digest(d) => ManifestRef::Digest((*d).to_string()),
        }
    }
}

/// Who the request was made as, for 401s.
pub(crate) type Who = Requester;

/// The fixed facts of one query.
#[derive(Debug, Clone)]
pub(crate) struct Query<'a> {
    pub host: &'a str,
    pub repository: &'a str,
    pub reference: Ref<'a>,
    pub who: Who,
    pub tag_hints: bool,
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
    pub errors: &'a Envelope,
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
    /// no attempt is left. `failure` is the attempt's entry in the history.
    Retryable {
        answer: Answer,
        retry_after: Option<Duration>,
        failure: FailedAttempt,
    },
}

/// An answer with no digest, media type or missing kind, after one attempt, with the
/// error envelope's entries.
pub(crate) fn answer(
    status: Status,
    reason: Reason,
    http_status: u16,
    finding: Finding,
    errors: &Envelope,
) -> Answer {
    Answer {
        http_status: Some(http_status),
        errors: entries(errors),
        errors_omitted: errors.omitted,
        ..Answer::new(status, reason, finding)
    }
}

/// The envelope's kept entries as data.
pub(crate) fn entries(errors: &Envelope) -> Vec<ErrorEntry> {
    errors
        .entries
        .iter()
        .map(|e| ErrorEntry {
            code: e.raw_code.clone(),
            message: e.message.clone(),
        })
        .collect()
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
    let host = (*host).to_string();
    let status = reply.status;
    let method = reply.method;
    let errors = reply.errors;
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
                    Finding::NotAManifest {
                        host,
                        method,
                        status,
                        content_type: media_type,
                    },
                    &errcode::NONE,
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
                    Finding::DigestMismatch {
                        host,
                        wanted: wanted.to_string(),
                        got: got.to_string(),
                    },
                    &errcode::NONE,
                ));
            }
            let other_algorithm = match (reference, digest) {
                (Ref::Digest(wanted), Some(got)) if algorithm(wanted) != algorithm(got) => {
                    Some(got.to_string())
                }
                _ => None,
            };
            Decision::Done(Answer {
                digest: digest.map(str::to_string),
                http_status: Some(status),
                media_type,
                ..Answer::new(
                    Status::Present,
                    Reason::Found,
                    Finding::Served {
                        method,
                        status,
                        other_algorithm,
                        platform: None,
                    },
                )
            })
        }
        404 => {
            if errcode::has(errors, Code::NameUnknown) {
                let mut a = answer(
                    Status::Missing,
                    Reason::RepositoryNotFound,
                    status,
                    Finding::RepositoryUnknown {
                        host,
                        repository: (*repository).to_string(),
                    },
                    errors,
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
                Finding::ManifestUnknown {
                    host,
                    repository: (*repository).to_string(),
                    reference: reference.owned(),
                    tag_list: TagList::NotAsked(method),
                },
                errors,
            );
            a.missing = Some(reference.missing());
            Decision::Done(a)
        }
        401 => Decision::Done(answer(
            Status::NoAccess,
            no_access_reason(&query.who),
            status,
            Finding::Unauthorized {
                host,
                requester: query.who.clone(),
            },
            errors,
        )),
        403 => Decision::Done(answer(
            Status::Denied,
            Reason::AccessDenied,
            status,
            Finding::Forbidden {
                host,
                repository: (*repository).to_string(),
            },
            errors,
        )),
        405 | 501 if reply.method == Method::Head => Decision::Get,
        429 => {
            let wait = reply.retry_after;
            Decision::Retryable {
                answer: Answer {
                    retry_after: wait,
                    ..answer(
                        Status::Unreachable,
                        Reason::RateLimited,
                        status,
                        Finding::RateLimited { host },
                        errors,
                    )
                },
                retry_after: wait,
                failure: FailedAttempt::Status {
                    status,
                    retry_after: wait,
                },
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
                Finding::HttpStatus {
                    host,
                    method,
                    status,
                    expected: true,
                },
                errors,
            ),
            retry_after: reply.retry_after,
            failure: FailedAttempt::Status {
                status,
                retry_after: None,
            },
        },
        _ => Decision::Done(answer(
            Status::Unreachable,
            Reason::ServerError,
            status,
            Finding::HttpStatus {
                host,
                method,
                status,
                expected: (500..=599).contains(&status),
            },
            errors,
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

/// The answer for a credential or token that could not be obtained during a query.
pub(crate) fn from_authorize_error(err: &crate::AuthorizeError) -> Answer {
    Answer {
        refusal: err.refusal.clone(),
        history: (*err.history).clone(),
        ..Answer::new(
            err.status,
            err.reason,
            Finding::Authorization((*err.failure).clone()),
        )
    }
}

/// The answer for a request that got no HTTP answer: [`Status::Refused`] when the
/// egress policy refused it (or its redirect), else [`Status::Unreachable`].
/// After a redirect to another host, the failure is that host's
/// ([`SendError::redirected_to`]), and the host asked is named as where it came from.
pub(crate) fn transport_failure(host: &str, method: Method, failure: &SendError) -> Answer {
    let (at, why, redirected_from) = match &failure.redirected_to {
        Some(r) => (r.to.as_str(), &r.why, Some(host.to_string())),
        None => (host, &failure.reason, None),
    };
    if let Some(refusal) = &failure.refusal {
        let what = RefusedRequest::Request {
            method,
            host: at.to_string(),
            redirected_from,
        };
        return refused(what, refusal.clone());
    }
    Answer::new(
        Status::Unreachable,
        failure.kind,
        Finding::RequestFailed {
            host: at.to_string(),
            method,
            why: why.clone(),
            redirected_from,
        },
    )
}

/// [`Status::Refused`]: `what` was refused by `refusal`; nothing was sent to it.
pub(crate) fn refused(what: RefusedRequest, refusal: EgressRefusal) -> Answer {
    Answer {
        refusal: Some(refusal),
        ..Answer::new(
            Status::Refused,
            Reason::EgressDenied,
            Finding::Refused { what },
        )
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
            errors: &errcode::NONE,
        }
    }

    fn retryable(d: Decision) -> (Answer, Option<Duration>, FailedAttempt) {
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
            a.finding,
            Finding::Served {
                method: Method::Head,
                status: 200,
                other_algorithm: None,
                platform: None
            }
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
            (Some("text/html; charset=utf-8"), Some("text/html")),
            (
                Some("application/octet-stream"),
                Some("application/octet-stream"),
            ),
            (Some("application/json"), Some("application/json")),
            (None, None),
            (Some(""), None),
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
                    a.finding,
                    Finding::NotAManifest {
                        host: "reg.example".into(),
                        method: Method::Get,
                        status: 200,
                        content_type: quoted.map(str::to_string),
                    }
                );
            }
        }
        // Another 2xx too.
        let a = done(manifest(&query("1"), &reply(Method::Get, 204)));
        assert_eq!(a.status, Status::Unreachable);
        assert!(
            matches!(
                a.finding,
                Finding::NotAManifest {
                    status: 204,
                    content_type: None,
                    ..
                }
            ),
            "{:?}",
            a.finding
        );
    }

    #[test]
    fn a_long_content_type_is_kept_whole_for_the_engine_to_cut() {
        let long = format!("text/{}", "x".repeat(500));
        let get = Reply {
            content_type: Some(&long),
            ..reply(Method::Get, 200)
        };
        let a = done(manifest(&query("1"), &get));
        assert_eq!(a.status, Status::Unreachable);
        assert!(
            matches!(&a.finding, Finding::NotAManifest { content_type: Some(c), .. } if *c == long),
            "{:?}",
            a.finding
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
        assert_eq!(
            a.finding,
            Finding::DigestMismatch {
                host: "reg.example".into(),
                wanted: D1.into(),
                got: D2.into()
            }
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
        assert!(
            matches!(&a.finding, Finding::Served { other_algorithm: Some(d), .. } if d == D1),
            "{:?}",
            a.finding
        );
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
        assert_eq!(
            a.errors,
            [ErrorEntry {
                code: "NAME_UNKNOWN".into(),
                message: "repository name not known to registry".into()
            }]
        );
    }

    #[test]
    fn unauthorized_is_never_missing() {
        for (who, reason) in [
            (Who::Anonymous, Reason::UnauthorizedAnonymous),
            (
                Who::Credential("user \"alice\"".into()),
                Reason::Unauthorized,
            ),
            (Who::NoCredentials, Reason::CredentialsRequired),
            (
                Who::Unusable("the configured registry token".into()),
                Reason::CredentialsRequired,
            ),
        ] {
            let q = Query {
                who: who.clone(),
                ..query("3.19")
            };
            let a = done(manifest(&q, &reply(Method::Head, 401)));
            assert_eq!(a.status, Status::NoAccess);
            assert_eq!(a.reason, reason);
            assert_eq!(a.missing, None);
            assert_eq!(
                a.finding,
                Finding::Unauthorized {
                    host: "reg.example".into(),
                    requester: who
                }
            );
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
        assert_eq!(
            a.finding,
            Finding::Forbidden {
                host: "reg.example".into(),
                repository: "library/alpine".into()
            }
        );
        assert_eq!(
            a.errors,
            [ErrorEntry {
                code: "DENIED".into(),
                message: "requested access to the resource is denied".into()
            }]
        );
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
        assert_eq!(
            answer.finding,
            Finding::RateLimited {
                host: "reg.example".into()
            }
        );
        assert_eq!(answer.retry_after, Some(Duration::from_secs(30)));
        assert_eq!(retry_after, Some(Duration::from_secs(30)));
        assert_eq!(
            failure,
            FailedAttempt::Status {
                status: 429,
                retry_after: Some(Duration::from_secs(30))
            }
        );
        for status in [408, 502, 503, 504] {
            let (answer, retry_after, failure) =
                retryable(manifest(&query("3.19"), &reply(Method::Head, status)));
            assert!(
                matches!(answer.finding, Finding::HttpStatus { status: s, expected: true, .. } if s == status),
                "{:?}",
                answer.finding
            );
            assert_eq!(retry_after, None);
            assert_eq!(
                failure,
                FailedAttempt::Status {
                    status,
                    retry_after: None
                }
            );
        }
    }

    #[test]
    fn other_server_errors_are_final() {
        for status in [500, 505, 599] {
            let a = done(manifest(&query("3.19"), &reply(Method::Head, status)));
            assert_eq!(a.status, Status::Unreachable);
            assert_eq!(
                a.finding,
                Finding::HttpStatus {
                    host: "reg.example".into(),
                    method: Method::Head,
                    status,
                    expected: true
                }
            );
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
        assert_eq!(
            a.errors,
            [ErrorEntry {
                code: "FLUX_CAPACITOR_DRAINED".into(),
                message: "try 1985".into()
            }]
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
        assert_eq!(
            a.finding,
            Finding::HttpStatus {
                host: "reg.example".into(),
                method: Method::Get,
                status: 400,
                expected: false
            }
        );
        assert_eq!(a.errors[0].code, "NAME_INVALID");
    }
}
