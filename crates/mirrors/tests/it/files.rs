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

#[test]
fn a_node_profile_without_its_files_says_which_were_not_found() {
    let bare = fixtures().join("node/bare");
    let crio = MirrorConfig::from_node_profile(NodeProfile::Crio, Some(&bare)).unwrap();
    let main = bare.join("etc/containers/registries.conf");
    let dir = bare.join("etc/containers/registries.conf.d");
    assert_eq!(
        crio.warnings(),
        [format!(
            "node profile crio: neither {} nor any {}/*.conf was found, so CRI-O's defaults \
             apply: every image is pulled from its own registry, with no mirrors and nothing \
             blocked",
            main.display(),
            dir.display()
        )]
    );
    let containerd = MirrorConfig::from_node_profile(NodeProfile::Containerd, Some(&bare)).unwrap();
    let w = containerd.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(&format!(
            "node profile containerd: {} was not found, so containerd's default applies",
            bare.join("etc/containerd/certs.d").display()
        )),
        "{w:?}"
    );
    let docker = MirrorConfig::from_node_profile(NodeProfile::Docker, Some(&bare)).unwrap();
    let w = docker.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(&format!(
            "node profile docker: {} was not found, so the Docker daemon's defaults apply",
            bare.join("etc/docker/daemon.json").display()
        )),
        "{w:?}"
    );
    // With the files present, nothing to warn about.
    for (p, dir) in [
        (NodeProfile::Crio, "node/crio"),
        (NodeProfile::Containerd, "node/containerd"),
        (NodeProfile::Docker, "node/docker"),
    ] {
        let c = MirrorConfig::from_node_profile(p, Some(&fixtures().join(dir))).unwrap();
        assert!(
            c.warnings().iter().all(|w| !w.starts_with("node profile")),
            "{p}: {:?}",
            c.warnings()
        );
    }
    // CRI-O with drop-ins but no main file.
    let root = std::env::temp_dir().join(format!("pullcheck-mirrors-crio-{}", std::process::id()));
    let dir = root.join("etc/containers/registries.conf.d");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("10-mirror.conf"),
        "[[registry]]\nlocation = \"docker.io\"\n",
    )
    .unwrap();
    let c = MirrorConfig::from_node_profile(NodeProfile::Crio, Some(&root));
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        c.unwrap().warnings(),
        [format!(
            "node profile crio: {} was not found, so only the 1 drop-in file(s) in {} apply",
            root.join("etc/containers/registries.conf").display(),
            dir.display()
        )]
    );
}

#[test]
fn a_wildcard_other_than_a_leading_star_dot_is_named_as_never_matching() {
    // containers/image accepts these (it rejects only `*.` prefixes with `/`, `@` or `:`)
    // and matches the `*` literally: the entries are kept, never used, and named.
    let text = r#"
[[registry]]
prefix = "*.*.example.com"

[[registry]]
prefix = "registry.*.com"
location = "mirror.example.com"

[[registry]]
prefix = "*.example.org"
location = "mirror.example.org"
"#;
    let conf = RegistriesConf::parse("/etc/containers/registries.conf", text).unwrap();
    let warnings = conf.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with(
            "registries.conf /etc/containers/registries.conf:2 [[registry]] #1 \
             prefix=\"*.*.example.com\" can never match an image"
        ),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains(":5 [[registry]] #2 prefix=\"registry.*.com\""),
        "{warnings:?}"
    );
    let config = MirrorConfig::from_registries_conf(conf);
    assert_eq!(config.warnings(), warnings);
    // And indeed they match nothing.
    assert_eq!(
        endpoints(&config, "a.b.example.com/app:1")[0].host,
        "a.b.example.com"
    );
    assert_eq!(
        endpoints(&config, "registry.x.com/app:1")[0].host,
        "registry.x.com"
    );
    assert_eq!(
        endpoints(&config, "a.example.org/app:1")[0].host,
        "mirror.example.org"
    );
}

#[test]
fn node_profile_containerd_follows_config_toml() {
    let root = std::env::temp_dir().join(format!(
        "pullcheck-mirrors-containerd-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let hosts = root.join("srv/hosts/docker.io");
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::write(
        hosts.join("hosts.toml"),
        "server = \"https://registry-1.docker.io\"\n[host.\"https://mirror.example.com\"]\n",
    )
    .unwrap();
    let etc = root.join("etc/containerd");
    std::fs::create_dir_all(etc.join("certs.d/docker.io")).unwrap();
    std::fs::write(
        etc.join("certs.d/docker.io/hosts.toml"),
        "[host.\"https://certs-d.example.com\"]\n",
    )
    .unwrap();
    let image = Reference::parse_normalized("alpine:3").unwrap();
    let first_host = |c: &MirrorConfig| match c.resolve(&image) {
        Resolution::Endpoints(e) => e[0].host.clone(),
        other => panic!("{other:?}"),
    };
    // Without config.toml: certs.d, with a note on containerd 1.6's CRI default.
    let c = MirrorConfig::from_node_profile(NodeProfile::Containerd, Some(&root)).unwrap();
    assert_eq!(first_host(&c), "certs-d.example.com");
    assert_eq!(c.warnings().len(), 1, "{:?}", c.warnings());
    assert!(c.warnings()[0].contains("only when config.toml's config_path names it"));
    // config.toml's config_path wins (rooted like the profile's own paths).
    std::fs::write(
        etc.join("config.toml"),
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/srv/hosts\"\n",
    )
    .unwrap();
    let c = MirrorConfig::from_node_profile(NodeProfile::Containerd, Some(&root)).unwrap();
    assert_eq!(first_host(&c), "mirror.example.com");
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    // A config.toml without config_path: the CRI plugin's default host, no certs.d.
    std::fs::write(etc.join("config.toml"), "version = 2\n").unwrap();
    let c = MirrorConfig::from_node_profile(NodeProfile::Containerd, Some(&root)).unwrap();
    assert_eq!(first_host(&c), "registry-1.docker.io");
    // One containerd refuses: the error names the file and the key.
    std::fs::write(
        etc.join("config.toml"),
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/srv/hosts\"\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://m.example.com\"]\n",
    )
    .unwrap();
    let e = MirrorConfig::from_node_profile(NodeProfile::Containerd, Some(&root))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}: plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors: `mirrors` cannot be set \
             when `config_path` is provided (containerd does not load its CRI plugin with both)",
            etc.join("config.toml").display()
        )
    );
    std::fs::remove_dir_all(&root).unwrap();
}
