//! The rounds against a scripted registry: no sockets, no clock but tokio's (paused
//! where a deadline is tested). The real registries are in `tests/`.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use pullcheck_credentials::{CredentialSource, ResolvedCredential};
use pullcheck_registry::{Answer, AuthorizeError, Credential, Endpoint, Platform};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::*;
use crate::resolve::{Credentials, ResolvedEndpoint, Resolver, Route};

fn outcome(status: Status, detail: &str) -> Outcome {
    let reason = match status {
        Status::Present => Reason::Found,
        Status::Missing => Reason::TagNotFound,
        Status::NoAccess => Reason::UnauthorizedAnonymous,
        Status::Denied => Reason::AccessDenied,
        _ => Reason::ConnectionRefused,
    };
    failure(status, reason, detail.into())
}

/// An answer from a mirror.
fn mirror(endpoint: &str, status: Status, detail: &str) -> Tried {
    Tried {
        endpoint: endpoint.into(),
        mirror: true,
        outcome: outcome(status, detail),
    }
}

/// An answer from the image's own registry (or its registries.conf `location`, or
/// containerd's `server`).
fn primary(endpoint: &str, status: Status, detail: &str) -> Tried {
    Tried {
        mirror: false,
        ..mirror(endpoint, status, detail)
    }
}

/// (endpoint, status, chosen) of every attempt a row lists.
fn listed(chosen: &Outcome) -> Vec<(&str, Status, bool)> {
    chosen
        .attempts
        .iter()
        .map(|a| (a.endpoint.as_str(), a.status, a.chosen))
        .collect()
}

#[test]
fn a_definite_404_outranks_a_network_error() {
    let chosen = choose(vec![
        mirror("mirror", Status::Unreachable, "connection refused"),
        primary("primary", Status::Missing, "tag not found"),
    ]);
    assert_eq!(chosen.status, Status::Missing);
    // The detail is the chosen answer's; the others are data.
    assert_eq!(chosen.detail, "tag not found");
    assert_eq!(
        listed(&chosen),
        [
            ("mirror", Status::Unreachable, false),
            ("primary", Status::Missing, true)
        ]
    );
}

#[test]
fn a_mirrors_404_does_not_outrank_a_primary_that_gave_no_answer() {
    // containers/image reports the primary's error when every endpoint fails
    // (newImageSource, docker/docker_image_src.go); the primary might serve the tag.
    for status in [Status::Missing, Status::NoAccess, Status::Denied] {
        let chosen = choose(vec![
            mirror("mirror", status, "the mirror's answer"),
            primary("primary", Status::Unreachable, "connection refused"),
        ]);
        assert_eq!(chosen.status, Status::Unreachable, "{status:?}");
        assert_eq!(chosen.reason, Reason::ConnectionRefused);
        assert_eq!(
            listed(&chosen),
            [
                ("mirror", status, false),
                ("primary", Status::Unreachable, true)
            ]
        );
    }
}

#[test]
fn a_primary_refused_by_the_egress_policy_gave_no_answer_either() {
    let chosen = choose(vec![
        mirror("mirror", Status::Missing, "tag not found"),
        primary("primary", Status::Blocked, "refused by --deny-registry"),
    ]);
    assert_eq!(chosen.status, Status::Blocked);
    assert_eq!(
        listed(&chosen),
        [
            ("mirror", Status::Missing, false),
            ("primary", Status::Blocked, true)
        ]
    );
}

#[test]
fn a_primary_that_answered_with_one_credential_keeps_the_ranking() {
    // The primary's 401 to one credential is an answer: the mirror's 404 outranks it,
    // and the primary's later network error with another credential changes nothing.
    let chosen = choose(vec![
        mirror("mirror", Status::Missing, "tag not found"),
        primary("primary", Status::NoAccess, "401"),
        primary("primary", Status::Unreachable, "connection reset"),
    ]);
    assert_eq!(chosen.status, Status::Missing);
    assert_eq!(
        listed(&chosen),
        [
            ("mirror", Status::Missing, true),
            ("primary", Status::NoAccess, false),
            ("primary", Status::Unreachable, false)
        ]
    );
}

#[test]
fn a_mirror_only_configuration_keeps_the_ranking() {
    // No primary among the endpoints (e.g. a hosts.toml `server` without the resolve
    // capability): the mirrors' answers are all the runtime gets.
    let chosen = choose(vec![
        mirror("a", Status::Missing, "tag not found"),
        mirror("b", Status::Unreachable, "connection refused"),
    ]);
    assert_eq!(chosen.status, Status::Missing);
    assert_eq!(
        listed(&chosen),
        [
            ("a", Status::Missing, true),
            ("b", Status::Unreachable, false)
        ]
    );
}

#[test]
fn present_wins_and_names_earlier_failures() {
    let chosen = choose(vec![
        primary("a", Status::Denied, "rejected"),
        primary("b", Status::Present, "HEAD 200"),
    ]);
    assert_eq!(chosen.status, Status::Present);
    assert_eq!(chosen.detail, "HEAD 200");
    let attempts: Vec<(&str, Reason, bool)> = chosen
        .attempts
        .iter()
        .map(|a| (a.endpoint.as_str(), a.reason, a.chosen))
        .collect();
    assert_eq!(
        attempts,
        [
            ("a", Reason::AccessDenied, false),
            ("b", Reason::Found, true)
        ]
    );
}

#[test]
fn among_equals_the_first_attempt_is_reported() {
    let chosen = choose(vec![
        primary("a", Status::NoAccess, "first"),
        primary("b", Status::NoAccess, "second"),
    ]);
    assert_eq!(chosen.detail, "first");
    assert_eq!(
        chosen.attempts.iter().map(|a| a.chosen).collect::<Vec<_>>(),
        [true, false]
    );
}

/// What the scripted registry does with one check.
#[derive(Clone)]
enum Reply {
    Answer(pullcheck_registry::Status),
    /// Never answers (a registry that accepts and hangs).
    Hang,
}

/// A registry scripted per host and user: `authorize` refuses the (host, user) pairs in
/// `refuse`, `check` replies per (host, user, repository) from `replies` (default:
/// missing). Every call is recorded, in order, as one line; no secret is in it.
#[derive(Default)]
struct Scripted {
    refuse: Vec<(&'static str, &'static str, pullcheck_registry::Status)>,
    replies: Vec<(&'static str, &'static str, &'static str, Reply)>,
    calls: Mutex<Vec<String>>,
}

/// The scripted session: the host and the user it was authorized for.
#[derive(Debug, Clone)]
struct FakeSession {
    host: String,
    user: String,
}

fn user_of(credential: &Credential) -> String {
    match credential {
        Credential::Anonymous => "anonymous".into(),
        Credential::Basic { username, .. } => username.clone(),
        Credential::IdentityToken(_) => "identity token".into(),
        Credential::RegistryToken(_) => "registry token".into(),
    }
}

impl Scripted {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn log(&self, line: String) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line);
    }
}

impl Registry for Scripted {
    type Session = FakeSession;

    async fn authorize(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
        _first: Option<(&str, &str)>,
        _deadline: std::time::Instant,
    ) -> Result<FakeSession, AuthorizeError> {
        let user = user_of(credential);
        self.log(format!(
            "authorize {} as {user} for {}",
            endpoint.host,
            repositories.join(",")
        ));
        match self
            .refuse
            .iter()
            .find(|(h, u, _)| *h == endpoint.host && *u == user)
        {
            Some((_, _, status)) => Err(AuthorizeError::new(
                *status,
                pullcheck_registry::Reason::CredentialsRejected,
                pullcheck_registry::AuthFailure::CredentialsRejected {
                    host: endpoint.host.clone(),
                    credential: pullcheck_registry::Presented::User(user),
                    status: 401,
                },
            )),
            None => Ok(FakeSession {
                host: endpoint.host.clone(),
                user,
            }),
        }
    }

    fn over_tls(&self, _session: &FakeSession) -> bool {
        false
    }

    async fn check(
        &self,
        session: &FakeSession,
        repository: &str,
        reference: &str,
        _platform: Option<&Platform>,
        _deadline: std::time::Instant,
    ) -> Answer {
        self.log(format!(
            "check {} as {} {repository}:{reference}",
            session.host, session.user
        ));
        let reply = self
            .replies
            .iter()
            .find(|(h, u, r, _)| *h == session.host && *u == session.user && *r == repository)
            .map_or(Reply::Answer(pullcheck_registry::Status::Missing), |x| {
                x.3.clone()
            });
        let status = match reply {
            Reply::Answer(status) => status,
            Reply::Hang => std::future::pending().await,
        };
        Answer::new(
            status,
            match status {
                pullcheck_registry::Status::Present => pullcheck_registry::Reason::Found,
                pullcheck_registry::Status::Missing => pullcheck_registry::Reason::TagNotFound,
                pullcheck_registry::Status::NoAccess => pullcheck_registry::Reason::Unauthorized,
                pullcheck_registry::Status::Denied => pullcheck_registry::Reason::AccessDenied,
                pullcheck_registry::Status::Unreachable => pullcheck_registry::Reason::Timeout,
                pullcheck_registry::Status::Refused => pullcheck_registry::Reason::EgressDenied,
            },
            // A finding whose words name the status and the host.
            pullcheck_registry::Finding::RequestFailed {
                host: session.host.clone(),
                method: pullcheck_registry::Method::Head,
                why: format!("{status:?}"),
                redirected_from: None,
            },
        )
    }
}

fn reference(text: &str) -> Reference {
    Reference::parse_normalized(text).expect("a valid reference")
}

/// A route to `host` (a mirror or the image's own registry) with `users`' credentials
/// (none: anonymous).
fn route(host: &str, is_mirror: bool, repository: &str, users: &[&str]) -> Route {
    Route {
        endpoint: ResolvedEndpoint {
            endpoint: Endpoint::new(host),
            url: format!("https://{host}/v2/"),
            rule: "scripted".into(),
            is_mirror,
            over_tls_warning: None,
            over_plain_http_warning: None,
        },
        repository: repository.into(),
        credential_rule: "scripted".into(),
        credentials: users
            .iter()
            .map(|u| ResolvedCredential {
                credential: Credential::Basic {
                    username: (*u).into(),
                    password: "not-a-real-password".into(),
                },
                source: CredentialSource {
                    source: format!("pull secret {u}"),
                    key: host.into(),
                    username: Some((*u).into()),
                },
            })
            .collect(),
        provider_failures: Vec::new(),
    }
}

/// Phases 2 to 4 for references already resolved to `routes`, within 60 s.
async fn ask_routes(
    registry: &Scripted,
    references: Vec<(&Reference, Vec<Route>)>,
) -> HashMap<QueryKey, Outcome> {
    let permits = Semaphore::new(16);
    let options = QueryOptions {
        permits: &permits,
        deadline: Duration::from_secs(60),
        deadline_start: None,
        platform: None,
        cache: None,
    };
    let resolved = references
        .into_iter()
        .map(|(r, routes)| (QueryKey::new(0, r), r, Ok(Resolution::Routes(routes))))
        .collect();
    ask(
        registry,
        resolved,
        &options,
        Instant::now() + options.deadline,
    )
    .await
}

fn of<'a>(outcomes: &'a HashMap<QueryKey, Outcome>, r: &Reference) -> &'a Outcome {
    outcomes.get(&QueryKey::new(0, r)).expect("an outcome")
}

#[tokio::test]
async fn a_mirror_that_misses_falls_back_to_the_primary() {
    let registry = Scripted {
        replies: vec![(
            "registry.local",
            "anonymous",
            "team/app",
            Reply::Answer(pullcheck_registry::Status::Present),
        )],
        ..Scripted::default()
    };
    let app = reference("registry.local/team/app:v1");
    let outcomes = ask_routes(
        &registry,
        vec![(
            &app,
            vec![
                route("mirror.local", true, "team/app", &[]),
                route("registry.local", false, "team/app", &[]),
            ],
        )],
    )
    .await;
    let o = of(&outcomes, &app);
    assert_eq!((o.status, o.reason), (Status::Present, Reason::Found));
    assert_eq!(o.registry.as_deref(), Some("registry.local"));
    // Every attempt as data, in order.
    let attempts: Vec<(&str, &str, Status, Reason, &str, bool)> = o
        .attempts
        .iter()
        .map(|a| {
            (
                a.endpoint.as_str(),
                a.registry.as_str(),
                a.status,
                a.reason,
                a.detail.as_str(),
                a.chosen,
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            (
                "mirror.local",
                "mirror.local",
                Status::Missing,
                Reason::TagNotFound,
                "HEAD to mirror.local failed: Missing",
                false
            ),
            (
                "registry.local",
                "registry.local",
                Status::Present,
                Reason::Found,
                "HEAD to registry.local failed: Present",
                true
            ),
        ]
    );
    assert_eq!(o.detail, "HEAD to registry.local failed: Present");
    assert_eq!(
        registry.calls(),
        [
            "authorize mirror.local as anonymous for team/app",
            "check mirror.local as anonymous team/app:v1",
            "authorize registry.local as anonymous for team/app",
            "check registry.local as anonymous team/app:v1",
        ]
    );
}

#[tokio::test]
async fn the_first_present_answer_wins_and_later_attempts_are_not_asked() {
    let registry = Scripted {
        replies: vec![(
            "mirror.local",
            "alice",
            "team/app",
            Reply::Answer(pullcheck_registry::Status::Present),
        )],
        ..Scripted::default()
    };
    let app = reference("registry.local/team/app:v1");
    let outcomes = ask_routes(
        &registry,
        vec![(
            &app,
            vec![
                route("mirror.local", true, "team/app", &["alice", "bob"]),
                route("registry.local", false, "team/app", &[]),
            ],
        )],
    )
    .await;
    let o = of(&outcomes, &app);
    assert_eq!(o.status, Status::Present);
    assert_eq!(o.detail, "HEAD to mirror.local failed: Present");
    assert_eq!(
        o.credential.as_ref().map(|c| c.source.as_str()),
        Some("pull secret alice")
    );
    assert_eq!(
        registry.calls(),
        [
            "authorize mirror.local as alice for team/app",
            "check mirror.local as alice team/app:v1",
        ]
    );
}

#[tokio::test]
async fn anonymous_is_never_tried_after_credentials_fail() {
    // alice is refused by the token realm; bob is let in but the check refuses him.
    let registry = Scripted {
        refuse: vec![(
            "registry.local",
            "alice",
            pullcheck_registry::Status::Denied,
        )],
        replies: vec![
            (
                "registry.local",
                "bob",
                "team/app",
                Reply::Answer(pullcheck_registry::Status::NoAccess),
            ),
            (
                "registry.local",
                "anonymous",
                "team/app",
                Reply::Answer(pullcheck_registry::Status::Present),
            ),
        ],
        ..Scripted::default()
    };
    let app = reference("registry.local/team/app:v1");
    let outcomes = ask_routes(
        &registry,
        vec![(
            &app,
            vec![route(
                "registry.local",
                false,
                "team/app",
                &["alice", "bob"],
            )],
        )],
    )
    .await;
    let o = of(&outcomes, &app);
    // The more meaningful failure: bob's no_access outranks alice's denied.
    assert_eq!(o.status, Status::NoAccess);
    assert_eq!(
        o.credential.as_ref().map(|c| c.source.as_str()),
        Some("pull secret bob")
    );
    let alice = o
        .attempts
        .iter()
        .find(|a| {
            a.credential
                .as_ref()
                .is_some_and(|c| c.source == "pull secret alice")
        })
        .map(|a| (a.status, a.detail.as_str(), a.chosen));
    assert_eq!(
        alice,
        Some((
            Status::Denied,
            "registry registry.local rejected the credentials of user \"alice\" (HTTP 401)",
            false
        ))
    );
    let calls = registry.calls();
    assert!(calls.iter().all(|c| !c.contains("anonymous")), "{calls:?}");
}

#[tokio::test]
async fn the_next_credential_is_tried_after_a_failing_one() {
    let registry = Scripted {
        refuse: vec![(
            "registry.local",
            "alice",
            pullcheck_registry::Status::Denied,
        )],
        replies: vec![(
            "registry.local",
            "bob",
            "team/app",
            Reply::Answer(pullcheck_registry::Status::Present),
        )],
        ..Scripted::default()
    };
    let app = reference("registry.local/team/app:v1");
    let outcomes = ask_routes(
        &registry,
        vec![(
            &app,
            vec![route(
                "registry.local",
                false,
                "team/app",
                &["alice", "bob"],
            )],
        )],
    )
    .await;
    let o = of(&outcomes, &app);
    assert_eq!(o.status, Status::Present);
    assert_eq!(
        o.credential.as_ref().map(|c| c.source.as_str()),
        Some("pull secret bob")
    );
    let attempts: Vec<(Option<&str>, Status, &str)> = o
        .attempts
        .iter()
        .map(|a| {
            (
                a.credential.as_ref().map(|c| c.source.as_str()),
                a.status,
                a.detail.as_str(),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            (
                Some("pull secret alice"),
                Status::Denied,
                "registry registry.local rejected the credentials of user \"alice\" (HTTP 401)"
            ),
            (
                Some("pull secret bob"),
                Status::Present,
                "HEAD to registry.local failed: Present"
            ),
        ]
    );
    assert_eq!(
        registry.calls(),
        [
            "authorize registry.local as alice for team/app",
            "authorize registry.local as bob for team/app",
            "check registry.local as bob team/app:v1",
        ]
    );
}

#[tokio::test]
async fn each_endpoint_and_credential_is_authorized_once_for_all_its_repositories() {
    // One round: three images on one registry, one on another, through `run`.
    let registry = Scripted::default();
    let refs: Vec<Reference> = [
        "one.local/b:1",
        "one.local/a:1",
        "one.local/a:2",
        "two.local/c:1",
    ]
    .iter()
    .map(|r| reference(r))
    .collect();
    let queries: Vec<(usize, &Reference)> = refs.iter().map(|r| (0, r)).collect();
    let permits = Semaphore::new(2);
    let outcomes = run(
        &registry,
        &Resolver::default(),
        &[Credentials::anonymous()],
        &queries,
        &QueryOptions {
            permits: &permits,
            deadline: Duration::from_secs(60),
            deadline_start: None,
            platform: None,
            cache: None,
        },
    )
    .await;
    assert_eq!(outcomes.len(), 4);
    assert!(outcomes.values().all(|o| o.status == Status::Missing));
    let mut authorized: Vec<String> = registry
        .calls()
        .into_iter()
        .filter(|c| c.starts_with("authorize"))
        .collect();
    authorized.sort();
    assert_eq!(
        authorized,
        [
            "authorize one.local as anonymous for a,b",
            "authorize two.local as anonymous for c",
        ]
    );
    assert_eq!(registry.calls().len(), 6);

    // Over rounds: a session from an earlier round is reused. Round one asks x on the
    // mirror and y on the primary; round two asks x on the primary, authorized already.
    let registry = Scripted::default();
    let (x, y) = (
        reference("primary.local/x:1"),
        reference("primary.local/y:1"),
    );
    ask_routes(
        &registry,
        vec![
            (
                &x,
                vec![
                    route("mirror.local", true, "x", &[]),
                    route("primary.local", false, "x", &[]),
                ],
            ),
            (&y, vec![route("primary.local", false, "y", &[])]),
        ],
    )
    .await;
    let calls = registry.calls();
    let authorized: Vec<&String> = calls
        .iter()
        .filter(|c| c.starts_with("authorize"))
        .collect();
    assert_eq!(authorized.len(), 2, "{calls:?}");
    assert!(calls.contains(&"check primary.local as anonymous x:1".to_string()));
}

#[tokio::test(start_paused = true)]
async fn a_registry_that_never_answers_is_unreachable_at_the_deadline() {
    let registry = Scripted {
        replies: vec![("hang.local", "anonymous", "a/b", Reply::Hang)],
        ..Scripted::default()
    };
    let (hanging, fine) = (reference("hang.local/a/b:c"), reference("hang.local/d:e"));
    let permits = Semaphore::new(16);
    let started = Instant::now();
    let outcomes = run(
        &registry,
        &Resolver::default(),
        &[Credentials::anonymous()],
        &[(0, &hanging), (0, &fine)],
        &QueryOptions {
            permits: &permits,
            deadline: Duration::from_millis(700),
            deadline_start: None,
            platform: None,
            cache: None,
        },
    )
    .await;
    assert!(
        started.elapsed() <= Duration::from_millis(750),
        "{:?}",
        started.elapsed()
    );
    let o = of(&outcomes, &hanging);
    assert_eq!(o.status, Status::Unreachable);
    assert_eq!(o.registry.as_deref(), Some("hang.local"));
    assert_eq!(
        o.detail,
        "no answer within the overall deadline of 700 ms from hang.local"
    );
    // The answer that came in before the deadline counts.
    assert_eq!(of(&outcomes, &fine).status, Status::Missing);
}

#[test]
fn the_same_credential_twice_is_one_attempt() {
    let app = reference("registry.local/team/app:v1");
    // A pull secret and the node's config with the same user and password.
    let attempts = attempts_of(
        &app,
        vec![route(
            "registry.local",
            false,
            "team/app",
            &["alice", "alice", "bob"],
        )],
    );
    let users: Vec<String> = attempts.iter().map(|a| user_of(&a.credential)).collect();
    assert_eq!(users, ["alice", "bob"]);
}

#[test]
fn anonymous_is_an_attempt_only_on_a_route_without_credentials() {
    let app = reference("registry.local/team/app:v1");
    let attempts: VecDeque<Attempt> = attempts_of(
        &app,
        vec![
            route("mirror.local", true, "team/app", &[]),
            route("registry.local", false, "team/app", &["alice"]),
        ],
    );
    let users: Vec<(String, String)> = attempts
        .iter()
        .map(|a| (a.endpoint.host.clone(), user_of(&a.credential)))
        .collect();
    assert_eq!(
        users,
        [
            ("mirror.local".to_string(), "anonymous".to_string()),
            ("registry.local".to_string(), "alice".to_string()),
        ]
    );
}

/// `--cache-present`: a second check of a present image asks nothing (any of its
/// attempts answered present a moment ago); a missing image is asked again every time.
#[tokio::test]
async fn a_cached_present_answer_asks_nothing_and_misses_are_asked_again() {
    let registry = Scripted {
        replies: vec![(
            "registry.example.com",
            "anonymous",
            "team/app",
            Reply::Answer(pullcheck_registry::Status::Present),
        )],
        ..Scripted::default()
    };
    let present = reference("registry.example.com/team/app:v1");
    let missing = reference("registry.example.com/team/gone:v1");
    let cache = AnswerCache::new(Duration::from_secs(30), Duration::from_secs(300));
    let permits = Semaphore::new(16);
    let options = QueryOptions {
        permits: &permits,
        deadline: Duration::from_secs(60),
        deadline_start: None,
        platform: None,
        cache: Some(&cache),
    };
    let run = || {
        let resolved = [&present, &missing]
            .into_iter()
            .map(|r| {
                let repository = r.path().to_string();
                let routes = vec![
                    route("mirror.example.com", true, &repository, &[]),
                    route("registry.example.com", false, &repository, &[]),
                ];
                (QueryKey::new(0, r), r, Ok(Resolution::Routes(routes)))
            })
            .collect();
        ask(
            &registry,
            resolved,
            &options,
            Instant::now() + options.deadline,
        )
    };
    let first = run().await;
    assert_eq!(of(&first, &present).status, Status::Present);
    assert!(!of(&first, &present).cached);
    let asked_first = registry.calls().len();
    let second = run().await;
    let calls = registry.calls();
    let asked_second = &calls[asked_first..];
    let hit = of(&second, &present);
    assert_eq!((hit.status, hit.cached), (Status::Present, true));
    assert!(
        hit.detail.contains("(answer cached 0 s ago)"),
        "{}",
        hit.detail
    );
    // Only the missing image was asked again: on the mirror, then the registry.
    assert!(
        asked_second.iter().all(|c| !c.contains("team/app")),
        "{asked_second:?}"
    );
    assert!(
        asked_second
            .iter()
            .any(|c| c.contains("check mirror.example.com as anonymous team/gone:v1")),
        "{asked_second:?}"
    );
    assert_eq!(of(&second, &missing).status, Status::Missing);
    assert!(!of(&second, &missing).cached);
}

#[test]
fn an_egress_refusal_is_blocked_with_reason_egress_denied_and_the_refusal() {
    let refusal = pullcheck_registry::EgressRefusal {
        matched: pullcheck_registry::EgressMatch::Address {
            address: std::net::Ipv4Addr::new(169, 254, 169, 254).into(),
            port: Some(80),
            name: None,
        },
        rule: pullcheck_registry::RefusalRule::NoAllowRule,
    };
    let answer = Answer {
        refusal: Some(refusal.clone()),
        ..Answer::new(
            pullcheck_registry::Status::Refused,
            pullcheck_registry::Reason::EgressDenied,
            pullcheck_registry::Finding::Refused {
                what: pullcheck_registry::RefusedRequest::Request {
                    method: pullcheck_registry::Method::Head,
                    host: "169.254.169.254".into(),
                    redirected_from: None,
                },
            },
        )
    };
    let outcome = outcome_of(answer, "169.254.169.254".into(), None);
    assert_eq!(
        (outcome.status, outcome.reason, outcome.egress),
        (Status::Blocked, Reason::EgressDenied, Some(refusal))
    );
}
