//! The accessors and forms of a parsed reference.

use pullcheck_reference::Reference;

const D: &str = "sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa";

#[test]
fn forms() {
    // (input, canonical, familiar, manifest_reference)
    let cases = [
        (
            "alpine",
            "docker.io/library/alpine:latest",
            "alpine",
            "latest",
        ),
        (
            "alpine:3.20",
            "docker.io/library/alpine:3.20",
            "alpine:3.20",
            "3.20",
        ),
        (
            "index.docker.io/user/app",
            "docker.io/user/app:latest",
            "user/app",
            "latest",
        ),
        (
            "docker.io/library/foo/bar",
            "docker.io/library/foo/bar:latest",
            "library/foo/bar",
            "latest",
        ),
        (
            "localhost:5000/app:v1",
            "localhost:5000/app:v1",
            "localhost:5000/app:v1",
            "v1",
        ),
        (
            "[::1]:5000/app",
            "[::1]:5000/app:latest",
            "[::1]:5000/app",
            "latest",
        ),
        ("Registry.Example.com/App/x", "", "", ""), // upper-case path: error
    ];
    for (input, canonical, familiar, pulled) in cases {
        match Reference::parse_normalized(input) {
            Ok(r) => {
                assert_eq!(r.canonical(), canonical, "{input}");
                assert_eq!(r.to_string(), canonical, "{input}");
                assert_eq!(r.familiar(), familiar, "{input}");
                assert_eq!(r.manifest_reference(), pulled, "{input}");
            }
            Err(_) => assert!(canonical.is_empty(), "{input}"),
        }
    }
}

#[test]
fn tag_and_digest_together() {
    let r: Reference = format!("quay.io/org/app:v2@{D}").parse().unwrap();
    assert_eq!(r.domain(), "quay.io");
    assert_eq!(r.path(), "org/app");
    assert_eq!(r.repository(), "quay.io/org/app");
    assert_eq!(r.tag(), Some("v2"));
    assert_eq!(r.digest(), Some(D));
    assert_eq!(r.manifest_reference(), D);
    assert_eq!(r.canonical(), format!("quay.io/org/app:v2@{D}"));
    assert!(!r.is_docker_hub());

    let r = Reference::parse_normalized(&format!("busybox@{D}")).unwrap();
    assert_eq!(r.canonical(), format!("docker.io/library/busybox@{D}"));
    assert_eq!(r.familiar(), format!("busybox@{D}"));
    assert_eq!(r.tag_name_only(), r);
    assert!(r.is_docker_hub());
}

#[test]
fn empty_domain_quirk() {
    // `foo_bar.com` is taken for a domain by the Docker Hub split, but it is
    // not a valid host, so upstream's name regexp makes the whole name the path.
    let r = Reference::parse_normalized("foo_bar.com/app:1").unwrap();
    assert_eq!(r.domain(), "");
    assert_eq!(r.path(), "foo_bar.com/app");
    assert_eq!(r.repository(), "foo_bar.com/app");
    assert_eq!(r.canonical(), "foo_bar.com/app:1");
    assert_eq!(r.familiar(), "foo_bar.com/app:1");
    assert_eq!(Reference::parse_normalized(&r.canonical()).unwrap(), r);
}

#[test]
fn familiar_forms_that_mean_something_else() {
    // As upstream: these familiar strings parse to other references.
    let r = Reference::parse_normalized("docker.io/localhost/app").unwrap();
    assert_eq!(r.familiar(), "localhost/app");
    assert_eq!(
        Reference::parse_normalized("localhost/app")
            .unwrap()
            .domain(),
        "localhost"
    );

    let r = Reference::parse_normalized("docker.io/foo.com/app").unwrap();
    assert_eq!(r.familiar(), "foo.com/app");

    let hex = "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a";
    let r = Reference::parse_normalized(&format!("docker.io/{hex}")).unwrap();
    assert_eq!(r.familiar(), hex);
    assert!(Reference::parse_normalized(hex).is_err());
}

#[test]
fn non_normalised_parse() {
    let r = Reference::parse("test_com").unwrap();
    assert_eq!((r.domain(), r.path()), ("", "test_com"));
    let r = Reference::parse("a/b").unwrap();
    assert_eq!((r.domain(), r.path()), ("a", "b"));
    assert_eq!(r.upstream_string(), "a/b");
}
