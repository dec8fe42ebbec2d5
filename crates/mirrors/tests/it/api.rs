//! The public resolution API without configuration, and the mode descriptions.

use pullcheck_mirrors::{MirrorConfig, Mode, Resolution};
use pullcheck_reference::Reference;

fn r(s: &str) -> Reference {
    match Reference::parse_normalized(s) {
        Ok(r) => r,
        Err(e) => panic!("{s}: {}", e.message()),
    }
}

#[test]
fn without_configuration_the_primary_alone() {
    let c = MirrorConfig::none();
    assert_eq!(c.mode(), Mode::Direct);
    let Resolution::Endpoints(e) = c.resolve(&r("alpine:3.20")) else {
        panic!()
    };
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].url, "https://registry-1.docker.io/v2/");
    assert_eq!(e[0].host, "registry-1.docker.io");
    assert_eq!(e[0].repository, "library/alpine");
    assert_eq!(e[0].reference, "3.20");
    assert!(!e[0].is_mirror && !e[0].insecure() && e[0].blocked.is_none());
    assert_eq!(e[0].credentials.lookup_host.as_deref(), Some("docker.io"));
    assert!(e[0].credentials.pull_secrets);

    let Resolution::Endpoints(e) = c.resolve(&r(
        "ghcr.io/org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    )) else {
        panic!()
    };
    assert_eq!(
        e[0].manifest_url(),
        "https://ghcr.io/v2/org/app/manifests/sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    );
}

#[test]
fn every_mode_describes_itself_in_one_line() {
    for m in [
        Mode::Direct,
        Mode::RegistriesConf,
        Mode::Containerd,
        Mode::Docker,
    ] {
        let d = m.describe();
        assert!(!d.contains('\n') && d.len() > 40, "{m}: {d}");
    }
    assert!(Mode::Containerd.describe().contains("10996"));
    assert_eq!(Mode::RegistriesConf.to_string(), "crio");
    assert!(MirrorConfig::none().describe().starts_with("direct: "));
}
