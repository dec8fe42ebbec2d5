//! `pullcheck vela-plugin`: the binary run as a Vela plugin step, configured only by
//! `PARAMETER_*` and `VELA_*` variables, in a workspace directory holding the pipeline,
//! against real registries (and the stand-in Kubernetes API for the namespace's pull
//! secrets, found through `KUBECONFIG` as the in-cluster configuration would be).

use std::path::Path;
use std::process::{Command, Output};

use pullcheck_testkit::kube::{ApiServer, DockerAuth};
use pullcheck_testkit::{Auth, ImageKind, Registry, TokenPolicy, User};
use serde_json::Value;

use crate::util::temp_dir;

/// The SCM token Vela gives every step as `VELA_NETRC_PASSWORD`: never printed.
const NETRC_CANARY: &str = "netrc-password-canary-77d1";
const CI_PASSWORD: &str = "plugin-ci-password-c5a0";

/// Runs `pullcheck vela-plugin` in `workspace` with only `vars` (and PATH).
fn plugin(workspace: &Path, vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pullcheck"));
    command
        .arg("vela-plugin")
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", workspace)
        .env("VELA_NETRC_PASSWORD", NETRC_CANARY);
    for (k, v) in vars {
        command.env(k, v);
    }
    command.output().expect("run pullcheck vela-plugin")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// (reference, substituted, status) of each row.
fn rows(report: &Value) -> Vec<(String, String, String)> {
    report["images"]
        .as_array()
        .expect("images")
        .iter()
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap_or_default().to_owned();
            (s("reference"), s("substituted"), s("status"))
        })
        .collect()
}

fn assert_no_canary(out: &Output) {
    for stream in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(stream);
        assert!(!text.contains(NETRC_CANARY), "the netrc password in {text}");
        assert!(
            !text.contains(CI_PASSWORD),
            "the registry password in {text}"
        );
    }
}

fn pipeline(host: &str, extra: &str) -> String {
    format!(
        "version: \"1\"\nservices:\n  - name: db\n    image: {host}/team/db:v1\nsteps:\n  \
         - name: images\n    image: {host}/vela/pullcheck:1\n    pull: not_present\n    \
         parameters:\n      pipeline: .vela.yml\n  \
         - name: build\n    image: {host}/team/app:${{VELA_BUILD_NUMBER}}\n    commands: [make]\n  \
         - name: later\n    image: {host}/team/app:${{VELA_NETRC_PASSWORD}}\n    pull: on_start\n    \
         commands: [make]\n{extra}"
    )
}

/// Pushes the images every test pipeline uses (the service's, the plugin's, the build's).
async fn push_pipeline_images(registry: &Registry) {
    for (repository, tag) in [
        ("team/db", "v1"),
        ("vela/pullcheck", "1"),
        ("team/app", "7"),
    ] {
        registry
            .push(repository, tag, ImageKind::OciManifest)
            .await
            .expect("push");
    }
}

async fn anonymous_registry() -> Registry {
    let registry = Registry::anonymous().await.expect("registry");
    push_pipeline_images(&registry).await;
    registry
}

/// `${VELA_BUILD_NUMBER}` is this build's number; `${VELA_NETRC_PASSWORD}` is never
/// substituted (unresolved, the value printed nowhere); a typo'd tag fails the step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_build_s_variables_are_substituted_and_a_missing_image_fails_the_step() {
    let registry = anonymous_registry().await;
    let host = registry.host();
    let dir = temp_dir("plugin-vars");
    let typo = "  - name: typo\n    image: HOST/team/app:v9\n    commands: [make]\n";
    std::fs::write(
        dir.join(".vela.yml"),
        pipeline(host, &typo.replace("HOST", host)),
    )
    .expect("write");
    let out = plugin(
        &dir,
        &[
            ("PARAMETER_FORMAT", "json"),
            ("VELA_BUILD_NUMBER", "7"),
            ("PARAMETER_INCLUDE_ONSTART", "false"),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    assert_eq!(
        rows(&report),
        [
            (
                format!("{host}/team/db:v1"),
                String::new(),
                "present".into()
            ),
            (
                format!("{host}/vela/pullcheck:1"),
                String::new(),
                "present".into()
            ),
            (
                format!("{host}/team/app:${{VELA_BUILD_NUMBER}}"),
                format!("{host}/team/app:7"),
                "present".into()
            ),
            (
                format!("{host}/team/app:${{VELA_NETRC_PASSWORD}}"),
                String::new(),
                "unresolved".into()
            ),
            (
                format!("{host}/team/app:v9"),
                String::new(),
                "missing".into()
            ),
        ]
    );
    // A misspelt parameter is warned about, first, and does nothing (on_start is
    // still checked).
    let first = report["warnings"][0].as_str().expect("a warning");
    assert!(first.starts_with("PARAMETER_INCLUDE_ONSTART "), "{first}");
    assert!(
        first.ends_with("(did you mean `include_on_start`?)"),
        "{first}"
    );
    // The SCM token is the worker's (go-vela/worker `UpdateSCMAuth`), not the server's.
    assert_eq!(
        report["images"][3]["variables"][0]["source"]["kind"],
        "worker"
    );
    // The pipeline's own origins: the file as named, its lines.
    assert_eq!(report["images"][4]["origins"][0]["file"], ".vela.yml");
    assert_eq!(report["images"][4]["origins"][0]["line"], 19);
    assert_no_canary(&out);
}

/// PARAMETER_FAIL_ON: an unverified image passes the step by default, fails it with
/// `unverified` (exit 3); the text report is printed either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_decides_whether_unverified_fails_the_step() {
    let registry = anonymous_registry().await;
    let dir = temp_dir("plugin-fail-on");
    std::fs::create_dir_all(dir.join("ci")).expect("mkdir");
    std::fs::write(dir.join("ci/pipeline.yml"), pipeline(registry.host(), "")).expect("write");
    let base = [
        ("PARAMETER_PIPELINE", "ci/pipeline.yml"),
        ("VELA_BUILD_NUMBER", "7"),
    ];
    let out = plugin(&dir, &base);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for reference in [
        "team/db:v1",
        "team/app:${VELA_BUILD_NUMBER}",
        "team/app:${VELA_NETRC_PASSWORD}",
    ] {
        assert!(
            text.contains(&format!("{}/{reference}", registry.host())),
            "{reference} not in\n{text}"
        );
    }
    assert_no_canary(&out);
    let out = plugin(
        &dir,
        &[base[0], base[1], ("PARAMETER_FAIL_ON", "unverified")],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_canary(&out);
}

/// Bad parameters and a missing pipeline are exit 2, naming the variable.
#[test]
fn bad_parameters_are_exit_2_naming_the_variable() {
    let dir = temp_dir("plugin-bad");
    let out = plugin(&dir, &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("pullcheck: error: PARAMETER_PIPELINE: "),
        "{stderr}"
    );
    std::fs::write(
        dir.join(".vela.yml"),
        "version: \"1\"\ntemplates: [{name: t, source: t.yml, type: github}]\n",
    )
    .expect("write");
    for (vars, names) in [
        (&[("PARAMETER_FAIL_ON", "often")][..], "PARAMETER_FAIL_ON"),
        (&[("PARAMETER_DEADLINE", "soon")][..], "PARAMETER_DEADLINE"),
        (&[][..], "PARAMETER_PIPELINE"),
    ] {
        let out = plugin(&dir, vars);
        assert_eq!(out.status.code(), Some(2), "{vars:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(names), "{vars:?}: {stderr}");
    }
}

/// A bad file parameter is named by its `PARAMETER_*` variable, never by the option it
/// becomes; a pipeline whose images all come from templates is exit 2 with `check`'s
/// reason, and no option to pass anyway (the step has nothing to check).
#[test]
fn file_parameters_and_templates_only_pipelines_name_no_option() {
    let dir = temp_dir("plugin-names");
    std::fs::write(
        dir.join(".vela.yml"),
        "version: \"1\"\nsteps:\n  - name: a\n    image: 127.0.0.1:1/team/app:v1\n    commands: [x]\n",
    )
    .expect("write");
    let missing = dir.join("absent");
    let missing = missing.to_str().expect("path");
    for (variable, value) in [
        ("PARAMETER_PULL_SECRETS", missing),
        ("PARAMETER_DOCKER_CONFIG", missing),
    ] {
        let out = plugin(&dir, &[(variable, value)]);
        assert_eq!(out.status.code(), Some(2), "{variable}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let named = stderr
            .strip_prefix("pullcheck: error: ")
            .and_then(|rest| rest.split_whitespace().next());
        assert_eq!(named, Some(variable), "{stderr}");
        assert!(!stderr.contains("--"), "an option named: {stderr}");
    }
    for (file, text) in [
        (
            "inline.yml",
            "version: \"1\"\nmetadata:\n  render_inline: true\ntemplates:\n  - name: go\n    source: github.com/x/y/go.yml\n    type: github\n",
        ),
        (
            "steps.yml",
            "version: \"1\"\ntemplates:\n  - name: go\n    source: github.com/x/y/go.yml\n    type: github\nsteps:\n  - name: a\n    template:\n      name: go\n",
        ),
    ] {
        std::fs::write(dir.join(file), text).expect("write");
        let out = plugin(&dir, &[("PARAMETER_PIPELINE", file)]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(out.stdout.is_empty(), "{file}: a report was printed");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("--"), "{file}: an option named: {stderr}");
        assert!(
            !stderr.contains("expected a Vela pipeline"),
            "{file}: {stderr}"
        );
    }
}

/// PARAMETER_NAMESPACE: the pull secrets are read from the cluster as the build Pod
/// gets them (the `default` ServiceAccount's), with the kubeconfig the environment
/// names; the only credentials of the token registry are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_namespace_s_pull_secrets_are_read_from_the_cluster() {
    let policy = TokenPolicy::new(vec![User::new("ci", CI_PASSWORD)]);
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .expect("registry");
    push_pipeline_images(&registry).await;
    let api = ApiServer::start().expect("stand-in API server");
    api.add_pull_secret(
        "builds",
        "regcred",
        &[DockerAuth::new(registry.host(), "ci", CI_PASSWORD)],
    );
    api.add_service_account("builds", "default", &["regcred"]);
    let dir = temp_dir("plugin-namespace");
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig, None).expect("kubeconfig");
    std::fs::write(dir.join(".vela.yml"), pipeline(registry.host(), "")).expect("write");
    let kubeconfig = kubeconfig.display().to_string();
    let vars = [
        ("PARAMETER_FORMAT", "json"),
        ("VELA_BUILD_NUMBER", "7"),
        ("KUBECONFIG", kubeconfig.as_str()),
    ];
    let without = plugin(&dir, &vars);
    assert_eq!(without.status.code(), Some(1), "anonymous: no access");
    let out = plugin(
        &dir,
        &[vars[0], vars[1], vars[2], ("PARAMETER_NAMESPACE", "builds")],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    let statuses: Vec<String> = rows(&report).into_iter().map(|r| r.2).collect();
    assert_eq!(statuses, ["present", "present", "present", "unresolved"]);
    let source = report["images"][0]["credential"]["source"]
        .as_str()
        .unwrap_or_default();
    assert!(source.starts_with("pull secret regcred"), "{source}");
    assert_no_canary(&out);
}

/// The plugin's words name what a plugin user writes: a deferred `on_start` row names
/// `PARAMETER_INCLUDE_ON_START`, a namespace with no cluster names `KUBECONFIG`, never
/// a flag of `pullcheck check`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_s_words_name_no_flag() {
    let registry = anonymous_registry().await;
    let host = registry.host();
    let dir = temp_dir("plugin-words");
    let deferred = format!(
        "  - name: deferred\n    image: {host}/team/app:7\n    pull: on_start\n    commands: [make]\n"
    );
    std::fs::write(dir.join(".vela.yml"), pipeline(host, &deferred)).expect("write");
    let out = plugin(
        &dir,
        &[
            ("PARAMETER_FORMAT", "json"),
            ("PARAMETER_INCLUDE_ON_START", "false"),
            ("VELA_BUILD_NUMBER", "7"),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    let images = report["images"].as_array().expect("images");
    let deferred: Vec<&Value> = images
        .iter()
        .filter(|i| i["status"] == "deferred")
        .collect();
    assert_eq!(deferred.len(), 1, "{report}");
    let detail = deferred[0]["detail"].as_str().expect("detail");
    assert_eq!(
        detail,
        "pull policy `on_start`: pulled when its container starts (check now with \
         PARAMETER_INCLUDE_ON_START=true)"
    );

    // No cluster (no KUBECONFIG, no ServiceAccount): exit 2, naming KUBECONFIG only.
    let out = plugin(
        &dir,
        &[("PARAMETER_NAMESPACE", "ci"), ("VELA_BUILD_NUMBER", "7")],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no kubeconfig ($KUBECONFIG, ~/.kube/config)"),
        "{stderr}"
    );
    assert!(!stderr.contains("--"), "a flag named: {stderr}");
    assert_no_canary(&out);
}

/// A parameter that is none of the plugin's is named before anything else: in the text
/// report before the first row, and before the error when another parameter stops the
/// run (issue 24, D7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_parameter_is_named_first_even_when_the_run_stops() {
    let registry = anonymous_registry().await;
    let dir = temp_dir("plugin-unknown-first");
    std::fs::write(dir.join(".vela.yml"), pipeline(registry.host(), "")).expect("write");
    let out = plugin(
        &dir,
        &[("PARAMETER_NAMESPCE", "ci"), ("VELA_BUILD_NUMBER", "7")],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("warning: PARAMETER_NAMESPCE ")
            && first.ends_with("(did you mean `namespace`?)"),
        "{text}"
    );
    assert_eq!(text.matches("PARAMETER_NAMESPCE").count(), 1, "{text}");
    // Another parameter's error stops the run (exit 2): the warning comes first.
    let out = plugin(
        &dir,
        &[
            ("PARAMETER_NAMESPCE", "ci"),
            ("PARAMETER_FAIL_ON", "sometimes"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.len() >= 2
            && lines[0].starts_with("warning: PARAMETER_NAMESPCE ")
            && lines[1].contains("PARAMETER_FAIL_ON"),
        "{err}"
    );
}
