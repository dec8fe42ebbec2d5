//! Table tests from distribution/reference `regexp_test.go`
//! (github.com/distribution/reference, tests `TestDomainRegexp`,
//! `TestFullNameRegexp`, `TestReferenceRegexp`, `TestIdentifierRegexp`),
//! run against our hand-written matchers in `pullcheck_reference::grammar`.
//! The inputs and expected values are upstream's; the test code is ours.

use pullcheck_reference::grammar::{self, ReferenceMatch};

/// `TestDomainRegexp`: whether the whole input is `host[:port]`.
#[test]
fn domain_regexp() {
    let cases = [
        ("test.com", true),
        ("test.com:10304", true),
        ("test.com:http", false),
        ("localhost", true),
        ("localhost:8080", true),
        ("a", true),
        ("a.b", true),
        ("ab.cd.com", true),
        ("a-b.com", true),
        ("-ab.com", false),
        ("ab-.com", false),
        ("ab.c-om", true),
        ("ab.-com", false),
        ("ab.com-", false),
        ("0101.com", true),
        ("001a.com", true),
        ("b.gbc.io:443", true),
        ("b.gbc.io", true),
        ("xn--n3h.com", true), // ☃.com in punycode
        ("Asdf.com", true),    // upper case
        ("192.168.1.1:75050", true),
        ("192.168.1.1:750050", true), // no port range check in the grammar
        ("[fd00:1:2::3]:75050", true),
        ("[fd00:1:2::3]75050", false),
        ("[fd00:1:2::3]::75050", false),
        ("[fd00:1:2::3%eth0]:75050", false), // no zones
        ("[fd00123123123]:75050", true),     // no address check in the grammar
        ("[2001:0db8:85a3:0000:0000:8a2e:0370:7334]:75050", true),
        ("[2001:0db8:85a3:0000:0000:8a2e:0370:7334]:750505", true),
        ("fd00:1:2::3:75050", false), // IPv6 needs brackets
    ];
    assert_eq!(cases.len(), 30);
    for (input, want) in cases {
        assert_eq!(grammar::is_domain(input), want, "{input}");
    }
}

/// `TestFullNameRegexp`: `None` for no match, else `(domain, path)`.
#[test]
fn full_name_regexp() {
    let long = format!("{}a", "a/".repeat(128));
    let long_path = format!("{}a", "a/".repeat(127));
    let cases: Vec<(&str, Option<(&str, &str)>)> = vec![
        ("", None),
        ("short", Some(("", "short"))),
        ("simple/name", Some(("simple", "name"))),
        ("library/ubuntu", Some(("library", "ubuntu"))),
        ("docker/stevvooe/app", Some(("docker", "stevvooe/app"))),
        (
            "aa/aa/aa/aa/aa/aa/aa/aa/aa/bb/bb/bb/bb/bb/bb",
            Some(("aa", "aa/aa/aa/aa/aa/aa/aa/aa/bb/bb/bb/bb/bb/bb")),
        ),
        ("aa/aa/bb/bb/bb", Some(("aa", "aa/bb/bb/bb"))),
        ("a/a/a/a", Some(("a", "a/a/a"))),
        ("a/a/a/a/", None),
        ("a//a/a", None),
        ("a", Some(("", "a"))),
        ("a/aa", Some(("a", "aa"))),
        ("a/aa/a", Some(("a", "aa/a"))),
        ("foo.com", Some(("", "foo.com"))),
        ("foo.com/", None),
        ("foo.com:8080/bar", Some(("foo.com:8080", "bar"))),
        ("foo.com:http/bar", None),
        ("foo.com/bar", Some(("foo.com", "bar"))),
        ("foo.com/bar/baz", Some(("foo.com", "bar/baz"))),
        ("localhost:8080/bar", Some(("localhost:8080", "bar"))),
        (
            "sub-dom1.foo.com/bar/baz/quux",
            Some(("sub-dom1.foo.com", "bar/baz/quux")),
        ),
        ("blog.foo.com/bar/baz", Some(("blog.foo.com", "bar/baz"))),
        ("a^a", None),
        ("aa/asdf$$^/aa", None),
        ("asdf$$^/aa", None),
        ("aa-a/a", Some(("aa-a", "a"))),
        (long.as_str(), Some(("a", long_path.as_str()))),
        ("a-/a/a/a", None),
        ("foo.com/a-/a/a", None),
        ("-foo/bar", None),
        ("foo/bar-", None),
        ("foo-/bar", None),
        ("foo/-bar", None),
        ("_foo/bar", None),
        ("foo_bar", Some(("", "foo_bar"))),
        ("foo_bar.com", Some(("", "foo_bar.com"))),
        ("foo_bar.com:8080", None),
        ("foo_bar.com:8080/app", None),
        ("foo.com/foo_bar", Some(("foo.com", "foo_bar"))),
        ("____/____", None),
        ("_docker/_docker", None),
        ("docker_/docker_", None),
        (
            "b.gcr.io/test.example.com/my-app",
            Some(("b.gcr.io", "test.example.com/my-app")),
        ),
        ("xn--n3h.com/myimage", Some(("xn--n3h.com", "myimage"))),
        ("xn--7o8h.com/myimage", Some(("xn--7o8h.com", "myimage"))),
        (
            "example.com/xn--7o8h.com/myimage",
            Some(("example.com", "xn--7o8h.com/myimage")),
        ),
        (
            "example.com/some_separator__underscore/myimage",
            Some(("example.com", "some_separator__underscore/myimage")),
        ),
        ("example.com/__underscore/myimage", None),
        ("example.com/..dots/myimage", None),
        ("example.com/.dots/myimage", None),
        ("example.com/nodouble..dots/myimage", None),
        ("example.com/nodouble..dots/myimage", None),
        ("docker./docker", None),
        (".docker/docker", None),
        ("docker-/docker", None),
        ("-docker/docker", None),
        ("do..cker/docker", None),
        ("do__cker:8080/docker", None),
        ("do__cker/docker", Some(("", "do__cker/docker"))),
        (
            "b.gcr.io/test.example.com/my-app",
            Some(("b.gcr.io", "test.example.com/my-app")),
        ),
        (
            "registry.io/foo/project--id.module--name.ver---sion--name",
            Some((
                "registry.io",
                "foo/project--id.module--name.ver---sion--name",
            )),
        ),
        ("Asdf.com/foo/bar", Some(("Asdf.com", "foo/bar"))), // upper case host
        ("Foo/FarB", None),                                  // upper case path
    ];
    assert_eq!(cases.len(), 63);
    for (input, want) in cases {
        assert_eq!(grammar::split_name(input), want, "{input}");
    }
}

/// A match as (name, tag, digest).
type Parts<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

/// `TestReferenceRegexp`: `None` for no match, else (name, tag, digest).
#[test]
fn reference_regexp() {
    let d = "sha256:be178c0543eb17f5f3043021c9e5fcf30285e557a4fc309cce97ff9ca6182912";
    let cases: Vec<(String, Option<Parts<'_>>)> = vec![
        (
            "registry.com:8080/myapp:tag".to_owned(),
            Some(("registry.com:8080/myapp", Some("tag"), None)),
        ),
        (
            format!("registry.com:8080/myapp@{d}"),
            Some(("registry.com:8080/myapp", None, Some(d))),
        ),
        (
            format!("registry.com:8080/myapp:tag2@{d}"),
            Some(("registry.com:8080/myapp", Some("tag2"), Some(d))),
        ),
        (
            "registry.com:8080/myapp@sha256:badbadbadbad".to_owned(),
            None,
        ),
        ("registry.com:8080/myapp:invalid~tag".to_owned(), None),
        ("bad_hostname.com:8080/myapp:tag".to_owned(), None),
        // localhost is the name and 8080 the tag here
        (
            format!("localhost:8080@{d}"),
            Some(("localhost", Some("8080"), Some(d))),
        ),
        (
            format!("localhost:8080/name@{d}"),
            Some(("localhost:8080/name", None, Some(d))),
        ),
        (format!("localhost:http/name@{d}"), None),
        // localhost is a name without a host here
        (format!("localhost@{d}"), Some(("localhost", None, Some(d)))),
        ("registry.com:8080/myapp@bad".to_owned(), None),
        ("registry.com:8080/myapp@2bad".to_owned(), None),
    ];
    assert_eq!(cases.len(), 12);
    for (input, want) in cases {
        let got = grammar::match_reference(&input).map(|m: ReferenceMatch<'_>| {
            let name = if m.domain.is_empty() {
                m.path.to_owned()
            } else {
                format!("{}/{}", m.domain, m.path)
            };
            (name, m.tag, m.digest)
        });
        let want = want.map(|(name, tag, digest)| (name.to_owned(), tag, digest));
        assert_eq!(got, want, "{input}");
    }
}

/// `TestIdentifierRegexp`.
#[test]
fn identifier_regexp() {
    let cases = [
        (
            "da304e823d8ca2b9d863a3c897baeb852ba21ea9a9f1414736394ae7fcaf9821",
            true,
        ),
        (
            "7EC43B381E5AEFE6E04EFB0B3F0693FF2A4A50652D64AEC573905F2DB5889A1C",
            false,
        ),
        (
            "da304e823d8ca2b9d863a3c897baeb852ba21ea9a9f1414736394ae7fcaf",
            false,
        ),
        (
            "sha256:da304e823d8ca2b9d863a3c897baeb852ba21ea9a9f1414736394ae7fcaf9821",
            false,
        ),
        (
            "da304e823d8ca2b9d863a3c897baeb852ba21ea9a9f1414736394ae7fcaf98218482",
            false,
        ),
    ];
    for (input, want) in cases {
        assert_eq!(grammar::is_identifier(input), want, "{input}");
    }
}
