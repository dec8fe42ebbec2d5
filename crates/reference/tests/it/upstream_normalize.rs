//! Table tests from distribution/reference `normalize_test.go`
//! (github.com/distribution/reference, tests `TestValidateReferenceName`,
//! `TestValidateRemoteName`, `TestParseRepositoryInfo`,
//! `TestParseReferenceWithTagAndDigest`, `TestInvalidReferenceComponents`,
//! `TestParseAnyReference`, `TestNormalizedSplitHostname`,
//! `TestParseDockerRef`). The inputs and expected values are upstream's; the
//! test code is ours.

use pullcheck_reference::{Reference, ReferenceErrorKind as Kind};

fn parse(input: &str) -> Reference {
    Reference::parse_normalized(input).unwrap_or_else(|e| panic!("{input}: {}", e.message()))
}

/// `TestValidateReferenceName`, valid names.
const VALID_REFERENCE_NAMES: &[&str] = &[
    "docker/docker",
    "library/debian",
    "debian",
    "docker.io/docker/docker",
    "docker.io/library/debian",
    "docker.io/debian",
    "index.docker.io/docker/docker",
    "index.docker.io/library/debian",
    "index.docker.io/debian",
    "127.0.0.1:5000/docker/docker",
    "127.0.0.1:5000/library/debian",
    "127.0.0.1:5000/debian",
    "192.168.0.1",
    "192.168.0.1:80",
    "192.168.0.1:8/debian",
    "192.168.0.2:25000/debian",
    "thisisthesongthatneverendsitgoesonandonandonthisisthesongthatnev",
    "[fc00::1]:5000/docker",
    "[fc00::1]:5000/docker/docker",
    "[fc00:1:2:3:4:5:6:7]:5000/library/debian",
    // Valid with a host: no ambiguity with an identifier.
    "docker.io/1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
    "Docker/docker",
    "DOCKER/docker",
];

/// `TestValidateReferenceName`, invalid names, with the kind we report.
const INVALID_REFERENCE_NAMES: &[(&str, Kind)] = &[
    ("https://github.com/docker/docker", Kind::InvalidFormat),
    ("docker/Docker", Kind::Uppercase),
    ("-docker", Kind::InvalidFormat),
    ("-docker/docker", Kind::InvalidFormat),
    ("-docker.io/docker/docker", Kind::InvalidFormat),
    ("docker///docker", Kind::InvalidFormat),
    ("docker.io/docker/Docker", Kind::Uppercase),
    ("docker.io/docker///docker", Kind::InvalidFormat),
    ("[fc00::1]", Kind::InvalidFormat),
    ("[fc00::1]:5000", Kind::InvalidFormat),
    ("fc00::1:5000/debian", Kind::InvalidFormat),
    ("[fe80::1%eth0]:5000/debian", Kind::InvalidFormat),
    (
        "[2001:db8:3:4::192.0.2.33]:5000/debian",
        Kind::InvalidFormat,
    ),
    (
        "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
        Kind::Hex64,
    ),
];

#[test]
fn validate_reference_name() {
    for name in VALID_REFERENCE_NAMES {
        parse(name);
    }
    for (name, kind) in INVALID_REFERENCE_NAMES {
        let err = Reference::parse_normalized(name).expect_err(name);
        assert_eq!(err.kind(), *kind, "{name}: {}", err.message());
    }
}

/// `TestValidateRemoteName`.
#[test]
fn validate_remote_name() {
    let valid = [
        "docker/docker",
        // 64 characters, not hex: allowed.
        "thisisthesongthatneverendsitgoesonandonandonthisisthesongthatnev",
        "docker-rules/docker",
        "docker---rules/docker",
        "doc/docker",
        "d/docker",
        "jess/t",
        "dock__er/docker",
    ];
    for name in valid {
        parse(name);
    }
    let invalid = [
        ("docker/Docker", Kind::Uppercase),
        ("docker///docker", Kind::InvalidFormat),
        (
            "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
            Kind::Hex64,
        ),
        ("-docker/docker", Kind::InvalidFormat),
        ("docker-/docker", Kind::InvalidFormat),
        ("-docker-/docker", Kind::InvalidFormat),
        ("____/____", Kind::InvalidFormat),
        ("_docker/_docker", Kind::InvalidFormat),
        ("dock..er/docker", Kind::InvalidFormat),
        ("dock_.er/docker", Kind::InvalidFormat),
        ("dock-.er/docker", Kind::InvalidFormat),
        ("docker/", Kind::InvalidFormat),
        (
            "this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255_this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255_this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255_this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255/docker",
            Kind::NameTooLong,
        ),
    ];
    for (name, kind) in invalid {
        let err = Reference::parse_normalized(name).expect_err(name);
        assert_eq!(err.kind(), kind, "{name}: {}", err.message());
    }
}

/// `TestParseRepositoryInfo`: (path, familiar, full, ambiguous, domain).
/// Each of familiar, full and (when given) ambiguous parses to the same
/// repository.
const REPOSITORY_INFO: &[(&str, &str, &str, &str, &str)] = &[
    (
        "fooo/bar",
        "fooo/bar",
        "docker.io/fooo/bar",
        "index.docker.io/fooo/bar",
        "docker.io",
    ),
    (
        "library/ubuntu",
        "ubuntu",
        "docker.io/library/ubuntu",
        "library/ubuntu",
        "docker.io",
    ),
    (
        "nonlibrary/ubuntu",
        "nonlibrary/ubuntu",
        "docker.io/nonlibrary/ubuntu",
        "",
        "docker.io",
    ),
    (
        "other/library",
        "other/library",
        "docker.io/other/library",
        "",
        "docker.io",
    ),
    (
        "private/moonbase",
        "127.0.0.1:8000/private/moonbase",
        "127.0.0.1:8000/private/moonbase",
        "",
        "127.0.0.1:8000",
    ),
    (
        "privatebase",
        "127.0.0.1:8000/privatebase",
        "127.0.0.1:8000/privatebase",
        "",
        "127.0.0.1:8000",
    ),
    (
        "private/moonbase",
        "example.com/private/moonbase",
        "example.com/private/moonbase",
        "",
        "example.com",
    ),
    (
        "privatebase",
        "example.com/privatebase",
        "example.com/privatebase",
        "",
        "example.com",
    ),
    (
        "private/moonbase",
        "example.com:8000/private/moonbase",
        "example.com:8000/private/moonbase",
        "",
        "example.com:8000",
    ),
    (
        "privatebasee",
        "example.com:8000/privatebasee",
        "example.com:8000/privatebasee",
        "",
        "example.com:8000",
    ),
    (
        "library/ubuntu-12.04-base",
        "ubuntu-12.04-base",
        "docker.io/library/ubuntu-12.04-base",
        "index.docker.io/library/ubuntu-12.04-base",
        "docker.io",
    ),
    (
        "library/foo",
        "foo",
        "docker.io/library/foo",
        "docker.io/foo",
        "docker.io",
    ),
    (
        "library/foo/bar",
        "library/foo/bar",
        "docker.io/library/foo/bar",
        "",
        "docker.io",
    ),
    (
        "store/foo/bar",
        "store/foo/bar",
        "docker.io/store/foo/bar",
        "",
        "docker.io",
    ),
    ("bar", "Foo/bar", "Foo/bar", "", "Foo"),
    ("bar", "FOO/bar", "FOO/bar", "", "FOO"),
];

#[test]
fn parse_repository_info() {
    for &(path, familiar, full, ambiguous, domain) in REPOSITORY_INFO {
        let mut inputs = vec![familiar, full];
        if !ambiguous.is_empty() {
            inputs.push(ambiguous);
        }
        for input in inputs {
            let r = parse(input);
            assert_eq!(r.familiar(), familiar, "familiar of {input}");
            assert_eq!(r.repository(), full, "full name of {input}");
            assert_eq!(r.upstream_string(), full, "string of {input}");
            assert_eq!(r.domain(), domain, "domain of {input}");
            assert_eq!(r.path(), path, "path of {input}");
        }
    }
}

/// `TestParseReferenceWithTagAndDigest`.
#[test]
fn reference_with_tag_and_digest() {
    let short =
        "busybox:latest@sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa";
    let r = parse(short);
    assert_eq!(r.canonical(), format!("docker.io/library/{short}"));
    assert_eq!(r.tag(), Some("latest"));
    assert!(r.digest().is_some());
    assert_eq!(r.familiar(), short);
}

/// `TestInvalidReferenceComponents` (the name part; tag and digest are
/// checked by the grammar tests).
#[test]
fn invalid_reference_components() {
    let err = Reference::parse_normalized("-foo").unwrap_err();
    assert_eq!(err.kind(), Kind::InvalidFormat);
    parse("busybox");
    assert_eq!(
        Reference::parse_normalized("busybox:-foo").map_err(|e| e.kind()),
        Err(Kind::InvalidFormat)
    );
    assert_eq!(
        Reference::parse_normalized("busybox@foo").map_err(|e| e.kind()),
        Err(Kind::InvalidFormat)
    );
}

/// `TestParseAnyReference`: the named cases (ParseAnyReference falls back to
/// ParseNormalizedNamed), with the equivalent canonical string. The two
/// digest-only cases are no names: `ParseNormalizedNamed` refuses the bare
/// hex and reads `sha256:<hex>` as image `sha256` with a tag.
#[test]
fn parse_any_reference_named_cases() {
    let d = "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c";
    let cases = [
        ("redis".to_owned(), "docker.io/library/redis".to_owned()),
        (
            "redis:latest".into(),
            "docker.io/library/redis:latest".into(),
        ),
        (
            "docker.io/library/redis:latest".into(),
            "docker.io/library/redis:latest".into(),
        ),
        (format!("redis@{d}"), format!("docker.io/library/redis@{d}")),
        (
            format!("docker.io/library/redis@{d}"),
            format!("docker.io/library/redis@{d}"),
        ),
        ("dmcgowan/myapp".into(), "docker.io/dmcgowan/myapp".into()),
        (
            "dmcgowan/myapp:latest".into(),
            "docker.io/dmcgowan/myapp:latest".into(),
        ),
        (
            "docker.io/mcgowan/myapp:latest".into(),
            "docker.io/mcgowan/myapp:latest".into(),
        ),
        (
            format!("dmcgowan/myapp@{d}"),
            format!("docker.io/dmcgowan/myapp@{d}"),
        ),
        (
            format!("docker.io/dmcgowan/myapp@{d}"),
            format!("docker.io/dmcgowan/myapp@{d}"),
        ),
        (
            "dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9".into(),
            "docker.io/library/dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9"
                .into(),
        ),
        ("dbcc1".into(), "docker.io/library/dbcc1".into()),
    ];
    for (input, equivalent) in cases {
        let r = parse(&input);
        assert_eq!(r.upstream_string(), equivalent, "{input}");
        assert_eq!(Reference::parse(&equivalent).unwrap(), r, "{input}");
    }
    assert_eq!(
        Reference::parse_normalized(
            "dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"
        )
        .map_err(|e| e.kind()),
        Err(Kind::Hex64)
    );
    // Not a digest for ParseNormalizedNamed: the image `sha256` with the hex as tag.
    let r = parse(d);
    assert_eq!(r.path(), "library/sha256");
    assert_eq!(r.tag(), d.strip_prefix("sha256:"));
}

/// `TestNormalizedSplitHostname`.
#[test]
fn normalized_split_hostname() {
    let cases = [
        ("test.com/foo", "test.com", "foo"),
        ("test_com/foo", "docker.io", "test_com/foo"),
        ("docker/migrator", "docker.io", "docker/migrator"),
        ("test.com:8080/foo", "test.com:8080", "foo"),
        ("test-com:8080/foo", "test-com:8080", "foo"),
        ("foo", "docker.io", "library/foo"),
        ("xn--n3h.com/foo", "xn--n3h.com", "foo"),
        ("xn--n3h.com:18080/foo", "xn--n3h.com:18080", "foo"),
        ("docker.io/foo", "docker.io", "library/foo"),
        ("docker.io/library/foo", "docker.io", "library/foo"),
        ("docker.io/library/foo/bar", "docker.io", "library/foo/bar"),
    ];
    for (input, domain, path) in cases {
        let r = parse(input);
        assert_eq!((r.domain(), r.path()), (domain, path), "{input}");
    }
}

/// `TestParseDockerRef`: `ParseDockerRef` is `TagNameOnly`, except that a
/// reference with both tag and digest keeps only the digest. Ours keeps
/// both in `canonical()`, and pulls by digest (`manifest_reference`).
#[test]
fn parse_docker_ref() {
    let d = "sha256:e6693c20186f837fc393390135d8a598a96a833917917789d63766cab6c59582";
    let cases = [
        (
            "busybox".to_owned(),
            "docker.io/library/busybox:latest".to_owned(),
        ),
        (
            "busybox:latest".into(),
            "docker.io/library/busybox:latest".into(),
        ),
        (
            format!("busybox@{d}"),
            format!("docker.io/library/busybox@{d}"),
        ),
        (
            "library/busybox".into(),
            "docker.io/library/busybox:latest".into(),
        ),
        (
            "docker.io/busybox".into(),
            "docker.io/library/busybox:latest".into(),
        ),
        (
            "docker.io/library/busybox".into(),
            "docker.io/library/busybox:latest".into(),
        ),
        (
            "docker.io/busybox:latest".into(),
            "docker.io/library/busybox:latest".into(),
        ),
        (
            "library/busybox:latest".into(),
            "docker.io/library/busybox:latest".into(),
        ),
        (
            "docker.io/library/busybox:latest".into(),
            "docker.io/library/busybox:latest".into(),
        ),
        (
            "gcr.io/library/busybox".into(),
            "gcr.io/library/busybox:latest".into(),
        ),
    ];
    for (input, expected) in cases {
        let r = parse(&input);
        assert_eq!(r.canonical(), expected, "{input}");
        // Upstream then checks that the output parses.
        assert_eq!(Reference::parse(&expected).unwrap(), r.tag_name_only());
    }
    let r = parse(&format!("gcr.io/library/busybox:latest@{d}"));
    assert_eq!(r.repository(), "gcr.io/library/busybox");
    assert_eq!(r.manifest_reference(), d);
    assert_eq!(r.canonical(), format!("gcr.io/library/busybox:latest@{d}"));
}
