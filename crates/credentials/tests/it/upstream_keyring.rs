//! The kubelet keyring's behaviour, as tables.
//!
//! Test values come from kubernetes `pkg/credentialprovider/keyring_test.go`
//! (`TestUrlsMatch`, `TestDockerKeyringForGlob`, `TestKeyringMiss`,
//! `TestKeyringMissWithDockerHubCredentials`, `TestKeyringHitWithUnqualifiedDockerHub`,
//! `TestKeyringHitWithUnqualifiedLibraryDockerHub`, `TestKeyringHitWithQualifiedDockerHub`,
//! `TestIsDefaultRegistryMatch`, `TestDockerKeyringLookup`, `TestIssue3797`); the tests
//! are written anew. Further cases cover what those tables leave implicit.

use std::collections::BTreeMap;

use pullcheck_credentials::Credential;
use pullcheck_credentials::keyring::{
    DOCKER_HUB_FALLBACK_KEY, is_default_registry_match, keyring_key, urls_match,
};
use pullcheck_credentials::{Keyring, PullSecret, ResolvedCredential};
use pullcheck_reference::Reference;

/// A one-secret keyring over a `.dockercfg` document.
fn keyring(dockercfg: &str) -> Keyring {
    Keyring::from_pull_secrets([&secret("s", dockercfg)])
}

fn secret(name: &str, dockercfg: &str) -> PullSecret {
    let data = BTreeMap::from([(".dockercfg".to_string(), dockercfg.as_bytes().to_vec())]);
    PullSecret::from_data("test.yaml", name, Some("kubernetes.io/dockercfg"), &data)
        .expect("valid secret")
}

/// `{"<key>": {"email": "foo@bar.baz", "auth": base64("foo:bar")}}`, the document the
/// upstream tests build for every key.
fn foo_bar_config(key: &str) -> String {
    format!(r#"{{"{key}": {{"email": "foo@bar.baz", "auth": "Zm9vOmJhcg=="}}}}"#)
}

fn users(found: &[ResolvedCredential]) -> Vec<&str> {
    found
        .iter()
        .map(|c| match &c.credential {
            Credential::Basic { username, .. } => username.as_str(),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

fn is_foo_bar(c: &ResolvedCredential) -> bool {
    c.credential
        == Credential::Basic {
            username: "foo".into(),
            password: "bar".into(),
        }
}

#[test]
fn urls_match_table() {
    // TestUrlsMatch.
    let cases = [
        // No path component.
        ("*.kubernetes.io", "prefix.kubernetes.io", true),
        ("prefix.*.io", "prefix.kubernetes.io", true),
        ("prefix.kubernetes.*", "prefix.kubernetes.io", true),
        ("*-good.kubernetes.io", "prefix-good.kubernetes.io", true),
        // With path components.
        ("*.kubernetes.io/blah", "prefix.kubernetes.io/blah", true),
        ("prefix.*.io/foo", "prefix.kubernetes.io/foo/bar", true),
        // With path components and ports.
        (
            "*.kubernetes.io:1111/blah",
            "prefix.kubernetes.io:1111/blah",
            true,
        ),
        (
            "prefix.*.io:1111/foo",
            "prefix.kubernetes.io:1111/foo/bar",
            true,
        ),
        // The number of labels differs.
        ("*.kubernetes.io", "kubernetes.io", false),
        ("*.*.kubernetes.io", "prefix.kubernetes.io", false),
        ("*.*.kubernetes.io", "kubernetes.io", false),
        // Some label differs.
        ("kubernetes.io", "kubernetes.com", false),
        ("k*.io", "quay.io", false),
        // Ports differ.
        (
            "*.kubernetes.io:1234/blah",
            "prefix.kubernetes.io:1111/blah",
            false,
        ),
        (
            "prefix.*.io/foo",
            "prefix.kubernetes.io:1111/foo/bar",
            false,
        ),
    ];
    for (glob, target, want) in cases {
        assert_eq!(urls_match(glob, target), want, "{glob} vs {target}");
    }
}

#[test]
fn keyring_hits_for_globs() {
    // TestDockerKeyringForGlob: (key as written, image prefix); the lookup is the
    // prefix followed by `/foo/bar`.
    let cases = [
        ("https://hello.kubernetes.io", "hello.kubernetes.io"),
        ("https://*.docker.io", "prefix.docker.io"),
        ("https://prefix.*.io", "prefix.docker.io"),
        ("https://prefix.docker.*", "prefix.docker.io"),
        ("https://*.docker.io/path", "prefix.docker.io/path"),
        ("https://prefix.*.io/path", "prefix.docker.io/path/subpath"),
        ("https://prefix.docker.*/path", "prefix.docker.io/path"),
        ("https://*.docker.io:8888", "prefix.docker.io:8888"),
        ("https://prefix.*.io:8888", "prefix.docker.io:8888"),
        ("https://prefix.docker.*:8888", "prefix.docker.io:8888"),
        (
            "https://*.docker.io/path:1111",
            "prefix.docker.io/path:1111",
        ),
        ("https://*.docker.io/v1/", "prefix.docker.io/path:1111"),
        ("https://*.docker.io/v2/", "prefix.docker.io/path:1111"),
        (
            "https://prefix.docker.*/path:1111",
            "prefix.docker.io/path:1111",
        ),
        ("prefix.docker.io:1111", "prefix.docker.io:1111/path"),
        ("*.docker.io:1111", "prefix.docker.io:1111/path"),
    ];
    for (key, target) in cases {
        let found = keyring(&foo_bar_config(key)).lookup_image(&format!("{target}/foo/bar"));
        assert!(!found.is_empty(), "{key} should match {target}");
        assert!(is_foo_bar(&found[0]), "{key}");
        assert_eq!(found[0].source.key, key);
        assert_eq!(found[0].source.username.as_deref(), Some("foo"));
    }
}

#[test]
fn keyring_misses() {
    // TestKeyringMiss.
    let cases = [
        ("https://hello.kubernetes.io", "world.mesos.org/foo/bar"),
        ("https://*.docker.com", "prefix.docker.io"),
        ("https://suffix.*.io", "prefix.docker.io"),
        ("https://prefix.docker.c*", "prefix.docker.io"),
        (
            "https://prefix.*.io/path:1111",
            "prefix.docker.io/path/subpath:1111",
        ),
        ("suffix.*.io", "prefix.docker.io"),
    ];
    for (key, target) in cases {
        let found = keyring(&foo_bar_config(key)).lookup_image(&format!("{target}/foo/bar"));
        assert!(found.is_empty(), "{key} should not match {target}");
    }
}

#[test]
fn docker_hub_credentials_do_not_leak_to_other_registries() {
    // TestKeyringMissWithDockerHubCredentials.
    let ring = keyring(&foo_bar_config("https://index.docker.io/v1/"));
    assert!(ring.lookup_image("world.mesos.org/foo/bar").is_empty());
    let other = Reference::parse_normalized("world.mesos.org/foo/bar").expect("reference");
    assert!(ring.lookup(&other).is_empty());
}

#[test]
fn docker_hub_fallback_for_unqualified_and_qualified_names() {
    let ring = keyring(&foo_bar_config("https://index.docker.io/v1/"));
    // TestKeyringHitWithUnqualifiedDockerHub, TestKeyringHitWithUnqualifiedLibraryDockerHub:
    // exactly one hit.
    for image in ["google/docker-registry", "jenkins"] {
        let found = ring.lookup_image(image);
        assert_eq!(found.len(), 1, "{image}");
        assert!(is_foo_bar(&found[0]));
        // The kubelet passes the normalised repository; the answer is the same.
        let reference = Reference::parse_normalized(image).expect("reference");
        let found = ring.lookup(&reference);
        assert_eq!(found.len(), 1, "{image} normalised");
        assert!(is_foo_bar(&found[0]));
    }
    // TestKeyringHitWithQualifiedDockerHub: at most two hits.
    let found = ring.lookup_image("index.docker.io/v1//google/docker-registry");
    assert!(!found.is_empty() && found.len() <= 2);
    assert!(is_foo_bar(&found[0]));
    let reference =
        Reference::parse_normalized("index.docker.io/google/docker-registry").expect("reference");
    assert_eq!(ring.lookup(&reference).len(), 1);
}

#[test]
fn default_registry_match_table() {
    // TestIsDefaultRegistryMatch.
    let cases = [
        ("foo/bar", true),
        ("docker.io/foo/bar", true),
        ("index.docker.io/foo/bar", true),
        ("foo", true),
        ("", false),
        ("registry.tld/foo/bar", false),
        ("registry:5000/foo/bar", false),
        ("myhostdocker.io/foo/bar", false),
    ];
    for (image, want) in cases {
        assert_eq!(is_default_registry_match(image), want, "{image:?}");
    }
}

#[test]
fn more_specific_keys_come_first() {
    // TestDockerKeyringLookup: (image, users in order).
    let ring = keyring(
        r#"{
            "bar.example.com/pong": {"username": "grace", "password": "squash", "email": "grace@example.com"},
            "bar.example.com": {"username": "ada", "password": "smash", "email": "ada@example.com"}
        }"#,
    );
    let cases: [(&str, &[&str]); 7] = [
        ("bar.example.com", &["ada"]),
        ("bar.example.com/pong", &["grace", "ada"]),
        ("bar.example.com/ping", &["ada"]),
        // The key path is a string prefix, not a path prefix.
        ("bar.example.com/pongz", &["grace", "ada"]),
        ("bar.example.com/pong/pang", &["grace", "ada"]),
        ("example.com", &[]),
        ("foo.example.com", &[]),
    ];
    for (image, want) in cases {
        assert_eq!(users(&ring.lookup_image(image)), want, "{image}");
    }
    let found = ring.lookup_image("bar.example.com/pong");
    assert_eq!(
        found[1].credential,
        Credential::Basic {
            username: "ada".into(),
            password: "smash".into()
        }
    );
}

#[test]
fn scheme_and_version_path_match_the_host() {
    // TestIssue3797.
    let ring = keyring(
        r#"{"https://quay.io/v1/": {"username": "rex", "password": "tiny arms", "email": "rex@example.com"}}"#,
    );
    for image in ["quay.io", "quay.io/foo", "quay.io/foo/bar"] {
        assert_eq!(users(&ring.lookup_image(image)), ["rex"], "{image}");
    }
}

#[test]
fn key_normalisation() {
    let cases = [
        ("https://index.docker.io/v1/", "index.docker.io"),
        ("index.docker.io", "index.docker.io"),
        ("index.docker.io/v2/", "index.docker.io"),
        ("http://quay.io/", "quay.io"),
        ("quay.io/v2/org", "quay.io/org"),
        ("quay.io/v2", "quay.io/v2"),
        ("quay.io/org/", "quay.io/org/"),
        ("r.example.com:5000", "r.example.com:5000"),
        ("https://user@r.example.com/", "r.example.com"),
        ("Quay.IO", "Quay.IO"),
        ("[::1]:5000/v1/", "[::1]:5000"),
        ("quay.io/a%2Fb", "quay.io/a/b"),
        ("https://quay.io?x=1#y", "quay.io"),
    ];
    for (written, want) in cases {
        assert_eq!(keyring_key(written).as_deref(), Ok(want), "{written}");
    }
    for bad in ["quay.io:abc", "bad host", "quay.io/%zz", "ctl\u{1}"] {
        assert!(keyring_key(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn all_secrets_share_one_keyring_in_reverse_order() {
    // Two secrets: the more specific key comes first whichever secret holds it, and
    // entries for the same key keep the secrets' order.
    let first = secret(
        "first",
        r#"{"quay.io": {"username": "a", "password": "1"}, "*.example.com": {"username": "c", "password": "3"}}"#,
    );
    let second = secret(
        "second",
        r#"{"quay.io/org": {"username": "b", "password": "2"}, "https://quay.io/v1/": {"username": "d", "password": "4"}}"#,
    );
    let ring = Keyring::from_pull_secrets([&first, &second]);
    assert_eq!(ring.keys(), ["quay.io/org", "quay.io", "*.example.com"]);
    let found = ring.lookup(&Reference::parse_normalized("quay.io/org/app:1").expect("ref"));
    assert_eq!(users(&found), ["b", "a", "d"]);
    assert_eq!(found[0].source.source, "pull secret second (test.yaml)");
    assert_eq!(found[1].source.source, "pull secret first (test.yaml)");
    assert_eq!(found[2].source.key, "https://quay.io/v1/");
    let found = ring.lookup(&Reference::parse_normalized("quay.io/other/app").expect("ref"));
    assert_eq!(users(&found), ["a", "d"]);
    let found = ring.lookup(&Reference::parse_normalized("r.example.com/app").expect("ref"));
    assert_eq!(users(&found), ["c"]);
}

#[test]
fn docker_hub_fallback_only_when_nothing_matched() {
    let ring = keyring(
        r#"{"https://index.docker.io/v1/": {"username": "hub", "password": "h"},
            "*.io": {"username": "any-io", "password": "i"}}"#,
    );
    // `*.io` has two labels, like `docker.io`: it matches, so the fallback is not used.
    let nginx = Reference::parse_normalized("nginx").expect("ref");
    assert_eq!(users(&ring.lookup(&nginx)), ["any-io"]);

    let ring = keyring(
        r#"{"https://index.docker.io/v1/": {"username": "hub", "password": "h"},
            "quay.io": {"username": "quay", "password": "q"}}"#,
    );
    assert_eq!(users(&ring.lookup(&nginx)), ["hub"]);
    assert_eq!(
        ring.keys().last().map(String::as_str),
        Some("index.docker.io")
    );
    assert_eq!(DOCKER_HUB_FALLBACK_KEY, "index.docker.io");
    // A `docker.io` key matches Docker Hub images directly.
    let ring = keyring(r#"{"docker.io": {"username": "direct", "password": "d"}}"#);
    assert_eq!(users(&ring.lookup(&nginx)), ["direct"]);
    // Upstream decides "Docker Hub" on the string: a first part without `.` or `:`,
    // such as `localhost`, gets the fallback too.
    let ring = keyring(&foo_bar_config("https://index.docker.io/v1/"));
    let local = Reference::parse_normalized("localhost/app").expect("ref");
    assert_eq!(local.domain(), "localhost");
    assert_eq!(ring.lookup(&local).len(), 1);
    let local_port = Reference::parse_normalized("localhost:5000/app").expect("ref");
    assert!(ring.lookup(&local_port).is_empty());
}

#[test]
fn ports_ipv6_and_case() {
    let ring = keyring(
        r#"{"r.example.com:5000": {"username": "port", "password": "p"},
            "[::1]:5000": {"username": "v6", "password": "p"},
            "Upper.Example.com": {"username": "upper", "password": "p"}}"#,
    );
    let user_of = |image: &str| {
        users(&ring.lookup(&Reference::parse_normalized(image).expect("ref")))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(user_of("r.example.com:5000/app"), ["port"]);
    assert!(user_of("r.example.com/app").is_empty());
    assert!(user_of("r.example.com:5001/app").is_empty());
    assert_eq!(user_of("[::1]:5000/app"), ["v6"]);
    // Go keeps the host's case and globs are case-sensitive.
    assert!(user_of("upper.example.com/app").is_empty());
    assert_eq!(user_of("Upper.Example.com/app"), ["upper"]);
}

#[test]
fn entries_without_a_user_are_anonymous_attempts() {
    let ring = keyring(r#"{"quay.io": {}, "quay.io/org": {"password": "only"}}"#);
    let found = ring.lookup(&Reference::parse_normalized("quay.io/org/app").expect("ref"));
    assert_eq!(found.len(), 2);
    assert!(found.iter().all(|c| c.credential == Credential::Anonymous));
    assert!(found.iter().all(|c| c.source.username.is_none()));
}

#[test]
fn unparsable_keys_are_skipped_with_a_warning() {
    let ring = keyring(
        r#"{"quay.io:port": {"username": "x", "password": "y"}, "ghcr.io": {"username": "g", "password": "h"}}"#,
    );
    assert_eq!(ring.keys(), ["ghcr.io"]);
    assert_eq!(ring.warnings().len(), 1);
    assert!(
        ring.warnings()[0].contains("quay.io:port"),
        "{:?}",
        ring.warnings()
    );
}
