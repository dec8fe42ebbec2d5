//! The Kubernetes runtime's placeholder image through the real binary: every container
//! of the build Pod starts on it, so a pipeline checked for the Kubernetes runtime (the
//! default with `--pods-template-file`) also checks `--placeholder-image`, once, under
//! the strictest policy of its containers, for `--platform`, else the pods template's
//! `nodeSelector`. Against a real registry holding a single-architecture (linux/amd64)
//! placeholder, as upstream's `kubernetes/pause:latest` is (Vela community issue 780).

use crate::util::text;
use std::path::Path;
use std::process::{Command, Output};

use crate::util::temp_dir;
use pullcheck_testkit::{ImageKind, Registry};
use serde_json::Value;

fn pullcheck(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("DOCKER_CONFIG")
        .env_remove("KUBECONFIG")
        .env("HOME", dir)
        .output()
        .expect("run pullcheck")
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}):\n{}", text(output)))
}

/// The report's placeholder entries.
fn placeholders(report: &Value) -> Vec<&Value> {
    report["images"]
        .as_array()
        .expect("images")
        .iter()
        .filter(|i| i["origins"][0]["kind"] == "placeholder")
        .collect()
}

/// A pipeline with a `not_present` step and, when `on_start`, an `on_start` one (whose
/// container gives the placeholder `Always`).
fn write_pipeline(dir: &Path, host: &str, on_start: bool) {
    let mut pipeline = format!(
        "version: \"1\"\nsteps:\n  - name: build\n    image: {host}/team/app:v1\n    pull: not_present\n    commands: [make]\n"
    );
    if on_start {
        pipeline.push_str(&format!(
            "  - name: later\n    image: {host}/team/app:v1\n    pull: on_start\n    commands: [make]\n"
        ));
    }
    std::fs::write(dir.join(".vela.yml"), pipeline).unwrap();
}

fn write_template(dir: &Path, node_selector: &str) {
    std::fs::write(
        dir.join("template.yaml"),
        format!(
            "apiVersion: go-vela.github.io/v1alpha1\nkind: PipelinePodsTemplate\n\
             metadata:\n  name: vela-pods\nspec:\n  template:\n    spec:\n      \
             nodeSelector:\n{node_selector}"
        ),
    )
    .unwrap();
}

struct Env {
    registry: Registry,
    dir: pullcheck_testkit::TempDir,
}

impl Env {
    async fn start(name: &str) -> Env {
        let registry = Registry::anonymous().await.expect("registry");
        registry
            .push("team/app", "v1", ImageKind::OciIndex)
            .await
            .expect("push");
        // Single-architecture, as kubernetes/pause:latest.
        registry
            .push("kubernetes/pause", "latest", ImageKind::DockerManifest)
            .await
            .expect("push");
        registry
            .push("multiarch/pause", "3.10", ImageKind::OciIndex)
            .await
            .expect("push");
        Env {
            registry,
            dir: temp_dir(name),
        }
    }

    fn host(&self) -> &str {
        self.registry.host()
    }

    fn pause(&self) -> String {
        format!("{}/kubernetes/pause:latest", self.host())
    }

    fn check(&self, extra: &[&str]) -> Output {
        let mut args = vec!["check", ".vela.yml", "--format", "json"];
        args.extend_from_slice(extra);
        pullcheck(&args, self.dir.path())
    }
}

#[tokio::test]
async fn a_single_arch_placeholder_fails_on_an_arm64_template() {
    let env = Env::start("placeholder-arm64").await;
    write_pipeline(env.dir.path(), env.host(), true);
    write_template(env.dir.path(), "        kubernetes.io/arch: arm64\n");
    let pause = env.pause();
    let out = env.check(&[
        "--pods-template-file",
        "template.yaml",
        "--placeholder-image",
        &pause,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = json(&out);
    let found = placeholders(&report);
    assert_eq!(found.len(), 1, "{report:#}");
    let p = found[0];
    // First: the runtime pulls it before anything else.
    assert_eq!(report["images"][0], *p, "{report:#}");
    assert_eq!(p["reference"], pause.as_str());
    // A single-platform image of another platform: the node pulls it and cannot run it.
    assert_eq!(
        (&p["status"], &p["reason"], &p["missing"]),
        (
            &"unrunnable".into(),
            &"platform_mismatch".into(),
            &Value::Null
        )
    );
    // The platform it is built for, as data, not only in the detail.
    assert_eq!(p["platforms"], serde_json::json!(["linux/amd64"]), "{p:#}");
    // The on_start step gives it Always.
    assert_eq!(p["policy"], "always", "{p:#}");
    assert_eq!(p["origins"][0]["file"], "template.yaml", "{p:#}");
    let detail = p["detail"].as_str().unwrap();
    for needle in [
        "placeholder image",
        "linux/arm64",
        "single-platform image for linux/amd64",
        "nodeSelector kubernetes.io/arch=arm64",
        "every build fails before its first step",
    ] {
        assert!(detail.contains(needle), "{needle:?} not in {detail}");
    }
    // The build's own images are asked without a platform, as before.
    let app = format!("{}/team/app:v1", env.host());
    let apps: Vec<&Value> = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["reference"] == app.as_str())
        .collect();
    assert!(!apps.is_empty(), "{report:#}");
    assert!(
        apps.iter()
            .all(|i| i["status"] == "present" || i["status"] == "deferred"),
        "{report:#}"
    );

    // The text report names it too.
    let out = pullcheck(
        &[
            "check",
            ".vela.yml",
            "--pods-template-file",
            "template.yaml",
            "--placeholder-image",
            &pause,
        ],
        env.dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let shown = text(&out);
    assert!(shown.contains("placeholder"), "{shown}");
    assert!(shown.contains("linux/amd64"), "{shown}");
}

#[tokio::test]
async fn runtime_platform_and_policy_decide_the_placeholder_check() {
    let env = Env::start("placeholder-options").await;
    write_pipeline(env.dir.path(), env.host(), false);
    write_template(
        env.dir.path(),
        "        kubernetes.io/arch: arm64\n        kubernetes.io/os: linux\n",
    );
    let pause = env.pause();
    let template = ["--pods-template-file", "template.yaml"];

    // --runtime docker: no placeholder.
    let mut args = template.to_vec();
    args.extend(["--placeholder-image", &pause, "--runtime", "docker"]);
    let out = env.check(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(placeholders(&json(&out)).is_empty());

    // --platform wins over the nodeSelector.
    let mut args = template.to_vec();
    args.extend(["--placeholder-image", &pause, "--platform", "linux/amd64"]);
    let out = env.check(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = json(&out);
    let p = placeholders(&report)[0];
    assert_eq!(p["status"], "present", "{p:#}");
    // Only not_present containers: IfNotPresent.
    assert_eq!(p["policy"], "not_present", "{p:#}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("for linux/amd64 from --platform"),
        "{p:#}"
    );

    // A multi-architecture placeholder serves the template's arm64 nodes.
    let multi = format!("{}/multiarch/pause:3.10", env.host());
    let mut args = template.to_vec();
    args.extend(["--placeholder-image", &multi]);
    let out = env.check(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = json(&out);
    let p = placeholders(&report)[0];
    assert_eq!(p["status"], "present", "{p:#}");
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains("listed as linux/arm64/v8"), "{detail}");
    assert!(
        detail.contains("kubernetes.io/arch=arm64, kubernetes.io/os=linux"),
        "{detail}"
    );

    // --runtime kubernetes without a template: existence only; a missing placeholder
    // fails every build.
    let missing = format!("{}/kubernetes/pause:3.404", env.host());
    let out = env.check(&["--runtime", "kubernetes", "--placeholder-image", &missing]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = json(&out);
    let p = placeholders(&report)[0];
    assert_eq!(p["status"], "missing", "{p:#}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("every build fails before its first step"),
        "{p:#}"
    );

    // Only --image uses: no pipeline container, no placeholder.
    let app = format!("{}/team/app:v1", env.host());
    let out = pullcheck(
        &[
            "check",
            "--image",
            &app,
            "--runtime",
            "kubernetes",
            "--format",
            "json",
        ],
        env.dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(placeholders(&json(&out)).is_empty());
}
