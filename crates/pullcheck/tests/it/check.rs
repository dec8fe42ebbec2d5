//! End-to-end: `Checker::check` against real distribution registries on loopback, in the
//! three auth modes (anonymous, htpasswd Basic, token), with images of all four manifest
//! kinds built and pushed by the harness.

use std::path::{Path, PathBuf};

use crate::util::temp_dir;
use pullcheck::credentials::{NodeCredentials, NodeEnv, NodeOptions};
use pullcheck::input::parse_image_arg;
use pullcheck::report::{MissingPart, Reason, Report, Status};
use pullcheck::resolve::Resolver;
use pullcheck::{CheckOptions, Checker, CheckerOptions};
use pullcheck_testkit::{
    Auth, ClosedPort, ImageKind, PushedImage, Registry, Repos, TokenPolicy, User,
};

const KINDS: [ImageKind; 4] = [
    ImageKind::OciManifest,
    ImageKind::OciIndex,
    ImageKind::DockerManifest,
    ImageKind::DockerManifestList,
];

async fn push_kinds(registry: &Registry) -> Vec<PushedImage> {
    let mut pushed = Vec::new();
    for (i, kind) in KINDS.into_iter().enumerate() {
        pushed.push(
            registry
                .push("team/app", &format!("v{i}"), kind)
                .await
                .expect("push"),
        );
    }
    pushed.push(
        registry
            .push("private/secret-app", "1.0", ImageKind::OciManifest)
            .await
            .expect("push"),
    );
    pushed
}

/// A Docker config.json with one `auths` entry for `host`.
fn docker_config(dir: &Path, host: &str, user: &str, password: &str) -> PathBuf {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let path = dir.join("config.json");
    std::fs::write(
        &path,
        format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
    path
}

/// The node's credentials from one Docker config file, ignoring the environment.
fn node(config: Option<&Path>) -> NodeCredentials {
    match config {
        Some(path) => NodeCredentials::load(&NodeOptions {
            docker_config: Some(path.to_path_buf()),
            env: NodeEnv::default(),
            ..NodeOptions::default()
        })
        .unwrap(),
        None => NodeCredentials::empty(),
    }
}

async fn check(images: &[String], config: Option<&Path>) -> Report {
    let checker =
        Checker::new(CheckerOptions::default(), Resolver::default(), node(config)).unwrap();
    let uses = images.iter().map(|i| parse_image_arg(i).unwrap()).collect();
    checker.check(uses, &CheckOptions::default()).await
}

fn status_of<'a>(report: &'a Report, reference: &str) -> &'a pullcheck::report::ImageReport {
    report
        .images
        .iter()
        .find(|i| i.reference == reference)
        .unwrap_or_else(|| panic!("{reference} not in report:\n{}", report.to_json()))
}

/// The matrix every mode must pass, with the credentials the mode needs.
async fn matrix(registry: &Registry, config: Option<&Path>) -> Report {
    let pushed = push_kinds(registry).await;
    let host = registry.host();
    let mut images: Vec<String> = pushed[..4].iter().map(PushedImage::reference).collect();
    images.push(pushed[1].digest_reference());
    let tag_and_digest = format!("{host}/team/app:v0@{}", pushed[1].digest);
    images.push(tag_and_digest.clone());
    images.push(format!("{host}/team/app:v9"));
    images.push(format!("{host}/team/nope:v1"));
    images.push(format!("{host}/team/app@sha256:{}", "0".repeat(64)));
    images.push(format!("{host}/Team/App:v1"));
    let report = check(&images, config).await;

    for p in &pushed[..4] {
        let i = status_of(&report, &p.reference());
        assert_eq!(i.status, Status::Present, "{}: {}", p.reference(), i.detail);
        assert_eq!(i.reason, Reason::Found);
        assert_eq!(i.digest.as_deref(), Some(p.digest.as_str()), "{:?}", p.kind);
        assert_eq!(i.registry.as_deref(), Some(host));
    }
    let by_digest = status_of(&report, &pushed[1].digest_reference());
    assert_eq!(by_digest.status, Status::Present, "{}", by_digest.detail);
    // With both a tag and a digest, the digest is what is pulled (and checked).
    let both = status_of(&report, &tag_and_digest);
    assert_eq!(both.status, Status::Present, "{}", both.detail);
    assert_eq!(both.digest.as_deref(), Some(pushed[1].digest.as_str()));

    let typo = status_of(&report, &format!("{host}/team/app:v9"));
    assert_eq!(typo.status, Status::Missing, "{}", typo.detail);
    assert_eq!(typo.missing, Some(MissingPart::Tag));
    assert_eq!(typo.reason, Reason::TagNotFound);
    assert!(
        !typo.close_tags.is_empty() && typo.close_tags.iter().all(|t| t.starts_with('v')),
        "{:?}",
        typo.close_tags
    );
    assert!(
        typo.detail.contains("v0") || typo.detail.contains("v1"),
        "{}",
        typo.detail
    );
    let repo = status_of(&report, &format!("{host}/team/nope:v1"));
    assert_eq!(repo.status, Status::Missing, "{}", repo.detail);
    assert_eq!(repo.missing, Some(MissingPart::Repository));
    assert_eq!(repo.reason, Reason::RepositoryNotFound);
    let digest = status_of(
        &report,
        &format!("{host}/team/app@sha256:{}", "0".repeat(64)),
    );
    assert_eq!(digest.status, Status::Missing, "{}", digest.detail);
    assert_eq!(digest.missing, Some(MissingPart::Digest));
    assert_eq!(digest.reason, Reason::DigestNotFound);
    let invalid = status_of(&report, &format!("{host}/Team/App:v1"));
    assert_eq!(invalid.status, Status::Invalid);
    assert_eq!(invalid.error.as_ref().map(|e| e.kind), Some("uppercase"));
    assert_eq!(invalid.reason, Reason::InvalidReference);
    assert_eq!(report.summary.total, images.len());
    assert_eq!(report.summary.present, 6);
    assert_eq!(report.summary.failed, 4);
    assert_eq!(report.exit_code(), 1);
    report
}

#[tokio::test]
async fn anonymous_registry() {
    let registry = Registry::anonymous().await.unwrap();
    let report = matrix(&registry, None).await;
    assert!(report.images.iter().all(|i| i.credential.is_none()));
}

#[tokio::test]
async fn htpasswd_registry() {
    let registry = Registry::builder()
        .auth(Auth::Htpasswd(vec![User::new("alice", "wonderland-pw")]))
        .start()
        .await
        .unwrap();
    let dir = temp_dir("htpasswd");
    let good = docker_config(&dir, registry.host(), "alice", "wonderland-pw");
    let report = matrix(&registry, Some(&good)).await;
    let present = report
        .images
        .iter()
        .find(|i| i.status == Status::Present)
        .unwrap();
    let source = present.credential.as_ref().expect("credential reported");
    assert_eq!(source.key, registry.host());
    assert_eq!(source.username.as_deref(), Some("alice"));
    assert!(!report.to_json().contains("wonderland-pw"));

    let image = format!("{}/team/app:v0", registry.host());
    // No credentials: the registry needs them.
    let anonymous = check(std::slice::from_ref(&image), None).await;
    assert_eq!(
        anonymous.images[0].status,
        Status::NoAccess,
        "{}",
        anonymous.images[0].detail
    );
    // Wrong password.
    let bad_dir = temp_dir("htpasswd-bad");
    let bad = docker_config(&bad_dir, registry.host(), "alice", "wrong-pw");
    let wrong = check(std::slice::from_ref(&image), Some(&bad)).await;
    assert!(
        matches!(wrong.images[0].status, Status::Denied | Status::NoAccess),
        "{:?} {}",
        wrong.images[0].status,
        wrong.images[0].detail
    );
    assert!(!wrong.to_json().contains("wrong-pw"));
}

#[tokio::test]
async fn token_registry() {
    let policy = TokenPolicy::new(vec![
        User::new("alice", "token-pw-alice").pulling(Repos::All),
        User::new("bob", "token-pw-bob").pulling(Repos::only(["team/app"])),
    ])
    .anonymous(Repos::only(["team/app"]));
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .unwrap();
    let dir = temp_dir("token");
    let alice = docker_config(&dir, registry.host(), "alice", "token-pw-alice");
    let report = matrix(&registry, Some(&alice)).await;
    let tokens = registry.token_server().unwrap().requests();
    // One token for every repository of the registry: every token request asked for
    // the same scope set, holding both repositories. (A transport-level retry of that
    // one request, e.g. after a pooled connection was closed under load, is allowed.)
    assert!(!tokens.is_empty() && tokens.len() <= 2, "{tokens:?}");
    assert!(
        tokens.iter().all(|t| t.scopes == tokens[0].scopes),
        "{tokens:?}"
    );
    assert!(
        tokens[0].scopes.iter().any(|s| s.contains("team/app"))
            && tokens[0].scopes.iter().any(|s| s.contains("team/nope")),
        "{tokens:?}"
    );
    assert!(!report.to_json().contains("token-pw-alice"));

    // Anonymous can pull team/app but not private/secret-app: missing or no access.
    let private = format!("{}/private/secret-app:1.0", registry.host());
    let public = format!("{}/team/app:v0", registry.host());
    let anonymous = check(&[private.clone(), public.clone()], None).await;
    assert_eq!(status_of(&anonymous, &public).status, Status::Present);
    let p = status_of(&anonymous, &private);
    assert_eq!(p.status, Status::NoAccess, "{}", p.detail);

    // Bob is limited to team/app, so the private repository is no_access for him too.
    let bob_dir = temp_dir("token-bob");
    let bob = docker_config(&bob_dir, registry.host(), "bob", "token-pw-bob");
    let as_bob = check(std::slice::from_ref(&private), Some(&bob)).await;
    assert_eq!(
        as_bob.images[0].status,
        Status::NoAccess,
        "{}",
        as_bob.images[0].detail
    );

    // Wrong password: the token server refuses it.
    let bad_dir = temp_dir("token-bad");
    let bad = docker_config(&bad_dir, registry.host(), "alice", "not-the-pw");
    let wrong = check(std::slice::from_ref(&public), Some(&bad)).await;
    assert_eq!(
        wrong.images[0].status,
        Status::Denied,
        "{}",
        wrong.images[0].detail
    );
    assert!(
        wrong.images[0].detail.contains(registry.host()),
        "{}",
        wrong.images[0].detail
    );
    assert!(!wrong.to_json().contains("not-the-pw"));
}

#[tokio::test]
async fn unreachable_registry_is_unverified_within_the_deadline() {
    // Connection refused, and no other test's server can take the port while this one
    // runs (a dropped listener's port was once given to a token server here).
    let closed = ClosedPort::new();
    let port = closed.port();
    let report = check(&[format!("127.0.0.1:{port}/team/app:v1")], None).await;
    assert_eq!(
        (report.images[0].status, report.images[0].reason),
        (Status::Unreachable, Reason::ConnectionRefused),
        "{}",
        report.images[0].detail
    );
    assert_eq!(report.exit_code(), 3);
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["images"][0]["reason"], "connection_refused");
}

#[tokio::test]
async fn hanging_registry_hits_the_overall_deadline() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let _server = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let options = CheckOptions {
        deadline: std::time::Duration::from_millis(700),
        ..CheckOptions::default()
    };
    let checker = Checker::new(
        CheckerOptions::default(),
        Resolver::default(),
        NodeCredentials::empty(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let report = checker
        .check(
            vec![parse_image_arg(&format!("127.0.0.1:{port}/a/b:c")).unwrap()],
            &options,
        )
        .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(
        (report.images[0].status, report.images[0].reason),
        (Status::Unreachable, Reason::DeadlineExceeded)
    );
    assert!(
        report.images[0].detail.contains("deadline"),
        "{}",
        report.images[0].detail
    );
}

/// Every situation that sends no request gets its own reason, in the row and in JSON
/// (no network: nothing here is checked).
#[tokio::test]
async fn situations_without_a_request_have_distinct_reasons() {
    let text = "\
version: \"1\"
templates: [{name: go_build, source: x.yml, type: file}]
steps:
  - name: unknown-policy
    image: registry.example.com/app:1
    pull: sometimes
    commands: [ x ]
  - name: secret
    image: registry.example.com/app:${APP_TAG}
    secrets: [ app_tag ]
  - name: never
    image: registry.example.com/app:2
    pull: never
    commands: [ x ]
  - name: later
    image: registry.example.com/app:3
    pull: on_start
    commands: [ x ]
  - name: templated
    template:
      name: go_build
  - name: bad
    image: registry.example.com/App:4
    commands: [ x ]
";
    let mut uses = pullcheck::input::read_pipeline(".vela.yml", text).unwrap();
    uses.push(pullcheck::input::image_arg_use("registry.example.com/app:5=whenever").unwrap());
    let checker = Checker::new(
        CheckerOptions::default(),
        Resolver::default(),
        NodeCredentials::empty(),
    )
    .unwrap();
    let report = checker.check(uses, &CheckOptions::default()).await;
    let facts: Vec<(Status, Reason, &str)> = report
        .images
        .iter()
        .map(|i| (i.status, i.reason, i.policy.as_str()))
        .collect();
    assert_eq!(
        facts,
        [
            (Status::Invalid, Reason::UnknownPullPolicy, "sometimes"),
            (
                Status::Unresolved,
                Reason::UnresolvedVariable,
                "not_present"
            ),
            (Status::Skipped, Reason::NeverPulled, "never"),
            (Status::Deferred, Reason::DeferredOnStart, "on_start"),
            (Status::Skipped, Reason::TemplateStep, "not_present"),
            (Status::Invalid, Reason::InvalidReference, "not_present"),
            (Status::Invalid, Reason::UnknownPullPolicy, "whenever"),
        ],
        "{}",
        report.to_json()
    );
    let deferred = &report.images[3];
    assert_eq!(
        deferred.remedies,
        [pullcheck::report::Remedy::IncludeOnStart]
    );
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let reasons: Vec<&str> = json["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        [
            "unknown_pull_policy",
            "unresolved_variable",
            "never_pulled",
            "deferred_on_start",
            "template_step",
            "invalid_reference",
            "unknown_pull_policy"
        ]
    );
    assert_eq!(
        json["images"][3]["remedies"],
        serde_json::json!([{"kind": "include_on_start"}])
    );
    // A template step names its template; no other row has the field.
    assert_eq!(report.images[4].template.as_deref(), Some("go_build"));
    let templates: Vec<&serde_json::Value> = json["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["template"])
        .collect();
    let null = serde_json::Value::Null;
    assert_eq!(
        templates,
        [
            &null,
            &null,
            &null,
            &null,
            &serde_json::json!("go_build"),
            &null,
            &null
        ]
    );
}

/// The done-when table of issue 23: each distinct situation, through the real engine on
/// loopback (an open registry, a token registry without anonymous pulls, an htpasswd
/// registry, a closed port, a listener that never answers), gets its own `reason`, and
/// the JSON row says the same.
#[tokio::test]
async fn distinct_situations_get_distinct_reasons() {
    let open = Registry::anonymous().await.unwrap();
    let index = open
        .push("team/app", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    // With `auth`, serving team/app:v1.
    let serving = |auth| async move {
        let registry = Registry::builder().auth(auth).start().await.unwrap();
        registry
            .push("team/app", "v1", ImageKind::OciManifest)
            .await
            .expect("push");
        registry
    };
    let locked = serving(Auth::Htpasswd(vec![User::new("alice", "wonderland-pw")])).await;
    // A token registry that lets nobody pull anonymously.
    let token = serving(Auth::Token(TokenPolicy::new(vec![
        User::new("alice", "token-pw-alice").pulling(Repos::All),
    ])))
    .await;
    let closed_port = ClosedPort::new();
    let closed = closed_port.port();
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let _silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let (host, locked_host, token_host) = (open.host(), locked.host(), token.host());
    let text = format!(
        "\
version: \"1\"
templates: [{{name: go_build, source: x.yml, type: file}}]
steps:
  - name: init
    image: \"#init\"
  - name: policy
    image: {host}/team/app:v1
    pull: sometimes
    commands: [ x ]
  - name: secret
    image: {host}/team/app:${{APP_TAG}}
    secrets: [ app_tag ]
  - name: later
    image: {host}/team/app:v1
    pull: on_start
    commands: [ x ]
  - name: templated
    template:
      name: go_build
"
    );
    let mut uses = pullcheck::input::read_pipeline(".vela.yml", &text).unwrap();
    for image in [
        format!("{host}/team/app:v9"),
        format!("{host}/team/nope:v1"),
        index.reference(),
        format!("{token_host}/team/app:v1"),
        format!("{locked_host}/team/app:v1"),
        format!("127.0.0.1:{closed}/team/app:v1"),
        format!("127.0.0.1:{silent_port}/team/app:v1"),
        format!("{host}/Team/App:v1"),
    ] {
        uses.push(parse_image_arg(&image).unwrap());
    }
    let checker = Checker::new(
        CheckerOptions {
            registry: pullcheck::registry::ClientOptions {
                request_timeout: std::time::Duration::from_millis(500),
                max_attempts: 1,
                ..pullcheck::registry::ClientOptions::default()
            },
            ..CheckerOptions::default()
        },
        Resolver::default(),
        NodeCredentials::empty(),
    )
    .unwrap();
    let options = CheckOptions {
        // No image here is built for it: the index lists linux/amd64 and linux/arm64.
        platform: Some(pullcheck::registry::Platform::parse("linux/s390x").unwrap()),
        deadline: std::time::Duration::from_secs(20),
        ..CheckOptions::default()
    };
    let report = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        checker.check(uses, &options),
    )
    .await
    .expect("the check ends within its deadline");
    let facts: Vec<(&str, Status, Reason)> = report
        .images
        .iter()
        .map(|i| (i.reference.as_str(), i.status, i.reason))
        .collect();
    let index_reference = index.reference();
    let (tag, repository) = (
        format!("{host}/team/app:v9"),
        format!("{host}/team/nope:v1"),
    );
    let (anonymous, basic, refused, hung) = (
        format!("{token_host}/team/app:v1"),
        format!("{locked_host}/team/app:v1"),
        format!("127.0.0.1:{closed}/team/app:v1"),
        format!("127.0.0.1:{silent_port}/team/app:v1"),
    );
    let (policy, secret, invalid) = (
        format!("{host}/team/app:v1"),
        format!("{host}/team/app:${{APP_TAG}}"),
        format!("{host}/Team/App:v1"),
    );
    assert_eq!(
        facts,
        [
            ("#init", Status::Skipped, Reason::InitStep),
            (policy.as_str(), Status::Invalid, Reason::UnknownPullPolicy),
            (
                secret.as_str(),
                Status::Unresolved,
                Reason::UnresolvedVariable
            ),
            (policy.as_str(), Status::Deferred, Reason::DeferredOnStart),
            ("", Status::Skipped, Reason::TemplateStep),
            (tag.as_str(), Status::Missing, Reason::TagNotFound),
            (
                repository.as_str(),
                Status::Missing,
                Reason::RepositoryNotFound
            ),
            (
                index_reference.as_str(),
                Status::Missing,
                Reason::PlatformNotFound
            ),
            (
                anonymous.as_str(),
                Status::NoAccess,
                Reason::UnauthorizedAnonymous
            ),
            (
                basic.as_str(),
                Status::NoAccess,
                Reason::CredentialsRequired
            ),
            (
                refused.as_str(),
                Status::Unreachable,
                Reason::ConnectionRefused
            ),
            (hung.as_str(), Status::Unreachable, Reason::Timeout),
            (invalid.as_str(), Status::Invalid, Reason::InvalidReference),
        ],
        "{}",
        report.to_json()
    );
    // The JSON rows carry the same reasons, all distinct.
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let reasons: Vec<&str> = json["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["reason"].as_str().unwrap())
        .collect();
    let wanted: Vec<&str> = facts.iter().map(|(_, _, r)| r.as_str()).collect();
    assert_eq!(reasons, wanted);
    let distinct: std::collections::HashSet<&str> = reasons.iter().copied().collect();
    assert_eq!(distinct.len(), reasons.len(), "{reasons:?}");
    // An anonymous 401 and a registry asking for a password nothing gives: the remedy
    // is a credential for that host, as data (the front ends name their options).
    for (reference, registry) in [(&anonymous, token_host), (&basic, locked_host)] {
        let row = report
            .images
            .iter()
            .find(|i| &i.reference == reference)
            .expect("a row");
        assert_eq!(
            row.remedies,
            [pullcheck::report::Remedy::GiveCredential {
                host: registry.to_owned()
            }],
            "{reference}"
        );
    }
}

/// The registry's answer as data on the row (rev23r finding 6): the HTTP status of the
/// answer the row reports, and the error envelope's codes and messages. distribution
/// answers a present manifest's `HEAD` 200 and a missing one's 404 without a body (a
/// `HEAD` has none); the tag list request that tells a missing repository answers
/// `GET /v2/<name>/tags/list` 404 with `NAME_UNKNOWN` (distribution's
/// `registry/api/v2/errors.go`: "repository name not known to registry").
#[tokio::test]
async fn the_http_status_and_the_error_envelope_are_row_fields() {
    let registry = Registry::anonymous().await.unwrap();
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    let host = registry.host();
    let (present, tag, repository) = (
        format!("{host}/team/app:v1"),
        format!("{host}/team/app:v2"),
        format!("{host}/team/nope:v1"),
    );
    let report = check(&[present.clone(), tag.clone(), repository.clone()], None).await;
    let row = status_of(&report, &present);
    assert_eq!((row.reason, row.http_status), (Reason::Found, Some(200)));
    assert!(row.registry_errors.is_empty());
    let row = status_of(&report, &tag);
    assert_eq!(
        (row.reason, row.http_status),
        (Reason::TagNotFound, Some(404))
    );
    assert!(row.registry_errors.is_empty());
    let row = status_of(&report, &repository);
    assert_eq!(
        (row.reason, row.http_status),
        (Reason::RepositoryNotFound, Some(404))
    );
    assert_eq!(
        row.registry_errors,
        [pullcheck::registry::ErrorEntry {
            code: "NAME_UNKNOWN".into(),
            message: "repository name not known to registry".into(),
        }]
    );
    // In JSON: `http_status` and `registry_errors: [{code, message}]`, left out when
    // there is nothing to say.
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let rows = json["images"].as_array().unwrap();
    let of = |reference: &str| rows.iter().find(|r| r["reference"] == reference).unwrap();
    assert_eq!(of(&present)["http_status"], 200);
    assert!(of(&present).get("registry_errors").is_none());
    assert_eq!(
        of(&repository)["registry_errors"],
        serde_json::json!([{"code": "NAME_UNKNOWN", "message": "repository name not known to registry"}])
    );

    // Nothing answered: no status.
    let closed = ClosedPort::new();
    let refused = format!("127.0.0.1:{}/team/app:v1", closed.port());
    let report = check(std::slice::from_ref(&refused), None).await;
    let row = status_of(&report, &refused);
    assert_eq!(
        (row.reason, row.http_status),
        (Reason::ConnectionRefused, None)
    );
    assert!(row.registry_errors.is_empty());
}
