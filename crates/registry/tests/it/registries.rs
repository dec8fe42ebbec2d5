//! The client against real distribution registries on loopback (pullcheck-testkit):
//! anonymous, htpasswd (Basic) and token (Bearer) modes, each with its own registry.
//!
//! The testkit's registries speak plain HTTP, so every endpoint here allows HTTP and
//! every `authorize` also exercises the https → http fallback.

use std::time::Duration;

use pullcheck_registry::{Finding, ManifestRef, PlatformSource, Requester};

use pullcheck_registry::{
    Answer, AuthFailure, AuthorizeError, Client, ClientOptions, Credential, Endpoint, HostRole,
    Missing, NoAnswer, Platform, Presented, Reason, Scheme, Session, Status, Tried,
};
use pullcheck_testkit::{
    Auth, ImageKind, PushedImage, Registry, Repos, TokenAuth, TokenPolicy, User,
};

const APP: &str = "team/app";
const PRIVATE: &str = "team/private";
const NOPE: &str = "team/does-not-exist";
const ZERO_DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn endpoint(registry: &Registry) -> Endpoint {
    Endpoint {
        allow_http: true,
        skip_verify: false,
        ..Endpoint::new(registry.host().to_string())
    }
}

fn client() -> Client {
    Client::new(ClientOptions::default()).expect("client")
}

fn basic(user: &str, password: &str) -> Credential {
    Credential::Basic {
        username: user.into(),
        password: password.into(),
    }
}

fn repos(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Pushes the images every matrix uses: one of each manifest kind in `team/app`, and
/// one image in `team/private`.
async fn push_images(registry: &Registry) -> Vec<PushedImage> {
    let mut pushed = Vec::new();
    for (repo, tag, kind) in [
        (APP, "3.19", ImageKind::OciIndex),
        (APP, "3.18", ImageKind::OciManifest),
        (APP, "docker", ImageKind::DockerManifest),
        (APP, "docker-list", ImageKind::DockerManifestList),
        (PRIVATE, "v1", ImageKind::OciIndex),
    ] {
        pushed.push(registry.push(repo, tag, kind).await.expect("push"));
    }
    pushed
}

#[track_caller]
fn assert_status(answer: &Answer, status: Status, missing: Option<Missing>) {
    assert_eq!(
        (answer.status, answer.missing),
        (status, missing),
        "{answer:?}"
    );
    // The reason agrees with the facts: a missing part has its own reason.
    match (status, missing) {
        (Status::Present, _) => assert_eq!(answer.reason, Reason::Found, "{answer:?}"),
        // An index without the platform, or a single-platform image of another one.
        (_, Some(Missing::Platform)) => assert!(
            matches!(
                answer.reason,
                Reason::PlatformNotFound | Reason::PlatformMismatch
            ),
            "{answer:?}"
        ),
        // A 404 whose repository was not asked about (no tag hints).
        (_, Some(_)) if answer.reason == Reason::ManifestUnknown => {}
        (_, Some(m)) => assert_eq!(answer.reason, Reason::from(m), "{answer:?}"),
        _ => {}
    }
}

/// Present tags of all four kinds, a present digest, tag+digest, a missing tag with a
/// suggestion, a missing digest and a missing repository: the same on every mode once
/// the credential is good.
async fn check_matrix(session: &Session, pushed: &[PushedImage]) {
    for image in pushed.iter().filter(|i| i.repository == APP) {
        let a = session.check(APP, &image.tag).await;
        assert_status(&a, Status::Present, None);
        assert_eq!(a.digest.as_deref(), Some(image.digest.as_str()), "{a:?}");
        assert_eq!(
            a.media_type.as_deref(),
            Some(image.kind.media_type()),
            "{a:?}"
        );
        assert_eq!(a.http_status, Some(200));
    }
    let index = &pushed[0];
    let a = session.check(APP, &index.digest).await;
    assert_status(&a, Status::Present, None);
    assert_eq!(a.digest.as_deref(), Some(index.digest.as_str()));

    // A child of the index, by digest.
    let a = session.check(APP, &index.children[1]).await;
    assert_status(&a, Status::Present, None);

    // tag@digest: only the digest is queried, so a stale tag does not matter.
    let a = session
        .check(APP, &format!("no-such-tag@{}", index.digest))
        .await;
    assert_status(&a, Status::Present, None);

    let a = session.check(APP, "3.91").await;
    assert_status(&a, Status::Missing, Some(Missing::Tag));
    assert_eq!(a.close_tags, ["3.18", "3.19"]);
    assert_eq!(a.http_status, Some(404));

    let a = session.check(APP, "3.199").await;
    assert_eq!(a.close_tags, ["3.19"]);

    let a = session.check(APP, ZERO_DIGEST).await;
    assert_status(&a, Status::Missing, Some(Missing::Digest));
    assert!(
        matches!(
            a.finding,
            Finding::ReferenceUnknown {
                reference: ManifestRef::Digest(_),
                ..
            }
        ),
        "{:?}",
        a.finding
    );

    let a = session.check(NOPE, "v1").await;
    assert_status(&a, Status::Missing, Some(Missing::Repository));
    assert!(
        matches!(a.finding, Finding::RepositoryUnknown { .. }),
        "{:?}",
        a.finding
    );
}

#[tokio::test]
async fn anonymous_registry_matrix() {
    let registry = Registry::anonymous().await.expect("registry");
    let pushed = push_images(&registry).await;
    let client = client();
    let session = authorize(&client, &registry, &Credential::Anonymous, &[APP, NOPE]).await;
    assert!(session.base_url().starts_with("http://"), "{session:?}");
    check_matrix(&session, &pushed).await;

    // An open registry never asks, so credentials, right or wrong, are never sent.
    let session = client
        .authorize(&endpoint(&registry), &basic("who", "wrong"), &repos(&[APP]))
        .await
        .expect("authorize");
    assert_status(&session.check(APP, "3.19").await, Status::Present, None);
}

#[tokio::test]
async fn htpasswd_registry_matrix() {
    let registry = Registry::builder()
        .auth(Auth::Htpasswd(vec![User::new("alice", "s3cret")]))
        .start()
        .await
        .expect("registry");
    let pushed = push_images(&registry).await;
    let client = client();
    let session = authorize(&client, &registry, &basic("alice", "s3cret"), &[APP]).await;
    check_matrix(&session, &pushed).await;

    // Wrong password: denied at authorize, naming host and user, not the password.
    let err: AuthorizeError = client
        .authorize(
            &endpoint(&registry),
            &basic("alice", "wrong-pw"),
            &repos(&[APP]),
        )
        .await
        .expect_err("wrong password");
    assert_eq!(err.status, Status::Denied, "{err:?}");
    assert_eq!(
        *err.failure,
        AuthFailure::CredentialsRejected {
            host: registry.host().to_string(),
            credential: Presented::User("alice".into()),
            status: 401,
        }
    );
    assert!(!format!("{err:?}").contains("wrong-pw"), "{err:?}");

    // Anonymous: authorize succeeds, each image needs credentials.
    let session = client
        .authorize(&endpoint(&registry), &Credential::Anonymous, &repos(&[APP]))
        .await
        .expect("authorize");
    let a = session.check(APP, "3.19").await;
    assert_status(&a, Status::NoAccess, None);
    assert_eq!(a.reason, Reason::CredentialsRequired);
    assert_eq!(
        a.finding,
        Finding::Unauthorized {
            host: registry.host().to_string(),
            requester: Requester::NoCredentials
        }
    );
    assert_eq!(a.http_status, Some(401));
    // A missing image answers the same: never Missing without access.
    assert_status(&session.check(NOPE, "v1").await, Status::NoAccess, None);
}

fn token_registry_policy() -> TokenPolicy {
    TokenPolicy::new(vec![
        User::new("alice", "s3cret"),
        User::new("bob", "hunter2").pulling(Repos::only([APP])),
    ])
}

/// A token-auth registry (`token_registry_policy`) holding the matrix images.
async fn token_registry() -> Registry {
    let registry = Registry::builder()
        .auth(Auth::Token(token_registry_policy()))
        .start()
        .await
        .expect("registry");
    push_images(&registry).await;
    registry
}

/// An anonymous registry holding the matrix images.
async fn anonymous_registry() -> Registry {
    let registry = Registry::anonymous().await.expect("registry");
    push_images(&registry).await;
    registry
}

/// `client.authorize` on the registry's plain-HTTP endpoint for `names`, which must
/// succeed.
async fn authorize(
    client: &Client,
    registry: &Registry,
    credential: &Credential,
    names: &[&str],
) -> Session {
    client
        .authorize(&endpoint(registry), credential, &repos(names))
        .await
        .expect("authorize")
}

#[tokio::test]
async fn token_registry_matrix() {
    let registry = Registry::builder()
        .auth(Auth::Token(token_registry_policy()))
        .start()
        .await
        .expect("registry");
    let pushed = push_images(&registry).await;
    let tokens = registry.token_server().expect("token server");
    let client = client();

    let session = authorize(&client, &registry, &basic("alice", "s3cret"), &[APP, NOPE]).await;
    check_matrix(&session, &pushed).await;
    // Everything above used the one token from authorize.
    assert_eq!(tokens.requests().len(), 1, "{:?}", tokens.requests());

    // Wrong password: the token server rejects it.
    tokens.clear_requests();
    let err = client
        .authorize(
            &endpoint(&registry),
            &basic("alice", "wrong-pw"),
            &repos(&[APP]),
        )
        .await
        .expect_err("wrong password");
    assert_eq!(err.status, Status::Denied, "{err:?}");
    let AuthFailure::TokenRejected {
        registry: failed_registry,
        credential,
        status,
        ..
    } = &*err.failure
    else {
        panic!("{err:?}");
    };
    assert_eq!(
        (failed_registry.as_str(), credential, *status),
        (registry.host(), &Presented::User("alice".into()), 401)
    );
    assert_eq!(err.failure.failed_host().role, HostRole::TokenServer);
    assert!(!format!("{err:?}").contains("wrong-pw"), "{err:?}");
    assert_eq!(
        tokens.requests()[0].auth,
        TokenAuth::Rejected {
            username: "alice".into()
        }
    );

    // Anonymous: an empty grant, so every image answers 401.
    let session = client
        .authorize(&endpoint(&registry), &Credential::Anonymous, &repos(&[APP]))
        .await
        .expect("authorize");
    let a = session.check(APP, "3.19").await;
    assert_status(&a, Status::NoAccess, None);
    assert_eq!(a.reason, Reason::UnauthorizedAnonymous);
    assert!(
        matches!(
            a.finding,
            Finding::Unauthorized {
                requester: Requester::Anonymous,
                ..
            }
        ),
        "{:?}",
        a.finding
    );

    // A user without pull on a repository: 401 too, with these credentials.
    let session = authorize(
        &client,
        &registry,
        &basic("bob", "hunter2"),
        &[APP, PRIVATE],
    )
    .await;
    assert_status(&session.check(APP, "3.19").await, Status::Present, None);
    let a = session.check(PRIVATE, "v1").await;
    assert_status(&a, Status::NoAccess, None);
    assert!(
        matches!(
            &a.finding,
            Finding::Unauthorized { requester: Requester::Credential(who), .. } if who == "user \"bob\""
        ),
        "{:?}",
        a.finding
    );
}

#[tokio::test]
async fn one_token_request_carries_every_scope() {
    let registry = token_registry().await;
    let tokens = registry.token_server().expect("token server");
    let client = client();
    let session = authorize(
        &client,
        &registry,
        &basic("alice", "s3cret"),
        &[PRIVATE, APP, NOPE, APP],
    )
    .await;
    let seen = tokens.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].service.as_deref(), Some(tokens.service()));
    assert_eq!(
        seen[0].scopes,
        vec![
            "repository:team/app:pull",
            "repository:team/does-not-exist:pull",
            "repository:team/private:pull",
        ]
    );
    assert_eq!(seen[0].auth, TokenAuth::User("alice".into()));
    assert_eq!(client.token_request_count(), 1);

    // Many concurrent checks on clones of the session share that token.
    let mut tasks = Vec::new();
    for i in 0..40 {
        let session = session.clone();
        tasks.push(tokio::spawn(async move {
            let (repo, tag) = if i % 2 == 0 {
                (APP, "3.19")
            } else {
                (PRIVATE, "v1")
            };
            session.check(repo, tag).await
        }));
    }
    for task in tasks {
        assert_status(&task.await.expect("task"), Status::Present, None);
    }
    assert_eq!(tokens.requests().len(), 1);

    // A repository that was not authorized costs one token of its own, then is cached.
    registry
        .push("other/repo", "v1", ImageKind::DockerManifest)
        .await
        .expect("push");
    assert_status(
        &session.check("other/repo", "v1").await,
        Status::Present,
        None,
    );
    assert_status(
        &session.check("other/repo", "v1").await,
        Status::Present,
        None,
    );
    let seen = tokens.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].scopes, vec!["repository:other/repo:pull"]);
}

/// More repositories than one token request takes: one token per batch of 100
/// scopes, all fetched by `authorize`, and each `HEAD` sent with its batch's token (a
/// token without the repository's scope would make the registry answer 401, which
/// would be no access, not missing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_repositories_are_split_into_token_batches() {
    let registry = token_registry().await;
    let tokens = registry.token_server().expect("token server");
    let client = client();
    // Names that are prefixes of others (`r-1`, `r-10`, `r-100`): sorted as
    // repositories, their scope strings are not in order.
    let mut names: Vec<String> = (0..230).map(|i| format!("batch/r-{i}")).collect();
    names.push(APP.to_string());
    let session = client
        .authorize(&endpoint(&registry), &basic("alice", "s3cret"), &names)
        .await
        .expect("authorize");
    let mut seen = tokens.requests();
    assert_eq!(seen.len(), 3, "{} token requests", seen.len());
    seen.sort_by(|a, b| a.scopes[0].cmp(&b.scopes[0]));
    let sizes: Vec<usize> = seen.iter().map(|r| r.scopes.len()).collect();
    assert_eq!(sizes, [100, 100, 31]);
    // In repository order, each repository in one batch.
    let mut sorted = names.clone();
    sorted.sort();
    let asked: Vec<String> = seen.iter().flat_map(|r| r.scopes.clone()).collect();
    let want: Vec<String> = sorted
        .iter()
        .map(|n| format!("repository:{n}:pull"))
        .collect();
    assert_eq!(asked, want);
    assert_eq!(seen[2].scopes[30], "repository:team/app:pull");
    assert!(
        seen.iter()
            .all(|r| r.auth == TokenAuth::User("alice".into()))
    );

    let mut tasks = Vec::new();
    for name in names.iter().cloned() {
        let session = session.clone();
        tasks.push(tokio::spawn(async move {
            let a = session.check(&name, "3.19").await;
            (name, a)
        }));
    }
    for task in tasks {
        let (name, a) = task.await.expect("task");
        let want = if name == APP {
            Status::Present
        } else {
            Status::Missing
        };
        assert_eq!(a.status, want, "{name}: {:?}", a.finding);
    }
    assert_eq!(tokens.requests().len(), 3, "no token asked again");
    assert_eq!(client.token_request_count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_token_is_refreshed_once_for_concurrent_checks() {
    let policy = token_registry_policy().expires_in(Duration::from_secs(1));
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .expect("registry");
    push_images(&registry).await;
    let tokens = registry.token_server().expect("token server");
    let session = authorize(&client(), &registry, &basic("alice", "s3cret"), &[APP]).await;
    assert_status(&session.check(APP, "3.19").await, Status::Present, None);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let checks: Vec<_> = (0..10)
        .map(|_| {
            let s = session.clone();
            tokio::spawn(async move { s.check(APP, "3.19").await })
        })
        .collect();
    for c in checks {
        assert_status(&c.await.expect("task"), Status::Present, None);
    }
    assert_eq!(tokens.requests().len(), 2, "{:?}", tokens.requests());
}

#[tokio::test]
async fn identity_token_posts_oauth_then_falls_back_to_get() {
    let registry = Registry::builder()
        .auth(Auth::Token(token_registry_policy()))
        .start()
        .await
        .expect("registry");
    let tokens = registry.token_server().expect("token server");
    let err = client()
        .authorize(
            &endpoint(&registry),
            &Credential::IdentityToken("refresh-secret".into()),
            &repos(&[APP]),
        )
        .await
        .expect_err("the harness accepts no identity token");
    assert_eq!(err.status, Status::Denied, "{err:?}");
    assert!(matches!(
        &*err.failure,
        AuthFailure::TokenRejected {
            credential: Presented::IdentityToken,
            ..
        }
    ));
    assert!(!format!("{err:?}").contains("refresh-secret"));
    let seen = tokens.requests();
    let methods: Vec<_> = seen.iter().map(|r| (r.method.as_str(), r.status)).collect();
    assert_eq!(methods, vec![("POST", 404), ("GET", 401)], "{seen:?}");
    assert_eq!(seen[1].scopes, vec!["repository:team/app:pull"]);
}

#[tokio::test]
async fn registry_token_is_used_as_the_bearer() {
    let registry = token_registry().await;
    let tokens = registry.token_server().expect("token server");
    // Obtain a token by hand, as a credential helper would have.
    let url = format!(
        "{}?service={}&scope=repository:{APP}:pull",
        tokens.realm(),
        tokens.service()
    );
    let body = reqwest::Client::new()
        .get(url)
        .basic_auth("alice", Some("s3cret"))
        .send()
        .await
        .expect("token")
        .bytes()
        .await
        .expect("body");
    let reply: serde_json::Value = serde_json::from_slice(&body).expect("json");
    let token = reply["token"].as_str().expect("token field").to_string();
    tokens.clear_requests();
    let client = client();
    let session = authorize(
        &client,
        &registry,
        &Credential::RegistryToken(token.into()),
        &[APP],
    )
    .await;
    assert_status(&session.check(APP, "3.19").await, Status::Present, None);
    assert!(tokens.requests().is_empty(), "{:?}", tokens.requests());
    assert!(!format!("{session:?}").contains(reply["token"].as_str().unwrap()));
}

#[tokio::test]
async fn head_only_and_tag_list_only_after_a_404() {
    let registry = anonymous_registry().await;
    let session = client()
        .authorize(&endpoint(&registry), &Credential::Anonymous, &repos(&[APP]))
        .await
        .expect("authorize");
    registry.clear_requests().await.expect("clear");
    session.check(APP, "3.19").await;
    session.check(APP, "3.91").await;
    let served: Vec<String> = registry
        .requests()
        .await
        .expect("requests")
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(
        served,
        vec![
            "HEAD /v2/team/app/manifests/3.19 200",
            "HEAD /v2/team/app/manifests/3.91 404",
            "GET /v2/team/app/tags/list?n=1000 200",
        ]
    );

    // More missing tags of the same repository, at once: the tag list is asked once
    // per repository and each answer still names its own tag and the close ones.
    registry.clear_requests().await.expect("clear");
    let checks = ["3.90", "3.17", "docker-lsit", "nope"].map(|tag| session.check(APP, tag));
    let answers = futures::future::join_all(checks).await;
    for (answer, tag) in answers.iter().zip(["3.90", "3.17", "docker-lsit", "nope"]) {
        assert_status(answer, Status::Missing, Some(Missing::Tag));
        assert!(
            matches!(
                &answer.finding,
                Finding::ReferenceUnknown { reference: ManifestRef::Tag(t), .. } if t == tag
            ),
            "{:?}",
            answer.finding
        );
    }
    assert_eq!(answers[2].close_tags, ["docker-list"]);
    session.check(NOPE, "v1").await;
    session.check(NOPE, "v2").await;
    let lists: Vec<String> = registry
        .requests()
        .await
        .expect("requests")
        .iter()
        .filter(|r| r.path.contains("/tags/list"))
        .map(|r| r.to_string())
        .collect();
    assert_eq!(
        lists,
        vec!["GET /v2/team/does-not-exist/tags/list?n=1000 404",],
        "team/app's list was fetched before the clear; each repository's once"
    );
}

#[tokio::test]
async fn without_tag_hints_a_404_is_not_refined() {
    let registry = anonymous_registry().await;
    let client = Client::new(ClientOptions {
        tag_hints: false,
        ..ClientOptions::default()
    })
    .expect("client");
    let session = client
        .authorize(&endpoint(&registry), &Credential::Anonymous, &repos(&[APP]))
        .await
        .expect("authorize");
    registry.clear_requests().await.expect("clear");
    // A missing repository is not called `tag_not_found`: whether it exists was not
    // asked, so the reason says only that the manifest is unknown.
    let a = session.check(NOPE, "v1").await;
    assert_status(&a, Status::Missing, Some(Missing::Tag));
    assert_eq!(a.reason, Reason::ManifestUnknown);
    let a = session.check(APP, ZERO_DIGEST).await;
    assert_status(&a, Status::Missing, Some(Missing::Digest));
    assert_eq!(a.reason, Reason::ManifestUnknown);
    let served = registry.requests().await.expect("requests");
    assert!(served.iter().all(|r| r.method == "HEAD"), "{served:?}");
}

#[tokio::test]
async fn plain_http_registry_without_allow_http_is_a_tls_failure() {
    let registry = Registry::anonymous().await.expect("registry");
    let err = client()
        .authorize(
            &Endpoint {
                allow_http: false,
                skip_verify: false,
                ..Endpoint::new(registry.host().to_string())
            },
            &Credential::Anonymous,
            &repos(&[APP]),
        )
        .await
        .expect_err("no TLS there");
    assert_eq!(
        (err.status, err.reason),
        (Status::Unreachable, Reason::TlsFailed)
    );
    let AuthFailure::Unreachable {
        host,
        tried: Tried::Over {
            scheme: Scheme::Https,
            failure,
        },
    } = &*err.failure
    else {
        panic!("{err:?}");
    };
    assert_eq!(
        (host.as_str(), failure.kind),
        (registry.host(), Reason::TlsFailed)
    );
}

#[tokio::test]
async fn plain_http_realm_is_allowed_for_an_insecure_endpoint() {
    // The harness realm is `http://127.0.0.1:…/token`. An endpoint with `allow_http`
    // may use it; the refusal for a secure endpoint is covered by `auth`'s unit tests,
    // since the harness has no TLS registry to reach it through.
    let registry = token_registry().await;
    let session = authorize(&client(), &registry, &basic("alice", "s3cret"), &[APP]).await;
    assert_status(&session.check(APP, "3.19").await, Status::Present, None);
}

#[tokio::test]
async fn connection_refused_is_unreachable_with_the_reason() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let err = client()
        .authorize(
            &Endpoint {
                allow_http: true,
                skip_verify: false,
                ..Endpoint::new(format!("127.0.0.1:{port}"))
            },
            &Credential::Anonymous,
            &repos(&[APP]),
        )
        .await
        .expect_err("nothing listens");
    assert_eq!(err.status, Status::Unreachable);
    // Refused connections are retried: three attempts, equal answers said once.
    let refused = NoAnswer {
        kind: Reason::ConnectionRefused,
        why: "connection refused".into(),
    };
    let tried = Tried::Both {
        https: refused.clone(),
        http: refused,
    };
    assert_eq!(
        *err.failure,
        AuthFailure::Unreachable {
            host: format!("127.0.0.1:{port}"),
            tried: tried.clone(),
        }
    );
    let each = pullcheck_registry::FailedAttempt::FirstNoAnswer(tried);
    assert_eq!(err.history.failed, vec![each; 3]);
    assert!(err.history.gave_up);
}

#[tokio::test]
async fn request_counter_counts_every_request() {
    let registry = anonymous_registry().await;
    let client = client();
    let session = client
        .authorize(&endpoint(&registry), &Credential::Anonymous, &repos(&[APP]))
        .await
        .expect("authorize");
    // https attempt + http ping.
    assert_eq!(client.request_count(), 2);
    session.check(APP, "3.19").await;
    session.check(APP, "nope").await;
    assert_eq!(client.request_count(), 5);
    assert_eq!(client.token_request_count(), 0);
}

#[tokio::test]
async fn tag_list_is_never_asked_after_a_401() {
    let registry = token_registry().await;
    let session = authorize(
        &client(),
        &registry,
        &basic("bob", "hunter2"),
        &[APP, PRIVATE],
    )
    .await;
    registry.clear_requests().await.expect("clear");
    assert_status(&session.check(PRIVATE, "v1").await, Status::NoAccess, None);
    assert_status(
        &session.check(PRIVATE, "nope").await,
        Status::NoAccess,
        None,
    );
    let served = registry.requests().await.expect("requests");
    assert!(
        served.iter().all(|r| !r.path.contains("/tags/list")),
        "{served:?}"
    );
}

#[tokio::test]
async fn tokens_are_cached_per_registry_credential_and_scope_set() {
    let registry = token_registry().await;
    let tokens = registry.token_server().expect("token server");
    let client = client();
    let alice = basic("alice", "s3cret");
    for _ in 0..3 {
        let session = client
            .authorize(&endpoint(&registry), &alice, &repos(&[APP, PRIVATE]))
            .await
            .expect("authorize");
        assert_status(&session.check(APP, "3.19").await, Status::Present, None);
    }
    // Three sessions, one token: same registry, credential and scopes.
    assert_eq!(tokens.requests().len(), 1, "{:?}", tokens.requests());

    // Another scope set, or another credential, is another token.
    client
        .authorize(&endpoint(&registry), &alice, &repos(&[APP]))
        .await
        .expect("authorize");
    authorize(
        &client,
        &registry,
        &basic("bob", "hunter2"),
        &[APP, PRIVATE],
    )
    .await;
    let seen = tokens.requests();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[1].scopes, vec!["repository:team/app:pull"]);
    assert_eq!(seen[2].auth, TokenAuth::User("bob".into()));
}

#[tokio::test]
async fn insufficient_scope_reauthenticates_once_then_is_no_access() {
    let registry = token_registry().await;
    let tokens = registry.token_server().expect("token server");
    // bob may pull team/app only; the shared token grants nothing on team/private, and
    // distribution answers 401 with error="insufficient_scope".
    let session = authorize(
        &client(),
        &registry,
        &basic("bob", "hunter2"),
        &[APP, PRIVATE],
    )
    .await;
    let a = session.check(PRIVATE, "v1").await;
    assert_status(&a, Status::NoAccess, None);
    assert_eq!((a.http_status, a.attempts), (Some(401), 1));
    let seen = tokens.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        seen[1].scopes,
        vec!["repository:team/private:pull"],
        "{seen:?}"
    );
    assert!(seen[1].granted.is_empty(), "{seen:?}");
    // Once per repository: the second check asks no token.
    assert_status(&session.check(PRIVATE, "v1").await, Status::NoAccess, None);
    assert_status(&session.check(APP, "3.19").await, Status::Present, None);
    assert_eq!(tokens.requests().len(), 2);
}

#[tokio::test]
async fn platforms_of_indexes_and_manifest_lists() {
    let registry = Registry::anonymous().await.expect("registry");
    let pushed = push_images(&registry).await;
    let with = |platform: &str| {
        Client::new(ClientOptions {
            platform: Some(Platform::parse(platform).expect("platform")),
            ..ClientOptions::default()
        })
        .expect("client")
    };
    let session = with("linux/arm64")
        .authorize(&endpoint(&registry), &Credential::Anonymous, &repos(&[APP]))
        .await
        .expect("authorize");
    for tag in ["3.19", "docker-list"] {
        let a = session.check(APP, tag).await;
        assert_status(&a, Status::Present, None);
        assert!(
            matches!(
                &a.finding,
                Finding::Served { platform: Some((_, have, PlatformSource::Index)), .. }
                    if have.to_string() == "linux/arm64/v8"
            ),
            "{:?}",
            a.finding
        );
    }
    // The index, by digest.
    let index = &pushed[0];
    assert_status(
        &session.check(APP, &index.digest).await,
        Status::Present,
        None,
    );

    let session = with("linux/s390x")
        .authorize(&endpoint(&registry), &Credential::Anonymous, &repos(&[APP]))
        .await
        .expect("authorize");
    registry.clear_requests().await.expect("clear");
    for (tag, kind) in [
        ("3.19", ImageKind::OciIndex),
        ("docker-list", ImageKind::DockerManifestList),
    ] {
        let a = session.check(APP, tag).await;
        assert_status(&a, Status::Missing, Some(Missing::Platform));
        assert_eq!(a.reason, Reason::PlatformNotFound);
        // The platforms served, as data.
        let served: Vec<String> = a.platforms.iter().map(ToString::to_string).collect();
        assert_eq!(served, ["linux/amd64", "linux/arm64/v8"]);
        assert_eq!(
            a.finding,
            Finding::PlatformNotListed {
                host: registry.host().to_string(),
                manifest: format!("{APP}:{tag}"),
                wanted: Platform::parse("linux/s390x").unwrap()
            }
        );
        assert_eq!(a.media_type.as_deref(), Some(kind.media_type()));
    }
    // A single manifest names its platform in its config blob: one GET of the manifest,
    // one of the config (linux/amd64).
    let single = session.check(APP, "docker").await;
    assert_status(&single, Status::Missing, Some(Missing::Platform));
    // The runtimes pull it anyway (the platform is checked only in an index).
    assert_eq!(single.reason, Reason::PlatformMismatch);
    // The platform it is built for, as data.
    let built_for: Vec<String> = single.platforms.iter().map(ToString::to_string).collect();
    assert_eq!(built_for, ["linux/amd64"]);
    assert_eq!(
        single.finding,
        Finding::PlatformMismatch {
            host: registry.host().to_string(),
            manifest: format!("{APP}:docker"),
            wanted: Platform::parse("linux/s390x").unwrap()
        }
    );
    let served: Vec<String> = registry
        .requests()
        .await
        .expect("requests")
        .iter()
        .map(|r| r.to_string())
        .collect();
    let oci_index = &pushed[0].digest;
    let docker_list = &pushed[3].digest;
    assert_eq!(
        served,
        vec![
            "HEAD /v2/team/app/manifests/3.19 200".to_string(),
            format!("GET /v2/team/app/manifests/{oci_index} 200"),
            "HEAD /v2/team/app/manifests/docker-list 200".to_string(),
            format!("GET /v2/team/app/manifests/{docker_list} 200"),
            "HEAD /v2/team/app/manifests/docker 200".to_string(),
            format!("GET /v2/team/app/manifests/{} 200", pushed[2].digest),
            format!(
                "GET /v2/team/app/blobs/{} 200",
                config_digest(&registry, &pushed[2]).await
            ),
        ]
    );
}

/// The config blob's digest of a single-platform image, read from its manifest.
async fn config_digest(registry: &Registry, image: &PushedImage) -> String {
    let url = format!(
        "{}/v2/{}/manifests/{}",
        registry.url(),
        image.repository,
        image.digest
    );
    let body = reqwest::Client::new()
        .get(url)
        .header("Accept", image.kind.media_type())
        .send()
        .await
        .expect("manifest GET")
        .text()
        .await
        .expect("manifest body");
    let manifest: serde_json::Value = serde_json::from_str(&body).expect("manifest JSON");
    manifest["config"]["digest"]
        .as_str()
        .expect("config digest")
        .to_string()
}

/// An anonymous session on `registry` whose client asks for `platform`.
async fn session_for(registry: &Registry, platform: &str) -> Session {
    Client::new(ClientOptions {
        platform: Some(Platform::parse(platform).expect("platform")),
        ..ClientOptions::default()
    })
    .expect("client")
    .authorize(&endpoint(registry), &Credential::Anonymous, &repos(&[APP]))
    .await
    .expect("authorize")
}

/// `--platform` on single-platform images: the config blob's `os`, `architecture` and
/// `variant` decide (as containerd matches them), for OCI and Docker manifests, by tag
/// and by digest; an index is still checked by its list alone.
#[tokio::test]
async fn platforms_of_single_platform_images() {
    let registry = Registry::anonymous().await.expect("registry");
    let amd64 = registry
        .push(APP, "amd64", ImageKind::OciManifest)
        .await
        .expect("push");
    let docker_amd64 = registry
        .push(APP, "docker-amd64", ImageKind::DockerManifest)
        .await
        .expect("push");
    let armv7 = registry
        .push_platform(APP, "armv7", ImageKind::OciManifest, "linux/arm/v7")
        .await
        .expect("push");
    let arm64 = registry
        .push_platform(APP, "arm64", ImageKind::DockerManifest, "linux/arm64/v8")
        .await
        .expect("push");
    let host = registry.host();

    let arm64_session = session_for(&registry, "linux/arm64").await;
    for (image, have) in [
        (&amd64, "linux/amd64"),
        (&docker_amd64, "linux/amd64"),
        (&armv7, "linux/arm/v7"),
    ] {
        for reference in [image.tag.clone(), image.digest.clone()] {
            let a = arm64_session.check(APP, &reference).await;
            assert_status(&a, Status::Missing, Some(Missing::Platform));
            let what = if reference.starts_with("sha256:") {
                format!("{APP}@{reference}")
            } else {
                format!("{APP}:{reference}")
            };
            assert_eq!(
                a.finding,
                Finding::PlatformMismatch {
                    host: host.to_string(),
                    manifest: what,
                    wanted: Platform::parse("linux/arm64").unwrap()
                }
            );
            let built_for: Vec<String> = a.platforms.iter().map(ToString::to_string).collect();
            assert_eq!(built_for, [have]);
            assert_eq!(a.digest.as_deref(), Some(image.digest.as_str()));
            assert_eq!(a.media_type.as_deref(), Some(image.kind.media_type()));
        }
    }
    // arm64 without a variant is arm64/v8.
    let a = arm64_session.check(APP, "arm64").await;
    assert_status(&a, Status::Present, None);
    assert!(
        matches!(
            &a.finding,
            Finding::Served { platform: Some((want, have, PlatformSource::Config)), .. }
                if want.to_string() == "linux/arm64" && have.to_string() == "linux/arm64/v8"
        ),
        "{:?}",
        a.finding
    );

    // A variant asked for must be the config's.
    let v7 = session_for(&registry, "linux/arm/v7").await;
    assert_status(&v7.check(APP, "armv7").await, Status::Present, None);
    let v6 = session_for(&registry, "linux/arm/v6").await;
    let a = v6.check(APP, "armv7").await;
    assert_status(&a, Status::Missing, Some(Missing::Platform));
    let built_for: Vec<String> = a.platforms.iter().map(ToString::to_string).collect();
    assert_eq!(built_for, ["linux/arm/v7"], "{:?}", a.finding);
    // OS counts too.
    let windows = session_for(&registry, "windows/amd64").await;
    assert_status(
        &windows.check(APP, "amd64").await,
        Status::Missing,
        Some(Missing::Platform),
    );
    let amd = session_for(&registry, "linux/amd64").await;
    assert_status(&amd.check(APP, "amd64").await, Status::Present, None);

    // Without a platform: HEAD only.
    let plain = client()
        .authorize(&endpoint(&registry), &Credential::Anonymous, &repos(&[APP]))
        .await
        .expect("authorize");
    registry.clear_requests().await.expect("clear");
    assert_status(&plain.check(APP, "amd64").await, Status::Present, None);
    let served = registry.requests().await.expect("requests");
    assert_eq!(served.len(), 1, "{served:?}");
    assert_eq!(
        arm64_session.check(APP, &arm64.digest).await.status,
        Status::Present
    );
}
