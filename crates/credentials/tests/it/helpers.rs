//! Credential helpers run for real: small shell scripts in a temporary directory,
//! found through `HelperOptions::search_path` (the global `PATH` is left alone), and
//! the whole chain's order.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pullcheck_credentials::Credential;
use pullcheck_credentials::helper::run_helper;
use pullcheck_credentials::{
    AuthFile, AuthFileKind, CredentialChain, CredentialError, HelperCall, HelperFailure,
    HelperOptions, Keyring, NodeCredentials, PullSecret,
};
use pullcheck_reference::Reference;

/// Printed by the failing helpers; must never reach an error message.
const OUTPUT_SENTINEL: &str = "helper-output-sentinel";

/// The helper scripts, written once before any test runs one (writing an executable
/// while another thread forks can make exec fail with "text file busy").
fn helper_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let scripts: [(&str, String); 10] = [
            (
                "ok",
                // Echoes the server it was given, and counts its runs.
                r#"[ "$1" = get ] || exit 2
server=$(cat)
echo run >> "$(dirname "$0")/count-$(printf %s "$server" | tr -c 'a-zA-Z0-9.' '_')"
printf '{"ServerURL":"%s","Username":"user-for-%s","Secret":"pw-for-%s"}' "$server" "$server" "$server""#
                    .to_string(),
            ),
            (
                "token",
                r#"cat > /dev/null
printf '{"ServerURL":"x","Username":"<token>","Secret":"refresh-token"}'"#
                    .to_string(),
            ),
            (
                "notfound",
                "cat > /dev/null\necho 'credentials not found in native keychain'\nexit 1".to_string(),
            ),
            (
                "fail",
                format!("cat > /dev/null\necho '{OUTPUT_SENTINEL}'\necho '{OUTPUT_SENTINEL}' >&2\nexit 3"),
            ),
            ("hang", "exec sleep 30".to_string()),
            (
                "spawner",
                // Starts a background `sleep` (its PID in `pid-<server>`), then waits.
                r#"server=$(cat)
sleep 1000 &
echo $! > "$(dirname "$0")/pid-$server.tmp"
mv "$(dirname "$0")/pid-$server.tmp" "$(dirname "$0")/pid-$server"
wait"#
                    .to_string(),
            ),
            (
                "garbage",
                format!("cat > /dev/null\necho 'not json {OUTPUT_SENTINEL}'"),
            ),
            (
                "empty",
                r#"cat > /dev/null
printf '{"ServerURL":"x","Username":"","Secret":""}'"#
                    .to_string(),
            ),
            ("noexec", "echo never".to_string()),
            // Endless output, as a broken helper (or `cat /dev/zero`) would write.
            ("endless", "cat > /dev/null\nexec yes".to_string()),
        ];
        for (name, body) in scripts {
            let path = dir.path().join(format!("docker-credential-{name}"));
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write helper");
            let mode = if name == "noexec" { 0o644 } else { 0o755 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .expect("chmod helper");
        }
        dir
    })
    .path()
}

fn options() -> HelperOptions {
    HelperOptions {
        timeout: Duration::from_secs(10),
        search_path: Some(vec![
            PathBuf::from("/nonexistent-dir"),
            helper_dir().to_path_buf(),
        ]),
    }
}

fn call(helper: &str, server: &str) -> HelperCall {
    HelperCall {
        helper: helper.to_string(),
        server: server.to_string(),
        configured_in: "/cfg/config.json".to_string(),
        key: format!("credHelpers[\"{server}\"]"),
    }
}

fn reference(image: &str) -> Reference {
    Reference::parse_normalized(image).expect("reference")
}

#[tokio::test]
async fn a_helper_answers_with_basic_credentials() {
    let answer = run_helper(&call("ok", "ghcr.io"), &options())
        .await
        .expect("runs")
        .expect("has a credential");
    assert_eq!(
        answer.credential,
        Credential::Basic {
            username: "user-for-ghcr.io".into(),
            password: "pw-for-ghcr.io".into()
        }
    );
    assert_eq!(answer.username.as_deref(), Some("user-for-ghcr.io"));
}

#[tokio::test]
async fn token_user_means_identity_token() {
    let answer = run_helper(&call("token", "quay.io"), &options())
        .await
        .expect("runs")
        .expect("has a credential");
    assert_eq!(
        answer.credential,
        Credential::IdentityToken("refresh-token".into())
    );
    assert_eq!(answer.username, None);
}

#[tokio::test]
async fn not_found_and_empty_answers_mean_no_credential() {
    for helper in ["notfound", "empty"] {
        let answer = run_helper(&call(helper, "quay.io"), &options())
            .await
            .expect("not an error");
        assert_eq!(answer, None, "{helper}");
    }
}

fn expect_failure(err: &CredentialError, helper: &str) -> HelperFailure {
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("credential helper docker-credential-{helper} ")),
        "{text}"
    );
    assert!(text.contains("/cfg/config.json"), "{text}");
    assert!(
        !text.contains(OUTPUT_SENTINEL),
        "{text} leaks the helper's output"
    );
    assert!(!format!("{err:?}").contains(OUTPUT_SENTINEL), "{err:?}");
    match err {
        CredentialError::Helper { failure, .. } => failure.clone(),
        other => panic!("expected a helper error, got {other:?}"),
    }
}

#[tokio::test]
async fn failing_missing_and_broken_helpers_are_errors_naming_the_helper() {
    let err = run_helper(&call("fail", "quay.io"), &options())
        .await
        .expect_err("fails");
    assert_eq!(
        expect_failure(&err, "fail"),
        HelperFailure::Exited { code: Some(3) }
    );

    let err = run_helper(&call("absent", "quay.io"), &options())
        .await
        .expect_err("missing");
    assert_eq!(expect_failure(&err, "absent"), HelperFailure::Missing);

    let err = run_helper(&call("garbage", "quay.io"), &options())
        .await
        .expect_err("garbage");
    assert_eq!(expect_failure(&err, "garbage"), HelperFailure::BadReply);

    let err = run_helper(&call("noexec", "quay.io"), &options())
        .await
        .expect_err("not executable");
    assert!(matches!(
        expect_failure(&err, "noexec"),
        HelperFailure::Spawn(_)
    ));

    for bad in ["", "../ok", "a/b"] {
        let err = run_helper(&call(bad, "quay.io"), &options())
            .await
            .expect_err("invalid name");
        assert!(
            matches!(
                &err,
                CredentialError::Helper {
                    failure: HelperFailure::InvalidName,
                    ..
                }
            ),
            "{err}"
        );
    }

    // Without a search path the global PATH is used, where this helper does not exist.
    let err = run_helper(
        &call("pullcheck-test-surely-absent", "quay.io"),
        &HelperOptions::default(),
    )
    .await
    .expect_err("missing on PATH");
    assert_eq!(
        expect_failure(&err, "pullcheck-test-surely-absent"),
        HelperFailure::Missing
    );
}

#[tokio::test]
async fn a_hanging_helper_is_killed_at_the_timeout() {
    let options = HelperOptions {
        timeout: Duration::from_millis(300),
        ..options()
    };
    let started = Instant::now();
    let err = run_helper(&call("hang", "quay.io"), &options)
        .await
        .expect_err("times out");
    assert_eq!(
        expect_failure(&err, "hang"),
        HelperFailure::TimedOut {
            after: Duration::from_millis(300)
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A helper that writes without end is stopped at 1 MiB and killed, well before its
/// timeout, instead of filling memory (found by a reviewer with `cat /dev/zero`).
#[tokio::test]
async fn endless_helper_output_is_cut_at_the_limit() {
    let options = HelperOptions {
        timeout: Duration::from_secs(20),
        ..options()
    };
    let started = Instant::now();
    let err = run_helper(&call("endless", "quay.io"), &options)
        .await
        .expect_err("too much output");
    assert_eq!(
        expect_failure(&err, "endless"),
        HelperFailure::OutputTooLarge
    );
    assert!(err.to_string().contains("more than 1 MiB"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// Whether `pid` is a live (not zombie) `sleep`.
fn sleep_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state …`; comm may hold spaces, so split at the last `)`.
    let Some((head, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let comm = head.split_once('(').map(|(_, c)| c).unwrap_or_default();
    let state = rest.trim_start().chars().next().unwrap_or('X');
    comm == "sleep" && !matches!(state, 'Z' | 'X' | 'x')
}

#[tokio::test]
async fn a_timed_out_helper_is_killed_with_its_children() {
    if !Path::new("/proc/self/stat").exists() {
        eprintln!("no /proc: skipped");
        return;
    }
    let server = "children.example";
    let pid_file = helper_dir().join(format!("pid-{server}"));
    let options = HelperOptions {
        timeout: Duration::from_secs(1),
        ..options()
    };
    let err = run_helper(&call("spawner", server), &options)
        .await
        .expect_err("times out");
    assert_eq!(
        expect_failure(&err, "spawner"),
        HelperFailure::TimedOut {
            after: Duration::from_secs(1)
        }
    );
    assert_child_ends(&pid_file, "the timeout").await;
}

/// The `sleep` whose PID the spawner helper wrote to `pid_file` is gone within 2 s;
/// killed here if not, so that no test leaves it behind.
async fn assert_child_ends(pid_file: &Path, after: &str) {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .expect("the helper wrote its child's PID")
        .trim()
        .parse()
        .expect("a PID");
    let deadline = Instant::now() + Duration::from_secs(2);
    while sleep_alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let survived = sleep_alive(pid);
    if survived {
        // Do not leave it behind: it is this test's own grandchild.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(!survived, "the helper's child {pid} outlived {after}");
}

/// A helper whose caller gives up first (the overall deadline passed and the future
/// was dropped) goes with its children too (found by a reviewer: its `sleep` was left
/// behind, reparented to init).
#[tokio::test]
async fn a_dropped_helper_call_kills_its_children() {
    if !Path::new("/proc/self/stat").exists() {
        eprintln!("no /proc: skipped");
        return;
    }
    let server = "dropped.example";
    let pid_file = helper_dir().join(format!("pid-{server}"));
    let options = HelperOptions {
        timeout: Duration::from_secs(30),
        ..options()
    };
    let call = call("spawner", server);
    let dropped = tokio::time::timeout(Duration::from_secs(1), run_helper(&call, &options)).await;
    assert!(dropped.is_err(), "the caller gave up first");
    assert_child_ends(&pid_file, "the dropped call").await;
}

fn docker_file(text: &str) -> AuthFile {
    AuthFile::parse(
        Path::new("/cfg/config.json"),
        AuthFileKind::DockerConfig,
        text,
    )
    .expect("parses")
}

#[tokio::test]
async fn the_chain_orders_pull_secrets_node_files_then_helpers() {
    let secrets = PullSecret::parse_manifests(
        "secret.yaml",
        r#"
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"quay.io/org": {"auth": "c2VjcmV0OnA="}, "quay.io": {"auth": "aG9zdDpw"}}}'
"#,
    )
    .expect("parses");
    let docker = docker_file(
        r#"{"auths": {"quay.io": {"auth": "ZG9ja2VyOnA="}}, "credHelpers": {"quay.io": "ok"}}"#,
    );
    let containers = AuthFile::parse(
        Path::new("/run/auth.json"),
        AuthFileKind::ContainersAuth,
        r#"{"auths": {"quay.io/org": {"identitytoken": "id-token"}}}"#,
    )
    .expect("parses");
    let chain = CredentialChain::new(
        Keyring::from_pull_secrets(&secrets),
        NodeCredentials::from_files(Some(docker), Some(containers), options()),
    );
    let image = reference("quay.io/org/app:1");

    let steps = chain.explain_for(&image);
    let described: Vec<(String, &str)> = steps
        .iter()
        .map(|s| (s.source().source, s.kind()))
        .collect();
    assert_eq!(
        described,
        [
            ("pull secret regcred (secret.yaml)".to_string(), "basic"),
            ("pull secret regcred (secret.yaml)".to_string(), "basic"),
            ("/cfg/config.json".to_string(), "basic"),
            ("/run/auth.json".to_string(), "identity_token"),
            (
                "credential helper docker-credential-ok (/cfg/config.json)".to_string(),
                "helper"
            ),
        ]
    );
    let json = serde_json::to_value(&steps).expect("serialises");
    assert_eq!(json[0]["key"], "quay.io/org");
    assert_eq!(json[0]["username"], "secret");
    assert_eq!(json[4]["helper"], "docker-credential-ok");
    assert_eq!(json[4]["server"], "quay.io");
    let shown = json.to_string();
    for secret in ["c2VjcmV0OnA=", "id-token", "\"p\""] {
        assert!(!shown.contains(secret), "{shown} leaks {secret}");
    }

    let creds = chain.credentials_for(&image).await.expect("resolves");
    let users: Vec<Option<&str>> = creds.iter().map(|c| c.source.username.as_deref()).collect();
    assert_eq!(
        users,
        [
            Some("secret"),
            Some("host"),
            Some("docker"),
            None,
            Some("user-for-quay.io")
        ]
    );
    assert_eq!(
        creds[3].credential,
        Credential::IdentityToken("id-token".into())
    );
    assert_eq!(creds[4].source.key, "credHelpers[\"quay.io\"]");

    // Nothing applies to another registry: an anonymous pull.
    assert!(
        chain
            .credentials_for(&reference("ghcr.io/x/y"))
            .await
            .expect("ok")
            .is_empty()
    );
}

#[tokio::test]
async fn helper_answers_are_cached_per_helper_and_server() {
    // Only this test asks the counting helper about this server.
    let counter = helper_dir().join("count-cache.example.com");
    let chain = CredentialChain::new(
        Keyring::new(),
        NodeCredentials::from_files(
            Some(docker_file(
                r#"{"credHelpers": {"cache.example.com": "ok"}}"#,
            )),
            None,
            options(),
        ),
    );
    for image in [
        "cache.example.com/a",
        "cache.example.com/b",
        "cache.example.com/c:1",
    ] {
        let creds = chain
            .credentials_for(&reference(image))
            .await
            .expect("resolves");
        assert_eq!(creds.len(), 1);
    }
    let runs = std::fs::read_to_string(&counter).expect("the helper ran");
    assert_eq!(runs.lines().count(), 1, "one run for three images");
}

#[tokio::test]
async fn docker_hub_uses_the_index_server_for_helpers() {
    let chain = CredentialChain::new(
        Keyring::new(),
        NodeCredentials::from_files(
            Some(docker_file(r#"{"credsStore": "ok"}"#)),
            None,
            options(),
        ),
    );
    let creds = chain
        .credentials_for(&reference("nginx"))
        .await
        .expect("resolves");
    assert_eq!(creds.len(), 1);
    assert_eq!(
        creds[0].source.username.as_deref(),
        Some("user-for-https://index.docker.io/v1/")
    );
    assert_eq!(creds[0].source.key, "credsStore");
}

#[tokio::test]
async fn a_failing_helper_fails_the_lookup() {
    let chain = CredentialChain::new(
        Keyring::new(),
        NodeCredentials::from_files(
            Some(docker_file(r#"{"credHelpers": {"quay.io": "fail"}}"#)),
            None,
            options(),
        ),
    );
    let err = chain
        .credentials_for(&reference("quay.io/a"))
        .await
        .expect_err("helper fails");
    expect_failure(&err, "fail");
    // Explaining does not run it.
    assert_eq!(chain.explain_for(&reference("quay.io/a")).len(), 1);
}
