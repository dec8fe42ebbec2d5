//! Passwords written inside URLs and locations never come back out: not in errors, rules,
//! reasons or endpoint URLs. User info is shown as `user:***@` (or `***@` without a user).

use std::path::Path;

use pullcheck_mirrors::docker_daemon::DaemonConfig;
use pullcheck_mirrors::hosts_toml::HostsDir;
use pullcheck_mirrors::registries_conf::RegistriesConf;
use pullcheck_mirrors::{MirrorConfig, Resolution};
use pullcheck_reference::Reference;

const PW: &str = "S3cr3tPW";

fn r(s: &str) -> Reference {
    Reference::parse_normalized(s).expect("reference")
}

/// Everything a resolution shows, as one string.
fn shown(res: &Resolution) -> String {
    format!("{res:?}")
}

fn assert_hidden(text: &str) {
    assert!(!text.contains(PW), "password shown: {text}");
}

#[test]
fn daemon_json_mirror_with_a_password_is_refused_without_echoing_it() {
    for (json, masked) in [
        (
            format!(r#"{{"registry-mirrors": ["http://user:{PW}@mirror.example.com"]}}"#),
            "http://user:***@mirror.example.com",
        ),
        (
            format!(r#"{{"registry-mirrors": ["https://{PW}@mirror.example.com/"]}}"#),
            "https://***@mirror.example.com/",
        ),
        (
            format!(r#"{{"registry-mirrors": ["https://user:{PW}@mirror.example.com/path"]}}"#),
            "https://user:***@mirror.example.com/path",
        ),
        (
            format!(r#"{{"insecure-registries": ["user:{PW}@registry.example.com"]}}"#),
            "user:***@registry.example.com",
        ),
        (
            format!(r#"{{"insecure-registries": ["ftp://user:{PW}@registry.example.com"]}}"#),
            "ftp://user:***@registry.example.com",
        ),
    ] {
        let err = DaemonConfig::parse("/etc/docker/daemon.json", &json)
            .unwrap_err()
            .to_string();
        assert_hidden(&err);
        assert!(err.contains(masked), "{err}");
        assert!(err.starts_with("/etc/docker/daemon.json: "), "{err}");
    }
}

#[test]
fn registries_conf_locations_with_user_info_are_masked_everywhere() {
    let text = format!(
        r#"
[[registry]]
prefix = "docker.io"
location = "docker.io"
[[registry.mirror]]
location = "user:{PW}@mirror.example.com/hub"

[[registry]]
location = "quay.io"
proxy = "http://proxyuser:{PW}@proxy.example.com:3128"
"#
    );
    let conf = RegistriesConf::parse("/etc/containers/registries.conf", &text).unwrap();
    let config = MirrorConfig::from_registries_conf(conf);
    // The mirror's rewritten reference cannot parse: the pull fails, and says so without
    // the password.
    let res = config.resolve(&r("alpine:3.20"));
    let text = shown(&res);
    assert_hidden(&text);
    assert!(matches!(res, Resolution::Unresolvable { .. }), "{text}");
    assert!(text.contains("user:***@mirror.example.com"), "{text}");
    // A proxy with credentials: the endpoint's proxy and rule are masked.
    let res = config.resolve(&r("quay.io/org/app:1"));
    let text = shown(&res);
    assert_hidden(&text);
    let e = &res.endpoints()[0];
    assert_eq!(
        e.proxy.as_deref(),
        Some("http://proxyuser:***@proxy.example.com:3128")
    );

    // Errors that quote a location, a prefix, a proxy or a search registry.
    for (toml, masked) in [
        (
            format!("[[registry]]\nlocation = \"https://user:{PW}@registry.example.com\"\n"),
            "https://user:***@registry.example.com",
        ),
        (
            format!(
                "[[registry]]\nlocation = \"user:{PW}@r.example.com\"\n\
                 [[registry]]\nprefix = \"other.example.com\"\nlocation = \"user:{PW}@r.example.com\"\ninsecure = true\n"
            ),
            "user:***@r.example.com",
        ),
        (
            format!(
                "[[registry]]\nlocation = \"r.example.com\"\nproxy = \"http://user:{PW}@proxy.example.com:port\"\n"
            ),
            "http://user:***@proxy.example.com:port",
        ),
        (
            format!(
                "[[registry]]\nlocation = \"r.example.com\"\n[[registry.mirror]]\nlocation = \"https://user:{PW}@m.example.com\"\n"
            ),
            "https://user:***@m.example.com",
        ),
        (
            format!("unqualified-search-registries = [\"user:{PW}@r.example.com\"]\n"),
            "user:***@r.example.com",
        ),
        (
            format!("[registries.block]\nregistries = [\"https://user:{PW}@r.example.com\"]\n"),
            "https://user:***@r.example.com",
        ),
    ] {
        let err = RegistriesConf::parse("r.conf", &toml)
            .unwrap_err()
            .to_string();
        assert_hidden(&err);
        assert!(err.contains(masked), "{err}");
    }
}

#[test]
fn hosts_toml_urls_with_user_info_are_masked_in_rules() {
    let mut dir = HostsDir::new(Path::new("/etc/containerd/certs.d"));
    dir.insert_hosts_toml(
        "docker.io",
        &format!(
            "server = \"https://user:{PW}@registry-1.docker.io\"\n\
             [host.\"https://user:{PW}@mirror.example.com\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ),
    );
    // A URL that does not parse: the file is ignored, with a warning.
    dir.insert_hosts_toml(
        "quay.io",
        &format!("[host.\"https://user:{PW}@mirror.example.com:port\"]\n"),
    );
    let config = MirrorConfig::from_hosts_dir(dir);
    let res = config.resolve(&r("alpine"));
    let text = shown(&res);
    assert_hidden(&text);
    let e = res.endpoints();
    assert_eq!(e[0].url, "https://mirror.example.com/v2/");
    assert!(
        e[0].rule.contains("https://user:***@mirror.example.com"),
        "{}",
        e[0].rule
    );
    assert!(
        e[1].rule.contains("https://user:***@registry-1.docker.io"),
        "{}",
        e[1].rule
    );
    let warnings = config.warnings().join("\n");
    assert_hidden(&warnings);
    assert!(
        warnings.contains("https://user:***@mirror.example.com:port"),
        "{warnings}"
    );
}
