//! The `pullcheck` binary end to end: a Vela pipeline against a real token-auth registry,
//! text and JSON output, exit codes, and a canary that no secret appears anywhere.

use crate::util::text;
use std::path::Path;
use std::process::{Command, Output};

use crate::util::temp_dir;
use pullcheck_testkit::{Auth, ImageKind, Registry, Repos, TokenPolicy, User};

const PASSWORD: &str = "canary-password-7f3a";

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

async fn token_registry() -> Registry {
    let policy = TokenPolicy::new(vec![User::new("ci", PASSWORD).pulling(Repos::All)]);
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .unwrap();
    registry
        .push("library/alpine", "3.19", ImageKind::DockerManifest)
        .await
        .unwrap();
    registry
        .push("library/golang", "1.22", ImageKind::OciIndex)
        .await
        .unwrap();
    registry
        .push("library/postgres", "16", ImageKind::DockerManifestList)
        .await
        .unwrap();
    registry
}

fn write_pipeline(dir: &Path, host: &str) {
    let pipeline = format!(
        r#"version: "1"
x-go: &go
  image: {host}/library/golang:1.22
  pull: not_present
services:
  - name: db
    image: {host}/library/postgres:16
stages:
  build:
    steps:
      - name: compile
        <<: *go
        commands: [go build ./...]
  test:
    steps:
      - name: test
        image: {host}/library/alpine:3.91
        pull: true
        commands: [./test.sh]
      - name: publish
        image: {host}/team/publisher:v2
        commands: [./publish.sh]
      - name: later
        image: {host}/library/alpine:3.19
        pull: on_start
        commands: [./later.sh]
      - name: lint
        template:
          name: golangci
templates:
  - {{ name: golangci, source: t.yml, type: github }}
"#
    );
    std::fs::write(dir.join(".vela.yml"), pipeline).unwrap();
}

fn write_docker_config(dir: &Path, host: &str) {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("ci:{PASSWORD}"));
    std::fs::create_dir_all(dir.join("docker")).unwrap();
    std::fs::write(
        dir.join("docker/config.json"),
        format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
}

#[tokio::test]
async fn pipeline_against_a_token_registry() {
    let registry = token_registry().await;
    let host = registry.host().to_string();
    let dir = temp_dir("pipeline");
    write_pipeline(&dir, &host);
    write_docker_config(&dir, &host);

    let out = pullcheck(&["check", ".vela.yml", "--docker-config", "docker"], &dir);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    // The typo'd tag, at its line and column, with a suggestion.
    assert!(
        shown.lines().any(|l| l.starts_with("missing")
            && l.contains("alpine:3.91")
            && l.contains(".vela.yml:17:16 step \"test\"")
            && l.contains("3.19")),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("missing") && l.contains("team/publisher:v2")),
        "{shown}"
    );
    // The merged anchor: the position is where the step uses the image, at its `<<: *go`
    // (the image is written in the anchor, at 3:10).
    assert!(
        shown.lines().any(|l| l.starts_with("present")
            && l.contains("golang:1.22")
            && l.contains(".vela.yml:12:13")),
        "{shown}"
    );
    assert!(shown.lines().any(|l| l.starts_with("deferred")), "{shown}");
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("skipped") && l.contains("template")),
        "{shown}"
    );
    assert!(
        shown.contains(
            "5 images: 2 present, 2 failed, 0 unverified, 0 skipped, 1 deferred; \
             1 template step not checked"
        ),
        "{shown}"
    );

    let out = pullcheck(
        &[
            "check",
            ".vela.yml",
            "--docker-config",
            "docker",
            "--format",
            "json",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let images = json["images"].as_array().unwrap();
    assert_eq!(images.len(), 6);
    let typo = images
        .iter()
        .find(|i| i["reference"].as_str().unwrap().ends_with("alpine:3.91"))
        .unwrap();
    assert_eq!(typo["status"], "missing");
    assert_eq!(typo["missing"], "tag");
    assert_eq!(typo["policy"], "always");
    assert_eq!(typo["registry"], host.as_str());
    assert_eq!(typo["canonical"], format!("{host}/library/alpine:3.91"));
    assert_eq!(typo["origins"][0]["line"], 17);
    assert_eq!(typo["origins"][0]["kind"], "step");
    let repo = images
        .iter()
        .find(|i| i["reference"].as_str().unwrap().ends_with("publisher:v2"))
        .unwrap();
    assert_eq!(repo["missing"], "repository");
    assert_eq!(repo["policy"], "not_present");
    let golang = images
        .iter()
        .find(|i| i["reference"].as_str().unwrap().ends_with("golang:1.22"))
        .unwrap();
    assert_eq!(golang["status"], "present");
    assert!(golang["digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(golang["origins"][0]["stage"], "build");
    assert_eq!(golang["credential"]["username"], "ci");
    assert_eq!(json["summary"]["failed"], 2);
    assert_eq!(json["summary"]["deferred"], 1);

    // Only present images: exit 0. --include-on-start checks the deferred one.
    let ok = pullcheck(
        &[
            "check",
            "--docker-config",
            "docker",
            "--image",
            &format!("{host}/library/golang:1.22=not_present"),
            "--image",
            &format!("{host}/library/alpine:3.19=on_start"),
            "--include-on-start",
        ],
        &dir,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    assert!(text(&ok).contains("2 images: 2 present"), "{}", text(&ok));
}

/// Writes an executable `docker-credential-NAME` into `dir` from a child process, so this
/// multi-threaded test process never holds a descriptor open for writing it (which would
/// make executing it fail with "text file busy" if another thread forks meanwhile).
fn install_helper(dir: &Path, name: &str, script: &str) {
    let source = dir.join(format!("{name}.sh"));
    std::fs::write(&source, script).unwrap();
    let status = Command::new("install")
        .args(["-m", "0755"])
        .arg(&source)
        .arg(dir.join(format!("docker-credential-{name}")))
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn no_secret_in_any_output_at_any_log_level() {
    use base64::Engine as _;
    use pullcheck_testkit::kube::{self, ApiServer, DockerAuth};

    let registry = token_registry().await;
    let host = registry.host().to_string();
    let dir = temp_dir("canary");
    write_pipeline(&dir, &host);
    write_docker_config(&dir, &host);
    let b64 = base64::engine::general_purpose::STANDARD;
    let basic = b64.encode(format!("ci:{PASSWORD}"));
    let auths = [DockerAuth::new(host.as_str(), "ci", PASSWORD)];
    // The Secret's data as the API serves it: base64 of the whole `.dockerconfigjson`.
    let secret_data = b64.encode(kube::dockerconfigjson(&auths));

    // A `--pull-secret` file.
    std::fs::write(
        dir.join("secret.json"),
        kube::pull_secret_manifest("builds", "regcred", &auths),
    )
    .unwrap();
    // The cluster: the default ServiceAccount's pull secret, behind a bearer token.
    let api = ApiServer::start().unwrap();
    api.require_token();
    api.add_service_account("builds", "default", &["regcred"]);
    api.add_pull_secret("builds", "regcred", &auths);
    api.write_kubeconfig(&dir.join("kubeconfig"), None).unwrap();
    // A credential helper, named by a Docker config, found on PATH.
    let helper_dir = dir.join("helper");
    std::fs::create_dir_all(&helper_dir).unwrap();
    install_helper(
        &helper_dir,
        "canary",
        &format!(
            "#!/bin/sh\ncat > /dev/null\n\
             printf '{{\"ServerURL\":\"x\",\"Username\":\"ci\",\"Secret\":\"{PASSWORD}\"}}'\n"
        ),
    );
    std::fs::write(
        helper_dir.join("config.json"),
        format!(r#"{{"credHelpers":{{"{host}":"canary"}}}}"#),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        helper_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    // A compiled build carries the SCM installation token, which is never shown either.
    let build_token = "ghs_canaryBuildToken9c41";
    std::fs::write(
        dir.join("build.json"),
        format!(
            r#"{{"id": "octocat_hello-world_1", "token": "{build_token}", "steps": [
  {{"id": "step_1", "name": "test", "image": "{host}/library/alpine:${{TAG}}", "pull": "always",
    "environment": {{"TAG": "3.91"}}}}]}}"#
        ),
    )
    .unwrap();
    let explain_host = format!("{host}/library/alpine:3.19");
    // Each way in, for check (text and JSON) and explain (text and JSON), with what the
    // run must show it used (so the canary is known to have been near a secret).
    let ways: [(&[&str], &str); 4] = [
        (&["--docker-config", "docker"], "docker/config.json"),
        (
            &["--pull-secret", "secret.json"],
            "pull secret regcred (secret.json)",
        ),
        (
            &["-n", "builds", "--kubeconfig", "kubeconfig"],
            "pull secret regcred (namespace builds)",
        ),
        (&["--docker-config", "helper"], "docker-credential-canary"),
    ];
    let mut runs: Vec<(Vec<&str>, Option<&str>)> = Vec::new();
    for (flags, shows) in ways {
        for (base, names_credential) in [
            (vec!["check", ".vela.yml", "-vv"], true),
            (vec!["check", ".vela.yml", "--format", "json"], true),
            (vec!["check", "build.json", "-vv"], true),
            (
                vec!["explain", "alpine", "x/y", explain_host.as_str(), "-vv"],
                true,
            ),
            (
                vec!["explain", explain_host.as_str(), "--format", "json"],
                true,
            ),
        ] {
            let mut args = base;
            args.extend_from_slice(flags);
            runs.push((args, names_credential.then_some(shows)));
        }
    }
    // With -n, a pipeline check is on the Kubernetes runtime and checks its placeholder
    // image: keep it on the loopback registry (and near the pull secret).
    let placeholder = format!("{host}/library/alpine:3.19");
    for (args, _) in &mut runs {
        if args[0] == "check" && args.contains(&"-n") {
            args.extend_from_slice(&["--placeholder-image", placeholder.as_str()]);
        }
    }
    for (args, shows) in &runs {
        let out = Command::new(env!("CARGO_BIN_EXE_pullcheck"))
            .args(args)
            .current_dir(&dir)
            .env("PULLCHECK_LOG", "trace")
            .env("HOME", &dir)
            .env("PATH", &path)
            .env_remove("DOCKER_CONFIG")
            .env_remove("KUBECONFIG")
            .output()
            .unwrap();
        let shown = text(&out);
        // The check found the pushed images with the credential (exit 1: the pipeline
        // has a typo'd tag); explain exits 0.
        let expected = if args[0] == "check" { 1 } else { 0 };
        assert_eq!(out.status.code(), Some(expected), "{args:?}:\n{shown}");
        if let Some(shows) = shows {
            assert!(
                shown.contains(shows),
                "{args:?} does not show {shows}:\n{shown}"
            );
        }
        for secret in [
            PASSWORD,
            basic.as_str(),
            secret_data.as_str(),
            api.token(),
            build_token,
        ] {
            assert!(
                !shown.contains(secret),
                "{args:?} printed a secret:\n{shown}"
            );
        }
        // A bearer token from the token server is a JWT: base64url JSON header `eyJ`.
        assert!(!shown.contains("eyJ"), "{args:?} printed a token:\n{shown}");
    }
    // The cluster was asked, with its token, for named objects only.
    assert!(!api.requests().is_empty());
    for r in api.requests() {
        assert!(r.is_named_get(), "{r}");
    }
    // The explain output names the credential, without the secret.
    let out = pullcheck(
        &[
            "explain",
            &explain_host,
            "--format",
            "json",
            "--docker-config",
            "docker",
        ],
        &dir,
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["credentials"][0]["username"], "ci");
    assert_eq!(json["credentials"][0]["key"], host.as_str());
}

#[test]
fn explain_json_shape() {
    let dir = temp_dir("explain");
    let out = pullcheck(&["explain", "alpine", "Alpine", "--format", "json"], &dir);
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["ok"], true);
    assert_eq!(lines[0]["canonical"], "docker.io/library/alpine:latest");
    assert_eq!(lines[0]["domain"], "docker.io");
    assert_eq!(lines[0]["path"], "library/alpine");
    assert_eq!(lines[0]["tag"], "latest");
    assert_eq!(lines[0]["digest"], serde_json::Value::Null);
    assert_eq!(lines[0]["familiar"], "alpine:latest");
    assert_eq!(
        lines[0]["endpoints"][0]["url"],
        "https://registry-1.docker.io/v2/"
    );
    assert_eq!(lines[1]["ok"], false);
    assert_eq!(lines[1]["error"]["kind"], "uppercase");
    // An upper-case first component is a domain (distribution/reference), so this parses.
    let out = pullcheck(&["explain", "Foo/bar", "--format", "json"], &dir);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["domain"], "Foo");
    let out = pullcheck(
        &["explain", "example.com/Foo/bar", "--format", "json"],
        &dir,
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["kind"], "uppercase");
}

#[test]
fn usage_and_configuration_errors_exit_2_with_the_position() {
    let dir = temp_dir("errors");
    std::fs::write(
        dir.join("broken.yml"),
        "steps:\n  - name: a\n    image: [unclosed\n",
    )
    .unwrap();
    let out = pullcheck(&["check", "broken.yml"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("broken.yml:"), "{}", text(&out));

    let out = pullcheck(&["check", "missing.yml"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("missing.yml"), "{}", text(&out));

    let out = pullcheck(&["check"], &dir);
    assert_eq!(out.status.code(), Some(2));

    std::fs::write(
        dir.join("config.json"),
        "{\"auths\": {\"a.io\": {\"auth\": \"@@@\"}}}",
    )
    .unwrap();
    let out = pullcheck(
        &[
            "check",
            "--image",
            "alpine",
            "--docker-config",
            "config.json",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("config.json") && text(&out).contains("a.io"),
        "{}",
        text(&out)
    );

    // An unknown policy is an invalid use of that image, as in a file (issue 16 item 5).
    let out = pullcheck(&["check", "--image", "alpine=sometimes"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out)
            .lines()
            .any(|l| l.starts_with("invalid") && l.contains("sometimes")),
        "{}",
        text(&out)
    );
    // Durations need a unit; h is one; the message lists them.
    let out = pullcheck(
        &["check", "--image", "127.0.0.1:1/a", "--deadline", "10"],
        &dir,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("ms, s, m or h"), "{}", text(&out));
    let out = pullcheck(
        &["check", "--image", "alpine=never", "--deadline", "1h"],
        &dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn invalid_pull_value_is_an_invalid_image_at_its_position() {
    let dir = temp_dir("badpull");
    std::fs::write(
        dir.join(".vela.yml"),
        "version: \"1\"\nsteps:\n  - name: a\n    image: alpine\n    pull: sometimes\n    commands: [x]\n",
    )
    .unwrap();
    let out = pullcheck(&["check", ".vela.yml", "--format", "json"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["images"][0]["status"], "invalid");
    let detail = json["images"][0]["detail"].as_str().unwrap();
    assert!(detail.contains(".vela.yml:5:11"), "{detail}");
    // The policy as written, and the error's kind (issue 16, item 5); --image alike.
    assert_eq!(json["images"][0]["policy"], "sometimes", "{json}");
    assert_eq!(json["images"][0]["error"]["kind"], "pull_policy", "{json}");
    assert!(
        json["images"][0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("sometimes")),
        "{json}"
    );
    let out = pullcheck(
        &["check", "--image", "alpine=sometimes", "--format", "json"],
        &dir,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["images"][0]["policy"], "sometimes", "{json}");
    assert_eq!(json["images"][0]["error"]["kind"], "pull_policy", "{json}");
}

#[test]
fn a_closed_pipe_or_a_full_disk_is_no_panic() {
    use std::process::Stdio;
    let dir = temp_dir("pipe");
    let refs: Vec<String> = (0..3000).map(|i| format!("team/app:t{i}")).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .arg("explain")
        .args(&refs)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close our end at once, as `| head -c 0` would.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));

    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(["explain", "alpine"])
        .current_dir(&dir)
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot write the output") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn nothing_is_skipped_silently() {
    let dir = temp_dir("silent");
    std::fs::write(
        dir.join("rollout.yaml"),
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: web}\n\
         spec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: localhost:1/app:v1\n",
    )
    .unwrap();
    let out = pullcheck(
        &["check", "rollout.yaml", "--format", "json", "--allow-empty"],
        &dir,
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains("Rollout") && warnings.contains("rollout.yaml"),
        "{warnings}"
    );

    std::fs::write(
        dir.join("dup.yml"),
        "version: \"1\"\nsteps:\n  - name: a\n    image: localhost:1/first:1\nsteps:\n  - name: b\n    image: localhost:1/second:1\n",
    )
    .unwrap();
    let out = pullcheck(&["check", "dup.yml"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        // go-yaml v3's wording, as Vela refuses it.
        text(&out).contains("dup.yml:5:1")
            && text(&out).contains("mapping key \"steps\" already defined at line 2"),
        "{}",
        text(&out)
    );

    std::fs::write(
        dir.join("two.yml"),
        "version: \"1\"\nsteps:\n  - name: a\n    image: localhost:1/first:1\n    pull: never\n    commands: [x]\n---\nsteps:\n  - name: b\n    image: localhost:1/second:1\n",
    )
    .unwrap();
    let out = pullcheck(&["check", "two.yml"], &dir);
    assert!(text(&out).contains("warning: two.yml:7"), "{}", text(&out));
}

/// `pullcheck ARGS` in `dir` with `input` on its standard input.
fn with_stdin(args: &[&str], input: &str, dir: &std::path::Path) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn stdin_and_unreadable_inputs() {
    let dir = temp_dir("stdin");
    // `-` is standard input, named `<stdin>` in positions.
    let out = with_stdin(
        &["check", "-", "--format", "json"],
        "version: \"1\"\nsteps:\n  - name: a\n    image: alpine\n    pull: sometimes\n    commands: [x]\n",
        &dir,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let detail = json["images"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("<stdin>:5:11"), "{detail}");

    let out = pullcheck(&["check", "-", "-"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("more than once"), "{}", text(&out));

    // Not UTF-8: the position of the first bad byte.
    std::fs::write(dir.join("latin1.yml"), b"version: \"1\"\nstep\xe9s:\n").unwrap();
    let out = pullcheck(&["check", "latin1.yml"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("latin1.yml:2:5: not UTF-8 text"),
        "{}",
        text(&out)
    );

    // Endless input is cut at 64 MiB, not read into memory until it runs out.
    let out = pullcheck(&["check", "/dev/zero"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("/dev/zero: larger than 64 MiB; not read"),
        "{}",
        text(&out)
    );
}

/// `--build -` reads standard input as a compiled build whatever its keys (what the Vela Go
/// package's command transport sends): a build's refusal names the field, with no
/// `<stdin>:LINE:COLUMN` into a JSON its user never saw, and a build without `id` is
/// compiled (its `${VAR:-default}` gets the worker's substitution). A text that is not
/// JSON keeps the line and column of its syntax error.
#[test]
fn a_build_on_standard_input_has_no_positions() {
    let dir = temp_dir("build-stdin");
    let run = |args: &[&str], input: &str| with_stdin(args, input, &dir);
    let refused = r#"{"id": "b", "steps": [{"id": "s", "name": "a", "image": 5}]}"#;
    // As a file (detected), the position is kept; as --build, none.
    let out = run(&["check", "-"], refused);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>:1:"));
    let out = run(&["check", "--build", "-"], refused);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stderr.starts_with("pullcheck: error: <stdin>: ") && stderr.contains("steps[0].image"),
        "{stderr}"
    );

    // No `id`: still compiled; an unknown variable is empty and the default applies.
    let build = r#"{"steps": [{"id": "s", "name": "a", "image": "127.0.0.1:1/team/${APP:-app}:v1", "pull": "never"}]}"#;
    let out = run(&["check", "--build", "-", "--format", "json"], build);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["images"][0]["substituted"], "127.0.0.1:1/team/app:v1");
    assert_eq!(json["images"][0]["status"], "skipped");
    assert_eq!(json["images"][0]["origins"][0]["kind"], "step");
    assert_eq!(json["images"][0]["origins"][0]["name"], "a");

    let out = pullcheck(&["check", "-", "--build", "-"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));

    // Not JSON (YAML's flow syntax): encoding/json's SyntaxError, at its line and column,
    // as Go's `json.Unmarshal` refuses it ("invalid character 'i' looking for beginning
    // of object key string", offset 2).
    let out = run(
        &["check", "--build", "-"],
        "{id: b,\n steps: [{name: a, image: '127.0.0.1:1/a', pull: never}]}",
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stderr.starts_with("pullcheck: error: <stdin>:1:2: ")
            && stderr.contains("invalid character 'i' looking for beginning of object key string"),
        "{stderr}"
    );
}

/// `-v` is pullcheck's debug, `-vv` its trace; `-vvv` adds the libraries' (the TLS
/// hello that the plain-HTTP registry refuses, before the client falls back to HTTP).
#[tokio::test]
async fn verbosity_levels_choose_whose_trace() {
    let registry = Registry::builder().start().await.unwrap();
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    let dir = temp_dir("verbosity");
    let image = format!("{}/team/app:v1", registry.host());
    let run = |v: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_pullcheck"))
            .args(["check", "--image", &image, v])
            .current_dir(&dir)
            .env("HOME", &dir)
            .env("NO_COLOR", "1")
            .env_remove("PULLCHECK_LOG")
            .env_remove("DOCKER_CONFIG")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{v}: {}", text(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let v = run("-v");
    assert!(v.contains("DEBUG pullcheck_registry::"), "{v}");
    assert!(!v.contains("TRACE"), "{v}");
    let vv = run("-vv");
    // The plan of each reference, each answer and the headers that decided it.
    for event in [
        "TRACE pullcheck::query: plan",
        "TRACE pullcheck::query: answer",
        "TRACE pullcheck_registry::transport: registry response headers",
    ] {
        assert!(vv.contains(event), "{event}: {vv}");
    }
    assert!(!vv.contains(" rustls::"), "{vv}");
    let vvv = run("-vvv");
    assert!(vvv.contains(" rustls::"), "{vvv}");
}

/// A deadline too long to add to the clock is no deadline, not a panic (found by a
/// reviewer: `--deadline 18446744073709551615m` overflowed `Instant + Duration`).
#[test]
fn an_endless_deadline_is_no_panic() {
    let dir = temp_dir("endless");
    // Port 1 on loopback refuses at once; one attempt, so the run ends quickly.
    for deadline in ["18446744073709551615s", "18446744073709551615m"] {
        let out = pullcheck(
            &[
                "check",
                "--image",
                "127.0.0.1:1/team/app:v1",
                "--max-attempts",
                "1",
                "--deadline",
                deadline,
            ],
            &dir,
        );
        assert_eq!(out.status.code(), Some(3), "{deadline}: {}", text(&out));
        assert!(!text(&out).contains("panicked"), "{}", text(&out));
        assert!(text(&out).contains("unreachable"), "{}", text(&out));
    }
}

/// Every file option reads through the same 64 MiB limit: a wrong path such as
/// `/dev/zero` is an error naming it, not memory exhausted (found by a reviewer for
/// the config options after the limit covered only pipelines).
#[test]
fn every_file_option_has_the_size_limit() {
    let dir = temp_dir("limits");
    // A mirror configuration has its own, lower limit (pullcheck_mirrors::MAX_CONFIG_BYTES).
    for (option, limit) in [
        ("--docker-config", "64 MiB"),
        ("--auth-file", "64 MiB"),
        ("--pull-secret", "64 MiB"),
        ("--registries-conf", "1024 KiB"),
        ("--docker-daemon-config", "1024 KiB"),
        ("--pods-template-file", "64 MiB"),
        ("--ca-file", "64 MiB"),
    ] {
        let out = pullcheck(
            &[
                "check",
                "--image",
                "127.0.0.1:1/team/app:v1",
                option,
                "/dev/zero",
            ],
            &dir,
        );
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{option}: {shown}");
        assert!(shown.contains("/dev/zero"), "{option}: {shown}");
        assert!(
            shown.contains(&format!("larger than {limit}")),
            "{option}: {shown}"
        );
    }
}

/// A `--ca-file` that cannot be used is named by its flag, as every file option is
/// (`--ca-file PATH: ...`), in `check` and in `serve`: the registry client's error is
/// data (`ClientError::CaFile`), not a message starting `ca_file:`.
#[test]
fn an_unusable_ca_file_names_the_flag() {
    let dir = temp_dir("ca-file");
    std::fs::write(dir.join("not-pem.crt"), "not a certificate\n").unwrap();
    let missing = dir.join("absent.pem").display().to_string();
    let not_pem = dir.join("not-pem.crt").display().to_string();
    for command in [
        vec!["check", "--image", "127.0.0.1:1/team/app:v1"],
        vec!["serve", "--listen", "127.0.0.1:0"],
    ] {
        for (file, problem) in [
            (&missing, None),
            (
                &not_pem,
                Some("not a PEM certificate bundle: it holds no certificate"),
            ),
        ] {
            let mut args = command.clone();
            args.extend(["--ca-file", file]);
            let out = pullcheck(&args, &dir);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            let line = stderr
                .lines()
                .find(|l| l.starts_with("pullcheck: error: "))
                .unwrap_or_else(|| panic!("{args:?}: {stderr}"));
            let head = format!("pullcheck: error: --ca-file {file}: ");
            assert!(line.starts_with(&head), "{args:?}: {line}");
            if let Some(problem) = problem {
                assert_eq!(&line[head.len()..], problem, "{args:?}");
            }
        }
    }
}

/// `explain` refuses what `check` reports as invalid (a port outside 1–65535, no
/// registry), and never prints a control character of its input as it is.
#[test]
fn explain_agrees_with_check_and_escapes_its_input() {
    let dir = temp_dir("explain-invalid");
    for (input, kind) in [
        ("localhost:99999/x", "port_out_of_range"),
        ("localhost:0/x", "port_out_of_range"),
        ("foo_bar.com/app", "no_registry"),
    ] {
        let out = pullcheck(&["explain", input, "--format", "json"], &dir);
        assert_eq!(out.status.code(), Some(1), "{input}: {}", text(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &json; // one input: one object
        assert_eq!(e["ok"], false, "{e}");
        assert_eq!(e["error"]["kind"], kind, "{e}");
        assert_eq!(e["endpoints"].as_array().map(Vec::len), Some(0), "{e}");
        let out = pullcheck(&["check", "--image", input, "--format", "json"], &dir);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["images"][0]["status"], "invalid", "{input}");
    }
    let out = pullcheck(&["explain", "alp\u{1b}[31mine\nx"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
    assert!(shown.starts_with("alp\\u{1b}[31mine\\nx\n"), "{shown:?}");
}

/// Inputs without any image are an error naming each file and what was expected, not a
/// green gate that checked nothing; `--allow-empty` passes (issue 16, item 1).
#[test]
fn inputs_without_an_image_exit_2_unless_allowed() {
    let dir = temp_dir("empty");
    std::fs::write(
        dir.join("tpl.yml"),
        "version: \"1\"\ntemplates: [{name: t, source: t.yml, type: github}]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    )
    .unwrap();
    let out = pullcheck(&["check", "tpl.yml", "cm.yaml"], &dir);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("no image to check in tpl.yml, cm.yaml"),
        "{shown}"
    );
    assert!(
        shown.contains("Vela pipeline") && shown.contains("Kubernetes"),
        "{shown}"
    );
    assert!(shown.contains("--allow-empty"), "{shown}");
    let out = pullcheck(&["check", "tpl.yml", "--allow-empty"], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // An empty file holds no image either: exit 2 without --allow-empty, 0 with it,
    // with no row and a warning naming the file.
    std::fs::write(dir.join("empty.yml"), "# nothing yet\n").unwrap();
    let out = pullcheck(&["check", "empty.yml"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = pullcheck(
        &["check", "empty.yml", "--allow-empty", "--format", "json"],
        &dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["images"], serde_json::json!([]), "{report}");
    assert_eq!(report["summary"]["total"], 0, "{report}");
    assert_eq!(
        report["warnings"],
        serde_json::json!(["empty.yml: no image found in this file"]),
        "{report}"
    );
}

/// Every unreadable or unparsable input is reported, not only the first (item 4).
#[test]
fn every_bad_input_is_reported() {
    let dir = temp_dir("bad-inputs");
    std::fs::write(
        dir.join("a.yml"),
        "version: \"1\"\nsteps:\n  - name: a\n    image: alpine\n    commands: [x]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("broken.yml"),
        "steps:\n  - name: a\n    image: [unclosed\n",
    )
    .unwrap();
    std::fs::write(dir.join("dup.yml"), "steps: []\nsteps: []\n").unwrap();
    let out = pullcheck(
        &["check", "a.yml", "broken.yml", "nosuch.yml", "dup.yml"],
        &dir,
    );
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    for name in ["broken.yml:", "nosuch.yml: cannot read", "dup.yml:2"] {
        assert!(
            shown
                .lines()
                .any(|l| l.starts_with("pullcheck: error: ") && l.contains(name)),
            "{name}: {shown}"
        );
    }
    assert!(!shown.contains("a.yml"), "{shown}");
    // Bad option files and bad inputs: all of them.
    let out = pullcheck(
        &[
            "check",
            "broken.yml",
            "--pull-secret",
            "nosuch.json",
            "--pull-secret",
            "a.yml",
        ],
        &dir,
    );
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    for name in [
        "broken.yml:",
        "--pull-secret nosuch.json:",
        "--pull-secret a.yml:",
    ] {
        assert!(
            shown.contains(&format!("pullcheck: error: {name}")),
            "{name}: {shown}"
        );
    }
}

/// Each file option's error names the option, the file and what it should have been
/// (issue 16, item 3): a pipeline given where a configuration file belongs.
#[test]
fn file_option_errors_name_the_option_and_the_format() {
    let dir = temp_dir("option-errors");
    std::fs::write(
        dir.join("good.yml"),
        "version: \"1\"\nsteps:\n  - name: a\n    image: alpine\n    commands: [x]\n",
    )
    .unwrap();
    for (option, value, want) in [
        (
            "--docker-config",
            "good.yml",
            "--docker-config good.yml: not a Docker config.json: line 1, column ",
        ),
        (
            "--auth-file",
            "good.yml",
            "--auth-file good.yml: not a containers auth.json: line 1, column ",
        ),
        ("--pull-secret", "good.yml", "--pull-secret good.yml: "),
        (
            "--registries-conf",
            "good.yml",
            "--registries-conf good.yml: not a containers registries.conf: line 1, column ",
        ),
        ("--hosts-dir", "nosuch", "--hosts-dir nosuch: "),
        (
            "--docker-daemon-config",
            "good.yml",
            "--docker-daemon-config good.yml: not a Docker daemon.json: line 1, column ",
        ),
        (
            "--pods-template-file",
            "good.yml",
            "--pods-template-file good.yml:1:1: invalid PipelinePodsTemplate: ",
        ),
        ("--kubeconfig", "nosuch", "--kubeconfig nosuch: "),
        (
            "--kubeconfig",
            "good.yml",
            "--kubeconfig good.yml: not a kubeconfig",
        ),
    ] {
        let mut args = vec!["check", "good.yml", option, value];
        if option == "--kubeconfig" {
            args.extend(["-n", "ci"]);
        }
        let out = pullcheck(&args, &dir);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{option}: {shown}");
        assert!(
            shown.contains(&format!("pullcheck: error: {want}")),
            "{option}: {shown}"
        );
        assert!(!shown.contains("'\""), "{option}: doubled quotes: {shown}");
    }
}

/// A configuration file with an error next to a secret (a password, a token, an auth
/// value): the error names the option, the file and the position, and holds none of the
/// file's values, whatever parser read it.
#[test]
fn file_errors_hold_none_of_the_files_values() {
    const CANARY: &str = "file-value-canary-4be2";
    let dir = temp_dir("canary-files");
    std::fs::write(
        dir.join("p.yml"),
        "version: \"1\"\nsteps:\n  - name: a\n    image: 127.0.0.1:1/x:1\n    commands: [x]\n",
    )
    .expect("write");
    std::fs::create_dir_all(dir.join("hosts/127.0.0.1:1")).expect("dir");
    let files = [
        // JSON: a string that never ends, a password of the wrong type.
        ("syntax.json", format!("{{\"auths\": {{\"127.0.0.1:1\": {{\"auth\": \"{CANARY}\", \"password\": [\"{CANARY}}}}}")),
        ("type.json", format!("{{\"auths\": {{\"127.0.0.1:1\": {{\"auth\": 5, \"password\": \"{CANARY}\"}}}}}}")),
        // TOML: an unclosed string, a value of the wrong type.
        ("syntax.conf", format!("[[registry]]\nlocation = \"{CANARY}\ninsecure = true\n")),
        ("type.conf", format!("[[registry]]\nlocation = \"127.0.0.1:1\"\ninsecure = \"{CANARY}\"\n")),
        ("syntax.toml", format!("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"127.0.0.1:1\".auth]\npassword = \"{CANARY}\nusername = \"u\"\n")),
        ("type.toml", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"127.0.0.1:1\".auth]\npassword = 40952271\n".to_owned()),
        ("hosts/127.0.0.1:1/hosts.toml", format!("[host.\"https://127.0.0.1:2\"]\n  header = {{authorization = \"{CANARY}\"\n")),
        ("template.yml", format!("apiVersion: go-vela.github.io/v1alpha1\nkind: PipelinePodsTemplate\nmetadata: {{name: t}}\nspec: \"{CANARY}\"\n")),
    ];
    for (name, text) in &files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    for (option, value, want) in [
        (
            "--docker-config",
            "syntax.json",
            "--docker-config syntax.json: not a Docker config.json: line 1, column ",
        ),
        (
            "--docker-config",
            "type.json",
            "--docker-config type.json: invalid Docker config.json: ",
        ),
        (
            "--auth-file",
            "syntax.json",
            "--auth-file syntax.json: not a containers auth.json: line 1, column ",
        ),
        (
            "--auth-file",
            "type.json",
            "--auth-file type.json: invalid containers auth.json: ",
        ),
        (
            "--registries-conf",
            "syntax.conf",
            "--registries-conf syntax.conf: not a containers registries.conf: line 2, column ",
        ),
        (
            "--registries-conf",
            "type.conf",
            "--registries-conf type.conf: not a containers registries.conf: line 3, column ",
        ),
        (
            "--containerd-config",
            "syntax.toml",
            "--containerd-config syntax.toml: not a containerd config.toml: line 3, column ",
        ),
        (
            "--containerd-config",
            "type.toml",
            "--containerd-config type.toml: not a containerd config.toml: ",
        ),
        ("--hosts-dir", "hosts", ""),
        (
            "--pods-template-file",
            "template.yml",
            "--pods-template-file template.yml:4:",
        ),
    ] {
        let out = pullcheck(
            &["check", "p.yml", "--runtime", "docker", option, value],
            &dir,
        );
        let shown = text(&out);
        assert!(!shown.contains(CANARY), "{option} {value}: {shown}");
        assert!(!shown.contains("40952271"), "{option} {value}: {shown}");
        if want.is_empty() {
            // containerd ignores a broken hosts.toml: a warning, the image still checked.
            assert!(
                shown.contains(
                    "warning: containerd ignores hosts/127.0.0.1:1/hosts.toml: line 2, column "
                ),
                "{shown}"
            );
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{option} {value}: {shown}");
        assert_eq!(shown.lines().count(), 1, "{option} {value}: {shown}");
        assert!(
            shown.starts_with(&format!("pullcheck: error: {want}")),
            "{option} {value}: {shown}"
        );
    }
}

/// A reference that parses but names no registry to ask is `invalid_reference` with its
/// `error.kind`, as a reference the parser refuses is.
#[test]
fn unusable_references_keep_their_error_kind() {
    let dir = temp_dir("unusable");
    let out = pullcheck(
        &[
            "check",
            "--format",
            "json",
            "--image",
            "localhost:99999/x",
            "--image",
            "foo_bar.com/app",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows: Vec<(String, String, String, bool)> = report["images"]
        .as_array()
        .expect("images")
        .iter()
        .map(|i| {
            (
                i["reference"].as_str().unwrap_or_default().to_owned(),
                i["reason"].as_str().unwrap_or_default().to_owned(),
                i["error"]["kind"].as_str().unwrap_or_default().to_owned(),
                i["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
            )
        })
        .collect();
    let row = |r: &str, k: &str| {
        (
            r.to_owned(),
            "invalid_reference".to_owned(),
            k.to_owned(),
            true,
        )
    };
    assert_eq!(
        rows,
        [
            row("localhost:99999/x", "port_out_of_range"),
            row("foo_bar.com/app", "no_registry"),
        ]
    );
}

/// The report's shape (item 6): `canonical` for a skipped image too; the summary counts
/// uses and lists template steps apart; a workload row names its container once, in
/// file order (init containers first); rows fit a terminal, one line each when piped.
#[test]
fn the_report_counts_uses_and_fits_the_terminal() {
    let dir = temp_dir("shape");
    std::fs::write(
        dir.join(".vela.yml"),
        "version: \"1\"\nsteps:\n  - name: a\n    image: 127.0.0.1:1/team/app:v1\n    commands: [x]\n\
         \x20 - name: b\n    image: 127.0.0.1:1/team/app:v1\n    commands: [x]\n\
         \x20 - name: old\n    image: alpine:3.19\n    pull: never\n    commands: [x]\n\
         \x20 - name: lint\n    template:\n      name: golangci\n\
         templates: [{name: golangci, source: t.yml, type: github}]\n",
    )
    .unwrap();
    let args = ["check", ".vela.yml", "--max-attempts", "1"];
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let out = pullcheck(&json_args, &dir);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let never = &json["images"][1];
    assert_eq!(never["status"], "skipped", "{json}");
    assert_eq!(
        never["canonical"], "docker.io/library/alpine:3.19",
        "{json}"
    );
    let summary = &json["summary"];
    assert_eq!(
        (
            &summary["total"],
            &summary["unverified"],
            &summary["skipped"],
            &summary["template_steps"]
        ),
        (
            &serde_json::json!(3),
            &serde_json::json!(2),
            &serde_json::json!(1),
            &serde_json::json!(1)
        ),
        "{json}"
    );
    let out = pullcheck(&args, &dir);
    let shown = text(&out);
    assert!(
        shown.contains(
            "3 images: 0 present, 0 failed, 2 unverified, 1 skipped, 0 deferred; \
                        1 template step not checked"
        ),
        "{shown}"
    );
    // Piped: one line per image, however long.
    let row = shown
        .lines()
        .find(|l| l.starts_with("unreachable"))
        .unwrap();
    assert!(
        row.contains("step \"a\"") && row.contains("connection refused"),
        "{row}"
    );

    // On an 80-column terminal (a pty from util-linux `script`): no line is wider, the
    // detail goes under its row.
    let bin = env!("CARGO_BIN_EXE_pullcheck");
    let out = Command::new("script")
        .args([
            "-qec",
            &format!("{bin} check .vela.yml --max-attempts 1"),
            "/dev/null",
        ])
        .current_dir(&dir)
        .env("COLUMNS", "80")
        .env("NO_COLOR", "1")
        .env("HOME", &*dir)
        .output()
        .expect("script");
    let shown = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(shown.contains("unreachable"), "{shown}");
    for line in shown.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}\n{shown}",
            line.chars().count()
        );
    }
    let mut lines = shown.lines();
    let _ = lines.find(|l| l.starts_with("unreachable"));
    let next = lines.next().unwrap_or_default();
    assert!(
        next.starts_with("            ") && !next.trim().is_empty(),
        "{shown}"
    );

    // A workload: its container once, in file order.
    std::fs::write(
        dir.join("web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n\
         \x20     initContainers:\n        - name: setup\n          image: busybox:1.36\n          imagePullPolicy: Never\n\
         \x20     containers:\n        - name: app\n          image: nginx:1.27\n          imagePullPolicy: Never\n",
    )
    .unwrap();
    let out = pullcheck(&["check", "web.yaml"], &dir);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let rows: Vec<&str> = shown.lines().filter(|l| l.starts_with("skipped")).collect();
    assert_eq!(rows.len(), 2, "{shown}");
    assert!(
        rows[0].contains("busybox") && rows[1].contains("nginx"),
        "{shown}"
    );
    assert!(
        rows[1].contains("web.yaml:13:") && rows[1].contains(" Deployment/web container app"),
        "{shown}"
    );
    assert!(!shown.contains("container \"Deployment"), "{shown}");
}

/// `--kubeconfig` and `--context` without `--namespace` or `--pods-template` are not
/// used; that is said, instead of silently ignoring a path that may be wrong (noticed in
/// the review of issue 16).
#[test]
fn an_unused_kubeconfig_is_warned_about() {
    let dir = temp_dir("unused-kubeconfig");
    let out = pullcheck(
        &[
            "explain",
            "alpine",
            "--kubeconfig",
            "nosuch",
            "--context",
            "ci",
        ],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        stderr.contains(
            "pullcheck: warning: --kubeconfig nosuch and --context ci not used: the cluster \
             is asked only with --namespace or --pods-template"
        ),
        "{stderr}"
    );
    let out = pullcheck(
        &["explain", "alpine", "--pods-template-file", "/nonexistent"],
        &dir,
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "pullcheck: warning: --pods-template-file /nonexistent not used: explain reads a \
             template's pull secrets from the cluster, with --namespace"
        ),
        "{}",
        text(&out)
    );
    let out = pullcheck(&["explain", "alpine"], &dir);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("warning"),
        "{}",
        text(&out)
    );
}

#[test]
fn explain_shows_containerd_config_auth_per_contacted_host() {
    let dir = temp_dir("containerd-config");
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        r#"version = 2
[plugins."io.containerd.grpc.v1.cri".registry.mirrors."registry.example.com"]
  endpoint = ["https://mirror.example.com"]
[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example.com".auth]
  username = "node"
  password = "canary-config-password-3"
"#,
    )
    .unwrap();
    let path = config.to_string_lossy().into_owned();
    let out = pullcheck(
        &[
            "explain",
            "registry.example.com/app:1",
            "--containerd-config",
            &path,
            "--format",
            "json",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("canary-config-password-3"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let endpoints = v["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 2);
    assert_eq!(endpoints[0]["url"], "https://mirror.example.com/v2/");
    assert_eq!(endpoints[0]["mirror"], true);
    let c = endpoints[0]["credentials"].as_array().unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["key"], r#"configs."mirror.example.com".auth"#);
    assert_eq!(c[0]["username"], "node");
    // The registry itself has no entry: anonymous there.
    assert_eq!(endpoints[1]["url"], "https://registry.example.com/v2/");
    assert_eq!(endpoints[1]["credentials"].as_array().unwrap().len(), 0);

    // What containerd refuses to load is an exit-2 error naming the option and the key;
    // the one parse serves mirrors and credentials, so an auth table of the wrong type
    // (the mirror side's error) and an `auth` that is not base64 of user:password
    // (decoded by the credential side) are too; none shows the value.
    const SECTION: &str = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry";
    for (table, expect) in [
        (
            "]\n  config_path = \"/nonexistent\"\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"h\".tls]\n  insecure_skip_verify = true",
            "configs.\"h\".tls",
        ),
        (
            ".configs.\"h\".auth]\n  password = 7",
            "configs.\"h\".auth.password is not a string",
        ),
        (
            ".configs.\"h\".auth]\n  auth = \"bm9jb2xvbi1jYW5hcnk=\"",
            "configs.\"h\".auth: `auth` does not decode to user:password",
        ),
    ] {
        std::fs::write(&config, format!("{SECTION}{table}\n")).unwrap();
        let out = pullcheck(
            &[
                "explain",
                "registry.example.com/app:1",
                "--containerd-config",
                &path,
            ],
            &dir,
        );
        assert_eq!(out.status.code(), Some(2), "{table}");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains("--containerd-config"), "{err}");
        assert!(err.contains(expect), "{err}");
        assert!(!err.contains("bm9jb2xvbi1jYW5hcnk"), "{err}");
    }
}

/// A step with both `image:` and `template:` is a template step (the expanded template
/// replaces it), counted in `template_steps`, not `skipped`; a `--named-image` row
/// names its container in the text report, as JSON does. Nothing is asked of a
/// registry (every other image is `on_start`).
#[test]
fn a_template_step_with_an_image_and_a_named_image_in_the_text_report() {
    let dir = temp_dir("tmpl-image");
    std::fs::write(
        dir.join(".vela.yml"),
        "version: \"1\"\ntemplates: [{name: go, source: t.yml, type: github}]\nsteps:\n\
         \x20 - name: a\n    image: 127.0.0.1:1/team/app:v1\n    template:\n      name: go\n\
         \x20 - name: b\n    image: 127.0.0.1:1/team/app:v2\n    pull: on_start\n    commands: [x]\n",
    )
    .unwrap();
    let named = "outputs=127.0.0.1:1/vela/outputs:1=on_start";
    let args = ["check", ".vela.yml", "--named-image", named];
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let out = pullcheck(&json_args, &dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let summary = &json["summary"];
    assert_eq!(
        (
            summary["total"].as_u64(),
            summary["skipped"].as_u64(),
            summary["deferred"].as_u64(),
            summary["template_steps"].as_u64()
        ),
        (Some(2), Some(0), Some(2), Some(1)),
        "{json}"
    );
    let out = pullcheck(&args, &dir);
    let shown = text(&out);
    let row: Vec<&str> = shown
        .lines()
        .find(|l| l.contains("127.0.0.1:1/vela/outputs:1"))
        .expect("the named image's row")
        .split_whitespace()
        .collect();
    assert_eq!(
        row.get(2..4),
        Some(&["image", "\"outputs\""][..]),
        "{shown}"
    );
}

/// `--namespace ''` (and `.`, `..`, a `/` or `%` in it or in `--pods-template`) is
/// refused before the cluster is asked, as client-go refuses such a name (rest/request.go
/// `Name`, `Namespace`, `IsValidPathSegmentName`), by check and explain alike; an empty
/// `--pods-template` is no template, as go-vela/worker's empty
/// `PipelinePodsTemplateName` (runtime/kubernetes/build.go) and the plugin's empty
/// PARAMETER_PODS_TEMPLATE.
#[test]
fn names_that_are_no_path_segment_exit_2() {
    let dir = temp_dir("path-segment-names");
    let image = ["--image", "127.0.0.1:1/team/app:v1", "--max-attempts", "1"];
    for (args, message) in [
        (
            vec!["--namespace", ""],
            "--namespace \"\" may not be empty: it is one path segment of the Kubernetes API",
        ),
        (
            vec!["-n", "ci", "--pods-template", ".."],
            "--pods-template \"..\" may not be '..': it is one path segment of the Kubernetes \
             API",
        ),
    ] {
        for command in ["check", "explain"] {
            let mut all = vec![command];
            if command == "check" {
                all.extend(image);
            } else {
                all.push("127.0.0.1:1/team/app:v1");
            }
            all.extend(&args);
            let out = pullcheck(&all, &dir);
            assert_eq!(out.status.code(), Some(2), "{all:?}: {}", text(&out));
            assert_eq!(
                String::from_utf8_lossy(&out.stderr),
                format!("pullcheck: error: {message}\n"),
                "{all:?}"
            );
        }
    }
    // An empty template name is none: the cluster is not asked (the kubeconfig unused).
    let mut all = vec!["check"];
    all.extend(image);
    all.extend(["--pods-template", "", "--kubeconfig", "nosuch"]);
    let out = pullcheck(&all, &dir);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(
            "pullcheck: warning: --kubeconfig nosuch not used: the cluster is asked only \
             with --namespace or --pods-template"
        ),
        "{}",
        text(&out)
    );
}

/// Without a cluster to ask there is no lookup to time: a deadline that has passed
/// before the check starts leaves the images unverified (exit 3), never blamed on
/// Kubernetes lookups (exit 2) (rev23q finding 9).
#[test]
fn no_lookup_deadline_without_a_cluster() {
    let dir = temp_dir("no-lookup-deadline");
    for _ in 0..5 {
        let out = pullcheck(
            &[
                "check",
                "--image",
                "127.0.0.1:1/team/app:v1",
                "--deadline",
                "1ms",
            ],
            &dir,
        );
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    }
}
