//! Unit tests. Tables marked "upstream" carry the values of containerd
//! `core/remotes/docker/config/hosts_test.go` (`TestParseHostFile`, `TestDefaultHosts`,
//! `TestHTTPFallback`) with our own TOML layout where a file is needed.

use super::*;

const SHA: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn r(s: &str) -> Reference {
    match Reference::parse_normalized(s) {
        Ok(r) => r,
        Err(e) => panic!("{s}: {}", e.message()),
    }
}

fn hosts(text: &str) -> Vec<HostConfig> {
    match parse_hosts_file(text, Path::new("")) {
        Ok(h) => h,
        Err(e) => panic!("{e}"),
    }
}

fn endpoints(dir: &HostsDir, reference: &str) -> Vec<Endpoint> {
    match dir.resolve(&r(reference)) {
        Resolution::Endpoints(e) => e,
        other => panic!("{reference}: {other:?}"),
    }
}

fn caps(pull: bool, resolve: bool, push: bool, referrers: bool) -> Capabilities {
    Capabilities {
        pull,
        resolve,
        push,
        referrers,
    }
}

const PULL: Capabilities = Capabilities {
    pull: true,
    resolve: false,
    push: false,
    referrers: false,
};

// ---- upstream TestParseHostFile ----

const PARSE_HOST_FILE: &str = r#"
server = "https://test-default.registry"
ca = "/etc/path/default"
[header]
  x-custom-1 = "custom header"

[host."https://mirror.registry"]
  capabilities = ["pull"]
  ca = "/etc/certs/mirror.pem"
  skip_verify = false
  [host."https://mirror.registry".header]
    x-custom-2 = ["value1", "value2"]

[host."https://mirror-bak.registry/us"]
  capabilities = ["pull"]
  skip_verify = true

[host."http://mirror.registry"]
  capabilities = ["pull"]

[host."https://test-1.registry"]
  capabilities = ["pull", "resolve", "push", "referrers"]
  ca = ["/etc/certs/test-1-ca.pem", "/etc/certs/special.pem"]
  client = [["/etc/certs/client.cert", "/etc/certs/client.key"],["/etc/certs/client.pem", ""]]

[host."https://test-2.registry"]
  client = "/etc/certs/client.pem"

[host."https://test-3.registry"]
  client = ["/etc/certs/client-1.pem", "/etc/certs/client-2.pem"]

[host."https://no-referrers.registry"]
  capabilities = ["pull", "resolve", "push"]
  client = ["/etc/certs/client-1.pem", "/etc/certs/client-2.pem"]

[host."https://noncompliantmirror.registry/v2/namespaceprefix"]
  capabilities = ["pull"]
  override_path = true

[host."https://noprefixnoncompliant.registry"]
  override_path = true

[host."https://onlyheader.registry".header]
  x-custom-1 = "justaheader"

[host."https://dial-timeout.registry"]
  dial_timeout = "3s"
"#;

#[test]
fn parse_host_file_matches_upstream() {
    let h = hosts(PARSE_HOST_FILE);
    let cert = |c: &str, k: Option<&str>| ClientCert {
        cert: PathBuf::from(c),
        key: k.map(PathBuf::from),
    };
    let all = Capabilities::ALL;
    let want: Vec<(&str, &str, &str, Capabilities)> = vec![
        ("https", "mirror.registry", "/v2", PULL),
        ("https", "mirror-bak.registry", "/us/v2", PULL),
        ("http", "mirror.registry", "/v2", PULL),
        ("https", "test-1.registry", "/v2", all),
        ("https", "test-2.registry", "/v2", all),
        ("https", "test-3.registry", "/v2", all),
        (
            "https",
            "no-referrers.registry",
            "/v2",
            caps(true, true, true, false),
        ),
        (
            "https",
            "noncompliantmirror.registry",
            "/v2/namespaceprefix",
            PULL,
        ),
        ("https", "noprefixnoncompliant.registry", "", all),
        ("https", "onlyheader.registry", "/v2", all),
        ("https", "dial-timeout.registry", "/v2", all),
        ("https", "test-default.registry", "/v2", all),
    ];
    assert_eq!(h.len(), want.len());
    for (got, (scheme, host, path, c)) in h.iter().zip(&want) {
        assert_eq!(
            (got.scheme.as_str(), got.host.as_str(), got.path.as_str()),
            (*scheme, *host, *path)
        );
        assert_eq!(got.capabilities, *c, "{host}");
    }
    assert_eq!(h[0].ca, Some(vec![PathBuf::from("/etc/certs/mirror.pem")]));
    assert_eq!(h[0].skip_verify, Some(false));
    assert_eq!(
        h[0].header,
        [(
            "x-custom-2".to_owned(),
            vec!["value1".to_owned(), "value2".to_owned()]
        )]
    );
    assert_eq!(h[1].skip_verify, Some(true));
    assert_eq!((h[2].ca.clone(), h[2].skip_verify), (None, None));
    assert_eq!(
        h[3].ca,
        Some(vec![
            PathBuf::from("/etc/certs/test-1-ca.pem"),
            PathBuf::from("/etc/certs/special.pem")
        ])
    );
    assert_eq!(
        h[3].client,
        [
            cert("/etc/certs/client.cert", Some("/etc/certs/client.key")),
            cert("/etc/certs/client.pem", None)
        ]
    );
    assert_eq!(h[4].client, [cert("/etc/certs/client.pem", None)]);
    assert_eq!(
        h[5].client,
        [
            cert("/etc/certs/client-1.pem", None),
            cert("/etc/certs/client-2.pem", None)
        ]
    );
    assert_eq!(
        h[9].header,
        [("x-custom-1".to_owned(), vec!["justaheader".to_owned()])]
    );
    assert_eq!(h[10].dial_timeout.as_deref(), Some("3s"));
    assert_eq!(h[11].ca, Some(vec![PathBuf::from("/etc/path/default")]));
    assert_eq!(
        h[11].header,
        [("x-custom-1".to_owned(), vec!["custom header".to_owned()])]
    );
}

#[test]
fn host_order_is_header_order_with_upstreams_quirks() {
    // Sub-table headers name their host; a repeated host is listed again only when
    // another host's header came in between (containerd getSortedHosts).
    let h = hosts(
        r#"
[host."https://b.example".header]
x = "1"
[host."https://a.example"]
capabilities = ["pull"]
[host."https://b.example"]
capabilities = ["pull"]
[host."https://c.example"]
[host."https://a.example".header]
y = "2"
"#,
    );
    let order: Vec<&str> = h.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(
        order,
        [
            "b.example",
            "a.example",
            "b.example",
            "c.example",
            "a.example",
            ""
        ]
    );
    // Inline tables have no header: containerd leaves such hosts out.
    let h = hosts(
        "[host]\n\"https://inline.example\" = { capabilities = [\"pull\"] }\n[host.\"https://real.example\"]\n",
    );
    let order: Vec<&str> = h.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(order, ["real.example", ""]);
}

#[test]
fn urls_get_https_and_v2_as_containerd_builds_them() {
    let h = hosts(
        r#"
server = "registry.example.com:5000"
[host."mirror.example.com"]
[host."http://10.0.0.5:5000/"]
[host."https://m.example.com/a/../b/"]
[host."https://m.example.com/v2"]
"#,
    );
    let got: Vec<(&str, &str, &str)> = h
        .iter()
        .map(|h| (h.scheme.as_str(), h.host.as_str(), h.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("https", "mirror.example.com", "/v2"),
            ("http", "10.0.0.5:5000", "//v2"),
            ("https", "m.example.com", "/b/v2"),
            ("https", "m.example.com", "/v2"),
            ("https", "registry.example.com:5000", "/v2"),
        ]
    );
}

#[test]
fn file_errors_that_make_containerd_ignore_the_file() {
    for (text, want) in [
        (
            "[host.\"https://m\"]\ncapabilities = [\"pull\", \"fly\"]\n",
            "unknown capability \"fly\"",
        ),
        (
            "[host.\"https://m\"]\ncapabilities = \"pull\"\n",
            "expected an array of strings",
        ),
        (
            "[host.\"https://m\"]\nskip_verify = \"yes\"\n",
            "expected a boolean",
        ),
        (
            "[host.\"https://m\"]\nca = 1\n",
            "invalid type integer for \"ca\"",
        ),
        (
            "[host.\"https://m\"]\nca = [\"a\", 2]\n",
            "unable to cast integer to string",
        ),
        ("[host.\"https://m\"]\nclient = [[\"a\"]]\n", "invalid pair"),
        (
            "[host.\"https://m\"]\nclient = [true]\n",
            "invalid type boolean for \"client\"",
        ),
        (
            "[host.\"https://m\".header]\nx = 1\n",
            "invalid type integer for header \"x\"",
        ),
        (
            "[host.\"https://m\"]\ndial_timeout = \"3\"\n",
            "invalid dial_timeout",
        ),
        ("[host.\"https://m:port\"]\n", "unable to parse server"),
        ("server = 5\n", "server: expected a string"),
        ("host = \"x\"\n", "host: expected a table"),
        ("[host]\n\"https://m\" = 3\n", "expected a table"),
        ("server = \"https://a\"\n[host.\"x\"\n", "line 2"),
    ] {
        match parse_hosts_file(text, Path::new("")) {
            Ok(h) => panic!("{text}: parsed {h:?}"),
            Err(e) => assert!(e.contains(want), "{text}: {e}"),
        }
    }
    // Unknown keys are ignored; a header array of strings is fine.
    hosts(
        "future = 1\n[host.\"https://m\"]\nnew_key = true\n[host.\"https://m\".header]\nx = [\"a\"]\n",
    );
}

#[test]
fn relative_ca_and_client_paths_are_under_the_host_directory() {
    let h = parse_hosts_file(
        "[host.\"https://m\"]\nca = \"certs/../ca.pem\"\nclient = [[\"c.cert\", \"\"]]\n",
        Path::new("/etc/containerd/certs.d/docker.io"),
    )
    .unwrap();
    assert_eq!(
        h[0].ca,
        Some(vec![PathBuf::from(
            "/etc/containerd/certs.d/docker.io/ca.pem"
        )])
    );
    // Like filepath.Join(base, ""): an empty key path becomes the directory itself.
    assert_eq!(
        h[0].client,
        [ClientCert {
            cert: PathBuf::from("/etc/containerd/certs.d/docker.io/c.cert"),
            key: Some(PathBuf::from("/etc/containerd/certs.d/docker.io")),
        }]
    );
}

// ---- upstream TestDefaultHosts and TestHTTPFallback (no options: CRI sets none) ----

#[test]
fn default_hosts_follow_containerd() {
    let dir = HostsDir::new("/etc/containerd/certs.d");
    let e = endpoints(&dir, "alpine");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].url, "https://registry-1.docker.io/v2/");
    assert!(e[0].query.is_empty() && !e[0].is_mirror);
    assert_eq!(e[0].credentials.lookup_host.as_deref(), Some("docker.io"));

    // (host, expected scheme, uses HTTP fallback)
    for (host, scheme, fallback) in [
        ("localhost:8080", "https", true),
        ("localhost:80", "http", false),
        ("localhost:443", "https", false),
        ("localhost", "https", false),
        ("localhost:5000", "https", true),
        ("example.com", "https", false),
        ("example.com:5000", "https", false),
        ("127.0.0.254:5000", "https", true),
        ("127.0.0.254", "https", false),
        ("[::1]:5000", "https", true),
    ] {
        let e = endpoints(&dir, &format!("{host}/app:1"));
        assert_eq!(e.len(), 1, "{host}");
        assert_eq!(e[0].url, format!("{scheme}://{host}/v2/"), "{host}");
        assert_eq!(e[0].http_fallback, fallback, "{host}");
        let local =
            host.starts_with("localhost") || host.starts_with("127.") || host.starts_with("[::1]");
        assert_eq!(e[0].skip_verify, local && host != "localhost:80", "{host}");
    }
}

// ---- resolution ----

const DOCKER_IO: &str = r#"
server = "https://registry-1.docker.io"

[host."https://mirror.example.com"]
  capabilities = ["pull", "resolve"]

[host."https://digests.example.com/v2/hub"]
  capabilities = ["pull"]
  override_path = true
  skip_verify = true
  [host."https://digests.example.com/v2/hub".header]
    authorization-hint = ["a", "b"]

[host."http://10.0.0.9:5000"]
  capabilities = ["pull", "resolve"]
  ca = "ca.pem"
"#;

#[test]
fn hosts_in_file_order_then_server_filtered_by_capability() {
    let mut dir = HostsDir::new("/etc/containerd/certs.d");
    dir.insert_hosts_toml("docker.io", DOCKER_IO);
    assert!(dir.warnings().is_empty());

    let tag = endpoints(&dir, "alpine:3.20");
    assert_eq!(
        tag.iter().map(Endpoint::manifest_url).collect::<Vec<_>>(),
        [
            "https://mirror.example.com/v2/library/alpine/manifests/3.20?ns=docker.io",
            "https://10.0.0.9:5000/v2/library/alpine/manifests/3.20?ns=docker.io",
            "https://registry-1.docker.io/v2/library/alpine/manifests/3.20",
        ]
    );
    // http:// with a TLS setting: HTTPS first, then HTTP.
    assert!(tag[1].http_fallback);
    assert_eq!(
        tag[1].ca,
        [PathBuf::from("/etc/containerd/certs.d/docker.io/ca.pem")]
    );
    assert!(tag[0].is_mirror && !tag[2].is_mirror);
    assert_eq!(
        tag[0].rule,
        "containerd /etc/containerd/certs.d/docker.io/hosts.toml [host.\"https://mirror.example.com\"] (host 1 of 3)"
    );
    assert!(
        tag[2]
            .rule
            .ends_with("hosts.toml server = \"https://registry-1.docker.io\""),
        "{}",
        tag[2].rule
    );

    // Every host gets the pull secrets matched by the image's own registry, mirrors
    // included (containerd CRI ParseAuth; DOMAIN §4, corrected).
    assert_eq!(tag[0].credentials.lookup_host.as_deref(), Some("docker.io"));
    assert!(tag[0].credentials.pull_secrets);
    assert!(tag[2].credentials.pull_secrets);
    assert!(
        tag[0].credentials.rule.contains("10996"),
        "{}",
        tag[0].credentials.rule
    );
    assert_eq!(tag[2].credentials.lookup_host.as_deref(), Some("docker.io"));

    let by_digest = endpoints(&dir, &format!("alpine@{SHA}"));
    assert_eq!(by_digest.len(), 4);
    assert_eq!(
        by_digest[1].manifest_url(),
        format!("https://digests.example.com/v2/hub/library/alpine/manifests/{SHA}?ns=docker.io")
    );
    assert!(by_digest[1].skip_verify);
    assert_eq!(
        by_digest[1].headers,
        [
            ("authorization-hint".to_owned(), "a".to_owned()),
            ("authorization-hint".to_owned(), "b".to_owned())
        ]
    );
}

#[test]
fn directory_candidates_are_host_port_then_host_then_default() {
    assert_eq!(
        host_dir_candidates("r.example.com:5000"),
        ["r.example.com_5000_", "r.example.com:5000", "_default"]
    );
    assert_eq!(
        host_dir_candidates("r.example.com"),
        ["r.example.com", "_default"]
    );
    assert_eq!(
        host_dir_candidates("[::1]:5000"),
        ["[::1]_5000_", "[::1]:5000", "_default"]
    );

    let mut dir = HostsDir::new("/certs.d");
    dir.insert_hosts_toml("r.example.com:5000", "[host.\"https://colon.example\"]\n");
    dir.insert_hosts_toml("_default", "[host.\"https://default.example\"]\n");
    assert_eq!(
        endpoints(&dir, "r.example.com:5000/app:1")[0].host,
        "colon.example"
    );
    dir.insert_hosts_toml(
        "r.example.com_5000_",
        "[host.\"https://underscore.example\"]\n",
    );
    assert_eq!(
        endpoints(&dir, "r.example.com:5000/app:1")[0].host,
        "underscore.example"
    );
    // Any other host falls to _default, whose empty server is that host.
    let e = endpoints(&dir, "quay.io/org/app:1");
    assert_eq!(
        e.iter().map(|e| e.url.as_str()).collect::<Vec<_>>(),
        ["https://default.example/v2/", "https://quay.io/v2/"]
    );
    assert_eq!(e[0].query, [("ns".to_owned(), "quay.io".to_owned())]);
}

#[test]
fn no_host_with_the_capability_fails_the_pull() {
    let mut dir = HostsDir::new("/certs.d");
    dir.insert_hosts_toml(
        "quay.io",
        "server = \"https://quay.io\"\ncapabilities = [\"pull\"]\n[host.\"https://m.example\"]\ncapabilities = [\"pull\"]\n",
    );
    // The server's own capabilities count when it is set.
    match dir.resolve(&r("quay.io/org/app:1")) {
        Resolution::Unresolvable { reason, rule } => {
            assert!(reason.contains("no resolve hosts"), "{reason}");
            assert!(rule.contains("/certs.d/quay.io/hosts.toml"), "{rule}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(endpoints(&dir, &format!("quay.io/org/app@{SHA}")).len(), 2);
}

#[test]
fn an_unparsable_hosts_toml_is_ignored_with_a_warning() {
    let mut dir = HostsDir::new("/certs.d");
    dir.insert_hosts_toml(
        "docker.io",
        "[host.\"https://m.example\"]\ncapabilities = [\"teleport\"]\n",
    );
    assert_eq!(dir.warnings().len(), 1);
    assert!(
        dir.warnings()[0].contains("containerd ignores /certs.d/docker.io/hosts.toml"),
        "{:?}",
        dir.warnings()
    );
    let e = endpoints(&dir, "alpine");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].url, "https://registry-1.docker.io/v2/");
}

#[test]
fn a_server_on_another_host_gets_ns_too() {
    let mut dir = HostsDir::new("/certs.d");
    dir.insert_hosts_toml("docker.io", "server = \"https://hub-proxy.example\"\n");
    let e = endpoints(&dir, "alpine");
    assert_eq!(
        e[0].manifest_url(),
        "https://hub-proxy.example/v2/library/alpine/manifests/latest?ns=docker.io"
    );
    assert!(e[0].is_mirror);
    // The pull secrets matched by docker.io go to a `server` on another host too.
    assert_eq!(e[0].credentials.lookup_host.as_deref(), Some("docker.io"));
    assert!(e[0].credentials.pull_secrets);
}

#[test]
fn capabilities_has() {
    assert!(Capabilities::ALL.has(PULL));
    assert!(!PULL.has(caps(true, true, false, false)));
    assert!(caps(true, true, false, false).has(caps(true, true, false, false)));
}

#[test]
fn hosts_containerd_cannot_ask_are_skipped() {
    // Found by fuzzing: a URL starting with "http" keeps whatever scheme it has, and a
    // URL without "//" has no host; containerd fails on such a host and goes on.
    let mut dir = HostsDir::new("/certs.d");
    dir.insert_hosts_toml(
        "docker.io",
        "server = \"httpkkks://registry-1.docker.io\"\n[host.\"httpbin.example\"]\n[host.\"https://ok.example\"]\n",
    );
    let e = endpoints(&dir, "alpine");
    assert_eq!(
        e.iter().map(|e| e.host.as_str()).collect::<Vec<_>>(),
        ["ok.example"]
    );
    dir.insert_hosts_toml(
        "docker.io",
        "server = \"httpkkks://registry-1.docker.io\"\n",
    );
    match dir.resolve(&r("alpine")) {
        Resolution::Unresolvable { reason, .. } => assert!(reason.contains("httpkkks"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_with_only_a_server_is_read_as_newer_containerd_does_with_a_warning() {
    // containerd 1.7.32 and 2.x use the server; 1.6 and 1.7.0-1.7.31 reject the file (seen
    // with 1.6.20 in crates/cli/tests/it/runtimes.rs).
    let mut dir = HostsDir::new(Path::new("/etc/containerd/certs.d"));
    dir.insert_hosts_toml("r.example.com", "server = \"https://mirror.example.com\"\n");
    let e = endpoints(&dir, "r.example.com/a:b");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].host, "mirror.example.com");
    assert!(dir.warnings().is_empty(), "{:?}", dir.warnings());
    assert_eq!(
        dir.version_warnings(),
        [crate::VersionWarning::HostsTomlWithoutHostTable {
            file: "/etc/containerd/certs.d/r.example.com/hosts.toml".into(),
            server: "mirror.example.com".into(),
        }]
    );
    let w = &dir.version_warnings()[0];
    assert_eq!(
        w.kind(),
        crate::VersionWarningKind::HostsTomlWithoutHostTable
    );
    assert_eq!(w.modelled()[0].first, "1.7.32");
    assert_eq!(w.differing().len(), 2);
    // With a [host] table every version reads it alike: no warning.
    let mut dir = HostsDir::new(Path::new("/etc/containerd/certs.d"));
    dir.insert_hosts_toml(
        "r.example.com",
        "server = \"https://r.example.com\"\n[host.\"https://mirror.example.com\"]\n",
    );
    assert!(dir.warnings().is_empty(), "{:?}", dir.warnings());
    assert!(dir.version_warnings().is_empty());
}

#[test]
fn a_loopback_default_host_carries_the_version_warning_for_an_answer_over_tls() {
    let dir = HostsDir::new(Path::new("/etc/containerd/certs.d"));
    let e = endpoints(&dir, "127.0.0.1:5000/a:b");
    assert_eq!(e.len(), 1);
    assert_eq!(
        e[0].over_tls_warning,
        Some(crate::VersionWarning::LoopbackDefaultHostOverTls {
            host: "127.0.0.1:5000".into(),
            hosts_dir: Some("/etc/containerd/certs.d".into()),
        })
    );
    // An answer over plain HTTP: 1.6.0-1.6.8 have no loopback rule (verified HTTPS).
    let plain = |host: &str| {
        Some(crate::VersionWarning::LoopbackDefaultHostOverPlainHttp {
            host: host.into(),
            hosts_dir: Some("/etc/containerd/certs.d".into()),
        })
    };
    assert_eq!(e[0].over_plain_http_warning, plain("127.0.0.1:5000"));
    // Port 80 is plain HTTP from 1.6.9 on, so only the plain-HTTP warning; a name that
    // is not loopback has no rule to differ on; a configured server is not the default
    // host.
    let e80 = endpoints(&dir, "127.0.0.1:80/a:b");
    assert_eq!(e80[0].over_tls_warning, None);
    assert_eq!(e80[0].over_plain_http_warning, plain("127.0.0.1:80"));
    let other = endpoints(&dir, "r.example.com/a:b");
    assert_eq!(other[0].over_tls_warning, None);
    assert_eq!(other[0].over_plain_http_warning, None);
    let mut dir = HostsDir::new(Path::new("/etc/containerd/certs.d"));
    dir.insert_hosts_toml(
        "127.0.0.1:5000",
        "server = \"https://127.0.0.1:5000\"\n[host.\"https://127.0.0.1:5000\"]\n",
    );
    assert!(
        endpoints(&dir, "127.0.0.1:5000/a:b")
            .iter()
            .all(|e| e.over_tls_warning.is_none() && e.over_plain_http_warning.is_none())
    );
}
