//! Runs the parser on containers/image's own registries.conf test files
//! (`pkg/sysregistriesv2/testdata/`), when a copy is present beside the project at
//! `../shared/upstream-testdata/registries-conf/` (set `PULLCHECK_REGISTRIES_CONF_TESTDATA`
//! to use another path). The files are not part of this repository: the tests are
//! `#[ignore]`d, scripts/test.sh runs them when the directory exists and prints a
//! `SKIPPED:` line when it does not; run without the files, they fail. Expectations are
//! those of upstream's
//! `system_registries_v2_test.go` and `shortnames_test.go`.

use std::path::{Path, PathBuf};

use pullcheck_mirrors::registries_conf::RegistriesConf;

/// The upstream files' directory; fails the test when it is absent.
fn testdata() -> PathBuf {
    let dir = match std::env::var_os("PULLCHECK_REGISTRIES_CONF_TESTDATA") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/upstream-testdata/registries-conf"),
    };
    assert!(
        dir.is_dir(),
        "{} is missing: this test needs ../shared/upstream-testdata \
         (or PULLCHECK_REGISTRIES_CONF_TESTDATA)",
        dir.display()
    );
    dir
}

/// Main files: `Ok(number of registries)` or `Err(text the error must contain)`.
const MAIN: &[(&str, Result<usize, &str>)] = &[
    ("aliases.conf", Ok(0)),
    ("base-for-registries.d.conf", Ok(1)),
    ("blocked-conflicts.conf", Err("conflicting \"blocked\"")),
    ("cred-helper.conf", Ok(3)),
    ("empty.conf", Ok(0)),
    ("find-registry.conf", Ok(15)),
    ("insecure-conflicts.conf", Err("conflicting \"insecure\"")),
    ("invalid-aliases.conf", Err("must not contain tag")),
    (
        "invalid-config-level-mirror.conf",
        Err("pull-from-mirror must not be set for a non-mirror registry"),
    ),
    (
        "invalid-conflict-mirror.conf",
        Err("cannot set mirror-by-digest-only"),
    ),
    ("invalid-prefix.conf", Err("invalid location")),
    (
        "invalid-search.conf",
        Err("unqualified-search-registries[0]"),
    ),
    (
        "invalid-short-name-mode.conf",
        Err("invalid short-name mode"),
    ),
    (
        "invalid-value-mirror.conf",
        Err("unsupported pull-from-mirror value \"notvalid\""),
    ),
    ("invalidate-cache.conf", Ok(4)),
    ("mirrors.conf", Ok(2)),
    (
        "missing-mirror-location.conf",
        Err("mirror location is unset"),
    ),
    (
        "mixing-v1-v2-empty.conf",
        Err("mixing sysregistry v1/v2 is not supported"),
    ),
    (
        "mixing-v1-v2.conf",
        Err("mixing sysregistry v1/v2 is not supported"),
    ),
    ("pull-sources-from-reference.conf", Ok(9)),
    ("try-update-cache-invalid.conf", Err("line 1")),
    ("try-update-cache-valid.conf", Ok(1)),
    ("unmarshal.conf", Ok(4)),
    ("unqualified-search.conf", Ok(4)),
    ("v1-compatibility.conf", Ok(4)),
    ("v1-invalid-block.conf", Err("http://schema-is-invalid.com")),
    (
        "v1-invalid-insecure.conf",
        Err("http://schema-is-invalid.com"),
    ),
    (
        "v1-invalid-search.conf",
        Err("http://schema-is-invalid.com"),
    ),
];

/// Drop-in files (v2 enforced): all valid.
const DROP_INS: &[&str] = &[
    "registries.conf.d/config-1.conf",
    "registries.conf.d/config-2.conf",
    "registries.conf.d/config-3.conf",
    "registries.conf.d/subdomain-override-1.conf",
    "registries.conf.d/subdomain-override-2.conf",
    "registries.conf.d/subdomain-override-3.conf",
    "registries.conf.d-empty-helpers/empty.conf",
    "registries.conf.d-usr1/no-usr.conf",
    "registries.conf.d-usr2/empty-usr.conf",
];

/// Files that are never parsed (a wrong suffix is skipped by the drop-in loader).
const NOT_PARSED: &[&str] = &["registries.conf.d/config-3.ignore"];

#[test]
#[ignore = "needs ../shared/upstream-testdata (run by scripts/test.sh)"]
fn every_upstream_file_parses_or_fails_as_upstream() {
    let dir = testdata();
    let mut seen = Vec::new();
    for (name, want) in MAIN {
        let path = dir.join(name);
        seen.push(name.to_string());
        let got = RegistriesConf::load(&path, None);
        match (want, got) {
            (Ok(n), Ok(c)) => assert_eq!(c.registries().len(), *n, "{name}"),
            (Err(text), Err(e)) => {
                let msg = e.to_string();
                assert!(msg.contains(text), "{name}: {msg}");
                assert!(
                    msg.contains(name),
                    "{name}: the message names the file: {msg}"
                );
            }
            (Ok(_), Err(e)) => panic!("{name}: unexpected error {e}"),
            (Err(text), Ok(c)) => {
                panic!("{name}: expected an error containing {text:?}, got {c:?}")
            }
        }
    }
    for name in DROP_INS {
        seen.push(name.to_string());
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        if let Err(e) = RegistriesConf::parse_drop_in(name, &text) {
            panic!("{name}: {e}");
        }
    }
    seen.extend(NOT_PARSED.iter().map(|s| s.to_string()));
    // Every file in the directory has an expectation here.
    let mut all = Vec::new();
    for entry in walk(&dir) {
        all.push(
            entry
                .strip_prefix(&dir)
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
    }
    all.sort();
    seen.sort();
    assert_eq!(
        all, seen,
        "files without an expectation, or expectations without a file"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
#[ignore = "needs ../shared/upstream-testdata (run by scripts/test.sh)"]
fn upstream_drop_in_directory_merges_as_upstream() {
    let dir = testdata();
    // TestRegistriesConfDirectory.
    let c = RegistriesConf::load(
        &dir.join("base-for-registries.d.conf"),
        Some(&dir.join("registries.conf.d")),
    )
    .unwrap();
    assert_eq!(c.unqualified_search_registries(), ["example-overwrite.com"]);
    let locations: Vec<&str> = c.registries().iter().map(|r| r.location.as_str()).collect();
    assert_eq!(
        locations,
        [
            "subdomain-prefix-3-overridden-by-dropin-location.com",
            "subdomain-prefix-2-overridden-by-dropin-location.com",
            "subdomain-prefix-1-overridden-by-dropin-location.com",
            "1.com",
            "2.com",
            "base.com",
        ]
    );
    assert!(c.find_registry("base.com/test:latest").unwrap().blocked);

    // TestFindRegistry with the drop-ins.
    let c = RegistriesConf::load(
        &dir.join("find-registry.conf"),
        Some(&dir.join("registries.conf.d")),
    )
    .unwrap();
    assert_eq!(c.registries().len(), 19);
    let loc = |n: &str| c.find_registry(n).map(|r| r.location.as_str());
    assert_eq!(
        loc("really.not.quite.simple-prefix.com:5000/with/path/and/beyond:tag"),
        Some("subdomain-prefix-1-overridden-by-dropin-location.com")
    );
    assert_eq!(
        loc("foo.docker.io:5000/omg/wtf/bbq:foo"),
        Some("subdomain-prefix-2.com")
    );
    assert_eq!(
        loc(
            "foo.bar.example.com:6000/omg/wtf/bbq@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        ),
        Some("subdomain-prefix-3-overridden-by-dropin-location.com")
    );
    assert_eq!(
        loc("foo.bar.docker.io:5000/omg/wtf/bbq:foo"),
        Some("subdomain-prefix-4.com")
    );
    assert_eq!(
        loc("foo.bar.example.com:5000/omg/wtf/bbq:foo"),
        Some("subdomain-prefix-5.com")
    );
    assert_eq!(loc("simple-prefix.comx"), None);

    // TestRegistriesConfDirectory: search lists merge only when a drop-in sets them.
    let usr = |d: &str| {
        RegistriesConf::load(&dir.join("unqualified-search.conf"), Some(&dir.join(d)))
            .unwrap()
            .unqualified_search_registries()
            .to_vec()
    };
    assert_eq!(
        usr("registries.conf.d-usr1"),
        ["registry-a.com", "registry-c.com", "registry-d.com"]
    );
    assert!(usr("registries.conf.d-usr2").is_empty());

    // TestMirrors.
    let c = RegistriesConf::load(&dir.join("mirrors.conf"), None).unwrap();
    let reg = c.find_registry("registry.com/image:tag").unwrap();
    let mirrors: Vec<(&str, bool)> = reg
        .mirrors
        .iter()
        .map(|m| (m.location.as_str(), m.insecure))
        .collect();
    assert_eq!(
        mirrors,
        [
            ("mirror-1.registry.com", false),
            ("mirror-2.registry.com", true)
        ]
    );
}
