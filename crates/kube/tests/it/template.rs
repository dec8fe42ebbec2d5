//! Strict reading of PipelinePodsTemplate files, as upstream's `yaml.UnmarshalStrict`.

use std::path::{Path, PathBuf};

use pullcheck_kube::{
    PipelinePodsTemplate, PodPullSecrets, Subject, parse_template, read_template_file,
};
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn err(text: &str) -> (Option<usize>, Option<usize>, String) {
    let e = parse_template("t.yaml", text).expect_err("must fail");
    assert_eq!(e.file.as_deref(), Some("t.yaml"));
    (e.line, e.column, e.message)
}

#[test]
fn every_field_reads_and_serializes_back_in_its_json_spelling() {
    let t = read_template_file(&fixture("template-full.yaml")).expect("template");
    let spec = &t.spec.template.spec;
    assert_eq!(t.metadata.name.as_deref(), Some("build-pods"));
    assert_eq!(t.kind.as_deref(), Some("PipelinePodsTemplate"));
    assert_eq!(
        t.image_pull_secret_names(),
        ["registry-creds", "mirror-creds"]
    );
    assert_eq!(t.service_account_name(), Some("vela-builds"));
    assert_eq!(spec.dns_policy.as_deref(), Some("None"));
    let tolerations = spec.tolerations.as_ref().expect("tolerations");
    assert_eq!(tolerations[1].toleration_seconds, Some(30));
    let sysctls = &spec.security_context.as_ref().expect("sc").sysctls;
    assert_eq!(sysctls.as_ref().expect("sysctls")[0].value, "0");

    let value = serde_json::to_value(&t).expect("json");
    let template = &value["spec"]["template"];
    assert_eq!(
        template["spec"]["imagePullSecrets"],
        json!([{"name": "registry-creds"}, {"name": "mirror-creds"}])
    );
    assert_eq!(template["spec"]["serviceAccountName"], "vela-builds");
    assert_eq!(
        template["spec"]["container"]["securityContext"]["capabilities"],
        json!({"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]})
    );
    assert_eq!(template["metadata"]["labels"]["team"], "platform");
    assert_eq!(
        template["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
            [0]["weight"],
        50
    );
    // And back: the JSON the API server would return reads to the same value.
    let again: PipelinePodsTemplate = serde_json::from_value(value).expect("from json");
    assert_eq!(again, t);
}

#[test]
fn pull_secrets_of_a_template() {
    let t = read_template_file(&fixture("template-full.yaml")).expect("template");
    let subject = Subject::TemplateFile {
        path: "template-full.yaml".into(),
    };
    assert_eq!(
        t.pull_secrets(subject.clone()),
        PodPullSecrets {
            subject,
            namespace: None,
            image_pull_secrets: vec!["registry-creds".into(), "mirror-creds".into()],
            service_account_name: Some("vela-builds".into()),
        }
    );
}

#[test]
fn an_empty_template_is_valid_and_has_no_secrets() {
    let t = read_template_file(&fixture("template-empty-spec.yaml")).expect("template");
    assert!(t.image_pull_secret_names().is_empty());
    assert_eq!(t.service_account_name(), None);
    // Without `spec` at all, as Go's decoding leaves the zero value.
    let t = parse_template("t.yaml", "metadata: {name: x}\n").expect("template");
    assert_eq!(t.spec, Default::default());
}

#[test]
fn a_list_where_a_map_belongs_is_an_error_at_the_list() {
    let e = read_template_file(&fixture("template-annotations-list.yaml")).expect_err("malformed");
    assert_eq!((e.line, e.column), (Some(10), Some(9)));
    assert!(
        e.message
            .starts_with("spec.template.metadata.annotations: expected a mapping, found a list"),
        "{}",
        e.message
    );
    assert!(e.to_string().ends_with(&e.message));
    assert!(
        e.to_string()
            .contains("template-annotations-list.yaml:10:9: "),
        "{e}"
    );
}

#[test]
fn unknown_fields_are_errors_naming_the_field_anywhere() {
    // In the core/v1 types the template holds (k8s-openapi's Toleration).
    let e = read_template_file(&fixture("template-unknown-nested.yaml")).expect_err("typo");
    assert_eq!((e.line, e.column), (Some(11), Some(11)));
    assert!(
        e.message.starts_with(
            "spec.template.spec.tolerations[0].efect: unknown field \"efect\"; known fields here: effect, key"
        ),
        "{}",
        e.message
    );
    assert!(e.message.contains("effect"), "{}", e.message);

    // A PodSpec field the template does not support.
    let e = read_template_file(&fixture("template-node-name.yaml")).expect_err("nodeName");
    assert_eq!((e.line, e.column), (Some(9), Some(7)));
    assert!(
        e.message.contains("unknown field \"nodeName\""),
        "{}",
        e.message
    );
    assert!(e.message.contains("imagePullSecrets"), "{}", e.message);

    // At the top, in metadata, in the new fields.
    let (line, column, message) = err("apiVersion: v1\nkind: X\nspecs: {}\n");
    assert_eq!((line, column), (Some(3), Some(1)));
    assert!(message.contains("unknown field \"specs\""), "{message}");
    let (_, _, message) = err("metadata: {name: x, labelz: {}}\n");
    assert!(
        message.starts_with("metadata.labelz: unknown field"),
        "{message}"
    );
    let (line, column, message) =
        err("spec:\n  template:\n    spec:\n      imagePullSecrets:\n        - secret: regcred\n");
    assert_eq!((line, column), (Some(5), Some(11)));
    assert!(
        message.starts_with("spec.template.spec.imagePullSecrets[0].secret: unknown field"),
        "{message}"
    );
    let (_, _, message) = err("spec:\n  template:\n    spec:\n      serviceAccount: builder\n");
    assert!(
        message.contains("unknown field \"serviceAccount\""),
        "{message}"
    );
}

#[test]
fn wrong_types_and_duplicates_are_errors_at_their_value() {
    let (line, column, message) =
        err("spec:\n  template:\n    spec:\n      securityContext:\n        runAsNonRoot: maybe\n");
    assert_eq!((line, column), (Some(5), Some(23)));
    assert!(message.contains("expected true or false"), "{message}");
    let (line, _, message) = err("spec:\n  template:\n    spec:\n      serviceAccountName: [a]\n");
    assert_eq!(line, Some(4));
    assert!(
        message.contains("expected a string, found a list"),
        "{message}"
    );
    let (line, column, message) = err("spec: {}\nspec: {}\n");
    assert_eq!((line, column), (Some(2), Some(1)));
    assert_eq!(message, "duplicate key \"spec\" (first at 1:1)");
    let (_, _, message) = err(
        "spec:\n  template:\n    spec:\n      tolerations:\n        - tolerationSeconds: soon\n",
    );
    assert!(message.contains("expected an integer"), "{message}");
}

#[test]
fn scalars_become_strings_where_strings_are_wanted() {
    // `sigs.k8s.io/yaml` keeps the literal for a string field: 1 and true are "1" and "true".
    let t = parse_template(
        "t.yaml",
        "spec:\n  template:\n    metadata:\n      labels: {tier: 1, enabled: true}\n",
    )
    .expect("template");
    let labels = t.spec.template.metadata.labels.expect("labels");
    assert_eq!(labels["tier"], "1");
    assert_eq!(labels["enabled"], "true");
}

#[test]
fn not_a_template_at_all() {
    let (line, _, message) = err("");
    assert_eq!(line, None);
    assert!(message.starts_with("empty"), "{message}");
    let (_, _, message) = err("- a\n- b\n");
    assert!(message.contains("found a list"), "{message}");
    let (line, _, message) = err("spec: [unclosed\n");
    assert!(line.is_some());
    assert!(message.starts_with("not valid YAML"), "{message}");
    let e = read_template_file(Path::new("/nonexistent/template.yaml")).expect_err("absent");
    assert!(
        e.to_string()
            .starts_with("/nonexistent/template.yaml: cannot read"),
        "{e}"
    );
}

#[test]
fn anchors_merge_keys_json_and_only_the_first_document() {
    let t = parse_template("t.yaml", "x-secrets: &s [{name: a}]\n");
    // `x-secrets` is not a field: strict.
    assert!(t.is_err());
    let t = parse_template(
        "t.yaml",
        "spec:\n  template:\n    spec: &base\n      serviceAccountName: builder\n---\nspec: {nope: 1}\n",
    )
    .expect("first document only");
    assert_eq!(t.service_account_name(), Some("builder"));
    let t = parse_template(
        "t.json",
        r#"{"spec": {"template": {"spec": {"imagePullSecrets": [{"name": "j"}]}}}}"#,
    )
    .expect("json");
    assert_eq!(t.image_pull_secret_names(), ["j"]);
    let t = parse_template(
        "t.yaml",
        "spec:\n  template:\n    spec:\n      <<: {serviceAccountName: merged}\n      dnsPolicy: None\n",
    )
    .expect("merge");
    assert_eq!(t.service_account_name(), Some("merged"));
}

#[test]
fn empty_secret_names_are_left_out() {
    let t = parse_template(
        "t.yaml",
        "spec:\n  template:\n    spec:\n      imagePullSecrets: [{name: ''}, {}, {name: b}]\n      serviceAccountName: ''\n",
    )
    .expect("template");
    assert_eq!(t.image_pull_secret_names(), ["b"]);
    assert_eq!(t.service_account_name(), None);
}

#[test]
fn an_alias_bomb_runs_out_of_budget_quickly() {
    // One 100 kB string, aliased 1000 times: 100 MB if every copy were made.
    let long = "x".repeat(100_000);
    let aliases = vec!["*s"; 1000].join(", ");
    let text = format!(
        "spec:\n  template:\n    spec:\n      affinity:\n        nodeAffinity:\n          \
         requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n\
         \x20             - matchExpressions:\n                  - key: k\n\
         \x20                   operator: In\n                    values: [&s {long}, {aliases}]\n"
    );
    let started = std::time::Instant::now();
    let e = parse_template("t.yaml", &text).expect_err("bomb");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(e.message.contains("too complex"), "{}", e.message);
    assert!(e.message.contains("values"), "{}", e.message);
}
