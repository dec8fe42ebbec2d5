//! Each error answer: 400 (with line and column where the input has them), 401, 403,
//! 413, 415; tokens re-read when their file changes.

use pullcheck_server::ServeOptions;
use serde_json::json;

use crate::util::{TestServer, temp_dir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_400_with_positions() {
    let server = TestServer::start(ServeOptions::default()).await;
    let cases = [
        (json!({}), "give one of", None),
        (
            json!({"pipeline": "version: \"1\"", "manifests": "kind: Pod"}),
            "(2 given)",
            None,
        ),
        (
            json!({"images": [{"reference": "alpine", "name": ""}]}),
            "images[0].name is empty",
            None,
        ),
        (json!({"images": []}), "nothing to check", None),
        (
            json!({"pipeline": "steps:\n  - name: a\n    image: [x\n"}),
            "request:",
            Some(4),
        ),
        (json!({"pipline": "x"}), "unknown field", Some(1)),
        (
            json!({"images": [{"reference": "alpine"}], "platform": "linux"}),
            "platform",
            None,
        ),
        (
            json!({"images": [{"reference": "alpine"}], "deadline_seconds": 0}),
            "deadline_seconds",
            None,
        ),
        (
            json!({"images": [{"reference": "alpine"}], "deadline_seconds": 1e-12}),
            "deadline_seconds must be at least 0.001",
            None,
        ),
        (
            json!({"images": [{"reference": "alpine"}], "pods_template": "t"}),
            "needs `namespace`",
            None,
        ),
        (
            json!({"images": [{"reference": "alpine"}], "namespace": "ci"}),
            "Kubernetes",
            None,
        ),
        (
            json!({"images": [{"reference": "alpine"}], "pull_secrets": [{"kind": "ConfigMap"}]}),
            "pull_secrets[0]",
            None,
        ),
    ];
    for (body, needle, line) in cases {
        let (status, answer) = server.check(None, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{body}: {answer}");
        if let Some(line) = line {
            assert_eq!(answer["error"]["line"], line, "{body}: {answer}");
            assert!(answer["error"]["column"].is_u64(), "{body}: {answer}");
        }
    }
    // Not JSON at all: its position in the body.
    let (status, _, text) = server.post(None, "{\n  \"pipeline\": \n}").await;
    assert_eq!(status, 400, "{text}");
    let answer: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(answer["error"]["line"], 3, "{answer}");
    server.stop().await;
}

/// Every 400 carries `kind` and the request `field` it is about (a path), the JSON shape
/// errors and the request's own rules alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_400_carries_kind_and_field() {
    let server = TestServer::start(ServeOptions::default()).await;
    let alpine = json!([{"reference": "alpine"}]);
    let cases = [
        (json!({}), "inputs", json!("images")),
        (
            json!({"pipeline": "version: \"1\"", "manifests": "kind: Pod"}),
            "inputs",
            json!("pipeline"),
        ),
        (json!({"namespace": 5}), "wrong_type", json!("namespace")),
        (
            json!({"images": [{"reference": "alpine", "policy": []}]}),
            "wrong_type",
            json!("images[0].policy"),
        ),
        (json!({"pipline": "x"}), "unknown_field", json!("pipline")),
        (
            json!({"images": [{}]}),
            "missing_field",
            json!("images[0].reference"),
        ),
        (
            json!({"images": [{"reference": ""}]}),
            "empty",
            json!("images[0].reference"),
        ),
        (
            json!({"images": [{"reference": "alpine", "name": ""}]}),
            "empty",
            json!("images[0].name"),
        ),
        (
            json!({"images": alpine, "platform": "linux"}),
            "platform",
            json!("platform"),
        ),
        (
            json!({"images": alpine, "runtime": "podman"}),
            "runtime",
            json!("runtime"),
        ),
        (
            json!({"images": alpine, "deadline_seconds": 0}),
            "deadline",
            json!("deadline_seconds"),
        ),
        (
            json!({"images": alpine, "pull_secrets": [{"kind": "ConfigMap"}]}),
            "pull_secret",
            json!("pull_secrets[0]"),
        ),
        (
            json!({"images": alpine, "namespace": "ci"}),
            "no_kubernetes_api",
            json!("namespace"),
        ),
        (
            json!({"pipeline": "steps: [\n", "file_name": "p.yml"}),
            "input",
            json!("pipeline"),
        ),
        (
            json!({"manifests": "kind: [\n"}),
            "input",
            json!("manifests"),
        ),
    ];
    for (body, kind, field) in cases {
        let (status, answer) = server.check(None, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["kind"], kind, "{body}: {answer}");
        assert_eq!(answer["error"]["field"], field, "{body}: {answer}");
    }
    // The body itself: no field.
    let (status, _, text) = server.post(None, "[1]").await;
    assert_eq!(status, 400, "{text}");
    let answer: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(answer["error"]["kind"], "not_an_object", "{answer}");
    assert_eq!(
        answer["error"]["field"],
        serde_json::Value::Null,
        "{answer}"
    );
    server.stop().await;
}

/// A namespace or a pods template name that is no path segment of the Kubernetes API
/// is a 400 before anything is asked, as client-go refuses it (rest/request.go `Name`,
/// `Namespace`, `IsValidPathSegmentName`): an empty namespace does not become the
/// service's kubeconfig namespace, an empty template name does not GET the collection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_are_no_path_segment_are_400() {
    let server = TestServer::start(ServeOptions::default()).await;
    let alpine = json!([{"reference": "alpine"}]);
    let cases = [
        (
            json!({"images": alpine, "namespace": ""}),
            "namespace",
            "",
            "empty",
        ),
        (
            json!({"images": alpine, "namespace": "ci", "pods_template": ""}),
            "pods_template",
            "",
            "empty",
        ),
        (
            json!({"images": alpine, "namespace": "ci", "pods_template": ".."}),
            "pods_template",
            "..",
            "dots",
        ),
        (
            json!({"images": alpine, "namespace": "a/b"}),
            "namespace",
            "a/b",
            "contains",
        ),
        (
            json!({"images": alpine, "namespace": "ci", "pods_template": "t%2F"}),
            "pods_template",
            "t%2F",
            "contains",
        ),
    ];
    for (body, field, name, problem) in cases {
        let (status, answer) = server.check(None, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let error = &answer["error"];
        assert_eq!(error["kind"], "invalid_name", "{body}: {answer}");
        assert_eq!(error["field"], field, "{body}: {answer}");
        assert_eq!(error["name"], name, "{body}: {answer}");
        assert_eq!(error["problem"], problem, "{body}: {answer}");
    }
    server.stop().await;
}

/// The request's own errors (`pullcheck_sources::RequestError`) as JSON facts: `kind`,
/// the request `field` it is about, and the variant's own (`inputs` of
/// `nothing_to_check`), with a 4xx status; the same rules as the CLI's and the webhook's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_errors_are_typed_json_facts() {
    let server = TestServer::start(ServeOptions::default()).await;
    let templates_only = "version: \"1\"\nsteps:\n  - name: lint\n    template: {name: go}\n\
                          templates: [{name: go, source: t.yml, type: github}]\n";
    let cases = [
        (
            json!({"images": []}),
            json!({"kind": "nothing_to_check", "field": "allow_empty", "inputs": []}),
        ),
        (
            json!({"pipeline": "", "file_name": "empty.yml"}),
            json!({"kind": "input"}),
        ),
        (
            json!({"manifests": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
                   "file_name": "cm.yaml"}),
            json!({"kind": "nothing_to_check", "field": "allow_empty", "inputs": [
                {"name": "cm.yaml", "read_as": "manifests", "held": "no_image"}]}),
        ),
        (
            json!({"pipeline": templates_only, "file_name": "tpl.yml"}),
            json!({"kind": "nothing_to_check", "field": "allow_empty", "inputs": [
                {"name": "tpl.yml", "read_as": "pipeline", "held": "templates",
                 "template_steps": 1, "inline_templates": 0}]}),
        ),
        (
            json!({"images": [{"reference": "alpine"}], "pods_template": "t"}),
            json!({"kind": "template_without_namespace", "field": "pods_template"}),
        ),
        (
            json!({"pipeline": "version: \"1\"\nsteps: [{name: a, image: alpine, commands: [x]}]\n",
                   "runtime": "kubernetes", "placeholder_image": ""}),
            json!({"kind": "placeholder_image", "field": "placeholder_image",
                   "reference_error": "empty"}),
        ),
    ];
    for (body, want) in cases {
        let (status, answer) = server.check(None, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        for (key, value) in want.as_object().expect("object") {
            assert_eq!(&answer["error"][key], value, "{key} of {body}: {answer}");
        }
    }
    // The nothing-to-check message expects what the text was read as (rev23q 16).
    let (_, answer) = server
        .check(
            None,
            &json!({"build": {"version": "1", "steps": []}, "file_name": "b.json"}),
        )
        .await;
    assert_eq!(
        answer["error"]["message"],
        "no image to check in b.json: expected a Vela pipeline (steps, services or stages \
         with `image:`); nothing was checked (`\"allow_empty\": true` passes anyway)",
        "{answer}"
    );
    server.stop().await;
}

/// A pipeline Vela's compiler refuses is a 400 whose error carries the refusal as data
/// (`refusal: {"kind", ...}`, the fields of `pullcheck_input::Refusal`) beside the
/// message and position; other bad input has no `refusal`. Nothing is asked: the images
/// are only parsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_vela_refuses_is_400_with_a_typed_refusal() {
    let server = TestServer::start(ServeOptions::default()).await;
    let twice = "version: \"1\"\nsteps:\n  - name: build\n    image: registry.example.com/a:1\n    commands: [make]\n  - name: build\n    image: registry.example.com/a:1\n    commands: [make]\n";
    let cases = [
        (
            json!({"pipeline": twice}),
            json!({"kind": "duplicate_name", "container": "step", "name": "build",
                   "stage": null, "first": {"line": 3, "column": 11}}),
            (6, 11),
        ),
        (
            json!({"pipeline": "steps:\n  - {name: a, image: registry.example.com/a:1, commands: [x]}\n"}),
            json!({"kind": "no_version"}),
            (1, 1),
        ),
        (
            json!({"pipeline": "version: \"1\"\nsteps:\n  - name: t\n    template: {name: go}\n"}),
            json!({"kind": "no_image", "container": "step", "name": "t", "template": "go"}),
            (3, 5),
        ),
        (
            // compiler/native/substitute.go `SubstituteSteps`: envsubst over the whole
            // step, commands included.
            json!({"pipeline": "version: \"1\"\nsteps:\n  - name: a\n    image: registry.example.com/a:1\n    commands: [\"echo ${FOO-bar}\"]\n"}),
            json!({"kind": "substitution", "step": "a", "stage": null,
                   "error": "missing_closing_brace"}),
            (5, 16),
        ),
        (
            json!({"pipeline": "version: \"1\"\nsteps:\n  - name: a\n    image: registry.example.com/a:${TAG}\n    environment: {TAG: \"1: x\"}\n    commands: [x]\n"}),
            json!({"kind": "substituted_step", "step": "a", "stage": null,
                   "field": "image", "text": "registry.example.com/a:1: x"}),
            (4, 12),
        ),
        (
            json!({"build": {"id": "o_r_1", "version": "1",
                             "steps": [{"id": "step_o_r_1_a", "name": "a", "image": 5}]}}),
            json!({"kind": "wrong_type", "field": "steps[0].image", "expected": "string",
                   "found": "number", "json": true}),
            (0, 0),
        ),
    ];
    for (body, refusal, (line, column)) in cases {
        let (status, answer) = server.check(None, &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let error = &answer["error"];
        assert_eq!(error["refusal"], refusal, "{body}: {answer}");
        if line > 0 {
            assert_eq!(
                (&error["line"], &error["column"]),
                (&json!(line), &json!(column)),
                "{answer}"
            );
        } else {
            // A build's position would be one in the server's re-encoding: none.
            assert_eq!(
                (&error["line"], &error["column"]),
                (&serde_json::Value::Null, &serde_json::Value::Null),
                "{answer}"
            );
        }
        assert!(error["message"].is_string(), "{answer}");
    }
    // Not YAML at all: an error with a position, but not a refusal.
    let (status, answer) = server
        .check(None, &json!({"pipeline": "version: \"1\"\nsteps: [x\n"}))
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].get("refusal").is_none(), "{answer}");
    assert!(answer["error"]["line"].is_u64(), "{answer}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_type_and_body_size() {
    let server = TestServer::start(ServeOptions {
        max_body: 1024,
        ..ServeOptions::default()
    })
    .await;
    let response = server
        .http
        .post(server.url("/v1/checks"))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .expect("answer");
    assert_eq!(response.status().as_u16(), 415);

    let big = json!({"pipeline": "#".repeat(4096)}).to_string();
    let (status, _, text) = server.post(None, &big).await;
    assert_eq!(status, 413);
    // With Content-Length the limit answers before the handler: the same JSON error.
    let error: serde_json::Value = serde_json::from_str(&text).expect("a JSON error");
    assert_eq!(error["error"]["setting"], "max_body", "{text}");
    // A wrong method is a JSON error too, with its Allow header.
    let response = server
        .http
        .get(server.url("/v1/checks"))
        .send()
        .await
        .expect("answer");
    assert_eq!(response.status().as_u16(), 405);
    assert!(response.headers().contains_key("allow"));
    let text = response.text().await.expect("body");
    assert!(text.contains("\"error\""), "{text}");
    // A chunked body (no Content-Length) over the limit too.
    let mut stream = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let mut request = "POST /v1/checks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    .as_bytes()
    .to_vec();
    for chunk in big.as_bytes().chunks(512) {
        request.extend(format!("{:x}\r\n", chunk.len()).into_bytes());
        request.extend(chunk);
        request.extend(b"\r\n");
    }
    request.extend(b"0\r\n\r\n");
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let _ = stream.write_all(&request).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_and_namespaces() {
    let dir = temp_dir("tokens");
    let file = dir.join("tokens");
    std::fs::write(
        &file,
        "# the CI workers\nworker-token-1\nteam-token-2 team-*\n",
    )
    .expect("write");
    let server = TestServer::start(ServeOptions {
        api_token_file: Some(file.clone()),
        allow_namespaces: vec!["ci".into(), "team-*".into()],
        ..ServeOptions::default()
    })
    .await;
    let body = json!({"images": [{"reference": "alpine"}], "namespace": "prod"}).to_string();

    for token in [None, Some("wrong"), Some("worker-token-")] {
        let (status, headers, text) = server.post(token, &body).await;
        assert_eq!(status, 401, "{token:?}: {text}");
        assert!(!text.contains("worker-token"), "{text}");
        assert_eq!(headers["www-authenticate"], "Bearer");
    }
    // Authorised, but `prod` is not allowed: 403 naming it.
    let (status, _, text) = server.post(Some("worker-token-1"), &body).await;
    assert_eq!(status, 403, "{text}");
    let answer: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(answer["error"]["kind"], "namespace_not_allowed", "{text}");
    assert_eq!(answer["error"]["field"], "namespace", "{text}");
    // `ci` is allowed by the flag, but the team token may only name team-*.
    let body = json!({"images": [{"reference": "alpine"}], "namespace": "ci"}).to_string();
    let (status, _, text) = server.post(Some("team-token-2"), &body).await;
    assert_eq!(status, 403, "{text}");
    // The worker token may: the request passes authorisation (and fails later: no cluster).
    let (status, _, text) = server.post(Some("worker-token-1"), &body).await;
    assert_eq!(status, 400, "{text}");

    // The file changes: the old token is out, the new one in.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&file, "rotated-token-3\n").expect("write");
    let body = json!({"images": []}).to_string();
    let (status, _, _) = server.post(Some("worker-token-1"), &body).await;
    assert_eq!(status, 401);
    let (status, _, _) = server.post(Some("rotated-token-3"), &body).await;
    assert_eq!(status, 400);
    // Health and metrics need no token.
    assert_eq!(server.get("/healthz").await.0, 200);
    let metrics = server.get("/metrics").await.1;
    assert!(!metrics.contains("token-"), "{metrics}");
    assert!(
        metrics.contains("pullcheck_http_requests_total{route=\"/v1/checks\",code=\"401\"} 4"),
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_address_needs_a_token_file_and_tls() {
    let options = ServeOptions {
        listen: "0.0.0.0:0".parse().expect("addr"),
        ..ServeOptions::default()
    };
    let error = pullcheck_server::Server::bind(options)
        .await
        .expect_err("refused");
    use pullcheck_server::{ConfigError, ServeError, ServeSetting};
    let ServeError::Config(ConfigError::Exposed { missing, .. }) = &error else {
        panic!("exposed: {error}");
    };
    assert_eq!(missing, &[ServeSetting::ApiTokenFile, ServeSetting::Tls]);
    // Named by the front end: by default, the settings' own names; no flag.
    assert!(error.to_string().contains("insecure_listen"), "{error}");
    assert!(!error.to_string().contains("--"), "{error}");
    let options = ServeOptions {
        listen: "0.0.0.0:0".parse().expect("addr"),
        insecure_listen: true,
        ..ServeOptions::default()
    };
    assert!(pullcheck_server::Server::bind(options).await.is_ok());
}

/// An `=` in `images[].reference` is part of the reference (which does not parse), never
/// a pull policy: `team/app:v1=never` must not skip the image. An unknown or empty
/// `policy` gives the CLI's row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_equals_sign_in_a_reference_is_not_a_policy() {
    let server = TestServer::start(ServeOptions::default()).await;
    let (status, report) = server
        .check(
            None,
            &json!({"images": [{"reference": "127.0.0.1:1/team/nothing:v1=never"}]}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["images"][0]["status"], "invalid", "{report}");
    assert_eq!(report["exit_code"], 1, "{report}");
    // An unknown or empty policy is a row, as `--image REF=sometimes` and `--image REF=`
    // are in the CLI: `invalid`, reason `unknown_pull_policy`, nothing asked.
    for policy in ["sometimes", ""] {
        let (status, report) = server
            .check(
                None,
                &json!({"images": [{"reference": "127.0.0.1:1/team/app:v1", "policy": policy}]}),
            )
            .await;
        assert_eq!(status, 200, "{report}");
        let row = &report["images"][0];
        assert_eq!(row["status"], "invalid", "{report}");
        assert_eq!(row["reason"], "unknown_pull_policy", "{report}");
        assert_eq!(row["policy"], policy, "{report}");
        assert_eq!(report["exit_code"], 1, "{report}");
    }
    server.stop().await;
}

/// A configuration error names its file or pattern as data: the one TLS file at fault
/// (not the pair), the token file, the namespace pattern (rev23q finding 14).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_errors_name_their_file_or_pattern_as_data() {
    use pullcheck_server::{ConfigError, ServeError, ServeSetting, TlsFiles};
    let dir = temp_dir("config-error-data");
    let not_pem = dir.join("cert.pem");
    std::fs::write(&not_pem, "not a certificate\n").expect("write");
    let missing = dir.join("nonexistent");
    let bind = |options: ServeOptions| async move {
        match pullcheck_server::Server::bind(options).await {
            Err(ServeError::Config(e)) => e,
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("bound"),
        }
    };
    let e = bind(ServeOptions {
        tls: Some(TlsFiles {
            cert: not_pem.clone(),
            key: missing.clone(),
        }),
        ..ServeOptions::default()
    })
    .await;
    let ConfigError::File { setting, paths, .. } = e else {
        panic!("{e}");
    };
    // The key cannot be read: it alone is named.
    assert_eq!((setting, paths), (ServeSetting::Tls, vec![missing.clone()]));
    let e = bind(ServeOptions {
        tls: Some(TlsFiles {
            cert: not_pem.clone(),
            key: not_pem.clone(),
        }),
        ..ServeOptions::default()
    })
    .await;
    let ConfigError::File { paths, message, .. } = e else {
        panic!("{e}");
    };
    // Both read; the certificate holds none.
    assert_eq!(paths, vec![not_pem.clone()]);
    assert_eq!(message, "no certificate in the file");
    let e = bind(ServeOptions {
        api_token_file: Some(missing.clone()),
        ..ServeOptions::default()
    })
    .await;
    let ConfigError::File { setting, paths, .. } = e else {
        panic!("{e}");
    };
    assert_eq!(
        (setting, paths),
        (ServeSetting::ApiTokenFile, vec![missing])
    );
    let e = bind(ServeOptions {
        allow_namespaces: vec!["ci-*".into(), "[".into()],
        ..ServeOptions::default()
    })
    .await;
    let ConfigError::Pattern {
        setting, pattern, ..
    } = e
    else {
        panic!("{e}");
    };
    assert_eq!(
        (setting, pattern),
        (ServeSetting::AllowNamespace, Some("[".to_owned()))
    );
}
