//! Unit tests. Tables marked "upstream" carry the values of containers/image
//! `pkg/sysregistriesv2/system_registries_v2_test.go` (now in containers/container-libs,
//! `image/pkg/sysregistriesv2/`); the TOML texts are our own, covering the cases of
//! upstream's `testdata/` files.

use super::*;

const SHA_A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn conf(text: &str) -> RegistriesConf {
    match RegistriesConf::parse("test.conf", text) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

fn err(text: &str) -> String {
    match RegistriesConf::parse("test.conf", text) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.to_string(),
    }
}

fn r(s: &str) -> Reference {
    match Reference::parse_normalized(s) {
        Ok(r) => r,
        Err(e) => panic!("{s}: {}", e.message()),
    }
}

fn endpoints(c: &RegistriesConf, reference: &str) -> Vec<Endpoint> {
    match c.resolve(&r(reference)) {
        Resolution::Endpoints(e) => e,
        other => panic!("{reference}: {other:?}"),
    }
}

/// `host/repository:ref` of each endpoint, for compact assertions.
fn physical(e: &[Endpoint]) -> Vec<String> {
    e.iter()
        .map(|e| {
            let sep = if e.reference.contains(':') { '@' } else { ':' };
            format!("{}/{}{sep}{}", e.host, e.repository, e.reference)
        })
        .collect()
}

// ---- upstream TestParseLocation ----

#[test]
fn parse_location_strips_trailing_slashes_and_refuses_schemes() {
    let e = parse_location("https://example.com").unwrap_err();
    assert!(
        e.contains("\"https://example.com\"") && e.contains("URI schemes are not supported"),
        "{e}"
    );
    assert!(parse_location("http://example.com").is_err());
    assert!(parse_location("john.doe@example.com").is_ok());
    for (input, want) in [
        ("example.com", "example.com"),
        ("example.com/", "example.com"),
        ("example.com//////", "example.com"),
        ("example.com:5000/with/path", "example.com:5000/with/path"),
    ] {
        assert_eq!(parse_location(input).unwrap(), want, "{input}");
    }
}

// ---- upstream TestRefMatchingSubdomainPrefix ----

#[test]
fn wildcard_prefix_matches_subdomains_of_any_depth_only() {
    let digest = format!("@{SHA_A}");
    let cases: &[(&str, &str, Option<usize>)] = &[
        ("docker.io", "*.io", Some("docker.io".len())),
        ("docker.io/foo", "*.com", None),
        ("example.com/foo", "*.co", None),
        ("example.com/foo", "*.example.com", None),
        ("example.com/foo", "*.com", Some("example.com".len())),
        ("example.com/foo:bar", "*.com", Some("example.com".len())),
        (
            "example.com/foo/bar:baz",
            "*.com",
            Some("example.com".len()),
        ),
        ("yet.another.example.com/foo", "**.example.com", None),
        (
            "yet.another.example.com/foo",
            "***.another.example.com",
            None,
        ),
        (
            "yet.another.example.com/foo",
            "**********.another.example.com",
            None,
        ),
        (
            "yet.another.example.com/foo/bar",
            "**********.another.example.com",
            None,
        ),
        (
            "yet.another.example.com/foo/bar",
            "*.another.example.com",
            Some("yet.another.example.com".len()),
        ),
        (
            "another.example.com/namespace.com/foo/bar/bbq:baz",
            "*.example.com",
            Some("another.example.com".len()),
        ),
        (
            "example.net/namespace-ends-in.com/foo/bar/bbq:baz",
            "*.com",
            None,
        ),
        (
            "another.example.com/namespace.com/foo/bar/bbq:baz",
            "*.namespace.com",
            None,
        ),
        (
            "sub.example.com/foo/bar",
            "*.com",
            Some("sub.example.com".len()),
        ),
        (
            "sub.example.com/foo/bar",
            "*.example.com",
            Some("sub.example.com".len()),
        ),
        (
            "another.sub.example.com/foo/bar/bbq:baz",
            "*.example.com",
            Some("another.sub.example.com".len()),
        ),
        (
            "another.sub.example.com/foo/bar/bbq:baz",
            "*.sub.example.com",
            Some("another.sub.example.com".len()),
        ),
    ];
    for (reference, prefix, want) in cases {
        assert_eq!(
            ref_matching_prefix(reference, prefix),
            *want,
            "{reference} vs {prefix}"
        );
    }
    for (reference, prefix, len) in [
        (
            format!("yet.another.example.com/foo/bar{digest}"),
            "*.example.com",
            "yet.another.example.com".len(),
        ),
        (
            format!("yet.another.sub.example.com/foo/bar{digest}"),
            "*.sub.example.com",
            "yet.another.sub.example.com".len(),
        ),
    ] {
        assert_eq!(
            ref_matching_prefix(&reference, prefix),
            Some(len),
            "{reference}"
        );
    }
}

// ---- upstream TestRefMatchingPrefix ----

#[test]
fn prefix_matches_exactly_or_before_colon_slash_at() {
    let d = |s: &str| format!("{s}@{SHA_A}");
    let other = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    let cases: Vec<(String, String, Option<usize>)> = vec![
        // Prefix is a domain.
        ("docker.io".into(), "docker.io".into(), Some(9)),
        ("docker.io".into(), "example.com".into(), None),
        (
            "example.com:5000".into(),
            "example.com:5000".into(),
            Some(16),
        ),
        ("example.com:50000".into(), "example.com:5000".into(), None),
        // Upstream: unintended, "don't rely on this behavior"; kept as upstream does it.
        ("example.com:5000".into(), "example.com".into(), Some(11)),
        ("example.com/foo".into(), "example.com".into(), Some(11)),
        ("example.com/foo/bar".into(), "example.com".into(), Some(11)),
        (
            "example.com/foo/bar:baz".into(),
            "example.com".into(),
            Some(11),
        ),
        (d("example.com/foo/bar"), "example.com".into(), Some(11)),
        // Prefix is a repository name or namespace.
        ("docker.io".into(), "docker.io/library".into(), None),
        (
            "docker.io/library".into(),
            "docker.io/library".into(),
            Some(17),
        ),
        (
            "example.com/library".into(),
            "docker.io/library".into(),
            None,
        ),
        (
            "docker.io/libraryy".into(),
            "docker.io/library".into(),
            None,
        ),
        (
            "docker.io/library/busybox".into(),
            "docker.io/library".into(),
            Some(17),
        ),
        ("docker.io".into(), "docker.io/library/busybox".into(), None),
        (
            "docker.io/library/busybox".into(),
            "docker.io/library/busybox".into(),
            Some(25),
        ),
        (
            "example.com/library/busybox".into(),
            "docker.io/library/busybox".into(),
            None,
        ),
        (
            "docker.io/library/busybox2".into(),
            "docker.io/library/busybox".into(),
            None,
        ),
        // Prefix is a single image.
        ("example.com".into(), "example.com/foo:bar".into(), None),
        ("example.com/foo".into(), "example.com/foo:bar".into(), None),
        (
            "example.com/foo:bar".into(),
            "example.com/foo:bar".into(),
            Some(19),
        ),
        (
            "example.com/foo:bar2".into(),
            "example.com/foo:bar".into(),
            None,
        ),
        ("example.com".into(), d("example.com/foo"), None),
        ("example.com/foo".into(), d("example.com/foo"), None),
        (
            d("example.com/foo"),
            d("example.com/foo"),
            Some(d("example.com/foo").len()),
        ),
        (
            format!("example.com/foo@{other}"),
            d("example.com/foo"),
            None,
        ),
        // An invalid prefix must not crash.
        ("example.com/foo".into(), "*".into(), None),
    ];
    for (reference, prefix, want) in cases {
        assert_eq!(
            ref_matching_prefix(&reference, &prefix),
            want,
            "{reference} vs {prefix}"
        );
    }
}

// ---- upstream TestRewriteReferenceSuccess ----

#[test]
fn rewrite_replaces_the_prefix_with_the_location() {
    let d = |s: &str| format!("{s}@{SHA_A}");
    let cases: Vec<(String, &str, &str, String)> = vec![
        (
            "example.com/image".into(),
            "example.com",
            "example.com",
            "example.com/image".into(),
        ),
        (
            "example.com/image:latest".into(),
            "example.com",
            "example.com",
            "example.com/image:latest".into(),
        ),
        (
            "example.com:5000/image".into(),
            "example.com:5000",
            "example.com:5000",
            "example.com:5000/image".into(),
        ),
        (
            "example.com:5000/image:latest".into(),
            "example.com:5000",
            "example.com:5000",
            "example.com:5000/image:latest".into(),
        ),
        (
            d("example.com/foo"),
            "example.com",
            "example.com",
            d("example.com/foo"),
        ),
        (
            "example.com/foo/image:latest".into(),
            "example.com/foo",
            "example.com",
            "example.com/image:latest".into(),
        ),
        (
            "example.com/foo/image:latest".into(),
            "example.com/foo",
            "example.com/path",
            "example.com/path/image:latest".into(),
        ),
        (
            "docker.io/library/image:latest".into(),
            "docker.io",
            "docker.io",
            "docker.io/library/image:latest".into(),
        ),
        (
            "docker.io/library/image".into(),
            "docker.io/library",
            "example.com",
            "example.com/image".into(),
        ),
        (
            "docker.io/library/image".into(),
            "docker.io",
            "example.com",
            "example.com/library/image".into(),
        ),
        (
            "docker.io/library/prefix/image".into(),
            "docker.io/library/prefix",
            "example.com",
            "example.com/image".into(),
        ),
        (
            "docker.io/namespace/image".into(),
            "*.io",
            "example.com",
            "example.com/namespace/image".into(),
        ),
        (
            "docker.io/library/prefix/image".into(),
            "*.io",
            "example.com",
            "example.com/library/prefix/image".into(),
        ),
        (
            "sub.example.io/library/prefix/image".into(),
            "*.example.io",
            "example.com",
            "example.com/library/prefix/image".into(),
        ),
        (
            "another.sub.example.io:5000/library/prefix/image:latest".into(),
            "*.sub.example.io",
            "example.com",
            "example.com:5000/library/prefix/image:latest".into(),
        ),
        (
            "foo.bar.io/ns1/ns2/ns3/ns4".into(),
            "*.bar.io",
            "omg.bbq.com/roflmao",
            "omg.bbq.com/roflmao/ns1/ns2/ns3/ns4".into(),
        ),
        // Empty location with a wildcard prefix: no rewrite.
        (
            "abc.internal.registry.com/foo:bar".into(),
            "*.internal.registry.com",
            "",
            "abc.internal.registry.com/foo:bar".into(),
        ),
        (
            "blah.foo.bar.com/omg:bbq".into(),
            "*.com",
            "",
            "blah.foo.bar.com/omg:bbq".into(),
        ),
        (
            "alien.vs.predator.foobar.io:5000/omg".into(),
            "*.foobar.io",
            "",
            "alien.vs.predator.foobar.io:5000/omg".into(),
        ),
        (
            d("alien.vs.predator.foobar.io:5000/foo"),
            "*.foobar.io",
            "",
            d("alien.vs.predator.foobar.io:5000/foo"),
        ),
        (
            "alien.vs.predator.foobar.io:5000/omg:bbq".into(),
            "*.foobar.io",
            "",
            "alien.vs.predator.foobar.io:5000/omg:bbq".into(),
        ),
    ];
    for (input, prefix, location, want) in cases {
        assert_eq!(
            rewrite_reference(&input, prefix, location),
            Ok(want),
            "{input} {prefix} {location}"
        );
    }
}

// ---- upstream TestRewriteReferenceFailedDuringParseNamed ----

#[test]
fn rewrite_fails_on_non_canonical_results_and_bad_prefixes() {
    let d = |s: &str| format!("{s}@{SHA_A}");
    let cases: Vec<(String, &str, &str)> = vec![
        (
            "example.com/foo/image:latest".into(),
            "example.com/foo",
            "example.com/path/",
        ),
        (d("example.com/foo"), "example.com/foo", "example.com"),
        ("example.com:5000/image:latest".into(), "example.com", ""),
        (
            "example.com:5000/image:latest".into(),
            "example.com",
            "example.com:5000",
        ),
        (
            "example.com/foo/image:latest".into(),
            "example.com//foo",
            "example.com/path",
        ),
        ("example.com/image:latest".into(), "image", "anotherimage"),
        (
            "example.com/foo/image:latest".into(),
            "example.com/foo/",
            "example.com",
        ),
        (
            "example.com/foo/image".into(),
            "example.com/f",
            "example.com/foo",
        ),
        (
            "example.com/foo:latest".into(),
            "example.com/f",
            "example.com/foo",
        ),
        (d("example.com/foo"), "example.com/f", "example.com/foo"),
        (
            "docker.io/library/image".into(),
            "example.com",
            "example.com",
        ),
        ("docker.io/library/image".into(), "*.com", "example.com"),
        (
            "foo.docker.io/library/image".into(),
            "*.example.com",
            "example.com/image",
        ),
        (
            "foo.docker.io/library/image".into(),
            "*.docker.com",
            "example.com/image",
        ),
    ];
    for (input, prefix, location) in cases {
        assert!(
            rewrite_reference(&input, prefix, location).is_err(),
            "{input} {prefix} {location}"
        );
    }
}

// ---- upstream TestPullSourcesFromReference (our TOML, same registries) ----

const PULL_SOURCES: &str = r#"
[[registry]]
prefix = "registry-a.com/foo"
location = "registry-a.com/bar"
mirror = [{ location = "mirror-1.registry-a.com" }, { location = "mirror-2.registry-a.com", insecure = true }]

[[registry]]
prefix = "registry-b.com/foo"
location = "registry-b.com/bar"
mirror-by-digest-only = true
mirror = [{ location = "mirror-1.registry-b.com" }, { location = "mirror-2.registry-b.com" }]

[[registry]]
prefix = "registry-a.com/baz"
location = "registry-a.com/bar"
mirror = [{ location = "mirror-1.registry-a.com" }, { location = "mirror-2.registry-a.com", insecure = true }]

[[registry]]
prefix = "registry-b.com/baz"
location = "registry-b.com/bar"
mirror = [
  { location = "mirror-1.registry-b.com", pull-from-mirror = "digest-only" },
  { location = "mirror-2.registry-b.com", pull-from-mirror = "digest-only" },
]

[[registry]]
prefix = "registry-c.com/baz"
location = "registry-c.com/bar"
mirror = [{ location = "mirror-1.registry-c.com" }, { location = "mirror-2.registry-c.com", pull-from-mirror = "digest-only" }]

[[registry]]
prefix = "registry-d.com/baz"
location = "registry-d.com/bar"
mirror-by-digest-only = true
mirror = [{ location = "mirror-1.registry-d.com" }, { location = "mirror-2.registry-d.com" }]

[[registry]]
prefix = "registry-e.com/baz"
location = "registry-e.com/bar"
mirror = [
  { location = "mirror-1.registry-e.com", pull-from-mirror = "tag-only" },
  { location = "mirror-2.registry-e.com", pull-from-mirror = "tag-only" },
]

[[registry]]
prefix = "registry-f.com/baz"
location = "registry-f.com/bar"
mirror = [{ location = "mirror-1.registry-f.com" }, { location = "mirror-2.registry-f.com", pull-from-mirror = "tag-only" }]

[[registry]]
prefix = "registry-g.com/baz"
location = "registry-g.com/bar"
mirror = [
  { location = "mirror-1.registry-g.com", pull-from-mirror = "digest-only" },
  { location = "mirror-2.registry-g.com", pull-from-mirror = "tag-only" },
  { location = "mirror-3.registry-g.com" },
  { location = "mirror-4.registry-g.com", pull-from-mirror = "all" },
]
"#;

#[test]
fn pull_sources_follow_pull_from_mirror_and_mirror_by_digest_only() {
    let c = conf(PULL_SOURCES);
    assert_eq!(c.registries().len(), 9);
    type Case<'a> = (
        &'a str,
        &'a [&'a str],
        &'a [bool],
        &'a [&'a str],
        &'a [bool],
    );
    let cases: &[Case] = &[
        (
            "registry-a.com/foo",
            &[
                "mirror-1.registry-a.com",
                "mirror-2.registry-a.com",
                "registry-a.com/bar",
            ],
            &[false, true, false],
            &[
                "mirror-1.registry-a.com",
                "mirror-2.registry-a.com",
                "registry-a.com/bar",
            ],
            &[false, true, false],
        ),
        (
            "registry-b.com/foo",
            &[
                "mirror-1.registry-b.com",
                "mirror-2.registry-b.com",
                "registry-b.com/bar",
            ],
            &[false, false, false],
            &["registry-b.com/bar"],
            &[false],
        ),
        (
            "registry-a.com/baz",
            &[
                "mirror-1.registry-a.com",
                "mirror-2.registry-a.com",
                "registry-a.com/bar",
            ],
            &[false, true, false],
            &[
                "mirror-1.registry-a.com",
                "mirror-2.registry-a.com",
                "registry-a.com/bar",
            ],
            &[false, true, false],
        ),
        (
            "registry-b.com/baz",
            &[
                "mirror-1.registry-b.com",
                "mirror-2.registry-b.com",
                "registry-b.com/bar",
            ],
            &[false, false, false],
            &["registry-b.com/bar"],
            &[false],
        ),
        (
            "registry-c.com/baz",
            &[
                "mirror-1.registry-c.com",
                "mirror-2.registry-c.com",
                "registry-c.com/bar",
            ],
            &[false, false, false],
            &["mirror-1.registry-c.com", "registry-c.com/bar"],
            &[false, false],
        ),
        (
            "registry-d.com/baz",
            &[
                "mirror-1.registry-d.com",
                "mirror-2.registry-d.com",
                "registry-d.com/bar",
            ],
            &[false, false, false],
            &["registry-d.com/bar"],
            &[false],
        ),
        (
            "registry-e.com/baz",
            &["registry-e.com/bar"],
            &[false],
            &[
                "mirror-1.registry-e.com",
                "mirror-2.registry-e.com",
                "registry-e.com/bar",
            ],
            &[false, false, false],
        ),
        (
            "registry-f.com/baz",
            &["mirror-1.registry-f.com", "registry-f.com/bar"],
            &[false, false],
            &[
                "mirror-1.registry-f.com",
                "mirror-2.registry-f.com",
                "registry-f.com/bar",
            ],
            &[false, false, false],
        ),
        (
            "registry-g.com/baz",
            &[
                "mirror-1.registry-g.com",
                "mirror-3.registry-g.com",
                "mirror-4.registry-g.com",
                "registry-g.com/bar",
            ],
            &[false, false, false, false],
            &[
                "mirror-2.registry-g.com",
                "mirror-3.registry-g.com",
                "mirror-4.registry-g.com",
                "registry-g.com/bar",
            ],
            &[false, false, false, false],
        ),
    ];
    for (prefix, digest_locs, digest_insecure, tag_locs, tag_insecure) in cases {
        for (suffix, locs, insecure) in [
            (format!("@{SHA_A}"), digest_locs, digest_insecure),
            (":aaa".to_owned(), tag_locs, tag_insecure),
        ] {
            let e = endpoints(&c, &format!("{prefix}/image{suffix}"));
            let want: Vec<String> = locs.iter().map(|l| format!("{l}/image{suffix}")).collect();
            assert_eq!(physical(&e), want, "{prefix} {suffix}");
            let got_insecure: Vec<bool> =
                e.iter().map(|e| e.skip_verify && e.http_fallback).collect();
            assert_eq!(&got_insecure, insecure, "{prefix} {suffix}");
            let mirrors: Vec<bool> = e.iter().map(|e| e.is_mirror).collect();
            let mut want_mirrors = vec![true; locs.len() - 1];
            want_mirrors.push(false);
            assert_eq!(mirrors, want_mirrors);
        }
    }
}

// ---- upstream TestInvalidMirrorConfig (our TOML) ----

#[test]
fn invalid_mirror_settings_are_errors() {
    let e = err(r#"
[[registry]]
prefix = "registry-a.com/foo"
location = "registry-a.com/bar"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "mirror-1.registry-a.com"
"#);
    assert!(
        e.contains(
            "pull-from-mirror must not be set for a non-mirror registry \"registry-a.com/foo\""
        ),
        "{e}"
    );
    assert!(e.contains("[[registry]] #1 (line 2)"), "{e}");

    let e = err(r#"
[[registry]]
prefix = "registry-a.com/foo"
location = "registry-a.com/bar"
mirror-by-digest-only = true
[[registry.mirror]]
pull-from-mirror = "digest-only"
location = "mirror-1.registry-a.com"
"#);
    assert!(
        e.contains("mirror-by-digest-only") && e.contains("\"mirror-1.registry-a.com\""),
        "{e}"
    );
    assert!(e.contains("[[registry.mirror]] #1"), "{e}");

    let e = err(r#"
[[registry]]
prefix = "registry-a.com/foo"
location = "registry-a.com/bar"
[[registry.mirror]]
location = "mirror-0.registry-a.com"
[[registry.mirror]]
pull-from-mirror = "notvalid"
location = "mirror-1.registry-a.com"
"#);
    assert!(
        e.contains(
            "unsupported pull-from-mirror value \"notvalid\" for mirror \"mirror-1.registry-a.com\""
        ),
        "{e}"
    );
    assert!(e.contains("[[registry.mirror]] #2"), "{e}");
}

// ---- upstream TestInvalidV2Configs (our TOML) ----

#[test]
fn conflicting_settings_for_one_location_are_errors() {
    for (what, second) in [
        ("insecure", "insecure = true"),
        ("blocked", "blocked = true"),
    ] {
        let e = err(&format!(
            r#"
[[registry]]
location = "registry.com"
[[registry.mirror]]
location = "mirror-1.registry.com"

[[registry]]
prefix = "registry.com/special"
location = "registry.com"
{second}
"#
        ));
        assert!(
            e.contains(&format!(
                "registry \"registry.com\" is defined multiple times with conflicting \"{what}\""
            )),
            "{e}"
        );
        assert!(
            e.starts_with("test.conf: [[registry]] #1 (line 2) location=\"registry.com\""),
            "{e}"
        );
        assert!(e.contains("[[registry]] #2 (line 7)"), "{e}");
    }
}

#[test]
fn proxy_settings_on_a_shared_location_always_conflict_as_upstream() {
    // Upstream compares the parsed proxy URLs by pointer: equal URLs still conflict.
    let e = err(r#"
[[registry]]
location = "registry.com"
proxy = "http://proxy.example:3128"
[[registry]]
prefix = "registry.com/x"
location = "registry.com"
proxy = "http://proxy.example:3128"
"#);
    assert!(e.contains("conflicting \"proxy\""), "{e}");
    // One entry with a proxy is fine.
    let c =
        conf("[[registry]]\nlocation = \"registry.com\"\nproxy = \"socks5://p.example:1080\"\n");
    let e = endpoints(&c, "registry.com/app:1");
    assert_eq!(e[0].proxy.as_deref(), Some("socks5://p.example:1080"));
    let e = err("[[registry]]\nlocation = \"registry.com\"\nproxy = \"ftp://p.example\"\n");
    assert!(e.contains("proxy URL scheme \"ftp\""), "{e}");
}

#[test]
fn missing_locations_and_bad_prefixes_are_errors() {
    let e = err(r#"
[[registry]]
location = "registry-b.com"
[[registry.mirror]]
location = "mirror-b.com"
[[registry.mirror]]
"#);
    assert!(
        e.contains("mirror location is unset") && e.contains("[[registry.mirror]] #2"),
        "{e}"
    );

    let e = err(
        "[[registry]]\nlocation = \"registry.com:5000\"\nprefix = \"http://schema-is-invalid.com\"\n",
    );
    assert!(
        e.contains("invalid location \"http://schema-is-invalid.com\""),
        "{e}"
    );

    let e = err("[[registry]]\ninsecure = true\n");
    assert!(e.contains("both location and prefix are unset"), "{e}");

    let e = err("[[registry]]\nprefix = \"example.com/foo\"\n");
    assert!(e.contains("location is unset"), "{e}");

    for bad in ["*.example.com:5000", "*.example.com/ns", "*.example.com@x"] {
        let e = err(&format!("[[registry]]\nprefix = {bad:?}\n"));
        assert!(e.contains("wildcard prefix") && e.contains(bad), "{e}");
    }
}

#[test]
fn toml_errors_carry_line_and_column() {
    let e = err("[[registry]]\nlocation = \"r.com\"\ninsecure = \"yes\"\n");
    assert!(e.starts_with("test.conf: line 3, column 12:"), "{e}");
    let e = err("invalid\n");
    assert!(e.starts_with("test.conf: line 1"), "{e}");
    let e = err("[registry]\nlocation = \"r.com\"\n");
    assert!(e.contains("line 1"), "{e}");
}

// ---- upstream TestMixingV1andV2, TestV1BackwardsCompatibility (our TOML) ----

#[test]
fn mixing_v1_and_v2_is_an_error_even_with_empty_lists() {
    for text in [
        "unqualified-search-registries = [\"a.com\"]\n[registries.search]\nregistries = [\"a.com\"]\n",
        "unqualified-search-registries = []\n[registries.block]\nregistries = []\n",
        "[[registry]]\nlocation = \"b.com\"\n[registries.insecure]\nregistries = [\"b.com\"]\n",
        "short-name-mode = \"enforcing\"\n[registries.search]\nregistries = []\n",
    ] {
        let e = err(text);
        assert!(
            e.contains("mixing sysregistry v1/v2 is not supported"),
            "{text}: {e}"
        );
    }
    // An empty [registries.search] table without a `registries` key is not v1.
    conf("[registries.search]\n[[registry]]\nlocation = \"b.com\"\n");
    // Nor is an empty short-name-mode v2.
    conf("short-name-mode = \"\"\n[registries.search]\nregistries = [\"a.com\"]\n");
}

#[test]
fn v1_is_converted_blocked_then_insecure_one_entry_per_location() {
    let c = conf(
        r#"
[registries.search]
registries = ["registry-a.com////", "registry-c.com", "registry-d.com"]
[registries.block]
registries = ["registry-b.com"]
[registries.insecure]
registries = ["registry-b.com////", "registry-d.com", "registry-e.com", "registry-a.com"]
"#,
    );
    assert_eq!(c.registries().len(), 4);
    assert_eq!(
        c.unqualified_search_registries(),
        ["registry-a.com", "registry-c.com", "registry-d.com"]
    );
    let b = c
        .find_registry("registry-b.com/bar/foo/barfoo:latest")
        .unwrap();
    assert!(b.insecure && b.blocked);
    assert!(b.origin.contains("[registries.block]"), "{}", b.origin);
    assert!(c.find_registry("registry-e.com/x").unwrap().insecure);
    assert!(matches!(
        c.resolve(&r("registry-b.com/app")),
        Resolution::Blocked { .. }
    ));

    for (table, extra) in [("search", ""), ("block", ""), ("insecure", "")] {
        let text = format!(
            "[registries.{table}]\nregistries = [\"ok.com\", \"http://schema-is-invalid.com\"{extra}]\n"
        );
        let e = err(&text);
        assert!(e.contains("http://schema-is-invalid.com"), "{table}: {e}");
    }
}

#[test]
fn drop_ins_must_be_v2() {
    let e = RegistriesConf::parse_drop_in(
        "10-x.conf",
        "[registries.block]\nregistries = [\"a.com\"]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("v2 format"), "{e}");
}

// ---- short names and search registries (upstream TestFindUnqualifiedSearchRegistries,
// TestGetShortNameMode, shortnames_test.go) ----

#[test]
fn search_registries_short_name_mode_and_aliases_are_validated() {
    let e = err("unqualified-search-registries = [\"registry-a.com/namespace-is-forbidden\"]\n");
    assert!(e.contains("unqualified-search-registries[0]"), "{e}");
    let c = conf("unqualified-search-registries = [\"registry-a.com/\", \"localhost:5000\"]\n");
    assert_eq!(
        c.unqualified_search_registries(),
        ["registry-a.com", "localhost:5000"]
    );

    let e = err("short-name-mode = \"invalid\"\n");
    assert!(e.contains("short-name-mode \"invalid\""), "{e}");
    for mode in ["enforcing", "permissive", "disabled", ""] {
        conf(&format!("short-name-mode = {mode:?}\n"));
    }

    conf(
        "[aliases]\ndocker = \"docker.io/library/foo\"\n\"quay/foo\" = \"quay.io/library/foo\"\nempty = \"\"\n",
    );
    let e = err("[aliases]\nimage1 = \"quay.io/repo/image:1\"\nimage2 = \"image:1\"\n");
    assert!(
        e.contains("\"quay.io/repo/image:1\": must not contain tag"),
        "{e}"
    );
    assert!(e.contains("\"image:1\": must not contain tag"), "{e}");
    let e = err("[aliases]\n\"example.com/foo\" = \"example.com/foo\"\n");
    assert!(e.contains("must not contain registry"), "{e}");
    let e = err("[aliases]\nfoo = \"library/foo\"\n");
    assert!(e.contains("must contain registry"), "{e}");
    let e = err(&format!("[aliases]\nfoo = \"quay.io/foo@{SHA_A}\"\n"));
    assert!(e.contains("must not contain digest"), "{e}");
}

// ---- upstream TestFindRegistry (our TOML; drop-in overrides are in tests/) ----

const FIND: &str = r#"
[[registry]]
location = "registry.com:5000"
prefix = "simple-prefix.com"

[[registry]]
location = "another-registry.com:5000"
prefix = "complex-prefix.com:4000/with/path"

[[registry]]
location = "registry.com:5000"
prefix = "another-registry.com"

[[registry]]
location = "no-prefix.com"

[[registry]]
location = "empty-prefix.com"
prefix = ""

[[registry]]
location = "subdomain-prefix.com"
prefix = "*.so.simple-prefix.com"

[[registry]]
location = "subdomain-prefix-2.com"
prefix = "*.simple-prefix.com"

[[registry]]
location = "subdomain-prefix-4.com"
prefix = "*.bar.docker.io"

[[registry]]
location = "subdomain-prefix-2.com"
prefix = "*.docker.io"

[[registry]]
location = "subdomain-prefix-5.com"
prefix = "foo.bar.example.com:5000"

[[registry]]
location = "subdomain-prefix-3.com"
prefix = "*.bar.example.com"

[[registry]]
prefix = "*.internal.registry.com"
"#;

#[test]
fn find_registry_takes_the_longest_matching_prefix() {
    let c = conf(FIND);
    let loc = |name: &str| c.find_registry(name).map(|r| r.location.clone());
    let pre = |name: &str| c.find_registry(name).map(|r| r.prefix.clone());
    // (name, the prefix of the registry entry it finds)
    for (name, prefix) in [
        ("simple-prefix.com/foo/bar:latest", "simple-prefix.com"),
        (
            "complex-prefix.com:4000/with/path/and/beyond:tag",
            "complex-prefix.com:4000/with/path",
        ),
        ("no-prefix.com/foo:tag", "no-prefix.com"),
        ("empty-prefix.com/foo:tag", "empty-prefix.com"),
    ] {
        assert_eq!(pre(name).as_deref(), Some(prefix), "{name}");
    }
    // (name, the location of the registry entry it finds)
    for (name, location) in [
        ("simple-prefix.com/foo/bar:latest", "registry.com:5000"),
        ("not.so.simple-prefix.com/", "subdomain-prefix.com"),
        ("not.quite.simple-prefix.com/", "subdomain-prefix-2.com"),
        (
            "not.quite.simple-prefix.com:5000/with/path/and/beyond:tag",
            "subdomain-prefix-2.com",
        ),
        (
            "foo.docker.io:5000/omg/wtf/bbq:foo",
            "subdomain-prefix-2.com",
        ),
        (
            "foo.bar.docker.io:5000/omg/wtf/bbq:foo",
            "subdomain-prefix-4.com",
        ),
        (
            "foo.bar.example.com:5000/omg/wtf/bbq:foo",
            "subdomain-prefix-5.com",
        ),
        (
            "complex-prefix.com:4000/with/path/and/beyond:tag",
            "another-registry.com:5000",
        ),
        ("empty-prefix.com/foo:tag", "empty-prefix.com"),
    ] {
        assert_eq!(loc(name).as_deref(), Some(location), "{name}");
    }
    assert!(c.find_registry("simple-prefix.com/").is_some());
    assert!(c.find_registry("simple-prefix.com").is_some());
    assert!(c.find_registry("simple-prefix.comx").is_none());
    // Sorted by prefix, as upstream keeps them.
    let prefixes: Vec<&str> = c.registries().iter().map(|r| r.prefix.as_str()).collect();
    let mut sorted = prefixes.clone();
    sorted.sort_unstable();
    assert_eq!(prefixes, sorted);
}

#[test]
fn the_first_entry_of_a_prefix_wins_within_a_file() {
    let c = conf(
        "[[registry]]\nprefix = \"r.com\"\nlocation = \"first.com\"\n[[registry]]\nprefix = \"r.com\"\nlocation = \"second.com\"\n",
    );
    assert_eq!(c.registries().len(), 1);
    assert_eq!(c.registries()[0].location, "first.com");
    // containers/image ignores the second silently; pullcheck says which entry is unused.
    assert_eq!(c.shadowed.len(), 1);
    let (prefix, ignored, kept) = &c.shadowed[0];
    assert_eq!(prefix, "r.com");
    assert_eq!(ignored, "test.conf:4 [[registry]] #2");
    assert_eq!(kept, "test.conf:1 [[registry]] #1");
    assert_eq!(c.warnings().len(), 1);
    assert!(
        c.warnings()[0]
            .starts_with("registries.conf test.conf:4 [[registry]] #2 prefix=\"r.com\" ")
    );
}

#[test]
fn a_drop_in_replacing_a_repeated_prefix_leaves_no_unused_entry() {
    let mut c = conf(
        "[[registry]]\nprefix = \"r.com\"\nlocation = \"first.com\"\n[[registry]]\nprefix = \"r.com\"\nlocation = \"second.com\"\n",
    );
    c.merge_drop_in(
        "10.conf",
        "[[registry]]\nprefix = \"r.com\"\nlocation = \"third.com\"\n",
    )
    .unwrap();
    assert_eq!(c.registries()[0].location, "third.com");
    assert!(c.shadowed.is_empty());
    assert!(c.warnings().is_empty());
}

#[test]
fn a_location_with_a_digest_is_accepted_and_its_images_fail_to_resolve() {
    // containers/image v5.23.1: parseLocation checks only the scheme, so the file loads;
    // rewriteReference then fails to parse `LOCATION@DIGEST:TAG` and the pull fails.
    let c = conf(&format!(
        "[[registry]]\nprefix = \"example.com/foo\"\nlocation = \"mirror.com/foo@{SHA_A}\"\n"
    ));
    assert_eq!(c.registries().len(), 1);
    for image in [
        "example.com/foo:1".to_owned(),
        format!("example.com/foo@{SHA_A}"),
    ] {
        assert!(
            matches!(c.resolve(&r(&image)), Resolution::Unresolvable { .. }),
            "{image}"
        );
    }
}

#[test]
fn conflicts_are_found_among_many_entries_of_one_location() {
    // The first entry that conflicts is named with the first entry it conflicts with,
    // as upstream's pairwise loop finds them.
    let mut text = String::new();
    for i in 0..2000 {
        text.push_str(&format!(
            "[[registry]]\nprefix = \"p{i}.com\"\nlocation = \"m.com\"\n"
        ));
    }
    text.push_str("[[registry]]\nprefix = \"q.com\"\nlocation = \"m.com\"\nblocked = true\n");
    let e = err(&text);
    assert!(
        e.starts_with("test.conf: [[registry]] #1 (line 1) prefix=\"p0.com\" location=\"m.com\": registry \"m.com\" is defined multiple times with conflicting \"blocked\" settings (also in [[registry]] #2001 (line 6001)"),
        "{e}"
    );
    // Checked first, pair by pair: `insecure` before `blocked`.
    text.push_str(
        "[[registry]]\nprefix = \"s.com\"\nlocation = \"m.com\"\ninsecure = true\nblocked = true\n",
    );
    let e = err(&text);
    assert!(
        e.contains("conflicting \"blocked\" settings (also in [[registry]] #2001 "),
        "{e}"
    );
    let text = text.replace("blocked = true\n", "");
    let e = err(&text);
    assert!(
        e.contains("conflicting \"insecure\" settings (also in [[registry]] #2002 "),
        "{e}"
    );
}

// ---- resolution: what CRI-O asks ----

#[test]
fn mirrors_come_first_with_rewritten_paths_then_the_location() {
    let c = conf(
        r#"
[[registry]]
prefix = "docker.io/library"
location = "docker.io/library"
[[registry.mirror]]
location = "mirror.example.com/hub/library"
[[registry.mirror]]
location = "10.0.0.5:5000/lib"
insecure = true
"#,
    );
    let e = endpoints(&c, "alpine:3.20");
    assert_eq!(
        e.iter().map(Endpoint::manifest_url).collect::<Vec<_>>(),
        [
            "https://mirror.example.com/v2/hub/library/alpine/manifests/3.20",
            "https://10.0.0.5:5000/v2/lib/alpine/manifests/3.20",
            "https://registry-1.docker.io/v2/library/alpine/manifests/3.20",
        ]
    );
    assert!(e[1].http_fallback && e[1].skip_verify);
    assert_eq!(
        e[0].rule,
        "registries.conf test.conf:2 [[registry]] #1 prefix=\"docker.io/library\" mirror 1 location=\"mirror.example.com/hub/library\""
    );
    assert!(
        e[2].rule
            .ends_with("location=\"docker.io/library\" (primary)"),
        "{}",
        e[2].rule
    );
    // Not matched by the prefix: the image's own registry.
    let e = endpoints(&c, "quay.io/org/app:1");
    assert_eq!(physical(&e), ["quay.io/org/app:1"]);
    assert!(
        e[0].rule
            .contains("no [[registry]] prefix matches quay.io/org/app"),
        "{}",
        e[0].rule
    );
    // A name-only reference asks for latest.
    assert_eq!(endpoints(&c, "alpine")[0].reference, "latest");
}

#[test]
fn credentials_follow_the_domain_of_each_endpoint() {
    let c = conf(
        r#"
[[registry]]
prefix = "quay.io/org"
location = "quay.io/org"
[[registry.mirror]]
location = "quay.io/mirror-org"
[[registry.mirror]]
location = "mirror.example.com/quay/org"
"#,
    );
    let e = endpoints(&c, "quay.io/org/app:1");
    assert_eq!(e.len(), 3);
    // Same domain: the pull secrets for quay.io are sent.
    assert_eq!(e[0].credentials.lookup_host.as_deref(), Some("quay.io"));
    assert!(e[0].credentials.pull_secrets);
    // Another domain: CRI-O drops them and looks up the mirror's own host.
    assert_eq!(
        e[1].credentials.lookup_host.as_deref(),
        Some("mirror.example.com")
    );
    assert!(!e[1].credentials.pull_secrets);
    assert!(
        e[1].credentials.rule.contains("newPullClient"),
        "{}",
        e[1].credentials.rule
    );
    assert!(e[2].credentials.pull_secrets);
}

#[test]
fn blocked_is_checked_per_endpoint() {
    let c = conf(
        r#"
[[registry]]
location = "blocked.example.com"
blocked = true

[[registry]]
prefix = "hub.example.com"
location = "hub.example.com"
blocked = true
[[registry.mirror]]
location = "mirror.example.com"

[[registry]]
prefix = "rewritten.example.com"
location = "blocked.example.com/elsewhere"
"#,
    );
    // No mirrors: every endpoint is blocked, so the pull is refused.
    match c.resolve(&r("blocked.example.com/app:1")) {
        Resolution::Blocked { rule } => {
            assert_eq!(
                rule,
                "registries.conf test.conf:2 [[registry]] #1 prefix=\"blocked.example.com\" blocked = true"
            );
        }
        other => panic!("{other:?}"),
    }
    // A blocked registry's mirror is still asked; the primary is marked blocked.
    let e = endpoints(&c, "hub.example.com/app:1");
    assert_eq!(
        physical(&e),
        ["mirror.example.com/app:1", "hub.example.com/app:1"]
    );
    assert!(e[0].blocked.is_none());
    assert!(
        e[1].blocked
            .as_deref()
            .is_some_and(|b| b.contains("prefix=\"hub.example.com\""))
    );
    // A location rewritten into a blocked registry is blocked.
    assert!(matches!(
        c.resolve(&r("rewritten.example.com/app:1")),
        Resolution::Blocked { .. }
    ));
}

#[test]
fn wildcard_registries_rewrite_only_the_host() {
    let c = conf(
        r#"
[[registry]]
prefix = "*.internal.example"
location = "proxy.example.com/internal"

[[registry]]
prefix = "*.passthrough.example"
[[registry.mirror]]
location = "cache.example.com"
"#,
    );
    assert_eq!(
        physical(&endpoints(&c, "a.b.internal.example/team/app:1")),
        ["proxy.example.com/internal/team/app:1"]
    );
    // Empty location: the primary is the reference itself; the mirror gets the host part
    // replaced.
    assert_eq!(
        physical(&endpoints(&c, "x.passthrough.example:5000/app:1")),
        [
            "cache.example.com:5000/app:1",
            "x.passthrough.example:5000/app:1"
        ]
    );
    // The bare domain is not matched.
    assert_eq!(
        physical(&endpoints(&c, "internal.example/app:1")),
        ["internal.example/app:1"]
    );
}

#[test]
fn a_rewrite_that_does_not_parse_makes_the_pull_fail() {
    let c = conf("[[registry]]\nprefix = \"example.com/foo\"\nlocation = \"example.com\"\n");
    match c.resolve(&r(&format!("example.com/foo@{SHA_A}"))) {
        Resolution::Unresolvable { rule, reason } => {
            assert!(rule.contains("prefix=\"example.com/foo\""), "{rule}");
            assert!(reason.contains("example.com@sha256"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reference_with_tag_and_digest_is_pulled_by_digest() {
    let c = conf(
        "[[registry]]\nlocation = \"r.example.com\"\n[[registry.mirror]]\nlocation = \"m.example.com\"\npull-from-mirror = \"digest-only\"\n",
    );
    let e = endpoints(&c, &format!("r.example.com/app:1.0@{SHA_A}"));
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].reference, SHA_A);
}

#[test]
fn merge_replaces_by_prefix_and_search_only_when_set() {
    let mut c = conf(
        "unqualified-search-registries = [\"a.com\"]\n[[registry]]\nlocation = \"base.com\"\ninsecure = true\n[[registry]]\nlocation = \"keep.com\"\n",
    );
    c.merge_drop_in(
        "10.conf",
        "[[registry]]\nlocation = \"base.com\"\nblocked = true\n",
    )
    .unwrap();
    assert_eq!(c.unqualified_search_registries(), ["a.com"]);
    let base = c.find_registry("base.com/x").unwrap();
    assert!(base.blocked && !base.insecure);
    assert!(base.origin.starts_with("10.conf:1"), "{}", base.origin);
    c.merge_drop_in("20.conf", "unqualified-search-registries = []\n")
        .unwrap();
    assert!(c.unqualified_search_registries().is_empty());
    assert_eq!(c.registries().len(), 2);
    assert_eq!(c.files(), ["test.conf", "10.conf", "20.conf"]);
}

#[test]
fn unknown_keys_are_ignored_and_empty_files_are_empty() {
    let c = conf(
        "# nothing\nsomething-new = 1\n[[registry]]\nlocation = \"r.com\"\nfuture-key = \"x\"\n",
    );
    assert_eq!(c.registries().len(), 1);
    assert!(conf("").registries().is_empty());
}
