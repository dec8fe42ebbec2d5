//! `pullcheck serve`, the real binary: it answers what `pullcheck check --format json`
//! prints (plus `exit_code`), logs JSON lines with request ids and never a secret (at
//! -vvv, with a password, a registry token, an API token and a build token in play), and
//! on SIGTERM lets the check in flight finish, then exits 0.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pullcheck_testkit::kube::{DockerAuth, pull_secret_manifest};
use pullcheck_testkit::{Auth, ImageKind, Registry, TokenPolicy, User};
use serde_json::{Value, json};

const PASSWORD: &str = "serve-cli-password-canary-2f7c";
const API_TOKEN: &str = "serve-api-token-canary-c04d";
const BUILD_TOKEN: &str = "serve-build-token-canary-81e5";

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("pullcheck-cli-serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

fn command(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pullcheck"));
    c.current_dir(dir)
        .env("NO_COLOR", "1")
        .env("HOME", dir)
        .env_remove("DOCKER_CONFIG")
        .env_remove("KUBECONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("PULLCHECK_LOG");
    c
}

/// `pullcheck serve` on a free port, its stderr lines collected.
struct Service {
    child: Child,
    addr: String,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Service {
    fn start(dir: &Path, args: &[&str]) -> Service {
        Service::start_with(dir, args, |_| {})
    }

    /// As [`Service::start`], the command changed by `edit` first (its environment).
    fn start_with(dir: &Path, args: &[&str], edit: impl FnOnce(&mut Command)) -> Service {
        let mut command = command(dir);
        edit(&mut command);
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start pullcheck serve");
        let stderr = child.stderr.take().expect("stderr");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = logs.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && v["fields"]["message"] == "pullcheck serve listening"
                {
                    let _ = tx.send(
                        v["fields"]["address"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    );
                }
                sink.lock().expect("logs").push(line);
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the service says where it listens");
        Service { child, addr, logs }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn logs(&self) -> String {
        self.logs.lock().expect("logs").join("\n")
    }

    /// The logs once they hold `line` (the thread that reads stderr may not have read
    /// the service's last line when its answer arrives), or after 5 s.
    async fn logs_with(&self, line: &str) -> String {
        let until = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let logs = self.logs();
            if logs.contains(line) || std::time::Instant::now() > until {
                return logs;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    fn wait(&mut self, within: Duration) -> Option<i32> {
        let started = Instant::now();
        while started.elapsed() < within {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn post(
    http: &reqwest::Client,
    service: &Service,
    token: &str,
    body: &Value,
) -> (u16, Option<String>, String) {
    let response = http
        .post(service.url("/v1/checks"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("answer");
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, id, response.text().await.expect("body"))
}

/// `credential` fields nulled: the CLI names the --pull-secret file, the service the
/// request's `pull_secrets[i]`.
fn without_credentials(mut report: Value) -> Value {
    if let Some(images) = report["images"].as_array_mut() {
        for image in images {
            image["credential"] = Value::Null;
        }
    }
    report
}

fn assert_no_secret(what: &str, text: &str) {
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("ci:{PASSWORD}"));
    for canary in [PASSWORD, API_TOKEN, BUILD_TOKEN, basic.as_str(), "eyJ"] {
        assert!(!text.contains(canary), "{what} holds {canary}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_as_check_and_never_shows_a_secret() {
    let registry = Registry::builder()
        .auth(Auth::Token(TokenPolicy::new(vec![User::new(
            "ci", PASSWORD,
        )])))
        .start()
        .await
        .expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    let host = registry.host().to_owned();
    let dir = temp_dir("same");
    let pipeline = format!(
        "version: \"1\"\nsteps:\n  - name: build\n    image: {host}/team/app:v1\n    commands: [make]\n  - name: typo\n    image: {host}/team/app:v2\n    commands: [make]\n"
    );
    std::fs::write(dir.join(".vela.yml"), &pipeline).expect("write");
    let secret = pull_secret_manifest("ci", "regcred", &[DockerAuth::new(&host, "ci", PASSWORD)]);
    std::fs::write(dir.join("secret.json"), &secret).expect("write");
    std::fs::write(dir.join("tokens"), format!("{API_TOKEN}\n")).expect("write");

    let cli = command(&dir)
        .args([
            "check",
            "--format",
            "json",
            ".vela.yml",
            "--pull-secret",
            "secret.json",
        ])
        .output()
        .expect("check");
    assert_eq!(
        cli.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    let cli_report: Value = serde_json::from_slice(&cli.stdout).expect("CLI JSON");

    let service = Service::start(&dir, &["-vvv", "--api-token-file", "tokens"]);
    let http = reqwest::Client::new();
    let secret: Value = serde_json::from_str(&secret).expect("secret");
    let request = json!({"pipeline": pipeline, "file_name": ".vela.yml", "pull_secrets": [secret]});
    let (status, id, text) = post(&http, &service, API_TOKEN, &request).await;
    assert_eq!(status, 200, "{text}");
    let mut answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(answer["exit_code"], 1);
    if let Some(o) = answer.as_object_mut() {
        o.remove("exit_code");
    }
    assert_eq!(without_credentials(answer), without_credentials(cli_report));
    assert_no_secret("the answer", &text);

    // A compiled build with its token; a wrong API token.
    let build = json!({"id": "b_1", "version": "1", "token": BUILD_TOKEN,
        "steps": [{"id": "s", "name": "s", "image": format!("{host}/team/app:v1"), "pull": "always"}]});
    let (status, _, text) = post(
        &http,
        &service,
        API_TOKEN,
        &json!({"build": build, "pull_secrets": [secret]}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_no_secret("the build answer", &text);
    // A template with no image: a 400 naming it, as `check` exits 2; `allow_empty` passes.
    let empty = json!({
        "pipeline": "version: \"1\"\ntemplates: [{name: t, source: t.yml, type: github}]\n",
        "file_name": "tpl.yml"
    });
    let (status, _, text) = post(&http, &service, API_TOKEN, &empty).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("no image to check in tpl.yml"), "{text}");
    let mut allowed = empty.clone();
    allowed["allow_empty"] = json!(true);
    let (status, _, text) = post(&http, &service, API_TOKEN, &allowed).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"exit_code\":0"), "{text}");
    let (status, _, text) = post(&http, &service, "not-the-token", &request).await;
    assert_eq!(status, 401, "{text}");
    assert_no_secret("the 401", &text);
    let metrics = http
        .get(service.url("/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert_no_secret("/metrics", &metrics);

    service.terminate();
    let mut service = service;
    assert_eq!(service.wait(Duration::from_secs(20)), Some(0));
    let logs = service.logs();
    assert_no_secret("the logs", &logs);
    // JSON lines, the request's id among them.
    let id = id.expect("X-Request-Id");
    assert!(logs.contains(&id), "request id {id} not logged:\n{logs}");
    assert!(
        logs.lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()),
        "every log line is JSON:\n{logs}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_check_in_flight_finish_then_exits_0() {
    // A registry that accepts and never answers: the check runs until its deadline.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let hanging = listener.local_addr().expect("addr").to_string();
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
            let _ = seen_tx.send(());
        }
    });
    let dir = temp_dir("shutdown");
    std::fs::write(dir.join("tokens"), format!("{API_TOKEN}\n")).expect("write");
    let mut service = Service::start(
        &dir,
        &[
            "--api-token-file",
            "tokens",
            "--request-timeout",
            "60s",
            "--max-attempts",
            "1",
        ],
    );
    let http = reqwest::Client::new();
    let request =
        json!({"images": [{"reference": format!("{hanging}/slow:v1")}], "deadline_seconds": 3});
    let in_flight = {
        let http = http.clone();
        let url = service.url("/v1/checks");
        tokio::spawn(async move {
            let response = http
                .post(url)
                .bearer_auth(API_TOKEN)
                .header("content-type", "application/json")
                .body(request.to_string())
                .send()
                .await
                .expect("answer");
            let status = response.status().as_u16();
            (status, response.text().await.expect("body"))
        })
    };
    tokio::time::timeout(Duration::from_secs(10), seen_rx.recv())
        .await
        .expect("the check reached the registry");
    let sent = Instant::now();
    service.terminate();
    let (status, text) = in_flight.await.expect("joins");
    assert_eq!(status, 200, "{text}");
    let report: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(report["images"][0]["status"], "unreachable", "{report}");
    assert_eq!(
        service.wait(Duration::from_secs(10)),
        Some(0),
        "{}",
        service.logs()
    );
    assert!(sent.elapsed() < Duration::from_secs(15));
    assert!(
        service.logs().contains("shutting down"),
        "{}",
        service.logs()
    );
}

/// `serve --admission` needs TLS, and its options need `--admission`.
#[test]
fn the_admission_webhook_needs_tls_and_its_options_need_admission() {
    let dir = temp_dir("admission-refused");
    let output = command(&dir)
        .args(["serve", "--listen", "127.0.0.1:0", "--admission"])
        .output()
        .expect("runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--tls-cert"), "{stderr}");
    let output = command(&dir)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admission-mode",
            "deny",
        ])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2), "a usage error");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--admission"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The real binary as a webhook: deploy/admission/make-certs.sh's certificate, a client
/// that trusts only its CA, `--admission-mode deny`: a Pod with a missing image is
/// refused with the reason, without a bearer token although a token file is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_admission_denies_a_missing_image_over_tls() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    let dir = temp_dir("admission");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/admission/make-certs.sh");
    let status = Command::new("sh")
        .arg(&script)
        .arg(&dir)
        .args(["pullcheck-admission", "pullcheck"])
        .stderr(Stdio::null())
        .status()
        .expect("sh");
    assert!(status.success());
    std::fs::write(dir.join("tokens"), format!("{API_TOKEN}\n")).expect("tokens");
    let (cert, key, tokens) = (dir.join("tls.crt"), dir.join("tls.key"), dir.join("tokens"));
    let service = Service::start(
        &dir,
        &[
            "--admission",
            "--admission-mode",
            "deny",
            "--admission-timeout",
            "5s",
            "--tls-cert",
            cert.to_str().expect("utf-8"),
            "--tls-key",
            key.to_str().expect("utf-8"),
            "--api-token-file",
            tokens.to_str().expect("utf-8"),
        ],
    );
    let host = "pullcheck-admission.pullcheck.svc";
    let addr: std::net::SocketAddr = service.addr.parse().expect("addr");
    let ca = std::fs::read(dir.join("ca.crt")).expect("ca");
    let http = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&ca).expect("PEM")])
        .resolve(host, addr)
        .build()
        .expect("client");
    let image = format!("{}/team/app:v2", registry.host());
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "web",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "admin", "uid": "014fbff9a07c", "groups": ["system:authenticated"]},
            "object": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"containers": [{"name": "web", "image": image, "imagePullPolicy": "IfNotPresent"}]}
            },
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    });
    let answer = http
        .post(format!("https://{host}:{}/v1/admission", addr.port()))
        .header("content-type", "application/json")
        .body(review.to_string())
        .send()
        .await
        .expect("HTTPS answer");
    assert_eq!(answer.status().as_u16(), 200);
    let answer: Value = serde_json::from_str(&answer.text().await.expect("body")).expect("JSON");
    assert_eq!(answer["kind"], "AdmissionReview", "{answer}");
    let response = &answer["response"];
    assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(response["allowed"], false, "{answer}");
    assert_eq!(response["status"]["code"], 403, "{answer}");
    let message = response["status"]["message"].as_str().expect("message");
    assert_eq!(
        message,
        format!("pullcheck: container web: image {image} not found: no such tag; did you mean v1?"),
        "{message}"
    );
    let logs = service.logs_with("admission review").await;
    assert!(logs.contains("admission review"), "{logs}");
}

/// A kubeconfig with a YAML error near its credentials: `check` and `serve` name
/// `--kubeconfig` and the position; a `$KUBECONFIG` the service only logs is in the 400 a
/// request naming a namespace gets. None of them shows a line of the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_kubeconfig_is_named_without_its_secrets() {
    const KUBE_TOKEN: &str = "kubeconfig-token-canary-93ad";
    const KUBE_PASSWORD: &str = "kubeconfig-password-canary-e71f";
    let dir = temp_dir("badkube");
    std::fs::write(
        dir.join("kubeconfig"),
        format!(
            "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {KUBE_TOKEN}\n    password: [{KUBE_PASSWORD}\n"
        ),
    )
    .expect("write");
    std::fs::write(dir.join("tokens"), format!("{API_TOKEN}\n")).expect("write");
    let clean = |what: &str, text: &str| {
        for canary in [KUBE_TOKEN, KUBE_PASSWORD] {
            assert!(!text.contains(canary), "{what} holds {canary}:\n{text}");
        }
    };
    let expected =
        "pullcheck: error: --kubeconfig kubeconfig: not a kubeconfig: line 7, column 15: ";
    for args in [
        &[
            "check",
            "--image",
            "127.0.0.1:1/x:1",
            "-n",
            "ns",
            "--kubeconfig",
            "kubeconfig",
        ][..],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig",
            "kubeconfig",
        ][..],
    ] {
        let out = command(&dir)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(expected), "{args:?}: {stderr}");
        clean("stderr", &stderr);
    }

    let mut service = Service::start_with(&dir, &["--api-token-file", "tokens"], |c| {
        c.env("KUBECONFIG", dir.join("kubeconfig"));
    });
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let (status, _, body) = post(
        &http,
        &service,
        API_TOKEN,
        &json!({"images": [{"reference": "127.0.0.1:1/x:1"}], "namespace": "ns"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let body: Value = serde_json::from_str(&body).expect("JSON");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("line 7, column 15"), "{body}");
    clean("the 400", message);
    service.terminate();
    assert_eq!(service.wait(Duration::from_secs(20)), Some(0));
    let logs = service.logs();
    assert!(logs.contains("line 7, column 15"), "{logs}");
    clean("the log", &logs);
    std::fs::remove_dir_all(&dir).ok();
}
