//! Cost bounds (`--max-images`, `--admission-max-containers`, `--admission-max-body`,
//! `--admission-max-reviews`), request errors in JSON's words, and the metrics' bounded
//! and pre-created label sets.

use std::sync::atomic::Ordering;
use std::time::Duration;

use pullcheck_server::ServeOptions;
use pullcheck_server::admission::{AdmissionMode, AdmissionOptions};
use serde_json::{Value, json};

use crate::admission::{Webhook, container, pod, pod_review, warnings};
use crate::util::{Hanging, TestServer};

/// The `{"error": {...}}` of a 413 for a cost limit: (limit, count, flag).
/// An over-limit error's `limit`, `count` and `setting`; its `flag` is the front end's
/// name of the setting, here (no front end) the same.
fn limit_of(answer: &Value) -> (u64, Option<u64>, String) {
    let e = &answer["error"];
    assert_eq!(e["flag"], e["setting"], "{answer}");
    (
        e["limit"].as_u64().unwrap_or_default(),
        e["count"].as_u64(),
        e["setting"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Whether the metrics text has exactly this sample line.
fn has_line(metrics: &str, line: &str) -> bool {
    metrics.lines().any(|l| l == line)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_max_images_is_413_before_any_registry_is_asked() {
    let hanging = Hanging::start().await;
    let server = TestServer::start(ServeOptions {
        max_images: 3,
        ..ServeOptions::default()
    })
    .await;
    let image = |i: usize| format!("{}/app-{i}:v1", hanging.host);

    // `images`: counted as given.
    let images: Vec<Value> = (0..4).map(|i| json!({"reference": image(i)})).collect();
    let (status, answer) = server.check(None, &json!({ "images": images })).await;
    assert_eq!(status, 413, "{answer}");
    assert_eq!(
        limit_of(&answer),
        (3, Some(4), "max_images".to_owned()),
        "{answer}"
    );

    // A pipeline: each use counts where it is used, also through an alias (two steps,
    // used by two stages, are four uses).
    let pipeline = format!(
        "version: \"1\"\nstages:\n  one:\n    steps: &steps\n      - name: a\n        image: {}\n        commands: [x]\n      - name: b\n        image: {}\n        commands: [x]\n  two:\n    steps: *steps\n",
        image(0),
        image(1)
    );
    let (status, answer) = server.check(None, &json!({ "pipeline": pipeline })).await;
    assert_eq!(status, 413, "{answer}");
    assert_eq!(
        limit_of(&answer),
        (3, Some(4), "max_images".to_owned()),
        "{answer}"
    );
    // Manifests: each container.
    let manifests = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n{}",
        (0..5)
            .map(|i| format!("    - {{name: c{i}, image: \"{}\"}}\n", image(i)))
            .collect::<String>()
    );
    let (status, answer) = server.check(None, &json!({ "manifests": manifests })).await;
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["error"]["count"], 5, "{answer}");

    // Nothing was asked of the registry, and each refusal is counted.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(hanging.accepted.load(Ordering::SeqCst), 0);
    assert_eq!(
        server
            .metric("pullcheck_requests_over_limit_total{limit=\"max_images\"} ")
            .await,
        3.0
    );
    assert_eq!(
        server
            .metric("pullcheck_http_requests_total{route=\"/v1/checks\",code=\"413\"} ")
            .await,
        3.0
    );

    // Warnings are not uses, but the answer lists at most 100 of them: 150 ignored YAML
    // documents give 99 and a last one that counts the other 51.
    let pipeline = format!(
        "version: \"1\"\nsteps:\n  - name: a\n    image: 127.0.0.1:1/a:v1\n    commands: [x]\n{}",
        "---\nx: 1\n".repeat(150)
    );
    let (status, report) = server.check(None, &json!({ "pipeline": pipeline })).await;
    assert_eq!(status, 200, "{report}");
    let listed = report["warnings"].as_array().map(Vec::len);
    assert_eq!(
        listed,
        Some(pullcheck_server::api::MAX_ANSWER_WARNINGS),
        "{report}"
    );
    assert_eq!(
        report["warnings"][99], "… and 51 more warnings, not shown",
        "{report}"
    );

    // At the limit: checked (a refused port: unreachable).
    let images: Vec<Value> = (0..3)
        .map(|i| json!({"reference": format!("127.0.0.1:1/app-{i}:v1")}))
        .collect();
    let (status, report) = server.check(None, &json!({ "images": images })).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["summary"]["total"], 3, "{report}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_errors_name_the_field_and_the_json_type() {
    let server = TestServer::start(ServeOptions::default()).await;
    let cases = [
        (
            json!({"images": ["alpine"]}),
            "images[0]: expected an object with \"reference\", found a string",
        ),
        // An array where the object belongs is not read field by field.
        (
            json!({"images": [["alpine", "always"]]}),
            "images[0]: expected an object with \"reference\", found an array",
        ),
        (
            json!({"images": [{"reference": "alpine"}], "deadline_seconds": "10"}),
            "deadline_seconds: expected a number (seconds), found a string",
        ),
        (
            json!({"images": [{"reference": 5}]}),
            "images[0].reference: expected a string, found a number 5",
        ),
        (
            json!({"images": [{"policy": "always"}]}),
            "images[0]: missing field \"reference\"",
        ),
        (
            json!({"images": [{"reference": "alpine", "polcy": "never"}]}),
            "images[0]: unknown field \"polcy\"; known fields: \"reference\", \"policy\", \"name\"",
        ),
        (
            json!({"build": "id: 1"}),
            "build: expected an object (a compiled Vela build), found a string",
        ),
        (
            json!({"images": {"reference": "alpine"}}),
            "images: expected an array of objects with \"reference\", found an object",
        ),
        (
            json!([{"images": [{"reference": "alpine"}]}]),
            "the request must be a JSON object, found an array",
        ),
        (
            json!("alpine"),
            "the request must be a JSON object, found a string",
        ),
    ];
    for (body, message) in cases {
        let (status, answer) = server.check(None, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["message"], message, "{body}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_start_at_zero_and_a_plain_http_registry_s_https_ping_is_a_fallback() {
    let server = TestServer::start(ServeOptions::default()).await;
    let (_, metrics) = server.get("/metrics").await;
    for result in ["pass", "fail", "unverified", "error", "abandoned"] {
        let line = format!("pullcheck_checks_total{{result=\"{result}\"}} 0");
        assert!(has_line(&metrics, &line), "{line} in\n{metrics}");
    }
    for line in [
        "pullcheck_images_total{status=\"missing\"} 0",
        "pullcheck_images_total{status=\"unresolved\"} 0",
        "pullcheck_config_reload_errors_total{file=\"api_token_file\"} 0",
        "pullcheck_config_reload_errors_total{file=\"tls_cert\"} 0",
        "pullcheck_requests_over_limit_total{limit=\"max_images\"} 0",
        "pullcheck_requests_over_limit_total{limit=\"admission_max_containers\"} 0",
    ] {
        assert!(has_line(&metrics, line), "{line} in\n{metrics}");
    }

    // A loopback registry speaks plain HTTP (allowed, as Docker allows loopback): the
    // https attempt of its first request (the manifest `HEAD`, sent in place of the
    // ping) fails as expected and is `fallback`, not `error`; no ping follows the 200.
    let registry = pullcheck_testkit::Registry::anonymous()
        .await
        .expect("registry");
    registry
        .push("team/app", "v1", pullcheck_testkit::ImageKind::OciManifest)
        .await
        .expect("push");
    let (status, report) = server
        .check(
            None,
            &json!({"images": [{"reference": format!("{}/team/app:v1", registry.host())}]}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["images"][0]["status"], "present", "{report}");
    let line = |kind: &str, code: &str| {
        format!(
            "pullcheck_registry_requests_total{{registry=\"{}\",kind=\"{kind}\",code=\"{code}\"}} ",
            registry.host()
        )
    };
    assert_eq!(server.metric(&line("manifest", "fallback")).await, 1.0);
    assert_eq!(server.metric(&line("manifest", "error")).await, 0.0);
    assert_eq!(server.metric(&line("manifest", "200")).await, 1.0);
    assert_eq!(server.metric(&line("ping", "200")).await, 0.0);
    assert_eq!(
        server
            .metric("pullcheck_checks_total{result=\"pass\"} ")
            .await,
        1.0
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_bounds_containers_bodies_and_reviews_in_flight() {
    let hanging = Hanging::start().await;
    let hook = Webhook::start(
        "bounds",
        AdmissionOptions {
            mode: AdmissionMode::Deny,
            timeout: Duration::from_secs(3),
            max_containers: 2,
            max_body: 16 << 10,
            max_reviews: 1,
            ..AdmissionOptions::default()
        },
        ServeOptions::default(),
    )
    .await;
    let image = |i: usize| format!("{}/team/app-{i}:v1", hanging.host);

    // Three containers over a limit of two: allowed unchecked, with a warning, in deny
    // mode too; no registry asked.
    let containers: Vec<Value> = (0..3)
        .map(|i| container(&format!("c{i}"), &image(i)))
        .collect();
    let object = pod("many", &[], &containers, json!({}));
    let answer = hook
        .review(
            "/v1/admission",
            &pod_review("c0ffee00-0000-4000-8000-0000000000b1", &object),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let w = warnings(&answer);
    assert_eq!(w.len(), 1, "{answer}");
    assert!(w[0].contains("(admission_max_containers)"), "{w:?}");
    assert_eq!(hanging.accepted.load(Ordering::SeqCst), 0);

    // Two containers and an image volume: three images the kubelet pulls, over two too,
    // and the warning counts them as what they are.
    let mut object = pod("volumes", &[], &containers[..2], json!({}));
    object["spec"]["volumes"] = json!([{"name": "m", "image": {"reference": image(9)}}]);
    let answer = hook
        .review(
            "/v1/admission",
            &pod_review("c0ffee00-0000-4000-8000-0000000000b9", &object),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(
        warnings(&answer),
        [
            "pullcheck: 3 containers and image volumes, over the limit of 2 \
          (admission_max_containers); images not checked"
        ],
        "{answer}"
    );
    assert_eq!(hanging.accepted.load(Ordering::SeqCst), 0);

    // A Pod without apiVersion and kind cannot be read as one: allowed with a warning
    // naming both, not allowed in silence.
    let mut bare = pod("bare", &[], &[container("c", &image(0))], json!({}));
    if let Some(o) = bare.as_object_mut() {
        o.remove("apiVersion");
        o.remove("kind");
    }
    let answer = hook
        .review(
            "/v1/admission/deny",
            &pod_review("c0ffee00-0000-4000-8000-0000000000b2", &bare),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let w = warnings(&answer);
    assert_eq!(w.len(), 1, "{answer}");
    assert!(
        w[0].contains("`apiVersion`") && w[0].contains("`kind`"),
        "{w:?}"
    );

    // An object the reader cannot read at a position: the warning is the reader's
    // message alone, without pullcheck's own copy's name and position (`Pod ns:8:19:`),
    // which mean nothing to the person who wrote the object.
    let mut odd = pod("odd", &[], &[container("c", &image(0))], json!({}));
    odd["spec"]["containers"] = json!("not a list");
    let answer = hook
        .review(
            "/v1/admission/deny",
            &pod_review("c0ffee00-0000-4000-8000-0000000000b4", &odd),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let text = serde_json::to_string_pretty(&odd).expect("JSON");
    let read = pullcheck_kube::read_manifests("Pod odd", &text).expect_err("unreadable");
    assert!(
        read.line.is_some(),
        "the reader's error has a position: {read:?}"
    );
    assert_eq!(
        warnings(&answer),
        [format!(
            "pullcheck: the object cannot be read: {}",
            read.message
        )],
        "{answer}"
    );

    // A body over --admission-max-body: 413 with the limit and the flag.
    let mut big = pod("big", &[], &[container("c", &image(0))], json!({}));
    big["metadata"]["annotations"] = json!({"note": "x".repeat(20 << 10)});
    let body = pod_review("c0ffee00-0000-4000-8000-0000000000b3", &big).to_string();
    let (status, text) = hook.post_raw("/v1/admission", &body).await;
    assert_eq!(status, 413, "{text}");
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        limit_of(&answer),
        (
            16 << 10,
            Some(body.len() as u64),
            "admission_max_body".to_owned()
        ),
        "{answer}"
    );

    // One review in flight at most: a second gets 503 with Retry-After.
    let object = pod("slow", &[], &[container("c", &image(9))], json!({}));
    let slow = pod_review("c0ffee00-0000-4000-8000-0000000000b4", &object);
    let first = {
        let body = slow.to_string();
        let hook = &hook;
        async move { hook.post_raw("/v1/admission", &body).await }
    };
    let second = async {
        assert!(
            Hanging::wait(&hanging.accepted, 1).await,
            "the first review reached the registry"
        );
        hook.post_raw(
            "/v1/admission",
            &pod_review("c0ffee00-0000-4000-8000-0000000000b5", &object).to_string(),
        )
        .await
    };
    let ((first_status, first_text), (second_status, second_text)) =
        tokio::time::timeout(Duration::from_secs(20), async {
            tokio::join!(first, second)
        })
        .await
        .expect("both answered");
    assert_eq!(second_status, 503, "{second_text}");
    assert_eq!(first_status, 200, "{first_text}");
    let first: Value = serde_json::from_str(&first_text).expect("JSON");
    assert_eq!(first["response"]["allowed"], true, "unreachable: {first}");

    // A field of the wrong type is named by its path, in JSON's words.
    let mut wrong = pod_review("c0ffee00-0000-4000-8000-0000000000b6", &object);
    wrong["request"]["uid"] = json!(7);
    let (status, text) = hook.post_raw("/v1/admission", &wrong.to_string()).await;
    assert_eq!(status, 400, "{text}");
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        answer["error"]["message"],
        "the AdmissionReview's request is malformed: request.uid: expected a string, found a number 7"
    );

    let metrics = hook.metrics().await;
    for (limit, count) in [
        ("admission_max_containers", 2),
        ("admission_max_body", 1),
        ("admission_max_reviews", 1),
    ] {
        let line = format!("pullcheck_requests_over_limit_total{{limit=\"{limit}\"}} {count}");
        assert!(has_line(&metrics, &line), "{line} in\n{metrics}");
    }
    hook.stop().await;
}
