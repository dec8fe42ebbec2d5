//! Docker `config.json` (matched by host) and containers `auth.json` (matched by
//! namespace, longest first), and where the node's files are found.

use std::path::Path;

use pullcheck_credentials::Credential;
use pullcheck_credentials::{
    AuthFile, AuthFileKind, CredentialError, CredentialStep, HelperOptions, NodeCredentials,
    NodeEnv, NodeOptions,
};
use pullcheck_reference::Reference;

fn docker(text: &str) -> AuthFile {
    AuthFile::parse(
        Path::new("/cfg/config.json"),
        AuthFileKind::DockerConfig,
        text,
    )
    .expect("parses")
}

fn containers(text: &str) -> AuthFile {
    AuthFile::parse(
        Path::new("/run/auth.json"),
        AuthFileKind::ContainersAuth,
        text,
    )
    .expect("parses")
}

fn reference(image: &str) -> Reference {
    Reference::parse_normalized(image).expect("reference")
}

/// The key of the entry `file` picks for `image`.
fn picked<'a>(file: &'a AuthFile, image: &str) -> Option<&'a str> {
    file.lookup(&reference(image)).map(|e| e.key.as_str())
}

fn basic(user: &str, password: &str) -> Option<Credential> {
    Some(Credential::Basic {
        username: user.into(),
        password: password.into(),
    })
}

#[test]
fn docker_entry_kinds() {
    // base64("alice:s3cret") = YWxpY2U6czNjcmV0 (unpadded fits exactly);
    // base64("ab:c") = YWI6Yw== (padded), YWI6Yw (unpadded).
    let file = docker(
        r#"{"auths": {
            "a.io": {"auth": "YWxpY2U6czNjcmV0", "username": "bob", "password": "x"},
            "b.io": {"auth": "YWI6Yw=="},
            "c.io": {"auth": "YWI6Yw"},
            "d.io": {"username": "dave", "password": "pw"},
            "e.io": {"identitytoken": "refresh", "username": "ignored"},
            "f.io": {"registrytoken": "bearer", "identitytoken": "refresh"},
            "g.io": {},
            "h.io": {"auth": "YWI6YwAA", "email": "x@y"}
        }}"#,
    );
    let cred = |host: &str| {
        file.lookup(&reference(&format!("{host}/app")))
            .and_then(|e| e.credential.clone())
    };
    assert_eq!(cred("a.io"), basic("alice", "s3cret"));
    assert_eq!(cred("b.io"), basic("ab", "c"));
    assert_eq!(cred("c.io"), basic("ab", "c"));
    assert_eq!(cred("d.io"), basic("dave", "pw"));
    assert_eq!(
        cred("e.io"),
        Some(Credential::IdentityToken("refresh".into()))
    );
    assert_eq!(
        cred("f.io"),
        Some(Credential::RegistryToken("bearer".into()))
    );
    assert_eq!(cred("g.io"), None);
    assert!(file.lookup(&reference("g.io/app")).is_some());
    assert_eq!(cred("z.io"), None);
    assert_eq!(
        file.lookup(&reference("e.io/app"))
            .and_then(|e| e.username.clone()),
        Some("ignored".to_string())
    );
    // base64("ab:c\0\0"): trailing NULs are dropped from the password.
    assert_eq!(cred("h.io"), basic("ab", "c"));
}

#[test]
fn docker_matches_by_host() {
    let file = docker(
        r#"{"auths": {
            "https://r.example.com:5000/v2/": {"auth": "YWI6Yw=="},
            "http://localhost:5000": {"auth": "YWI6Yw=="},
            "quay.io/org": {"auth": "YWI6Yw=="},
            "quay.io": {"auth": "YWI6Yw=="}
        }}"#,
    );
    assert_eq!(
        picked(&file, "r.example.com:5000/app"),
        Some("https://r.example.com:5000/v2/")
    );
    assert_eq!(picked(&file, "r.example.com/app"), None);
    assert_eq!(
        picked(&file, "localhost:5000/app"),
        Some("http://localhost:5000")
    );
    assert_eq!(picked(&file, "localhost:5001/app"), None);
    // The exact host key wins over an earlier key naming the same host.
    assert_eq!(picked(&file, "quay.io/org/app"), Some("quay.io"));
    let file = docker(r#"{"auths": {"quay.io/org": {"auth": "YWI6Yw=="}}}"#);
    // Docker matches a namespace key by its host only.
    assert_eq!(picked(&file, "quay.io/other/app"), Some("quay.io/org"));
}

#[test]
fn docker_hub_key_and_aliases() {
    for key in [
        "https://index.docker.io/v1/",
        "index.docker.io",
        "docker.io",
        "https://docker.io",
        "registry-1.docker.io",
        "https://registry-1.docker.io/v2/",
    ] {
        let file = docker(&format!(r#"{{"auths":{{"{key}":{{"auth":"YWI6Yw=="}}}}}}"#));
        assert_eq!(picked(&file, "nginx"), Some(key), "{key}");
        assert_eq!(picked(&file, "library/nginx:1"), Some(key), "{key}");
        assert_eq!(picked(&file, "quay.io/nginx"), None, "{key}");
    }
    // The canonical key wins whatever the file order.
    let file = docker(
        r#"{"auths":{"docker.io":{"auth":"YWI6Yw=="},"https://index.docker.io/v1/":{"auth":"dTpw"}}}"#,
    );
    assert_eq!(picked(&file, "nginx"), Some("https://index.docker.io/v1/"));
}

#[test]
fn containers_matches_by_namespace_longest_first() {
    let file = containers(
        r#"{"auths": {
            "quay.io": {"auth": "cmVnOnA="},
            "quay.io/org": {"auth": "b3JnOnA="},
            "quay.io/org/app": {"auth": "YXBwOnA="},
            "docker.io/library": {"auth": "bGliOnA="},
            "https://index.docker.io/v1/": {"auth": "aHViOnA="},
            "https://ghcr.io/some/path": {"auth": "Z2hjcjpw"}
        }}"#,
    );
    assert_eq!(picked(&file, "quay.io/org/app:1"), Some("quay.io/org/app"));
    assert_eq!(picked(&file, "quay.io/org/app2"), Some("quay.io/org"));
    assert_eq!(picked(&file, "quay.io/org/team/app"), Some("quay.io/org"));
    assert_eq!(picked(&file, "quay.io/other/app"), Some("quay.io"));
    assert_eq!(picked(&file, "nginx"), Some("docker.io/library"));
    assert_eq!(
        picked(&file, "someone/app"),
        Some("https://index.docker.io/v1/")
    );
    // A key with a scheme counts for its host only.
    assert_eq!(
        picked(&file, "ghcr.io/other/app"),
        Some("https://ghcr.io/some/path")
    );
    assert_eq!(picked(&file, "example.com/app"), None);
    let user = file
        .lookup(&reference("quay.io/org/app2"))
        .and_then(|e| e.username.clone());
    assert_eq!(user.as_deref(), Some("org"));
}

#[test]
fn containers_namespace_keys_do_not_match_by_prefix_string() {
    let file = containers(r#"{"auths": {"quay.io/org": {"auth": "b3JnOnA="}}}"#);
    assert_eq!(picked(&file, "quay.io/organisation/app"), None);
}

#[test]
fn helpers_named_by_files() {
    let file = docker(
        r#"{"auths": {}, "credHelpers": {"ghcr.io": "gh", "https://index.docker.io/v1/": "hub"},
            "credsStore": "desktop"}"#,
    );
    let call = file.helper_for(&reference("ghcr.io/a/b")).expect("helper");
    assert_eq!(
        (call.helper.as_str(), call.server.as_str()),
        ("gh", "ghcr.io")
    );
    assert_eq!(call.key, "credHelpers[\"ghcr.io\"]");
    let call = file.helper_for(&reference("nginx")).expect("helper");
    assert_eq!(
        (call.helper.as_str(), call.server.as_str()),
        ("hub", "https://index.docker.io/v1/")
    );
    let call = file.helper_for(&reference("quay.io/a")).expect("store");
    assert_eq!(
        (
            call.helper.as_str(),
            call.server.as_str(),
            call.key.as_str()
        ),
        ("desktop", "quay.io", "credsStore")
    );
    assert_eq!(call.program(), "docker-credential-desktop");

    let file = containers(r#"{"credHelpers": {"quay.io": "q"}, "credsStore": "ignored"}"#);
    assert!(file.helper_for(&reference("ghcr.io/a")).is_none());
    let call = file.helper_for(&reference("quay.io/a")).expect("helper");
    assert_eq!(
        (call.helper.as_str(), call.server.as_str()),
        ("q", "quay.io")
    );
    assert_eq!(file.creds_store(), None);
}

#[test]
fn malformed_files_are_errors_naming_the_file_and_key() {
    let cases = [
        (
            "{\"auths\": {\n  \"a.io\": 5 }}",
            "auths[\"a.io\"] is a number, not an object",
        ),
        (
            "{\"auths\": {\n  \"a.io\": {\"auth\": \"c2VjcmV0LXZhbHVl\"}}}",
            "auths[\"a.io\"]: `auth` does not decode to `user:password`",
        ),
        (
            r#"{"auths": {"a.io": {"auth": "!!!"}}}"#,
            "`auth` is not valid base64",
        ),
        (
            r#"{"auths": {"a.io": {"auth": "OnB3"}}}"#,
            "`auth` decodes to an empty user name",
        ),
        (r#"{"auths": []}"#, "`auths` is an array, not an object"),
        (
            r#"{"credHelpers": {"a.io": 1}}"#,
            "credHelpers[\"a.io\"] is a number, not a string",
        ),
        (
            r#"{"credsStore": true}"#,
            "`credsStore` is a boolean, not a string",
        ),
        (
            "{\"auths\":\n {\"a.io\": {\"password\": \"secret-value\",}}}",
            "/cfg/config.json: line 2 column",
        ),
    ];
    for (text, want) in cases {
        let err = AuthFile::parse(
            Path::new("/cfg/config.json"),
            AuthFileKind::DockerConfig,
            text,
        )
        .expect_err(text);
        let msg = err.to_string();
        assert!(matches!(err, CredentialError::AuthFile { .. }), "{msg}");
        assert!(msg.starts_with("/cfg/config.json: "), "{msg}");
        assert!(msg.contains(want), "{msg} should contain {want}");
        for secret in ["c2VjcmV0LXZhbHVl", "secret-value", "!!!"] {
            assert!(!msg.contains(secret), "{msg} leaks {secret}");
        }
    }
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

#[test]
fn node_files_are_found_through_the_environment() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tmp.path().join("home");
    let runtime = tmp.path().join("run");
    write(
        &home.join(".docker/config.json"),
        r#"{"auths":{"quay.io":{"auth":"aG9tZTpw"}}}"#,
    );
    write(
        &runtime.join("containers/auth.json"),
        r#"{"auths":{"quay.io/org":{"auth":"eGRnOnA="}}}"#,
    );
    let env = NodeEnv {
        home: Some(home.clone()),
        xdg_runtime_dir: Some(runtime.clone()),
        ..NodeEnv::default()
    };
    let node = NodeCredentials::load(&NodeOptions {
        env: env.clone(),
        ..NodeOptions::default()
    })
    .expect("loads");
    let steps = node.steps_for(&reference("quay.io/org/app"));
    let users: Vec<Option<String>> = steps.iter().map(|s| s.source().username).collect();
    assert_eq!(users, [Some("home".into()), Some("xdg".into())]);
    assert_eq!(
        steps[0].source().source,
        home.join(".docker/config.json").display().to_string()
    );

    // $DOCKER_CONFIG and $REGISTRY_AUTH_FILE take precedence.
    let docker_dir = tmp.path().join("dockercfg");
    write(
        &docker_dir.join("config.json"),
        r#"{"auths":{"quay.io":{"auth":"ZW52OnA="}}}"#,
    );
    let auth_file = tmp.path().join("auth.json");
    write(&auth_file, r#"{"auths":{"quay.io":{"auth":"cmVnOnA="}}}"#);
    let node = NodeCredentials::load(&NodeOptions {
        env: NodeEnv {
            docker_config: Some(docker_dir.clone()),
            registry_auth_file: Some(auth_file.clone()),
            ..env.clone()
        },
        ..NodeOptions::default()
    })
    .expect("loads");
    let users: Vec<Option<String>> = node
        .steps_for(&reference("quay.io/org/app"))
        .iter()
        .map(|s| s.source().username)
        .collect();
    assert_eq!(users, [Some("env".into()), Some("reg".into())]);

    // Explicit options win; `--docker-config` may name the directory.
    let node = NodeCredentials::load(&NodeOptions {
        docker_config: Some(home.join(".docker")),
        auth_file: Some(runtime.join("containers/auth.json")),
        env: NodeEnv {
            docker_config: Some(docker_dir),
            registry_auth_file: Some(auth_file),
            ..env
        },
        helpers: HelperOptions::default(),
    })
    .expect("loads");
    let users: Vec<Option<String>> = node
        .steps_for(&reference("quay.io/org/app"))
        .iter()
        .map(|s| s.source().username)
        .collect();
    assert_eq!(users, [Some("home".into()), Some("xdg".into())]);
}

#[test]
fn missing_default_files_are_skipped_but_explicit_ones_are_errors() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let env = NodeEnv {
        home: Some(tmp.path().join("nohome")),
        xdg_runtime_dir: Some(tmp.path().join("norun")),
        ..NodeEnv::default()
    };
    let node = NodeCredentials::load(&NodeOptions {
        env: env.clone(),
        ..NodeOptions::default()
    })
    .expect("nothing to load is fine");
    assert!(node.docker_config().is_none() && node.containers_auth().is_none());
    assert!(node.steps_for(&reference("nginx")).is_empty());

    for options in [
        NodeOptions {
            docker_config: Some(tmp.path().join("missing.json")),
            env: env.clone(),
            ..NodeOptions::default()
        },
        NodeOptions {
            auth_file: Some(tmp.path().join("missing-auth.json")),
            env: env.clone(),
            ..NodeOptions::default()
        },
    ] {
        let err = NodeCredentials::load(&options).expect_err("explicit file missing");
        assert!(matches!(err, CredentialError::Read { .. }), "{err}");
        assert!(err.to_string().contains("missing"), "{err}");
    }

    // A default file that exists but is broken is an error.
    write(&tmp.path().join("nohome/.docker/config.json"), "{not json");
    let err = NodeCredentials::load(&NodeOptions {
        env,
        ..NodeOptions::default()
    })
    .expect_err("broken default file");
    assert!(matches!(err, CredentialError::AuthFile { .. }), "{err}");
}

#[test]
fn node_steps_order_entries_then_helpers() {
    let docker_file = docker(
        r#"{"auths":{"quay.io":{"auth":"ZDpw"}},"credHelpers":{"quay.io":"one"},"credsStore":"store"}"#,
    );
    let containers_file =
        containers(r#"{"auths":{"quay.io":{"auth":"YzpwCg=="}},"credHelpers":{"quay.io":"one"}}"#);
    let node = NodeCredentials::from_files(
        Some(docker_file),
        Some(containers_file),
        HelperOptions::default(),
    );
    let steps = node.steps_for(&reference("quay.io/app"));
    let kinds: Vec<&str> = steps.iter().map(CredentialStep::kind).collect();
    // The same helper for the same server runs once.
    assert_eq!(kinds, ["basic", "basic", "helper"]);
    assert_eq!(steps[0].source().source, "/cfg/config.json");
    assert_eq!(steps[1].source().source, "/run/auth.json");
    assert_eq!(
        steps[2].source().source,
        "credential helper docker-credential-one (/cfg/config.json)"
    );
}

/// Docker's `configfile.LoadFromReader` ignores the JSON decoder's `io.EOF`, so an
/// empty or whitespace-only `config.json` is an empty config; `auth.json` has no such
/// rule here, and half a document (or a byte-order mark alone) is still an error.
#[test]
fn empty_docker_config_is_an_empty_config() {
    for text in ["", " \n\t\r\n"] {
        let file = docker(text);
        assert!(file.entries().is_empty(), "{text:?}");
        assert!(file.cred_helpers().is_empty(), "{text:?}");
        assert_eq!(file.creds_store(), None, "{text:?}");
        assert_eq!(picked(&file, "nginx"), None);
    }
    let err = AuthFile::parse(
        Path::new("/run/auth.json"),
        AuthFileKind::ContainersAuth,
        "",
    )
    .expect_err("empty auth.json");
    assert!(err.to_string().starts_with("/run/auth.json: "), "{err}");
    for text in ["{", "\u{feff}"] {
        AuthFile::parse(
            Path::new("/cfg/config.json"),
            AuthFileKind::DockerConfig,
            text,
        )
        .expect_err(text);
    }
}
