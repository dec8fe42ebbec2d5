//! Keys with a password in their URL user info (`https://user:PW@host`): matching is
//! unchanged, and the password never reaches a source record, an explain step, a
//! warning, an error or `Debug` output.

use std::path::Path;

use pullcheck_credentials::Credential;
use pullcheck_credentials::{
    AuthFile, AuthFileKind, CredentialChain, HelperOptions, Keyring, NodeCredentials, PullSecret,
};
use pullcheck_reference::Reference;

/// The password written into the keys; must never be shown.
const PW: &str = "Url-Pa55word-Sentinel";

fn reference(image: &str) -> Reference {
    Reference::parse_normalized(image).expect("reference")
}

fn auth_file(
    kind: AuthFileKind,
    text: &str,
) -> Result<AuthFile, pullcheck_credentials::CredentialError> {
    AuthFile::parse(Path::new("/cfg/auth.json"), kind, text)
}

fn assert_hidden(what: &str, shown: &str) {
    assert!(!shown.contains(PW), "{what} leaks the password: {shown}");
}

fn secret(key: &str) -> Vec<PullSecret> {
    let config = serde_json::json!({"auths": {key: {"username": "alice", "password": "p"}}});
    let manifest = serde_json::json!({
        "kind": "Secret",
        "metadata": {"name": "regcred"},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": config.to_string()},
    });
    PullSecret::parse_manifests("secret.json", &manifest.to_string()).expect("parses")
}

#[tokio::test]
async fn node_file_keys_are_redacted_but_still_match() {
    let key = format!("https://bob:{PW}@quay.io");
    let text = serde_json::json!({
        "auths": {key.clone(): {"auth": "dTpw"}},
        "credHelpers": {key.clone(): "never-run"},
    })
    .to_string();
    let image = reference("quay.io/org/app:1");
    // containers/image keeps the user info in the host it compares: no match there,
    // as before.
    let file = auth_file(AuthFileKind::ContainersAuth, &text).expect("parses");
    assert_hidden("Debug of the file", &format!("{file:?}"));
    assert!(file.lookup(&image).is_none());
    // Docker's ConvertToHostname drops it: the key matches, as written.
    let file = auth_file(AuthFileKind::DockerConfig, &text).expect("parses");
    assert_hidden("Debug of the file", &format!("{file:?}"));
    assert_eq!(
        file.lookup(&image).map(|e| e.key.as_str()),
        Some(key.as_str())
    );
    {
        let chain = CredentialChain::new(
            Keyring::new(),
            NodeCredentials::from_files(Some(file), None, HelperOptions::default()),
        );
        let steps = chain.explain_for(&image);
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].source().key, "https://bob:***@quay.io");
        assert_hidden("the explain steps", &serde_json::to_string(&steps).unwrap());
        assert_hidden("Debug of the steps", &format!("{steps:?}"));
        let creds = chain.credentials_for(&image).await.expect("resolves");
        assert_eq!(
            creds[0].credential,
            Credential::Basic {
                username: "u".into(),
                password: "p".into()
            }
        );
        assert_eq!(creds[0].source.key, "https://bob:***@quay.io");
        assert_hidden("the source record", &format!("{:?}", creds[0].source));
        assert_hidden(
            "the serialised source",
            &serde_json::to_string(&creds[0].source).unwrap(),
        );
    }
}

#[test]
fn pull_secret_keys_are_redacted_but_still_match() {
    let secrets = secret(&format!("https://bob:{PW}@quay.io/org"));
    assert_hidden("Debug of the secret", &format!("{secrets:?}"));
    let chain = CredentialChain::new(
        Keyring::from_pull_secrets(&secrets),
        NodeCredentials::empty(),
    );
    assert_hidden("Debug of the chain", &format!("{chain:?}"));
    let steps = chain.explain_for(&reference("quay.io/org/app"));
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].source().key, "https://bob:***@quay.io/org");
    assert_eq!(steps[0].source().username.as_deref(), Some("alice"));
    assert_hidden("the explain steps", &serde_json::to_string(&steps).unwrap());
    // A token alone as user info.
    let secrets = secret(&format!("https://{PW}@quay.io"));
    let chain = CredentialChain::new(
        Keyring::from_pull_secrets(&secrets),
        NodeCredentials::empty(),
    );
    let steps = chain.explain_for(&reference("quay.io/org/app"));
    assert_eq!(steps[0].source().key, "https://***@quay.io");
    // Nothing matches elsewhere.
    assert!(chain.explain_for(&reference("ghcr.io/org/app")).is_empty());
}

#[test]
fn keys_the_kubelet_ignores_are_redacted_in_warnings() {
    // A `/` in the password: Go's url.Parse fails, the kubelet skips the key.
    let secrets = secret(&format!("https://bob:{PW}/x@quay.io"));
    let chain = CredentialChain::new(
        Keyring::from_pull_secrets(&secrets),
        NodeCredentials::empty(),
    );
    assert!(chain.explain_for(&reference("quay.io/org/app")).is_empty());
    let warnings = chain.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("key \"https://***@quay.io\" is not a valid URL"),
        "{}",
        warnings[0]
    );
    assert_hidden("the warnings", &warnings.join("\n"));
}

#[test]
fn errors_about_such_keys_are_redacted() {
    let key = format!("https://bob:{PW}@quay.io");
    // A node file: a bad `auth`, a field of the wrong type, a helper that is no string.
    for (kind, text) in [
        (
            AuthFileKind::DockerConfig,
            serde_json::json!({"auths": {key.clone(): {"auth": "not base64!"}}}),
        ),
        (
            AuthFileKind::ContainersAuth,
            serde_json::json!({"auths": {key.clone(): {"username": 5}}}),
        ),
        (
            AuthFileKind::DockerConfig,
            serde_json::json!({"credHelpers": {key.clone(): 5}}),
        ),
    ] {
        let err = auth_file(kind, &text.to_string()).expect_err("malformed");
        let shown = err.to_string();
        assert!(shown.contains("https://bob:***@quay.io"), "{shown}");
        assert_hidden("the error", &shown);
        assert_hidden("Debug of the error", &format!("{err:?}"));
    }
    // A pull secret with a bad `auth` under such a key.
    let config = serde_json::json!({"auths": {key.clone(): {"auth": "not base64!"}}});
    let manifest = serde_json::json!({
        "kind": "Secret",
        "metadata": {"name": "regcred"},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": config.to_string()},
    });
    let err =
        PullSecret::parse_manifests("secret.json", &manifest.to_string()).expect_err("malformed");
    let shown = err.to_string();
    assert!(
        shown.contains("auths[\"https://bob:***@quay.io\"]"),
        "{shown}"
    );
    assert_hidden("the error", &shown);
    assert_hidden("Debug of the error", &format!("{err:?}"));
    // The legacy format too.
    let dockercfg = serde_json::json!({key.clone(): {"auth": "not base64!"}});
    let manifest = serde_json::json!({
        "kind": "Secret",
        "metadata": {"name": "legacy"},
        "type": "kubernetes.io/dockercfg",
        "stringData": {".dockercfg": dockercfg.to_string()},
    });
    let err =
        PullSecret::parse_manifests("secret.json", &manifest.to_string()).expect_err("malformed");
    assert_hidden("the error", &err.to_string());
    assert_hidden("Debug of the error", &format!("{err:?}"));
}
