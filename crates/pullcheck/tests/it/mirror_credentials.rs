//! Which credentials each runtime sends to a mirror, end to end: an anonymous upstream
//! registry holds the images, and an htpasswd-protected pull-through cache of it is its
//! mirror. The Pod's pull secret is keyed for the upstream (the image's own registry),
//! as the kubelet picks it.
//!
//! - containerd (hosts.toml): the pull's credentials go to every host, so the mirror
//!   answers with the secret (containerd CRI `ParseAuth`; DOMAIN.md §4, corrected); a
//!   secret keyed for the mirror's own host is not used (containerd issue 10996).
//! - CRI-O (registries.conf): a mirror on another domain does not get the pull secrets;
//!   the node's credentials for the mirror's host do (containers/image
//!   `newImageSourceAttempt`).
//! - Docker (daemon.json): the Hub credentials go to the mirrors.

#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use pullcheck::credentials::{
    HelperOptions, Keyring, NodeCredentials, NodeEnv, NodeOptions, PullSecret,
};
use pullcheck::input::parse_image_arg;
use pullcheck::mirrors::MirrorConfig;
use pullcheck::report::{ImageReport, Report, Status};
use pullcheck::resolve::Resolver;
use pullcheck::{CheckOptions, Checker, CheckerOptions, ImageSet};
use pullcheck_testkit::kube::{DockerAuth, dockerconfigjson, pull_secret_manifest};
use pullcheck_testkit::{Auth, ImageKind, PushedImage, Registry, User};

use crate::util::temp_dir;

const PASSWORD: &str = "mirror-password-5e1d";

/// An anonymous upstream with `team/app:v1` and the Docker Hub-style
/// `library/pullcheck-mirror-cred:1.0`, and a pull-through cache of it that lets only
/// user `ci` pull.
struct AuthPair {
    upstream: Registry,
    mirror: Registry,
    image: PushedImage,
}

impl AuthPair {
    async fn start() -> AuthPair {
        let upstream = Registry::anonymous().await.unwrap();
        let image = upstream
            .push("team/app", "v1", ImageKind::OciIndex)
            .await
            .unwrap();
        upstream
            .push(
                "library/pullcheck-mirror-cred",
                "1.0",
                ImageKind::DockerManifestList,
            )
            .await
            .unwrap();
        let mirror = Registry::builder()
            .auth(Auth::Htpasswd(vec![User::new("ci", PASSWORD)]))
            .mirror_of(&upstream)
            .start()
            .await
            .unwrap();
        AuthPair {
            upstream,
            mirror,
            image,
        }
    }

    fn up(&self) -> &str {
        self.upstream.host()
    }

    fn mir(&self) -> &str {
        self.mirror.host()
    }
}

/// A keyring over one `kubernetes.io/dockerconfigjson` secret `pull` keyed `key`.
fn keyring(key: &str) -> Keyring {
    let manifest = pull_secret_manifest("builds", "pull", &[DockerAuth::new(key, "ci", PASSWORD)]);
    let secrets = PullSecret::parse_manifests("secrets.yaml", &manifest).unwrap();
    Keyring::from_pull_secrets(&secrets)
}

/// Node credentials from a Docker `config.json` with `ci` for `key`, or none.
fn node(dir: &Path, key: Option<&str>) -> NodeCredentials {
    let Some(key) = key else {
        return NodeCredentials::empty();
    };
    let path = dir.join("config.json");
    std::fs::write(
        &path,
        dockerconfigjson(&[DockerAuth::new(key, "ci", PASSWORD)]),
    )
    .unwrap();
    NodeCredentials::load(&NodeOptions {
        docker_config: Some(path),
        auth_file: None,
        env: NodeEnv::default(),
        helpers: HelperOptions {
            timeout: Duration::from_secs(10),
            search_path: Some(Vec::new()),
        },
    })
    .unwrap()
}

/// Checks `reference` as one Pod with `pull_secrets`, through `mirrors`.
async fn check(
    mirrors: MirrorConfig,
    reference: &str,
    pull_secrets: Keyring,
    node: NodeCredentials,
) -> Report {
    let checker = Checker::new(
        CheckerOptions::default(),
        Resolver {
            mirrors,
            insecure_registries: Vec::new(),
        },
        node,
    )
    .unwrap();
    checker
        .check_sets(
            vec![ImageSet {
                uses: vec![parse_image_arg(reference).unwrap()],
                pull_secrets,
                warnings: Vec::new(),
            }],
            &CheckOptions::default(),
        )
        .await
}

fn only(report: &Report) -> &ImageReport {
    assert_eq!(report.images.len(), 1, "{}", report.to_json());
    &report.images[0]
}

#[tokio::test]
async fn containerd_sends_the_pull_secret_to_the_mirror() {
    let pair = AuthPair::start().await;
    let dir = temp_dir("mirror-cred-containerd");
    let certs = dir.path().join("certs.d");
    let hosts = certs.join(pair.up());
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::write(
        hosts.join("hosts.toml"),
        format!(
            "server = \"http://{}\"\n\n[host.\"http://{}\"]\ncapabilities = [\"pull\", \"resolve\"]\n",
            pair.up(),
            pair.mir()
        ),
    )
    .unwrap();
    let config = MirrorConfig::load_hosts_dir(&certs).unwrap();
    let reference = pair.image.reference();

    // The pull secret for the image's registry: the mirror answers with it.
    let report = check(
        config.clone(),
        &reference,
        keyring(pair.up()),
        NodeCredentials::empty(),
    )
    .await;
    let i = only(&report);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.mir()), "{}", i.detail);
    assert_eq!(i.digest.as_deref(), Some(pair.image.digest.as_str()));

    // A secret keyed for the mirror's own host is not used (containerd issue 10996):
    // the mirror refuses, and the anonymous server answers.
    let report = check(
        config.clone(),
        &reference,
        keyring(pair.mir()),
        NodeCredentials::empty(),
    )
    .await;
    let i = only(&report);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.up()), "{}", i.detail);
    // The mirror was asked first, and did not answer present.
    assert_eq!(asked(i), [(pair.mir(), false), (pair.up(), true)]);
}

#[tokio::test]
async fn crio_sends_the_nodes_credentials_for_the_mirror_host_only() {
    let pair = AuthPair::start().await;
    let dir = temp_dir("mirror-cred-crio");
    let path = dir.path().join("registries.conf");
    std::fs::write(
        &path,
        format!(
            "[[registry]]\nprefix = \"{up}\"\nlocation = \"{up}\"\ninsecure = true\n\n\
             [[registry.mirror]]\nlocation = \"{mir}\"\ninsecure = true\n",
            up = pair.up(),
            mir = pair.mir()
        ),
    )
    .unwrap();
    let config = MirrorConfig::load_registries_conf(&path).unwrap();
    let reference = pair.image.reference();

    // The pull secret for the image's registry does not go to a mirror on another
    // domain: the mirror refuses, the registry itself answers.
    let report = check(
        config.clone(),
        &reference,
        keyring(pair.up()),
        NodeCredentials::empty(),
    )
    .await;
    let i = only(&report);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.up()), "{}", i.detail);
    // The mirror was asked first, and did not answer present.
    assert_eq!(asked(i), [(pair.mir(), false), (pair.up(), true)]);

    // The node's credentials for the mirror's host do.
    let report = check(
        config,
        &reference,
        keyring(pair.up()),
        node(dir.path(), Some(pair.mir())),
    )
    .await;
    let i = only(&report);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.mir()), "{}", i.detail);
}

#[tokio::test]
async fn docker_sends_the_hub_credentials_to_the_mirror() {
    let pair = AuthPair::start().await;
    let dir = temp_dir("mirror-cred-docker");
    let path = dir.path().join("daemon.json");
    std::fs::write(
        &path,
        format!(r#"{{"registry-mirrors": ["http://{}"]}}"#, pair.mir()),
    )
    .unwrap();
    let config = MirrorConfig::load_docker_daemon(&path).unwrap();

    // A pull secret for Docker Hub: the mirror answers with it (and registry-1.docker.io
    // is never asked).
    let report = check(
        config,
        "pullcheck-mirror-cred:1.0",
        keyring("https://index.docker.io/v1/"),
        NodeCredentials::empty(),
    )
    .await;
    let i = only(&report);
    assert_eq!(i.status, Status::Present, "{}", i.detail);
    assert_eq!(i.registry.as_deref(), Some(pair.mir()), "{}", i.detail);
}

/// Each registry asked about `i`, in order, and whether its answer is the one reported.
fn asked(i: &pullcheck::report::ImageReport) -> Vec<(&str, bool)> {
    i.attempts
        .iter()
        .map(|a| (a.registry.as_str(), a.chosen))
        .collect()
}
