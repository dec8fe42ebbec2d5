//! The four inputs against real registries: a pipeline (anonymous registry), a compiled
//! build and images with pull secrets in the request (htpasswd and token registries),
//! manifests; the metrics they leave; and the warm state.

use pullcheck_server::ServeOptions;
use pullcheck_testkit::kube::{DockerAuth, pull_secret_manifest};
use pullcheck_testkit::{Auth, ImageKind, Registry, User};
use serde_json::{Value, json};

use crate::util::{TestServer, statuses, token_registry};

const PASSWORD: &str = "serve-password-canary-5b1e";
const BUILD_TOKEN: &str = "build-token-canary-93aa";

fn pipeline(host: &str) -> String {
    format!(
        "version: \"1\"\nsteps:\n  - name: ok\n    image: {host}/library/alpine:3.19\n    commands: [x]\n  - name: typo\n    image: {host}/library/alpine:3.91\n    commands: [x]\n"
    )
}

fn secret(host: &str) -> Value {
    let text = pull_secret_manifest("ci", "regcred", &[DockerAuth::new(host, "ci", PASSWORD)]);
    serde_json::from_str(&text).expect("secret JSON")
}

/// No canary anywhere in `text`: not the password, not the build token, not a JWT.
fn assert_no_secret(text: &str) {
    assert!(!text.contains(PASSWORD), "password in {text}");
    assert!(!text.contains(BUILD_TOKEN), "build token in {text}");
    assert!(!text.contains("eyJ"), "a JWT in {text}");
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("ci:{PASSWORD}"));
    assert!(!text.contains(&basic), "basic credentials in {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_gets_the_cli_report_with_positions_and_exit_code() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("library/alpine", "3.19", ImageKind::OciIndex)
        .await
        .expect("push");
    let server = TestServer::start(ServeOptions::default()).await;
    let host = registry.host();
    let (status, report) = server
        .check(
            None,
            &json!({"pipeline": pipeline(host), "file_name": ".vela.yml"}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        statuses(&report),
        [
            (format!("{host}/library/alpine:3.19"), "present".into()),
            (format!("{host}/library/alpine:3.91"), "missing".into()),
        ]
    );
    assert_eq!(report["exit_code"], 1);
    assert_eq!(report["summary"]["failed"], 1);
    let origin = &report["images"][1]["origins"][0];
    assert_eq!(
        (&origin["file"], &origin["line"], &origin["column"]),
        (&json!(".vela.yml"), &json!(7), &json!(12)),
        "{report}"
    );

    // Without file_name, the origin is "request"; the same pipeline passes once fixed.
    let fixed = pipeline(host).replace("3.91", "3.19");
    let (status, report) = server.check(None, &json!({"pipeline": fixed})).await;
    assert_eq!((status, &report["exit_code"]), (200, &json!(0)), "{report}");
    assert_eq!(report["images"][0]["origins"][0]["file"], "request");

    let metrics = server.get("/metrics").await.1;
    for line in [
        "pullcheck_checks_total{result=\"fail\"} 1",
        "pullcheck_checks_total{result=\"pass\"} 1",
        "pullcheck_images_total{status=\"present\"} 2",
        "pullcheck_images_total{status=\"missing\"} 1",
        "pullcheck_check_duration_seconds_count 2",
        "pullcheck_http_requests_total{route=\"/v1/checks\",code=\"200\"} 2",
        "pullcheck_checks_in_flight 0",
        "pullcheck_build_info{version=\"",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    assert!(!metrics.contains("alpine"), "no image label: {metrics}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compiled_build_with_a_pull_secret_against_htpasswd() {
    let registry = Registry::builder()
        .auth(Auth::Htpasswd(vec![User::new("ci", PASSWORD)]))
        .start()
        .await
        .expect("registry");
    registry
        .push("team/app", "v1", ImageKind::DockerManifest)
        .await
        .expect("push");
    let host = registry.host().to_owned();
    let build = json!({
        "id": "team_app_7",
        "version": "1",
        "token": BUILD_TOKEN,
        "steps": [
            {"id": "step_team_app_7_build", "name": "build", "image": format!("{host}/team/app:v1"), "pull": "always"},
            {"id": "step_team_app_7_later", "name": "later", "image": format!("{host}/team/app:v2"), "pull": "on_start"}
        ]
    });
    let server = TestServer::start(ServeOptions::default()).await;

    // Without the secret: no access.
    let (status, report) = server.check(None, &json!({"build": build})).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["images"][0]["status"], "no_access", "{report}");
    assert_eq!(report["images"][1]["status"], "deferred", "{report}");

    let (status, _, text) = server
        .post(
            None,
            &json!({"build": build, "pull_secrets": [secret(&host)], "include_on_start": true})
                .to_string(),
        )
        .await;
    let report: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        statuses(&report),
        [
            (format!("{host}/team/app:v1"), "present".into()),
            (format!("{host}/team/app:v2"), "missing".into()),
        ]
    );
    assert!(
        report["images"][0]["credential"]
            .to_string()
            .contains("regcred"),
        "{report}"
    );
    assert_no_secret(&text);
    assert_no_secret(&server.get("/metrics").await.1);
    server.stop().await;
}

/// A build's problems name their container, never a place in the server's re-serialised
/// `build` (no `request:L:C:` in `detail`, `problems[].at` null); the origins keep their
/// line and column as data. Nothing here is asked of a registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_s_problems_name_the_container_not_a_position() {
    let server = TestServer::start(ServeOptions::default()).await;
    let build = json!({
        "id": "team_app_8",
        "version": "1",
        "stages": [{"name": "test", "steps": [
            {"id": "s1", "name": "lint", "image": "127.0.0.1:1/team/lint:v1", "pull": "sometimes"},
            {"id": "s2", "name": "unit", "image": "127.0.0.1:1/team/app:${TAG", "environment": {}},
            {"id": "s3", "name": "secret", "image": "127.0.0.1:1/team/app:${APP_TAG}",
             "environment": {}, "secrets": [{"source": "app_tag", "target": "APP_TAG"}]}
        ]}]
    });
    let (status, report) = server.check(None, &json!({"build": build})).await;
    assert_eq!(status, 200, "{report}");
    let images = report["images"].as_array().expect("images");
    assert_eq!(images.len(), 3, "{report}");
    let want = [
        (
            "invalid",
            "unknown_pull_policy",
            "unknown pull value \"sometimes\" for step `lint`; allowed values: ",
        ),
        (
            "invalid",
            "invalid_container",
            "step `unit` (stage `test`): cannot substitute the variables of image ",
        ),
        ("unresolved", "unresolved_variable", "not checked: image "),
    ];
    for (image, (status, reason, detail)) in images.iter().zip(want) {
        assert_eq!(
            (image["status"].as_str(), image["reason"].as_str()),
            (Some(status), Some(reason)),
            "{image}"
        );
        let shown = image["detail"].as_str().expect("detail");
        assert!(shown.starts_with(detail), "{image}");
        assert_eq!(
            image["problems"].as_array().map(Vec::len),
            Some(1),
            "{image}"
        );
        assert_eq!(image["problems"][0]["at"], Value::Null, "{image}");
        let origin = &image["origins"][0];
        assert_eq!(
            (origin["kind"].as_str(), origin["stage"].as_str()),
            (Some("step"), Some("test")),
            "{image}"
        );
        assert!(origin["line"].as_u64().is_some_and(|l| l > 1), "{image}");
    }
    assert_eq!(report["exit_code"], 1, "{report}");
    server.stop().await;
}

/// `build` is always a compiled build, even without `id` (`pipeline.Build.ID` is
/// `omitempty`): the worker's substitution (an unknown variable is empty, so its default
/// applies), none of the compiler's refusals (no `version`, no `commands`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_without_an_id_is_still_a_compiled_build() {
    let server = TestServer::start(ServeOptions::default()).await;
    let build = json!({
        "steps": [
            {"name": "later", "image": "127.0.0.1:1/team/${APP:-app}:1", "pull": "on_start", "environment": {}}
        ]
    });
    let (status, report) = server.check(None, &json!({"build": build})).await;
    assert_eq!(status, 200, "{report}");
    let image = &report["images"][0];
    assert_eq!(
        (
            image["status"].as_str(),
            image["substituted"].as_str(),
            image["origins"][0]["kind"].as_str()
        ),
        (
            Some("deferred"),
            Some("127.0.0.1:1/team/app:1"),
            Some("step")
        ),
        "{report}"
    );
    assert_eq!(report["images"].as_array().map(Vec::len), Some(1));
    server.stop().await;
}

/// A build's wrong JSON type is refused naming the container's field, with no line or
/// column: the position would be one in the server's own re-encoding of `build`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_s_type_error_names_the_field_and_no_position() {
    let server = TestServer::start(ServeOptions::default()).await;
    let build = json!({"id": "x", "steps": [{"name": "a", "image": 5}]});
    let (status, answer) = server.check(None, &json!({"build": build})).await;
    assert_eq!(status, 400, "{answer}");
    let error = &answer["error"];
    assert_eq!(error["line"], Value::Null, "{answer}");
    assert_eq!(error["column"], Value::Null, "{answer}");
    assert_eq!(
        (
            error["refusal"]["kind"].as_str(),
            error["refusal"]["field"].as_str()
        ),
        (Some("wrong_type"), Some("steps[0].image")),
        "{answer}"
    );
    server.stop().await;
}

/// A bad image reference, given or as the placeholder, is a 200 with an `invalid` row
/// (docs/service.md), not a 400: every image given is in the report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_image_or_placeholder_is_an_invalid_row_not_a_400() {
    let server = TestServer::start(ServeOptions::default()).await;
    let request = json!({
        "images": [{"reference": "127.0.0.1:1/Team/App:v1"}],
        "runtime": "kubernetes",
        "placeholder_image": "127.0.0.1:1/Bad/Pause:1",
        "pipeline": "version: \"1\"\nsteps:\n  - name: a\n    image: 127.0.0.1:1/team/app:v1\n    pull: on_start\n    commands: [x]\n",
    });
    let (status, report) = server.check(None, &request).await;
    assert_eq!(status, 200, "{report}");
    let rows: Vec<(&str, &str, &str)> = report["images"]
        .as_array()
        .expect("images")
        .iter()
        .filter(|i| i["status"] == "invalid")
        .map(|i| {
            (
                i["reference"].as_str().unwrap_or_default(),
                i["reason"].as_str().unwrap_or_default(),
                i["origins"][0]["kind"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(rows.len(), 2, "{report}");
    assert!(
        rows.contains(&("127.0.0.1:1/Team/App:v1", "invalid_reference", "image")),
        "{report}"
    );
    assert!(
        rows.iter()
            .any(|r| r.0 == "127.0.0.1:1/Bad/Pause:1" && r.1 == "invalid_reference"),
        "{report}"
    );
    assert_eq!(report["exit_code"], 1, "{report}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_against_a_token_registry_and_the_warm_state() {
    let registry = token_registry(PASSWORD, &[("team/app", "v1", ImageKind::OciManifest)]).await;
    let host = registry.host().to_owned();
    let server = TestServer::start(ServeOptions::default()).await;
    let request = json!({
        "images": [
            {"reference": format!("{host}/team/app:v1")},
            {"reference": format!("{host}/team/app:v1"), "policy": "IfNotPresent"},
        ],
        "pull_secrets": [secret(&host)],
        "platform": "linux/amd64",
        "deadline_seconds": 20,
    });
    let (status, _, text) = server.post(None, &request.to_string()).await;
    let report: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!((status, &report["exit_code"]), (200, &json!(0)), "{report}");
    assert_eq!(report["summary"]["present"], 2, "{report}");
    assert_no_secret(&text);
    server.stop().await;
}

/// The second identical check is answered with one HEAD per image: no ping, no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_identical_check_sends_only_heads() {
    let registry = token_registry(
        PASSWORD,
        &[
            ("team/app", "v1", ImageKind::OciManifest),
            ("team/worker", "v1", ImageKind::DockerManifest),
        ],
    )
    .await;
    let host = registry.host().to_owned();
    let server = TestServer::start(ServeOptions::default()).await;
    let request = json!({
        "images": [
            {"reference": format!("{host}/team/app:v1")},
            {"reference": format!("{host}/team/worker:v1")},
        ],
        "pull_secrets": [secret(&host)],
    });
    let (status, first) = server.check(None, &request).await;
    assert_eq!((status, &first["exit_code"]), (200, &json!(0)), "{first}");
    registry.clear_requests().await.expect("clear");
    let tokens_before = registry.token_server().map_or(0, |t| t.requests().len());
    let (status, second) = server.check(None, &request).await;
    assert_eq!((status, &second["exit_code"]), (200, &json!(0)), "{second}");
    let requests = registry.requests().await.expect("log");
    let lines: Vec<String> = requests.iter().map(ToString::to_string).collect();
    assert_eq!(requests.len(), 2, "{lines:?}");
    assert!(requests.iter().all(|r| r.method == "HEAD"), "{lines:?}");
    let tokens_after = registry.token_server().map_or(0, |t| t.requests().len());
    assert_eq!(tokens_after, tokens_before, "no token request");
    // The registry client's observer counted both checks: no ping, the first check's
    // first HEAD answered 401 with the challenge (after the HTTPS attempt that a
    // plain-HTTP loopback registry cannot answer), one token request in all, four
    // HEADs answered, and the second check's token and challenge from the caches.
    let (_, metrics) = server.get("/metrics").await;
    let count = |kind: &str| -> f64 {
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("pullcheck_registry_requests_total{")
                    && l.contains(&format!("kind=\"{kind}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    for (code, n) in [("fallback", 1), ("401", 1), ("200", 4)] {
        let line = format!("kind=\"manifest\",code=\"{code}\"}} {n}\n");
        assert!(metrics.contains(&line), "{line} in {metrics}");
    }
    assert_eq!(count("ping"), 0.0, "{metrics}");
    assert_eq!(count("token"), 1.0, "{metrics}");
    assert_eq!(count("manifest"), 6.0, "{metrics}");
    assert!(
        server.metric("pullcheck_token_cache_hits_total").await >= 1.0,
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_are_one_set_per_workload() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("web", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    let host = registry.host();
    let manifests = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: {host}/web:v1\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: job}}\nspec:\n  containers:\n    - name: job\n      image: {host}/web:v9\n"
    );
    let server = TestServer::start(ServeOptions::default()).await;
    let (status, report) = server.check(None, &json!({"manifests": manifests})).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        statuses(&report),
        [
            (format!("{host}/web:v1"), "present".into()),
            (format!("{host}/web:v9"), "missing".into()),
        ]
    );
    let origin = &report["images"][1]["origins"][0];
    assert_eq!(
        (&origin["line"], &origin["column"]),
        (&json!(17), &json!(14)),
        "{report}"
    );

    // A pipeline sent as `manifests` is read as manifests: nothing found, and a warning
    // says why (with `allow_empty`; without it, a 400 says so).
    let (status, report) = server
        .check(None, &json!({"manifests": pipeline(host)}))
        .await;
    assert_eq!(status, 400, "{report}");
    assert!(
        report.to_string().contains("looks like a Vela pipeline"),
        "{report}"
    );
    let (status, report) = server
        .check(
            None,
            &json!({"manifests": pipeline(host), "allow_empty": true}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["summary"]["total"], 0, "{report}");
    assert!(
        report["warnings"]
            .to_string()
            .contains("looks like a Vela pipeline"),
        "{report}"
    );
    server.stop().await;
}

/// `allow_empty` passes an empty input as `--allow-empty` does (README: exit 0 when
/// there was no image): an empty `images` list and an empty pipeline text are a 400
/// without it, and with it a 200 with no row and `exit_code` 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_inputs_pass_with_allow_empty() {
    let server = TestServer::start(ServeOptions::default()).await;
    for body in [
        json!({"images": []}),
        json!({"pipeline": "", "file_name": "empty.yml"}),
    ] {
        let (status, answer) = server.check(None, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let mut allowed = body.clone();
        allowed["allow_empty"] = json!(true);
        let (status, report) = server.check(None, &allowed).await;
        assert_eq!(status, 200, "{allowed}: {report}");
        assert_eq!(report["images"], json!([]), "{report}");
        assert_eq!(report["summary"]["total"], 0, "{report}");
        assert_eq!(report["exit_code"], 0, "{report}");
    }
    server.stop().await;
}

/// `--cache-present`: the second check of a present image sends no request at all and
/// says its answer is cached; a missing image is asked again (negative answers are never
/// kept); the hits are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_present_answers_present_images_without_a_request() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    let host = registry.host().to_owned();
    let server = TestServer::start(ServeOptions {
        cache_present: Some(std::time::Duration::from_secs(30)),
        ..ServeOptions::default()
    })
    .await;
    let request = json!({
        "images": [
            {"reference": format!("{host}/team/app:v1")},
            {"reference": format!("{host}/team/app:v2")},
        ],
    });
    let (status, first) = server.check(None, &request).await;
    assert_eq!(status, 200, "{first}");
    assert!(first["images"][0].get("cached").is_none(), "{first}");
    registry.clear_requests().await.expect("clear");
    let (status, second) = server.check(None, &request).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        statuses(&second),
        [
            (format!("{host}/team/app:v1"), "present".into()),
            (format!("{host}/team/app:v2"), "missing".into()),
        ]
    );
    assert_eq!(second["images"][0]["cached"], true, "{second}");
    assert!(
        second["images"][0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("answer cached")),
        "{second}"
    );
    assert!(second["images"][1].get("cached").is_none(), "{second}");
    let requests = registry.requests().await.expect("log");
    let lines: Vec<String> = requests.iter().map(ToString::to_string).collect();
    assert!(
        lines.iter().all(|l| !l.contains("/team/app/manifests/v1")),
        "the cached image was asked again: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("HEAD") && l.contains("/team/app/manifests/v2")),
        "the missing image is asked again: {lines:?}"
    );
    assert_eq!(
        server.metric("pullcheck_answer_cache_hits_total ").await,
        1.0
    );
    server.stop().await;
}

/// A worker's check: the build with its outputs image beside it (`images` with `name`),
/// the service's `--runtime kubernetes` and its default placeholder, which the node
/// pulls through its mirror (registries.conf: docker.io/kubernetes is answered by the
/// loopback mirror, the primary is a closed port); a request's `runtime` overrides it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_with_its_outputs_image_and_the_service_s_placeholder_through_mirrors() {
    let registry = Registry::anonymous().await.expect("registry");
    for (repository, tag) in [("kubernetes/pause", "latest"), ("team/app", "v1")] {
        registry
            .push(repository, tag, ImageKind::OciManifest)
            .await
            .expect("push");
    }
    let host = registry.host().to_owned();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let primary = closed.local_addr().expect("addr").to_string();
    drop(closed);
    let dir = crate::util::temp_dir("placeholder-mirror");
    let conf = dir.join("registries.conf");
    // The build's own registry speaks plain HTTP, so it is marked insecure as a node's
    // registries.conf must (containers/image makes no loopback exception).
    std::fs::write(
        &conf,
        format!(
            "[[registry]]\nprefix = \"docker.io/kubernetes\"\nlocation = \"{primary}/kubernetes\"\n\
             insecure = true\n\n[[registry.mirror]]\nlocation = \"{host}/kubernetes\"\ninsecure = true\n\n\
             [[registry]]\nlocation = \"{host}\"\ninsecure = true\n"
        ),
    )
    .expect("write registries.conf");
    let mirrors = pullcheck::mirrors::MirrorConfig::load_registries_conf(&conf).expect("conf");
    let server = TestServer::start(ServeOptions {
        resolver: pullcheck::resolve::Resolver {
            mirrors,
            insecure_registries: Vec::new(),
        },
        runtime: Some(pullcheck_sources::Runtime::Kubernetes),
        ..ServeOptions::default()
    })
    .await;
    let build = json!({"id": "octocat_hello_1", "version": "1", "token": BUILD_TOKEN,
        "steps": [{"id": "step_app", "name": "app", "image": format!("{host}/team/app:v1"), "pull": "always"}]});
    let outputs = format!("{host}/vela/outputs:9");
    let request = json!({"build": build, "file_name": "build.json",
        "images": [{"reference": outputs, "policy": "not_present", "name": "outputs"}]});
    let (status, report) = server.check(None, &request).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        statuses(&report),
        [
            ("docker.io/kubernetes/pause:latest".into(), "present".into()),
            (format!("{host}/team/app:v1"), "present".into()),
            (outputs.clone(), "missing".into()),
        ]
    );
    let images = &report["images"];
    assert_eq!(images[0]["registry"], json!(host), "{report}");
    assert_eq!(images[0]["origins"][0]["kind"], "placeholder");
    assert_eq!(images[2]["policy"], "not_present");
    assert_eq!(images[2]["origins"][0]["kind"], "image");
    assert_eq!(images[2]["origins"][0]["name"], "outputs");
    assert_eq!(report["exit_code"], 1);

    // The request's runtime wins over the service's: no placeholder.
    let mut docker = request.clone();
    docker["runtime"] = json!("docker");
    let (status, report) = server.check(None, &docker).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report["images"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_no_secret(&report.to_string());
    server.stop().await;
}

/// A Pod's image volumes (`volumes[].image`, Kubernetes 1.31+) are checked as the kubelet
/// pulls them: a present one, a missing one, one under `pullPolicy: Never` (not asked),
/// and `:latest` without a policy (defaulted to Always, asked); each row's origin is
/// kind `volume` in list `volumes`, and only the asked ones reach the registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pods_image_volumes_are_checked_with_their_own_pull_policy() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    registry
        .push("team/models", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    let host = registry.host();
    let manifests = format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: infer}}
spec:
  containers:
  - {{name: app, image: {host}/team/app:v1}}
  volumes:
  - name: models
    image: {{reference: {host}/team/models:v1}}
  - name: weights
    image: {{reference: {host}/team/weights:v2, pullPolicy: IfNotPresent}}
  - name: local
    image: {{reference: {host}/team/local:v1, pullPolicy: Never}}
  - name: newest
    image: {{reference: {host}/team/models:latest}}
  - name: scratch
    emptyDir: {{}}
"
    );
    let server = TestServer::start(ServeOptions::default()).await;
    registry.clear_requests().await.expect("clear");
    let (status, report) = server.check(None, &json!({"manifests": manifests})).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        statuses(&report),
        [
            (format!("{host}/team/app:v1"), "present".into()),
            (format!("{host}/team/models:v1"), "present".into()),
            (format!("{host}/team/weights:v2"), "missing".into()),
            (format!("{host}/team/local:v1"), "skipped".into()),
            (format!("{host}/team/models:latest"), "missing".into()),
        ]
    );
    let rows = report["images"].as_array().expect("rows");
    let policies: Vec<_> = rows.iter().map(|r| r["policy"].clone()).collect();
    assert_eq!(
        policies,
        [
            json!("not_present"),
            json!("not_present"),
            json!("not_present"),
            json!("never"),
            json!("always")
        ],
        "{report}"
    );
    for (row, (name, line)) in rows[1..].iter().zip([
        ("models", 9),
        ("weights", 11),
        ("local", 13),
        ("newest", 15),
    ]) {
        let origin = &row["origins"][0];
        assert_eq!(origin["kind"], "volume", "{row}");
        assert_eq!(origin["name"], format!("Pod/infer volume {name}"), "{row}");
        assert_eq!(origin["line"], line, "{row}");
        assert_eq!(origin["pod"]["list"], "volumes", "{row}");
        assert_eq!(origin["pod"]["name"], name, "{row}");
    }
    assert_eq!(rows[2]["reason"], "repository_not_found", "{report}");
    assert_eq!(report["summary"]["total"], 5, "{report}");
    assert_eq!(report["summary"]["failed"], 2, "{report}");
    assert_eq!(report["exit_code"], 1);
    let heads: Vec<_> = registry
        .requests()
        .await
        .expect("log")
        .into_iter()
        .filter(|r| r.method == "HEAD" && r.path.contains("/manifests/"))
        .map(|r| r.path)
        .collect();
    assert_eq!(heads.len(), 4, "no HEAD for the Never volume: {heads:?}");
    assert!(
        !heads.iter().any(|p| p.contains("/team/local/")),
        "{heads:?}"
    );
    server.stop().await;
}

/// Facts as fields in the service's answer: an index without the platform asked for
/// names the platforms it lists (`platforms`), not only in `detail`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_platform_lists_the_platforms_served() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("team/multi", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    let host = registry.host().to_owned();
    let server = TestServer::start(ServeOptions::default()).await;
    let request = json!({
        "images": [{"reference": format!("{host}/team/multi:v1")}],
        "platform": "linux/s390x",
        "deadline_seconds": 20,
    });
    let (status, report) = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        server.check(None, &request),
    )
    .await
    .expect("answered in time");
    assert_eq!(status, 200, "{report}");
    let row = &report["images"][0];
    assert_eq!(
        (&row["status"], &row["reason"], &row["missing"]),
        (
            &json!("missing"),
            &json!("platform_not_found"),
            &json!("platform")
        ),
        "{report}"
    );
    assert_eq!(
        row["platforms"],
        json!(["linux/amd64", "linux/arm64/v8"]),
        "{report}"
    );
    assert_eq!(row.get("retry_after"), None, "{report}");
    server.stop().await;
}

/// encoding/json fills `pipeline.Build.Token` from any key equal to `token` under case
/// folding (Go's `encoding/json` field matching, `bytes.EqualFold`): `TOKEN`, `tOkEn` and
/// `to\u{212a}en` (the Kelvin sign folds to `k`) are the build's token too. Each is taken
/// out before the build is decoded: here they hold objects, which encoding/json would refuse
/// for the string field (a refused build), so a checked image proves they were removed,
/// and the canary inside them appears nowhere in the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builds_token_is_removed_whatever_the_case_of_its_key() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    let host = registry.host().to_owned();
    let server = TestServer::start(ServeOptions::default()).await;
    for key in ["TOKEN", "tOkEn", "to\u{212a}en"] {
        let mut build = json!({"id": "team_app_8", "version": "1",
            "steps": [{"id": "step_app", "name": "app", "image": format!("{host}/team/app:v1"), "pull": "always"}]});
        build[key] = json!({ "canary": BUILD_TOKEN });
        let (status, report) = server.check(None, &json!({ "build": build })).await;
        assert_eq!(status, 200, "{key}: {report}");
        assert_eq!(
            statuses(&report),
            [(format!("{host}/team/app:v1"), "present".into())],
            "{key}"
        );
        assert_eq!(report["exit_code"], 0, "{key}: {report}");
        assert_no_secret(&report.to_string());
    }
    server.stop().await;
}
