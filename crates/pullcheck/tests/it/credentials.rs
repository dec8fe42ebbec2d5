//! The kubelet's credential semantics end to end, through `Checker::check_sets` against
//! real registries (htpasswd and token auth): every matching credential is tried in
//! keyring order (most specific key first) and the first success wins; when every one
//! fails the pull fails, and anonymous is not tried after them; with no match at all the
//! pull is anonymous. Then the node's files after the pull secrets, and a credential
//! helper the node's Docker config names.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use pullcheck::credentials::{
    HelperOptions, Keyring, NodeCredentials, NodeEnv, NodeOptions, PullSecret,
};
use pullcheck::report::{Report, Status};
use pullcheck::resolve::Resolver;
use pullcheck::{Checker, CheckerOptions};
use pullcheck_testkit::kube::{DockerAuth, dockerconfigjson};
use pullcheck_testkit::{
    Auth, ImageKind, Registry, Repos, RequestRecord, TokenAuth, TokenPolicy, User,
};

use crate::util::{check_one_set, image, temp_dir};

const GOOD: &str = "good-password-0c4f";
const WRONG: &str = "wrong-password-77ab";

/// The file name the pull secrets are "read" from; it is part of each credential's source.
const SECRETS_FILE: &str = "secrets.yaml";

async fn htpasswd_registry() -> Registry {
    let registry = Registry::builder()
        .auth(Auth::Htpasswd(vec![User::new("ci", GOOD)]))
        .start()
        .await
        .expect("registry");
    push_images(&registry).await;
    registry
}

/// User `ci` pulls everything; anonymous only `public/app`.
async fn token_registry() -> Registry {
    let policy =
        TokenPolicy::new(vec![User::new("ci", GOOD)]).anonymous(Repos::only(["public/app"]));
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .expect("registry");
    push_images(&registry).await;
    registry
}

async fn push_images(registry: &Registry) {
    for repository in ["team/app", "teamster/app", "public/app"] {
        registry
            .push(repository, "v1", ImageKind::OciManifest)
            .await
            .expect("push");
    }
}

/// A multi-document manifest file of `kubernetes.io/dockerconfigjson` Secrets, each
/// `(name, key, user, password)`, as `kubectl get secret -o yaml` prints them.
fn secrets_manifest(secrets: &[(&str, &str, &str, &str)]) -> String {
    use base64::Engine as _;
    secrets
        .iter()
        .map(|(name, key, user, password)| {
            let config = dockerconfigjson(&[DockerAuth::new(*key, *user, *password)]);
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: builds\n\
                 type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {}\n",
                base64::engine::general_purpose::STANDARD.encode(config)
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

fn keyring(secrets: &[(&str, &str, &str, &str)]) -> Keyring {
    let parsed = PullSecret::parse_manifests(SECRETS_FILE, &secrets_manifest(secrets))
        .expect("pull secrets parse");
    assert_eq!(parsed.len(), secrets.len());
    Keyring::from_pull_secrets(&parsed)
}

fn source_of(secret: &str) -> String {
    format!("pull secret {secret} ({SECRETS_FILE})")
}

/// Checks `images` (policy always) as one Pod with `pull_secrets`, then the node's.
async fn check(images: &[String], pull_secrets: Keyring, node: NodeCredentials) -> Report {
    let checker =
        Checker::new(CheckerOptions::default(), Resolver::default(), node).expect("checker");
    check_one_set(&checker, images, pull_secrets).await
}

/// The token server's requests: how each authenticated.
fn token_auths(registry: &Registry) -> Vec<TokenAuth> {
    registry
        .token_server()
        .expect("token mode")
        .requests()
        .into_iter()
        .map(|r| r.auth)
        .collect()
}

fn rejected(user: &str) -> TokenAuth {
    TokenAuth::Rejected {
        username: user.into(),
    }
}

fn manifest_requests(requests: &[RequestRecord]) -> Vec<&RequestRecord> {
    requests
        .iter()
        .filter(|r| r.path.contains("/manifests/"))
        .collect()
}

/// A node whose Docker config is `config` and whose helpers are searched in
/// `helper_dir`; nothing from the process environment.
fn node(config: Option<&Path>, helper_dir: Option<&Path>) -> NodeCredentials {
    NodeCredentials::load(&NodeOptions {
        docker_config: config.map(Path::to_path_buf),
        auth_file: None,
        env: NodeEnv::default(),
        helpers: HelperOptions {
            timeout: Duration::from_secs(10),
            search_path: Some(helper_dir.map(Path::to_path_buf).into_iter().collect()),
        },
    })
    .expect("node credentials")
}

fn write_docker_config(dir: &Path, content: &str) -> PathBuf {
    let path = dir.join("config.json");
    std::fs::write(&path, content).expect("write config.json");
    path
}

#[tokio::test]
async fn htpasswd_a_wrong_specific_key_then_a_working_host_key() {
    let registry = htpasswd_registry().await;
    let host = registry.host();
    let team_key = format!("{host}/team");
    // `HOST/team` sorts before `HOST` in reverse lexical order: it is tried first.
    let keys = keyring(&[
        ("general", host, "ci", GOOD),
        ("specific", &team_key, "ci", WRONG),
    ]);
    assert_eq!(keys.keys()[0], team_key);
    let app = format!("{host}/team/app:v1");
    // A string prefix, as the kubelet matches paths: `HOST/team` applies here too.
    let teamster = format!("{host}/teamster/app:v1");
    let public = format!("{host}/public/app:v1");

    let report = check(
        &[app.clone(), teamster.clone(), public.clone()],
        keys,
        NodeCredentials::empty(),
    )
    .await;

    for reference in [&app, &teamster] {
        let i = image(&report, reference);
        assert_eq!(i.status, Status::Present, "{reference}: {}", i.detail);
        let credential = i.credential.as_ref().expect("credential");
        assert_eq!(credential.source, source_of("general"));
        assert_eq!(credential.key, host);
        assert_eq!(credential.username.as_deref(), Some("ci"));
        // The failed first attempt is listed, without its password.
        assert_eq!(tried_with(i), [source_of("specific"), source_of("general")]);
        assert!(
            !format!("{:?}", i.attempts).contains(WRONG),
            "{:?}",
            i.attempts
        );
    }
    // Only the host key applies: one attempt, nothing before it.
    let i = image(&report, &public);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(
        i.credential.as_ref().map(|c| c.source.clone()),
        Some(source_of("general"))
    );
    assert!(!i.detail.contains("specific"), "{}", i.detail);
    assert_eq!(report.exit_code(), 0);
    assert!(!report.to_json().contains(GOOD) && !report.to_json().contains(WRONG));
}

#[tokio::test]
async fn token_a_wrong_specific_key_then_a_working_host_key() {
    let registry = token_registry().await;
    let host = registry.host();
    let team_key = format!("{host}/team");
    let keys = keyring(&[
        ("specific", &team_key, "ci", WRONG),
        ("general", host, "ci", GOOD),
    ]);
    let app = format!("{host}/team/app:v1");

    let report = check(std::slice::from_ref(&app), keys, NodeCredentials::empty()).await;

    let i = image(&report, &app);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(
        i.credential
            .as_ref()
            .map(|c| (c.source.clone(), c.key.clone())),
        Some((source_of("general"), host.to_owned()))
    );
    // The wrong password first (refused), then the right one; never anonymous.
    assert_eq!(
        token_auths(&registry),
        [rejected("ci"), TokenAuth::User("ci".into())]
    );
}

#[tokio::test]
async fn token_every_matching_credential_wrong_fails_without_trying_anonymous() {
    let registry = token_registry().await;
    let host = registry.host();
    let team_key = format!("{host}/team");
    let keys = keyring(&[
        ("specific", &team_key, "ci", WRONG),
        ("general", host, "intruder", WRONG),
    ]);
    // Anonymous may pull `public/app`: a pull that fell back to anonymous would succeed.
    let public = format!("{host}/public/app:v1");
    let app = format!("{host}/team/app:v1");

    let report = check(
        &[public.clone(), app.clone()],
        keys,
        NodeCredentials::empty(),
    )
    .await;

    for reference in [&public, &app] {
        let i = image(&report, reference);
        assert!(
            matches!(i.status, Status::Denied | Status::NoAccess),
            "{reference}: {:?} {}",
            i.status,
            i.detail
        );
        assert!(i.credential.is_some(), "{reference}: reported as anonymous");
    }
    // `app` tried both secrets, the specific one first: it is the one reported (equally
    // bad answers: the first wins), and the detail names the other.
    let app_report = image(&report, &app);
    assert_eq!(
        app_report.credential.as_ref().map(|c| c.source.clone()),
        Some(source_of("specific"))
    );
    assert_eq!(
        tried_with(app_report),
        [source_of("specific"), source_of("general")]
    );
    // `public` matches only the host key.
    assert_eq!(
        image(&report, &public)
            .credential
            .as_ref()
            .map(|c| c.source.clone()),
        Some(source_of("general"))
    );
    assert_eq!(report.exit_code(), 1);

    let auths = token_auths(&registry);
    assert!(!auths.contains(&TokenAuth::Anonymous), "{auths:?}");
    assert!(auths.contains(&rejected("ci")), "{auths:?}");
    assert!(auths.contains(&rejected("intruder")), "{auths:?}");
    // No token, so no manifest request was ever authorized.
    let served = registry.requests().await.expect("log");
    assert!(
        manifest_requests(&served).iter().all(|r| r.status == 401),
        "{served:?}"
    );
}

#[tokio::test]
async fn htpasswd_every_matching_credential_wrong_fails_without_trying_anonymous() {
    let registry = htpasswd_registry().await;
    let host = registry.host();
    let team_key = format!("{host}/team");
    let keys = keyring(&[
        ("specific", &team_key, "ci", WRONG),
        ("general", host, "intruder", WRONG),
    ]);
    let app = format!("{host}/team/app:v1");

    let report = check(std::slice::from_ref(&app), keys, NodeCredentials::empty()).await;

    let i = image(&report, &app);
    assert!(
        matches!(i.status, Status::Denied | Status::NoAccess),
        "{:?} {}",
        i.status,
        i.detail
    );
    assert_eq!(
        i.credential.as_ref().map(|c| c.source.clone()),
        Some(source_of("specific")),
        "the first of equally bad answers is reported"
    );
    assert_eq!(tried_with(i), [source_of("specific"), source_of("general")]);
    // Both credentials were refused at `GET /v2/`. The one manifest request is the
    // first `HEAD`, sent in place of the ping without credentials, whose 401 brought
    // the Basic challenge; an anonymous attempt would have sent another.
    let served = registry.requests().await.expect("log");
    let heads: Vec<(&str, u16)> = manifest_requests(&served)
        .iter()
        .map(|r| (r.method.as_str(), r.status))
        .collect();
    assert_eq!(heads, [("HEAD", 401)], "{served:?}");
    assert!(
        served
            .iter()
            .filter(|r| r.path == "/v2/" && r.status == 401)
            .count()
            >= 2,
        "{served:?}"
    );
}

#[tokio::test]
async fn no_matching_credential_means_anonymous() {
    let registry = token_registry().await;
    let host = registry.host();
    // Keys for other registries, and for another port of this one.
    let port: u16 = host
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    let other_port = format!("127.0.0.1:{}", port.wrapping_add(1));
    let keys = keyring(&[
        ("elsewhere", "registry.example.com", "ci", GOOD),
        ("other-port", &other_port, "ci", GOOD),
    ]);
    let public = format!("{host}/public/app:v1");
    let app = format!("{host}/team/app:v1");

    let report = check(
        &[public.clone(), app.clone()],
        keys,
        NodeCredentials::empty(),
    )
    .await;

    let i = image(&report, &public);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.credential, None);
    let i = image(&report, &app);
    assert_eq!(i.status, Status::NoAccess, "{}", i.detail);
    assert_eq!(i.credential, None);
    // No credential was sent: every token request was anonymous.
    let auths = token_auths(&registry);
    assert!(!auths.is_empty());
    assert!(
        auths.iter().all(|a| *a == TokenAuth::Anonymous),
        "{auths:?}"
    );
}

#[tokio::test]
async fn the_node_docker_config_comes_after_the_pull_secrets() {
    use base64::Engine as _;
    let registry = token_registry().await;
    let host = registry.host();
    let dir = temp_dir("node");
    let config = |password: &str| {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("ci:{password}"));
        format!(r#"{{"auths": {{"http://{host}": {{"auth": "{auth}"}}}}}}"#)
    };
    let app = format!("{host}/team/app:v1");

    // A wrong pull secret, then the node's good config.json.
    let path = write_docker_config(dir.path(), &config(GOOD));
    let report = check(
        std::slice::from_ref(&app),
        keyring(&[("regcred", host, "ci", WRONG)]),
        node(Some(&path), None),
    )
    .await;
    let i = image(&report, &app);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    let credential = i.credential.as_ref().expect("credential");
    assert_eq!(credential.source, path.display().to_string());
    assert_eq!(credential.key, format!("http://{host}"));
    assert_eq!(
        tried_with(i),
        [source_of("regcred"), path.display().to_string()]
    );
    assert_eq!(
        token_auths(&registry),
        [rejected("ci"), TokenAuth::User("ci".into())]
    );

    // A good pull secret wins: the node's (wrong) config is never sent.
    registry
        .token_server()
        .expect("token mode")
        .clear_requests();
    let path = write_docker_config(dir.path(), &config(WRONG));
    let report = check(
        std::slice::from_ref(&app),
        keyring(&[("regcred", host, "ci", GOOD)]),
        node(Some(&path), None),
    )
    .await;
    let i = image(&report, &app);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(
        i.credential.as_ref().map(|c| c.source.clone()),
        Some(source_of("regcred"))
    );
    assert_eq!(token_auths(&registry), [TokenAuth::User("ci".into())]);
}

/// Writes an executable `docker-credential-NAME` into `dir` from a child process, so no
/// file descriptor open for writing it is ever held by this (multi-threaded, forking)
/// test process: executing it cannot fail with "text file busy".
fn install_helper(dir: &Path, name: &str, script: &str) {
    let source = dir.join(format!("{name}.sh"));
    std::fs::write(&source, script).expect("write helper source");
    let target = dir.join(format!("docker-credential-{name}"));
    let status = std::process::Command::new("install")
        .args(["-m", "0755"])
        .arg(&source)
        .arg(&target)
        .status()
        .expect("run install");
    assert!(status.success(), "install {}", target.display());
}

#[tokio::test]
async fn a_credential_helper_named_by_the_node_config_answers_for_the_registry() {
    let registry = token_registry().await;
    let host = registry.host();
    let dir = temp_dir("helper");
    let helpers = dir.path().join("bin");
    std::fs::create_dir_all(&helpers).expect("dir");
    let asked = dir.path().join("asked");
    // Answers for this registry only; records every server it is asked about.
    install_helper(
        &helpers,
        "pctest",
        &format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 2\nserver=$(cat)\n\
             printf '%s\\n' \"$server\" >> '{asked}'\n\
             if [ \"$server\" = '{host}' ]; then\n\
             printf '{{\"ServerURL\":\"%s\",\"Username\":\"ci\",\"Secret\":\"{GOOD}\"}}' \"$server\"\n\
             else\n echo 'credentials not found in native keychain'; exit 1\nfi\n",
            asked = asked.display()
        ),
    );
    let config = write_docker_config(
        dir.path(),
        &format!(r#"{{"credHelpers": {{"{host}": "pctest"}}}}"#),
    );
    let app = format!("{host}/team/app:v1");

    // After a wrong pull secret, the helper's credential opens the registry.
    let report = check(
        std::slice::from_ref(&app),
        keyring(&[("regcred", host, "ci", WRONG)]),
        node(Some(&config), Some(&helpers)),
    )
    .await;
    let i = image(&report, &app);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    let credential = i.credential.as_ref().expect("credential");
    assert_eq!(
        credential.source,
        format!(
            "credential helper docker-credential-pctest ({})",
            config.display()
        )
    );
    assert_eq!(credential.key, format!("credHelpers[\"{host}\"]"));
    assert_eq!(credential.username.as_deref(), Some("ci"));
    assert_eq!(
        token_auths(&registry),
        [rejected("ci"), TokenAuth::User("ci".into())]
    );
    assert_eq!(
        std::fs::read_to_string(&asked).expect("helper ran"),
        format!("{host}\n")
    );
    let json = report.to_json();
    assert!(!json.contains(GOOD) && !json.contains(WRONG), "{json}");

    // With no pull secret at all, the helper alone.
    registry
        .token_server()
        .expect("token mode")
        .clear_requests();
    let report = check(
        std::slice::from_ref(&app),
        Keyring::new(),
        node(Some(&config), Some(&helpers)),
    )
    .await;
    let i = image(&report, &app);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert!(
        i.credential.as_ref().is_some_and(|c| c
            .source
            .starts_with("credential helper docker-credential-pctest")),
        "{:?}",
        i.credential
    );
    assert_eq!(token_auths(&registry), [TokenAuth::User("ci".into())]);
}

/// The canary: a known password and token, held in pull secrets and in the node's Docker
/// config, appear in no `Debug` of the keyring, the node's credentials, the credential
/// chain and what it resolves, a configuration error, or the report (its `Debug`, text
/// and JSON) of a check that presented them and was refused.
#[tokio::test]
async fn a_known_password_or_token_is_in_no_debug_error_or_report() {
    use base64::Engine as _;
    const CANARY: &str = "canary-password-5e1d9";
    const TOKEN: &str = "canary-identity-token-8b2f";
    let registry = token_registry().await;
    let host = registry.host();
    let keys = keyring(&[("canary", host, "ci", CANARY)]);
    let dir = temp_dir("canary");
    let config = write_docker_config(
        &dir,
        &format!(
            r#"{{"auths": {{"other.registry.example.com": {{"identitytoken": "{TOKEN}"}}}}}}"#
        ),
    );
    let node = node(Some(&config), None);
    let chain = pullcheck::credentials::CredentialChain::new(keys.clone(), node.clone());
    let app = format!("{host}/team/app:v1");
    let reference = pullcheck::reference::Reference::parse_normalized(&app).expect("reference");
    let resolved = chain
        .credentials_for(&reference)
        .await
        .expect("credentials");
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    let other =
        pullcheck::reference::Reference::parse_normalized("other.registry.example.com/app:v1")
            .expect("reference");
    let resolved_token = chain.credentials_for(&other).await.expect("credentials");
    assert_eq!(resolved_token.len(), 1, "{resolved_token:?}");

    // A config whose entry is malformed after its password.
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("ci:{CANARY}"));
    let bad = write_docker_config(
        &dir,
        &format!(
            r#"{{"auths": {{"{host}": {{"auth": "{auth}", "password": "{CANARY}", "email": 5}}}}}}"#
        ),
    );
    let error = NodeCredentials::load(&NodeOptions {
        docker_config: Some(bad),
        auth_file: None,
        env: NodeEnv::default(),
        helpers: HelperOptions::default(),
    })
    .expect_err("a malformed config.json");

    let report = check(std::slice::from_ref(&app), keys.clone(), node.clone()).await;
    assert!(
        matches!(
            image(&report, &app).status,
            Status::Denied | Status::NoAccess
        ),
        "{}",
        report.to_json()
    );

    let shown = [
        format!("{keys:?}"),
        format!("{node:?}"),
        format!("{chain:?}"),
        format!("{resolved:?} {resolved_token:?}"),
        format!("{error:?} {error}"),
        format!("{report:?}"),
        report.to_json().to_string(),
        report.to_json(),
    ];
    for text in &shown {
        assert!(!text.contains(CANARY), "the password shows in: {text}");
        assert!(
            !text.contains(&auth),
            "the encoded password shows in: {text}"
        );
        assert!(!text.contains(TOKEN), "the token shows in: {text}");
    }
    // The credential was really presented, and refused.
    assert!(token_auths(&registry).contains(&rejected("ci")));
}

/// The credential sources of an image's attempts, in order (`anonymous` for none).
fn tried_with(i: &pullcheck::report::ImageReport) -> Vec<String> {
    i.attempts
        .iter()
        .map(|a| {
            a.credential
                .as_ref()
                .map_or_else(|| "anonymous".to_owned(), |c| c.source.clone())
        })
        .collect()
}
