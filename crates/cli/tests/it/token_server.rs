//! A token server that misbehaves for some repositories (the testkit's
//! [`TokenFault`]), through `pullcheck check --format json`: each row's `status`,
//! `reason` and `failed_host` (the token server, with the HTTP status it answered).

use std::path::Path;
use std::process::{Command, Output};

use pullcheck_testkit::{Auth, ImageKind, Registry, Repos, TokenFault, TokenPolicy, User};
use serde_json::{Value, json};

use crate::util::{temp_dir, text};

const PASSWORD: &str = "token-fault-password-51c2";

fn pullcheck(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("DOCKER_CONFIG")
        .env("HOME", dir)
        .output()
        .expect("run pullcheck")
}

/// `team/app:v1` answered as usual; `team/notoken` answered 200 without a token
/// (distribution token-auth spec, "Token Response Fields": `token` or
/// `access_token` is required), `team/forbidden` 403 and `team/broken` 500.
async fn faulty_token_registry() -> (Registry, String) {
    let policy = TokenPolicy::new(vec![User::new("ci", PASSWORD).pulling(Repos::All)])
        .fault("team/notoken", TokenFault::NoToken)
        .fault("team/forbidden", TokenFault::Status(403))
        .fault("team/broken", TokenFault::Status(500));
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .expect("token registry");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    let realm = registry.token_realm().expect("token mode");
    let token_server = realm
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("an http realm")
        .to_string();
    (registry, token_server)
}

#[tokio::test]
async fn token_server_faults_are_reasons_with_the_token_servers_status() {
    use base64::Engine as _;
    let (registry, token_server) = faulty_token_registry().await;
    let host = registry.host().to_string();
    let dir = temp_dir("token-faults");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("ci:{PASSWORD}"));
    std::fs::create_dir_all(dir.join("docker")).unwrap();
    std::fs::write(
        dir.join("docker/config.json"),
        format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
    // One image a run: the client asks one token for the scopes of all the images of a
    // registry, so a fault would be every image's.
    let check = |image: &str| -> (Option<i32>, Value) {
        let out = pullcheck(
            &[
                "check",
                "--format",
                "json",
                "--docker-config",
                "docker",
                "--image",
                image,
            ],
            &dir,
        );
        let report: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        (out.status.code(), report["images"][0].clone())
    };
    let (code, row) = check(&format!("{host}/team/app:v1"));
    assert_eq!(
        (code, &row["status"], row.get("failed_host")),
        (Some(0), &json!("present"), None),
        "{row}"
    );
    // Exit code 3 for an unverified image, 1 for a failed one (README, "Statuses and
    // exit codes").
    for (repository, exit, status, reason, answered) in [
        ("team/notoken", 3, "unreachable", "bad_token_reply", 200),
        ("team/forbidden", 1, "denied", "credentials_rejected", 403),
        ("team/broken", 3, "unreachable", "server_error", 500),
    ] {
        let (code, row) = check(&format!("{host}/{repository}:v1"));
        assert_eq!(
            (code, &row["status"], &row["reason"], &row["failed_host"]),
            (
                Some(exit),
                &json!(status),
                &json!(reason),
                &json!({"host": token_server, "role": "token_server", "http_status": answered})
            ),
            "{repository}: {row}"
        );
        assert_eq!(row["registry"], json!(host), "{row}");
    }
}
