//! `${VAR}` images end to end through `pullcheck check` against a real registry: the
//! substituted image is what is checked, a value known only at build time is
//! `unresolved` (exit 3), and a compiled build's `token` never appears in any output.

use crate::util::text;
use std::path::Path;
use std::process::{Command, Output};

use pullcheck_testkit::{ImageKind, Registry};

use crate::util::temp_dir;

/// The SCM installation token a compiled build carries; must never be shown.
const TOKEN: &str = "ghs_canaryTOKEN0123456789abcdefXYZ";

fn pullcheck(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("PULLCHECK_LOG", "trace")
        .env_remove("DOCKER_CONFIG")
        .env_remove("KUBECONFIG")
        .env("HOME", dir)
        .output()
        .expect("run pullcheck")
}

async fn registry() -> Registry {
    let registry = Registry::anonymous().await.unwrap();
    registry
        .push("library/golang", "1.22", ImageKind::OciIndex)
        .await
        .unwrap();
    registry
        .push("library/alpine", "3.19", ImageKind::DockerManifest)
        .await
        .unwrap();
    registry
}

#[tokio::test]
async fn pipeline_source_with_variables() {
    let registry = registry().await;
    let host = registry.host().to_string();
    let dir = temp_dir("source");
    let pipeline = format!(
        r#"version: "1"
environment:
  REGISTRY: {host}
  GO_VERSION: "1.22"
steps:
  - name: build
    image: ${{REGISTRY}}/library/golang:${{GO_VERSION}}
    commands: [go build]
  - name: unknown
    image: ${{REGISTRY}}/library/golang:${{NOT_SET}}
    commands: [go build]
  - name: secret
    image: ${{REGISTRY}}/library/alpine:${{ALPINE_TAG}}
    secrets: [ alpine_tag ]
"#
    );
    std::fs::write(dir.join(".vela.yml"), pipeline).unwrap();

    let out = pullcheck(&["check", ".vela.yml"], &dir);
    let shown = text(&out);
    // Nothing failed; two images cannot be known before the build.
    assert_eq!(out.status.code(), Some(3), "{shown}");
    assert!(
        shown.lines().any(|l| l.starts_with("present")
            && l.contains(&format!(
                "${{REGISTRY}}/library/golang:${{GO_VERSION}} → {host}/library/golang:1.22"
            ))),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("unresolved")
                && l.contains("${NOT_SET} is not set in the pipeline")),
        "{shown}"
    );
    assert!(
        shown.lines().any(|l| l.starts_with("unresolved")
            && l.contains("${ALPINE_TAG} is the target of secret `alpine_tag`")),
        "{shown}"
    );
    assert!(
        shown.contains("3 images: 1 present, 0 failed, 2 unverified"),
        "{shown}"
    );

    let out = pullcheck(&["check", ".vela.yml", "--format", "json"], &dir);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let images = json["images"].as_array().unwrap();
    assert_eq!(
        images[0]["reference"],
        "${REGISTRY}/library/golang:${GO_VERSION}"
    );
    assert_eq!(
        images[0]["substituted"],
        format!("{host}/library/golang:1.22").as_str()
    );
    assert_eq!(
        images[0]["canonical"],
        format!("{host}/library/golang:1.22").as_str()
    );
    assert_eq!(images[0]["status"], "present");
    assert_eq!(images[1]["status"], "unresolved");
    assert_eq!(images[1]["substituted"], serde_json::Value::Null);
    assert_eq!(images[2]["status"], "unresolved");
    assert_eq!(json["summary"]["unverified"], 2);
    // No registry request for what is unresolved: only golang was asked for.
    let asked: Vec<String> = registry
        .requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method != "PUT" && r.path.contains("/manifests/"))
        .map(ToString::to_string)
        .collect();
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|r| r.contains("golang")), "{asked:?}");
}

fn compiled_build(host: &str) -> String {
    format!(
        r#"{{
  "id": "octocat_hello-world_7",
  "version": "1",
  "token": "{TOKEN}",
  "environment": {{ "VELA_BUILD_NUMBER": "7" }},
  "steps": [
    {{ "id": "step_octocat_hello-world_7_build", "name": "build",
       "image": "{host}/library/golang:${{GO_VERSION}}", "pull": "always",
       "environment": {{ "GO_VERSION": "1.22" }} }},
    {{ "id": "step_octocat_hello-world_7_publish", "name": "publish",
       "image": "{host}/library/alpine:${{ALPINE_TAG}}", "pull": "always",
       "environment": {{}},
       "secrets": [ {{ "source": "alpine_tag", "target": "ALPINE_TAG" }} ] }}
  ]
}}"#
    )
}

#[tokio::test]
async fn compiled_build_with_variables_and_its_token_never_shown() {
    let registry = registry().await;
    let host = registry.host().to_string();
    let dir = temp_dir("compiled");
    std::fs::write(dir.join("build.json"), compiled_build(&host)).unwrap();

    let out = pullcheck(&["check", "build.json", "-vvv"], &dir);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(3), "{shown}");
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("present")
                && l.contains(&format!("→ {host}/library/golang:1.22"))),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("unresolved") && l.contains("secret `alpine_tag`")),
        "{shown}"
    );

    // The token, through every way a build file gets shown.
    let broken = compiled_build(&host).replace("\"version\": \"1\",", "\"version\": \"1\"");
    std::fs::write(dir.join("broken.json"), broken).unwrap();
    let wrong_shape =
        format!(r#"{{"id": "x", "token": "{TOKEN}", "steps": {{"token": "{TOKEN}"}}}}"#);
    std::fs::write(dir.join("shape.json"), wrong_shape).unwrap();
    let token_image = format!(
        r#"{{"id": "x", "token": "{TOKEN}", "steps": [{{"name": "t", "image": "${{TOKEN}}x:${{"}}]}}"#
    );
    std::fs::write(dir.join("image.json"), token_image).unwrap();
    let runs: [&[&str]; 8] = [
        &["check", "build.json", "-vvv"],
        &["check", "build.json", "--format", "json", "-vvv"],
        &["check", "broken.json", "-vvv"],
        &["check", "broken.json", "--format", "json"],
        &["check", "shape.json", "-vvv"],
        &["check", "image.json", "-vvv"],
        &["explain", "golang:${TOKEN}", "-vvv"],
        &[
            "explain",
            "golang:${GO_VERSION}",
            "--format",
            "json",
            "-vvv",
        ],
    ];
    for args in runs {
        let out = pullcheck(args, &dir);
        let shown = text(&out);
        assert!(
            !shown.contains(TOKEN),
            "{args:?} printed the token:\n{shown}"
        );
        assert!(!shown.contains("canaryTOKEN"), "{args:?}:\n{shown}");
    }
}

#[test]
fn explain_names_the_variables_instead_of_a_grammar_error() {
    let dir = temp_dir("explain");
    let out = pullcheck(&["explain", "golang:${GO_VERSION}"], &dir);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("reads ${GO_VERSION}: Vela substitutes it"),
        "{shown}"
    );
    assert!(shown.contains("(substitution)"), "{shown}");
    assert!(!shown.contains("invalid_format"), "{shown}");

    let out = pullcheck(
        &["explain", "golang:${GO_VERSION", "--format", "json"],
        &dir,
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["kind"], "substitution");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing closing brace"),
        "{json}"
    );
    let out = pullcheck(
        &["explain", "golang:${GO_VERSION}", "--format", "json"],
        &dir,
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["variables"][0], "GO_VERSION");
}
