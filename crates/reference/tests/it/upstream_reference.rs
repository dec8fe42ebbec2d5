//! Table tests from distribution/reference `reference_test.go`
//! (github.com/distribution/reference, tests `TestReferenceParse`,
//! `TestWithNameFailure`, `TestDomainAndPath`, `TestSerialization`,
//! `TestWithTag`, `TestWithDigest`, `TestParseNamed`), in its current form
//! where the 255-character limit applies to the path without the domain.
//! The inputs and expected values are upstream's; the test code is ours.

use pullcheck_reference::{Reference, ReferenceErrorKind as Kind};

const FF64: &str = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

/// What upstream's `Parse` gives: `Ok(name, domain, tag, digest)` or an error kind.
enum Want {
    Ok {
        name: String,
        domain: &'static str,
        tag: Option<&'static str>,
        digest: Option<String>,
    },
    Err(Kind),
}

fn ok(name: &str, domain: &'static str, tag: Option<&'static str>, digest: Option<String>) -> Want {
    Want::Ok {
        name: name.to_owned(),
        domain,
        tag,
        digest,
    }
}

fn sha256_ff() -> Option<String> {
    Some(format!("sha256:{FF64}"))
}

/// `TestReferenceParse`: upstream `Parse` (not normalised).
fn reference_parse_table() -> Vec<(String, Want)> {
    use Want::Err;
    let s = |x: &str| x.to_owned();
    vec![
        (s("test_com"), ok("test_com", "", None, None)),
        (s("test.com:tag"), ok("test.com", "", Some("tag"), None)),
        (s("test.com:5000"), ok("test.com", "", Some("5000"), None)),
        (
            s("test.com/repo:tag"),
            ok("test.com/repo", "test.com", Some("tag"), None),
        ),
        (
            s("test:5000/repo"),
            ok("test:5000/repo", "test:5000", None, None),
        ),
        (
            s("test:5000/repo:tag"),
            ok("test:5000/repo", "test:5000", Some("tag"), None),
        ),
        (
            format!("test:5000/repo@sha256:{FF64}"),
            ok("test:5000/repo", "test:5000", None, sha256_ff()),
        ),
        (
            format!("test:5000/repo:tag@sha256:{FF64}"),
            ok("test:5000/repo", "test:5000", Some("tag"), sha256_ff()),
        ),
        (s(""), Err(Kind::Empty)),
        (s(":justtag"), Err(Kind::InvalidFormat)),
        (format!("@sha256:{FF64}"), Err(Kind::InvalidFormat)),
        // ErrDigestInvalidLength
        (
            s("repo@sha256:ffffffffffffffffffffffffffffffffff"),
            Err(Kind::DigestInvalid),
        ),
        // ErrDigestUnsupported
        (
            format!("validname@invaliddigest:{FF64}"),
            Err(Kind::DigestInvalid),
        ),
        (s("Uppercase:tag"), Err(Kind::Uppercase)),
        (s("test:5000/Uppercase/lowercase:tag"), Err(Kind::Uppercase)),
        (
            s("lowercase:Uppercase"),
            ok("lowercase", "", Some("Uppercase"), None),
        ),
        (
            format!("domain/{}:tag", "a".repeat(256)),
            Err(Kind::NameTooLong),
        ),
        (
            format!("{}a:tag-puts-this-over-max", "a/".repeat(127)),
            Want::Ok {
                name: format!("{}a", "a/".repeat(127)),
                domain: "a",
                tag: Some("tag-puts-this-over-max"),
                digest: None,
            },
        ),
        (s("aa/asdf$$^/aa"), Err(Kind::InvalidFormat)),
        (
            s("sub-dom1.foo.com/bar/baz/quux"),
            ok(
                "sub-dom1.foo.com/bar/baz/quux",
                "sub-dom1.foo.com",
                None,
                None,
            ),
        ),
        (
            s("sub-dom1.foo.com/bar/baz/quux:some-long-tag"),
            ok(
                "sub-dom1.foo.com/bar/baz/quux",
                "sub-dom1.foo.com",
                Some("some-long-tag"),
                None,
            ),
        ),
        (
            s("b.gcr.io/test.example.com/my-app:test.example.com"),
            ok(
                "b.gcr.io/test.example.com/my-app",
                "b.gcr.io",
                Some("test.example.com"),
                None,
            ),
        ),
        // ☃.com in punycode
        (
            s("xn--n3h.com/myimage:xn--n3h.com"),
            ok(
                "xn--n3h.com/myimage",
                "xn--n3h.com",
                Some("xn--n3h.com"),
                None,
            ),
        ),
        // 🐳.com in punycode
        (
            format!(
                "xn--7o8h.com/myimage:xn--7o8h.com@sha512:{}",
                "f".repeat(128)
            ),
            ok(
                "xn--7o8h.com/myimage",
                "xn--7o8h.com",
                Some("xn--7o8h.com"),
                Some(format!("sha512:{}", "f".repeat(128))),
            ),
        ),
        (
            s("foo_bar.com:8080"),
            ok("foo_bar.com", "", Some("8080"), None),
        ),
        (
            s("foo/foo_bar.com:8080"),
            ok("foo/foo_bar.com", "foo", Some("8080"), None),
        ),
        (s("192.168.1.1"), ok("192.168.1.1", "", None, None)),
        (
            s("192.168.1.1:tag"),
            ok("192.168.1.1", "", Some("tag"), None),
        ),
        (
            s("192.168.1.1:5000"),
            ok("192.168.1.1", "", Some("5000"), None),
        ),
        (
            s("192.168.1.1/repo"),
            ok("192.168.1.1/repo", "192.168.1.1", None, None),
        ),
        (
            s("192.168.1.1:5000/repo"),
            ok("192.168.1.1:5000/repo", "192.168.1.1:5000", None, None),
        ),
        (
            s("192.168.1.1:5000/repo:5050"),
            ok(
                "192.168.1.1:5000/repo",
                "192.168.1.1:5000",
                Some("5050"),
                None,
            ),
        ),
        (s("[2001:db8::1]"), Err(Kind::InvalidFormat)),
        (s("[2001:db8::1]:5000"), Err(Kind::InvalidFormat)),
        (s("[2001:db8::1]:tag"), Err(Kind::InvalidFormat)),
        (
            s("[2001:db8::1]/repo"),
            ok("[2001:db8::1]/repo", "[2001:db8::1]", None, None),
        ),
        (
            s("[2001:db8:1:2:3:4:5:6]/repo:tag"),
            ok(
                "[2001:db8:1:2:3:4:5:6]/repo",
                "[2001:db8:1:2:3:4:5:6]",
                Some("tag"),
                None,
            ),
        ),
        (
            s("[2001:db8::1]:5000/repo"),
            ok("[2001:db8::1]:5000/repo", "[2001:db8::1]:5000", None, None),
        ),
        (
            s("[2001:db8::1]:5000/repo:tag"),
            ok(
                "[2001:db8::1]:5000/repo",
                "[2001:db8::1]:5000",
                Some("tag"),
                None,
            ),
        ),
        (
            format!("[2001:db8::1]:5000/repo@sha256:{FF64}"),
            ok(
                "[2001:db8::1]:5000/repo",
                "[2001:db8::1]:5000",
                None,
                sha256_ff(),
            ),
        ),
        (
            format!("[2001:db8::1]:5000/repo:tag@sha256:{FF64}"),
            ok(
                "[2001:db8::1]:5000/repo",
                "[2001:db8::1]:5000",
                Some("tag"),
                sha256_ff(),
            ),
        ),
        (
            s("[2001:db8::]:5000/repo"),
            ok("[2001:db8::]:5000/repo", "[2001:db8::]:5000", None, None),
        ),
        (
            s("[::1]:5000/repo"),
            ok("[::1]:5000/repo", "[::1]:5000", None, None),
        ),
        (s("[fe80::1%eth0]:5000/repo"), Err(Kind::InvalidFormat)),
        (
            s("[fe80::1%@invalidzone]:5000/repo"),
            Err(Kind::InvalidFormat),
        ),
        (
            format!("example.com/{}:tag", "a".repeat(255)),
            Want::Ok {
                name: format!("example.com/{}", "a".repeat(255)),
                domain: "example.com",
                tag: Some("tag"),
                digest: None,
            },
        ),
    ]
}

#[test]
fn reference_parse_table_matches_upstream() {
    let table = reference_parse_table();
    assert_eq!(table.len(), 46);
    for (input, want) in table {
        let got = Reference::parse(&input);
        match want {
            Want::Err(kind) => {
                let err = got.expect_err(&input);
                assert_eq!(err.kind(), kind, "{input}: {}", err.message());
            }
            Want::Ok {
                name,
                domain,
                tag,
                digest,
            } => {
                let r = got.unwrap_or_else(|e| panic!("{input}: {}", e.message()));
                // Upstream checks that String() gives the input back.
                assert_eq!(r.upstream_string(), input);
                assert_eq!(r.repository(), name, "{input}");
                assert_eq!(r.domain(), domain, "{input}");
                assert_eq!(r.tag(), tag, "{input}");
                assert_eq!(r.digest(), digest.as_deref(), "{input}");
            }
        }
    }
}

/// `TestWithNameFailure`: names that `WithName` refuses; `Parse` refuses them too.
#[test]
fn with_name_failures_are_refused() {
    let cases = [
        (String::new(), Kind::Empty),
        (":justtag".to_owned(), Kind::InvalidFormat),
        (format!("@sha256:{FF64}"), Kind::InvalidFormat),
        (
            format!("example.com/{}", "a".repeat(256)),
            Kind::NameTooLong,
        ),
        ("aa/asdf$$^/aa".to_owned(), Kind::InvalidFormat),
    ];
    for (input, kind) in cases {
        assert_eq!(
            Reference::parse(&input).map_err(|e| e.kind()),
            Err(kind),
            "{input}"
        );
    }
    // `validname@invaliddigest:…` is not a name for WithName; for Parse the
    // name is fine and the digest algorithm is unregistered.
    let input = format!("validname@invaliddigest:{FF64}");
    assert_eq!(
        Reference::parse(&input).map_err(|e| e.kind()),
        Err(Kind::DigestInvalid)
    );
}

/// An older upstream version counted the domain in the 255 limit and
/// rejected `a/…/a:tag` (257 characters, path 255); the current one, which
/// we follow, accepts it.
#[test]
fn length_limit_counts_the_path_only() {
    let input = format!("{}a:tag", "a/".repeat(128));
    let r = Reference::parse(&input).unwrap();
    assert_eq!((r.domain(), r.path().len()), ("a", 255));
    let input = format!("{}a:tag", "a/".repeat(129));
    assert_eq!(
        Reference::parse(&input).map_err(|e| e.kind()),
        Err(Kind::NameTooLong)
    );
}

/// `TestDomainAndPath`: how a bare name splits into domain and path.
#[test]
fn domain_and_path_of_names() {
    let cases = [
        ("test.com/foo", "test.com", "foo"),
        ("test_com/foo", "", "test_com/foo"),
        ("test:8080/foo", "test:8080", "foo"),
        ("test.com:8080/foo", "test.com:8080", "foo"),
        ("test-com:8080/foo", "test-com:8080", "foo"),
        ("xn--n3h.com:18080/foo", "xn--n3h.com:18080", "foo"),
    ];
    for (input, domain, path) in cases {
        let r = Reference::parse(input).unwrap_or_else(|e| panic!("{input}: {}", e.message()));
        assert_eq!((r.domain(), r.path()), (domain, path), "{input}");
    }
}

/// `TestSerialization`: the reference values (the JSON wrapping is Go's).
#[test]
fn serialization_values() {
    assert_eq!(Reference::parse("").map_err(|e| e.kind()), Err(Kind::Empty));
    let r = Reference::parse("example.com:8000/named").unwrap();
    assert_eq!(
        (r.repository().as_str(), r.tag(), r.digest()),
        ("example.com:8000/named", None, None)
    );
    let r = Reference::parse("example.com:8000/named:tagged").unwrap();
    assert_eq!(
        (r.repository().as_str(), r.tag()),
        ("example.com:8000/named", Some("tagged"))
    );
    let d = "sha256:1234567890098765432112345667890098765432112345667890098765432112";
    let r = Reference::parse(&format!("other.com/named@{d}")).unwrap();
    assert_eq!(
        (r.repository().as_str(), r.digest()),
        ("other.com/named", Some(d))
    );
}

/// `TestWithTag` / `TestWithDigest`: the combined strings. `WithDigest` only
/// checks the digest *pattern*, and upstream's examples use 37 hex digits,
/// which `Parse` (through go-digest) rejects for sha256; the others parse
/// back to the parts they were built from.
#[test]
fn with_tag_and_digest_combinations() {
    let tagged = [
        ("test.com/foo:tag", "test.com/foo", "tag"),
        ("foo:tag2", "foo", "tag2"),
        ("test.com:8000/foo:tag4", "test.com:8000/foo", "tag4"),
        ("test.com:8000/foo:TAG5", "test.com:8000/foo", "TAG5"),
    ];
    for (combined, name, tag) in tagged {
        let r = Reference::parse(combined).unwrap();
        assert_eq!((r.repository().as_str(), r.tag()), (name, Some(tag)));
        assert_eq!(r.upstream_string(), combined);
    }
    let short_digest = [
        "test.com:8000/foo:TAG5@sha256:1234567890098765432112345667890098765",
        "test.com/foo@sha256:1234567890098765432112345667890098765",
        "foo@sha256:1234567890098765432112345667890098765",
        "test.com:8000/foo@sha256:1234567890098765432112345667890098765",
        "test.com:8000/foo:latest@sha256:1234567890098765432112345667890098765",
    ];
    for combined in short_digest {
        let err = Reference::parse(combined).unwrap_err();
        assert_eq!(err.kind(), Kind::DigestInvalid, "{combined}");
        assert!(err.message().contains("needs 64"), "{}", err.message());
    }
}

/// `TestParseNamed`: `ParseNamed` accepts only inputs that are already
/// canonical, i.e. `ParseNormalizedNamed(s).String() == s`.
#[test]
fn parse_named_canonical_inputs() {
    let cases = [
        ("test.com/foo", Some(("test.com", "foo"))),
        ("test:8080/foo", Some(("test:8080", "foo"))),
        ("test_com/foo", None),
        ("test.com", None),
        ("foo", None),
        ("library/foo", None),
        ("docker.io/library/foo", Some(("docker.io", "library/foo"))),
        // Ambiguous: the parser adds "library/".
        ("docker.io/foo", None),
    ];
    for (input, want) in cases {
        let r = Reference::parse_normalized(input).unwrap();
        let canonical = r.upstream_string() == input;
        match want {
            Some((domain, path)) => {
                assert!(canonical, "{input} should be canonical");
                assert_eq!((r.domain(), r.path()), (domain, path));
            }
            None => assert!(!canonical, "{input} should not be canonical"),
        }
    }
}
