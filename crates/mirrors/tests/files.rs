//! Loading from files: registries.conf with drop-ins, containerd host directories, node
//! profiles under a root prefix. Fixtures are in `tests/fixtures/`.

use std::path::{Path, PathBuf};

use pullcheck_mirrors::hosts_toml::HostsDir;
use pullcheck_mirrors::registries_conf::RegistriesConf;
use pullcheck_mirrors::{Endpoint, MirrorConfig, MirrorError, Mode, NodeProfile, Resolution};
use pullcheck_reference::Reference;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn r(s: &str) -> Reference {
    match Reference::parse_normalized(s) {
        Ok(r) => r,
        Err(e) => panic!("{s}: {}", e.message()),
    }
}

fn endpoints(c: &MirrorConfig, reference: &str) -> Vec<Endpoint> {
    match c.resolve(&r(reference)) {
        Resolution::Endpoints(e) => e,
        other => panic!("{reference}: {other:?}"),
    }
}

fn urls(e: &[Endpoint]) -> Vec<String> {
    e.iter().map(Endpoint::manifest_url).collect()
}

// ---- registries.conf + registries.conf.d (upstream TestRegistriesConfDirectory,
// TestFindRegistry's drop-in overrides) ----

#[test]
fn drop_ins_are_read_in_lexical_order_and_replace_by_prefix() {
    let dir = fixtures().join("registries-conf");
    let c =
        RegistriesConf::load(&dir.join("main.conf"), Some(&dir.join("registries.conf.d"))).unwrap();
    // Only *.conf regular files directly in the directory are read.
    let files: Vec<String> = c
        .files()
        .iter()
        .map(|f| {
            Path::new(f)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        files,
        [
            "main.conf",
            "10-override.conf",
            "20-block.conf",
            "40-empty.conf"
        ]
    );
    // 20-block.conf sets the search list to [], replacing main.conf's.
    assert!(c.unqualified_search_registries().is_empty());
    // Same prefix: replaced (and the later blocked = true carries no conflict check
    // across files); other prefixes untouched.
    let base = c.find_registry("base.example.com/app").unwrap();
    assert!(base.blocked && !base.insecure);
    assert!(base.origin.contains("20-block.conf:3"), "{}", base.origin);
    assert_eq!(
        c.find_registry("x.team.corp.example/app").unwrap().location,
        "team-gateway-v2.example"
    );
    assert_eq!(
        c.find_registry("x.corp.example/app").unwrap().location,
        "gateway.corp.example/all"
    );
    assert_eq!(
        c.find_registry("x.other.example/app").unwrap().location,
        "other-gateway.example"
    );
    assert_eq!(c.registries().len(), 5);

    let config = MirrorConfig::load_registries_conf(&dir.join("main.conf")).unwrap();
    assert_eq!(config.mode(), Mode::RegistriesConf);
    assert!(matches!(
        config.resolve(&r("base.example.com/app:1")),
        Resolution::Blocked { .. }
    ));
    assert_eq!(
        urls(&endpoints(&config, "deep.sub.team.corp.example/svc/api:2")),
        ["https://team-gateway-v2.example/v2/svc/api/manifests/2"]
    );
    assert_eq!(
        urls(&endpoints(&config, "nginx")),
        [
            "https://hub-cache.example.com/v2/docker.io/library/nginx/manifests/latest",
            "https://registry-1.docker.io/v2/library/nginx/manifests/latest",
        ]
    );
    assert!(
        config.describe().starts_with("crio ("),
        "{}",
        config.describe()
    );
}

#[test]
fn a_v1_drop_in_is_an_error_naming_it() {
    let dir = fixtures().join("registries-conf");
    let e =
        RegistriesConf::load(&dir.join("main.conf"), Some(&dir.join("v1-drop-in.d"))).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("10-v1.conf") && msg.contains("v2 format"),
        "{msg}"
    );
}

#[test]
fn missing_files() {
    let dir = fixtures().join("registries-conf");
    let missing = dir.join("does-not-exist.conf");
    // An explicit file must exist.
    assert!(matches!(
        RegistriesConf::load(&missing, None),
        Err(MirrorError::Read { .. })
    ));
    // The system default may be missing; drop-ins still apply.
    let c = RegistriesConf::load_system(&missing, Some(&dir.join("registries.conf.d"))).unwrap();
    assert!(c.find_registry("base.example.com").unwrap().blocked);
    // A missing drop-in directory is fine.
    let c = RegistriesConf::load(&dir.join("main.conf"), Some(&dir.join("nope.d"))).unwrap();
    assert!(c.find_registry("base.example.com").unwrap().insecure);
}

// ---- containerd host directory ----

fn certs_d() -> PathBuf {
    fixtures().join("node/containerd/etc/containerd/certs.d")
}

#[test]
fn host_directory_lookup_and_fallbacks() {
    let dir = HostsDir::load(&certs_d()).unwrap();
    let config = MirrorConfig::from_hosts_dir(dir.clone());

    assert_eq!(
        urls(&endpoints(&config, "alpine:3.20")),
        [
            "https://mirror.example.com/v2/library/alpine/manifests/3.20?ns=docker.io",
            "https://registry-1.docker.io/v2/library/alpine/manifests/3.20",
        ]
    );
    // host_port_ before host:port.
    let e = endpoints(&config, "registry.example.com:5000/team/app:1");
    assert_eq!(e[0].host, "port-mirror.example.com");
    assert_eq!(
        e[0].ca,
        [certs_d().join("registry.example.com_5000_/port-ca.pem")]
    );
    assert_eq!(e[1].url, "https://registry.example.com:5000/v2/");
    // _default for anything else.
    assert_eq!(
        urls(&endpoints(&config, "quay.io/org/app:1")),
        [
            "https://cache.example.com/v2/org/app/manifests/1?ns=quay.io",
            "https://quay.io/v2/org/app/manifests/1",
        ]
    );
    // No hosts.toml: the certificate files, on the default host.
    let e = endpoints(&config, "certs-only.example.com/app:1");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].url, "https://certs-only.example.com/v2/");
    assert_eq!(e[0].ca, [certs_d().join("certs-only.example.com/ca.crt")]);
    assert_eq!(e[0].client_certs.len(), 1);
    assert_eq!(
        e[0].client_certs[0].key.as_deref(),
        Some(
            certs_d()
                .join("certs-only.example.com/client.key")
                .as_path()
        )
    );
    assert!(e[0].rule.contains("(no hosts.toml)"), "{}", e[0].rule);
    // A hosts.toml containerd cannot parse is ignored, with a warning.
    let e = endpoints(&config, "broken.example.com/app:1");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].url, "https://broken.example.com/v2/");
    assert_eq!(e[0].ca, [certs_d().join("broken.example.com/extra.crt")]);
    assert!(
        e[0].rule
            .contains("hosts.toml (ignored: it does not parse)"),
        "{}",
        e[0].rule
    );
    let warnings = config.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("broken.example.com/hosts.toml") && w.contains("teleport")),
        "{warnings:?}"
    );
    // A file where the host directory should be makes containerd fail the pull.
    match config.resolve(&r("not-a-dir.example.com/app:1")) {
        Resolution::Unresolvable { reason, .. } => {
            assert!(reason.contains("not a directory"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        HostsDir::load(&certs_d().join("nope")),
        Err(MirrorError::Read { .. })
    ));
}

// ---- node profiles ----

#[test]
fn node_profiles_read_the_standard_paths_under_a_root() {
    let root = fixtures().join("node/crio");
    let c = MirrorConfig::from_node_profile(NodeProfile::Crio, Some(&root)).unwrap();
    assert_eq!(c.mode(), Mode::RegistriesConf);
    assert_eq!(endpoints(&c, "alpine")[0].host, "mirror.example.com");
    assert!(matches!(
        c.resolve(&r("blocked.example.com/x")),
        Resolution::Blocked { .. }
    ));

    let root = fixtures().join("node/containerd");
    let c = MirrorConfig::from_node_profile("containerd".parse().unwrap(), Some(&root)).unwrap();
    assert_eq!(c.mode(), Mode::Containerd);
    assert_eq!(endpoints(&c, "alpine")[0].host, "mirror.example.com");

    let root = fixtures().join("node/docker");
    let c = MirrorConfig::from_node_profile(NodeProfile::Docker, Some(&root)).unwrap();
    assert_eq!(c.mode(), Mode::Docker);
    assert_eq!(
        urls(&endpoints(&c, "alpine")),
        [
            "https://mirror.example.com/v2/library/alpine/manifests/latest",
            "https://registry-1.docker.io/v2/library/alpine/manifests/latest",
        ]
    );
    assert!(endpoints(&c, "registry.internal:5000/app:1")[0].http_fallback);

    // A node without the files: the runtime's defaults.
    let bare = fixtures().join("node/bare");
    for p in [
        NodeProfile::Crio,
        NodeProfile::Containerd,
        NodeProfile::Docker,
    ] {
        let c = MirrorConfig::from_node_profile(p, Some(&bare)).unwrap();
        assert_eq!(
            urls(&endpoints(&c, "alpine")),
            ["https://registry-1.docker.io/v2/library/alpine/manifests/latest"],
            "{p}"
        );
        assert!(
            c.warnings()[0].contains(&format!("node profile {p}")),
            "{:?}",
            c.warnings()
        );
    }
    assert!(matches!(
        "podman".parse::<NodeProfile>(),
        Err(MirrorError::UnknownProfile(_))
    ));
    assert_eq!("CRI-O".parse::<NodeProfile>().unwrap(), NodeProfile::Crio);
}
