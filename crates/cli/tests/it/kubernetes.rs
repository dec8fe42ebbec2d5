//! The `pullcheck` binary against a cluster: a real token-auth registry whose only
//! credentials live in `kubernetes.io/dockerconfigjson` Secrets, served by the testkit's
//! stand-in Kubernetes API server and found through `--kubeconfig`, `-n`, `--pods-template`,
//! ServiceAccounts and workload manifests. Each test asserts the statuses, the credential
//! the report names, and the exact API requests (GETs of named objects only).

use crate::util::text;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pullcheck_testkit::TempDir;
use pullcheck_testkit::kube::{self, ApiServer, DockerAuth};
use pullcheck_testkit::{Auth, ImageKind, Registry, Repos, TokenAuth, TokenPolicy, User};
use serde_json::{Value, json};

use crate::util::temp_dir;

const NS: &str = "builds";
const CI_PASSWORD: &str = "kube-ci-password-41c9";
const ROBOT_PASSWORD: &str = "kube-robot-password-8e02";

/// A token registry with `team/app:v1` and `team/worker:v1`; user `ci` pulls everything,
/// user `robot` only `team/worker`, anonymous nothing. A stand-in API server, and a
/// kubeconfig for it in a fresh directory.
struct Env {
    registry: Registry,
    api: ApiServer,
    dir: TempDir,
    kubeconfig: String,
}

impl Env {
    async fn start(name: &str) -> Env {
        let policy = TokenPolicy::new(vec![
            User::new("ci", CI_PASSWORD),
            User::new("robot", ROBOT_PASSWORD).pulling(Repos::only(["team/worker"])),
        ]);
        let registry = Registry::builder()
            .auth(Auth::Token(policy))
            .start()
            .await
            .expect("registry");
        registry
            .push("team/app", "v1", ImageKind::OciIndex)
            .await
            .expect("push");
        registry
            .push("team/worker", "v1", ImageKind::DockerManifest)
            .await
            .expect("push");
        let api = ApiServer::start().expect("stand-in API server");
        let dir = temp_dir(&format!("kube-{name}"));
        let kubeconfig = dir.join("kubeconfig");
        api.write_kubeconfig(&kubeconfig, None).expect("kubeconfig");
        Env {
            registry,
            api,
            dir,
            kubeconfig: kubeconfig.display().to_string(),
        }
    }

    fn host(&self) -> &str {
        self.registry.host()
    }

    fn image(&self, repository: &str) -> String {
        format!("{}/{repository}:v1", self.host())
    }

    /// `regcred`: user `ci` for the registry.
    fn add_ci_secret(&self, name: &str) {
        self.api
            .add_pull_secret(NS, name, &[DockerAuth::new(self.host(), "ci", CI_PASSWORD)]);
    }

    /// Runs `pullcheck` in the directory, with nothing from the caller's environment
    /// (no Docker config, no kubeconfig, no auth file).
    fn run(&self, args: &[&str]) -> Output {
        pullcheck(&self.dir, args)
    }

    /// A kubeconfig for the stand-in API server, changed by `edit`, written under
    /// `name`; its path.
    fn kubeconfig_with(&self, name: &str, edit: impl FnOnce(&mut Value)) -> String {
        let mut config: Value =
            serde_json::from_str(&kube::kubeconfig_for(self.api.url(), None, "unused")).unwrap();
        edit(&mut config);
        let path = self.dir.join(name);
        std::fs::write(&path, config.to_string()).unwrap();
        path.display().to_string()
    }

    /// The run ended as a configuration error (exit 2) saying `says`, before asking
    /// for any token.
    fn assert_refused(&self, out: &Output, says: &str) {
        assert_eq!(out.status.code(), Some(2), "{}", text(out));
        assert!(text(out).contains(says), "{says}: {}", text(out));
        assert!(self.token_requests().is_empty());
    }

    /// `check --image IMAGE -n NS --kubeconfig K --format json` plus `extra`.
    fn check_json(&self, image: &str, extra: &[&str]) -> (Output, Value) {
        let mut args = check_args(image, &self.kubeconfig, &["--format", "json"]);
        args.extend_from_slice(extra);
        let out = self.run(&args);
        let json = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("no JSON on stdout ({e}):\n{}", text(&out)));
        (out, json)
    }

    /// The token server's requests, as (how it authenticated, status).
    fn token_requests(&self) -> Vec<(TokenAuth, u16)> {
        self.registry
            .token_server()
            .expect("token mode")
            .requests()
            .into_iter()
            .map(|r| (r.auth, r.status))
            .collect()
    }

    fn requests(&self) -> Vec<String> {
        self.api.request_lines()
    }

    fn assert_only_named_gets(&self) {
        for r in self.api.requests() {
            assert!(r.is_named_get(), "not a GET of a named object: {r}");
            assert_eq!(r.bearer_token.as_deref(), Some(self.api.token()), "{r}");
        }
    }
}

fn pullcheck(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("HOME", dir)
        .env_remove("DOCKER_CONFIG")
        .env_remove("KUBECONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("PULLCHECK_LOG")
        .output()
        .expect("run pullcheck")
}

/// `check --image IMAGE -n NS --kubeconfig KUBECONFIG` and then `extra`.
fn check_args<'a>(image: &'a str, kubeconfig: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "check",
        "--image",
        image,
        "-n",
        NS,
        "--kubeconfig",
        kubeconfig,
    ];
    args.extend_from_slice(extra);
    args
}

fn get(path: &str) -> String {
    format!("GET {path}")
}

fn image<'a>(report: &'a Value, reference: &str) -> &'a Value {
    report["images"]
        .as_array()
        .expect("images")
        .iter()
        .find(|i| i["reference"] == reference)
        .unwrap_or_else(|| panic!("{reference} not in {report:#}"))
}

fn regcred_source() -> &'static str {
    "pull secret regcred (namespace builds)"
}

#[tokio::test]
async fn template_image_pull_secrets_open_the_registry() {
    let env = Env::start("template").await;
    env.api.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "regcred"}], "serviceAccountName": "builder"}),
    );
    env.add_ci_secret("regcred");
    let app = env.image("team/app");

    let (out, report) = env.check_json(&app, &["--pods-template", "vela-pods"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let app_report = image(&report, &app);
    assert_eq!(app_report["status"], "present");
    assert!(
        app_report["digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:"))
    );
    assert_eq!(
        app_report["credential"],
        json!({"source": regcred_source(), "key": env.host(), "username": "ci"})
    );
    assert_eq!(report["warnings"], json!([]));
    // The template's own secrets: its ServiceAccount is not asked.
    assert_eq!(
        env.requests(),
        [
            get(&kube::pods_template_path(NS, "vela-pods")),
            get(&kube::secret_path(NS, "regcred")),
        ]
    );
    env.assert_only_named_gets();
    // One token, for user ci; never anonymous.
    assert_eq!(env.token_requests(), [(TokenAuth::User("ci".into()), 200)]);
}

#[tokio::test]
async fn a_template_without_secrets_uses_its_service_accounts() {
    let env = Env::start("template-sa").await;
    env.api
        .add_pods_template(NS, "vela-pods", json!({"serviceAccountName": "builder"}));
    env.api.add_service_account(NS, "builder", &["regcred"]);
    // The default ServiceAccount's secret would be the wrong one: it must not be asked.
    env.api.add_service_account(NS, "default", &["unused"]);
    env.add_ci_secret("regcred");
    let app = env.image("team/app");

    let (out, report) = env.check_json(&app, &["--pods-template", "vela-pods"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(image(&report, &app)["status"], "present");
    assert_eq!(
        image(&report, &app)["credential"]["source"],
        regcred_source()
    );
    assert_eq!(image(&report, &app)["credential"]["username"], "ci");
    assert_eq!(
        env.requests(),
        [
            get(&kube::pods_template_path(NS, "vela-pods")),
            get(&kube::service_account_path(NS, "builder")),
            get(&kube::secret_path(NS, "regcred")),
        ]
    );
    env.assert_only_named_gets();
}

#[tokio::test]
async fn no_template_means_the_default_service_accounts() {
    let env = Env::start("default-sa").await;
    env.api.add_service_account(NS, "default", &["regcred"]);
    env.add_ci_secret("regcred");
    let app = env.image("team/app");

    let (out, report) = env.check_json(&app, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(image(&report, &app)["status"], "present");
    assert_eq!(
        image(&report, &app)["credential"]["source"],
        regcred_source()
    );
    assert_eq!(
        env.requests(),
        [
            get(&kube::service_account_path(NS, "default")),
            get(&kube::secret_path(NS, "regcred")),
        ]
    );
    env.assert_only_named_gets();
}

#[tokio::test]
async fn a_missing_secret_is_a_warning_and_the_pull_is_anonymous() {
    let env = Env::start("missing").await;
    // `gone` does not exist; `elsewhere` exists but is for another registry.
    env.api.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "gone"}, {"name": "elsewhere"}]}),
    );
    env.api.add_pull_secret(
        NS,
        "elsewhere",
        &[DockerAuth::new("registry.example.com", "ci", CI_PASSWORD)],
    );
    let app = env.image("team/app");

    let (out, report) = env.check_json(&app, &["--pods-template", "vela-pods"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let app_report = image(&report, &app);
    assert_eq!(app_report["status"], "no_access", "{report:#}");
    assert_eq!(app_report["credential"], Value::Null);
    let warnings = report["warnings"].as_array().expect("warnings");
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("Secret \"gone\" not found in namespace \"builds\""))),
        "{warnings:?}"
    );
    // The walk went on past the missing secret.
    assert_eq!(
        env.requests(),
        [
            get(&kube::pods_template_path(NS, "vela-pods")),
            get(&kube::secret_path(NS, "gone")),
            get(&kube::secret_path(NS, "elsewhere")),
        ]
    );
    env.assert_only_named_gets();
    // No credential matched, so the pull is anonymous, and anonymous may not pull.
    assert_eq!(env.token_requests(), [(TokenAuth::Anonymous, 200)]);

    // The same missing secret next to a good one: present, and still the warning.
    env.add_ci_secret("regcred");
    env.api.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "gone"}, {"name": "regcred"}]}),
    );
    let (out, report) = env.check_json(&app, &["--pods-template", "vela-pods"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        image(&report, &app)["credential"]["source"],
        regcred_source()
    );
    assert!(
        report["warnings"].to_string().contains("\\\"gone\\\""),
        "{report:#}"
    );
}

#[tokio::test]
async fn a_forbidden_secret_is_a_configuration_error_before_any_registry_request() {
    let env = Env::start("forbidden").await;
    env.api.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "regcred"}]}),
    );
    env.add_ci_secret("regcred");
    env.api.forbid(NS, "secrets", "regcred");
    let app = env.image("team/app");

    let out = env.run(&check_args(
        &app,
        &env.kubeconfig,
        &["--pods-template", "vela-pods"],
    ));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "pullcheck: error: forbidden: get secrets \"regcred\" in namespace \"builds\""
        ),
        "{stderr}"
    );
    assert!(stderr.contains("resourceNames: [\"regcred\"]"), "{stderr}");
    assert!(stderr.contains(kube::FORBIDDEN_USER), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", text(&out));
    assert_eq!(
        env.requests(),
        [
            get(&kube::pods_template_path(NS, "vela-pods")),
            get(&kube::secret_path(NS, "regcred")),
        ]
    );
    // Nothing was asked of the registry.
    assert!(env.token_requests().is_empty());
    assert_eq!(env.registry.requests().await.expect("log"), []);
}

#[tokio::test]
async fn a_malformed_secret_is_a_configuration_error_naming_it() {
    let env = Env::start("malformed").await;
    env.api.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "bad"}]}),
    );
    let app = env.image("team/app");
    let args = check_args(&app, &env.kubeconfig, &["--pods-template", "vela-pods"]);

    // `data` values must be base64: the object itself does not decode.
    env.api.add_object(
        NS,
        "secrets",
        "bad",
        json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "bad", "namespace": NS},
               "type": "kubernetes.io/dockerconfigjson",
               "data": {".dockerconfigjson": "%%% not base64"}}),
    );
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("malformed secrets \"bad\" in namespace \"builds\""),
        "{}",
        text(&out)
    );

    // Good base64, but `.dockerconfigjson` is not a Docker config.
    env.api.add_secret(
        NS,
        "bad",
        "kubernetes.io/dockerconfigjson",
        &[(".dockerconfigjson", b"{\"auths\": [\"not\", \"a map\"]}")],
    );
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pull secret bad (namespace builds): .dockerconfigjson"),
        "{stderr}"
    );
    assert!(env.token_requests().is_empty());
    env.assert_only_named_gets();
}

/// `check --image team/app -n builds` with a kubeconfig for the API server at `url`,
/// plus `extra`; the output and how long it took.
fn check_with_cluster_at(env: &Env, url: &str, extra: &[&str]) -> (Output, Duration) {
    let kubeconfig = env.dir.join("other-kubeconfig");
    kube::write_kubeconfig_for(&kubeconfig, url, None, "unused-token").expect("kubeconfig");
    let app = env.image("team/app");
    let kubeconfig = kubeconfig.display().to_string();
    let args = check_args(&app, &kubeconfig, extra);
    let started = Instant::now();
    let out = env.run(&args);
    (out, started.elapsed())
}

#[tokio::test]
async fn an_unreachable_cluster_fails_fast_naming_the_server() {
    let env = Env::start("unreachable").await;
    // A port nobody listens on, held so that no parallel test's server is given it.
    let closed = pullcheck_testkit::ClosedPort::new();
    let url = format!("http://{}", closed.host());
    let (out, took) = check_with_cluster_at(&env, &url, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "pullcheck: error: cannot reach the Kubernetes API server at {url}"
        )),
        "{stderr}"
    );
    assert!(stderr.to_lowercase().contains("refused"), "{stderr}");
    assert!(env.token_requests().is_empty());
}

/// A kubeconfig whose `server` has a wrong path: every answer is the plain-text 404 of a
/// path the server does not serve, never the `NotFound` `Status` a Kubernetes API server
/// sends for a missing object. That is an error naming the server and the request (exit
/// 2, nothing asked of the registry), not "ServiceAccount not found" and `no_access`.
#[tokio::test]
async fn a_server_url_with_a_wrong_path_is_a_configuration_error_not_a_missing_account() {
    let env = Env::start("wrong-prefix").await;
    env.api.add_service_account(NS, "default", &["regcred"]);
    env.add_ci_secret("regcred");
    let url = format!("{}/wrong-prefix", env.api.url());
    let expected = format!(
        "pullcheck: error: get serviceaccounts \"default\" in namespace \"{NS}\": \
         GET {url}/api/v1/namespaces/{NS}/serviceaccounts/default was answered 404 with the \
         text \"404 page not found\", which is not from a Kubernetes API server"
    );

    let (out, _) = check_with_cluster_at(&env, &url, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(
        stderr.contains(&format!("check the kubeconfig's server URL {url}")),
        "{stderr}"
    );
    assert!(!stderr.contains("not found in namespace"), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", text(&out));
    assert_eq!(
        env.requests(),
        [get(&format!(
            "/wrong-prefix{}",
            kube::service_account_path(NS, "default")
        ))]
    );
    assert!(env.token_requests().is_empty());
    assert_eq!(env.registry.requests().await.expect("log"), []);

    // `explain` says the same instead of "not found, so no secrets from it".
    let kubeconfig = env.dir.join("other-kubeconfig").display().to_string();
    let app = env.image("team/app");
    let out = env.run(&["explain", &app, "-n", NS, "--kubeconfig", &kubeconfig]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains(&expected), "{shown}");
    assert!(!shown.contains("no secrets from it"), "{shown}");
}

/// An HTML or empty 404 where a ServiceAccount or Secret should be is not "not found"
/// either: the same error, naming the server and the request.
#[tokio::test]
async fn an_html_or_empty_404_is_a_configuration_error_naming_the_request() {
    let env = Env::start("foreign-404").await;
    let app = env.image("team/app");
    let url = env.api.url().to_owned();
    // The 404 page of `python3 -m http.server`.
    let html = "<!DOCTYPE HTML>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">\
                <title>Error response</title></head>\n<body><h1>Error response</h1>\
                <p>Error code: 404</p></body>\n</html>\n";
    let account = kube::service_account_path(NS, "default");
    env.api
        .add_raw(&account, 404, html, "text/html;charset=utf-8");

    let args = check_args(&app, &env.kubeconfig, &[]);
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "pullcheck: error: get serviceaccounts \"default\" in namespace \"{NS}\": \
             GET {url}{account} was answered 404 with an HTML page titled \"Error response\", \
             which is not from a Kubernetes API server"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("check the kubeconfig's server URL"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out));

    // The account exists; its Secret's path answers an empty 404.
    env.api.add_service_account(NS, "default", &["regcred"]);
    let secret = kube::secret_path(NS, "regcred");
    env.api.add_raw(&secret, 404, "", "text/plain");
    env.api.clear_requests();
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "pullcheck: error: get secrets \"regcred\" in namespace \"{NS}\": \
             GET {url}{secret} was answered 404 with an empty body, which is not from a \
             Kubernetes API server"
        )),
        "{stderr}"
    );
    assert_eq!(env.requests(), [get(&account), get(&secret)]);
    env.assert_only_named_gets();
    assert!(env.token_requests().is_empty());
    assert_eq!(env.registry.requests().await.expect("log"), []);

    // The API server's own NotFound Status is still only a warning.
    env.api.remove(NS, "secrets", "regcred");
    let (out, report) = env.check_json(&app, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(image(&report, &app)["status"], "no_access", "{report:#}");
    assert!(
        report["warnings"]
            .to_string()
            .contains("Secret \\\"regcred\\\" not found in namespace"),
        "{report:#}"
    );
}

/// `--deadline` bounds the pull-secret lookups too: an API server that accepts the
/// connection and never answers (its own timeout is 10 s per request) ends the run at
/// the deadline, as an error naming it, and no registry is asked.
#[tokio::test]
async fn a_silent_cluster_is_bounded_by_the_deadline() {
    let env = Env::start("silent").await;
    // Listening, never accepting: the kernel completes the handshake, nobody answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (out, took) = check_with_cluster_at(&env, &url, &["--deadline", "1500ms"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(took < Duration::from_secs(8), "took {took:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("did not finish within the --deadline of 1500ms"),
        "{stderr}"
    );
    assert!(env.token_requests().is_empty());
    drop(listener);
}

/// A kubeconfig exec plugin that never answers: kube-rs runs it with a blocking call,
/// which no timer inside that task can interrupt; the run still ends at `--deadline`
/// with an error, and asks no registry (found
/// by a reviewer: it hung until killed).
#[tokio::test]
async fn a_hanging_exec_plugin_is_bounded_by_the_deadline() {
    let env = Env::start("exec-plugin").await;
    let kubeconfig = env.kubeconfig_with("exec-kubeconfig", |config| {
        config["users"][0]["user"] = json!({"exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "/bin/sh",
            "args": ["-c", "sleep 30"],
            "interactiveMode": "Never"
        }});
    });
    let app = env.image("team/app");
    // `explain` walks the same chain as `check`, under its own --deadline.
    let common = [
        "-n",
        NS,
        "--kubeconfig",
        &kubeconfig,
        "--deadline",
        "1500ms",
    ];
    for command in [vec!["check", "--image", &app], vec!["explain", &app]] {
        let started = Instant::now();
        let out = env.run(&[command.clone(), common.to_vec()].concat());
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "{command:?} took {took:?}");
        env.assert_refused(&out, "within the --deadline of 1500ms");
    }
}

/// kube-rs reads a kubeconfig, and the files it names, whole: a device or an
/// over-large file there is refused first, naming it (found by a reviewer:
/// `--kubeconfig /dev/zero` grew to 24 GB).
#[tokio::test]
async fn a_kubeconfig_or_its_files_on_a_device_are_refused() {
    let env = Env::start("kubeconfig-device").await;
    let app = env.image("team/app");
    let out = env.run(&check_args(&app, "/dev/zero", &[]));
    env.assert_refused(&out, "kubeconfig /dev/zero: is a device, not a file");
    let kubeconfig = env.kubeconfig_with("ca-device-kubeconfig", |config| {
        config["clusters"][0]["cluster"]["certificate-authority"] = json!("/dev/zero");
    });
    let out = env.run(&check_args(&app, &kubeconfig, &[]));
    env.assert_refused(
        &out,
        "certificate-authority /dev/zero: is a device, not a file",
    );
}

#[tokio::test]
async fn workload_manifests_use_their_own_secrets_or_their_service_accounts() {
    let env = Env::start("workloads").await;
    env.add_ci_secret("regcred");
    env.api.add_service_account(NS, "builder", &["robot-cred"]);
    env.api.add_pull_secret(
        NS,
        "robot-cred",
        &[DockerAuth::new(env.host(), "robot", ROBOT_PASSWORD)],
    );
    let (app, worker) = (env.image("team/app"), env.image("team/worker"));
    let manifest = format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      imagePullSecrets: [{{name: regcred}}]
      serviceAccountName: builder
      containers:
        - name: app
          image: {app}
---
apiVersion: batch/v1
kind: Job
metadata: {{name: migrate}}
spec:
  template:
    spec:
      serviceAccountName: builder
      restartPolicy: Never
      containers:
        - name: migrate
          image: {worker}
"
    );
    std::fs::write(env.dir.join("deploy.yaml"), manifest).expect("write");

    let out = env.run(&[
        "check",
        "deploy.yaml",
        "-n",
        NS,
        "--kubeconfig",
        &env.kubeconfig,
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let web = image(&report, &app);
    assert_eq!(web["status"], "present");
    assert_eq!(web["credential"]["source"], regcred_source());
    assert_eq!(web["credential"]["username"], "ci");
    assert_eq!(web["origins"][0]["file"], "deploy.yaml");
    assert_eq!(web["origins"][0]["line"], 13);
    let job = image(&report, &worker);
    assert_eq!(job["status"], "present");
    assert_eq!(
        job["credential"],
        json!({"source": "pull secret robot-cred (namespace builds)", "key": env.host(), "username": "robot"})
    );
    assert_eq!(report["summary"]["present"], 2);
    // The Deployment's own secret; the Job's ServiceAccount and its secret. No build Pod
    // lookup (there is no pipeline), no default ServiceAccount.
    assert_eq!(
        env.requests(),
        [
            get(&kube::secret_path(NS, "regcred")),
            get(&kube::service_account_path(NS, "builder")),
            get(&kube::secret_path(NS, "robot-cred")),
        ]
    );
    env.assert_only_named_gets();
    let mut users: Vec<TokenAuth> = env.token_requests().into_iter().map(|(a, _)| a).collect();
    users.sort_by_key(|a| format!("{a:?}"));
    assert_eq!(
        users,
        [
            TokenAuth::User("ci".into()),
            TokenAuth::User("robot".into())
        ]
    );
}

#[tokio::test]
async fn a_pods_template_file_with_an_unknown_field_names_it() {
    let env = Env::start("template-file").await;
    std::fs::write(
        env.dir.join("template.yaml"),
        "apiVersion: go-vela.github.io/v1alpha1
kind: PipelinePodsTemplate
metadata:
  name: vela-pods
spec:
  template:
    spec:
      imagePullSecrets:
        - name: regcred
      serviceAcountName: builder
",
    )
    .expect("write");
    let app = env.image("team/app");

    let out = env.run(&check_args(
        &app,
        &env.kubeconfig,
        &["--pods-template-file", "template.yaml"],
    ));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("template.yaml:10:"), "{stderr}");
    assert!(
        stderr.contains("unknown field \"serviceAcountName\""),
        "{stderr}"
    );
    assert!(stderr.contains("serviceAccountName"), "{stderr}");
    // Read before anything is asked.
    assert_eq!(env.requests(), Vec::<String>::new());
    assert!(env.token_requests().is_empty());

    // Without a cluster the file is still read strictly.
    let out = env.run(&[
        "check",
        "--image",
        &app,
        "--pods-template-file",
        "template.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown field \"serviceAcountName\""),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn explain_shows_the_chain_and_the_credentials_never_a_secret() {
    let env = Env::start("explain").await;
    env.api
        .add_pods_template(NS, "vela-pods", json!({"serviceAccountName": "builder"}));
    env.api
        .add_service_account(NS, "builder", &["regcred", "gone"]);
    env.add_ci_secret("regcred");
    let app = env.image("team/app");
    let args = [
        "explain",
        &app,
        "-n",
        NS,
        "--kubeconfig",
        &env.kubeconfig,
        "--pods-template",
        "vela-pods",
    ];

    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let out = env.run(&json_args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let explained: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let chain = &explained["pull_secrets"];
    assert_eq!(
        chain["subject"],
        json!({"type": "template", "name": "vela-pods"})
    );
    assert_eq!(chain["namespace"], NS);
    assert_eq!(chain["service_account"], "builder");
    assert_eq!(
        chain["secrets"],
        json!([{"name": "regcred", "namespace": NS,
                "type": "kubernetes.io/dockerconfigjson", "keys": [".dockerconfigjson"]}])
    );
    let steps: Vec<&str> = chain["walked"]
        .as_array()
        .expect("walked")
        .iter()
        .map(|s| s["step"].as_str().expect("step"))
        .collect();
    assert_eq!(
        steps,
        [
            "pod",
            "no_pod_secrets",
            "service_account",
            "secret",
            "secret"
        ]
    );
    assert_eq!(
        chain["walked"][4],
        json!({"step": "secret", "name": "gone", "found": false, "secret_type": null})
    );
    assert_eq!(chain["warnings"].as_array().map(Vec::len), Some(1));
    assert_eq!(explained["credentials"][0]["source"], regcred_source());
    assert_eq!(explained["credentials"][0]["key"], env.host());
    assert_eq!(explained["credentials"][0]["username"], "ci");
    assert_eq!(explained["credentials"][0]["kind"], "basic");
    assert_eq!(explained["credentials"].as_array().map(Vec::len), Some(1));

    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("pull secrets: PipelinePodsTemplate \"vela-pods\" (from the cluster)"),
        "{shown}"
    );
    assert!(
        shown.contains("ServiceAccount \"builder\": imagePullSecrets regcred, gone"),
        "{shown}"
    );
    assert!(shown.contains(regcred_source()), "{shown}");

    // Never a secret, and explain asks no registry anything.
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("ci:{CI_PASSWORD}"));
    for out in [text(&env.run(&json_args)), shown] {
        assert!(!out.contains(CI_PASSWORD), "{out}");
        assert!(!out.contains(&basic), "{out}");
        assert!(!out.contains(env.api.token()), "{out}");
    }
    assert!(env.token_requests().is_empty());
    assert_eq!(env.registry.requests().await.expect("log"), []);
    env.assert_only_named_gets();
}
