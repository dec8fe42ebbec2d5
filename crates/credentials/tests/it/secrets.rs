//! Pull secret parsing: both formats, `data` and `stringData`, padded and unpadded
//! base64, lists and multi-document files, and errors that name the secret without
//! showing its content.

use std::collections::BTreeMap;

use pullcheck_credentials::Credential;
use pullcheck_credentials::{CredentialError, Keyring, PullSecret};
use pullcheck_reference::Reference;

/// base64 of `{"auths":{"quay.io":{"auth":"dTE6cDE="}}}` (`u1:p1`).
const DOCKERCONFIGJSON_B64: &str = "eyJhdXRocyI6eyJxdWF5LmlvIjp7ImF1dGgiOiJkVEU2Y0RFPSJ9fX0=";
/// base64 of `{"quay.io":{"username":"u2","password":"p22"}}`, without its `==` padding.
const DOCKERCFG_B64_UNPADDED: &str =
    "eyJxdWF5LmlvIjp7InVzZXJuYW1lIjoidTIiLCJwYXNzd29yZCI6InAyMiJ9fQ";

/// A secret value that must never appear in an error.
const SENTINEL_PASSWORD: &str = "s3cr3t-sentinel";

fn basic(user: &str, password: &str) -> Credential {
    Credential::Basic {
        username: user.into(),
        password: password.into(),
    }
}

fn only_credential(secrets: &[PullSecret], image: &str) -> Credential {
    let ring = Keyring::from_pull_secrets(secrets);
    let found = ring.lookup(&Reference::parse_normalized(image).expect("reference"));
    assert_eq!(found.len(), 1, "{image}: {found:?}");
    found[0].credential.clone()
}

#[test]
fn dockerconfigjson_in_data() {
    let yaml = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\n  namespace: ci\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {DOCKERCONFIGJSON_B64}\n"
    );
    let secrets = PullSecret::parse_manifests("regcred.yaml", &yaml).expect("parses");
    assert_eq!(secrets.len(), 1);
    assert_eq!(secrets[0].name(), "regcred");
    assert_eq!(secrets[0].describe(), "pull secret regcred (regcred.yaml)");
    assert_eq!(secrets[0].entries()[0].key, "quay.io");
    assert_eq!(only_credential(&secrets, "quay.io/a/b"), basic("u1", "p1"));
}

#[test]
fn dockercfg_in_data_unpadded() {
    let yaml = format!(
        "kind: Secret\nmetadata: {{name: legacy}}\ntype: kubernetes.io/dockercfg\ndata:\n  .dockercfg: {DOCKERCFG_B64_UNPADDED}\n"
    );
    let secrets = PullSecret::parse_manifests("legacy.yaml", &yaml).expect("parses");
    assert_eq!(only_credential(&secrets, "quay.io/a/b"), basic("u2", "p22"));
}

#[test]
fn string_data_and_its_precedence_over_data() {
    let yaml = format!(
        r#"kind: Secret
metadata: {{name: both}}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: {DOCKERCONFIGJSON_B64}
stringData:
  .dockerconfigjson: |
    {{"auths": {{"quay.io": {{"username": "from-string-data", "password": "x"}}}}}}
"#
    );
    let secrets = PullSecret::parse_manifests("both.yaml", &yaml).expect("parses");
    assert_eq!(
        only_credential(&secrets, "quay.io/a"),
        basic("from-string-data", "x")
    );
}

#[test]
fn auth_padded_and_unpadded_and_auth_wins() {
    // `dTpw` is `u:p` without padding; `YWI6Yw==` is `ab:c` with padding.
    let json = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"j"},
        "type":"kubernetes.io/dockerconfigjson",
        "stringData":{".dockerconfigjson":"{\"auths\":{\"a.io\":{\"auth\":\"dTpw\"},\"b.io\":{\"auth\":\"YWI6Yw==\",\"username\":\"ignored\",\"password\":\"ignored\"}}}"}}"#;
    let secrets = PullSecret::parse_manifests("j.json", json).expect("parses");
    assert_eq!(only_credential(&secrets, "a.io/x"), basic("u", "p"));
    assert_eq!(only_credential(&secrets, "b.io/x"), basic("ab", "c"));
}

#[test]
fn only_the_kubelet_fields_are_read() {
    let json = r#"{"kind":"Secret","metadata":{"name":"t"},"type":"kubernetes.io/dockerconfigjson",
        "stringData":{".dockerconfigjson":"{\"auths\":{\"a.io\":{\"identitytoken\":\"tok\",\"registrytoken\":\"rt\"}}}"}}"#;
    let secrets = PullSecret::parse_manifests("t.json", json).expect("parses");
    // No user name: an anonymous attempt, tokens ignored as the kubelet ignores them.
    assert_eq!(only_credential(&secrets, "a.io/x"), Credential::Anonymous);
}

#[test]
fn lists_and_multi_document_files() {
    let yaml = format!(
        r#"---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata: {{name: one}}
  type: kubernetes.io/dockerconfigjson
  data: {{.dockerconfigjson: {DOCKERCONFIGJSON_B64}}}
- metadata: {{name: two}}
  type: kubernetes.io/dockercfg
  data: {{.dockercfg: {DOCKERCFG_B64_UNPADDED}}}
---
kind: Secret
metadata: {{name: three}}
type: Opaque
data: {{token: aGk=}}
---
"#
    );
    let secrets = PullSecret::parse_manifests("all.yaml", &yaml).expect("parses");
    let names: Vec<&str> = secrets.iter().map(PullSecret::name).collect();
    assert_eq!(names, ["one", "two", "three"]);
    assert!(
        secrets[2]
            .ignored()
            .is_some_and(|why| why.contains("Opaque"))
    );
    let ring = Keyring::from_pull_secrets(&secrets);
    assert_eq!(ring.warnings().len(), 1);
    assert!(ring.warnings()[0].starts_with("pull secret three (all.yaml)"));
    // Both secrets' `quay.io` entries, in the order given.
    let found = ring.lookup(&Reference::parse_normalized("quay.io/x").expect("ref"));
    let sources: Vec<&str> = found.iter().map(|c| c.source.source.as_str()).collect();
    assert_eq!(
        sources,
        ["pull secret one (all.yaml)", "pull secret two (all.yaml)"]
    );
}

#[test]
fn a_secret_without_type_is_ignored_not_dropped() {
    let yaml = "kind: Secret\nmetadata: {name: untyped}\nstringData: {.dockerconfigjson: '{}'}\n";
    let secrets = PullSecret::parse_manifests("u.yaml", yaml).expect("parses");
    assert_eq!(secrets.len(), 1);
    assert!(secrets[0].ignored().is_some());
    assert!(secrets[0].entries().is_empty());
}

#[test]
fn api_objects_and_decoded_data() {
    let value = serde_json::json!({
        "metadata": {"name": "from-api", "namespace": "ci"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": DOCKERCONFIGJSON_B64},
    });
    let secret = PullSecret::from_json("namespace ci", &value).expect("parses");
    assert_eq!(secret.describe(), "pull secret from-api (namespace ci)");
    assert_eq!(
        only_credential(std::slice::from_ref(&secret), "quay.io/x"),
        basic("u1", "p1")
    );

    let data = BTreeMap::from([(
        ".dockercfg".to_string(),
        br#"{"ghcr.io": {"auth": "Zm9vOmJhcg=="}}"#.to_vec(),
    )]);
    let secret = PullSecret::from_data(
        "namespace ci",
        "decoded",
        Some("kubernetes.io/dockercfg"),
        &data,
    )
    .expect("parses");
    assert_eq!(only_credential(&[secret], "ghcr.io/x"), basic("foo", "bar"));
}

/// Asserts a malformed secret error names the secret and origin, says `what`, and
/// never shows the sentinel password or the base64 it was wrapped in.
fn assert_secret_error(err: &CredentialError, name: &str, what: &str, forbidden: &[&str]) {
    let text = err.to_string();
    match err {
        CredentialError::Secret {
            name: n, origin, ..
        } => {
            assert_eq!(n, name, "{text}");
            assert_eq!(origin, "bad.yaml", "{text}");
        }
        other => panic!("expected a Secret error, got {other:?}"),
    }
    assert!(
        text.starts_with(&format!("pull secret {name} (bad.yaml)")),
        "{text}"
    );
    assert!(text.contains(what), "{text} should say {what}");
    for f in forbidden.iter().chain(&[SENTINEL_PASSWORD]) {
        assert!(!text.contains(f), "{text} leaks {f}");
        assert!(!format!("{err:?}").contains(f), "{err:?} leaks {f}");
    }
}

#[test]
fn malformed_secrets_are_errors_naming_the_secret() {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // `auth` that decodes without a colon: base64 of the sentinel.
    let no_colon = b64(SENTINEL_PASSWORD);
    let cases: Vec<(String, &str, Vec<String>)> = vec![
        (
            format!(
                "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{{\"auths\":{{\"q.io\":{{\"auth\":\"{no_colon}\"}}}}}}'"
            ),
            "auths[\"q.io\"]: `auth` does not decode to `user:password`",
            vec![no_colon.clone()],
        ),
        (
            format!(
                "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{{\"auths\":{{\"q.io\":{{\"auth\":\"{SENTINEL_PASSWORD}!\"}}}}}}'"
            ),
            "`auth` is not valid base64",
            vec![],
        ),
        (
            format!(
                "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{{\"auths\":{{\"q.io\":{{\"password\":\"{SENTINEL_PASSWORD}\" \"username\":\"u\"}}}}}}'"
            ),
            ".dockerconfigjson: line 1 column",
            vec![],
        ),
        (
            format!(
                "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{{\"auths\":{{\"q.io\":{{\"password\":[\"{SENTINEL_PASSWORD}\"]}}}}}}'"
            ),
            "field `password` is an array, not a string",
            vec![],
        ),
        (
            format!(
                "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '\"{SENTINEL_PASSWORD}\"'"
            ),
            "the document is a string, not an object",
            vec![],
        ),
        (
            format!(
                "type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: '{SENTINEL_PASSWORD}%%'"
            ),
            "data[\".dockerconfigjson\"] is not valid base64",
            vec![],
        ),
        (
            "type: kubernetes.io/dockerconfigjson\ndata: {}".to_string(),
            "needs a non-empty `.dockerconfigjson`",
            vec![],
        ),
        (
            "type: kubernetes.io/dockercfg\nstringData: {.dockerconfigjson: '{}'}".to_string(),
            "needs a non-empty `.dockercfg`",
            vec![],
        ),
        (
            format!(
                "type: kubernetes.io/dockercfg\nstringData:\n  .dockercfg: '[\"{SENTINEL_PASSWORD}\"]'"
            ),
            "the document is an array, not an object",
            vec![],
        ),
        (
            "type: kubernetes.io/dockercfg\ndata: {.dockercfg: 5}".to_string(),
            "data[\".dockercfg\"] is a number, not a string",
            vec![],
        ),
        (
            "type: 5\ndata: {}".to_string(),
            "`type` is a number, not a string",
            vec![],
        ),
    ];
    for (body, what, forbidden) in cases {
        let yaml = format!("kind: Secret\nmetadata:\n  name: broken\n{body}\n");
        let err = PullSecret::parse_manifests("bad.yaml", &yaml)
            .expect_err(&format!("should fail: {body}"));
        let forbidden: Vec<&str> = forbidden.iter().map(String::as_str).collect();
        assert_secret_error(&err, "broken", what, &forbidden);
    }
}

#[test]
fn malformed_manifests_are_errors_naming_the_file() {
    let cases = [
        (
            "kind: ConfigMap\nmetadata: {name: x}\n",
            "the document: kind ConfigMap is not a Secret",
        ),
        (
            "kind: Secret\nmetadata: {}\n",
            "the document: Secret has no metadata.name",
        ),
        ("- a\n- b\n", "the document is an array, not a Secret"),
        ("metadata: {name: x}\n", "the document has no `kind`"),
        (
            "kind: Secret\nmetadata: {name: a}\ntype: Opaque\n---\nkind: Pod\n",
            "document 2: kind Pod is not a Secret",
        ),
        (
            "kind: List\nitems:\n- kind: Service\n",
            "the document, item 1: kind Service is not a Secret",
        ),
        ("kind: List\nitems: 5\n", "`items` is a number, not a list"),
        ("{\"kind\": \"Secret\",, }", "line 1 column"),
        ("kind: Secret\n  bad: [indent\n", "line "),
        ("", "holds no Secret"),
        ("---\n---\n", "holds no Secret"),
        ("kind: List\nitems: []\n", "holds no Secret"),
    ];
    for (text, what) in cases {
        let err = PullSecret::parse_manifests("m.yaml", text).expect_err(text);
        let msg = err.to_string();
        assert!(matches!(err, CredentialError::Manifest { .. }), "{msg}");
        assert!(msg.starts_with("m.yaml: "), "{msg}");
        assert!(msg.contains(what), "{msg} should contain {what}");
    }
}

#[test]
fn yaml_anchors_and_json_files() {
    let yaml = format!(
        "common: &cfg\n  .dockerconfigjson: {DOCKERCONFIGJSON_B64}\nkind: Secret\nmetadata: {{name: anchored}}\ntype: kubernetes.io/dockerconfigjson\ndata: *cfg\n"
    );
    let secrets = PullSecret::parse_manifests("a.yaml", &yaml).expect("parses");
    assert_eq!(only_credential(&secrets, "quay.io/x"), basic("u1", "p1"));

    let json = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{{"kind":"Secret","metadata":{{"name":"j"}},"type":"kubernetes.io/dockerconfigjson","data":{{".dockerconfigjson":"{DOCKERCONFIGJSON_B64}"}}}}]}}"#
    );
    let secrets = PullSecret::parse_manifests("l.json", &json).expect("parses");
    assert_eq!(secrets[0].name(), "j");
}

#[test]
fn reading_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.yaml");
    std::fs::write(
        &path,
        format!(
            "kind: Secret\nmetadata: {{name: f}}\ntype: kubernetes.io/dockerconfigjson\ndata: {{.dockerconfigjson: {DOCKERCONFIGJSON_B64}}}\n"
        ),
    )
    .expect("write");
    let secrets = PullSecret::read_manifests(&path).expect("reads");
    assert_eq!(secrets[0].origin(), path.display().to_string());
    let missing = PullSecret::read_manifests(&dir.path().join("nope.yaml")).expect_err("missing");
    assert!(matches!(missing, CredentialError::Read { .. }), "{missing}");
}

#[test]
fn debug_output_redacts_passwords() {
    let yaml = format!(
        "kind: Secret\nmetadata: {{name: d}}\ntype: kubernetes.io/dockercfg\nstringData:\n  .dockercfg: '{{\"q.io\":{{\"username\":\"u\",\"password\":\"{SENTINEL_PASSWORD}\"}}}}'\n"
    );
    let secrets = PullSecret::parse_manifests("d.yaml", &yaml).expect("parses");
    let ring = Keyring::from_pull_secrets(&secrets);
    let shown = format!("{secrets:?} {ring:?}");
    assert!(!shown.contains(SENTINEL_PASSWORD), "{shown}");
    assert_eq!(
        only_credential(&secrets, "q.io/x"),
        basic("u", SENTINEL_PASSWORD)
    );
}
