//! Slow, flaky, rate-limited and hostile registries, from the scripted server in
//! `support/server.rs`. Each case asserts the status, the precise reason, the number of
//! attempts, and that it ended well within a generous bound (a hang guard, not a
//! benchmark).

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use pullcheck_registry::{
    Answer, Client, ClientOptions, Credential, Endpoint, Missing, Platform, Reason, Session, Status,
};
use pullcheck_registry::{FailedAttempt, Finding, Method, RetryStop};
use support::server::{Fault, Request, Response, Server, fault, respond, serve};
use support::{each, guarded, why};

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const INDEX_BODY: &str = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
  {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aa","size":1,"platform":{"architecture":"amd64","os":"linux"}},
  {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:bb","size":1,"platform":{"architecture":"arm64","os":"linux","variant":"v8"}}]}"#;

/// Every case must end well within this.
const BOUND: Duration = Duration::from_secs(20);

fn endpoint(server: &Server) -> Endpoint {
    Endpoint {
        allow_http: true,
        skip_verify: false,
        ..Endpoint::new(server.host.clone())
    }
}

/// Short backoffs, so that three attempts take well under a second.
fn options() -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_secs(5),
        backoff_base: Duration::from_millis(20),
        backoff_max: Duration::from_millis(50),
        retry_after_max: Duration::from_secs(3),
        ..ClientOptions::default()
    }
}

fn repos(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// An open registry whose manifests answer as `manifests` says.
async fn open_registry(manifests: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Server {
    serve(move |r| match r.path() {
        "/v2/" => respond(200, &[], ""),
        _ => manifests(r),
    })
    .await
}

async fn session(server: &Server, options: ClientOptions) -> Session {
    Client::new(options)
        .expect("client")
        .authorize(&endpoint(server), &Credential::Anonymous, &repos(&["app"]))
        .await
        .expect("authorize")
}

/// One check of `app:<reference>`, guarded.
async fn check(session: &Session, reference: &str) -> (Answer, Duration) {
    guarded(BOUND, session.check("app", reference)).await
}

/// Counts calls, for scripts that change their answer.
fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

#[tokio::test]
async fn slow_answer_hits_the_read_timeout() {
    let server = open_registry(|_| {
        respond(200, &[("Docker-Content-Digest", D1)], "")
            .with(Fault::Delay(Duration::from_secs(5)))
    })
    .await;
    let s = session(
        &server,
        ClientOptions {
            read_timeout: Some(Duration::from_millis(300)),
            ..options()
        },
    )
    .await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.http_status, a.attempts),
        (Status::Unreachable, None, 1)
    );
    assert_eq!(a.reason, Reason::Timeout);
    assert!(
        why(&a).starts_with("no data for 300 ms (the read timeout) after "),
        "{:?}",
        a.finding
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn hung_registry_ends_at_the_request_timeout_and_at_the_deadline() {
    let server = open_registry(|_| fault(Fault::Hang)).await;
    let s = session(
        &server,
        ClientOptions {
            request_timeout: Duration::from_millis(400),
            ..options()
        },
    )
    .await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.reason, a.attempts),
        (Status::Unreachable, Reason::Timeout, 1)
    );
    assert_eq!(
        a.finding,
        Finding::RequestFailed {
            host: server.host.clone(),
            method: Method::Head,
            why: "timed out after 400 ms".into(),
            redirected_from: None,
        }
    );
    assert!(took < Duration::from_secs(3), "{took:?}");

    // A deadline nearer than the request timeout cuts the request short.
    let s = session(&server, options()).await;
    let deadline = Instant::now() + Duration::from_millis(300);
    let (a, took) = guarded(BOUND, s.check_before("app", "v1", deadline)).await;
    assert_eq!(
        (a.status, a.reason),
        (Status::Unreachable, Reason::DeadlineExceeded)
    );
    assert!(why(&a).ends_with(", at the deadline"), "{:?}", a.finding);
    assert!(took < Duration::from_secs(2), "{took:?}");

    // A deadline already passed sends nothing.
    let before = server.requests().len();
    let (a, _) = guarded(BOUND, s.check_before("app", "v1", Instant::now())).await;
    assert_eq!(
        (a.status, a.reason),
        (Status::Unreachable, Reason::DeadlineExceeded)
    );
    assert!(
        why(&a) == "the deadline passed before the request could be sent",
        "{:?}",
        a.finding
    );
    assert_eq!(server.requests().len(), before);
}

#[tokio::test]
async fn stalled_error_body_still_gives_the_status() {
    // HEAD is refused; the GET's 404 sends half its body and stalls.
    let server = open_registry(|r| match r.method.as_str() {
        "HEAD" => respond(405, &[], ""),
        _ => respond(
            404,
            &[],
            r#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#,
        )
        .with(Fault::StallBody(10)),
    })
    .await;
    let s = session(
        &server,
        ClientOptions {
            read_timeout: Some(Duration::from_millis(300)),
            tag_hints: false,
            ..options()
        },
    )
    .await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.missing, a.http_status),
        (Status::Missing, Some(Missing::Tag), Some(404))
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn flaky_registry_503_then_200_is_present_after_two_attempts() {
    let calls = counter();
    let seen = calls.clone();
    let server = open_registry(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            respond(503, &[], "")
        } else {
            respond(200, &[("Docker-Content-Digest", D1)], "")
        }
    })
    .await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Present, 2));
    assert_eq!(a.digest.as_deref(), Some(D1));
    assert_eq!(
        a.history.failed,
        [FailedAttempt::Status {
            status: 503,
            retry_after: None
        }]
    );
    assert!(!a.history.gave_up);
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn always_unavailable_is_unreachable_listing_every_attempt() {
    let server = open_registry(|_| respond(502, &[], "")).await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.reason, a.http_status, a.attempts),
        (Status::Unreachable, Reason::ServerError, Some(502), 3)
    );
    assert_eq!(
        a.finding,
        Finding::HttpStatus {
            host: server.host.clone(),
            method: Method::Head,
            status: 502,
            expected: true
        }
    );
    let failure = FailedAttempt::Status {
        status: 502,
        retry_after: None,
    };
    assert_eq!(a.history.failed, each(3, failure));
    assert!(a.history.gave_up);
    assert_eq!(server.requests().len(), 1 + 3);
    assert!(took < Duration::from_secs(3), "{took:?}");

    // The number of attempts is an option.
    let s = session(
        &server,
        ClientOptions {
            max_attempts: 1,
            ..options()
        },
    )
    .await;
    let (a, _) = check(&s, "v1").await;
    assert_eq!(a.attempts, 1);
    assert!(
        matches!(a.finding, Finding::HttpStatus { status: 502, .. }),
        "{:?}",
        a.finding
    );
    assert_eq!(a.history.failed.len(), 1);
}

#[tokio::test]
async fn rate_limit_with_retry_after_seconds_is_waited_out() {
    let calls = counter();
    let seen = calls.clone();
    let server = open_registry(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            respond(
                429,
                &[("Retry-After", "1")],
                r#"{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}"#,
            )
        } else {
            respond(200, &[("Docker-Content-Digest", D1)], "")
        }
    })
    .await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Present, 2));
    assert_eq!(
        a.history.failed,
        [FailedAttempt::Status {
            status: 429,
            retry_after: Some(Duration::from_secs(1))
        }]
    );
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[tokio::test]
async fn rate_limit_with_retry_after_http_date_is_waited_out() {
    let calls = counter();
    let seen = calls.clone();
    let server = open_registry(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            let when = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
            respond(429, &[("Retry-After", when.as_str())], "")
        } else {
            respond(200, &[("Docker-Content-Digest", D1)], "")
        }
    })
    .await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Present, 2));
    // The date has whole seconds: the wait is between one and two seconds.
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn rate_limit_beyond_the_cap_or_the_deadline_is_not_waited_for() {
    let server = open_registry(|r| match r.path() {
        "/v2/app/manifests/long" => respond(429, &[("Retry-After", "3600")], ""),
        _ => respond(429, &[("Retry-After", "2")], ""),
    })
    .await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "long").await;
    assert_eq!(
        (a.status, a.reason, a.http_status, a.attempts),
        (Status::Unreachable, Reason::RateLimited, Some(429), 1)
    );
    // The wait asked for, as data.
    assert_eq!(a.retry_after, Some(Duration::from_secs(3600)));
    assert_eq!(
        a.finding,
        Finding::RateLimited {
            host: server.host.clone()
        }
    );
    assert_eq!(
        a.history.stopped,
        Some(RetryStop::RetryAfterTooLong {
            asked: Duration::from_secs(3600),
            max: Duration::from_secs(3)
        })
    );
    assert!(took < Duration::from_secs(2), "{took:?}");

    // Two seconds would be waited, but not past a deadline one second away.
    let deadline = Instant::now() + Duration::from_secs(1);
    let (a, took) = guarded(BOUND, s.check_before("app", "short", deadline)).await;
    assert_eq!((a.status, a.attempts), (Status::Unreachable, 1));
    assert!(
        a.history.stopped
            == Some(RetryStop::WouldPassDeadline {
                wait: Duration::from_secs(2)
            }),
        "{:?}",
        a.finding
    );
    assert!(took < Duration::from_millis(900), "{took:?}");

    // The same through the option.
    let s = session(
        &server,
        ClientOptions {
            deadline: Some(Instant::now() + Duration::from_secs(1)),
            ..options()
        },
    )
    .await;
    let (a, _) = check(&s, "short").await;
    assert!(
        matches!(a.history.stopped, Some(RetryStop::WouldPassDeadline { .. })),
        "{:?}",
        a.history
    );
}

#[tokio::test]
async fn connection_reset_is_retried_then_unreachable() {
    let server = open_registry(|_| fault(Fault::Reset)).await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.reason, a.http_status, a.attempts),
        (Status::Unreachable, Reason::ConnectionFailed, None, 3)
    );
    let reset = "connection reset by peer";
    assert_eq!(why(&a), reset);
    let failed = FailedAttempt::NoAnswer {
        kind: Reason::ConnectionFailed,
        why: reset.into(),
    };
    assert_eq!(a.history.failed, each(3, failed.clone()));
    assert!(took < Duration::from_secs(3), "{took:?}");

    // One reset, then an answer.
    let calls = counter();
    let seen = calls.clone();
    let server = open_registry(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            fault(Fault::Reset)
        } else {
            respond(200, &[("Docker-Content-Digest", D1)], "")
        }
    })
    .await;
    let s = session(&server, options()).await;
    let (a, _) = check(&s, "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Present, 2));
    assert_eq!(a.history.failed, [failed]);
}

#[tokio::test]
async fn connection_closed_before_the_answer_is_retried() {
    let server = open_registry(|_| fault(Fault::Raw(Vec::new()))).await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Unreachable, 3));
    assert!(
        why(&a) == "connection closed before the answer was complete"
            && a.history.failed.len() == 3,
        "{:?}",
        a.finding
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn garbage_answer_is_not_http_and_not_retried() {
    let server =
        open_registry(|_| fault(Fault::Raw(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec()))).await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.reason, a.attempts),
        (Status::Unreachable, Reason::NotARegistry, 1)
    );
    assert_eq!(
        why(&a),
        "the answer is not valid HTTP (invalid HTTP version parsed)"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");

    // Binary noise, too.
    let noise: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    let server = open_registry(move |_| fault(Fault::Raw(noise.clone()))).await;
    let s = session(&server, options()).await;
    let (a, _) = check(&s, "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Unreachable, 1));
    assert!(
        why(&a).starts_with("the answer is not valid HTTP"),
        "{:?}",
        a.finding
    );
}

#[tokio::test]
async fn one_mebibyte_header_is_refused() {
    let big = "a".repeat(1024 * 1024);
    let server = open_registry(move |_| respond(200, &[("X-Padding", big.as_str())], "")).await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Unreachable, 1));
    assert_eq!(
        why(&a),
        "the answer's header is larger than this client accepts \
         (at most 100 fields, about 400 KiB)"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");

    // Too many fields, each small.
    let headers: Vec<(String, String)> = (0..500)
        .map(|i| (format!("X-H{i}"), "v".to_string()))
        .collect();
    let server = open_registry(move |_| Response {
        headers: headers.clone(),
        ..respond(200, &[], "")
    })
    .await;
    let s = session(&server, options()).await;
    let (a, _) = check(&s, "v1").await;
    assert_eq!(a.status, Status::Unreachable);
    assert!(why(&a).contains("header is larger than"), "{:?}", a.finding);
}

#[tokio::test]
async fn redirect_loop_stops_after_five() {
    let server = open_registry(|r| respond(302, &[("Location", r.target.as_str())], "")).await;
    let s = session(&server, options()).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!((a.status, a.attempts), (Status::Unreachable, 1));
    assert_eq!(why(&a), "too many redirects (more than 5)");
    // The first request and five redirects followed.
    assert_eq!(server.requests().len(), 1 + 6);
    assert!(took < Duration::from_secs(2), "{took:?}");

    let s = session(
        &server,
        ClientOptions {
            max_redirects: 2,
            ..options()
        },
    )
    .await;
    let (a, _) = check(&s, "v1").await;
    assert!(
        why(&a) == "too many redirects (more than 2)",
        "{:?}",
        a.finding
    );
}

#[tokio::test]
async fn redirect_to_another_host_drops_authorization() {
    // Both servers want Basic; the registry sends manifests elsewhere.
    let other = serve(|_| respond(200, &[("Docker-Content-Digest", D1)], "")).await;
    let other_host = other.host.clone();
    let server = serve(move |r| match (r.path(), r.authorization.is_some()) {
        (_, false) => respond(401, &[("WWW-Authenticate", r#"Basic realm="r""#)], ""),
        ("/v2/", true) => respond(200, &[], ""),
        ("/v2/app/manifests/elsewhere", true) => {
            let to = format!("http://{other_host}/v2/app/manifests/elsewhere");
            respond(307, &[("Location", to.as_str())], "")
        }
        ("/v2/app/manifests/here", true) => {
            respond(307, &[("Location", "/v2/app/manifests/moved")], "")
        }
        (_, true) => respond(200, &[("Docker-Content-Digest", D1)], ""),
    })
    .await;
    let client = Client::new(options()).expect("client");
    let credential = Credential::Basic {
        username: "alice".into(),
        password: "redirect-secret".into(),
    };
    let s = client
        .authorize(&endpoint(&server), &credential, &repos(&["app"]))
        .await
        .expect("authorize");
    let (a, _) = guarded(BOUND, s.check("app", "elsewhere")).await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    let seen = other.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].authorization, None, "Authorization crossed hosts");

    // A redirect on the same host keeps it.
    let (a, _) = guarded(BOUND, s.check("app", "here")).await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    let moved = server
        .requests()
        .into_iter()
        .find(|r| r.path() == "/v2/app/manifests/moved")
        .expect("followed");
    assert!(moved.authorization.is_some());
}

#[tokio::test]
async fn malformed_www_authenticate_is_no_access_naming_the_flaw() {
    let server = serve(|_| {
        respond(
            401,
            &[(
                "WWW-Authenticate",
                r#"Bearer realm="https://auth.example/token"#,
            )],
            "",
        )
    })
    .await;
    let client = Client::new(options()).expect("client");
    let (result, took) = guarded(
        BOUND,
        client.authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["app"])),
    )
    .await;
    let err = result.expect_err("malformed");
    assert_eq!(err.status, Status::NoAccess);
    assert_eq!(
        *err.failure,
        pullcheck_registry::AuthFailure::UnsupportedChallenge {
            host: server.host.clone(),
            problem: pullcheck_registry::ChallengeProblem::Malformed {
                reason: "unterminated quoted-string".into(),
                position: 13,
            },
        }
    );
    assert!(took < Duration::from_secs(2), "{took:?}");

    // The same challenge met only on a manifest: no access, never missing.
    let server = open_registry(|_| {
        respond(
            401,
            &[("WWW-Authenticate", r#"Bearer realm="x, error="#)],
            "",
        )
    })
    .await;
    let s = session(&server, options()).await;
    let (a, _) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.missing, a.attempts),
        (Status::NoAccess, None, 1)
    );
}

#[tokio::test]
async fn head_405_and_501_fall_back_to_get() {
    for refused in [405, 501] {
        let server = open_registry(move |r| match r.method.as_str() {
            "HEAD" => respond(refused, &[], ""),
            _ => respond(200, &[("Docker-Content-Digest", D1)], "{}"),
        })
        .await;
        let s = session(&server, options()).await;
        let (a, took) = check(&s, "v1").await;
        assert_eq!((a.status, a.attempts), (Status::Present, 1), "{a:?}");
        assert!(support::served_to(&a, Method::Get), "{:?}", a.finding);
        assert_eq!(
            server.seen(),
            vec![
                "GET /v2/",
                "HEAD /v2/app/manifests/v1",
                "GET /v2/app/manifests/v1"
            ]
        );
        assert!(took < Duration::from_secs(2), "{took:?}");
    }
}

#[tokio::test]
async fn missing_digest_header_is_fine() {
    let server = open_registry(|_| {
        respond(
            200,
            &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
            "",
        )
    })
    .await;
    let s = session(&server, options()).await;
    for reference in ["v1", D1] {
        let (a, took) = check(&s, reference).await;
        assert_eq!(
            (a.status, a.digest.as_deref()),
            (Status::Present, None),
            "{a:?}"
        );
        assert!(support::served_to(&a, Method::Head), "{:?}", a.finding);
        assert_eq!(
            a.media_type.as_deref(),
            Some("application/vnd.oci.image.manifest.v1+json")
        );
        assert!(took < Duration::from_secs(2), "{took:?}");
    }
}

#[tokio::test]
async fn unknown_error_code_is_shown_verbatim() {
    let server = open_registry(|r| match (r.method.as_str(), r.path()) {
        ("HEAD", _) => respond(405, &[], ""),
        (_, "/v2/app/manifests/gone") => respond(
            404,
            &[],
            r#"{"errors":[{"code":"GREMLINS","message":"ate the manifest","detail":{"n":3}}]}"#,
        ),
        (_, "/v2/app/manifests/bad") => respond(
            400,
            &[],
            r#"{"errors":[{"code":"FLUX_CAPACITOR","message":"needs 1.21 GW"}]}"#,
        ),
        _ => respond(404, &[], "{\"errors\":[{\"code\":"),
    })
    .await;
    let s = session(
        &server,
        ClientOptions {
            tag_hints: false,
            ..options()
        },
    )
    .await;
    let (a, _) = check(&s, "gone").await;
    assert_eq!((a.status, a.missing), (Status::Missing, Some(Missing::Tag)));
    assert_eq!(
        a.errors,
        [pullcheck_registry::ErrorEntry {
            code: "GREMLINS".into(),
            message: "ate the manifest".into()
        }]
    );

    let (a, _) = check(&s, "bad").await;
    assert_eq!(
        (a.status, a.http_status, a.attempts),
        (Status::Unreachable, Some(400), 1)
    );
    assert_eq!(
        a.errors,
        [pullcheck_registry::ErrorEntry {
            code: "FLUX_CAPACITOR".into(),
            message: "needs 1.21 GW".into()
        }]
    );

    // A truncated envelope is no envelope: the status alone decides.
    let (a, _) = check(&s, "cut").await;
    assert_eq!((a.status, a.missing), (Status::Missing, Some(Missing::Tag)));
}

#[tokio::test]
async fn client_errors_are_never_retried_and_tag_lists_follow_only_404s() {
    let server = open_registry(|r| match r.path() {
        "/v2/app/manifests/s400" => respond(400, &[], ""),
        "/v2/app/manifests/s401" => respond(401, &[], ""),
        "/v2/app/manifests/s403" => respond(403, &[], ""),
        "/v2/app/manifests/s503" => respond(503, &[], ""),
        "/v2/app/tags/list" => respond(200, &[], r#"{"name":"app","tags":["v1"]}"#),
        _ => respond(404, &[], ""),
    })
    .await;
    let s = session(&server, options()).await;
    for (reference, status) in [
        ("s400", Status::Unreachable),
        ("s401", Status::NoAccess),
        ("s403", Status::Denied),
        ("s404", Status::Missing),
    ] {
        let (a, _) = check(&s, reference).await;
        assert_eq!((a.status, a.attempts), (status, 1), "{reference}: {a:?}");
    }
    check(&s, "s503").await;
    let seen = server.seen();
    let count = |needle: &str| seen.iter().filter(|s| s.ends_with(needle)).count();
    for one in ["s400", "s401", "s403", "s404"] {
        assert_eq!(count(one), 1, "{one}: {seen:?}");
    }
    assert_eq!(count("s503"), 3);
    // The one tag list is the 404's.
    assert_eq!(count("tags/list?n=1000"), 1, "{seen:?}");
}

#[tokio::test]
async fn ping_and_token_requests_are_retried_too() {
    let pings = counter();
    let tokens = counter();
    let (p, t) = (pings.clone(), tokens.clone());
    let server_host = Arc::new(std::sync::Mutex::new(String::new()));
    let realm_host = server_host.clone();
    let server = serve(move |r| {
        let host = realm_host.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let challenge = format!(r#"Bearer realm="http://{host}/token",service="svc""#);
        match (r.path(), r.authorization.as_deref()) {
            ("/v2/", _) if p.fetch_add(1, Ordering::SeqCst) < 2 => respond(503, &[], ""),
            ("/token", _) if t.fetch_add(1, Ordering::SeqCst) == 0 => fault(Fault::Reset),
            ("/token", _) => respond(200, &[], r#"{"token":"tok","expires_in":300}"#),
            (_, Some("Bearer tok")) => respond(200, &[("Docker-Content-Digest", D1)], ""),
            _ => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
        }
    })
    .await;
    *server_host.lock().unwrap_or_else(|e| e.into_inner()) = server.host.clone();
    let client = Client::new(ClientOptions {
        max_attempts: 4,
        ..options()
    })
    .expect("client");
    let (s, took) = guarded(
        BOUND,
        client.authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["app"])),
    )
    .await;
    let s = s.expect("authorize after retries");
    assert_eq!(s.check("app", "v1").await.status, Status::Present);
    assert_eq!(pings.load(Ordering::SeqCst), 3);
    assert_eq!(tokens.load(Ordering::SeqCst), 2);
    assert!(took < Duration::from_secs(3), "{took:?}");

    // Always 503 on the ping: the error lists the attempts.
    let server = serve(|_| respond(503, &[], "")).await;
    let (err, _) = guarded(
        BOUND,
        Client::new(options()).expect("client").authorize(
            &endpoint(&server),
            &Credential::Anonymous,
            &repos(&["app"]),
        ),
    )
    .await;
    let err = err.expect_err("unavailable");
    assert_eq!(err.status, Status::Unreachable);
    assert_eq!(err.history.failed.len(), 3, "{:?}", err.history);
    assert!(err.history.gave_up);
}

#[tokio::test]
async fn insufficient_scope_gets_a_token_for_that_repository_alone() {
    // The realm grants at most one repository per token (as some token servers trim
    // long scope lists): the shared token covers `a` only.
    let server_host = Arc::new(std::sync::Mutex::new(String::new()));
    let realm_host = server_host.clone();
    let server = serve(move |r| {
        let host = realm_host.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let challenge = |scope: &str, error: bool| {
            let mut c = format!(r#"Bearer realm="http://{host}/token",service="svc""#);
            if !scope.is_empty() {
                c.push_str(&format!(r#",scope="repository:{scope}:pull""#));
            }
            if error {
                c.push_str(r#",error="insufficient_scope""#);
            }
            c
        };
        let repo = r
            .path()
            .strip_prefix("/v2/")
            .and_then(|p| p.split("/manifests/").next())
            .unwrap_or_default()
            .to_string();
        match (r.path(), r.authorization.as_deref()) {
            ("/v2/", None) => respond(
                401,
                &[("WWW-Authenticate", challenge("", false).as_str())],
                "",
            ),
            ("/token", _) => {
                let first = url::form_urlencoded::parse(
                    r.target
                        .split_once('?')
                        .map(|(_, q)| q)
                        .unwrap_or("")
                        .as_bytes(),
                )
                .find(|(k, _)| k == "scope")
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
                let name = first
                    .strip_prefix("repository:")
                    .and_then(|s| s.strip_suffix(":pull"))
                    .unwrap_or("none")
                    .replace('/', "_");
                respond(
                    200,
                    &[],
                    &format!(r#"{{"token":"tok-{name}","expires_in":300}}"#),
                )
            }
            (_, Some(auth)) if auth == format!("Bearer tok-{}", repo.replace('/', "_")) => {
                respond(200, &[("Docker-Content-Digest", D1)], "")
            }
            (_, Some(_)) => respond(
                401,
                &[("WWW-Authenticate", challenge(&repo, true).as_str())],
                "",
            ),
            _ => respond(
                401,
                &[("WWW-Authenticate", challenge(&repo, false).as_str())],
                "",
            ),
        }
    })
    .await;
    *server_host.lock().unwrap_or_else(|e| e.into_inner()) = server.host.clone();
    let client = Client::new(options()).expect("client");
    let s = client
        .authorize(
            &endpoint(&server),
            &Credential::Anonymous,
            &repos(&["a", "b"]),
        )
        .await
        .expect("authorize");
    let (a, _) = guarded(BOUND, s.check("a", "v1")).await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    let (b, _) = guarded(BOUND, s.check("b", "v1")).await;
    assert_eq!((b.status, b.attempts), (Status::Present, 1), "{b:?}");
    // Again: the token for `b` alone is cached.
    let (b, _) = guarded(BOUND, s.check("b", "v1")).await;
    assert_eq!(b.status, Status::Present, "{b:?}");
    let token_requests: Vec<String> = server
        .seen()
        .into_iter()
        .filter(|s| s.starts_with("GET /token"))
        .collect();
    assert_eq!(
        token_requests,
        vec![
            "GET /token?service=svc&scope=repository%3Aa%3Apull&scope=repository%3Ab%3Apull",
            "GET /token?service=svc&scope=repository%3Ab%3Apull",
        ]
    );
    assert_eq!(client.token_request_count(), 2);
}

#[tokio::test]
async fn one_connection_is_kept_alive_for_every_check() {
    let server = open_registry(|_| respond(200, &[("Docker-Content-Digest", D1)], "")).await;
    let s = session(&server, options()).await;
    for i in 0..20 {
        let (a, _) = check(&s, &format!("v{i}")).await;
        assert_eq!(a.status, Status::Present);
    }
    // The https attempt of the ping is its own (failed) connection.
    assert_eq!(server.connections(), 2, "{:?}", server.seen());
}

#[tokio::test]
async fn platform_check_fetches_the_index_once_and_lists_what_is_there() {
    let server = open_registry(|r| match r.method.as_str() {
        "HEAD" => respond(
            200,
            &[("Docker-Content-Digest", D1), ("Content-Type", OCI_INDEX)],
            "",
        ),
        _ => respond(200, &[("Content-Type", OCI_INDEX)], INDEX_BODY),
    })
    .await;
    let with = |p: &str| ClientOptions {
        platform: Some(Platform::parse(p).expect("platform")),
        ..options()
    };
    let s = session(&server, with("linux/arm64")).await;
    let (a, _) = check(&s, "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert!(
        matches!(
            &a.finding,
            Finding::Served { platform: Some((_, have, _)), .. } if have.to_string() == "linux/arm64/v8"
        ),
        "{:?}",
        a.finding
    );
    // The index is fetched by the digest the HEAD named.
    assert_eq!(
        server.seen()[1..],
        [
            "HEAD /v2/app/manifests/v1".to_string(),
            format!("GET /v2/app/manifests/{D1}")
        ]
    );

    let s = session(&server, with("linux/s390x")).await;
    let (a, took) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.missing, a.digest.as_deref()),
        (Status::Missing, Some(Missing::Platform), Some(D1))
    );
    assert!(
        matches!(&a.finding, Finding::PlatformNotListed { manifest, .. } if manifest == "app:v1"),
        "{:?}",
        a.finding
    );
    let listed: Vec<String> = a.platforms.iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["linux/amd64", "linux/arm64/v8"]);
    assert!(took < Duration::from_secs(2), "{took:?}");

    // Off by default: no GET.
    let s = session(&server, options()).await;
    let before = server.requests().len();
    check(&s, "v1").await;
    assert_eq!(server.requests().len(), before + 1);
}

#[tokio::test]
async fn platform_check_uses_the_body_of_a_get_fallback_and_survives_a_bad_index() {
    let server = open_registry(|r| match (r.method.as_str(), r.path()) {
        ("HEAD", _) => respond(405, &[], ""),
        (_, "/v2/app/manifests/good") => respond(200, &[("Content-Type", OCI_INDEX)], INDEX_BODY),
        _ => respond(
            200,
            &[("Content-Type", OCI_INDEX)],
            "<html>not an index</html>",
        ),
    })
    .await;
    let s = session(
        &server,
        ClientOptions {
            platform: Some(Platform::parse("linux/amd64").expect("platform")),
            ..options()
        },
    )
    .await;
    let (a, _) = check(&s, "good").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert_eq!(
        server.seen()[1..],
        ["HEAD /v2/app/manifests/good", "GET /v2/app/manifests/good"]
    );
    let (a, _) = check(&s, "bad").await;
    assert_eq!((a.status, a.missing), (Status::Unreachable, None));
    assert!(
        matches!(&a.finding, Finding::PlatformUnchecked { .. })
            && why(&a).starts_with("the index is not the expected JSON"),
        "{:?}",
        a.finding
    );
}

/// A registry that redirects a manifest or a blob to its storage (distribution's S3
/// and GCS drivers answer a blob `GET` 307 to a signed URL): when the storage refuses
/// the connection, the failure is the storage host's, and the registry is named as
/// where the redirect came from (rev23r finding 4: it named the registry as the host
/// that failed).
#[tokio::test]
async fn a_refused_redirect_target_is_named_as_the_host_that_failed() {
    let storage = pullcheck_testkit::ClosedPort::new();
    let at = format!("127.0.0.1:{}", storage.port());
    let to = format!("http://{at}/storage/object");
    let server = open_registry(move |_| respond(307, &[("Location", to.as_str())], "")).await;
    let s = session(&server, options()).await;
    let (a, _) = check(&s, "v1").await;
    assert_eq!(
        (a.status, a.reason, a.http_status),
        (Status::Unreachable, Reason::ConnectionRefused, None)
    );
    assert_eq!(
        a.finding,
        Finding::RequestFailed {
            host: at.clone(),
            method: Method::Head,
            why: "connection refused".into(),
            redirected_from: Some(server.host.clone()),
        }
    );

    // The config blob of a single-platform image, for the platform check.
    let config = format!("sha256:{}", "2".repeat(64));
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config}","size":2}},"layers":[]}}"#
    );
    let to = format!("http://{at}/storage/blob");
    let server = open_registry(move |r| {
        if r.path().starts_with("/v2/app/blobs/") {
            return respond(307, &[("Location", to.as_str())], "");
        }
        respond(
            200,
            &[
                ("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
                ("Docker-Content-Digest", D1),
            ],
            &manifest,
        )
    })
    .await;
    let s = session(
        &server,
        ClientOptions {
            platform: Some(Platform::parse("linux/amd64").unwrap()),
            ..options()
        },
    )
    .await;
    let (a, _) = check(&s, "v1").await;
    match &a.finding {
        Finding::PlatformUnchecked { host, why, .. } => {
            assert_eq!(host, &server.host);
            assert_eq!(
                why,
                &format!("GET of the config blob failed: connection refused (redirected to {at})")
            );
        }
        other => panic!("{other:?}"),
    }
}
